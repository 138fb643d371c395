//! The planner: desired and observed state in, the next `Step` out.
//!
//! Pure: no async, no clock, no client. A crashed pass is just another observed state, so every
//! half-done change (a learner without a pod, a pod without a member, a StatefulSet larger than
//! the member list, a leftover volume) has a rule that repairs it.
//!
//! `step`: what the planner can decide (`Step`, its reason and sentence); `rules`: the rules in
//! the order `RULES` tries them; here: `plan` and the helpers the rules share.

use std::collections::BTreeMap;

use crate::api::Reason;
use crate::model::{ClusterView, Desired, EtcdView, MemberView, Observed};
use crate::objects::{self, config_key};

mod rules;
mod step;
pub use maintenance::Trigger;
pub use rules::*;
pub use step::{AuthStep, ConfigChange, DowngradeStep, Restart, Step};

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
        // Each at the URL etcd has for it, which differs from the template's while TLS is
        // switched (`objects::join_list_at`).
        let members = c.members.iter().filter_map(|m| {
            let o = m.ordinal?;
            let url = if m.peer_url.is_empty() {
                objects::peer_url(d, o)
            } else {
                m.peer_url.clone()
            };
            Some((o, url))
        });
        data.insert(
            config_key::INITIAL_CLUSTER.into(),
            objects::join_list_at(d, members, |o| c.member_at(o).is_some_and(|m| !m.started)),
        );
    }
    data
}

/// The spec as what is under way, or done, settles it: the target every rule of the pass plans
/// for, settled here once, in this order (each may read what the ones before settled). A request
/// the spec still carries but `status.completed` marks done acts no more (`rule_audit`).
pub fn settle(d: Desired, o: &Observed) -> Desired {
    let d = adopt::settle(d, &o.completed);
    let d = upgrade::settle(d, o);
    let d = nospace::settle(d, o);
    let d = pki::settle(d, o);
    let d = auth::settle(d, o);
    let d = tls_switch::settle(d, o);
    recover::settle(d, o)
}

/// One rule of the planner: the step it calls for, or `None` when it has nothing to say.
pub type Rule = fn(&Desired, &Observed) -> Option<Step>;

/// The rules in the order they are tried; the first that speaks decides. The first group makes
/// the Kubernetes objects and etcd answer at all; the numbered ones follow the numbered comments
/// below (a rule may assume that every rule before it had nothing to say).
pub const RULES: &[Rule] = &[
    paused,
    // Before renewal too: nothing is written while an object at the cluster's names is another's.
    owned::objects_not_owned,
    pki::renewal,
    recover::recovery,
    fenced_clients,
    adopt::adoption,
    hibernate::hibernation,
    restore_seed,
    pki::certificates,
    pki::cert_manager_certificates,
    workload_missing,
    supporting_objects_missing,
    member_config_lost,
    restore_pod_left,
    storage::claim_template_outdated,
    template_changed,
    workload_catching_up,
    upgrade::failed_upgrade,
    stuck_on_an_old_template,
    etcd_unanswered,
    foreign_members,
    workload_resized_by_hand,
    member_config_outdated,
    bootstrap_in_progress,
    quorum_lost,
    drain::leader_leaving,
    pods_beyond_the_workload_terminating,
    members_beyond_the_workload,
    lost_members,
    slots_without_a_member,
    volumes_of_removed_members,
    learner_in_its_slot,
    upgrade::rollback_blocked,
    nospace::full_database,
    scale_one_member_at_a_time,
    storage::volumes_outdated,
    upgrade::pre_upgrade_snapshot,
    upgrade::downgrade_gate,
    stale_members,
    upgrade::cluster_version_follows,
    unhealthy_voters,
    voters_not_ready,
    tls_switch::move_peer_urls,
    auth::enable,
    maintenance::requested_defrag,
    maintenance::policy_defrag,
];

