//! Path rules, member order, gates and rollback decisions, one situation each.

use super::*;
use crate::api::{Reason, UpgradeStatus, upgrade_state};
use crate::model::Observed;
use crate::objects;
use crate::plan::tests::{cluster, healthy};
use crate::plan::{Restart, Step, plan};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

/// `spec.version` = `version`, as `kubectl etcd upgrade` writes it (with its pre-upgrade snapshot).
fn want(version: &str) -> Desired {
    let mut d = crate::fixtures::cluster("demo")
        .replicas(3)
        .version(version)
        .desired();
    d.pre_upgrade_backup = Some("s3://b/demo-pre.db".into());
    d
}

/// A healthy 3-member cluster whose members all run `running` under its own template.
fn running_on(running: &str) -> Observed {
    let mut o = healthy(&want(running), 3);
    for m in &mut cluster(&mut o).members {
        m.status.as_mut().unwrap().version = Some(v(running));
    }
    o.last_version = Some(v(running));
    o
}

/// Every member reports cluster version `cv` and storage version `storage` ("" before 3.6).
fn speaks(o: &mut Observed, cv: &str, storage: &str) {
    for m in &mut cluster(o).members {
        let s = m.status.as_mut().unwrap();
        s.cluster_version = Version::parse(cv);
        s.storage_version = Version::parse(storage);
    }
}

/// Every member says etcd's downgrade to `target` is enabled.
fn downgrade_enabled(o: &mut Observed, target: &str) {
    for m in &mut cluster(o).members {
        m.status.as_mut().unwrap().downgrading_to = Version::parse(target);
    }
}

/// `o` after the template of `d` was applied: every pod still runs the old revision.
fn template_applied(o: &mut Observed, d: &Desired) {
    let sts = o.statefulset.as_mut().unwrap();
    sts.template_hash = Some(objects::template_hash(d));
    sts.update_revision = Some("rev2".into());
}

/// Member `ordinal` restarted on `version` by the change under way (its pod on the new
/// revision, `age` seconds old, recorded as restarted `age` seconds ago in `status.upgrade`).
fn restarted(o: &mut Observed, ordinal: u32, version: &str, age: u64) {
    let at = Time(o.now - jiff::SignedDuration::from_secs(age as i64));
    let from = o.last_version.unwrap();
    let rec = o.upgrade.get_or_insert_with(|| UpgradeRecord {
        from,
        to: v(version),
        rolled_back: false,
        status: UpgradeStatus {
            from_version: from.to_string(),
            to_version: version.into(),
            state: upgrade_state::UPGRADING.into(),
            ..Default::default()
        },
    });
    rec.status
        .restarted_at
        .insert(objects::pod_name("demo", ordinal), at);
    let p = o.pods.get_mut(&ordinal).unwrap();
    p.revision = Some("rev2".into());
    p.age_seconds = age;
    let m = cluster(o)
        .members
        .iter_mut()
        .find(|m| m.ordinal == Some(ordinal))
        .unwrap();
    m.status.as_mut().unwrap().version = Some(v(version));
}

/// Member `ordinal` was restarted by the change under way `secs` seconds ago (status.upgrade).
fn restarted_ago(o: &mut Observed, ordinal: u32, secs: u64) {
    let at = Time(o.now - jiff::SignedDuration::from_secs(secs as i64));
    o.upgrade
        .as_mut()
        .unwrap()
        .status
        .restarted_at
        .insert(objects::pod_name("demo", ordinal), at);
}

/// Member `ordinal`'s pod crash-loops: not ready, the member does not answer.
fn crashing(o: &mut Observed, ordinal: u32) {
    let p = o.pods.get_mut(&ordinal).unwrap();
    p.ready = false;
    p.waiting_reason = Some("CrashLoopBackOff".into());
    let m = cluster(o)
        .members
        .iter_mut()
        .find(|m| m.ordinal == Some(ordinal))
        .unwrap();
    m.status = None;
    m.healthy = false;
}

#[test]
fn path_rules() {
    let ok = [
        ("3.4.23", "3.5.16", PathKind::Minor),
        ("3.5.26", "3.6.15", PathKind::Minor),
        ("3.5.34", "3.6.0", PathKind::Minor),
        ("3.5.16", "3.5.30", PathKind::Patch),
        ("3.5.30", "3.5.16", PathKind::Patch),
        ("3.5.16", "3.5.16", PathKind::Same),
        ("3.6.15", "3.5.30", PathKind::Downgrade),
        ("3.7.2", "3.6.15", PathKind::Downgrade),
        ("3.6.11", "3.7.3", PathKind::Minor),
        ("3.6.16", "3.7.0", PathKind::Minor),
        ("3.7.0", "3.7.3", PathKind::Patch),
        ("3.7.3", "3.6.16", PathKind::Downgrade),
        ("3.7.3", "3.6.11", PathKind::Downgrade),
    ];
    for (from, to, kind) in ok {
        assert_eq!(check_step(v(from), v(to)), Ok(kind), "{from} → {to}");
    }
    let refused = [
        (
            "3.4.23",
            "3.6.15",
            "one minor at a time",
            "upgrade to the newest 3.5 patch first",
        ),
        (
            "3.5.16",
            "3.6.15",
            "3.5.26",
            "upgrade to 3.5.26 first, then to 3.6.15",
        ),
        ("3.5.25", "3.6.0", "3.5.26", "upgrade to 3.5.26 first"),
        ("3.6.15", "3.5.16", "3.5.26 or later", "downgrade to 3.5.26"),
        (
            "3.5.16",
            "3.4.23",
            "no downgrade from 3.5 to 3.4",
            "3.4.23 does not: restore the pre-upgrade snapshot",
        ),
        (
            "3.6.15",
            "3.4.23",
            "one minor at a time",
            "one minor at a time",
        ),
        // etcd's 3.7 upgrade guide: every 3.6 member on 3.6.11 or later first.
        (
            "3.6.10",
            "3.7.3",
            "3.6 → 3.7 needs 3.6.11 or later",
            "upgrade to 3.6.11 first, then to 3.7.3",
        ),
        ("3.6.0", "3.7.0", "3.6.11", "may not be compatible"),
        (
            "3.7.3",
            "3.6.10",
            "a downgrade to 3.6 goes to 3.6.11 or later",
            "downgrade to 3.6.11 or later",
        ),
        (
            "3.5.35",
            "3.7.3",
            "one minor at a time",
            "upgrade to the newest 3.6 patch first",
        ),
        (
            "3.7.3",
            "3.5.35",
            "one minor at a time",
            "go down one minor at a time",
        ),
    ];
    for (from, to, rule, way) in refused {
        let r = check_step(v(from), v(to)).unwrap_err();
        assert!(r.rule.contains(rule), "{from} → {to}: {r:?}");
        assert!(r.to_string().contains(way), "{from} → {to}: {r}");
    }
}

