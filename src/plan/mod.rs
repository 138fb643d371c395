//! The planner: desired and observed state in, the next `Step` out.
//!
//! Pure: no async, no clock, no client. A crashed pass is just another observed state, so every
//! half-done change (a learner without a pod, a pod without a member, a StatefulSet larger than
//! the member list, a leftover volume) has a rule here that repairs it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use crate::api::Reason;
use crate::model::{
    ClusterView, Desired, EtcdView, MemberView, Observed, RestoreMark, RestorePodView, Version,
    fmt_id,
};
use crate::objects::{self, config_key};

/// The next thing the engine does for one cluster: at most one change to the world.
///
/// ```text
///   (no StatefulSet) ──Bootstrap──▶ members start together ──WriteConfig(bootstrapped)──▶ Idle
///   scale up:   AddLearner(n) ─▶ WriteConfig(list) ─▶ ResizeStatefulSet(n+1) ─▶ PromoteLearner ─▶ Idle
///   scale down: [MoveLeader] ─▶ RemoveMember(n-1) ─▶ ResizeStatefulSet(n-1) ─▶ DeleteVolume(n-1) ─▶ Idle
///   template:   UpdateTemplate ─▶ RestartMember (one pod at a time, leader last) ─▶ Idle
///   lost member (no/damaged/foreign data, after the grace period, rest healthy):
///               RemoveMember ─▶ [WipeMember] ─▶ AddLearner(same ordinal) ─▶ WriteConfig(list)
///               ─▶ [RestartMember(rejoin)] ─▶ PromoteLearner ─▶ Idle
///   lost objects: WriteConfig(repair from volumes / last status) ─▶ ResizeStatefulSet ─▶ …
///   NOSPACE:    Compact ─▶ Defragment (one member at a time, leader last) ─▶ DisarmNospace
///               [still full: RaiseQuota once ─▶ UpdateTemplate ─▶ RestartMember… ─▶ DisarmNospace]
///               (see `nospace`)
///   anything not ready yet: Wait;  anything unsafe or ambiguous: Hold (no action, Degraded);
///   quorum lost: Hold(QuorumLost) until `kubectl etcd recover`
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
    /// Delete a member's pod so the StatefulSet starts it again.
    RestartMember {
        ordinal: u32,
        pod: String,
        why: Restart,
    },
    /// Delete the volume, then the pod, of an ordinal whose member was removed as lost, so that
    /// it comes back empty and can be re-added as a learner.
    WipeMember {
        ordinal: u32,
        /// `None` with ephemeral storage (deleting the pod is the wipe).
        claim: Option<String>,
        pod: String,
        /// The pod is on a node that is gone: deleted without waiting for its kubelet (which
        /// never confirms), as `kubectl delete --force` would. Only for a member already removed.
        force: bool,
    },
    /// Create the seed member's volume and the one-shot pod that restores the snapshot into it.
    RestoreSeed { url: String },
    /// Delete the finished restore pod.
    DeleteRestorePod { pod: String },
    /// An upgraded member did not become healthy in time: record the rollback, so that the
    /// template runs `from` again (see `upgrade`).
    RollBack {
        member: String,
        ordinal: u32,
        from: Version,
        to: Version,
        why: String,
    },
    /// etcd's downgrade API, sent to the leader: `Enable` (validated first) lowers the cluster
    /// version to `target`'s minor before any member runs it; `Cancel` ends a downgrade no
    /// longer wanted (see `upgrade::downgrade_gate`).
    Downgrade {
        action: DowngradeStep,
        target: Version,
    },
    /// A `spec.version` change came without a pre-upgrade snapshot (a plain `kubectl apply`):
    /// take one to `destination`, verified, and record it for `to` before any member changes.
    PreUpgradeSnapshot { to: Version, destination: String },
    /// NOSPACE: compact the keyspace history up to `revision`, through the leader.
    Compact { revision: i64 },
    /// NOSPACE: defragment one member (it answers nobody meanwhile).
    Defragment { ordinal: u32, id: u64, name: String },
    /// NOSPACE: disarm the alarm of these members (every member is below 90 % of its quota).
    DisarmNospace { members: Vec<u64> },
    /// NOSPACE: still full after compaction and defragmentation: record a quota raised once by
    /// half (`status.maintenance.quotaRaised`), which `nospace::settle` puts into the template.
    RaiseQuota { from: i64, to: i64 },
    /// Nothing to do until the world moves on.
    Wait { reason: Reason, message: String },
    /// Acting would be unsafe or ambiguous: report and change nothing until a human or the
    /// world fixes it.
    Hold { reason: Reason, message: String },
    /// Spec says paused.
    Paused,
    /// Converged.
    Idle,
}

/// Why a member's pod is restarted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Restart {
    /// It runs an older pod template.
    NewTemplate,
    /// A learner whose pod crash-looped before its join entry existed: start it now rather
    /// than after the back-off.
    Rejoin,
    /// Its volume was deleted under it: a new pod gets a new volume.
    NewVolume,
}

