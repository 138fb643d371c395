//! End-to-end: the support verbs, `report` (a tar.gz bundle without Secret values, produced
//! with read rights only) and `logs` (every member's log, interleaved and prefixed), against a
//! 3-member cluster on the testbed.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// Unpacks `archive` into `dir`; returns the one top directory's path.
fn untar(archive: &Path, dir: &Path) -> std::path::PathBuf {
    let r = run_cmd(&["tar", "xzf"], {
        let mut c = Command::new("tar");
        c.arg("xzf").arg(archive).arg("-C").arg(dir);
        c
    });
    assert_eq!(r.code, 0, "tar: {}", r.stderr);
    let mut tops: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(tops.len(), 1, "one top directory: {tops:?}");
    tops.pop().unwrap()
}

/// Every file under `dir`, as (path relative to `dir`, bytes).
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Every value of every Secret of the namespace, decoded (and as the API stores it, base64).
fn secret_values(ns: &str) -> Vec<String> {
    let list = json(&ok(kubectl(&["-n", ns, "get", "secrets", "-o", "json"])));
    let mut out = Vec::new();
    for s in list["items"].as_array().unwrap() {
        for (_, v) in s["data"].as_object().into_iter().flatten() {
            let b64 = v.as_str().unwrap().to_string();
            let decoded = ok(run_cmd(&["base64", "-d"], {
                let mut c = Command::new("sh");
                c.arg("-c").arg(format!("printf %s '{b64}' | base64 -d"));
                c
            }));
            out.push(decoded.stdout);
            out.push(b64);
        }
    }
    out.retain(|v| v.len() >= 8);
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn report_and_logs_of_a_three_member_cluster_hold_no_secret_and_work_with_read_rights_only() {
    install_crd();
    let ns = Ns::new("support");
    let password = "report-must-not-show-this-password-7f3a";
    ok(kubectl(&[
        "-n",
        &ns.0,
        "create",
        "secret",
        "generic",
        "demo-user",
        "--type=kubernetes.io/basic-auth",
        "--from-literal=username=root",
        &format!("--from-literal=password={password}"),
    ]));
    ok(kubectl(&[
        "-n",
        &ns.0,
        "create",
        "secret",
        "generic",
        "unrelated",
        "--from-literal=token=an-unrelated-secret-token-value-19",
    ]));
    ok(etcd(
        &ns.0,
        &[
            "create",
            "demo",
            "--replicas",
            "3",
            "--auth-secret",
            "demo-user",
            "--timeout",
            "4m",
        ],
    ));
    let values = secret_values(&ns.0);
    assert!(values.iter().any(|v| v == password), "{values:?}");

    // The report with every right, members' logs included.
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("demo.tar.gz");
    let r = ok(etcd(
        &ns.0,
        &[
            "report",
            "demo",
            "--logs",
            "--since",
            "1h",
            "-f",
            archive.to_str().unwrap(),
            "-o",
            "json",
        ],
    ));
    let index = json(&r);
    eprintln!(
        "report of a 3-member cluster collected in {} s",
        index["collectedInSeconds"]
    );
    assert_eq!(index["file"], archive.to_str().unwrap());
    let unpacked = tmp.path().join("x");
    std::fs::create_dir(&unpacked).unwrap();
    let top = untar(&archive, &unpacked);
    assert_eq!(top.file_name().unwrap(), "demo");
    let all = files(&top);
    let paths: Vec<&str> = all.iter().map(|(p, _)| p.as_str()).collect();
    for want in [
        "REPORT.md",
        "index.json",
        "cluster.yaml",
        "backups.yaml",
        "statefulset.yaml",
        "pods.yaml",
        "pvcs.yaml",
        "services.yaml",
        "configmap.yaml",
        "pdb.yaml",
        "events.yaml",
        "secrets.yaml",
        "status.txt",
        "next-step.txt",
        "members.yaml",
        "engine.json",
        "alarms.yaml",
        "operator/pods.yaml",
        "logs/demo-0.log",
        "logs/demo-1.log",
        "logs/demo-2.log",
    ] {
        assert!(paths.contains(&want), "{want} missing from {paths:?}");
    }
    // index.json lists every file of the archive but itself and REPORT.md.
    let listed: Vec<&str> = index["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    for p in &paths {
        assert!(
            listed.contains(p) || *p == "REPORT.md" || *p == "index.json",
            "{p} not in index.json"
        );
    }
    assert_eq!(index["failed"], serde_json::json!([]), "{index}");
    let text = |name: &str| {
        String::from_utf8_lossy(&all.iter().find(|(p, _)| p == name).unwrap().1).to_string()
    };
    let members = text("members.yaml");
    for m in ["demo-0", "demo-1", "demo-2"] {
        assert!(members.contains(m), "{members}");
    }
    assert_eq!(text("next-step.txt").trim(), "converged");
    let secrets = text("secrets.yaml");
    assert!(
        secrets.contains("demo-user") && secrets.contains("password"),
        "{secrets}"
    );
    assert!(text("logs/demo-1.log").contains("\"msg\""), "raw etcd logs");
    for (path, bytes) in &all {
        for v in &values {
            assert!(!contains(bytes, v), "{path} holds a Secret value");
        }
    }

    // A user who may only read (the `view` role in the namespace): the report is written and
    // lists what could not be read.
    ok(kubectl(&[
        "-n",
        &ns.0,
        "create",
        "serviceaccount",
        "viewer",
    ]));
    ok(kubectl(&[
        "-n",
        &ns.0,
        "create",
        "rolebinding",
        "viewer",
        "--clusterrole=view",
        &format!("--serviceaccount={}:viewer", ns.0),
    ]));
    let token = ok(kubectl(&[
        "-n",
        &ns.0,
        "create",
        "token",
        "viewer",
        "--duration",
        "10m",
    ]));
    let server = ok(kubectl(&[
        "config",
        "view",
        "--minify",
        "-o",
        "jsonpath={.clusters[0].cluster.server}",
    ]));
    let (_dir, kc) = token_kubeconfig(server.stdout.trim(), token.stdout.trim(), &ns.0);
    let limited = tmp.path().join("viewer.tar.gz");
    let r = ok(kubectl(&[
        "etcd",
        "--kubeconfig",
        &kc,
        "report",
        "demo",
        "-f",
        limited.to_str().unwrap(),
        "-o",
        "json",
    ]));
    let index = json(&r);
    let failed = index["failed"].to_string();
    assert!(failed.contains("Secret"), "view reads no Secret: {failed}");
    assert!(
        index["files"].to_string().contains("cluster.yaml") || failed.contains("EtcdCluster"),
        "{index}"
    );
    let unpacked = tmp.path().join("y");
    std::fs::create_dir(&unpacked).unwrap();
    let top = untar(&limited, &unpacked);
    let all = files(&top);
    let paths: Vec<&str> = all.iter().map(|(p, _)| p.as_str()).collect();
    for want in ["REPORT.md", "pods.yaml", "statefulset.yaml", "events.yaml"] {
        assert!(paths.contains(&want), "{want} missing from {paths:?}");
    }
    let readme =
        String::from_utf8_lossy(&all.iter().find(|(p, _)| p == "REPORT.md").unwrap().1).to_string();
    assert!(
        readme.contains("## Reads that failed") && readme.contains("Secret"),
        "{readme}"
    );
    for (path, bytes) in &all {
        for v in &values {
            assert!(!contains(bytes, v), "{path} holds a Secret value");
        }
    }

    // logs: every member's lines, each prefixed with its member, etcd's JSON made readable.
    let r = ok(etcd(&ns.0, &["logs", "demo", "--since", "1h"]));
    for m in ["demo-0", "demo-1", "demo-2"] {
        assert!(
            r.stdout.lines().any(|l| l.starts_with(&format!("{m} | "))),
            "no line of {m}"
        );
    }
    for l in r.stdout.lines() {
        let (member, text) = l.split_once(" | ").unwrap_or_else(|| panic!("{l}"));
        assert!(member.starts_with("demo-"), "{l}");
        assert!(!text.starts_with('{'), "readable, not JSON: {l}");
    }
    let r = ok(etcd(&ns.0, &["logs", "demo", "--member", "1", "--raw"]));
    assert!(!r.stdout.is_empty());
    for l in r.stdout.lines() {
        assert!(l.starts_with("demo-1 | {"), "{l}");
    }
    let r = etcd(&ns.0, &["logs", "demo", "--member", "demo-7"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}
