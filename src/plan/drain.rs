//! Drains: leadership leaves a member before its pod is evicted, where the engine can see the
//! eviction coming (`PodView::leaving`: its node cordoned, the pod marked `DisruptionTarget` or
//! being deleted). The disruption budget lets one member go at a time; this rule spares the
//! cluster the election a leader's eviction would cost (etcd hands leadership over by itself
//! when it stops gracefully; a pod killed before that, or a node that stops answering, costs an
//! election timeout of writes).
//!
//! Pure: no async, no clock, no client.
//!
//! ```text
//!  the leader's pod is leaving, a healthy voter's pod is not:
//!      MoveLeader(to the lowest such ordinal) ─▶ (the eviction takes a follower)
//!  the leader's pod is leaving, every other voter's is too: nothing to do here (etcd's own
//!      hand-over on SIGTERM); rules that would move leadership off a member wait instead of
//!      handing it to a leaving one (`move_leader_off`)
//! ```

use super::*;

/// Whether member `m`'s pod is about to go (see `PodView::leaving`).
pub(super) fn leaving(o: &Observed, m: &MemberView) -> bool {
    why_leaving(o, m).is_some()
}

fn why_leaving<'o>(o: &'o Observed, m: &MemberView) -> Option<&'o str> {
    o.pods.get(&m.ordinal?)?.leaving.as_deref()
}

/// The leader's pod is about to go and a healthy voter's pod is staying: leadership moves there
/// first. Before the rules that change membership or restart members: a drain does not wait
/// for them, and moving leadership is safe at any point (etcd refuses a target that lags).
pub(super) fn leader_leaving(d: &Desired, o: &Observed) -> Option<Step> {
    let c = reached(o)?;
    let leader = c.leader_member()?;
    why_leaving(o, leader)?;
    let to = staying_voter(o, c, leader)?;
    Some(Step::MoveLeader {
        from: member_name(d, leader),
        to_id: to.id,
        to: member_name(d, to),
    })
}

/// The healthy voter (other than `from`) whose pod is staying, lowest ordinal first.
pub(super) fn staying_voter<'c>(
    o: &Observed,
    c: &'c ClusterView,
    from: &MemberView,
) -> Option<&'c MemberView> {
    c.voters()
        .filter(|m| m.id != from.id && m.healthy && !leaving(o, m))
        .min_by_key(|m| m.ordinal)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{cluster, desired, healthy};
    use super::*;

    /// A healthy 3-member cluster (leader: ordinal 0) whose pods at `ordinals` are leaving.
    fn draining(ordinals: &[u32], why: &str) -> (Desired, Observed) {
        let d = desired(3);
        let mut o = healthy(&d, 3);
        for k in ordinals {
            o.pods.get_mut(k).unwrap().leaving = Some(why.into());
        }
        (d, o)
    }

    fn moves_to(step: &Step, ordinal: u32) -> bool {
        matches!(step, Step::MoveLeader { from, to_id, .. }
            if from == "demo-0" && *to_id == 100 + ordinal as u64)
    }

    #[test]
    fn a_leader_on_a_cordoned_node_hands_leadership_to_a_staying_voter() {
        let (d, o) = draining(&[0], "its node n0 is cordoned");
        let step = plan(&d, &o);
        assert!(moves_to(&step, 1), "{step:?}");
    }

    #[test]
    fn a_leader_marked_for_eviction_hands_leadership_over_before_it_goes() {
        let (d, o) = draining(&[0], "it is marked for disruption (EvictionByEvictionAPI)");
        assert!(moves_to(&plan(&d, &o), 1));
    }

    #[test]
    fn leadership_skips_voters_that_are_leaving_too() {
        let (d, o) = draining(&[0, 1], "its node n0 is cordoned");
        assert!(moves_to(&plan(&d, &o), 2));
    }

    #[test]
    fn leadership_skips_unhealthy_voters() {
        let (d, mut o) = draining(&[0], "its node n0 is cordoned");
        cluster(&mut o).members[1].healthy = false;
        assert!(matches!(
            leader_leaving(&d, &o),
            Some(ref s) if moves_to(s, 2)
        ));
    }

    #[test]
    fn a_follower_leaving_needs_no_step() {
        let (d, o) = draining(&[2], "its node n2 is cordoned");
        assert_eq!(leader_leaving(&d, &o), None);
        assert_eq!(plan(&d, &o), Step::Idle);
    }

    #[test]
    fn with_every_voter_leaving_leadership_stays_where_it_is() {
        let (d, o) = draining(&[0, 1, 2], "its node is cordoned");
        assert_eq!(leader_leaving(&d, &o), None);
    }

    #[test]
    fn a_restart_of_the_leader_does_not_hand_leadership_to_a_leaving_member() {
        // Member 1 is the leader and must go first (scale-down to 1 removes 2, then 1); 0 leaves.
        let d = desired(1);
        let mut o = healthy(&d, 2);
        cluster(&mut o).leader = Some(101);
        o.pods.get_mut(&0).unwrap().leaving = Some("its node n0 is cordoned".into());
        let step = plan(&d, &o);
        assert!(
            matches!(&step, Step::Wait { reason: Reason::MovingLeader, message }
                if message.contains("demo-0")),
            "{step:?}"
        );
    }
}
