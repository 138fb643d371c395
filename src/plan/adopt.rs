//! Adoption (`spec.adopt`): the engine's members join a cluster that runs outside it as
//! learners, are promoted, take over leadership, and the old members are retired one at a time.
//! Same cluster id, same revisions: no restore, clients keep working.
//!
//! Pure: no async, no clock, no client. One change per pass, and every state a crash leaves
//! (of the CLI or the operator, at any step) is just another observed state these rules go on
//! from: the intent is `spec.adopt`, the progress is what etcd and the two StatefulSets say.
//!
//! ```text
//!  objects: WriteConfig(state existing, old members listed) ─▶ ApplySupportingObjects
//!           ─▶ ResizeStatefulSet(0 → 0: created empty)
//!  join, k = 0 … replicas-1 (all voters healthy):
//!           AddLearner(k) ─▶ WriteConfig(joins) ─▶ ResizeStatefulSet(k → k+1) ─▶ PromoteLearner
//!  retire (every new member a healthy, Ready voter):
//!           [MoveLeader(old → new)] ─▶ [TakeOverService, before the last old member]
//!           ─▶ RemoveMember(old, highest ordinal) ─▶ ResizeOldStatefulSet(r → r-1) ─▶ …
//!  adopted: no old member, the old StatefulSet at 0 (kept, its volumes untouched): the other
//!           rules take over
//!  abort (while no old member was retired): RemoveMember(new learner) ─▶ [MoveLeader(new → old)]
//!           ─▶ RemoveMember(new, highest) ─▶ ResizeStatefulSet(k → k-1) ─▶ DeleteVolume ─▶ …
//!           ─▶ Idle (only the old members are left)
//! ```

use std::collections::BTreeMap;

use super::rules::{pod_trouble, volumes_of_removed_members};
use super::*;
use crate::api::{AdoptionStatus, EtcdClusterStatus, adoption_phase};
use crate::model::{Adoption, fmt_id};

/// Before every other rule that acts while `spec.adopt` is set: the members the engine did not
/// add are the old cluster's, which the other rules would hold on (`foreign_members`).
pub(super) fn adoption(d: &Desired, o: &Observed) -> Option<Step> {
    let a = d.adopt.as_ref()?;
    if let Some(why) = o.adoption.as_ref().and_then(|v| v.refused.as_ref()) {
        return Some(hold(Reason::AdoptionRefused, why.clone()));
    }
    // The ids members answer with are never repeated: a guess in the spec must not learn the
    // real one from a hold, a condition or an Event.
    let c = match &o.etcd {
        EtcdView::Reached(c) => c,
        EtcdView::Split { .. } => {
            return Some(hold(
                Reason::ClusterIdMismatch,
                format!(
                    "members answer with different cluster ids; the adoption of cluster {} \
                     (spec.adopt.clusterId) waits, nothing is touched",
                    fmt_id(a.cluster_id)
                ),
            ));
        }
        // The engine's own members run (an adopted cluster, or one mid-way): the other rules
        // wait for them or repair them.
        _ if slots(o).is_some_and(|s| s > 0) => return None,
        EtcdView::NotQueried | EtcdView::Unreachable { .. } => {
            return Some(wait(
                Reason::EtcdUnreachable,
                format!(
                    "no member of the cluster to adopt answers at {}{}",
                    a.endpoints.join(", "),
                    pod_trouble(o)
                ),
            ));
        }
    };
    if c.cluster_id != a.cluster_id {
        return Some(hold(
            Reason::ClusterIdMismatch,
            format!(
                "the members at spec.adopt.endpoints answer with a cluster id that does not match \
                 spec.adopt.clusterId ({}); nothing is touched (check spec.adopt.endpoints)",
                fmt_id(a.cluster_id)
            ),
        ));
    }
    let old: Vec<&MemberView> = c.members.iter().filter(|m| m.ordinal.is_none()).collect();
    if let Some(m) = old.iter().find(|m| m.learner) {
        return Some(hold(
            Reason::StrandedMember,
            format!(
                "learner {} ({}) is neither an old member nor the engine's; remove it with \
                 etcdctl, the adoption then goes on",
                old_name(m),
                m.peer_url
            ),
        ));
    }
    if let Some(sts) = &a.statefulset
        && let Some(m) = old.iter().find(|m| a.old_ordinal(&m.name).is_none())
    {
        return Some(hold(
            Reason::StrandedMember,
            format!(
                "member {} ({}) is not a pod of StatefulSet {sts}: the engine cannot tell where \
                 it runs; remove it with etcdctl or adopt with --endpoints",
                old_name(m),
                m.peer_url
            ),
        ));
    }
    if a.abort {
        return abort(d, o, c, &old);
    }
    if old.is_empty() {
        // Adopted: the old StatefulSet follows the removals down to 0, then the other rules.
        return old_statefulset_down(a, o, &old);
    }
    objects_of_the_new_members(d, o, c)
        .or_else(|| join(d, o, c))
        .or_else(|| retire(d, o, c, a, &old))
}

