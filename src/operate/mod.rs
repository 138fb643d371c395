//! `kubectl etcd operate`: the in-cluster driver of the reconcile engine.
//!
//! May touch: watches, the engine Leases, Events, the metrics listener, process signals. It
//! decides nothing about etcd: every pass is `engine::reconcile_once`, and what follows a pass is
//! `engine::Pace::OPERATOR`'s verdict; this room only wires them up and reports.
//!
//! ```text
//!  start ─▶ serve /metrics /healthz /readyz
//!        ─▶ stand by: try the leader Lease every 5 s (held by another operator replica)
//!        ─▶ lead: Controller over EtcdCluster (+ owned StatefulSets, Services, ConfigMaps)
//!                 renew the leader Lease every 5 s, and the Lease of every cluster it acts on
//!                 (a cluster whose Lease a `kubectl etcd` command holds waits for it)
//!             ├─ SIGTERM/SIGINT ─▶ finish passes in flight, release the Leases, Ok
//!             └─ leader Lease lost or not renewed for 10 s ─▶ Err (the process exits; the
//!                Deployment restarts it as a standby: never two leaders acting at once)
//! ```

mod binding;
mod fair;
mod leases;
mod metrics;
mod watch;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use kube::runtime::controller::{self, Action};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::{Client, Resource, ResourceExt};
use tokio_util::sync::CancellationToken;

use crate::api::{EtcdCluster, reason};
use crate::engine::{self, Context, Dial, Mode, Next, Outcome, Pace};
use crate::error::{Error, exit};
use crate::lease::{self, Acquired, Lock};
use crate::objects::ENV_POD_NAME;
use crate::plan::Step;
use leases::ClusterLeases;
pub use metrics::auth::MetricsAuth;
use metrics::{Metrics, PassResult};
use watch::{controller_for, queue_config};

/// How long the operator's Leases (leader and clusters) last without renewal. A leader that
/// could not renew for two thirds of it stops (`Lock::keep_renewed`), before anyone else may
/// take them over.
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How often the leader renews (and a standby retries).
pub const RENEW_EVERY: Duration = Duration::from_secs(5);
/// How long a shutdown waits for passes in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(20);
/// `reportingController` of our Events.
pub const REPORTER: &str = "kubectl-etcd";
/// Event action of every reconcile Event.
pub const ACTION: &str = "Reconcile";
/// Event reason of a failed pass (an operator-side reason: not a status condition reason).
const REASON_FAILED: &str = "ReconcileFailed";
/// events.k8s.io limits `note` to 1 kB.
const NOTE_MAX: usize = 1024;

const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// What `operate` needs from the command line.
pub struct OperateOptions {
    pub client: Client,
    /// The namespaces watched (`--watch-namespace`), or every namespace when empty.
    pub namespaces: Vec<String>,
    /// Lease identity, `lease::operator_identity(pod)`; also the Event reporting instance.
    pub identity: String,
    /// Listen address of `/metrics`, `/healthz` and `/readyz` (the manifests use port 8080).
    pub metrics_addr: SocketAddr,
    /// Who may read `/metrics` (`--metrics-auth`; `new`: a reviewed bearer token).
    pub metrics_auth: MetricsAuth,
    pub dial: Dial,
    /// Namespace of the leader Lease: `lease::NAMESPACE` (tests use their own); in a pod, the
    /// operator's own (`in_pod`).
    pub lease_namespace: String,
    /// Name of the leader Lease; `None`: `lease::leader_lease_of(namespaces)` (an operator run
    /// outside a pod, tests).
    pub leader_lease: Option<String>,
    /// Whether it binds its workload role in each namespace where it serves a cluster before
    /// its first pass there (`binding`; the operator in a pod, as `operator`).
    pub bind_workload: bool,
    /// What backups may use beyond a cluster's credentials Secret (`operate
    /// --allow-ambient-credentials`, `--s3-endpoint-allow`): by default no ambient cloud
    /// identity and AWS endpoints only.
    pub store_access: crate::archive::store::Access,
    /// Which `spec.etcd.options` and images clusters get (`--allow-etcd-option`,
    /// `--allow-image-prefix`): by default the tuning flags and the default images only.
    pub leave: crate::model::Leave,
    /// This operator's pods, when it runs in one (`own_pods`): the NetworkPolicies it writes
    /// admit them to the members' client port.
    pub operator: Option<crate::model::OperatorPods>,
    /// `--allow-foreign-adopt-endpoints`: adoptions may dial members outside their cluster's
    /// namespace (`engine::Context::allow_foreign_adopt_endpoints`).
    pub allow_foreign_adopt_endpoints: bool,
    /// Scheduled backups taken at once, per namespace and in all (`--max-backups-per-namespace`,
    /// `--max-backups`), the freed slots going to the namespaces in turn (`model::fair`).
    pub backup_bounds: crate::model::fair::Bounds,
    /// Passes run at once per namespace (`--max-passes-per-namespace`; none in all).
    pub pass_bounds: crate::model::fair::Bounds,
    /// `--allow-cluster-issuer`: mode certManager may name a ClusterIssuer
    /// (`engine::Context::allow_cluster_issuer`).
    pub allow_cluster_issuer: bool,
}

