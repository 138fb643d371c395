//! The backup rules, one situation each: when a scheduled backup is due, what blocks it, what
//! retention prunes, which records are abandoned, and what status and `BackupHealthy` say.

use std::collections::BTreeSet;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;
use crate::archive::schedule;
use crate::archive::store::Location;
use crate::model::BackupPlan;

fn t(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn spec() -> BackupPlan {
    BackupPlan {
        to: crate::archive::Destination::at(Location::parse("s3://b/p").unwrap()),
        schedule: Some(schedule::parse("0 * * * *").unwrap()),
        suspend: false,
        run_on_create: false,
        retention: None,
        drill: None,
    }
}

#[test]
fn the_first_run_counts_from_creation_unless_run_on_create() {
    let sched = schedule::parse("0 * * * *").unwrap();
    let created = t("2026-12-01T10:20:00Z");
    assert_eq!(
        due(&spec(), &sched, None, created, t("2026-12-01T10:30:00Z")),
        Due::At(t("2026-12-01T11:00:00Z"))
    );
    let mut s = spec();
    s.run_on_create = true;
    let now = t("2026-12-01T10:30:00Z");
    assert_eq!(due(&s, &sched, None, created, now), Due::Now(now));
}

#[test]
fn a_scheduler_that_was_down_runs_once_for_the_slots_it_missed() {
    let sched = schedule::parse("0 * * * *").unwrap();
    let last = Some(t("2026-12-01T08:00:00Z"));
    assert_eq!(
        due(
            &spec(),
            &sched,
            last,
            t("2026-12-01T00:00:00Z"),
            t("2026-12-01T11:05:00Z")
        ),
        Due::Now(t("2026-12-01T11:00:00Z"))
    );
    // Once that slot is recorded, the next is an hour later.
    assert_eq!(
        due(
            &spec(),
            &sched,
            Some(t("2026-12-01T11:00:00Z")),
            t("2026-12-01T00:00:00Z"),
            t("2026-12-01T11:05:00Z")
        ),
        Due::At(t("2026-12-01T12:00:00Z"))
    );
}

#[test]
fn a_suspended_schedule_runs_nothing() {
    let sched = schedule::parse("* * * * *").unwrap();
    let mut s = spec();
    s.suspend = true;
    assert_eq!(
        due(
            &s,
            &sched,
            None,
            t("2026-12-01T00:00:00Z"),
            t("2026-12-02T00:00:00Z")
        ),
        Due::Off
    );
}

#[test]
fn backup_health_reads_failure_and_age() {
    let sched = schedule::parse("0 * * * *").unwrap();
    let now = t("2026-12-01T12:30:00Z");
    let mut st = BackupStatus {
        last_successful: Some("demo-1".into()),
        last_successful_time: Some(Time(t("2026-12-01T12:00:05Z"))),
        ..Default::default()
    };
    let c = health(&st, Some(&sched), 1, None, now);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", reason::BACKUP_SUCCEEDED)
    );
    st.last_failed = Some("demo-2".into());
    st.last_failed_time = Some(Time(t("2026-12-01T12:01:00Z")));
    let c = health(&st, Some(&sched), 1, Some(&c), now);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", reason::BACKUP_FAILED)
    );
    assert!(c.message.contains("demo-2"));
    st.last_failed = None;
    st.last_failed_time = None;
    let c = health(&st, Some(&sched), 1, None, t("2026-12-01T14:30:00Z"));
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", reason::BACKUP_OVERDUE)
    );
}

/// The names `expired` deletes for cluster ns/demo with destination s3://b/p.
fn names(
    records: &[EtcdBackup],
    policy: &Retention,
    now: Timestamp,
    who: &select::Identity,
    pinned: &BTreeSet<String>,
) -> Vec<String> {
    let dest = Location::parse("s3://b/p").unwrap();
    let owner = Owner {
        who,
        namespace: "ns",
        cluster: "demo",
        destination: &dest,
    };
    let e = expired(records, policy, now, owner, pinned);
    assert!(e.foreign.is_empty(), "{:?}", e.foreign);
    e.delete.into_iter().map(|(n, _)| n).collect()
}

