//! The adoption rules, one observed situation each: from an old cluster of 3 (StatefulSet
//! `etcd`, members etcd-0..2) to `demo` of 3, and back on abort.

use super::*;
use crate::api::AdoptSpec;
use crate::model::{AdoptionView, MemberStatusView};
use crate::plan::tests::{healthy, member};

pub(in crate::plan) fn adopting(abort: bool, take_over: bool) -> Desired {
    crate::fixtures::cluster("demo")
        .spec(|s| {
            s.adopt = Some(AdoptSpec {
                stateful_set: Some("etcd".into()),
                endpoints: (0..3)
                    .map(|k| format!("http://etcd-{k}.etcd.ns.svc.cluster.local:2379"))
                    .collect(),
                cluster_id: "0000000000000007".into(),
                take_over_service: take_over.then(|| "etcd-client".into()),
                abort,
                ..Default::default()
            })
        })
        .desired()
}

fn old_member(k: u32) -> MemberView {
    MemberView {
        id: 1 + k as u64,
        name: format!("etcd-{k}"),
        ordinal: None,
        peer_url: format!("http://etcd-{k}.etcd.ns.svc.cluster.local:2380"),
        learner: false,
        started: true,
        status: Some(MemberStatusView {
            version: crate::model::Version::parse("3.5.16"),
            raft_index: 1000,
            leader: 1,
            ..Default::default()
        }),
        healthy: true,
        ..Default::default()
    }
}

/// The old members `old` (by ordinal; etcd-0 leads) and `new` voters of the engine's, each
/// with its pod and volume; the old StatefulSet at `old_replicas`.
fn world(d: &Desired, old: &[u32], new: u32, old_replicas: u32) -> Observed {
    let mut o = healthy(d, new);
    let c = cluster(&mut o);
    c.leader = Some(1);
    c.members.extend(old.iter().map(|k| old_member(*k)));
    let c = c.clone();
    o.config = Some(member_config(d, &c));
    o.adoption = Some(AdoptionView {
        old_replicas: Some(old_replicas),
        service_taken: false,
        service_found: true,
        ..Default::default()
    });
    o
}

fn cluster(o: &mut Observed) -> &mut ClusterView {
    crate::plan::tests::cluster(o)
}

fn learner(d: &Desired, o: &mut Observed, k: u32, started: bool, raft_index: u64) {
    let mut m = member(d, k);
    m.learner = true;
    m.started = started;
    if started {
        m.status.as_mut().unwrap().raft_index = raft_index;
    } else {
        m.name.clear();
        m.status = None;
        m.healthy = false;
    }
    cluster(o).members.push(m);
    let c = cluster(o).clone();
    o.config = Some(member_config(d, &c));
}

#[test]
fn the_objects_come_first_the_member_config_listing_the_old_members() {
    let d = adopting(false, false);
    let mut o = world(&d, &[0, 1, 2], 0, 3);
    o.config = None;
    o.statefulset = None;
    o.supporting_objects = false;
    let Step::WriteConfig { data, .. } = plan(&d, &o) else {
        panic!("{}", plan(&d, &o))
    };
    assert_eq!(data[config_key::INITIAL_CLUSTER_STATE], "existing");
    assert_eq!(
        data[config_key::INITIAL_CLUSTER],
        "etcd-0.started=http://etcd-0.etcd.ns.svc.cluster.local:2380,\
         etcd-1.started=http://etcd-1.etcd.ns.svc.cluster.local:2380,\
         etcd-2.started=http://etcd-2.etcd.ns.svc.cluster.local:2380"
    );
    o.config = Some(data);
    assert_eq!(plan(&d, &o), Step::ApplySupportingObjects);
    o.supporting_objects = true;
    assert_eq!(plan(&d, &o), Step::ResizeStatefulSet { from: 0, to: 0 });
}

#[test]
fn the_first_new_member_joins_the_old_cluster_as_a_learner() {
    let d = adopting(false, false);
    let o = world(&d, &[0, 1, 2], 0, 3);
    assert_eq!(
        plan(&d, &o),
        Step::AddLearner {
            ordinal: 0,
            name: "demo-0".into(),
            peer_url: objects::peer_url(&d, 0),
        }
    );
}