#[test]
fn a_mixed_cluster_may_go_back_to_the_minor_some_members_still_run() {
    assert_eq!(
        check_path(v("3.4.23"), v("3.5.16"), v("3.4.23")),
        Ok(PathKind::Rollback)
    );
    assert_eq!(
        check_path(v("3.4.23"), v("3.5.16"), v("3.5.16")),
        Ok(PathKind::Minor)
    );
    // Once every member runs 3.5 (the cluster version moved), going back is refused.
    assert!(check_path(v("3.5.16"), v("3.5.16"), v("3.4.23")).is_err());
}

#[test]
fn a_refused_version_touches_no_member_and_says_how() {
    let o = running_on("3.5.16");
    for (to, rule) in [("3.6.15", "3.5.26"), ("3.4.23", "downgrade")] {
        let d = settle(want(to), &o);
        assert_eq!(d.version, v("3.5.16"), "{to}: the template keeps what runs");
        assert_eq!(plan(&d, &o), Step::Idle, "{to}: nothing changes");
        let VersionChange::Blocked { why, .. } = &d.upgrade else {
            panic!("{to}: {:?}", d.upgrade);
        };
        assert!(why.contains(rule), "{why}");
        assert_eq!(d.refused[0].field, "spec.version");
        let (on, reason, _) = condition(&d, &o, &Step::Idle).unwrap();
        assert!(!on);
        assert_eq!(reason, Reason::UpgradeBlocked);
    }
}

#[test]
fn a_new_cluster_takes_its_version_as_it_is() {
    let d = settle(want("3.6.15"), &Observed::default());
    assert_eq!(d.version, v("3.6.15"));
    assert_eq!(d.upgrade, VersionChange::Steady);
}

#[test]
fn an_allowed_upgrade_applies_the_template_then_restarts_followers_then_the_leader() {
    let mut o = running_on("3.4.23");
    let d = settle(want("3.5.16"), &o);
    assert_eq!(
        d.upgrade,
        VersionChange::Moving {
            from: v("3.4.23"),
            to: v("3.5.16")
        }
    );
    assert!(matches!(plan(&d, &o), Step::UpdateTemplate { .. }));

    template_applied(&mut o, &d);
    let step = plan(&d, &o);
    assert!(
        matches!(
            &step,
            Step::RestartMember {
                ordinal: 2,
                why: Restart::NewTemplate,
                ..
            }
        ),
        "{step:?}"
    );
    let (on, reason, msg) = condition(&d, &o, &step).unwrap();
    assert!(on);
    assert_eq!(reason, Reason::UpgradingMember);
    assert_eq!(msg, "upgrading demo-2 from 3.4.23 to 3.5.16");

    restarted(&mut o, 2, "3.5.16", 20);
    let d = settle(want("3.5.16"), &o);
    assert!(matches!(
        plan(&d, &o),
        Step::RestartMember { ordinal: 1, .. }
    ));

    restarted(&mut o, 1, "3.5.16", 10);
    let d = settle(want("3.5.16"), &o);
    assert!(
        matches!(&plan(&d, &o), Step::MoveLeader { from, .. } if from == "demo-0"),
        "the leader moves its leadership off before its upgrade"
    );
    cluster(&mut o).leader = Some(101);
    assert!(matches!(
        plan(&d, &o),
        Step::RestartMember { ordinal: 0, .. }
    ));

    restarted(&mut o, 0, "3.5.16", 5);
    speaks(&mut o, "3.5.0", "");
    let d = settle(want("3.5.16"), &o);
    assert_eq!(d.upgrade, VersionChange::Steady);
    assert_eq!(plan(&d, &o), Step::Idle);
}

#[test]
fn a_member_already_unhealthy_is_upgraded_first() {
    let mut o = running_on("3.4.23");
    crashing(&mut o, 1);
    let d = settle(want("3.5.16"), &o);
    template_applied(&mut o, &d);
    assert!(matches!(
        plan(&d, &o),
        Step::RestartMember { ordinal: 1, .. }
    ));
}

#[test]
fn the_next_member_waits_until_the_upgraded_one_is_healthy_and_caught_up() {
    let mut o = running_on("3.4.23");
    let d = settle(want("3.5.16"), &o);
    template_applied(&mut o, &d);
    restarted(&mut o, 2, "3.5.16", 20);
    cluster(&mut o).members[2]
        .status
        .as_mut()
        .unwrap()
        .raft_index = 0;
    cluster(&mut o).members[0]
        .status
        .as_mut()
        .unwrap()
        .raft_index = CAUGHT_UP_ENTRIES + 10;
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::Wait { message, .. } if message.contains("demo-2 has caught up")),
        "{step:?}"
    );
    let (on, reason, msg) = condition(&d, &o, &step).unwrap();
    assert!(on);
    assert_eq!(reason, Reason::WaitingForMember);
    assert!(msg.contains("3.4.23 to 3.5.16"), "{msg}");

    // Not healthy yet, within the deadline: wait.
    let mut o2 = o.clone();
    crashing(&mut o2, 2);
    o2.pods.get_mut(&2).unwrap().revision = Some("rev2".into());
    assert!(matches!(plan(&d, &o2), Step::Wait { .. }));
}

#[test]
fn an_upgraded_member_whose_image_cannot_be_pulled_rolls_back_after_the_pull_grace() {
    for reason in ["ErrImagePull", "ImagePullBackOff", "InvalidImageName"] {
        let mut o = running_on("3.5.16");
        let d = settle(want("3.5.98"), &o);
        assert_eq!(d.upgrade_timeout_seconds, 300, "the default deadline");
        template_applied(&mut o, &d);
        restarted(&mut o, 2, "3.5.98", IMAGE_PULL_GRACE_SECONDS - 1);
        crashing(&mut o, 2);
        o.pods.get_mut(&2).unwrap().waiting_reason = Some(reason.into());
        let step = plan(&d, &o);
        assert!(
            !matches!(step, Step::RollBack { .. }),
            "{reason}: within the grace the kubelet retries: {step:?}"
        );
        restarted_ago(&mut o, 2, IMAGE_PULL_GRACE_SECONDS);
        let step = plan(&d, &o);
        let Step::RollBack { member, why, .. } = &step else {
            panic!("{reason}: {step:?}");
        };
        assert_eq!(member, "demo-2");
        assert!(
            why.contains(&format!("within {IMAGE_PULL_GRACE_SECONDS}s"))
                && why.contains(reason)
                && why.contains("gcr.io/etcd-development/etcd:v3.5.98 cannot be pulled"),
            "{why}"
        );
    }
    // A crash loop keeps the whole deadline: etcd may need the time (a large db, a slow disk).
    let mut o = running_on("3.5.16");
    let d = settle(want("3.5.98"), &o);
    template_applied(&mut o, &d);
    restarted(&mut o, 2, "3.5.98", IMAGE_PULL_GRACE_SECONDS);
    crashing(&mut o, 2);
    assert!(!matches!(plan(&d, &o), Step::RollBack { .. }));
    // A deadline shorter than the grace wins.
    let mut d = settle(want("3.5.98"), &running_on("3.5.16"));
    d.upgrade_timeout_seconds = 20;
    let mut o = running_on("3.5.16");
    template_applied(&mut o, &d);
    restarted(&mut o, 2, "3.5.98", 20);
    crashing(&mut o, 2);
    o.pods.get_mut(&2).unwrap().waiting_reason = Some("ErrImagePull".into());
    assert!(matches!(plan(&d, &o), Step::RollBack { .. }));
}

