//! End-to-end: etcd's authentication by client certificate (`spec.tls.etcdAuth`, issue 42 item
//! 3) on the testbed. `create` turns it on (3.5 and later by default, 3.4 when asked); the engine
//! makes the user root (its own certificate's CN) and enables it. A certificate from `kubectl etcd
//! certificate --user app` then reads but does not write; with `--prefix /app/ --read-write` it
//! writes there and nowhere else, and never administers members or authentication. The engine
//! still takes backups, scales and upgrades (or refuses 3.4 → 3.5, which etcd does not support
//! with authentication on). The engine's certificate is the cluster's own user
//! (`kubectl-etcd:<ns>:c`): another cluster's engine certificate from the same CA is refused, and
//! a cluster whose Secret still holds CN root moves with a writer running. `spec.auth` beside
//! `etcdAuth` is refused.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::path::Path;

use common::writer::{start_tls_writer_of, writer_log};
use common::*;

/// `etcdctl ARGS` inside member `pod` as the application whose files `certificate` wrote into
/// `dir` (user `user`), through the client Service: its exit code and output.
fn as_app(
    ns: &str,
    pod: &str,
    cluster: &str,
    (dir, user): (&Path, &str),
    args: &str,
) -> (i32, Run) {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    sh_exit(
        ns,
        pod,
        &format!(
            "cd /var/lib/etcd && cat > app.crt <<'EOF'\n{}EOF\ncat > app.key <<'EOF'\n{}EOF\ncat > app-ca.crt <<'EOF'\n{}EOF\n\
             ETCDCTL_ENDPOINTS=https://{cluster}-client:2379 ETCDCTL_CERT=app.crt ETCDCTL_KEY=app.key \
             ETCDCTL_CACERT=app-ca.crt etcdctl --command-timeout=10s {args}; r=$?; \
             rm -f app.crt app.key app-ca.crt; (exit $r)",
            read(&format!("{user}.crt")),
            read(&format!("{user}.key")),
            read("ca.crt")
        ),
    )
}

fn allowed(r: (i32, Run), what: &str) {
    assert_eq!(r.0, 0, "{what}: {} {}", r.1.stdout, r.1.stderr);
}

fn denied(r: (i32, Run), what: &str) {
    assert_ne!(r.0, 0, "{what} was allowed: {}", r.1.stdout);
    let out = format!("{}{}", r.1.stdout, r.1.stderr);
    assert!(out.contains("permission denied"), "{what}: {out}");
}

/// `certificate c ARGS --out DIR`: refused with exit 2 and `says`, nothing written.
fn refused(ns: &str, args: &[&str], says: &str) {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("x");
    let r = etcd(
        ns,
        &[
            &["certificate", "c"],
            args,
            &["--out", dir.to_str().unwrap()],
        ]
        .concat(),
    );
    assert_eq!(r.code, 2, "{args:?}: {} {}", r.stdout, r.stderr);
    assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    assert!(!dir.exists(), "{args:?} wrote files");
}

/// `certificate c --user app --prefix /app/ --read-write` into `out`/rw: the directory.
fn app_writer(ns: &str, out: &Path) -> std::path::PathBuf {
    let rw = out.join("rw");
    let args = "certificate c --user app --prefix /app/ --read-write --out";
    let mut all: Vec<&str> = args.split(' ').collect();
    all.push(rw.to_str().unwrap());
    ok(etcd(ns, &all));
    rw
}

