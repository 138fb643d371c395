//! The CLI's driver: after a verb wrote its intent, run engine passes until the engine's policy
//! (`engine::policy`) says converged, held or failed — or, while another driver holds the
//! cluster's Lease, watch the status it writes.
//!
//! ```text
//!  loop until --timeout:
//!    hold the cluster's Lease? ── held by an operator ─▶ read its status: converged? done
//!         │                  │                        held past HOLD_PATIENCE? exit 7
//!         │                  └─ held by another CLI ─▶ wait for it
//!         ▼ held (renewed in the background), or no operator namespace at all
//!    reconcile_once ─▶ Pace::CLI.next(result): Converged ─▶ print, exit 0
//!                                              Again(d)  ─▶ next pass after d
//!                                              Held      ─▶ after HOLD_PATIENCE: exit 7
//!                                              Retry     ─▶ next pass after RETRY_AFTER
//!                                              Failed    ─▶ exit with the error's code
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher;
use tokio::sync::Notify;

use super::flags::{Global, WaitFlags};
use super::{Session, output};
use crate::api::EtcdCluster;
use crate::engine::{self, Context, Mode, Next, Pace, Pass};
use crate::error::Error;
use crate::lease::{self, Acquired, Lock, Renewal};
use crate::plan::Step;

/// How long a verb waits out an engine hold (e.g. a member restarting during a scale-down)
/// before it reports it.
const HOLD_PATIENCE: Duration = Duration::from_secs(30);
/// Pause after a failure another pass may not meet.
const RETRY_AFTER: Duration = Duration::from_secs(2);
/// Pause while another driver holds the cluster's Lease.
const DEFER_POLL: Duration = Duration::from_secs(1);
/// How long the CLI's cluster Lease lasts without renewal, and how often it is renewed.
const LEASE_DURATION: Duration = Duration::from_secs(20);
const RENEW_EVERY: Duration = Duration::from_secs(5);

/// How a drive ended well.
pub(super) enum Converged {
    /// This process ran the last pass.
    Pass(Box<Pass>),
    /// Another driver (an operator) converged it; this is the cluster as it reported it.
    Status(Box<EtcdCluster>),
}

/// After intent is written: drive `cluster` until it converges. Prints the result.
pub(super) async fn drive(
    s: &Session,
    g: &Global,
    cluster: EtcdCluster,
    wait: &WaitFlags,
) -> Result<(), Error> {
    if wait.no_wait {
        return output::print_cluster(g.output, &cluster);
    }
    let name = cluster.name_any();
    match converge(s, &name, wait.timeout).await? {
        Converged::Status(c) => output::print_cluster(g.output, &c),
        Converged::Pass(pass) => match s.clusters().get_opt(&name).await.ok().flatten() {
            Some(c) => output::print_cluster(g.output, &c),
            None => output::print_pass(g.output, &pass),
        },
    }
}

/// Drives cluster `name` until it converges, under its Lease (or, while an operator holds it,
/// watching the status it writes); prints nothing on stdout.
pub(super) async fn converge(
    s: &Session,
    name: &str,
    timeout: Duration,
) -> Result<Converged, Error> {
    let progress = output::Progress::new(&format!("{}/{name}", s.namespace));
    let started = Instant::now();
    let lock = cluster_lock(s, name);
    let result = passes(s, &lock, name, timeout, started, &progress).await;
    lock.release().await;
    match &result {
        Ok(_) => progress.finish(&format!(
            "converged in {:.1} s",
            started.elapsed().as_secs_f64()
        )),
        Err(_) => progress.abandon(),
    }
    result
}

