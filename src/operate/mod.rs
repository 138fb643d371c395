//! `kubectl etcd operate`: the in-cluster driver of the reconcile engine.
//!
//! May touch: watches, the engine Lease, Events, the metrics listener, process signals. It
//! decides nothing about etcd: every pass is `engine::reconcile_once`, and this room only picks
//! when the next pass runs and reports what the pass did.
//!
//! ```text
//!  start ─▶ serve /metrics /healthz /readyz
//!        ─▶ stand by: try the Lease every 5 s (held by another operator replica or a CLI run)
//!        ─▶ lead: Controller over EtcdCluster (+ owned StatefulSets, Services, ConfigMaps)
//!                 renew the Lease every 5 s
//!             ├─ SIGTERM/SIGINT ─▶ finish passes in flight, release the Lease, Ok
//!             └─ Lease lost or not renewed for 10 s ─▶ Err (the process exits; the Deployment
//!                restarts it as a standby: never two leaders acting at once)
//! ```

pub mod manifests;
mod metrics;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::Api;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, reflector, watcher, watcher::watcher as watch};
use kube::{Client, Resource, ResourceExt};
use tokio_util::sync::CancellationToken;

use crate::api::{EtcdCluster, reason};
use crate::engine::{self, Context, Dial, Mode, Outcome};
use crate::error::{Error, exit};
use crate::lease::{self, Acquired, Lock};
use crate::objects::{FIELD_MANAGER, LABEL_MANAGED_BY};
use crate::plan::Step;
use metrics::{Metrics, PassResult};

pub use manifests::install_manifests;

/// How long a leader's Lease lasts without renewal.
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How often the leader renews (and a standby retries).
pub const RENEW_EVERY: Duration = Duration::from_secs(5);
/// A leader that could not renew for this long stops, before anyone else may take the Lease.
const STEP_DOWN_AFTER: Duration = Duration::from_secs(10);
/// How long a shutdown waits for passes in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(20);
/// `reportingController` of our Events.
pub const REPORTER: &str = "kubectl-etcd";
/// Event action of every reconcile Event.
const ACTION: &str = "Reconcile";
/// Event reason of a failed pass (an operator-side reason: not a status condition reason).
const REASON_FAILED: &str = "ReconcileFailed";
/// events.k8s.io limits `note` to 1 kB.
const NOTE_MAX: usize = 1024;

const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// What `operate` needs from the command line.
pub struct OperateOptions {
    pub client: Client,
    /// Watch one namespace, or all namespaces when `None`.
    pub namespace: Option<String>,
    /// Lease identity, `lease::operator_identity(pod)`; also the Event reporting instance.
    pub identity: String,
    /// Listen address of `/metrics`, `/healthz` and `/readyz` (the manifests use port 8080).
    pub metrics_addr: SocketAddr,
    pub dial: Dial,
}

/// Runs the operator until SIGTERM/SIGINT (`Ok`) or until leadership is lost (`Err`: exit and
/// let the Deployment restart the process).
pub async fn run(opts: OperateOptions) -> Result<(), Error> {
    let shutdown = CancellationToken::new();
    cancel_on_signal(shutdown.clone())?;
    run_until(opts, lease::NAMESPACE, shutdown).await
}

/// `run` with the Lease in `lease_namespace` and shutdown on `shutdown` (tests use their own).
async fn run_until(
    opts: OperateOptions,
    lease_namespace: &str,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    let metrics = Arc::new(Metrics::default());
    let listener = metrics::bind(opts.metrics_addr).await?;
    let server = tokio::spawn(metrics::serve(listener, metrics.clone()));
    tracing::info!(identity = %opts.identity, addr = %opts.metrics_addr, "operator starting");

    let lock = Lock::new(
        opts.client.clone(),
        lease_namespace,
        opts.identity.clone(),
        LEASE_DURATION,
    );

    let result = async {
        if !stand_by(&lock, &metrics, &shutdown).await? {
            return Ok(());
        }
        lead(&opts, &lock, &metrics, &shutdown).await
    }
    .await;
    // Lets a standby take over at once instead of after LEASE_DURATION. A no-op when the Lease
    // is someone else's by now.
    lock.release().await;
    metrics.set_leader(false);
    server.abort();
    match &result {
        Ok(()) => tracing::info!("operator stopped"),
        Err(e) => tracing::error!("operator stopped: {}", e.report()),
    }
    result
}

