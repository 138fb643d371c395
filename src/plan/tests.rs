//! Table-style planner tests: one observed situation each, and the step it must lead to.

use super::*;
use crate::api::{Reason, condition, reason};
use crate::model::{
    MemberStatusView, PodView, RestoreMark, RestorePodView, Version, VolumeView, WorkloadView,
};

/// The cluster `ns/demo` at `replicas` (shared with the simulation).
pub(super) fn desired(replicas: u32) -> Desired {
    crate::fixtures::cluster("demo")
        .replicas(replicas as i32)
        .desired()
}

pub(super) fn member(d: &Desired, ordinal: u32) -> MemberView {
    MemberView {
        id: 100 + ordinal as u64,
        name: objects::pod_name(&d.name, ordinal),
        ordinal: Some(ordinal),
        peer_url: objects::peer_url(d, ordinal),
        learner: false,
        started: true,
        status: Some(MemberStatusView {
            version: Version::parse("3.5.16"),
            cluster_version: None,
            storage_version: None,
            downgrading_to: None,
            db_size: 20480,
            db_size_in_use: 20480,
            raft_index: 1000,
            raft_term: 2,
            leader: 100,
        }),
        healthy: true,
        error: None,
        identity_mismatch: false,
        alarmed: false,
    }
}

/// A healthy, converged cluster of `n` members (leader: ordinal 0) as desired by `d`.
pub(super) fn healthy(d: &Desired, n: u32) -> Observed {
    let mut config = objects::bootstrap_config(d, n);
    config.insert(
        config_key::INITIAL_CLUSTER_STATE.into(),
        objects::STATE_EXISTING.into(),
    );
    config.insert(
        config_key::INITIAL_CLUSTER.into(),
        objects::join_list(d, 0..n, |_| false),
    );
    Observed {
        statefulset: Some(WorkloadView {
            replicas: n,
            template_hash: Some(objects::template_hash(d)),
            update_revision: Some("rev1".into()),
            storage: Some(d.storage.clone()),
            tls: Some(d.tls.clone()),
            tls_switch: None,
            cluster_domain: Some(d.cluster_domain.clone()),
            terminating: false,
            controller_behind: false,
            cannot_create: None,
            member_selector: true,
            volume_capacity: None,
        }),
        supporting_objects: true,
        clients_fenced: false,
        certificates: Vec::new(),
        trust: Default::default(),
        client_cn: None,
        cert_manager: Vec::new(),
        leader_peers: None,
        not_owned: Vec::new(),
        maintenance: None,
        completed: Default::default(),
        nospace: Vec::new(),
        revision: 0,
        restore_pod: None,
        config: Some(config),
        pods: (0..n)
            .map(|o| {
                (
                    o,
                    PodView {
                        name: objects::pod_name(&d.name, o),
                        ready: true,
                        running: true,
                        revision: Some("rev1".into()),
                        ..Default::default()
                    },
                )
            })
            .collect(),
        volumes: (0..n)
            .map(|o| {
                let (class, size) = match &d.storage {
                    crate::model::Storage::Volume { size, class } => {
                        (class.clone(), Some(size.clone()))
                    }
                    crate::model::Storage::Ephemeral => (None, None),
                };
                (
                    o,
                    VolumeView {
                        name: objects::volume_name(&d.name, o),
                        terminating: false,
                        restore: None,
                        class,
                        capacity: size.clone(),
                        size,
                        grow_asked: None,
                    },
                )
            })
            .collect(),
        storage_class: None,
        etcd: EtcdView::Reached(ClusterView {
            cluster_id: 7,
            leader: Some(100),
            members: (0..n).map(|o| member(d, o)).collect(),
            auth_enabled: false,
            auth: None,
            list_unconfirmed: false,
        }),
        known_members: (0..n).collect(),
        last_version: None,
        upgrade: None,
        now: jiff::Timestamp::UNIX_EPOCH,
        lost_since: BTreeMap::new(),
        backups: Default::default(),
        adoption: None,
    }
}

pub(super) fn cluster(o: &mut Observed) -> &mut ClusterView {
    match &mut o.etcd {
        EtcdView::Reached(c) => c,
        _ => panic!("not reached"),
    }
}

fn with_learner(d: &Desired, o: &mut Observed, ordinal: u32, started: bool, raft_index: u64) {
    let mut m = member(d, ordinal);
    m.learner = true;
    m.started = started;
    if !started {
        m.name.clear();
        m.status = None;
        m.healthy = false;
    } else {
        m.status.as_mut().unwrap().raft_index = raft_index;
    }
    cluster(o).members.push(m);
}

#[test]
fn a_new_cluster_is_bootstrapped_whole() {
    assert_eq!(
        plan(&desired(3), &Observed::default()),
        Step::Bootstrap { replicas: 3 }
    );
}

#[test]
fn a_paused_cluster_is_only_observed() {
    let mut d = desired(3);
    d.paused = true;
    assert_eq!(plan(&d, &Observed::default()), Step::Paused);
}

#[test]
fn a_deleted_statefulset_is_recreated_at_the_size_of_its_volumes() {
    let d = desired(3);
    let mut o = healthy(&d, 5);
    o.statefulset = None;
    o.etcd = EtcdView::NotQueried;
    assert_eq!(plan(&d, &o), Step::ResizeStatefulSet { from: 0, to: 5 });
}

#[test]
fn a_cluster_created_again_waits_for_the_pods_of_its_deleted_statefulset() {
    // `kubectl delete etcdcluster demo` then `create demo` at once: the garbage collector has
    // taken the old StatefulSet, not yet its pods (still owned by it, or terminating).
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.statefulset = None;
    o.config = None;
    o.etcd = EtcdView::NotQueried;
    o.pods.get_mut(&0).unwrap().terminating = true;
    o.pods.get_mut(&2).unwrap().controlled = true;
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::Wait { reason: Reason::CleaningUp, message } if message.contains("demo-0, demo-2")),
        "{step:?}"
    );
    // Gone (an orphan left by `--cascade=orphan` is adopted, not waited for): back on the volumes.
    o.pods.remove(&0);
    o.pods.remove(&2);
    assert!(matches!(plan(&d, &o), Step::WriteConfig { .. }));
    let mut fresh = Observed::default();
    fresh.pods.insert(
        1,
        PodView {
            name: "demo-1".into(),
            controlled: true,
            ..Default::default()
        },
    );
    assert!(matches!(plan(&d, &fresh), Step::Wait { .. }));
    fresh.pods.get_mut(&1).unwrap().controlled = false;
    assert!(matches!(plan(&d, &fresh), Step::Bootstrap { replicas: 3 }));
}

#[test]
fn missing_services_are_reapplied() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.supporting_objects = false;
    assert_eq!(plan(&d, &o), Step::ApplySupportingObjects);
}

#[test]
fn a_changed_template_is_applied_without_changing_the_size() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.statefulset.as_mut().unwrap().template_hash = Some("old".into());
    assert_eq!(plan(&d, &o), Step::UpdateTemplate { replicas: 3 });
}

#[test]
fn two_cluster_ids_hold_everything() {
    let d = desired(5);
    let mut o = healthy(&d, 3);
    o.etcd = EtcdView::Split {
        cluster_ids: vec![1, 2],
    };
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Hold { reason, message } if *reason == Reason::ClusterIdMismatch && message.contains("0000000000000001")),
        "{s:?}"
    );
    assert!(!s.is_change());
}

#[test]
fn unreachable_etcd_waits_during_bootstrap_and_reports_after() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.etcd = EtcdView::Unreachable {
        errors: vec!["connection refused".into()],
    };
    assert!(matches!(plan(&d, &o), Step::Wait { reason, .. } if reason == Reason::EtcdUnreachable));
    o.config.as_mut().unwrap().insert(
        config_key::INITIAL_CLUSTER_STATE.into(),
        objects::STATE_NEW.into(),
    );
    assert!(matches!(plan(&d, &o), Step::Wait { reason, .. } if reason == Reason::Bootstrapping));
}

#[test]
fn the_bootstrap_is_recorded_once_every_initial_member_started() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.config.as_mut().unwrap().insert(
        config_key::INITIAL_CLUSTER_STATE.into(),
        objects::STATE_NEW.into(),
    );
    cluster(&mut o).members[2].started = false;
    assert!(matches!(plan(&d, &o), Step::Wait { reason, .. } if reason == Reason::Bootstrapping));
    cluster(&mut o).members[2].started = true;
    assert!(
        matches!(plan(&d, &o), Step::WriteConfig { why: ConfigChange::Bootstrapped, ref data } if objects::is_bootstrapped(data))
    );
}

#[test]
fn scale_up_adds_the_next_ordinal_as_a_learner() {
    let d = desired(5);
    let o = healthy(&d, 3);
    assert_eq!(
        plan(&d, &o),
        Step::AddLearner {
            ordinal: 3,
            name: "demo-3".into(),
            peer_url: "http://demo-3.demo.ns.svc.cluster.local:2380".into()
        }
    );
}

#[test]
fn scale_up_waits_for_every_member_to_be_healthy() {
    let d = desired(5);
    let mut o = healthy(&d, 3);
    cluster(&mut o).members[1].healthy = false;
    assert!(
        matches!(plan(&d, &o), Step::Wait { reason, .. } if reason == Reason::MembersUnhealthy)
    );
}

#[test]
fn a_new_learner_gets_a_join_entry_listing_every_member_and_itself() {
    let d = desired(5);
    let mut o = healthy(&d, 3);
    with_learner(&d, &mut o, 3, false, 0);
    let Step::WriteConfig { data, why } = plan(&d, &o) else {
        panic!()
    };
    assert_eq!(why, ConfigChange::Joins);
    assert_eq!(
        data[config_key::INITIAL_CLUSTER],
        objects::join_list(&d, 0..4, |o| o == 3)
    );
}

#[test]
fn a_learner_with_its_join_entry_gets_its_pod() {
    let d = desired(5);
    let mut o = healthy(&d, 3);
    with_learner(&d, &mut o, 3, false, 0);
    o.config.as_mut().unwrap().insert(
        config_key::INITIAL_CLUSTER.into(),
        objects::join_list(&d, 0..4, |o| o == 3),
    );
    assert_eq!(plan(&d, &o), Step::ResizeStatefulSet { from: 3, to: 4 });
}

