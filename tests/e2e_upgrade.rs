//! End-to-end: `kubectl etcd upgrade` on the testbed with real etcd images. A writer pod puts keys
//! through the client Service throughout; every acknowledged write must be readable afterwards.
//!
//! Images: 3.4.23, 3.5.16 (below the 3.5.26 that 3.5 → 3.6 needs), 3.5.35, 3.6.15, 3.6.16,
//! 3.7.3, each with its own etcdctl/etcdutl (tests/cluster/etcd-bins.sh + images.sh). Lines
//! starting with `BENCH` are docs/src/benchmarks.md's figures.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::time::Duration;

use common::writer::*;
use common::*;

fn create(ns: &str, version: &str) {
    create_replicas(ns, version, "3");
}

/// `create demo --insecure --replicas REPLICAS --version VERSION`.
fn create_replicas(ns: &str, version: &str, replicas: &str) {
    ok(etcd(
        ns,
        &[
            "create",
            "demo",
            "--insecure",
            "--replicas",
            replicas,
            "--version",
            version,
            "--timeout",
            "4m",
        ],
    ));
}

/// Runs `kubectl etcd upgrade demo --version to ARGS` with the writer going and prints the
/// benchmark figures: seconds for the whole change and per member (from its pod's recreation to
/// the next one's, or to the end), failed writes and the longest write stall.
fn timed_upgrade(ns: &str, to: &str, args: &[&str]) {
    let (t0, w0) = (std::time::Instant::now(), uptime());
    let started = jiff::Timestamp::now();
    let from = cluster_json(ns, "demo")["status"]["version"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    ok(etcd(
        ns,
        &[&["upgrade", "demo", "--version", to], args].concat(),
    ));
    let (secs, w1) = (t0.elapsed().as_secs_f64(), uptime());
    let ended = jiff::Timestamp::now();
    let mut restarts: Vec<(jiff::Timestamp, String)> = ["demo-0", "demo-1", "demo-2"]
        .iter()
        .map(|pod| {
            let p = json(&ok(kubectl(&["-n", ns, "get", "pod", pod, "-o", "json"])));
            let t: jiff::Timestamp = p["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            (t, pod.to_string())
        })
        .filter(|(t, _)| {
            *t >= started
                .saturating_sub(jiff::SignedDuration::from_secs(1))
                .unwrap()
        })
        .collect();
    restarts.sort();
    assert_eq!(restarts.len(), 3, "every member restarted: {restarts:?}");
    let per_member: Vec<String> = restarts
        .iter()
        .enumerate()
        .map(|(i, (t, pod))| {
            let next = restarts.get(i + 1).map_or(ended, |n| n.0);
            format!("{pod} {:.0} s", (next - *t).get_seconds())
        })
        .collect();
    let (failed, stall) = writer_log(ns).during(w0, w1);
    eprintln!(
        "BENCH {from} → {to}: {secs:.0} s in all (snapshot included); per member: {}; writer: {failed} failed writes, longest stall {stall:.1} s",
        per_member.join(", ")
    );
}

/// Every member runs `server` and reports cluster version `cluster`; so does status.
fn assert_versions(ns: &str, server: &str, cluster: &str) {
    for pod in ["demo-0", "demo-1", "demo-2"] {
        eventually(
            &format!("{pod} on {server}, cluster version {cluster}"),
            Duration::from_secs(30),
            || (versions(ns, pod) == (server.into(), cluster.into())).then_some(()),
        );
    }
    // What a pass reads from the members now (`status` observes without writing).
    eventually(
        &format!("status.clusterVersion {cluster}"),
        Duration::from_secs(30),
        || {
            let st = json(&ok(etcd(ns, &["status", "demo", "-o", "json"])));
            (st["status"]["clusterVersion"] == cluster && st["status"]["version"] == server)
                .then_some(())
        },
    );
}

/// (server version, cluster version) member `pod` reports on /version (plain http through the
/// API server's pod proxy: the clusters of this file are created with `--insecure`).
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

/// `r`, an upgrade from 3.5.16, was rolled back: exit 7 saying so, `Upgrading` False with reason
/// RolledBack and a message containing `says`, 3 of 3 members ready, each back on 3.5.16.
/// Returns the cluster as stored.
fn assert_rolled_back_to_3_5_16(ns: &str, r: &Run, says: &str) -> serde_json::Value {
    assert_eq!(
        r.code, 7,
        "a rolled-back upgrade fails: {}\n{}",
        r.stdout, r.stderr
    );
    assert!(r.stderr.contains("rolled back to 3.5.16"), "{}", r.stderr);
    let (status, reason, message) = upgrading_condition(ns);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "RolledBack"),
        "{message}"
    );
    assert!(message.contains(says), "{says}: {message}");
    let c = cluster_json(ns, "demo");
    assert_eq!(ready_members(&c["status"]), (3, 3, 3), "{c}");
    for pod in ["demo-0", "demo-1", "demo-2"] {
        assert_eq!(versions(ns, pod).0, "3.5.16", "{pod}");
    }
    c
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
fn three_four_to_three_five_to_three_six_to_three_seven_rolls_one_member_at_a_time_and_loses_no_write()
 {
    install_crd();
    let ns = Ns::new("upgrade-34-36");
    create(&ns.0, "3.4.23");
    // etcd decides the cluster version a few seconds after the members start.
    assert_versions(&ns.0, "3.4.23", "3.4.0");
    assert_integrity_flags(
        &ns.0,
        &[
            "--experimental-initial-corrupt-check=true",
            "--experimental-corrupt-check-time=10m",
        ],
        "compact-hash",
    );

    // Refused paths: exit 2, nothing written.
    assert_refused(
        &ns.0,
        &["--version", "3.6.15", "--to", "file:///tmp"],
        "one minor at a time",
    );
    assert_refused(&ns.0, &["--version", "3.9.0"], "not supported");
    assert_refused(&ns.0, &["--version", "banana"], "not an etcd release");
    assert_refused(&ns.0, &["--version", "3.5.35"], "spec.backup.destination");

    let dir = tempfile::tempdir().unwrap();
    let to = format!("file://{}", dir.path().display());
    let plan = ok(etcd(
        &ns.0,
        &[
            "upgrade",
            "demo",
            "--version",
            "3.5.35",
            "--to",
            &to,
            "--dry-run",
        ],
    ));
    let text = format!("{}{}", plan.stdout, plan.stderr);
    assert!(text.contains("3.4.23 → 3.5.35"), "{text}");
    assert!(
        text.contains("leader: leadership moves off it first"),
        "{text}"
    );
    assert_eq!(spec_version(&ns.0), "3.4.23", "a dry run writes nothing");

    start_writer(&ns.0);
    timed_upgrade(&ns.0, "3.5.35", &["--to", &to, "--timeout", "8m"]);
    // The cluster version moves once the leader saw every member on 3.5 (a few seconds).
    // `upgrade` returns once the cluster version moved, and the stored status says so.
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(c["status"]["clusterVersion"], "3.5.0", "{c}");
    assert_versions(&ns.0, "3.5.35", "3.5.0");
    assert_eq!(c["status"]["upgrade"]["state"], "Upgraded", "{c}");
    assert_eq!(c["status"]["upgrade"]["fromVersion"], "3.4.23", "{c}");
    assert_integrity_flags(
        &ns.0,
        &[
            "--experimental-initial-corrupt-check=true",
            "--experimental-corrupt-check-time=10m",
            "--experimental-compact-hash-check-enabled=true",
            "--experimental-stop-grpc-service-on-defrag=true",
        ],
        "feature-gates",
    );
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
    // Going back to 3.4 after the cluster version moved is refused: 3.4.23 has no
    // --next-cluster-version-compatible.
    assert_refused(
        &ns.0,
        &["--version", "3.4.23", "--to", &to],
        "--next-cluster-version-compatible",
    );

    timed_upgrade(&ns.0, "3.6.15", &["--to", &to, "--timeout", "8m"]);
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(c["status"]["clusterVersion"], "3.6.0", "{c}");
    assert_versions(&ns.0, "3.6.15", "3.6.0");
    assert_eq!(c["status"]["upgrade"]["state"], "Upgraded", "{c}");
    assert_eq!(c["status"]["upgrade"]["fromVersion"], "3.5.35", "{c}");
    assert_integrity_flags(
        &ns.0,
        &[
            "--feature-gates=CompactHashCheck=true,InitialCorruptCheck=true,StopGRPCServiceOnDefrag=true",
            "--corrupt-check-time=10m",
        ],
        "experimental-",
    );

    // A cluster born on 3.4 goes on to 3.7 (3.6.15 is above the 3.6.11 that 3.6 → 3.7 needs).
    timed_upgrade(&ns.0, "3.7.3", &["--to", &to, "--timeout", "8m"]);
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(c["status"]["clusterVersion"], "3.7.0", "{c}");
    assert_versions(&ns.0, "3.7.3", "3.7.0");
    assert_eq!(c["status"]["upgrade"]["state"], "Upgraded", "{c}");
    assert_eq!(c["status"]["upgrade"]["fromVersion"], "3.6.15", "{c}");
    assert_integrity_flags(
        &ns.0,
        &[
            "--feature-gates=CompactHashCheck=true,InitialCorruptCheck=true,StopGRPCServiceOnDefrag=true",
            "--corrupt-check-time=10m",
        ],
        "experimental-",
    );
    assert!(assert_no_acknowledged_write_lost(&ns.0) > 0);
}

#[test]
fn three_six_to_three_seven_and_back_to_three_six_loses_no_write() {
    install_crd();
    let ns = Ns::new("upgrade-36-37");
    create(&ns.0, "3.6.16");
    assert_versions(&ns.0, "3.6.16", "3.6.0");
    // Each image carries the client tools of its own release.
    let tools = ok(kubectl(&[
        "-n",
        &ns.0,
        "exec",
        "demo-0",
        "--",
        "sh",
        "-c",
        "etcdctl version; etcdutl version",
    ]));
    assert!(
        tools.stdout.contains("etcdctl version: 3.6.16")
            && tools.stdout.contains("etcdutl version: 3.6.16"),
        "{}",
        tools.stdout
    );
    let dir = tempfile::tempdir().unwrap();
    let to = format!("file://{}", dir.path().display());
    let plan = ok(etcd(
        &ns.0,
        &[
            "upgrade",
            "demo",
            "--version",
            "3.7.3",
            "--to",
            &to,
            "--dry-run",
        ],
    ));
    let text = format!("{}{}", plan.stdout, plan.stderr);
    assert!(text.contains("3.6.16 → 3.7.3 (one minor up)"), "{text}");

    start_writer(&ns.0);
    timed_upgrade(&ns.0, "3.7.3", &["--to", &to, "--timeout", "8m"]);
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(c["status"]["clusterVersion"], "3.7.0", "{c}");
    assert_versions(&ns.0, "3.7.3", "3.7.0");
    assert_eq!(c["status"]["upgrade"]["state"], "Upgraded", "{c}");
    assert_eq!(c["status"]["upgrade"]["fromVersion"], "3.6.16", "{c}");
    let tools = ok(kubectl(&[
        "-n", &ns.0, "exec", "demo-0", "--", "etcdctl", "version",
    ]));
    assert!(
        tools.stdout.contains("etcdctl version: 3.7.3"),
        "{}",
        tools.stdout
    );
    assert_refused(
        &ns.0,
        &["--version", "3.5.35", "--skip-backup", "--yes"],
        "one minor at a time",
    );

    let plan = ok(etcd(
        &ns.0,
        &[
            "upgrade",
            "demo",
            "--version",
            "3.6.16",
            "--skip-backup",
            "--yes",
            "--dry-run",
        ],
    ));
    let text = format!("{}{}", plan.stdout, plan.stderr);
    assert!(
        text.contains("etcd's downgrade validate + enable 3.6"),
        "{text}"
    );
    timed_upgrade(
        &ns.0,
        "3.6.16",
        &["--skip-backup", "--yes", "--timeout", "8m"],
    );
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(c["status"]["clusterVersion"], "3.6.0", "{c}");
    assert_versions(&ns.0, "3.6.16", "3.6.0");
    assert_eq!(c["status"]["upgrade"]["state"], "Upgraded", "{c}");
    assert_eq!(c["status"]["upgrade"]["fromVersion"], "3.7.3", "{c}");
    assert!(assert_no_acknowledged_write_lost(&ns.0) > 0);
}

#[test]
fn three_five_below_the_minimum_patch_is_refused_three_six() {
    install_crd();
    let ns = Ns::new("upgrade-35-min");
    create_replicas(&ns.0, "3.5.16", "1");
    eventually("member version 3.5.16", Duration::from_secs(60), || {
        (versions(&ns.0, "demo-0").0 == "3.5.16").then_some(())
    });
    assert_refused(
        &ns.0,
        &["--version", "3.6.15", "--to", "file:///tmp"],
        "upgrade to 3.5.26 first",
    );
}

#[test]
fn three_six_goes_down_to_three_five_through_etcds_downgrade_api_with_writes_going_on() {
    install_crd();
    let ns = Ns::new("upgrade-downgrade");
    create(&ns.0, "3.6.15");
    assert_versions(&ns.0, "3.6.15", "3.6.0");
    assert_refused(
        &ns.0,
        &["--version", "3.5.16", "--skip-backup", "--yes"],
        "3.5.26 or later",
    );
    let plan = ok(etcd(
        &ns.0,
        &[
            "upgrade",
            "demo",
            "--version",
            "3.5.35",
            "--skip-backup",
            "--yes",
            "--dry-run",
        ],
    ));
    let text = format!("{}{}", plan.stdout, plan.stderr);
    assert!(
        text.contains("etcd's downgrade validate + enable 3.5"),
        "{text}"
    );
    start_writer(&ns.0);
    timed_upgrade(
        &ns.0,
        "3.5.35",
        &["--skip-backup", "--yes", "--timeout", "8m"],
    );
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(c["status"]["clusterVersion"], "3.5.0", "{c}");
    assert_versions(&ns.0, "3.5.35", "3.5.0");
    assert_eq!(c["status"]["upgrade"]["state"], "Upgraded", "{c}");
    assert_eq!(c["status"]["upgrade"]["fromVersion"], "3.6.15", "{c}");
    assert!(assert_no_acknowledged_write_lost(&ns.0) > 0);
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
    let c = assert_rolled_back_to_3_5_16(&ns.0, &r, "did not become healthy on 3.5.99");
    assert_eq!(c["status"]["upgrade"]["skipBackup"], true, "{c}");
    assert!(assert_no_acknowledged_write_lost(&ns.0) > 0);
}

#[test]
fn a_version_whose_image_does_not_exist_is_detected_and_rolled_back() {
    install_crd();
    let ns = Ns::new("upgrade-noimage");
    // No image gcr.io/etcd-development/etcd:v3.5.98 exists (the testbed has no registry access
    // at all): the kubelet reports ErrImagePull/ImagePullBackOff for the upgraded member. The
    // default deadline (300 s) is kept: the pull failure is detected after the 60 s pull grace.
    create(&ns.0, "3.5.16");
    start_writer(&ns.0);
    let t0 = std::time::Instant::now();
    let r = etcd(
        &ns.0,
        &[
            "upgrade",
            "demo",
            "--version",
            "3.5.98",
            "--skip-backup",
            "--yes",
            "--timeout",
            "5m",
        ],
    );
    eprintln!(
        "BENCH missing image: rolled back after {:.0} s",
        t0.elapsed().as_secs_f64()
    );
    // The reason names the image.
    assert_rolled_back_to_3_5_16(&ns.0, &r, "etcd:v3.5.98 cannot be pulled");
    assert!(assert_no_acknowledged_write_lost(&ns.0) > 0);
    // A fixed version afterwards goes ahead from what runs (the writer has stopped: no BENCH).
    ok(etcd(
        &ns.0,
        &[
            "upgrade",
            "demo",
            "--version",
            "3.5.35",
            "--skip-backup",
            "--yes",
            "--timeout",
            "5m",
        ],
    ));
    assert_versions(&ns.0, "3.5.35", "3.5.0");
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(c["status"]["upgrade"]["state"], "Upgraded", "{c}");
    assert_eq!(c["status"]["upgrade"]["fromVersion"], "3.5.16", "{c}");
}

/// `kubectl etcd operate` watching one namespace, from this machine (port-forward dial); killed on drop.
struct LocalOperator(std::process::Child);
impl Drop for LocalOperator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_version_applied_with_the_operator_takes_the_pre_upgrade_snapshot_first() {
    install_crd();
    let ns = Ns::new("upgrade-operator");
    let endpoint = std::env::var("KE_S3_POD_ENDPOINT")
        .expect("KE_S3_POD_ENDPOINT is not set: source /tmp/tb/s3.env (tests/run-all.sh does)");
    let bucket = std::env::var("KE_S3_BUCKET").expect("KE_S3_BUCKET is not set (/tmp/tb/s3.env)");
    let _ = kubectl(&["create", "namespace", "kubectl-etcd-system"]);
    ok(kubectl(&[
        "-n",
        &ns.0,
        "create",
        "secret",
        "generic",
        "s3-creds",
        &format!(
            "--from-literal=AWS_ACCESS_KEY_ID={}",
            std::env::var("AWS_ACCESS_KEY_ID").unwrap()
        ),
        &format!(
            "--from-literal=AWS_SECRET_ACCESS_KEY={}",
            std::env::var("AWS_SECRET_ACCESS_KEY").unwrap()
        ),
        &format!("--from-literal=AWS_ENDPOINT_URL={endpoint}"),
    ]));
    let prefix = format!("s3://{bucket}/e2e/{}/pre-upgrade", ns.0);
    let manifest = |version: &str| {
        format!(
            r#"{{"apiVersion":"etcd.kubectl-etcd.io/v1alpha1","kind":"EtcdCluster","metadata":{{"name":"demo","namespace":"{ns}"}},
"spec":{{"replicas":1,"version":"{version}","backup":{{"destination":"{prefix}","credentialsSecret":"s3-creds"}}}}}}"#,
            ns = ns.0
        )
    };
    ok(kubectl_stdin(&["apply", "-f", "-"], &manifest("3.5.16")));
    let _op = LocalOperator(
        kubectl_cmd(&[
            "etcd",
            "operate",
            "--watch-namespace",
            &ns.0,
            "--metrics-addr",
            "127.0.0.1:0",
            "--dial",
            "port-forward",
            "--identity",
            &format!("operator/e2e-{}", ns.0),
            // The testbed's S3 (the Secret's AWS_ENDPOINT_URL): not AWS, so listed.
            "--s3-endpoint-allow",
            &endpoint,
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap(),
    );
    eventually("demo-0 on 3.5.16", Duration::from_secs(180), || {
        (cluster_json(&ns.0, "demo")["status"]["version"] == "3.5.16").then_some(())
    });
    // A plain apply of spec.version: no annotation, no CLI.
    ok(kubectl_stdin(&["apply", "-f", "-"], &manifest("3.5.35")));
    let c = eventually("Upgraded to 3.5.35", Duration::from_secs(240), || {
        let c = cluster_json(&ns.0, "demo");
        (c["status"]["upgrade"]["state"] == "Upgraded" && c["status"]["version"] == "3.5.35")
            .then_some(c)
    });
    let backup = c["status"]["upgrade"]["backup"].as_str().unwrap_or("");
    assert!(
        backup.starts_with(&prefix),
        "the operator took the pre-upgrade snapshot: {c}"
    );
    let records = json(&ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "etcdbackups",
        "-l",
        "etcd.kubectl-etcd.io/trigger=upgrade",
        "-o",
        "json",
    ])));
    let rec = &records["items"][0];
    assert_eq!(rec["status"]["url"], backup, "{records}");
    assert_eq!(rec["status"]["verified"], true, "{records}");
}

