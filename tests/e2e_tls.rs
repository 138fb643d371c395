//! End-to-end: clusters with TLS (`spec.tls`) on the testbed: client TLS with client-certificate
//! authentication and peer TLS, on the default version and on 3.4; the engine (port-forward dial),
//! the readiness probe and backups all present the client certificate. Certificates come from
//! tests/cluster/tls-certs.sh (openssl). And etcd's password authentication (`spec.auth`): the
//! same parts authenticate as the user of a Secret once `etcdctl auth enable` ran.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::time::Duration;

use common::writer::{
    assert_no_acknowledged_write_lost, start_switching_writer, start_tls_writer, writer_log,
};
use common::*;

fn tls_flags(name: &str) -> Vec<String> {
    vec![
        "--tls-server-secret".into(),
        format!("{name}-server"),
        "--tls-client-secret".into(),
        format!("{name}-client"),
        "--tls-peer-secret".into(),
        format!("{name}-peer"),
    ]
}

fn create_tls(ns: &str, name: &str, extra: &[&str]) -> serde_json::Value {
    let flags = tls_flags(name);
    let mut args = vec!["create", name, "--timeout", "4m", "-o", "json"];
    args.extend(flags.iter().map(String::as_str));
    args.extend_from_slice(extra);
    json(&ok(etcd(ns, &args)))
}

/// `etcdctl auth enable`, with a `root` user (password `e2e-root-pw`) first, through `pod`.
fn enable_auth(ns: &str, pod: &str) {
    ok(etcdctl(ns, pod, &["user", "add", "root:e2e-root-pw"]));
    ok(etcdctl(ns, pod, &["user", "grant-role", "root", "root"]));
    ok(etcdctl(ns, pod, &["auth", "enable"]));
}

fn scale(ns: &str, name: &str, replicas: u32) -> serde_json::Value {
    let n = replicas.to_string();
    json(&ok(etcd(
        ns,
        &[
            "scale",
            name,
            "--replicas",
            &n,
            "--timeout",
            "4m",
            "-o",
            "json",
        ],
    )))
}

/// A backup of `name` into a temporary directory, and its URL.
fn file_backup(ns: &str, name: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let to = format!("file://{}", dir.path().display());
    let backup = json(&ok(etcd(ns, &["backup", name, "--to", &to, "-o", "json"])));
    let url = backup["status"]["url"]
        .as_str()
        .or_else(|| backup["url"].as_str())
        .unwrap_or_else(|| panic!("no url: {backup}"))
        .to_string();
    (dir, url)
}

/// `kubectl etcd restore ARGS`, its restore pod running the operator image's tools.
fn restore(ns: &str, args: &[&str]) {
    let mut restore = kubectl_cmd(&[&["etcd", "-n", ns], args].concat());
    restore.env(
        "KUBECTL_ETCD_TOOLS_IMAGE",
        std::env::var("KE_OPERATOR_IMAGE").expect("KE_OPERATOR_IMAGE is not set"),
    );
    ok(run_cmd(&["etcd", "restore"], restore));
}

/// Inside `pod`, with the pod's own etcdctl (TLS from its ETCDCTL_* variables).
fn sh(ns: &str, pod: &str, script: &str) -> Run {
    kubectl(&["-n", ns, "exec", pod, "--", "sh", "-c", script])
}

/// Peer and client URLs of every member, as the members list them.
fn member_urls(ns: &str, pod: &str) -> Vec<String> {
    let v = json(&ok(etcdctl(ns, pod, &["member", "list", "-w", "json"])));
    v["members"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .flat_map(|m| {
            let urls = |k: &str| {
                m[k].as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|u| u.as_str().map(String::from))
                    .collect::<Vec<_>>()
            };
            [urls("peerURLs"), urls("clientURLs")].concat()
        })
        .collect()
}

fn assert_all_https(ns: &str, pod: &str, want: usize) {
    let urls = member_urls(ns, pod);
    assert!(urls.len() >= want, "{urls:?}");
    assert!(urls.iter().all(|u| u.starts_with("https://")), "{urls:?}");
}

/// From inside `pod`: a client without a certificate, and one speaking plain http, are refused.
fn assert_refused_without_certificate_or_over_http(ns: &str, pod: &str) {
    let (code, refused) = sh_exit(
        ns,
        pod,
        "unset ETCDCTL_CERT ETCDCTL_KEY; etcdctl --dial-timeout=3s --command-timeout=5s put k/x y",
    );
    assert_ne!(
        code, 0,
        "a client without a certificate was served: {}",
        refused.stdout
    );
    let (code, plain) = sh_exit(
        ns,
        pod,
        "ETCDCTL_ENDPOINTS=http://127.0.0.1:2379 etcdctl --dial-timeout=3s --command-timeout=5s put k/x y",
    );
    assert_ne!(code, 0, "plain http was served: {}", plain.stdout);
}