impl OperateOptions {
    /// Options watching `namespace` (`None`: every namespace; set `namespaces` for several).
    pub fn new(
        client: Client,
        namespace: Option<String>,
        metrics_addr: SocketAddr,
        dial: Dial,
    ) -> OperateOptions {
        OperateOptions {
            client,
            namespaces: namespace.into_iter().collect(),
            identity: default_identity(),
            metrics_addr,
            metrics_auth: MetricsAuth::Kubernetes,
            dial,
            lease_namespace: lease::NAMESPACE.into(),
            leader_lease: None,
            bind_workload: false,
            store_access: crate::archive::store::Access::operator(false, &[]),
            leave: crate::model::Leave::operator(Vec::new(), Vec::new()),
            operator: None,
            allow_foreign_adopt_endpoints: false,
            backup_bounds: crate::model::fair::Bounds::BACKUPS,
            pass_bounds: crate::model::fair::Bounds::PASSES,
            allow_cluster_issuer: false,
        }
    }
}

/// This process's pods as the Deployment describes them through the downward API
/// (`objects::install`): `$POD_NS`, and `$OPERATOR_NAME` (default: the default install's
/// name). `None` outside a pod (`operate` from a workstation dials by port-forward, which no
/// NetworkPolicy stops).
pub fn own_pods() -> Option<crate::model::OperatorPods> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let namespace = var(crate::objects::ENV_POD_NAMESPACE)?;
    Some(crate::model::OperatorPods {
        namespace,
        name: var(crate::objects::ENV_OPERATOR_NAME)
            .unwrap_or_else(|| crate::objects::install::NAME.into()),
    })
}

/// `operator/$POD_NAME` (the Deployment sets it), else `operator/<hostname>`.
pub fn default_identity() -> String {
    let who = std::env::var(ENV_POD_NAME)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(lease::hostname);
    lease::operator_identity(&who)
}

/// Says whom the NetworkPolicies this operator writes admit (`own_pods`).
fn log_admitted(pods: Option<&crate::model::OperatorPods>) {
    match pods {
        Some(pods) => tracing::info!("network policies admit this operator's {pods} to 2379"),
        None => tracing::info!(
            "not in a pod ({} unset): network policies keep the operator they admit",
            crate::objects::ENV_POD_NAMESPACE
        ),
    }
}

/// Runs the operator until SIGTERM/SIGINT (`Ok`) or until leadership is lost (`Err`: exit and
/// let the Deployment restart the process).
pub async fn run(opts: OperateOptions) -> Result<(), Error> {
    let shutdown = CancellationToken::new();
    cancel_on_signal(shutdown.clone())?;
    run_until(opts, shutdown).await
}