/// The name an old member goes by (its id before it ever started).
fn old_name(m: &MemberView) -> String {
    if m.name.is_empty() {
        fmt_id(m.id)
    } else {
        m.name.clone()
    }
}

/// The engine's members (those it added, at an ordinal of its StatefulSet).
fn new_members(c: &ClusterView) -> impl Iterator<Item = &MemberView> {
    c.members.iter().filter(|m| m.ordinal.is_some())
}

/// The member config while old members exist: state "existing" from the start (the cluster is
/// formed), every member's peer URL (etcd checks count and URLs), the old members and the
/// engine's started ones under a name no pod carries, only a learner the engine added and that
/// never started under its own name.
pub fn member_config(d: &Desired, c: &ClusterView) -> BTreeMap<String, String> {
    let mut data = objects::bootstrap_config(d, 0);
    data.insert(
        config_key::INITIAL_CLUSTER_STATE.into(),
        objects::STATE_EXISTING.into(),
    );
    let ours = objects::join_list(d, new_members(c).filter_map(|m| m.ordinal), |k| {
        c.member_at(k).is_some_and(|m| !m.started)
    });
    let mut old: Vec<String> = c
        .members
        .iter()
        .filter(|m| m.ordinal.is_none())
        .map(|m| {
            format!(
                "{}={}",
                objects::started_member_alias(&old_name(m)),
                m.peer_url
            )
        })
        .collect();
    old.sort();
    let list: Vec<String> = std::iter::once(ours)
        .filter(|s| !s.is_empty())
        .chain(old)
        .collect();
    data.insert(config_key::INITIAL_CLUSTER.into(), list.join(","));
    data
}

/// The member config, Services and disruption budget, and the StatefulSet (empty at first) of
/// the engine's members; the member config is kept listing the current membership.
fn objects_of_the_new_members(d: &Desired, o: &Observed, c: &ClusterView) -> Option<Step> {
    let want = member_config(d, c);
    if o.config.as_ref() != Some(&want) {
        return Some(Step::WriteConfig {
            data: want,
            why: ConfigChange::Joins,
        });
    }
    if !o.supporting_objects {
        return Some(Step::ApplySupportingObjects);
    }
    o.statefulset
        .is_none()
        .then_some(Step::ResizeStatefulSet { from: 0, to: 0 })
}