fn record(name: &str, trigger: &str, phase: &str, start: &str) -> EtcdBackup {
    let mut b = EtcdBackup::new(
        name,
        crate::api::EtcdBackupSpec {
            cluster: "demo".into(),
            destination: "s3://b/p".into(),
            trigger: Some(trigger.into()),
            ..Default::default()
        },
    );
    b.status = Some(crate::api::EtcdBackupStatus {
        phase: Some(phase.into()),
        start_time: Some(Time(t(start))),
        ..Default::default()
    });
    if phase == "Succeeded" {
        let key = crate::archive::naming::object_key(
            "ns",
            "demo",
            t(start),
            7,
            crate::archive::codec::Compression::Zstd,
            false,
        );
        b.status.as_mut().unwrap().url = Some(format!("s3://b/p/{key}"));
        found_as_recorded(&mut b);
    }
    b
}

/// The engine read `b`'s object and found it as recorded (`status.storeCheck`).
fn found_as_recorded(b: &mut EtcdBackup) {
    let st = b.status.as_mut().unwrap();
    st.size.get_or_insert(1000);
    st.sha256.get_or_insert_with(|| "ab".repeat(32));
    st.store_check = Some(crate::api::StoreCheck {
        url: st.url.clone().unwrap(),
        size: st.size.unwrap(),
        sha256: st.sha256.clone().unwrap(),
        matched: true,
        message: None,
        time: Time(t("2026-12-01T00:00:00Z")),
    });
}

#[test]
fn retention_only_ever_deletes_scheduled_backups_and_keeps_the_newest_success() {
    let records = vec![
        record("s1", "schedule", "Succeeded", "2026-12-01T10:00:00Z"),
        record("s2", "schedule", "Succeeded", "2026-12-01T11:00:00Z"),
        record("cli", "cli", "Succeeded", "2026-12-01T09:00:00Z"),
        record("s3", "schedule", "Failed", "2026-12-01T12:00:00Z"),
        record("s4", "schedule", "Running", "2026-12-01T12:01:00Z"),
    ];
    let policy = Retention {
        keep_last: Some(1),
        ..Default::default()
    };
    let gone = names(
        &records,
        &policy,
        t("2026-12-01T12:02:00Z"),
        &select::Identity::default(),
        &BTreeSet::new(),
    );
    assert!(gone.contains(&"s1".to_string()), "{gone:?}");
    assert!(
        !gone.contains(&"s2".to_string()),
        "the newest success stays: {gone:?}"
    );
    assert!(!gone.contains(&"cli".to_string()) && !gone.contains(&"s4".to_string()));
}

/// A scheduled, successful backup of cluster uid `uid` taken at `start`, with quorum.
fn of(uid: &str, name: &str, start: &str) -> EtcdBackup {
    let mut b = record(name, "schedule", "Succeeded", start);
    b.spec.cluster_uid = Some(uid.into());
    b.status.as_mut().unwrap().quorum = Some(true);
    b
}

const OLD: select::Identity = select::Identity {
    uid: Some("old"),
    cluster_id: None,
};
const NEW: select::Identity = select::Identity {
    uid: Some("new"),
    cluster_id: None,
};

fn keep_last(n: u32) -> Retention {
    Retention {
        keep_last: Some(n),
        ..Default::default()
    }
}

#[test]
fn a_cluster_re_created_empty_under_the_same_name_never_pushes_out_the_old_backups() {
    let records = vec![
        of("old", "old-1", "2026-12-01T08:00:00Z"),
        of("old", "old-2", "2026-12-01T09:00:00Z"),
        of("new", "new-1", "2026-12-01T10:00:00Z"),
        of("new", "new-2", "2026-12-01T11:00:00Z"),
    ];
    let now = t("2026-12-01T12:00:00Z");
    let gone = names(&records, &keep_last(1), now, &NEW, &BTreeSet::new());
    assert_eq!(gone, vec!["new-1"]);
    // The old cluster (were it back) counts only its own.
    let gone = names(&records, &keep_last(1), now, &OLD, &BTreeSet::new());
    assert_eq!(gone, vec!["old-1"]);
}