fn cancel_on_signal(token: CancellationToken) -> std::io::Result<()> {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::spawn(async move {
        #[cfg(unix)]
        let terminate = term.recv().map(drop);
        #[cfg(not(unix))]
        let terminate = futures::future::pending::<()>();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate => {}
        }
        tracing::info!("shutdown requested: finishing passes in flight, then releasing the lease");
        token.cancel();
    });
    Ok(())
}

/// Waits for the Lease. `Ok(true)`: we hold it; `Ok(false)`: shutdown came first.
async fn stand_by(
    lock: &Lock,
    metrics: &Metrics,
    shutdown: &CancellationToken,
) -> Result<bool, Error> {
    let mut last_holder: Option<String> = None;
    loop {
        let attempt = tokio::select! {
            _ = shutdown.cancelled() => return Ok(false),
            r = lock.try_acquire_or_renew() => r,
        };
        match attempt {
            Ok(Acquired::Held) => {
                metrics.set_ready(true);
                tracing::info!(identity = %lock.identity(), "acquired the engine lease: leading");
                return Ok(true);
            }
            Ok(Acquired::HeldBy { holder }) => {
                metrics.set_ready(true);
                if last_holder.as_ref() != Some(&holder) {
                    let who = if lease::is_operator(&holder) {
                        "another operator replica"
                    } else {
                        "a kubectl etcd command"
                    };
                    tracing::info!(holder = %holder, "standing by: the engine lease is held by {who}");
                    last_holder = Some(holder);
                }
            }
            // RBAC is a configuration mistake: crash-loop visibly rather than stand by forever.
            Err(e) if e.exit_code() == exit::FORBIDDEN => return Err(e),
            Err(e) if e.api_code() == Some(404) => tracing::warn!(
                "the namespace of the engine lease does not exist, so the lease cannot be created (retrying); install the operator with `kubectl etcd install` or create the namespace: {}",
                e.report()
            ),
            Err(e) => tracing::warn!("could not read the engine lease (retrying): {}", e.report()),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(false),
            _ = tokio::time::sleep(RENEW_EVERY) => {}
        }
    }
}

fn lost_lease(message: String) -> Error {
    Error::Io(std::io::Error::other(message))
}

/// Renews the Lease until that fails; returns why leadership is over.
async fn keep_lease(lock: &Lock) -> Error {
    let mut renewed = Instant::now();
    loop {
        tokio::time::sleep(RENEW_EVERY).await;
        match tokio::time::timeout(RENEW_EVERY, lock.try_acquire_or_renew()).await {
            Ok(Ok(Acquired::Held)) => renewed = Instant::now(),
            Ok(Ok(Acquired::HeldBy { holder })) => {
                return lost_lease(format!(
                    "lost the engine lease to {holder}; exiting so that only one engine acts"
                ));
            }
            Ok(Err(e)) => tracing::warn!("could not renew the engine lease: {}", e.report()),
            Err(_) => tracing::warn!("renewing the engine lease timed out"),
        }
        if renewed.elapsed() >= STEP_DOWN_AFTER {
            return lost_lease(format!(
                "could not renew the engine lease for {} s; exiting before another replica may take it",
                STEP_DOWN_AFTER.as_secs()
            ));
        }
    }
}

