//! The planner: desired and observed state in, the next `Step` out.
//!
//! Pure: no async, no clock, no client. A crashed pass is just another observed state, so every
//! half-done change (a learner without a pod, a pod without a member, a StatefulSet larger than
//! the member list, a leftover volume) has a rule here that repairs it.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::api::reason;
use crate::model::{ClusterView, Desired, EtcdView, MemberView, Observed};
use crate::objects::{self, config_key};

/// The next thing the engine does for one cluster: at most one change to the world.
///
/// ```text
///   (no StatefulSet) ──Bootstrap──▶ members start together ──WriteConfig(bootstrapped)──▶ Idle
///   scale up:   AddLearner(n) ─▶ WriteConfig(list) ─▶ ResizeStatefulSet(n+1) ─▶ PromoteLearner ─▶ Idle
///   scale down: [MoveLeader] ─▶ RemoveMember(n-1) ─▶ ResizeStatefulSet(n-1) ─▶ DeleteVolume(n-1) ─▶ Idle
///   template:   UpdateTemplate ─▶ RestartMember (one pod at a time, leader last) ─▶ Idle
///   anything not ready yet: Wait;  anything unsafe or ambiguous: Hold (no action, Degraded)
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "camelCase")]
pub enum Step {
    /// Create the member config, Services, disruption budget and StatefulSet of a new cluster.
    Bootstrap { replicas: u32 },
    /// (Re)create the Services and disruption budget.
    ApplySupportingObjects,
    /// Write the member-config ConfigMap.
    WriteConfig {
        data: BTreeMap<String, String>,
        why: ConfigChange,
    },
    /// Apply a changed pod template (no pod restarts by itself: OnDelete).
    UpdateTemplate { replicas: u32 },
    /// Add the member at `ordinal` to etcd as a non-voting learner.
    AddLearner {
        ordinal: u32,
        name: String,
        peer_url: String,
    },
    /// Set the StatefulSet's size (creates it when missing).
    ResizeStatefulSet { from: u32, to: u32 },
    /// Make a caught-up learner a voter.
    PromoteLearner { id: u64, name: String },
    /// Hand leadership to another voter before its member is removed or restarted.
    MoveLeader {
        from: String,
        to_id: u64,
        to: String,
    },
    /// Remove a member from etcd.
    RemoveMember { id: u64, name: String },
    /// Delete the data volume of a member that no longer exists, so it can never rejoin.
    DeleteVolume { ordinal: u32, claim: String },
    /// Delete a member's pod so it restarts with the current template.
    RestartMember { ordinal: u32, pod: String },
    /// Nothing to do until the world moves on.
    Wait {
        reason: &'static str,
        message: String,
    },
    /// Acting would be unsafe or ambiguous: report and change nothing until a human or the
    /// world fixes it.
    Hold {
        reason: &'static str,
        message: String,
    },
    /// Spec says paused.
    Paused,
    /// Converged.
    Idle,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ConfigChange {
    /// The initial members formed the cluster.
    Bootstrapped,
    /// Join entries changed (a learner was added or started).
    Joins,
    /// The config was missing or damaged.
    Repair,
}

impl Step {
    /// True when the step changes the world.
    pub fn is_change(&self) -> bool {
        !matches!(
            self,
            Step::Wait { .. } | Step::Hold { .. } | Step::Paused | Step::Idle
        )
    }
    /// True when the step changes etcd membership.
    pub fn is_membership_change(&self) -> bool {
        matches!(
            self,
            Step::AddLearner { .. } | Step::PromoteLearner { .. } | Step::RemoveMember { .. }
        )
    }
    /// Condition reason describing this step.
    pub fn reason(&self) -> &'static str {
        match self {
            Step::Bootstrap { .. } => reason::BOOTSTRAPPING,
            Step::ApplySupportingObjects => reason::REPAIRING,
            Step::WriteConfig {
                why: ConfigChange::Bootstrapped,
                ..
            } => reason::BOOTSTRAPPING,
            Step::WriteConfig {
                why: ConfigChange::Joins,
                ..
            } => reason::ADDING_LEARNER,
            Step::WriteConfig {
                why: ConfigChange::Repair,
                ..
            } => reason::REPAIRING,
            Step::UpdateTemplate { .. } | Step::RestartMember { .. } => reason::ROLLING_MEMBERS,
            Step::AddLearner { .. } => reason::ADDING_LEARNER,
            Step::ResizeStatefulSet { .. } => reason::RESIZING_WORKLOAD,
            Step::PromoteLearner { .. } => reason::PROMOTING_LEARNER,
            Step::MoveLeader { .. } => reason::MOVING_LEADER,
            Step::RemoveMember { .. } => reason::REMOVING_MEMBER,
            Step::DeleteVolume { .. } => reason::CLEANING_UP,
            Step::Wait { reason, .. } | Step::Hold { reason, .. } => reason,
            Step::Paused => reason::PAUSED,
            Step::Idle => reason::AS_DESIRED,
        }
    }
}

