//! End-to-end: `kubectl etcd upgrade` on the testbed with real etcd images. A writer pod puts keys
//! through the client Service throughout; every acknowledged write must be readable afterwards.
//!
//! 3.5.16 → 3.6.15 is refused by the 3.5.26 rule, and the testbed has no 3.5.26+ image, so no
//! 3.5 → 3.6 rollout runs here.
#![cfg(feature = "e2e")]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;

fn create(ns: &str, version: &str) {
    ok(etcd(
        ns,
        &[
            "create",
            "demo",
            "--replicas",
            "3",
            "--version",
            version,
            "--timeout",
            "4m",
        ],
    ));
}

/// A pod that puts `w/<i>` through the client Service every 100 ms and prints `ack <i>` for
/// each acknowledged write.
fn start_writer(ns: &str) {
    ok(kubectl(&[
        "-n",
        ns,
        "run",
        "writer",
        "--image=gcr.io/etcd-development/etcd:v3.5.16",
        "--restart=Never",
        "--command",
        "--",
        "sh",
        "-c",
        "i=0; while true; do if etcdctl --endpoints=http://demo-client:2379 --command-timeout=5s put w/$i v$i >/dev/null; then echo ack $i; else echo fail $i; fi; i=$((i+1)); sleep 0.1; done",
    ]));
    eventually(
        "the writer acknowledges writes",
        Duration::from_secs(60),
        || (writer_log(ns).0.len() > 5).then_some(()),
    );
}

/// (acknowledged keys, failed writes) from the writer's log.
fn writer_log(ns: &str) -> (BTreeSet<String>, usize) {
    let r = kubectl(&["-n", ns, "logs", "writer"]);
    let acked = r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ack "))
        .map(|i| format!("w/{i}"))
        .collect();
    let failed = r.stdout.lines().filter(|l| l.starts_with("fail ")).count();
    (acked, failed)
}

/// Every acknowledged key is still there (read through member `pod`).
fn assert_no_acknowledged_write_lost(ns: &str) -> usize {
    let _ = kubectl(&["-n", ns, "delete", "pod", "writer", "--wait=false"]);
    std::thread::sleep(Duration::from_secs(1));
    let (acked, failed) = writer_log(ns);
    let keys: BTreeSet<String> = ok(etcdctl(
        ns,
        "demo-0",
        &["get", "--prefix", "w/", "--keys-only"],
    ))
    .stdout
    .lines()
    .filter(|l| !l.is_empty())
    .map(String::from)
    .collect();
    let lost: Vec<&String> = acked.difference(&keys).collect();
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    eprintln!(
        "writer: {} acknowledged, {failed} failed, none lost",
        acked.len()
    );
    acked.len()
}

/// (server version, cluster version) member `pod` reports on /version.
fn versions(ns: &str, pod: &str) -> (String, String) {
    let r = ok(kubectl(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{ns}/pods/{pod}:2379/proxy/version"),
    ]));
    let v = json(&r);
    (
        v["etcdserver"].as_str().unwrap_or("").into(),
        v["etcdcluster"].as_str().unwrap_or("").into(),
    )
}

fn spec_version(ns: &str) -> String {
    cluster_json(ns, "demo")["spec"]["version"]
        .as_str()
        .unwrap_or("")
        .into()
}

fn backups_in(ns: &str) -> usize {
    json(&ok(kubectl(&[
        "-n",
        ns,
        "get",
        "etcdbackups",
        "-o",
        "json",
    ])))["items"]
        .as_array()
        .map_or(0, |a| a.len())
}

fn upgrading_condition(ns: &str) -> (String, String, String) {
    let c = cluster_json(ns, "demo");
    let cond = c["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Upgrading").cloned())
        .unwrap_or_default();
    (
        cond["status"].as_str().unwrap_or("").into(),
        cond["reason"].as_str().unwrap_or("").into(),
        cond["message"].as_str().unwrap_or("").into(),
    )
}

/// Refused: exit 2, the rule and a way named, nothing changed.
fn assert_refused(ns: &str, args: &[&str], says: &str) {
    let before = (spec_version(ns), backups_in(ns));
    let r = etcd(ns, &[&["upgrade", "demo"], args].concat());
    assert_eq!(r.code, 2, "{args:?}: {}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    assert_eq!(
        (spec_version(ns), backups_in(ns)),
        before,
        "{args:?} changed something"
    );
}

