//! End-to-end: `kubectl etcd backup` / `backup list` / `restore` against the testbed and the real
//! S3 server (tests/cluster/s3.sh): every key and value comes back, corrupt or mismatching
//! snapshots are refused before anything is created, bad input changes nothing.
#![cfg(feature = "e2e")]

mod common;

use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

use common::*;

/// S3 as both this machine and the cluster's pods reach it (the node IP), and its bucket.
fn s3() -> (String, String) {
    let endpoint = std::env::var("KE_S3_POD_ENDPOINT").expect(
        "KE_S3_POD_ENDPOINT is not set: start S3 with tests/cluster/s3.sh up and source /tmp/tb/s3.env (tests/run-all.sh does)",
    );
    let bucket = std::env::var("KE_S3_BUCKET").expect("KE_S3_BUCKET is not set (/tmp/tb/s3.env)");
    (endpoint, bucket)
}

/// `kubectl etcd …` with S3 reached through the node IP (so restore pods can reach it too), and
/// the project's image for the restore pods.
fn etcd_s3(ns: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let (endpoint, _) = s3();
    let mut c: Command = kubectl_cmd(&[&["etcd", "-n", ns], args].concat());
    c.env("AWS_ENDPOINT_URL", endpoint).env(
        "KUBECTL_ETCD_TOOLS_IMAGE",
        std::env::var("KE_OPERATOR_IMAGE").expect("KE_OPERATOR_IMAGE is not set"),
    );
    for (k, v) in env {
        c.env(k, v);
    }
    run_cmd(&[&["etcd", "-n", ns], args].concat(), c)
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

/// Count and digest of every key and value under `k/` (inside the member pod).
fn keyspace_digest(ns: &str, pod: &str) -> (usize, String) {
    let count = ok(kubectl(&[
        "-n",
        ns,
        "exec",
        pod,
        "--",
        "sh",
        "-c",
        "etcdctl get --prefix k/ --keys-only | grep -c .",
    ]))
    .stdout
    .trim()
    .parse()
    .unwrap();
    let digest = ok(kubectl(&[
        "-n",
        ns,
        "exec",
        pod,
        "--",
        "sh",
        "-c",
        "etcdctl get --prefix k/ | sha256sum",
    ]))
    .stdout;
    (count, digest.split_whitespace().next().unwrap_or("").into())
}

fn create(ns: &str, name: &str, version: &str) {
    ok(etcd(
        ns,
        &[
            "create",
            name,
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
        // Restoring a file the cluster cannot read is refused after verification, nothing created.
        let r = etcd(
            &ns.0,
            &["restore", &format!("from-{compression}"), "--from", &url],
        );
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            r.stderr.contains("verified") && r.stderr.contains("s3://"),
            "{}",
            r.stderr
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
    let prefix = format!("e2e/{}/scheduled", ns.0);
    let manifest = format!(
        r#"{{"apiVersion":"etcd.kubectl-etcd.io/v1alpha1","kind":"EtcdCluster","metadata":{{"name":"demo","namespace":"{ns}"}},
"spec":{{"replicas":1,"version":"3.5.16","backup":{{"destination":"s3://{bucket}/{prefix}","credentialsSecret":"s3-creds",
"schedule":"* * * * *","runOnCreate":true,"compression":"gzip","retention":{{"keepLast":2}}}}}}}}"#,
        ns = ns.0
    );
    ok(kubectl_stdin(&["apply", "-f", "-"], &manifest));
    let _op = LocalOperator(
        kubectl_cmd(&[
            "etcd",
            "operate",
            "--watch-namespace",
            &ns.0,
            "--metrics-addr",
            "127.0.0.1:18099",
            "--dial",
            "port-forward",
            "--identity",
            &format!("operator/e2e-{}", ns.0),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap(),
    );
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
    let objects = Command::new("/var/cache/kubectl-etcd/s3-venv/bin/python")
        .args([
            "-c",
            "import sys,boto3; from botocore.config import Config; r=boto3.client('s3', endpoint_url=sys.argv[1], config=Config(s3={'addressing_style':'path'})).list_objects_v2(Bucket=sys.argv[2], Prefix=sys.argv[3]); print(len(r.get('Contents', [])))",
            &endpoint,
            &bucket,
            &prefix,
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&objects.stdout).trim(),
        "2",
        "two objects left in S3"
    );
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
            let metrics = http_get("127.0.0.1:18099", "/metrics");
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

#[test]
fn two_of_three_members_lost_then_recover_rebuilds_from_the_survivor_with_every_acknowledged_key() {
    install_crd();
    let ns = Ns::new("recover");
    let (_, bucket) = s3();
    create(&ns.0, "demo", "3.5.16");
    write_keys(&ns.0, "demo-0", 2_000);
    let before = keyspace_digest(&ns.0, "demo-0");
    let old_id = cluster_json(&ns.0, "demo")["status"]["clusterId"].clone();
    // Two members and their volumes are lost for good: only demo-0 keeps the data, no quorum.
    ok(kubectl(&[
        "-n",
        &ns.0,
        "scale",
        "statefulset",
        "demo",
        "--replicas",
        "1",
    ]));
    eventually("demo-1 and demo-2 gone", Duration::from_secs(90), || {
        let pods = ok(kubectl(&["-n", &ns.0, "get", "pods", "-o", "name"])).stdout;
        (!pods.contains("demo-1") && !pods.contains("demo-2")).then_some(())
    });
    ok(kubectl(&[
        "-n",
        &ns.0,
        "delete",
        "pvc",
        "data-demo-1",
        "data-demo-2",
    ]));
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

    ok(etcd_s3(
        &ns.0,
        &["recover", "demo", "--to", &to, "--yes", "--timeout", "5m"],
        &[],
    ));
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(ready_members(&c["status"]), (3, 3, 3), "{}", c["status"]);
    assert_ne!(
        c["status"]["clusterId"], old_id,
        "a recovered cluster has a new id"
    );
    assert_eq!(
        keyspace_digest(&ns.0, "demo-2"),
        before,
        "every acknowledged key is back"
    );
    ok(etcdctl(&ns.0, "demo-1", &["put", "after-recover", "yes"]));
}