/// One sentence, shared by CLI progress, the condition message and the Event.
impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Bootstrap { replicas } => {
                write!(f, "bootstrap a new cluster of {replicas} members")
            }
            Step::ApplySupportingObjects => {
                write!(f, "apply the Services and the disruption budget")
            }
            Step::WriteConfig { why, .. } => match why {
                ConfigChange::Bootstrapped => {
                    write!(f, "record that the initial members formed the cluster")
                }
                ConfigChange::Joins => write!(f, "update the member list new members join with"),
                ConfigChange::Repair => write!(f, "repair the member config"),
            },
            Step::UpdateTemplate { .. } => write!(f, "apply the changed member pod template"),
            Step::AddLearner { name, .. } => write!(f, "add {name} as a learner"),
            Step::ResizeStatefulSet { from, to } => {
                write!(f, "resize the StatefulSet from {from} to {to}")
            }
            Step::PromoteLearner { name, .. } => write!(f, "promote learner {name} to voter"),
            Step::MoveLeader { from, to, .. } => write!(f, "move leadership from {from} to {to}"),
            Step::RemoveMember { name, .. } => write!(f, "remove member {name}"),
            Step::DeleteVolume { claim, .. } => {
                write!(f, "delete volume {claim} of a removed member")
            }
            Step::RestartMember { pod, .. } => write!(f, "restart {pod} with the new template"),
            Step::Wait { message, .. } => write!(f, "waiting: {message}"),
            Step::Hold { message, .. } => write!(f, "holding: {message}"),
            Step::Paused => write!(f, "paused: observing only"),
            Step::Idle => write!(f, "converged"),
        }
    }
}

/// Members needed for a majority of `voters`.
pub fn quorum(voters: usize) -> usize {
    voters / 2 + 1
}

fn wait(reason: &'static str, message: impl Into<String>) -> Step {
    Step::Wait {
        reason,
        message: message.into(),
    }
}
fn hold(reason: &'static str, message: impl Into<String>) -> Step {
    Step::Hold {
        reason,
        message: message.into(),
    }
}

/// A learner may be promoted once its log is within 10% of the leader's (etcd's own rule).
fn caught_up(learner: &MemberView, leader: Option<&MemberView>) -> bool {
    match (
        learner.status.as_ref(),
        leader.and_then(|l| l.status.as_ref()),
    ) {
        (Some(l), Some(lead)) => l.raft_index as u128 * 10 >= lead.raft_index as u128 * 9,
        _ => false,
    }
}