/// The engine's members join one at a time as learners, each promoted once caught up.
fn join(d: &Desired, o: &Observed, c: &ClusterView) -> Option<Step> {
    let s = slots(o)?;
    if let Some(l) = c.learners().find(|m| m.ordinal.is_some()) {
        return Some(learner(d, o, l, s));
    }
    let voters = new_members(c).count() as u32;
    if voters >= d.replicas {
        return None;
    }
    // A slot without a member (a learner removed by hand after its pod was made): shrink it
    // away; its volume goes next, so that the next learner starts empty.
    if s > voters {
        return Some(Step::ResizeStatefulSet { from: s, to: s - 1 });
    }
    if let Some(step) = volumes_of_removed_members(d, o) {
        return Some(step);
    }
    let healthy = c.voters().filter(|m| m.healthy).count();
    let all = c.voters().count();
    if healthy < all {
        return Some(wait(
            Reason::MembersUnhealthy,
            format!("{healthy} of {all} voters are healthy; adding a member waits for all"),
        ));
    }
    Some(Step::AddLearner {
        ordinal: s,
        name: objects::pod_name(&d.name, s),
        peer_url: objects::peer_url(d, s),
    })
}

/// The engine's learner `l`: its slot is made, it starts, catches up and is promoted.
fn learner(d: &Desired, o: &Observed, l: &MemberView, s: u32) -> Step {
    let k = l.ordinal.unwrap_or_default();
    let name = objects::pod_name(&d.name, k);
    if k == s {
        return Step::ResizeStatefulSet { from: s, to: s + 1 };
    }
    if k > s {
        return hold(
            Reason::StrandedMember,
            format!("learner {name} has no slot: the StatefulSet has {s}; remove it with etcdctl"),
        );
    }
    let pod = o.pods.get(&k);
    if !l.started && pod.is_some_and(|p| p.waiting_reason.as_deref() == Some("CrashLoopBackOff")) {
        return Step::RestartMember {
            ordinal: k,
            pod: name,
            why: Restart::Rejoin,
        };
    }
    if !l.started || l.status.is_none() {
        return wait(
            Reason::AddingLearner,
            format!("learner {name} is starting and joining the old cluster"),
        );
    }
    if !caught_up(l, c_leader(o)) {
        return wait(
            Reason::PromotingLearner,
            format!("learner {name} is catching up with the leader"),
        );
    }
    Step::PromoteLearner { id: l.id, name }
}

fn c_leader(o: &Observed) -> Option<&MemberView> {
    reached(o).and_then(ClusterView::leader_member)
}

/// Every new member is a voter: leadership moves to them, the Service is taken over before the
/// last old member goes, and the old members are removed one at a time, the highest ordinal
/// first, each followed by its StatefulSet's scale-down.
fn retire(
    d: &Desired,
    o: &Observed,
    c: &ClusterView,
    a: &Adoption,
    old: &[&MemberView],
) -> Option<Step> {
    let not_ready: Vec<String> = new_members(c)
        .filter(|m| {
            !m.healthy
                || m.ordinal
                    .and_then(|k| o.pods.get(&k))
                    .is_none_or(|p| !p.ready || p.terminating)
        })
        .map(|m| member_name(d, m))
        .collect();
    if !not_ready.is_empty() {
        return Some(wait(
            Reason::MembersNotReady,
            format!(
                "old members are retired once every new member is a healthy, Ready voter: {} not yet",
                not_ready.join(", ")
            ),
        ));
    }
    if let Some(step) = old_statefulset_down(a, o, old) {
        return Some(step);
    }
    let Some(leader) = c.leader_member() else {
        return Some(wait(Reason::MembersUnhealthy, "the cluster has no leader"));
    };
    if leader.ordinal.is_none() {
        let to = new_members(c).min_by_key(|m| m.ordinal)?;
        return Some(Step::MoveLeader {
            from: old_name(leader),
            to_id: to.id,
            to: member_name(d, to),
        });
    }
    let view = o.adoption.clone().unwrap_or_default();
    if let Some(service) = &a.take_over_service
        && old.len() == 1
        && !view.service_taken
    {
        if !view.service_found {
            return Some(hold(
                Reason::Adopting,
                format!(
                    "Service {service} to take over does not exist; create it again, or remove \
                     spec.adopt.takeOverService"
                ),
            ));
        }
        return Some(Step::TakeOverService {
            service: service.clone(),
        });
    }
    let victim = old
        .iter()
        .max_by_key(|m| (a.old_ordinal(&m.name), old_name(m)))?;
    Some(remove_keeping_quorum(c, victim, old_name(victim)))
}

