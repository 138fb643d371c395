//! The Leases of the clusters the leading operator acts on: taken before a pass, renewed in the
//! background every `RENEW_EVERY` for as long as it leads (so during passes too), released when a
//! cluster is deleted and on shutdown. A cluster whose Lease a `kubectl etcd` command holds is
//! left to that command until it lets go. Each Lease lives in its cluster's namespace.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use kube::Client;
use kube::runtime::reflector::ObjectRef;

use crate::api::EtcdCluster;
use crate::error::Error;
use crate::lease::{Acquired, Lock};

type Key = ObjectRef<EtcdCluster>;

pub(super) struct ClusterLeases {
    client: Client,
    identity: String,
    duration: Duration,
    /// One Lock per cluster seen (it remembers what it observed), and whether we hold it.
    locks: Mutex<HashMap<Key, (Lock, bool)>>,
}

impl ClusterLeases {
    pub(super) fn new(client: Client, identity: &str, duration: Duration) -> ClusterLeases {
        ClusterLeases {
            client,
            identity: identity.into(),
            duration,
            locks: Mutex::default(),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<Key, (Lock, bool)>) -> T) -> T {
        f(&mut self.locks.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn lock_of(&self, key: &Key) -> Lock {
        self.with(|m| {
            m.entry(key.clone())
                .or_insert_with(|| {
                    let lock = Lock::for_cluster(
                        self.client.clone(),
                        key.namespace.as_deref().unwrap_or(""),
                        &key.name,
                        self.identity.clone(),
                        self.duration,
                    );
                    (lock, false)
                })
                .0
                .clone()
        })
    }

    fn set_held(&self, key: &Key, held: bool) {
        self.with(|m| {
            if let Some(e) = m.get_mut(key) {
                e.1 = held;
            }
        });
    }

    /// Takes (or renews) the Lease of `key` before a pass.
    pub(super) async fn acquire(&self, key: &Key) -> Result<Acquired, Error> {
        let got = self.lock_of(key).try_acquire_or_renew().await;
        self.set_held(key, matches!(got, Ok(Acquired::Held)));
        got
    }

    /// Renews every Lease held; forgets those someone else took meanwhile.
    pub(super) async fn renew_all(&self) {
        let held: Vec<(Key, Lock)> = self.with(|m| {
            m.iter()
                .filter(|(_, (_, h))| *h)
                .map(|(k, (l, _))| (k.clone(), l.clone()))
                .collect()
        });
        for (key, lock) in held {
            match lock.try_acquire_or_renew().await {
                Ok(Acquired::Held) => {}
                Ok(other) => {
                    tracing::info!(cluster = %key.name, namespace = key.namespace.as_deref().unwrap_or(""), "no longer holds the cluster's lease: {other:?}");
                    self.set_held(&key, false);
                }
                Err(e) => {
                    tracing::warn!(cluster = %key.name, namespace = key.namespace.as_deref().unwrap_or(""), "could not renew the cluster's lease: {}", e.report())
                }
            }
        }
    }

    /// Renews every `every` until dropped.
    pub(super) async fn keep_renewed(&self, every: Duration) {
        loop {
            tokio::time::sleep(every).await;
            self.renew_all().await;
        }
    }

    /// Removes a deleted cluster's Lease and forgets it.
    pub(super) async fn remove(&self, key: &Key) {
        if let Some((lock, _)) = self.with(|m| m.remove(key)) {
            lock.remove().await;
        }
    }

    /// Lets go of every Lease held (shutdown).
    pub(super) async fn release_all(&self) {
        let all: Vec<Lock> = self.with(|m| {
            m.drain()
                .filter(|(_, (_, h))| *h)
                .map(|(_, (l, _))| l)
                .collect()
        });
        for lock in all {
            lock.release().await;
        }
    }
}
