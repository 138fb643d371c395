//! End-to-end: `kubectl etcd adopt` takes over etcd clusters nobody here wrote the operator for:
//! a plain StatefulSet (tests/cluster/plain-etcd-sts.yaml) and one shaped like the Bitnami
//! chart's (tests/cluster/bitnami-etcd-sts.yaml), each with a writer going through the OLD
//! client Service. Every acknowledged write must be readable afterwards, the cluster id and a
//! key's mod revision unchanged, the old StatefulSet at 0 with its volumes kept. The CLI is
//! killed mid-adoption and run again; an adoption is aborted halfway and the old cluster is back.
//! A third layout speaks TLS between peers and to clients (tests/cluster/plain-etcd-sts-tls.yaml):
//! refused until the new members' certificates fit the old cluster's CA, then adopted with its
//! writer going on over TLS.
#![cfg(feature = "e2e")]

mod common;

use std::collections::BTreeSet;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::*;

const PLAIN_IMAGE: &str = "gcr.io/etcd-development/etcd:v3.6.16";
const BITNAMI_IMAGE: &str = "gcr.io/etcd-development/etcd:v3.5.35";

/// A pod that puts `w/<i>` through `endpoint` about three times a second and prints `ack <i>` or `fail <i>`;
/// with `tls`, presenting the client certificate of that Secret (tls.crt, tls.key, ca.crt).
fn start_writer(ns: &str, endpoint: &str, tls: Option<&str>) {
    let certs = if tls.is_some() {
        " --cacert=/tls/ca.crt --cert=/tls/tls.crt --key=/tls/tls.key"
    } else {
        ""
    };
    let script = format!(
        "i=0; while true; do if etcdctl --endpoints={endpoint}{certs} --command-timeout=5s put w/$i v$i >/dev/null 2>&1; then r=ack; else r=fail; fi; echo $r $i; i=$((i+1)); sleep 0.25; done"
    );
    let mut pod = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "writer", "namespace": ns},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{
                "name": "writer",
                "image": BITNAMI_IMAGE,
                "command": ["sh", "-c", script],
            }],
        },
    });
    if let Some(secret) = tls {
        pod["spec"]["volumes"] =
            serde_json::json!([{"name": "tls", "secret": {"secretName": secret}}]);
        pod["spec"]["containers"][0]["volumeMounts"] =
            serde_json::json!([{"name": "tls", "mountPath": "/tls", "readOnly": true}]);
    }
    ok(kubectl_stdin(&["apply", "-f", "-"], &pod.to_string()));
    eventually(
        "the writer acknowledges writes",
        Duration::from_secs(90),
        || (acked(ns).len() > 5).then_some(()),
    );
}

fn acked(ns: &str) -> BTreeSet<String> {
    let r = kubectl(&["-n", ns, "logs", "writer"]);
    r.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ack "))
        .map(|i| format!("w/{i}"))
        .collect()
}

/// The writer stops; every write it saw acknowledged is read back through `pod`.
fn assert_no_acknowledged_write_lost(ns: &str, pod: &str) {
    let _ = kubectl(&["-n", ns, "delete", "pod", "writer", "--wait=false"]);
    std::thread::sleep(Duration::from_secs(2));
    let log = kubectl(&["-n", ns, "logs", "writer"]).stdout;
    let acked: BTreeSet<String> = log
        .lines()
        .filter_map(|l| l.strip_prefix("ack "))
        .map(|i| format!("w/{i}"))
        .collect();
    let failed = log.lines().filter(|l| l.starts_with("fail ")).count();
    let keys: BTreeSet<String> = ok(etcdctl(ns, pod, &["get", "--prefix", "w/", "--keys-only"]))
        .stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    let lost: Vec<&String> = acked.difference(&keys).collect();
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    assert!(
        acked.len() > 50,
        "the writer acknowledged only {}",
        acked.len()
    );
    eprintln!(
        "writer: {} acknowledged, {failed} failed, none lost",
        acked.len()
    );
}