#[test]
fn an_upgraded_member_unhealthy_past_the_deadline_rolls_the_upgrade_back() {
    let mut o = running_on("3.4.23");
    let d = settle(want("3.5.99"), &o);
    template_applied(&mut o, &d);
    restarted(&mut o, 2, "3.5.99", d.upgrade_timeout_seconds);
    crashing(&mut o, 2);
    let step = plan(&d, &o);
    let Step::RollBack {
        member,
        from,
        to,
        why,
        ..
    } = &step
    else {
        panic!("{step:?}");
    };
    assert_eq!(
        (member.as_str(), *from, *to),
        ("demo-2", v("3.4.23"), v("3.5.99"))
    );
    assert!(why.contains("CrashLoopBackOff"), "{why}");
    let rec = record(&d, &o, &step, None).unwrap();
    // Decided, not done: the pods still run the bad template.
    assert_eq!(rec.state, upgrade_state::ROLLING_BACK);
    assert_eq!(rec.from_version, "3.4.23");

    // The next pass: the template runs 3.4.23 again, and the crashing pod restarts on it first.
    let st = crate::api::EtcdClusterStatus {
        upgrade: Some(rec),
        version: Some("3.4.23".into()),
        ..Default::default()
    };
    (o.last_version, o.upgrade) = from_status(Some(&st));
    let d = settle(want("3.5.99"), &o);
    assert_eq!(d.version, v("3.4.23"));
    assert!(matches!(plan(&d, &o), Step::UpdateTemplate { .. }));
    let (on, reason, _) = condition(&d, &o, &Step::UpdateTemplate { replicas: 3 }).unwrap();
    assert!(on);
    assert_eq!(reason, Reason::RollingBack);
    // The old template's revision again: only the pod on the bad one is stale.
    let sts = o.statefulset.as_mut().unwrap();
    sts.template_hash = Some(objects::template_hash(&d));
    sts.update_revision = Some("rev1".into());
    assert!(matches!(
        plan(&d, &o),
        Step::RestartMember { ordinal: 2, .. }
    ));
    // Back on 3.4.23 and healthy: RolledBack, until spec.version changes.
    let mut back = running_on("3.4.23");
    back.upgrade = o.upgrade.clone();
    let d = settle(want("3.5.99"), &back);
    assert_eq!(plan(&d, &back), Step::Idle);
    let (on, reason, msg) = condition(&d, &back, &Step::Idle).unwrap();
    assert!(!on);
    assert_eq!(reason, Reason::RolledBack);
    assert!(msg.contains("demo-2 did not become healthy"), "{msg}");
    let done = record(
        &d,
        &back,
        &Step::Idle,
        back.upgrade.as_ref().map(|r| &r.status),
    )
    .unwrap();
    assert_eq!(done.state, upgrade_state::ROLLED_BACK);
    // A new target starts a new upgrade.
    let d = settle(want("3.5.16"), &back);
    assert!(matches!(d.upgrade, VersionChange::Moving { .. }));
}

#[test]
fn a_member_within_its_deadline_is_waited_for() {
    let mut o = running_on("3.4.23");
    let d = settle(want("3.5.99"), &o);
    template_applied(&mut o, &d);
    restarted(&mut o, 2, "3.5.99", d.upgrade_timeout_seconds - 1);
    crashing(&mut o, 2);
    assert!(matches!(
        plan(&d, &o),
        Step::Wait { .. } | Step::RestartMember { .. }
    ));
    assert!(!matches!(plan(&d, &o), Step::RollBack { .. }));
}

#[test]
fn once_every_other_member_moved_a_failing_last_member_is_not_rolled_back() {
    let mut o = running_on("3.4.23");
    let mut d = settle(want("3.5.16"), &o);
    d.pre_upgrade_backup = Some("s3://b/demo-pre.db".into());
    template_applied(&mut o, &d);
    restarted(&mut o, 2, "3.5.16", 900);
    restarted(&mut o, 1, "3.5.16", 600);
    restarted(&mut o, 0, "3.5.16", 300);
    crashing(&mut o, 0);
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::Hold { reason: Reason::UpgradeBlocked, message } if message.contains("s3://b/demo-pre.db")),
        "{step:?}"
    );
}

#[test]
fn the_pre_upgrade_snapshot_is_recorded_for_its_version_only() {
    let mut cluster = crate::fixtures::cluster("demo")
        .replicas(3)
        .version("3.5.16")
        .build();
    cluster.metadata.annotations = Some(
        [(
            crate::api::ANNOTATION_PRE_UPGRADE_BACKUP.to_string(),
            "3.5.16 s3://b/pre.db".to_string(),
        )]
        .into(),
    );
    let o = running_on("3.4.23");
    let d = settle(crate::model::validate(&cluster).unwrap(), &o);
    let rec = record(&d, &o, &Step::UpdateTemplate { replicas: 3 }, None).unwrap();
    assert_eq!(rec.backup.as_deref(), Some("s3://b/pre.db"));
    assert!(!rec.skip_backup);
    cluster.spec.version = "3.5.17".into();
    let d = settle(crate::model::validate(&cluster).unwrap(), &o);
    assert_eq!(
        d.pre_upgrade_backup, None,
        "an older upgrade's snapshot is not this one's"
    );
}

#[test]
fn a_downgrade_lowers_the_cluster_version_before_any_member_moves_then_goes_leader_last() {
    let mut o = running_on("3.6.15");
    speaks(&mut o, "3.6.0", "3.6.0");
    let d = settle(want("3.5.30"), &o);
    assert_eq!(
        d.upgrade,
        VersionChange::Moving {
            from: v("3.6.15"),
            to: v("3.5.30")
        }
    );
    assert!(matches!(plan(&d, &o), Step::UpdateTemplate { .. }));
    template_applied(&mut o, &d);
    let step = plan(&d, &o);
    assert_eq!(
        step,
        Step::Downgrade {
            action: crate::plan::DowngradeStep::Enable,
            target: v("3.5.0")
        }
    );
    let (on, reason, msg) = condition(&d, &o, &step).unwrap();
    assert!(on && reason == Reason::Downgrading, "{msg}");
    assert!(msg.contains("validated first"), "{msg}");

    // Enabled: the cluster version follows within seconds; nobody moves before it has.
    downgrade_enabled(&mut o, "3.5.0");
    assert!(matches!(
        plan(&d, &o),
        Step::Wait { reason: Reason::Downgrading, message } if message.contains("3.6.0")
    ));
    // The cluster speaks 3.5, but the db files are still 3.6.
    speaks(&mut o, "3.5.0", "3.6.0");
    assert!(matches!(
        plan(&d, &o),
        Step::Wait { reason: Reason::Downgrading, message } if message.contains("storage version of demo-0, demo-1, demo-2")
    ));
    // Storage versions down: the followers move first, the leader (demo-0) last.
    speaks(&mut o, "3.5.0", "3.5.0");
    assert!(matches!(
        plan(&d, &o),
        Step::RestartMember {
            ordinal: 2,
            why: Restart::NewTemplate,
            ..
        }
    ));
    restarted(&mut o, 2, "3.5.30", 30);
    restarted(&mut o, 1, "3.5.30", 20);
    assert!(matches!(plan(&d, &o), Step::MoveLeader { from, .. } if from == "demo-0"));
}