#[test]
fn a_learner_is_removed_rather_than_started_on_an_old_volume() {
    let d = desired(5);
    let mut o = healthy(&d, 3);
    with_learner(&d, &mut o, 3, false, 0);
    o.config.as_mut().unwrap().insert(
        config_key::INITIAL_CLUSTER.into(),
        objects::join_list(&d, 0..4, |o| o == 3),
    );
    o.volumes.insert(
        3,
        VolumeView {
            name: "data-demo-3".into(),
            terminating: false,
            restore: None,
            ..Default::default()
        },
    );
    assert_eq!(
        plan(&d, &o),
        Step::RemoveMember {
            id: 103,
            name: "demo-3".into()
        }
    );
}

#[test]
fn a_learner_is_promoted_only_when_caught_up() {
    let d = desired(5);
    let mut o = healthy(&d, 4);
    cluster(&mut o).members.pop();
    with_learner(&d, &mut o, 3, true, 100);
    assert!(
        matches!(plan(&d, &o), Step::Wait { reason, .. } if reason == Reason::PromotingLearner)
    );
    cluster(&mut o)
        .members
        .last_mut()
        .unwrap()
        .status
        .as_mut()
        .unwrap()
        .raft_index = 950;
    assert_eq!(
        plan(&d, &o),
        Step::PromoteLearner {
            id: 103,
            name: "demo-3".into()
        }
    );
}

#[test]
fn a_learner_left_behind_by_a_reversed_scale_up_is_removed() {
    let d = desired(3);
    let mut o = healthy(&d, 4);
    cluster(&mut o).members.pop();
    with_learner(&d, &mut o, 3, true, 1000);
    assert_eq!(
        plan(&d, &o),
        Step::RemoveMember {
            id: 103,
            name: "demo-3".into()
        }
    );
    // ... also when it never got its pod.
    let mut o = healthy(&d, 3);
    with_learner(&d, &mut o, 3, false, 0);
    o.config.as_mut().unwrap().insert(
        config_key::INITIAL_CLUSTER.into(),
        objects::join_list(&d, 0..4, |o| o == 3),
    );
    assert_eq!(
        plan(&d, &o),
        Step::RemoveMember {
            id: 103,
            name: "demo-3".into()
        }
    );
}

#[test]
fn scale_down_moves_leadership_before_removing_the_leader() {
    let d = desired(3);
    let mut o = healthy(&d, 5);
    cluster(&mut o).leader = Some(104);
    assert_eq!(
        plan(&d, &o),
        Step::MoveLeader {
            from: "demo-4".into(),
            to_id: 100,
            to: "demo-0".into()
        }
    );
    cluster(&mut o).leader = Some(100);
    assert_eq!(
        plan(&d, &o),
        Step::RemoveMember {
            id: 104,
            name: "demo-4".into()
        }
    );
}

#[test]
fn scale_down_never_leaves_fewer_healthy_voters_than_quorum() {
    let d = desired(2);
    let mut o = healthy(&d, 3);
    cluster(&mut o).members[1].healthy = false;
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Hold { reason, .. } if *reason == Reason::QuorumAtRisk),
        "{s:?}"
    );
}

#[test]
fn a_slot_without_a_member_is_shrunk_away() {
    let d = desired(3);
    let mut o = healthy(&d, 4);
    cluster(&mut o).members.pop();
    assert_eq!(plan(&d, &o), Step::ResizeStatefulSet { from: 4, to: 3 });
    // When the spec went back up meanwhile the slot is refilled in place: the removed member's
    // pod stopped by itself (status 0), its volume may hold its data, so it is wiped first.
    let p = o.pods.get_mut(&3).unwrap();
    (p.running, p.ready, p.restarts) = (false, false, 1);
    assert_eq!(
        plan(&desired(5), &o),
        Step::WipeMember {
            ordinal: 3,
            claim: Some("data-demo-3".into()),
            pod: "demo-3".into(),
            force: false,
        }
    );
}

/// Issue 15 item 6: a member list that no linearizable read confirmed (it came from a member
/// that could not reach a leader) may lag; the steps that destroy a member wait for a
/// confirmed one, the others go on.
#[test]
fn members_are_removed_or_wiped_only_on_a_confirmed_member_list() {
    // Scale-down's removal.
    let d = desired(2);
    let mut o = healthy(&d, 3);
    assert!(matches!(plan(&d, &o), Step::RemoveMember { .. }));
    cluster(&mut o).list_unconfirmed = true;
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Wait { reason: Reason::MembersUnhealthy, message }
            if message.starts_with("remove member demo-2 waits for a member list a leader confirmed")),
        "{s:?}"
    );
    // A hole's wipe.
    let d = desired(3);
    let mut o = healthy(&d, 3);
    cluster(&mut o).members.remove(1);
    (
        o.pods.get_mut(&1).unwrap().running,
        o.pods.get_mut(&1).unwrap().restarts,
    ) = (false, 1);
    assert!(matches!(plan(&d, &o), Step::WipeMember { ordinal: 1, .. }));
    cluster(&mut o).list_unconfirmed = true;
    assert!(matches!(
        plan(&d, &o),
        Step::Wait {
            reason: Reason::MembersUnhealthy,
            ..
        }
    ));
    // Adding goes on: it destroys nothing.
    let d = desired(4);
    let mut o = healthy(&d, 3);
    cluster(&mut o).list_unconfirmed = true;
    assert!(
        matches!(
            plan(&d, &o),
            Step::ResizeStatefulSet { .. } | Step::AddLearner { .. }
        ),
        "{:?}",
        plan(&d, &o)
    );
}

fn refusing(p: &mut PodView, message: &str) {
    (p.running, p.ready, p.restarts) = (false, false, 2);
    p.waiting_reason = Some("CrashLoopBackOff".into());
    p.last_exit_message = Some(message.into());
}

#[test]
fn a_hole_below_the_top_is_wiped_then_refilled_in_place() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    cluster(&mut o).members.remove(1);
    // A fresh pod has said nothing yet.
    o.pods.get_mut(&1).unwrap().running = false;
    assert!(matches!(plan(&d, &o), Step::Wait { reason, .. } if reason == Reason::ReplacingMember));
    // It ran on data it can no longer use: wipe, but never while its etcd answers (the list
    // may come from a lagging member).
    o.pods.get_mut(&1).unwrap().restarts = 1;
    o.pods.get_mut(&1).unwrap().answered_as = Some(0xdead);
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Wait { reason: Reason::ReplacingMember, message } if message.contains("000000000000dead") && message.contains("not wiped")),
        "{s:?}"
    );
    o.pods.get_mut(&1).unwrap().answered_as = None;
    assert!(matches!(plan(&d, &o), Step::WipeMember { ordinal: 1, .. }));
    // The claim is going, held by its pod: the pod goes too.
    o.volumes.get_mut(&1).unwrap().terminating = true;
    let restart = Step::RestartMember {
        ordinal: 1,
        pod: "demo-1".into(),
        why: Restart::NewVolume,
    };
    assert_eq!(plan(&d, &o), restart);
    // A pod left without its claim never gets a new one by itself.
    o.volumes.remove(&1);
    assert_eq!(plan(&d, &o), restart);
    // On its new, empty volume etcd refuses to start: proven empty, re-added as a learner there.
    o.volumes.insert(
        1,
        VolumeView {
            name: "data-demo-1".into(),
            terminating: false,
            restore: None,
            ..Default::default()
        },
    );
    refusing(
        o.pods.get_mut(&1).unwrap(),
        "couldn't find local name \"demo-1\" in the initial cluster configuration",
    );
    assert_eq!(
        plan(&d, &o),
        Step::AddLearner {
            ordinal: 1,
            name: "demo-1".into(),
            peer_url: objects::peer_url(&d, 1)
        }
    );
}

#[test]
fn a_refilled_learner_crash_looping_before_its_join_entry_is_restarted() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    cluster(&mut o).members.remove(1);
    with_learner(&d, &mut o, 1, false, 0);
    let list = objects::join_list(&d, 0..3, |k| k == 1);
    o.config
        .as_mut()
        .unwrap()
        .insert(config_key::INITIAL_CLUSTER.into(), list);
    refusing(o.pods.get_mut(&1).unwrap(), "couldn't find local name");
    assert_eq!(
        plan(&d, &o),
        Step::RestartMember {
            ordinal: 1,
            pod: "demo-1".into(),
            why: Restart::Rejoin
        }
    );
}

#[test]
fn a_member_that_lost_its_data_is_removed_after_the_grace_period_while_quorum_holds() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    cluster(&mut o).members[1].healthy = false;
    cluster(&mut o).members[1].status = None;
    // A member that merely restarts is not lost.
    o.pods.get_mut(&1).unwrap().restarts = 3;
    o.pods.get_mut(&1).unwrap().age_seconds = 3600;
    assert!(
        matches!(plan(&d, &o), Step::Wait { reason, .. } if reason == Reason::MembersUnhealthy)
    );
    refusing(
        o.pods.get_mut(&1).unwrap(),
        "couldn't find local name \"demo-1\"",
    );
    o.lost_since
        .insert(1, o.now - jiff::SignedDuration::from_secs(60));
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Wait { reason, message } if *reason == Reason::ReplacingMember && message.contains("180s")),
        "{s:?}"
    );
    o.lost_since
        .insert(1, o.now - jiff::SignedDuration::from_secs(180));
    assert_eq!(
        plan(&d, &o),
        Step::RemoveMember {
            id: 101,
            name: "demo-1".into()
        }
    );
    // Never when the others do not keep a healthy quorum.
    cluster(&mut o).members[2].healthy = false;
    assert!(matches!(plan(&d, &o), Step::Hold { reason, .. } if reason == Reason::QuorumAtRisk));
}

#[test]
fn a_pod_answering_as_another_member_is_lost() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    let m = &mut cluster(&mut o).members[2];
    // Its pod answers as another member: this member itself gives no status.
    (m.healthy, m.identity_mismatch, m.status) = (false, true, None);
    o.lost_since
        .insert(2, o.now - jiff::SignedDuration::from_secs(600));
    assert!(matches!(plan(&d, &o), Step::RemoveMember { id: 102, .. }));
}