#[test]
fn a_cluster_with_client_and_peer_tls_creates_scales_backs_up_and_restores() {
    install_crd();
    let ns = Ns::new("tls");
    let _certs = tls_secrets(&ns.0, "demo", None);

    // Bad input: exit 2, nothing created.
    let r = etcd(
        &ns.0,
        &[
            "create",
            "demo",
            "--tls-server-secret",
            "nope",
            "--tls-client-secret",
            "demo-client",
            "--tls-peer-secret",
            "demo-peer",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("Secret {}/nope does not exist", ns.0)),
        "{}",
        r.stderr
    );
    let r = etcd(
        &ns.0,
        &["create", "demo", "--tls-server-secret", "demo-server"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--tls-client-secret"), "{}", r.stderr);
    ok(kubectl(&[
        "-n",
        &ns.0,
        "create",
        "secret",
        "generic",
        "half",
        "--from-literal=tls.crt=x",
    ]));
    let r = etcd(
        &ns.0,
        &[
            "create",
            "demo",
            "--tls-server-secret",
            "demo-server",
            "--tls-client-secret",
            "half",
            "--tls-peer-secret",
            "demo-peer",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("lacks ca.crt, tls.key"), "{}", r.stderr);
    // Client TLS without peer TLS (raft in the clear) only when asked for.
    let r = etcd(
        &ns.0,
        &[
            "create",
            "demo",
            "--tls-server-secret",
            "demo-server",
            "--tls-client-secret",
            "demo-client",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("spec.tls.peerSecret") && r.stderr.contains("--plain-peers"),
        "{}",
        r.stderr
    );
    let none = kubectl(&["-n", &ns.0, "get", "etcdclusters", "-o", "name"]);
    assert_eq!(none.stdout.trim(), "", "bad input created something");

    // Client and peer TLS on the default version.
    let created = create_tls(&ns.0, "demo", &["--replicas", "3"]);
    assert_eq!(ready_members(&created["status"]), (3, 3, 3), "{created}");
    assert_all_https(&ns.0, "demo-0", 6);
    // A client without a certificate is refused; with the pod's certificate it is served.
    assert_refused_without_certificate_or_over_http(&ns.0, "demo-1");
    ok(sh(
        &ns.0,
        "demo-0",
        "i=0; while [ $i -lt 200 ]; do etcdctl put k/$i v$i >/dev/null || exit 1; i=$((i+1)); done",
    ));

    // Scale: the new member joins as a learner over https, then shrink back.
    let scaled = scale(&ns.0, "demo", 4);
    assert_eq!(ready_members(&scaled["status"]), (4, 4, 4), "{scaled}");
    assert_all_https(&ns.0, "demo-3", 8);
    let scaled = scale(&ns.0, "demo", 3);
    assert_eq!(ready_members(&scaled["status"]), (3, 3, 3), "{scaled}");

    // Peer TLS dropped alone (client TLS without peer TLS) is refused on the running cluster:
    // TLS is switched on or off for clients and peers together (`kubectl etcd tls`, tested in
    // tls_switched_on_and_off_under_a_writer…). The members keep TLS.
    let hash = |ns: &str| {
        json(&ok(kubectl(&[
            "-n",
            ns,
            "get",
            "statefulset",
            "demo",
            "-o",
            "json",
        ])))["metadata"]["annotations"]["etcd.kubectl-etcd.io/template-hash"]
            .clone()
    };
    let before = hash(&ns.0);
    let partial = kubectl(&[
        "-n",
        &ns.0,
        "patch",
        "etcdcluster",
        "demo",
        "--type=merge",
        "-p",
        r#"{"spec":{"tls":{"peerSecret":null}}}"#,
    ]);
    if cel_admission() {
        // The API server refuses it itself (the CRD's CEL rule): nothing to revert.
        assert_ne!(
            partial.code, 0,
            "the API server took peer TLS dropped alone"
        );
        assert!(
            partial.stderr.contains("spec.tls cannot be switched"),
            "{}",
            partial.stderr
        );
        assert_eq!(hash(&ns.0), before, "the member template did not change");
        assert_all_https(&ns.0, "demo-0", 6);
    } else {
        ok(partial);
        engine_refuses_a_partial_tls_change(&ns.0, &before, &hash);
    }

    // Backup over TLS, restored into a new TLS cluster: the same keys.
    let _copy_certs = tls_secrets(&ns.0, "copy", None);
    let (_dir, url) = file_backup(&ns.0, "demo");
    let flags = tls_flags("copy");
    let mut args = vec![
        "restore",
        "copy",
        "--from",
        &url,
        "--replicas",
        "3",
        "--timeout",
        "5m",
    ];
    args.extend(flags.iter().map(String::as_str));
    restore(&ns.0, &args);
    let c = cluster_json(&ns.0, "copy");
    assert_eq!(ready_members(&c["status"]), (3, 3, 3), "{c}");
    assert_all_https(&ns.0, "copy-2", 6);
    let count = |pod: &str| {
        ok(sh(
            &ns.0,
            pod,
            "etcdctl get --prefix k/ --keys-only | grep -c .",
        ))
        .stdout
        .trim()
        .to_string()
    };
    assert_eq!(count("copy-2"), "200");
    assert_eq!(count("demo-0"), "200");
}

#[test]
fn etcd_3_4_runs_with_client_and_peer_tls() {
    install_crd();
    let ns = Ns::new("tls-34");
    let _certs = tls_secrets(&ns.0, "old", None);
    let created = create_tls(&ns.0, "old", &["--replicas", "3", "--version", "3.4.23"]);
    assert_eq!(ready_members(&created["status"]), (3, 3, 3), "{created}");
    assert_eq!(created["status"]["version"], "3.4.23", "{created}");
    assert_all_https(&ns.0, "old-0", 6);
    // status reads every member through the engine's TLS dial.
    let st = json(&ok(etcd(&ns.0, &["status", "old", "-o", "json"])));
    let members = st["status"]["members"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(members.len(), 3, "{st}");
    let all_healthy = |n: usize| {
        eventually(
            "every member healthy in status",
            Duration::from_secs(90),
            || {
                let st = json(&ok(etcd(&ns.0, &["status", "old", "-o", "json"])));
                st["status"]["members"]
                    .as_array()
                    .is_some_and(|m| m.len() == n && m.iter().all(|m| m["healthy"] == true))
                    .then_some(())
            },
        )
    };
    all_healthy(3);
    // etcd auth on: with --client-cert-auth the certificate's CN is the user, so the engine
    // and the probe (CN root) keep working.
    enable_auth(&ns.0, "old-0");
    all_healthy(3);
    let r = ok(etcd(
        &ns.0,
        &[
            "scale",
            "old",
            "--replicas",
            "4",
            "--timeout",
            "4m",
            "-o",
            "json",
        ],
    ));
    assert_eq!(
        ready_members(&json(&r)["status"]),
        (4, 4, 4),
        "{}",
        r.stdout
    );
    all_healthy(4);
}

/// etcd's own authentication (user and password, no TLS) on the default version: a cluster
/// created with `--auth-secret` keeps converging, scaling, backing up and restoring once
/// `etcdctl auth enable` ran; a Secret that does not exist is refused before anything is written.
#[test]
fn a_cluster_with_etcd_password_auth_scales_backs_up_and_restores() {
    install_crd();
    let ns = Ns::new("auth");
    let refused = etcd(
        &ns.0,
        &[
            "create",
            "demo",
            "--auth-secret",
            "no-such-user",
            "--timeout",
            "1m",
        ],
    );
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("no-such-user") && refused.stderr.contains("does not exist"),
        "{}",
        refused.stderr
    );
    assert_ne!(
        kubectl(&["-n", &ns.0, "get", "etcdcluster", "demo"]).code,
        0,
        "a refused create wrote the cluster"
    );
    ok(kubectl(&[
        "-n",
        &ns.0,
        "create",
        "secret",
        "generic",
        "demo-user",
        "--type=kubernetes.io/basic-auth",
        "--from-literal=username=root",
        "--from-literal=password=e2e-root-pw",
    ]));
    let created = json(&ok(etcd(
        &ns.0,
        &[
            "create",
            "demo",
            "--replicas",
            "3",
            "--auth-secret",
            "demo-user",
            // Password auth alone: with managed TLS (the default) the pods' client certificate
            // would authenticate etcdctl by its common name, so the unauthenticated put below
            // would be taken (etcd's documented client-certificate authentication).
            "--insecure",
            "--timeout",
            "4m",
            "-o",
            "json",
        ],
    )));
    assert_eq!(ready_members(&created["status"]), (3, 3, 3), "{created}");
    enable_auth(&ns.0, "demo-0");
    // Auth is on: without the pod's ETCDCTL_USER/ETCDCTL_PASSWORD, etcd refuses.
    let (code, anonymous) = sh_exit(
        &ns.0,
        "demo-1",
        "unset ETCDCTL_USER ETCDCTL_PASSWORD; etcdctl --command-timeout=5s put k/x y",
    );
    assert_ne!(
        code, 0,
        "an unauthenticated put was taken: {}",
        anonymous.stdout
    );
    ok(sh(
        &ns.0,
        "demo-0",
        "i=0; while [ $i -lt 50 ]; do etcdctl put k/$i v$i >/dev/null || exit 1; i=$((i+1)); done",
    ));
    let healthy = |name: &str, n: usize| {
        let st = json(&ok(etcd(
            &ns.0,
            &["reconcile", name, "--timeout", "2m", "-o", "json"],
        )));
        assert_eq!(ready_members(&st["status"]), (n, n, n), "{st}");
        let ready = ok(kubectl(&[
            "-n",
            &ns.0,
            "get",
            "pods",
            "-l",
            &format!("app.kubernetes.io/instance={name}"),
            "-o",
            "jsonpath={range .items[*]}{.status.containerStatuses[0].ready}{\"\\n\"}{end}",
        ]));
        assert_eq!(
            ready.stdout.lines().filter(|l| *l == "true").count(),
            n,
            "the readiness probe authenticates: {}",
            ready.stdout
        );
    };
    // Converged means every pod Ready too: the probe authenticates with the pod's user.
    healthy("demo", 3);
    let scaled = scale(&ns.0, "demo", 4);
    assert_eq!(ready_members(&scaled["status"]), (4, 4, 4), "{scaled}");
    healthy("demo", 4);

    let (_dir, url) = file_backup(&ns.0, "demo");
    restore(
        &ns.0,
        &[
            "restore",
            "copy",
            "--from",
            &url,
            "--replicas",
            "3",
            "--auth-secret",
            "demo-user",
            "--insecure",
            "--timeout",
            "5m",
        ],
    );
    healthy("copy", 3);
    // The snapshot carries etcd's users and its auth switch: the copy runs with auth on.
    let count = ok(sh(
        &ns.0,
        "copy-2",
        "etcdctl get --prefix k/ --keys-only | grep -c .",
    ));
    assert_eq!(count.stdout.trim(), "50", "{}", count.stderr);
    let anonymous = sh(
        &ns.0,
        "copy-0",
        "unset ETCDCTL_USER ETCDCTL_PASSWORD; etcdctl --command-timeout=5s get k/1",
    );
    assert_ne!(
        anonymous.code, 0,
        "the restored copy took an unauthenticated read"
    );
}

/// Peer TLS dropped alone: the engine refuses it (`SpecRefused`), keeps the members on TLS and
/// dials them with it, and the refusal ends once the spec is put back.
fn engine_refuses_a_partial_tls_change(
    ns: &str,
    before: &serde_json::Value,
    hash: &dyn Fn(&str) -> serde_json::Value,
) {
    let r = etcd(ns, &["reconcile", "demo", "--timeout", "30s", "-o", "json"]);
    let c = cluster_json(ns, "demo");
    let refused = c["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|c| c["type"] == "SpecRefused" && c["status"] == "True")
        .unwrap_or_else(|| panic!("no SpecRefused condition: {c}\n{}", r.stderr));
    assert!(
        refused.to_string().contains("spec.tls"),
        "{refused}\n{}",
        r.stderr
    );
    assert_eq!(&hash(ns), before, "the member template did not change");
    assert_all_https(ns, "demo-0", 6);
    // The CLI's backup dials with the TLS the members run, whatever the refused spec says.
    let dir = tempfile::tempdir().unwrap();
    let to = format!("file://{}", dir.path().display());
    ok(etcd(ns, &["backup", "demo", "--to", &to, "-o", "json"]));
    // Put back, the refusal ends.
    ok(kubectl(&[
        "-n",
        ns,
        "patch",
        "etcdcluster",
        "demo",
        "--type=merge",
        "-p",
        r#"{"spec":{"tls":{"serverSecret":"demo-server","clientSecret":"demo-client","peerSecret":"demo-peer"}}}"#,
    ]));
    ok(etcd(ns, &["reconcile", "demo", "--timeout", "2m"]));
    let c = cluster_json(ns, "demo");
    assert!(
        !c["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .any(|c| c["type"] == "SpecRefused" && c["status"] == "True"),
        "{c}"
    );
}

/// The PEM of `key` in Secret `secret`.
fn secret_pem(ns: &str, secret: &str, key: &str) -> String {
    ok(kubectl(&[
        "-n",
        ns,
        "get",
        "secret",
        secret,
        "-o",
        &format!("go-template={{{{index .data \"{key}\" | base64decode}}}}"),
    ]))
    .stdout
}

/// `(uid, restarts)` of each member pod: a member restart changes one or the other.
fn pod_lives(ns: &str, name: &str) -> Vec<(String, String)> {
    let r = ok(kubectl(&[
        "-n",
        ns,
        "get",
        "pods",
        "-l",
        &format!("app.kubernetes.io/instance={name}"),
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.status.containerStatuses[0].restartCount}{\"\\n\"}{end}",
    ]));
    r.stdout
        .lines()
        .map(|l| {
            let (pod, rest) = l.split_once(' ').unwrap_or((l, ""));
            (pod.to_string(), rest.to_string())
        })
        .collect()
}

/// `status.tls.certificates[]` of cluster `name`, by role: (notAfter, renewAt).
fn cert_times(ns: &str, name: &str) -> std::collections::BTreeMap<String, (String, String)> {
    // The group named: another CRD of the testbed may answer to `etcdcluster` too.
    let c = json(&ok(kubectl(&[
        "-n",
        ns,
        "get",
        "etcdclusters.etcd.kubectl-etcd.io",
        name,
        "-o",
        "json",
    ])));
    c["status"]["tls"]["certificates"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("role"), (s("notAfter"), s("renewAt")))
        })
        .collect()
}

fn seconds_until(rfc3339: &str) -> i64 {
    let t: jiff::Timestamp = rfc3339.parse().unwrap_or_else(|e| panic!("{rfc3339}: {e}"));
    t.as_second() - jiff::Timestamp::now().as_second()
}

/// A put through `pod` that checks the member's serving certificate against the cluster's CA
/// (as the pod's etcdctl always does) and presents the pod's client certificate, both read from
/// the Secret volumes at this moment: a new TLS connection per write.
fn verified_put(ns: &str, pod: &str, key: &str) -> Run {
    sh(
        ns,
        pod,
        &format!("etcdctl --dial-timeout=3s --command-timeout=5s put {key} v"),
    )
}

/// Managed TLS (`--tls managed`): the engine makes a CA and the server, peer and client
/// certificates; the members serve only https with client certificates; a client certificate
/// issued by `kubectl etcd certificate` is served; a renewal under a writer loses no write and
/// restarts no member (etcd reads its certificate files at each handshake), and the writer
/// outlives the old certificates, so the members serve the renewed ones.
#[test]
fn a_managed_tls_cluster_serves_only_https_and_renews_under_a_writer_without_restarts() {
    install_crd();
    let ns = Ns::new("tls-managed");
    let n = "m";
    let created = json(&ok(etcd(
        &ns.0,
        &[
            "create",
            n,
            "--replicas",
            "3",
            "--tls",
            "managed",
            "--certificate-lifetime",
            "5m",
            "--timeout",
            "4m",
            "-o",
            "json",
        ],
    )));
    assert_eq!(ready_members(&created["status"]), (3, 3, 3), "{created}");
    assert_eq!(created["spec"]["tls"]["mode"], "managed", "{created}");
    assert_all_https(&ns.0, "m-0", 6);
    let insecure = created["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|c| c["type"] == "InsecureTransport")
        .unwrap_or_else(|| panic!("no InsecureTransport condition: {created}"));
    assert_eq!(insecure["status"], "False", "{insecure}");
    // The CA and the three leaves, owned by the cluster.
    for role in ["ca", "server", "peer", "client"] {
        let s = json(&ok(kubectl(&[
            "-n",
            &ns.0,
            "get",
            "secret",
            &format!("m-tls-{role}"),
            "-o",
            "json",
        ])));
        assert_eq!(
            s["metadata"]["ownerReferences"][0]["kind"], "EtcdCluster",
            "{s}"
        );
    }
    let times = cert_times(&ns.0, n);
    assert_eq!(times.len(), 4, "{times:?}");
    // A client without a certificate, and plain http, are refused.
    assert_refused_without_certificate_or_over_http(&ns.0, "m-1");
    // status NAME shows the expiry dates.
    let table = ok(etcd(&ns.0, &["status", n]));
    assert!(
        table.stdout.contains("TLS managed: ca until"),
        "{}",
        table.stdout
    );

    // A client certificate for an application, from the cluster's CA.
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("app");
    let issued = ok(etcd(
        &ns.0,
        &[
            "certificate",
            n,
            "--user",
            "app",
            "--prefix",
            "app/",
            "--read-write",
            "--out",
            dir.to_str().unwrap(),
        ],
    ));
    let paths: Vec<&str> = issued.stdout.lines().collect();
    assert_eq!(paths.len(), 3, "{}", issued.stdout);
    {
        use std::os::unix::fs::PermissionsExt;
        for p in &paths {
            let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{p}");
        }
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
    let again = etcd(
        &ns.0,
        &[
            "certificate",
            n,
            "--user",
            "app",
            "--out",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(
        again.code, 2,
        "an existing key was overwritten: {}",
        again.stderr
    );
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    // Into the data volume (the root filesystem is read-only), then used with full checks.
    ok(sh(
        &ns.0,
        "m-2",
        &format!(
            "cd /var/lib/etcd && cat > app.crt <<'EOF'\n{}EOF\ncat > app.key <<'EOF'\n{}EOF\ncat > app-ca.crt <<'EOF'\n{}EOF\n",
            read("app.crt"),
            read("app.key"),
            read("ca.crt")
        ),
    ));
    let app = ok(sh(
        &ns.0,
        "m-2",
        "cd /var/lib/etcd && ETCDCTL_CERT=app.crt ETCDCTL_KEY=app.key ETCDCTL_CACERT=app-ca.crt etcdctl --command-timeout=5s put app/1 v && rm -f app.crt app.key app-ca.crt",
    ));
    assert!(app.stdout.contains("OK"), "{}", app.stdout);
    let other = etcd(&ns.0, &["certificate", "nope", "--user", "app"]);
    assert_ne!(other.code, 0, "{}", other.stderr);

    // Renewal under a writer whose every put is a new, fully checked TLS connection.
    let lives = pod_lives(&ns.0, n);
    assert_eq!(lives.len(), 3, "{lives:?}");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (ns, stop) = (ns.0.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut failed = Vec::new();
            let mut written = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let key = format!("w/{written:05}");
                let r = verified_put(&ns, &format!("m-{}", written % 3), &key);
                if r.code != 0 || !r.stdout.contains("OK") {
                    failed.push(format!("{key}: {}", r.stderr.trim()));
                }
                written += 1;
                std::thread::sleep(Duration::from_millis(500));
            }
            (written, failed)
        })
    };
    let server_renew_at = times["server"].1.clone();
    let wait = seconds_until(&server_renew_at);
    eprintln!("renewal due in {wait} s ({server_renew_at})");
    std::thread::sleep(Duration::from_secs(u64::try_from(wait.max(0)).unwrap() + 2));
    let old_server = secret_pem(&ns.0, "m-tls-server", "tls.crt");
    // Other tests on the testbed install the CRD of their own build: this build's (with
    // status.tls) again, so that the status write of this pass fits its schema.
    install_crd();
    ok(etcd(&ns.0, &["reconcile", n, "--timeout", "2m"]));
    let renewed_at = std::time::Instant::now();
    let new_server = secret_pem(&ns.0, "m-tls-server", "tls.crt");
    assert_ne!(
        old_server, new_server,
        "the server certificate was not renewed"
    );
    let renewed = cert_times(&ns.0, n);
    for role in ["server", "peer", "client"] {
        assert_ne!(
            renewed[role].0, times[role].0,
            "{role} not renewed: {renewed:?}"
        );
    }
    assert_eq!(renewed["ca"], times["ca"], "the CA changed");
    // How long the kubelet takes to bring the renewed Secret into a pod.
    eventually(
        "the renewed server certificate in m-0's volume",
        Duration::from_secs(180),
        || {
            let have = sh(&ns.0, "m-0", "cat /etc/etcd/tls/server/tls.crt");
            (have.stdout == new_server).then_some(())
        },
    );
    eprintln!(
        "the kubelet brought the renewed Secret into m-0 after {} s",
        renewed_at.elapsed().as_secs()
    );
    // The writer runs on past the old certificates' notAfter: from then on a put succeeds only
    // if the member serves the renewed certificate and takes the renewed client one.
    let old_expiry = times["server"].0.clone();
    let wait = seconds_until(&old_expiry);
    eprintln!("the old certificates expire in {wait} s ({old_expiry})");
    std::thread::sleep(Duration::from_secs(
        u64::try_from(wait.max(0)).unwrap() + 30,
    ));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (written, failed) = writer.join().unwrap();
    eprintln!("writer: {written} puts, {} failed", failed.len());
    assert!(written > 30, "the writer wrote only {written}");
    assert_eq!(
        failed,
        Vec::<String>::new(),
        "writes failed during the renewal"
    );
    assert_eq!(pod_lives(&ns.0, n), lives, "a member restarted");
    // Every member still healthy, the peers included (raft over the renewed peer certificates).
    install_crd();
    let st = json(&ok(etcd(
        &ns.0,
        &["reconcile", n, "--timeout", "2m", "-o", "json"],
    )));
    assert_eq!(ready_members(&st["status"]), (3, 3, 3), "{st}");
}

/// Secure by default (issue 17): `create NAME` with no TLS flag makes a managed-TLS cluster that
/// serves only https (peers too) to clients with a certificate of its CA, issued by `kubectl
/// etcd certificate`; status shows the expiry dates. A cluster written as YAML without
/// `spec.tls` is born the same way, and its status records the decision.
#[test]
fn a_cluster_made_with_defaults_serves_only_https_to_clients_with_certificates() {
    install_crd();
    let ns = Ns::new("tls-default");
    let r = ok(etcd(
        &ns.0,
        &["create", "d", "--timeout", "4m", "-o", "json"],
    ));
    assert!(!r.stderr.contains("plain http"), "{}", r.stderr);
    let c = json(&r);
    assert_eq!(c["spec"]["tls"]["mode"], "managed", "{c}");
    assert_eq!(c["status"]["tls"]["mode"], "managed", "{c}");
    assert_eq!(ready_members(&c["status"]), (3, 3, 3), "{c}");
    // Clients and peers: https only, as the members list themselves.
    assert_all_https(&ns.0, "d-0", 6);
    let peer_auth = sh(&ns.0, "d-0", "echo $ETCD_PEER_CLIENT_CERT_AUTH");
    assert_eq!(peer_auth.stdout.trim(), "true", "mutual peer TLS");
    // No certificate, or plain http: refused.
    assert_refused_without_certificate_or_over_http(&ns.0, "d-1");
    // A client with what `kubectl etcd certificate` wrote, through the client Service, with
    // the server's certificate checked against the CA.
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("app");
    ok(etcd(
        &ns.0,
        &[
            "certificate",
            "d",
            "--user",
            "app",
            "--prefix",
            "app/",
            "--read-write",
            "--out",
            dir.to_str().unwrap(),
        ],
    ));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let app = ok(sh(
        &ns.0,
        "d-2",
        &format!(
            "cd /var/lib/etcd && cat > app.crt <<'EOF'\n{}EOF\ncat > app.key <<'EOF'\n{}EOF\ncat > app-ca.crt <<'EOF'\n{}EOF\n\
             ETCDCTL_ENDPOINTS=https://d-client:2379 ETCDCTL_CERT=app.crt ETCDCTL_KEY=app.key ETCDCTL_CACERT=app-ca.crt \
             etcdctl --command-timeout=5s put app/1 v; r=$?; rm -f app.crt app.key app-ca.crt; exit $r",
            read("app.crt"),
            read("app.key"),
            read("ca.crt")
        ),
    ));
    assert!(app.stdout.contains("OK"), "{}", app.stdout);
    // Expiry dates in status and in `status NAME`.
    let times = cert_times(&ns.0, "d");
    assert_eq!(
        times.keys().map(String::as_str).collect::<Vec<_>>(),
        ["ca", "client", "peer", "server"],
        "{times:?}"
    );
    for (role, (not_after, _)) in &times {
        assert!(
            seconds_until(not_after) > 80 * 86_400,
            "{role}: {not_after}"
        );
    }
    let table = ok(etcd(&ns.0, &["status", "d"]));
    assert!(
        table.stdout.contains("TLS managed: ca until"),
        "{}",
        table.stdout
    );

    // Written as YAML without spec.tls (kubectl apply, Helm): born managed, recorded in status.
    ok(kubectl_stdin(
        &["-n", &ns.0, "apply", "-f", "-"],
        "apiVersion: etcd.kubectl-etcd.io/v1alpha1\nkind: EtcdCluster\nmetadata: {name: yaml}\nspec: {replicas: 1, version: \"3.6.15\", storage: {ephemeral: true}}\n",
    ));
    let st = json(&ok(etcd(
        &ns.0,
        &["reconcile", "yaml", "--timeout", "3m", "-o", "json"],
    )));
    assert_eq!(st["status"]["tls"]["mode"], "managed", "{st}");
    assert!(
        st["spec"]["tls"].is_null(),
        "the spec stays as written: {st}"
    );
    assert_all_https(&ns.0, "yaml-0", 2);
}

/// `GET path` at `addr` (a member's pod address and port: the testbed's host reaches pod IPs)
/// over TLS, presenting `cert`/`key` and checking the server's certificate against `ca` for
/// `host`: the response's head, or why the exchange failed (a refused client certificate fails
/// the handshake, or, in TLS 1.3, the first read).
fn tls_get(
    addr: &str,
    host: &str,
    ca: &str,
    cert: &str,
    key: &str,
    path: &str,
) -> Result<String, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use std::io::{Read, Write};
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let chain: Vec<CertificateDer> = CertificateDer::pem_slice_iter(cert.as_bytes())
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_client_auth_cert(chain, key)
    .unwrap();
    let mut conn = rustls::ClientConnection::new(
        std::sync::Arc::new(config),
        ServerName::try_from(host.to_string()).unwrap(),
    )
    .unwrap();
    let mut sock =
        std::net::TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_secs(5))
            .map_err(|e| format!("connect {addr}: {e}"))?;
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut tls = rustls::Stream::new(&mut conn, &mut sock);
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .map_err(|e| format!("request: {e}"))?;
    let mut got = Vec::new();
    match tls.read_to_end(&mut got) {
        // etcd closes without close_notify: what came first is the answer.
        Err(_) if !got.is_empty() => {}
        Err(e) => return Err(format!("response: {e}")),
        Ok(_) => {}
    }
    let text = String::from_utf8_lossy(&got).to_string();
    if text.is_empty() {
        return Err("closed without an answer".into());
    }
    Ok(text.lines().next().unwrap_or_default().to_string())
}

/// Trust that matches identity, on `version`: the peer port of a managed cluster admits only the
/// cluster's peer certificate (an application's certificate of the same CA is refused at the
/// handshake, the peer certificate is served), the cluster stays 3/3 Ready and serves a put and
/// a get; and the in-pod etcdctl (the readiness probe) verifies the serving certificate: it
/// refuses the member at an address the certificate does not carry.
fn peer_port_admits_only_the_peer_certificate(version: &str) {
    install_crd();
    let ns = Ns::new(&format!("tls-peer-{}", version.replace('.', "")));
    // etcd's authentication on 3.4 too (not its default there): `certificate` needs it.
    create_managed(&ns.0, "p", &["--version", version, "--etcd-auth", "on"]);
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("app");
    ok(etcd(
        &ns.0,
        &[
            "certificate",
            "p",
            "--user",
            "app",
            "--out",
            dir.to_str().unwrap(),
        ],
    ));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let ip = ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "pod",
        "p-1",
        "-o",
        "jsonpath={.status.podIP}",
    ]))
    .stdout;
    let addr = format!("{}:2380", ip.trim());
    let host = format!("p-1.p.{}.svc.cluster.local", ns.0);
    let peer = |k: &str| secret_pem(&ns.0, "p-tls-peer", k);
    // The control: the members' own peer certificate is served there.
    let served = tls_get(
        &addr,
        &host,
        &peer("ca.crt"),
        &peer("tls.crt"),
        &peer("tls.key"),
        "/members",
    );
    assert!(
        served.as_deref().is_ok_and(|h| h.contains(" 200 ")),
        "the peer certificate on {addr}: {served:?}"
    );
    let app = tls_get(
        &addr,
        &host,
        &read("ca.crt"),
        &read("app.crt"),
        &read("app.key"),
        "/members",
    );
    assert!(
        app.is_err(),
        "an application certificate read the peer port {addr}: {app:?}"
    );
    // The engine's client certificate is no peer either.
    let client = |k: &str| secret_pem(&ns.0, "p-tls-client", k);
    let engine = tls_get(
        &addr,
        &host,
        &client("ca.crt"),
        &client("tls.crt"),
        &client("tls.key"),
        "/members",
    );
    assert!(
        engine.is_err(),
        "the engine's certificate read the peer port: {engine:?}"
    );
    // The cluster: every member Ready, a put and a get served.
    let st = json(&ok(etcd(&ns.0, &["status", "p", "-o", "json"])));
    assert_eq!(ready_members(&st["status"]), (3, 3, 3), "{st}");
    ok(etcdctl(&ns.0, "p-0", &["put", "trust/k", "v"]));
    let got = ok(etcdctl(
        &ns.0,
        "p-2",
        &["get", "trust/k", "--print-value-only"],
    ));
    assert_eq!(got.stdout.trim(), "v");
    // The probe's etcdctl verifies: no skip, and an address the certificate lacks is refused.
    let env = sh(&ns.0, "p-0", "env");
    assert!(!env.stdout.contains("INSECURE"), "{}", env.stdout);
    assert!(
        env.stdout
            .contains("ETCDCTL_ENDPOINTS=https://127.0.0.1:2379"),
        "{}",
        env.stdout
    );
    let (code, wrong) = sh_exit(
        &ns.0,
        "p-0",
        &format!(
            "ETCDCTL_ENDPOINTS=https://{}:2379 etcdctl --dial-timeout=3s --command-timeout=5s get k 2>&1",
            ip.trim()
        ),
    );
    assert_ne!(
        code, 0,
        "etcdctl took a certificate for an address it does not carry: {}",
        wrong.stdout
    );
}