async fn passes(
    s: &Session,
    lock: &Lock,
    name: &str,
    timeout: Duration,
    started: Instant,
    progress: &output::Progress,
) -> Result<Converged, Error> {
    let ns = &s.namespace;
    let ctx = s.context();
    let mut last_note = String::new();
    let mut deferred_to: Option<String> = None;
    // `None` while we do not hold the Lease; `guarded` false: the namespace is gone or
    // being deleted, no Lease.
    let mut renewal: Option<Renewal> = None;
    let mut guarded = true;
    // A hold that outlasts HOLD_PATIENCE is reported (exit 7) instead of waited out to --timeout.
    let mut holding_since: Option<Instant> = None;
    let mut rollout = Rollout::default();
    let wake = Wake::start(s, name);
    loop {
        if started.elapsed() > timeout {
            return Err(Error::Timeout {
                namespace: ns.clone(),
                name: name.into(),
                seconds: timeout.as_secs(),
                last: last_note,
            });
        }
        // Act only while holding the cluster's Lease.
        if let Some(why) = renewal.as_ref().and_then(Renewal::lost) {
            progress.note(&format!("stopped acting: {why}"));
            renewal = None;
        }
        if guarded && renewal.is_none() {
            match lock.try_acquire_or_renew().await {
                Ok(Acquired::Held) => {
                    deferred_to = None;
                    renewal = Some(lock.keep_renewed(RENEW_EVERY));
                }
                Ok(Acquired::NoNamespace) => {
                    tracing::debug!(
                        "namespace {ns} gone or being deleted: nobody to coordinate with, acting without a lease"
                    );
                    guarded = false;
                }
                Ok(Acquired::HeldBy { holder }) => {
                    let (deferred, note) = (&mut deferred_to, &mut last_note);
                    let held = &mut holding_since;
                    if let Some(done) =
                        defer_to(s, name, holder, deferred, note, held, progress).await?
                    {
                        return Ok(done);
                    }
                    wake.cluster_changed_or(DEFER_POLL).await;
                    continue;
                }
                Err(e) if e.is_transient() => {
                    progress.step(&format!("retrying after error: {}", e.report()));
                    tokio::time::sleep(RETRY_AFTER).await;
                    continue;
                }
                Err(e) => return Err(e),
            }
        }

        let result = pass(s, &ctx, name).await?;
        let next = Pace::CLI.next(&result);
        let pass = match result {
            Ok(pass) => pass,
            Err(e) if next == Next::Retry => {
                progress.step(&format!("retrying after error: {}", e.report()));
                tokio::time::sleep(RETRY_AFTER).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        let acted = pass.outcome == engine::Outcome::Acted;
        let back = |k| serving(&pass.observed, k);
        for (phase, member, took) in
            rollout.saw(&pass.step, acted, pass.converged(), back, Instant::now())
        {
            let span = crate::phase!("member", member);
            crate::phase::ended(&span, phase, took);
        }
        let note = pass.step.to_string();
        if next != Next::Converged && note != last_note {
            progress.step(&note);
            last_note = note;
        }
        let pause = match next {
            Next::Converged | Next::Released => return Ok(Converged::Pass(Box::new(pass))),
            Next::Held { message, again } => {
                out_of_patience(&mut holding_since, ns, name, &message)?;
                again
            }
            Next::Again(d) => {
                holding_since = None;
                d
            }
            // A pass that returned a pass neither retries nor fails.
            Next::Retry | Next::Failed => {
                tokio::time::sleep(RETRY_AFTER).await;
                continue;
            }
        };
        let waiting = crate::phase!("wait", step = %pass.step);
        crate::phase::timed(waiting, wake.made_changed_or(pause)).await;
    }
}

/// Ends a driver's pauses early when what its passes wait on changes: one of the cluster's pods
/// (a member Ready or gone, its restore pod finished) or its StatefulSet (its controller took in
/// the spec written last), or, while another driver holds the cluster, the EtcdCluster (the
/// status it writes). The next pass then looks at once instead of
/// at the end of the pause, which stays the longest wait: a change the watches do not see (etcd's
/// own progress, a learner catching up), a watch this user may not make, or one that broke, is
/// met by the pauses as before. Changes while a pass runs leave one wake-up, not one each.
/// The watches (metadata only) end with the driver.
struct Wake {
    made: Arc<Notify>,
    cluster: Arc<Notify>,
    watches: [tokio::task::JoinHandle<()>; 3],
}

/// How long a wake-up waits for more changes to come with it (a member's pod and its
/// StatefulSet's status, or pods changing together), so they make one pass.
const SETTLE: Duration = Duration::from_millis(30);

impl Wake {
    fn start(s: &Session, name: &str) -> Wake {
        let (made, cluster) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let managed = watcher::Config::default().labels(&crate::objects::managed_selector());
        let named = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let (client, ns) = (&s.client, &s.namespace);
        let watches = [
            spawn_wake::<Pod>(
                Api::namespaced(client.clone(), ns),
                managed.clone(),
                name,
                made.clone(),
            ),
            spawn_wake::<StatefulSet>(
                Api::namespaced(client.clone(), ns),
                managed,
                name,
                made.clone(),
            ),
            spawn_wake::<EtcdCluster>(
                Api::namespaced(client.clone(), ns),
                named,
                "",
                cluster.clone(),
            ),
        ];
        Wake {
            made,
            cluster,
            watches,
        }
    }

    /// Waits `pause`, or less if one of the cluster's pods or its StatefulSet changed (since
    /// the last wake-up).
    async fn made_changed_or(&self, pause: Duration) {
        woken_or(&self.made, pause).await;
    }

    /// Waits `pause`, or less if the EtcdCluster changed (since the last wake-up).
    async fn cluster_changed_or(&self, pause: Duration) {
        woken_or(&self.cluster, pause).await;
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        for w in &self.watches {
            w.abort();
        }
    }
}

/// Waits `pause`, or until `notify` wakes it (then `SETTLE` more, within `pause`).
async fn woken_or(notify: &Notify, pause: Duration) {
    let started = tokio::time::Instant::now();
    tokio::select! {
        () = tokio::time::sleep(pause) => {}
        () = notify.notified() => {
            tokio::time::sleep_until((started + pause).min(tokio::time::Instant::now() + SETTLE)).await;
        }
    }
}

/// A task that wakes `notify` at every change of an object of `api` that belongs to cluster
/// `of` by its labels (`of` empty: of any object `api` and `config` select); the first list is
/// not a change. It ends at the first error: the pauses then keep their length (a user without
/// `watch` rights, an API server that refuses it).
fn spawn_wake<K>(
    api: Api<PartialObjectMeta<K>>,
    config: watcher::Config,
    of: &str,
    notify: Arc<Notify>,
) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let of = of.to_string();
    tokio::spawn(async move {
        let mut changes = std::pin::pin!(watcher::watcher(api, config));
        while let Some(event) = changes.next().await {
            match event {
                Ok(watcher::Event::Apply(o) | watcher::Event::Delete(o))
                    if of.is_empty() || crate::objects::cluster_of(o.labels()) == Some(&*of) =>
                {
                    notify.notify_one();
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!("no more early wake-ups: {e}");
                    return;
                }
            }
        }
    })
}

/// Where a rolling restart's time goes (an upgrade, a template change), per member, for `-v`:
/// `member_restart` from the pass that restarted it to the first pass that finds it serving again
/// (its pod's start, etcd's, the readiness probe), then `member_catch_up` until the next pass
/// that acts or converges (the next restart waits until it has caught up with the leader). To
/// the pace of the passes. Pure: the time is passed in.
#[derive(Default)]
struct Rollout {
    /// The member restarted last: when, and when it was found serving again.
    member: Option<(u32, Instant, Option<Instant>)>,
}

impl Rollout {
    /// A pass planned `step` (`acted`: and made it); `serving(k)` tells whether the member at
    /// ordinal `k` serves. Returns the phases that ended with it.
    fn saw(
        &mut self,
        step: &Step,
        acted: bool,
        converged: bool,
        serving: impl Fn(u32) -> bool,
        now: Instant,
    ) -> Vec<(&'static str, u32, Duration)> {
        let mut ended = Vec::new();
        if let Some((k, restarted, back)) = &mut self.member {
            if back.is_none() && serving(*k) {
                *back = Some(now);
                ended.push(("member_restart", *k, now - *restarted));
            }
            if acted || converged {
                if let Some(b) = back {
                    ended.push(("member_catch_up", *k, now - *b));
                }
                self.member = None;
            }
        }
        if let (true, Step::RestartMember { ordinal, .. }) = (acted, step) {
            self.member = Some((*ordinal, now, None));
        }
        ended
    }
}

/// Whether the member at ordinal `k` serves: its pod Ready (not on its way out) and its member
/// healthy.
fn serving(o: &crate::model::Observed, k: u32) -> bool {
    let ready = o.pods.get(&k).is_some_and(|p| p.ready && !p.terminating);
    let healthy = match &o.etcd {
        crate::model::EtcdView::Reached(c) => c.member_at(k).is_some_and(|m| m.healthy),
        _ => false,
    };
    ready && healthy
}

/// One engine pass on the cluster as it is now (`Err`: it could not be read).
async fn pass(s: &Session, ctx: &Context, name: &str) -> Result<Result<Pass, Error>, Error> {
    let current = crate::phase::timed(crate::phase!("get_cluster"), s.get_cluster(name)).await?;
    let span = crate::phase!("pass");
    Ok(crate::phase::timed(span, engine::reconcile_once(ctx, &current, Mode::Act)).await)
}

/// A hold seen now, held since `holding_since` (set to now if it was not): an error once that is
/// longer than [`HOLD_PATIENCE`].
fn out_of_patience(
    holding_since: &mut Option<Instant>,
    namespace: &str,
    name: &str,
    message: &str,
) -> Result<(), Error> {
    if holding_since.get_or_insert_with(Instant::now).elapsed() > HOLD_PATIENCE {
        return Err(Error::Held {
            namespace: namespace.into(),
            name: name.into(),
            message: message.into(),
        });
    }
    Ok(())
}

/// While `holder` holds the cluster's Lease: says so (once per holder) and, when it is an
/// operator, follows the status it writes; `Some` once that status says converged, an error once
/// it has said held for longer than [`HOLD_PATIENCE`] (as the verb's own holds).
async fn defer_to(
    s: &Session,
    name: &str,
    holder: String,
    deferred_to: &mut Option<String>,
    last_note: &mut String,
    holding_since: &mut Option<Instant>,
    progress: &output::Progress,
) -> Result<Option<Converged>, Error> {
    let ns = &s.namespace;
    if deferred_to.as_ref() != Some(&holder) {
        progress.note(&if lease::is_operator(&holder) {
            format!(
                "operator {holder} holds the engine lease of {ns}/{name}: waiting on its status"
            )
        } else {
            format!("waiting: {holder} is acting on {ns}/{name}")
        });
        *deferred_to = Some(holder.clone());
    }
    if !lease::is_operator(&holder) {
        return Ok(None);
    }
    let c = s.get_cluster(name).await?;
    if let Some(st) = &c.status {
        let msg = st.message.clone().unwrap_or_default();
        if msg != *last_note {
            progress.step(&msg);
            *last_note = msg;
        }
        if crate::plan::converged(st, c.metadata.generation) {
            return Ok(Some(Converged::Status(Box::new(c))));
        }
        // A hold the operator reports is reported as the verb's own would be (exit 7), not
        // waited out to --timeout.
        match crate::plan::held(st, c.metadata.generation) {
            Some(message) => out_of_patience(holding_since, ns, name, message)?,
            None => *holding_since = None,
        }
    }
    Ok(None)
}

/// Observe and plan only; print the steps and objects.
pub(super) async fn dry_run(
    s: &Session,
    g: &Global,
    cluster: &EtcdCluster,
    intent: &[String],
) -> Result<(), Error> {
    dry_run_of(s, g, cluster, intent, false).await
}

/// `create --dry-run`: as [`dry_run`], and when the next step is not yet the bootstrap (a managed
/// cluster issues its certificates first, one per pass) the objects the bootstrap then writes too,
/// so the preview shows the StatefulSet, Services and the rest of what `create` makes.
pub(super) async fn dry_run_create(
    s: &Session,
    g: &Global,
    cluster: &EtcdCluster,
    intent: &[String],
) -> Result<(), Error> {
    dry_run_of(s, g, cluster, intent, true).await
}

async fn dry_run_of(
    s: &Session,
    g: &Global,
    cluster: &EtcdCluster,
    intent: &[String],
    new_cluster: bool,
) -> Result<(), Error> {
    let ctx = s.context();
    let pass = engine::reconcile_once(&ctx, cluster, Mode::DryRun).await?;
    let mut objects = engine::planned_objects(&pass.desired, &pass.step);
    let mut lines: Vec<String> = intent.to_vec();
    lines.push(format!("next engine step: {}", pass.step));
    if new_cluster && !matches!(pass.step, Step::Bootstrap { .. }) {
        let boot = Step::Bootstrap {
            replicas: pass.desired.replicas,
        };
        lines.push(format!("then, once the certificates are issued: {boot}"));
        objects.extend(engine::planned_objects(&pass.desired, &boot));
    }
    if pass.desired.replicas as usize != pass.status.members.iter().filter(|m| !m.learner).count()
        && !pass.status.members.is_empty()
    {
        lines.push(format!(
            "then, one member at a time: {} → {} voting members (each added as a learner and promoted once caught up, or removed after moving leadership)",
            pass.status.members.len(),
            pass.desired.replicas
        ));
    }
    output::print_dry_run(g.output, &lines, &objects, Some(&pass.step))
}

/// Whether this process may run the engine on `cluster` now: it holds the cluster's Lease (kept
/// in `lock` until released), or there is no operator namespace to coordinate through.
pub(super) async fn may_act(lock: &Lock) -> Result<bool, Error> {
    match lock.try_acquire_or_renew().await? {
        Acquired::Held | Acquired::NoNamespace => Ok(true),
        Acquired::HeldBy { .. } => Ok(false),
    }
}

/// The CLI's Lock on cluster `namespace/name` (its Lease in that namespace).
pub(super) fn cluster_lock(s: &Session, name: &str) -> Lock {
    Lock::for_cluster(
        s.client.clone(),
        &s.namespace,
        name,
        lease::cli_identity(),
        LEASE_DURATION,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Restart;

    fn restart(k: u32) -> Step {
        Step::RestartMember {
            ordinal: k,
            pod: format!("demo-{k}"),
            why: Restart::NewTemplate,
        }
    }

    fn wait() -> Step {
        Step::Wait {
            reason: crate::api::Reason::RollingMembers,
            message: "a restart waits".into(),
        }
    }

    #[test]
    fn a_rolling_restart_tells_each_members_restart_then_its_catch_up() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut r = Rollout::default();
        let (down, up) = (|_| false, |_| true);
        assert!(r.saw(&restart(2), true, false, up, at(0)).is_empty());
        assert!(
            r.saw(&wait(), false, false, down, at(2)).is_empty(),
            "still starting"
        );
        assert_eq!(
            r.saw(&wait(), false, false, up, at(5)),
            [("member_restart", 2, Duration::from_secs(5))]
        );
        assert!(
            r.saw(&wait(), false, false, up, at(6)).is_empty(),
            "catching up"
        );
        // The next restart ends the catch-up of the last and starts its own.
        assert_eq!(
            r.saw(&restart(1), true, false, up, at(7)),
            [("member_catch_up", 2, Duration::from_secs(2))]
        );
        assert_eq!(
            r.saw(&Step::Idle, false, true, up, at(10)),
            [
                ("member_restart", 1, Duration::from_secs(3)),
                ("member_catch_up", 1, Duration::ZERO)
            ]
        );
        assert!(r.saw(&Step::Idle, false, true, up, at(11)).is_empty());
    }

    #[test]
    fn a_restart_planned_but_not_made_starts_nothing() {
        let mut r = Rollout::default();
        let now = Instant::now();
        assert!(r.saw(&restart(0), false, false, |_| true, now).is_empty());
        assert!(r.saw(&wait(), false, false, |_| true, now).is_empty());
    }

    #[tokio::test]
    async fn a_wake_up_ends_the_pause_and_one_comes_of_many_changes() {
        let notify = Notify::new();
        let pause = Duration::from_secs(30);
        // Changes while nobody waited (during a pass): the next pause ends at once, once.
        notify.notify_one();
        notify.notify_one();
        let t = Instant::now();
        woken_or(&notify, pause).await;
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        // Nothing changed since: the pause is kept.
        let t = Instant::now();
        woken_or(&notify, Duration::from_millis(300)).await;
        assert!(
            t.elapsed() >= Duration::from_millis(300),
            "{:?}",
            t.elapsed()
        );
        // A change while waiting ends it.
        let woken = std::sync::Arc::new(notify);
        let waker = woken.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            waker.notify_one();
        });
        let t = Instant::now();
        woken_or(&woken, pause).await;
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    }
}
