//! Membership against the StatefulSet: foreign members, the member config, bootstrapping, and
//! the numbered rules 1 to 5 (members and slots, removed members' volumes, learners, scaling).

use super::*;

pub(in crate::plan) fn foreign_members(_: &Desired, o: &Observed) -> Option<Step> {
    let m = reached(o)?.members.iter().find(|m| m.ordinal.is_none())?;
    Some(hold(
        Reason::StrandedMember,
        format!(
            "member {} ({}) was not added by kubectl-etcd; remove it with etcdctl",
            m.name, m.peer_url
        ),
    ))
}

pub(in crate::plan) fn member_config_outdated(d: &Desired, o: &Observed) -> Option<Step> {
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

pub(in crate::plan) fn bootstrap_in_progress(_: &Desired, o: &Observed) -> Option<Step> {
    (!bootstrapped(o)).then(|| wait(Reason::Bootstrapping, "initial members are starting"))
}

pub(in crate::plan) fn pods_beyond_the_workload_terminating(
    _: &Desired,
    o: &Observed,
) -> Option<Step> {
    let s = slots(o)?;
    let (ord, pod) = o.pods.iter().find(|(o, p)| **o >= s && p.terminating)?;
    Some(wait(
        Reason::ResizingWorkload,
        format!("pod {} of ordinal {ord} is terminating", pod.name),
    ))
}

/// 1. Members without a StatefulSet slot (highest first): a learner added before the resize,
///    or one left behind by a reversed scale-up.
pub(in crate::plan) fn members_beyond_the_workload(d: &Desired, o: &Observed) -> Option<Step> {
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
pub(in crate::plan) fn slots_without_a_member(d: &Desired, o: &Observed) -> Option<Step> {
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
        let trouble = pod.trouble().map(|t| format!(" ({t})")).unwrap_or_default();
        return Some(wait(
            Reason::ReplacingMember,
            format!("pod {pod_name} is starting{trouble}"),
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
pub(in crate::plan) fn volumes_of_removed_members(d: &Desired, o: &Observed) -> Option<Step> {
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
pub(in crate::plan) fn learner_in_its_slot(d: &Desired, o: &Observed) -> Option<Step> {
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
        let trouble = pod
            .and_then(|p| p.trouble())
            .map(|t| format!(" ({t})"))
            .unwrap_or_default();
        return Some(wait(
            Reason::AddingLearner,
            format!("learner {name} is starting{trouble}"),
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
pub(in crate::plan) fn scale_one_member_at_a_time(d: &Desired, o: &Observed) -> Option<Step> {
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
        return Some(move_leader_off(d, o, c, victim));
    }
    Some(Step::RemoveMember {
        id: victim.id,
        name: member_name(d, victim),
    })
}