#[test]
fn the_peer_port_admits_only_the_clusters_peer_certificate() {
    peer_port_admits_only_the_peer_certificate("3.7.3");
}

#[test]
fn the_peer_port_admits_only_the_clusters_peer_certificate_on_etcd_3_4() {
    peer_port_admits_only_the_peer_certificate("3.4.23");
}

/// `--insecure`: plain http, a warning on stderr, and the `InsecureTransport` condition.
#[test]
fn an_insecure_cluster_is_warned_about_and_says_so_in_a_condition() {
    install_crd();
    let ns = Ns::new("tls-none");
    let r = ok(etcd(
        &ns.0,
        &[
            "create",
            "plain",
            "--replicas",
            "1",
            "--insecure",
            "--ephemeral",
            "--timeout",
            "3m",
            "-o",
            "json",
        ],
    ));
    assert!(r.stderr.contains("plain http (--insecure)"), "{}", r.stderr);
    let c = json(&r);
    assert_eq!(c["spec"]["tls"]["mode"], "none", "{c}");
    assert_eq!(c["status"]["tls"]["mode"], "none", "recorded: {c}");
    let cond = c["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|c| c["type"] == "InsecureTransport")
        .unwrap_or_else(|| panic!("no InsecureTransport condition: {c}"));
    assert_eq!(cond["status"], "True", "{cond}");
    assert_eq!(cond["reason"], "PlainHttp", "{cond}");
    // No certificate to issue from.
    let cert = etcd(&ns.0, &["certificate", "plain", "--user", "app"]);
    assert_eq!(cert.code, 2, "{}", cert.stderr);
    assert!(cert.stderr.contains("spec.tls.mode"), "{}", cert.stderr);
    // --insecure with a Secret flag is refused by the flags themselves.
    let both = etcd(
        &ns.0,
        &["create", "x", "--insecure", "--tls-peer-secret", "p"],
    );
    assert_eq!(both.code, 2, "{}", both.stderr);
}

/// Samples the member pods of cluster `name` every second: how many are Ready (each one's probe
/// is a linearizable read, so Ready members are a quorum's witness that does not depend on the
/// engine reaching them: on a loaded testbed the CLI's port-forwards time out at times, and a
/// status written then counts no member healthy).
struct ReadySampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: std::thread::JoinHandle<(usize, Vec<String>)>,
}

