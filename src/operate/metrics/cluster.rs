//! The per-cluster series a pass gives: members and their health, leader changes, database
//! size and quota, alarms, conditions, the upgrade state and the engine's defragmentations.

use std::collections::BTreeSet;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use super::{ClusterLabels, Metrics, Seen, count, family};
use crate::api::{Reason, condition};
use crate::engine::{Defragmentation, Pass};
use crate::model::{ClusterView, DEFAULT_QUOTA_BYTES, EtcdView, MemberView};

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

/// The `member` label: the member's pod, else the name etcd reports, else its id.
fn member_label(cluster: &str, m: &MemberView) -> String {
    match (m.ordinal, m.name.is_empty()) {
        (Some(o), _) => crate::objects::pod_name(cluster, o),
        (None, false) => m.name.clone(),
        (None, true) => format!("{:016x}", m.id),
    }
}

/// The families of this file.
pub(super) struct Clusters {
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
    defrags: Family<DefragLabels, Counter>,
    defrag_reclaimed: Family<ClusterLabels, Counter>,
    defrag_pause: Histogram,
}

impl Clusters {
    pub(super) fn register(r: &mut Registry) -> Clusters {
        let defrag_pause = Histogram::new(PAUSE_BUCKETS);
        r.register_with_unit(
            "defrag_pause",
            "How long a member answered nobody while it was defragmented",
            Unit::Seconds,
            defrag_pause.clone(),
        );
        Clusters {
            replicas: family(r, "replicas", "Voting members the spec asks for", None),
            voters: family(r, "voters", "Voting members of the cluster", None),
            healthy_voters: family(
                r,
                "healthy_voters",
                "Voting members that answer healthy",
                None,
            ),
            learners: family(
                r,
                "learners",
                "Non-voting members (learners) of the cluster",
                None,
            ),
            member_healthy: family(
                r,
                "member_healthy",
                "1 when the member answers healthy, per member of the member list",
                None,
            ),
            leader_changes: family(
                r,
                "leader_changes",
                "Changes of the etcd leader this operator observed",
                None,
            ),
            db_size: family(
                r,
                "db_size_bytes",
                "Largest backend database among the members, in bytes",
                None,
            ),
            db_in_use: family(
                r,
                "db_size_in_use_bytes",
                "Largest logically used part of a member's database (the rest is free pages a defragmentation gives back), in bytes",
                None,
            ),
            db_quota: family(
                r,
                "db_quota_bytes",
                "The backend quota (--quota-backend-bytes) of the cluster, in bytes",
                None,
            ),
            alarms: family(r, "alarms", "Members with a raised alarm (NOSPACE)", None),
            conditions: family(
                r,
                "condition",
                "The cluster's status conditions: 1 while true, 0 while false, one series per type with its current reason",
                None,
            ),
            upgrade: family(
                r,
                "upgrade_state",
                "Where a version change stands (idle, upgrading, downgrading, rolling_back, rolled_back, blocked): 1 for the current state",
                None,
            ),
            defrags: family(
                r,
                "defragmentations",
                "Members defragmented by the engine, by cluster and trigger (nospace, requested, policy)",
                None,
            ),
            defrag_reclaimed: family(
                r,
                "defrag_reclaimed",
                "Bytes the engine's defragmentations gave back to the file system",
                Some(Unit::Bytes),
            ),
            defrag_pause,
        }
    }

    /// Drops the label sets of a deleted cluster.
    pub(super) fn forget(&self, cluster: &ClusterLabels, seen: &Seen) {
        for f in [
            &self.replicas,
            &self.voters,
            &self.healthy_voters,
            &self.learners,
            &self.db_size,
            &self.db_in_use,
            &self.db_quota,
            &self.alarms,
        ] {
            f.remove(cluster);
        }
        self.leader_changes.remove(cluster);
        self.defrag_reclaimed.remove(cluster);
        let (namespace, name) = (&cluster.namespace, &cluster.name);
        for trigger in DEFRAG_TRIGGERS {
            self.defrags.remove(&DefragLabels {
                namespace: namespace.clone(),
                name: name.clone(),
                trigger,
            });
        }
        for member in &seen.members {
            self.member_healthy.remove(&MemberLabels {
                namespace: namespace.clone(),
                name: name.clone(),
                member: member.clone(),
            });
        }
        for (r#type, reason) in &seen.conditions {
            self.conditions.remove(&ConditionLabels {
                namespace: namespace.clone(),
                name: name.clone(),
                r#type: r#type.clone(),
                reason: reason.clone(),
            });
        }
        for state in UPGRADE_STATES {
            self.upgrade.remove(&StateLabels {
                namespace: namespace.clone(),
                name: name.clone(),
                state: state.into(),
            });
        }
    }
}