/// `run` until `shutdown` is cancelled (tests cancel their own).
pub async fn run_until(opts: OperateOptions, shutdown: CancellationToken) -> Result<(), Error> {
    let metrics = Arc::new(Metrics::default());
    let guard = metrics::Guard::new(opts.metrics_auth, &opts.client, opts.operator.as_ref());
    let (server, bound) = metrics::start(opts.metrics_addr, guard, metrics.clone()).await?;
    tracing::info!(identity = %opts.identity, addr = %bound, metrics_auth = ?opts.metrics_auth, "operator starting");
    tracing::info!(
        ambient_credentials = opts.store_access.ambient_credentials,
        s3_endpoints = ?opts.store_access.endpoints,
        "backups: ambient cloud identity and custom S3 endpoints (AWS endpoints are always allowed)"
    );
    log_admitted(opts.operator.as_ref());

    let lock = Lock::new(
        opts.client.clone(),
        &opts.lease_namespace,
        &opts
            .leader_lease
            .clone()
            .unwrap_or_else(|| lease::leader_lease_of(&opts.namespaces)),
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
    let mut namespace_tried = false;
    loop {
        let attempt = tokio::select! {
            _ = shutdown.cancelled() => return Ok(false),
            r = lock.try_acquire_or_renew() => r,
        };
        // Run from a workstation before any install: make the Leases' namespace (with the
        // user's rights; an in-cluster ServiceAccount may not, and is told below what to do).
        if matches!(attempt, Ok(Acquired::NoNamespace)) && !namespace_tried {
            namespace_tried = true;
            match lock.create_namespace().await {
                Ok(true) => {
                    tracing::info!(namespace = %lock.namespace(), "created the namespace of the engine leases");
                    continue;
                }
                Ok(false) => {}
                Err(e) => tracing::warn!("{}", e.report()),
            }
        }
        if leads(lock, metrics, attempt, &mut last_holder)? {
            return Ok(true);
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(false),
            _ = tokio::time::sleep(RENEW_EVERY) => {}
        }
    }
}

/// What one attempt at the leader Lease means: `Ok(true)` we lead; `Ok(false)` stand by (said
/// once per holder) or retry; `Err` when RBAC forbids it (a configuration mistake: crash-loop
/// visibly rather than stand by forever).
fn leads(
    lock: &Lock,
    metrics: &Metrics,
    attempt: Result<Acquired, Error>,
    last_holder: &mut Option<String>,
) -> Result<bool, Error> {
    match attempt {
        Ok(Acquired::Held) => {
            metrics.set_ready(true);
            tracing::info!(identity = %lock.identity(), "acquired the engine lease: leading");
            return Ok(true);
        }
        Ok(Acquired::HeldBy { holder }) => {
            metrics.set_ready(true);
            if last_holder.as_ref() != Some(&holder) {
                tracing::info!(holder = %holder, "standing by: another operator replica leads");
                *last_holder = Some(holder);
            }
        }
        Ok(Acquired::NoNamespace) => tracing::warn!(
            "the namespace {} of the engine lease does not exist, so the lease cannot be created (retrying); install the operator with `kubectl etcd install --operator` or create the namespace",
            lock.namespace()
        ),
        Err(e) if e.exit_code() == exit::FORBIDDEN => return Err(e),
        Err(e) => tracing::warn!("could not read the engine lease (retrying): {}", e.report()),
    }
    Ok(false)
}

fn lost_lease(message: String) -> Error {
    Error::Io(std::io::Error::other(message))
}

/// Renews the leader Lease until that fails; returns why leadership is over.
async fn keep_lease(lock: &Lock) -> Error {
    let mut renewal = lock.keep_renewed(RENEW_EVERY);
    let why = renewal.wait_lost().await;
    lost_lease(format!(
        "{why}; exiting so that only one engine acts (before another replica may take it)"
    ))
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

    let mut ctx = Context::new(opts.client.clone(), opts.dial);
    ctx.add_finalizer = true;
    ctx.store_access = opts.store_access.clone();
    ctx.leave = opts.leave.clone();
    ctx.operator = opts.operator.clone();
    ctx.allow_foreign_adopt_endpoints = opts.allow_foreign_adopt_endpoints;
    ctx.allow_cluster_issuer = opts.allow_cluster_issuer;
    ctx.identity = opts.identity.clone();
    // A scheduled backup that ends starts a pass of its cluster (which reads the outcome).
    let (ended, ended_rx) = tokio::sync::mpsc::unbounded_channel();
    ctx.scheduled = Some(Arc::new(engine::backups::Runner::new(
        Some(ended),
        opts.backup_bounds,
    )));
    tracing::info!(
        passes_per_namespace = opts.pass_bounds.per_namespace,
        backups_per_namespace = opts.backup_bounds.per_namespace,
        backups = opts.backup_bounds.total,
        "fair share: slots per namespace and in all, freed slots going to the namespaces in turn"
    );
    let reporter = Reporter {
        controller: REPORTER.into(),
        instance: Some(opts.identity.clone()),
    };
    let state = Arc::new(State {
        ctx,
        recorder: Recorder::new(opts.client.clone(), reporter),
        metrics: metrics.clone(),
        backoff: Backoffs::default(),
        held_by: Holders::default(),
        passes: Arc::default(),
        slots: Arc::new(fair::Gate::new(opts.pass_bounds, metrics.clone())),
        leases: ClusterLeases::new(opts.client.clone(), &opts.identity, LEASE_DURATION),
        bindings: binding::Bindings::new(
            opts.client.clone(),
            opts.bind_workload.then(|| opts.operator.clone()).flatten(),
        ),
    });
    let result = run_controller(opts, &state, ended_rx, &mut renewing, shutdown).await;
    state.leases.release_all().await;
    result
}

/// The controller until shutdown (`Ok`) or until the leader Lease is lost.
async fn run_controller(
    opts: &OperateOptions,
    state: &Arc<State>,
    mut backups_ended: tokio::sync::mpsc::UnboundedReceiver<(String, String)>,
    renewing: &mut std::pin::Pin<&mut impl std::future::Future<Output = Error>>,
    shutdown: &CancellationToken,
) -> Result<(), Error> {
    let renew_clusters = state.leases.keep_renewed(RENEW_EVERY);
    tokio::pin!(renew_clusters);

    let (stop, stopped) = futures::channel::oneshot::channel::<()>();
    let ended = futures::stream::poll_fn(move |cx| backups_ended.poll_recv(cx))
        .map(|(ns, name)| ObjectRef::<EtcdCluster>::new(&name).within(&ns));
    let controller = controller_for(&opts.client, &opts.namespaces)
        .reconcile_on(ended)
        .with_config(queue_config())
        .graceful_shutdown_on(stopped.map(drop))
        .run(reconcile, error_policy, state.clone())
        .for_each(|res| async move {
            match res {
                Ok((obj, _)) => tracing::trace!(cluster = %obj.name, namespace = obj.namespace.as_deref().unwrap_or(""), "pass done"),
                // Logged (with its cluster) by `reconcile` already.
                Err(controller::Error::ReconcilerFailed(..)) => {}
                Err(e) => tracing::warn!("controller: {e}"),
            }
        });
    tokio::pin!(controller);
    let watched = if opts.namespaces.is_empty() {
        "<all>".to_string()
    } else {
        opts.namespaces.join(",")
    };
    tracing::info!(namespace = %watched, "controller running");

    tokio::select! {
        _ = &mut controller => Err(lost_lease("the controller stopped unexpectedly".into())),
        e = &mut *renewing => Err(e),
        () = &mut renew_clusters => unreachable!("renews until dropped"),
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
                e = &mut *renewing => Err(e),
                () = &mut renew_clusters => unreachable!("renews until dropped"),
            }
        }
    }
}