/// Runs the controller while holding the Lease.
async fn lead(
    opts: &OperateOptions,
    lock: &Lock,
    metrics: &Arc<Metrics>,
    shutdown: &CancellationToken,
) -> Result<(), Error> {
    metrics.set_leader(true);
    let renewing = keep_lease(lock);
    tokio::pin!(renewing);

    let ctx = tokio::select! {
        c = Context::new(opts.client.clone(), opts.dial) => {
            let mut c = c?;
            c.add_finalizer = true;
            c
        }
        e = &mut renewing => return Err(e),
        _ = shutdown.cancelled() => return Ok(()),
    };
    let reporter = Reporter {
        controller: REPORTER.into(),
        instance: Some(opts.identity.clone()),
    };
    let state = Arc::new(State {
        ctx,
        recorder: Recorder::new(opts.client.clone(), reporter),
        metrics: metrics.clone(),
        backoff: Backoffs::default(),
    });

    let (stop, stopped) = futures::channel::oneshot::channel::<()>();
    let controller = controller_for(&opts.client, opts.namespace.as_deref())
        .graceful_shutdown_on(stopped.map(drop))
        .run(reconcile, error_policy, state)
        .for_each(|res| async move {
            match res {
                Ok((obj, _)) => tracing::trace!(cluster = %obj.name, namespace = obj.namespace.as_deref().unwrap_or(""), "pass done"),
                // Logged (with its cluster) by `reconcile` already.
                Err(controller::Error::ReconcilerFailed(..)) => {}
                Err(e) => tracing::warn!("controller: {e}"),
            }
        });
    tokio::pin!(controller);
    tracing::info!(
        namespace = opts.namespace.as_deref().unwrap_or("<all>"),
        "controller running"
    );

    tokio::select! {
        _ = &mut controller => Err(lost_lease("the controller stopped unexpectedly".into())),
        e = &mut renewing => Err(e),
        _ = shutdown.cancelled() => {
            let _ = stop.send(());
            // Keep renewing while passes finish, so nobody else acts on a cluster mid-step.
            tokio::select! {
                r = tokio::time::timeout(SHUTDOWN_GRACE, &mut controller) => {
                    if r.is_err() {
                        tracing::warn!("passes in flight did not finish within {} s", SHUTDOWN_GRACE.as_secs());
                    }
                    Ok(())
                }
                e = &mut renewing => Err(e),
            }
        }
    }
}