#[test]
fn records_without_a_uid_are_matched_by_cluster_id_else_by_name() {
    let mut legacy_other = record(
        "legacy-other",
        "schedule",
        "Succeeded",
        "2026-12-01T07:00:00Z",
    );
    legacy_other.status.as_mut().unwrap().cluster_id = Some("00000000000000aa".into());
    let mut legacy_mine = record(
        "legacy-mine",
        "schedule",
        "Succeeded",
        "2026-12-01T08:00:00Z",
    );
    legacy_mine.status.as_mut().unwrap().cluster_id = Some("00000000000000bb".into());
    let legacy_unknown = record(
        "legacy-unknown",
        "schedule",
        "Failed",
        "2026-12-01T06:00:00Z",
    );
    let records = vec![
        legacy_other,
        legacy_mine,
        legacy_unknown,
        of("new", "new-1", "2026-12-01T10:00:00Z"),
    ];
    let who = select::Identity {
        uid: Some("new"),
        cluster_id: Some("00000000000000bb"),
    };
    let gone = names(
        &records,
        &keep_last(1),
        t("2026-12-01T12:00:00Z"),
        &who,
        &BTreeSet::new(),
    );
    assert_eq!(gone, vec!["legacy-unknown", "legacy-mine"]);
}

#[test]
fn backups_without_quorum_never_push_a_good_backup_out() {
    let mut records = vec![of("u", "good", "2026-12-01T08:00:00Z")];
    for h in 9..12 {
        let mut b = of(
            "u",
            &format!("lagging-{h}"),
            &format!("2026-12-01T{h:02}:00:00Z"),
        );
        b.status.as_mut().unwrap().quorum = Some(false);
        records.push(b);
    }
    let who = select::Identity {
        uid: Some("u"),
        cluster_id: None,
    };
    let gone = names(
        &records,
        &keep_last(1),
        t("2026-12-01T12:00:00Z"),
        &who,
        &BTreeSet::new(),
    );
    assert!(!gone.contains(&"good".to_string()), "{gone:?}");
}

#[test]
fn a_backup_an_etcd_cluster_restores_from_is_never_pruned() {
    let records = vec![
        of("u", "read-by-restore", "2026-12-01T08:00:00Z"),
        of("u", "b", "2026-12-01T09:00:00Z"),
        of("u", "c", "2026-12-01T10:00:00Z"),
    ];
    let who = select::Identity {
        uid: Some("u"),
        cluster_id: None,
    };
    let pinned = BTreeSet::from(["read-by-restore".to_string()]);
    let gone = names(
        &records,
        &keep_last(1),
        t("2026-12-01T12:00:00Z"),
        &who,
        &pinned,
    );
    assert_eq!(gone, vec!["b"]);
}

/// A successful scheduled backup of uid `u` whose object is `url`.
fn stored(name: &str, start: &str, url: &str) -> EtcdBackup {
    let mut b = of("u", name, start);
    b.status.as_mut().unwrap().url = Some(url.into());
    found_as_recorded(&mut b);
    b
}

/// `expired` with keepLast 1 for ns/demo (uid u) backed up to `dest`, at 12:00.
fn keep_last_one_of_u(records: &[EtcdBackup], dest: &Location) -> Expiry {
    let who = select::Identity {
        uid: Some("u"),
        cluster_id: None,
    };
    let owner = Owner {
        who: &who,
        namespace: "ns",
        cluster: "demo",
        destination: dest,
    };
    let now = t("2026-12-01T12:00:00Z");
    expired(records, &keep_last(1), now, owner, &BTreeSet::new())
}

#[test]
fn retention_deletes_only_this_clusters_objects_in_its_destination_and_reports_the_rest() {
    let dest = Location::parse("s3://b/p?endpoint=http://10.0.0.5:9000").unwrap();
    let at = |h: u32| format!("2026-12-01T{h:02}:00:00Z");
    let obj = |h: u32| format!("ns-demo-20261201T{h:02}0000.000Z-r7.db.zst");
    let mine = |h: u32| format!("s3://b/p/{}?endpoint=http://10.0.0.5:9000", obj(h));
    let records = vec![
        stored("old", &at(1), &mine(1)),
        // Forged: elsewhere on the server, or in the destination under a name not ours.
        stored(
            "other-bucket",
            &at(2),
            &format!("s3://precious/{}?endpoint=http://10.0.0.5:9000", obj(2)),
        ),
        stored("aws", &at(3), &format!("s3://b/p/{}", obj(3))),
        stored(
            "other-host",
            &at(4),
            &format!("s3://b/p/{}?endpoint=http://evil:9000", obj(4)),
        ),
        stored(
            "prefix-games",
            &at(5),
            &format!("s3://b/p2/{}?endpoint=http://10.0.0.5:9000", obj(5)),
        ),
        stored(
            "not-our-name",
            &at(6),
            "s3://b/p/ns-other-20261201T060000.000Z-r7.db?endpoint=http://10.0.0.5:9000",
        ),
        stored("mid", &at(7), &mine(7)),
        stored("new", &at(8), &mine(8)),
    ];
    let e = keep_last_one_of_u(&records, &dest);
    assert_eq!(
        e.delete,
        vec![
            ("old".to_string(), Some(obj(1))),
            ("mid".to_string(), Some(obj(7)))
        ]
    );
    assert_eq!(e.foreign.len(), 5, "{:#?}", e.foreign);
    for (f, name) in e.foreign.iter().zip([
        "other-bucket",
        "aws",
        "other-host",
        "prefix-games",
        "not-our-name",
    ]) {
        assert!(
            f.contains(&format!("EtcdBackup ns/{name} names"))
                && f.contains("leaves it and its record alone"),
            "{f}"
        );
    }
}