#[test]
fn a_learner_is_listed_under_its_own_name_before_its_slot_is_made() {
    let d = adopting(false, false);
    let mut o = world(&d, &[0, 1, 2], 0, 3);
    learner(&d, &mut o, 0, false, 0);
    // The config written with the old one: the learner must be added to the list first.
    let mut stale = o.clone();
    stale.config = Some(member_config(&d, cluster(&mut world(&d, &[0, 1, 2], 0, 3))));
    let Step::WriteConfig { data, .. } = plan(&d, &stale) else {
        panic!("{}", plan(&d, &stale))
    };
    assert!(data[config_key::INITIAL_CLUSTER].starts_with(&format!(
        "demo-0={},etcd-0.started=",
        objects::peer_url(&d, 0)
    )));
    assert_eq!(plan(&d, &o), Step::ResizeStatefulSet { from: 0, to: 1 });
}

#[test]
fn a_caught_up_learner_is_promoted_and_a_lagging_one_waited_for() {
    let d = adopting(false, false);
    let mut o = world(&d, &[0, 1, 2], 1, 3);
    learner(&d, &mut o, 1, true, 500);
    o.statefulset.as_mut().unwrap().replicas = 2;
    assert!(
        matches!(
            plan(&d, &o),
            Step::Wait {
                reason: Reason::PromotingLearner,
                ..
            }
        ),
        "{}",
        plan(&d, &o)
    );
    cluster(&mut o)
        .members
        .last_mut()
        .unwrap()
        .status
        .as_mut()
        .unwrap()
        .raft_index = 990;
    assert_eq!(
        plan(&d, &o),
        Step::PromoteLearner {
            id: 101,
            name: "demo-1".into()
        }
    );
}

#[test]
fn no_member_is_added_while_an_old_voter_is_unhealthy() {
    let d = adopting(false, false);
    let mut o = world(&d, &[0, 1, 2], 1, 3);
    cluster(&mut o).members[2].healthy = false;
    assert!(matches!(
        plan(&d, &o),
        Step::Wait {
            reason: Reason::MembersUnhealthy,
            ..
        }
    ));
}

#[test]
fn once_every_new_member_votes_leadership_moves_to_them() {
    let d = adopting(false, false);
    let o = world(&d, &[0, 1, 2], 3, 3);
    assert_eq!(
        plan(&d, &o),
        Step::MoveLeader {
            from: "etcd-0".into(),
            to_id: 100,
            to: "demo-0".into()
        }
    );
}

#[test]
fn old_members_retire_only_once_every_new_one_is_ready() {
    let d = adopting(false, false);
    let mut o = world(&d, &[0, 1, 2], 3, 3);
    o.pods.get_mut(&2).unwrap().ready = false;
    assert!(matches!(
        plan(&d, &o),
        Step::Wait {
            reason: Reason::MembersNotReady,
            ..
        }
    ));
}

#[test]
fn the_old_members_are_removed_highest_ordinal_first_each_followed_by_a_scale_down() {
    let d = adopting(false, false);
    let mut o = world(&d, &[0, 1, 2], 3, 3);
    cluster(&mut o).leader = Some(100);
    assert_eq!(
        plan(&d, &o),
        Step::RemoveMember {
            id: 3,
            name: "etcd-2".into()
        }
    );
    let mut o = world(&d, &[0, 1], 3, 3);
    cluster(&mut o).leader = Some(100);
    assert_eq!(
        plan(&d, &o),
        Step::ResizeOldStatefulSet {
            name: "etcd".into(),
            from: 3,
            to: 2
        }
    );
    o.adoption.as_mut().unwrap().old_replicas = Some(2);
    assert_eq!(
        plan(&d, &o),
        Step::RemoveMember {
            id: 2,
            name: "etcd-1".into()
        }
    );
}

#[test]
fn no_old_member_is_removed_while_a_new_member_is_unhealthy() {
    let d = adopting(false, false);
    let mut o = world(&d, &[0, 1, 2], 3, 3);
    let c = cluster(&mut o);
    c.leader = Some(100);
    for m in c.members.iter_mut().filter(|m| m.ordinal.is_none()).take(2) {
        m.healthy = false;
    }
    c.members[1].healthy = false;
    // 6 voters, 3 unhealthy: removing etcd-2 leaves 2 healthy of 5.
    let step = plan(&d, &o);
    assert!(
        matches!(step, Step::Wait { .. } | Step::Hold { .. }),
        "{step}"
    );
    assert!(!matches!(step, Step::RemoveMember { .. }));
}