impl Metrics {
    pub(super) fn condition(&self, cluster: &ClusterLabels, type_: &str, reason: &str, on: bool) {
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
            self.clusters.conditions.remove(&labels(&old));
        }
        self.clusters
            .conditions
            .get_or_create(&labels(reason))
            .set(i64::from(on));
    }

    /// Records what a pass over `cluster` saw: its phase, conditions, the per-cluster gauges and
    /// its backups.
    pub fn observed(&self, cluster: &ClusterLabels, pass: &Pass) {
        self.phase(cluster, pass.status.phase);
        if let Some(d) = &pass.defragmented {
            self.defragmented(cluster, d);
        }
        let g = &self.clusters;
        g.replicas
            .get_or_create(cluster)
            .set(i64::from(pass.desired.replicas));
        for c in &pass.status.conditions {
            self.condition(cluster, &c.type_, &c.reason, c.status == "True");
            if c.type_ == condition::UPGRADING {
                let now = upgrade_state(&c.reason);
                for state in UPGRADE_STATES {
                    g.upgrade
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
        g.db_quota.get_or_create(cluster).set(quota);
        match &pass.observed.etcd {
            EtcdView::Reached(c) => self.reached(cluster, pass, c),
            _ => self.unreached(cluster),
        }
        self.backups_of(cluster, pass);
    }

    fn defragmented(&self, cluster: &ClusterLabels, d: &Defragmentation) {
        let g = &self.clusters;
        g.defrags
            .get_or_create(&DefragLabels {
                namespace: cluster.namespace.clone(),
                name: cluster.name.clone(),
                trigger: d.trigger,
            })
            .inc();
        g.defrag_reclaimed.get_or_create(cluster).inc_by(d.won());
        g.defrag_pause.observe(d.pause.as_secs_f64());
    }

    fn member_labels(cluster: &ClusterLabels, member: String) -> MemberLabels {
        MemberLabels {
            namespace: cluster.namespace.clone(),
            name: cluster.name.clone(),
            member,
        }
    }

    /// No member answered: no voter is healthy, nor any member seen before.
    fn unreached(&self, cluster: &ClusterLabels) {
        let g = &self.clusters;
        g.healthy_voters.get_or_create(cluster).set(0);
        let gone = self.seen(cluster, |s| std::mem::take(&mut s.members));
        for member in gone {
            g.member_healthy
                .get_or_create(&Self::member_labels(cluster, member))
                .set(0);
        }
    }

    /// The gauges of the member list `c` a pass read.
    fn reached(&self, cluster: &ClusterLabels, pass: &Pass, c: &ClusterView) {
        let g = &self.clusters;
        g.voters
            .get_or_create(cluster)
            .set(count(c.voters().count()));
        g.healthy_voters
            .get_or_create(cluster)
            .set(count(c.voters().filter(|m| m.healthy).count()));
        g.learners
            .get_or_create(cluster)
            .set(count(c.learners().count()));
        let now: BTreeSet<String> = c
            .members
            .iter()
            .map(|m| member_label(&cluster.name, m))
            .collect();
        for m in &c.members {
            g.member_healthy
                .get_or_create(&Self::member_labels(
                    cluster,
                    member_label(&cluster.name, m),
                ))
                .set(i64::from(m.healthy));
        }
        let before = self.seen(cluster, |s| std::mem::replace(&mut s.members, now.clone()));
        for gone in before.difference(&now) {
            g.member_healthy
                .remove(&Self::member_labels(cluster, gone.clone()));
        }
        let largest = |f: fn(&crate::model::MemberStatusView) -> i64| {
            c.members
                .iter()
                .filter_map(|m| m.status.as_ref().map(f))
                .max()
                .unwrap_or(0)
        };
        g.db_size.get_or_create(cluster).set(largest(|s| s.db_size));
        g.db_in_use
            .get_or_create(cluster)
            .set(largest(|s| s.db_size_in_use));
        let alarmed = c
            .members
            .iter()
            .filter(|m| m.alarmed || pass.observed.nospace.contains(&m.id))
            .count();
        g.alarms.get_or_create(cluster).set(count(alarmed));
        let changed = self.seen(cluster, |seen| {
            let changed = seen.leader.is_some() && c.leader.is_some() && seen.leader != c.leader;
            if c.leader.is_some() {
                seen.leader = c.leader;
            }
            changed
        });
        let changes = g.leader_changes.get_or_create(cluster);
        if changed {
            changes.inc();
        }
    }
}