#[test]
fn a_forged_record_cannot_pass_for_the_newest_backup_by_its_start_time() {
    let dest = Location::parse("s3://b/p").unwrap();
    // The record claims to be the newest; its object's name says it is the oldest.
    let records = vec![
        stored(
            "forged-time",
            "2026-12-01T11:00:00Z",
            "s3://b/p/ns-demo-20261201T010000.000Z-r1.db",
        ),
        stored(
            "real",
            "2026-12-01T05:00:00Z",
            "s3://b/p/ns-demo-20261201T050000.000Z-r5.db",
        ),
    ];
    let e = keep_last_one_of_u(&records, &dest);
    let names: Vec<&str> = e.delete.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["forged-time"]);
}

#[test]
fn a_record_dated_in_the_future_is_neither_counted_nor_deleted() {
    let dest = Location::parse("s3://b/p").unwrap();
    // now is 12:00: a name dated 23:00 would be the newest and push "real" out.
    let records = vec![
        stored(
            "future",
            "2026-12-01T11:00:00Z",
            "s3://b/p/ns-demo-20261201T230000.000Z-r9.db",
        ),
        stored(
            "real",
            "2026-12-01T05:00:00Z",
            "s3://b/p/ns-demo-20261201T050000.000Z-r5.db",
        ),
        stored(
            "skewed",
            "2026-12-01T04:00:00Z",
            "s3://b/p/ns-demo-20261201T120500.000Z-r6.db",
        ),
    ];
    let e = keep_last_one_of_u(&records, &dest);
    let names: Vec<&str> = e.delete.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["real"], "a clock 5 minutes ahead still counts");
    assert_eq!(e.foreign.len(), 1, "{:#?}", e.foreign);
    assert!(e.foreign[0].contains("EtcdBackup ns/future") && e.foreign[0].contains("after now"));
}

// The rules as the planner runs them: `demo` (uid 1234abcd-ef) backed up to s3://b/p every hour,
// keeping the newest one, observed by an operator (`me`) at `now`.

const ME: &str = "operator/op-0";

fn scheduled_demo(retention: Option<u32>) -> Desired {
    crate::fixtures::cluster("demo")
        .spec(|s| {
            s.backup = Some(crate::api::BackupSpec {
                destination: "s3://b/p".into(),
                schedule: Some("0 * * * *".into()),
                retention: retention.map(|n| Retention {
                    keep_last: Some(n),
                    ..Default::default()
                }),
                ..Default::default()
            })
        })
        .desired()
}

/// A converged cluster seen by the operator at `now`, created at midnight, with `records`.
pub(crate) fn seen(d: &Desired, now: &str, records: Vec<EtcdBackup>) -> Observed {
    let mut o = crate::plan::tests::healthy(d, 3);
    o.now = t(now);
    o.backups = crate::model::BackupsView {
        records,
        me: ME.into(),
        schedules: true,
        created: Some(t("2026-12-01T00:00:00Z")),
        ..Default::default()
    };
    o
}

