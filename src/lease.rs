//! Engine leases: coordination.k8s.io/v1 Leases that say which driver may act.
//!
//! May touch: the Lease API only. Expiry is judged without comparing clocks (`Observed`).
//!
//! - One Lease per cluster (`cluster_lease`), **in the cluster's own namespace**, held by
//!   whichever driver acts on that cluster: a `kubectl etcd` command for the length of its run,
//!   the operator for every cluster it watches while it leads. A driver acts only while it holds
//!   it, and renews it in the background (`Lock::keep_renewed`) so a long pass cannot outlast it.
//!   A long CLI wait on one cluster therefore never blocks the operator on another, and a CLI
//!   user needs rights on Leases only where their clusters are, none in the operator's namespace.
//! - One Lease for the operator's leader election: in a pod, `keys::install::leader_lease` of its
//!   install (`NAME-leader`) in its own namespace, which its lease Role names alone; run from a
//!   workstation, `leader_lease` (`LEADER`, or per set of watched namespaces) in `NAMESPACE`.
//!   Only operator replicas take it, and only its holder runs the controller (and so takes
//!   cluster Leases).
//!
//! Cluster Leases lived in `NAMESPACE` before they moved beside their clusters; that old place
//! is no longer consulted (every supported driver takes the Lease in the cluster's namespace), so
//! no CLI user and no tenant needs any right in the operator's namespace, and the operator's lease
//! Role there names its leader Lease alone (`objects::install`).
//!
//! A namespace that does not exist or is being deleted (where nothing new may be created) has
//! nobody to coordinate with: `Acquired::NoNamespace`, and the driver acts without a Lease (in a
//! namespace being deleted, only the cluster's release is left to do). For the leader Lease an
//! operator makes its namespace first (`create_namespace`), or cannot lead.
//!
//! Expiry, as client-go judges it: a Lease is free once `leaseDurationSeconds` have passed on
//! *this process's* clock since it last saw the record change (holder, times, duration,
//! transitions). A record's duration is believed up to `MAX_BELIEVED_DURATION` only: whoever may
//! write a Lease (a tenant with `edit` in its namespace writes its clusters' Leases) could
//! otherwise stop every driver for good with one write of `leaseDurationSeconds: 2000000000`. Timestamps written by other machines are never compared with our clock, so
//! clock skew can neither steal a live Lease nor keep a dead one. Writes carry the
//! `resourceVersion` that was read, so of two contenders exactly one write succeeds: the other
//! gets HTTP 409 and reports the Lease as held by someone else.
//!
//! Why not `kube-lease-manager` (0.13, the maintained leader-election crate for kube; it does
//! build on kube 5): it judges expiry as `renewTime + leaseDurationSeconds` against the local
//! wall clock (`state.rs`), which is the clock comparison this module must not make, and it
//! offers one anonymous election per Lease, without the roles docs/src/security.md promises (a CLI
//! defers to an operator, never the other way round; `NoNamespace` means nobody to defer to).
//! What it would save is the ~100 lines of `try_acquire_or_renew` and `keep_renewed` below.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};

use crate::error::Error;

/// Namespace of the leader Lease of an operator run outside a pod (the default install's
/// namespace); in a pod the operator keeps it in its own namespace (`operate`).
pub use crate::objects::install::NAMESPACE;
/// Name of the leader-election Lease of operators that watch every namespace.
pub const LEADER: &str = "kubectl-etcd-engine";

/// Name of the leader-election Lease of operators watching `watch` (`None`: every namespace).
/// Replicas of one operator share it; an operator that watches one namespace elects its leader
/// apart from operators that watch others (or all), since where their scopes meet the clusters'
/// own Leases already keep them from acting on one cluster at once.
pub fn leader_lease(watch: Option<&str>) -> String {
    leader_lease_of(watch.as_slice())
}

/// `leader_lease` of an operator watching the namespaces `watch` (none: every namespace): the
/// same name whatever their order. Namespaces are DNS labels, so joined by dots they are a valid
/// object name unless too long, when a digest of them stands in.
pub fn leader_lease_of(watch: &[impl AsRef<str>]) -> String {
    let mut names: Vec<&str> = watch.iter().map(AsRef::as_ref).collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        return LEADER.to_string();
    }
    let joined = names.join(".");
    if LEADER.len() + 1 + joined.len() <= NAME_MAX {
        return format!("{LEADER}.{joined}");
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, joined.as_bytes());
    let hex: String = digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{LEADER}.{}.{hex}", names[0])
}

