//! End-to-end: `kubectl etcd backup` / `backup list` / `restore` against the testbed and the real
//! S3 server (tests/cluster/s3.sh): every key and value comes back, corrupt or mismatching
//! snapshots are refused before anything is created, bad input changes nothing.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

use common::*;

/// `kubectl etcd …` with S3 reached through the node IP (so restore pods can reach it too), and
/// the project's image for the restore pods.
fn etcd_s3(ns: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut c = etcd_s3_cmd(ns, args);
    for (k, v) in env {
        c.env(k, v);
    }
    run_cmd(&[&["etcd", "-n", ns], args].concat(), c)
}

/// The command `etcd_s3` runs, to start it in the background.
fn etcd_s3_cmd(ns: &str, args: &[&str]) -> Command {
    let (endpoint, _) = s3();
    let mut c: Command = kubectl_cmd(&[&["etcd", "-n", ns], args].concat());
    c.env("AWS_ENDPOINT_URL", endpoint).env(
        "KUBECTL_ETCD_TOOLS_IMAGE",
        std::env::var("KE_OPERATOR_IMAGE").expect("KE_OPERATOR_IMAGE is not set"),
    );
    c
}

fn writer_client(ns: &str, pod: &str) -> (tokio::runtime::Runtime, kubectl_etcd::etcd::EtcdClient) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(kubeconfig()).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        let kube = kube::Client::try_from(config).unwrap();
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::namespaced(kube, ns);
        kubectl_etcd::etcd::EtcdClient::connect_port_forward(
            pods,
            pod,
            2379,
            Duration::from_secs(10),
        )
        .await
        .unwrap()
        .with_rpc_timeout(Duration::from_secs(20))
    });
    (rt, client)
}

