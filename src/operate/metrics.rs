//! Operator metrics (the official Prometheus client, typed families) and the HTTP server
//! (hyper) that serves them with the health probes.
//!
//! May touch: a TCP listener. Label sets are bounded: `result` and `phase` take a fixed set of
//! values, the per-cluster gauges one label set per EtcdCluster, dropped when it is deleted.
//!
//! - `/metrics`: the families below, in the Prometheus text format 0.0.4.
//! - `/healthz`: 200 while the process runs (liveness).
//! - `/readyz`: 200 once leader election has reached the API server once — as the leader running
//!   the controller, or as a standby replica waiting for the Lease. A standby is ready so that a
//!   rollout of a two-replica Deployment proceeds; 503 before that first answer.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{CONNECTION, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use tokio::net::TcpListener;

use crate::api::{BackupStatus, Phase};
use crate::engine::Pass;
use crate::model::{DEFAULT_QUOTA_BYTES, EtcdView};

/// Upper bounds (seconds) of the reconcile-duration histogram buckets.
const BUCKETS: [f64; 8] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
/// Every phase is reported, at 0 when no cluster is in it, so alerts need no `absent()`.
const PHASES: [Phase; 8] = [
    Phase::Creating,
    Phase::Running,
    Phase::Scaling,
    Phase::Upgrading,
    Phase::Degraded,
    Phase::Failed,
    Phase::Paused,
    Phase::Deleting,
];

/// How one reconcile pass ended, the `result` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PassResult {
    Acted,
    Unchanged,
    NotYet,
    Error,
}

impl PassResult {
    const ALL: [PassResult; 4] = [
        PassResult::Acted,
        PassResult::Unchanged,
        PassResult::NotYet,
        PassResult::Error,
    ];
    fn label(self) -> &'static str {
        match self {
            PassResult::Acted => "acted",
            PassResult::Unchanged => "unchanged",
            PassResult::NotYet => "not_yet",
            PassResult::Error => "error",
        }
    }
}

impl EncodeLabelValue for PassResult {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.label(), encoder)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ResultLabel {
    result: PassResult,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PhaseLabel {
    phase: String,
}

/// One EtcdCluster.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ClusterLabels {
    pub namespace: String,
    pub name: String,
}

/// One EtcdCluster and why a member of it was defragmented (`plan::Trigger::label`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct DefragLabels {
    namespace: String,
    name: String,
    trigger: &'static str,
}

/// The `trigger` label values of the defragmentation counter.
const DEFRAG_TRIGGERS: [&str; 3] = ["nospace", "requested", "policy"];
/// Upper bounds (seconds) of the defragmentation pause histogram (a member answers nobody).
const PAUSE_BUCKETS: [f64; 8] = [0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0];

/// What the per-cluster gauges remember between passes.
#[derive(Default)]
struct Seen {
    phase: Option<Phase>,
    leader: Option<u64>,
}