#[test]
fn three_four_to_three_five_is_refused_while_auth_is_enabled() {
    install_crd();
    let ns = Ns::new("upgrade-auth");
    ok(etcd(
        &ns.0,
        &[
            "create",
            "demo",
            "--insecure",
            "--replicas",
            "1",
            "--version",
            "3.4.23",
            "--timeout",
            "4m",
        ],
    ));
    ok(etcdctl(
        &ns.0,
        "demo-0",
        &["user", "add", "root:e2e-root-pw"],
    ));
    ok(etcdctl(&ns.0, "demo-0", &["auth", "enable"]));
    assert_refused(
        &ns.0,
        &["--version", "3.5.35", "--skip-backup", "--yes"],
        "no 3.4 → 3.5 while auth is enabled",
    );
}

/// Every member runs the integrity checks `create` writes on, under its version's flag names
/// (`want`), and none of another version's.
fn assert_integrity_flags(ns: &str, want: &[&str], not: &str) {
    for pod in ["demo-0", "demo-1", "demo-2"] {
        let cmd = member_command(ns, pod);
        for f in want {
            assert!(cmd.contains(f), "{pod}: {f} in {cmd}");
        }
        assert!(!cmd.contains(not), "{pod}: no {not} in {cmd}");
    }
}

/// The pod's command line (etcd's flags).
fn member_command(ns: &str, pod: &str) -> String {
    pod_field(ns, pod, "{.spec.containers[0].command}")
}