/// Writes `n` keys `k/<i>` with values of mixed sizes (8 B … 4 KiB); every 100th is attached to a
/// lease of an hour. Eight writers in parallel through one port-forward channel.
fn write_keys(ns: &str, pod: &str, n: usize) {
    let (rt, client) = writer_client(ns, pod);
    rt.block_on(async {
        let lease = client.clone().lease_grant(3600).await.unwrap();
        let mut tasks = Vec::new();
        for w in 0..8 {
            let mut c = client.clone();
            tasks.push(tokio::spawn(async move {
                for i in (w..n).step_by(8) {
                    let size = [8usize, 100, 700, 4096][i % 4];
                    let value: Vec<u8> = (0..size).map(|j| b'a' + ((i + j) % 26) as u8).collect();
                    let l = (i % 100 == 0).then_some(lease);
                    c.put_bytes(&format!("k/{i:05}"), value, l).await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

fn create(ns: &str, name: &str, version: &str) {
    // Plain http: `write_keys` dials a member through a port-forward without a certificate.
    ok(etcd(
        ns,
        &[
            "create",
            name,
            "--insecure",
            "--replicas",
            "3",
            "--version",
            version,
            "--timeout",
            "4m",
        ],
    ));
}

fn clusters_in(ns: &str) -> usize {
    json(&ok(kubectl(&[
        "-n",
        ns,
        "get",
        "etcdclusters",
        "-o",
        "json",
    ])))["items"]
        .as_array()
        .map_or(0, Vec::len)
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
        .map_or(0, Vec::len)
}

#[test]
fn ten_thousand_keys_go_to_s3_and_come_back_in_a_new_cluster_that_scales_and_takes_writes() {
    install_crd();
    let ns = Ns::new("backup-s3");
    let (_, bucket) = s3();
    create(&ns.0, "demo", "3.5.16");
    write_keys(&ns.0, "demo-0", 10_000);
    let before = keyspace_digest(&ns.0, "demo-0");
    assert_eq!(before.0, 10_000);

    let taken = ok(etcd_s3(
        &ns.0,
        &[
            "-o",
            "json",
            "backup",
            "demo",
            "--to",
            &format!("s3://{bucket}/e2e/{}", ns.0),
        ],
        &[],
    ));
    let record = json(&taken);
    let st = &record["status"];
    assert_eq!(st["phase"], "Succeeded", "{record}");
    assert_eq!(st["verified"], true);
    assert_eq!(st["sha256"].as_str().unwrap().len(), 64);
    assert!(st["keys"].as_i64().unwrap() >= 10_000, "{st}");
    assert!(st["revision"].as_i64().unwrap() >= 10_000, "{st}");
    assert!(st["member"].as_str().unwrap().starts_with("demo-"));
    let url = st["url"].as_str().unwrap();
    assert!(
        url.ends_with(".db.zst") && url.contains(&format!("{}-demo-", ns.0)),
        "{url}"
    );
    // compressed well below the snapshot itself
    assert!(st["size"].as_i64().unwrap() < st["snapshotSize"].as_i64().unwrap());

    let listed = json(&ok(etcd(&ns.0, &["-o", "json", "backup", "list", "demo"])));
    assert_eq!(listed["metadata"]["name"], record["metadata"]["name"]);

    ok(etcd_s3(
        &ns.0,
        &[
            "restore",
            "copy",
            "--latest-of",
            "demo",
            "--replicas",
            "3",
            "--timeout",
            "4m",
        ],
        &[],
    ));
    let after = keyspace_digest(&ns.0, "copy-2");
    assert_eq!(
        after, before,
        "every key and value comes back, on a member that joined as a learner"
    );
    let (a, b) = (cluster_json(&ns.0, "demo"), cluster_json(&ns.0, "copy"));
    assert_ne!(
        a["status"]["clusterId"], b["status"]["clusterId"],
        "a restore is a new cluster"
    );
    assert_eq!(b["status"]["restoredFrom"], url);
    // Watchers relist: the restored revision jumped ahead.
    let status = ok(etcdctl(
        &ns.0,
        "copy-0",
        &["endpoint", "status", "-w", "json"],
    ));
    let rev = json(&status)[0]["Status"]["header"]["revision"]
        .as_i64()
        .unwrap();
    assert!(rev > 1_000_000_000, "revision {rev} was bumped");
    // The new cluster takes writes and scales.
    ok(etcdctl(&ns.0, "copy-1", &["put", "after-restore", "yes"]));
    ok(etcd(
        &ns.0,
        &["scale", "copy", "--replicas", "4", "--timeout", "4m"],
    ));
    assert_eq!(members(&ns.0, "copy-3").len(), 4);
    let got = ok(etcdctl(
        &ns.0,
        "copy-3",
        &["get", "after-restore", "--print-value-only"],
    ));
    assert_eq!(got.stdout.trim(), "yes");
    // The restore pod and its downloaded snapshot are gone.
    let pods = ok(kubectl(&["-n", &ns.0, "get", "pods", "-o", "name"])).stdout;
    assert!(!pods.contains("copy-restore"), "{pods}");

    a_restore_never_runs_again_over_what_was_written_since(&ns.0, &b);
    a_restore_whose_download_is_cut_midway_goes_on_and_brings_every_key_back(
        &ns.0,
        record["metadata"]["name"].as_str().unwrap(),
        st["size"].as_u64().unwrap(),
        &before,
    );
    a_backup_damaged_in_its_bucket_is_found_by_the_restore_pod_and_nothing_is_left(
        &ns.0,
        &bucket,
        record["metadata"]["name"].as_str().unwrap(),
        url,
    );
}

/// The restore pod reaches S3 through a proxy that gets in its way: (1) the download of the
/// backup (`stored` bytes) is cut halfway: the pod asks for the rest from the byte it reached (of
/// the same object), where it used to fail with "unusable" and delete the cluster; (2) the first
/// three downloads are refused (the store unreachable: the SDK's three tries of the first fetch):
/// the pod tries again a few seconds later. Each restore completes with every key.
fn a_restore_whose_download_is_cut_midway_goes_on_and_brings_every_key_back(
    ns: &str,
    record: &str,
    stored: u64,
    before: &(usize, String),
) {
    // Volumes too small for etcd: refused before anything is made.
    let r = etcd_s3(
        ns,
        &[
            "restore",
            "tiny",
            "--from-backup",
            record,
            "--storage",
            "256Mi",
        ],
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("too small"), "{}", r.stderr);
    assert_ne!(kubectl(&["-n", ns, "get", "etcdcluster", "tiny"]).code, 0);

    let (endpoint, _) = s3();
    let upstream = endpoint.trim_start_matches("http://").to_string();
    let node = upstream.rsplit_once(':').unwrap().0.to_string();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (name, cut, what) in [
        (
            "resumed",
            proxy::Cut::Answers(stored / 2),
            "cut the download",
        ),
        ("waited", proxy::Cut::Gets(3), "refused the first downloads"),
    ] {
        let (proxy, cuts) = rt.block_on(proxy::cutting_proxy(
            &format!("{node}:0"),
            upstream.clone(),
            cut,
        ));
        let r = etcd_s3(
            ns,
            &[
                "restore",
                name,
                "--from-backup",
                record,
                "--replicas",
                "1",
                "--timeout",
                "3m",
            ],
            &[("AWS_ENDPOINT_URL", &format!("http://{proxy}"))],
        );
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        let want = if name == "waited" { 3 } else { 1 };
        assert_eq!(
            cuts.load(std::sync::atomic::Ordering::SeqCst),
            want,
            "the proxy {what}"
        );
        assert_eq!(&keyspace_digest(ns, &format!("{name}-0")), before, "{name}");
        ok(etcd(ns, &["delete", name, "--delete-data", "--yes"]));
    }
    drop(rt);
}

/// The object of a recorded backup damaged in its bucket (one bit flipped): `restore
/// --from-backup` does not download it to this machine (its sha256 is recorded); the restore pod
/// finds it unusable before restoring a byte, and the command deletes the cluster it created
/// with its volume and exits 10.
fn a_backup_damaged_in_its_bucket_is_found_by_the_restore_pod_and_nothing_is_left(
    ns: &str,
    bucket: &str,
    record: &str,
    url: &str,
) {
    let key = url
        .strip_prefix(&format!("s3://{bucket}/"))
        .expect("the record's URL is in the bucket");
    let (endpoint, _) = s3();
    let flip = Command::new("/var/cache/kubectl-etcd/s3-venv/bin/python")
        .args([
            "-c",
            "import sys,boto3; from botocore.config import Config\n\
             c = boto3.client('s3', endpoint_url=sys.argv[1], config=Config(s3={'addressing_style':'path'}))\n\
             b = bytearray(c.get_object(Bucket=sys.argv[2], Key=sys.argv[3])['Body'].read())\n\
             b[len(b) // 2] ^= 0x10\n\
             c.put_object(Bucket=sys.argv[2], Key=sys.argv[3], Body=bytes(b))",
            &endpoint,
            bucket,
            key,
        ])
        .status()
        .unwrap();
    assert!(flip.success());
    let r = etcd_s3(
        ns,
        &[
            "restore",
            "broken",
            "--from-backup",
            record,
            "--replicas",
            "1",
            "--timeout",
            "3m",
        ],
        &[],
    );
    assert_eq!(r.code, 10, "{}", r.stderr);
    assert!(
        r.stderr.contains("the restore pod verifies it whole"),
        "checked here, not downloaded: {}",
        r.stderr
    );
    assert!(
        r.stderr.contains("unusable") && r.stderr.contains("sha256"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("nothing is left"), "{}", r.stderr);
    let cluster = kubectl(&["-n", ns, "get", "etcdcluster", "broken"]);
    assert_ne!(cluster.code, 0, "the cluster is gone: {}", cluster.stdout);
    let claims = claims_in(ns);
    assert!(!claims.contains("broken"), "{claims}");
    let pods = pods_in(ns);
    assert!(!pods.contains("broken"), "{pods}");
}

/// Issue 15 item 1: the restored cluster `copy` is deleted with its volumes kept; a second
/// `restore` under its name is refused (nothing written), and its manifest, spec.restore and all,
/// applied again brings the members back on their volumes: the key written after the restore is
/// there, the cluster id is the same, no restore pod ran. `delete --delete-data` then deletes the
/// volumes the deleted cluster left.
fn a_restore_never_runs_again_over_what_was_written_since(ns: &str, copy: &serde_json::Value) {
    let manifest = serde_json::json!({
        "apiVersion": copy["apiVersion"],
        "kind": copy["kind"],
        "metadata": {"name": "copy", "namespace": ns},
        "spec": copy["spec"],
    });
    assert!(
        manifest["spec"]["restore"]["source"].is_string(),
        "{manifest}"
    );
    ok(etcd(ns, &["delete", "copy", "--timeout", "2m"]));
    let again = etcd_s3(ns, &["restore", "copy", "--latest-of", "demo"], &[]);
    assert_eq!(again.code, 9, "{}", again.stderr);
    assert!(
        again.stderr.contains("data-copy-0") && again.stderr.contains("--delete-data"),
        "{}",
        again.stderr
    );
    assert_eq!(clusters_in(ns), 1, "the refused restore wrote nothing");

    ok(kubectl_stdin(&["apply", "-f", "-"], &manifest.to_string()));
    ok(etcd(ns, &["reconcile", "copy", "--timeout", "4m"]));
    let got = ok(etcdctl(
        ns,
        "copy-0",
        &["get", "after-restore", "--print-value-only"],
    ));
    assert_eq!(
        got.stdout.trim(),
        "yes",
        "the write after the restore survived"
    );
    assert_eq!(
        cluster_json(ns, "copy")["status"]["clusterId"],
        copy["status"]["clusterId"],
        "the same cluster came back, not a second restore"
    );
    let pods = ok(kubectl(&["-n", ns, "get", "pods", "-o", "name"])).stdout;
    assert!(!pods.contains("copy-restore"), "{pods}");

    ok(etcd(ns, &["delete", "copy", "--timeout", "2m"]));
    ok(etcd(
        ns,
        &[
            "delete",
            "copy",
            "--delete-data",
            "--yes",
            "--timeout",
            "2m",
        ],
    ));
    let claims = claims_in(ns);
    assert!(!claims.contains("data-copy-"), "{claims}");
    let none = etcd(ns, &["delete", "copy", "--delete-data", "--yes"]);
    assert_eq!(none.code, 3, "nothing left: not found ({})", none.stderr);
}

#[test]
fn file_backups_in_every_compression_verify_and_bad_input_changes_nothing() {
    install_crd();
    let ns = Ns::new("backup-file");
    let (_, bucket) = s3();
    create(&ns.0, "demo", "3.5.16");
    write_keys(&ns.0, "demo-0", 300);
    let dir = tempfile::tempdir().unwrap();
    for (compression, suffix) in [("gzip", ".db.gz"), ("none", ".db"), ("zstd", ".db.zst")] {
        let r = json(&ok(etcd(
            &ns.0,
            &[
                "-o",
                "json",
                "backup",
                "demo",
                "--to",
                &format!("file://{}", dir.path().display()),
                "--compression",
                compression,
            ],
        )));
        let url = r["status"]["url"].as_str().unwrap().to_string();
        assert!(url.ends_with(suffix), "{url}");
        let path = url.trim_start_matches("file://");
        let stored = std::fs::read(path).unwrap();
        assert_eq!(r["status"]["size"].as_u64().unwrap(), stored.len() as u64);
        // The stored file reads back through the same verification the restore pod runs.
        let out = dir.path().join(format!("check-{compression}.db"));
        ok(kubectl(&[
            "etcd",
            "snapshot",
            "fetch",
            &url,
            "--to",
            out.to_str().unwrap(),
            "--sha256",
            r["status"]["sha256"].as_str().unwrap(),
        ]));
        let snapshot = std::fs::read(&out).unwrap();
        assert_eq!(
            snapshot.len() % 512,
            32,
            "an etcd snapshot with its hash trailer"
        );
    }
    assert_eq!(backups_in(&ns.0), 3);

    // A corrupt (one bit flipped), a truncated and a mismatching snapshot are refused before
    // anything is created, with exit 10.
    let good = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.to_string_lossy().ends_with("Z-r301.db")
                || p.extension().is_some_and(|e| e == "db")
                    && !p.to_string_lossy().contains("check-")
        })
        .expect("the uncompressed backup");
    let bytes = std::fs::read(&good).unwrap();
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x10;
    let truncated = bytes[..bytes.len() - 700].to_vec();
    let venv_python = "/var/cache/kubectl-etcd/s3-venv/bin/python";
    for (name, data) in [("flipped", &flipped), ("truncated", &truncated)] {
        let path = dir.path().join(format!("{name}.db"));
        std::fs::write(&path, data).unwrap();
        let (endpoint, _) = s3();
        let put = Command::new(venv_python)
            .args([
                "-c",
                "import sys,boto3; from botocore.config import Config; boto3.client('s3', endpoint_url=sys.argv[1], config=Config(s3={'addressing_style':'path'})).upload_file(sys.argv[2], sys.argv[3], sys.argv[4])",
                &endpoint,
                path.to_str().unwrap(),
                &bucket,
                &format!("e2e/{}/{name}.db", ns.0),
            ])
            .status()
            .unwrap();
        assert!(put.success());
        let r = etcd_s3(
            &ns.0,
            &[
                "restore",
                name,
                "--from",
                &format!("s3://{bucket}/e2e/{}/{name}.db", ns.0),
            ],
            &[],
        );
        assert_eq!(r.code, 10, "{name}: {}", r.stderr);
        assert!(
            r.stderr.contains("truncated or corrupt"),
            "{name}: {}",
            r.stderr
        );
    }
    let url = format!("s3://{bucket}/e2e/{}/flipped.db", ns.0);
    let r = etcd_s3(
        &ns.0,
        &[
            "restore",
            "mismatch",
            "--from",
            &url,
            "--sha256",
            &"0".repeat(64),
        ],
        &[],
    );
    assert_eq!(r.code, 10, "{}", r.stderr);
    assert!(r.stderr.contains("sha256"), "{}", r.stderr);

    // Bad input: each a clear error, a documented exit code, and nothing created.
    let to = format!("s3://{bucket}/e2e/{}", ns.0);
    // (what, arguments, environment, exit code, what stderr says)
    type Case<'a> = (&'a str, Vec<&'a str>, Vec<(&'a str, &'a str)>, i32, &'a str);
    let cases: Vec<Case> = vec![
        (
            "wrong credentials",
            vec!["backup", "demo", "--to", &to],
            vec![("AWS_SECRET_ACCESS_KEY", "wrong")],
            10,
            "credentials",
        ),
        (
            "missing bucket",
            vec!["backup", "demo", "--to", "s3://no-such-bucket-here/x"],
            vec![],
            10,
            "does not exist",
        ),
        (
            "unreachable endpoint",
            vec!["backup", "demo", "--to", &to],
            vec![("AWS_ENDPOINT_URL", "http://127.0.0.1:1")],
            10,
            "cannot reach",
        ),
        (
            "unknown scheme",
            vec!["backup", "demo", "--to", "ftp://host/x"],
            vec![],
            2,
            "s3://",
        ),
        (
            "unknown cluster",
            vec!["backup", "nope", "--to", &to],
            vec![],
            3,
            "not found",
        ),
        (
            "existing name",
            vec!["restore", "demo", "--latest-of", "demo"],
            vec![],
            9,
            "already exists",
        ),
        (
            "no backup of the cluster",
            vec!["restore", "other", "--latest-of", "nope"],
            vec![],
            2,
            "no successful backup",
        ),
    ];
    let (clusters, backups) = (clusters_in(&ns.0), backups_in(&ns.0));
    for (what, args, env, code, says) in cases {
        let r = etcd_s3(&ns.0, &args, &env);
        assert_eq!(r.code, code, "{what}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{what}: {}", r.stderr);
        assert!(
            !r.stderr.contains("kubectl-etcd-test-secret"),
            "{what}: a secret leaked"
        );
    }
    assert_eq!(clusters_in(&ns.0), clusters, "nothing created");
    assert_eq!(backups_in(&ns.0), backups, "nothing recorded");
    // --dry-run shows the member and the place, and takes nothing.
    let r = ok(etcd_s3(
        &ns.0,
        &["backup", "demo", "--to", &to, "--dry-run"],
        &[],
    ));
    assert!(
        r.stdout.contains("snapshot demo-") && r.stdout.contains(&to),
        "{}",
        r.stdout
    );
    assert_eq!(backups_in(&ns.0), backups);
}

/// A 1-member cluster `name` of 3.5.16 holding `keys` keys (enough to prove every key comes back,
/// small enough for parallel rows).
fn small_cluster(ns: &str, name: &str, keys: usize) -> (usize, String) {
    ok(etcd(
        ns,
        &[
            "create",
            name,
            "--insecure",
            "--replicas",
            "1",
            "--version",
            "3.5.16",
            "--timeout",
            "3m",
        ],
    ));
    write_keys(ns, &format!("{name}-0"), keys);
    keyspace_digest(ns, &format!("{name}-0"))
}

/// `kubectl etcd …` with the project's image for agent and restore pods.
fn etcd_tools(ns: &str, args: &[&str]) -> Run {
    etcd_s3(ns, args, &[])
}

/// Names of the pods of `ns` (agent pods included).
fn pods_in(ns: &str) -> String {
    ok(kubectl(&["-n", ns, "get", "pods", "-o", "name"])).stdout
}

fn claims_in(ns: &str) -> String {
    ok(kubectl(&["-n", ns, "get", "pvc", "-o", "name"])).stdout
}

/// The claim `backups` (1Gi) in `ns`, a pvc:// destination.
fn backups_claim(ns: &str) {
    ok(kubectl_stdin(
        &["-n", ns, "apply", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"backups"},
            "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}"#,
    ));
}

/// The Secrets `backup-key` and `other-key` of `ns`, each with a backup encryption key (64 hex
/// digits) under `key`; returns backup-key's.
fn key_secrets(ns: &str) -> String {
    let key = "5".repeat(64);
    for (name, k) in [("backup-key", key.clone()), ("other-key", "6".repeat(64))] {
        ok(kubectl(&[
            "-n",
            ns,
            "create",
            "secret",
            "generic",
            name,
            &format!("--from-literal=key={k}"),
        ]));
    }
    key
}

#[test]
fn a_backup_to_a_pvc_restores_into_a_new_cluster_and_a_missing_claim_changes_nothing() {
    install_crd();
    let ns = Ns::new("backup-pvc");
    let before = small_cluster(&ns.0, "demo", 400);
    backups_claim(&ns.0);

    // Bad input first: a claim that does not exist is a usage error; no record, no pod.
    let (backups, pods) = (backups_in(&ns.0), pods_in(&ns.0));
    let r = etcd_tools(
        &ns.0,
        &["backup", "demo", "--to", "pvc://no-such-claim/etcd"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("PersistentVolumeClaim") && r.stderr.contains("does not exist"),
        "{}",
        r.stderr
    );
    let r = etcd_tools(
        &ns.0,
        &[
            "restore",
            "nope",
            "--from",
            "pvc://no-such-claim/etcd/x.db.zst",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("does not exist"), "{}", r.stderr);
    // A claim that exists but holds no such object: nothing created either.
    let r = etcd_tools(
        &ns.0,
        &[
            "restore",
            "nope",
            "--from",
            "pvc://backups/etcd/missing.db.zst",
        ],
    );
    assert_eq!(r.code, 10, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("pvc://backups/etcd/missing.db.zst does not exist"),
        "{}",
        r.stderr
    );
    assert_eq!(backups_in(&ns.0), backups, "nothing recorded");
    assert_eq!(clusters_in(&ns.0), 1, "nothing created");
    assert_eq!(pods_in(&ns.0), pods, "no pod left behind");

    // An agent left behind by a killed command (it exited when idle) is cleared by the next one.
    let image = std::env::var("KE_OPERATOR_IMAGE").expect("KE_OPERATOR_IMAGE is not set");
    ok(kubectl_stdin(
        &["-n", &ns.0, "apply", "-f", "-"],
        &format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"backups-pvc-agent-old",
                "labels":{{"etcd.kubectl-etcd.io/pvc-agent":"backups"}}}},
                "spec":{{"restartPolicy":"Never","containers":[{{"name":"agent","image":"{image}",
                "imagePullPolicy":"IfNotPresent","args":["--version"]}}]}}}}"#
        ),
    ));
    eventually("the old agent finished", Duration::from_secs(60), || {
        let phase = ok(kubectl(&[
            "-n",
            &ns.0,
            "get",
            "pod",
            "backups-pvc-agent-old",
            "-o",
            "jsonpath={.status.phase}",
        ]))
        .stdout;
        (phase == "Succeeded" || phase == "Failed").then_some(())
    });
    let record = json(&ok(etcd_tools(
        &ns.0,
        &["-o", "json", "backup", "demo", "--to", "pvc://backups/etcd"],
    )));
    eventually("the old agent deleted", Duration::from_secs(30), || {
        (!pods_in(&ns.0).contains("backups-pvc-agent-old")).then_some(())
    });
    let st = &record["status"];
    assert_eq!(st["phase"], "Succeeded", "{record}");
    let url = st["url"].as_str().unwrap();
    assert!(
        url.starts_with("pvc://backups/etcd/") && url.ends_with(".db.zst"),
        "{url}"
    );
    let listed = json(&ok(etcd(&ns.0, &["-o", "json", "backup", "list", "demo"])));
    assert_eq!(
        listed["status"]["url"], url,
        "backup list shows pvc backups"
    );
    let name = record["metadata"]["name"].as_str().unwrap();
    ok(etcd_tools(
        &ns.0,
        &[
            "restore",
            "copy",
            "--from-backup",
            name,
            "--replicas",
            "1",
            "--timeout",
            "3m",
        ],
    ));
    assert_eq!(
        keyspace_digest(&ns.0, "copy-0"),
        before,
        "every key and value"
    );
    let (a, b) = (cluster_json(&ns.0, "demo"), cluster_json(&ns.0, "copy"));
    assert_ne!(a["status"]["clusterId"], b["status"]["clusterId"]);
    assert_eq!(b["status"]["restoredFrom"], url);
    // The agent pods are gone (each command deletes its own).
    let left = eventually("agent pods deleted", Duration::from_secs(60), || {
        let p = pods_in(&ns.0);
        (!p.contains("pvc-agent")).then_some(p)
    });
    assert!(!left.contains("copy-restore"), "{left}");
}

#[test]
fn a_file_backup_restores_through_a_staging_claim_that_goes_once_the_cluster_is_ready() {
    install_crd();
    let ns = Ns::new("backup-file-restore");
    let before = small_cluster(&ns.0, "demo", 400);
    let dir = tempfile::tempdir().unwrap();
    let record = json(&ok(etcd(
        &ns.0,
        &[
            "-o",
            "json",
            "backup",
            "demo",
            "--to",
            &format!("file://{}", dir.path().display()),
        ],
    )));
    let url = record["status"]["url"].as_str().unwrap().to_string();
    ok(etcd_tools(
        &ns.0,
        &[
            "restore",
            "copy",
            "--from",
            &url,
            "--replicas",
            "1",
            "--timeout",
            "3m",
        ],
    ));
    assert_eq!(
        keyspace_digest(&ns.0, "copy-0"),
        before,
        "every key and value"
    );
    let c = cluster_json(&ns.0, "copy");
    assert_ne!(
        cluster_json(&ns.0, "demo")["status"]["clusterId"],
        c["status"]["clusterId"]
    );
    assert!(
        c["spec"]["restore"]["source"]
            .as_str()
            .unwrap()
            .starts_with("pvc://copy-restore-source/"),
        "{c}"
    );
    eventually("the staging claim deleted", Duration::from_secs(60), || {
        (!claims_in(&ns.0).contains("copy-restore-source")).then_some(())
    });
    assert!(!pods_in(&ns.0).contains("pvc-agent"));
}

/// Pseudo-random bytes (incompressible, like a compressed snapshot), `n` of them, optionally
/// failing after `fail_after` bytes like a snapshot stream that broke.
struct Noise {
    left: u64,
    state: u64,
    fail_after: Option<u64>,
    sent: u64,
}

impl tokio::io::AsyncRead for Noise {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.fail_after.is_some_and(|f| self.sent >= f) {
            return std::task::Poll::Ready(Err(std::io::Error::other("the snapshot stream broke")));
        }
        let n = (buf.remaining() as u64).min(self.left).min(64 * 1024) as usize;
        let mut chunk = Vec::with_capacity(n);
        for _ in 0..n {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            chunk.push(self.state as u8);
        }
        buf.put_slice(&chunk);
        self.left -= n as u64;
        self.sent += n as u64;
        std::task::Poll::Ready(Ok(()))
    }
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_pvc_store_streams_both_ways_and_a_broken_put_leaves_nothing() {
    use kubectl_etcd::archive::store::Location;
    use tokio::io::AsyncReadExt;
    let ns = Ns::new("backup-pvc-stream");
    backups_claim(&ns.0);
    let image = std::env::var("KE_OPERATOR_IMAGE").expect("KE_OPERATOR_IMAGE is not set");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = client().await;
        let loc = Location::parse("pvc://backups/stream").unwrap();
        let store = kubectl_etcd::backup::pvc::open(&client, &ns.0, &loc, &image)
            .await
            .unwrap();
        const SIZE: u64 = 96 * 1024 * 1024;
        let rss_before = peak_rss_kib();
        let started = std::time::Instant::now();
        let noise = Noise { left: SIZE, state: 0x9e37_79b9_7f4a_7c15, fail_after: None, sent: 0 };
        let stored = store.put("big.bin", noise, |_| {}).await.unwrap();
        let put_secs = started.elapsed().as_secs_f64();
        assert_eq!(stored.bytes, SIZE);
        let started = std::time::Instant::now();
        let (mut body, size) = store.get("big.bin").await.unwrap();
        assert_eq!(size, Some(SIZE));
        let mut sha = kubectl_etcd::archive::codec::Sha256::default();
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = body.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            sha.update(&buf[..n]);
        }
        let get_secs = started.elapsed().as_secs_f64();
        assert_eq!(sha.finish(), (SIZE, stored.sha256_hex.clone()), "the same bytes come back");
        let grew = peak_rss_kib().saturating_sub(rss_before);
        eprintln!(
            "pvc:// 96 MiB: put {put_secs:.1} s ({:.1} MiB/s), get {get_secs:.1} s ({:.1} MiB/s), peak RSS grew {} MiB",
            96.0 / put_secs,
            96.0 / get_secs,
            grew / 1024
        );

        // A source that breaks mid-way: an error, and neither the object nor a partial file.
        let broken = Noise { left: SIZE, state: 1, fail_after: Some(10 * 1024 * 1024), sent: 0 };
        let e = store.put("broken.bin", broken, |_| {}).await.unwrap_err();
        assert!(e.to_string().contains("reading the data"), "{e}");
        let names: Vec<String> = store
            .list("")
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.key)
            .collect();
        assert_eq!(names, ["big.bin"]);
        // `list` hides `.partial` files: look at the claim's directory itself (the testbed's
        // provisioner is hostPath on this machine), where the agent removes its partial file once
        // the cut session reaches it.
        let pv = ok(kubectl(&[
            "-n", &ns.0, "get", "pvc", "backups", "-o", "jsonpath={.spec.volumeName}",
        ]))
        .stdout;
        let dir = ok(kubectl(&["get", "pv", &pv, "-o", "jsonpath={.spec.hostPath.path}"])).stdout;
        let dir = std::path::Path::new(dir.trim()).join("stream");
        let mut left = Vec::new();
        for _ in 0..30 {
            left = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect::<Vec<_>>();
            if left == ["big.bin"] {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        assert_eq!(left, ["big.bin"], "no partial file in {}", dir.display());
        store.delete("big.bin").await.unwrap();
        assert!(store.head("big.bin").await.unwrap().is_none());
        store.close().await;
    });
    eventually("the agent pod deleted", Duration::from_secs(60), || {
        (!pods_in(&ns.0).contains("pvc-agent")).then_some(())
    });
}

#[test]
fn snapshots_of_etcd_3_4_and_3_6_restore_into_the_same_version() {
    install_crd();
    let ns = Ns::new("backup-versions");
    let (_, bucket) = s3();
    for (name, version) in [("old", "3.4.23"), ("new", "3.6.15")] {
        create(&ns.0, name, version);
        write_keys(&ns.0, &format!("{name}-0"), 500);
        let before = keyspace_digest(&ns.0, &format!("{name}-0"));
        ok(etcd_s3(
            &ns.0,
            &[
                "backup",
                name,
                "--to",
                &format!("s3://{bucket}/e2e/{}", ns.0),
            ],
            &[],
        ));
        let copy = format!("{name}-copy");
        ok(etcd_s3(
            &ns.0,
            &[
                "restore",
                &copy,
                "--latest-of",
                name,
                "--replicas",
                "3",
                "--timeout",
                "4m",
            ],
            &[],
        ));
        let c = cluster_json(&ns.0, &copy);
        assert_eq!(
            c["spec"]["version"], version,
            "the backup's version is the default"
        );
        assert_eq!(
            keyspace_digest(&ns.0, &format!("{copy}-2")),
            before,
            "{version}"
        );
    }
}

/// The body of `GET path` from `addr` (plain HTTP/1.0; empty when it does not answer).
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// `kubectl etcd operate` watching one namespace, from this machine (port-forward dial); killed on drop.
struct LocalOperator(std::process::Child);
impl LocalOperator {
    /// Started on `ns`, its metrics on `metrics` (one address per test).
    fn watching(ns: &str, metrics: &str) -> LocalOperator {
        // The testbed's S3 (a Secret's AWS_ENDPOINT_URL): not AWS, so listed.
        LocalOperator::allowing(ns, metrics, &s3().0)
    }

    /// Started on `ns`, its metrics on `metrics`, S3 at `endpoint` allowed.
    fn allowing(ns: &str, metrics: &str, endpoint: &str) -> LocalOperator {
        LocalOperator(
            kubectl_cmd(&[
                "etcd",
                "operate",
                "--watch-namespace",
                ns,
                "--metrics-addr",
                metrics,
                // read below without a token (the guard of /metrics is e2e_namespaced's)
                "--metrics-auth",
                "none",
                "--dial",
                "port-forward",
                "--identity",
                &format!("operator/e2e-{ns}"),
                "--s3-endpoint-allow",
                endpoint,
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
        )
    }
}

/// The Secret `s3-creds` in `ns`, with this machine's S3 credentials and the endpoint pods reach.
fn s3_creds_secret(ns: &str) {
    s3_secret(ns, "s3-creds", &s3().0);
}

impl Drop for LocalOperator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_schedule_every_minute_runs_keeps_the_newest_and_retention_deletes_the_oldest() {
    install_crd();
    let ns = Ns::new("backup-schedule");
    let (endpoint, bucket) = s3();
    let _ = kubectl(&["create", "namespace", "kubectl-etcd-system"]);
    s3_creds_secret(&ns.0);
    let prefix = format!("e2e/{}/scheduled", ns.0);
    let manifest = format!(
        r#"{{"apiVersion":"etcd.kubectl-etcd.io/v1alpha1","kind":"EtcdCluster","metadata":{{"name":"demo","namespace":"{ns}"}},
"spec":{{"replicas":1,"version":"3.5.16","backup":{{"destination":"s3://{bucket}/{prefix}","credentialsSecret":"s3-creds",
"schedule":"* * * * *","runOnCreate":true,"compression":"gzip","retention":{{"keepLast":2}}}}}}}}"#,
        ns = ns.0
    );
    ok(kubectl_stdin(&["apply", "-f", "-"], &manifest));
    let metrics_addr = format!("127.0.0.1:{}", free_port());
    let _op = LocalOperator::watching(&ns.0, &metrics_addr);
    // At least three scheduled runs, of which retention keeps the newest two.
    let seen = std::cell::RefCell::new(std::collections::BTreeSet::new());
    eventually(
        "three scheduled backups, two kept",
        Duration::from_secs(300),
        || {
            let list = json(&ok(kubectl(&[
                "-n",
                &ns.0,
                "get",
                "etcdbackups",
                "-o",
                "json",
            ])));
            let items = list["items"].as_array().cloned().unwrap_or_default();
            for b in &items {
                if b["status"]["phase"] == "Succeeded" {
                    seen.borrow_mut()
                        .insert(b["metadata"]["name"].as_str().unwrap().to_string());
                }
            }
            (seen.borrow().len() >= 3 && items.len() == 2).then_some(())
        },
    );
    let c = cluster_json(&ns.0, "demo");
    let st = &c["status"]["backup"];
    assert!(
        st["lastSuccessfulUrl"]
            .as_str()
            .unwrap()
            .ends_with(".db.gz"),
        "{st}"
    );
    assert!(st["nextScheduledTime"].is_string(), "{st}");
    let healthy = c["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "BackupHealthy")
        .cloned()
        .expect("a BackupHealthy condition");
    assert_eq!(healthy["status"], "True", "{healthy}");
    // The oldest backup's object is gone from S3; the kept ones are there.
    let oldest = seen.borrow().iter().next().unwrap().clone();
    let list = json(&ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "etcdbackups",
        "-o",
        "json",
    ])));
    let kept: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(!kept.contains(&oldest), "{oldest} was deleted: {kept:?}");
    let objects = s3_keys(&endpoint, &bucket, &prefix);
    assert_eq!(objects.len(), 2, "two objects left in S3: {objects:?}");
    // The operator's metrics carry the newest success's time (status.backup.lastSuccessfulTime).
    let last = jiff::Timestamp::from_str(st["lastSuccessfulTime"].as_str().unwrap())
        .unwrap()
        .as_second();
    let series = format!(
        "kubectl_etcd_last_successful_backup_timestamp_seconds{{namespace=\"{}\",name=\"demo\"}} ",
        ns.0
    );
    eventually(
        "the last-backup gauge to match status.backup",
        Duration::from_secs(30),
        || {
            let metrics = http_get(&metrics_addr, "/metrics");
            let line = metrics.lines().find(|l| l.starts_with(&series))?;
            let value: i64 = line.rsplit(' ').next()?.parse().ok()?;
            // A newer scheduled run may have finished meanwhile.
            (value >= last).then_some(())
        },
    );
    // `kubectl etcd status` shows the last backup and the next run.
    let status = ok(etcd(&ns.0, &["status", "demo"])).stdout;
    assert!(
        status.contains("last backup") && status.contains("next backup"),
        "{status}"
    );
}