#[test]
fn quorum_loss_holds_naming_the_gone_members_and_the_recover_verb() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    for k in [0, 2] {
        let m = &mut cluster(&mut o).members[k];
        (m.healthy, m.status) = (false, None);
        // Starting: not Ready (the kubelet's probe is a linearizable read).
        o.pods.get_mut(&(k as u32)).unwrap().ready = false;
    }
    cluster(&mut o).members[1].healthy = false;
    o.pods.get_mut(&1).unwrap().ready = false;
    cluster(&mut o).leader = None;
    // While their pods start, it is a wait (restarts, a StatefulSet put back).
    assert!(matches!(plan(&d, &o), Step::Wait { reason, .. } if reason == Reason::QuorumLost));
    for k in [0, 2] {
        refusing(o.pods.get_mut(&k).unwrap(), "couldn't find local name");
    }
    let Step::Hold { reason, message } = plan(&d, &o) else {
        panic!()
    };
    assert_eq!(reason, Reason::QuorumLost);
    assert!(message.contains("1 of 3 voters answer"), "{message}");
    assert!(message.contains("gone: demo-0, demo-2"), "{message}");
    assert!(
        message.contains("kubectl etcd -n ns recover demo"),
        "{message}"
    );
}

/// Issue 43 R6: the driver cut off from demo-1 and demo-2 (a firewall between it and them, not
/// between them), their pods running on. demo-0's linearizable read passed, which its leader
/// serves only with a majority behind it: the cluster has a quorum. The old rule counted who
/// answered here ("quorum lost: 1 of 3 voters answer") and, once their pods looked stuck, named
/// `recover`. Now it waits, naming the proof and the members cut off from here, and nothing is
/// removed however long it lasts, even with their pods crash-looping in the kubelet's eyes.
#[test]
fn voters_this_driver_cannot_reach_are_no_quorum_loss_while_another_reads_linearizably() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    for k in [1, 2] {
        let m = &mut cluster(&mut o).members[k];
        (m.healthy, m.status) = (false, None);
        m.error = Some("failed to connect to http://10.0.0.12:2379: deadline elapsed".into());
    }
    o.lost_since
        .extend([1, 2].map(|k| (k, o.now - jiff::SignedDuration::from_secs(3600))));
    let said = |step: &Step| match step {
        Step::Wait { reason, message } if *reason == Reason::EtcdUnreachable => {
            message.contains("1 of 3 voters answer here, yet the cluster has a quorum")
                && message.contains("demo-0 answered a linearizable read")
                && message.contains("demo-1, demo-2 are unreachable from here, not down")
        }
        _ => false,
    };
    let step = plan(&d, &o);
    assert!(said(&step), "{step:?}");
    // Their pods restarting, or not Ready, change nothing while demo-0 proves the quorum.
    for k in [1, 2] {
        let p = o.pods.get_mut(&k).unwrap();
        (p.ready, p.restarts) = (false, 3);
    }
    let step = plan(&d, &o);
    assert!(said(&step), "{step:?}");
    // demo-0 alarmed (NOSPACE) passed its read too: the proof stands.
    let m = &mut cluster(&mut o).members[0];
    (m.healthy, m.alarmed) = (false, true);
    assert!(matches!(
        plan(&d, &o),
        Step::Wait {
            reason: Reason::EtcdUnreachable,
            ..
        }
    ));
}

/// The driver reaches only demo-0, whose read fails (it is the member cut off from the others),
/// while the kubelet counts demo-1's and demo-2's pods Ready: their probes, linearizable reads
/// from inside the pods, pass, so the quorum is on their side. Not a quorum loss; once their
/// pods are not Ready either, it is one.
#[test]
fn ready_pods_of_voters_this_driver_cannot_reach_prove_a_quorum() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    cluster(&mut o).members[0].healthy = false;
    o.pods.get_mut(&0).unwrap().ready = false;
    for k in [1, 2] {
        let m = &mut cluster(&mut o).members[k];
        (m.healthy, m.status) = (false, None);
    }
    let proof = quorum_proof(&d, &o).expect("a Ready pod proves a quorum");
    assert!(proof.starts_with("demo-1's pod is Ready"), "{proof}");
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::Wait { reason: Reason::EtcdUnreachable, message } if message.contains("demo-1's pod is Ready")),
        "{step:?}"
    );
    // A voter that answered here but failed its read proves nothing by its pod's readiness,
    // which lags a real loss (CI: `recover` refused seconds after two of three members went,
    // the survivor's pod still Ready).
    let mut survivor_only = o.clone();
    survivor_only.pods.get_mut(&0).unwrap().ready = true;
    for k in [1, 2] {
        survivor_only.pods.remove(&k);
    }
    assert_eq!(quorum_proof(&d, &survivor_only), None);
    for k in [1, 2] {
        o.pods.get_mut(&k).unwrap().ready = false;
    }
    assert_eq!(quorum_proof(&d, &o), None);
    assert!(matches!(
        plan(&d, &o),
        Step::Wait {
            reason: Reason::QuorumLost,
            ..
        }
    ));
}

#[test]
fn a_lost_member_config_is_rebuilt_from_volumes_and_status_when_nobody_answers() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.config = None;
    o.etcd = EtcdView::NotQueried;
    for p in o.pods.values_mut() {
        (p.running, p.ready) = (false, false);
        p.waiting_reason = Some("CreateContainerConfigError".into());
    }
    let Step::WriteConfig { data, why } = plan(&d, &o) else {
        panic!("{:?}", plan(&d, &o))
    };
    assert_eq!(why, ConfigChange::Repair);
    assert!(objects::is_bootstrapped(&data));
    assert_eq!(
        data[config_key::INITIAL_CLUSTER],
        objects::join_list(&d, 0..3, |_| false)
    );
    // Without a StatefulSet too (deleted with the cluster, volumes kept): config first.
    o.statefulset = None;
    o.known_members.clear();
    assert!(matches!(
        plan(&d, &o),
        Step::WriteConfig {
            why: ConfigChange::Repair,
            ..
        }
    ));
    o.config = Some(data);
    assert_eq!(plan(&d, &o), Step::ResizeStatefulSet { from: 0, to: 3 });
}

#[test]
fn a_stale_pod_that_serves_nobody_is_restarted_whatever_the_others_health() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.statefulset.as_mut().unwrap().update_revision = Some("rev1".into());
    let p = o.pods.get_mut(&2).unwrap();
    p.revision = Some("bad".into());
    (p.ready, p.running) = (false, false);
    p.waiting_reason = Some("ImagePullBackOff".into());
    let m = &mut cluster(&mut o).members[2];
    (m.healthy, m.status) = (false, None);
    assert_eq!(
        plan(&d, &o),
        Step::RestartMember {
            ordinal: 2,
            pod: "demo-2".into(),
            why: Restart::NewTemplate
        }
    );
}

#[test]
fn volumes_of_removed_members_are_deleted_once_their_pod_is_gone() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.volumes.insert(
        3,
        VolumeView {
            name: "data-demo-3".into(),
            terminating: false,
            restore: None,
            ..Default::default()
        },
    );
    o.pods.insert(
        3,
        PodView {
            name: "demo-3".into(),
            terminating: true,
            ..Default::default()
        },
    );
    assert!(matches!(plan(&d, &o), Step::Wait { .. }));
    o.pods.remove(&3);
    assert_eq!(
        plan(&d, &o),
        Step::DeleteVolume {
            ordinal: 3,
            claim: "data-demo-3".into()
        }
    );
    o.volumes.get_mut(&3).unwrap().terminating = true;
    assert!(matches!(plan(&d, &o), Step::Wait { reason, .. } if reason == Reason::CleaningUp));
}

#[test]
fn a_voter_without_a_pod_slot_gets_its_slot_back_first() {
    // Someone resized the StatefulSet by hand: putting it back is always safe; the spec's size
    // is then reached by the normal scale-down.
    let d = desired(3);
    let mut o = healthy(&d, 4);
    o.statefulset.as_mut().unwrap().replicas = 1;
    for k in 1..4 {
        o.pods.remove(&k);
        let m = &mut cluster(&mut o).members[k as usize];
        (m.healthy, m.status) = (false, None);
    }
    assert_eq!(plan(&d, &o), Step::ResizeStatefulSet { from: 1, to: 4 });
}

#[test]
fn ordinals_are_numbers_so_scale_down_from_11_removes_demo_10() {
    let d = desired(9);
    let mut o = healthy(&d, 11);
    o.statefulset.as_mut().unwrap().replicas = 11;
    let s = plan(&d, &o);
    assert_eq!(
        s,
        Step::RemoveMember {
            id: 110,
            name: "demo-10".into()
        }
    );
}

#[test]
fn foreign_members_are_held() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    let mut m = member(&d, 0);
    m.id = 999;
    m.ordinal = None;
    m.peer_url = "http://10.0.0.9:2380".into();
    cluster(&mut o).members.push(m);
    assert!(matches!(plan(&d, &o), Step::Hold { reason, .. } if reason == Reason::StrandedMember));
}

#[test]
fn stale_pods_restart_one_at_a_time_leader_last() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.statefulset.as_mut().unwrap().update_revision = Some("rev2".into());
    assert_eq!(
        plan(&d, &o),
        Step::RestartMember {
            ordinal: 2,
            pod: "demo-2".into(),
            why: Restart::NewTemplate,
        }
    );
    o.pods.get_mut(&2).unwrap().revision = Some("rev2".into());
    o.pods.get_mut(&1).unwrap().revision = Some("rev2".into());
    assert_eq!(
        plan(&d, &o),
        Step::MoveLeader {
            from: "demo-0".into(),
            to_id: 101,
            to: "demo-1".into()
        }
    );
    o.pods.get_mut(&1).unwrap().ready = false;
    assert!(matches!(plan(&d, &o), Step::Wait { reason, .. } if reason == Reason::RollingMembers));
}