/// The member-config data the world should have now.
///
/// Before the bootstrap it stays as written (state "new", the initial members). Once every
/// member has started (published its client URLs) it says "existing" and lists the current
/// members (learners included: etcd checks the count and URLs), only those yet to start under
/// their own name: exactly what a member starting without data must present to join as the
/// member it was added as, and nothing a member that lost its data could join with.
pub fn wanted_config(d: &Desired, o: &Observed, c: &ClusterView) -> BTreeMap<String, String> {
    let mut data = o.config.clone().unwrap_or_default();
    if !data.contains_key(config_key::INITIAL_CLUSTER)
        || !data.contains_key(config_key::INITIAL_TOKEN)
    {
        // Lost config: a cluster that answers is formed; rebuild the fixed keys from the spec.
        data =
            objects::bootstrap_config(d, o.statefulset.as_ref().map_or(d.replicas, |s| s.replicas));
        data.insert(
            config_key::INITIAL_CLUSTER_STATE.into(),
            objects::STATE_EXISTING.into(),
        );
    }
    if !objects::is_bootstrapped(&data) && c.members.iter().all(|m| m.started) {
        data.insert(
            config_key::INITIAL_CLUSTER_STATE.into(),
            objects::STATE_EXISTING.into(),
        );
    }
    // Once formed, the list names only members yet to start under their own name (see
    // `objects::join_list`): a member that lost its data can never rejoin as a voter.
    // With nobody to join, a list that already names no started member is left alone (a removal
    // needs no config write).
    let pending = c.members.iter().any(|m| !m.started);
    let names_a_started_member = data.get(config_key::INITIAL_CLUSTER).is_some_and(|list| {
        list.split(',').any(|entry| {
            let name = entry.split('=').next().unwrap_or_default();
            objects::ordinal_of_pod(&d.name, name)
                .and_then(|o| c.member_at(o))
                .is_some_and(|m| m.started)
        })
    });
    if objects::is_bootstrapped(&data) && (pending || names_a_started_member) {
        let ordinals = c.members.iter().filter_map(|m| m.ordinal);
        data.insert(
            config_key::INITIAL_CLUSTER.into(),
            objects::join_list(d, ordinals, |o| c.member_at(o).is_some_and(|m| !m.started)),
        );
    }
    data
}

