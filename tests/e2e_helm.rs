//! End-to-end: the Helm chart (charts/kubectl-etcd) installs an operator that runs clusters, a
//! `helm upgrade` rolls the operator and no etcd member, and `helm uninstall` takes the operator
//! away and leaves every cluster and its data where they were. helm is tests/cluster/helm.sh's
//! (built from its Go module); the operator image is `KE_OPERATOR_IMAGE`.
//!
//! The testbed is shared: the release watches only its own namespace (`rbac.scope=namespace`, so
//! its leader Lease is that namespace's and it touches no one else's clusters), its objects carry a
//! name of their own (`name=…`, so its cluster-scoped roles collide with nobody's), and the CRDs
//! come from the chart's crds/, which Helm creates when missing and never deletes.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::operator::helm;
use common::*;

const CHART: &str = "charts/kubectl-etcd";

/// Uninstalls the release when the test ends, passed or not (before the namespace goes).
struct Release {
    helm: PathBuf,
    name: String,
    ns: String,
}

impl Drop for Release {
    fn drop(&mut self) {
        let _ = helm(
            &self.helm,
            &[
                "uninstall",
                &self.name,
                "-n",
                &self.ns,
                "--ignore-not-found",
                "--wait",
            ],
        );
    }
}

/// `name uid restartCount` of each member pod, sorted.
fn member_pods(ns: &str) -> Vec<String> {
    let r = ok(kubectl(&[
        "-n",
        ns,
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/instance=demo",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.status.containerStatuses[*].restartCount}{\"\\n\"}{end}",
    ]));
    let mut v: Vec<String> = r.stdout.lines().map(String::from).collect();
    v.sort();
    v
}

/// The operator pods of the release: `name uid ready`.
fn operator_pods(ns: &str, name: &str) -> Vec<String> {
    let r = ok(kubectl(&[
        "-n",
        ns,
        "get",
        "pods",
        "-l",
        &format!("app.kubernetes.io/name={name}"),
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.status.containerStatuses[0].ready}{\"\\n\"}{end}",
    ]));
    r.stdout.lines().map(String::from).collect()
}

/// The holder of the leader Lease of operator `name`, in its namespace `ns`.
fn lease_holder(ns: &str, name: &str) -> String {
    kubectl(&[
        "-n",
        ns,
        "get",
        "lease",
        &kubectl_etcd::keys::install::leader_lease(name),
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ])
    .stdout
}

fn get_key(ns: &str, pod: &str) -> String {
    ok(etcdctl(ns, pod, &["get", "kept", "--print-value-only"]))
        .stdout
        .trim()
        .to_string()
}

