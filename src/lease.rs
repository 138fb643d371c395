//! The engine lock: one coordination.k8s.io/v1 Lease that the operator and the CLI verbs take
//! before acting, so two drivers never change one cluster at once.
//!
//! May touch: the Lease API only. No clock inside the pure helper (`expired` takes `now`).
//!
//! The operator holds the Lease for as long as it leads (it renews it every few seconds); a CLI
//! verb holds it for the length of its run. A holder that stops renewing loses it once
//! `renewTime + leaseDurationSeconds` has passed. Writes carry the `resourceVersion` that was
//! read, so of two contenders exactly one write succeeds: the other gets HTTP 409 and reports
//! the Lease as held by someone else.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, PostParams};

use crate::error::Error;

/// Namespace of the Lease (the operator's install namespace).
pub const NAMESPACE: &str = "kubectl-etcd-system";
/// Name of the Lease.
pub const NAME: &str = "kubectl-etcd-engine";

const KIND: &str = "Lease";
const OPERATOR_PREFIX: &str = "operator/";
const CLI_PREFIX: &str = "cli/";

/// The identity of an operator replica: `operator/<pod-name>`.
pub fn operator_identity(pod: &str) -> String {
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
}

/// True when a Lease renewed at `renew` for `duration_s` seconds has run out at `now`.
pub fn expired(renew: Timestamp, duration_s: i32, now: Timestamp) -> bool {
    now.duration_since(renew) > SignedDuration::from_secs(i64::from(duration_s.max(0)))
}

/// The holder of `lease` if it holds it at `now`.
fn live_holder(lease: &Lease, now: Timestamp) -> Option<String> {
    let spec = lease.spec.as_ref()?;
    let holder = spec.holder_identity.as_deref().filter(|h| !h.is_empty())?;
    // A holder without any time is treated as expired: nothing says it is still alive.
    let renew = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?;
    let duration = spec.lease_duration_seconds.unwrap_or(0);
    (!expired(renew.0, duration, now)).then(|| holder.to_string())
}

/// The identity holding the engine Lease now, if any. `None` too when the namespace or the
/// Lease does not exist (no operator installed, no CLI acting). RBAC denials are errors.
pub async fn active_holder(client: Client, namespace: &str) -> Result<Option<String>, Error> {
    let api: Api<Lease> = Api::namespaced(client, namespace);
    let lease = api
        .get_opt(NAME)
        .await
        .map_err(|e| Error::kube("get", KIND, namespace, NAME, e))?;
    Ok(lease.and_then(|l| live_holder(&l, Timestamp::now())))
}

/// A handle on the engine Lease for one identity.
#[derive(Clone)]
pub struct Lock {
    api: Api<Lease>,
    namespace: String,
    identity: String,
    duration: Duration,
}