#[test]
fn the_service_is_taken_over_before_the_last_old_member_goes() {
    let d = adopting(false, true);
    let mut o = world(&d, &[0], 3, 1);
    cluster(&mut o).leader = Some(100);
    assert_eq!(
        plan(&d, &o),
        Step::TakeOverService {
            service: "etcd-client".into()
        }
    );
    o.adoption.as_mut().unwrap().service_taken = true;
    assert_eq!(
        plan(&d, &o),
        Step::RemoveMember {
            id: 1,
            name: "etcd-0".into()
        }
    );
    o.adoption.as_mut().unwrap().service_taken = false;
    o.adoption.as_mut().unwrap().service_found = false;
    assert!(matches!(plan(&d, &o), Step::Hold { .. }));
}

#[test]
fn adopted_the_old_statefulset_ends_at_zero_then_the_other_rules_speak() {
    let d = adopting(false, false);
    let mut o = world(&d, &[], 3, 1);
    cluster(&mut o).leader = Some(100);
    assert_eq!(
        plan(&d, &o),
        Step::ResizeOldStatefulSet {
            name: "etcd".into(),
            from: 1,
            to: 0
        }
    );
    o.adoption.as_mut().unwrap().old_replicas = Some(0);
    assert_eq!(adoption(&d, &o), None);
    assert_eq!(
        record(&d, &o, &Step::Idle, None).unwrap().phase,
        adoption_phase::ADOPTED
    );
}

#[test]
fn another_cluster_id_or_a_stranger_learner_holds_everything() {
    let d = adopting(false, false);
    let mut o = world(&d, &[0, 1, 2], 1, 3);
    cluster(&mut o).cluster_id = 9;
    assert!(matches!(
        plan(&d, &o),
        Step::Hold {
            reason: Reason::ClusterIdMismatch,
            ..
        }
    ));
    let mut o = world(&d, &[0, 1, 2], 1, 3);
    let mut stranger = old_member(5);
    stranger.learner = true;
    cluster(&mut o).members.push(stranger);
    assert!(matches!(
        plan(&d, &o),
        Step::Hold {
            reason: Reason::StrandedMember,
            ..
        }
    ));
    let split = Observed {
        etcd: EtcdView::Split {
            cluster_ids: vec![7, 9],
        },
        ..world(&d, &[0], 0, 3)
    };
    assert!(matches!(
        plan(&d, &split),
        Step::Hold {
            reason: Reason::ClusterIdMismatch,
            ..
        }
    ));
}

#[test]
fn an_old_member_outside_the_statefulset_holds() {
    let d = adopting(false, false);
    let mut o = world(&d, &[0, 1, 2], 0, 3);
    cluster(&mut o).members[0].name = "elsewhere".into();
    assert!(matches!(
        plan(&d, &o),
        Step::Hold {
            reason: Reason::StrandedMember,
            ..
        }
    ));
}

#[test]
fn nothing_answering_before_the_first_slot_is_a_wait() {
    let d = adopting(false, false);
    let mut o = world(&d, &[0, 1, 2], 0, 3);
    o.etcd = EtcdView::Unreachable {
        errors: vec!["refused".into()],
    };
    assert!(matches!(
        plan(&d, &o),
        Step::Wait {
            reason: Reason::EtcdUnreachable,
            ..
        }
    ));
}

#[test]
fn abort_removes_the_learner_first_then_hands_leadership_back() {
    let d = adopting(true, false);
    let mut o = world(&d, &[0, 1, 2], 2, 3);
    learner(&d, &mut o, 2, true, 10);
    o.statefulset.as_mut().unwrap().replicas = 3;
    assert_eq!(
        plan(&d, &o),
        Step::RemoveMember {
            id: 102,
            name: "demo-2".into()
        }
    );
    let mut o = world(&d, &[0, 1, 2], 2, 3);
    cluster(&mut o).leader = Some(101);
    assert_eq!(
        plan(&d, &o),
        Step::MoveLeader {
            from: "demo-1".into(),
            to_id: 1,
            to: "etcd-0".into()
        }
    );
}