impl ReadySampler {
    fn start(ns: &str, name: &str) -> ReadySampler {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (flag, ns, selector) = (
            stop.clone(),
            ns.to_string(),
            format!("app.kubernetes.io/instance={name}"),
        );
        let handle = std::thread::spawn(move || {
            let (mut samples, mut bad) = (0usize, Vec::new());
            while !flag.load(Ordering::Relaxed) {
                let r = kubectl(&[
                    "-n",
                    &ns,
                    "get",
                    "pods",
                    "-l",
                    &selector,
                    "-o",
                    "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status} {end}",
                ]);
                if r.code == 0 && !r.stdout.trim().is_empty() {
                    samples += 1;
                    let ready = r
                        .stdout
                        .split_whitespace()
                        .filter(|p| p.ends_with("=True"))
                        .count();
                    if ready < 2 {
                        bad.push(r.stdout.trim().to_string());
                    }
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            (samples, bad)
        });
        ReadySampler { stop, handle }
    }

    fn stop(self) -> Result<usize, Vec<String>> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (samples, bad) = self.handle.join().expect("the sampler panicked");
        if bad.is_empty() {
            Ok(samples)
        } else {
            Err(bad)
        }
    }
}

/// `kubectl etcd create NAME --replicas 3 --tls managed EXTRA`, returned once every member is
/// Ready.
fn create_managed(ns: &str, name: &str, extra: &[&str]) {
    let args = [
        &[
            "create",
            name,
            "--replicas",
            "3",
            "--tls",
            "managed",
            "--timeout",
            "5m",
            "-o",
            "json",
        ][..],
        extra,
    ]
    .concat();
    let created = json(&ok(etcd(ns, &args)));
    assert_eq!(ready_members(&created["status"]), (3, 3, 3), "{created}");
}

/// `kubectl etcd rotate-ca` on a 3-member managed cluster under a writer (a pod that puts through
/// the client Service over TLS with the client Secret mounted, a new connection per put): quorum
/// never lost, no acknowledged write lost, every member restarted (twice: on the bundle, then on
/// the new CA alone), every certificate from the new CA, and a client certificate of the old CA
/// refused at the end. `--dry-run` changes nothing; a cluster without managed TLS is refused.
#[test]
fn rotate_ca_under_a_writer_keeps_quorum_and_every_write_and_ends_trusting_the_new_ca_alone() {
    install_crd();
    let ns = Ns::new("tls-rotate");
    let n = "demo";
    create_managed(&ns.0, n, &[]);

    // Refused without managed TLS (exit 2, the field named), and nothing written.
    let r = etcd(&ns.0, &["rotate-ca", "absent"]);
    assert_ne!(r.code, 0, "{}", r.stderr);
    // The dry run prints the plan and changes nothing. (Other tests on the testbed install the
    // CRD of their own build: this build's, with spec.tls.caGeneration, again first.)
    install_crd();
    let dry = ok(etcd(&ns.0, &["rotate-ca", n, "--dry-run"]));
    assert!(
        dry.stdout.contains("caGeneration: 1") || dry.stderr.contains("caGeneration: 1"),
        "{} {}",
        dry.stdout,
        dry.stderr
    );
    let c = json(&ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "etcdclusters.etcd.kubectl-etcd.io",
        n,
        "-o",
        "json",
    ])));
    assert!(c["spec"]["tls"]["caGeneration"].is_null(), "{c}");

    let old_ca = secret_pem(&ns.0, "demo-tls-ca", "ca.crt");
    let old_client = (
        secret_pem(&ns.0, "demo-tls-client", "tls.crt"),
        secret_pem(&ns.0, "demo-tls-client", "tls.key"),
    );
    let lives = pod_lives(&ns.0, n);
    start_tls_writer(&ns.0, "demo-tls-client");
    let sampler = ReadySampler::start(&ns.0, n);
    let started = std::time::Instant::now();
    install_crd();
    let rotated = ok(etcd(
        &ns.0,
        &["rotate-ca", n, "--timeout", "25m", "-o", "json"],
    ));
    eprintln!(
        "rotate-ca took {} s: {}",
        started.elapsed().as_secs(),
        rotated.stdout
    );
    let samples = sampler
        .stop()
        .unwrap_or_else(|bad| panic!("quorum lost: {bad:?}"));
    assert!(samples > 30, "only {samples} samples");
    let report = json(&rotated);
    assert_eq!(report["generation"], 1, "{report}");
    assert_ne!(report["oldCa"], report["newCa"], "{report}");
    let log = writer_log(&ns.0);
    let (first, last) = (
        log.writes.first().map_or(0.0, |w| w.1),
        log.writes.last().map_or(0.0, |w| w.1),
    );
    let (failed, stall) = log.during(first, last);
    eprintln!("writer during the rotation: {failed} failed puts, longest stall {stall:.1} s");
    let acked = assert_no_acknowledged_write_lost(&ns.0);
    assert!(acked > 50, "the writer acknowledged only {acked}");

    // The new CA alone: no retiring CA, every leaf's ca.crt is it, every member restarted.
    let new_ca = secret_pem(&ns.0, "demo-tls-ca", "ca.crt");
    assert_ne!(new_ca, old_ca);
    let ca_secret = json(&ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "secret",
        "demo-tls-ca",
        "-o",
        "json",
    ])));
    assert!(
        ca_secret["data"]["retiring-ca.crt"].is_null(),
        "the old CA is still in the CA Secret"
    );
    for role in ["server", "peer", "client"] {
        assert_eq!(
            secret_pem(&ns.0, &format!("demo-tls-{role}"), "ca.crt").trim(),
            new_ca.trim(),
            "{role}"
        );
    }
    let after = pod_lives(&ns.0, n);
    for (pod, life) in &lives {
        let now = after.iter().find(|(p, _)| p == pod).map(|(_, l)| l);
        assert_ne!(now, Some(life), "{pod} was not restarted");
    }
    let st = json(&ok(etcd(&ns.0, &["status", n, "-o", "json"])));
    let cond = st["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|c| c["type"] == "RotatingCA")
        .unwrap_or_else(|| panic!("no RotatingCA condition: {st}"));
    assert_eq!(cond["status"], "False", "{cond}");
    assert_eq!(ready_members(&st["status"]), (3, 3, 3), "{st}");

    // A client certificate of the old CA is refused; the pod's own (the new CA's) is served.
    ok(sh(
        &ns.0,
        "demo-2",
        &format!(
            "cd /var/lib/etcd && cat > old.crt <<'EOF'\n{}EOF\ncat > old.key <<'EOF'\n{}EOF\n",
            old_client.0, old_client.1
        ),
    ));
    let refused = sh(
        &ns.0,
        "demo-2",
        "cd /var/lib/etcd && ETCDCTL_CERT=old.crt ETCDCTL_KEY=old.key etcdctl --dial-timeout=3s --command-timeout=5s put old/1 v; r=$?; rm -f old.crt old.key; exit $r",
    );
    assert_ne!(
        refused.code, 0,
        "a client certificate of the old CA was served: {}",
        refused.stdout
    );
    let served = ok(verified_put(&ns.0, "demo-1", "new/1"));
    assert!(served.stdout.contains("OK"), "{}", served.stdout);
}