#[test]
fn a_member_that_does_not_start_on_the_new_template_stops_the_rollout_and_says_why() {
    // spec.etcd.options with a flag the member's etcd does not know: the first restarted
    // member exits at start. The others keep running the old template, untouched.
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.statefulset.as_mut().unwrap().update_revision = Some("rev2".into());
    let p = o.pods.get_mut(&2).unwrap();
    p.revision = Some("rev2".into());
    (p.running, p.ready, p.restarts) = (false, false, 3);
    p.waiting_reason = Some("CrashLoopBackOff".into());
    // etcd prints its usage after the error.
    p.last_exit_message = Some(
        "flag provided but not defined: -hearbeat-interval\nUsage:\n\n  etcd [flags]\n    Start an etcd server.\n  etcd grpc-proxy\n    Run the stateless etcd v3 gRPC L7 reverse proxy.\n".into(),
    );
    cluster(&mut o).members[2].healthy = false;
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Wait { reason, message } if *reason == Reason::RollingMembers
            && message.contains("demo-2 does not start on the new template (3 restarts: its etcd exits: flag provided but not defined: -hearbeat-interval)")),
        "{s:?}"
    );
    // Requests no node can meet: the restarted member's pod stays Pending, and the stop says so.
    let p = o.pods.get_mut(&2).unwrap();
    (p.restarts, p.waiting_reason, p.last_exit_message) = (0, None, None);
    p.unschedulable = Some("0/1 nodes are available: 1 Insufficient memory.".into());
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Wait { message, .. }
            if message.contains("demo-2 does not start on the new template (0 restarts: it cannot be scheduled: 0/1 nodes are available: 1 Insufficient memory.")),
        "{s:?}"
    );
}

#[test]
fn an_unhealthy_member_of_a_right_sized_cluster_is_reported_not_touched() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    cluster(&mut o).members[2].healthy = false;
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Wait { reason, message } if *reason == Reason::MembersUnhealthy && message.contains("demo-2")),
        "{s:?}"
    );
}

#[test]
fn a_healthy_voter_whose_pod_is_not_ready_yet_is_waited_for_not_called_converged() {
    // A learner promoted a moment ago: healthy to etcd, not yet Ready to the kubelet (its
    // probe runs every 5 s), so the client Service does not route to it yet.
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.pods.get_mut(&2).unwrap().ready = false;
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Wait { reason, message } if *reason == Reason::MembersNotReady && message.contains("demo-2") && !message.contains("demo-1")),
        "{s:?}"
    );
    // A pod going away is another rule's business, never this wait.
    o.pods.get_mut(&2).unwrap().terminating = true;
    assert!(
        !matches!(plan(&d, &o), Step::Wait { reason, .. } if reason == Reason::MembersNotReady)
    );
    o.pods.get_mut(&2).unwrap().terminating = false;
    o.pods.get_mut(&2).unwrap().ready = true;
    assert_eq!(plan(&d, &o), Step::Idle);
}

#[test]
fn a_converged_cluster_is_idle() {
    let d = desired(3);
    assert_eq!(plan(&d, &healthy(&d, 3)), Step::Idle);
}

#[test]
fn steps_read_as_sentences() {
    assert_eq!(
        Step::AddLearner {
            ordinal: 3,
            name: "demo-3".into(),
            peer_url: String::new()
        }
        .to_string(),
        "add demo-3 as a learner"
    );
    assert_eq!(
        Step::ResizeStatefulSet { from: 4, to: 3 }.to_string(),
        "resize the StatefulSet from 4 to 3"
    );
}

#[test]
fn waits_and_holds_carry_their_condition_reason_typed() {
    let hold = Step::Hold {
        reason: Reason::ClusterIdMismatch,
        message: "two clusters".into(),
    };
    assert_eq!(hold.reason().as_str(), reason::SPLIT_BRAIN);
    let json = serde_json::to_value(&hold).unwrap();
    assert_eq!(json["reason"], reason::SPLIT_BRAIN, "{json}");
    assert_eq!(
        serde_json::to_value(Reason::QuorumAtRisk).unwrap(),
        reason::QUORUM_AT_RISK
    );
}

#[test]
fn every_rule_is_tried_in_order_and_an_empty_verdict_means_idle() {
    let d = desired(3);
    let o = healthy(&d, 3);
    assert!(RULES.iter().all(|rule| rule(&d, &o).is_none()));
    assert_eq!(plan(&d, &o), Step::Idle);
}

fn cond<'a>(
    s: &'a crate::api::EtcdClusterStatus,
    t: &str,
) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    s.conditions.iter().find(|c| c.type_ == t).unwrap()
}

/// The `Recovering` condition of the status derived for `step`.
fn recovering(
    d: &Desired,
    o: &Observed,
    step: &Step,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    let st = derive_status(d, o, step, None, jiff::Timestamp::from_second(1).unwrap());
    cond(&st, condition::RECOVERING).clone()
}

#[test]
fn status_of_a_healthy_cluster_is_ready_and_running() {
    let d = desired(3);
    let o = healthy(&d, 3);
    let now = jiff::Timestamp::from_second(1_000_000).unwrap();
    let s = derive_status(&d, &o, &Step::Idle, None, now);
    assert_eq!(s.phase, Some(crate::api::Phase::Running));
    assert_eq!(cond(&s, condition::READY).status, "True");
    assert_eq!(cond(&s, condition::DEGRADED).status, "False");
    assert_eq!(cond(&s, condition::SCALING).status, "False");
    assert_eq!(s.ready_replicas, 3);
    assert_eq!(s.observed_generation, Some(7));
    assert_eq!(
        s.members
            .iter()
            .map(|m| m.name.as_str())
            .collect::<Vec<_>>(),
        ["demo-0", "demo-1", "demo-2"]
    );
    assert!(s.members[0].leader);
    assert_eq!(s.cluster_id.as_deref(), Some("0000000000000007"));
    // Transition times stay put while a condition keeps its status.
    let later = jiff::Timestamp::from_second(2_000_000).unwrap();
    let s2 = derive_status(&d, &o, &Step::Idle, Some(&s), later);
    assert_eq!(
        cond(&s2, condition::READY).last_transition_time,
        cond(&s, condition::READY).last_transition_time
    );
}

#[test]
fn a_cluster_with_an_unhealthy_voter_is_ready_on_its_quorum_and_degraded() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    cluster(&mut o).members[2].healthy = false;
    let step = plan(&d, &o);
    let s = derive_status(
        &d,
        &o,
        &step,
        None,
        jiff::Timestamp::from_second(1).unwrap(),
    );
    let (ready, degraded) = (cond(&s, condition::READY), cond(&s, condition::DEGRADED));
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", reason::QUORUM_HEALTHY),
        "{step:?}"
    );
    assert_eq!(ready.message, "2 of 3 voting members healthy; quorum 2");
    assert_eq!(
        (degraded.status.as_str(), degraded.reason.as_str()),
        ("True", reason::MEMBERS_UNHEALTHY)
    );
    assert!(
        degraded
            .message
            .starts_with("2 of 3 voting members healthy; unhealthy: demo-2"),
        "{}",
        degraded.message
    );
    // All healthy again: the reason says so.
    let o = healthy(&d, 3);
    let s = derive_status(
        &d,
        &o,
        &Step::Idle,
        Some(&s),
        jiff::Timestamp::from_second(2).unwrap(),
    );
    assert_eq!(
        cond(&s, condition::READY).reason,
        reason::ALL_MEMBERS_HEALTHY
    );
}

#[test]
fn a_quota_the_volumes_cannot_hold_is_said_with_the_quota_and_the_size_that_fit() {
    let now = jiff::Timestamp::from_second(1).unwrap();
    let volume_too_small = |spec: fn(&mut crate::api::EtcdClusterSpec)| {
        let d = crate::fixtures::cluster("demo").spec(spec).desired();
        let o = healthy(&d, 3);
        cond(
            &derive_status(&d, &o, &Step::Idle, None, now),
            condition::VOLUME_TOO_SMALL,
        )
        .clone()
    };
    // A spec of old: etcd's default 2 GiB on the default 1 GiB volumes.
    let c = volume_too_small(|_| {});
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "QuotaExceedsVolume")
    );
    assert!(
        c.message
            .contains("2048.0 MiB (etcd's default), does not fit volumes of 1Gi")
            && c.message.contains("at most 320.0 MiB (335544320)")
            && c.message.contains("at least 4480Mi"),
        "{}",
        c.message
    );
    // What a new cluster gets, and a big enough volume.
    let c = volume_too_small(crate::model::new_cluster_defaults);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "QuotaFitsVolume")
    );
    assert!(
        c.message
            .contains("320.0 MiB (spec.etcd.quotaBackendBytes)"),
        "{}",
        c.message
    );
    let c = volume_too_small(|s| s.storage.size = Some("8Gi".into()));
    assert_eq!(c.status, "False", "{}", c.message);
    // An explicit quota too big for its volume, and no volumes at all.
    let c = volume_too_small(|s| {
        s.storage.size = Some("8Gi".into());
        s.etcd.quota_backend_bytes = Some(8 << 30);
    });
    assert_eq!(c.status, "True");
    assert!(c.message.contains("at least 16768Mi"), "{}", c.message);
    let c = volume_too_small(|s| s.storage.ephemeral = true);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "QuotaFitsVolume")
    );
}

#[test]
fn a_foreign_member_with_an_engine_members_name_is_listed_by_its_own_id_and_says_so() {
    // Added by hand with etcdctl under demo-1's name, with another peer URL: the planner holds
    // (`foreign_members_are_held`), and the status that says so must still apply: members are
    // a list-map keyed by id (crd::STATUS_LIST_KEYS), and the two ids differ.
    let d = desired(3);
    let mut o = healthy(&d, 3);
    let mut m = member(&d, 1);
    m.id = 999;
    m.ordinal = None;
    m.peer_url = "http://10.0.0.9:2380".into();
    cluster(&mut o).members.push(m);
    let step = plan(&d, &o);
    let s = derive_status(
        &d,
        &o,
        &step,
        None,
        jiff::Timestamp::from_second(1).unwrap(),
    );
    let named: Vec<&crate::api::MemberStatus> =
        s.members.iter().filter(|m| m.name == "demo-1").collect();
    assert_eq!(named.len(), 2, "{:?}", s.members);
    assert_ne!(named[0].id, named[1].id);
    assert_eq!(
        named.iter().map(|m| m.foreign).collect::<Vec<_>>(),
        [false, true],
        "the engine's first, the foreign one marked"
    );
    let ids: std::collections::BTreeSet<&str> = s.members.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(
        ids.len(),
        s.members.len(),
        "one entry per id: {:?}",
        s.members
    );
    // What the apply sends: the flag only where it is true.
    let doc = crate::apply::status_document::<crate::api::EtcdCluster>(&s).unwrap();
    let members = doc["status"]["members"].as_array().unwrap();
    assert_eq!(
        members
            .iter()
            .filter(|m| m.get("foreign").is_some())
            .count(),
        1,
        "{members:?}"
    );
}

