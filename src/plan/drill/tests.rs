//! The drill rules, one situation each: never drilled, drilled recently, overdue, a failed last
//! drill, a repair or a backup first, a drill pod running, ended, or left behind, and what
//! `status.backup` says of drills.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;
use crate::api::{DrillStatus, EtcdBackupStatus};
use crate::model::records::drill::{DrillFigures, Fetched, Restored};

fn t(s: &str) -> Timestamp {
    s.parse().unwrap()
}

/// `demo` (uid 1234abcd-ef) backed up to s3://b/p without a schedule, drilled every `every`.
fn drilled_demo(every: Option<&str>) -> Desired {
    crate::fixtures::cluster("demo")
        .spec(|s| {
            s.backup = Some(crate::api::BackupSpec {
                destination: "s3://b/p".into(),
                drill: every.map(|e| crate::api::DrillSpec {
                    every: e.into(),
                    tools_image: None,
                }),
                ..Default::default()
            })
        })
        .desired()
}

use crate::plan::backup::tests::seen;

/// `seen` with one good backup, b1, taken at 10:00.
fn with_b1(d: &Desired, now: &str) -> Observed {
    seen(d, now, vec![backup("b1", "2026-12-01T10:00:00Z")])
}

/// A good backup of demo's taken at `at`.
fn backup(name: &str, at: &str) -> EtcdBackup {
    let mut b = EtcdBackup::new(
        name,
        crate::api::EtcdBackupSpec {
            cluster: "demo".into(),
            destination: "s3://b/p".into(),
            cluster_uid: Some("1234abcd-ef".into()),
            ..Default::default()
        },
    );
    b.status = Some(EtcdBackupStatus {
        phase: Some("Succeeded".into()),
        start_time: Some(Time(t(at))),
        completion_time: Some(Time(t(at))),
        url: Some(format!("s3://b/p/{name}.db.zst")),
        quorum: Some(true),
        ..Default::default()
    });
    b
}

/// `b`, drilled at `at` with `outcome` for the object it names.
fn drilled(mut b: EtcdBackup, at: &str, outcome: &str) -> EtcdBackup {
    let st = b.status.as_mut().unwrap();
    st.drill = Some(DrillStatus {
        time: Some(Time(t(at))),
        outcome: outcome.into(),
        objects: vec![st.url.clone().unwrap()],
        message: (outcome == drill_outcome::FAILED).then(|| "its fetch step failed".into()),
        ..Default::default()
    });
    b
}

fn figures() -> DrillFigures {
    DrillFigures {
        fetched: Fetched {
            stored_bytes: 10,
            sha256: "ab".repeat(32),
        },
        restored: Restored {
            revision: 5,
            keys: 2,
            hash_kv: 7,
            compact_revision: 1,
        },
    }
}

fn drill_pod(backup: &str, created: &str, ended: Option<Result<DrillFigures, String>>) -> DrillPod {
    DrillPod {
        name: crate::objects::drill::pod_name(backup),
        backup: backup.into(),
        scheduled: true,
        created: Some(t(created)),
        ended,
    }
}

fn policy_of(p: &DrillPod) -> DrillPolicy {
    DrillPolicy {
        name: p.name.clone(),
        created: p.created,
    }
}

fn start(record: &str) -> Option<Step> {
    Some(Step::Drill {
        part: DrillStep::Start {
            record: record.into(),
        },
    })
}

#[test]
fn a_cluster_never_drilled_drills_its_newest_good_backup_at_once() {
    let d = drilled_demo(Some("24h"));
    let o = seen(
        &d,
        "2026-12-01T12:00:00Z",
        vec![
            backup("b1", "2026-12-01T10:00:00Z"),
            backup("b2", "2026-12-01T11:00:00Z"),
        ],
    );
    assert_eq!(next(&d, &o), start("b2"));
    // As the planner runs it: the cluster needs nothing else.
    assert_eq!(crate::plan::plan(&d, &o), start("b2").unwrap());
}