/// The longest object name (a DNS subdomain).
const NAME_MAX: usize = 253;

const KIND: &str = "Lease";

/// The longest a Lease record's holder is believed without a change of the record: four times
/// what any driver of this version writes (`operate::LEASE_DURATION`, the CLI's the same), so a
/// live holder, which renews every few seconds, is never judged gone; a record claiming longer
/// (a forged or broken writer) holds its Lease for this long after its last change at most.
pub const MAX_BELIEVED_DURATION: Duration = Duration::from_secs(60);
const OPERATOR_PREFIX: &str = "operator/";
const CLI_PREFIX: &str = "cli/";

/// Name of the Lease of EtcdCluster `namespace/name` (namespace and cluster names are DNS
/// labels, so this is a valid object name).
pub fn cluster_lease(namespace: &str, name: &str) -> String {
    format!("{}{namespace}.{name}", crate::keys::CLUSTER_LEASE_PREFIX)
}

/// The identity of an operator replica: `operator/<pod-name>`. A name that already has the
/// prefix is kept: `operate --identity` takes either, and an identity without it would make
/// every CLI verb wait for the operator to let go as if it were another CLI run (it never
/// does) instead of waiting on the status it writes.
pub fn operator_identity(pod: &str) -> String {
    if is_operator(pod) {
        return pod.to_string();
    }
    format!("{OPERATOR_PREFIX}{pod}")
}

/// This machine's host name (or "unknown").
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// The identity of this CLI process: `cli/<hostname>/<pid>`.
pub fn cli_identity() -> String {
    format!("{CLI_PREFIX}{}/{}", hostname(), std::process::id())
}

/// Whether a holder identity belongs to an operator replica (and not a CLI run).
pub fn is_operator(identity: &str) -> bool {
    identity.starts_with(OPERATOR_PREFIX)
}

/// What `try_acquire_or_renew` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// We hold the Lease (newly acquired or renewed).
    Held,
    /// Someone else holds an unexpired Lease, or won the race for it.
    HeldBy { holder: String },
    /// The operator's namespace does not exist: nobody to coordinate with (and no Lease can be
    /// created). The CLI acts without a Lease; an operator cannot lead.
    NoNamespace,
}

/// What the API server says when something would be created in a namespace being deleted.
const TERMINATING: &str = "being terminated";

/// The record as this process last saw it, and when (on its own monotonic clock) it last saw it
/// change.
#[derive(Clone, Debug, PartialEq)]
struct Observed {
    record: LeaseSpec,
    changed_at: Instant,
}

impl Observed {
    /// Takes in the record read at `now`: the clock restarts only when the record changed.
    fn update(previous: Option<Observed>, record: LeaseSpec, now: Instant) -> Observed {
        match previous {
            Some(p) if p.record == record => p,
            _ => Observed {
                record,
                changed_at: now,
            },
        }
    }

    /// The holder at `now`: named, and the record changed less than its duration ago.
    fn holder(&self, now: Instant) -> Option<&str> {
        let holder = self
            .record
            .holder_identity
            .as_deref()
            .filter(|h| !h.is_empty())?;
        let duration = Duration::from_secs(
            u64::try_from(self.record.lease_duration_seconds.unwrap_or(0)).unwrap_or(0),
        )
        .min(MAX_BELIEVED_DURATION);
        (now.saturating_duration_since(self.changed_at) <= duration).then_some(holder)
    }
}

/// The identity a Lease record names as its holder, if any. Whether that holder is still alive
/// only an observer over time can tell (`Lock`); this is for messages and tests.
pub async fn recorded_holder(
    client: Client,
    namespace: &str,
    name: &str,
) -> Result<Option<String>, Error> {
    let api: Api<Lease> = Api::namespaced(client, namespace);
    let lease = api
        .get_opt(name)
        .await
        .map_err(|e| Error::kube("get", KIND, namespace, name, e))?;
    Ok(lease
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty()))
}

/// A handle on one Lease for one identity. Clones share what they observed.
#[derive(Clone)]
pub struct Lock {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    duration: Duration,
    observed: Arc<Mutex<Option<Observed>>>,
}