#[test]
fn a_status_says_converged_only_for_its_generation_and_when_nothing_moves() {
    let d = desired(3);
    let now = jiff::Timestamp::from_second(1_000_000).unwrap();
    let idle = derive_status(&d, &healthy(&d, 3), &Step::Idle, None, now);
    assert!(converged(&idle, Some(7)));
    assert!(
        !converged(&idle, Some(8)),
        "a newer spec is not converged yet"
    );
    let d5 = desired(5);
    let o = healthy(&d5, 3);
    let scaling = derive_status(&d5, &o, &plan(&d5, &o), None, now);
    assert!(!converged(&scaling, Some(7)));
    let mut sick = healthy(&d, 3);
    cluster(&mut sick).members[2].healthy = false;
    let degraded = derive_status(&d, &sick, &plan(&d, &sick), None, now);
    assert!(!converged(&degraded, Some(7)));
}

#[test]
fn a_status_says_held_with_the_holds_message_for_its_generation_only() {
    let d = desired(3);
    let now = jiff::Timestamp::from_second(1_000_000).unwrap();
    let o = healthy(&d, 3);
    let hold = Step::Hold {
        reason: Reason::RestoreFailed,
        message: "the restore from s3://b/x failed (boom); fix the cause".into(),
    };
    let held_status = derive_status(&d, &o, &hold, None, now);
    assert_eq!(
        held(&held_status, Some(7)),
        Some("the restore from s3://b/x failed (boom); fix the cause")
    );
    assert_eq!(
        held(&held_status, Some(8)),
        None,
        "a newer spec is not held yet"
    );
    let waiting = Step::Wait {
        reason: Reason::RestoringSnapshot,
        message: "holding: not a hold".into(),
    };
    assert_eq!(
        held(&derive_status(&d, &o, &waiting, None, now), Some(7)),
        None
    );
    let idle = derive_status(&d, &o, &Step::Idle, None, now);
    assert_eq!(held(&idle, Some(7)), None);
}

#[test]
fn status_while_scaling_and_when_split() {
    let d = desired(5);
    let o = healthy(&d, 3);
    let now = jiff::Timestamp::from_second(1_000_000).unwrap();
    let step = plan(&d, &o);
    let s = derive_status(&d, &o, &step, None, now);
    assert_eq!(s.phase, Some(crate::api::Phase::Scaling));
    assert_eq!(cond(&s, condition::SCALING).status, "True");
    assert_eq!(cond(&s, condition::SCALING).reason, reason::ADDING_LEARNER);
    let mut o2 = o.clone();
    o2.etcd = EtcdView::Split {
        cluster_ids: vec![1, 2],
    };
    let step = plan(&d, &o2);
    let s = derive_status(&d, &o2, &step, None, now);
    assert_eq!(s.phase, Some(crate::api::Phase::Degraded));
    assert_eq!(cond(&s, condition::DEGRADED).reason, reason::SPLIT_BRAIN);
}

#[test]
fn a_bootstrap_stuck_on_its_image_says_so() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.config.as_mut().unwrap().insert(
        config_key::INITIAL_CLUSTER_STATE.into(),
        objects::STATE_NEW.into(),
    );
    o.etcd = EtcdView::NotQueried;
    let p = o.pods.get_mut(&0).unwrap();
    (p.ready, p.running) = (false, false);
    p.waiting_reason = Some("ImagePullBackOff".into());
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Wait { message, .. } if message.contains("demo-0: its container cannot start: ImagePullBackOff")),
        "{s:?}"
    );
}

/// Every member's pod refused by etcd for lack of data (all volumes emptied, or an ephemeral
/// cluster's pods all restarted): a hold that says what is left (a backup, or an empty start),
/// not a wait for members that can never answer. One pod merely starting keeps it a wait.
#[test]
fn a_cluster_whose_every_member_lost_its_data_holds_and_says_what_is_left() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.etcd = EtcdView::NotQueried;
    for p in o.pods.values_mut() {
        (p.ready, p.running, p.restarts) = (false, false, 2);
        p.waiting_reason = Some("CrashLoopBackOff".into());
        p.last_exit_message = Some(
            r#"{"level":"fatal","msg":"discovery failed","error":"couldn't find local name \"demo-0\" in the initial cluster configuration"}"#.into(),
        );
    }
    let step = plan(&d, &o);
    let Step::Hold { reason, message } = &step else {
        panic!("{step:?}")
    };
    assert_eq!(*reason, Reason::QuorumLost);
    assert!(
        message.starts_with("every member lost its data (demo-0, demo-1, demo-2: its volume holds no data")
            && message.contains("`kubectl etcd -n ns recover demo --from-backup BACKUP --yes` (`kubectl etcd -n ns backup list demo`)")
            && message.contains("`kubectl etcd -n ns delete demo --yes`"),
        "{message}"
    );
    // Ephemeral: a recovery cannot restore into it; a new cluster can.
    let mut e = d.clone();
    e.storage = crate::model::Storage::Ephemeral;
    let mut oe = o.clone();
    let sts = oe.statefulset.as_mut().unwrap();
    sts.storage = Some(e.storage.clone());
    sts.template_hash = Some(objects::template_hash(&e));
    oe.volumes.clear();
    let step = plan(&e, &oe);
    let Step::Hold { message, .. } = step else {
        panic!("{step:?}")
    };
    assert!(
        message.contains("ephemeral") && message.contains("restore NEW --from-backup BACKUP"),
        "{message}"
    );
    // One member's pod still starting: it may yet answer.
    let p = o.pods.get_mut(&1).unwrap();
    (p.restarts, p.last_exit_message, p.waiting_reason) = (0, None, None);
    assert!(
        matches!(
            plan(&d, &o),
            Step::Wait {
                reason: Reason::EtcdUnreachable,
                ..
            }
        ),
        "{:?}",
        plan(&d, &o)
    );
}

/// A pod its StatefulSet cannot create (a ResourceQuota refuses it) is named in every wait,
/// whatever the wait is for, and nothing else changes: the step is the same.
#[test]
fn a_wait_says_why_the_statefulset_cannot_create_a_pod() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.config.as_mut().unwrap().insert(
        config_key::INITIAL_CLUSTER_STATE.into(),
        objects::STATE_NEW.into(),
    );
    o.etcd = EtcdView::NotQueried;
    o.pods.remove(&2);
    let before = plan(&d, &o);
    let why = "create Pod demo-2 in StatefulSet demo failed error: pods \"demo-2\" is forbidden: exceeded quota: tight";
    o.statefulset.as_mut().unwrap().cannot_create = Some(why.into());
    let after = plan(&d, &o);
    match (&before, &after) {
        (
            Step::Wait { reason, message },
            Step::Wait {
                reason: r2,
                message: m2,
            },
        ) => {
            assert_eq!(reason, r2);
            assert_eq!(
                *m2,
                format!("{message}; the StatefulSet cannot create a pod: {why}")
            );
        }
        _ => panic!("{before:?} / {after:?}"),
    }
    // A step that acts is left as it is.
    let mut o = healthy(&d, 3);
    o.statefulset.as_mut().unwrap().cannot_create = Some(why.into());
    assert_eq!(plan(&d, &o), plan(&d, &healthy(&d, 3)));
}

/// A member killed for memory is named as such everywhere a user looks: the wait while the
/// cluster starts (members of one trouble together), the member's error and `Degraded`.
#[test]
fn members_killed_for_memory_are_named_with_their_limit_in_the_wait_the_member_and_degraded() {
    let d = desired(3);
    let oom = |p: &mut PodView| {
        (p.ready, p.running, p.restarts) = (false, false, 3);
        p.waiting_reason = Some("CrashLoopBackOff".into());
        p.last_exit_reason = Some("OOMKilled".into());
        p.memory_limit = Some("32Mi".into());
    };
    let mut o = healthy(&d, 3);
    o.config.as_mut().unwrap().insert(
        config_key::INITIAL_CLUSTER_STATE.into(),
        objects::STATE_NEW.into(),
    );
    o.etcd = EtcdView::NotQueried;
    oom(o.pods.get_mut(&0).unwrap());
    oom(o.pods.get_mut(&2).unwrap());
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Wait { message, .. } if message.contains(
            "(demo-0, demo-2: its etcd was OOMKilled at its memory limit 32Mi: raise spec.resources.limits.memory")),
        "{s:?}"
    );
    // Running: the member of the killed pod says why its pod does not run.
    let mut o = healthy(&d, 3);
    cluster(&mut o).members[1].healthy = false;
    cluster(&mut o).members[1].error = Some("no running pod answered for this member".into());
    oom(o.pods.get_mut(&1).unwrap());
    let step = plan(&d, &o);
    let st = derive_status(
        &d,
        &o,
        &step,
        None,
        jiff::Timestamp::from_second(1).unwrap(),
    );
    let m = st.members.iter().find(|m| m.name == "demo-1").unwrap();
    assert_eq!(
        m.error.as_deref().unwrap_or_default(),
        "pod demo-1: its etcd was OOMKilled at its memory limit 32Mi: raise \
         spec.resources.limits.memory (and requests) above what the member needs"
    );
    let degraded = cond(&st, condition::DEGRADED);
    assert!(
        degraded.message.starts_with(
            "2 of 3 voting members healthy; unhealthy: demo-1: pod demo-1: its etcd was OOMKilled"
        ),
        "{}",
        degraded.message
    );
    // Between two kills its etcd runs for a few seconds, not answering yet (seen on a busy
    // machine: the member said only "tls handshake eof"): the kill is still named. Long after
    // an old kill, an unanswering member says what the dial met.
    let member_error = |running_seconds: u64| {
        let mut o = o.clone();
        let p = o.pods.get_mut(&1).unwrap();
        (p.running, p.waiting_reason) = (true, None);
        p.running_seconds = Some(running_seconds);
        cluster(&mut o).members[1].error = Some("transport error: tls handshake eof".into());
        let st = derive_status(
            &d,
            &o,
            &plan(&d, &o),
            None,
            jiff::Timestamp::from_second(1).unwrap(),
        );
        let m = st.members.iter().find(|m| m.name == "demo-1").unwrap();
        m.error.clone().unwrap_or_default()
    };
    assert!(member_error(5).contains("OOMKilled at its memory limit 32Mi"));
    assert_eq!(member_error(3600), "transport error: tls handshake eof");
}

