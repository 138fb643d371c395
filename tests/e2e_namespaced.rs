//! End-to-end: an operator installed to watch two namespaces (`kubectl etcd install --operator
//! --watch-namespace A,B`: a Role per namespace, no ClusterRole over namespaced objects) converges
//! a cluster in A and in B and leaves one in C alone; a user holding only the CLI role
//! (`objects::access::cli_user`) in a namespace runs create, status and scale there with no
//! rights in the operator's namespaces.
//!
//! Shares the testbed: the operator (its image `KE_OPERATOR_IMAGE`, built by
//! tests/cluster/images.sh) runs in a namespace of its own under a name of its own, and watches
//! only this test's namespaces, so this file runs in the parallel lanes (tests/lanes.sh).
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::time::Duration;

use common::operator::{Installed, operator_image};
use common::*;
use kubectl_etcd::lease;
use kubectl_etcd::objects::{access, install};
use serde_json::{Value, json};

fn cluster(ns: &str, name: &str, replicas: u32) -> String {
    format!(
        "apiVersion: etcd.kubectl-etcd.io/v1alpha1\nkind: EtcdCluster\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  replicas: {replicas}\n  version: \"3.5.16\"\n"
    )
}

/// A kubeconfig of ServiceAccount `x` of `ns` (a bound token, as a user would get one).
fn user_kubeconfig(ns: &str) -> (tempfile::TempDir, String) {
    ok(kubectl(&["-n", ns, "create", "serviceaccount", "x"]));
    let token = ok(kubectl(&[
        "-n",
        ns,
        "create",
        "token",
        "x",
        "--duration",
        "30m",
    ]));
    let server = ok(kubectl(&[
        "config",
        "view",
        "--minify",
        "-o",
        "jsonpath={.clusters[0].cluster.server}",
    ]));
    token_kubeconfig(server.stdout.trim(), token.stdout.trim(), ns)
}

/// The CLI role (`access::cli_user`) in `ns`, bound to ServiceAccount `x` of `sa_ns`.
fn grant_cli_role(ns: &str, sa_ns: &str) {
    let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "kubectl-etcd-user", "namespace": ns},
            "rules": access::rules(&access::cli_user()),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "kubectl-etcd-user", "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "kubectl-etcd-user"},
            "subjects": [{"kind": "ServiceAccount", "name": "x", "namespace": sa_ns}],
        },
    ]});
    ok(kubectl_stdin(&["apply", "-f", "-"], &objects.to_string()));
}