/// A hold is published as an Event once per change: when the status the cluster carried before
/// this pass did not already say it (the status message is the step's sentence), not every 30 s.
fn hold_is_news(cluster: &EtcdCluster, step: &Step) -> bool {
    cluster.status.as_ref().and_then(|s| s.message.as_deref()) != Some(step.to_string().as_str())
}

struct State {
    ctx: Context,
    recorder: Recorder,
    metrics: Arc<Metrics>,
    backoff: Backoffs,
    leases: ClusterLeases,
    /// Its workload role's binding in each namespace it serves (`binding`).
    bindings: binding::Bindings,
    /// The other driver each cluster was last seen held by, so that the wait is logged at info
    /// once per holder, not on every pass a pod change starts while it acts.
    held_by: Holders,
    /// Passes running now; the last one to end gives the freed memory back.
    passes: Arc<AtomicUsize>,
    /// The passes' slots in each namespace (`--max-passes-per-namespace`).
    slots: Arc<fair::Gate>,
}

/// One pass (kube-runtime already wraps it in a span naming the object; our lines carry the
/// `cluster`/`namespace` fields themselves so JSON logs can be filtered on them).
async fn reconcile(cluster: Arc<EtcdCluster>, st: Arc<State>) -> Result<Action, Error> {
    let object = ObjectRef::from_obj(&*cluster);
    let _slot = st
        .slots
        .enter(
            object.namespace.as_deref().unwrap_or_default(),
            &object.name,
        )
        .await;
    let _running = Running::enter(&st.passes);
    // Its rights in the namespace first: the cluster's Lease is among them.
    st.bindings
        .ensure(object.namespace.as_deref().unwrap_or_default())
        .await?;
    // Act only while holding the cluster's Lease (renewed in the background from here on).
    if let Some(wait) = st.cluster_lease(&cluster, &object).await? {
        return Ok(wait);
    }
    let labels = metrics::ClusterLabels {
        namespace: cluster.namespace().unwrap_or_default(),
        name: cluster.name_any(),
    };
    let started = Instant::now();
    let result = engine::reconcile_once(&st.ctx, &cluster, Mode::Act).await;
    let took = started.elapsed();
    let pass = match result {
        Ok(pass) => pass,
        Err(e) => {
            st.failed(&cluster, &labels, took, &e).await;
            return Err(e);
        }
    };
    st.backoff.succeeded(&object);
    st.counted(&object, &labels, &pass, took).await;
    st.report(&cluster, &labels, &pass).await;
    // Scheduled backups are steps of the passes (`plan::backup`); come back by the next one.
    Ok(next_pass(
        &pass,
        cluster.uid().as_deref().unwrap_or_default(),
    ))
}