#[test]
fn three_four_to_three_five_rolls_one_member_at_a_time_with_a_snapshot_and_loses_no_write() {
    install_crd();
    let ns = Ns::new("upgrade-34-35");
    create(&ns.0, "3.4.23");
    // etcd decides the cluster version a few seconds after the members start.
    eventually("cluster version 3.4.0", Duration::from_secs(30), || {
        (versions(&ns.0, "demo-0") == ("3.4.23".into(), "3.4.0".into())).then_some(())
    });

    // Refused paths: exit 2, nothing written.
    assert_refused(
        &ns.0,
        &["--version", "3.6.15", "--to", "file:///tmp"],
        "one minor at a time",
    );
    assert_refused(&ns.0, &["--version", "3.9.0"], "not supported");
    assert_refused(&ns.0, &["--version", "banana"], "not an etcd release");
    assert_refused(&ns.0, &["--version", "3.5.16"], "spec.backup.destination");

    let dir = tempfile::tempdir().unwrap();
    let to = format!("file://{}", dir.path().display());
    let plan = ok(etcd(
        &ns.0,
        &[
            "upgrade",
            "demo",
            "--version",
            "3.5.16",
            "--to",
            &to,
            "--dry-run",
        ],
    ));
    let text = format!("{}{}", plan.stdout, plan.stderr);
    assert!(text.contains("3.4.23 → 3.5.16"), "{text}");
    assert!(
        text.contains("leader: leadership moves off it first"),
        "{text}"
    );
    assert_eq!(spec_version(&ns.0), "3.4.23", "a dry run writes nothing");

    start_writer(&ns.0);
    let started = std::time::Instant::now();
    ok(etcd(
        &ns.0,
        &[
            "upgrade",
            "demo",
            "--version",
            "3.5.16",
            "--to",
            &to,
            "--timeout",
            "8m",
        ],
    ));
    eprintln!(
        "3-member upgrade 3.4.23 → 3.5.16: {:.0} s",
        started.elapsed().as_secs_f64()
    );
    // The cluster version moves once the leader saw every member on 3.5 (a few seconds).
    for pod in ["demo-0", "demo-1", "demo-2"] {
        eventually(
            &format!("{pod} on 3.5.16, cluster version 3.5.0"),
            Duration::from_secs(30),
            || (versions(&ns.0, pod) == ("3.5.16".into(), "3.5.0".into())).then_some(()),
        );
    }
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(c["status"]["upgrade"]["state"], "Upgraded", "{c}");
    assert_eq!(c["status"]["upgrade"]["fromVersion"], "3.4.23", "{c}");
    let backup = c["status"]["upgrade"]["backup"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        backup.starts_with(&to),
        "the pre-upgrade snapshot is recorded: {c}"
    );
    assert!(
        std::path::Path::new(backup.trim_start_matches("file://")).exists(),
        "{backup} exists"
    );
    assert!(assert_no_acknowledged_write_lost(&ns.0) > 0);

    // 3.5.16 → 3.6.15 is below etcd's 3.5.26 minimum; going back to 3.4 after the cluster
    // version moved is refused with the snapshot as the way back.
    assert_refused(
        &ns.0,
        &["--version", "3.6.15", "--to", &to],
        "upgrade to 3.5.26 first",
    );
    assert_refused(
        &ns.0,
        &["--version", "3.4.23", "--to", &to],
        "restore the pre-upgrade snapshot",
    );
}

#[test]
fn a_target_whose_etcd_exits_at_start_is_rolled_back_while_writes_go_on() {
    install_crd();
    let mut build = std::process::Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cluster/broken-etcd-image.sh"
    ));
    build.args(["3.5.16", "3.5.99"]);
    ok(run_cmd(&["broken-etcd-image.sh"], build));
    let ns = Ns::new("upgrade-rollback");
    create(&ns.0, "3.5.16");
    ok(kubectl(&[
        "-n",
        &ns.0,
        "patch",
        "etcdcluster",
        "demo",
        "--type=merge",
        "-p",
        r#"{"spec":{"upgradeTimeoutSeconds":30}}"#,
    ]));
    start_writer(&ns.0);
    let r = etcd(
        &ns.0,
        &[
            "upgrade",
            "demo",
            "--version",
            "3.5.99",
            "--skip-backup",
            "--yes",
            "--timeout",
            "6m",
        ],
    );
    assert_eq!(
        r.code, 7,
        "a rolled-back upgrade fails: {}\n{}",
        r.stdout, r.stderr
    );
    assert!(r.stderr.contains("rolled back to 3.5.16"), "{}", r.stderr);
    let (status, reason, message) = upgrading_condition(&ns.0);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "RolledBack"),
        "{message}"
    );
    assert!(
        message.contains("did not become healthy on 3.5.99"),
        "{message}"
    );
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(ready_members(&c["status"]), (3, 3, 3), "{c}");
    assert_eq!(c["status"]["upgrade"]["skipBackup"], true, "{c}");
    for pod in ["demo-0", "demo-1", "demo-2"] {
        assert_eq!(versions(&ns.0, pod).0, "3.5.16", "{pod}");
    }
    assert!(assert_no_acknowledged_write_lost(&ns.0) > 0);
}