fn patch_spec(ns: &str, patch: &str) {
    ok(kubectl(&[
        "-n",
        ns,
        "patch",
        "etcdcluster",
        "demo",
        "--type=merge",
        "-p",
        patch,
    ]));
}

/// `spec.etcd.options`, `spec.podMetadata` and `spec.priorityClassName` reach the members; an
/// options change rolls them one at a time with writes going on; a flag etcd does not know stops
/// the rollout at the first member (named, with etcd's own words) and setting it back repairs it.
#[test]
fn etcd_options_roll_out_one_member_at_a_time_and_an_unknown_flag_stops_at_the_first() {
    install_crd();
    let ns = Ns::new("options");
    // Bad input on the command line: refused, nothing written.
    for (opt, says) in [
        ("data-dir=/tmp/x", "the engine sets it"),
        ("heartbeat-interval", "has no value"),
        ("--snapshot-count=5", "without its dashes"),
    ] {
        let r = etcd(&ns.0, &["create", "demo", &format!("--etcd-option={opt}")]);
        assert_eq!(r.code, 2, "{opt}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{opt}: {}", r.stderr);
    }
    assert_ne!(
        kubectl(&["-n", &ns.0, "get", "etcdcluster", "demo"]).code,
        0,
        "a refused create wrote the cluster"
    );
    let class = format!("e2e-{}", ns.0);
    ok(kubectl(&[
        "create",
        "priorityclass",
        &class,
        "--value=1000",
    ]));
    ok(kubectl_stdin(
        &["-n", &ns.0, "apply", "-f", "-"],
        &format!(
            r#"{{"apiVersion":"etcd.kubectl-etcd.io/v1alpha1","kind":"EtcdCluster","metadata":{{"name":"demo"}},
"spec":{{"replicas":3,"version":"3.5.35","priorityClassName":"{class}",
"podMetadata":{{"labels":{{"team":"db"}},"annotations":{{"example.com/scrape":"true"}}}},
"etcd":{{"options":{{"heartbeat-interval":"150","election-timeout":"1500"}}}}}}}}"#
        ),
    ));
    let st = json(&ok(etcd(
        &ns.0,
        &["reconcile", "demo", "--timeout", "4m", "-o", "json"],
    )));
    assert_eq!(ready_members(&st["status"]), (3, 3, 3), "{st}");
    for i in 0..3 {
        let pod = format!("demo-{i}");
        let cmd = member_command(&ns.0, &pod);
        assert!(
            cmd.contains("--heartbeat-interval=150") && cmd.contains("--election-timeout=1500"),
            "{pod}: {cmd}"
        );
        let meta = json(&ok(kubectl(&[
            "-n", &ns.0, "get", "pod", &pod, "-o", "json",
        ])));
        assert_eq!(meta["metadata"]["labels"]["team"], "db", "{meta}");
        assert_eq!(
            meta["metadata"]["labels"]["app.kubernetes.io/instance"],
            "demo"
        );
        assert_eq!(
            meta["metadata"]["annotations"]["example.com/scrape"],
            "true"
        );
        assert_eq!(meta["spec"]["priorityClassName"], class.as_str());
    }

    start_writer(&ns.0);
    patch_spec(
        &ns.0,
        r#"{"spec":{"etcd":{"options":{"heartbeat-interval":"200"}}}}"#,
    );
    let rolled = ok(etcd(
        &ns.0,
        &["reconcile", "demo", "--timeout", "5m", "-o", "json"],
    ));
    let st = json(&rolled);
    assert_eq!(ready_members(&st["status"]), (3, 3, 3), "{st}");
    assert_eq!(
        rolled.stderr.matches("with the new template").count(),
        3,
        "one restart per member: {}",
        rolled.stderr
    );
    for i in 0..3 {
        let cmd = member_command(&ns.0, &format!("demo-{i}"));
        assert!(cmd.contains("--heartbeat-interval=200"), "demo-{i}: {cmd}");
    }

    // A typo: the first restarted member exits at start; the rollout goes no further.
    patch_spec(
        &ns.0,
        r#"{"spec":{"etcd":{"options":{"hearbeat-interval":"200"}}}}"#,
    );
    let stuck = etcd(&ns.0, &["reconcile", "demo", "--timeout", "100s"]);
    assert_eq!(stuck.code, 4, "{}", stuck.stderr);
    assert!(
        stuck
            .stderr
            .contains("demo-2 does not start on the new template")
            && stuck.stderr.contains("hearbeat-interval"),
        "{}",
        stuck.stderr
    );
    for i in 0..2 {
        let cmd = member_command(&ns.0, &format!("demo-{i}"));
        assert!(!cmd.contains("hearbeat"), "demo-{i} was restarted: {cmd}");
    }
    let healthy = cluster_json(&ns.0, "demo");
    assert_eq!(
        ready_members(&healthy["status"]).2,
        2,
        "two members serve: {healthy}"
    );
    // Set back: the broken member comes back on the previous template.
    patch_spec(
        &ns.0,
        r#"{"spec":{"etcd":{"options":{"hearbeat-interval":null}}}}"#,
    );
    let back = json(&ok(etcd(
        &ns.0,
        &["reconcile", "demo", "--timeout", "4m", "-o", "json"],
    )));
    assert_eq!(ready_members(&back["status"]), (3, 3, 3), "{back}");
    assert!(!member_command(&ns.0, "demo-2").contains("hearbeat"));
    assert!(assert_no_acknowledged_write_lost(&ns.0) > 0);
    let _ = kubectl(&["delete", "priorityclass", &class]);
}