fn controller_for(client: &Client, namespace: Option<&str>) -> Controller<EtcdCluster> {
    fn api<K: Resource<Scope = k8s_openapi::NamespaceResourceScope>>(
        client: &Client,
        ns: Option<&str>,
    ) -> Api<K>
    where
        K::DynamicType: Default,
    {
        match ns {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }
    // Default list-then-watch: streaming lists fail on 1.20 API servers (HTTP 422).
    let (reader, writer) = reflector::store();
    let clusters = watch(
        api::<EtcdCluster>(client, namespace),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(writer)
    .applied_objects()
    .predicate_filter(trigger_hash, Default::default());
    // Owned objects carry the managed-by label: watch only those, not every ConfigMap around.
    let owned = watcher::Config::default().labels(&format!("{LABEL_MANAGED_BY}={FIELD_MANAGER}"));
    Controller::for_stream(clusters, reader)
        .owns(api::<StatefulSet>(client, namespace), owned.clone())
        .owns(api::<Service>(client, namespace), owned.clone())
        .owns(api::<ConfigMap>(client, namespace), owned)
}

/// What makes a change of an EtcdCluster itself a reason for a pass: its spec (generation),
/// deletion, finalizers and annotations. Status is not: every pass writes it (member raft
/// indexes move with every etcd write), and reacting to our own writes would start the next pass
/// at once, every time, defeating the requeue intervals. Owned objects still trigger passes.
fn trigger_hash(c: &EtcdCluster) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    c.metadata.generation.hash(&mut h);
    c.metadata.deletion_timestamp.is_some().hash(&mut h);
    c.finalizers().hash(&mut h);
    c.annotations().hash(&mut h);
    Some(h.finish())
}

struct State {
    ctx: Context,
    recorder: Recorder,
    metrics: Arc<Metrics>,
    backoff: Backoffs,
}

fn key(cluster: &EtcdCluster) -> String {
    format!(
        "{}/{}",
        cluster.namespace().unwrap_or_default(),
        cluster.name_any()
    )
}

/// One pass (kube-runtime already wraps it in a span naming the object; our lines carry the
/// `cluster`/`namespace` fields themselves so JSON logs can be filtered on them).
async fn reconcile(cluster: Arc<EtcdCluster>, st: Arc<State>) -> Result<Action, Error> {
    let started = Instant::now();
    let result = engine::reconcile_once(&st.ctx, &cluster, Mode::Act).await;
    let took = started.elapsed();
    let name = cluster.name_any();
    let ns = cluster.namespace().unwrap_or_default();
    let pass = match result {
        Ok(pass) => pass,
        Err(e) => {
            st.metrics.pass(PassResult::Error, took);
            let reason = if matches!(e, Error::InvalidSpec { .. }) {
                reason::INVALID_SPEC
            } else {
                REASON_FAILED
            };
            tracing::warn!(cluster = %name, namespace = %ns, "pass failed: {}", e.report());
            st.publish(&cluster, EventType::Warning, reason, e.report())
                .await;
            return Err(e);
        }
    };
    st.backoff.succeeded(&ObjectRef::from_obj(&*cluster));
    let result = match &pass.outcome {
        Outcome::Acted | Outcome::Released => PassResult::Acted,
        Outcome::NotYet(_) => PassResult::NotYet,
        Outcome::Unchanged => PassResult::Unchanged,
    };
    st.metrics.pass(result, took);
    if pass.outcome == Outcome::Released {
        st.metrics.forget(&key(&cluster));
    } else {
        st.metrics.phase(&key(&cluster), pass.status.phase);
    }
    match (&pass.outcome, &pass.step) {
        (Outcome::Acted, step) => {
            tracing::info!(cluster = %name, namespace = %ns, step = %step, "acted");
            st.publish(
                &cluster,
                EventType::Normal,
                step.reason().as_str(),
                step.to_string(),
            )
            .await;
        }
        (Outcome::Released, _) => {
            tracing::info!(cluster = %name, namespace = %ns, "deleted: released the finalizer")
        }
        (_, step @ Step::Hold { .. }) => {
            tracing::warn!(cluster = %name, namespace = %ns, step = %step, "holding");
            st.publish(
                &cluster,
                EventType::Warning,
                step.reason().as_str(),
                step.to_string(),
            )
            .await;
        }
        (_, step) => tracing::debug!(cluster = %name, namespace = %ns, step = %step, "pass"),
    }
    Ok(match requeue_after(&pass.outcome, &pass.step) {
        Some(d) => Action::requeue(d),
        None => Action::await_change(),
    })
}

fn error_policy(cluster: Arc<EtcdCluster>, err: &Error, st: Arc<State>) -> Action {
    if matches!(err, Error::InvalidSpec { .. }) {
        // The status says why; only a spec change can fix it, and that change triggers a pass.
        return Action::await_change();
    }
    Action::requeue(st.backoff.failed(ObjectRef::from_obj(&*cluster)))
}

/// When the next pass runs after one that succeeded (`None`: on the next change only).
fn requeue_after(outcome: &Outcome, step: &Step) -> Option<Duration> {
    let secs = match (outcome, step) {
        (Outcome::Released, _) => return None,
        // The next step can usually follow at once; the watch may not have fired yet.
        (Outcome::Acted, _) => 1,
        (Outcome::NotYet(_), _) | (_, Step::Wait { .. }) => 3,
        (_, Step::Hold { .. }) => 30,
        // Periodic health re-check of a converged (or paused) cluster.
        (_, Step::Idle | Step::Paused) => 60,
        // A change that was not made (cannot happen in Mode::Act): try again soon.
        _ => 1,
    };
    Some(Duration::from_secs(secs))
}

/// The backoff after `previous` (none: first failure): 1 s doubling to 60 s.
fn next_backoff(previous: Option<Duration>) -> Duration {
    previous.map_or(BACKOFF_MIN, |d| (d * 2).clamp(BACKOFF_MIN, BACKOFF_MAX))
}

/// Per-cluster error backoff, reset by a successful pass.
#[derive(Default)]
struct Backoffs(Mutex<HashMap<ObjectRef<EtcdCluster>, Duration>>);

impl Backoffs {
    fn failed(&self, key: ObjectRef<EtcdCluster>) -> Duration {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let next = next_backoff(map.get(&key).copied());
        map.insert(key, next);
        next
    }
    fn succeeded(&self, key: &ObjectRef<EtcdCluster>) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }
}

