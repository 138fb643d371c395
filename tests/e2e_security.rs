//! End-to-end (issue 17 item 3): every pod the project creates is admitted in a namespace that
//! enforces the `restricted` Pod Security Standard — members, the pvc:// agent, restore pods from
//! S3 and from a claim — and runs as the non-root user `objects::security` names, on volumes
//! whose files belong to its group. Every key comes back from both backups.
//!
//! Item 4: a cluster gets its NetworkPolicy, which `spec.networkPolicy.enabled` takes away and
//! puts back. The object is checked here; its effect on packets in tests/e2e_netpol.rs (the
//! testbed enforces NetworkPolicy with tests/cluster/netpol.sh).
//! Item 7: `create` refuses an etcd option off the allow list before writing anything.
//! The NetworkPolicy admits the operator where it runs, and the TLS switch rule takes the mode a
//! cluster was born with for the mode its spec writes down.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

const UID: &str = "65532";

/// `kubectl etcd …` with S3 reached through the node IP (restore pods reach it too) and the
/// project's image for agent and restore pods.
fn etcd_tools(ns: &str, args: &[&str]) -> Run {
    let endpoint = std::env::var("KE_S3_POD_ENDPOINT").expect(
        "KE_S3_POD_ENDPOINT is not set: start S3 with tests/cluster/s3.sh up and source /tmp/tb/s3.env",
    );
    let image = std::env::var("KE_OPERATOR_IMAGE").expect("KE_OPERATOR_IMAGE is not set");
    let mut c: Command = kubectl_cmd(&[&["etcd", "-n", ns], args].concat());
    c.env("AWS_ENDPOINT_URL", endpoint)
        .env("KUBECTL_ETCD_TOOLS_IMAGE", image);
    run_cmd(&[&["etcd", "-n", ns], args].concat(), c)
}

/// The uid and gid a member's etcd runs as, from its /proc status.
fn ids_of_etcd(ns: &str, pod: &str) -> (String, String) {
    let status = ok(kubectl(&[
        "-n",
        ns,
        "exec",
        pod,
        "--",
        "cat",
        "/proc/1/status",
    ]))
    .stdout;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .unwrap_or_default()
            .to_string()
    };
    (field("Uid:"), field("Gid:"))
}

