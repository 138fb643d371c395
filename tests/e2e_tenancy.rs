//! End-to-end, the hostile tenant (issue 42): a user with only `edit` in namespace T writes an
//! EtcdCluster whose `spec.adopt` names the members of a plain etcd StatefulSet in namespace V
//! (tests/cluster/plain-etcd-sts.yaml), with V's real cluster id.
//! - By their DNS names, with a `spec.auth` password, driven by a CLI pass (`kubectl etcd
//!   reconcile`, the platform team's, with rights in V): the engine refuses before dialing
//!   anything, with a condition naming the field and the fix; no password reached V's members
//!   (etcd logs every wrong one: "invalid password"). V's owner adopting V's own members with
//!   `spec.auth` over plain http is refused too: the password never travels in clear.
//! - By their pod IPs, driven by an operator watching T alone and dialing pods directly (as one
//!   in the cluster does; here a child process, `common::operator`): refused the same way.
//!
//! - Against the operator installed in the cluster for T (`install --operator
//!   --watch-namespace T`): the same by pod IPs, a ClusterIssuer, a forged status, and reaches
//!   into V, kube-system and the operator's namespace, by the tenant and by the operator's own
//!   identity; each refused, while the operator serves the tenant's own cluster.
//!
//! Each time V's member list, keys and pods are what they were.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::time::Duration;

use common::operator::Installed;
use common::*;
use serde_json::{Value, json};

const IMAGE: &str = "gcr.io/etcd-development/etcd:v3.6.16";
/// The victim's root password; `etcdctl` inside its pods uses it once authentication is on.
const ROOT: &str = "root:victims-own-password";
/// The user the tenant acts as (`kubectl --as`), with `edit` in its namespace only.
const TENANT: &str = "e2e-tenant";

/// The victim: the plain etcd of `ns` with a key of its own and (`auth`) etcd's authentication
/// on, root's password `ROOT`'s; what must not change in it.
fn victim(ns: &str, auth: bool) -> Victim {
    apply_manifest(ns, "plain-etcd-sts.yaml", IMAGE);
    ok(etcdctl(ns, "etcd-0", &["put", "victim/secret", "s3cr3t"]));
    if auth {
        ok(etcdctl(ns, "etcd-0", &["user", "add", ROOT]));
        ok(etcdctl(
            ns,
            "etcd-0",
            &["user", "grant-role", "root", "root"],
        ));
        ok(etcdctl(ns, "etcd-0", &["auth", "enable"]));
    }
    let v = Victim::read(ns, auth);
    assert_eq!(v.members.len(), 3, "{v:?}");
    v
}

/// `etcdctl` in `pod` of `ns` (`auth`: as the victim's root user), with JSON output.
fn etcdctl_json(ns: &str, pod: &str, auth: bool, args: &[&str]) -> Value {
    let mut all = vec!["-w", "json"];
    if auth {
        all.extend(["--user", ROOT]);
    }
    all.extend_from_slice(args);
    json(&ok(etcdctl(ns, pod, &all)))
}

/// What must not change in the victim's namespace: its cluster id, members, keys and pods.
#[derive(Debug, PartialEq)]
struct Victim {
    cluster_id: u64,
    /// (id, name, peer URLs, client URLs, learner), sorted.
    members: Vec<(u64, String, Value, Value, bool)>,
    /// (key, value, mod revision), base64 as etcd gives them.
    keys: Vec<(String, String, i64)>,
    /// (pod, uid, restarts).
    pods: Vec<(String, String, i64)>,
}

impl Victim {
    fn read(ns: &str, auth: bool) -> Victim {
        let list = etcdctl_json(ns, "etcd-0", auth, &["member", "list"]);
        let mut members: Vec<_> = list["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["ID"].as_u64().unwrap(),
                    m["name"].as_str().unwrap_or_default().to_string(),
                    m["peerURLs"].clone(),
                    m["clientURLs"].clone(),
                    m["isLearner"].as_bool().unwrap_or(false),
                )
            })
            .collect();
        members.sort_by_key(|m| m.0);
        let got = etcdctl_json(ns, "etcd-0", auth, &["get", "", "--prefix"]);
        let keys = got["kvs"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|kv| {
                (
                    kv["key"].as_str().unwrap().to_string(),
                    kv["value"].as_str().unwrap_or_default().to_string(),
                    kv["mod_revision"].as_i64().unwrap(),
                )
            })
            .collect();
        let pods = json(&ok(kubectl(&[
            "-n",
            ns,
            "get",
            "pods",
            "-l",
            "app=plain-etcd",
            "-o",
            "json",
        ])));
        let mut pods: Vec<_> = pods["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["metadata"]["name"].as_str().unwrap().to_string(),
                    p["metadata"]["uid"].as_str().unwrap().to_string(),
                    p["status"]["containerStatuses"][0]["restartCount"]
                        .as_i64()
                        .unwrap_or(-1),
                )
            })
            .collect();
        pods.sort();
        Victim {
            cluster_id: list["header"]["cluster_id"].as_u64().unwrap(),
            members,
            keys,
            pods,
        }
    }

    /// The client URLs the members advertise, as `kubectl etcd adopt` writes them.
    fn endpoints(&self) -> Vec<String> {
        let mut urls: Vec<String> = self
            .members
            .iter()
            .map(|m| m.3[0].as_str().unwrap().to_string())
            .collect();
        urls.sort();
        urls
    }
}