/// (cluster id, mod revision of `before`) as `pod` answers them.
fn identity(ns: &str, pod: &str) -> (u64, i64) {
    let v = json(&ok(etcdctl(ns, pod, &["get", "before", "-w", "json"])));
    (
        v["header"]["cluster_id"].as_u64().unwrap(),
        v["kvs"][0]["mod_revision"].as_i64().unwrap(),
    )
}

fn adopt_cmd(ns: &str, name: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "etcd",
        "-n",
        ns,
        "adopt",
        name,
        "--from",
        "statefulset/etcd",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn spawn(args: &[String]) -> Child {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    kubectl_cmd(&a)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("kubectl runs")
}

fn run(args: &[String]) -> Run {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    kubectl(&a)
}

/// `status.adoption.newVoters` of EtcdCluster `name` (0 before the engine wrote one).
fn new_voters(ns: &str, name: &str) -> i64 {
    let r = kubectl(&["-n", ns, "get", "etcdcluster", name, "-o", "json"]);
    if r.code != 0 {
        return 0;
    }
    json(&r)["status"]["adoption"]["newVoters"]
        .as_i64()
        .unwrap_or(0)
}

/// The old cluster is gone into EtcdCluster `name`: 3 voters of its own, the same cluster id and
/// history, the old StatefulSet at 0 with its 3 volumes.
fn assert_adopted(ns: &str, name: &str, before: (u64, i64)) {
    let pod = format!("{name}-0");
    let members = members(ns, &pod);
    let want: Vec<(String, bool)> = (0..3).map(|k| (format!("{name}-{k}"), false)).collect();
    let mut got = members.clone();
    got.sort();
    assert_eq!(got, want, "only the new members are left, all voters");
    assert_eq!(
        identity(ns, &pod),
        before,
        "cluster id and mod revision kept"
    );
    let c = cluster_json(ns, name);
    assert_eq!(c["status"]["adoption"]["phase"], "Adopted", "{c}");
    let sts = old_statefulset(ns);
    assert_eq!(
        sts["spec"]["replicas"], 0,
        "the old StatefulSet is kept at 0"
    );
    for k in 0..3 {
        ok(kubectl(&[
            "-n",
            ns,
            "get",
            "pvc",
            &format!("data-etcd-{k}"),
        ]));
    }
}

/// The old StatefulSet `etcd` as `kubectl get -o json` shows it.
fn old_statefulset(ns: &str) -> serde_json::Value {
    json(&ok(kubectl(&[
        "-n",
        ns,
        "get",
        "statefulset",
        "etcd",
        "-o",
        "json",
    ])))
}

/// The old cluster of `file` running `image`, a key `before` written, and the writer going
/// through its Service `etcd`; returns the cluster id and the key's mod revision.
fn old_cluster_with_a_writer(ns: &str, file: &str, image: &str) -> (u64, i64) {
    install_crd();
    apply_manifest(ns, file, image);
    ok(etcdctl(ns, "etcd-0", &["put", "before", "kept"]));
    let before = identity(ns, "etcd-0");
    start_writer(ns, "http://etcd:2379", None);
    before
}

/// Clients of the old Service still write (to the new members), and nothing they were told
/// was written is lost.
fn writer_goes_on_and_lost_nothing(ns: &str, pod: &str) {
    let n = acked(ns).len();
    eventually("the writer goes on", Duration::from_secs(60), || {
        (acked(ns).len() > n + 10).then_some(())
    });
    assert_no_acknowledged_write_lost(ns, pod);
}

#[test]
fn a_plain_statefulset_is_adopted_under_a_writer_even_when_the_cli_is_killed() {
    let ns = Ns::new("adopt-plain");
    let ns = ns.0.as_str();
    let before = old_cluster_with_a_writer(ns, "plain-etcd-sts.yaml", PLAIN_IMAGE);

    // Refused, nothing changed: the name of the old StatefulSet.
    let r = run(&adopt_cmd(ns, "etcd", &["--yes"]));
    assert_eq!(r.code, 11, "{}", r.stderr);
    assert!(r.stderr.contains("old StatefulSet's name"), "{}", r.stderr);
    // The plan, nothing changed.
    let r = ok(run(&adopt_cmd(
        ns,
        "main",
        &["--dry-run", "--take-over-service"],
    )));
    assert!(r.stdout.contains("learners"), "{}", r.stdout);
    assert!(
        kubectl(&["-n", ns, "get", "etcdcluster", "main"]).code != 0,
        "a dry run creates nothing"
    );

    let args = adopt_cmd(
        ns,
        "main",
        &["--take-over-service", "--yes", "--timeout", "15m"],
    );
    let mut cli = spawn(&args);
    eventually(
        "the first new member votes",
        Duration::from_secs(300),
        || (new_voters(ns, "main") >= 1).then_some(()),
    );
    cli.kill().unwrap();
    let _ = cli.wait();
    eprintln!("killed the CLI mid-adoption; running it again");
    ok(run(&args));

    assert_adopted(ns, "main", before);
    let svc = json(&ok(kubectl(&[
        "-n", ns, "get", "service", "etcd", "-o", "json",
    ])));
    assert_eq!(
        svc["spec"]["selector"]["app.kubernetes.io/instance"], "main",
        "the old client Service selects the new members: {svc}"
    );
    writer_goes_on_and_lost_nothing(ns, "main-0");
    finished_adoption_stays_finished(ns, before);
}

/// Issue 43 R2: the adoption is marked done (`status.completed.adoption`), and from then on the
/// cluster hibernates and wakes like any other, with the old StatefulSet deleted too: before the
/// mark, `hibernate` never converged and `wake` waited for ever on the old, gone endpoints.
fn finished_adoption_stays_finished(ns: &str, before: (u64, i64)) {
    let c = cluster_json(ns, "main");
    assert_eq!(
        c["status"]["completed"]["adoption"],
        format!("{:016x}", before.0),
        "{}",
        c["status"]
    );
    ok(kubectl(&[
        "-n",
        ns,
        "delete",
        "statefulset",
        "etcd",
        "--wait",
    ]));
    let keys = |pod: &str| -> BTreeSet<String> {
        ok(etcdctl(ns, pod, &["get", "--prefix", "w/", "--keys-only"]))
            .stdout
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect()
    };
    let written = keys("main-0");
    let etcd = |args: &[&str]| {
        let mut a = vec!["etcd", "-n", ns];
        a.extend_from_slice(args);
        kubectl(&a)
    };
    ok(etcd(&[
        "hibernate",
        "main",
        "--no-snapshot",
        "--yes",
        "--timeout",
        "4m",
    ]));
    ok(etcd(&["wake", "main", "--timeout", "5m"]));
    assert_eq!(
        identity(ns, "main-0"),
        before,
        "cluster id and the key written before the adoption kept"
    );
    // Every key written before the hibernation is still there.
    let back = keys("main-0");
    let lost: Vec<&String> = written.difference(&back).collect();
    assert!(lost.is_empty(), "keys lost through hibernation: {lost:?}");
    eprintln!("{} keys kept through hibernate and wake", written.len());
}

#[test]
fn a_bitnami_shaped_statefulset_is_put_back_by_abort_then_adopted() {
    let ns = Ns::new("adopt-bitnami");
    let ns = ns.0.as_str();
    let before = old_cluster_with_a_writer(ns, "bitnami-etcd-sts.yaml", BITNAMI_IMAGE);

    // Halfway: two new voters, then abort.
    let args = adopt_cmd(
        ns,
        "adopted",
        &["--take-over-service", "--yes", "--timeout", "15m"],
    );
    let mut cli = spawn(&args);
    eventually("two new members vote", Duration::from_secs(400), || {
        (new_voters(ns, "adopted") >= 2).then_some(())
    });
    cli.kill().unwrap();
    let _ = cli.wait();
    ok(run(&[
        "etcd",
        "-n",
        ns,
        "adopt",
        "adopted",
        "--abort",
        "--timeout",
        "10m",
    ]
    .map(String::from)));
    let mut m = members(ns, "etcd-0");
    m.sort();
    assert_eq!(
        m,
        (0..3)
            .map(|k| (format!("etcd-{k}"), false))
            .collect::<Vec<_>>(),
        "the old cluster is as it was"
    );
    assert_eq!(identity(ns, "etcd-0"), before);
    assert!(kubectl(&["-n", ns, "get", "etcdcluster", "adopted"]).code != 0);
    let sts = old_statefulset(ns);
    assert_eq!(sts["status"]["readyReplicas"], 3);

    // Now all the way.
    ok(run(&args));
    assert_adopted(ns, "adopted", before);
    let svc = json(&ok(kubectl(&[
        "-n", ns, "get", "service", "etcd", "-o", "json",
    ])));
    assert_eq!(
        svc["spec"]["selector"]["app.kubernetes.io/instance"],
        "adopted"
    );
    assert!(svc["spec"]["selector"]["app.kubernetes.io/component"].is_null());
    writer_goes_on_and_lost_nothing(ns, "adopted-0");
}

/// Secret `name` of `ns` with `tls.crt`, `tls.key` and `ca.crt` from `dir`'s `<leaf>.crt`,
/// `<leaf>.key` and `ca.crt`.
fn tls_secret(ns: &str, name: &str, dir: &std::path::Path, leaf: &str) {
    let f = |n: String| dir.join(n).display().to_string();
    ok(kubectl(&[
        "-n",
        ns,
        "create",
        "secret",
        "generic",
        name,
        &format!("--from-file=tls.crt={}", f(format!("{leaf}.crt"))),
        &format!("--from-file=tls.key={}", f(format!("{leaf}.key"))),
        &format!("--from-file=ca.crt={}", f("ca.crt".into())),
    ]));
}

/// tests/cluster/tls-certs.sh DIR CLUSTER NS, the client Service `etcd`'s names on the server
/// and peer certificates; a CA already in DIR signs them.
fn certs(dir: &std::path::Path, cluster: &str, ns: &str) {
    let mut c = std::process::Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cluster/tls-certs.sh"
    ));
    c.args([dir.to_str().unwrap(), cluster, ns]).env(
        "TLS_EXTRA_SANS",
        format!("DNS:etcd,DNS:etcd.{ns},DNS:etcd.{ns}.svc,DNS:etcd.{ns}.svc.cluster.local"),
    );
    ok(run_cmd(&["tls-certs.sh"], c));
}