/// Decides the next step. See `Step` for the state machine.
pub fn plan(d: &Desired, o: &Observed) -> Step {
    if d.paused {
        return Step::Paused;
    }
    let Some(sts) = &o.statefulset else {
        if o.config.is_none() && o.volumes.is_empty() {
            return Step::Bootstrap {
                replicas: d.replicas,
            };
        }
        // The StatefulSet was deleted under a formed cluster: bring the members back on their
        // volumes (their data makes them start as themselves).
        let to = o.volumes.keys().max().map_or(d.replicas, |m| m + 1);
        return Step::ResizeStatefulSet { from: 0, to };
    };
    if !o.supporting_objects {
        return Step::ApplySupportingObjects;
    }
    let s = sts.replicas;
    if sts.template_hash.as_deref() != Some(objects::template_hash(d).as_str()) {
        return Step::UpdateTemplate { replicas: s };
    }
    let bootstrapped = o.config.as_ref().is_some_and(objects::is_bootstrapped);
    let c = match &o.etcd {
        EtcdView::Split { cluster_ids } => {
            let ids: Vec<String> = cluster_ids.iter().map(|i| format!("{i:016x}")).collect();
            return hold(
                reason::SPLIT_BRAIN,
                format!(
                    "members answer with different cluster ids ({}); fix by hand, the engine will not act",
                    ids.join(", ")
                ),
            );
        }
        EtcdView::NotQueried | EtcdView::Unreachable { .. } if !bootstrapped => {
            return wait(
                reason::BOOTSTRAPPING,
                format!("members are starting{}", pod_trouble(o)),
            );
        }
        EtcdView::NotQueried | EtcdView::Unreachable { .. }
            if o.volumes.keys().max().is_some_and(|m| m + 1 > s) =>
        {
            // Nobody answers and members' volumes lie beyond the StatefulSet (someone scaled it
            // down by hand): bring those members back on their data.
            let to = o.volumes.keys().max().map_or(s, |m| m + 1);
            return Step::ResizeStatefulSet { from: s, to };
        }
        EtcdView::NotQueried => {
            return wait(
                reason::ETCD_UNREACHABLE,
                format!("no member pod is running{}", pod_trouble(o)),
            );
        }
        EtcdView::Unreachable { errors } => {
            return wait(
                reason::ETCD_UNREACHABLE,
                format!(
                    "no member answered: {}",
                    errors.first().map_or("", |e| e.as_str())
                ),
            );
        }
        EtcdView::Reached(c) => c,
    };
    if let Some(m) = c.members.iter().find(|m| m.ordinal.is_none()) {
        return hold(
            reason::STRANDED_MEMBER,
            format!(
                "member {} ({}) was not added by kubectl-etcd; remove it with etcdctl",
                m.name, m.peer_url
            ),
        );
    }
    let config = wanted_config(d, o, c);
    if o.config.as_ref() != Some(&config) {
        let why = if o
            .config
            .as_ref()
            .is_none_or(|c| !c.contains_key(config_key::INITIAL_CLUSTER))
        {
            ConfigChange::Repair
        } else if !bootstrapped {
            ConfigChange::Bootstrapped
        } else {
            ConfigChange::Joins
        };
        return Step::WriteConfig { data: config, why };
    }
    if !bootstrapped {
        return wait(reason::BOOTSTRAPPING, "initial members are starting");
    }
    if let Some((ord, pod)) = o.pods.iter().find(|(o, p)| **o >= s && p.terminating) {
        return wait(
            reason::RESIZING_WORKLOAD,
            format!("pod {} of ordinal {ord} is terminating", pod.name),
        );
    }
    let healthy_voters = c.voters().filter(|m| m.healthy).count();
    let voters = c.voters().count();

    // 1. Members without a StatefulSet slot (highest first): a learner added before the resize,
    //    or one left behind by a reversed scale-up.
    let mut beyond: Vec<&MemberView> = c
        .members
        .iter()
        .filter(|m| m.ordinal.unwrap_or(0) >= s)
        .collect();
    beyond.sort_by_key(|m| std::cmp::Reverse(m.ordinal));
    if let Some(m) = beyond.first() {
        let ord = m.ordinal.unwrap_or(0);
        if m.learner && ord == s && ord < d.replicas && beyond.len() == 1 {
            if o.volumes.contains_key(&ord) {
                // A volume from an earlier member of this ordinal would make the learner start
                // with foreign data. Take the learner out; the volume is deleted next.
                return Step::RemoveMember {
                    id: m.id,
                    name: member_name(d, m),
                };
            }
            return Step::ResizeStatefulSet { from: s, to: s + 1 };
        }
        if m.learner {
            return Step::RemoveMember {
                id: m.id,
                name: member_name(d, m),
            };
        }
        // A voter without a pod slot: only removed when the rest keeps a healthy majority.
        let rest_healthy = c.voters().filter(|v| v.id != m.id && v.healthy).count();
        if rest_healthy >= quorum(voters - 1) {
            return Step::RemoveMember {
                id: m.id,
                name: member_name(d, m),
            };
        }
        return hold(
            reason::QUORUM_AT_RISK,
            format!(
                "voter {} has no pod, and removing it would leave {rest_healthy} healthy of {} voters",
                member_name(d, m),
                voters - 1
            ),
        );
    }

    // 2. StatefulSet slots without a member: the top one is shrunk away (a removed member, or one
    //    whose add never happened); a hole below the top needs a human.
    if let Some(ord) = (0..s).rev().find(|o| c.member_at(*o).is_none()) {
        if ord == s - 1 {
            return Step::ResizeStatefulSet { from: s, to: s - 1 };
        }
        return hold(
            reason::STRANDED_MEMBER,
            format!(
                "pod {} has no etcd member; delete its volume {} and pod to let it be re-added",
                objects::pod_name(&d.name, ord),
                objects::volume_name(&d.name, ord)
            ),
        );
    }

    // 3. Volumes of ordinals beyond the StatefulSet belong to removed members: delete them so
    //    those members can never come back with stale data.
    if let Some((ord, v)) = o.volumes.iter().find(|(o, _)| **o >= s) {
        if v.terminating {
            return wait(
                reason::CLEANING_UP,
                format!("volume {} is being deleted", v.name),
            );
        }
        if !o.pods.contains_key(ord) {
            return Step::DeleteVolume {
                ordinal: *ord,
                claim: v.name.clone(),
            };
        }
        return wait(
            reason::CLEANING_UP,
            format!(
                "pod of removed member {} is still present",
                objects::pod_name(&d.name, *ord)
            ),
        );
    }

    // 4. A learner in its slot is promoted once caught up (or removed when no longer wanted).
    let target = d.replicas as usize;
    if let Some(l) = c.learners().next() {
        let name = member_name(d, l);
        if voters >= target {
            return Step::RemoveMember { id: l.id, name };
        }
        if !l.started || l.status.is_none() {
            return wait(
                reason::ADDING_LEARNER,
                format!("learner {name} is starting"),
            );
        }
        if !caught_up(l, c.leader_member()) {
            return wait(
                reason::PROMOTING_LEARNER,
                format!("learner {name} is catching up with the leader"),
            );
        }
        return Step::PromoteLearner { id: l.id, name };
    }

    // 5. Scale, one member at a time.
    if voters < target {
        if healthy_voters < voters {
            return wait(
                reason::MEMBERS_UNHEALTHY,
                format!(
                    "{healthy_voters} of {voters} members are healthy; adding a member waits for all"
                ),
            );
        }
        let ord = s;
        return Step::AddLearner {
            ordinal: ord,
            name: objects::pod_name(&d.name, ord),
            peer_url: objects::peer_url(&d.name, &d.namespace, ord),
        };
    }
    if voters > target {
        let Some(victim) = c.member_at(s - 1) else {
            return hold(
                reason::STRANDED_MEMBER,
                "member list and StatefulSet disagree",
            );
        };
        let rest_healthy = c
            .voters()
            .filter(|v| v.id != victim.id && v.healthy)
            .count();
        if rest_healthy < quorum(voters - 1) {
            return hold(
                reason::QUORUM_AT_RISK,
                format!(
                    "removing {} would leave {rest_healthy} healthy of {} voters (quorum {})",
                    member_name(d, victim),
                    voters - 1,
                    quorum(voters - 1)
                ),
            );
        }
        if c.leader == Some(victim.id) {
            return move_leader_off(d, c, victim);
        }
        return Step::RemoveMember {
            id: victim.id,
            name: member_name(d, victim),
        };
    }

    // 6. Members on an old template restart one at a time, highest ordinal first, leader last.
    if let Some(rev) = &sts.update_revision {
        let stale: Vec<u32> = o
            .pods
            .iter()
            .filter(|(_, p)| p.revision.as_ref().is_some_and(|r| r != rev))
            .map(|(o, _)| *o)
            .collect();
        if !stale.is_empty() {
            if healthy_voters < voters || o.pods.values().any(|p| !p.ready) {
                return wait(
                    reason::ROLLING_MEMBERS,
                    "a restart waits until every member is healthy and ready",
                );
            }
            let leader_ord = c.leader_member().and_then(|l| l.ordinal);
            let pick = stale
                .iter()
                .rev()
                .find(|o| Some(**o) != leader_ord)
                .or(stale.first())
                .copied()
                .unwrap_or(0);
            if let Some(m) = c
                .member_at(pick)
                .filter(|_| Some(pick) == leader_ord && voters > 1)
            {
                return move_leader_off(d, c, m);
            }
            return Step::RestartMember {
                ordinal: pick,
                pod: objects::pod_name(&d.name, pick),
            };
        }
    }

    if healthy_voters < voters {
        let sick: Vec<String> = c
            .voters()
            .filter(|m| !m.healthy)
            .map(|m| member_name(d, m))
            .collect();
        return wait(
            reason::MEMBERS_UNHEALTHY,
            format!("unhealthy: {}", sick.join(", ")),
        );
    }
    Step::Idle
}