#[test]
fn abort_removes_the_new_members_highest_first_their_slots_and_volumes_after_them() {
    let d = adopting(true, false);
    let mut o = world(&d, &[0, 1, 2], 2, 3);
    assert_eq!(
        plan(&d, &o),
        Step::RemoveMember {
            id: 101,
            name: "demo-1".into()
        }
    );
    // demo-1 removed: its slot goes, then its volume.
    cluster(&mut o).members.retain(|m| m.id != 101);
    assert_eq!(plan(&d, &o), Step::ResizeStatefulSet { from: 2, to: 1 });
    o.statefulset.as_mut().unwrap().replicas = 1;
    o.pods.remove(&1);
    assert_eq!(
        plan(&d, &o),
        Step::DeleteVolume {
            ordinal: 1,
            claim: "data-demo-1".into()
        }
    );
    // Nothing of the engine's left: done, and recorded so.
    let o = world(&d, &[0, 1, 2], 0, 3);
    let mut o = o;
    o.statefulset.as_mut().unwrap().replicas = 0;
    assert_eq!(plan(&d, &o), Step::Idle);
    assert_eq!(
        record(&d, &o, &Step::Idle, None).unwrap().phase,
        adoption_phase::ABORTED
    );
}

#[test]
fn abort_is_refused_once_an_old_member_was_retired() {
    let d = adopting(true, false);
    let o = world(&d, &[0, 1], 3, 2);
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::Hold { message, .. } if message.contains("1 of 3 old members were retired")),
        "{step}"
    );
}

