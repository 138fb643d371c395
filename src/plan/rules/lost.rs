//! Quorum and lost members: what proves a quorum, a quorum lost, a member that looks lost and
//! its replacement.

use super::*;

/// Fewer voters than a quorum answer (status and the member list need no quorum, so the
/// survivors still do): report who is gone and what to run; never act on it. While a gone
/// member's pod is still starting (or about to be recreated) this is a wait; once every gone
/// member's pod is stuck (crash-looping, its data gone, its image missing) it is a hold.
pub(in crate::plan) fn quorum_lost(d: &Desired, o: &Observed) -> Option<Step> {
    let c = reached(o)?;
    let voters = c.voters().count();
    let answering = c.voters().filter(|m| m.status.is_some()).count();
    if voters == 0 || answering >= quorum(voters) {
        return None;
    }
    let gone: Vec<&MemberView> = c.voters().filter(|m| m.status.is_none()).collect();
    let names: Vec<String> = gone.iter().map(|m| member_name(d, m)).collect();
    if let Some(proof) = quorum_proof(d, o) {
        // The driver is cut off from them, not the cluster from its quorum: nothing is judged
        // on what it cannot see (no member is replaced, no recovery is right).
        return Some(wait(
            Reason::EtcdUnreachable,
            format!(
                "{} of {voters} voters answer here, yet the cluster has a quorum: {proof}; {} \
                 {} unreachable from here, not down. Nothing is changed until they answer (check \
                 the network path from this driver, or run it in the cluster)",
                answering,
                names.join(", "),
                if names.len() == 1 { "is" } else { "are" },
            ),
        ));
    }
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

/// What proves the cluster has a quorum however few of its voters this driver reaches, in a
/// sentence naming the member: a voter that passed its linearizable read in this pass (etcd
/// serves one only after its leader confirmed its leadership with a majority of the voters,
/// ReadIndex), else a voter this driver does not reach at all whose pod the kubelet counts Ready
/// (its readiness probe is the same read from inside the pod, `objects::workload`, failing it
/// takes the pod out within seconds). A voter that answered here but failed the read is fresher
/// evidence than its pod's readiness, which lags a real loss by up to three probe periods.
/// `None`: nothing seen proves one. A member that does not answer here may be cut off from this
/// driver only; a proven quorum says the cluster serves, whatever the driver reaches.
pub fn quorum_proof(d: &Desired, o: &Observed) -> Option<String> {
    let c = reached(o)?;
    if let Some(m) = c.voters().find(|m| m.healthy || m.alarmed) {
        return Some(format!(
            "{} answered a linearizable read, which its leader serves only with a majority of the \
             voters behind it",
            member_name(d, m)
        ));
    }
    c.voters()
        .filter(|m| m.status.is_none())
        .find(|m| {
            m.ordinal
                .and_then(|k| o.pods.get(&k))
                .is_some_and(|p| p.ready && p.running && !p.terminating)
        })
        .map(|m| {
            format!(
                "{}'s pod is Ready (the kubelet's probe, a linearizable read inside the pod, passes)",
                member_name(d, m)
            )
        })
}

/// Why member `m` looks lost, if it does: it does not answer as itself, and its pod says its
/// data is gone or unusable, answers as another member, or is on (or pinned by its volume to)
/// a node that is gone.
pub(in crate::plan) fn looks_lost(o: &Observed, m: &MemberView) -> Option<String> {
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
pub(in crate::plan) fn lost_members(d: &Desired, o: &Observed) -> Option<Step> {
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