#[test]
fn a_statefulset_scaled_down_by_hand_is_restored_onto_its_volumes() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.statefulset.as_mut().unwrap().replicas = 0;
    o.pods.clear();
    o.etcd = EtcdView::NotQueried;
    let step = plan(&d, &o);
    assert_eq!(step, Step::ResizeStatefulSet { from: 0, to: 3 });
    assert_eq!(recovering(&d, &o, &step).status, "True");
}

#[test]
fn a_formed_cluster_lists_no_started_member_under_its_own_name() {
    // A config written before members were masked names them: it is rewritten so that a member
    // that loses its volume can never join again as the voter it was.
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.config.as_mut().unwrap().insert(
        config_key::INITIAL_CLUSTER.into(),
        objects::initial_cluster(&d, 0..3),
    );
    let Step::WriteConfig { data, .. } = plan(&d, &o) else {
        panic!("{:?}", plan(&d, &o))
    };
    let list = &data[config_key::INITIAL_CLUSTER];
    assert_eq!(list, &objects::join_list(&d, 0..3, |_| false));
    assert!(!list.contains("demo-1="), "{list}");
    assert!(list.contains("demo-1.started=http://demo-1."), "{list}");
}

pub(super) fn restored(replicas: i32) -> Desired {
    crate::fixtures::cluster("demo")
        .replicas(replicas)
        .spec(|s| {
            s.restore = Some(crate::api::RestoreSpec {
                source: "s3://backups/etcd/ns-old-20261201T000000Z-r9.db.zst".into(),
                ..Default::default()
            });
        })
        .desired()
}

#[test]
fn a_restored_cluster_first_restores_the_seed_volume() {
    let d = restored(3);
    assert_eq!(
        plan(&d, &Observed::default()),
        Step::RestoreSeed {
            url: "s3://backups/etcd/ns-old-20261201T000000Z-r9.db.zst".into()
        }
    );
}

#[test]
fn a_running_restore_is_waited_for_and_a_failed_one_held_with_its_cause() {
    let d = restored(3);
    let mut o = Observed {
        restore_pod: Some(RestorePodView::Running),
        ..Default::default()
    };
    assert!(matches!(
        plan(&d, &o),
        Step::Wait {
            reason: Reason::RestoringSnapshot,
            ..
        }
    ));
    o.restore_pod = Some(RestorePodView::Failed(
        "fetch exited 1: sha256 mismatch".into(),
    ));
    match plan(&d, &o) {
        Step::Hold {
            reason: Reason::RestoreFailed,
            message,
        } => assert!(message.contains("sha256 mismatch") && message.contains("demo-restore")),
        other => panic!("expected a hold, got {other:?}"),
    }
    // Found unusable by the pod's verification: retrying cannot help, the message says what can.
    o.restore_pod = Some(RestorePodView::Failed(
        "fetch exited 10: error: the snapshot is unusable: x.db.zst: its sha256 is 1, the backup \
         record says 2"
            .into(),
    ));
    match plan(&d, &o) {
        Step::Hold {
            reason: Reason::RestoreFailed,
            message,
        } => {
            assert!(
                message.contains(crate::archive::fetch::UNUSABLE),
                "{message}"
            );
            assert!(message.contains("delete demo --delete-data"), "{message}");
            assert!(message.contains("damaged backup"), "{message}");
        }
        other => panic!("expected a hold, got {other:?}"),
    }
}

fn volumes(marks: &[Option<RestoreMark>]) -> BTreeMap<u32, VolumeView> {
    marks
        .iter()
        .enumerate()
        .map(|(o, m)| {
            let o = o as u32;
            (
                o,
                VolumeView {
                    name: objects::volume_name("demo", o),
                    terminating: false,
                    restore: *m,
                    ..Default::default()
                },
            )
        })
        .collect()
}

#[test]
fn a_restored_cluster_whose_objects_were_deleted_comes_back_on_its_volumes_never_from_the_snapshot_again()
 {
    // `kubectl etcd delete dst` (volumes kept) and the same manifest applied again, or a GitOps
    // prune of the StatefulSet and member config: spec.restore is still set, but the seed's volume
    // says the restore ran. Everything written since lives on those volumes.
    let d = restored(3);
    let o = Observed {
        volumes: volumes(&[Some(RestoreMark::Restored), None, None]),
        ..Default::default()
    };
    match plan(&d, &o) {
        Step::WriteConfig {
            why: ConfigChange::Repair,
            data,
        } => {
            let list = &data[objects::config_key::INITIAL_CLUSTER];
            assert!(
                list.contains("demo-0.") && list.contains("demo-2."),
                "{list}"
            );
        }
        other => panic!("expected the members back on their volumes, got {other:?}"),
    }
    // Even with the restore pod still there (it goes once the seed runs again).
    let o = Observed {
        restore_pod: Some(RestorePodView::Succeeded),
        ..o
    };
    assert!(!matches!(
        plan(&d, &o),
        Step::RestoreSeed { .. } | Step::Bootstrap { .. }
    ));
}

#[test]
fn a_restore_never_runs_over_volumes_it_did_not_make() {
    // `kubectl etcd delete demo` kept the volumes of a cluster never restored; a manifest with
    // spec.restore under the same name must not overwrite them.
    let d = restored(3);
    for marks in [
        vec![None, None, None],
        vec![None],
        vec![Some(RestoreMark::Restoring), None],
    ] {
        let o = Observed {
            volumes: volumes(&marks),
            ..Default::default()
        };
        match plan(&d, &o) {
            Step::Hold {
                reason: Reason::RestoreFailed,
                message,
            } => {
                assert!(message.contains("data-demo-"), "{message}");
                assert!(message.contains("--delete-data"), "{message}");
            }
            other => panic!("{marks:?}: expected a hold, got {other:?}"),
        }
    }
}

#[test]
fn an_interrupted_restore_goes_on_on_the_claim_it_made() {
    let d = restored(3);
    let o = Observed {
        volumes: volumes(&[Some(RestoreMark::Restoring)]),
        ..Default::default()
    };
    assert!(matches!(plan(&d, &o), Step::RestoreSeed { .. }));
}

#[test]
fn a_restore_whose_download_is_tried_again_says_why_and_waits() {
    let d = restored(3);
    let why = "cannot reach S3 at http://127.0.0.1:18333 (connection failed) for bucket b";
    let o = Observed {
        volumes: volumes(&[Some(RestoreMark::Restoring)]),
        restore_pod: Some(RestorePodView::Retrying(why.into())),
        ..Default::default()
    };
    match plan(&d, &o) {
        Step::Wait {
            reason: Reason::RestoringSnapshot,
            message,
        } => assert!(
            message.contains("the download fails and is tried again") && message.contains(why),
            "{message}"
        ),
        other => panic!("expected a wait naming the failure, got {other:?}"),
    }
}

#[test]
fn a_restore_pod_that_cannot_start_says_why() {
    let d = restored(3);
    let o = Observed {
        volumes: volumes(&[Some(RestoreMark::Restoring)]),
        restore_pod: Some(RestorePodView::Stuck(
            "fetch: CreateContainerConfigError: secret \"s3-creds\" not found".into(),
        )),
        ..Default::default()
    };
    match plan(&d, &o) {
        Step::Hold {
            reason: Reason::RestoreFailed,
            message,
        } => assert!(
            message.contains("s3-creds") && message.contains("demo-restore"),
            "{message}"
        ),
        other => panic!("expected a hold naming the cause, got {other:?}"),
    }
    // An image the nodes cannot pull: the field to set.
    let o = Observed {
        volumes: volumes(&[Some(RestoreMark::Restoring)]),
        restore_pod: Some(RestorePodView::Stuck(
            "fetch: ErrImagePull: failed to pull ghcr.io/kubectl-etcd/kubectl-etcd:0.1.0".into(),
        )),
        ..Default::default()
    };
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::Hold { message, .. } if message.contains("set spec.restore.toolsImage")),
        "{step:?}"
    );
}

/// Every state a restore can reach, with the world deleting the StatefulSet and member config
/// (a GitOps prune, `kubectl etcd delete` keeping volumes and the manifest applied again), the
/// restore pod, or the engine crashing between the writes of a bootstrap, at any point.
/// Issue 43 R10: the restore-once mark lived on the seed's claim only. A restored cluster that
/// later lost every object and volume (its status intact) restored the old snapshot again: a
/// silent rollback of everything written since. The pass that saw the seed run on its restored
/// volume marks the restore done (`status.completed.restore`); from then on it is never run
/// again, and the loss is the quorum hold's to report (`kubectl etcd recover`).
#[test]
fn a_finished_restore_is_never_run_again_when_every_volume_is_gone() {
    let d = restored(3);
    let url = "s3://backups/etcd/ns-old-20261201T000000Z-r9.db.zst";
    let serving = Observed {
        statefulset: Some(WorkloadView {
            replicas: 3,
            ..Default::default()
        }),
        volumes: volumes(&[Some(RestoreMark::Restored), None, None]),
        ..Default::default()
    };
    let mark = rules::restore_completed_mark(&d, &serving);
    assert_eq!(mark.as_deref(), Some(url));
    // Still restoring (no StatefulSet on the volume yet): not done.
    let restoring = Observed {
        volumes: volumes(&[Some(RestoreMark::Restored)]),
        ..Default::default()
    };
    assert_eq!(rules::restore_completed_mark(&d, &restoring), None);
    let mut gone = Observed {
        known_members: (0..3).collect(),
        ..Default::default()
    };
    assert_eq!(plan(&d, &gone), Step::RestoreSeed { url: url.into() });
    gone.completed.restore = mark.clone();
    let step = plan(&d, &gone);
    assert!(
        !matches!(step, Step::RestoreSeed { .. } | Step::Bootstrap { .. }),
        "{step:?}"
    );
    // Carried from pass to pass; a restore with a nonce is marked by it.
    assert_eq!(rules::restore_completed_mark(&d, &gone), mark);
    let mut again = d.clone();
    again.restore.as_mut().unwrap().nonce = Some("n2".into());
    assert_eq!(
        rules::restore_completed_mark(&again, &serving).as_deref(),
        Some("n2")
    );
    assert_eq!(plan(&again, &gone), Step::RestoreSeed { url: url.into() });
}

