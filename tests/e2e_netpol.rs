//! End-to-end (issue 42 item 7): the cluster's NetworkPolicy stops packets. The testbed enforces
//! NetworkPolicy with kube-router's policy controller (tests/cluster/netpol.sh, started by
//! up.sh). Probe pods (the member image's busybox `nc`, a plain TCP connect with a timeout) in
//! three namespaces dial every member's pod IP directly:
//! - a pod of an unlisted namespace, even one labelled with the old client label
//!   `etcd.kubectl-etcd.io/client: <cluster>`, is refused on 2379 and 2380;
//! - a pod of the cluster's namespace reaches 2379, not 2380 (peers only from members);
//! - a pod of a namespace listed in `spec.networkPolicy.clientNamespaces` is refused until the
//!   namespace is listed, then reaches 2379 (and still not 2380);
//!
//! while the members' own peer traffic passes: three ready members, a put on one member read
//! back on another. The CLI reaches the members by port-forward throughout (no policy applies).
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::time::Duration;

use common::*;

const CLUSTER: &str = "np";
const CLIENT: u16 = 2379;
const PEER: u16 = 2380;
/// How long the enforcer may take to apply a policy change (kube-router syncs on each event).
const SYNC: Duration = Duration::from_secs(90);

/// A pod `probe` in `ns` running `image` (busybox inside), idle, with `labels`; waits until it
/// is Ready.
fn probe_pod(ns: &str, image: &str, labels: &str) {
    let manifest = format!(
        r#"{{"apiVersion": "v1", "kind": "Pod",
  "metadata": {{"name": "probe", "namespace": "{ns}", "labels": {labels}}},
  "spec": {{"terminationGracePeriodSeconds": 0,
    "securityContext": {{"runAsNonRoot": true, "runAsUser": 65532, "seccompProfile": {{"type": "RuntimeDefault"}}}},
    "containers": [{{"name": "probe", "image": "{image}", "imagePullPolicy": "Never",
      "command": ["sleep", "3600"],
      "securityContext": {{"allowPrivilegeEscalation": false, "capabilities": {{"drop": ["ALL"]}}}}}}]}}}}"#
    );
    ok(kubectl_stdin(&["apply", "-f", "-"], &manifest));
    ok(kubectl(&[
        "-n",
        ns,
        "wait",
        "pod/probe",
        "--for=condition=Ready",
        "--timeout=120s",
    ]));
}

/// Whether the probe pod of `ns` opens a TCP connection to `ip:port` within 3 s.
fn connects(ns: &str, ip: &str, port: u16) -> bool {
    let (code, r) = sh_exit(ns, "probe", &format!("nc -w 3 {ip} {port} -e /bin/true"));
    eprintln!("{ns}/probe -> {ip}:{port}: exit {code} {}", r.stderr.trim());
    code == 0
}

/// The pod IPs of the cluster's members.
fn member_ips(ns: &str) -> Vec<String> {
    let r = ok(kubectl(&[
        "-n",
        ns,
        "get",
        "pods",
        "-l",
        &format!("app.kubernetes.io/instance={CLUSTER}"),
        "-o",
        "jsonpath={.items[*].status.podIP}",
    ]));
    let ips: Vec<String> = r.stdout.split_whitespace().map(String::from).collect();
    assert_eq!(ips.len(), 3, "three member IPs: {}", r.stdout);
    ips
}

/// Waits until the probe of `ns` reaches (`open`) or is refused on `port` of every member, and
/// then checks it once more on each (a policy, once applied, holds).
fn settle(ns: &str, ips: &[String], port: u16, open: bool) {
    let what = format!(
        "{ns}/probe {} port {port} of every member (is the NetworkPolicy enforcer running? \
         tests/cluster/netpol.sh status)",
        if open { "to reach" } else { "to be refused on" }
    );
    eventually(&what, SYNC, || {
        ips.iter()
            .all(|ip| connects(ns, ip, port) == open)
            .then_some(())
    });
    for ip in ips {
        assert_eq!(connects(ns, ip, port), open, "{what}: {ip} again");
    }
}

#[test]
fn another_namespace_is_refused_the_members_a_listed_one_and_the_clusters_own_are_admitted() {
    install_crd();
    let home = Ns::new("netpol-home");
    let listed = Ns::new("netpol-listed");
    let outsider = Ns::new("netpol-outsider");
    ok(etcd(
        &home.0,
        &[
            "create",
            CLUSTER,
            "--replicas",
            "3",
            "--ephemeral",
            "--timeout",
            "5m",
        ],
    ));
    let ips = member_ips(&home.0);
    let image = ok(kubectl(&[
        "-n",
        &home.0,
        "get",
        "pod",
        &format!("{CLUSTER}-0"),
        "-o",
        "jsonpath={.spec.containers[0].image}",
    ]))
    .stdout;
    probe_pod(&home.0, &image, "{}");
    probe_pod(&listed.0, &image, "{}");
    // The label that admitted a pod of any namespace before clientNamespaces.
    probe_pod(
        &outsider.0,
        &image,
        &format!(r#"{{"etcd.kubectl-etcd.io/client": "{CLUSTER}"}}"#),
    );

    // The cluster's own namespace reaches the client port of every member; the peer port only
    // the members themselves.
    settle(&home.0, &ips, CLIENT, true);
    settle(&home.0, &ips, PEER, false);
    // Another namespace: refused on both, the old client label notwithstanding.
    settle(&outsider.0, &ips, CLIENT, false);
    settle(&outsider.0, &ips, PEER, false);
    // Not listed yet: refused too.
    settle(&listed.0, &ips, CLIENT, false);

    // The owner lists a client namespace: its pods reach the client port, not the peer port;
    // the outsider stays refused. (Patched and reconciled until the policy lists it: on a shared
    // testbed another checkout's `install` may apply its own CRD, without the field, meanwhile.)
    let patch = format!(
        r#"{{"spec":{{"networkPolicy":{{"clientNamespaces":["{}"]}}}}}}"#,
        listed.0
    );
    eventually("the policy to list the client namespace", SYNC, || {
        install_crd();
        ok(kubectl(&[
            "-n",
            &home.0,
            "patch",
            "etcdcluster",
            CLUSTER,
            "--type",
            "merge",
            "-p",
            &patch,
        ]));
        let r = etcd(&home.0, &["reconcile", CLUSTER, "--timeout", "2m"]);
        let policy = ok(kubectl(&[
            "-n",
            &home.0,
            "get",
            "networkpolicy",
            CLUSTER,
            "-o",
            "json",
        ]))
        .stdout;
        (r.code == 0 && policy.contains(&format!("\"{}\"", listed.0))).then_some(())
    });
    settle(&listed.0, &ips, CLIENT, true);
    settle(&listed.0, &ips, PEER, false);
    settle(&outsider.0, &ips, CLIENT, false);

    // The members' own traffic passes: all three ready and a write committed through the
    // peers, read back on another member.
    ok(etcd(&home.0, &["status", CLUSTER]));
    let c = cluster_json(&home.0, CLUSTER);
    assert_eq!(ready_members(&c["status"]), (3, 3, 3), "{}", c["status"]);
    let put = |pod: &str| ok(etcdctl(&home.0, pod, &["put", "netpol-key", "admitted"]));
    put(&format!("{CLUSTER}-0"));
    let got = ok(etcdctl(
        &home.0,
        &format!("{CLUSTER}-2"),
        &["get", "netpol-key", "--print-value-only"],
    ));
    assert_eq!(got.stdout.trim(), "admitted");
}