#[test]
fn a_namespace_enforcing_restricted_admits_members_agents_and_restores_and_every_key_comes_back() {
    install_crd();
    let ns = Ns::new("restricted");
    ok(kubectl(&[
        "label",
        "namespace",
        &ns.0,
        "pod-security.kubernetes.io/enforce=restricted",
        "pod-security.kubernetes.io/enforce-version=latest",
    ]));
    // The namespace does enforce: a pod as etcd's image would run by default (root, no profile)
    // is refused. (Without this the test could pass in a namespace that checks nothing.)
    let refused = kubectl_stdin(
        &["-n", &ns.0, "apply", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"as-root"},
            "spec":{"containers":[{"name":"c","image":"gcr.io/etcd-development/etcd:v3.6.15"}]}}"#,
    );
    assert_ne!(refused.code, 0, "a root pod was admitted");
    assert!(
        refused.stderr.contains("violates PodSecurity \"restricted"),
        "{}",
        refused.stderr
    );

    ok(etcd(
        &ns.0,
        &[
            "create",
            "demo",
            "--replicas",
            "3",
            "--version",
            "3.6.15",
            "--timeout",
            "4m",
        ],
    ));
    ok(kubectl(&[
        "-n",
        &ns.0,
        "exec",
        "demo-0",
        "--",
        "sh",
        "-c",
        "for i in $(seq 1 300); do etcdctl put k/$i value-$i >/dev/null || exit 1; done",
    ]));
    let before = keyspace_digest(&ns.0, "demo-0");
    assert_eq!(before.0, 300);
    for o in 0..3 {
        let pod = format!("demo-{o}");
        assert_eq!(ids_of_etcd(&ns.0, &pod), (UID.into(), UID.into()), "{pod}");
        // etcd's files are its own (created by it) on a volume of its group.
        let owners = ok(kubectl(&[
            "-n",
            &ns.0,
            "exec",
            &pod,
            "--",
            "sh",
            "-c",
            "ls -ln /var/lib/etcd/data/member/wal | awk 'NR>1 {print $3\":\"$4}' | sort -u",
        ]))
        .stdout;
        assert_eq!(owners.trim(), format!("{UID}:{UID}"), "{pod}");
        // The image cannot be written to.
        let (code, _) = sh_exit(&ns.0, &pod, "echo x > /usr/local/bin/x");
        assert_ne!(code, 0, "{pod}: the root filesystem is writable");
    }

    // A backup to a claim (through the agent pod) and one to S3 (the CLI's own upload).
    ok(kubectl_stdin(
        &["-n", &ns.0, "apply", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"backups"},
            "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}"#,
    ));
    let pvc = json(&ok(etcd_tools(
        &ns.0,
        &["-o", "json", "backup", "demo", "--to", "pvc://backups/etcd"],
    )));
    assert_eq!(pvc["status"]["phase"], "Succeeded", "{pvc}");
    let bucket = std::env::var("KE_S3_BUCKET").expect("KE_S3_BUCKET is not set (/tmp/tb/s3.env)");
    let s3 = json(&ok(etcd_tools(
        &ns.0,
        &[
            "-o",
            "json",
            "backup",
            "demo",
            "--to",
            &format!("s3://{bucket}/e2e/{}", ns.0),
        ],
    )));
    assert_eq!(s3["status"]["phase"], "Succeeded", "{s3}");

    // Each restores into a new cluster through a restore pod, admitted too.
    for (copy, record) in [("from-pvc", &pvc), ("from-s3", &s3)] {
        ok(etcd_tools(
            &ns.0,
            &[
                "restore",
                copy,
                "--from-backup",
                record["metadata"]["name"].as_str().unwrap(),
                "--replicas",
                "1",
                "--timeout",
                "4m",
            ],
        ));
        let pod = format!("{copy}-0");
        assert_eq!(
            keyspace_digest(&ns.0, &pod),
            before,
            "{copy}: every key and value"
        );
        assert_eq!(ids_of_etcd(&ns.0, &pod), (UID.into(), UID.into()), "{copy}");
    }

    // Nothing the project created was refused on the way: no FailedCreate for any pod.
    let events = ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "events",
        "--field-selector",
        "reason=FailedCreate",
        "-o",
        "name",
    ]))
    .stdout;
    assert_eq!(events.trim(), "", "pods were refused");
    eventually("agent pods gone", Duration::from_secs(60), || {
        let pods = ok(kubectl(&["-n", &ns.0, "get", "pods", "-o", "name"])).stdout;
        (!pods.contains("pvc-agent")).then_some(())
    });
}

/// The NetworkPolicy `name` of namespace `ns`, `None` when there is none.
fn network_policy(ns: &str, name: &str) -> Option<serde_json::Value> {
    let r = kubectl(&["-n", ns, "get", "networkpolicy", name, "-o", "json"]);
    if r.code != 0 {
        assert!(r.stderr.contains("NotFound"), "{}", r.stderr);
        return None;
    }
    Some(json(&r))
}

