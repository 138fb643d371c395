//! Operator metrics (the official Prometheus client, typed families) and the HTTP server
//! (hyper) that serves them with the health probes.
//!
//! May touch: a TCP listener. Label sets are bounded: `result` and `phase` take a fixed set of
//! values, the per-cluster gauges one label set per EtcdCluster, dropped when it is deleted.
//!
//! - `/metrics`: the families below, in the Prometheus text format 0.0.4.
//! - `/healthz`: 200 while the process runs (liveness).
//! - `/readyz`: 200 once leader election has reached the API server once — as the leader running
//!   the controller, or as a standby replica waiting for the Lease. A standby is ready so that a
//!   rollout of a two-replica Deployment proceeds; 503 before that first answer.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{CONNECTION, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use tokio::net::TcpListener;

use crate::api::{BackupStatus, Phase, Reason, condition};
use crate::engine::Pass;
use crate::error::Error;
use crate::model::{DEFAULT_QUOTA_BYTES, EtcdView, MemberView};
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

/// The `state` label of `kubectl_etcd_upgrade_state`: one series per state and cluster, the
/// current one at 1. Read from the `Upgrading` condition's reason.
pub const UPGRADE_STATES: [&str; 6] = [
    "idle",
    "upgrading",
    "downgrading",
    "rolling_back",
    "rolled_back",
    "blocked",
];

fn upgrade_state(reason: &str) -> &'static str {
    match reason {
        r if r == Reason::UpgradingMember.as_str() || r == Reason::WaitingForMember.as_str() => {
            "upgrading"
        }
        r if r == Reason::Downgrading.as_str() => "downgrading",
        r if r == Reason::RollingBack.as_str() => "rolling_back",
        r if r == Reason::RolledBack.as_str() => "rolled_back",
        r if r == Reason::UpgradeBlocked.as_str() => "blocked",
        _ => "idle",
    }
}

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

/// One EtcdCluster.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ClusterLabels {
    pub namespace: String,
    pub name: String,
}

/// One member of an EtcdCluster (its pod's name).
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct MemberLabels {
    namespace: String,
    name: String,
    member: String,
}

/// One condition type of an EtcdCluster with its current reason.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ConditionLabels {
    namespace: String,
    name: String,
    r#type: String,
    reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StateLabels {
    namespace: String,
    name: String,
    state: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StepLabels {
    namespace: String,
    name: String,
    step: String,
}

/// One EtcdCluster and why a member of it was defragmented (`plan::Trigger::label`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct DefragLabels {
    namespace: String,
    name: String,
    trigger: &'static str,
}

/// The `trigger` label values of the defragmentation counter.
const DEFRAG_TRIGGERS: [&str; 3] = ["nospace", "requested", "policy"];
/// Upper bounds (seconds) of the defragmentation pause histogram (a member answers nobody).
const PAUSE_BUCKETS: [f64; 8] = [0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0];

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
}