/// Cuts `s` to at most `max` bytes on a character boundary.
fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max.saturating_sub(3);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str("...");
    }
    s
}

impl State {
    /// Best effort: a failed Event never fails the pass.
    async fn publish(&self, cluster: &EtcdCluster, type_: EventType, reason: &str, note: String) {
        let ev = Event {
            type_,
            reason: reason.into(),
            note: Some(truncate(note, NOTE_MAX)),
            action: ACTION.into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&ev, &cluster.object_ref(&())).await {
            tracing::warn!(cluster = %cluster.name_any(), namespace = %cluster.namespace().unwrap_or_default(), "could not publish an event: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait() -> Step {
        Step::Wait {
            reason: crate::api::Reason::Bootstrapping,
            message: "pods starting".into(),
        }
    }
    fn hold() -> Step {
        Step::Hold {
            reason: crate::api::Reason::QuorumAtRisk,
            message: "2 of 3 down".into(),
        }
    }

    #[test]
    fn the_next_pass_comes_sooner_the_more_is_going_on() {
        let s = |n| Some(Duration::from_secs(n));
        assert_eq!(
            requeue_after(&Outcome::Acted, &Step::ApplySupportingObjects),
            s(1)
        );
        assert_eq!(
            requeue_after(&Outcome::NotYet("unhealthy cluster".into()), &wait()),
            s(3)
        );
        assert_eq!(requeue_after(&Outcome::Unchanged, &wait()), s(3));
        assert_eq!(requeue_after(&Outcome::Unchanged, &hold()), s(30));
        assert_eq!(requeue_after(&Outcome::Unchanged, &Step::Idle), s(60));
        assert_eq!(requeue_after(&Outcome::Unchanged, &Step::Paused), s(60));
        assert_eq!(requeue_after(&Outcome::Released, &Step::Idle), None);
    }

    #[test]
    fn status_writes_do_not_trigger_a_pass_but_spec_deletion_and_annotations_do() {
        let mut c: EtcdCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "etcd.kubectl-etcd.io/v1alpha1", "kind": "EtcdCluster",
            "metadata": { "name": "demo", "namespace": "ns", "generation": 1 },
            "spec": { "replicas": 3, "version": "3.5.16" },
        }))
        .unwrap();
        let base = trigger_hash(&c);
        c.status = Some(crate::api::EtcdClusterStatus {
            replicas: 3,
            message: Some("converged".into()),
            ..Default::default()
        });
        c.metadata.resource_version = Some("42".into());
        assert_eq!(
            trigger_hash(&c),
            base,
            "status and resourceVersion are ignored"
        );
        let changed = |f: &dyn Fn(&mut EtcdCluster)| {
            let mut d = c.clone();
            f(&mut d);
            trigger_hash(&d) != base
        };
        assert!(changed(&|d| d.metadata.generation = Some(2)));
        assert!(changed(&|d| d.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH)
        )));
        assert!(changed(
            &|d| d.metadata.finalizers = Some(vec![crate::api::FINALIZER.into()])
        ));
        assert!(changed(&|d| {
            d.annotations_mut()
                .insert(engine::ANNOTATION_DELETE_DATA.into(), "true".into());
        }));
    }

    #[test]
    fn failures_back_off_from_one_second_doubling_to_a_minute() {
        let mut d = None;
        let mut seen = vec![];
        for _ in 0..9 {
            let next = next_backoff(d);
            seen.push(next.as_secs());
            d = Some(next);
        }
        assert_eq!(seen, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }

    #[test]
    fn a_successful_pass_resets_the_backoff_of_its_cluster_only() {
        let b = Backoffs::default();
        let a = ObjectRef::<EtcdCluster>::new("a").within("ns");
        let other = ObjectRef::<EtcdCluster>::new("b").within("ns");
        assert_eq!(b.failed(a.clone()), Duration::from_secs(1));
        assert_eq!(b.failed(a.clone()), Duration::from_secs(2));
        assert_eq!(b.failed(other.clone()), Duration::from_secs(1));
        b.succeeded(&a);
        assert_eq!(b.failed(a), Duration::from_secs(1));
        assert_eq!(b.failed(other), Duration::from_secs(2));
    }

    #[test]
    fn event_notes_fit_the_api_limit_without_splitting_characters() {
        assert_eq!(truncate("short".into(), NOTE_MAX), "short");
        let long = "é".repeat(1000);
        let cut = truncate(long, NOTE_MAX);
        assert!(cut.len() <= NOTE_MAX && cut.ends_with("..."));
    }
}

