//! End-to-end: storage changes and hibernation of a running cluster on the testbed.
//!
//! - `kubectl etcd scale demo --storage-class standard-b`, then `--storage 2Gi`, with a writer
//!   going: the StatefulSet is re-created with the new claim template (its pods keep running),
//!   then each member moves to a new volume one at a time (the testbed's in-tree hostPath
//!   provisioner cannot expand a volume, so growing takes the same swap path as a class change);
//!   status is sampled throughout and never shows fewer healthy voters than a quorum; every
//!   acknowledged key is read back. Shrinking is refused by the verb and by the API server.
//! - `kubectl etcd hibernate demo` → `wake demo`: no pod while hibernated, the volumes kept,
//!   phase Hibernated in `status -A`; awake, the same cluster id and every key.
#![cfg(feature = "e2e")]

mod common;

use common::writer::*;
use common::*;

fn create(ns: &str) {
    ok(etcd(
        ns,
        &["create", "demo", "--replicas", "3", "--timeout", "5m"],
    ));
}

/// Each member volume of `demo`: (claim, class, requested size).
fn volumes(ns: &str) -> Vec<(String, String, String)> {
    let r = ok(kubectl(&[
        "-n",
        ns,
        "get",
        "pvc",
        "-l",
        "app.kubernetes.io/instance=demo",
        "-o",
        "json",
    ]));
    let mut v: Vec<(String, String, String)> = json(&r)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["metadata"]["name"].as_str().unwrap_or("").to_string(),
                c["spec"]["storageClassName"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                c["spec"]["resources"]["requests"]["storage"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

fn member_ids(ns: &str) -> Vec<String> {
    let c = cluster_json(ns, "demo");
    let mut ids: Vec<String> = c["status"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap_or("").to_string())
        .collect();
    ids.sort();
    ids
}

/// Runs `run` while sampling the status every second; panics on a sample with fewer healthy
/// voters than the quorum of that sample's voters. Gives `run`'s result and the sample count.
fn never_below_quorum<T>(ns: &str, run: impl FnOnce() -> T) -> (T, usize) {
    let sampler = QuorumSampler::start(ns);
    let out = run();
    match sampler.stop() {
        Ok(samples) => (out, samples),
        Err(bad) => panic!("below quorum during the change: {bad:#?}"),
    }
}

/// Shrinking is refused; the dry runs name the path and write nothing.
fn refusals_and_dry_runs(ns: &str) {
    // Shrinking is refused before anything is written, and by the API server itself.
    let r = etcd(ns, &["scale", "demo", "--storage", "512Mi"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("cannot shrink"), "{}", r.stderr);
    if cel_admission() {
        let r = patch_demo(ns, r#"{"spec":{"storage":{"size":"512Mi"}}}"#);
        assert!(
            r.code != 0 && r.stderr.contains("spec.storage.size cannot shrink"),
            "{}",
            r.stderr
        );
    }
    // The dry run names the path and writes nothing.
    let plan = ok(etcd(
        ns,
        &[
            "scale",
            "demo",
            "--storage-class",
            "standard-b",
            "--dry-run",
        ],
    ));
    let text = format!("{}{}", plan.stdout, plan.stderr);
    assert!(
        text.contains("re-create the StatefulSet") && text.contains("one at a time"),
        "{text}"
    );
    let plan = ok(etcd(
        ns,
        &["scale", "demo", "--storage", "2Gi", "--dry-run"],
    ));
    let text = format!("{}{}", plan.stdout, plan.stderr);
    assert!(
        text.contains("one at a time"),
        "no expansion on the testbed: {text}"
    );
    assert!(
        volumes(ns)
            .iter()
            .all(|(_, class, size)| class == "standard" && size == "1Gi")
    );
}

#[test]
fn storage_moves_to_another_class_and_grows_one_member_at_a_time_with_a_writer() {
    install_crd();
    ok(kubectl_stdin(&["apply", "-f", "-"], CLASS_B));
    let ns = Ns::new("storage");
    create(&ns.0);
    let cluster_id = cluster_json(&ns.0, "demo")["status"]["clusterId"].clone();
    let before = member_ids(&ns.0);

    refusals_and_dry_runs(&ns.0);

    start_writer(&ns.0);
    let t0 = std::time::Instant::now();
    let (r, samples) = never_below_quorum(&ns.0, || {
        etcd(
            &ns.0,
            &[
                "scale",
                "demo",
                "--storage-class",
                "standard-b",
                "--timeout",
                "12m",
            ],
        )
    });
    ok(r);
    let moved = t0.elapsed().as_secs_f64();
    let v = volumes(&ns.0);
    assert_eq!(v.len(), 3, "{v:?}");
    assert!(v.iter().all(|(_, class, _)| class == "standard-b"), "{v:?}");
    let after = member_ids(&ns.0);
    assert!(
        before.iter().all(|id| !after.contains(id)),
        "every member moved to a new volume: {before:?} → {after:?}"
    );
    assert_eq!(
        cluster_json(&ns.0, "demo")["status"]["clusterId"],
        cluster_id
    );

    let t1 = std::time::Instant::now();
    let (r, more) = never_below_quorum(&ns.0, || {
        etcd(
            &ns.0,
            &["scale", "demo", "--storage", "2Gi", "--timeout", "12m"],
        )
    });
    ok(r);
    let grown = t1.elapsed().as_secs_f64();
    let v = volumes(&ns.0);
    assert!(
        v.iter()
            .all(|(_, class, size)| class == "standard-b" && size == "2Gi"),
        "{v:?}"
    );
    let acked = assert_no_acknowledged_write_lost(&ns.0);
    eprintln!(
        "BENCH storage swap of 3 members: class change {moved:.0} s ({:.0} s per member), \
         1Gi → 2Gi {grown:.0} s; {} status samples, never below quorum; {acked} keys acknowledged, none lost",
        moved / 3.0,
        samples + more
    );
}

#[test]
fn a_hibernated_cluster_wakes_with_its_cluster_id_and_every_key() {
    install_crd();
    let ns = Ns::new("hibernate");
    create(&ns.0);
    for i in 0..100 {
        ok(etcdctl(
            &ns.0,
            "demo-0",
            &["put", &format!("k/{i:03}"), &format!("v{i}")],
        ));
    }
    let digest = keyspace_digest(&ns.0, "demo-0");
    let cluster_id = cluster_json(&ns.0, "demo")["status"]["clusterId"].clone();

    // No snapshot destination: refused, naming the ways; --no-snapshot needs --yes.
    let r = etcd(&ns.0, &["hibernate", "demo"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--no-snapshot --yes"), "{}", r.stderr);
    let r = etcd(&ns.0, &["hibernate", "demo", "--no-snapshot"]);
    assert_eq!(r.code, 2, "{}", r.stderr);

    let dir = tempfile::tempdir().unwrap();
    let to = format!("file://{}", dir.path().display());
    ok(etcd(
        &ns.0,
        &["hibernate", "demo", "--to", &to, "--timeout", "3m"],
    ));
    let snapshots: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        snapshots.iter().any(|f| f.contains(".db")),
        "the verified snapshot before hibernating: {snapshots:?}"
    );
    let pods = ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/instance=demo",
        "-o",
        "name",
    ]));
    assert!(pods.stdout.trim().is_empty(), "pods left: {}", pods.stdout);
    assert_eq!(volumes(&ns.0).len(), 3, "the volumes stay");
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(c["status"]["phase"], "Hibernated", "{c}");
    let all = ok(etcd(&ns.0, &["status", "-A"]));
    assert!(
        all.stdout
            .lines()
            .any(|l| l.contains(&ns.0) && l.contains("Hibernated")),
        "{}",
        all.stdout
    );
    // `status` of a hibernated cluster is no trouble (exit 0).
    ok(etcd(&ns.0, &["status", "demo"]));

    ok(etcd(&ns.0, &["wake", "demo", "--timeout", "5m"]));
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(c["status"]["clusterId"], cluster_id, "{c}");
    assert_eq!(c["status"]["phase"], "Running", "{c}");
    assert_eq!(keyspace_digest(&ns.0, "demo-0"), digest);
    assert_eq!(keyspace_digest(&ns.0, "demo-2"), digest);
}