/// A record of demo's (its uid), `trigger` "schedule" or "cli", started at `start` by `by`, its
/// object in the destination when it succeeded.
fn demo_record(name: &str, trigger: &str, phase: &str, start: &str, by: &str) -> EtcdBackup {
    let mut b = record(name, trigger, phase, start);
    b.spec.cluster_uid = Some("1234abcd-ef".into());
    let st = b.status.as_mut().unwrap();
    st.taken_by = Some(by.into());
    st.quorum = Some(true);
    if phase == "Succeeded" {
        let at = t(start);
        st.completion_time = Some(Time(at + jiff::SignedDuration::from_secs(5)));
        st.url = Some(format!(
            "s3://b/p/{}",
            crate::archive::naming::object_key(
                "ns",
                "demo",
                at,
                7,
                crate::archive::codec::Compression::Zstd,
                false,
            )
        ));
        found_as_recorded(&mut b);
    }
    b
}

#[test]
fn a_due_backup_is_started_when_the_cluster_needs_nothing_else() {
    let d = scheduled_demo(None);
    let done = demo_record("s1", "schedule", "Succeeded", "2026-12-01T10:00:00Z", ME);
    let o = seen(&d, "2026-12-01T11:00:30Z", vec![done.clone()]);
    assert_eq!(
        crate::plan::plan(&d, &o),
        Step::TakeScheduledBackup {
            slot: t("2026-12-01T11:00:00Z")
        }
    );
    // Not yet: the next slot is at 11:00.
    let o = seen(&d, "2026-12-01T10:30:00Z", vec![done]);
    assert_eq!(crate::plan::plan(&d, &o), Step::Idle);
}

/// Issue 42 item 5: one tenant's many schedules neither starve the others nor exhaust the
/// operator. A due backup is planned whatever the operator runs (the slots are `model::fair`'s,
/// asked when it starts); the wait it gets then names the bound and its flag, or its turn.
#[test]
fn a_due_backup_held_back_by_the_slots_waits_naming_the_bound_and_its_flag() {
    use crate::model::fair::{Full, Turn};
    let d = scheduled_demo(None);
    let done = demo_record("s1", "schedule", "Succeeded", "2026-12-01T10:00:00Z", ME);
    let o = seen(&d, "2026-12-01T11:00:30Z", vec![done]);
    assert_eq!(
        crate::plan::plan(&d, &o),
        Step::TakeScheduledBackup {
            slot: t("2026-12-01T11:00:00Z")
        }
    );
    let wait = |full, running, bound, ahead| {
        let turn = Turn::Wait {
            full,
            running,
            bound,
            ahead,
        };
        match crate::plan::backup::queued(&d, &turn) {
            Some(Step::Wait {
                reason: crate::api::Reason::BackupQueued,
                message,
            }) => message,
            other => panic!("{other:?}"),
        }
    };
    let here = wait(Some(Full::Namespace), 2, 2, 3);
    assert!(
        here.contains("2 backups in namespace ns")
            && here.contains("--max-backups-per-namespace")
            && here.contains("3 ahead"),
        "{here}"
    );
    let all = wait(Some(Full::Total), 8, 8, 0);
    assert!(
        all.contains("in all namespaces") && all.contains("operate --max-backups)"),
        "{all}"
    );
    let turn = wait(None, 5, 8, 2);
    assert!(
        turn.contains("other namespaces take the free slots first"),
        "{turn}"
    );
    assert_eq!(crate::plan::backup::queued(&d, &Turn::Go), None);
}

#[test]
fn a_due_backup_never_pre_empts_a_repair() {
    let d = scheduled_demo(None);
    let mut o = seen(&d, "2026-12-01T11:00:30Z", vec![]);
    o.supporting_objects = false;
    assert_eq!(crate::plan::plan(&d, &o), Step::ApplySupportingObjects);
}

#[test]
fn the_cli_never_starts_a_scheduled_backup() {
    let d = scheduled_demo(None);
    let mut o = seen(&d, "2026-12-01T11:00:30Z", vec![]);
    o.backups.schedules = false;
    assert_eq!(crate::plan::plan(&d, &o), Step::Idle);
}