/// A recovery's restore (settled into `d.restore` with the recovery's nonce) is the recovery's
/// to mark: the seed's claim, marked by an earlier restore, must not mark it done while the old
/// members still run, nor stop it once they are deleted. CI found the loop this made: "delete
/// the lost cluster's StatefulSet, member config and volumes" then "repair the member config",
/// for ever.
#[test]
fn a_recoverys_restore_is_never_marked_done_by_an_earlier_restores_claim() {
    let mut d = restored(3);
    let spec = crate::api::RecoverySpec {
        nonce: "n2".into(),
        from_backup: Some("demo-b".into()),
        restore_credentials_secret: Some("s3".into()),
        force: true,
        ..Default::default()
    };
    d.recovery = crate::model::recovery::validate(Some(&spec), "demo", None).unwrap();
    d.restore.as_mut().unwrap().nonce = Some("n2".into());
    let old_members = Observed {
        statefulset: Some(WorkloadView {
            replicas: 3,
            ..Default::default()
        }),
        volumes: volumes(&[Some(RestoreMark::Restored), None, None]),
        ..Default::default()
    };
    assert_eq!(rules::restore_completed_mark(&d, &old_members), None);
    // Deleted, with a mark the spec's own restore left: the recovery's seed is restored.
    let deleted = Observed {
        known_members: (0..3).collect(),
        completed: crate::api::CompletedRequests {
            restore: Some("n2".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(matches!(
        rules::restore_seed(&d, &deleted),
        Some(Step::RestoreSeed { .. })
    ));
}

/// Invariant: once the seed served on its restored data (writes acknowledged since), no pass ever
/// restores again, nor bootstraps over it.
#[test]
fn no_data_written_after_a_restore_is_ever_lost_to_a_second_restore() {
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
    struct World {
        mark: Option<RestoreMark>,
        pod: Option<bool>, // Some(false): running, Some(true): succeeded
        config: bool,
        sts: bool,
        served: bool,
    }
    let d = restored(3);
    let observe = |w: &World| Observed {
        statefulset: w.sts.then(|| WorkloadView {
            replicas: 1,
            ..Default::default()
        }),
        config: w.config.then(|| objects::bootstrap_config(&d, 1)),
        volumes: w.mark.map_or_else(BTreeMap::new, |m| volumes(&[Some(m)])),
        restore_pod: w.pod.map(|done| {
            if done {
                RestorePodView::Succeeded
            } else {
                RestorePodView::Running
            }
        }),
        ..Default::default()
    };
    let start = World {
        mark: None,
        pod: None,
        config: false,
        sts: false,
        served: false,
    };
    let mut seen = std::collections::HashSet::from([start]);
    let mut todo = vec![start];
    while let Some(w) = todo.pop() {
        let step = plan(&d, &observe(&w));
        if w.served {
            assert!(
                !matches!(step, Step::RestoreSeed { .. } | Step::Bootstrap { .. }),
                "{w:?}: {step:?} would overwrite what was written since the restore"
            );
        }
        let mut next = Vec::new();
        match step {
            Step::RestoreSeed { .. } => next.push(World {
                mark: Some(w.mark.unwrap_or(RestoreMark::Restoring)),
                pod: Some(false),
                ..w
            }),
            Step::Bootstrap { .. } => {
                // The claim's mark is written first; a crash may stop the rest.
                let marked = World {
                    mark: Some(RestoreMark::Restored),
                    ..w
                };
                next.push(marked);
                next.push(World {
                    config: true,
                    sts: true,
                    served: true,
                    ..marked
                });
            }
            Step::WriteConfig { .. } => next.push(World { config: true, ..w }),
            Step::ResizeStatefulSet { .. } => next.push(World {
                sts: true,
                served: w.served || w.mark == Some(RestoreMark::Restored),
                ..w
            }),
            Step::DeleteRestorePod { .. } => next.push(World { pod: None, ..w }),
            _ => {}
        }
        // What the world does meanwhile.
        if w.pod == Some(false) {
            next.push(World {
                pod: Some(true),
                ..w
            });
        }
        next.push(World { pod: None, ..w });
        next.push(World {
            config: false,
            sts: false,
            ..w
        });
        for n in next {
            if seen.insert(n) {
                todo.push(n);
            }
        }
    }
    assert!(
        seen.iter().any(|w| w.served && !w.sts && !w.config),
        "the exploration reached a pruned restored cluster"
    );
}

#[test]
fn a_restored_seed_is_bootstrapped_alone_as_an_existing_cluster_and_the_others_join_as_learners() {
    let d = restored(3);
    let o = Observed {
        restore_pod: Some(RestorePodView::Succeeded),
        // The claim the restore made.
        volumes: volumes(&[Some(RestoreMark::Restoring)]),
        ..Default::default()
    };
    assert_eq!(plan(&d, &o), Step::Bootstrap { replicas: 1 });
    let config = objects::bootstrap_config(&d, 1);
    assert!(
        objects::is_bootstrapped(&config),
        "a restored seed starts as an existing cluster"
    );
    // Once the seed runs, the finished restore pod goes, then scale-up takes over.
    let mut o = healthy(&d, 1);
    o.restore_pod = Some(RestorePodView::Succeeded);
    assert!(matches!(plan(&d, &o), Step::DeleteRestorePod { .. }));
    o.restore_pod = None;
    assert!(matches!(plan(&d, &o), Step::AddLearner { ordinal: 1, .. }));
}

#[test]
fn the_lost_member_grace_counts_from_the_first_sign_never_from_the_pods_creation() {
    // A pod created weeks ago whose etcd now says its data is gone: the grace starts now.
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.now = jiff::Timestamp::from_second(10_000_000).unwrap();
    cluster(&mut o).members[1].healthy = false;
    cluster(&mut o).members[1].status = None;
    refusing(
        o.pods.get_mut(&1).unwrap(),
        "couldn't find local name \"demo-1\"",
    );
    o.pods.get_mut(&1).unwrap().age_seconds = 30 * 86_400;
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Wait { reason: Reason::ReplacingMember, message } if message.contains("0s so far")),
        "{s:?}"
    );
    // The pass records when it first saw it; the grace runs from there.
    let since = lost_since(&o);
    assert_eq!(since.get(&1), Some(&o.now));
    let st = derive_status(&d, &o, &s, None, o.now);
    assert_eq!(st.members[1].lost_since.as_ref().map(|t| t.0), Some(o.now));
    o.lost_since = since;
    o.now += jiff::SignedDuration::from_secs(d.lost_member_grace_seconds as i64 - 1);
    assert!(matches!(plan(&d, &o), Step::Wait { .. }));
    assert_eq!(
        lost_since(&o).get(&1),
        o.lost_since.get(&1),
        "kept, not renewed"
    );
    o.now += jiff::SignedDuration::from_secs(1);
    assert!(matches!(plan(&d, &o), Step::RemoveMember { id: 101, .. }));
}

#[test]
fn a_member_that_answers_is_never_treated_as_lost() {
    // demo-1 was replaced once and restarted in place: its pod still carries the old "no data"
    // message; weeks later one health read fails, but it answers its status as itself.
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.now = jiff::Timestamp::from_second(10_000_000).unwrap();
    let m = &mut cluster(&mut o).members[1];
    m.healthy = false;
    m.error = Some("a linearizable read timed out".into());
    let p = o.pods.get_mut(&1).unwrap();
    p.last_exit_message = Some("couldn't find local name \"demo-1\"".into());
    p.restarts = 1;
    p.age_seconds = 30 * 86_400;
    o.lost_since
        .insert(1, o.now - jiff::SignedDuration::from_secs(86_400));
    let s = plan(&d, &o);
    assert!(!matches!(s, Step::RemoveMember { .. }), "{s:?}");
    assert!(lost_since(&o).is_empty());
}

#[test]
fn under_load_a_stale_member_that_answers_is_not_restarted_while_another_restart_is_under_way() {
    // A template change: demo-2 restarted on it and replays its WAL (answers, not healthy, not
    // ready); every linearizable read times out under load, so demo-1 (stale) is not ready and
    // not healthy either, but it answers: restarting it now would cost quorum.
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.statefulset.as_mut().unwrap().update_revision = Some("rev2".into());
    for k in [1, 2] {
        let p = o.pods.get_mut(&k).unwrap();
        p.ready = false;
        cluster(&mut o).members[k as usize].healthy = false;
    }
    o.pods.get_mut(&2).unwrap().revision = Some("rev2".into());
    let s = plan(&d, &o);
    assert!(
        matches!(
            &s,
            Step::Wait {
                reason: Reason::RollingMembers,
                ..
            }
        ),
        "{s:?}"
    );
    // One that gives no status at all still waits while the restarted member is not ready.
    cluster(&mut o).members[1].status = None;
    let s = plan(&d, &o);
    assert!(!matches!(s, Step::RestartMember { .. }), "{s:?}");
    // Once every other voter answers and is ready, it is restarted (it serves nobody).
    o.pods.get_mut(&2).unwrap().ready = true;
    cluster(&mut o).members[2].healthy = true;
    assert!(matches!(
        plan(&d, &o),
        Step::RestartMember { ordinal: 1, .. }
    ));
}

#[test]
fn a_learner_that_lost_its_data_is_removed_to_be_added_again() {
    // demo-3 joined as a learner (it started), then its volume was lost: its pod says so, and a
    // learner is never promoted without answering, so it would wait forever.
    let d = desired(4);
    let mut o = healthy(&d, 4);
    let m = &mut cluster(&mut o).members[3];
    (m.learner, m.healthy, m.status) = (true, false, None);
    refusing(
        o.pods.get_mut(&3).unwrap(),
        "couldn't find local name \"demo-3\"",
    );
    o.lost_since.insert(
        3,
        o.now - jiff::SignedDuration::from_secs(d.lost_member_grace_seconds as i64),
    );
    assert_eq!(
        plan(&d, &o),
        Step::RemoveMember {
            id: 103,
            name: "demo-3".into()
        }
    );
    // Within the grace it waits, saying why.
    o.lost_since.insert(3, o.now);
    assert!(matches!(
        plan(&d, &o),
        Step::Wait {
            reason: Reason::ReplacingMember,
            ..
        }
    ));
}

#[test]
fn raising_the_quota_under_nospace_rolls_out() {
    // Every member has the NOSPACE alarm (health fails for it alone; reads pass, pods ready);
    // spec.etcd.quotaBackendBytes raised: the new template must reach the members.
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.statefulset.as_mut().unwrap().update_revision = Some("rev2".into());
    for m in &mut cluster(&mut o).members {
        (m.healthy, m.alarmed) = (false, true);
        m.error = Some("etcd at demo-0 is unhealthy: active alarms 64:NOSPACE".into());
    }
    let s = plan(&d, &o);
    assert!(
        matches!(
            s,
            Step::RestartMember {
                ordinal: 2,
                why: Restart::NewTemplate,
                ..
            }
        ),
        "{s:?}"
    );
}

#[test]
fn a_member_pod_stuck_on_a_gone_node_is_named_with_what_to_do() {
    // A restart of demo-2 (template change) on a node that went away: the pod stays terminating.
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.statefulset.as_mut().unwrap().update_revision = Some("rev2".into());
    let p = o.pods.get_mut(&2).unwrap();
    (p.terminating, p.ready, p.overdue_seconds) = (true, false, 30);
    assert!(
        matches!(&plan(&d, &o), Step::Wait { message, .. } if message == "pod demo-2 is restarting")
    );
    o.pods.get_mut(&2).unwrap().overdue_seconds = crate::model::NODE_GONE_AFTER_SECONDS;
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Wait { message, .. } if message.contains("its node is gone") && message.contains("out-of-service")),
        "{s:?}"
    );
}