/// When the next pass of the cluster (uid `key`) comes: the engine's pace, or the cluster's next
/// scheduled backup or drill when that is sooner.
fn next_pass(pass: &engine::Pass, key: &str) -> Action {
    let backup_due = pass
        .status
        .backup
        .as_ref()
        .and_then(|b| {
            [&b.next_scheduled_time, &b.next_drill_time]
                .into_iter()
                .flatten()
                .map(|t| t.0)
                .filter(|t| *t > jiff::Timestamp::now())
                .min()
        })
        .map(|t| t.as_second() - jiff::Timestamp::now().as_second())
        // A slot already due waits for a pass with nothing else to do: the pace of the pass.
        .filter(|secs| *secs > 0)
        .map(|secs| Duration::from_secs(secs as u64));
    let sooner = |d: Duration| backup_due.map_or(d, |b| b.min(d));
    match Pace::OPERATOR.after(&pass.outcome, &pass.step) {
        Next::Converged => Action::requeue(sooner(Pace::OPERATOR.converged_for(key))),
        Next::Again(d) | Next::Held { again: d, .. } => Action::requeue(sooner(d)),
        Next::Released => Action::await_change(),
        Next::Retry | Next::Failed => backup_due.map_or_else(Action::await_change, Action::requeue),
    }
}

fn error_policy(cluster: Arc<EtcdCluster>, err: &Error, st: Arc<State>) -> Action {
    match (Pace::OPERATOR.after_error(err), err) {
        // The status says why; only a spec change can fix it, and that change triggers a pass.
        (Next::Failed, Error::InvalidSpec { .. }) => Action::await_change(),
        _ => Action::requeue(st.backoff.failed(ObjectRef::from_obj(&*cluster))),
    }
}

/// The other driver each cluster was last seen held by.
#[derive(Default)]
struct Holders(Mutex<HashMap<ObjectRef<EtcdCluster>, String>>);

impl Holders {
    /// Records who holds the cluster; true when that holder is new for it (a first wait, or
    /// another holder than the last one seen).
    fn newly(&self, object: &ObjectRef<EtcdCluster>, acquired: &Acquired) -> bool {
        let mut held_by = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match acquired {
            Acquired::HeldBy { holder } => {
                held_by.insert(object.clone(), holder.clone()).as_ref() != Some(holder)
            }
            Acquired::Held | Acquired::NoNamespace => {
                held_by.remove(object);
                false
            }
        }
    }
}

/// One pass running, counted in `State::passes` while it lives.
struct Running(Arc<AtomicUsize>);

impl Running {
    fn enter(passes: &Arc<AtomicUsize>) -> Self {
        passes.fetch_add(1, Ordering::AcqRel);
        Running(passes.clone())
    }
}

impl Drop for Running {
    /// The last pass to end (of a burst: every cluster at start, or one cluster's steps) gives
    /// back what the passes freed: the operator idles at its live memory, not at its peak.
    fn drop(&mut self) {
        if self.0.fetch_sub(1, Ordering::AcqRel) == 1 {
            give_back_freed_memory();
        }
    }
}