impl Lock {
    pub fn new(
        client: Client,
        namespace: &str,
        name: &str,
        identity: impl Into<String>,
        duration: Duration,
    ) -> Lock {
        Lock {
            api: Api::namespaced(client, namespace),
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            duration,
            observed: Arc::default(),
        }
    }

    /// The Lock of EtcdCluster `namespace/name`: its Lease in the cluster's namespace.
    pub fn for_cluster(
        client: Client,
        namespace: &str,
        name: &str,
        identity: impl Into<String>,
        duration: Duration,
    ) -> Lock {
        Lock::new(
            client,
            namespace,
            &cluster_lease(namespace, name),
            identity,
            duration,
        )
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Creates the Lease's namespace as `kubectl etcd install` would (`install::namespace_object`):
    /// what `kubectl etcd operate` run from a workstation does on finding none, so a first try
    /// needs no install. `Ok(false)`: RBAC forbids it (an operator's own ServiceAccount may not
    /// create namespaces); one that exists meanwhile is fine.
    pub async fn create_namespace(&self) -> Result<bool, Error> {
        use k8s_openapi::api::core::v1::Namespace;
        let api: Api<Namespace> = Api::all(self.api.clone().into());
        let object: Namespace =
            serde_json::from_value(crate::objects::install::namespace_object(&self.namespace))
                .map_err(|e| Error::Io(std::io::Error::other(e)))?;
        match api.create(&PostParams::default(), &object).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 403 => Ok(false),
            Err(e) => Err(Error::kube("create", "Namespace", "", &self.namespace, e)),
        }
    }

    fn duration_s(&self) -> i32 {
        i32::try_from(self.duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }

    fn err(&self, verb: &'static str, e: kube::Error) -> Error {
        Error::kube(verb, KIND, &self.namespace, &self.name, e)
    }

    /// Records `record` as seen now; returns its live holder, if any.
    fn observe(&self, record: LeaseSpec) -> Option<String> {
        let now = Instant::now();
        let mut seen = self.observed.lock().unwrap_or_else(|p| p.into_inner());
        let o = Observed::update(seen.take(), record, now);
        let holder = o.holder(now).map(String::from);
        *seen = Some(o);
        holder
    }

    /// Takes the Lease when it is free (absent, released or expired), renews it when it is ours.
    pub async fn try_acquire_or_renew(&self) -> Result<Acquired, Error> {
        let now = Timestamp::now();
        let Some(mut lease) = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| self.err("get", e))?
        else {
            let spec = LeaseSpec {
                holder_identity: Some(self.identity.clone()),
                acquire_time: Some(MicroTime(now)),
                renew_time: Some(MicroTime(now)),
                lease_duration_seconds: Some(self.duration_s()),
                lease_transitions: Some(0),
                ..Default::default()
            };
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: Some(self.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(spec.clone()),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => {
                    self.observe(spec);
                    Ok(Acquired::Held)
                }
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(self.winner().await),
                // Creating in a namespace that does not exist answers 404; in one being deleted,
                // 403 (NamespaceLifecycle: "… because it is being terminated").
                Err(kube::Error::Api(s)) if s.code == 404 => Ok(Acquired::NoNamespace),
                Err(kube::Error::Api(s)) if s.code == 403 && s.message.contains(TERMINATING) => {
                    Ok(Acquired::NoNamespace)
                }
                Err(e) => Err(self.err("create", e)),
            };
        };
        let holder = self.observe(lease.spec.clone().unwrap_or_default());
        if let Some(other) = holder.filter(|h| *h != self.identity) {
            return Ok(Acquired::HeldBy { holder: other });
        }
        let ours = lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref())
            == Some(self.identity.as_str());
        let spec = lease.spec.get_or_insert_with(Default::default);
        if !ours {
            // Taking over a free or expired Lease: a new term.
            spec.acquire_time = Some(MicroTime(now));
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.holder_identity = Some(self.identity.clone());
        spec.renew_time = Some(MicroTime(now));
        spec.lease_duration_seconds = Some(self.duration_s());
        let written = spec.clone();
        // `lease` carries the resourceVersion we read: a concurrent writer makes this a 409.
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => {
                self.observe(written);
                Ok(Acquired::Held)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(self.winner().await),
            Err(e) => Err(self.err("update", e)),
        }
    }