/// The operator's metrics; shared by the controller and the HTTP server.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ResultLabel, Counter>,
    errors: Family<ReasonLabel, Counter>,
    duration: Histogram,
    clusters: Family<PhaseLabel, Gauge>,
    leader: Gauge,
    replicas: Family<ClusterLabels, Gauge>,
    voters: Family<ClusterLabels, Gauge>,
    healthy_voters: Family<ClusterLabels, Gauge>,
    learners: Family<ClusterLabels, Gauge>,
    member_healthy: Family<MemberLabels, Gauge>,
    leader_changes: Family<ClusterLabels, Counter>,
    db_size: Family<ClusterLabels, Gauge>,
    db_in_use: Family<ClusterLabels, Gauge>,
    db_quota: Family<ClusterLabels, Gauge>,
    alarms: Family<ClusterLabels, Gauge>,
    conditions: Family<ConditionLabels, Gauge>,
    upgrade: Family<StateLabels, Gauge>,
    actions: Family<StepLabels, Counter>,
    last_backup: Family<ClusterLabels, Gauge>,
    last_backup_size: Family<ClusterLabels, Gauge>,
    backup_interval: Family<ClusterLabels, Gauge>,
    backup_failing: Family<ClusterLabels, Gauge>,
    backup_failures: Family<ClusterLabels, Counter>,
    defrags: Family<DefragLabels, Counter>,
    defrag_reclaimed: Family<ClusterLabels, Counter>,
    defrag_pause: Histogram,
    seen: Mutex<HashMap<ClusterLabels, Seen>>,
    ready: AtomicBool,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::with_prefix("kubectl_etcd");
        let reconciles = Family::<ResultLabel, Counter>::default();
        registry.register(
            "reconciles",
            "Reconcile passes by result",
            reconciles.clone(),
        );
        let errors = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "reconcile_errors",
            "Reconcile passes that failed, by what failed",
            errors.clone(),
        );
        let duration = Histogram::new(BUCKETS);
        registry.register_with_unit(
            "reconcile_duration",
            "Duration of one reconcile pass",
            Unit::Seconds,
            duration.clone(),
        );
        let clusters = Family::<PhaseLabel, Gauge>::default();
        registry.register(
            "clusters",
            "EtcdClusters by the phase of their last status",
            clusters.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 when this replica holds the leader lease and runs the controller",
            leader.clone(),
        );
        fn family<L, M>(
            registry: &mut Registry,
            name: &str,
            help: &str,
            unit: Option<Unit>,
        ) -> Family<L, M>
        where
            L: Clone
                + std::hash::Hash
                + Eq
                + EncodeLabelSet
                + std::fmt::Debug
                + Send
                + Sync
                + 'static,
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
        let r = &mut registry;
        let replicas = family(r, "replicas", "Voting members the spec asks for", None);
        let voters = family(r, "voters", "Voting members of the cluster", None);
        let healthy_voters = family(
            r,
            "healthy_voters",
            "Voting members that answer healthy",
            None,
        );
        let learners = family(
            r,
            "learners",
            "Non-voting members (learners) of the cluster",
            None,
        );
        let member_healthy = family(
            r,
            "member_healthy",
            "1 when the member answers healthy, per member of the member list",
            None,
        );
        let db_size = family(
            r,
            "db_size_bytes",
            "Largest backend database among the members, in bytes",
            None,
        );
        let db_in_use = family(
            r,
            "db_size_in_use_bytes",
            "Largest logically used part of a member's database (the rest is free pages a defragmentation gives back), in bytes",
            None,
        );
        let db_quota = family(
            r,
            "db_quota_bytes",
            "The backend quota (--quota-backend-bytes) of the cluster, in bytes",
            None,
        );
        let alarms = family(r, "alarms", "Members with a raised alarm (NOSPACE)", None);
        let conditions = family(
            r,
            "condition",
            "The cluster's status conditions: 1 while true, 0 while false, one series per type with its current reason",
            None,
        );
        let upgrade = family(
            r,
            "upgrade_state",
            "Where a version change stands (idle, upgrading, downgrading, rolling_back, rolled_back, blocked): 1 for the current state",
            None,
        );
        let actions = family(
            r,
            "actions",
            "Changes the operator made, by the kind of the planner's step",
            None,
        );
        let last_backup = family(
            r,
            "last_successful_backup_timestamp",
            "When the newest successful backup of the cluster finished (status.backup), as Unix time; no series before the first",
            Some(Unit::Seconds),
        );
        let last_backup_size = family(
            r,
            "last_successful_backup_size_bytes",
            "Stored bytes of the newest successful backup",
            None,
        );
        let backup_interval = family(
            r,
            "backup_interval",
            "The interval of the cluster's backup schedule (also while suspended); no series without a schedule",
            Some(Unit::Seconds),
        );
        let backup_failing = family(
            r,
            "backup_failing",
            "1 when the newest backup of the cluster failed (newer than the newest success)",
            None,
        );
        let backup_failures = family(
            r,
            "backup_failures",
            "Failed backups of the cluster seen by this operator",
            None,
        );
        let leader_changes = family(
            r,
            "leader_changes",
            "Changes of the etcd leader this operator observed",
            None,
        );
        let defrags = Family::<DefragLabels, Counter>::default();
        registry.register(
            "defragmentations",
            "Members defragmented by the engine, by cluster and trigger (nospace, requested, policy)",
            defrags.clone(),
        );
        let defrag_reclaimed = Family::<ClusterLabels, Counter>::default();
        registry.register_with_unit(
            "defrag_reclaimed",
            "Bytes the engine's defragmentations gave back to the file system",
            Unit::Bytes,
            defrag_reclaimed.clone(),
        );
        let defrag_pause = Histogram::new(PAUSE_BUCKETS);
        registry.register_with_unit(
            "defrag_pause",
            "How long a member answered nobody while it was defragmented",
            Unit::Seconds,
            defrag_pause.clone(),
        );
        // Every fixed label value from the start, so alerts need no `absent()`.
        for r in PassResult::ALL {
            drop(reconciles.get_or_create(&ResultLabel { result: r }));
        }
        for reason in ERROR_REASONS {
            drop(errors.get_or_create(&ReasonLabel {
                reason: reason.into(),
            }));
        }
        for p in PHASES {
            drop(clusters.get_or_create(&PhaseLabel {
                phase: p.to_string(),
            }));
        }
        Metrics {
            registry,
            reconciles,
            errors,
            duration,
            clusters,
            leader,
            replicas,
            voters,
            healthy_voters,
            learners,
            member_healthy,
            leader_changes,
            db_size,
            db_in_use,
            db_quota,
            alarms,
            conditions,
            upgrade,
            actions,
            last_backup,
            last_backup_size,
            backup_interval,
            backup_failing,
            backup_failures,
            defrags,
            defrag_reclaimed,
            defrag_pause,
            seen: Mutex::default(),
            ready: AtomicBool::new(false),
        }
    }
}