impl Lock {
    pub fn new(
        client: Client,
        namespace: &str,
        identity: impl Into<String>,
        duration: Duration,
    ) -> Lock {
        Lock {
            api: Api::namespaced(client, namespace),
            namespace: namespace.into(),
            identity: identity.into(),
            duration,
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    fn duration_s(&self) -> i32 {
        i32::try_from(self.duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }

    fn err(&self, verb: &'static str, e: kube::Error) -> Error {
        Error::kube(verb, KIND, &self.namespace, NAME, e)
    }

    /// Takes the Lease when it is free (absent, released or expired), renews it when it is ours.
    ///
    /// A missing namespace is an error (HTTP 404 on create, `Error::api_code() == Some(404)`):
    /// the Lock never creates namespaces; callers that run without an installed operator may
    /// treat that as "nobody else can hold it".
    pub async fn try_acquire_or_renew(&self) -> Result<Acquired, Error> {
        let now = Timestamp::now();
        let Some(mut lease) = self
            .api
            .get_opt(NAME)
            .await
            .map_err(|e| self.err("get", e))?
        else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(NAME.into()),
                    namespace: Some(self.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    acquire_time: Some(MicroTime(now)),
                    renew_time: Some(MicroTime(now)),
                    lease_duration_seconds: Some(self.duration_s()),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(Acquired::Held),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(self.winner().await),
                Err(e) => Err(self.err("create", e)),
            };
        };
        let holder = live_holder(&lease, now);
        if let Some(other) = holder.as_ref().filter(|h| **h != self.identity) {
            return Ok(Acquired::HeldBy {
                holder: other.clone(),
            });
        }
        let spec = lease.spec.get_or_insert_with(Default::default);
        if holder.is_none() {
            // Taking over a free or expired Lease: a new term.
            spec.acquire_time = Some(MicroTime(now));
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.holder_identity = Some(self.identity.clone());
        spec.renew_time = Some(MicroTime(now));
        spec.lease_duration_seconds = Some(self.duration_s());
        // `lease` carries the resourceVersion we read: a concurrent writer makes this a 409.
        match self.api.replace(NAME, &PostParams::default(), &lease).await {
            Ok(_) => Ok(Acquired::Held),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(self.winner().await),
            Err(e) => Err(self.err("update", e)),
        }
    }

    /// Who won a race we lost (best effort: the name is for messages only).
    async fn winner(&self) -> Acquired {
        let holder = match self.api.get_opt(NAME).await {
            Ok(Some(l)) => l
                .spec
                .and_then(|s| s.holder_identity)
                .filter(|h| !h.is_empty()),
            _ => None,
        };
        Acquired::HeldBy {
            holder: holder.unwrap_or_else(|| "another process".into()),
        }
    }

    /// Gives the Lease up if we hold it, so the next contender need not wait for it to expire.
    /// Best effort: failures are logged, and an unreleased Lease expires by itself.
    pub async fn release(&self) {
        let mut lease = match self.api.get_opt(NAME).await {
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
        match self.api.replace(NAME, &PostParams::default(), &lease).await {
            Ok(_) => tracing::debug!(identity = %self.identity, "released the engine lease"),
            Err(e) => tracing::warn!(
                "could not release the engine lease: {}",
                self.err("update", e).report()
            ),
        }
    }
}

/// A background task that keeps a held Lease renewed (for a CLI verb that runs longer than the
/// lease duration). Dropping it stops renewing; call `Lock::release` to free the Lease at once.
pub struct Renewal {
    task: tokio::task::JoinHandle<()>,
    lost: tokio::sync::watch::Receiver<Option<String>>,
}

impl Renewal {
    /// Why the Lease is no longer ours, once that happened: stop acting.
    pub fn lost(&self) -> Option<String> {
        self.lost.borrow().clone()
    }
}

impl Drop for Renewal {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Lock {
    /// Renews the Lease every `every` (a third of the duration is usual) until dropped. The
    /// Lease counts as lost when someone else holds it or when no renewal succeeded for two
    /// thirds of the duration (before anyone else may take it over).
    pub fn keep_renewed(&self, every: Duration) -> Renewal {
        let (tx, rx) = tokio::sync::watch::channel(None);
        let lock = self.clone();
        let give_up = self.duration * 2 / 3;
        let task = tokio::spawn(async move {
            let mut renewed = tokio::time::Instant::now();
            loop {
                tokio::time::sleep(every).await;
                match tokio::time::timeout(every, lock.try_acquire_or_renew()).await {
                    Ok(Ok(Acquired::Held)) => renewed = tokio::time::Instant::now(),
                    Ok(Ok(Acquired::HeldBy { holder })) => {
                        let _ =
                            tx.send(Some(format!("the engine lease was taken over by {holder}")));
                        return;
                    }
                    Ok(Err(e)) => {
                        tracing::debug!("could not renew the engine lease: {}", e.report())
                    }
                    Err(_) => tracing::debug!("renewing the engine lease timed out"),
                }
                if renewed.elapsed() >= give_up {
                    let _ = tx.send(Some(format!(
                        "could not renew the engine lease for {} s",
                        give_up.as_secs()
                    )));
                    return;
                }
            }
        });
        Renewal { task, lost: rx }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    fn lease(holder: Option<&str>, renew: Option<i64>, duration: i32) -> Lease {
        Lease {
            metadata: ObjectMeta::default(),
            spec: Some(LeaseSpec {
                holder_identity: holder.map(Into::into),
                renew_time: renew.map(|s| MicroTime(at(s))),
                lease_duration_seconds: Some(duration),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_lease_is_live_until_its_duration_has_passed() {
        assert!(!expired(at(0), 15, at(0)));
        assert!(!expired(at(0), 15, at(15)));
        assert!(expired(at(0), 15, at(16)));
        assert!(
            !expired(at(10), 15, at(5)),
            "a renew time ahead of our clock is live"
        );
        assert!(
            expired(at(0), -3, at(1)),
            "a negative duration counts as zero"
        );
    }

    #[test]
    fn only_a_named_unexpired_holder_holds_the_lease() {
        assert_eq!(
            live_holder(&lease(Some("operator/a"), Some(0), 15), at(10)).as_deref(),
            Some("operator/a")
        );
        assert_eq!(
            live_holder(&lease(Some("operator/a"), Some(0), 15), at(20)),
            None
        );
        assert_eq!(live_holder(&lease(Some(""), Some(0), 15), at(1)), None);
        assert_eq!(live_holder(&lease(None, Some(0), 15), at(1)), None);
        assert_eq!(live_holder(&lease(Some("cli/h/1"), None, 15), at(1)), None);
    }

    #[test]
    fn identities_say_which_driver_holds_the_lease() {
        assert!(is_operator(&operator_identity("kubectl-etcd-7d9f-abc")));
        let cli = cli_identity();
        assert!(!is_operator(&cli));
        assert!(cli.starts_with("cli/") && cli.ends_with(&format!("/{}", std::process::id())));
    }
}

/// Against a real API server: `KUBECONFIG=... cargo test --lib --features e2e -- --ignored lease::live`
#[cfg(all(test, feature = "e2e"))]
mod live {
    use super::*;
    use futures::FutureExt;
    use kube::api::DeleteParams;

    #[tokio::test]
    // Runs with --features e2e (tests/run-all.sh), against $KUBECONFIG.
    async fn contenders_take_turns_and_exactly_one_wins_a_race() {
        let client = Client::try_default().await.unwrap();
        let ns = format!("ke-lease-{}", std::process::id());
        let nss = crate::testing::create_namespace(&client, &ns).await;
        let outcome = std::panic::AssertUnwindSafe(async {
            let short = Duration::from_secs(2);
            let a = Lock::new(client.clone(), &ns, "operator/a", short);
            let b = Lock::new(client.clone(), &ns, "cli/host/1", short);
            assert_eq!(
                active_holder(client.clone(), &ns).await.unwrap(),
                None,
                "no lease yet"
            );
            assert_eq!(
                a.try_acquire_or_renew().await.unwrap(),
                Acquired::Held,
                "created"
            );
            assert_eq!(
                b.try_acquire_or_renew().await.unwrap(),
                Acquired::HeldBy {
                    holder: "operator/a".into()
                }
            );
            assert_eq!(
                active_holder(client.clone(), &ns).await.unwrap().as_deref(),
                Some("operator/a")
            );
            assert_eq!(
                a.try_acquire_or_renew().await.unwrap(),
                Acquired::Held,
                "renewed"
            );
            a.release().await;
            assert_eq!(
                active_holder(client.clone(), &ns).await.unwrap(),
                None,
                "released"
            );
            b.release().await; // not ours: a no-op
            assert_eq!(
                b.try_acquire_or_renew().await.unwrap(),
                Acquired::Held,
                "a released lease is free"
            );
            tokio::time::sleep(Duration::from_secs(3)).await;
            assert_eq!(
                active_holder(client.clone(), &ns).await.unwrap(),
                None,
                "expired"
            );
            let (x, y) = tokio::join!(a.try_acquire_or_renew(), b.try_acquire_or_renew());
            let held = [x.unwrap(), y.unwrap()]
                .iter()
                .filter(|r| **r == Acquired::Held)
                .count();
            assert_eq!(held, 1, "exactly one contender wins an expired lease");
            let winner = if active_holder(client.clone(), &ns).await.unwrap().as_deref()
                == Some("operator/a")
            {
                &a
            } else {
                &b
            };
            let renewal = winner.keep_renewed(Duration::from_millis(500));
            tokio::time::sleep(Duration::from_secs(3)).await;
            assert_eq!(
                active_holder(client.clone(), &ns).await.unwrap().as_deref(),
                Some(winner.identity()),
                "kept past its duration"
            );
            assert_eq!(renewal.lost(), None);
            drop(renewal);
            winner.release().await;
            assert_eq!(
                active_holder(client.clone(), "ke-no-such-namespace")
                    .await
                    .unwrap(),
                None
            );
            let err = Lock::new(client.clone(), "ke-no-such-namespace", "cli/h/2", short)
                .try_acquire_or_renew()
                .await
                .unwrap_err();
            assert_eq!(err.api_code(), Some(404));
        })
        .catch_unwind()
        .await;
        let _ = nss.delete(&ns, &DeleteParams::default()).await;
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    }
}
