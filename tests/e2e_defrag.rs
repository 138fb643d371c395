//! End-to-end: defragmentation carried out by the in-cluster operator (its image from
//! `KE_OPERATOR_IMAGE`, built by tests/cluster/images.sh), with a writer running: `kubectl etcd
//! defrag` records its request and defers to the operator holding the cluster's Lease, and a
//! defragmentation policy acts by itself; every acknowledged key is read back.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::*;

/// `w-<n>` keys put through demo-0..2 in turn, about two a second; the acknowledged ones kept.
struct Writer {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<(u64, Vec<String>)>,
}

impl Writer {
    fn start(ns: &str) -> Writer {
        let stop = Arc::new(AtomicBool::new(false));
        let (ns, flag) = (ns.to_string(), stop.clone());
        let handle = std::thread::spawn(move || {
            let (mut written, mut acked) = (0u64, Vec::new());
            while !flag.load(Ordering::Relaxed) {
                let key = format!("w-{written:06}");
                let pod = format!("demo-{}", written % 3);
                written += 1;
                let r = etcdctl(&ns, &pod, &["--command-timeout=5s", "put", &key, "v"]);
                if r.code == 0 && r.stdout.contains("OK") {
                    acked.push(key);
                }
                std::thread::sleep(Duration::from_millis(400));
            }
            (written, acked)
        });
        Writer { stop, handle }
    }

    fn stop(self) -> (u64, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("the writer thread")
    }
}

fn events(ns: &str) -> Vec<(String, String)> {
    let ev = ok(kubectl(&["-n", ns, "get", "events", "-o", "json"]));
    json(&ev)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["reason"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn the_operator_defragments_on_request_and_by_policy_with_a_writer_and_loses_no_key() {
    let image = std::env::var("KE_OPERATOR_IMAGE")
        .expect("KE_OPERATOR_IMAGE is not set: build one with tests/cluster/images.sh operator");
    ok(kubectl(&[
        "etcd",
        "install",
        "--operator",
        "--image",
        &image,
    ]));
    let _op = Operator;
    ok(kubectl(&[
        "-n",
        OP_NS,
        "rollout",
        "status",
        "deployment/kubectl-etcd-operator",
        "--timeout=180s",
    ]));
    let ns = Ns::new("defrag-op");
    let manifest = format!(
        "apiVersion: etcd.kubectl-etcd.io/v1alpha1\nkind: EtcdCluster\nmetadata:\n  name: demo\n  namespace: {}\nspec:\n  replicas: 3\n  version: \"3.6.15\"\n",
        ns.0
    );
    ok(kubectl_stdin(&["apply", "-f", "-"], &manifest));
    eventually(
        "the operator to bring up 3 healthy members",
        Duration::from_secs(300),
        || {
            let c = cluster_json(&ns.0, "demo");
            let st = &c["status"];
            (st["observedGeneration"] == c["metadata"]["generation"]
                && st["phase"] == "Running"
                && ready_members(st) == (3, 3, 3))
                .then_some(())
        },
    );
    fragment(&ns.0, 16).unwrap();
    let writer = Writer::start(&ns.0);

    // On request: the verb writes its intent and waits on the operator's status.
    let r = ok(etcd(
        &ns.0,
        &[
            "defrag",
            "demo",
            "--compact",
            "--timeout",
            "5m",
            "-o",
            "json",
        ],
    ));
    assert!(
        r.stderr.contains("holds the engine lease"),
        "the verb must defer to the operator: {}",
        r.stderr
    );
    let report = json(&r);
    let members = report["members"].as_array().unwrap();
    assert_eq!(members.len(), 3, "{report}");
    assert_eq!(members[2]["leader"], true, "the leader last: {report}");
    for m in members {
        assert!(
            m["dbSizeAfter"].as_i64() < m["dbSizeBefore"].as_i64(),
            "{m}"
        );
    }
    let st = cluster_json(&ns.0, "demo")["status"]["maintenance"]["defrag"].clone();
    assert_eq!(st["done"], true, "{st}");
    assert_eq!(st["nonce"], report["nonce"], "{st}");
    // The operator said so (Events of one reason are aggregated into one series).
    let ev = events(&ns.0);
    assert!(
        ev.iter()
            .any(|(r, m)| r == "Defragmenting" && m.contains("requested")),
        "{ev:?}"
    );

    // By policy: fragmented again, the operator defragments by itself (nobody runs a verb).
    ok(patch_demo(
        &ns.0,
        r#"{"spec":{"maintenance":{"defrag":{"policy":{"fragmentedPercent":45,"minReclaimMiB":2}}}}}"#,
    ));
    fragment(&ns.0, 16).unwrap();
    let sizes = |c: &serde_json::Value| -> Vec<i64> {
        c["status"]["members"]
            .as_array()
            .map(|ms| ms.iter().filter_map(|m| m["dbSize"].as_i64()).collect())
            .unwrap_or_default()
    };
    eventually(
        "the files to grow with the history",
        // The operator's next look (at most a minute after the last), beside a writer.
        Duration::from_secs(90),
        || {
            (sizes(&cluster_json(&ns.0, "demo"))
                .iter()
                .any(|s| *s > 6 << 20))
            .then_some(())
        },
    );
    eventually(
        "the policy to defragment every member",
        Duration::from_secs(180),
        || {
            let s = sizes(&cluster_json(&ns.0, "demo"));
            (s.len() == 3 && s.iter().all(|s| *s < 4 << 20)).then_some(())
        },
    );
    let (written, acked) = writer.stop();
    assert!(
        acked.len() > 10,
        "the writer got through: {written} written"
    );

    // Every acknowledged key is served.
    let got = ok(etcdctl(
        &ns.0,
        "demo-1",
        &["get", "--prefix", "w-", "--keys-only"],
    ));
    let have: std::collections::BTreeSet<&str> =
        got.stdout.lines().filter(|l| !l.is_empty()).collect();
    let lost: Vec<&String> = acked
        .iter()
        .filter(|k| !have.contains(k.as_str()))
        .collect();
    assert!(
        lost.is_empty(),
        "acknowledged keys lost: {lost:?} of {}",
        acked.len()
    );
    eprintln!(
        "defrag e2e: {written} written, {} acknowledged, all read back",
        acked.len()
    );
}