#[test]
fn the_status_records_the_phase_and_the_old_members_left() {
    let d = adopting(false, false);
    let o = world(&d, &[0, 1, 2], 1, 3);
    let st = record(&d, &o, &Step::Idle, None).unwrap();
    assert_eq!(st.phase, adoption_phase::JOINING);
    assert_eq!(st.old_members, ["etcd-0", "etcd-1", "etcd-2"]);
    assert_eq!(st.new_voters, 1);
    let o = world(&d, &[0, 1], 3, 2);
    assert_eq!(
        record(&d, &o, &Step::Idle, None).unwrap().phase,
        adoption_phase::RETIRING
    );
    // Once adopted, the old members are no longer dialed.
    let done = EtcdClusterStatus {
        adoption: Some(AdoptionStatus {
            phase: adoption_phase::ADOPTED.into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(!old_members_reachable(&d, Some(&done)));
    assert!(old_members_reachable(&d, None));
}

#[test]
fn a_refused_adoption_holds_before_anything_with_the_field_and_the_fix() {
    let d = adopting(false, false);
    let why = "spec.adopt.endpoints: http://etcd-0.etcd.other.svc:2379 names namespace other; …";
    for mut o in [
        world(&d, &[0, 1, 2], 0, 3),
        world(&d, &[0, 1, 2], 2, 3),
        Observed {
            etcd: EtcdView::NotQueried,
            ..world(&d, &[0, 1, 2], 0, 3)
        },
    ] {
        o.adoption.as_mut().unwrap().refused = Some(why.into());
        assert_eq!(
            plan(&d, &o),
            Step::Hold {
                reason: Reason::AdoptionRefused,
                message: why.into(),
            }
        );
    }
}

/// A guess of the cluster id in the spec learns nothing from a wrong answer: neither the hold
/// (the condition, the Event) nor the status says the id the members answered with, or who
/// they are.
#[test]
fn a_cluster_id_that_does_not_match_the_spec_is_never_echoed() {
    let d = adopting(false, false);
    let real = 0x5eed_cafe_u64;
    let mut o = world(&d, &[0, 1, 2], 0, 3);
    cluster(&mut o).cluster_id = real;
    let split = Observed {
        etcd: EtcdView::Split {
            cluster_ids: vec![7, real],
        },
        ..world(&d, &[0], 0, 3)
    };
    for o in [o, split] {
        let step = plan(&d, &o);
        let Step::Hold { reason, message } = &step else {
            panic!("{step}")
        };
        assert_eq!(*reason, Reason::ClusterIdMismatch);
        assert!(!message.contains(&fmt_id(real)), "{message}");
        assert!(!message.contains("5eedcafe"), "{message}");
        assert!(message.contains("0000000000000007"), "{message}");
        let st = crate::plan::status::derive_status(
            &d,
            &o,
            &step,
            None,
            jiff::Timestamp::from_second(1).unwrap(),
        );
        let text = serde_json::to_string(&st).unwrap();
        assert!(!text.contains("5eedcafe"), "{text}");
        assert!(
            !text.contains("etcd-1"),
            "the other cluster's members: {text}"
        );
    }
    let mut o = world(&d, &[0, 1, 2], 0, 3);
    cluster(&mut o).cluster_id = real;
    let st = record(&d, &o, &Step::Idle, None).unwrap();
    assert!(st.old_members.is_empty(), "{st:?}");
}

/// Issue 43 R2: an adopted cluster hibernated (its StatefulSet at 0, nobody answers), woken, or
/// with the old StatefulSet deleted: the finished adoption must not wait for the old, gone
/// members. The pass that saw it adopted marks it done (`status.completed.adoption`); from then
/// on the request is settled out of the spec before anything is observed.
#[test]
fn a_finished_adoption_stays_finished_through_hibernation_and_waking() {
    let d = adopting(false, true);
    let adopted = world(&d, &[], 3, 0);
    let st = record(&d, &adopted, &Step::Idle, None).unwrap();
    assert_eq!(st.phase, adoption_phase::ADOPTED);
    let mark = completed_mark(&d, &adopted, Some(&st));
    assert_eq!(mark.as_deref(), Some("0000000000000007"));
    // Hibernated, then woken: the engine's StatefulSet at 0, no member answers.
    let mut asleep = d.clone();
    asleep.hibernate = true;
    asleep.hibernate_snapshot = Some("skipped".into());
    let mut stopped = adopted.clone();
    stopped.statefulset.as_mut().unwrap().replicas = 0;
    stopped.etcd = EtcdView::NotQueried;
    stopped.pods.clear();
    stopped.adoption.as_mut().unwrap().old_replicas = None;
    for d in [&asleep, &d] {
        // Without the mark: the wait on the old endpoints R2 reproduced.
        let step = plan(d, &stopped);
        assert!(
            matches!(&step, Step::Wait { message, .. } if message.contains("no member of the cluster to adopt")),
            "{step:?}"
        );
        let done = crate::api::CompletedRequests {
            adoption: mark.clone(),
            ..Default::default()
        };
        let settled = settle(d.clone(), &done);
        assert_eq!(settled.adopt, None);
        let mut o = stopped.clone();
        o.adoption = None;
        o.completed.adoption = mark.clone();
        let step = plan(&settled, &o);
        let expected = if settled.hibernate {
            Step::Hibernated
        } else {
            Step::ResizeStatefulSet { from: 0, to: 3 }
        };
        assert_eq!(step, expected);
        // The mark is carried from pass to pass once the request is settled out.
        assert_eq!(completed_mark(&settled, &o, None), mark);
    }
    // Another adoption (another cluster id) is a new request: the old mark does not settle it.
    let mut other = d.clone();
    other.adopt.as_mut().unwrap().cluster_id = 8;
    let done = crate::api::CompletedRequests {
        adoption: mark,
        ..Default::default()
    };
    assert!(settle(other, &done).adopt.is_some());
}

/// Issue 43 R10: the abort guard counts the old members the adoption began with (its
/// endpoints), not the spec's size, which `scale` may change meanwhile.
#[test]
fn abort_counts_retired_members_against_the_old_cluster_not_the_spec_size() {
    // Scaled to 5 while joining: no old member retired, so the abort goes on.
    let mut d = adopting(true, false);
    d.replicas = 5;
    let o = world(&d, &[0, 1, 2], 2, 3);
    let step = plan(&d, &o);
    assert!(!matches!(step, Step::Hold { .. }), "{step}");
    // Scaled to 2 after etcd-2 was retired: refused, naming 1 of 3.
    let mut d = adopting(true, false);
    d.replicas = 2;
    let o = world(&d, &[0, 1], 2, 2);
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::Hold { message, .. } if message.contains("1 of 3 old members were retired")),
        "{step}"
    );
}