/// Returns to the system the pages glibc keeps after they were freed (`malloc_trim(0)`). glibc
/// gives memory back only from the top of each arena, so pages freed between live allocations
/// (by passes that ran together, a backup's buffers) would stay resident for ever: about 2 MiB
/// of the 13 MiB of heap and stacks of a release build idle with 20 clusters (docs/src/benchmarks.md).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn give_back_freed_memory() {
    // SAFETY: malloc_trim takes no pointer and changes only glibc's own free lists, under each
    // arena's lock: any thread may call it at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other C libraries (musl) return freed memory themselves, or have no such call.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn give_back_freed_memory() {}

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
    /// Takes or renews the cluster's Lease: `Some` (when to look again) while another driver
    /// acts on the cluster.
    async fn cluster_lease(
        &self,
        cluster: &EtcdCluster,
        object: &ObjectRef<EtcdCluster>,
    ) -> Result<Option<Action>, Error> {
        let acquired = self.leases.acquire(object).await?;
        let newly_held_by = self.held_by.newly(object, &acquired);
        match acquired {
            Acquired::HeldBy { holder } => {
                let (cluster, namespace) = (cluster.name_any(), cluster.namespace());
                let namespace = namespace.unwrap_or_default();
                if newly_held_by {
                    tracing::info!(%cluster, %namespace, %holder, "waiting: another driver is acting on this cluster");
                } else {
                    tracing::debug!(%cluster, %namespace, %holder, "still waiting: another driver is acting on this cluster");
                }
                Ok(Some(Action::requeue(Pace::OPERATOR.waiting)))
            }
            // The cluster's namespace is being deleted (nothing new may be created there): the
            // release of the cluster is all that is left, and it needs no Lease.
            Acquired::Held | Acquired::NoNamespace => Ok(None),
        }
    }

    /// A pass that failed: counted, logged, and published as a Warning Event.
    async fn failed(
        &self,
        cluster: &EtcdCluster,
        labels: &metrics::ClusterLabels,
        took: Duration,
        e: &Error,
    ) {
        self.metrics.pass(PassResult::Error, took);
        self.metrics.failed(labels, e);
        let reason = if matches!(e, Error::InvalidSpec { .. }) {
            reason::INVALID_SPEC
        } else {
            REASON_FAILED
        };
        tracing::warn!(cluster = %labels.name, namespace = %labels.namespace, "pass failed: {}", e.report());
        self.publish(cluster, EventType::Warning, reason, e.report())
            .await;
    }

    /// A pass that ran, in the metrics; a released cluster is forgotten, and so is its Lease.
    async fn counted(
        &self,
        object: &ObjectRef<EtcdCluster>,
        labels: &metrics::ClusterLabels,
        pass: &engine::Pass,
        took: Duration,
    ) {
        let result = match &pass.outcome {
            Outcome::Acted | Outcome::Released => PassResult::Acted,
            Outcome::NotYet(_) => PassResult::NotYet,
            Outcome::Unchanged => PassResult::Unchanged,
        };
        self.metrics.pass(result, took);
        // The due backups waiting for a slot, as this pass left them (it may have joined a line).
        if let Some(runner) = &self.ctx.scheduled {
            self.metrics
                .queued(metrics::Work::Backup, &runner.waiting_by_namespace());
        }
        if pass.outcome == Outcome::Released {
            self.metrics.forget(labels);
            self.leases.remove(object).await;
        } else {
            self.metrics.observed(labels, pass);
            metrics::refresh_certificates(
                &self.metrics,
                &self.ctx.reach.client,
                labels,
                &pass.desired,
            )
            .await;
        }
    }

    /// What the pass did, as a log line, and as an Event when it acted or newly holds.
    async fn report(
        &self,
        cluster: &EtcdCluster,
        labels: &metrics::ClusterLabels,
        pass: &engine::Pass,
    ) {
        let (name, ns) = (&labels.name, &labels.namespace);
        match (&pass.outcome, &pass.step) {
            (Outcome::Acted, step) => {
                self.metrics.acted(labels, step);
                tracing::info!(cluster = %name, namespace = %ns, step = %step, "acted");
                self.publish_step(cluster, EventType::Normal, step).await;
            }
            (Outcome::Released, _) => {
                tracing::info!(cluster = %name, namespace = %ns, "deleted: released the finalizer")
            }
            (_, step @ Step::Hold { .. }) if hold_is_news(cluster, step) => {
                tracing::warn!(cluster = %name, namespace = %ns, step = %step, "holding");
                self.publish_step(cluster, EventType::Warning, step).await;
            }
            (_, step) => tracing::debug!(cluster = %name, namespace = %ns, step = %step, "pass"),
        }
    }

    /// The step's Event: its reason and its sentence (the status message says the same).
    async fn publish_step(&self, cluster: &EtcdCluster, type_: EventType, step: &Step) {
        self.publish(cluster, type_, step.reason().as_str(), step.to_string())
            .await;
    }

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
    use super::watch::tests::in_ns;
    use super::*;
    use kube::runtime::controller::Controller;
    use kube::runtime::{WatchStreamExt, reflector, watcher};

    #[test]
    fn a_wait_on_another_driver_is_new_once_per_holder() {
        let (h, a, b) = (
            Holders::default(),
            ObjectRef::<EtcdCluster>::new("a").within("ns"),
            ObjectRef::<EtcdCluster>::new("b").within("ns"),
        );
        let by = |holder: &str| Acquired::HeldBy {
            holder: holder.into(),
        };
        assert!(h.newly(&a, &by("cli/x")), "the first wait");
        assert!(!h.newly(&a, &by("cli/x")), "the same holder again");
        assert!(h.newly(&b, &by("cli/x")), "another cluster");
        assert!(h.newly(&a, &by("cli/y")), "another holder");
        assert!(!h.newly(&a, &Acquired::Held), "ours now");
        assert!(h.newly(&a, &by("cli/y")), "held again after we held it");
        assert!(!h.newly(&b, &Acquired::NoNamespace));
        assert_eq!(h.0.lock().unwrap().len(), 1, "only a is held by another");
    }

    #[test]
    fn passes_are_counted_while_they_run() {
        let passes = Arc::new(AtomicUsize::new(0));
        let first = Running::enter(&passes);
        let second = Running::enter(&passes);
        assert_eq!(passes.load(Ordering::Acquire), 2);
        drop(first);
        assert_eq!(passes.load(Ordering::Acquire), 1);
        drop(second); // the last one gives the freed memory back
        assert_eq!(passes.load(Ordering::Acquire), 0);
    }

    /// The work queue as `operate` runs it (`queue_config`), over
    /// clusters listed once (then a quiet watch), with `again` for more passes of a cluster and
    /// `pass` for the reconcile; its task is aborted when the handle is dropped.
    fn scripted_queue<Fut>(
        names: &[&str],
        again: impl futures::Stream<Item = ObjectRef<EtcdCluster>> + Send + 'static,
        pass: impl Fn(Arc<EtcdCluster>) -> Fut + Send + 'static,
    ) -> tokio_util::sync::DropGuard
    where
        Fut: std::future::Future<Output = Result<Action, Error>> + Send + 'static,
    {
        use watcher::Event as E;
        let (reader, writer) = reflector::store();
        let listed: Vec<Result<E<EtcdCluster>, watcher::Error>> = std::iter::once(E::Init)
            .chain(names.iter().map(|n| E::InitApply(in_ns(n, "ns"))))
            .chain([E::InitDone])
            .map(Ok)
            .collect();
        let clusters = futures::stream::iter(listed)
            .chain(futures::stream::pending())
            .reflect(writer)
            .applied_objects();
        let queue = Controller::for_stream(clusters, reader)
            .reconcile_on(again)
            .with_config(queue_config())
            .run(
                move |c, _: Arc<()>| pass(c),
                |_, _, _| Action::await_change(),
                Arc::new(()),
            )
            .for_each(|_| async {});
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = queue => {}
                () = stopped.cancelled() => {}
            }
        });
        stop.drop_guard()
    }

    /// How long a test waits for what must happen before calling it stuck (not a measure).
    const STUCK: Duration = Duration::from_secs(20);

    async fn next(rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> String {
        // Longer than a scripted step waits: that step's own report says what it saw.
        tokio::time::timeout(2 * STUCK, rx.recv())
            .await
            .expect("the queue is stuck")
            .expect("the queue is gone")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pass_that_holds_its_thread_does_not_hold_another_clusters_pass() {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        // Cluster a's long step holds its thread (as compressing and encrypting a pre-upgrade
        // snapshot does between its reads) until b's pass has ended, and b's pass goes on only
        // once a's step has begun (looking on a timer, as a dial or a watch wakes). Were the
        // passes polled by one task, or one at a time, b could not go on before a let go.
        let (b_ended, b_ended_rx) = std::sync::mpsc::channel::<()>();
        let b_ended = Arc::new(Mutex::new(b_ended));
        let b_ended_rx = Arc::new(Mutex::new(b_ended_rx));
        let a_holds = Arc::new(AtomicBool::new(false));
        let (report, mut reports) = tokio::sync::mpsc::unbounded_channel::<String>();
        let _queue = scripted_queue(&["a", "b"], futures::stream::pending(), move |c| {
            let (b_ended, b_ended_rx) = (b_ended.clone(), b_ended_rx.clone());
            let (a_holds, report) = (a_holds.clone(), report.clone());
            async move {
                if c.name_any() == "a" {
                    let rx = b_ended_rx.lock().unwrap_or_else(|p| p.into_inner());
                    a_holds.store(true, SeqCst);
                    let meanwhile = rx.recv_timeout(STUCK).is_ok();
                    let _ = report.send(format!(
                        "a's step ended; b's pass ended meanwhile: {meanwhile}"
                    ));
                } else {
                    while !a_holds.load(SeqCst) {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    let _ = b_ended.lock().unwrap_or_else(|p| p.into_inner()).send(());
                }
                Ok(Action::await_change())
            }
        });
        assert_eq!(
            next(&mut reports).await,
            "a's step ended; b's pass ended meanwhile: true"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cluster_triggered_during_its_pass_gets_its_next_pass_after_it_never_beside_it() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let (again, mut triggers) =
            tokio::sync::mpsc::unbounded_channel::<ObjectRef<EtcdCluster>>();
        let triggers = futures::stream::poll_fn(move |cx| triggers.poll_recv(cx));
        let (passes, in_flight, most) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let (report, mut reports) = tokio::sync::mpsc::unbounded_channel::<String>();
        let _queue = scripted_queue(&["a"], triggers, {
            let most = most.clone();
            move |c| {
                let (again, passes, in_flight, most, report) = (
                    again.clone(),
                    passes.clone(),
                    in_flight.clone(),
                    most.clone(),
                    report.clone(),
                );
                async move {
                    let n = passes.fetch_add(1, SeqCst) + 1;
                    most.fetch_max(in_flight.fetch_add(1, SeqCst) + 1, SeqCst);
                    if n == 1 {
                        for _ in 0..3 {
                            let _ = again.send(ObjectRef::from_obj(&*c));
                        }
                        // Time for the queue to take the triggers while this pass runs.
                        tokio::time::sleep(Duration::from_millis(300)).await;
                    }
                    in_flight.fetch_sub(1, SeqCst);
                    let _ = report.send(format!("pass {n} of {} ended", c.name_any()));
                    Ok(Action::await_change())
                }
            }
        });
        assert_eq!(next(&mut reports).await, "pass 1 of a ended");
        assert_eq!(next(&mut reports).await, "pass 2 of a ended");
        assert_eq!(most.load(SeqCst), 1, "never two passes of a at once");
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
    fn a_hold_is_news_once_until_it_changes() {
        let hold = Step::Hold {
            reason: crate::api::Reason::QuorumLost,
            message: "quorum lost".into(),
        };
        let mut c = crate::fixtures::cluster("demo").build();
        assert!(hold_is_news(&c, &hold));
        c.status = Some(crate::api::EtcdClusterStatus {
            message: Some(hold.to_string()),
            ..Default::default()
        });
        assert!(!hold_is_news(&c, &hold), "the same hold again");
        let other = Step::Hold {
            reason: crate::api::Reason::QuorumAtRisk,
            message: "another".into(),
        };
        assert!(hold_is_news(&c, &other));
    }

    #[test]
    fn event_notes_fit_the_api_limit_without_splitting_characters() {
        assert_eq!(truncate("short".into(), NOTE_MAX), "short");
        let long = "é".repeat(1000);
        let cut = truncate(long, NOTE_MAX);
        assert!(cut.len() <= NOTE_MAX && cut.ends_with("..."));
    }
}