#[test]
fn without_drills_or_without_a_good_backup_nothing_is_drilled() {
    let off = drilled_demo(None);
    let o = with_b1(&off, "2026-12-01T12:00:00Z");
    assert_eq!(next(&off, &o), None);
    let d = drilled_demo(Some("24h"));
    let mut failed = backup("b1", "2026-12-01T10:00:00Z");
    failed.status.as_mut().unwrap().phase = Some("Failed".into());
    let mut no_quorum = backup("b2", "2026-12-01T11:00:00Z");
    no_quorum.status.as_mut().unwrap().quorum = Some(false);
    let o = seen(&d, "2026-12-01T12:00:00Z", vec![failed, no_quorum]);
    assert_eq!(next(&d, &o), None);
}

#[test]
fn the_cli_runs_no_scheduled_drill() {
    let d = drilled_demo(Some("24h"));
    let mut o = with_b1(&d, "2026-12-01T12:00:00Z");
    o.backups.schedules = false;
    assert_eq!(next(&d, &o), None);
}

#[test]
fn a_cluster_drilled_recently_waits_for_its_interval() {
    let d = drilled_demo(Some("24h"));
    let old = drilled(
        backup("b1", "2026-12-01T10:00:00Z"),
        "2026-12-01T10:30:00Z",
        drill_outcome::PASSED,
    );
    let new = backup("b2", "2026-12-01T20:00:00Z");
    let o = seen(&d, "2026-12-02T10:00:00Z", vec![old.clone(), new.clone()]);
    assert_eq!(next(&d, &o), None, "23.5 h after the last drill");
    let o = seen(&d, "2026-12-02T10:30:00Z", vec![old, new]);
    assert_eq!(next(&d, &o), start("b2"), "24 h after it");
}

#[test]
fn an_overdue_drill_runs_once_for_the_intervals_it_missed() {
    let d = drilled_demo(Some("1h"));
    let old = drilled(
        backup("b1", "2026-12-01T10:00:00Z"),
        "2026-12-01T10:30:00Z",
        drill_outcome::PASSED,
    );
    let o = seen(
        &d,
        "2026-12-03T00:00:00Z",
        vec![
            old.clone(),
            backup("b2", "2026-12-01T20:00:00Z"),
            backup("b3", "2026-12-02T20:00:00Z"),
        ],
    );
    // The newest only, not one per missed interval.
    assert_eq!(next(&d, &o), start("b3"));
    let o = seen(
        &d,
        "2026-12-03T00:00:00Z",
        vec![
            old,
            backup("b2", "2026-12-01T20:00:00Z"),
            drilled(
                backup("b3", "2026-12-02T20:00:00Z"),
                "2026-12-02T23:50:00Z",
                drill_outcome::PASSED,
            ),
        ],
    );
    assert_eq!(next(&d, &o), None, "the newest was drilled 10 min ago");
}

#[test]
fn the_newest_backup_drilled_already_is_not_drilled_again() {
    let d = drilled_demo(Some("1h"));
    for outcome in [drill_outcome::PASSED, drill_outcome::FAILED] {
        let o = seen(
            &d,
            "2026-12-05T00:00:00Z",
            vec![drilled(
                backup("b1", "2026-12-01T10:00:00Z"),
                "2026-12-01T10:30:00Z",
                outcome,
            )],
        );
        assert_eq!(next(&d, &o), None, "{outcome}: waits for a new backup");
    }
    // Drilled while the record named another object: its object now is not drilled yet.
    let mut moved = drilled(
        backup("b1", "2026-12-01T10:00:00Z"),
        "2026-12-01T10:30:00Z",
        drill_outcome::PASSED,
    );
    moved.status.as_mut().unwrap().url = Some("s3://b/p/elsewhere.db.zst".into());
    let o = seen(&d, "2026-12-05T00:00:00Z", vec![moved]);
    assert_eq!(next(&d, &o), start("b1"));
}

#[test]
fn after_a_failed_drill_the_next_backup_is_drilled_an_interval_later() {
    let d = drilled_demo(Some("1h"));
    let failed = drilled(
        backup("b1", "2026-12-01T10:00:00Z"),
        "2026-12-01T10:30:00Z",
        drill_outcome::FAILED,
    );
    let o = seen(
        &d,
        "2026-12-01T11:00:00Z",
        vec![failed.clone(), backup("b2", "2026-12-01T10:50:00Z")],
    );
    assert_eq!(next(&d, &o), None);
    let o = seen(
        &d,
        "2026-12-01T11:31:00Z",
        vec![failed, backup("b2", "2026-12-01T10:50:00Z")],
    );
    assert_eq!(next(&d, &o), start("b2"));
}