#[test]
fn a_downgrade_no_longer_wanted_is_cancelled() {
    let mut o = running_on("3.6.15");
    speaks(&mut o, "3.5.0", "3.5.0");
    downgrade_enabled(&mut o, "3.5.0");
    let d = settle(want("3.6.15"), &o);
    assert_eq!(
        plan(&d, &o),
        Step::Downgrade {
            action: crate::plan::DowngradeStep::Cancel,
            target: v("3.5.0")
        }
    );
}

#[test]
fn an_upgrade_to_3_6_failing_after_the_cluster_version_moved_is_rolled_back_through_etcds_downgrade()
 {
    let mut o = running_on("3.5.30");
    speaks(&mut o, "3.5.0", "");
    let d = settle(want("3.6.15"), &o);
    template_applied(&mut o, &d);
    restarted(&mut o, 2, "3.6.15", 900);
    restarted(&mut o, 1, "3.6.15", 600);
    restarted(&mut o, 0, "3.6.15", d.upgrade_timeout_seconds);
    speaks(&mut o, "3.6.0", "3.6.0");
    crashing(&mut o, 0);
    // Leadership moved off demo-0 before it restarted.
    cluster(&mut o).leader = Some(101);
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::RollBack { from, to, .. } if *from == v("3.5.30") && *to == v("3.6.15")),
        "{step:?}"
    );
    // The template runs 3.5.30 again; before any member restarts on it, the cluster version
    // goes down through etcd's downgrade API.
    let st = crate::api::EtcdClusterStatus {
        upgrade: record(&d, &o, &step, None),
        ..Default::default()
    };
    (_, o.upgrade) = from_status(Some(&st));
    let d = settle(want("3.6.15"), &o);
    assert_eq!(d.version, v("3.5.30"));
    let sts = o.statefulset.as_mut().unwrap();
    sts.template_hash = Some(objects::template_hash(&d));
    sts.update_revision = Some("rev3".into());
    assert_eq!(
        plan(&d, &o),
        Step::Downgrade {
            action: crate::plan::DowngradeStep::Enable,
            target: v("3.5.0")
        }
    );
}

#[test]
fn a_downgrade_from_3_7_lowers_the_cluster_version_to_3_6_then_goes_leader_last() {
    let mut o = running_on("3.7.3");
    speaks(&mut o, "3.7.0", "3.7.0");
    let d = settle(want("3.6.16"), &o);
    assert_eq!(
        d.upgrade,
        VersionChange::Moving {
            from: v("3.7.3"),
            to: v("3.6.16")
        }
    );
    template_applied(&mut o, &d);
    assert_eq!(
        plan(&d, &o),
        Step::Downgrade {
            action: crate::plan::DowngradeStep::Enable,
            target: v("3.6.0")
        }
    );
    downgrade_enabled(&mut o, "3.6.0");
    speaks(&mut o, "3.6.0", "3.7.0");
    assert!(matches!(
        plan(&d, &o),
        Step::Wait { reason: Reason::Downgrading, message } if message.contains("storage version of demo-0, demo-1, demo-2") && message.contains("above 3.6")
    ));
    speaks(&mut o, "3.6.0", "3.6.0");
    assert!(matches!(
        plan(&d, &o),
        Step::RestartMember {
            ordinal: 2,
            why: Restart::NewTemplate,
            ..
        }
    ));
    restarted(&mut o, 2, "3.6.16", 30);
    restarted(&mut o, 1, "3.6.16", 20);
    assert!(matches!(plan(&d, &o), Step::MoveLeader { from, .. } if from == "demo-0"));
    // Set back to 3.7 midway: the template runs 3.7 again, and the downgrade is cancelled
    // before any member restarts on it (etcd does not let a 3.7 member join while a downgrade
    // to 3.6 is enabled).
    let d = settle(want("3.7.3"), &o);
    assert!(matches!(plan(&d, &o), Step::UpdateTemplate { .. }));
    let sts = o.statefulset.as_mut().unwrap();
    sts.template_hash = Some(objects::template_hash(&d));
    sts.update_revision = Some("rev3".into());
    assert_eq!(
        plan(&d, &o),
        Step::Downgrade {
            action: crate::plan::DowngradeStep::Cancel,
            target: v("3.6.0")
        }
    );
}

#[test]
fn an_upgrade_to_3_7_failing_after_the_cluster_version_moved_is_rolled_back_through_etcds_downgrade()
 {
    let mut o = running_on("3.6.16");
    speaks(&mut o, "3.6.0", "3.6.0");
    let d = settle(want("3.7.3"), &o);
    assert_eq!(
        d.upgrade,
        VersionChange::Moving {
            from: v("3.6.16"),
            to: v("3.7.3")
        }
    );
    template_applied(&mut o, &d);
    restarted(&mut o, 2, "3.7.3", 900);
    restarted(&mut o, 1, "3.7.3", 600);
    restarted(&mut o, 0, "3.7.3", d.upgrade_timeout_seconds);
    speaks(&mut o, "3.7.0", "3.7.0");
    crashing(&mut o, 0);
    cluster(&mut o).leader = Some(101);
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::RollBack { from, to, .. } if *from == v("3.6.16") && *to == v("3.7.3")),
        "{step:?}"
    );
    let st = crate::api::EtcdClusterStatus {
        upgrade: record(&d, &o, &step, None),
        ..Default::default()
    };
    (_, o.upgrade) = from_status(Some(&st));
    let d = settle(want("3.7.3"), &o);
    assert_eq!(d.version, v("3.6.16"));
    let sts = o.statefulset.as_mut().unwrap();
    sts.template_hash = Some(objects::template_hash(&d));
    sts.update_revision = Some("rev3".into());
    assert_eq!(
        plan(&d, &o),
        Step::Downgrade {
            action: crate::plan::DowngradeStep::Enable,
            target: v("3.6.0")
        }
    );
}

#[test]
fn an_upgrade_to_3_7_failing_while_a_member_still_runs_3_6_puts_3_6_back() {
    let mut o = running_on("3.6.16");
    speaks(&mut o, "3.6.0", "3.6.0");
    let d = settle(want("3.7.3"), &o);
    template_applied(&mut o, &d);
    restarted(&mut o, 2, "3.7.3", d.upgrade_timeout_seconds);
    crashing(&mut o, 2);
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::RollBack { from, to, ordinal: 2, .. } if *from == v("3.6.16") && *to == v("3.7.3")),
        "{step:?}"
    );
}