/// What `Step::Downgrade` asks etcd for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DowngradeStep {
    Enable,
    Cancel,
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
    pub fn reason(&self) -> Reason {
        match self {
            Step::Bootstrap { .. }
            | Step::WriteConfig {
                why: ConfigChange::Bootstrapped,
                ..
            } => Reason::Bootstrapping,
            Step::ApplySupportingObjects
            | Step::WriteConfig {
                why: ConfigChange::Repair,
                ..
            } => Reason::Repairing,
            Step::WriteConfig {
                why: ConfigChange::Joins,
                ..
            }
            | Step::AddLearner { .. } => Reason::AddingLearner,
            Step::UpdateTemplate { .. }
            | Step::RestartMember {
                why: Restart::NewTemplate,
                ..
            } => Reason::RollingMembers,
            Step::RestartMember { .. } | Step::WipeMember { .. } => Reason::ReplacingMember,
            Step::ResizeStatefulSet { .. } => Reason::ResizingWorkload,
            Step::PromoteLearner { .. } => Reason::PromotingLearner,
            Step::MoveLeader { .. } => Reason::MovingLeader,
            Step::RemoveMember { .. } => Reason::RemovingMember,
            Step::DeleteVolume { .. } | Step::DeleteRestorePod { .. } => Reason::CleaningUp,
            Step::RestoreSeed { .. } => Reason::RestoringSnapshot,
            Step::RollBack { .. } => Reason::RollingBack,
            Step::Downgrade { .. } => Reason::Downgrading,
            Step::PreUpgradeSnapshot { .. } => Reason::UpgradingMember,
            Step::Compact { .. } => Reason::Compacting,
            Step::Defragment { .. } => Reason::Defragmenting,
            Step::DisarmNospace { .. } => Reason::DisarmingAlarm,
            Step::RaiseQuota { .. } => Reason::QuotaRaised,
            Step::Wait { reason, .. } | Step::Hold { reason, .. } => *reason,
            Step::Paused => Reason::Paused,
            Step::Idle => Reason::AsDesired,
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
            Step::RestartMember { pod, why, .. } => match why {
                Restart::NewTemplate => write!(f, "restart {pod} with the new template"),
                Restart::Rejoin => {
                    write!(f, "restart {pod} to join as the learner it was added as")
                }
                Restart::NewVolume => write!(f, "restart {pod} so it gets a new volume"),
            },
            Step::WipeMember {
                claim, pod, force, ..
            } => {
                match claim {
                    Some(claim) => write!(f, "wipe {pod}: delete volume {claim}, then the pod")?,
                    None => write!(f, "wipe {pod}: delete the pod (ephemeral data)")?,
                }
                if *force {
                    write!(f, " (at once: its node is gone)")?;
                }
                Ok(())
            }
            Step::RestoreSeed { url } => {
                write!(f, "restore the seed member's volume from {url}")
            }
            Step::DeleteRestorePod { pod } => write!(f, "delete the finished restore pod {pod}"),
            Step::RollBack { from, to, why, .. } => {
                write!(
                    f,
                    "roll back the upgrade to {to}: {why}; {from} is put back"
                )
            }
            Step::Downgrade {
                action: DowngradeStep::Enable,
                target,
            } => write!(
                f,
                "enable etcd's downgrade to {}.{} (validated first): the cluster version goes down before any member runs {}.{}",
                target.major, target.minor, target.major, target.minor
            ),
            Step::Downgrade {
                action: DowngradeStep::Cancel,
                target,
            } => write!(
                f,
                "cancel etcd's downgrade to {}.{}: spec.version no longer goes there",
                target.major, target.minor
            ),
            Step::PreUpgradeSnapshot { to, destination } => write!(
                f,
                "take the pre-upgrade snapshot to {destination} before any member moves to {to}"
            ),
            Step::Compact { revision } => write!(
                f,
                "compact the keyspace history up to revision {revision} (NOSPACE: the database \
                 reached its quota)"
            ),
            Step::Defragment { name, .. } => write!(
                f,
                "defragment {name} (NOSPACE; one member at a time, the leader last, while every \
                 other voter answers)"
            ),
            Step::DisarmNospace { .. } => write!(
                f,
                "disarm NOSPACE: every member is below {}% of its quota again, so etcd accepts \
                 writes",
                nospace::FULL_PERCENT
            ),
            Step::RaiseQuota { from, to } => write!(
                f,
                "raise the quota from {} to {} MiB, once (NOSPACE: the database is still above \
                 {}% of it after compaction and defragmentation); spec.etcd.quotaBackendBytes \
                 is unchanged, and its own next change replaces this",
                from >> 20,
                to >> 20,
                nospace::FULL_PERCENT
            ),
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

fn wait(reason: Reason, message: impl Into<String>) -> Step {
    Step::Wait {
        reason,
        message: message.into(),
    }
}
fn hold(reason: Reason, message: impl Into<String>) -> Step {
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

/// One rule of the planner: the step it calls for, or `None` when it has nothing to say.
pub type Rule = fn(&Desired, &Observed) -> Option<Step>;

/// The rules in the order they are tried; the first that speaks decides. The first group makes
/// the Kubernetes objects and etcd answer at all; the numbered ones follow the numbered comments
/// below (a rule may assume that every rule before it had nothing to say).
pub const RULES: &[Rule] = &[
    paused,
    fenced_clients,
    restore_seed,
    workload_missing,
    supporting_objects_missing,
    member_config_lost,
    restore_pod_left,
    template_changed,
    upgrade::failed_upgrade,
    etcd_unanswered,
    foreign_members,
    workload_resized_by_hand,
    member_config_outdated,
    bootstrap_in_progress,
    quorum_lost,
    pods_beyond_the_workload_terminating,
    members_beyond_the_workload,
    lost_members,
    slots_without_a_member,
    volumes_of_removed_members,
    learner_in_its_slot,
    upgrade::rollback_blocked,
    nospace::full_database,
    scale_one_member_at_a_time,
    upgrade::pre_upgrade_snapshot,
    upgrade::downgrade_gate,
    stale_members,
    upgrade::cluster_version_follows,
    unhealthy_voters,
    voters_not_ready,
];

/// Decides the next step: the first rule of `RULES` that speaks, else `Idle`. See `Step` for the
/// state machine.
pub fn plan(d: &Desired, o: &Observed) -> Step {
    let step = RULES
        .iter()
        .find_map(|rule| rule(d, o))
        .unwrap_or(Step::Idle);
    on_a_confirmed_list(o, step)
}

/// A step that destroys a member (removes it, or wipes its pod and volume) acts only on a member
/// list a linearizable read confirmed: a list from a lagging member may not name a voter that
/// was added since, or still name one that was replaced.
fn on_a_confirmed_list(o: &Observed, step: Step) -> Step {
    let unconfirmed = reached(o).is_some_and(|c| c.list_unconfirmed);
    if unconfirmed && matches!(step, Step::RemoveMember { .. } | Step::WipeMember { .. }) {
        return wait(
            Reason::MembersUnhealthy,
            format!(
                "{step} waits for a member list a leader confirmed: no voter passed a linearizable \
                 read, so the list may lag behind membership changes"
            ),
        );
    }
    step
}

/// The StatefulSet's size; rules after `workload_missing` may rely on it.
fn slots(o: &Observed) -> Option<u32> {
    o.statefulset.as_ref().map(|s| s.replicas)
}

/// What etcd answered; rules after `etcd_unanswered` may rely on it.
fn reached(o: &Observed) -> Option<&ClusterView> {
    match &o.etcd {
        EtcdView::Reached(c) => Some(c),
        _ => None,
    }
}

fn bootstrapped(o: &Observed) -> bool {
    o.config.as_ref().is_some_and(objects::is_bootstrapped)
}

/// Whether the cluster was formed: its initial members all started once (recorded in the
/// member config). From then on a cluster none of whose members answers is in trouble.
pub fn formed(o: &Observed) -> bool {
    bootstrapped(o)
}

/// Paused: nothing acts. A recovery fences clients off while the cluster is paused; the fence
/// left by one that has not finished (running, or interrupted) is named, with both ways out.
fn paused(d: &Desired, o: &Observed) -> Option<Step> {
    if d.paused && o.clients_fenced {
        let ways_out = if o.statefulset.is_none() && o.volumes.is_empty() {
            // Unpaused now, the engine would bootstrap an empty cluster.
            format!(
                "the old members are deleted: finish with `kubectl etcd recover {} --from-backup \
                 B --yes` (B: the recovery's snapshot, `kubectl etcd backup list {}`)",
                d.name, d.name
            )
        } else {
            format!(
                "rerun `kubectl etcd recover {} --yes`, or unpause it to let clients back to \
                 the members as they are",
                d.name
            )
        };
        return Some(hold(
            Reason::ClientsFenced,
            format!(
                "paused with clients fenced off (Service {} selects no member) by `kubectl etcd \
                 recover`, under way or stopped before it finished; {ways_out}",
                objects::client_service_name(&d.name),
            ),
        ));
    }
    d.paused.then_some(Step::Paused)
}

/// Unpaused with clients fenced off (a recovery finished, or one stopped and was unpaused): the
/// Services are applied again, which puts the client Service's selector back whole. First of
/// the acting rules: a restore that waits long must not keep clients off a cluster that serves.
fn fenced_clients(_: &Desired, o: &Observed) -> Option<Step> {
    o.clients_fenced.then_some(Step::ApplySupportingObjects)
}

/// The member config is missing or lacks what every member reads.
fn config_lost(o: &Observed) -> bool {
    o.config.as_ref().is_none_or(|c| {
        !c.contains_key(config_key::INITIAL_CLUSTER) || !c.contains_key(config_key::INITIAL_TOKEN)
    })
}

/// The members that survive the loss of every object but the volumes and the status: each
/// volume, each member last recorded in status, each StatefulSet slot.
fn surviving_members(o: &Observed) -> BTreeSet<u32> {
    let mut m: BTreeSet<u32> = o.volumes.keys().copied().collect();
    m.extend(o.known_members.iter().copied());
    m.extend(0..slots(o).unwrap_or(0));
    m
}

/// No StatefulSet: a new cluster is bootstrapped whole; one deleted under a formed cluster is
/// brought back on its volumes (their data makes the members start as themselves), its member
/// config first (the pods cannot start without it). A cluster started from a snapshot went
/// through `restore_seed` before this rule.
fn workload_missing(d: &Desired, o: &Observed) -> Option<Step> {
    if o.statefulset.is_some() {
        return None;
    }
    // Pods of a StatefulSet deleted a moment ago (the cluster deleted and created again) keep
    // their names until they are gone: a new StatefulSet cannot create its pods over them, and
    // its controller backs off for minutes. Wait for them instead.
    let leftovers: Vec<&str> = o
        .pods
        .values()
        .filter(|p| p.terminating || p.controlled)
        .map(|p| p.name.as_str())
        .collect();
    if !leftovers.is_empty() {
        return Some(wait(
            Reason::CleaningUp,
            format!(
                "pods of the deleted StatefulSet {} are still going: {}",
                objects::statefulset_name(&d.name),
                leftovers.join(", ")
            ),
        ));
    }
    let survivors = surviving_members(o);
    if o.config.is_none() && survivors.is_empty() {
        return Some(Step::Bootstrap {
            replicas: d.replicas,
        });
    }
    if config_lost(o) {
        return Some(Step::WriteConfig {
            data: objects::repaired_config(d, survivors),
            why: ConfigChange::Repair,
        });
    }
    let to = o.volumes.keys().max().map_or(d.replicas, |m| m + 1);
    Some(Step::ResizeStatefulSet { from: 0, to })
}

/// The member config was deleted under a formed cluster and no member answers (the pods cannot
/// start without it): rebuild it from the volumes and the last recorded membership. Every
/// member keeps its data and starts as itself; nobody may join until etcd answers again.
fn member_config_lost(d: &Desired, o: &Observed) -> Option<Step> {
    if !config_lost(o) || reached(o).is_some() {
        return None;
    }
    Some(Step::WriteConfig {
        data: objects::repaired_config(d, surviving_members(o)),
        why: ConfigChange::Repair,
    })
}

/// A StatefulSet resized by hand below its voters is put back first: always safe (the members
/// come back on their own volumes), and the quorum the edit cost comes back with them.
fn workload_resized_by_hand(_: &Desired, o: &Observed) -> Option<Step> {
    let (c, s) = (reached(o)?, slots(o)?);
    let top = c.voters().filter_map(|m| m.ordinal).max()?;
    (top >= s).then_some(Step::ResizeStatefulSet {
        from: s,
        to: top + 1,
    })
}

/// Fewer voters than a quorum answer (status and the member list need no quorum, so the
/// survivors still do): report who is gone and what to run; never act on it. While a gone
/// member's pod is still starting (or about to be recreated) this is a wait; once every gone
/// member's pod is stuck (crash-looping, its data gone, its image missing) it is a hold.
fn quorum_lost(d: &Desired, o: &Observed) -> Option<Step> {
    let c = reached(o)?;
    let voters = c.voters().count();
    let answering = c.voters().filter(|m| m.status.is_some()).count();
    if voters == 0 || answering >= quorum(voters) {
        return None;
    }
    let gone: Vec<&MemberView> = c.voters().filter(|m| m.status.is_none()).collect();
    let names: Vec<String> = gone.iter().map(|m| member_name(d, m)).collect();
    let stuck = |m: &&MemberView| {
        m.ordinal.and_then(|k| o.pods.get(&k)).is_some_and(|p| {
            !p.running && !p.terminating && (p.restarts > 0 || p.data_loss().is_some())
                || p.waiting_reason
                    .as_deref()
                    .is_some_and(|r| r == "ImagePullBackOff" || r == "ErrImagePull")
        })
    };
    if !gone.iter().all(stuck) {
        return Some(wait(
            Reason::QuorumLost,
            format!(
                "quorum lost while members start: {answering} of {voters} voters answer; waiting for {}",
                names.join(", ")
            ),
        ));
    }
    Some(hold(
        Reason::QuorumLost,
        format!(
            "quorum lost: {answering} of {voters} voters answer (gone: {}{}); no write can succeed. \
             Bring the gone members back, or run `kubectl etcd -n {} recover {}` to rebuild the \
             cluster from the best survivor",
            names.join(", "),
            pod_trouble(o),
            d.namespace,
            d.name
        ),
    ))
}

/// Why member `m` looks lost, if it does: it does not answer as itself, and its pod says its
/// data is gone or unusable, answers as another member, or is on (or pinned by its volume to)
/// a node that is gone.
fn looks_lost(o: &Observed, m: &MemberView) -> Option<String> {
    // A member that answers (status, even without health) runs on its own data: never lost.
    if m.healthy || m.status.is_some() {
        return None;
    }
    if m.identity_mismatch {
        return Some(
            "its pod answers as another member (its volume holds another member's data)".into(),
        );
    }
    let pod = o.pods.get(&m.ordinal?)?;
    pod.data_loss()
        .map(str::to_owned)
        .or_else(|| pod.node_down.clone())
}

/// When each member that looks lost now was first seen so (what status records as
/// `members[].lostSince`): the time recorded before (`o.lost_since`), else this pass's. Kept as
/// it was while no member answers.
pub fn lost_since(o: &Observed) -> BTreeMap<u32, jiff::Timestamp> {
    let Some(c) = reached(o) else {
        return o.lost_since.clone();
    };
    c.members
        .iter()
        .filter_map(|m| {
            let k = m.ordinal?;
            looks_lost(o, m)?;
            Some((k, o.lost_since.get(&k).copied().unwrap_or(o.now)))
        })
        .collect()
}

/// A voter that lost its data is replaced once it has looked lost for the grace period (counted
/// from when the sign was first seen, `lost_since`, never from its pod's creation), and only
/// while the others keep a healthy quorum: it is removed here; `slots_without_a_member` wipes
/// and re-adds it.
fn lost_members(d: &Desired, o: &Observed) -> Option<Step> {
    let c = reached(o)?;
    // Voters first; then a learner that started once (one that never did has no data to lose:
    // `learner_in_its_slot` starts it).
    let (m, why) = c
        .voters()
        .chain(c.learners().filter(|m| m.started))
        .find_map(|m| looks_lost(o, m).map(|w| (m, w)))?;
    let name = member_name(d, m);
    let since = m.ordinal.and_then(|k| o.lost_since.get(&k)).copied();
    let age = since.map_or(0, |t| (o.now.as_second() - t.as_second()).max(0) as u64);
    let grace = d.lost_member_grace_seconds;
    if age < grace {
        return Some(wait(
            Reason::ReplacingMember,
            format!(
                "{name} looks lost: {why}; it is replaced if it still does {grace}s after this was first seen ({age}s so far)"
            ),
        ));
    }
    if m.learner {
        // A learner counts toward no quorum: it is removed, then refilled in its slot.
        return Some(Step::RemoveMember { id: m.id, name });
    }
    let voters = c.voters().count();
    let rest_healthy = c.voters().filter(|v| v.id != m.id && v.healthy).count();
    if voters < 2 || rest_healthy < quorum(voters - 1) {
        return Some(hold(
            Reason::QuorumAtRisk,
            format!(
                "{name} is lost ({why}), but removing it would leave {rest_healthy} healthy of {} voters; bring the others back first",
                voters.saturating_sub(1)
            ),
        ));
    }
    Some(Step::RemoveMember { id: m.id, name })
}

fn supporting_objects_missing(_: &Desired, o: &Observed) -> Option<Step> {
    (!o.supporting_objects).then_some(Step::ApplySupportingObjects)
}

fn template_changed(d: &Desired, o: &Observed) -> Option<Step> {
    let sts = o.statefulset.as_ref()?;
    (sts.template_hash.as_deref() != Some(objects::template_hash(d).as_str())).then_some(
        Step::UpdateTemplate {
            replicas: sts.replicas,
        },
    )
}

/// etcd did not answer as one cluster: hold on a split, wait while members start, bring back
/// members whose volumes lie beyond a StatefulSet scaled down by hand.
fn etcd_unanswered(_: &Desired, o: &Observed) -> Option<Step> {
    let s = slots(o)?;
    match &o.etcd {
        EtcdView::Reached(_) => None,
        EtcdView::Split { cluster_ids } => {
            let ids: Vec<String> = cluster_ids.iter().map(|i| fmt_id(*i)).collect();
            Some(hold(
                Reason::ClusterIdMismatch,
                format!(
                    "members answer with different cluster ids ({}); fix by hand, the engine will not act",
                    ids.join(", ")
                ),
            ))
        }
        EtcdView::NotQueried | EtcdView::Unreachable { .. } if !bootstrapped(o) => Some(wait(
            Reason::Bootstrapping,
            format!("members are starting{}", pod_trouble(o)),
        )),
        EtcdView::NotQueried | EtcdView::Unreachable { .. }
            if o.volumes.keys().max().is_some_and(|m| m + 1 > s) =>
        {
            // Nobody answers and members' volumes lie beyond the StatefulSet (someone scaled it
            // down by hand): bring those members back on their data.
            let to = o.volumes.keys().max().map_or(s, |m| m + 1);
            Some(Step::ResizeStatefulSet { from: s, to })
        }
        EtcdView::NotQueried => Some(wait(
            Reason::EtcdUnreachable,
            format!("no member pod is running{}", pod_trouble(o)),
        )),
        EtcdView::Unreachable { errors } => Some(wait(
            Reason::EtcdUnreachable,
            format!(
                "no member answered: {}",
                errors.first().map_or("", |e| e.as_str())
            ),
        )),
    }
}

fn foreign_members(_: &Desired, o: &Observed) -> Option<Step> {
    let m = reached(o)?.members.iter().find(|m| m.ordinal.is_none())?;
    Some(hold(
        Reason::StrandedMember,
        format!(
            "member {} ({}) was not added by kubectl-etcd; remove it with etcdctl",
            m.name, m.peer_url
        ),
    ))
}

fn member_config_outdated(d: &Desired, o: &Observed) -> Option<Step> {
    let config = wanted_config(d, o, reached(o)?);
    if o.config.as_ref() == Some(&config) {
        return None;
    }
    let why = if o
        .config
        .as_ref()
        .is_none_or(|c| !c.contains_key(config_key::INITIAL_CLUSTER))
    {
        ConfigChange::Repair
    } else if !bootstrapped(o) {
        ConfigChange::Bootstrapped
    } else {
        ConfigChange::Joins
    };
    Some(Step::WriteConfig { data: config, why })
}

fn bootstrap_in_progress(_: &Desired, o: &Observed) -> Option<Step> {
    (!bootstrapped(o)).then(|| wait(Reason::Bootstrapping, "initial members are starting"))
}

fn pods_beyond_the_workload_terminating(_: &Desired, o: &Observed) -> Option<Step> {
    let s = slots(o)?;
    let (ord, pod) = o.pods.iter().find(|(o, p)| **o >= s && p.terminating)?;
    Some(wait(
        Reason::ResizingWorkload,
        format!("pod {} of ordinal {ord} is terminating", pod.name),
    ))
}

/// 1. Members without a StatefulSet slot (highest first): a learner added before the resize,
///    or one left behind by a reversed scale-up.
fn members_beyond_the_workload(d: &Desired, o: &Observed) -> Option<Step> {
    let (c, s) = (reached(o)?, slots(o)?);
    let voters = c.voters().count();
    let mut beyond: Vec<&MemberView> = c
        .members
        .iter()
        .filter(|m| m.ordinal.unwrap_or(0) >= s)
        .collect();
    beyond.sort_by_key(|m| std::cmp::Reverse(m.ordinal));
    let m = beyond.first()?;
    let ord = m.ordinal.unwrap_or(0);
    let remove = Step::RemoveMember {
        id: m.id,
        name: member_name(d, m),
    };
    if m.learner && ord == s && ord < d.replicas && beyond.len() == 1 {
        if o.volumes.contains_key(&ord) {
            // A volume from an earlier member of this ordinal would make the learner start
            // with foreign data. Take the learner out; the volume is deleted next.
            return Some(remove);
        }
        return Some(Step::ResizeStatefulSet { from: s, to: s + 1 });
    }
    if m.learner {
        return Some(remove);
    }
    // A voter without a pod slot: only removed when the rest keeps a healthy majority.
    let rest_healthy = c.voters().filter(|v| v.id != m.id && v.healthy).count();
    if rest_healthy >= quorum(voters - 1) {
        return Some(remove);
    }
    Some(hold(
        Reason::QuorumAtRisk,
        format!(
            "voter {} has no pod, and removing it would leave {rest_healthy} healthy of {} voters",
            member_name(d, m),
            voters - 1
        ),
    ))
}

/// 2. StatefulSet slots without a member: the top one beyond the spec is shrunk away (a removed
///    member); any other is refilled in place (a member removed as lost, or a removal the spec
///    took back): once its pod proves its volume empty (etcd found no entry to join under) it
///    is added back as a learner; a volume that may still hold the old member's data is wiped
///    first, so no member ever starts on someone else's data.
fn slots_without_a_member(d: &Desired, o: &Observed) -> Option<Step> {
    let (c, s) = (reached(o)?, slots(o)?);
    let ord = (0..s).rev().find(|o| c.member_at(*o).is_none())?;
    if ord == s - 1 && ord >= d.replicas {
        return Some(Step::ResizeStatefulSet { from: s, to: s - 1 });
    }
    let pod_name = objects::pod_name(&d.name, ord);
    let with_volumes = matches!(d.storage, crate::model::Storage::Volume { .. });
    // The slot's member was removed (as lost) and its pod is on a node that is gone, or waits
    // for one its volume is pinned to: neither ever goes by itself. Both go now, the pod without
    // waiting for a kubelet that never confirms (the removed member can never rejoin; its data
    // is what the wipe deletes), and the StatefulSet starts it elsewhere on a new volume.
    if o.pods.get(&ord).is_some_and(|p| p.node_down.is_some()) {
        return Some(Step::WipeMember {
            ordinal: ord,
            claim: o.volumes.get(&ord).map(|v| v.name.clone()),
            pod: pod_name,
            force: true,
        });
    }
    let pod = o.pods.get(&ord).filter(|p| !p.terminating);
    if with_volumes {
        match o.volumes.get(&ord) {
            Some(v) if v.terminating => {
                // The pod holds the volume until it goes.
                return Some(match pod {
                    Some(_) => Step::RestartMember {
                        ordinal: ord,
                        pod: pod_name,
                        why: Restart::NewVolume,
                    },
                    None => wait(
                        Reason::ReplacingMember,
                        format!("volume {} is being deleted", v.name),
                    ),
                });
            }
            None => {
                // A pod whose volume was deleted under it never gets a new one by itself.
                return Some(match pod {
                    Some(p) if !p.running => Step::RestartMember {
                        ordinal: ord,
                        pod: pod_name,
                        why: Restart::NewVolume,
                    },
                    _ => wait(
                        Reason::ReplacingMember,
                        format!("pod {pod_name} is getting a new volume"),
                    ),
                });
            }
            Some(_) => {}
        }
    }
    let Some(pod) = pod else {
        return Some(wait(
            Reason::ReplacingMember,
            format!("pod {pod_name} is being recreated"),
        ));
    };
    if pod.data_loss().is_some_and(|_| pod.proven_empty()) {
        let voters = c.voters().count();
        let healthy = c.voters().filter(|m| m.healthy).count();
        if healthy < voters {
            return Some(wait(
                Reason::MembersUnhealthy,
                format!(
                    "{healthy} of {voters} members are healthy; re-adding {pod_name} waits for all"
                ),
            ));
        }
        return Some(Step::AddLearner {
            ordinal: ord,
            name: pod_name,
            peer_url: objects::peer_url(d, ord),
        });
    }
    if pod.restarts == 0 && pod.last_exit_message.is_none() {
        return Some(wait(
            Reason::ReplacingMember,
            format!("pod {pod_name} is starting"),
        ));
    }
    // Never wipe a pod whose etcd answers: the member list (perhaps from a lagging member) may
    // not name it yet, or it is a removed member about to stop by itself.
    if let Some(id) = pod.answered_as {
        return Some(wait(
            Reason::ReplacingMember,
            format!(
                "pod {pod_name} answers as member {}, which the member list does not name; it is not \
                 wiped while it answers",
                fmt_id(id)
            ),
        ));
    }
    Some(Step::WipeMember {
        ordinal: ord,
        claim: with_volumes.then(|| objects::volume_name(&d.name, ord)),
        pod: pod_name,
        force: false,
    })
}

/// 3. Volumes of ordinals beyond the StatefulSet belong to removed members: delete them so
///    those members can never come back with stale data.
fn volumes_of_removed_members(d: &Desired, o: &Observed) -> Option<Step> {
    let s = slots(o)?;
    let (ord, v) = o.volumes.iter().find(|(o, _)| **o >= s)?;
    if v.terminating {
        return Some(wait(
            Reason::CleaningUp,
            format!("volume {} is being deleted", v.name),
        ));
    }
    if !o.pods.contains_key(ord) {
        return Some(Step::DeleteVolume {
            ordinal: *ord,
            claim: v.name.clone(),
        });
    }
    Some(wait(
        Reason::CleaningUp,
        format!(
            "pod of removed member {} is still present",
            objects::pod_name(&d.name, *ord)
        ),
    ))
}

/// 4. A learner in its slot is promoted once caught up (or removed when no longer wanted).
fn learner_in_its_slot(d: &Desired, o: &Observed) -> Option<Step> {
    let c = reached(o)?;
    let l = c.learners().next()?;
    let name = member_name(d, l);
    if c.voters().count() >= d.replicas as usize {
        return Some(Step::RemoveMember { id: l.id, name });
    }
    let pod = l.ordinal.and_then(|k| o.pods.get(&k));
    if !l.started && pod.is_some_and(|p| p.waiting_reason.as_deref() == Some("CrashLoopBackOff")) {
        // Its pod crashed before its join entry existed (a refilled slot): start it now.
        return Some(Step::RestartMember {
            ordinal: l.ordinal.unwrap_or_default(),
            pod: objects::pod_name(&d.name, l.ordinal.unwrap_or_default()),
            why: Restart::Rejoin,
        });
    }
    if !l.started || l.status.is_none() {
        return Some(wait(
            Reason::AddingLearner,
            format!("learner {name} is starting"),
        ));
    }
    if !caught_up(l, c.leader_member()) {
        return Some(wait(
            Reason::PromotingLearner,
            format!("learner {name} is catching up with the leader"),
        ));
    }
    Some(Step::PromoteLearner { id: l.id, name })
}

/// 5. Scale, one member at a time.
fn scale_one_member_at_a_time(d: &Desired, o: &Observed) -> Option<Step> {
    let (c, s) = (reached(o)?, slots(o)?);
    let voters = c.voters().count();
    let healthy_voters = c.voters().filter(|m| m.healthy).count();
    let target = d.replicas as usize;
    if voters < target {
        if healthy_voters < voters {
            return Some(wait(
                Reason::MembersUnhealthy,
                format!(
                    "{healthy_voters} of {voters} members are healthy; adding a member waits for all"
                ),
            ));
        }
        return Some(Step::AddLearner {
            ordinal: s,
            name: objects::pod_name(&d.name, s),
            peer_url: objects::peer_url(d, s),
        });
    }
    if voters == target {
        return None;
    }
    let Some(victim) = c.member_at(s - 1) else {
        return Some(hold(
            Reason::StrandedMember,
            "member list and StatefulSet disagree",
        ));
    };
    let rest_healthy = c
        .voters()
        .filter(|v| v.id != victim.id && v.healthy)
        .count();
    if rest_healthy < quorum(voters - 1) {
        return Some(hold(
            Reason::QuorumAtRisk,
            format!(
                "removing {} would leave {rest_healthy} healthy of {} voters (quorum {})",
                member_name(d, victim),
                voters - 1,
                quorum(voters - 1)
            ),
        ));
    }
    if c.leader == Some(victim.id) {
        return Some(move_leader_off(d, c, victim));
    }
    Some(Step::RemoveMember {
        id: victim.id,
        name: member_name(d, victim),
    })
}

/// 6. Members on an old template restart one at a time, highest ordinal first, leader last.
fn stale_members(d: &Desired, o: &Observed) -> Option<Step> {
    let c = reached(o)?;
    let rev = o.statefulset.as_ref()?.update_revision.as_ref()?;
    let stale: Vec<u32> = o
        .pods
        .iter()
        .filter(|(_, p)| p.revision.as_ref().is_some_and(|r| r != rev))
        .map(|(o, _)| *o)
        .collect();
    if stale.is_empty() {
        return None;
    }
    if let Some(p) = stale
        .iter()
        .filter_map(|k| o.pods.get(k))
        .find(|p| p.terminating)
    {
        return Some(wait(
            Reason::RollingMembers,
            p.node_gone()
                .unwrap_or_else(|| format!("pod {} is restarting", p.name)),
        ));
    }
    // A stale pod whose member gives no status at all serves nobody: restarting it cannot cost
    // quorum (this is how a reverted bad template is undone), but only while every other voter
    // answers and no restart is under way (every other voter's pod ready). A member that answers
    // but is slow or not ready (load, a WAL replay) waits for the gate below like any other.
    if let Some(k) = stale.iter().rev().copied().find(|k| {
        o.pods.get(k).is_some_and(|p| !p.ready)
            && c.member_at(*k).is_none_or(|m| m.status.is_none())
            && c.voters().filter(|m| m.ordinal != Some(*k)).all(|m| {
                m.status.is_some()
                    && m.ordinal
                        .and_then(|j| o.pods.get(&j))
                        .is_some_and(|p| p.ready && !p.terminating)
            })
    }) {
        return Some(Step::RestartMember {
            ordinal: k,
            pod: objects::pod_name(&d.name, k),
            why: Restart::NewTemplate,
        });
    }
    let voters = c.voters().count();
    // A member whose only trouble is a raised alarm (NOSPACE) answers and keeps quorum: the
    // alarm must not block a restart whose purpose may be to clear it (a raised quota).
    let healthy_voters = c.voters().filter(|m| m.healthy || m.alarmed).count();
    if healthy_voters < voters || o.pods.values().any(|p| !p.ready) {
        // A member already on the new template that does not come up (a flag its etcd does
        // not know, a resource it cannot get) says so: the rollout stops there, untouched.
        let failing = o
            .pods
            .values()
            .filter(|p| p.revision.as_ref() == Some(rev) && !p.ready && !p.terminating)
            .find(|p| p.restarts > 0 || p.waiting_reason.as_deref() == Some("CrashLoopBackOff"));
        if let Some(p) = failing {
            let why = p
                .exit_reason()
                .map(|l| format!(": {l}"))
                .unwrap_or_default();
            return Some(wait(
                Reason::RollingMembers,
                format!(
                    "{} does not start on the new template ({} restarts{why}); the next restart \
                     waits. Fix the spec (setting it back undoes the change)",
                    p.name, p.restarts
                ),
            ));
        }
        return Some(wait(
            Reason::RollingMembers,
            "a restart waits until every member is healthy and ready",
        ));
    }
    if let Some(m) = upgrade::lagging(c) {
        return Some(wait(
            Reason::RollingMembers,
            format!(
                "a restart waits until {} has caught up with the leader",
                member_name(d, m)
            ),
        ));
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
        return Some(move_leader_off(d, c, m));
    }
    Some(Step::RestartMember {
        ordinal: pick,
        pod: objects::pod_name(&d.name, pick),
        why: Restart::NewTemplate,
    })
}

/// 7. Right-sized and current, but a voter is unhealthy: reported, not touched.
fn unhealthy_voters(d: &Desired, o: &Observed) -> Option<Step> {
    let sick: Vec<String> = reached(o)?
        .voters()
        .filter(|m| !m.healthy)
        .map(|m| member_name(d, m))
        .collect();
    (!sick.is_empty()).then(|| {
        wait(
            Reason::MembersUnhealthy,
            format!("unhealthy: {}", sick.join(", ")),
        )
    })
}

/// 8. Every voter is healthy, but a voter's pod is not Ready yet.
///
/// Its readiness probe (a linearizable read with the pod's own etcdctl) has not passed since it
/// started or was promoted, so the client Service does not send it clients. Converged means
/// served: wait for the kubelet's next probe rather than report a member the Service skips.
fn voters_not_ready(d: &Desired, o: &Observed) -> Option<Step> {
    let mut waiting: Vec<(u32, String)> = reached(o)?
        .voters()
        .filter_map(|m| {
            let k = m.ordinal?;
            let p = o.pods.get(&k)?;
            (p.running && !p.ready && !p.terminating).then(|| (k, member_name(d, m)))
        })
        .collect();
    waiting.sort();
    (!waiting.is_empty()).then(|| {
        let names: Vec<String> = waiting.into_iter().map(|(_, n)| n).collect();
        wait(
            Reason::MembersNotReady,
            format!(
                "healthy, not Ready yet: {} (its readiness probe has not passed since it started \
                 or was promoted; the client Service skips it until then)",
                names.join(", ")
            ),
        )
    })
}

/// A cluster restored from a snapshot, before its StatefulSet exists: the seed's volume is filled by
/// the restore pod, then the seed alone is bootstrapped on it (the others join as learners).
///
/// The restore runs once: its claim carries `RestoreMark::Restoring` from the moment the restore
/// makes it, and `Restored` from the seed's bootstrap on. `None` once the seed was bootstrapped (the
/// member config or the StatefulSet exists, or the seed's volume says `Restored`: a restored
/// cluster whose objects were deleted, or deleted and applied again, comes back on its volumes like
/// any other), and for clusters not restored. Volumes the restore did not make (an earlier
/// cluster's, kept by `delete`) are never restored over: the rule holds and names them.
fn restore_seed(d: &Desired, o: &Observed) -> Option<Step> {
    let r = d.restore.as_ref()?;
    if o.config.is_some() || o.statefulset.is_some() {
        return None;
    }
    if o.volumes
        .values()
        .any(|v| !v.terminating && v.restore == Some(RestoreMark::Restored))
    {
        return None;
    }
    if o.restore_pod.is_none()
        && let Some(v) = o.volumes.values().find(|v| v.terminating)
    {
        // `recover` deleted the old members' volumes: the seed's claim gets a new one.
        return Some(wait(
            Reason::RestoringSnapshot,
            format!("old volume {} is being deleted", v.name),
        ));
    }
    let foreign: Vec<&str> = o
        .volumes
        .iter()
        .filter(|(ord, v)| {
            let the_restores_own = **ord == 0 && v.restore == Some(RestoreMark::Restoring);
            !v.terminating && !the_restores_own
        })
        .map(|(_, v)| v.name.as_str())
        .collect();
    if !foreign.is_empty() {
        return Some(hold(
            Reason::RestoreFailed,
            format!(
                "volumes of an earlier cluster named {} exist ({}): restoring {} over them would \
                 destroy their data. To start from the snapshot, delete them (kubectl etcd delete \
                 {} --delete-data --yes) or restore under another name; to keep their data, \
                 remove spec.restore",
                d.name,
                foreign.join(", "),
                r.url,
                d.name
            ),
        ));
    }
    let restore_pod = crate::objects::restore::pod_name(&d.name);
    Some(match &o.restore_pod {
        None => Step::RestoreSeed { url: r.url.clone() },
        Some(RestorePodView::Running) => wait(
            Reason::RestoringSnapshot,
            format!(
                "restoring {} into the volume of {}",
                r.url,
                objects::pod_name(&d.name, 0)
            ),
        ),
        Some(RestorePodView::Stuck(why)) => hold(
            Reason::RestoreFailed,
            format!(
                "the restore pod {restore_pod} cannot start ({why}); fix the cause (a missing \
                 Secret or image), the restore then goes on by itself"
            ),
        ),
        Some(RestorePodView::Failed(why)) => hold(
            Reason::RestoreFailed,
            format!(
                "the restore from {} failed ({why}); fix the cause, then delete pod {restore_pod} \
                 to retry",
                r.url,
            ),
        ),
        Some(RestorePodView::Succeeded) => Step::Bootstrap { replicas: 1 },
    })
}

/// The restore pod has done its work once the seed runs from the StatefulSet.
fn restore_pod_left(d: &Desired, o: &Observed) -> Option<Step> {
    o.restore_pod.as_ref()?;
    Some(Step::DeleteRestorePod {
        pod: crate::objects::restore::pod_name(&d.name),
    })
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
        .filter(|m| m.id != from.id && (m.healthy || m.alarmed))
        .min_by_key(|m| m.ordinal)
    {
        Some(to) => Step::MoveLeader {
            from: member_name(d, from),
            to_id: to.id,
            to: member_name(d, to),
        },
        None => hold(
            Reason::QuorumAtRisk,
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
        None => fmt_id(m.id),
    }
}

pub mod nospace;
mod status;
pub mod upgrade;
pub use status::{converged, derive_status};

#[cfg(test)]
mod sim;
#[cfg(test)]
mod tests;