/// The `SwitchingTLS` condition of `st` (a cluster's JSON).
fn switching_tls(st: &serde_json::Value) -> serde_json::Value {
    st["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|c| c["type"] == "SwitchingTLS")
        .unwrap_or_else(|| panic!("no SwitchingTLS condition: {st}"))
}

/// `kubectl etcd tls demo --on` and then `--off` on a running 3-member cluster under a writer
/// (a pod that puts through the client Service, https with the managed client certificate when
/// it can, else http): never fewer than 2 Ready members, no acknowledged write lost either way;
/// switched on, every URL is https and a client without a certificate is refused; switched off,
/// every URL is http again. `--dry-run` changes nothing.
#[test]
fn tls_switched_on_and_off_under_a_writer_loses_no_acknowledged_write() {
    install_crd();
    let ns = Ns::new("tls-switch");
    let n = "demo";
    let created = json(&ok(etcd(
        &ns.0,
        &[
            "create",
            n,
            "--replicas",
            "3",
            "--insecure",
            "--timeout",
            "5m",
            "-o",
            "json",
        ],
    )));
    assert_eq!(ready_members(&created["status"]), (3, 3, 3), "{created}");
    assert!(
        member_urls(&ns.0, "demo-0")
            .iter()
            .all(|u| u.starts_with("http://")),
        "created plain"
    );

    // Neither way given: a usage error; the dry run prints the plan and changes nothing.
    let r = etcd(&ns.0, &["tls", n]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let dry = ok(etcd(&ns.0, &["tls", n, "--on", "--dry-run"]));
    assert!(
        format!("{}{}", dry.stdout, dry.stderr).contains("mode: managed"),
        "{} {}",
        dry.stdout,
        dry.stderr
    );
    assert_eq!(cluster_json(&ns.0, n)["spec"]["tls"]["mode"], "none");

    // On, with the writer started as soon as the client certificate exists (the engine issues
    // the certificates before any member restarts).
    let sampler = ReadySampler::start(&ns.0, n);
    let started = std::time::Instant::now();
    let on = {
        let ns = ns.0.clone();
        std::thread::spawn(move || etcd(&ns, &["tls", "demo", "--on", "--timeout", "20m"]))
    };
    eventually(
        "the client certificate is issued",
        Duration::from_secs(120),
        || (kubectl(&["-n", &ns.0, "get", "secret", "demo-tls-client"]).code == 0).then_some(()),
    );
    start_switching_writer(&ns.0);
    let on = ok(on.join().expect("the tls verb panicked"));
    eprintln!(
        "tls --on took {} s: {}",
        started.elapsed().as_secs(),
        on.stderr
    );
    let samples = sampler
        .stop()
        .unwrap_or_else(|bad| panic!("fewer than 2 members Ready: {bad:?}"));
    assert!(samples > 30, "only {samples} samples");
    let acked = assert_no_acknowledged_write_lost(&ns.0);
    assert!(acked > 50, "the writer acknowledged only {acked}");
    assert_all_https(&ns.0, "demo-0", 6);
    assert_refused_without_certificate_or_over_http(&ns.0, "demo-1");
    let st = cluster_json(&ns.0, n);
    assert_eq!(st["status"]["tls"]["mode"], "managed", "{st}");
    assert_eq!(switching_tls(&st)["status"], "False", "{st}");
    assert_eq!(ready_members(&st["status"]), (3, 3, 3), "{st}");
    let sts = json(&ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "statefulset",
        n,
        "-o",
        "json",
    ])));
    let env = sts["spec"]["template"]["spec"]["containers"][0]["env"].to_string();
    assert!(!env.contains("2382"), "the switch port is gone: {env}");

    // Off again, under a new writer (the first one's pod gone first: same name).
    ok(kubectl(&[
        "-n",
        &ns.0,
        "delete",
        "pod",
        "writer",
        "--ignore-not-found",
        "--wait=true",
    ]));
    let sampler = ReadySampler::start(&ns.0, n);
    start_switching_writer(&ns.0);
    let started = std::time::Instant::now();
    let off = ok(etcd(&ns.0, &["tls", n, "--off", "--timeout", "20m"]));
    eprintln!(
        "tls --off took {} s: {}",
        started.elapsed().as_secs(),
        off.stderr
    );
    let samples = sampler
        .stop()
        .unwrap_or_else(|bad| panic!("fewer than 2 members Ready: {bad:?}"));
    assert!(samples > 30, "only {samples} samples");
    let acked_off = assert_no_acknowledged_write_lost(&ns.0);
    assert!(acked_off > 50, "the writer acknowledged only {acked_off}");
    let urls = member_urls(&ns.0, "demo-0");
    assert!(
        urls.len() >= 6 && urls.iter().all(|u| u.starts_with("http://")),
        "{urls:?}"
    );
    let st = cluster_json(&ns.0, n);
    assert_eq!(st["status"]["tls"]["mode"], "none", "{st}");
    assert_eq!(switching_tls(&st)["status"], "False", "{st}");
}