/// The operator's metrics; shared by the controller and the HTTP server.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ResultLabel, Counter>,
    errors: Counter,
    duration: Histogram,
    clusters: Family<PhaseLabel, Gauge>,
    leader: Gauge,
    voters: Family<ClusterLabels, Gauge>,
    healthy_voters: Family<ClusterLabels, Gauge>,
    learners: Family<ClusterLabels, Gauge>,
    leader_changes: Family<ClusterLabels, Counter>,
    db_size: Family<ClusterLabels, Gauge>,
    db_quota: Family<ClusterLabels, Gauge>,
    last_backup: Family<ClusterLabels, Gauge>,
    defrags: Family<DefragLabels, Counter>,
    defrag_reclaimed: Family<ClusterLabels, Counter>,
    defrag_pause: Histogram,
    seen: Mutex<HashMap<ClusterLabels, Seen>>,
    ready: AtomicBool,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::with_prefix("kubectl_etcd");
        let reconciles = Family::<ResultLabel, Counter>::default();
        registry.register(
            "reconciles",
            "Reconcile passes by result",
            reconciles.clone(),
        );
        let errors = Counter::default();
        registry.register(
            "reconcile_errors",
            "Reconcile passes that failed",
            errors.clone(),
        );
        let duration = Histogram::new(BUCKETS);
        registry.register_with_unit(
            "reconcile_duration",
            "Duration of one reconcile pass",
            Unit::Seconds,
            duration.clone(),
        );
        let clusters = Family::<PhaseLabel, Gauge>::default();
        registry.register(
            "clusters",
            "EtcdClusters by the phase of their last status",
            clusters.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 when this replica holds the leader lease and runs the controller",
            leader.clone(),
        );
        let mut per_cluster = |name: &str, help: &str| {
            let f = Family::<ClusterLabels, Gauge>::default();
            registry.register(name, help, f.clone());
            f
        };
        let voters = per_cluster("voters", "Voting members of the cluster");
        let healthy_voters = per_cluster("healthy_voters", "Voting members that answer healthy");
        let learners = per_cluster("learners", "Non-voting members (learners) of the cluster");
        let db_size = per_cluster(
            "db_size_bytes",
            "Largest backend database among the members, in bytes",
        );
        let db_quota = per_cluster(
            "db_quota_bytes",
            "The backend quota (--quota-backend-bytes) of the cluster, in bytes",
        );
        let last_backup = Family::<ClusterLabels, Gauge>::default();
        registry.register_with_unit(
            "last_successful_backup_timestamp",
            "When the newest successful backup of the cluster finished (status.backup), as Unix time; no series before the first",
            Unit::Seconds,
            last_backup.clone(),
        );
        let leader_changes = Family::<ClusterLabels, Counter>::default();
        registry.register(
            "leader_changes",
            "Changes of the etcd leader this operator observed",
            leader_changes.clone(),
        );
        let defrags = Family::<DefragLabels, Counter>::default();
        registry.register(
            "defragmentations",
            "Members defragmented by the engine, by cluster and trigger (nospace, requested, policy)",
            defrags.clone(),
        );
        let defrag_reclaimed = Family::<ClusterLabels, Counter>::default();
        registry.register_with_unit(
            "defrag_reclaimed",
            "Bytes the engine's defragmentations gave back to the file system",
            Unit::Bytes,
            defrag_reclaimed.clone(),
        );
        let defrag_pause = Histogram::new(PAUSE_BUCKETS);
        registry.register_with_unit(
            "defrag_pause",
            "How long a member answered nobody while it was defragmented",
            Unit::Seconds,
            defrag_pause.clone(),
        );
        // Every fixed label value from the start, so alerts need no `absent()`.
        for r in PassResult::ALL {
            drop(reconciles.get_or_create(&ResultLabel { result: r }));
        }
        for p in PHASES {
            drop(clusters.get_or_create(&PhaseLabel {
                phase: p.to_string(),
            }));
        }
        Metrics {
            registry,
            reconciles,
            errors,
            duration,
            clusters,
            leader,
            voters,
            healthy_voters,
            learners,
            leader_changes,
            db_size,
            db_quota,
            last_backup,
            defrags,
            defrag_reclaimed,
            defrag_pause,
            seen: Mutex::default(),
            ready: AtomicBool::new(false),
        }
    }
}