/// One CA: the old cluster's certificates (Secret `etcd-tls` its pods mount, `old-client` its
/// clients'), and the new members' made from it as a user would (`main-server`, `main-client`,
/// `main-peer`); `main-peer-other`, a peer certificate of another CA, to be refused.
fn tls_secrets_of_one_ca(ns: &str) -> tempfile::TempDir {
    // One CA: the old cluster's certificates (etcd), and the new members' (main) made from it
    // as a user would; a peer certificate of another CA to be refused.
    let dir = tempfile::tempdir().unwrap();
    let (old, new, other) = (
        dir.path().join("old"),
        dir.path().join("new"),
        dir.path().join("other"),
    );
    certs(&old, "etcd", ns);
    std::fs::create_dir_all(&new).unwrap();
    for f in ["ca.crt", "ca.key"] {
        std::fs::copy(old.join(f), new.join(f)).unwrap();
    }
    certs(&new, "main", ns);
    certs(&other, "main", ns);
    let file = |d: &std::path::Path, n: &str| format!("--from-file={n}={}", d.join(n).display());
    let mut create = vec!["-n", ns, "create", "secret", "generic", "etcd-tls"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    for n in [
        "ca.crt",
        "server.crt",
        "server.key",
        "peer.crt",
        "peer.key",
        "client.crt",
        "client.key",
    ] {
        create.push(file(&old, n));
    }
    ok(kubectl(
        &create.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    tls_secret(ns, "old-client", &old, "client");
    tls_secret(ns, "main-server", &new, "server");
    tls_secret(ns, "main-client", &new, "client");
    tls_secret(ns, "main-peer", &new, "peer");
    tls_secret(ns, "main-peer-other", &other, "peer");
    dir
}

#[test]
fn a_statefulset_with_peer_and_client_tls_is_adopted_under_a_writer_over_tls() {
    let ns = Ns::new("adopt-tls");
    let ns = ns.0.as_str();
    install_crd();
    let _certs = tls_secrets_of_one_ca(ns);
    apply_manifest(ns, "plain-etcd-sts-tls.yaml", PLAIN_IMAGE);
    ok(etcdctl(ns, "etcd-0", &["put", "before", "kept"]));
    let before = identity(ns, "etcd-0");
    start_writer(ns, "https://etcd:2379", Some("old-client"));

    // Refused, exit 11, nothing changed: each names the Secret or the flag, and the fix.
    let base = ["--tls-secret", "old-client", "--take-over-service", "--yes"];
    let refused = |extra: &[&str], says: &[&str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let r = run(&adopt_cmd(ns, "main", &args));
        assert_eq!(r.code, 11, "{extra:?}: {}", r.stderr);
        for s in says {
            assert!(
                r.stderr.contains(s),
                "{extra:?}: wanted {s:?} in {}",
                r.stderr
            );
        }
        assert!(kubectl(&["-n", ns, "get", "etcdcluster", "main"]).code != 0);
    };
    let server = [
        "--tls-server-secret",
        "main-server",
        "--tls-client-secret",
        "main-client",
    ];
    refused(
        &server,
        &[
            "speaks TLS to its peers",
            "pass --tls-peer-secret",
            &format!("DNS:*.main.{ns}.svc.cluster.local"),
        ],
    );
    refused(
        &[&server[..], &["--tls-peer-secret", "main-peer-other"]].concat(),
        &[
            &format!("Secret {ns}/main-peer-other (--tls-peer-secret): its ca.crt does not trust"),
            "put the old cluster's CA in ca.crt",
        ],
    );
    refused(
        &["--tls-peer-secret", "main-peer"],
        &["serve clients over https", "pass --tls-server-secret"],
    );
    // The plan with every Secret fitting, then the adoption.
    let all = [&server[..], &["--tls-peer-secret", "main-peer"]].concat();
    let dry: Vec<&str> = base[..3]
        .iter()
        .chain(&all)
        .chain(&["--dry-run"])
        .copied()
        .collect();
    let r = ok(run(&adopt_cmd(ns, "main", &dry)));
    assert!(r.stderr.contains("peer TLS on"), "{}", r.stderr);
    let args: Vec<&str> = base
        .iter()
        .chain(&all)
        .chain(&["--timeout", "15m"])
        .copied()
        .collect();
    ok(run(&adopt_cmd(ns, "main", &args)));

    assert_adopted(ns, "main", before);
    let c = cluster_json(ns, "main");
    assert_eq!(c["spec"]["tls"]["peerSecret"], "main-peer", "{c}");
    let list = ok(etcdctl(ns, "main-0", &["member", "list"])).stdout;
    assert_eq!(list.matches(":2380").count(), 3, "{list}");
    assert_eq!(
        list.matches("https://").count(),
        6,
        "peers and clients over https: {list}"
    );
    writer_goes_on_and_lost_nothing(ns, "main-0");
}