#[test]
fn a_recovery_that_stopped_with_clients_fenced_is_named_with_its_ways_out() {
    let d = crate::fixtures::cluster("demo")
        .replicas(3)
        .spec(|s| s.paused = true)
        .desired();
    // Stopped before deleting anything: the members are there, unpausing lets clients back.
    let mut o = healthy(&d, 3);
    o.clients_fenced = true;
    let step = plan(&d, &o);
    let Step::Hold {
        reason: Reason::ClientsFenced,
        message,
    } = &step
    else {
        panic!("{step:?}")
    };
    assert!(
        message.contains("demo-client") && message.contains("unpause"),
        "{message}"
    );
    let r = recovering(&d, &o, &step);
    assert_eq!(
        (r.status.as_str(), r.reason.as_str()),
        ("True", "ClientsFenced")
    );
    // Paused after the old members were deleted: the way out is the recovery going on (without
    // spec.recovery, unpausing would start an empty cluster).
    let gone = Observed {
        clients_fenced: true,
        ..Default::default()
    };
    let Step::Hold { message, .. } = plan(&d, &gone) else {
        panic!("{:?}", plan(&d, &gone))
    };
    assert!(
        message.contains("old members are deleted") && message.contains("spec.recovery"),
        "{message}"
    );
    // Paused without a fence: only paused.
    assert_eq!(plan(&d, &healthy(&d, 3)), Step::Paused);
}

#[test]
fn unpaused_the_fence_is_lifted_before_anything_else_even_during_a_restore() {
    let d = restored(3);
    let o = Observed {
        clients_fenced: true,
        ..Default::default()
    };
    assert_eq!(plan(&d, &o), Step::ApplySupportingObjects);
    let mut served = healthy(&desired(3), 3);
    served.clients_fenced = true;
    assert_eq!(plan(&desired(3), &served), Step::ApplySupportingObjects);
}

/// Issue 15 item 8: a member on a node that is gone (deleted, shut down, long NotReady) never
/// comes back by itself: after the grace it is removed (quorum permitting), and its pod and
/// volume are deleted at once (the pod's kubelet never confirms), so the StatefulSet starts it
/// elsewhere on a new volume; a member that answers is never treated so, whatever its node.
#[test]
fn a_member_on_a_gone_node_is_replaced_and_its_pod_deleted_at_once() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    o.now = jiff::Timestamp::from_second(10_000_000).unwrap();
    let gone = "its node n2 no longer exists";
    o.pods.get_mut(&2).unwrap().node_down = Some(gone.into());
    // It still answers (its node object was deleted, its kubelet and etcd run on): not lost.
    assert_eq!(plan(&d, &o), Step::Idle);
    assert!(lost_since(&o).is_empty());
    let m = &mut cluster(&mut o).members[2];
    (m.healthy, m.status) = (false, None);
    let s = plan(&d, &o);
    assert!(
        matches!(&s, Step::Wait { reason: Reason::ReplacingMember, message } if message.contains(gone) && message.contains("0s so far")),
        "{s:?}"
    );
    o.lost_since = lost_since(&o);
    o.now += jiff::SignedDuration::from_secs(d.lost_member_grace_seconds as i64);
    assert_eq!(
        plan(&d, &o),
        Step::RemoveMember {
            id: 102,
            name: "demo-2".into()
        }
    );
    // Removed: its slot is wiped at once, claim and pod.
    cluster(&mut o).members.remove(2);
    assert_eq!(
        plan(&d, &o),
        Step::WipeMember {
            ordinal: 2,
            claim: Some("data-demo-2".into()),
            pod: "demo-2".into(),
            force: true,
        }
    );
    assert!(
        plan(&d, &o)
            .to_string()
            .ends_with("(at once: its node is gone)")
    );
    // Never below quorum.
    let d5 = desired(3);
    let mut o = healthy(&d5, 3);
    for k in [1, 2] {
        o.pods.get_mut(&k).unwrap().node_down = Some(gone.into());
        let m = &mut cluster(&mut o).members[k as usize];
        (m.healthy, m.status) = (false, None);
        o.lost_since
            .insert(k, o.now - jiff::SignedDuration::from_secs(3600));
    }
    let s = plan(&d5, &o);
    assert!(
        !matches!(s, Step::RemoveMember { .. } | Step::WipeMember { .. }),
        "{s:?}"
    );
}

/// The leader (demo-0) counts as connected only `connected` of its peers.
fn leader_counts(o: &mut Observed, connected: &[u64]) {
    o.leader_peers = Some(crate::model::LeaderPeers {
        leader: 100,
        connected: connected.iter().copied().collect(),
    });
}

#[test]
fn a_removal_the_leader_would_refuse_on_a_stale_peer_count_moves_leadership_to_that_peer() {
    let d = desired(2);
    let mut o = healthy(&d, 3);
    let remove = Step::RemoveMember {
        id: 102,
        name: "demo-2".into(),
    };
    assert_eq!(plan(&d, &o), remove);
    assert!(needs_leader_peers(&remove));
    // demo-1 answers (a linearizable read through it passed) but the leader counts it as
    // disconnected: without demo-2, one of three voters would be connected, and etcd refuses.
    leader_counts(&mut o, &[102]);
    assert_eq!(
        plan(&d, &o),
        Step::MoveLeader {
            from: "demo-0".into(),
            to_id: 101,
            to: "demo-1".into()
        }
    );
    // A count that holds, or one that misses only the member removed (etcd removes a member it
    // counts as disconnected): the removal as planned.
    leader_counts(&mut o, &[101, 102]);
    assert_eq!(plan(&d, &o), remove);
    leader_counts(&mut o, &[101]);
    assert_eq!(plan(&d, &o), remove);
    // The peer really unreachable (no read through it passes): nobody to hand leadership to;
    // the removal is asked, and etcd's refusal is a wait.
    leader_counts(&mut o, &[102]);
    cluster(&mut o).members[1].healthy = false;
    assert!(!matches!(plan(&d, &o), Step::MoveLeader { .. }));
    // A count read from a member that no longer leads says nothing of the leader's.
    let mut o = healthy(&d, 3);
    o.leader_peers = Some(crate::model::LeaderPeers {
        leader: 101,
        connected: Default::default(),
    });
    assert_eq!(plan(&d, &o), remove);
}

#[test]
fn a_stale_peer_count_that_still_leaves_a_quorum_changes_nothing() {
    // Five voters to four: the leader, demo-2 and demo-3 stay counted, a quorum of five.
    let d = desired(4);
    let mut o = healthy(&d, 5);
    let step = plan(&d, &o);
    assert!(
        matches!(step, Step::RemoveMember { id: 104, .. }),
        "{step:?}"
    );
    leader_counts(&mut o, &[102, 103, 104]);
    assert_eq!(plan(&d, &o), step);
    // Two stale: etcd would refuse; leadership to the lowest such voter.
    leader_counts(&mut o, &[103, 104]);
    assert!(
        matches!(plan(&d, &o), Step::MoveLeader { to_id: 101, .. }),
        "{:?}",
        plan(&d, &o)
    );
    assert!(!needs_leader_peers(&Step::Idle));
}

#[test]
fn a_removal_etcd_said_not_yet_to_still_reads_as_scaling() {
    // A storage swap's removal on a cluster of three at three: only the step says it scales.
    let d = desired(3);
    let o = healthy(&d, 3);
    let now = jiff::Timestamp::from_second(1).unwrap();
    for (reason, what) in [
        (Reason::RemovingMember, "remove member demo-0"),
        (
            Reason::MovingLeader,
            "move leadership from demo-0 to demo-1",
        ),
    ] {
        let waiting = Step::Wait {
            reason,
            message: format!("{what} (etcd: not yet: etcdserver: unhealthy cluster)"),
        };
        let st = derive_status(&d, &o, &waiting, None, now);
        let scaling = cond(&st, condition::SCALING);
        assert_eq!(scaling.status, "True", "{what}");
        assert_eq!(scaling.reason, reason.as_str());
        assert!(scaling.message.contains("not yet"), "{}", scaling.message);
        assert_eq!(st.phase, Some(crate::api::Phase::Scaling));
    }
}