/// The interval of a backup schedule around `now` (two consecutive runs), also while it is
/// suspended: `BackupOverdue` compares the newest backup's age with twice this.
pub fn schedule_interval(
    sched: Option<&crate::archive::schedule::Schedule>,
    now: jiff::Timestamp,
) -> Option<Duration> {
    let sched = sched?;
    let a = sched.next_after(now)?;
    let b = sched.next_after(a)?;
    u64::try_from(b.as_second() - a.as_second())
        .ok()
        .map(Duration::from_secs)
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The `member` label: the member's pod, else the name etcd reports, else its id.
fn member_label(cluster: &str, m: &MemberView) -> String {
    match (m.ordinal, m.name.is_empty()) {
        (Some(o), _) => crate::objects::pod_name(cluster, o),
        (None, false) => m.name.clone(),
        (None, true) => format!("{:016x}", m.id),
    }
}

impl Metrics {
    fn seen<T>(&self, cluster: &ClusterLabels, f: impl FnOnce(&mut Seen) -> T) -> T {
        // A panic while holding the lock leaves plain values behind: keep serving them.
        let mut all = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        f(all.entry(cluster.clone()).or_default())
    }

    /// Counts one pass and its duration.
    pub fn pass(&self, result: PassResult, took: Duration) {
        self.reconciles.get_or_create(&ResultLabel { result }).inc();
        self.duration.observe(took.as_secs_f64());
    }

    /// Counts a failed pass by what failed (after `pass`). A refused spec also shows as the
    /// cluster's `Degraded` condition with reason `InvalidSpec`, which the engine wrote.
    pub fn failed(&self, cluster: &ClusterLabels, error: &Error) {
        let reason = error_reason(error);
        self.errors
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
        self.actions
            .get_or_create(&StepLabels {
                namespace: cluster.namespace.clone(),
                name: cluster.name.clone(),
                step: kind,
            })
            .inc();
    }

    fn condition(&self, cluster: &ClusterLabels, type_: &str, reason: &str, on: bool) {
        let labels = |reason: &str| ConditionLabels {
            namespace: cluster.namespace.clone(),
            name: cluster.name.clone(),
            r#type: type_.into(),
            reason: reason.into(),
        };
        let before = self.seen(cluster, |s| {
            s.conditions.insert(type_.to_string(), reason.to_string())
        });
        if let Some(old) = before.filter(|old| old != reason) {
            self.conditions.remove(&labels(&old));
        }
        self.conditions
            .get_or_create(&labels(reason))
            .set(i64::from(on));
    }

    /// Records what a pass over `cluster` saw: its phase, conditions and the per-cluster gauges.
    pub fn observed(&self, cluster: &ClusterLabels, pass: &Pass) {
        self.phase(cluster, pass.status.phase);
        if let Some(d) = &pass.defragmented {
            self.defrags
                .get_or_create(&DefragLabels {
                    namespace: cluster.namespace.clone(),
                    name: cluster.name.clone(),
                    trigger: d.trigger,
                })
                .inc();
            self.defrag_reclaimed.get_or_create(cluster).inc_by(d.won());
            self.defrag_pause.observe(d.pause.as_secs_f64());
        }
        self.replicas
            .get_or_create(cluster)
            .set(i64::from(pass.desired.replicas));
        for c in &pass.status.conditions {
            self.condition(cluster, &c.type_, &c.reason, c.status == "True");
            if c.type_ == condition::UPGRADING {
                let now = upgrade_state(&c.reason);
                for state in UPGRADE_STATES {
                    self.upgrade
                        .get_or_create(&StateLabels {
                            namespace: cluster.namespace.clone(),
                            name: cluster.name.clone(),
                            state: state.into(),
                        })
                        .set(i64::from(state == now));
                }
            }
        }
        let quota = pass
            .desired
            .quota_backend_bytes
            .filter(|q| *q > 0)
            .unwrap_or(DEFAULT_QUOTA_BYTES);
        self.db_quota.get_or_create(cluster).set(quota);
        let EtcdView::Reached(c) = &pass.observed.etcd else {
            self.healthy_voters.get_or_create(cluster).set(0);
            let gone = self.seen(cluster, |s| std::mem::take(&mut s.members));
            for member in gone {
                self.member_healthy
                    .get_or_create(&MemberLabels {
                        namespace: cluster.namespace.clone(),
                        name: cluster.name.clone(),
                        member,
                    })
                    .set(0);
            }
            return;
        };
        self.voters
            .get_or_create(cluster)
            .set(count(c.voters().count()));
        self.healthy_voters
            .get_or_create(cluster)
            .set(count(c.voters().filter(|m| m.healthy).count()));
        self.learners
            .get_or_create(cluster)
            .set(count(c.learners().count()));
        let member_labels = |member: String| MemberLabels {
            namespace: cluster.namespace.clone(),
            name: cluster.name.clone(),
            member,
        };
        let now: BTreeSet<String> = c
            .members
            .iter()
            .map(|m| member_label(&cluster.name, m))
            .collect();
        for m in &c.members {
            self.member_healthy
                .get_or_create(&member_labels(member_label(&cluster.name, m)))
                .set(i64::from(m.healthy));
        }
        let before = self.seen(cluster, |s| std::mem::replace(&mut s.members, now.clone()));
        for gone in before.difference(&now) {
            self.member_healthy.remove(&member_labels(gone.clone()));
        }
        let largest = |f: fn(&crate::model::MemberStatusView) -> i64| {
            c.members
                .iter()
                .filter_map(|m| m.status.as_ref().map(f))
                .max()
                .unwrap_or(0)
        };
        self.db_size
            .get_or_create(cluster)
            .set(largest(|s| s.db_size));
        self.db_in_use
            .get_or_create(cluster)
            .set(largest(|s| s.db_size_in_use));
        let alarmed = c
            .members
            .iter()
            .filter(|m| m.alarmed || pass.observed.nospace.contains(&m.id))
            .count();
        self.alarms.get_or_create(cluster).set(count(alarmed));
        let changed = self.seen(cluster, |seen| {
            let changed = seen.leader.is_some() && c.leader.is_some() && seen.leader != c.leader;
            if c.leader.is_some() {
                seen.leader = c.leader;
            }
            changed
        });
        let changes = self.leader_changes.get_or_create(cluster);
        if changed {
            changes.inc();
        }
    }

    /// Records the backups of `cluster` from its `status.backup` (scheduled and `kubectl etcd
    /// backup` alike) and the interval of its schedule (`None`: no schedule). A cluster never backed up has no timestamp series: an alert on
    /// `time() - …` then concerns only clusters that have backups.
    pub fn backup(
        &self,
        cluster: &ClusterLabels,
        status: Option<&BackupStatus>,
        interval: Option<Duration>,
    ) {
        let ok = status.and_then(|s| s.last_successful_time.as_ref());
        match ok {
            Some(t) => {
                self.last_backup.get_or_create(cluster).set(t.0.as_second());
            }
            None => drop(self.last_backup.remove(cluster)),
        }
        match status.and_then(|s| s.last_successful_size) {
            Some(b) => {
                self.last_backup_size.get_or_create(cluster).set(b);
            }
            None => drop(self.last_backup_size.remove(cluster)),
        }
        match interval {
            Some(i) => {
                let secs = i64::try_from(i.as_secs()).unwrap_or(i64::MAX);
                self.backup_interval.get_or_create(cluster).set(secs);
            }
            None => drop(self.backup_interval.remove(cluster)),
        }
        let failed = status.and_then(|s| s.last_failed_time.as_ref());
        let failing = failed.is_some_and(|f| ok.is_none_or(|o| f.0 > o.0));
        self.backup_failing
            .get_or_create(cluster)
            .set(i64::from(failing));
        let name = status.and_then(|s| s.last_failed.clone());
        let new_failure = self.seen(cluster, |s| {
            let new = s
                .last_failed
                .as_ref()
                .is_some_and(|before| name.is_some() && *before != name);
            s.last_failed = Some(name);
            new
        });
        let failures = self.backup_failures.get_or_create(cluster);
        if new_failure {
            failures.inc();
        }
    }

    /// Records the phase a cluster's status reports now.
    pub fn phase(&self, cluster: &ClusterLabels, phase: Option<Phase>) {
        self.seen(cluster, |s| s.phase = phase);
        self.count_phases();
    }

    /// Forgets a deleted cluster (its label sets go, so they stay bounded).
    pub fn forget(&self, cluster: &ClusterLabels) {
        let seen = self
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(cluster)
            .unwrap_or_default();
        for f in [
            &self.replicas,
            &self.voters,
            &self.healthy_voters,
            &self.learners,
            &self.db_size,
            &self.db_in_use,
            &self.db_quota,
            &self.alarms,
            &self.last_backup,
            &self.last_backup_size,
            &self.backup_interval,
            &self.backup_failing,
        ] {
            f.remove(cluster);
        }
        self.leader_changes.remove(cluster);
        self.backup_failures.remove(cluster);
        self.defrag_reclaimed.remove(cluster);
        for trigger in DEFRAG_TRIGGERS {
            self.defrags.remove(&DefragLabels {
                namespace: cluster.namespace.clone(),
                name: cluster.name.clone(),
                trigger,
            });
        }
        let (namespace, name) = (cluster.namespace.clone(), cluster.name.clone());
        for member in seen.members {
            self.member_healthy.remove(&MemberLabels {
                namespace: namespace.clone(),
                name: name.clone(),
                member,
            });
        }
        for (r#type, reason) in seen.conditions {
            self.conditions.remove(&ConditionLabels {
                namespace: namespace.clone(),
                name: name.clone(),
                r#type,
                reason,
            });
        }
        for state in UPGRADE_STATES {
            self.upgrade.remove(&StateLabels {
                namespace: namespace.clone(),
                name: name.clone(),
                state: state.into(),
            });
        }
        for step in seen.steps {
            self.actions.remove(&StepLabels {
                namespace: namespace.clone(),
                name: name.clone(),
                step,
            });
        }
        self.count_phases();
    }

    fn count_phases(&self) {
        let counts = {
            let all = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            PHASES.map(|p| all.values().filter(|s| s.phase == Some(p)).count())
        };
        for (p, n) in PHASES.iter().zip(counts) {
            self.clusters
                .get_or_create(&PhaseLabel {
                    phase: p.to_string(),
                })
                .set(count(n));
        }
    }

    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
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

const TEXT: &str = "text/plain; charset=utf-8";
const EXPOSITION: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The answer to `method path`.
fn respond(metrics: &Metrics, method: &Method, path: &str) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, content_type: &'static str, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        // One request per connection is all Prometheus and the kubelet need.
        r.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
        r
    };
    if method != Method::GET && method != Method::HEAD {
        return reply(StatusCode::METHOD_NOT_ALLOWED, TEXT, "only GET\n".into());
    }
    match path {
        "/metrics" => reply(StatusCode::OK, EXPOSITION, metrics.render()),
        "/healthz" => reply(StatusCode::OK, TEXT, "ok\n".into()),
        "/readyz" if metrics.ready() => reply(StatusCode::OK, TEXT, "ok\n".into()),
        "/readyz" => reply(
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            "leader election has not reached the API server yet\n".into(),
        ),
        _ => reply(StatusCode::NOT_FOUND, TEXT, "not found\n".into()),
    }
}