    /// Who won a race we lost (best effort: the name is for messages only).
    async fn winner(&self) -> Acquired {
        let holder = match self.api.get_opt(&self.name).await {
            Ok(Some(l)) => {
                let spec = l.spec.unwrap_or_default();
                self.observe(spec.clone());
                spec.holder_identity.filter(|h| !h.is_empty())
            }
            _ => None,
        };
        match holder {
            // Our own write raced another of ours (a renewal in the background): still ours.
            Some(h) if h == self.identity => Acquired::Held,
            h => Acquired::HeldBy {
                holder: h.unwrap_or_else(|| "another process".into()),
            },
        }
    }

    /// Gives the Lease up if we hold it, so the next contender need not wait for it to expire.
    /// Best effort: failures are logged, and an unreleased Lease expires by itself.
    pub async fn release(&self) {
        let mut lease = match self.api.get_opt(&self.name).await {
            Ok(Some(l)) => l,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(
                    "could not read the engine lease to release it: {}",
                    self.err("get", e).report()
                );
                return;
            }
        };
        let Some(spec) = lease
            .spec
            .as_mut()
            .filter(|s| s.holder_identity.as_deref() == Some(self.identity.as_str()))
        else {
            return;
        };
        spec.holder_identity = None;
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => {
                tracing::debug!(identity = %self.identity, lease = %self.name, "released the engine lease")
            }
            Err(e) => tracing::warn!(
                "could not release the engine lease: {}",
                self.err("update", e).report()
            ),
        }
    }

    /// Gives the Lease up for good, its cluster being gone: deletes it unless someone else
    /// holds it (the delete is conditional on the version read, so a contender's write wins).
    /// Best effort, like `release`.
    pub async fn remove(&self) {
        let lease = match self.api.get_opt(&self.name).await {
            Ok(Some(l)) => l,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(
                    "could not read the engine lease to remove it: {}",
                    self.err("get", e).report()
                );
                return;
            }
        };
        let holder = lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref())
            .filter(|h| !h.is_empty());
        if holder.is_some_and(|h| h != self.identity) {
            return;
        }
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: lease.metadata.resource_version.clone(),
                uid: None,
            }),
            ..Default::default()
        };
        match self.api.delete(&self.name, &dp).await {
            Ok(_) => tracing::debug!(lease = %self.name, "removed the engine lease"),
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => tracing::warn!(
                "could not remove the engine lease: {}",
                self.err("delete", e).report()
            ),
        }
    }

    /// Renews the Lease every `every` (a third of the duration is usual) until dropped. The
    /// Lease counts as lost when someone else holds it or when no renewal succeeded for two
    /// thirds of the duration — before anyone else may take it over, since they wait the whole
    /// duration after they last saw it change. A failed or slow renewal is tried again within
    /// that time ([`renewal_try`]): one API call lost under load is not a lost Lease.
    pub fn keep_renewed(&self, every: Duration) -> Renewal {
        let (tx, rx) = tokio::sync::watch::channel(None);
        let lock = self.clone();
        let give_up = self.duration * 2 / 3;
        let task = tokio::spawn(async move {
            let mut renewed = tokio::time::Instant::now();
            let mut failed = false;
            loop {
                let Some((pause, within)) = renewal_try(every, give_up, renewed.elapsed(), failed)
                else {
                    let _ = tx.send(Some(format!(
                        "could not renew the engine lease for {} s",
                        give_up.as_secs()
                    )));
                    return;
                };
                tokio::time::sleep(pause).await;
                failed = true;
                match tokio::time::timeout(within, lock.try_acquire_or_renew()).await {
                    Ok(Ok(Acquired::Held)) => {
                        renewed = tokio::time::Instant::now();
                        failed = false;
                    }
                    Ok(Ok(Acquired::HeldBy { holder })) => {
                        let _ = tx.send(Some(format!("lost the engine lease to {holder}")));
                        return;
                    }
                    Ok(Ok(Acquired::NoNamespace)) => {
                        let _ = tx.send(Some(format!(
                            "the namespace {} of the engine lease is gone",
                            lock.namespace
                        )));
                        return;
                    }
                    Ok(Err(e)) => {
                        tracing::warn!("could not renew the engine lease: {}", e.report());
                    }
                    Err(_) => tracing::warn!("renewing the engine lease timed out"),
                }
            }
        });
        Renewal { task, lost: rx }
    }
}