#[test]
fn a_repair_or_a_due_backup_comes_before_a_drill() {
    let d = drilled_demo(Some("1h"));
    let mut o = with_b1(&d, "2026-12-01T12:00:00Z");
    assert_eq!(crate::plan::plan(&d, &o), start("b1").unwrap());
    // A member lost (gone from the member list, its pod not running): its repair first, the
    // drill not now.
    crate::plan::tests::cluster(&mut o).members.remove(1);
    o.pods.get_mut(&1).unwrap().running = false;
    let step = crate::plan::plan(&d, &o);
    assert!(!matches!(step, Step::Drill { .. }), "{step:?}");
    // A member to add (scaling up): the membership step first.
    let mut o = with_b1(&d, "2026-12-01T12:00:00Z");
    let grown = crate::plan::tests::healthy(&d, 2);
    (o.pods, o.statefulset, o.config, o.etcd) =
        (grown.pods, grown.statefulset, grown.config, grown.etcd);
    let step = crate::plan::plan(&d, &o);
    assert!(!matches!(step, Step::Drill { .. }), "{step:?}");
    // A backup whose taker died is marked first.
    let mut o = with_b1(&d, "2026-12-01T12:00:00Z");
    let mut running = backup("b2", "2026-12-01T11:00:00Z");
    let st = running.status.as_mut().unwrap();
    st.phase = Some("Running".into());
    // Signed by this operator, which is not taking it: its earlier life died.
    st.taken_by = Some("operator/op-0".into());
    st.url = None;
    o.backups.records.push(running);
    assert!(
        matches!(crate::plan::plan(&d, &o), Step::AbandonBackup { .. }),
        "{:?}",
        crate::plan::plan(&d, &o)
    );
}

#[test]
fn a_running_drill_pod_is_left_to_run_and_no_other_starts() {
    let d = drilled_demo(Some("1h"));
    let mut o = with_b1(&d, "2026-12-01T12:05:00Z");
    let p = drill_pod("b1", "2026-12-01T12:00:00Z", None);
    o.backups.drill_policies = vec![policy_of(&p)];
    o.backups.drill_pods = vec![p];
    assert_eq!(next(&d, &o), None);
    assert_eq!(crate::plan::plan(&d, &o), Step::Idle);
    // A `backup verify` running: no scheduled drill beside it either.
    o.backups.drill_pods[0].scheduled = false;
    assert_eq!(next(&d, &o), None);
}

#[test]
fn an_ended_drill_pod_is_finished_even_after_a_crash_or_with_drills_off() {
    for every in [Some("1h"), None] {
        let d = drilled_demo(every);
        let mut o = with_b1(&d, "2026-12-01T12:05:00Z");
        for ended in [
            Ok(figures()),
            Err("its fetch step failed: boom".to_string()),
        ] {
            let p = drill_pod("b1", "2026-12-01T12:00:00Z", Some(ended));
            o.backups.drill_policies = vec![policy_of(&p)];
            o.backups.drill_pods = vec![p];
            assert_eq!(
                next(&d, &o),
                Some(Step::Drill {
                    part: DrillStep::Finish {
                        record: "b1".into(),
                        pod: "b1-drill".into()
                    }
                })
            );
        }
    }
}