#[test]
fn a_3_6_cluster_below_3_6_11_is_not_moved_to_3_7() {
    let o = running_on("3.6.10");
    let d = settle(want("3.7.3"), &o);
    let VersionChange::Blocked { why, .. } = &d.upgrade else {
        panic!("{:?}", d.upgrade);
    };
    assert!(why.contains("upgrade to 3.6.11 first"), "{why}");
    assert_eq!(d.version, v("3.6.10"), "the template keeps what runs");
    // A mixed 3.6 cluster is judged by its lowest member.
    let mut o = running_on("3.6.16");
    cluster(&mut o).members[1].status.as_mut().unwrap().version = Some(v("3.6.10"));
    assert!(matches!(
        settle(want("3.7.3"), &o).upgrade,
        VersionChange::Blocked { .. }
    ));
}

#[test]
fn three_six_to_three_seven_is_refused_while_spec_options_set_an_experimental_flag() {
    let o = running_on("3.6.16");
    let mut d = want("3.7.3");
    d.etcd_flags
        .push("--experimental-compact-hash-check-enabled=true".into());
    d.etcd_flags.push("--snapshot-count=50000".into());
    let r = check_change(&d, &o, v("3.6.16"), v("3.6.16"), v("3.7.3")).unwrap_err();
    assert!(r.rule.contains("experimental"), "{r}");
    assert!(
        r.message
            .contains("sets experimental-compact-hash-check-enabled:"),
        "{r}"
    );
    assert!(r.message.contains("3.6 name"), "{r}");
    // The plain names are fine, and 3.5 → 3.6 keeps the experimental ones (deprecated there).
    assert_eq!(
        check_change(&want("3.7.3"), &o, v("3.6.16"), v("3.6.16"), v("3.7.3")),
        Ok(PathKind::Minor)
    );
    let mut d = want("3.6.16");
    d.etcd_flags
        .push("--experimental-compact-hash-check-enabled=true".into());
    assert_eq!(
        check_change(&d, &o, v("3.5.35"), v("3.5.35"), v("3.6.16")),
        Ok(PathKind::Minor)
    );
}

#[test]
fn a_downgrade_waits_while_the_cluster_version_is_unknown() {
    let mut o = running_on("3.6.15");
    let d = settle(want("3.5.30"), &o);
    template_applied(&mut o, &d);
    assert!(matches!(
        plan(&d, &o),
        Step::Wait {
            reason: Reason::Downgrading,
            ..
        }
    ));
}

#[test]
fn a_minor_change_is_done_only_when_the_cluster_version_moved_too() {
    let mut o = running_on("3.5.30");
    speaks(&mut o, "3.4.0", "");
    let rec = UpgradeRecord {
        from: v("3.4.23"),
        to: v("3.5.30"),
        rolled_back: false,
        status: Default::default(),
    };
    o.upgrade = Some(rec);
    let d = settle(want("3.5.30"), &o);
    assert!(matches!(
        plan(&d, &o),
        Step::Wait { reason: Reason::WaitingForMember, message } if message.contains("cluster version (3.4.0)")
    ));
    speaks(&mut o, "3.5.0", "");
    assert_eq!(plan(&d, &o), Step::Idle);
}

#[test]
fn three_four_to_three_five_is_refused_while_auth_is_enabled() {
    let mut o = running_on("3.4.23");
    for m in &mut cluster(&mut o).members {
        m.healthy = false;
        m.error = Some(
            "etcd at pod/ns/demo-0:2379 is unhealthy: a linearizable read failed: etcdserver: user name is empty".into(),
        );
    }
    let d = settle(want("3.5.30"), &o);
    let VersionChange::Blocked { why, .. } = &d.upgrade else {
        panic!("{:?}", d.upgrade);
    };
    assert!(
        why.contains("auth is enabled") && why.contains("auth disable"),
        "{why}"
    );
    assert_eq!(d.version, v("3.4.23"));
    // Patch changes and the step from 3.5 are not concerned.
    assert_eq!(
        check_change(&want("3.4.23"), &o, v("3.4.23"), v("3.4.23"), v("3.4.30")),
        Ok(PathKind::Patch)
    );
}

#[test]
fn three_four_to_three_five_is_refused_when_the_spec_auth_user_was_taken() {
    // With spec.auth the members answer healthy: that they took the user's credentials is what
    // says authentication is on.
    let mut o = running_on("3.4.23");
    cluster(&mut o).auth_enabled = true;
    let d = settle(want("3.5.30"), &o);
    assert!(
        matches!(&d.upgrade, VersionChange::Blocked { why, .. } if why.contains("auth is enabled")),
        "{:?}",
        d.upgrade
    );
    cluster(&mut o).auth_enabled = false;
    assert!(!matches!(
        settle(want("3.5.30"), &o).upgrade,
        VersionChange::Blocked { .. }
    ));
}

#[test]
fn three_five_to_three_six_is_refused_when_the_members_serve_the_v2_api() {
    let o = running_on("3.5.30");
    let mut d = want("3.6.15");
    d.etcd_flags.push("--enable-v2=true".into());
    let r = check_change(&d, &o, v("3.5.30"), v("3.5.30"), v("3.6.15")).unwrap_err();
    assert!(r.rule.contains("v2 store"), "{r}");
    assert!(r.message.contains("etcdutl check v2store"), "{r}");
    assert_eq!(
        check_change(&want("3.6.15"), &o, v("3.5.30"), v("3.5.30"), v("3.6.15")),
        Ok(PathKind::Minor)
    );
}

#[test]
fn the_member_template_passes_no_experimental_flag_and_no_v2_api_to_any_version() {
    // Nothing to rename for 3.6 or drop for 3.7: the template sets no `--experimental-*` flag
    // (nor its ETCD_EXPERIMENTAL_* variable), and never enables the v2 API. The one exception
    // is translated per version: peer TLS skips the SAN check of peer client certificates with
    // the experimental name up to 3.5 and the plain one from 3.6 (3.7 has no other).
    for version in ["3.4.23", "3.5.16", "3.5.30", "3.6.15", "3.6.16", "3.7.3"] {
        let d = want(version);
        let t = objects::pod_template(&d);
        let text = serde_json::to_string(&t).unwrap().to_lowercase();
        for bad in ["experimental", "enable-v2", "enable_v2"] {
            assert!(!text.contains(bad), "{version}: {bad} in {text}");
        }
        let mut d = want(version);
        d.tls.peer_secret = Some("peer".into());
        let text = serde_json::to_string(&objects::pod_template(&d)).unwrap();
        let (want_var, not) = if version.starts_with("3.6") || version.starts_with("3.7") {
            ("\"ETCD_PEER_SKIP_CLIENT_SAN_VERIFICATION\"", "EXPERIMENTAL")
        } else {
            (
                "\"ETCD_EXPERIMENTAL_PEER_SKIP_CLIENT_SAN_VERIFICATION\"",
                "\"ETCD_PEER_SKIP_CLIENT_SAN_VERIFICATION\"",
            )
        };
        assert!(text.contains(want_var), "{version}: {text}");
        assert!(!text.contains(not), "{version}: {not} in {text}");
        assert!(!text.to_lowercase().contains("enable_v2"), "{version}");
    }
}