/// `kubectl -n NS get WHAT… -o json`, parsed.
fn get_json(ns: &str, what: &[&str]) -> serde_json::Value {
    json(&ok(kubectl(
        &[&["-n", ns, "get"], what, &["-o", "json"]].concat(),
    )))
}

/// Whether `recover`'s fence is in the selector of the client Service of `demo`.
fn client_fenced(ns: &str) -> bool {
    get_json(ns, &["service", "demo-client"])["spec"]["selector"]["etcd.kubectl-etcd.io/fenced-by"]
        .is_string()
}

/// How many endpoints (ready or not) the client Service of `demo` lists.
fn client_endpoints(ns: &str) -> usize {
    let slices = get_json(
        ns,
        &[
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=demo-client",
        ],
    );
    slices["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["endpoints"].as_array().map_or(0, Vec::len))
        .sum()
}

/// Two members of `demo` and their volumes are lost for good: only demo-0 keeps the data, and
/// there is no quorum.
fn lose_two_of_three(ns: &str) {
    ok(kubectl(&[
        "-n",
        ns,
        "scale",
        "statefulset",
        "demo",
        "--replicas",
        "1",
    ]));
    eventually("demo-1 and demo-2 gone", Duration::from_secs(90), || {
        let pods = ok(kubectl(&["-n", ns, "get", "pods", "-o", "name"])).stdout;
        (!pods.contains("pod/demo-1") && !pods.contains("pod/demo-2")).then_some(())
    });
    ok(kubectl(&[
        "-n",
        ns,
        "delete",
        "pvc",
        "data-demo-1",
        "data-demo-2",
    ]));
}

#[test]
fn two_of_three_members_lost_then_recover_rebuilds_from_the_survivor_with_every_acknowledged_key() {
    install_crd();
    let ns = Ns::new("recover");
    let (_, bucket) = s3();
    create(&ns.0, "demo", "3.5.16");
    write_keys(&ns.0, "demo-0", 2_000);
    let before = keyspace_digest(&ns.0, "demo-0");
    let old_id = cluster_json(&ns.0, "demo")["status"]["clusterId"].clone();
    lose_two_of_three(&ns.0);
    let r = etcd(&ns.0, &["status", "demo"]);
    assert_eq!(r.code, 7, "quorum is lost: {}", r.stderr);

    // Without --yes: the plan, what survives and what is at stake; nothing changes.
    let to = format!("s3://{bucket}/e2e/{}", ns.0);
    let r = etcd_s3(&ns.0, &["recover", "demo", "--to", &to], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stdout.contains("demo-0 answers") && r.stdout.contains("demo-1 is gone"),
        "{}",
        r.stdout
    );
    let spec = &json(&ok(kubectl(&[
        "-n", &ns.0, "get", "etcdc", "demo", "-o", "json",
    ])))["spec"];
    assert_ne!(
        spec["paused"], true,
        "nothing changed without --yes: {spec}"
    );

    // While it works, clients are fenced off: the client Service selects no member and lists
    // no endpoint (a write acknowledged after the snapshot would be lost).
    let recovering = {
        let mut c = etcd_s3_cmd(
            &ns.0,
            &["recover", "demo", "--to", &to, "--yes", "--timeout", "5m"],
        );
        std::thread::spawn(move || c.output().unwrap())
    };
    let (mut fenced, mut unserved_while_fenced) = (false, false);
    while !recovering.is_finished() {
        if client_fenced(&ns.0) {
            fenced = true;
            unserved_while_fenced |= client_endpoints(&ns.0) == 0;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = recovering.join().unwrap();
    assert!(
        out.status.success(),
        "recover: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        fenced && unserved_while_fenced,
        "the client Service was fenced ({fenced}) and listed no endpoint meanwhile ({unserved_while_fenced})"
    );
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(ready_members(&c["status"]), (3, 3, 3), "{}", c["status"]);
    let recovered_id = c["status"]["clusterId"].clone();
    assert_ne!(recovered_id, old_id, "a recovered cluster has a new id");
    assert_eq!(
        keyspace_digest(&ns.0, "demo-2"),
        before,
        "every acknowledged key is back"
    );
    // The fence is lifted: the restored members serve clients.
    assert!(!client_fenced(&ns.0));
    eventually("3 client endpoints", Duration::from_secs(30), || {
        (client_endpoints(&ns.0) == 3).then_some(())
    });
    ok(etcdctl(&ns.0, "demo-1", &["put", "after-recover", "yes"]));

    // Recovering again from the same snapshot (the record the first recovery made) is another
    // cluster again: a new id, so no member of the first can ever join it.
    let record = get_json(&ns.0, &["etcdbackups"])["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    ok(etcd_s3(
        &ns.0,
        &[
            "recover",
            "demo",
            "--from-backup",
            &record,
            "--yes",
            "--force",
            "--timeout",
            "5m",
        ],
        &[],
    ));
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(ready_members(&c["status"]), (3, 3, 3), "{}", c["status"]);
    let again_id = c["status"]["clusterId"].clone();
    assert!(
        again_id != recovered_id && again_id != old_id,
        "a second recovery from {record} has its own id: {old_id} -> {recovered_id} -> {again_id}"
    );
    assert_eq!(keyspace_digest(&ns.0, "demo-0"), before, "{record}'s keys");
    let after = ok(etcdctl(&ns.0, "demo-0", &["get", "after-recover"])).stdout;
    assert!(after.trim().is_empty(), "restored from {record}: {after}");
}

/// Issue 16: with an operator running, `recover --yes` only records the decision
/// (`spec.recovery`) and waits; the operator, holding the cluster's Lease throughout, fences
/// clients, takes and verifies the survivor's snapshot and restores it. A writer runs through
/// the loss and the rebuild: every write it had acknowledged is read back.
#[test]
fn with_the_operator_running_recover_records_the_decision_and_the_operator_rebuilds_with_every_acknowledged_write()
 {
    install_crd();
    let ns = Ns::new("recover-op");
    let (endpoint, bucket) = s3();
    s3_secret(&ns.0, "s3-creds", &endpoint);
    create(&ns.0, "demo", "3.5.16");
    common::writer::start_writer(&ns.0);
    write_keys(&ns.0, "demo-0", 500);
    let old_id = cluster_json(&ns.0, "demo")["status"]["clusterId"].clone();
    lose_two_of_three(&ns.0);

    let port = free_port();
    let op = common::operator::LocalOperator::start(
        &ns.0,
        &[
            "--metrics-addr",
            &format!("127.0.0.1:{port}"),
            "--dial",
            "direct",
            "--s3-endpoint-allow",
            &endpoint,
        ],
    )
    .unwrap();
    eventually(
        "the operator to hold the cluster's Lease",
        Duration::from_secs(90),
        || op.holds_the_cluster().then_some(()),
    );

    // The verb records its decision and waits; the Lease stays the operator's all along.
    let to = format!("s3://{bucket}/e2e/{}", ns.0);
    let recovering = {
        let mut c = etcd_s3_cmd(
            &ns.0,
            &[
                "recover",
                "demo",
                "--to",
                &to,
                "--credentials-secret",
                "s3-creds",
                "--yes",
                "--timeout",
                "6m",
            ],
        );
        std::thread::spawn(move || c.output().unwrap())
    };
    let mut held_by_another = Vec::new();
    while !recovering.is_finished() {
        if !op.holds_the_cluster() {
            held_by_another.push(
                kubectl(&[
                    "-n",
                    &ns.0,
                    "get",
                    "lease",
                    &kubectl_etcd::lease::cluster_lease(&ns.0, "demo"),
                    "-o",
                    "jsonpath={.spec.holderIdentity}",
                ])
                .stdout,
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let out = recovering.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "recover: {stderr}\n{}",
        op.log_tail(30)
    );
    assert!(
        stderr.contains("holds the engine lease"),
        "the verb defers to the operator: {stderr}"
    );
    assert!(
        held_by_another.iter().all(|h| !h.starts_with("cli/")),
        "the CLI never held the Lease: {held_by_another:?}\noperator log:\n{}",
        op.log_tail(40)
    );
    assert!(op.holds_the_cluster(), "{}", op.log_tail(30));

    // The operator took the survivor's snapshot (the record says who) and restored it.
    let records = get_json(&ns.0, &["etcdbackups"]);
    let taken_by: Vec<&str> = records["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["status"]["takenBy"].as_str())
        .collect();
    assert_eq!(taken_by, [op.identity()], "{records}");
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(ready_members(&c["status"]), (3, 3, 3), "{}", c["status"]);
    assert_ne!(
        c["status"]["clusterId"], old_id,
        "a recovered cluster has a new id"
    );
    eventually("the fence to be lifted", Duration::from_secs(60), || {
        (!client_fenced(&ns.0) && client_endpoints(&ns.0) == 3).then_some(())
    });
    // Every acknowledged write is back: the writer's (through the client Service, before the
    // loss and after the rebuild) and the 500 keys written before the loss.
    std::thread::sleep(Duration::from_secs(5));
    common::writer::assert_no_acknowledged_write_lost(&ns.0);
    let keys = ok(etcdctl(
        &ns.0,
        "demo-2",
        &["get", "--prefix", "k/", "--keys-only"],
    ))
    .stdout;
    assert_eq!(keys.lines().filter(|l| !l.is_empty()).count(), 500);
    drop(op);
}

#[test]
fn recover_yes_refuses_a_cluster_whose_quorum_answers_and_changes_nothing() {
    install_crd();
    let ns = Ns::new("recover-healthy");
    let (_, bucket) = s3();
    create(&ns.0, "demo", "3.5.16");
    write_keys(&ns.0, "demo-0", 100);
    let before = keyspace_digest(&ns.0, "demo-0");
    let old_id = cluster_json(&ns.0, "demo")["status"]["clusterId"].clone();
    let to = format!("s3://{bucket}/e2e/{}", ns.0);
    let r = etcd_s3(
        &ns.0,
        &["recover", "demo", "--to", &to, "--yes", "--timeout", "2m"],
        &[],
    );
    assert_eq!(r.code, 2, "a healthy quorum answers: {}", r.stderr);
    assert!(r.stderr.contains("--force"), "{}", r.stderr);
    let c = cluster_json(&ns.0, "demo");
    assert_ne!(c["spec"]["paused"], true, "{}", c["spec"]);
    assert_eq!(c["status"]["clusterId"], old_id, "the same cluster");
    assert_eq!(ready_members(&c["status"]), (3, 3, 3), "{}", c["status"]);
    let pvcs = ok(kubectl(&["-n", &ns.0, "get", "pvc", "-o", "name"])).stdout;
    assert_eq!(pvcs.lines().count(), 3, "every volume kept: {pvcs}");
    assert_eq!(keyspace_digest(&ns.0, "demo-2"), before, "every key kept");
}

/// The successful scheduled backups of `ns` as (record name, cluster uid, url).
fn scheduled_backups(ns: &str) -> Vec<(String, String, String)> {
    let list = json(&ok(kubectl(&[
        "-n",
        ns,
        "get",
        "etcdbackups",
        "-o",
        "json",
    ])));
    list["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|b| b["status"]["phase"] == "Succeeded")
        .map(|b| {
            let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
            (
                text(&b["metadata"]["name"]),
                text(&b["spec"]["clusterUid"]),
                text(&b["status"]["url"]),
            )
        })
        .collect()
}

/// `demo` of one member with a backup every minute to `s3://bucket/prefix`, the newest one kept.
fn scheduled_demo(ns: &str, bucket: &str, prefix: &str, keys: usize) -> (String, (usize, String)) {
    ok(etcd(
        ns,
        &[
            "create",
            "demo",
            "--insecure",
            "--replicas",
            "1",
            "--timeout",
            "3m",
        ],
    ));
    let digest = if keys > 0 {
        write_keys(ns, "demo-0", keys);
        keyspace_digest(ns, "demo-0")
    } else {
        (0, String::new())
    };
    let backup = format!(
        r#"{{"spec":{{"backup":{{"destination":"s3://{bucket}/{prefix}","credentialsSecret":"s3-creds","schedule":"* * * * *","runOnCreate":true,"retention":{{"keepLast":1}}}}}}}}"#
    );
    ok(patch_demo(ns, &backup));
    let uid = cluster_json(ns, "demo")["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    (uid, digest)
}

#[test]
fn a_cluster_re_created_empty_under_the_same_name_never_prunes_the_old_ones_backups() {
    install_crd();
    let ns = Ns::new("backup-recreated");
    let (endpoint, bucket) = s3();
    s3_creds_secret(&ns.0);
    let prefix = format!("e2e/{}/scheduled", ns.0);
    let _op = LocalOperator::watching(&ns.0, "127.0.0.1:0");
    // The real data: 500 acknowledged keys, two scheduled backups of which retention keeps one.
    let (old_uid, before) = scheduled_demo(&ns.0, &bucket, &prefix, 500);
    let seen = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let old_kept = eventually(
        "two scheduled backups of the first demo, one kept",
        Duration::from_secs(240),
        || {
            let now = scheduled_backups(&ns.0);
            seen.borrow_mut().extend(now.iter().map(|b| b.0.clone()));
            (seen.borrow().len() >= 2 && now.len() == 1).then(|| now[0].clone())
        },
    );
    assert_eq!(old_kept.1, old_uid, "{old_kept:?}");

    // Deleted with its data, re-created empty under the same name, and backed up more often
    // than retention keeps.
    ok(etcd(&ns.0, &["delete", "demo", "--delete-data", "--yes"]));
    let (new_uid, _) = scheduled_demo(&ns.0, &bucket, &prefix, 0);
    assert_ne!(new_uid, old_uid);
    let seen_new = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let new_kept = eventually(
        "two scheduled backups of the re-created demo, one of its own kept",
        Duration::from_secs(240),
        || {
            let now = scheduled_backups(&ns.0);
            let own: Vec<_> = now.iter().filter(|b| b.1 == new_uid).cloned().collect();
            seen_new
                .borrow_mut()
                .extend(own.iter().map(|b| b.0.clone()));
            (seen_new.borrow().len() >= 2 && own.len() == 1).then(|| own[0].clone())
        },
    );
    // Retention of the new cluster neither counted nor pruned the old one's backup.
    let now = scheduled_backups(&ns.0);
    assert!(
        now.contains(&old_kept),
        "{old_kept:?} is kept (the backup of the real data): {now:?}"
    );
    let keys = s3_keys(&endpoint, &bucket, &prefix).join("\n");
    let object_of = |url: &str| url.rsplit('/').next().unwrap().to_string();
    assert!(
        keys.contains(&object_of(&old_kept.2)) && keys.contains(&object_of(&new_kept.2)),
        "both kept objects are in S3: {keys}"
    );
    assert_eq!(keys.lines().count(), 2, "the rest pruned: {keys}");
    let listed = ok(etcd_s3(&ns.0, &["backup", "list", "demo"], &[]));
    assert!(
        listed.stderr.contains(&old_kept.0) && listed.stderr.contains("earlier cluster"),
        "backup list names the earlier cluster's backup: {}",
        listed.stderr
    );
    drop(_op);

    // `restore --latest-of demo` picks the newest good backup of demo as it exists now: the
    // re-created, empty one (docs/src/backups.md); the real data comes back by its record's name.
    ok(etcd_s3(
        &ns.0,
        &[
            "restore",
            "latest",
            "--latest-of",
            "demo",
            "--replicas",
            "1",
            "--timeout",
            "4m",
        ],
        &[],
    ));
    let latest = cluster_json(&ns.0, "latest");
    assert_eq!(
        latest["status"]["restoredFrom"].as_str(),
        Some(new_kept.2.as_str()),
        "{}",
        latest["status"]
    );
    let empty = ok(etcdctl(
        &ns.0,
        "latest-0",
        &["get", "--prefix", "k/", "--keys-only"],
    ))
    .stdout;
    assert!(
        empty.trim().is_empty(),
        "the re-created demo held no key: {empty}"
    );
    ok(etcd_s3(
        &ns.0,
        &[
            "restore",
            "real",
            "--from-backup",
            &old_kept.0,
            "--replicas",
            "1",
            "--timeout",
            "4m",
        ],
        &[],
    ));
    assert_eq!(
        keyspace_digest(&ns.0, "real-0"),
        before,
        "every acknowledged key of the first demo is back"
    );
}

/// A TCP proxy on this machine in front of `upstream` (host:port) that lets at most `rate`
/// bytes per second through towards it (answers come back at full speed): a slow store. Stops
/// accepting when dropped.
struct SlowProxy {
    addr: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl SlowProxy {
    fn start(upstream: &str, rate: usize) -> SlowProxy {
        use std::io::{Read, Write};
        use std::net::{Shutdown, TcpListener, TcpStream};
        use std::sync::atomic::Ordering;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (upstream, stopped) = (upstream.to_string(), stop.clone());
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let Ok((mut client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                client.set_nonblocking(false).unwrap();
                let Ok(mut server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let (mut client_r, mut server_w) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n @ 1..) = client_r.read(&mut buf) {
                        if server_w.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        std::thread::sleep(Duration::from_secs_f64(n as f64 / rate as f64));
                    }
                    let _ = server_w.shutdown(Shutdown::Write);
                });
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut server, &mut client);
                    let _ = client.shutdown(Shutdown::Write);
                });
            }
        });
        SlowProxy { addr, stop }
    }
}

impl Drop for SlowProxy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The EtcdBackup records of `ns`: (name, phase).
fn backup_phases(ns: &str) -> Vec<(String, String)> {
    get_json(ns, &["etcdbackups"])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|b| {
            (
                b["metadata"]["name"].as_str().unwrap_or("").to_string(),
                b["status"]["phase"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_scheduled_backup_to_a_slow_store_runs_beside_the_passes_that_repair_the_cluster() {
    install_crd();
    let ns = Ns::new("backup-beside");
    let (_, bucket) = s3();
    let _ = kubectl(&["create", "namespace", "kubectl-etcd-system"]);
    // S3 at 160 KiB/s towards it: the snapshot (about 7 MiB, one part) takes most of a minute,
    // and its PUT stays within the store's read timeout (120 s).
    let upstream = std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL (/tmp/tb/s3.env)");
    let proxy = SlowProxy::start(upstream.trim_start_matches("http://"), 160 * 1024);
    let endpoint = format!("http://{}", proxy.addr);
    s3_secret(&ns.0, "s3-slow", &endpoint);
    let _op = LocalOperator::allowing(&ns.0, "127.0.0.1:0", &endpoint);
    let manifest = |backup: &str| {
        format!(
            r#"{{"apiVersion":"etcd.kubectl-etcd.io/v1alpha1","kind":"EtcdCluster","metadata":{{"name":"demo","namespace":"{ns}"}},
"spec":{{"replicas":1,"version":"3.5.16","tls":{{"mode":"none"}}{backup}}}}}"#,
            ns = ns.0
        )
    };
    ok(kubectl_stdin(&["apply", "-f", "-"], &manifest("")));
    eventually("demo Running", Duration::from_secs(180), || {
        (cluster_json(&ns.0, "demo")["status"]["phase"] == "Running").then_some(())
    });
    write_keys(&ns.0, "demo-0", 3000);
    // A schedule whose first run is due at once (runOnCreate), uncompressed.
    let backup = format!(
        r#","backup":{{"destination":"s3://{bucket}/e2e/{}/beside","credentialsSecret":"s3-slow","schedule":"0 0 1 1 *","runOnCreate":true,"compression":"none"}}"#,
        ns.0
    );
    ok(kubectl_stdin(&["apply", "-f", "-"], &manifest(&backup)));
    let running = eventually(
        "a scheduled backup running",
        Duration::from_secs(60),
        || {
            backup_phases(&ns.0)
                .into_iter()
                .find(|(_, phase)| phase == "Running")
                .map(|(name, _)| name)
        },
    );
    // While it uploads, the engine repairs the cluster: a deleted Service comes back.
    ok(kubectl(&["-n", &ns.0, "delete", "service", "demo-client"]));
    eventually(
        "the client Service re-created",
        Duration::from_secs(30),
        || (kubectl(&["-n", &ns.0, "get", "service", "demo-client"]).code == 0).then_some(()),
    );
    let phase = backup_phases(&ns.0)
        .into_iter()
        .find(|(n, _)| *n == running)
        .map(|(_, p)| p);
    assert_eq!(
        phase.as_deref(),
        Some("Running"),
        "the Service was repaired while the backup was still uploading"
    );
    // Then the backup ends well, and the status derived from its record says so.
    eventually("the backup succeeded", Duration::from_secs(300), || {
        backup_phases(&ns.0)
            .into_iter()
            .any(|(n, p)| n == running && p == "Succeeded")
            .then_some(())
    });
    let c = eventually(
        "status.backup names it and BackupHealthy is True",
        Duration::from_secs(60),
        || {
            let c = cluster_json(&ns.0, "demo");
            let healthy = c["status"]["conditions"]
                .as_array()?
                .iter()
                .any(|k| k["type"] == "BackupHealthy" && k["status"] == "True");
            (c["status"]["backup"]["lastSuccessful"] == running.as_str() && healthy).then_some(c)
        },
    );
    assert!(
        c["status"]["backup"]["nextScheduledTime"].is_string(),
        "{}",
        c["status"]["backup"]
    );
    drop(proxy);
}

/// The keys of the S3 objects under `prefix` in `bucket` at `endpoint` (the testbed's credentials).
fn s3_keys(endpoint: &str, bucket: &str, prefix: &str) -> Vec<String> {
    let objects = Command::new("/var/cache/kubectl-etcd/s3-venv/bin/python")
        .args([
            "-c",
            "import sys,boto3; from botocore.config import Config; r=boto3.client('s3', endpoint_url=sys.argv[1], config=Config(s3={'addressing_style':'path'})).list_objects_v2(Bucket=sys.argv[2], Prefix=sys.argv[3]); print('\\n'.join(o['Key'] for o in r.get('Contents', [])))",
            endpoint,
            bucket,
            prefix,
        ])
        .output()
        .unwrap();
    assert!(
        objects.status.success(),
        "listing s3://{bucket}/{prefix}: {objects:?}"
    );
    String::from_utf8_lossy(&objects.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// The member a backup streams from goes away half-way: its pod is killed while the upload,
/// slowed by a proxy, holds the stream back (two parts uploading, the third read). The backup is
/// taken again from another member, from the start and into a new object, and succeeds with every
/// key; the broken try leaves no object behind and the record names the member that served.
#[test]
fn a_backup_whose_member_goes_away_midway_is_taken_again_from_another_member() {
    install_crd();
    let ns = Ns::new("backup-lost-source");
    let (s3_endpoint, bucket) = s3();
    create(&ns.0, "demo", "3.5.16");
    write_keys(&ns.0, "demo-0", 1000);
    // 40 values of 1 MiB: a snapshot of five 8 MiB parts.
    let (rt, client) = writer_client(&ns.0, "demo-0");
    rt.block_on(async {
        for i in 0..40u32 {
            let value: Vec<u8> = (0..1 << 20)
                .map(|j: u32| (j.wrapping_mul(2654435761) >> (i % 24)) as u8)
                .collect();
            client
                .clone()
                .put_bytes(&format!("big/{i:02}"), value, None)
                .await
                .unwrap();
        }
    });
    drop((rt, client));
    let before = keyspace_digest(&ns.0, "demo-0");
    let prefix = format!("e2e/{}/lost", ns.0);
    let to = format!("s3://{bucket}/{prefix}");
    // S3 at 1 MiB/s per connection: each part takes 8 s, so the stream waits on the upload.
    let upstream = std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL (/tmp/tb/s3.env)");
    let proxy = SlowProxy::start(upstream.trim_start_matches("http://"), 1 << 20);
    let mut backup = etcd_s3_cmd(
        &ns.0,
        &[
            "-o",
            "json",
            "backup",
            "demo",
            "--to",
            &to,
            "--compression",
            "none",
        ],
    );
    backup
        .env("AWS_ENDPOINT_URL", format!("http://{}", proxy.addr))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = backup.spawn().unwrap();
    // The member it streams from logs the start of the transfer.
    let source = eventually(
        "a member sending the snapshot",
        Duration::from_secs(60),
        || {
            (0..3).map(|i| format!("demo-{i}")).find(|pod| {
                kubectl(&["-n", &ns.0, "logs", pod])
                    .stdout
                    .contains("sending database snapshot to client")
            })
        },
    );
    std::thread::sleep(Duration::from_secs(2));
    // At once, as an eviction or a lost node stops it (deleted gracefully, etcd finishes the
    // snapshot it is sending before it exits, and the backup goes on from it unharmed).
    ok(kubectl(&[
        "-n",
        &ns.0,
        "delete",
        "pod",
        &source,
        "--grace-period=0",
        "--force",
        "--wait=false",
    ]));
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the backup failed: {stderr}");
    assert!(
        stderr.contains("taking it again from another one") && stderr.contains(source.as_str()),
        "the retry is said, with the member it left: {stderr}"
    );
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let st = &record["status"];
    assert_eq!(st["phase"], "Succeeded", "{record}");
    assert_eq!(st["verified"], true, "{record}");
    assert_ne!(
        st["member"],
        source.as_str(),
        "served by another member: {record}"
    );
    // Every key: the digest's k/ keys and the 40 big ones.
    assert_eq!(st["keys"].as_i64(), Some(before.0 as i64 + 40), "{record}");
    assert!(st["snapshotSize"].as_i64().unwrap() > 40 << 20, "{record}");
    // One object: the record's; the broken try's multipart upload was aborted.
    let keys = s3_keys(&s3_endpoint, &bucket, &prefix);
    let url = st["url"].as_str().unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(url.ends_with(&keys[0]), "{url} is the one object: {keys:?}");
    drop(proxy);
}

/// The first `n` bytes of the S3 object `key` of `bucket` (read with the testbed's credentials).
fn s3_head_bytes(bucket: &str, key: &str, n: usize) -> Vec<u8> {
    let (endpoint, _) = s3();
    let out = Command::new("/var/cache/kubectl-etcd/s3-venv/bin/python")
        .args([
            "-c",
            "import sys,boto3; from botocore.config import Config; r=boto3.client('s3', endpoint_url=sys.argv[1], config=Config(s3={'addressing_style':'path'})).get_object(Bucket=sys.argv[2], Key=sys.argv[3], Range='bytes=0-'+str(int(sys.argv[4])-1)); sys.stdout.buffer.write(r['Body'].read())",
            &endpoint,
            bucket,
            key,
            &n.to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Issue 17 item 6: a backup encrypted on the client with a key from a Secret (the object holds
/// no snapshot in the clear), restored with that key (every key back); with a wrong key, or with
/// none, the restore is refused before anything exists (exit 12, naming the backup and the
/// Secret): no cluster, no pod, no claim, no Secret.
#[test]
fn an_encrypted_backup_restores_with_its_key_and_a_wrong_or_missing_key_creates_nothing() {
    install_crd();
    let ns = Ns::new("backup-enc");
    let (_, bucket) = s3();
    let before = small_cluster(&ns.0, "demo", 1_000);
    let key = key_secrets(&ns.0);
    // A Secret that is not there: refused before any record exists.
    let missing = etcd_s3(
        &ns.0,
        &[
            "backup",
            "demo",
            "--to",
            &format!("s3://{bucket}/e2e/{}", ns.0),
            "--encryption-key-secret",
            "no-such-key",
        ],
        &[],
    );
    assert_eq!(missing.code, 12, "{}", missing.stderr);
    assert!(missing.stderr.contains("no-such-key"), "{}", missing.stderr);
    assert_eq!(backups_in(&ns.0), 0);

    let record = json(&ok(etcd_s3(
        &ns.0,
        &[
            "-o",
            "json",
            "backup",
            "demo",
            "--to",
            &format!("s3://{bucket}/e2e/{}", ns.0),
            "--encryption-key-secret",
            "backup-key",
        ],
        &[],
    )));
    let name = record["metadata"]["name"].as_str().unwrap().to_string();
    let url = record["status"]["url"].as_str().unwrap().to_string();
    assert!(url.ends_with(".db.zst.enc"), "{url}");
    assert_eq!(
        record["spec"]["encryption"]["keySecretRef"]["name"], "backup-key",
        "{record}"
    );
    assert!(
        !record.to_string().contains(&key),
        "the key is never written"
    );
    let object = url.split_once(&format!("s3://{bucket}/")).unwrap().1;
    let object = object.split('?').next().unwrap();
    let head = s3_head_bytes(&bucket, object, 8);
    assert_eq!(
        head, b"KEAEAD01",
        "the stored object is the encrypted stream"
    );

    // Wrong key: refused, nothing created.
    let (pods, claims) = (pods_in(&ns.0), claims_in(&ns.0));
    let refused = etcd_s3(
        &ns.0,
        &[
            "restore",
            "bad",
            "--from-backup",
            &name,
            "--encryption-key-secret",
            "other-key",
            "--replicas",
            "1",
        ],
        &[],
    );
    assert_eq!(refused.code, 12, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(&name)
            && refused.stderr.contains("other-key")
            && refused.stderr.contains("not the one"),
        "{}",
        refused.stderr
    );
    // No key for an encrypted object of unknown origin: refused, nothing created.
    let keyless = etcd_s3(
        &ns.0,
        &["restore", "bad", "--from", &url, "--replicas", "1"],
        &[],
    );
    assert_eq!(keyless.code, 12, "{}", keyless.stderr);
    assert!(
        keyless.stderr.contains("--encryption-key-secret"),
        "{}",
        keyless.stderr
    );
    assert_eq!(clusters_in(&ns.0), 1, "no cluster was created");
    assert_eq!(pods_in(&ns.0), pods, "no pod was created");
    assert_eq!(claims_in(&ns.0), claims, "no claim was created");
    let secrets = ok(kubectl(&["-n", &ns.0, "get", "secrets", "-o", "name"])).stdout;
    assert!(!secrets.contains("bad-restore"), "{secrets}");

    // The right key (the one the record names): every key and value comes back.
    ok(etcd_s3(
        &ns.0,
        &[
            "restore",
            "copy",
            "--from-backup",
            &name,
            "--replicas",
            "1",
            "--timeout",
            "4m",
        ],
        &[],
    ));
    let copy = cluster_json(&ns.0, "copy");
    assert_eq!(
        copy["spec"]["restore"]["encryption"]["keySecretRef"]["name"],
        "backup-key"
    );
    assert_eq!(keyspace_digest(&ns.0, "copy-0"), before);
}

/// Issue 17 item 6, on the destinations without S3: a backup encrypted with a key from a Secret
/// to a claim (pvc://) and to a directory of this machine (file://, restored through a staging
/// claim) restores with its key, every key back; with a wrong key it is refused before anything
/// exists (exit 12, no cluster, pod, claim or Secret); and `recover --from-backup` of the
/// encrypted record rebuilds the cluster from it.
#[test]
fn encrypted_backups_on_a_claim_and_in_a_file_restore_and_recover_with_their_key_only() {
    install_crd();
    let ns = Ns::new("backup-enc-pvc");
    let before = small_cluster(&ns.0, "demo", 300);
    key_secrets(&ns.0);
    backups_claim(&ns.0);
    let dir = tempfile::tempdir().unwrap();
    let file_dest = format!("file://{}", dir.path().display());
    let mut records = Vec::new();
    for to in ["pvc://backups/etcd", file_dest.as_str()] {
        let record = json(&ok(etcd_tools(
            &ns.0,
            &[
                "-o",
                "json",
                "backup",
                "demo",
                "--to",
                to,
                "--encryption-key-secret",
                "backup-key",
            ],
        )));
        let url = record["status"]["url"].as_str().unwrap().to_string();
        assert!(
            url.starts_with(to) && url.ends_with(".db.zst.enc"),
            "{to}: {url}"
        );
        assert_eq!(
            record["spec"]["encryption"]["keySecretRef"]["name"],
            "backup-key"
        );
        let name = record["metadata"]["name"].as_str().unwrap().to_string();
        records.push((name, url));
    }
    // The file holds the encrypted stream, readable by its owner only.
    let file = records[1].1.strip_prefix("file://").unwrap();
    let head = std::fs::read(file).unwrap();
    assert_eq!(&head[..8], b"KEAEAD01", "{file}");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file}");
    }

    // A wrong key: refused before anything exists, naming the backup and the Secret.
    let (pods, claims) = (pods_in(&ns.0), claims_in(&ns.0));
    for (from, source) in [
        ("--from-backup", records[0].0.as_str()),
        ("--from", records[1].1.as_str()),
    ] {
        let r = etcd_tools(
            &ns.0,
            &[
                "restore",
                "bad",
                from,
                source,
                "--encryption-key-secret",
                "other-key",
                "--replicas",
                "1",
            ],
        );
        assert_eq!(r.code, 12, "{source}: {}", r.stderr);
        assert!(
            r.stderr.contains("other-key") && r.stderr.contains("not the one"),
            "{source}: {}",
            r.stderr
        );
    }
    assert_eq!(clusters_in(&ns.0), 1, "no cluster was created");
    eventually("the agent pods gone", Duration::from_secs(60), || {
        (pods_in(&ns.0) == pods).then_some(())
    });
    assert_eq!(claims_in(&ns.0), claims, "no claim was created");
    let secrets = ok(kubectl(&["-n", &ns.0, "get", "secrets", "-o", "name"])).stdout;
    assert!(!secrets.contains("bad-restore"), "{secrets}");

    // The right key: from the claim (the record names it), and from the file (through a
    // staging claim), every key and value comes back.
    for (copy, from, source) in [
        ("copy", "--from-backup", records[0].0.as_str()),
        ("fcopy", "--from", records[1].1.as_str()),
    ] {
        ok(etcd_tools(
            &ns.0,
            &[
                "restore",
                copy,
                from,
                source,
                "--encryption-key-secret",
                "backup-key",
                "--replicas",
                "1",
                "--timeout",
                "4m",
            ],
        ));
        assert_eq!(
            keyspace_digest(&ns.0, &format!("{copy}-0")),
            before,
            "{copy} from {source}"
        );
        assert_eq!(
            cluster_json(&ns.0, copy)["spec"]["restore"]["encryption"]["keySecretRef"]["name"],
            "backup-key"
        );
    }
    eventually("the staging claim deleted", Duration::from_secs(60), || {
        (!claims_in(&ns.0).contains("fcopy-restore-source")).then_some(())
    });

    // recover from the encrypted record on the claim: what was written since is gone.
    ok(etcdctl(&ns.0, "demo-0", &["put", "after-backup", "yes"]));
    ok(etcd_tools(
        &ns.0,
        &[
            "recover",
            "demo",
            "--from-backup",
            &records[0].0,
            "--yes",
            "--force",
            "--timeout",
            "5m",
        ],
    ));
    assert_eq!(
        keyspace_digest(&ns.0, "demo-0"),
        before,
        "{}'s keys",
        records[0].0
    );
    let after = ok(etcdctl(&ns.0, "demo-0", &["get", "after-backup"])).stdout;
    assert!(after.trim().is_empty(), "{after}");
}

/// Issue 17 item 6: retention deletes only its own cluster's objects in its destination. Forged
/// `EtcdBackup` records labelled for the cluster — one naming an object outside the
/// destination, one naming another cluster's object inside it — are older than what retention
/// keeps, yet neither they nor their objects are deleted, while the real old backups are.
#[test]
fn retention_never_deletes_what_a_forged_record_points_at() {
    install_crd();
    let ns = Ns::new("backup-forged");
    let (_, bucket) = s3();
    s3_creds_secret(&ns.0);
    let prefix = format!("e2e/{}/scheduled", ns.0);
    let outside = format!("e2e/{}/precious/keep-me.db", ns.0);
    let others = format!("{prefix}/{}-other-20200101T000000.000Z-r1.db", ns.0);
    s3_put(&bucket, &outside);
    s3_put(&bucket, &others);
    let _op = LocalOperator::watching(&ns.0, "127.0.0.1:0");
    let (uid, _) = scheduled_demo(&ns.0, &bucket, &prefix, 0);
    // The forged records: scheduled, Succeeded, of this cluster (its uid), dated long ago; one
    // names an object beside the destination, one another cluster's object inside it.
    for (name, url) in [
        ("forged-outside", format!("s3://{bucket}/{outside}")),
        ("forged-other", format!("s3://{bucket}/{others}")),
    ] {
        let record = serde_json::json!({
            "apiVersion": "etcd.kubectl-etcd.io/v1alpha1",
            "kind": "EtcdBackup",
            "metadata": {"name": name, "namespace": ns.0, "labels": {
                "etcd.kubectl-etcd.io/cluster": "demo",
                "etcd.kubectl-etcd.io/trigger": "schedule"}},
            "spec": {"cluster": "demo", "destination": format!("s3://{bucket}/{prefix}"),
                "trigger": "schedule", "clusterUid": uid},
        });
        ok(kubectl_stdin(&["apply", "-f", "-"], &record.to_string()));
        let status = serde_json::json!({"status": {
            "phase": "Succeeded", "url": url, "verified": true, "quorum": true,
            "startTime": "2020-01-01T00:00:00Z", "completionTime": "2020-01-01T00:00:10Z"}});
        ok(kubectl(&[
            "-n",
            &ns.0,
            "patch",
            "etcdbackup",
            name,
            "--subresource",
            "status",
            "--type",
            "merge",
            "-p",
            &status.to_string(),
        ]));
    }
    // Real scheduled backups come and go (keepLast 1): at least two seen, one kept.
    let seen = std::cell::RefCell::new(std::collections::BTreeSet::new());
    eventually(
        "two real scheduled backups, one kept",
        Duration::from_secs(240),
        || {
            let now = scheduled_backups(&ns.0);
            let real: Vec<_> = now
                .iter()
                .filter(|b| !b.0.starts_with("forged-"))
                .cloned()
                .collect();
            seen.borrow_mut().extend(real.iter().map(|b| b.0.clone()));
            (seen.borrow().len() >= 2 && real.len() == 1).then_some(())
        },
    );
    let names = ok(kubectl(&["-n", &ns.0, "get", "etcdbackups", "-o", "name"])).stdout;
    assert!(
        names.contains("forged-outside") && names.contains("forged-other"),
        "the forged records are left alone: {names}"
    );
    for key in [&outside, &others] {
        assert_eq!(
            s3_head_bytes(&bucket, key, 9),
            b"not yours",
            "{key} is still there"
        );
    }
}

/// Puts `not yours` (9 bytes) at `key` in the testbed's S3.
fn s3_put(bucket: &str, key: &str) {
    let (endpoint, _) = s3();
    let out = Command::new("/var/cache/kubectl-etcd/s3-venv/bin/python")
        .args([
            "-c",
            "import sys,boto3; from botocore.config import Config; boto3.client('s3', endpoint_url=sys.argv[1], config=Config(s3={'addressing_style':'path'})).put_object(Bucket=sys.argv[2], Key=sys.argv[3], Body=b'not yours')",
            &endpoint,
            bucket,
            key,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes the EtcdBackup record `name` of demo (uid `uid`) as a tenant's hand would — scheduled,
/// of this cluster — and, as an admin, its status: `Succeeded`, its object at `url` with `size`
/// bytes and `sha256`, started at `start`.
fn forge_record(
    ns: &str,
    name: &str,
    uid: &str,
    dest: &str,
    claim: (&str, i64, &str),
    start: &str,
) {
    let (url, size, sha256) = claim;
    let record = serde_json::json!({
        "apiVersion": "etcd.kubectl-etcd.io/v1alpha1",
        "kind": "EtcdBackup",
        "metadata": {"name": name, "namespace": ns, "labels": {
            "etcd.kubectl-etcd.io/cluster": "demo",
            "etcd.kubectl-etcd.io/trigger": "schedule"}},
        "spec": {"cluster": "demo", "destination": dest, "trigger": "schedule", "clusterUid": uid},
    });
    ok(kubectl_stdin(&["apply", "-f", "-"], &record.to_string()));
    let status = serde_json::json!({"status": {
        "phase": "Succeeded", "url": url, "size": size, "sha256": sha256,
        "verified": true, "quorum": true, "startTime": start, "completionTime": start}});
    ok(kubectl(&[
        "-n",
        ns,
        "patch",
        "etcdbackup",
        name,
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        &status.to_string(),
    ]));
}

/// Issue 42 item 6: a record counts for retention only once the operator found its object with
/// the recorded size and sha256. Two forged "newest" records of demo (keepLast 1) — one naming
/// an object that does not exist, one naming an object of other bytes than it claims — would
/// each have pushed every real backup out; instead the real backups rotate as before (never
/// fewer than one), the forged records are read, marked not as recorded, and left alone with
/// the object they name.
#[test]
fn a_forged_newest_record_whose_object_is_missing_or_other_never_prunes_a_real_backup() {
    install_crd();
    let ns = Ns::new("backup-newest");
    let (_, bucket) = s3();
    s3_creds_secret(&ns.0);
    let prefix = format!("e2e/{}/scheduled", ns.0);
    let dest = format!("s3://{bucket}/{prefix}");
    let _op = LocalOperator::watching(&ns.0, "127.0.0.1:0");
    let (uid, _) = scheduled_demo(&ns.0, &bucket, &prefix, 50);
    let first = eventually(
        "the first scheduled backup, found as recorded",
        Duration::from_secs(180),
        || {
            let list = get_json(&ns.0, &["etcdbackups"]);
            list["items"].as_array()?.iter().find_map(|b| {
                (b["status"]["storeCheck"]["matched"] == true)
                    .then(|| b["metadata"]["name"].as_str().unwrap().to_string())
            })
        },
    );
    // Dated two minutes ahead: newer than every real backup for the rest of the test.
    let ahead = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(120);
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let key = |r: i64| {
        format!(
            "{prefix}/{}-demo-{}-r{r}.db.zst",
            ns.0,
            ahead.strftime("%Y%m%dT%H%M%S.000Z")
        )
    };
    let sum = "ab".repeat(32);
    forge_record(
        &ns.0,
        "forged-missing",
        &uid,
        &dest,
        (&format!("s3://{bucket}/{}", key(1)), 4096, &sum),
        &now,
    );
    s3_put(&bucket, &key(2));
    forge_record(
        &ns.0,
        "forged-other",
        &uid,
        &dest,
        (&format!("s3://{bucket}/{}", key(2)), 4096, &sum),
        &now,
    );
    let seen = std::cell::RefCell::new(std::collections::BTreeSet::from([first]));
    eventually(
        "two more real scheduled backups, one kept, the forged ones read",
        Duration::from_secs(300),
        || {
            let real: Vec<_> = scheduled_backups(&ns.0)
                .into_iter()
                .filter(|b| !b.0.starts_with("forged-"))
                .collect();
            assert!(
                !real.is_empty(),
                "every real backup was deleted (seen: {:?})",
                seen.borrow()
            );
            seen.borrow_mut().extend(real.iter().map(|b| b.0.clone()));
            let read = ["forged-missing", "forged-other"].iter().all(|n| {
                let b = get_json(&ns.0, &["etcdbackup", n]);
                b["status"]["storeCheck"]["matched"] == false
            });
            (seen.borrow().len() >= 3 && real.len() == 1 && read).then_some(())
        },
    );
    let missing = get_json(&ns.0, &["etcdbackup", "forged-missing"]);
    let why = missing["status"]["storeCheck"]["message"]
        .as_str()
        .unwrap_or("");
    assert!(why.contains("is not in the store"), "{missing}");
    let other = get_json(&ns.0, &["etcdbackup", "forged-other"]);
    let why = other["status"]["storeCheck"]["message"]
        .as_str()
        .unwrap_or("");
    assert!(
        why.contains("holds 9 bytes") && why.contains("the record says 4096 bytes"),
        "{other}"
    );
    assert_eq!(
        s3_head_bytes(&bucket, &key(2), 9),
        b"not yours",
        "the object a forged record names is left alone"
    );
}

/// An S3 server whose certificate a private CA signed (the TLS front of the test server): the
/// CLI refuses it without the CA, naming AWS_CA_BUNDLE (exit 10); with `AWS_CA_BUNDLE` (a file
/// here) it backs up; a restore pod trusts it through the credentials Secret's `AWS_CA_BUNDLE`
/// (the PEM itself); a Secret whose bundle holds no certificate is refused (exit 2) and nothing
/// is created.
#[test]
fn a_store_behind_a_private_ca_backs_up_and_restores_with_its_ca_bundle() {
    install_crd();
    let ns = Ns::new("backup-private-ca");
    let (_, bucket) = s3();
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!("{name} is not set: `tests/cluster/s3.sh up` writes it to /tmp/tb/s3.env")
        })
    };
    let (endpoint, ca) = (var("KE_S3_TLS_POD_ENDPOINT"), var("KE_S3_TLS_CA"));
    let before = small_cluster(&ns.0, "src", 200);
    let to = format!("s3://{bucket}/e2e/{}", ns.0);
    let tls = [("AWS_ENDPOINT_URL", endpoint.as_str())];

    let refused = etcd_s3(&ns.0, &["backup", "src", "--to", &to], &tls);
    assert_eq!(refused.code, 10, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("is not trusted") && refused.stderr.contains("AWS_CA_BUNDLE"),
        "{}",
        refused.stderr
    );
    let records = backups_in(&ns.0);
    let unreadable = etcd_s3(
        &ns.0,
        &["backup", "src", "--to", &to],
        &[tls[0], ("AWS_CA_BUNDLE", "/nonexistent/ca.pem")],
    );
    assert_eq!(unreadable.code, 2, "{}", unreadable.stderr);
    assert!(
        unreadable
            .stderr
            .contains("AWS_CA_BUNDLE=/nonexistent/ca.pem cannot be read"),
        "{}",
        unreadable.stderr
    );
    assert_eq!(backups_in(&ns.0), records, "bad input wrote a record");
    let taken = json(&ok(etcd_s3(
        &ns.0,
        &["backup", "src", "--to", &to, "-o", "json"],
        &[tls[0], ("AWS_CA_BUNDLE", ca.as_str())],
    )));
    assert_eq!(backups_in(&ns.0), records + 1);

    // Through an egress proxy (HTTPS_PROXY, a CONNECT tunnel), and around it for NO_PROXY's hosts.
    // The CLI's API connections take the same proxy (they failed outright before: kube's proxy
    // support was not built).
    let target = endpoint.trim_start_matches("https://").to_string();
    let node = target.rsplit_once(':').unwrap().0.to_string();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (proxy, tunnelled) = rt.block_on(proxy::connect_proxy(&format!("{node}:0")));
    let via = format!("http://{proxy}");
    let through = || {
        tunnelled
            .lock()
            .unwrap()
            .iter()
            .filter(|t| **t == target)
            .count()
    };
    let bundle = ("AWS_CA_BUNDLE", ca.as_str());
    ok(etcd_s3(
        &ns.0,
        &["backup", "src", "--to", &to],
        &[tls[0], bundle, ("HTTPS_PROXY", via.as_str())],
    ));
    let proxied = through();
    assert!(proxied > 0, "the backup did not go through HTTPS_PROXY");
    ok(etcd_s3(
        &ns.0,
        &["backup", "src", "--to", &to],
        &[
            tls[0],
            bundle,
            ("HTTPS_PROXY", via.as_str()),
            ("NO_PROXY", node.as_str()),
        ],
    ));
    assert_eq!(through(), proxied, "NO_PROXY's host went through the proxy");
    assert_eq!(taken["status"]["phase"], "Succeeded", "{taken}");

    // A Secret whose AWS_CA_BUNDLE is no certificate: refused before anything is created.
    let secret = |name: &str, bundle: &str| s3_secret_with(&ns.0, name, &endpoint, &[bundle]);
    secret("junk-ca", "--from-literal=AWS_CA_BUNDLE=not a certificate");
    let bad = etcd_s3(
        &ns.0,
        &[
            "restore",
            "junk",
            "--latest-of",
            "src",
            "--credentials-secret",
            "junk-ca",
        ],
        &[],
    );
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr
            .contains(&format!("Secret {}/junk-ca, key AWS_CA_BUNDLE", ns.0)),
        "{}",
        bad.stderr
    );
    assert_eq!(clusters_in(&ns.0), 1, "a cluster was created");

    // The CA in the Secret: the restore pod reads the backup through the TLS front.
    // The Secret's keys are the restore pod's environment: its HTTPS_PROXY too.
    s3_secret_with(
        &ns.0,
        "private-ca",
        &endpoint,
        &[
            &format!("--from-file=AWS_CA_BUNDLE={ca}"),
            &format!("--from-literal=HTTPS_PROXY={via}"),
        ],
    );
    let before_restore = through();
    ok(etcd_s3(
        &ns.0,
        &[
            "restore",
            "copy",
            "--latest-of",
            "src",
            "--credentials-secret",
            "private-ca",
            "--replicas",
            "1",
            "--timeout",
            "4m",
        ],
        &[],
    ));
    assert_eq!(keyspace_digest(&ns.0, "copy-0"), before);
    assert!(
        through() > before_restore,
        "the restore pod did not go through the Secret's HTTPS_PROXY"
    );

    // No Secret named: the one `restore` makes from this machine's AWS_* carries the bundle's PEM,
    // here a bundle larger than a variable may be (a whole system bundle is ~200 KiB: the pod
    // gets it as a file, or its exec would fail with "argument list too long").
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("bundle.pem");
    let pem = std::fs::read_to_string(&ca).unwrap().repeat(300);
    assert!(pem.len() > 128 * 1024, "{} bytes", pem.len());
    std::fs::write(&big, pem).unwrap();
    ok(etcd_s3(
        &ns.0,
        &[
            "restore",
            "again",
            "--latest-of",
            "src",
            "--replicas",
            "1",
            "--timeout",
            "4m",
        ],
        &[tls[0], ("AWS_CA_BUNDLE", big.to_str().unwrap())],
    ));
    assert_eq!(keyspace_digest(&ns.0, "again-0"), before);
}