#[test]
fn helm_install_runs_clusters_upgrade_restarts_no_member_uninstall_keeps_them() {
    let image = std::env::var("KE_OPERATOR_IMAGE").expect(
        "KE_OPERATOR_IMAGE is not set: build one with tests/cluster/images.sh operator BINARY",
    );
    let (repo, tag) = image
        .rsplit_once(':')
        .expect("KE_OPERATOR_IMAGE is REPOSITORY:TAG");
    let bin = packaging_tool("helm");
    let ns = Ns::new("helm");
    // unique: the roles and the admission policy are cluster-scoped
    let name = format!("op-{}", ns.0);
    let release = Release {
        helm: bin.clone(),
        name: "ke".into(),
        ns: ns.0.clone(),
    };

    let set_name = format!("name={name}");
    let set_repo = format!("image.repository={repo}");
    let set_tag = format!("image.tag={tag}");
    ok(helm(
        &bin,
        &[
            "install",
            &release.name,
            CHART,
            "-n",
            &ns.0,
            "--set",
            "rbac.scope=namespace",
            "--set",
            &set_name,
            "--set",
            &set_repo,
            "--set",
            &set_tag,
            "--wait",
            "--timeout",
            "180s",
        ],
    ));
    // the CRDs are there (created by the chart or before it), and the operator leads its namespace
    ok(kubectl(&[
        "get",
        "crd",
        "etcdclusters.etcd.kubectl-etcd.io",
    ]));
    let first = eventually(
        "the operator pod to be ready",
        Duration::from_secs(120),
        || {
            let pods = operator_pods(&ns.0, &name);
            (pods.len() == 1 && pods[0].ends_with(" true")).then(|| pods[0].clone())
        },
    );
    let first_pod = first.split(' ').next().unwrap().to_string();
    eventually(
        "the chart's operator to hold its namespace's leader Lease",
        Duration::from_secs(60),
        || (lease_holder(&ns.0, &name) == format!("operator/{first_pod}")).then_some(()),
    );

    // a cluster created with plain kubectl and scaled with kubectl scale: the operator's work
    let manifest = format!(
        "apiVersion: etcd.kubectl-etcd.io/v1alpha1\nkind: EtcdCluster\nmetadata:\n  name: demo\n  namespace: {}\nspec:\n  replicas: 1\n  version: \"{}\"\n",
        ns.0,
        kubectl_etcd::model::DEFAULT_VERSION
    );
    ok(kubectl_stdin(&["apply", "-f", "-"], &manifest));
    eventually(
        "the chart's operator to bring up 1 healthy member",
        Duration::from_secs(240),
        || status_ready(&ns.0, 1),
    );
    ok(etcdctl(&ns.0, "demo-0", &["put", "kept", "yes"]));
    ok(kubectl(&[
        "-n",
        &ns.0,
        "scale",
        "etcdcluster/demo",
        "--replicas",
        "3",
    ]));
    eventually(
        "the chart's operator to scale to 3 healthy voters",
        Duration::from_secs(300),
        || status_ready(&ns.0, 3),
    );
    assert_eq!(get_key(&ns.0, "demo-2"), "yes");
    let members_before = member_pods(&ns.0);
    assert_eq!(members_before.len(), 3, "{members_before:?}");

    // helm upgrade with the cluster running: the operator pod is replaced, no member restarts
    ok(helm(
        &bin,
        &[
            "upgrade",
            &release.name,
            CHART,
            "-n",
            &ns.0,
            "--reuse-values",
            "--set",
            "podAnnotations.upgraded=yes",
            "--wait",
            "--timeout",
            "180s",
        ],
    ));
    let second = eventually(
        "one new operator pod, ready",
        Duration::from_secs(120),
        || {
            let pods = operator_pods(&ns.0, &name);
            (pods.len() == 1 && pods[0] != first && pods[0].ends_with(" true"))
                .then(|| pods[0].clone())
        },
    );
    let second_pod = second.split(' ').next().unwrap().to_string();
    eventually(
        "the upgraded operator to take the leader Lease",
        Duration::from_secs(90),
        || (lease_holder(&ns.0, &name) == format!("operator/{second_pod}")).then_some(()),
    );
    // the new operator has passed over the cluster (its status is current) and left it alone
    std::thread::sleep(Duration::from_secs(15));
    status_ready(&ns.0, 3).expect("the cluster is Running with 3 healthy voters after the upgrade");
    assert_eq!(
        member_pods(&ns.0),
        members_before,
        "helm upgrade of the operator restarted or replaced a member (name uid restarts)"
    );

    // helm uninstall: the operator goes, the cluster and its data stay
    ok(helm(
        &bin,
        &[
            "uninstall",
            &release.name,
            "-n",
            &ns.0,
            "--wait",
            "--timeout",
            "120s",
        ],
    ));
    eventually(
        "the operator pods to be gone",
        Duration::from_secs(90),
        || operator_pods(&ns.0, &name).is_empty().then_some(()),
    );
    let gone = kubectl(&["-n", &ns.0, "get", "deployment", &name]);
    assert_ne!(gone.code, 0, "the Deployment outlived helm uninstall");
    let gone = kubectl(&["get", "clusterrole", &format!("{name}-nodes")]);
    assert_ne!(
        gone.code, 0,
        "the release's ClusterRole outlived helm uninstall"
    );
    ok(kubectl(&[
        "get",
        "crd",
        "etcdclusters.etcd.kubectl-etcd.io",
    ]));
    let gone = kubectl(&["get", "validatingadmissionpolicy", &name]);
    assert_ne!(
        gone.code, 0,
        "the release's admission policy outlived helm uninstall"
    );
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(c["spec"]["replicas"], 3);
    assert_eq!(
        member_pods(&ns.0),
        members_before,
        "a member changed at helm uninstall"
    );
    let pvcs = ok(kubectl(&["-n", &ns.0, "get", "pvc", "-o", "name"]));
    assert_eq!(pvcs.stdout.lines().count(), 3, "{}", pvcs.stdout);
    for pod in ["demo-0", "demo-1", "demo-2"] {
        assert_eq!(get_key(&ns.0, pod), "yes", "{pod} lost the key");
    }
    drop(release);
}
