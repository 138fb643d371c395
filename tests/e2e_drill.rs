//! End-to-end: restore drills (`kubectl etcd backup verify`) against the testbed and its S3
//! server. A good backup restores in a throwaway etcd with the live cluster's `HashKV`; three
//! tampered objects (a flipped byte, cut short, another cluster's valid snapshot put under its
//! name) each fail with exit 13 and their reason on the record; no drill leaves a pod or a policy.
#![cfg(feature = "e2e")]
#![allow(clippy::too_many_lines)]

mod common;

use std::process::Command;

use common::*;

/// `kubectl etcd -n NS ARGS` reaching S3 as the pods do, with this build's image for the pods.
fn etcd_s3(ns: &str, args: &[&str]) -> Run {
    let (endpoint, _) = s3();
    let mut c: Command = kubectl_cmd(&[&["etcd", "-n", ns], args].concat());
    c.env("AWS_ENDPOINT_URL", endpoint).env(
        "KUBECTL_ETCD_TOOLS_IMAGE",
        std::env::var("KE_OPERATOR_IMAGE").expect("KE_OPERATOR_IMAGE is not set"),
    );
    run_cmd(&[&["etcd", "-n", ns], args].concat(), c)
}

/// Runs a boto3 script against the testbed's S3 with `args` (sys.argv[1] is the endpoint).
fn s3_py(script: &str, args: &[&str]) {
    let (endpoint, _) = s3();
    let out = Command::new("/var/cache/kubectl-etcd/s3-venv/bin/python")
        .arg("-c")
        .arg(format!(
            "import sys,boto3; from botocore.config import Config\n\
             c = boto3.client('s3', endpoint_url=sys.argv[1], config=Config(s3={{'addressing_style':'path'}}))\n{script}"
        ))
        .arg(&endpoint)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn create_one(ns: &str, name: &str, keys: &[&str]) {
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
    for k in keys {
        ok(etcdctl(
            ns,
            &format!("{name}-0"),
            &["put", k, &format!("v-{k}")],
        ));
    }
}

/// Takes a backup of `cluster` to `to`: (record name, object key in the bucket).
fn backup(ns: &str, cluster: &str, to: &str, bucket: &str) -> (String, String) {
    let r = ok(etcd_s3(
        ns,
        &[
            "-o",
            "json",
            "backup",
            cluster,
            "--to",
            to,
            "--credentials-secret",
            "s3",
        ],
    ));
    let v = json(&r);
    let v = if v.is_array() { v[0].clone() } else { v };
    let url = v["status"]["url"].as_str().unwrap().to_string();
    let key = url
        .strip_prefix(&format!("s3://{bucket}/"))
        .unwrap()
        .to_string();
    (v["metadata"]["name"].as_str().unwrap().to_string(), key)
}

/// `backup verify`, with this build's CRD applied first: on a testbed shared with other builds,
/// an older one's `install` may have applied a CRD without `status.drill` since.
fn verify(ns: &str, args: &[&str]) -> Run {
    install_crd();
    etcd_s3(ns, args)
}

fn drill_objects(ns: &str) -> String {
    let r = ok(kubectl(&[
        "-n",
        ns,
        "get",
        "pods,networkpolicies,persistentvolumeclaims",
        "-l",
        "etcd.kubectl-etcd.io/drill-of",
        "-o",
        "name",
    ]));
    r.stdout.trim().to_string()
}

#[test]
fn a_good_backup_passes_its_drill_and_three_tampered_ones_fail_leaving_nothing() {
    install_crd();
    let ns = Ns::new("drill");
    let (endpoint, bucket) = s3();
    s3_secret(&ns.0, "s3", &endpoint);
    let t0 = std::time::Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| create_one(&ns.0, "demo", &["a", "b", "c", "d", "e"]));
        s.spawn(|| create_one(&ns.0, "other", &["x", "y"]));
    });
    let to = format!("s3://{bucket}/e2e/{}/drill", ns.0);
    let good = backup(&ns.0, "demo", &to, &bucket);
    let flipped = backup(&ns.0, "demo", &to, &bucket);
    let cut = backup(&ns.0, "demo", &to, &bucket);
    let foreign = backup(&ns.0, "demo", &to, &bucket);
    let others = backup(&ns.0, "other", &to, &bucket);
    eprintln!("clusters and backups in {:?}", t0.elapsed());

    // The objects carry their own size and sha256 (S3 user metadata).
    s3_py(
        "h = c.head_object(Bucket=sys.argv[2], Key=sys.argv[3])['Metadata']\n\
         assert len(h.get('kubectl-etcd-sha256', '')) == 64 and int(h['kubectl-etcd-size']) > 0, h",
        &[&bucket, &good.1],
    );

    let t1 = std::time::Instant::now();
    let r = verify(&ns.0, &["-o", "json", "backup", "verify", &good.0]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = json(&r);
    let v = if v.is_array() { v[0].clone() } else { v };
    let drill = &v["status"]["drill"];
    assert_eq!(drill["outcome"], "Passed", "{v}");
    assert_eq!(drill["revision"], v["status"]["revision"], "{v}");
    assert_eq!(drill["keys"], v["status"]["keys"], "{v}");
    assert!(drill["hashKv"].as_i64().is_some(), "{v}");
    assert_eq!(drill["hashKv"], drill["liveHashKv"], "{v}");
    eprintln!("a good drill in {:?}", t1.elapsed());
    // On the record too, as `kubectl get` shows it.
    let rec = json(&ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "etcdbackup",
        &good.0,
        "-o",
        "json",
    ])));
    assert_eq!(rec["status"]["drill"]["outcome"], "Passed", "{rec}");

    // A flipped byte in the middle, rewritten in place (no stamp of its own any more).
    s3_py(
        "b = bytearray(c.get_object(Bucket=sys.argv[2], Key=sys.argv[3])['Body'].read())\n\
         b[len(b) // 2] ^= 0x10\n\
         c.put_object(Bucket=sys.argv[2], Key=sys.argv[3], Body=bytes(b))",
        &[&bucket, &flipped.1],
    );
    // Cut short.
    s3_py(
        "b = c.get_object(Bucket=sys.argv[2], Key=sys.argv[3])['Body'].read()\n\
         c.put_object(Bucket=sys.argv[2], Key=sys.argv[3], Body=b[: len(b) * 2 // 3])",
        &[&bucket, &cut.1],
    );
    // Another cluster's valid snapshot copied under this one's name (its metadata along).
    s3_py(
        "c.copy_object(Bucket=sys.argv[2], Key=sys.argv[3], CopySource={'Bucket': sys.argv[2], 'Key': sys.argv[4]})",
        &[&bucket, &foreign.1, &others.1],
    );
    for (name, says) in [
        (&flipped.0, vec!["does not restore", "fetch step failed"]),
        (
            &cut.0,
            vec!["the record says", "truncated", "does not restore"],
        ),
        (
            &foreign.0,
            vec![
                "another object was put under its name",
                "HashKV at revision",
                "another cluster's snapshot",
            ],
        ),
    ] {
        let r = verify(&ns.0, &["backup", "verify", name]);
        assert_eq!(r.code, 13, "{name}: {}", r.stderr);
        assert!(
            r.stderr.contains("the restore drill of EtcdBackup"),
            "{}",
            r.stderr
        );
        for s in says {
            assert!(r.stderr.contains(s), "{name} says {s:?}: {}", r.stderr);
        }
        let rec = json(&ok(kubectl(&[
            "-n",
            &ns.0,
            "get",
            "etcdbackup",
            name,
            "-o",
            "json",
        ])));
        assert_eq!(rec["status"]["drill"]["outcome"], "Failed", "{rec}");
        assert!(rec["status"]["drill"]["message"].is_string(), "{rec}");
    }
    eprintln!("four drills in {:?}", t1.elapsed());

    // restore --latest-of would now pick the drilled good backup over the newer failed ones.
    let r = ok(etcd_s3(
        &ns.0,
        &["restore", "copy", "--latest-of", "demo", "--dry-run"],
    ));
    assert!(
        r.stdout.contains(&good.1) && r.stderr.contains(&format!("passed over {}", foreign.0)),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(
        drill_objects(&ns.0),
        "",
        "no drill pod, policy or claim is left"
    );
}