/// A new cluster `c` of `version` with etcd's authentication on, and what an application's
/// certificates reach on it.
fn roles_hold(ns: &str, version: &str, extra: &[&str]) {
    let created = json(&ok(etcd(
        ns,
        &[
            &[
                "create",
                "c",
                "--replicas",
                "3",
                "--version",
                version,
                "--timeout",
                "6m",
            ][..],
            extra,
            &["-o", "json"],
        ]
        .concat(),
    )));
    assert_eq!(created["spec"]["tls"]["etcdAuth"], true, "{created}");
    assert_eq!(ready_members(&created["status"]), (3, 3, 3), "{created}");
    // The engine's certificate is the cluster's own etcd user, not root.
    assert_eq!(
        secret_cn(ns, "c-tls-client"),
        format!("kubectl-etcd:{ns}:c")
    );

    // Bad input: refused, nothing written, nothing changed.
    refused(ns, &["--user", "root"], "engine's own etcd user");
    refused(
        ns,
        &["--user", "app", "--read-write"],
        "--prefix /app/ --read-write",
    );

    // Read-only on every key by default.
    let out = tempfile::tempdir().unwrap();
    let ro = out.path().join("ro");
    let r = ok(etcd(
        ns,
        &[
            "certificate",
            "c",
            "--user",
            "app",
            "--out",
            ro.to_str().unwrap(),
        ],
    ));
    assert!(r.stderr.contains("reads every key"), "{}", r.stderr);
    ok(etcdctl(ns, "c-0", &["put", "/shared/k", "v"]));
    let app = (ro.as_path(), "app");
    let got = as_app(ns, "c-1", "c", app, "get /shared/k --print-value-only");
    assert!(got.1.stdout.contains('v'), "{}", got.1.stdout);
    allowed(got, "a read");
    denied(
        as_app(ns, "c-1", "c", app, "put /app/x 1"),
        "a read-only put",
    );

    // Read-write under /app/ (the role is replaced: the first certificate gets it too).
    let rw = app_writer(ns, out.path());
    for (dir, what) in [
        (rw.as_path(), "the new certificate"),
        (ro.as_path(), "the first"),
    ] {
        let app = (dir, "app");
        allowed(as_app(ns, "c-2", "c", app, "put /app/x 1"), what);
        denied(as_app(ns, "c-2", "c", app, "put /other 1"), what);
        denied(as_app(ns, "c-2", "c", app, "get /shared/k"), what);
        denied(as_app(ns, "c-2", "c", app, "role add evil"), what);
        denied(as_app(ns, "c-2", "c", app, "auth disable"), what);
        denied(
            as_app(
                ns,
                "c-2",
                "c",
                app,
                "member add evil --peer-urls=https://10.9.9.9:2380",
            ),
            what,
        );
    }
    assert_eq!(members(ns, "c-0").len(), 3, "no member was added");

    // The engine, etcd's root by its certificate, still takes backups and scales.
    let dir = tempfile::tempdir().unwrap();
    let to = format!("file://{}", dir.path().display());
    ok(etcd(ns, &["backup", "c", "--to", &to, "-o", "json"]));
    let scaled = json(&ok(etcd(
        ns,
        &[
            "scale",
            "c",
            "--replicas",
            "4",
            "--timeout",
            "5m",
            "-o",
            "json",
        ],
    )));
    assert_eq!(ready_members(&scaled["status"]), (4, 4, 4), "{scaled}");
}

/// File `key` of Secret `secret` in `ns`, decoded.
fn secret_file(ns: &str, secret: &str, key: &str) -> String {
    let template = format!("go-template={{{{index .data \"{key}\" | base64decode}}}}");
    ok(kubectl(&[
        "-n", ns, "get", "secret", secret, "-o", &template,
    ]))
    .stdout
}

/// The CN of the certificate in Secret `secret` of `ns`.
fn secret_cn(ns: &str, secret: &str) -> String {
    let pem = secret_file(ns, secret, "tls.crt");
    let der = kubectl_etcd::pki::pem_certs(pem.as_bytes())
        .unwrap()
        .remove(0);
    kubectl_etcd::pki::der::common_name(&der).unwrap()
}

/// A client certificate of CN `cn` from cluster `c`'s CA, as anyone holding that CA issues it
/// (a cert-manager issuer several clusters share), written as `file.crt`, `file.key` and
/// `ca.crt` into `dir`: its PEM certificate and key.
fn forged(ns: &str, cn: &str, file: &str, dir: &Path) -> (String, String) {
    use kubectl_etcd::model::pki::CertRole;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let p =
        kubectl_etcd::pki::leaf_params(CertRole::Client, "c", ns, "cluster.local", cn, now, 86_400)
            .unwrap();
    let ca_key = secret_file(ns, "c-tls-ca", "ca.key");
    let leaf = kubectl_etcd::pki::sign(&p, "c", ns, &ca_key).unwrap();
    std::fs::write(dir.join(format!("{file}.crt")), &leaf.cert_pem).unwrap();
    std::fs::write(dir.join(format!("{file}.key")), &leaf.key_pem).unwrap();
    std::fs::write(
        dir.join("ca.crt"),
        secret_file(ns, "c-tls-client", "ca.crt"),
    )
    .unwrap();
    (leaf.cert_pem, leaf.key_pem)
}

/// The engine's client certificate names the cluster (`kubectl-etcd:<ns>:c`): a certificate of
/// the same CA with another cluster's CN (what a shared cert-manager issuer would give that
/// cluster's engine) is refused here, one with this cluster's CN is root. A cluster made before
/// the CN was per cluster (its client Secret CN root, as that release issued it) moves to its
/// own CN in one pass, while a writer puts keys with that Secret: no write fails.
fn engine_identity(ns: &str) {
    let own = format!("kubectl-etcd:{ns}:c");
    assert_eq!(secret_cn(ns, "c-tls-client"), own);
    let dir = tempfile::tempdir().unwrap();
    forged(ns, "kubectl-etcd:other-team:c", "other", dir.path());
    denied(
        as_app(ns, "c-0", "c", (dir.path(), "other"), "get /shared/k"),
        "another cluster's engine certificate",
    );
    forged(ns, &own, "own", dir.path());
    allowed(
        as_app(ns, "c-0", "c", (dir.path(), "own"), "member list"),
        "this cluster's engine certificate",
    );

    // The Secret as a release before wrote it: CN root (the engine's user exists already here;
    // the planner tests take the user's creation through every crash).
    let (cert, key) = forged(ns, "root", "root", dir.path());
    let patch = serde_json::json!({"stringData": {"tls.crt": cert, "tls.key": key}});
    ok(kubectl(&[
        "-n",
        ns,
        "patch",
        "secret",
        "c-tls-client",
        "--type",
        "merge",
        "-p",
        &patch.to_string(),
    ]));
    assert_eq!(secret_cn(ns, "c-tls-client"), "root");
    start_tls_writer_of(ns, "c", "c-tls-client");
    ok(etcd(ns, &["reconcile", "c", "--timeout", "2m"]));
    assert_eq!(
        secret_cn(ns, "c-tls-client"),
        own,
        "moved to the cluster's own CN"
    );
    // A few more writes with the moved Secret, then none failed.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let _ = kubectl(&["-n", ns, "delete", "pod", "writer", "--wait=false"]);
    let log = writer_log(ns);
    let failed = log.writes.iter().filter(|(acked, _)| !acked).count();
    assert_eq!(
        failed,
        0,
        "{} acknowledged, {failed} failed",
        log.acked.len()
    );
    eprintln!("writer: {} acknowledged, none failed", log.acked.len());
}

