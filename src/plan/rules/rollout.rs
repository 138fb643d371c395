//! The numbered rules 6 to 8: members on an old template restarted one at a time, unhealthy
//! voters reported, voters not Ready waited for.

use super::*;

/// 6. Members on an old template restart one at a time, highest ordinal first, leader last.
pub(in crate::plan) fn stale_members(d: &Desired, o: &Observed) -> Option<Step> {
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
            .find(|p| {
                p.restarts > 0
                    || p.waiting_reason.as_deref() == Some("CrashLoopBackOff")
                    || p.trouble().is_some()
            });
        if let Some(p) = failing {
            let why = p.trouble().map(|t| format!(": {t}")).unwrap_or_default();
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
        return Some(move_leader_off(d, o, c, m));
    }
    Some(Step::RestartMember {
        ordinal: pick,
        pod: objects::pod_name(&d.name, pick),
        why: Restart::NewTemplate,
    })
}

/// 7. Right-sized and current, but a voter is unhealthy: reported, not touched.
pub(in crate::plan) fn unhealthy_voters(d: &Desired, o: &Observed) -> Option<Step> {
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
pub(in crate::plan) fn voters_not_ready(d: &Desired, o: &Observed) -> Option<Step> {
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
