//! Operator metrics in the Prometheus text format, and the tiny HTTP server that serves them with
//! the health probes.
//!
//! May touch: a TCP listener. The server reads the request line only (method and path); every
//! response closes the connection, which is all Prometheus and the kubelet need.
//!
//! - `/metrics`: the counters below.
//! - `/healthz`: 200 while the process runs (liveness).
//! - `/readyz`: 200 once leader election has reached the API server once — as the leader running
//!   the controller, or as a standby replica waiting for the Lease. A standby is ready so that a
//!   rollout of a two-replica Deployment proceeds; 503 before that first answer.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::api::Phase;

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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

#[derive(Default)]
struct Inner {
    reconciles: BTreeMap<PassResult, u64>,
    errors: u64,
    /// Cumulative counts per bucket of `BUCKETS`.
    buckets: [u64; BUCKETS.len()],
    duration_sum: f64,
    duration_count: u64,
    /// Last phase per cluster, keyed `namespace/name`.
    phases: BTreeMap<String, Option<Phase>>,
    leader: bool,
    ready: bool,
}

/// The operator's counters; shared by the controller and the HTTP server.
#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        // A panic while holding the lock leaves plain counters behind: keep serving them.
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }

    /// Counts one pass and its duration.
    pub fn pass(&self, result: PassResult, took: Duration) {
        let secs = took.as_secs_f64();
        self.with(|m| {
            *m.reconciles.entry(result).or_default() += 1;
            if result == PassResult::Error {
                m.errors += 1;
            }
            for (i, le) in BUCKETS.iter().enumerate() {
                if secs <= *le {
                    m.buckets[i] += 1;
                }
            }
            m.duration_sum += secs;
            m.duration_count += 1;
        });
    }

    /// Records the phase a cluster's status reports now.
    pub fn phase(&self, cluster: &str, phase: Option<Phase>) {
        self.with(|m| m.phases.insert(cluster.to_string(), phase));
    }

    /// Forgets a deleted cluster.
    pub fn forget(&self, cluster: &str) {
        self.with(|m| m.phases.remove(cluster));
    }

    pub fn set_leader(&self, leader: bool) {
        self.with(|m| m.leader = leader);
    }

    pub fn set_ready(&self, ready: bool) {
        self.with(|m| m.ready = ready);
    }

    pub fn ready(&self) -> bool {
        self.with(|m| m.ready)
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub fn render(&self) -> String {
        use std::fmt::Write;
        self.with(|m| {
            let mut s = String::new();
            // Writing to a String cannot fail.
            let mut w = |line: String| {
                let _ = writeln!(s, "{line}");
            };
            w("# HELP kubectl_etcd_reconciles_total Reconcile passes by result.".into());
            w("# TYPE kubectl_etcd_reconciles_total counter".into());
            for r in PassResult::ALL {
                w(format!("kubectl_etcd_reconciles_total{{result=\"{}\"}} {}", r.label(), m.reconciles.get(&r).copied().unwrap_or(0)));
            }
            w("# HELP kubectl_etcd_reconcile_errors_total Reconcile passes that failed.".into());
            w("# TYPE kubectl_etcd_reconcile_errors_total counter".into());
            w(format!("kubectl_etcd_reconcile_errors_total {}", m.errors));
            w("# HELP kubectl_etcd_reconcile_duration_seconds Duration of one reconcile pass.".into());
            w("# TYPE kubectl_etcd_reconcile_duration_seconds histogram".into());
            for (le, n) in BUCKETS.iter().zip(m.buckets) {
                w(format!("kubectl_etcd_reconcile_duration_seconds_bucket{{le=\"{le}\"}} {n}"));
            }
            w(format!("kubectl_etcd_reconcile_duration_seconds_bucket{{le=\"+Inf\"}} {}", m.duration_count));
            w(format!("kubectl_etcd_reconcile_duration_seconds_sum {}", m.duration_sum));
            w(format!("kubectl_etcd_reconcile_duration_seconds_count {}", m.duration_count));
            w("# HELP kubectl_etcd_clusters EtcdClusters by the phase of their last status.".into());
            w("# TYPE kubectl_etcd_clusters gauge".into());
            let mut by_phase: BTreeMap<String, u64> = PHASES.iter().map(|p| (p.to_string(), 0)).collect();
            for p in m.phases.values().flatten() {
                *by_phase.entry(p.to_string()).or_default() += 1;
            }
            for (p, n) in by_phase {
                w(format!("kubectl_etcd_clusters{{phase=\"{p}\"}} {n}"));
            }
            w("# HELP kubectl_etcd_leader 1 when this replica holds the engine lease and runs the controller.".into());
            w("# TYPE kubectl_etcd_leader gauge".into());
            w(format!("kubectl_etcd_leader {}", u8::from(m.leader)));
            s
        })
    }
}