/// Removes `victim` (named `name`) when the other voters keep a healthy quorum; holds otherwise.
fn remove_keeping_quorum(c: &ClusterView, victim: &MemberView, name: String) -> Step {
    let voters = c.voters().count();
    let rest_healthy = c
        .voters()
        .filter(|v| v.id != victim.id && v.healthy)
        .count();
    if rest_healthy < quorum(voters.saturating_sub(1)) {
        return hold(
            Reason::QuorumAtRisk,
            format!(
                "removing {name} would leave {rest_healthy} healthy of {} voters (quorum {})",
                voters.saturating_sub(1),
                quorum(voters.saturating_sub(1))
            ),
        );
    }
    Step::RemoveMember {
        id: victim.id,
        name,
    }
}

/// The old StatefulSet scaled down by one while it has a slot above its remaining members (its
/// top member was removed). `None` without a StatefulSet.
fn old_statefulset_down(a: &Adoption, o: &Observed, old: &[&MemberView]) -> Option<Step> {
    let name = a.statefulset.clone()?;
    let r = o.adoption.as_ref()?.old_replicas?;
    let keep = old
        .iter()
        .filter_map(|m| a.old_ordinal(&m.name))
        .max()
        .map_or(0, |k| k + 1);
    // (`then`, not `then_some`: `r - 1` only once `r > keep`.)
    (r > keep).then(|| Step::ResizeOldStatefulSet {
        name,
        from: r,
        to: r - 1,
    })
}

/// `spec.adopt.abort`: the engine's members go, one at a time (the learner first, leadership
/// handed back to an old member), their slots and volumes after them. Refused once an old
/// member was retired: it cannot come back on its old data. The old members it began with are
/// its endpoints (one each, from the survey), not the spec's size, which may have changed since.
fn abort(d: &Desired, o: &Observed, c: &ClusterView, old: &[&MemberView]) -> Option<Step> {
    let began = d.adopt.as_ref().map_or(0, |a| a.endpoints.len());
    if old.len() < began {
        return Some(hold(
            Reason::Adopting,
            format!(
                "the adoption cannot be aborted: {} of {began} old members were retired already \
                 and cannot come back on their data; remove spec.adopt.abort to finish it",
                began - old.len(),
            ),
        ));
    }
    if let Some(l) = c.learners().find(|m| m.ordinal.is_some()) {
        return Some(Step::RemoveMember {
            id: l.id,
            name: member_name(d, l),
        });
    }
    let s = slots(o).unwrap_or(0);
    let top = new_members(c).filter_map(|m| m.ordinal).max();
    let keep = top.map_or(0, |k| k + 1);
    if s > keep {
        return Some(Step::ResizeStatefulSet { from: s, to: s - 1 });
    }
    if let Some(step) = volumes_of_removed_members(d, o) {
        return Some(step);
    }
    let Some(victim) = top.and_then(|k| c.member_at(k)) else {
        // Only the old members are left, as before.
        return Some(Step::Idle);
    };
    if c.leader == Some(victim.id) || c.leader_member().is_some_and(|l| l.ordinal.is_some()) {
        let Some(to) = old.iter().filter(|m| m.healthy).min_by_key(|m| old_name(m)) else {
            return Some(hold(
                Reason::QuorumAtRisk,
                "no healthy old member can take leadership back",
            ));
        };
        let from = c
            .leader_member()
            .map_or_else(String::new, |l| member_name(d, l));
        return Some(Step::MoveLeader {
            from,
            to_id: to.id,
            to: old_name(to),
        });
    }
    Some(remove_keeping_quorum(c, victim, member_name(d, victim)))
}

