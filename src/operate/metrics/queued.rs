//! The work held back by the fair-share slots (`model::fair`): passes and scheduled backups
//! waiting, by namespace. One label set per namespace with work waiting, dropped when none waits.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::{Metrics, count, family};

/// What waits: `pass` or `backup`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Work {
    Pass,
    Backup,
}

impl Work {
    fn label(self) -> &'static str {
        match self {
            Work::Pass => "pass",
            Work::Backup => "backup",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct QueuedLabels {
    namespace: String,
    work: &'static str,
}

/// The family of this file, and the namespaces it has a series of, by work.
pub(super) struct Queued {
    waiting: Family<QueuedLabels, Gauge>,
    shown: Mutex<BTreeMap<Work, BTreeSet<String>>>,
}

impl Queued {
    pub(super) fn register(r: &mut Registry) -> Queued {
        Queued {
            waiting: family(
                r,
                "queued",
                "Passes (work=\"pass\") and due scheduled backups (work=\"backup\") of the namespace waiting for a slot (operate --max-passes-per-namespace, --max-backups-per-namespace, --max-backups)",
                None,
            ),
            shown: Mutex::default(),
        }
    }
}

impl Metrics {
    /// The work of kind `work` waiting now, by namespace: every namespace with some; a namespace
    /// left out waits for nothing (its series goes).
    pub fn queued(&self, work: Work, waiting: &BTreeMap<String, usize>) {
        let q = &self.queued;
        let mut shown = q.shown.lock().unwrap_or_else(|p| p.into_inner());
        let shown = shown.entry(work).or_default();
        let labels = |namespace: &str| QueuedLabels {
            namespace: namespace.to_owned(),
            work: work.label(),
        };
        for gone in shown
            .iter()
            .filter(|ns| waiting.get(*ns).is_none_or(|n| *n == 0))
        {
            q.waiting.remove(&labels(gone));
        }
        shown.clear();
        for (ns, n) in waiting.iter().filter(|(_, n)| **n > 0) {
            q.waiting.get_or_create(&labels(ns)).set(count(*n));
            shown.insert(ns.clone());
        }
    }
}