/// Decides the next step: the first rule of `RULES` that speaks, else `Idle`. See `Step` for the
/// state machine.
pub fn plan(d: &Desired, o: &Observed) -> Step {
    let step = RULES
        .iter()
        .find_map(|rule| rule(d, o))
        // Backups only when the cluster itself needs nothing: they never pre-empt a repair.
        .or_else(|| backup::next(d, o))
        // Restore drills after the backups, last of all that acts.
        .or_else(|| drill::next(d, o))
        // A grown claim's capacity last: its wait (or hold) pre-empts nothing.
        .or_else(|| storage::expansion_pending(d, o))
        .unwrap_or(Step::Idle);
    saying_what_cannot_be_created(
        o,
        past_a_stale_peer_count(d, o, on_a_confirmed_list(o, step)),
    )
}

/// A wait or hold while the StatefulSet's controller cannot create a member pod (a quota, a
/// policy, a missing PriorityClass refuses it) says so: whatever it waits for, that pod will
/// not come until someone fixes its cause.
fn saying_what_cannot_be_created(o: &Observed, step: Step) -> Step {
    let Some(why) = o
        .statefulset
        .as_ref()
        .and_then(|s| s.cannot_create.as_ref())
    else {
        return step;
    };
    let tell = |message: String| format!("{message}; the StatefulSet cannot create a pod: {why}");
    match step {
        Step::Wait { reason, message } => Step::Wait {
            reason,
            message: tell(message),
        },
        Step::Hold { reason, message } => Step::Hold {
            reason,
            message: tell(message),
        },
        step => step,
    }
}

/// Whether the step needs the leader's count of connected peers (`Observed::leader_peers`),
/// which observe does not read on its own: a removal, which etcd's leader checks against it.
pub fn needs_leader_peers(step: &Step) -> bool {
    matches!(step, Step::RemoveMember { .. })
}

/// etcd's leader removes a voter that it counts as connected only while, without it, a quorum
/// of the voters would still be peers it counts as connected (itself included); else it answers
/// "unhealthy cluster", every time. That count can go stale (a replaced member's old address
/// dialed after its streams connected: `crate::etcd::PeerView`) and then never mends while the
/// streams hold, so the removal would wait forever on a cluster whose every voter answers.
/// When the leader would refuse for want of a voter that is healthy (a linearizable read through
/// it passed, so it hears the leader), leadership goes to that voter first: its own count is
/// fresh, and the removal is asked of it.
fn past_a_stale_peer_count(d: &Desired, o: &Observed, step: Step) -> Step {
    let Step::RemoveMember { id, .. } = &step else {
        return step;
    };
    let (Some(c), Some(peers)) = (reached(o), o.leader_peers.as_ref()) else {
        return step;
    };
    let Some(leader) = c.leader_member().filter(|l| l.id == peers.leader) else {
        return step;
    };
    let counted = |m: &MemberView| m.id == leader.id || peers.connected.contains(&m.id);
    let voters: Vec<&MemberView> = c.voters().collect();
    let target_counted = voters.iter().any(|m| m.id == *id && counted(m));
    let active = voters.iter().filter(|m| counted(m)).count();
    let refused = target_counted && active.saturating_sub(1) < 1 + (voters.len() - 1) / 2;
    if !refused || leader.id == *id {
        return step;
    }
    let fresh = voters
        .iter()
        .filter(|m| m.id != *id && !counted(m) && m.healthy && !drain::leaving(o, m))
        .min_by_key(|m| m.ordinal);
    match fresh {
        Some(to) => Step::MoveLeader {
            from: member_name(d, leader),
            to_id: to.id,
            to: member_name(d, to),
        },
        None => step,
    }
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

pub mod adopt;
pub mod auth;
pub mod backup;
mod drain;
pub mod drill;
mod hibernate;
pub mod maintenance;
pub mod nospace;
mod owned;
pub mod pki;
pub mod recover;
mod status;
pub mod storage;
pub mod tls_switch;
pub mod upgrade;
pub use status::{converged, derive_status, held};

#[cfg(test)]
mod audit;
#[cfg(test)]
mod sim;
#[cfg(test)]
mod tests;