/// Binds `addr` (an error here stops the operator: a port clash is a configuration mistake).
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// How long a client may take to send its request head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves `/metrics`, `/healthz` and `/readyz` until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>) {
    loop {
        let conn = match listener.accept().await {
            Ok((conn, _)) => conn,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!("metrics listener: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let response = respond(&metrics, req.method(), req.uri().path());
                async move { Ok::<_, Infallible>(response) }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(conn), service)
                .await;
            if let Err(e) = served {
                tracing::debug!("metrics request failed: {e}");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix} in\n{text}"))
    }

    fn demo() -> ClusterLabels {
        ClusterLabels {
            namespace: "ns".into(),
            name: "demo".into(),
        }
    }

    #[test]
    fn a_fresh_operator_reports_every_series_at_zero() {
        let text = Metrics::default().render();
        for r in ["acted", "unchanged", "not_yet", "error"] {
            assert_eq!(
                line(
                    &text,
                    &format!("kubectl_etcd_reconciles_total{{result=\"{r}\"}}")
                )
                .rsplit(' ')
                .next(),
                Some("0")
            );
        }
        assert_eq!(
            line(&text, "kubectl_etcd_clusters{phase=\"Running\"}"),
            "kubectl_etcd_clusters{phase=\"Running\"} 0"
        );
        assert_eq!(line(&text, "kubectl_etcd_leader "), "kubectl_etcd_leader 0");
        assert_eq!(
            line(&text, "kubectl_etcd_reconcile_duration_seconds_count"),
            "kubectl_etcd_reconcile_duration_seconds_count 0"
        );
        assert!(text.contains("# TYPE kubectl_etcd_reconcile_duration_seconds histogram"));
    }

    #[test]
    fn passes_count_by_result_and_fill_cumulative_buckets() {
        let m = Metrics::default();
        m.pass(PassResult::Acted, Duration::from_millis(80));
        m.pass(PassResult::Error, Duration::from_secs(3));
        m.failed(&demo(), &Error::Conflict("x".into()));
        m.pass(PassResult::Unchanged, Duration::from_secs(60));
        let text = m.render();
        assert_eq!(
            line(&text, "kubectl_etcd_reconciles_total{result=\"acted\"}"),
            "kubectl_etcd_reconciles_total{result=\"acted\"} 1"
        );
        assert_eq!(
            line(
                &text,
                "kubectl_etcd_reconcile_errors_total{reason=\"conflict\"}"
            ),
            "kubectl_etcd_reconcile_errors_total{reason=\"conflict\"} 1"
        );
        assert_eq!(
            line(
                &text,
                "kubectl_etcd_reconcile_errors_total{reason=\"etcd\"}"
            ),
            "kubectl_etcd_reconcile_errors_total{reason=\"etcd\"} 0",
            "every reason from the start"
        );
        let bucket = |le: &str| {
            line(
                &text,
                &format!("kubectl_etcd_reconcile_duration_seconds_bucket{{le=\"{le}\"}}"),
            )
            .rsplit(' ')
            .next()
            .unwrap()
            .to_string()
        };
        assert_eq!(bucket("0.05"), "0");
        assert_eq!(bucket("0.1"), "1");
        assert_eq!(bucket("5"), "2");
        assert_eq!(bucket("+Inf"), "3");
        assert_eq!(
            line(&text, "kubectl_etcd_reconcile_duration_seconds_sum"),
            "kubectl_etcd_reconcile_duration_seconds_sum 63.08"
        );
    }

    #[test]
    fn clusters_are_counted_by_their_last_phase() {
        let m = Metrics::default();
        let c = |ns: &str, name: &str| ClusterLabels {
            namespace: ns.into(),
            name: name.into(),
        };
        m.phase(&c("a", "one"), Some(Phase::Running));
        m.phase(&c("a", "two"), Some(Phase::Scaling));
        m.phase(&c("a", "two"), Some(Phase::Running));
        m.phase(&c("b", "three"), Some(Phase::Degraded));
        m.phase(&c("b", "four"), None);
        m.forget(&c("b", "three"));
        m.set_leader(true);
        let text = m.render();
        assert_eq!(
            line(&text, "kubectl_etcd_clusters{phase=\"Running\"}"),
            "kubectl_etcd_clusters{phase=\"Running\"} 2"
        );
        assert_eq!(
            line(&text, "kubectl_etcd_clusters{phase=\"Degraded\"}"),
            "kubectl_etcd_clusters{phase=\"Degraded\"} 0"
        );
        assert_eq!(line(&text, "kubectl_etcd_leader "), "kubectl_etcd_leader 1");
    }

    fn pass_with(leader: u64, healthy: [bool; 3], db: [i64; 3]) -> Pass {
        use crate::model::{ClusterView, MemberStatusView, MemberView, Observed};
        let members = (0..3)
            .map(|i| MemberView {
                id: 100 + i,
                ordinal: Some(i as u32),
                healthy: healthy[i as usize],
                status: Some(MemberStatusView {
                    db_size: db[i as usize],
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect();
        Pass {
            desired: crate::fixtures::cluster("demo")
                .spec(|s| s.etcd.quota_backend_bytes = Some(8 << 30))
                .desired(),
            observed: Observed {
                etcd: EtcdView::Reached(ClusterView {
                    cluster_id: 1,
                    leader: Some(leader),
                    members,
                    auth_enabled: false,
                    list_unconfirmed: false,
                }),
                ..Default::default()
            },
            step: crate::plan::Step::Idle,
            status: crate::api::EtcdClusterStatus {
                phase: Some(Phase::Running),
                ..Default::default()
            },
            outcome: crate::engine::Outcome::Unchanged,
            defragmented: None,
        }
    }

    #[test]
    fn each_cluster_reports_what_users_alert_on_and_is_forgotten_when_deleted() {
        let m = Metrics::default();
        m.observed(&demo(), &pass_with(100, [true, true, false], [10, 30, 20]));
        m.observed(&demo(), &pass_with(100, [true, true, false], [10, 30, 20]));
        m.observed(&demo(), &pass_with(101, [true, true, true], [10, 40, 20]));
        let text = m.render();
        let of = |metric: &str| {
            line(
                &text,
                &format!("kubectl_etcd_{metric}{{namespace=\"ns\",name=\"demo\"}}"),
            )
            .rsplit(' ')
            .next()
            .unwrap()
            .to_string()
        };
        assert_eq!(of("voters"), "3");
        assert_eq!(of("healthy_voters"), "3");
        assert_eq!(of("learners"), "0");
        assert_eq!(of("db_size_bytes"), "40");
        assert_eq!(of("db_quota_bytes"), (8i64 << 30).to_string());
        assert_eq!(of("leader_changes_total"), "1");
        assert!(
            !text.contains("kubectl_etcd_last_successful_backup_timestamp_seconds{"),
            "no backup yet, no series"
        );
        let finished = jiff::Timestamp::from_second(1_764_547_200).unwrap();
        m.backup(
            &demo(),
            Some(&BackupStatus {
                last_successful_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    finished,
                )),
                ..Default::default()
            }),
            None,
        );
        let text = m.render();
        assert_eq!(
            line(
                &text,
                "kubectl_etcd_last_successful_backup_timestamp_seconds{namespace=\"ns\",name=\"demo\"}"
            ),
            "kubectl_etcd_last_successful_backup_timestamp_seconds{namespace=\"ns\",name=\"demo\"} 1764547200"
        );
        m.forget(&demo());
        assert!(
            !m.render().contains("name=\"demo\""),
            "label sets stay bounded"
        );
    }

    #[test]
    fn a_defragmentation_counts_its_trigger_the_bytes_won_and_its_pause() {
        let m = Metrics::default();
        let mut pass = pass_with(100, [true, true, true], [10, 10, 10]);
        pass.defragmented = Some(crate::engine::Defragmentation {
            member: "demo-1".into(),
            trigger: "policy",
            before: Some(100 << 20),
            after: Some(40 << 20),
            pause: Duration::from_millis(1500),
        });
        m.observed(&demo(), &pass);
        m.observed(&demo(), &pass_with(100, [true, true, true], [10, 10, 10]));
        let text = m.render();
        assert_eq!(
            line(
                &text,
                "kubectl_etcd_defragmentations_total{namespace=\"ns\",name=\"demo\",trigger=\"policy\"}"
            ),
            "kubectl_etcd_defragmentations_total{namespace=\"ns\",name=\"demo\",trigger=\"policy\"} 1"
        );
        assert_eq!(
            line(
                &text,
                "kubectl_etcd_defrag_reclaimed_bytes_total{namespace=\"ns\",name=\"demo\"}"
            ),
            format!(
                "kubectl_etcd_defrag_reclaimed_bytes_total{{namespace=\"ns\",name=\"demo\"}} {}",
                60 << 20
            )
        );
        assert_eq!(
            line(&text, "kubectl_etcd_defrag_pause_seconds_count "),
            "kubectl_etcd_defrag_pause_seconds_count 1"
        );
        m.forget(&demo());
        assert!(!m.render().contains("name=\"demo\""));
    }

    fn value(text: &str, series: &str) -> Option<String> {
        text.lines()
            .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
            .and_then(|l| l.rsplit(' ').next())
            .map(String::from)
    }

    fn cond(
        type_: &str,
        status: &str,
        reason: &str,
    ) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::UNIX_EPOCH,
            ),
        }
    }

    #[test]
    fn conditions_and_the_upgrade_state_keep_one_series_per_type_and_follow_the_reason() {
        let m = Metrics::default();
        let mut p = pass_with(100, [true; 3], [1; 3]);
        p.status.conditions = vec![
            cond("Upgrading", "True", "UpgradingMember"),
            cond("SpecRefused", "False", "AsDesired"),
        ];
        m.observed(&demo(), &p);
        let text = m.render();
        let up = r#"kubectl_etcd_condition{namespace="ns",name="demo",type="Upgrading",reason="UpgradingMember"}"#;
        assert_eq!(value(&text, up).as_deref(), Some("1"));
        let state = |s: &str| {
            format!(r#"kubectl_etcd_upgrade_state{{namespace="ns",name="demo",state="{s}"}}"#)
        };
        assert_eq!(value(&text, &state("upgrading")).as_deref(), Some("1"));
        assert_eq!(value(&text, &state("rolled_back")).as_deref(), Some("0"));
        p.status.conditions = vec![
            cond("Upgrading", "False", "RolledBack"),
            cond("SpecRefused", "True", "ImmutableField"),
        ];
        m.observed(&demo(), &p);
        let text = m.render();
        assert_eq!(value(&text, up), None, "the old reason's series is gone");
        assert_eq!(value(&text, &state("rolled_back")).as_deref(), Some("1"));
        assert_eq!(value(&text, &state("upgrading")).as_deref(), Some("0"));
        assert_eq!(
            value(&text, r#"kubectl_etcd_condition{namespace="ns",name="demo",type="SpecRefused",reason="ImmutableField"}"#).as_deref(),
            Some("1")
        );
        m.forget(&demo());
        assert!(!m.render().contains("name=\"demo\""));
    }

    #[test]
    fn an_invalid_spec_counts_an_error_by_reason_and_sets_degraded_invalid_spec() {
        let m = Metrics::default();
        let e = Error::InvalidSpec {
            namespace: "ns".into(),
            name: "demo".into(),
            source: crate::model::validate(
                &crate::fixtures::cluster("demo")
                    .spec(|s| s.replicas = 0)
                    .build(),
            )
            .unwrap_err(),
        };
        m.failed(&demo(), &e);
        let text = m.render();
        assert_eq!(
            value(
                &text,
                r#"kubectl_etcd_reconcile_errors_total{reason="invalid_spec"}"#
            )
            .as_deref(),
            Some("1")
        );
        assert_eq!(
            value(&text, r#"kubectl_etcd_condition{namespace="ns",name="demo",type="Degraded",reason="InvalidSpec"}"#).as_deref(),
            Some("1")
        );
        assert_eq!(
            value(&text, r#"kubectl_etcd_clusters{phase="Failed"}"#).as_deref(),
            Some("1")
        );
    }

    #[test]
    fn members_are_reported_by_pod_and_dropped_when_they_leave_the_member_list() {
        let m = Metrics::default();
        let mut p = pass_with(100, [true, false, true], [10, 20, 30]);
        if let EtcdView::Reached(c) = &mut p.observed.etcd {
            c.members[2].status.as_mut().unwrap().db_size_in_use = 7;
            c.members[1].alarmed = true;
        }
        m.observed(&demo(), &p);
        let text = m.render();
        let member = |n: u32| {
            format!(
                r#"kubectl_etcd_member_healthy{{namespace="ns",name="demo",member="demo-{n}"}}"#
            )
        };
        assert_eq!(value(&text, &member(0)).as_deref(), Some("1"));
        assert_eq!(value(&text, &member(1)).as_deref(), Some("0"));
        assert_eq!(
            value(
                &text,
                r#"kubectl_etcd_db_size_in_use_bytes{namespace="ns",name="demo"}"#
            )
            .as_deref(),
            Some("7")
        );
        assert_eq!(
            value(&text, r#"kubectl_etcd_alarms{namespace="ns",name="demo"}"#).as_deref(),
            Some("1")
        );
        assert_eq!(
            value(
                &text,
                r#"kubectl_etcd_replicas{namespace="ns",name="demo"}"#
            )
            .as_deref(),
            Some("3")
        );
        if let EtcdView::Reached(c) = &mut p.observed.etcd {
            c.members.pop();
        }
        m.observed(&demo(), &p);
        assert_eq!(value(&m.render(), &member(2)), None);
        p.observed.etcd = EtcdView::NotQueried;
        m.observed(&demo(), &p);
        let text = m.render();
        assert_eq!(
            value(&text, &member(0)).as_deref(),
            Some("0"),
            "nobody answered"
        );
        assert_eq!(
            value(
                &text,
                r#"kubectl_etcd_healthy_voters{namespace="ns",name="demo"}"#
            )
            .as_deref(),
            Some("0")
        );
    }

    #[test]
    fn backups_report_size_interval_and_count_each_new_failure_once() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let m = Metrics::default();
        let at = |s: i64| Some(Time(jiff::Timestamp::from_second(s).unwrap()));
        let mut st = BackupStatus {
            last_successful_time: at(1000),
            last_successful_size: Some(4096),
            last_failed: Some("demo-old".into()),
            last_failed_time: at(900),
            ..Default::default()
        };
        m.backup(&demo(), Some(&st), Some(Duration::from_secs(60)));
        let of = |text: &str, metric: &str| {
            value(
                text,
                &format!(r#"kubectl_etcd_{metric}{{namespace="ns",name="demo"}}"#),
            )
        };
        let text = m.render();
        assert_eq!(
            of(&text, "last_successful_backup_size_bytes").as_deref(),
            Some("4096")
        );
        assert_eq!(of(&text, "backup_interval_seconds").as_deref(), Some("60"));
        assert_eq!(
            of(&text, "backup_failing").as_deref(),
            Some("0"),
            "the failure is older than the success"
        );
        assert_eq!(
            of(&text, "backup_failures_total").as_deref(),
            Some("0"),
            "an old failure found at start"
        );
        st.last_failed = Some("demo-new".into());
        st.last_failed_time = at(1100);
        m.backup(&demo(), Some(&st), Some(Duration::from_secs(60)));
        m.backup(&demo(), Some(&st), None);
        let text = m.render();
        assert_eq!(of(&text, "backup_failing").as_deref(), Some("1"));
        assert_eq!(of(&text, "backup_failures_total").as_deref(), Some("1"));
        assert_eq!(
            of(&text, "backup_interval_seconds"),
            None,
            "no schedule, no interval"
        );
    }

    #[test]
    fn actions_count_by_step_kind() {
        let m = Metrics::default();
        m.acted(&demo(), &Step::UpdateTemplate { replicas: 3 });
        m.acted(&demo(), &Step::UpdateTemplate { replicas: 3 });
        m.acted(&demo(), &Step::ApplySupportingObjects);
        let text = m.render();
        let of = |step: &str| {
            value(
                &text,
                &format!(
                    r#"kubectl_etcd_actions_total{{namespace="ns",name="demo",step="{step}"}}"#
                ),
            )
        };
        assert_eq!(of("updateTemplate").as_deref(), Some("2"));
        assert_eq!(of("applySupportingObjects").as_deref(), Some("1"));
        m.forget(&demo());
        assert!(!m.render().contains("step="));
    }

    #[test]
    fn a_schedule_gives_its_interval_suspended_or_not() {
        let now = jiff::Timestamp::from_second(1_764_547_230).unwrap();
        // the plan's schedule, as validate parsed it (suspended or not: the interval is the same)
        let spec = |schedule: &str| crate::archive::schedule::parse(schedule).unwrap();
        assert_eq!(
            schedule_interval(Some(&spec("*/5 * * * *")), now),
            Some(Duration::from_secs(300))
        );
        assert_eq!(
            schedule_interval(Some(&spec("0 3 * * *")), now),
            Some(Duration::from_secs(86400))
        );
        assert_eq!(schedule_interval(None, now), None);
    }

    #[test]
    fn probes_answer_by_path_and_readiness() {
        let m = Metrics::default();
        let status = |method: Method, path: &str| respond(&m, &method, path).status();
        assert_eq!(status(Method::GET, "/healthz"), StatusCode::OK);
        assert_eq!(
            status(Method::GET, "/readyz"),
            StatusCode::SERVICE_UNAVAILABLE
        );
        m.set_ready(true);
        assert_eq!(status(Method::GET, "/readyz"), StatusCode::OK);
        assert_eq!(
            respond(&m, &Method::GET, "/metrics").headers()[CONTENT_TYPE],
            "text/plain; version=0.0.4; charset=utf-8"
        );
        assert_eq!(
            status(Method::POST, "/metrics"),
            StatusCode::METHOD_NOT_ALLOWED
        );
        assert_eq!(status(Method::GET, "/nope"), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn the_server_speaks_http_over_tcp() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let m = Arc::new(Metrics::default());
        let server = tokio::spawn(serve(listener, m));
        let get = |request: &'static [u8]| async move {
            let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
            conn.write_all(request).await.unwrap();
            let mut out = String::new();
            conn.read_to_string(&mut out).await.unwrap();
            out
        };
        let out = get(b"GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        let body = out.split("\r\n\r\n").nth(1).unwrap();
        assert!(
            out.contains(&format!("content-length: {}\r\n", body.len())),
            "{out}"
        );
        assert!(body.contains("kubectl_etcd_leader 0"));
        let bad = get(b"NONSENSE\r\n\r\n").await;
        assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
        server.abort();
    }
}