#[test]
fn a_backup_in_progress_blocks_the_next_slot_but_nothing_else() {
    let d = scheduled_demo(Some(1));
    let running = demo_record("s2", "schedule", "Running", "2026-12-01T10:00:00Z", ME);
    let mut o = seen(&d, "2026-12-01T11:00:30Z", vec![running]);
    o.backups.taking = BTreeSet::from(["s2".to_string()]);
    assert_eq!(crate::plan::plan(&d, &o), Step::Idle, "the next slot waits");
    // The passes go on with the cluster meanwhile.
    o.supporting_objects = false;
    assert_eq!(crate::plan::plan(&d, &o), Step::ApplySupportingObjects);
    // Another operator's backup in progress (its taker alive as far as anyone knows) too.
    let mut theirs = demo_record(
        "s3",
        "schedule",
        "Running",
        "2026-12-01T10:00:00Z",
        "operator/op-1",
    );
    theirs.spec.trigger = Some("schedule".into());
    let o = seen(&d, "2026-12-01T11:00:30Z", vec![theirs]);
    assert_eq!(crate::plan::plan(&d, &o), Step::Idle);
}

#[test]
fn a_running_record_of_mine_that_i_am_not_taking_was_abandoned() {
    let d = scheduled_demo(None);
    let running = demo_record("s2", "schedule", "Running", "2026-12-01T10:00:00Z", ME);
    let o = seen(&d, "2026-12-01T10:20:00Z", vec![running.clone()]);
    assert_eq!(
        crate::plan::plan(&d, &o),
        Step::AbandonBackup {
            record: "s2".into(),
            taken_by: ME.into()
        }
    );
    // Another taker's is abandoned only once older than any backup takes.
    let mut theirs = running;
    theirs.status.as_mut().unwrap().taken_by = Some("operator/op-1".into());
    let o = seen(&d, "2026-12-01T10:20:00Z", vec![theirs.clone()]);
    assert_eq!(crate::plan::plan(&d, &o), Step::Idle);
    let o = seen(&d, "2026-12-01T16:30:00Z", vec![theirs]);
    assert!(matches!(
        crate::plan::plan(&d, &o),
        Step::AbandonBackup { .. }
    ));
}

#[test]
fn retention_prunes_after_a_success_and_only_old_failures_after_a_failure() {
    let d = scheduled_demo(Some(1));
    let old = demo_record("s1", "schedule", "Succeeded", "2026-12-01T09:00:00Z", ME);
    let new = demo_record("s2", "schedule", "Succeeded", "2026-12-01T10:00:00Z", ME);
    let o = seen(&d, "2026-12-01T10:10:00Z", vec![new.clone(), old.clone()]);
    let Step::PruneBackups { delete, foreign } = crate::plan::plan(&d, &o) else {
        panic!("{:?}", crate::plan::plan(&d, &o));
    };
    assert_eq!(
        delete,
        vec![(
            "s1".to_string(),
            Some("ns-demo-20261201T090000.000Z-r7.db.zst".to_string())
        )]
    );
    assert!(foreign.is_empty());
    // The newest scheduled run failed: no good backup is pruned.
    let failed = demo_record("s3", "schedule", "Failed", "2026-12-01T10:05:00Z", ME);
    let o = seen(
        &d,
        "2026-12-01T10:10:00Z",
        vec![failed, new.clone(), old.clone()],
    );
    assert_eq!(crate::plan::plan(&d, &o), Step::Idle);
    // A schedule failing run after run: the newest few failures stay (they say why), the older
    // ones go, and still no good backup.
    let mut records: Vec<EtcdBackup> = (0..5)
        .rev()
        .map(|k| {
            demo_record(
                &format!("f{k}"),
                "schedule",
                "Failed",
                &format!("2026-12-01T1{}:00:00Z", k + 1),
                ME,
            )
        })
        .collect();
    records.extend([new, old]);
    let o = seen(&d, "2026-12-01T15:10:00Z", records);
    let Step::PruneBackups { delete, .. } = crate::plan::plan(&d, &o) else {
        panic!("{:?}", crate::plan::plan(&d, &o));
    };
    assert_eq!(
        delete,
        vec![("f0".to_string(), None), ("f1".to_string(), None)],
        "{} failures kept",
        crate::archive::retention::FAILURES_KEPT
    );
}