#[test]
fn a_cluster_gets_its_network_policy_and_the_spec_switch_takes_it_away_and_back() {
    install_crd();
    let ns = Ns::new("netpol");
    ok(etcd(
        &ns.0,
        &[
            "create",
            "np",
            "--replicas",
            "1",
            "--ephemeral",
            "--timeout",
            "3m",
        ],
    ));
    let p = network_policy(&ns.0, "np").expect("the cluster's NetworkPolicy");
    assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "EtcdCluster");
    assert_eq!(
        p["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/instance"],
        "np"
    );
    assert_eq!(p["spec"]["policyTypes"], serde_json::json!(["Ingress"]));
    let rule = |port: i64| {
        p["spec"]["ingress"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["ports"][0]["port"] == port)
            .unwrap_or_else(|| panic!("no rule for {port}: {p}"))
            .clone()
    };
    assert_eq!(
        rule(2380)["from"],
        serde_json::json!([{"podSelector": {"matchLabels": {
            "app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": "np",
            "app.kubernetes.io/managed-by": "kubectl-etcd"}}}])
    );
    let clients = rule(2379)["from"].as_array().unwrap().clone();
    assert_eq!(clients.len(), 2, "{clients:?}");
    assert!(clients.contains(&serde_json::json!({"podSelector": {}})));
    assert!(clients.iter().any(
        |c| c["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
            == "kubectl-etcd-system"
    ));
    // No peer of any namespace admitted by a label its pods set (issue 42).
    assert!(
        clients
            .iter()
            .all(|c| c.get("namespaceSelector") != Some(&serde_json::json!({}))),
        "{clients:?}"
    );
    // The metrics listener `create` turns on is open to scrapers.
    assert!(rule(2381).get("from").is_none(), "{p}");

    // An operator in a pod of another namespace, under another name (the downward API's
    // variables as its Deployment sets them): its first pass applies the policy again, admitting
    // it there instead of kubectl-etcd-system.
    let elsewhere = serde_json::json!({
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ops-elsewhere"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "etcd-op"}},
    });
    let admitted = || {
        let p = network_policy(&ns.0, "np").expect("the cluster's NetworkPolicy");
        p["spec"]["ingress"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["ports"][0]["port"] == 2379)
            .map(|r| r["from"][1].clone())
            .unwrap_or_default()
    };
    {
        let _op = common::operator::LocalOperator::start_with(
            &ns.0,
            "np",
            &[
                "--dial",
                "port-forward",
                "--metrics-addr",
                "127.0.0.1:18151",
            ],
            &[("POD_NS", "ops-elsewhere"), ("OPERATOR_NAME", "etcd-op")],
        )
        .unwrap();
        eventually(
            "the operator's pass to admit it in the policy",
            Duration::from_secs(120),
            || (admitted() == elsewhere).then_some(()),
        );
    }
    // A CLI pass that applies the supporting objects (the disruption budget is gone) keeps the
    // operator the policy admits: the CLI does not know where the operator runs.
    ok(kubectl(&["-n", &ns.0, "delete", "pdb", "np"]));
    ok(etcd(&ns.0, &["reconcile", "np", "--timeout", "2m"]));
    ok(kubectl(&["-n", &ns.0, "get", "pdb", "np"]));
    assert_eq!(admitted(), elsewhere);

    // Switched off: the engine deletes it; on again: back.
    for (enabled, present) in [(false, false), (true, true)] {
        ok(kubectl(&[
            "-n",
            &ns.0,
            "patch",
            "etcdcluster",
            "np",
            "--type",
            "merge",
            "-p",
            &format!(r#"{{"spec":{{"networkPolicy":{{"enabled":{enabled}}}}}}}"#),
        ]));
        ok(etcd(&ns.0, &["reconcile", "np", "--timeout", "2m"]));
        assert_eq!(
            network_policy(&ns.0, "np").is_some(),
            present,
            "networkPolicy.enabled={enabled}"
        );
    }
    // The cluster still answers through its client Service's port-forward (the CLI's path).
    ok(etcd(&ns.0, &["status", "np"]));
}

#[test]
fn create_refuses_an_etcd_option_off_the_allow_list_before_writing_anything() {
    install_crd();
    let ns = Ns::new("options");
    let r = etcd(
        &ns.0,
        &[
            "create",
            "pprof",
            "--ephemeral",
            "--etcd-option",
            "enable-pprof=true",
        ],
    );
    assert_eq!(r.code, 2, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("\"enable-pprof\"")
            && r.stderr.contains("--allow-etcd-option enable-pprof"),
        "{}",
        r.stderr
    );
    let left = ok(kubectl(&["-n", &ns.0, "get", "etcdclusters", "-o", "name"])).stdout;
    assert_eq!(left.trim(), "", "nothing was written");
    // A tuning flag needs no leave (--dry-run: validated, nothing written).
    ok(etcd(
        &ns.0,
        &[
            "create",
            "tuned",
            "--ephemeral",
            "--etcd-option",
            "heartbeat-interval=250",
            "--dry-run",
        ],
    ));
}

/// An EtcdCluster `name` of `ns` (no member is ever made: no driver watches `ns`), with `tls`
/// as its `spec.tls` when given.
fn cluster_yaml(ns: &str, name: &str, tls: Option<&str>) -> String {
    let tls = tls.map(|t| format!("  tls: {t}\n")).unwrap_or_default();
    format!(
        "apiVersion: etcd.kubectl-etcd.io/v1alpha1\nkind: EtcdCluster\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  replicas: 1\n  version: \"3.5.16\"\n{tls}"
    )
}

/// Issue 17: a cluster created from YAML without `spec.tls` is born managed (status.tls.mode);
/// a later apply that writes `mode: managed` down changes nothing and is admitted; client and
/// peer TLS switched together is admitted (the engine carries it out), one of them alone is
/// refused at admission.
#[test]
fn writing_down_the_tls_mode_a_cluster_has_is_admitted_and_a_partial_switch_is_not() {
    install_crd();
    let ns = Ns::new("tls-mode");
    let apply = |name: &str, tls: Option<&str>| {
        kubectl_stdin(&["apply", "-f", "-"], &cluster_yaml(&ns.0, name, tls))
    };
    // What the engine records at birth, written here as it writes it (the status subresource).
    let record = |name: &str, status: &str| {
        ok(kubectl(&[
            "-n",
            &ns.0,
            "patch",
            "etcdcluster",
            name,
            "--subresource=status",
            "--type",
            "merge",
            "-p",
            &format!(r#"{{"status":{status}}}"#),
        ]))
    };
    let refused = |r: Run, what: &str| {
        assert_ne!(r.code, 0, "{what} was admitted: {}", r.stdout);
        assert!(
            r.stderr.contains("spec.tls cannot be switched") && r.stderr.contains("spec.tls"),
            "{what}: {}",
            r.stderr
        );
    };
    let managed = Some("{mode: managed}");
    let none = Some("{mode: none}");
    let client_only = Some("{serverSecret: s, clientSecret: c}");
    let peer_only = Some("{peerSecret: p}");

    // Born managed from a spec without tls.
    ok(apply("born", None));
    record("born", r#"{"clusterId":"1a2b","tls":{"mode":"managed"}}"#);
    ok(apply("born", managed));
    refused(
        apply("born", client_only),
        "managed -> client TLS without peer TLS",
    );
    // Written down, then taken out again: the recorded mode, no switch either way.
    ok(apply("born", None));
    refused(apply("born", peer_only), "born managed -> peer TLS alone");
    // Client and peer TLS switched off together is admitted: the engine carries it out
    // (`kubectl etcd tls NAME --off`, `plan::tls_switch`).
    ok(apply("born", none));

    // Born before managed TLS was the default: it ran plain (no mode recorded).
    ok(apply("plain", None));
    record("plain", r#"{"clusterId":"3c4d"}"#);
    refused(apply("plain", peer_only), "born plain -> peer TLS alone");
    ok(apply("plain", none));
    ok(apply("plain", managed));
    // The status writes the engine makes pass whatever the spec says.
    record("plain", r#"{"tls":{"mode":"none"}}"#);
    record("born", r#"{"tls":{"mode":"managed"}}"#);

    // A cluster no pass has seen yet is being born managed: writing that down is admitted.
    ok(apply("fresh", None));
    ok(apply("fresh", managed));
}