/// `http://<pod IP>:2379` of each of the victim's members in `ns`, as an operator in the
/// cluster dials them.
fn pod_ip_endpoints(ns: &str) -> Vec<String> {
    let ips = ok(kubectl(&[
        "-n",
        ns,
        "get",
        "pods",
        "-l",
        "app=plain-etcd",
        "-o",
        "jsonpath={.items[*].status.podIP}",
    ]));
    let endpoints: Vec<String> = ips
        .stdout
        .split_whitespace()
        .map(|ip| format!("http://{ip}:2379"))
        .collect();
    assert_eq!(endpoints.len(), 3, "{}", ips.stdout);
    endpoints
}

/// The lines of the victim's member logs where etcd refused a password.
fn refused_passwords(ns: &str) -> usize {
    (0..3)
        .map(|k| {
            let logs = ok(kubectl(&["-n", ns, "logs", &format!("etcd-{k}")])).stdout;
            logs.lines()
                .filter(|l| l.contains("invalid password"))
                .count()
        })
        .sum()
}

/// `kubectl --as TENANT -n ns apply -f -` of `objects`.
fn as_tenant_apply(ns: &str, objects: &[Value]) {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    ok(kubectl_stdin(
        &["--as", TENANT, "-n", ns, "apply", "-f", "-"],
        &list.to_string(),
    ));
}

/// A basic-auth Secret `name` with user root and `password`.
fn auth_secret(ns: &str, name: &str, password: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/basic-auth",
        "metadata": {"name": name, "namespace": ns},
        "stringData": {"username": "root", "password": password},
    })
}

/// EtcdCluster `name` in `ns` adopting the members at `endpoints` (cluster `cluster_id`), as the
/// user whose password is in Secret `auth`, if any.
fn adopting(
    ns: &str,
    name: &str,
    endpoints: &[String],
    cluster_id: u64,
    auth: Option<&str>,
) -> Value {
    let mut c = json!({
        "apiVersion": "etcd.kubectl-etcd.io/v1alpha1", "kind": "EtcdCluster",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": 3,
            "version": "3.6.16",
            "adopt": {
                "statefulSet": "etcd",
                "endpoints": endpoints,
                "clusterId": format!("{cluster_id:016x}"),
            },
        },
    });
    if let Some(secret) = auth {
        c["spec"]["auth"] = json!({"userSecret": secret});
    }
    c
}