#[test]
fn a_version_applied_without_a_snapshot_takes_one_before_the_template_changes() {
    let mut o = running_on("3.5.30");
    let mut spec = want("3.6.15");
    spec.pre_upgrade_backup = None;
    let d = settle(spec.clone(), &o);
    assert_eq!(
        d.version,
        v("3.5.30"),
        "the template keeps what runs until the snapshot"
    );
    // No destination: hold, saying how.
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::Hold { reason: Reason::UpgradeBlocked, message } if message.contains("spec.backup.destination") && message.contains("--skip-backup")),
        "{step:?}"
    );
    // Status says it is blocked, not under way (the fault-matrix row upgrade_held_volume_lost
    // saw WaitingForMember before).
    let (on, reason, message) = condition(&d, &o, &step).unwrap();
    assert_eq!((on, reason), (false, Reason::UpgradeBlocked), "{message}");
    assert!(message.contains("spec.backup.destination"), "{message}");
    spec.backup_destination = Some("s3://b/demo".into());
    assert_eq!(
        plan(&settle(spec.clone(), &o), &o),
        Step::PreUpgradeSnapshot {
            to: v("3.6.15"),
            destination: "s3://b/demo".into()
        }
    );
    // Recorded (the annotation names it for 3.6.15): the rollout starts.
    spec.pre_upgrade_backup = Some("s3://b/demo/pre.db".into());
    let d = settle(spec.clone(), &o);
    assert!(matches!(plan(&d, &o), Step::UpdateTemplate { .. }));
    // A rollout already under way is not stopped for one.
    template_applied(&mut o, &d);
    spec.pre_upgrade_backup = None;
    let d = settle(spec, &o);
    assert_eq!(d.version, v("3.6.15"));
    assert!(!matches!(plan(&d, &o), Step::PreUpgradeSnapshot { .. }));
}

#[test]
fn an_upgrade_waiting_for_its_snapshot_holds_only_the_upgrade_and_a_lost_member_is_replaced() {
    // spec.version applied without a snapshot and without a backup destination (or with the
    // store down); meanwhile demo-1 loses its volume.
    let mut o = running_on("3.5.30");
    let mut spec = want("3.6.15");
    spec.pre_upgrade_backup = None;
    let m = &mut cluster(&mut o).members[1];
    m.status = None;
    m.healthy = false;
    let p = o.pods.get_mut(&1).unwrap();
    p.ready = false;
    p.restarts = 3;
    p.age_seconds = 3600;
    p.last_exit_message =
        Some("couldn't find local name \"demo-1\" in the initial cluster configuration".into());
    o.lost_since
        .insert(1, o.now - jiff::SignedDuration::from_secs(3600));
    let d = settle(spec.clone(), &o);
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::RemoveMember { name, .. } if name == "demo-1"),
        "repairs first: {step:?}"
    );
    // A template change that is not the version goes ahead too (on the running version).
    let mut other = spec.clone();
    other.etcd_flags.push("--heartbeat-interval=200".into());
    let healthy_o = running_on("3.5.30");
    let d = settle(other, &healthy_o);
    assert_eq!(d.version, v("3.5.30"));
    let step = plan(&d, &healthy_o);
    assert!(matches!(step, Step::UpdateTemplate { .. }), "{step:?}");
}

/// `o` after the upgrade `from → to` finished: every member runs `to`, `status.upgrade` says
/// Upgraded.
fn finished(o: &mut Observed, from: &str, to: &str) {
    o.upgrade = Some(UpgradeRecord {
        from: v(from),
        to: v(to),
        rolled_back: false,
        status: UpgradeStatus {
            from_version: from.into(),
            to_version: to.into(),
            state: upgrade_state::UPGRADED.into(),
            ..Default::default()
        },
    });
}

#[test]
fn a_finished_upgrade_is_never_rolled_back_by_a_member_whose_container_restarts() {
    // 3.5.16 → 3.5.30 finished; weeks later one member's etcd container restarts in its old pod.
    let mut o = running_on("3.5.30");
    finished(&mut o, "3.5.16", "3.5.30");
    let mut d = want("3.5.30");
    d.upgrade_timeout_seconds = 20;
    crashing(&mut o, 1);
    o.pods.get_mut(&1).unwrap().age_seconds = 40 * 86_400;
    let d = settle(d, &o);
    assert_eq!(
        d.upgrade,
        VersionChange::Steady,
        "a finished change stays finished"
    );
    let step = plan(&d, &o);
    assert!(!matches!(step, Step::RollBack { .. }), "{step:?}");
    assert_eq!(
        record(&d, &o, &step, o.upgrade.as_ref().map(|r| &r.status))
            .unwrap()
            .state,
        upgrade_state::UPGRADED
    );
}

#[test]
fn a_template_change_that_is_not_a_version_change_is_never_a_downgrade() {
    // 3.5.30 → 3.6.15 finished; spec.imageRepository set to an image that cannot be pulled.
    let mut o = running_on("3.6.15");
    speaks(&mut o, "3.6.0", "3.6.0");
    finished(&mut o, "3.5.30", "3.6.15");
    let mut d = want("3.6.15");
    d.image_repository = "registry.invalid/etcd".into();
    d.image = "registry.invalid/etcd:v3.6.15".into();
    let d = settle(d, &o);
    assert_eq!(d.upgrade, VersionChange::Steady);
    assert_eq!(d.version, v("3.6.15"));
    template_applied(&mut o, &d);
    let p = o.pods.get_mut(&2).unwrap();
    p.revision = Some("rev2".into());
    p.age_seconds = 600;
    crashing(&mut o, 2);
    o.pods.get_mut(&2).unwrap().waiting_reason = Some("ErrImagePull".into());
    let d = settle(d, &o);
    assert_eq!(d.upgrade, VersionChange::Steady, "{:?}", d.upgrade);
    let step = plan(&d, &o);
    assert!(
        !matches!(step, Step::RollBack { .. } | Step::Downgrade { .. }),
        "{step:?}"
    );
}

#[test]
fn the_rollback_deadline_counts_from_this_changes_restart_not_from_the_pods_creation() {
    let mut o = running_on("3.5.16");
    let d = settle(want("3.5.30"), &o);
    template_applied(&mut o, &d);
    // The pod is old (created long before this change), but this change restarted it 10 s ago.
    restarted(&mut o, 2, "3.5.30", 10);
    o.pods.get_mut(&2).unwrap().age_seconds = 40 * 86_400;
    crashing(&mut o, 2);
    let d = settle(want("3.5.30"), &o);
    let step = plan(&d, &o);
    assert!(!matches!(step, Step::RollBack { .. }), "{step:?}");
    // Nothing recorded for it (not restarted by this change): no deadline runs.
    o.upgrade.as_mut().unwrap().status.restarted_at.clear();
    assert!(!matches!(plan(&d, &o), Step::RollBack { .. }));
    // Restarted by it `upgrade_timeout_seconds` ago: rolled back to where it started.
    restarted_ago(&mut o, 2, d.upgrade_timeout_seconds);
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::RollBack { from, to, why, .. } if *from == v("3.5.16") && *to == v("3.5.30") && why.contains("of its restart")),
        "{step:?}"
    );
}

