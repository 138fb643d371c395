//! The operator's own series: passes by result and duration, failed passes by what failed,
//! clusters by phase, leadership, and the changes made by the planner's step kind.

use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use super::{ClusterLabels, Metrics, Seen, count, family};
use crate::api::{Phase, Reason, condition};
use crate::error::Error;
use crate::plan::Step;

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

impl EncodeLabelValue for PassResult {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.label(), encoder)
    }
}

/// What failed in a pass, the `reason` label of `kubectl_etcd_reconcile_errors_total`: a fixed
/// set, one per kind of error (never the message).
pub const ERROR_REASONS: [&str; 8] = [
    "invalid_spec",
    "kubernetes",
    "api_unreachable",
    "etcd",
    "timeout",
    "backup",
    "conflict",
    "other",
];

fn error_reason(e: &Error) -> &'static str {
    match e {
        Error::InvalidSpec { .. } => "invalid_spec",
        Error::Kube { .. } | Error::NotFound { .. } | Error::CrdMissing => "kubernetes",
        Error::ApiUnreachable(_) => "api_unreachable",
        Error::Etcd { .. } => "etcd",
        Error::Timeout { .. } => "timeout",
        Error::Backup(_) => "backup",
        Error::Conflict(_) => "conflict",
        _ => "other",
    }
}

/// The kind of a step as `--dry-run -o json` names it ("addLearner"): the `step` label of
/// `kubectl_etcd_actions_total`, bounded by the `Step` enum (its serde tag, so a new step needs no
/// edit here).
fn step_kind(step: &Step) -> String {
    serde_json::to_value(step)
        .ok()
        .and_then(|v| v.get("step").and_then(|s| s.as_str()).map(String::from))
        .unwrap_or_default()
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ResultLabel {
    result: PassResult,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PhaseLabel {
    phase: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StepLabels {
    namespace: String,
    name: String,
    step: String,
}

/// The families of this file.
pub(super) struct Passes {
    reconciles: Family<ResultLabel, Counter>,
    errors: Family<ReasonLabel, Counter>,
    duration: Histogram,
    clusters: Family<PhaseLabel, Gauge>,
    leader: Gauge,
    actions: Family<StepLabels, Counter>,
}

impl Passes {
    pub(super) fn register(registry: &mut Registry) -> Passes {
        let reconciles = family(registry, "reconciles", "Reconcile passes by result", None);
        let errors = family(
            registry,
            "reconcile_errors",
            "Reconcile passes that failed, by what failed",
            None,
        );
        let duration = Histogram::new(BUCKETS);
        registry.register_with_unit(
            "reconcile_duration",
            "Duration of one reconcile pass",
            Unit::Seconds,
            duration.clone(),
        );
        let clusters = family(
            registry,
            "clusters",
            "EtcdClusters by the phase of their last status",
            None,
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 when this replica holds the leader lease and runs the controller",
            leader.clone(),
        );
        let actions = family(
            registry,
            "actions",
            "Changes the operator made, by the kind of the planner's step",
            None,
        );
        let p = Passes {
            reconciles,
            errors,
            duration,
            clusters,
            leader,
            actions,
        };
        // Every fixed label value from the start, so alerts need no `absent()`.
        for r in PassResult::ALL {
            drop(p.reconciles.get_or_create(&ResultLabel { result: r }));
        }
        for reason in ERROR_REASONS {
            drop(p.errors.get_or_create(&ReasonLabel {
                reason: reason.into(),
            }));
        }
        for phase in PHASES {
            drop(p.clusters.get_or_create(&PhaseLabel {
                phase: phase.to_string(),
            }));
        }
        p
    }

    /// Drops the label sets of a deleted cluster.
    pub(super) fn forget(&self, cluster: &ClusterLabels, seen: &Seen) {
        for step in &seen.steps {
            self.actions.remove(&StepLabels {
                namespace: cluster.namespace.clone(),
                name: cluster.name.clone(),
                step: step.clone(),
            });
        }
    }
}

impl Metrics {
    /// Counts one pass and its duration.
    pub fn pass(&self, result: PassResult, took: Duration) {
        self.passes
            .reconciles
            .get_or_create(&ResultLabel { result })
            .inc();
        self.passes.duration.observe(took.as_secs_f64());
    }

    /// Counts a failed pass by what failed (after `pass`). A refused spec also shows as the
    /// cluster's `Degraded` condition with reason `InvalidSpec`, which the engine wrote.
    pub fn failed(&self, cluster: &ClusterLabels, error: &Error) {
        let reason = error_reason(error);
        self.passes
            .errors
            .get_or_create(&ReasonLabel {
                reason: reason.into(),
            })
            .inc();
        if matches!(error, Error::InvalidSpec { .. }) {
            self.phase(cluster, Some(Phase::Failed));
            self.condition(
                cluster,
                condition::DEGRADED,
                Reason::InvalidSpec.as_str(),
                true,
            );
        }
    }

    /// Counts a change the operator made to `cluster`.
    pub fn acted(&self, cluster: &ClusterLabels, step: &Step) {
        let kind = step_kind(step);
        self.seen(cluster, |s| s.steps.insert(kind.clone()));
        self.passes
            .actions
            .get_or_create(&StepLabels {
                namespace: cluster.namespace.clone(),
                name: cluster.name.clone(),
                step: kind,
            })
            .inc();
    }

    /// Records the phase a cluster's status reports now.
    pub fn phase(&self, cluster: &ClusterLabels, phase: Option<Phase>) {
        self.seen(cluster, |s| s.phase = phase);
        self.count_phases();
    }

    pub(super) fn count_phases(&self) {
        let counts = {
            let all = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            PHASES.map(|p| all.values().filter(|s| s.phase == Some(p)).count())
        };
        for (p, n) in PHASES.iter().zip(counts) {
            self.passes
                .clusters
                .get_or_create(&PhaseLabel {
                    phase: p.to_string(),
                })
                .set(count(n));
        }
    }

    pub fn set_leader(&self, leader: bool) {
        self.passes.leader.set(i64::from(leader));
    }
}