/// `status.adoption`: where the adoption of `spec.adopt` stands after a pass that chose `step`
/// (kept from the last status while no member answers).
pub fn record(
    d: &Desired,
    o: &Observed,
    step: &Step,
    prev: Option<&EtcdClusterStatus>,
) -> Option<AdoptionStatus> {
    let a = d.adopt.as_ref()?;
    let Some(c) = reached_as_surveyed(d, o) else {
        return prev
            .and_then(|p| p.adoption.clone())
            .or(Some(AdoptionStatus {
                phase: if a.abort {
                    adoption_phase::ABORTING
                } else {
                    adoption_phase::JOINING
                }
                .into(),
                ..Default::default()
            }));
    };
    let mut old: Vec<String> = c
        .members
        .iter()
        .filter(|m| m.ordinal.is_none())
        .map(old_name)
        .collect();
    old.sort();
    let new_voters = new_members(c).filter(|m| !m.learner).count();
    let old_down = o
        .adoption
        .as_ref()
        .and_then(|v| v.old_replicas)
        .is_none_or(|r| r == 0);
    let phase = if a.abort {
        if new_members(c).next().is_none() && *step == Step::Idle {
            adoption_phase::ABORTED
        } else {
            adoption_phase::ABORTING
        }
    } else if old.is_empty() && old_down {
        adoption_phase::ADOPTED
    } else if new_voters >= d.replicas as usize {
        adoption_phase::RETIRING
    } else {
        adoption_phase::JOINING
    };
    Some(AdoptionStatus {
        phase: phase.into(),
        old_members: old,
        new_voters: new_voters as i32,
    })
}

/// The cluster etcd answered as, unless it is not the one `spec.adopt.clusterId` names: what
/// members of another cluster said is not reported (`status.adoption`, the member list, the
/// cluster id), so that a wrong guess learns nothing of them.
pub fn reached_as_surveyed<'o>(d: &Desired, o: &'o Observed) -> Option<&'o ClusterView> {
    reached(o).filter(|c| {
        d.adopt
            .as_ref()
            .is_none_or(|a| a.cluster_id == c.cluster_id)
    })
}

/// The done-mark `status.completed.adoption` keeps for adoption `a`: the cluster id it adopted
/// (the spec's own, never one a member answered with).
pub fn done_mark(a: &Adoption) -> String {
    fmt_id(a.cluster_id)
}

/// The spec as a finished adoption leaves it: once `status.completed.adoption` names the cluster
/// `spec.adopt` asks for, the request is done for good and the pass runs as if it were gone: no
/// rule dials the old members, waits for them or keeps the NetworkPolicy open for them, whatever
/// comes after (a hibernation, the old StatefulSet deleted, a recovery). Settled before the pass
/// observes anything.
pub fn settle(mut d: Desired, done: &crate::api::CompletedRequests) -> Desired {
    let done = done.adoption.as_deref();
    if d.adopt
        .as_ref()
        .is_some_and(|a| done == Some(done_mark(a).as_str()))
    {
        d.adopt = None;
    }
    d
}

/// `status.completed.adoption` after a pass: the mark kept, or this adoption's once `record`
/// says it is adopted.
pub fn completed_mark(
    d: &Desired,
    o: &Observed,
    recorded: Option<&AdoptionStatus>,
) -> Option<String> {
    match (&d.adopt, recorded) {
        (Some(a), Some(st)) if st.phase == adoption_phase::ADOPTED => Some(done_mark(a)),
        _ => o.completed.adoption.clone(),
    }
}

/// Whether a pass should still reach the old members through `spec.adopt.endpoints`: not once
/// the adoption is recorded as done (they are gone).
pub fn old_members_reachable(d: &Desired, last: Option<&EtcdClusterStatus>) -> bool {
    d.adopt.is_some()
        && last
            .and_then(|s| s.adoption.as_ref())
            .is_none_or(|st| st.phase != adoption_phase::ADOPTED)
}

#[cfg(test)]
pub(super) mod tests;