#[test]
fn a_member_once_healthy_on_the_new_version_never_rolls_the_change_back() {
    let mut o = running_on("3.5.16");
    let d = settle(want("3.5.30"), &o);
    template_applied(&mut o, &d);
    restarted(&mut o, 2, "3.5.30", 900);
    // The pass that saw it healthy on 3.5.30 noted it.
    let st = record(&d, &o, &Step::Idle, o.upgrade.as_ref().map(|r| &r.status)).unwrap();
    assert_eq!(st.healthy_on_target, ["demo-2"]);
    o.upgrade.as_mut().unwrap().status = st;
    // Then its container restarts (an OOM kill): the change goes on, nothing is rolled back.
    crashing(&mut o, 2);
    let d = settle(want("3.5.30"), &o);
    let step = plan(&d, &o);
    assert!(!matches!(step, Step::RollBack { .. }), "{step:?}");
}

#[test]
fn a_restart_by_the_change_is_recorded_with_its_time_and_kept_across_passes() {
    let mut o = running_on("3.5.16");
    o.now = jiff::Timestamp::from_second(1_000_000).unwrap();
    let d = settle(want("3.5.30"), &o);
    template_applied(&mut o, &d);
    let step = Step::RestartMember {
        ordinal: 2,
        pod: "demo-2".into(),
        why: Restart::NewTemplate,
    };
    let st = record(&d, &o, &step, None).unwrap();
    assert_eq!(st.restarted_at["demo-2"].0, o.now);
    let later = o.now + jiff::SignedDuration::from_secs(60);
    o.now = later;
    // Its new pod is on the new template and does not answer yet: the time stays the restart's.
    let p = o.pods.get_mut(&2).unwrap();
    p.revision = Some("rev2".into());
    crashing(&mut o, 2);
    let st2 = record(&d, &o, &Step::Idle, Some(&st)).unwrap();
    assert_eq!(st2.restarted_at["demo-2"], st.restarted_at["demo-2"]);
    // A pod found on the new template that no restart step recorded (a crash between the
    // restart and the status write) counts from when it is first seen.
    let st3 = record(&d, &o, &Step::Idle, None).unwrap();
    assert_eq!(st3.restarted_at["demo-2"].0, later);
}

#[test]
fn a_downgrade_that_cannot_finish_because_a_member_is_down_says_so_and_what_to_do() {
    let mut o = running_on("3.6.15");
    speaks(&mut o, "3.6.0", "3.6.0");
    let d = settle(want("3.5.30"), &o);
    template_applied(&mut o, &d);
    downgrade_enabled(&mut o, "3.5.0");
    crashing(&mut o, 2);
    let p = o.pods.get_mut(&2).unwrap();
    p.running = false;
    p.restarts = 4;
    let d = settle(want("3.5.30"), &o);
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::Hold { reason: Reason::Downgrading, message }
            if message.contains("demo-2 does not") && message.contains("set spec.version back to 3.6.15")),
        "{step:?}"
    );
}

/// A cluster just formed speaks 3.0 until its leader raises the cluster version: not done yet
/// (`create` returned inside that window, and status changed right after).
#[test]
fn a_new_cluster_is_done_only_once_its_cluster_version_rose() {
    let d = want("3.7.3");
    let mut o = running_on("3.7.3");
    speaks(&mut o, "3.0.0", "");
    let step = plan(&d, &o);
    assert!(
        matches!(&step, Step::Wait { reason: Reason::Bootstrapping, message } if message.contains("cluster version (3.0.0) rises to 3.7")),
        "{step:?}"
    );
    speaks(&mut o, "3.7.0", "3.7.0");
    assert_eq!(plan(&d, &o), Step::Idle);
    // etcd's downgrade lowers the cluster version first: no wait for it to rise.
    speaks(&mut o, "3.6.0", "3.7.0");
    downgrade_enabled(&mut o, "3.6.0");
    assert!(!matches!(
        plan(&d, &o),
        Step::Wait {
            reason: Reason::Bootstrapping,
            ..
        }
    ));
    // A member that gives no status: the leader waits for it, so does nobody here.
    let mut o = running_on("3.7.3");
    speaks(&mut o, "3.0.0", "");
    cluster(&mut o).members[2].status = None;
    assert!(!matches!(
        plan(&d, &o),
        Step::Wait {
            reason: Reason::Bootstrapping,
            ..
        }
    ));
}

#[test]
fn a_slow_container_start_is_not_a_failed_upgrade() {
    // CI: with a 20 s deadline, the kubelet took longer than that to create demo-2's container
    // on a loaded node, and the upgrade was rolled back for it.
    let mut d = settle(want("3.5.30"), &running_on("3.5.16"));
    d.upgrade_timeout_seconds = 20;
    let mut o = running_on("3.5.16");
    template_applied(&mut o, &d);
    restarted(&mut o, 2, "3.5.30", 25);
    crashing(&mut o, 2);
    o.pods.get_mut(&2).unwrap().waiting_reason = Some("ContainerCreating".into());
    let step = plan(&d, &o);
    assert!(!matches!(step, Step::RollBack { .. }), "{step:?}");
    // Its container then starts, 5 s ago: the deadline runs from there.
    let p = o.pods.get_mut(&2).unwrap();
    p.waiting_reason = None;
    p.running = true;
    p.running_seconds = Some(5);
    assert!(!matches!(plan(&d, &o), Step::RollBack { .. }));
    // Running for the whole deadline and still not healthy: rolled back.
    o.pods.get_mut(&2).unwrap().running_seconds = Some(20);
    assert!(matches!(plan(&d, &o), Step::RollBack { .. }));
    // A container that never starts still counts, after the start grace.
    let p = o.pods.get_mut(&2).unwrap();
    p.running = false;
    p.running_seconds = None;
    p.waiting_reason = Some("ContainerCreating".into());
    restarted_ago(&mut o, 2, CONTAINER_START_GRACE_SECONDS - 1);
    assert!(!matches!(plan(&d, &o), Step::RollBack { .. }));
    restarted_ago(&mut o, 2, CONTAINER_START_GRACE_SECONDS);
    let step = plan(&d, &o);
    let Step::RollBack { why, .. } = &step else {
        panic!("{step:?}");
    };
    assert!(
        why.contains(&format!("within {CONTAINER_START_GRACE_SECONDS}s"))
            && why.contains("ContainerCreating"),
        "{why}"
    );
}

/// `spec.version` = `version` for a one-member cluster (issue 43 R4's `create one --replicas 1`).
fn want_one(version: &str) -> Desired {
    let mut d = crate::fixtures::cluster("demo")
        .replicas(1)
        .version(version)
        .desired();
    d.pre_upgrade_backup = Some(crate::api::PRE_UPGRADE_BACKUP_SKIPPED.into());
    d
}