/// `spec.backup.drill` on a cluster with a backup: an operator in this process, scoped to the
/// test's namespace, first sweeps a drill pod an earlier operator left for a record that is gone,
/// then drills the backup through its passes (start, the pod beside the passes, finish), writes
/// the verdict on the record and `status.backup.lastDrill`, and leaves nothing behind.
#[tokio::test(flavor = "multi_thread")]
async fn the_operator_drills_a_backup_on_schedule_and_sweeps_what_a_dead_one_left() {
    use futures::FutureExt;
    use kube::api::{Api, Patch, PatchParams};
    use kubectl_etcd::api::{EtcdBackup, EtcdCluster};
    use kubectl_etcd::engine::Dial;
    use kubectl_etcd::operate::OperateOptions;

    install_crd();
    let ns = Ns::new("drill-sched");
    let (endpoint, bucket) = s3();
    s3_secret(&ns.0, "s3", &endpoint);
    let image = std::env::var("KE_OPERATOR_IMAGE").expect("KE_OPERATOR_IMAGE is not set");
    create_one(&ns.0, "demo", &["a", "b", "c"]);
    let to = format!("s3://{bucket}/e2e/{}/sched", ns.0);
    let (good, _) = backup(&ns.0, "demo", &to, &bucket);

    // What an operator that died mid-drill left: the pod of a drill whose record is gone since.
    let leftover = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "gone-drill", "namespace": ns.0, "labels": {
            "etcd.kubectl-etcd.io/drill-of": "demo",
            "etcd.kubectl-etcd.io/drill": "gone-drill",
            "etcd.kubectl-etcd.io/trigger": "schedule",
            "app.kubernetes.io/managed-by": "kubectl-etcd",
        }},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "read", "image": image, "command": ["sleep", "3600"],
        }]},
    });
    let file = std::env::temp_dir().join(format!("{}-leftover.json", ns.0));
    std::fs::write(&file, leftover.to_string()).unwrap();
    ok(kubectl(&["apply", "-f", file.to_str().unwrap()]));

    let client = client().await;
    let clusters: Api<EtcdCluster> = Api::namespaced(client.clone(), &ns.0);
    let backups: Api<EtcdBackup> = Api::namespaced(client.clone(), &ns.0);
    let on = serde_json::json!({"spec": {"backup": {
        "destination": to,
        "credentialsSecret": "s3",
        "drill": {"every": "10m", "toolsImage": image},
    }}});
    clusters
        .patch("demo", &PatchParams::default(), &Patch::Merge(&on))
        .await
        .unwrap();

    let t0 = std::time::Instant::now();
    let prefix = image.split('/').next().unwrap().to_string();
    let op = InProcessOperator::start(OperateOptions {
        identity: format!("operator/e2e-drill-{}", std::process::id()),
        lease_namespace: ns.0.clone(),
        store_access: kubectl_etcd::archive::store::Access::ANY,
        leave: kubectl_etcd::model::Leave::operator(Vec::new(), vec![prefix]),
        ..OperateOptions::new(
            client.clone(),
            Some(ns.0.clone()),
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            Dial::PortForward,
        )
    });
    let outcome = std::panic::AssertUnwindSafe(async {
        let drill = eventually_async(
            "the scheduled drill's verdict on the record",
            420,
            || async { backups.get(&good).await.ok()?.status?.drill },
        )
        .await;
        eprintln!(
            "drilled through the operator's passes in {:?}",
            t0.elapsed()
        );
        assert_eq!(drill.outcome, "Passed", "{drill:?}");
        assert!(
            drill.hash_kv.is_some() && drill.hash_kv == drill.live_hash_kv,
            "{drill:?}"
        );
        let st = eventually_async("status.backup.lastDrill", 60, || async {
            let b = clusters.get("demo").await.ok()?.status?.backup?;
            b.last_drill.is_some().then_some(b)
        })
        .await;
        let last = st.last_drill.clone().unwrap();
        assert_eq!(
            (last.backup.as_str(), last.outcome.as_str()),
            (good.as_str(), "Passed")
        );
        let (at, next) = (last.time.unwrap().0, st.next_drill_time.unwrap().0);
        assert_eq!(
            next.as_second() - at.as_second(),
            600,
            "next = last + every"
        );
        // No pod or policy left, the leftover swept too.
        eventually_async("no drill object left", 60, || async {
            drill_objects(&ns.0).is_empty().then_some(())
        })
        .await;
        // `kubectl etcd status` says it.
        let r = ok(etcd_s3(&ns.0, &["status", "demo"]));
        assert!(
            r.stdout.contains(&format!("last drill of {good} Passed"))
                && r.stdout.contains("next drill in"),
            "{}",
            r.stdout
        );
    })
    .catch_unwind()
    .await;
    let stopped = op.stop().await;
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
    assert!(matches!(stopped, Some(Ok(()))), "{stopped:?}");
}