/// `spec.auth` written beside `spec.tls.etcdAuth` of cluster `c` (by kubectl, not `create`): a
/// pass is refused with exit 2 and the `Degraded` condition (reason `InvalidSpec`) names both
/// fields and the way out; nothing changes until `spec.auth` goes again.
fn password_root_refused(ns: &str) {
    let sts = || {
        ok(kubectl(&[
            "-n",
            ns,
            "get",
            "statefulset",
            "c",
            "-o",
            "jsonpath={.metadata.generation}",
        ]))
        .stdout
    };
    let before = sts();
    let patch = |kind: &str, p: &str| {
        ok(kubectl(&[
            "-n",
            ns,
            "patch",
            "etcdcluster",
            "c",
            "--type",
            kind,
            "-p",
            p,
        ]))
    };
    patch("merge", r#"{"spec":{"auth":{"userSecret":"c-root"}}}"#);
    let r = etcd(ns, &["reconcile", "c", "--timeout", "30s"]);
    assert_eq!(r.code, 2, "{} {}", r.stdout, r.stderr);
    for says in [
        "spec.auth.userSecret c-root",
        "spec.tls.etcdAuth: true",
        "remove spec.auth",
    ] {
        assert!(r.stderr.contains(says), "{says:?}: {}", r.stderr);
    }
    let c = cluster_json(ns, "c");
    let held = c["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Degraded")
        .cloned()
        .unwrap_or_default();
    assert_eq!(held["reason"], "InvalidSpec", "{c}");
    assert!(
        held["message"]
            .as_str()
            .unwrap()
            .contains("spec.tls.etcdAuth"),
        "{held}"
    );
    assert_eq!(sts(), before, "the StatefulSet changed");
    patch("json", r#"[{"op":"remove","path":"/spec/auth"}]"#);
    ok(etcd(ns, &["reconcile", "c", "--timeout", "2m"]));
}

#[test]
fn application_certificates_reach_what_their_role_grants_and_the_engine_upgrades_to_3_7() {
    install_crd();
    let ns = Ns::new("auth-37");
    roles_hold(&ns.0, "3.6.15", &[]);
    password_root_refused(&ns.0);
    engine_identity(&ns.0);
    // Upgraded with authentication on: the engine's certificate is root on 3.7 too.
    let dir = tempfile::tempdir().unwrap();
    let to = format!("file://{}", dir.path().display());
    let up = json(&ok(etcd(
        &ns.0,
        &[
            "upgrade",
            "c",
            "--version",
            "3.7.3",
            "--to",
            &to,
            "--timeout",
            "10m",
            "-o",
            "json",
        ],
    )));
    assert_eq!(ready_members(&up["status"]), (4, 4, 4), "{up}");
    let out = tempfile::tempdir().unwrap();
    let rw = app_writer(&ns.0, out.path());
    let app = (rw.as_path(), "app");
    allowed(
        as_app(&ns.0, "c-3", "c", app, "put /app/y 2"),
        "a put on 3.7.3",
    );
    denied(
        as_app(&ns.0, "c-3", "c", app, "put /other 2"),
        "a put elsewhere on 3.7.3",
    );
}

#[test]
fn application_certificates_reach_what_their_role_grants_on_etcd_3_4() {
    install_crd();
    let ns = Ns::new("auth-34");
    roles_hold(&ns.0, "3.4.23", &["--etcd-auth", "on"]);
    // etcd does not support a rolling upgrade from 3.4 to 3.5 with authentication on: refused,
    // naming the way through.
    let r = etcd(
        &ns.0,
        &[
            "upgrade",
            "c",
            "--version",
            "3.5.35",
            "--to",
            "file:///tmp",
            "--timeout",
            "1m",
        ],
    );
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(r.stderr.contains("authentication is on"), "{}", r.stderr);
}