/// A CA issuer of cert-manager in `ns`: a SelfSigned Issuer signs a CA Certificate (Secret
/// `etcd-ca`), which the Issuer `etcd-ca` signs with.
fn cert_manager_ca_issuer(ns: &str) {
    ok(kubectl_stdin(
        &["-n", ns, "apply", "-f", "-"],
        r#"apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: etcd-ca}
spec:
  isCA: true
  commonName: etcd-ca
  secretName: etcd-ca
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: selfsigned, kind: Issuer}
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: etcd-ca}
spec: {ca: {secretName: etcd-ca}}
"#,
    ));
    ok(kubectl(&[
        "-n",
        ns,
        "wait",
        "--for=condition=Ready",
        "certificate/etcd-ca",
        "issuer/etcd-ca",
        "--timeout=120s",
    ]));
}

/// `cmctl renew`'s way: the `Issuing` condition added to the Certificate's status.
fn renew(ns: &str, certificate: &str) {
    let now = jiff::Timestamp::now().to_string();
    let patch = format!(
        r#"[{{"op":"add","path":"/status/conditions/-","value":{{"type":"Issuing","status":"True","reason":"ManuallyTriggered","message":"renewed by the e2e test","lastTransitionTime":"{now}"}}}}]"#
    );
    ok(kubectl(&[
        "-n",
        ns,
        "patch",
        "certificate",
        certificate,
        "--subresource=status",
        "--type=json",
        "-p",
        &patch,
    ]));
}