/// Issue 43 R4: a one-member cluster upgraded to a version with no image (3.7.93). Its only pod
/// sits in ImagePullBackOff on the new revision and no member answers; the rollback replaces
/// that pod on the old template (the StatefulSet's OnDelete updates never would), and status
/// says RolledBack only once the pod runs 3.6.15 again. A writer runs throughout: every write
/// acknowledged before is there after.
#[test]
fn a_one_member_upgrade_to_a_missing_image_is_rolled_back_onto_its_pod() {
    install_crd();
    let ns = Ns::new("upgrade-one");
    create_replicas(&ns.0, "3.6.15", "1");
    start_writer(&ns.0);
    let t0 = std::time::Instant::now();
    let r = etcd(
        &ns.0,
        &[
            "upgrade",
            "demo",
            "--version",
            "3.7.93",
            "--skip-backup",
            "--yes",
            "--timeout",
            "6m",
        ],
    );
    eprintln!(
        "one member, missing image: upgrade returned after {:.0} s",
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(r.code, 7, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("rolled back to 3.6.15"), "{}", r.stderr);
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(c["status"]["upgrade"]["state"], "RolledBack", "{c}");
    assert!(
        c["status"]["upgrade"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("etcd:v3.7.93 cannot be pulled"),
        "{c}"
    );
    let (status, reason, message) = upgrading_condition(&ns.0);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "RolledBack"),
        "{message}"
    );
    assert_eq!(ready_members(&c["status"]), (1, 1, 1), "{c}");
    let image = ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "pod",
        "demo-0",
        "-o",
        "jsonpath={.spec.containers[0].image}",
    ]))
    .stdout;
    assert!(image.ends_with(":v3.6.15"), "demo-0 runs {image}");
    assert_eq!(versions(&ns.0, "demo-0").0, "3.6.15");
    assert!(assert_no_acknowledged_write_lost(&ns.0) > 0);
}