/// The pause before a failed (or timed-out) renewal is tried again, within whatever is left of
/// the time allowed (`renewal_try`).
const RENEWAL_RETRY: Duration = Duration::from_secs(1);

/// Pure: the next renewal of a Lease renewed every `every` and given up `give_up` after its last
/// renewal, `since` ago (`failed`: the last try failed): the pause before it and how long it may
/// take, or `None` when there is no time left to try.
pub fn renewal_try(
    every: Duration,
    give_up: Duration,
    since: Duration,
    failed: bool,
) -> Option<(Duration, Duration)> {
    let pause = if failed {
        RENEWAL_RETRY.min(every)
    } else {
        every
    };
    let left = give_up.checked_sub(since + pause)?;
    (!left.is_zero()).then_some((pause, left))
}

/// A background task that keeps a held Lease renewed. Dropping it stops renewing; call
/// `Lock::release` to free the Lease at once.
pub struct Renewal {
    task: tokio::task::JoinHandle<()>,
    lost: tokio::sync::watch::Receiver<Option<String>>,
}

impl Renewal {
    /// Why the Lease is no longer ours, once that happened: stop acting.
    pub fn lost(&self) -> Option<String> {
        self.lost.borrow().clone()
    }

    /// Resolves with the reason once the Lease is lost.
    pub async fn wait_lost(&mut self) -> String {
        loop {
            if let Some(why) = self.lost.borrow_and_update().clone() {
                return why;
            }
            if self.lost.changed().await.is_err() {
                return "the lease renewal stopped".into();
            }
        }
    }
}

impl Drop for Renewal {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_identity_always_reads_as_an_operators() {
        assert_eq!(
            operator_identity("kubectl-etcd-7d9f"),
            "operator/kubectl-etcd-7d9f"
        );
        // `operate --identity my-op` and `--identity operator/my-op` are the same identity.
        assert_eq!(operator_identity("my-op"), "operator/my-op");
        assert_eq!(operator_identity("operator/my-op"), "operator/my-op");
        assert!(is_operator(&operator_identity("cli/host/1")));
        assert!(!is_operator(&cli_identity()));
    }

    #[test]
    fn a_failed_renewal_is_tried_again_within_the_time_left() {
        let (every, give_up) = (Duration::from_secs(5), Duration::from_secs(10));
        let s = Duration::from_secs;
        // Renewed just now: the next try in 5 s, allowed up to the 10 s mark.
        assert_eq!(renewal_try(every, give_up, s(0), false), Some((s(5), s(5))));
        // The try at 5 s failed fast: again a second later, and again, while time is left.
        assert_eq!(renewal_try(every, give_up, s(5), true), Some((s(1), s(4))));
        assert_eq!(renewal_try(every, give_up, s(8), true), Some((s(1), s(1))));
        // No time left: the Lease is given up before anyone else may take it.
        assert_eq!(renewal_try(every, give_up, s(9), true), None);
        assert_eq!(renewal_try(every, give_up, s(10), true), None);
        // A short period (tests) retries no slower than it renews.
        let ms = Duration::from_millis;
        assert_eq!(
            renewal_try(ms(500), ms(1000), ms(0), true),
            Some((ms(500), ms(500)))
        );
    }