/// Mode certManager (issue 17): real cert-manager controllers (tests/cluster/cert-manager.sh)
/// issue the server, peer and client certificates from a CA Issuer; the members serve only
/// https with client certificates of that CA; a renewal of every certificate by cert-manager
/// under a writer whose every put is a new, fully checked TLS connection loses no write and
/// restarts no member. Bad input (no such issuer, `certificate` in this mode) is refused with
/// nothing created.
#[test]
fn a_cert_manager_cluster_serves_what_cert_manager_issued_and_renews_under_a_writer() {
    let up = std::process::Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cluster/cert-manager.sh"
    ))
    .arg("up")
    .status()
    .expect("tests/cluster/cert-manager.sh up");
    assert!(up.success(), "cert-manager did not start");
    install_crd();
    let ns = Ns::new("tls-cm");
    let n = "c";
    // No such issuer: refused before anything is written.
    let refused = etcd(&ns.0, &["create", n, "--tls-issuer", "etcd-ca"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains(&format!("Issuer {}/etcd-ca does not exist", ns.0)),
        "{}",
        refused.stderr
    );
    let none = kubectl(&[
        "-n",
        &ns.0,
        "get",
        "etcdclusters.etcd.kubectl-etcd.io",
        "-o",
        "name",
    ]);
    assert_eq!(none.stdout.trim(), "", "something was created");

    cert_manager_ca_issuer(&ns.0);
    let created = json(&ok(etcd(
        &ns.0,
        &[
            "create",
            n,
            "--replicas",
            "3",
            "--tls-issuer",
            "etcd-ca",
            "--certificate-lifetime",
            "1h",
            "--timeout",
            "4m",
            "-o",
            "json",
        ],
    )));
    assert_eq!(ready_members(&created["status"]), (3, 3, 3), "{created}");
    assert_eq!(created["spec"]["tls"]["mode"], "certManager", "{created}");
    assert_eq!(created["status"]["tls"]["mode"], "certManager", "{created}");
    assert_all_https(&ns.0, "c-0", 6);
    assert_refused_without_certificate_or_over_http(&ns.0, "c-1");
    // Each leaf is a Certificate of the cluster's, Ready, its Secret signed by the issuer's CA.
    let ca = secret_pem(&ns.0, "etcd-ca", "tls.crt");
    for role in ["server", "peer", "client"] {
        let name = format!("c-tls-{role}");
        let c = json(&ok(kubectl(&[
            "-n",
            &ns.0,
            "get",
            "certificates.cert-manager.io",
            &name,
            "-o",
            "json",
        ])));
        assert_eq!(
            c["metadata"]["ownerReferences"][0]["kind"], "EtcdCluster",
            "{c}"
        );
        assert_eq!(c["spec"]["issuerRef"]["name"], "etcd-ca", "{c}");
        assert_eq!(c["spec"]["duration"], "3600s", "{c}");
        assert_eq!(secret_pem(&ns.0, &name, "ca.crt"), ca, "{name}'s ca.crt");
    }
    let times = cert_times(&ns.0, n);
    assert_eq!(times.len(), 3, "{times:?}");
    // A client certificate comes from cert-manager in this mode, not from the CLI.
    let cert = etcd(&ns.0, &["certificate", n, "--user", "app"]);
    assert_eq!(cert.code, 2, "{}", cert.stderr);
    assert!(cert.stderr.contains("certManager"), "{}", cert.stderr);

    // cert-manager renews every certificate under a writer.
    let lives = pod_lives(&ns.0, n);
    assert_eq!(lives.len(), 3, "{lives:?}");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let puts = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let writer = {
        let (ns, stop, puts) = (ns.0.clone(), stop.clone(), puts.clone());
        std::thread::spawn(move || {
            let mut failed = Vec::new();
            let mut written = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let key = format!("w/{written:05}");
                let r = verified_put(&ns, &format!("c-{}", written % 3), &key);
                if r.code != 0 || !r.stdout.contains("OK") {
                    failed.push(format!("{key}: {}", r.stderr.trim()));
                }
                written += 1;
                puts.store(written, std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(500));
            }
            (written, failed)
        })
    };
    std::thread::sleep(Duration::from_secs(5));
    let old: Vec<String> = ["server", "peer", "client"]
        .iter()
        .map(|r| secret_pem(&ns.0, &format!("c-tls-{r}"), "tls.crt"))
        .collect();
    for role in ["server", "peer", "client"] {
        renew(&ns.0, &format!("c-tls-{role}"));
    }
    for (i, role) in ["server", "peer", "client"].iter().enumerate() {
        eventually(
            &format!("cert-manager renews Secret c-tls-{role}"),
            Duration::from_secs(120),
            || {
                let now = secret_pem(&ns.0, &format!("c-tls-{role}"), "tls.crt");
                (!now.is_empty() && now != old[i]).then_some(())
            },
        );
    }
    let renewed_at = std::time::Instant::now();
    let new_server = secret_pem(&ns.0, "c-tls-server", "tls.crt");
    for pod in ["c-0", "c-1", "c-2"] {
        eventually(
            &format!("the renewed server certificate in {pod}'s volume"),
            Duration::from_secs(180),
            || {
                let have = sh(&ns.0, pod, "cat /etc/etcd/tls/server/tls.crt");
                (have.stdout == new_server).then_some(())
            },
        );
    }
    eprintln!(
        "the kubelet brought the renewed Secrets into every member after {} s",
        renewed_at.elapsed().as_secs()
    );
    // The writer goes on over the renewed certificates (new connections each put): three puts
    // more after every member has them, however slow the machine is.
    let at_renewal = puts.load(std::sync::atomic::Ordering::Relaxed);
    eventually(
        "three puts over the renewed certificates",
        Duration::from_secs(180),
        || (puts.load(std::sync::atomic::Ordering::Relaxed) >= at_renewal + 3).then_some(()),
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (written, failed) = writer.join().unwrap();
    eprintln!("writer: {written} puts, {} failed", failed.len());
    assert!(written >= at_renewal + 3, "the writer wrote only {written}");
    assert_eq!(
        failed,
        Vec::<String>::new(),
        "writes failed during the renewal"
    );
    assert_eq!(pod_lives(&ns.0, n), lives, "a member restarted");
    install_crd();
    let st = json(&ok(etcd(
        &ns.0,
        &["reconcile", n, "--timeout", "2m", "-o", "json"],
    )));
    assert_eq!(ready_members(&st["status"]), (3, 3, 3), "{st}");
    let renewed = cert_times(&ns.0, n);
    for role in ["server", "peer", "client"] {
        assert_ne!(
            renewed[role].0, times[role].0,
            "{role} not renewed in status: {renewed:?}"
        );
    }
}