/// ` (demo-0: ImagePullBackOff, …)` for pods whose container waits for a reason, else empty.
fn pod_trouble(o: &Observed) -> String {
    let trouble: Vec<String> = o
        .pods
        .values()
        .filter_map(|p| {
            p.waiting_reason
                .as_ref()
                .filter(|r| *r != "ContainerCreating")
                .map(|r| format!("{}: {r}", p.name))
        })
        .collect();
    if trouble.is_empty() {
        String::new()
    } else {
        format!(" ({})", trouble.join(", "))
    }
}

fn move_leader_off(d: &Desired, c: &ClusterView, from: &MemberView) -> Step {
    match c
        .voters()
        .filter(|m| m.id != from.id && m.healthy)
        .min_by_key(|m| m.ordinal)
    {
        Some(to) => Step::MoveLeader {
            from: member_name(d, from),
            to_id: to.id,
            to: member_name(d, to),
        },
        None => hold(
            reason::QUORUM_AT_RISK,
            format!(
                "no healthy voter can take over leadership from {}",
                member_name(d, from)
            ),
        ),
    }
}

/// The member's name as the engine knows it (etcd reports none before a member first starts).
pub fn member_name(d: &Desired, m: &MemberView) -> String {
    match m.ordinal {
        Some(o) => objects::pod_name(&d.name, o),
        None if !m.name.is_empty() => m.name.clone(),
        None => crate::etcd::fmt_id(m.id),
    }
}

mod status;
pub use status::derive_status;

#[cfg(test)]
mod sim;
#[cfg(test)]
mod tests;