/// Issue 43 R4, waking after a bad `spec.imageRepository`: every member pod is made on an image
/// that cannot be pulled, so no member runs and none answers. Setting the field back must reach
/// those pods (the StatefulSet's OnDelete updates never replace them): each is replaced, and the
/// members come back on their data with every acknowledged write.
#[test]
fn members_woken_on_an_image_that_cannot_be_pulled_come_back_once_the_spec_is_set_back() {
    install_crd();
    let ns = Ns::new("upgrade-wake-bad");
    create(&ns.0, "3.6.15");
    start_writer(&ns.0);
    ok(etcd(
        &ns.0,
        &[
            "hibernate",
            "demo",
            "--no-snapshot",
            "--yes",
            "--timeout",
            "3m",
        ],
    ));
    patch_spec(
        &ns.0,
        r#"{"spec":{"imageRepository":"registry.invalid/etcd"}}"#,
    );
    let woken = etcd(&ns.0, &["wake", "demo", "--timeout", "90s"]);
    assert_ne!(woken.code, 0, "woken on an image that cannot be pulled");
    eventually(
        "every member pod fails to pull its image",
        Duration::from_secs(120),
        || {
            let r = ok(kubectl(&[
                "-n",
                &ns.0,
                "get",
                "pods",
                "-l",
                "app.kubernetes.io/instance=demo",
                "-o",
                "jsonpath={range .items[*]}{.status.containerStatuses[0].state.waiting.reason} {end}",
            ]));
            let reasons: Vec<&str> = r.stdout.split_whitespace().collect();
            (reasons.len() == 3
                && reasons
                    .iter()
                    .all(|r| *r == "ErrImagePull" || *r == "ImagePullBackOff"))
            .then_some(())
        },
    );
    patch_spec(&ns.0, r#"{"spec":{"imageRepository":null}}"#);
    let t0 = std::time::Instant::now();
    let st = json(&ok(etcd(
        &ns.0,
        &["reconcile", "demo", "--timeout", "5m", "-o", "json"],
    )));
    eprintln!(
        "every member back on its data {} s after the spec was set back",
        t0.elapsed().as_secs()
    );
    assert_eq!(ready_members(&st["status"]), (3, 3, 3), "{st}");
    for pod in ["demo-0", "demo-1", "demo-2"] {
        assert_eq!(versions(&ns.0, pod).0, "3.6.15", "{pod}");
    }
    assert!(assert_no_acknowledged_write_lost(&ns.0) > 0);
}