/// Issue 43 R3: the Secrets of managed TLS deleted under a running 3-member cluster with a
/// writer. The CA Secret left: the lost leaves are issued again from it, no member restarts.
/// Every Secret deleted: the engine holds (exit 7) naming them and the way out, mints no CA,
/// and the members keep serving past the kubelet's sync (before, a new CA locked the cluster out:
/// 0 of 3 Ready 90 s later). Then the documented way to a new CA: every member pod deleted at
/// once; the members start on a new CA with their data, and no acknowledged write is lost.
#[test]
fn deleted_tls_secrets_hold_the_cluster_until_every_member_is_stopped_for_a_new_ca() {
    install_crd();
    let ns = Ns::new("tls-lost");
    let n = "demo";
    create_managed(&ns.0, n, &[]);
    let old_ca = secret_pem(&ns.0, "demo-tls-ca", "ca.crt");
    start_tls_writer(&ns.0, "demo-tls-client");

    // The CA Secret left alone: the leaves come back from it, trusted by every member as before.
    let lives = pod_lives(&ns.0, n);
    ok(kubectl(&[
        "-n",
        &ns.0,
        "delete",
        "secret",
        "demo-tls-server",
        "demo-tls-client",
    ]));
    ok(etcd(&ns.0, &["reconcile", n, "--timeout", "3m"]));
    for role in ["server", "client"] {
        assert_eq!(
            secret_pem(&ns.0, &format!("demo-tls-{role}"), "ca.crt").trim(),
            old_ca.trim(),
            "{role}: issued again from another CA"
        );
    }
    assert_eq!(pod_lives(&ns.0, n), lives, "a member restarted");

    // Every Secret deleted: held, no CA minted.
    let secrets = [
        "demo-tls-ca",
        "demo-tls-server",
        "demo-tls-peer",
        "demo-tls-client",
    ];
    ok(kubectl(
        &[&["-n", &ns.0, "delete", "secret"][..], &secrets[..]].concat(),
    ));
    let deleted = std::time::Instant::now();
    let acked_then = writer_log(&ns.0).acked.len();
    let held = etcd(&ns.0, &["reconcile", n, "--timeout", "2m"]);
    assert_eq!(held.code, 7, "{}\n{}", held.stdout, held.stderr);
    for s in secrets {
        assert!(held.stderr.contains(s), "{s}: {}", held.stderr);
    }
    assert!(
        held.stderr.contains("from a copy")
            && held.stderr.contains(&format!(
                "kubectl -n {} delete pod -l app.kubernetes.io/instance=demo",
                ns.0
            )),
        "{}",
        held.stderr
    );
    let ca = kubectl(&["-n", &ns.0, "get", "secret", "demo-tls-ca"]);
    assert_ne!(ca.code, 0, "a new CA was minted: {}", ca.stdout);
    // Past the kubelet's sync of every pod: the members still serve each other and clients.
    let settle = Duration::from_secs(100).saturating_sub(deleted.elapsed());
    std::thread::sleep(settle);
    let sampler = ReadySampler::start(&ns.0, n);
    std::thread::sleep(Duration::from_secs(10));
    let samples = sampler
        .stop()
        .unwrap_or_else(|bad| panic!("members stopped serving: {bad:?}"));
    assert!(samples > 3, "only {samples} samples");
    let acked_now = writer_log(&ns.0).acked.len();
    assert!(
        acked_now > acked_then + 50,
        "the writer stalled: {acked_then} then {acked_now} acknowledged"
    );
    let ca = kubectl(&["-n", &ns.0, "get", "secret", "demo-tls-ca"]);
    assert_ne!(ca.code, 0, "a new CA was minted: {}", ca.stdout);

    // The way to a new CA: every member stopped at once, data kept.
    ok(kubectl(&[
        "-n",
        &ns.0,
        "delete",
        "pod",
        "-l",
        "app.kubernetes.io/instance=demo,app.kubernetes.io/name=etcd",
    ]));
    let started = std::time::Instant::now();
    let st = json(&ok(etcd(
        &ns.0,
        &["reconcile", n, "--timeout", "8m", "-o", "json"],
    )));
    eprintln!(
        "a new CA and every member on it in {} s",
        started.elapsed().as_secs()
    );
    assert_eq!(ready_members(&st["status"]), (3, 3, 3), "{st}");
    let new_ca = secret_pem(&ns.0, "demo-tls-ca", "ca.crt");
    assert_ne!(new_ca.trim(), old_ca.trim());
    for role in ["server", "peer", "client"] {
        assert_eq!(
            secret_pem(&ns.0, &format!("demo-tls-{role}"), "ca.crt").trim(),
            new_ca.trim(),
            "{role}"
        );
    }
    let served = ok(verified_put(&ns.0, "demo-1", "new/1"));
    assert!(served.stdout.contains("OK"), "{}", served.stdout);
    let acked = assert_no_acknowledged_write_lost(&ns.0);
    assert!(acked > 100, "the writer acknowledged only {acked}");
}

/// Issue 43 R9: `spec.hibernate` without a backup destination holds the cluster (the snapshot
/// before hibernating has nowhere to go) while its members keep running; with 5-minute
/// certificates the renewal must come all the same, or the members stop serving when the
/// certificates expire. Held throughout, every leaf is renewed, and past the old certificates'
/// expiry the members still serve a client that checks their certificate.
#[test]
fn a_hibernation_held_for_a_destination_still_renews_the_running_members_certificates() {
    install_crd();
    let ns = Ns::new("tls-held-renew");
    let n = "demo";
    create_managed(&ns.0, n, &["--certificate-lifetime", "5m"]);
    let before = cert_times(&ns.0, n);
    let expiry = before["server"].0.clone();
    ok(kubectl(&[
        "-n",
        &ns.0,
        "patch",
        "etcdclusters.etcd.kubectl-etcd.io",
        n,
        "--type=merge",
        "-p",
        r#"{"spec":{"hibernate":true}}"#,
    ]));
    let held = etcd(&ns.0, &["reconcile", n, "--timeout", "1m"]);
    assert_eq!(held.code, 7, "{}\n{}", held.stdout, held.stderr);
    assert!(
        held.stderr.contains("spec.backup.destination"),
        "{}",
        held.stderr
    );
    // Passes go on (as the operator's would) until 20 s past the old certificates' expiry.
    while seconds_until(&expiry) > -20 {
        // 7: held 30 s; 4: the timeout came first (a renewal in the pass restarts the hold's
        // 30 s). Never converged: the hibernation holds throughout.
        let r = etcd(&ns.0, &["reconcile", n, "--timeout", "40s"]);
        assert!(
            r.code == 7 || r.code == 4,
            "held throughout: {}\n{}",
            r.stdout,
            r.stderr
        );
    }
    let after = cert_times(&ns.0, n);
    for role in ["server", "peer", "client"] {
        assert_ne!(
            after[role].0, before[role].0,
            "{role}: not renewed while the hibernation held"
        );
        assert!(seconds_until(&after[role].0) > 0, "{role}: expired");
    }
    let served = ok(verified_put(&ns.0, "demo-1", "held/1"));
    assert!(served.stdout.contains("OK"), "{}", served.stdout);
    let ready = ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/instance=demo",
        "-o",
        "jsonpath={range .items[*]}{.status.conditions[?(@.type==\"Ready\")].status} {end}",
    ]));
    assert_eq!(
        ready
            .stdout
            .split_whitespace()
            .filter(|s| *s == "True")
            .count(),
        3,
        "{}",
        ready.stdout
    );
}