impl Metrics {
    fn seen<T>(&self, f: impl FnOnce(&mut HashMap<ClusterLabels, Seen>) -> T) -> T {
        // A panic while holding the lock leaves plain values behind: keep serving them.
        f(&mut self.seen.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Counts one pass and its duration.
    pub fn pass(&self, result: PassResult, took: Duration) {
        self.reconciles.get_or_create(&ResultLabel { result }).inc();
        if result == PassResult::Error {
            self.errors.inc();
        }
        self.duration.observe(took.as_secs_f64());
    }

    /// Records what a pass over `cluster` saw: its phase and the per-cluster gauges.
    pub fn observed(&self, cluster: &ClusterLabels, pass: &Pass) {
        self.phase(cluster, pass.status.phase);
        if let Some(d) = &pass.defragmented {
            self.defrags
                .get_or_create(&DefragLabels {
                    namespace: cluster.namespace.clone(),
                    name: cluster.name.clone(),
                    trigger: d.trigger,
                })
                .inc();
            self.defrag_reclaimed.get_or_create(cluster).inc_by(d.won());
            self.defrag_pause.observe(d.pause.as_secs_f64());
        }
        let EtcdView::Reached(c) = &pass.observed.etcd else {
            self.healthy_voters.get_or_create(cluster).set(0);
            return;
        };
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.voters
            .get_or_create(cluster)
            .set(count(c.voters().count()));
        self.healthy_voters
            .get_or_create(cluster)
            .set(count(c.voters().filter(|m| m.healthy).count()));
        self.learners
            .get_or_create(cluster)
            .set(count(c.learners().count()));
        let db = c
            .members
            .iter()
            .filter_map(|m| m.status.as_ref().map(|s| s.db_size))
            .max()
            .unwrap_or(0);
        self.db_size.get_or_create(cluster).set(db);
        let quota = pass
            .desired
            .quota_backend_bytes
            .filter(|q| *q > 0)
            .unwrap_or(DEFAULT_QUOTA_BYTES);
        self.db_quota.get_or_create(cluster).set(quota);
        let changed = self.seen(|m| {
            let seen = m.entry(cluster.clone()).or_default();
            let changed = seen.leader.is_some() && c.leader.is_some() && seen.leader != c.leader;
            if c.leader.is_some() {
                seen.leader = c.leader;
            }
            changed
        });
        let changes = self.leader_changes.get_or_create(cluster);
        if changed {
            changes.inc();
        }
    }

    /// Records when the newest successful backup of `cluster` finished, from its `status.backup`
    /// (scheduled and `kubectl etcd backup` alike). A cluster never backed up has no series: an
    /// alert on `time() - …` then concerns only clusters that have backups.
    pub fn backup(&self, cluster: &ClusterLabels, status: Option<&BackupStatus>) {
        match status.and_then(|s| s.last_successful_time.as_ref()) {
            Some(t) => {
                self.last_backup.get_or_create(cluster).set(t.0.as_second());
            }
            None => {
                self.last_backup.remove(cluster);
            }
        }
    }

    /// Records the phase a cluster's status reports now.
    pub fn phase(&self, cluster: &ClusterLabels, phase: Option<Phase>) {
        self.seen(|m| m.entry(cluster.clone()).or_default().phase = phase);
        self.count_phases();
    }

    /// Forgets a deleted cluster (its label sets go, so they stay bounded).
    pub fn forget(&self, cluster: &ClusterLabels) {
        self.seen(|m| m.remove(cluster));
        for f in [
            &self.voters,
            &self.healthy_voters,
            &self.learners,
            &self.db_size,
            &self.db_quota,
            &self.last_backup,
        ] {
            f.remove(cluster);
        }
        self.leader_changes.remove(cluster);
        self.defrag_reclaimed.remove(cluster);
        for trigger in DEFRAG_TRIGGERS {
            self.defrags.remove(&DefragLabels {
                namespace: cluster.namespace.clone(),
                name: cluster.name.clone(),
                trigger,
            });
        }
        self.count_phases();
    }

    fn count_phases(&self) {
        let counts =
            self.seen(|m| PHASES.map(|p| m.values().filter(|s| s.phase == Some(p)).count()));
        for (p, n) in PHASES.iter().zip(counts) {
            self.clusters
                .get_or_create(&PhaseLabel {
                    phase: p.to_string(),
                })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    pub fn ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub fn render(&self) -> String {
        let mut s = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut s, &self.registry);
        s
    }
}

const TEXT: &str = "text/plain; charset=utf-8";
const EXPOSITION: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The answer to `method path`.
fn respond(metrics: &Metrics, method: &Method, path: &str) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, content_type: &'static str, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        // One request per connection is all Prometheus and the kubelet need.
        r.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
        r
    };
    if method != Method::GET && method != Method::HEAD {
        return reply(StatusCode::METHOD_NOT_ALLOWED, TEXT, "only GET\n".into());
    }
    match path {
        "/metrics" => reply(StatusCode::OK, EXPOSITION, metrics.render()),
        "/healthz" => reply(StatusCode::OK, TEXT, "ok\n".into()),
        "/readyz" if metrics.ready() => reply(StatusCode::OK, TEXT, "ok\n".into()),
        "/readyz" => reply(
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            "leader election has not reached the API server yet\n".into(),
        ),
        _ => reply(StatusCode::NOT_FOUND, TEXT, "not found\n".into()),
    }
}

/// Binds `addr` (an error here stops the operator: a port clash is a configuration mistake).
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// How long a client may take to send its request head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves `/metrics`, `/healthz` and `/readyz` until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>) {
    loop {
        let conn = match listener.accept().await {
            Ok((conn, _)) => conn,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!("metrics listener: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let response = respond(&metrics, req.method(), req.uri().path());
                async move { Ok::<_, Infallible>(response) }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(conn), service)
                .await;
            if let Err(e) = served {
                tracing::debug!("metrics request failed: {e}");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix} in\n{text}"))
    }

    fn demo() -> ClusterLabels {
        ClusterLabels {
            namespace: "ns".into(),
            name: "demo".into(),
        }
    }

    #[test]
    fn a_fresh_operator_reports_every_series_at_zero() {
        let text = Metrics::default().render();
        for r in ["acted", "unchanged", "not_yet", "error"] {
            assert_eq!(
                line(
                    &text,
                    &format!("kubectl_etcd_reconciles_total{{result=\"{r}\"}}")
                )
                .rsplit(' ')
                .next(),
                Some("0")
            );
        }
        assert_eq!(
            line(&text, "kubectl_etcd_clusters{phase=\"Running\"}"),
            "kubectl_etcd_clusters{phase=\"Running\"} 0"
        );
        assert_eq!(line(&text, "kubectl_etcd_leader "), "kubectl_etcd_leader 0");
        assert_eq!(
            line(&text, "kubectl_etcd_reconcile_duration_seconds_count"),
            "kubectl_etcd_reconcile_duration_seconds_count 0"
        );
        assert!(text.contains("# TYPE kubectl_etcd_reconcile_duration_seconds histogram"));
    }

    #[test]
    fn passes_count_by_result_and_fill_cumulative_buckets() {
        let m = Metrics::default();
        m.pass(PassResult::Acted, Duration::from_millis(80));
        m.pass(PassResult::Error, Duration::from_secs(3));
        m.pass(PassResult::Unchanged, Duration::from_secs(60));
        let text = m.render();
        assert_eq!(
            line(&text, "kubectl_etcd_reconciles_total{result=\"acted\"}"),
            "kubectl_etcd_reconciles_total{result=\"acted\"} 1"
        );
        assert_eq!(
            line(&text, "kubectl_etcd_reconcile_errors_total"),
            "kubectl_etcd_reconcile_errors_total 1"
        );
        let bucket = |le: &str| {
            line(
                &text,
                &format!("kubectl_etcd_reconcile_duration_seconds_bucket{{le=\"{le}\"}}"),
            )
            .rsplit(' ')
            .next()
            .unwrap()
            .to_string()
        };
        assert_eq!(bucket("0.05"), "0");
        assert_eq!(bucket("0.1"), "1");
        assert_eq!(bucket("5"), "2");
        assert_eq!(bucket("+Inf"), "3");
        assert_eq!(
            line(&text, "kubectl_etcd_reconcile_duration_seconds_sum"),
            "kubectl_etcd_reconcile_duration_seconds_sum 63.08"
        );
    }

    #[test]
    fn clusters_are_counted_by_their_last_phase() {
        let m = Metrics::default();
        let c = |ns: &str, name: &str| ClusterLabels {
            namespace: ns.into(),
            name: name.into(),
        };
        m.phase(&c("a", "one"), Some(Phase::Running));
        m.phase(&c("a", "two"), Some(Phase::Scaling));
        m.phase(&c("a", "two"), Some(Phase::Running));
        m.phase(&c("b", "three"), Some(Phase::Degraded));
        m.phase(&c("b", "four"), None);
        m.forget(&c("b", "three"));
        m.set_leader(true);
        let text = m.render();
        assert_eq!(
            line(&text, "kubectl_etcd_clusters{phase=\"Running\"}"),
            "kubectl_etcd_clusters{phase=\"Running\"} 2"
        );
        assert_eq!(
            line(&text, "kubectl_etcd_clusters{phase=\"Degraded\"}"),
            "kubectl_etcd_clusters{phase=\"Degraded\"} 0"
        );
        assert_eq!(line(&text, "kubectl_etcd_leader "), "kubectl_etcd_leader 1");
    }

    fn pass_with(leader: u64, healthy: [bool; 3], db: [i64; 3]) -> Pass {
        use crate::model::{ClusterView, MemberStatusView, MemberView, Observed};
        let members = (0..3)
            .map(|i| MemberView {
                id: 100 + i,
                ordinal: Some(i as u32),
                healthy: healthy[i as usize],
                status: Some(MemberStatusView {
                    db_size: db[i as usize],
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect();
        Pass {
            desired: crate::fixtures::cluster("demo")
                .spec(|s| s.etcd.quota_backend_bytes = Some(8 << 30))
                .desired(),
            observed: Observed {
                etcd: EtcdView::Reached(ClusterView {
                    cluster_id: 1,
                    leader: Some(leader),
                    members,
                    auth_enabled: false,
                    list_unconfirmed: false,
                }),
                ..Default::default()
            },
            step: crate::plan::Step::Idle,
            status: crate::api::EtcdClusterStatus {
                phase: Some(Phase::Running),
                ..Default::default()
            },
            outcome: crate::engine::Outcome::Unchanged,
            defragmented: None,
        }
    }

    #[test]
    fn each_cluster_reports_what_users_alert_on_and_is_forgotten_when_deleted() {
        let m = Metrics::default();
        m.observed(&demo(), &pass_with(100, [true, true, false], [10, 30, 20]));
        m.observed(&demo(), &pass_with(100, [true, true, false], [10, 30, 20]));
        m.observed(&demo(), &pass_with(101, [true, true, true], [10, 40, 20]));
        let text = m.render();
        let of = |metric: &str| {
            line(
                &text,
                &format!("kubectl_etcd_{metric}{{namespace=\"ns\",name=\"demo\"}}"),
            )
            .rsplit(' ')
            .next()
            .unwrap()
            .to_string()
        };
        assert_eq!(of("voters"), "3");
        assert_eq!(of("healthy_voters"), "3");
        assert_eq!(of("learners"), "0");
        assert_eq!(of("db_size_bytes"), "40");
        assert_eq!(of("db_quota_bytes"), (8i64 << 30).to_string());
        assert_eq!(of("leader_changes_total"), "1");
        assert!(
            !text.contains("kubectl_etcd_last_successful_backup_timestamp_seconds{"),
            "no backup yet, no series"
        );
        let finished = jiff::Timestamp::from_second(1_764_547_200).unwrap();
        m.backup(
            &demo(),
            Some(&BackupStatus {
                last_successful_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    finished,
                )),
                ..Default::default()
            }),
        );
        let text = m.render();
        assert_eq!(
            line(
                &text,
                "kubectl_etcd_last_successful_backup_timestamp_seconds{namespace=\"ns\",name=\"demo\"}"
            ),
            "kubectl_etcd_last_successful_backup_timestamp_seconds{namespace=\"ns\",name=\"demo\"} 1764547200"
        );
        m.forget(&demo());
        assert!(
            !m.render().contains("name=\"demo\""),
            "label sets stay bounded"
        );
    }

    #[test]
    fn a_defragmentation_counts_its_trigger_the_bytes_won_and_its_pause() {
        let m = Metrics::default();
        let mut pass = pass_with(100, [true, true, true], [10, 10, 10]);
        pass.defragmented = Some(crate::engine::Defragmentation {
            member: "demo-1".into(),
            trigger: "policy",
            before: Some(100 << 20),
            after: Some(40 << 20),
            pause: Duration::from_millis(1500),
        });
        m.observed(&demo(), &pass);
        m.observed(&demo(), &pass_with(100, [true, true, true], [10, 10, 10]));
        let text = m.render();
        assert_eq!(
            line(
                &text,
                "kubectl_etcd_defragmentations_total{namespace=\"ns\",name=\"demo\",trigger=\"policy\"}"
            ),
            "kubectl_etcd_defragmentations_total{namespace=\"ns\",name=\"demo\",trigger=\"policy\"} 1"
        );
        assert_eq!(
            line(
                &text,
                "kubectl_etcd_defrag_reclaimed_bytes_total{namespace=\"ns\",name=\"demo\"}"
            ),
            format!(
                "kubectl_etcd_defrag_reclaimed_bytes_total{{namespace=\"ns\",name=\"demo\"}} {}",
                60 << 20
            )
        );
        assert_eq!(
            line(&text, "kubectl_etcd_defrag_pause_seconds_count "),
            "kubectl_etcd_defrag_pause_seconds_count 1"
        );
        m.forget(&demo());
        assert!(!m.render().contains("name=\"demo\""));
    }

    #[test]
    fn probes_answer_by_path_and_readiness() {
        let m = Metrics::default();
        let status = |method: Method, path: &str| respond(&m, &method, path).status();
        assert_eq!(status(Method::GET, "/healthz"), StatusCode::OK);
        assert_eq!(
            status(Method::GET, "/readyz"),
            StatusCode::SERVICE_UNAVAILABLE
        );
        m.set_ready(true);
        assert_eq!(status(Method::GET, "/readyz"), StatusCode::OK);
        assert_eq!(
            respond(&m, &Method::GET, "/metrics").headers()[CONTENT_TYPE],
            "text/plain; version=0.0.4; charset=utf-8"
        );
        assert_eq!(
            status(Method::POST, "/metrics"),
            StatusCode::METHOD_NOT_ALLOWED
        );
        assert_eq!(status(Method::GET, "/nope"), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn the_server_speaks_http_over_tcp() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let m = Arc::new(Metrics::default());
        let server = tokio::spawn(serve(listener, m));
        let get = |request: &'static [u8]| async move {
            let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
            conn.write_all(request).await.unwrap();
            let mut out = String::new();
            conn.read_to_string(&mut out).await.unwrap();
            out
        };
        let out = get(b"GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        let body = out.split("\r\n\r\n").nth(1).unwrap();
        assert!(
            out.contains(&format!("content-length: {}\r\n", body.len())),
            "{out}"
        );
        assert!(body.contains("kubectl_etcd_leader 0"));
        let bad = get(b"NONSENSE\r\n\r\n").await;
        assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
        server.abort();
    }
}
