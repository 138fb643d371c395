//! The slots of the passes (`operate --max-passes-per-namespace`): a pass waits for one of its
//! namespace's before it starts, first come first served, while the passes of other namespaces go
//! on (`model::fair` decides; this file only waits and wakes). A pass held back is counted in
//! `kubectl_etcd_queued{work="pass"}` and said at debug level.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

use super::metrics::{Metrics, Work};
use crate::model::fair::{Bounds, Fair, Turn};

/// The passes' slots, shared by every pass.
pub(super) struct Gate {
    fair: Mutex<Fair<String>>,
    /// Told when a slot frees or a waiter leaves: the waiters ask again.
    freed: Notify,
    metrics: Arc<Metrics>,
}

/// A slot held while a pass runs; dropping it frees the slot.
pub(super) struct Slot {
    gate: Arc<Gate>,
    namespace: String,
    name: String,
}

/// A pass in line; dropped before its turn (a shutdown), it leaves the line.
struct InLine<'a> {
    gate: &'a Gate,
    namespace: &'a str,
    name: &'a str,
    admitted: bool,
}

impl Gate {
    pub(super) fn new(bounds: Bounds, metrics: Arc<Metrics>) -> Gate {
        Gate {
            // A waiting pass leaves the line itself (`InLine`): no expiry.
            fair: Mutex::new(Fair::new(bounds, None)),
            freed: Notify::new(),
            metrics,
        }
    }

    fn fair(&self) -> std::sync::MutexGuard<'_, Fair<String>> {
        self.fair.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes the passes waiting, by namespace.
    fn count(&self, fair: &Fair<String>) {
        self.metrics
            .queued(Work::Pass, &fair.waiting_by_namespace());
    }

    /// Waits for a slot of the pass of cluster `name` in `ns`, and holds it until the `Slot`
    /// is dropped.
    pub(super) async fn enter(self: &Arc<Self>, ns: &str, name: &str) -> Slot {
        let mut line = InLine {
            gate: self,
            namespace: ns,
            name,
            admitted: false,
        };
        let mut said = false;
        loop {
            // Registered before asking, so a slot freed between the answer and the wait wakes
            // this pass.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            let turn = {
                let mut fair = self.fair();
                let turn = fair.ask(ns, &name.to_owned(), Instant::now());
                self.count(&fair);
                turn
            };
            match turn {
                Turn::Go => {
                    line.admitted = true;
                    return Slot {
                        gate: self.clone(),
                        namespace: ns.to_owned(),
                        name: name.to_owned(),
                    };
                }
                Turn::Wait { running, ahead, .. } if !said => {
                    said = true;
                    tracing::debug!(cluster = %name, namespace = %ns, running, ahead, "pass waits for a slot of its namespace (operate --max-passes-per-namespace)");
                }
                Turn::Wait { .. } => {}
            }
            freed.await;
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut fair = self.gate.fair();
        fair.done(&self.namespace, &self.name, Instant::now());
        self.gate.count(&fair);
        drop(fair);
        self.gate.freed.notify_waiters();
    }
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        if self.admitted {
            return;
        }
        let mut fair = self.gate.fair();
        fair.forget(self.namespace, &self.name.to_owned());
        self.gate.count(&fair);
        drop(fair);
        self.gate.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn gate(per_namespace: usize) -> Arc<Gate> {
        Arc::new(Gate::new(
            Bounds {
                per_namespace,
                ..Bounds::PASSES
            },
            Arc::new(Metrics::default()),
        ))
    }

    async fn soon<T>(f: impl std::future::Future<Output = T>) -> Option<T> {
        tokio::time::timeout(Duration::from_millis(200), f)
            .await
            .ok()
    }

    #[tokio::test]
    async fn a_pass_beyond_its_namespaces_bound_waits_until_a_slot_frees_and_others_go_on() {
        let g = gate(1);
        let a1 = g.enter("a", "1").await;
        let waiting = tokio::spawn({
            let g = g.clone();
            async move { g.enter("a", "2").await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "a's slot is taken");
        assert!(
            g.metrics
                .render()
                .contains(r#"kubectl_etcd_queued{namespace="a",work="pass"} 1"#)
        );
        // Another namespace's pass does not wait for a's.
        let b = soon(g.enter("b", "1")).await.expect("b goes at once");
        drop(a1);
        let a2 = soon(waiting).await.expect("a/2's turn came").unwrap();
        assert!(
            !g.metrics.render().contains("kubectl_etcd_queued{"),
            "nobody waits"
        );
        drop((a2, b));
        assert!(g.fair().waiting_by_namespace().is_empty());
    }

    #[tokio::test]
    async fn a_pass_given_up_while_waiting_leaves_the_line() {
        let g = gate(1);
        let a1 = g.enter("a", "1").await;
        assert!(
            soon(g.enter("a", "2")).await.is_none(),
            "waits, then given up"
        );
        assert_eq!(g.fair().waiting("a"), 0);
        let waiting = tokio::spawn({
            let g = g.clone();
            async move { g.enter("a", "3").await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(a1);
        soon(waiting)
            .await
            .expect("a/3 is next, not the gone a/2")
            .unwrap();
    }
}