/// The peer of cluster `name`'s NetworkPolicy that admits the operator to the client port (the
/// second of `objects::network_policy::client_peers`).
fn operator_admitted(ns: &str, name: &str) -> Value {
    let p: Value = serde_json::from_str(
        &ok(kubectl(&[
            "-n",
            ns,
            "get",
            "networkpolicy",
            name,
            "-o",
            "json",
        ]))
        .stdout,
    )
    .unwrap();
    let client = p["spec"]["ingress"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ports"][0]["port"] == 2379)
        .unwrap_or_else(|| panic!("no client rule in {p}"))
        .clone();
    client["from"][1].clone()
}

/// `/metrics` of the operator `name` running in `ns` (issue 42 item 4), straight to its pod: 401
/// without a token, 403 with the token of a ServiceAccount lacking the reader role, 200 once one
/// is bound to it; the probes answer without a token; the operator may review tokens.
fn metrics_need_a_reader_token(ns: &str, name: &str) {
    use common::scrape::{bind_cluster_role, http_get, token};
    let user = format!("system:serviceaccount:{ns}:{name}");
    for review in ["tokenreviews", "subjectaccessreviews"] {
        let r = kubectl(&["auth", "can-i", "create", review, "--as", &user]);
        assert_eq!(r.stdout.trim(), "yes", "the operator may create {review}");
    }
    // Behind the install's NetworkPolicy of the operator's pods: ingress to this port alone.
    ok(kubectl(&["-n", ns, "get", "networkpolicy", name]));
    let addr = common::scrape::metrics_addr(ns, name);
    let status = |r: &str| r.lines().next().unwrap_or_default().to_string();
    let anonymous = http_get(&addr, "/metrics", None);
    assert!(anonymous.starts_with("HTTP/1.1 401"), "{anonymous}");
    assert!(!anonymous.contains("kubectl_etcd_"), "{anonymous}");
    assert!(http_get(&addr, "/healthz", None).starts_with("HTTP/1.1 200"));
    assert!(http_get(&addr, "/readyz", None).starts_with("HTTP/1.1 200"));
    let stranger = http_get(&addr, "/metrics", Some(&token(ns, "stranger")));
    assert!(stranger.starts_with("HTTP/1.1 403"), "{stranger}");
    assert!(
        stranger.contains(&format!("{name}-metrics-reader")),
        "the refusal names the role to bind: {stranger}"
    );
    // The install's reader role, bound as the monitoring pack binds its scraper.
    let reader = kubectl_etcd::keys::install::metrics_reader_role(name);
    bind_cluster_role(&format!("{name}-scraper"), &reader, ns, "scraper", name);
    let scraper = token(ns, "scraper");
    let allowed = eventually(
        "the reader's token to be let through",
        Duration::from_secs(30),
        || {
            let r = http_get(&addr, "/metrics", Some(&scraper));
            r.starts_with("HTTP/1.1 200").then_some(r)
        },
    );
    assert!(
        allowed.contains("kubectl_etcd_leader"),
        "{}",
        status(&allowed)
    );
}

#[test]
fn an_operator_watching_two_namespaces_acts_there_only_and_a_cli_user_needs_no_rights_in_its_namespace()
 {
    install_crd();
    let (a, b, c) = (Ns::new("nsop-a"), Ns::new("nsop-b"), Ns::new("nsop-c"));
    let op = Ns::new("nsop-op");
    let watched = vec![a.0.clone(), b.0.clone()];
    let image = operator_image();

    // What `install --watch-namespace` writes: a Role in each watched namespace, the read of
    // nodes and storage classes alone cluster-wide, and the Deployment watching both.
    let printed = ok(kubectl(&[
        "etcd",
        "install",
        "--operator",
        "--watch-namespace",
        &watched.join(","),
        "--image",
        &image,
        "--print",
    ]));
    let docs: Vec<Value> = serde_saphyr::from_multiple(&printed.stdout).unwrap();
    let of_kind = |k: &str| -> Vec<&Value> { docs.iter().filter(|o| o["kind"] == k).collect() };
    let role_namespaces: Vec<&Value> = of_kind("Role")
        .iter()
        .map(|r| &r["metadata"]["namespace"])
        .collect();
    assert_eq!(role_namespaces, [&a.0, &b.0, lease::NAMESPACE]);
    assert!(
        of_kind("ClusterRole")
            .iter()
            .all(|r| r["metadata"]["name"] != install::NAME),
        "no ClusterRole over namespaced objects"
    );
    let args = &of_kind("Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"];
    assert_eq!(
        args,
        &json!(["operate", "--watch-namespace", watched.join(",")])
    );

    // The same objects, installed into a namespace of this test under a name of its own (the
    // chart's `name`), so that other operators on the testbed are untouched.
    let installed = Installed::watching(&op.0, &watched);
    let name = installed.name.clone();
    metrics_need_a_reader_token(&op.0, &name);

    for ns in [&a.0, &b.0, &c.0] {
        ok(kubectl_stdin(
            &["apply", "-f", "-"],
            &cluster(ns, "demo", 1),
        ));
    }
    for ns in [&a.0, &b.0] {
        eventually(
            &format!("the operator to bring up demo in {ns}"),
            Duration::from_secs(240),
            || status_ready(ns, 1),
        );
        let holder = ok(kubectl(&[
            "-n",
            ns,
            "get",
            "lease",
            &lease::cluster_lease(ns, "demo"),
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ]));
        assert!(
            holder.stdout.starts_with(&format!("operator/{name}-")),
            "the operator holds the cluster's Lease in the cluster's namespace: {}",
            holder.stdout
        );
    }
    // The NetworkPolicies it wrote admit it to the client port where it runs, under its name
    // (not the default install's kubectl-etcd-system; issue 17).
    for ns in [&a.0, &b.0] {
        assert_eq!(
            operator_admitted(ns, "demo"),
            json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": op.0}},
                   "podSelector": {"matchLabels": {"app.kubernetes.io/name": name}}}),
            "the policy of demo in {ns}"
        );
    }
    // Long after it acted in A and B, C's cluster has no status, finalizer or member.
    let idle = cluster_json(&c.0, "demo");
    assert!(idle["status"].is_null(), "{idle}");
    assert!(idle["metadata"]["finalizers"].is_null(), "{idle}");
    let sts = ok(kubectl(&["-n", &c.0, "get", "statefulsets", "-o", "name"]));
    assert_eq!(sts.stdout.trim(), "", "nothing made in C");

    // A user with the CLI role in A and C, and no rights anywhere else.
    let (_dir, kc) = user_kubeconfig(&a.0);
    for ns in [&a.0, &c.0] {
        grant_cli_role(ns, &a.0);
    }
    let sa = format!("system:serviceaccount:{}:x", a.0);
    for (ns, what) in [
        (lease::NAMESPACE, "leases"),
        (op.0.as_str(), "leases"),
        (op.0.as_str(), "pods"),
    ] {
        let r = kubectl(&["auth", "can-i", "--as", &sa, "-n", ns, "get", what]);
        assert_eq!(r.stdout.trim(), "no", "the user may not get {what} in {ns}");
    }
    let as_user = |ns: &str, args: &[&str]| {
        let mut all = vec!["etcd", "--kubeconfig", kc.as_str(), "-n", ns];
        all.extend_from_slice(args);
        kubectl(&all)
    };
    // In A the operator acts and the CLI follows its status; in C (unwatched) the CLI runs the
    // engine itself, with the user's rights: port-forward, apply, its Lease beside the cluster.
    for ns in [&a.0, &c.0] {
        let created = as_user(
            ns,
            &["create", "mine", "--replicas", "1", "--timeout", "4m"],
        );
        assert_eq!(created.code, 0, "create in {ns}: {}", created.stderr);
        // status dials the members through port-forwards with the user's rights (retried: on a
        // loaded testbed a port-forward may miss its connect deadline once).
        let status = eventually(
            &format!("status of mine in {ns} as the user"),
            Duration::from_secs(90),
            || {
                let r = as_user(ns, &["status", "mine", "-o", "json"]);
                (r.code == 0).then_some(r)
            },
        );
        assert_eq!(
            ready_members(&json(&status)["status"]),
            (1, 1, 1),
            "status in {ns}: {}",
            status.stdout
        );
    }
    let scaled = as_user(
        &c.0,
        &["scale", "mine", "--replicas", "2", "--timeout", "5m"],
    );
    assert_eq!(scaled.code, 0, "scale in C: {}", scaled.stderr);
    let scaled = as_user(
        &a.0,
        &["scale", "mine", "--replicas", "2", "--timeout", "5m"],
    );
    assert_eq!(scaled.code, 0, "scale in A: {}", scaled.stderr);
    assert_eq!(
        ready_members(&cluster_json(&a.0, "mine")["status"]),
        (2, 2, 2)
    );
    // The CLI, which does not know where an operator runs, wrote the default install's into
    // C's policy, and took nothing back in A.
    assert_eq!(
        operator_admitted(&c.0, "mine")["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        install::NAMESPACE
    );
    assert_eq!(
        operator_admitted(&a.0, "demo")["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        op.0
    );
    // Still nothing of C's own `demo` touched by the operator.
    assert!(cluster_json(&c.0, "demo")["status"].is_null());
}