#[test]
fn status_backup_and_backup_healthy_come_from_the_records() {
    let d = scheduled_demo(None);
    let ok = demo_record("s1", "schedule", "Succeeded", "2026-12-01T10:00:00Z", ME);
    let cli = demo_record(
        "c1",
        "cli",
        "Succeeded",
        "2026-12-01T10:30:00Z",
        "cli/laptop/1",
    );
    let o = seen(&d, "2026-12-01T10:40:00Z", vec![cli.clone(), ok.clone()]);
    let (st, cond) = status(&d, &o, &[]);
    let st = st.unwrap();
    assert_eq!(
        st.last_successful.as_deref(),
        Some("c1"),
        "a CLI backup counts too"
    );
    assert_eq!(
        st.last_scheduled_time,
        Some(Time(t("2026-12-01T10:00:00Z")))
    );
    assert_eq!(
        st.next_scheduled_time,
        Some(Time(t("2026-12-01T11:00:00Z")))
    );
    let cond = cond.unwrap();
    assert_eq!(
        (cond.status.as_str(), cond.reason.as_str()),
        ("True", reason::BACKUP_SUCCEEDED)
    );
    // A later scheduled failure turns it False, and it says which.
    let failed = demo_record("s2", "schedule", "Failed", "2026-12-01T11:00:00Z", ME);
    let mut failed = failed;
    failed.status.as_mut().unwrap().completion_time = Some(Time(t("2026-12-01T11:00:09Z")));
    let o = seen(
        &d,
        "2026-12-01T11:01:00Z",
        vec![failed, cli.clone(), ok.clone()],
    );
    let (st, cond) = status(&d, &o, std::slice::from_ref(&cond));
    assert_eq!(st.unwrap().last_failed.as_deref(), Some("s2"));
    let cond = cond.unwrap();
    assert_eq!(
        (cond.status.as_str(), cond.reason.as_str()),
        ("False", reason::BACKUP_FAILED)
    );
    assert_eq!(cond.last_transition_time, Time(t("2026-12-01T11:01:00Z")));
    // Nothing for hours: overdue.
    let o = seen(&d, "2026-12-01T14:00:00Z", vec![cli, ok]);
    let (_, cond) = status(&d, &o, &[]);
    assert_eq!(cond.unwrap().reason, reason::BACKUP_OVERDUE);
}

#[test]
fn without_a_schedule_there_is_no_condition_and_without_records_no_status() {
    let d = crate::fixtures::cluster("demo").desired();
    let o = seen(&d, "2026-12-01T10:40:00Z", vec![]);
    assert_eq!(status(&d, &o, &[]), (None, None));
    let cli = demo_record(
        "c1",
        "cli",
        "Succeeded",
        "2026-12-01T10:30:00Z",
        "cli/laptop/1",
    );
    let o = seen(&d, "2026-12-01T10:40:00Z", vec![cli]);
    let (st, cond) = status(&d, &o, &[]);
    assert_eq!(st.unwrap().last_successful.as_deref(), Some("c1"));
    assert_eq!(cond, None);
    assert_eq!(crate::plan::plan(&d, &o), Step::Idle);
}

#[test]
fn an_earlier_cluster_of_the_same_name_neither_counts_nor_is_pruned() {
    let d = scheduled_demo(Some(1));
    let mut earlier = demo_record("old", "schedule", "Succeeded", "2026-12-01T10:50:00Z", ME);
    earlier.spec.cluster_uid = Some("another-uid".into());
    let o = seen(&d, "2026-12-01T11:00:30Z", vec![earlier]);
    // Its run at 10:50 is not ours: ours is due.
    assert!(matches!(
        crate::plan::plan(&d, &o),
        Step::TakeScheduledBackup { .. }
    ));
    assert_eq!(status(&d, &o, &[]).0.unwrap().last_successful, None);
}

