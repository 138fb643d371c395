//! Operator metrics (the official Prometheus client, typed families) and the HTTP server
//! (hyper) that serves them with the health probes.
//!
//! May touch: a TCP listener. Label sets are bounded: `result` and `phase` take a fixed set of
//! values, the per-cluster gauges one label set per EtcdCluster, dropped when it is deleted.
//!
//! - `/metrics`: the families below, in the Prometheus text format 0.0.4, to a bearer token whose
//!   user may `get` the non-resource URL `/metrics` (`auth`, `review`; `--metrics-auth none`:
//!   to anyone).
//! - `/healthz`: 200 while the process runs (liveness).
//! - `/readyz`: 200 once leader election has reached the API server once — as the leader running
//!   the controller, or as a standby replica waiting for the Lease. A standby is ready so that a
//!   rollout of a two-replica Deployment proceeds; 503 before that first answer.
//!
//! Files: `passes` (the operator's own series), `cluster` (what a pass saw of a cluster),
//! `backup` (its backups), `certs` (its TLS certificates' expiry), `queued` (work waiting for a
//! fair-share slot), `server` (HTTP), `auth` (who
//! may read `/metrics`: pure) and `review` (the reviews that tell, with a client). Each file's
//! families are one struct registered here. `read` (the TLS Secrets, after a pass) and `review`
//! (a token's reviews) are the files that reach the API server; the server and the families hold
//! no client.

pub mod auth;
mod backup;
mod certs;
mod cluster;
mod passes;
mod queued;
mod read;
mod review;
mod server;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::{Registry, Unit};

pub use passes::PassResult;
pub use queued::Work;
pub use read::refresh_certificates;
pub use review::Guard;
pub use server::start;

use crate::api::Phase;

/// One EtcdCluster.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ClusterLabels {
    pub namespace: String,
    pub name: String,
}

/// What the per-cluster families remember between passes (to count changes and to remove the
/// label sets that are gone).
#[derive(Default)]
struct Seen {
    phase: Option<Phase>,
    leader: Option<u64>,
    members: BTreeSet<String>,
    /// Condition type → the reason its series carries.
    conditions: BTreeMap<String, String>,
    steps: BTreeSet<String>,
    /// The newest failed backup seen (`None` before the first look: an old failure found at
    /// start is not counted again).
    last_failed: Option<Option<String>>,
    /// (Secret, key) of each certificate series, and when the Secrets were last read.
    certs: BTreeSet<(String, String)>,
    certs_read: Option<std::time::Instant>,
}

/// The operator's metrics; shared by the controller and the HTTP server.
pub struct Metrics {
    registry: Registry,
    passes: passes::Passes,
    clusters: cluster::Clusters,
    backups: backup::Backups,
    certs: certs::Certs,
    queued: queued::Queued,
    seen: Mutex<HashMap<ClusterLabels, Seen>>,
    ready: AtomicBool,
}

/// A family registered as `kubectl_etcd_<name>` (with its unit's suffix).
fn family<L, M>(registry: &mut Registry, name: &str, help: &str, unit: Option<Unit>) -> Family<L, M>
where
    L: Clone + std::hash::Hash + Eq + EncodeLabelSet + std::fmt::Debug + Send + Sync + 'static,
    M: Default
        + prometheus_client::metrics::TypedMetric
        + prometheus_client::encoding::EncodeMetric
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let f = Family::<L, M>::default();
    match unit {
        Some(u) => registry.register_with_unit(name, help, u, f.clone()),
        None => registry.register(name, help, f.clone()),
    }
    f
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::with_prefix("kubectl_etcd");
        Metrics {
            passes: passes::Passes::register(&mut registry),
            clusters: cluster::Clusters::register(&mut registry),
            backups: backup::Backups::register(&mut registry),
            certs: certs::Certs::register(&mut registry),
            queued: queued::Queued::register(&mut registry),
            registry,
            seen: Mutex::default(),
            ready: AtomicBool::new(false),
        }
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Metrics {
    fn seen<T>(&self, cluster: &ClusterLabels, f: impl FnOnce(&mut Seen) -> T) -> T {
        // A panic while holding the lock leaves plain values behind: keep serving them.
        let mut all = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        f(all.entry(cluster.clone()).or_default())
    }

    /// Forgets a deleted cluster (its label sets go, so they stay bounded).
    pub fn forget(&self, cluster: &ClusterLabels) {
        let seen = self
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(cluster)
            .unwrap_or_default();
        self.clusters.forget(cluster, &seen);
        self.backups.forget(cluster);
        self.certs.forget(cluster, &seen);
        self.passes.forget(cluster, &seen);
        self.count_phases();
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
