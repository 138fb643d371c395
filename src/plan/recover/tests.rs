//! The recovery's rules: each step from what a pass observes, and a crash after any step
//! resumed by the next pass from what it observes then.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::super::tests::{cluster, desired, healthy};
use super::super::{plan, upgrade};
use super::*;
use crate::api::{EtcdBackupSpec, EtcdBackupStatus, RecoverySpec, backup_phase};
use crate::model::VolumeView;

/// `demo` of 3, told to rebuild from demo-0 (nonce `n1`), unless `from_backup` names a record.
pub(in crate::plan) fn recovering(from_backup: Option<&str>, force: bool) -> Desired {
    let spec = RecoverySpec {
        nonce: "n1".into(),
        from_member: from_backup.is_none().then(|| "demo-0".into()),
        from_backup: from_backup.map(Into::into),
        to: from_backup.is_none().then(|| "s3://b/p".into()),
        restore_credentials_secret: Some("s3".into()),
        force,
        ..Default::default()
    };
    let mut d = desired(3);
    d.recovery = crate::model::recovery::validate(Some(&spec), "demo", None).unwrap();
    d
}

/// Quorum lost: demo-1 and demo-2 and their volumes are gone; demo-0 answers.
fn lost(d: &Desired) -> Observed {
    let mut o = healthy(d, 3);
    for k in [1, 2] {
        o.pods.remove(&k);
        o.volumes.remove(&k);
        let m = &mut cluster(&mut o).members[k as usize];
        m.status = None;
        m.healthy = false;
    }
    cluster(&mut o).members[0].healthy = false;
    // Without a quorum its probe (a linearizable read) fails: not Ready.
    o.pods.get_mut(&0).unwrap().ready = false;
    o
}

/// An EtcdBackup of demo, started `secs` after the epoch, in `phase`.
fn record(name: &str, nonce: Option<&str>, phase: &str, secs: i64) -> EtcdBackup {
    let mut b = EtcdBackup::new(
        name,
        EtcdBackupSpec {
            cluster: "demo".into(),
            destination: "s3://b/p".into(),
            ..Default::default()
        },
    );
    let mut labels = label::for_cluster("demo", label::TRIGGER_RECOVER);
    if let Some(n) = nonce {
        labels.insert(label::RECOVERY.into(), n.into());
    }
    b.metadata.labels = Some(labels);
    b.status = Some(EtcdBackupStatus {
        phase: Some(phase.into()),
        url: Some(format!("s3://b/p/ns-demo-{name}-r500.db.zst")),
        sha256: Some("ab".repeat(32)),
        revision: Some(500),
        start_time: Some(Time(jiff::Timestamp::from_second(secs).unwrap())),
        ..Default::default()
    });
    b
}

fn marked(mut b: EtcdBackup, mark: Mark) -> EtcdBackup {
    b.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(ANNOTATION_RECOVERY.into(), mark.value("n1"));
    b
}

/// One pass's decision, as the engine makes it (settled first).
fn next(d: &Desired, o: &Observed) -> Step {
    let d = upgrade::settle(d.clone(), o);
    plan(&settle(d, o), o)
}

/// What carrying out `step` leaves for the next pass to observe (a crash right after it is the
/// same world: the next pass starts from here whoever runs it).
fn carry_out(o: &mut Observed, step: &Step) {
    let mark = |o: &mut Observed, record: &str, m: Mark| {
        let b = o
            .backups
            .records
            .iter_mut()
            .find(|b| b.name_any() == record)
            .unwrap();
        *b = marked(b.clone(), m);
    };
    match step {
        Step::FenceClients => o.clients_fenced = true,
        Step::TakeRecoverySnapshot { .. } => {
            let n = o.backups.records.len() as i64;
            let name = format!("demo-snap-{n}");
            let b = record(&name, Some("n1"), backup_phase::SUCCEEDED, 100 + n);
            o.backups.records.push(b);
        }
        Step::VerifyRecoverySnapshot { record } => mark(o, record, Mark::Verified),
        Step::DeleteLostMembers { record } => {
            mark(o, record, Mark::Deleting);
            o.statefulset = None;
            o.config = None;
            o.pods.clear();
            o.volumes.clear();
            o.etcd = EtcdView::NotQueried;
        }
        Step::RestoreSeed { .. } => {
            o.volumes.insert(
                0,
                VolumeView {
                    name: "data-demo-0".into(),
                    terminating: false,
                    restore: Some(RestoreMark::Restoring),
                    ..Default::default()
                },
            );
            o.restore_pod = Some(RestorePodView::Running);
        }
        Step::MarkRecovered { record } => mark(o, record, Mark::Restored),
        Step::ApplySupportingObjects => o.clients_fenced = false,
        other => panic!("the walk does not model {other}"),
    }
}