#[test]
fn a_drill_pod_no_one_will_finish_is_swept() {
    let d = drilled_demo(Some("1h"));
    let base = with_b1(&d, "2026-12-01T12:05:00Z");
    let sweep = |o: &Observed| match next(&d, o) {
        Some(Step::Drill {
            part:
                DrillStep::Sweep {
                    pods,
                    policies,
                    why,
                },
        }) => (pods, policies, why),
        other => panic!("{other:?}"),
    };
    // Its record deleted meanwhile.
    let mut o = base.clone();
    let p = drill_pod("gone", "2026-12-01T12:00:00Z", Some(Ok(figures())));
    o.backups.drill_policies = vec![policy_of(&p)];
    o.backups.drill_pods = vec![p];
    let (pods, policies, why) = sweep(&o);
    assert_eq!(
        (pods, policies),
        (vec!["gone-drill".into()], vec!["gone-drill".into()])
    );
    assert!(why.contains("the record gone is gone"), "{why}");
    // Running past its deadline and the grace after it.
    let mut o = base.clone();
    o.backups.drill_pods = vec![drill_pod("b1", "2026-12-01T11:40:00Z", None)];
    let (pods, policies, why) = sweep(&o);
    assert_eq!((pods, policies), (vec!["b1-drill".into()], vec![]));
    assert!(why.contains("deadline"), "{why}");
    // A `backup verify` pod whose CLI is long gone.
    o.backups.drill_pods[0].scheduled = false;
    assert_eq!(sweep(&o).0, vec!["b1-drill".to_string()]);
    // A policy whose pod was never created (its driver died in between).
    let mut o = base.clone();
    o.backups.drill_policies = vec![DrillPolicy {
        name: "b1-drill".into(),
        created: Some(t("2026-12-01T12:00:00Z")),
    }];
    let (pods, policies, why) = sweep(&o);
    assert_eq!((pods, policies), (vec![], vec!["b1-drill".into()]));
    assert!(why.contains("no drill pod of"), "{why}");
    // ... but not one created a moment ago, whose pod comes next.
    o.backups.drill_policies[0].created = Some(t("2026-12-01T12:04:50Z"));
    assert_eq!(next(&d, &o), None);
}

#[test]
fn a_backup_verify_pod_that_ended_is_its_clis_to_finish() {
    let d = drilled_demo(Some("1h"));
    let mut o = with_b1(&d, "2026-12-01T12:05:00Z");
    let mut p = drill_pod("b1", "2026-12-01T12:04:00Z", Some(Ok(figures())));
    p.scheduled = false;
    o.backups.drill_pods = vec![p];
    assert_eq!(next(&d, &o), None);
}

#[test]
fn the_status_says_the_last_drill_and_when_the_next_is_due() {
    let d = drilled_demo(Some("24h"));
    let o = with_b1(&d, "2026-12-01T12:00:00Z");
    let (st, _) = crate::plan::backup::status(&d, &o, &[]);
    let st = st.unwrap();
    assert_eq!(st.last_drill, None);
    assert_eq!(
        st.next_drill_time,
        Some(Time(t("2026-12-01T10:00:00Z"))),
        "due since the backup exists"
    );
    let o = seen(
        &d,
        "2026-12-03T12:00:00Z",
        vec![
            drilled(
                backup("b1", "2026-12-01T10:00:00Z"),
                "2026-12-01T12:00:00Z",
                drill_outcome::PASSED,
            ),
            drilled(
                backup("b2", "2026-12-02T10:00:00Z"),
                "2026-12-02T12:00:00Z",
                drill_outcome::FAILED,
            ),
        ],
    );
    let (st, _) = crate::plan::backup::status(&d, &o, &[]);
    let st = st.unwrap();
    let last = st.last_drill.unwrap();
    assert_eq!(last.backup, "b2");
    assert_eq!(last.outcome, drill_outcome::FAILED);
    assert_eq!(last.message.as_deref(), Some("its fetch step failed"));
    assert_eq!(last.time, Some(Time(t("2026-12-02T12:00:00Z"))));
    assert_eq!(last.last_passed_time, Some(Time(t("2026-12-01T12:00:00Z"))));
    assert_eq!(st.next_drill_time, Some(Time(t("2026-12-03T12:00:00Z"))));
    // Drills off: the last one still shows (a `backup verify`), no next.
    let off = drilled_demo(None);
    let (st, _) = crate::plan::backup::status(&off, &o, &[]);
    let st = st.unwrap();
    assert_eq!(st.last_drill.unwrap().backup, "b2");
    assert_eq!(st.next_drill_time, None);
}

#[test]
fn each_drill_step_says_what_it_does() {
    let s = Step::Drill {
        part: DrillStep::Start {
            record: "b1".into(),
        },
    };
    assert!(s.to_string().contains("start a restore drill of backup b1"));
    assert_eq!(s.reason(), crate::api::Reason::BackingUp);
    let s = Step::Drill {
        part: DrillStep::Sweep {
            pods: vec!["b1-drill".into()],
            policies: vec!["b1-drill".into()],
            why: "the record b1 is gone".into(),
        },
    };
    assert_eq!(
        s.to_string(),
        "delete the leftover drill objects pod b1-drill, NetworkPolicy b1-drill: the record b1 is gone"
    );
}