/// Issue 42 item 6: a record alone proves nothing. Anyone who may take a backup writes
/// EtcdBackup records; a forged "newest" one — its object missing, or other bytes than it
/// claims, or a copy of a real record's claim — never pushes a verified backup out, and is itself
/// neither counted nor deleted (deleting it would delete the object it names).
#[test]
fn a_forged_newest_record_never_deletes_a_verified_backup() {
    let dest = Location::parse("s3://b/p").unwrap();
    let obj = |h: u32| format!("ns-demo-20261201T{h:02}0000.000Z-r7.db.zst");
    let url = |h: u32| format!("s3://b/p/{}", obj(h));
    let real = stored("real", "2026-12-01T05:00:00Z", &url(5));
    // Newer, never read by the engine.
    let mut unchecked = stored("unchecked", "2026-12-01T11:00:00Z", &url(11));
    unchecked.status.as_mut().unwrap().store_check = None;
    // Newer, read: the object is not there.
    let mut missing = stored("missing", "2026-12-01T10:00:00Z", &url(10));
    let check = missing
        .status
        .as_mut()
        .unwrap()
        .store_check
        .as_mut()
        .unwrap();
    check.matched = false;
    check.message = Some(format!("{} is not in the store", obj(10)));
    // Verified once, then its claim was rewritten (a larger object, another sha256).
    let mut rewritten = stored("rewritten", "2026-12-01T09:00:00Z", &url(9));
    rewritten.status.as_mut().unwrap().sha256 = Some("cd".repeat(32));
    // A copy of the real record's claim, written after it.
    let mut copy = stored("copy", "2026-12-01T11:30:00Z", &url(5));
    copy.metadata.creation_timestamp = Some(Time(t("2026-12-01T11:30:00Z")));
    let mut real = real;
    real.metadata.creation_timestamp = Some(Time(t("2026-12-01T05:00:00Z")));
    let records = vec![unchecked, missing, rewritten, copy, real.clone()];
    let e = keep_last_one_of_u(&records, &dest);
    assert!(e.delete.is_empty(), "{:?}", e.delete);
    assert_eq!(e.foreign.len(), 4, "{:#?}", e.foreign);
    for (f, name, why) in [
        (&e.foreign[0], "unchecked", "not checked yet"),
        (&e.foreign[1], "missing", "is not in the store"),
        (&e.foreign[2], "rewritten", "not checked yet"),
        (&e.foreign[3], "copy", "the object of EtcdBackup real"),
    ] {
        assert!(
            f.contains(&format!("EtcdBackup ns/{name} names")) && f.contains(why),
            "{f}"
        );
    }
    // A second verified backup, newer: now the real one goes (keepLast 1), with its object;
    // the forged ones still stay out of the count.
    let mut records = records;
    records.push(stored("newer", "2026-12-01T08:00:00Z", &url(8)));
    let e = keep_last_one_of_u(&records, &dest);
    assert_eq!(e.delete, vec![("real".to_string(), Some(obj(5)))]);
}

/// The planner reads a succeeded backup's object before retention counts it: newest first,
/// one per pass; a record not found as recorded never leads to a deletion.
#[test]
fn retention_waits_for_the_engine_to_find_each_backup_as_recorded() {
    let d = scheduled_demo(Some(1));
    let old = demo_record("s1", "schedule", "Succeeded", "2026-12-01T09:00:00Z", ME);
    let mut new = demo_record("s2", "schedule", "Succeeded", "2026-12-01T10:00:00Z", ME);
    new.status.as_mut().unwrap().store_check = None;
    let o = seen(&d, "2026-12-01T10:10:00Z", vec![new.clone(), old.clone()]);
    assert_eq!(
        crate::plan::plan(&d, &o),
        Step::CheckBackup {
            record: "s2".into(),
            key: "ns-demo-20261201T100000.000Z-r7.db.zst".into(),
            size: 1000,
            sha256: "ab".repeat(32),
        }
    );
    // Found with other bytes: nothing is deleted, and it is not read again.
    let mut bad = new.clone();
    found_as_recorded(&mut bad);
    bad.status
        .as_mut()
        .unwrap()
        .store_check
        .as_mut()
        .unwrap()
        .matched = false;
    let o = seen(&d, "2026-12-01T10:10:00Z", vec![bad, old.clone()]);
    assert_eq!(crate::plan::plan(&d, &o), Step::Idle);
    // Found as recorded: the older one goes.
    found_as_recorded(&mut new);
    let o = seen(&d, "2026-12-01T10:10:00Z", vec![new, old]);
    assert!(
        matches!(crate::plan::plan(&d, &o), Step::PruneBackups { ref delete, .. } if delete == &vec![(
            "s1".to_string(),
            Some("ns-demo-20261201T090000.000Z-r7.db.zst".to_string())
        )]),
        "{:?}",
        crate::plan::plan(&d, &o)
    );
    // Without a retention policy nothing is read.
    let d = scheduled_demo(None);
    let mut unread = demo_record("s3", "schedule", "Succeeded", "2026-12-01T10:00:00Z", ME);
    unread.status.as_mut().unwrap().store_check = None;
    let o = seen(&d, "2026-12-01T10:10:00Z", vec![unread]);
    assert_eq!(crate::plan::plan(&d, &o), Step::Idle);
}