fn name(step: &Step) -> String {
    serde_json::to_value(step).unwrap()["step"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Runs passes from `o` until the seed is bootstrapped; the steps' names, in order.
fn walk(d: &Desired, mut o: Observed) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..20 {
        let step = next(d, &o);
        seen.push(name(&step));
        match &step {
            Step::Bootstrap { replicas: 1 } => return seen,
            // The restore pod finishes its work.
            Step::Wait {
                reason: Reason::RestoringSnapshot,
                ..
            } => o.restore_pod = Some(RestorePodView::Succeeded),
            other => carry_out(&mut o, other),
        }
    }
    panic!("no bootstrap after {seen:?}")
}

#[test]
fn a_recovery_from_the_survivor_fences_snapshots_verifies_deletes_restores_then_starts_the_seed() {
    let d = recovering(None, false);
    assert_eq!(
        walk(&d, lost(&d)),
        [
            "fenceClients",
            "takeRecoverySnapshot",
            "verifyRecoverySnapshot",
            "deleteLostMembers",
            "restoreSeed",
            "wait",
            "markRecovered",
            "applySupportingObjects",
            "bootstrap",
        ]
    );
}

#[test]
fn a_recovery_from_a_backup_reads_it_back_before_anything_is_deleted() {
    let d = recovering(Some("demo-b"), false);
    let mut o = lost(&d);
    o.backups
        .records
        .push(record("demo-b", None, backup_phase::SUCCEEDED, 50));
    assert_eq!(
        walk(&d, o)[..4],
        [
            "fenceClients",
            "verifyRecoverySnapshot",
            "deleteLostMembers",
            "restoreSeed"
        ]
    );
}

#[test]
fn a_crash_after_any_step_is_resumed_by_the_next_pass_from_what_it_observes() {
    // The world after each step of the walk, handed to a fresh planner (nothing else carried
    // over): it must go on to the same end, repeating no finished step.
    let d = recovering(None, false);
    let mut o = lost(&d);
    let full = walk(&d, o.clone());
    for done in 0..full.len() - 1 {
        let rest = walk(&d, o.clone());
        assert_eq!(rest, full[done..], "after {:?}", &full[..done]);
        let step = next(&d, &o);
        match &step {
            Step::Wait { .. } => o.restore_pod = Some(RestorePodView::Succeeded),
            other => carry_out(&mut o, other),
        }
    }
}

#[test]
fn nothing_is_done_while_a_quorum_answers_unless_forced() {
    let d = recovering(None, false);
    let o = healthy(&d, 3);
    let step = next(&d, &o);
    assert!(
        matches!(
            &step,
            Step::Hold { reason: Reason::RebuildingCluster, message }
                if message.contains("has a quorum") && message.contains("nothing was deleted")
        ),
        "{step:?}"
    );
    assert_eq!(next(&recovering(None, true), &o), Step::FenceClients);
    // A quorum back after the fence, before the deletion: held, fenced, nothing deleted.
    let mut fenced = o.clone();
    fenced.clients_fenced = true;
    assert!(matches!(
        next(&d, &fenced),
        Step::Hold {
            reason: Reason::ClientsFenced,
            ..
        }
    ));
    // Once the deletion began, the old members' quorum no longer matters: it goes forward.
    fenced.backups.records = vec![marked(
        record("s", Some("n1"), backup_phase::SUCCEEDED, 1),
        Mark::Deleting,
    )];
    assert!(matches!(next(&d, &fenced), Step::DeleteLostMembers { .. }));
}

#[test]
fn an_interrupted_or_failed_snapshot_is_taken_again_at_most_three_times() {
    let d = recovering(None, false);
    let mut o = lost(&d);
    o.clients_fenced = true;
    // Interrupted (its taker crashed: `Running`, and no pass of this cluster runs beside).
    o.backups.records = vec![record("a", Some("n1"), backup_phase::RUNNING, 1)];
    assert!(matches!(
        next(&d, &o),
        Step::TakeRecoverySnapshot { ordinal: 0, .. }
    ));
    o.backups
        .records
        .push(record("b", Some("n1"), backup_phase::FAILED, 2));
    // Another recovery's records do not count.
    o.backups
        .records
        .push(record("x", Some("n0"), backup_phase::SUCCEEDED, 3));
    assert!(matches!(next(&d, &o), Step::TakeRecoverySnapshot { .. }));
    o.backups
        .records
        .push(record("c", Some("n1"), backup_phase::FAILED, 4));
    let step = next(&d, &o);
    assert!(
        matches!(&step, Step::Hold { reason: Reason::ClientsFenced, message } if message.contains("failed 3 times")),
        "{step:?}"
    );
}

#[test]
fn a_rejected_snapshot_or_a_silent_survivor_holds_with_the_fence_and_deletes_nothing() {
    let d = recovering(None, false);
    let mut o = lost(&d);
    o.clients_fenced = true;
    o.backups.records = vec![marked(
        record("a", Some("n1"), backup_phase::SUCCEEDED, 1),
        Mark::Rejected("demo-0 moved from revision 500 (its snapshot) to 503".into()),
    )];
    let step = next(&d, &o);
    assert!(
        matches!(&step, Step::Hold { reason: Reason::ClientsFenced, message }
            if message.contains("moved") && message.contains("\"recovery\":null")),
        "{step:?}"
    );
    // The fence stays while the recovery is under way (`fenced_clients` waits for it).
    assert!(under_way(&d, &o));
    let mut silent = lost(&d);
    silent.clients_fenced = true;
    cluster(&mut silent).members[0].status = None;
    assert!(matches!(
        next(&d, &silent),
        Step::Hold { message, .. } if message.contains("does not answer")
    ));
}

#[test]
fn a_deletion_cut_short_is_asked_again_and_waited_for_while_it_goes() {
    let d = recovering(None, false);
    let mut o = lost(&d);
    o.clients_fenced = true;
    o.backups.records = vec![marked(
        record("a", Some("n1"), backup_phase::SUCCEEDED, 1),
        Mark::Deleting,
    )];
    // Marked, then the driver crashed before deleting anything.
    assert!(matches!(next(&d, &o), Step::DeleteLostMembers { record } if record == "a"));
    // Deleted, going.
    o.statefulset = None;
    o.config = None;
    o.pods.get_mut(&0).unwrap().terminating = true;
    o.volumes.get_mut(&0).unwrap().terminating = true;
    assert!(matches!(
        next(&d, &o),
        Step::Wait {
            reason: Reason::RebuildingCluster,
            ..
        }
    ));
    // Only the config was left (a crash between two deletions): asked again.
    o.pods.clear();
    o.volumes.clear();
    o.config = Some(BTreeMap::new());
    assert!(matches!(next(&d, &o), Step::DeleteLostMembers { .. }));
    // Gone: the seed is restored from the recovery's snapshot, under the recovery's nonce.
    o.config = None;
    let step = next(&d, &o);
    assert!(
        matches!(&step, Step::RestoreSeed { url } if url.ends_with("ns-demo-a-r500.db.zst")),
        "{step:?}"
    );
    let settled = settle(d.clone(), &o);
    let r = settled.restore.unwrap();
    assert_eq!(
        (r.nonce.as_deref(), r.credentials_secret.as_deref()),
        (Some("n1"), Some("s3"))
    );
}

#[test]
fn a_restored_recovery_is_silent_and_the_fence_is_lifted_before_the_seed_starts() {
    let d = recovering(None, false);
    let mut o = Observed {
        clients_fenced: true,
        supporting_objects: true,
        restore_pod: Some(RestorePodView::Succeeded),
        ..Default::default()
    };
    o.volumes.insert(
        0,
        VolumeView {
            name: "data-demo-0".into(),
            terminating: false,
            restore: Some(RestoreMark::Restoring),
            ..Default::default()
        },
    );
    o.backups.records = vec![marked(
        record("a", Some("n1"), backup_phase::SUCCEEDED, 1),
        Mark::Restored,
    )];
    assert_eq!(recovery(&d, &o), None);
    assert!(!under_way(&d, &o));
    assert_eq!(next(&d, &o), Step::ApplySupportingObjects);
    o.clients_fenced = false;
    assert_eq!(next(&d, &o), Step::Bootstrap { replicas: 1 });
    // Later, the restored cluster runs as any other: a member config it loses is repaired, never
    // taken for the lost cluster's (the record says the recovery is done).
    let mut running = healthy(&d, 3);
    running.backups.records = o.backups.records.clone();
    running.config = None;
    assert!(!matches!(
        next(&d, &running),
        Step::DeleteLostMembers { .. }
    ));
}

#[test]
fn a_paused_cluster_is_not_recovered_and_a_pod_of_the_restore_is_not_a_remnant() {
    let mut d = recovering(None, false);
    d.paused = true;
    assert_eq!(next(&d, &lost(&d)), Step::Paused);
    let d = recovering(None, false);
    let mut o = Observed {
        clients_fenced: true,
        restore_pod: Some(RestorePodView::Running),
        ..Default::default()
    };
    o.volumes.insert(
        0,
        VolumeView {
            name: "data-demo-0".into(),
            terminating: false,
            restore: Some(RestoreMark::Restoring),
            ..Default::default()
        },
    );
    o.backups.records = vec![marked(
        record("a", Some("n1"), backup_phase::SUCCEEDED, 1),
        Mark::Deleting,
    )];
    assert!(matches!(
        next(&d, &o),
        Step::Wait {
            reason: Reason::RestoringSnapshot,
            ..
        }
    ));
    // A restore pod of an earlier restore, with no claim of this one, is.
    o.volumes.clear();
    o.restore_pod = Some(RestorePodView::Failed("old".into()));
    assert!(matches!(next(&d, &o), Step::DeleteLostMembers { .. }));
}

#[test]
fn marks_read_back_for_their_own_recovery_only() {
    let b = marked(
        record("a", Some("n1"), backup_phase::SUCCEEDED, 1),
        Mark::Rejected("why: it moved".into()),
    );
    assert_eq!(
        Mark::of(&b, "n1"),
        Some(Mark::Rejected("why: it moved".into()))
    );
    assert_eq!(Mark::of(&b, "n2"), None);
    assert_eq!(Mark::of(&b, "n"), None);
    for m in [Mark::Verified, Mark::Deleting, Mark::Restored] {
        assert_eq!(Mark::of(&marked(b.clone(), m.clone()), "n1"), Some(m));
    }
}

#[test]
fn each_recovery_is_a_cluster_of_its_own() {
    // Recovery `nonce` from backup demo-b, which a recovery `marked_for` verified: the token of
    // the cluster it restores, when it restores one.
    let token = |nonce: &str, marked_for: &str| {
        let mut d = recovering(Some("demo-b"), false);
        d.recovery.as_mut().unwrap().nonce = nonce.into();
        let mut o = Observed::default();
        let b = record("demo-b", None, backup_phase::SUCCEEDED, 1);
        o.backups.records = vec![marked(b, Mark::Verified)];
        o.backups.records[0].metadata.annotations = Some(BTreeMap::from([(
            ANNOTATION_RECOVERY.to_string(),
            Mark::Verified.value(marked_for),
        )]));
        let settled = settle(d, &o);
        settled.restore.as_ref()?;
        Some(objects::bootstrap_config(&settled, 1)[objects::config_key::INITIAL_TOKEN].clone())
    };
    // Two recoveries from the same backup: each under its own nonce, so each its own token (and
    // cluster id); a record verified for one is not for the other.
    assert_eq!(token("n2", "n1"), None, "n2 has not verified the record");
    assert_ne!(token("n1", "n1").unwrap(), token("n2", "n2").unwrap());
}

/// As `Quorum::of` counts it: a healthy voter's linearizable read proves a quorum.
fn q(voters: usize, healthy: usize) -> Quorum {
    Quorum {
        voters,
        healthy,
        answering: healthy,
        leader: false,
        proof: (healthy > 0).then(|| "demo-0 answered a linearizable read".into()),
    }
}

#[test]
fn recover_refuses_while_a_healthy_quorum_answers_unless_forced() {
    // (voters, healthy, force) → may act
    let table = [
        ((3, 3, false), false),
        ((3, 2, false), false),
        // One healthy voter: its read needed a majority behind its leader (issue 43 R6).
        ((3, 1, false), false),
        ((3, 0, false), true),
        ((5, 3, false), false),
        ((5, 2, false), false),
        ((0, 0, false), true), // nothing answers at all (a backup is the only way)
        ((3, 3, true), true),
    ];
    for ((voters, healthy, force), ok) in table {
        let got = refuse_while_quorum("ns/demo", &q(voters, healthy), force);
        assert_eq!(
            got.is_ok(),
            ok,
            "{voters} voters, {healthy} healthy, force {force}: {got:?}"
        );
        if let Err(e) = got {
            assert!(e.contains("--force") && e.contains("ns/demo"), "{e}");
        }
    }
    // NOSPACE everywhere: nobody healthy, but a majority answers with a leader.
    let full = Quorum {
        voters: 3,
        healthy: 0,
        answering: 2,
        leader: true,
        proof: None,
    };
    assert!(refuse_while_quorum("ns/demo", &full, false).is_err());
    // Survivors answer, but no leader: quorum lost.
    let lost = Quorum {
        leader: false,
        ..full.clone()
    };
    assert!(refuse_while_quorum("ns/demo", &lost, false).is_ok());
    let one = Quorum {
        answering: 1,
        ..full
    };
    assert!(refuse_while_quorum("ns/demo", &one, false).is_ok());
}

#[test]
fn a_survivor_that_moved_since_its_snapshot_stops_the_recovery() {
    assert!(survivor_moved("demo-1", 120, 120).is_ok());
    let e = survivor_moved("demo-1", 120, 125).unwrap_err();
    assert!(
        e.contains("demo-1") && e.contains("120") && e.contains("125"),
        "{e}"
    );
}

/// A finished recovery, its done-mark recorded (`status.completed`), then its records gone
/// (retention, or a user): the rules act on it no more. Without the mark the same world would be
/// a new fence and rebuild under a new cluster id (from a survivor, forced) or a hold for ever
/// (from a backup).
#[test]
fn a_finished_recovery_stays_finished_when_its_records_go() {
    for (d, without_mark) in [
        (recovering(None, true), "fenceClients"),
        (recovering(Some("demo-b"), false), "hold"),
    ] {
        let mut running = healthy(&d, 3);
        let rec = match &d.recovery.as_ref().unwrap().from {
            RecoverFrom::Backup { record: r } => record(r, None, backup_phase::SUCCEEDED, 1),
            RecoverFrom::Member { .. } => record("a", Some("n1"), backup_phase::SUCCEEDED, 1),
        };
        running.backups.records = vec![marked(rec, Mark::Restored)];
        assert_eq!(next(&d, &running), Step::Idle, "restored, the record there");
        // The pass that saw the seed restored records the done-mark.
        running.completed.recovery = completed_mark(&d, &running);
        assert_eq!(running.completed.recovery.as_deref(), Some("n1"));
        running.backups.records.clear();
        assert_eq!(recovery(&d, &running), None);
        assert!(!under_way(&d, &running));
        assert_eq!(next(&d, &running), Step::Idle, "the records gone");
        // The mark is carried from pass to pass.
        assert_eq!(completed_mark(&d, &running), running.completed.recovery);
        // What the mark prevents:
        running.completed = Default::default();
        assert_eq!(name(&next(&d, &running)), without_mark);
    }
    // Another recovery (a new nonce) is a new request: the old mark does not stop it.
    let mut d = recovering(None, true);
    d.recovery.as_mut().unwrap().nonce = "n2".into();
    let mut o = lost(&d);
    o.completed.recovery = Some("n1".into());
    assert_eq!(next(&d, &o), Step::FenceClients);
}

#[test]
fn retention_keeps_the_records_a_recovery_of_the_spec_leans_on() {
    let d = recovering(Some("demo-b"), false);
    assert_eq!(pinned_records(&d, &[]), ["demo-b"]);
    let d = recovering(None, false);
    let records = [
        record("mine", Some("n1"), backup_phase::SUCCEEDED, 1),
        record("earlier", Some("n0"), backup_phase::SUCCEEDED, 1),
        record("scheduled", None, backup_phase::SUCCEEDED, 1),
    ];
    assert_eq!(pinned_records(&d, &records), ["mine"]);
    assert!(pinned_records(&desired(3), &records).is_empty());
}

/// Issue 43 R6: the driver reaches one of three voters; its linearizable read passed. The old
/// rule counted the answers here (1 of 3) and let the recovery go on; now it is refused, naming
/// the member whose read proved the quorum, unless forced.
#[test]
fn recover_refuses_when_one_reachable_voter_proves_a_quorum_the_driver_cannot_see() {
    let d = desired(3);
    let mut o = healthy(&d, 3);
    for m in &mut cluster(&mut o).members[1..] {
        (m.healthy, m.status) = (false, None);
    }
    let quorum = Quorum::of(&d, &o);
    assert_eq!((quorum.voters, quorum.answering, quorum.healthy), (3, 1, 1));
    let e = refuse_while_quorum("ns/demo", &quorum, false).unwrap_err();
    assert!(
        e.contains("ns/demo has a quorum (1 of 3 voters answer")
            && e.contains("the others do not answer from here, but they are not down")
            && e.contains("demo-0 answered a linearizable read")
            && e.contains("--force"),
        "{e}"
    );
    assert!(refuse_while_quorum("ns/demo", &quorum, true).is_ok());
}