/// Status line, content type and body for a request line.
fn respond(metrics: &Metrics, request_line: &str) -> (&'static str, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return ("400 Bad Request", TEXT, "bad request\n".into());
    };
    if method != "GET" && method != "HEAD" {
        return ("405 Method Not Allowed", TEXT, "only GET\n".into());
    }
    let path = target.split('?').next().unwrap_or(target);
    match path {
        "/metrics" => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            metrics.render(),
        ),
        "/healthz" => ("200 OK", TEXT, "ok\n".into()),
        "/readyz" if metrics.ready() => ("200 OK", TEXT, "ok\n".into()),
        "/readyz" => (
            "503 Service Unavailable",
            TEXT,
            "leader election has not reached the API server yet\n".into(),
        ),
        _ => ("404 Not Found", TEXT, "not found\n".into()),
    }
}

async fn serve_one(mut conn: TcpStream, metrics: &Metrics) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    // The request line is all we need; stop reading once it is complete (or the peer is slow).
    let read = async {
        while !buf.contains(&b'\n') && buf.len() < 8192 {
            let n = conn.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Ok::<_, std::io::Error>(())
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .map_err(|_| std::io::ErrorKind::TimedOut)??;
    let text = String::from_utf8_lossy(&buf);
    let line = text.lines().next().unwrap_or("");
    let (status, content_type, body) = respond(metrics, line);
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await?;
    if !line.starts_with("HEAD ") {
        conn.write_all(body.as_bytes()).await?;
    }
    conn.shutdown().await
}

/// Binds `addr` (an error here stops the operator: a port clash is a configuration mistake).
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serves `/metrics`, `/healthz` and `/readyz` until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: std::sync::Arc<Metrics>) {
    loop {
        match listener.accept().await {
            Ok((conn, _)) => {
                let metrics = metrics.clone();
                tokio::spawn(async move {
                    if let Err(e) = serve_one(conn, &metrics).await {
                        tracing::debug!("metrics request failed: {e}");
                    }
                });
            }
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!("metrics listener: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
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
        assert_eq!(
            line(
                &text,
                "kubectl_etcd_reconcile_duration_seconds_bucket{le=\"0.05\"}"
            ),
            "kubectl_etcd_reconcile_duration_seconds_bucket{le=\"0.05\"} 0"
        );
        assert_eq!(
            line(
                &text,
                "kubectl_etcd_reconcile_duration_seconds_bucket{le=\"0.1\"}"
            ),
            "kubectl_etcd_reconcile_duration_seconds_bucket{le=\"0.1\"} 1"
        );
        assert_eq!(
            line(
                &text,
                "kubectl_etcd_reconcile_duration_seconds_bucket{le=\"5\"}"
            ),
            "kubectl_etcd_reconcile_duration_seconds_bucket{le=\"5\"} 2"
        );
        assert_eq!(
            line(
                &text,
                "kubectl_etcd_reconcile_duration_seconds_bucket{le=\"+Inf\"}"
            ),
            "kubectl_etcd_reconcile_duration_seconds_bucket{le=\"+Inf\"} 3"
        );
        assert_eq!(
            line(&text, "kubectl_etcd_reconcile_duration_seconds_sum"),
            "kubectl_etcd_reconcile_duration_seconds_sum 63.08"
        );
    }

    #[test]
    fn clusters_are_counted_by_their_last_phase() {
        let m = Metrics::default();
        m.phase("a/one", Some(Phase::Running));
        m.phase("a/two", Some(Phase::Scaling));
        m.phase("a/two", Some(Phase::Running));
        m.phase("b/three", Some(Phase::Degraded));
        m.phase("b/four", None);
        m.forget("b/three");
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

    #[test]
    fn probes_answer_by_path_and_readiness() {
        let m = Metrics::default();
        assert_eq!(respond(&m, "GET /healthz HTTP/1.1").0, "200 OK");
        assert_eq!(
            respond(&m, "GET /readyz HTTP/1.1").0,
            "503 Service Unavailable"
        );
        m.set_ready(true);
        assert_eq!(respond(&m, "GET /readyz HTTP/1.1").0, "200 OK");
        assert_eq!(
            respond(&m, "GET /metrics?x=1 HTTP/1.1").1,
            "text/plain; version=0.0.4; charset=utf-8"
        );
        assert_eq!(
            respond(&m, "POST /metrics HTTP/1.1").0,
            "405 Method Not Allowed"
        );
        assert_eq!(respond(&m, "GET /nope HTTP/1.1").0, "404 Not Found");
        assert_eq!(respond(&m, "").0, "400 Bad Request");
    }

    #[tokio::test]
    async fn the_server_speaks_http_over_tcp() {
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let m = std::sync::Arc::new(Metrics::default());
        let server = tokio::spawn(serve(listener, m));
        let mut conn = TcpStream::connect(addr).await.unwrap();
        conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut out = String::new();
        conn.read_to_string(&mut out).await.unwrap();
        server.abort();
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        let body = out.split("\r\n\r\n").nth(1).unwrap();
        assert!(out.contains(&format!("Content-Length: {}\r\n", body.len())));
        assert!(body.contains("kubectl_etcd_leader 0"));
    }
}
