//! End-to-end: `kubectl etcd operate` running in-cluster (its image built by tests/cluster/images.sh,
//! dialing members directly) converges clusters written with plain kubectl, and the CLI defers to it.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::time::Duration;

use common::*;

fn operator_image() -> String {
    std::env::var("KE_OPERATOR_IMAGE").expect("KE_OPERATOR_IMAGE is not set: tests/run-all.sh builds testbed.local/kubectl-etcd:dev with tests/cluster/images.sh operator")
}

fn http_get(addr: &str, path: &str) -> String {
    common::scrape::http_get(addr, path, None)
}

#[test]
fn the_in_cluster_operator_converges_kubectl_apply_and_kubectl_scale_and_the_cli_defers_to_it() {
    // Pull credentials of the operator's own image (a private registry): a Secret the kubelet
    // would not pull with is refused before anything is written; a docker-registry one reaches
    // the operator's pod; one not made yet is named, with the command that makes it.
    let _ = kubectl(&["create", "namespace", OP_NS]);
    for (kind, name) in [("generic", "not-for-pulls"), ("docker-registry", "regcred")] {
        let _ = kubectl(&["-n", OP_NS, "delete", "secret", name, "--ignore-not-found"]);
        let mut args = vec!["-n", OP_NS, "create", "secret", kind, name];
        args.extend(match kind {
            "generic" => &["--from-literal=x=y"][..],
            _ => &[
                "--docker-server=registry.example",
                "--docker-username=u",
                "--docker-password=p",
            ][..],
        });
        ok(kubectl(&args));
    }
    let _ = kubectl(&[
        "-n",
        OP_NS,
        "delete",
        "deployment",
        "kubectl-etcd-operator",
        "--ignore-not-found",
    ]);
    let install = |secrets: &[&str]| {
        let image = operator_image();
        let mut args = vec!["etcd", "install", "--operator", "--image", &image];
        for s in secrets {
            args.extend(["--image-pull-secret", s]);
        }
        kubectl(&args)
    };
    let refused = install(&["not-for-pulls"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("not kubernetes.io/dockerconfigjson")
            && refused
                .stderr
                .contains("create secret docker-registry not-for-pulls"),
        "{}",
        refused.stderr
    );
    let none = kubectl(&["-n", OP_NS, "get", "deployment", "kubectl-etcd-operator"]);
    assert_ne!(none.code, 0, "a refused install wrote the Deployment");

    let installed = ok(install(&["regcred", "made-later"]));
    let _op = Operator;
    assert!(
        installed.stderr.contains("warning: the operator's image cannot be pulled with it until it exists: Secret kubectl-etcd-system/made-later does not exist"),
        "{}",
        installed.stderr
    );
    let pulls = ok(kubectl(&[
        "-n",
        OP_NS,
        "get",
        "deployment",
        "kubectl-etcd-operator",
        "-o",
        "jsonpath={.spec.template.spec.imagePullSecrets[*].name}",
    ]));
    assert_eq!(pulls.stdout.trim(), "regcred made-later");
    ok(kubectl(&[
        "-n",
        OP_NS,
        "rollout",
        "status",
        "deployment/kubectl-etcd-operator",
        "--timeout=180s",
    ]));
    eventually(
        "the operator to hold the engine lease",
        Duration::from_secs(60),
        || {
            let r = kubectl(&[
                "-n",
                OP_NS,
                "get",
                "lease",
                &kubectl_etcd::keys::install::leader_lease(kubectl_etcd::keys::install::NAME),
                "-o",
                "jsonpath={.spec.holderIdentity}",
            ]);
            r.stdout.starts_with("operator/").then_some(())
        },
    );

    let ns = Ns::new("operator");
    let manifest = format!(
        "apiVersion: etcd.kubectl-etcd.io/v1alpha1\nkind: EtcdCluster\nmetadata:\n  name: demo\n  namespace: {}\nspec:\n  replicas: 3\n  version: \"3.5.16\"\n",
        ns.0
    );
    ok(kubectl_stdin(&["apply", "-f", "-"], &manifest));
    eventually(
        "the operator to bring up 3 healthy members",
        Duration::from_secs(240),
        || status_ready(&ns.0, 3),
    );
    ok(kubectl(&[
        "-n", &ns.0, "exec", "demo-0", "--", "etcdctl", "put", "kept", "yes",
    ]));

    ok(kubectl(&[
        "-n",
        &ns.0,
        "scale",
        "etcdcluster/demo",
        "--replicas",
        "5",
    ]));
    eventually(
        "the operator to scale to 5 healthy voters",
        Duration::from_secs(300),
        || status_ready(&ns.0, 5),
    );
    let m = members(&ns.0, "demo-4");
    assert_eq!(m.len(), 5);
    assert!(m.iter().all(|(n, l)| !l && !n.is_empty()), "{m:?}");

    // The CLI writes intent and waits on the operator's status instead of acting itself.
    let r = ok(etcd(
        &ns.0,
        &[
            "scale",
            "demo",
            "--replicas",
            "3",
            "--timeout",
            "5m",
            "-o",
            "json",
        ],
    ));
    assert!(
        r.stderr.contains("holds the engine lease"),
        "the CLI must defer to the operator: {}",
        r.stderr
    );
    assert_eq!(ready_members(&json(&r)["status"]), (3, 3, 3));
    let v = ok(etcdctl(
        &ns.0,
        "demo-1",
        &["get", "kept", "--print-value-only"],
    ));
    assert_eq!(v.stdout.trim(), "yes");

    // Each performed step became an Event on the EtcdCluster.
    let ev = ok(kubectl(&["-n", &ns.0, "get", "events", "-o", "json"]));
    let reasons: Vec<String> = json(&ev)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["reason"].as_str().unwrap_or("").to_string())
        .collect();
    for want in [
        "Bootstrapping",
        "AddingLearner",
        "PromotingLearner",
        "RemovingMember",
    ] {
        assert!(
            reasons.iter().any(|r| r == want),
            "no {want} event in {reasons:?}"
        );
    }

    // ... and a line of its log, at the default level (a `kube=warn` directive once silenced
    // every `kubectl_etcd` line below warn, so its log said nothing of what it did).
    let log = ok(kubectl(&[
        "-n",
        OP_NS,
        "logs",
        "deployment/kubectl-etcd-operator",
    ]));
    for want in ["acting", "promote learner", "remove member"] {
        assert!(
            log.stdout.contains(want),
            "no {want:?} in the operator's log:\n{}",
            log.stdout
        );
    }

    // Metrics and health endpoints, straight to the operator pod.
    let addr = common::scrape::metrics_addr(OP_NS, kubectl_etcd::keys::install::NAME);
    // Behind the reviews of a bearer token (`--metrics-auth kubernetes`): 401 without one, 200
    // with a token of a ServiceAccount bound to the install's reader role.
    let anonymous = http_get(&addr, "/metrics");
    assert!(anonymous.starts_with("HTTP/1.1 401"), "{anonymous}");
    let operator = kubectl_etcd::keys::install::NAME;
    common::scrape::bind_cluster_role(
        &format!("{operator}-e2e-scraper"),
        &kubectl_etcd::keys::install::metrics_reader_role(operator),
        OP_NS,
        "e2e-scraper",
        operator,
    );
    let token = common::scrape::token(OP_NS, "e2e-scraper");
    let metrics = eventually(
        "the reader's token to be let through",
        Duration::from_secs(30),
        || {
            let r = common::scrape::http_get(&addr, "/metrics", Some(&token));
            r.starts_with("HTTP/1.1 200").then_some(r)
        },
    );
    let _ = kubectl(&[
        "delete",
        "clusterrolebinding",
        "--ignore-not-found",
        &format!("{operator}-e2e-scraper"),
    ]);
    for name in [
        "kubectl_etcd_reconciles_total",
        "kubectl_etcd_reconcile_duration_seconds",
        "kubectl_etcd_clusters",
        "kubectl_etcd_leader 1",
    ] {
        assert!(
            metrics.contains(name),
            "{name} missing from /metrics:\n{metrics}"
        );
    }
    assert!(http_get(&addr, "/healthz").starts_with("HTTP/1.1 200"));

    // An invalid spec (well-formed for the schema, unsupported by the engine) becomes a
    // condition, not a hot loop.
    let bad = format!(
        "apiVersion: etcd.kubectl-etcd.io/v1alpha1\nkind: EtcdCluster\nmetadata:\n  name: bad\n  namespace: {}\nspec:\n  replicas: 3\n  version: \"3.9.0\"\n",
        ns.0
    );
    ok(kubectl_stdin(&["apply", "-f", "-"], &bad));
    let c = eventually(
        "the invalid spec to be reported",
        Duration::from_secs(60),
        || {
            let c = cluster_json(&ns.0, "bad");
            (c["status"]["phase"] == "Failed").then_some(c)
        },
    );
    let degraded = c["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["type"] == "Degraded")
        .cloned()
        .unwrap();
    assert_eq!(degraded["reason"], "InvalidSpec", "{c}");
    assert!(
        degraded["message"]
            .as_str()
            .unwrap()
            .contains("spec.version"),
        "{c}"
    );
    let rv = c["metadata"]["resourceVersion"].clone();
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(
        cluster_json(&ns.0, "bad")["metadata"]["resourceVersion"],
        rv,
        "an invalid spec must not be rewritten in a loop"
    );
    assert_eq!(
        ok(kubectl(&["-n", &ns.0, "get", "statefulsets", "-o", "name"]))
            .stdout
            .lines()
            .filter(|l| l.contains("bad"))
            .count(),
        0
    );

    // Deleting the EtcdCluster: the operator's finalizer lets it go, owned objects follow.
    ok(kubectl(&[
        "-n",
        &ns.0,
        "delete",
        "etcdcluster",
        "demo",
        "--timeout=120s",
    ]));
    eventually(
        "the StatefulSet to be garbage-collected",
        Duration::from_secs(120),
        || {
            let r = kubectl(&["-n", &ns.0, "get", "statefulsets", "-o", "name"]);
            r.stdout.trim().is_empty().then_some(())
        },
    );
}