/// Against a real API server (the testbed):
/// `KUBECONFIG=/tmp/tb/admin.kubeconfig cargo test --lib --features e2e -- --ignored operate::live`.
/// Uses its own namespace for the clusters and the Lease, so it never contends with a real
/// operator or other tests.
#[cfg(all(test, feature = "e2e"))]
mod live {
    use super::*;
    use futures::FutureExt;
    use k8s_openapi::api::events::v1::Event as K8sEvent;
    use kube::api::{DeleteParams, ListParams, PostParams};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
        conn.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        conn.read_to_string(&mut out).await.unwrap();
        out
    }

    async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
        what: &str,
        secs: u64,
        mut f: impl FnMut() -> F,
    ) -> T {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(v) = f().await {
                return v;
            }
            assert!(Instant::now() < until, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// The tests of this module need the CRD; on a fresh testbed nobody installed it yet.
    async fn install_crd(client: &Client) {
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let crd = crate::api::crd();
        let name = crd.metadata.name.clone().unwrap();
        crds.patch(
            &name,
            &kube::api::PatchParams::apply(crate::objects::FIELD_MANAGER).force(),
            &kube::api::Patch::Apply(&crd),
        )
        .await
        .unwrap();
        let established = kube::runtime::wait::await_condition(
            crds,
            &name,
            kube::runtime::wait::conditions::is_crd_established(),
        );
        tokio::time::timeout(std::time::Duration::from_secs(30), established)
            .await
            .unwrap()
            .unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    // Runs with --features e2e (tests/run-all.sh), against $KUBECONFIG.
    async fn the_leader_bootstraps_a_cluster_reports_it_and_lets_go_on_shutdown() {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| "kubectl_etcd=info".into());
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
        let client = Client::try_default().await.unwrap();
        install_crd(&client).await;
        let pid = std::process::id();
        let ns = format!("ke-operate-{pid}");
        let nss = crate::testing::create_namespace(&client, &ns).await;
        let clusters: Api<EtcdCluster> = Api::namespaced(client.clone(), &ns);
        let identity = format!("operator/test-{pid}");
        // Distinct port ranges per test: the tests of one run share a pid.
        let addr: SocketAddr = format!("127.0.0.1:{}", 20000 + pid % 5000).parse().unwrap();
        let token = CancellationToken::new();
        let opts = OperateOptions {
            client: client.clone(),
            namespace: Some(ns.clone()),
            identity: identity.clone(),
            metrics_addr: addr,
            dial: Dial::PortForward,
        };
        let lease_ns = ns.clone();
        let op = tokio::spawn({
            let token = token.clone();
            async move { run_until(opts, &lease_ns, token).await }
        });

        let outcome = std::panic::AssertUnwindSafe(async {
            let cluster: EtcdCluster = serde_json::from_value(serde_json::json!({
                "apiVersion": "etcd.kubectl-etcd.io/v1alpha1", "kind": "EtcdCluster",
                "metadata": { "name": "demo" }, "spec": { "replicas": 1, "version": "3.5.16" },
            }))
            .unwrap();
            clusters
                .create(&PostParams::default(), &cluster)
                .await
                .unwrap();
            let sts: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
            eventually("the StatefulSet", 60, || async {
                sts.get_opt(&crate::objects::statefulset_name("demo"))
                    .await
                    .unwrap()
            })
            .await;
            let events: Api<K8sEvent> = Api::namespaced(client.clone(), &ns);
            let ev = eventually("a Bootstrapping event", 30, || async {
                events
                    .list(&ListParams::default())
                    .await
                    .unwrap()
                    .items
                    .into_iter()
                    .find(|e| e.reason.as_deref() == Some(reason::BOOTSTRAPPING))
            })
            .await;
            assert_eq!(ev.type_.as_deref(), Some("Normal"));
            assert_eq!(ev.reporting_controller.as_deref(), Some(REPORTER));
            assert_eq!(ev.action.as_deref(), Some(ACTION));
            assert_eq!(
                ev.regarding.as_ref().and_then(|r| r.name.as_deref()),
                Some("demo")
            );

            assert_eq!(
                lease::active_holder(client.clone(), &ns)
                    .await
                    .unwrap()
                    .as_deref(),
                Some(identity.as_str())
            );
            let text = get(addr, "/metrics").await;
            assert!(text.contains("\nkubectl_etcd_leader 1\n"), "{text}");
            assert!(
                !text.contains("kubectl_etcd_reconciles_total{result=\"acted\"} 0\n"),
                "{text}"
            );
            assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
            assert!(get(addr, "/healthz").await.starts_with("HTTP/1.1 200"));

            // The controller keeps requeueing until the member runs; then a scale-up (learner
            // add, join, promote: several NotYet/Wait passes) converges through watch + requeue.
            let running = |replicas: i32| {
                let clusters = clusters.clone();
                move || {
                    let clusters = clusters.clone();
                    async move {
                        let c = clusters.get("demo").await.unwrap();
                        let s = c.status.unwrap_or_default();
                        (s.phase == Some(crate::api::Phase::Running)
                            && s.ready_replicas == replicas)
                            .then_some(())
                    }
                }
            };
            eventually("demo to run with 1 member", 120, running(1)).await;
            clusters
                .patch(
                    "demo",
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(serde_json::json!({"spec": {"replicas": 3}})),
                )
                .await
                .unwrap();
            eventually("demo to run with 3 members", 240, running(3)).await;
            let text = get(addr, "/metrics").await;
            assert!(
                text.contains("\nkubectl_etcd_clusters{phase=\"Running\"} 1\n"),
                "{text}"
            );
            let reasons: Vec<String> = events
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .filter_map(|e| e.reason)
                .collect();
            for r in [reason::ADDING_LEARNER, reason::PROMOTING_LEARNER] {
                assert!(
                    reasons.iter().any(|x| x == r),
                    "no {r} event in {reasons:?}"
                );
            }

            clusters
                .delete("demo", &DeleteParams::default())
                .await
                .unwrap();
            eventually("the finalizer to be released", 60, || async {
                clusters
                    .get_opt("demo")
                    .await
                    .unwrap()
                    .is_none()
                    .then_some(())
            })
            .await;
        })
        .catch_unwind()
        .await;

        token.cancel();
        let stopped = tokio::time::timeout(Duration::from_secs(30), op).await;
        let holder = lease::active_holder(client.clone(), &ns).await;
        if outcome.is_err() {
            // Leave nothing behind that a finalizer would block.
            if let Ok(Some(c)) = clusters.get_opt("demo").await {
                let _ = clusters
                    .patch(
                        &c.name_any(),
                        &kube::api::PatchParams::default(),
                        &kube::api::Patch::Merge(
                            serde_json::json!({"metadata": {"finalizers": null}}),
                        ),
                    )
                    .await;
            }
        }
        let _ = nss.delete(&ns, &DeleteParams::default()).await;
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
        stopped
            .expect("the operator stops within 30 s of a shutdown")
            .unwrap()
            .unwrap();
        assert_eq!(holder.unwrap(), None, "the lease was released on shutdown");
    }

    fn options(client: &Client, ns: &str, who: &str, port: u16) -> OperateOptions {
        OperateOptions {
            client: client.clone(),
            namespace: Some(ns.into()),
            identity: lease::operator_identity(who),
            metrics_addr: SocketAddr::from(([127, 0, 0, 1], port)),
            dial: Dial::PortForward,
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    // Runs with --features e2e (tests/run-all.sh), against $KUBECONFIG.
    async fn a_standby_takes_over_from_a_stopped_leader_and_a_leader_that_loses_the_lease_exits() {
        use k8s_openapi::api::coordination::v1::Lease;
        let client = Client::try_default().await.unwrap();
        install_crd(&client).await;
        let pid = std::process::id();
        let ns = format!("ke-failover-{pid}");
        let nss = crate::testing::create_namespace(&client, &ns).await;
        let port = (25000 + pid % 5000) as u16;
        let spawn = |who: &str, port: u16, token: CancellationToken| {
            let opts = options(&client, &ns, who, port);
            let lease_ns = ns.clone();
            tokio::spawn(async move { run_until(opts, &lease_ns, token).await })
        };
        let holder = || async { lease::active_holder(client.clone(), &ns).await.unwrap() };

        let outcome = std::panic::AssertUnwindSafe(async {
            let (stop_a, stop_b) = (CancellationToken::new(), CancellationToken::new());
            let a = spawn("a", port, stop_a.clone());
            eventually("a to lead", 10, || async {
                (holder().await.as_deref() == Some("operator/a")).then_some(())
            })
            .await;
            let b = spawn("b", port + 1, stop_b.clone());
            let b_addr = SocketAddr::from(([127, 0, 0, 1], port + 1));
            eventually("b to stand by, ready", 10, || async {
                let r = tokio::net::TcpStream::connect(b_addr).await.ok()?;
                drop(r);
                get(b_addr, "/readyz")
                    .await
                    .starts_with("HTTP/1.1 200")
                    .then_some(())
            })
            .await;
            assert!(
                get(b_addr, "/metrics")
                    .await
                    .contains("\nkubectl_etcd_leader 0\n")
            );

            stop_a.cancel();
            a.await.unwrap().expect("a stops cleanly on shutdown");
            eventually("b to take over", 10, || async {
                (holder().await.as_deref() == Some("operator/b")).then_some(())
            })
            .await;
            eventually("b to report leading", 5, || async {
                get(b_addr, "/metrics")
                    .await
                    .contains("\nkubectl_etcd_leader 1\n")
                    .then_some(())
            })
            .await;

            // Someone else takes the Lease (as after a partition): b must stop within a renew period.
            let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
            let mut l = leases.get(lease::NAME).await.unwrap();
            let spec = l.spec.as_mut().unwrap();
            spec.holder_identity = Some("cli/thief/1".into());
            spec.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
                jiff::Timestamp::now(),
            ));
            leases
                .replace(lease::NAME, &PostParams::default(), &l)
                .await
                .unwrap();
            let err = tokio::time::timeout(RENEW_EVERY * 2, b)
                .await
                .expect("b exits")
                .unwrap()
                .unwrap_err();
            assert!(
                err.report()
                    .contains("lost the engine lease to cli/thief/1"),
                "{}",
                err.report()
            );
            assert_eq!(
                holder().await.as_deref(),
                Some("cli/thief/1"),
                "a leader that lost the lease does not release it"
            );
        })
        .catch_unwind()
        .await;
        let _ = nss.delete(&ns, &DeleteParams::default()).await;
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    }
}