/// The `reason` and `message` of every condition of EtcdCluster `name`, and its status.
fn conditions(ns: &str, name: &str) -> (Vec<(String, String)>, Value) {
    let c = cluster_json(ns, name);
    let list = c["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|c| {
            (
                c["reason"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    (list, c["status"].clone())
}

/// Nothing of EtcdCluster `name` runs in `ns`: no StatefulSet, no pod, no volume.
fn nothing_runs(ns: &str, name: &str) {
    let instance = format!("app.kubernetes.io/instance={name}");
    let made = ok(kubectl(&[
        "-n",
        ns,
        "get",
        "statefulset,pod,pvc",
        "-l",
        &instance,
        "-o",
        "name",
    ]));
    assert_eq!(made.stdout.trim(), "", "nothing of {name} in {ns}");
}

#[test]
fn a_tenant_cannot_adopt_the_etcd_of_another_namespace_nor_send_a_password_in_clear() {
    install_crd();
    let victim = Ns::new("ten-victim");
    let tenant = Ns::new("ten-tenant");
    let (v, t) = (victim.0.as_str(), tenant.0.as_str());
    let before = self::victim(v, true);
    assert_eq!(refused_passwords(v), 0);
    edits(TENANT, t);

    // The tenant names the victim's members and its real cluster id, with a password to try.
    as_tenant_apply(
        t,
        &[
            auth_secret(t, "guess", "tenant-guess"),
            adopting(
                t,
                "grab",
                &before.endpoints(),
                before.cluster_id,
                Some("guess"),
            ),
        ],
    );
    let r = etcd(t, &["reconcile", "grab", "--timeout", "2m"]);
    assert_ne!(r.code, 0, "refused: {}", r.stderr);
    for says in [
        "spec.adopt.endpoints",
        &format!("names namespace {v}"),
        &format!("<pod>.<service>.{t}.svc"),
        "--allow-foreign-adopt-endpoints",
    ] {
        assert!(r.stderr.contains(says), "{says:?} in {}", r.stderr);
    }
    let (conds, status) = conditions(t, "grab");
    assert!(
        conds.iter().any(|(reason, m)| reason == "AdoptionRefused"
            && m.contains(&format!("names namespace {v}"))),
        "{conds:?}"
    );
    assert!(status["clusterId"].is_null(), "{status}");
    assert!(
        status["members"].as_array().is_none_or(Vec::is_empty),
        "{status}"
    );
    nothing_runs(t, "grab");

    // The victim's owner adopting its own members with a password over plain http: refused
    // before the password goes anywhere.
    ok(kubectl_stdin(
        &["-n", v, "apply", "-f", "-"],
        &json!({"apiVersion": "v1", "kind": "List", "items": [
            auth_secret(v, "root-guess", "owners-wrong-guess"),
            adopting(v, "mine", &before.endpoints(), before.cluster_id, Some("root-guess")),
        ]})
        .to_string(),
    ));
    let r = etcd(v, &["reconcile", "mine", "--timeout", "2m"]);
    assert_ne!(r.code, 0, "refused: {}", r.stderr);
    for says in ["plain http", "spec.auth", "spec.adopt.tlsSecret"] {
        assert!(r.stderr.contains(says), "{says:?} in {}", r.stderr);
    }
    nothing_runs(v, "mine");

    // Nothing reached the victim: same members, keys and pods, and no password was tried.
    assert_eq!(Victim::read(v, true), before);
    assert_eq!(refused_passwords(v), 0, "no password reached the victim");
    // (A wrong password does show: the check above can fail.)
    let tried = etcdctl(
        v,
        "etcd-0",
        &["--user", "root:nope", "get", "victim/secret"],
    );
    assert_ne!(tried.code, 0);
    eventually(
        "etcd to log the wrong password",
        Duration::from_secs(10),
        || (refused_passwords(v) > 0).then_some(()),
    );
}

#[test]
fn an_operator_watching_the_tenant_refuses_the_pod_ips_of_another_namespace() {
    install_crd();
    let victim = Ns::new("ten-ipvictim");
    let tenant = Ns::new("ten-iptenant");
    let (v, t) = (victim.0.as_str(), tenant.0.as_str());
    let before = self::victim(v, false);
    edits(TENANT, t);
    let endpoints = pod_ip_endpoints(v);
    // No `spec.auth` here: the pod IPs alone are the vector.
    as_tenant_apply(
        t,
        &[adopting(t, "grab", &endpoints, before.cluster_id, None)],
    );
    // (Metrics on a port the kernel picks: nobody reads them here.)
    let op = common::operator::LocalOperator::start_with(
        t,
        "grab",
        &["--metrics-addr", "127.0.0.1:0", "--dial", "direct"],
        &[],
    )
    .unwrap();
    let refused = format!("is not the IP of a pod of namespace {t}");
    eventually(
        "the operator to refuse the adoption",
        Duration::from_secs(120),
        || {
            let (conds, _) = conditions(t, "grab");
            conds
                .iter()
                .any(|(reason, m)| reason == "AdoptionRefused" && m.contains(&refused))
                .then_some(())
        },
    );
    // Passes go on (a hold is looked at again); none dials the victim.
    std::thread::sleep(Duration::from_secs(20));
    let (conds, status) = conditions(t, "grab");
    assert!(
        conds.iter().any(|(reason, _)| reason == "AdoptionRefused"),
        "{conds:?}\n{}",
        op.log_tail(30)
    );
    assert!(status["clusterId"].is_null(), "{status}");
    nothing_runs(t, "grab");
    assert_eq!(Victim::read(v, false), before);
    drop(op);
}

/// `kind/name` → (uid, resourceVersion) of every object of `kinds` in `ns`: what must not
/// change there while a tenant tries its vectors.
fn objects_of(ns: &str, kinds: &str) -> Vec<(String, String, String)> {
    let list = json(&ok(kubectl(&["-n", ns, "get", kinds, "-o", "json"])));
    let mut all: Vec<_> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let m = &o["metadata"];
            let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (
                format!("{}/{}", s(&o["kind"]), s(&m["name"])),
                s(&m["uid"]),
                s(&m["resourceVersion"]),
            )
        })
        .collect();
    all.sort();
    all
}

/// What a tenant must never change: the Secrets, ConfigMaps, ServiceAccounts and RBAC of
/// kube-system and of the operator's namespace, and the operator's workload (its status
/// aside: by uid and generation).
fn outside(op_ns: &str) -> Vec<(String, String, String)> {
    const WRITABLE: &str = "secrets,configmaps,serviceaccounts,roles,rolebindings";
    let mut all = Vec::new();
    for ns in ["kube-system", op_ns] {
        // (In kube-system, the grants other tests' operators get there, `ke-e2e-…`, come and
        // go beside this one.)
        all.extend(
            objects_of(ns, WRITABLE)
                .into_iter()
                .filter(|(o, _, _)| ns != "kube-system" || !o.contains("/ke-e2e-")),
        );
        let workloads = json(&ok(kubectl(&[
            "-n",
            ns,
            "get",
            "deployments,statefulsets,daemonsets",
            "-o",
            "json",
        ])));
        for o in workloads["items"].as_array().unwrap() {
            let m = &o["metadata"];
            all.push((
                format!("{ns}/{}/{}", o["kind"], m["name"]),
                m["uid"].to_string(),
                m["generation"].to_string(),
            ));
        }
    }
    all
}

/// Issue 42 item 8: the vectors above and more, against the operator as a platform team
/// installs it for the tenant's namespace, in the cluster: by `install --operator
/// --watch-namespace T` and by the Helm chart (`rbac.scope=namespace`), each with its
/// ServiceAccount, a Role in T and its admission policies.
#[test]
fn against_the_operator_installed_for_its_namespace_each_vector_is_refused_and_nothing_outside_changes()
 {
    hostile_tenant_against("ten-m", Installed::watching);
}

#[test]
fn against_the_operator_the_helm_chart_installed_for_its_namespace_each_vector_is_refused() {
    hostile_tenant_against("ten-h", Installed::by_helm);
}

/// The tenant, `edit` in T alone, adopts another namespace's etcd by its pod IPs, names a
/// ClusterIssuer, writes the status only the engine writes, and reaches for the victim's
/// namespace and the operator's; each is refused, the operator (installed by `install`) still
/// serves the tenant's own cluster, and nothing changed in the victim, in kube-system or in the
/// operator's namespace.
/// `tag` starts its namespaces' names (the two installers' tests run side by side).
fn hostile_tenant_against(tag: &str, install: fn(&str, &[String]) -> Installed) {
    install_crd();
    let victim = Ns::new(&format!("{tag}victim"));
    let tenant = Ns::new(&format!("{tag}tenant"));
    let op = Ns::new(&format!("{tag}op"));
    let (v, t) = (victim.0.as_str(), tenant.0.as_str());
    let before = self::victim(v, false);
    edits(TENANT, t);
    let installed = install(&op.0, &[t.to_string()]);
    let kept = outside(&op.0);

    // The tenant's own cluster: the operator serves it (so the refusals below are its).
    as_tenant_apply(
        t,
        &[json!({
            "apiVersion": "etcd.kubectl-etcd.io/v1alpha1", "kind": "EtcdCluster",
            "metadata": {"name": "demo", "namespace": t},
            "spec": {"replicas": 1, "version": "3.6.16"},
        })],
    );
    eventually(
        "the installed operator to bring up the tenant's cluster",
        Duration::from_secs(240),
        || status_ready(t, 1),
    );

    // 1. Another namespace's members by their pod IPs (the operator dials pods directly).
    let endpoints = pod_ip_endpoints(v);
    // 2. A ClusterIssuer: its CA would sign for every namespace.
    let shared_ca = json!({
        "apiVersion": "etcd.kubectl-etcd.io/v1alpha1", "kind": "EtcdCluster",
        "metadata": {"name": "shared-ca", "namespace": t},
        "spec": {"replicas": 1, "version": "3.6.16", "tls": {
            "mode": "certManager",
            "issuerRef": {"name": "e2e-everyones-ca", "kind": "ClusterIssuer"},
        }},
    });
    as_tenant_apply(
        t,
        &[
            adopting(t, "grab", &endpoints, before.cluster_id, None),
            shared_ca,
        ],
    );
    for (name, reason, says) in [
        (
            "grab",
            Some("AdoptionRefused"),
            format!("is not the IP of a pod of namespace {t}"),
        ),
        ("shared-ca", None, "names ClusterIssuer".to_string()),
    ] {
        eventually(
            &format!("the operator to refuse {name}"),
            Duration::from_secs(120),
            || {
                let (conds, _) = conditions(t, name);
                conds
                    .iter()
                    .any(|(r, m)| reason.is_none_or(|want| r == want) && m.contains(&says))
                    .then_some(())
            },
        );
    }

    // 3. The status only the engine writes (a forged member list, phase or backup record).
    let forged = kubectl(&[
        "--as",
        TENANT,
        "-n",
        t,
        "patch",
        "etcdcluster",
        "demo",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Ready","clusterId":"0000000000000001"}}"#,
    ]);
    assert_ne!(forged.code, 0, "status forged: {}", forged.stdout);
    assert!(forged.stderr.contains("forbidden"), "{}", forged.stderr);

    // 4. Beyond its namespace: the victim's, the operator's, kube-system.
    for (ns, verb, what) in [
        (v, "create", "etcdclusters.etcd.kubectl-etcd.io"),
        (v, "create", "pods/exec"),
        (op.0.as_str(), "get", "secrets"),
        (op.0.as_str(), "update", "leases"),
        (op.0.as_str(), "patch", "deployments"),
        ("kube-system", "get", "secrets"),
    ] {
        let r = kubectl(&["auth", "can-i", "--as", TENANT, "-n", ns, verb, what]);
        assert_eq!(
            r.stdout.trim(),
            "no",
            "the tenant may {verb} {what} in {ns}"
        );
    }
    // 5. The operator's own identity: nothing in the victim's namespace or in kube-system.
    let sa = installed.user();
    for ns in [v, "kube-system"] {
        for (verb, what) in [
            ("get", "secrets"),
            ("create", "pods"),
            ("create", "pods/exec"),
            ("update", "leases"),
        ] {
            let r = kubectl(&["auth", "can-i", "--as", &sa, "-n", ns, verb, what]);
            assert_eq!(
                r.stdout.trim(),
                "no",
                "the operator may {verb} {what} in {ns}"
            );
        }
    }

    // Passes go on (a hold is looked at again); none acted outside.
    std::thread::sleep(Duration::from_secs(20));
    for name in ["grab", "shared-ca"] {
        assert!(conditions(t, name).1["clusterId"].is_null(), "{name}");
    }
    nothing_runs(t, "grab");
    assert_eq!(Victim::read(v, false), before);
    assert_eq!(
        outside(&op.0),
        kept,
        "kube-system or the operator's namespace changed"
    );
    assert!(
        status_ready(t, 1).is_some(),
        "the tenant's own cluster still serves"
    );
}

/// Issue 42 item 6: `restore` never copies this machine's S3 keys into a Secret of the namespace
/// (readable by every Secret reader there, kept for the cluster's life) unless asked with
/// `--copy-local-credentials`: refused with both ways out, exit 2, and nothing made.
#[test]
fn local_s3_keys_are_never_copied_into_the_namespace_unasked() {
    install_crd();
    let ns = Ns::new("ten-keys");
    let ns = ns.0.as_str();
    let args = [
        "etcd",
        "-n",
        ns,
        "restore",
        "copied",
        "--from",
        "s3://etcd-backups/none/copied.db.zst",
        "--sha256",
        "0000000000000000000000000000000000000000000000000000000000000000",
    ];
    let mut c = kubectl_cmd(&args);
    c.env_remove("KUBECTL_ETCD_COPY_LOCAL_CREDENTIALS")
        .env("AWS_ACCESS_KEY_ID", "e2e-local-key")
        .env("AWS_SECRET_ACCESS_KEY", "e2e-local-secret");
    let r = run_cmd(&args, c);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("--copy-local-credentials") && r.stderr.contains("--credentials-secret"),
        "{}",
        r.stderr
    );
    assert!(
        kubectl(&["-n", ns, "get", "etcdcluster", "copied"]).code != 0,
        "no EtcdCluster made"
    );
    let secrets = ok(kubectl(&["-n", ns, "get", "secrets", "-o", "name"])).stdout;
    assert!(
        !secrets.contains("copied"),
        "no Secret made from the local keys: {secrets}"
    );
}