/// Issue 43 R4: a one-member cluster upgraded to an image that cannot be pulled. Its only pod
/// sits in ImagePullBackOff on the bad revision, so no member answers: the rollback must
/// replace that pod (the StatefulSet's OnDelete updates never do), and status says RolledBack
/// only once the pod runs the old version again.
#[test]
fn a_one_member_upgrade_to_an_image_that_cannot_be_pulled_is_rolled_back_onto_its_pod() {
    let mut o = healthy(&want_one("3.6.15"), 1);
    for m in &mut cluster(&mut o).members {
        m.status.as_mut().unwrap().version = Some(v("3.6.15"));
    }
    o.last_version = Some(v("3.6.15"));
    let d = settle(want_one("3.7.93"), &o);
    assert_eq!(d.version, v("3.7.93"));
    template_applied(&mut o, &d);
    restarted(&mut o, 0, "3.7.93", IMAGE_PULL_GRACE_SECONDS);
    let p = o.pods.get_mut(&0).unwrap();
    (p.running, p.ready) = (false, false);
    p.waiting_reason = Some("ImagePullBackOff".into());
    o.etcd = EtcdView::NotQueried;
    let step = plan(&d, &o);
    assert!(matches!(step, Step::RollBack { .. }), "{step:?}");
    let rec = record(&d, &o, &step, o.upgrade.as_ref().map(|r| &r.status)).unwrap();
    assert_eq!(rec.state, upgrade_state::ROLLING_BACK);

    // The template runs 3.6.15 again; the pod stays on the bad revision until replaced.
    let st = crate::api::EtcdClusterStatus {
        upgrade: Some(rec),
        version: Some("3.6.15".into()),
        ..Default::default()
    };
    (o.last_version, o.upgrade) = from_status(Some(&st));
    let d = settle(want_one("3.7.93"), &o);
    assert_eq!(d.version, v("3.6.15"));
    assert!(matches!(plan(&d, &o), Step::UpdateTemplate { .. }));
    let sts = o.statefulset.as_mut().unwrap();
    sts.template_hash = Some(objects::template_hash(&d));
    sts.update_revision = Some("rev1".into());
    let step = plan(&d, &o);
    assert_eq!(
        step,
        Step::RestartMember {
            ordinal: 0,
            pod: "demo-0".into(),
            why: Restart::NewTemplate
        },
        "the stuck pod is replaced although no member answers"
    );
    let prev = o.upgrade.as_ref().map(|r| r.status.clone());
    let rec = record(&d, &o, &step, prev.as_ref()).unwrap();
    assert_eq!(rec.state, upgrade_state::ROLLING_BACK, "not back yet");
    let (on, reason, _) = condition(&d, &o, &step).unwrap();
    assert!(on);
    assert_eq!(reason, Reason::RollingBack);

    // Replaced: terminating, then a new pod on the old revision that starts.
    o.pods.get_mut(&0).unwrap().terminating = true;
    assert!(!matches!(plan(&d, &o), Step::RestartMember { .. }));
    let mut back = healthy(&want_one("3.6.15"), 1);
    for m in &mut cluster(&mut back).members {
        m.status.as_mut().unwrap().version = Some(v("3.6.15"));
    }
    back.statefulset = o.statefulset.clone();
    back.upgrade = o.upgrade.clone();
    back.last_version = o.last_version;
    let d = settle(want_one("3.7.93"), &back);
    // Running, not Ready yet: still rolling back.
    back.pods.get_mut(&0).unwrap().ready = false;
    let rec = record(&d, &back, &Step::Idle, prev.as_ref()).unwrap();
    assert_eq!(rec.state, upgrade_state::ROLLING_BACK);
    back.pods.get_mut(&0).unwrap().ready = true;
    assert_eq!(plan(&d, &back), Step::Idle);
    let rec = record(&d, &back, &Step::Idle, prev.as_ref()).unwrap();
    assert_eq!(rec.state, upgrade_state::ROLLED_BACK);
    let (on, reason, _) = condition(&d, &back, &Step::Idle).unwrap();
    assert!(!on);
    assert_eq!(reason, Reason::RolledBack);
}

/// A status written before `RollingBack` existed (a rollback recorded as `RolledBack` at once)
/// still pins the template to the old version.
#[test]
fn a_rollback_recorded_either_way_keeps_the_old_version() {
    for state in [upgrade_state::ROLLING_BACK, upgrade_state::ROLLED_BACK] {
        let st = crate::api::EtcdClusterStatus {
            upgrade: Some(UpgradeStatus {
                from_version: "3.6.15".into(),
                to_version: "3.7.93".into(),
                state: state.into(),
                ..Default::default()
            }),
            version: Some("3.6.15".into()),
            ..Default::default()
        };
        let mut o = running_on("3.6.15");
        (o.last_version, o.upgrade) = from_status(Some(&st));
        let d = settle(want("3.7.93"), &o);
        assert_eq!(d.version, v("3.6.15"), "{state}");
    }
}

/// Issue 43 R7: `scale --replicas 4` during an upgrade adds demo-3 as a learner, whose pod
/// starts on the new template and receives the leader's snapshot for longer than the deadline.
/// The upgrade judges only the members it upgrades: the learner is waited for, never a failed
/// upgrade, and never noted as restarted by the change.
#[test]
fn a_learner_still_catching_up_at_the_deadline_is_not_a_failed_upgrade() {
    let d = want("3.5.99");
    let mut o = healthy(&want("3.4.23"), 4);
    for m in &mut cluster(&mut o).members {
        m.status.as_mut().unwrap().version = Some(v("3.4.23"));
    }
    o.last_version = Some(v("3.4.23"));
    let d = settle(d, &o);
    template_applied(&mut o, &d);
    restarted(&mut o, 2, "3.5.99", 10);
    // demo-3: a learner on the new revision, not ready, receiving its snapshot (no status yet).
    restarted(&mut o, 3, "3.5.99", d.upgrade_timeout_seconds + 60);
    let m = cluster(&mut o)
        .members
        .iter_mut()
        .find(|m| m.ordinal == Some(3))
        .unwrap();
    (m.learner, m.healthy, m.status) = (true, false, None);
    o.pods.get_mut(&3).unwrap().ready = false;
    let step = plan(&d, &o);
    assert!(!matches!(step, Step::RollBack { .. }), "{step:?}");
    // Nor does status note it as restarted by the change (its clock never starts as a learner).
    let mut fresh = o.clone();
    fresh
        .upgrade
        .as_mut()
        .unwrap()
        .status
        .restarted_at
        .remove("demo-3");
    let rec = record(&d, &fresh, &step, fresh.upgrade.as_ref().map(|r| &r.status)).unwrap();
    assert!(!rec.restarted_at.contains_key("demo-3"), "{rec:?}");
    // An upgraded voter past its deadline still rolls the upgrade back.
    restarted(&mut o, 2, "3.5.99", d.upgrade_timeout_seconds);
    crashing(&mut o, 2);
    assert!(
        matches!(plan(&d, &o), Step::RollBack { ordinal: 2, .. }),
        "{:?}",
        plan(&d, &o)
    );
}