    fn record(holder: Option<&str>, renew_s: i64, duration: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(Into::into),
            renew_time: Some(MicroTime(
                Timestamp::from_second(1_800_000_000 + renew_s).unwrap(),
            )),
            lease_duration_seconds: Some(duration),
            ..Default::default()
        }
    }

    #[test]
    fn a_lease_is_live_until_its_duration_passed_on_our_clock_since_it_last_changed() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let o = Observed::update(None, record(Some("operator/a"), 0, 15), t0);
        assert_eq!(o.holder(t0), Some("operator/a"));
        assert_eq!(o.holder(t0 + s(15)), Some("operator/a"));
        assert_eq!(o.holder(t0 + s(16)), None, "expired");
        // The same record seen again does not restart the clock ...
        let again = Observed::update(
            Some(o.clone()),
            record(Some("operator/a"), 0, 15),
            t0 + s(10),
        );
        assert_eq!(again.holder(t0 + s(16)), None);
        // ... a renewal (any change of the record) does.
        let renewed = Observed::update(Some(o), record(Some("operator/a"), 5, 15), t0 + s(10));
        assert_eq!(renewed.holder(t0 + s(16)), Some("operator/a"));
        assert_eq!(renewed.holder(t0 + s(26)), None);
    }

    #[test]
    fn remote_timestamps_are_never_compared_with_our_clock() {
        let t0 = Instant::now();
        // Renewed "a year ago" or "in a year" by a skewed clock: live for a whole duration
        // from when we first saw it, expired after, either way.
        for renew in [-31_536_000, 31_536_000] {
            let o = Observed::update(None, record(Some("cli/h/1"), renew, 15), t0);
            assert_eq!(o.holder(t0 + Duration::from_secs(1)), Some("cli/h/1"));
            assert_eq!(o.holder(t0 + Duration::from_secs(16)), None);
        }
    }

    #[test]
    fn only_a_named_holder_holds_the_lease() {
        let t0 = Instant::now();
        assert_eq!(
            Observed::update(None, record(Some(""), 0, 15), t0).holder(t0),
            None
        );
        assert_eq!(
            Observed::update(None, record(None, 0, 15), t0).holder(t0),
            None
        );
        assert_eq!(
            Observed::update(None, record(Some("a"), 0, -3), t0)
                .holder(t0 + Duration::from_millis(1)),
            None,
            "a negative duration counts as zero"
        );
    }

    #[test]
    fn identities_say_which_driver_holds_the_lease() {
        assert!(is_operator(&operator_identity("kubectl-etcd-7d9f-abc")));
        let cli = cli_identity();
        assert!(!is_operator(&cli));
        assert!(cli.starts_with("cli/") && cli.ends_with(&format!("/{}", std::process::id())));
    }

    #[test]
    fn each_cluster_has_its_own_lease_name() {
        assert_eq!(cluster_lease("team-a", "demo"), "etcdcluster.team-a.demo");
        assert_ne!(cluster_lease("a", "b-c"), cluster_lease("a-b", "c"));
    }

    #[test]
    fn operators_of_different_scopes_elect_their_leaders_apart() {
        assert_eq!(leader_lease(None), LEADER);
        assert_eq!(leader_lease(Some("team-a")), "kubectl-etcd-engine.team-a");
        assert_ne!(leader_lease(Some("team-a")), leader_lease(Some("team-b")));
        assert_eq!(leader_lease_of(&["team-a"]), leader_lease(Some("team-a")));
        assert_eq!(leader_lease_of(&[] as &[&str]), LEADER);
        assert_eq!(
            leader_lease_of(&["b", "a", "b"]),
            leader_lease_of(&["a", "b"]),
            "the same set, whatever the order"
        );
        assert_eq!(leader_lease_of(&["a", "b"]), "kubectl-etcd-engine.a.b");
        assert_ne!(leader_lease_of(&["a", "b"]), leader_lease_of(&["a"]));
    }

    #[test]
    fn the_leader_lease_of_many_namespaces_is_still_a_valid_name() {
        let many: Vec<String> = (0..40)
            .map(|i| format!("team-{i:02}-{}", "x".repeat(8)))
            .collect();
        let name = leader_lease_of(&many);
        assert!(name.len() <= NAME_MAX, "{name}");
        assert!(name.starts_with("kubectl-etcd-engine.team-00-"), "{name}");
        let mut fewer = many.clone();
        fewer.pop();
        assert_ne!(leader_lease_of(&fewer), name);
    }

    #[test]
    fn a_forged_duration_holds_the_lease_no_longer_than_the_cap_after_its_last_change() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        // One write of a tenant (or a broken driver) claiming 63 years.
        let o = Observed::update(None, record(Some("cli/forged/1"), 0, 2_000_000_000), t0);
        assert_eq!(o.holder(t0 + MAX_BELIEVED_DURATION), Some("cli/forged/1"));
        assert_eq!(
            o.holder(t0 + MAX_BELIEVED_DURATION + s(1)),
            None,
            "free after the cap"
        );
        // A record that keeps changing is a live holder, whatever its duration says.
        let renewed = Observed::update(
            Some(o),
            record(Some("cli/forged/1"), 50, 2_000_000_000),
            t0 + s(50),
        );
        assert_eq!(renewed.holder(t0 + s(100)), Some("cli/forged/1"));
        // The cap never cuts short what a driver of this version writes.
        assert!(MAX_BELIEVED_DURATION >= 4 * Duration::from_secs(15));
    }
}
