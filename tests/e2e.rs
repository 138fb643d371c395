//! End-to-end: `kubectl etcd` verbs (the CLI running the engine itself, reaching members through
//! port-forwards) against the real single-node Kubernetes of tests/cluster/.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::time::Duration;

use common::*;

#[test]
fn create_builds_a_healthy_three_member_cluster_seen_from_inside_a_pod() {
    install_crd();
    let ns = Ns::new("create");
    let r = ok(etcd(
        &ns.0,
        &[
            "create",
            "demo",
            "--replicas",
            "3",
            "--timeout",
            "4m",
            "-o",
            "json",
        ],
    ));
    let doc = json(&r);
    assert_eq!(doc["status"]["phase"], "Running", "{doc}");
    assert_eq!(ready_members(&doc["status"]), (3, 3, 3));
    assert_eq!(
        doc["spec"]["version"], "3.7.3",
        "the default is the newest tested patch of the newest minor: {doc}"
    );
    assert!(!r.stderr.contains("end of support"), "{}", r.stderr);
    // A quota the default 1Gi volume holds, written into the spec and run by the members.
    assert_eq!(
        doc["spec"]["etcd"]["quotaBackendBytes"], 335_544_320,
        "{doc}"
    );
    let too_small = |doc: &serde_json::Value| {
        let c = doc["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "VolumeTooSmall")
            .cloned()
            .unwrap_or_else(|| panic!("no VolumeTooSmall condition: {doc}"));
        (
            c["status"].as_str().unwrap().to_string(),
            c["message"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(too_small(&doc).0, "False", "{doc}");
    let objects = ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "statefulset,configmap",
        "-o",
        "yaml",
    ]));
    assert!(
        objects.stdout.contains("quota-backend-bytes=335544320"),
        "the members run the quota"
    );
    // From inside a member pod, with the image's own etcdctl.
    let names: Vec<String> = members(&ns.0, "demo-0")
        .into_iter()
        .map(|(n, learner)| {
            assert!(!learner);
            n
        })
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, ["demo-0", "demo-1", "demo-2"]);
    let health = etcdctl(&ns.0, "demo-1", &["endpoint", "health", "--cluster"]);
    assert_eq!(health.code, 0, "{}{}", health.stdout, health.stderr);
    let text = format!("{}{}", health.stdout, health.stderr);
    assert_eq!(text.matches("is healthy").count(), 3, "{text}");
    // The CRD's printer columns and short name work.
    let get = ok(kubectl(&["-n", &ns.0, "get", "etcdc"]));
    assert!(
        get.stdout.contains("demo") && get.stdout.contains("Running"),
        "{}",
        get.stdout
    );
    // status in both formats.
    let st = ok(etcd(&ns.0, &["status", "demo"]));
    assert!(
        st.stdout.contains("leader") && st.stdout.contains("demo-2"),
        "{}",
        st.stdout
    );
    let st = json(&ok(etcd(&ns.0, &["status", "-o", "json"])));
    assert_eq!(st["clusters"].as_array().unwrap().len(), 1);
    // Someone scales the StatefulSet to 0 by hand: status says etcd is unreachable (exit 7),
    // and the engine brings every member back on its own volume, data intact.
    ok(etcdctl(&ns.0, "demo-0", &["put", "survivor", "yes"]));
    // The quota taken out of the spec (etcd's 2 GiB on 1Gi volumes): said by the status once the
    // members come back below.
    ok(kubectl(&[
        "-n",
        &ns.0,
        "patch",
        "etcdcluster",
        "demo",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/spec/etcd/quotaBackendBytes"}]"#,
    ]));
    ok(kubectl(&[
        "-n",
        &ns.0,
        "scale",
        "statefulset",
        "demo",
        "--replicas",
        "0",
    ]));
    eventually(
        "the member pods to be gone",
        Duration::from_secs(90),
        || {
            let r = kubectl(&["-n", &ns.0, "get", "pods", "-o", "name"]);
            r.stdout.trim().is_empty().then_some(())
        },
    );
    let r = etcd(&ns.0, &["status", "demo"]);
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("{}/demo", ns.0)) && r.stderr.contains("get pods"),
        "{}",
        r.stderr
    );
    let back = json(&ok(etcd(
        &ns.0,
        &["reconcile", "demo", "--timeout", "3m", "-o", "json"],
    )));
    assert_eq!(ready_members(&back["status"]), (3, 3, 3), "{back}");
    let (status, message) = too_small(&back);
    assert_eq!(status, "True", "{back}");
    assert!(
        message.contains("2048.0 MiB (etcd's default), does not fit volumes of 1Gi")
            && message.contains("at most 320.0 MiB"),
        "{message}"
    );
    let v = ok(etcdctl(
        &ns.0,
        "demo-2",
        &["get", "survivor", "--print-value-only"],
    ));
    assert_eq!(v.stdout.trim(), "yes");
    // Deleting with data removes everything, volumes included.
    ok(etcd(
        &ns.0,
        &[
            "delete",
            "demo",
            "--delete-data",
            "--yes",
            "--timeout",
            "2m",
        ],
    ));
    let pvcs = ok(kubectl(&["-n", &ns.0, "get", "pvc", "-o", "name"]));
    assert_eq!(pvcs.stdout.trim(), "", "volumes left: {}", pvcs.stdout);
    assert_eq!(
        etcd(&ns.0, &["status", "demo"]).code,
        3,
        "deleted cluster must be not found"
    );
}

#[test]
fn scaling_3_5_3_keeps_every_key_readable() {
    install_crd();
    let ns = Ns::new("scale");
    ok(etcd(
        &ns.0,
        &["create", "demo", "--replicas", "3", "--timeout", "4m"],
    ));
    ok(kubectl(&[
        "-n",
        &ns.0,
        "exec",
        "demo-0",
        "--",
        "sh",
        "-c",
        "for i in $(seq 1 200); do etcdctl put key-$i value-$i >/dev/null || exit 1; done",
    ]));

    let up = json(&ok(etcd(
        &ns.0,
        &[
            "scale",
            "demo",
            "--replicas",
            "5",
            "--timeout",
            "5m",
            "-o",
            "json",
        ],
    )));
    assert_eq!(ready_members(&up["status"]), (5, 5, 5), "{up}");
    let m = members(&ns.0, "demo-4");
    assert_eq!(m.len(), 5);
    assert!(
        m.iter().all(|(n, learner)| !learner && !n.is_empty()),
        "{m:?}"
    );

    let down = json(&ok(etcd(
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
    )));
    assert_eq!(ready_members(&down["status"]), (3, 3, 3), "{down}");
    let mut names: Vec<String> = members(&ns.0, "demo-0")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    names.sort();
    assert_eq!(names, ["demo-0", "demo-1", "demo-2"]);
    // Removed members' volumes are gone: they can never rejoin with old data.
    let pvcs = ok(kubectl(&["-n", &ns.0, "get", "pvc", "-o", "name"]));
    let mut pvcs: Vec<&str> = pvcs.stdout.lines().collect();
    pvcs.sort();
    assert_eq!(
        pvcs,
        [
            "persistentvolumeclaim/data-demo-0",
            "persistentvolumeclaim/data-demo-1",
            "persistentvolumeclaim/data-demo-2"
        ]
    );
    for pod in ["demo-0", "demo-1", "demo-2"] {
        let count = ok(kubectl(&[
            "-n",
            &ns.0,
            "exec",
            pod,
            "--",
            "sh",
            "-c",
            "etcdctl get --prefix key- --keys-only | grep -c key-",
        ]));
        assert_eq!(count.stdout.trim(), "200", "keys readable via {pod}");
    }
    let v = ok(etcdctl(
        &ns.0,
        "demo-2",
        &["get", "key-137", "--print-value-only"],
    ));
    assert_eq!(v.stdout.trim(), "value-137");
}

#[test]
fn a_cli_killed_mid_scale_is_repaired_by_the_next_run_without_stray_members() {
    install_crd();
    let ns = Ns::new("crash");
    ok(etcd(
        &ns.0,
        &["create", "demo", "--replicas", "3", "--timeout", "4m"],
    ));
    let mut child = kubectl_cmd(&[
        "etcd",
        "-n",
        &ns.0,
        "scale",
        "demo",
        "--replicas",
        "5",
        "--timeout",
        "5m",
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    // Kill it right after it added the first learner (a membership change is half done).
    eventually("a learner to appear", Duration::from_secs(120), || {
        let m = members(&ns.0, "demo-0");
        (m.len() > 3).then_some(())
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let r = json(&ok(etcd(
        &ns.0,
        &["reconcile", "demo", "--timeout", "5m", "-o", "json"],
    )));
    assert_eq!(ready_members(&r["status"]), (5, 5, 5), "{r}");
    let mut names: Vec<String> = members(&ns.0, "demo-0")
        .into_iter()
        .map(|(n, l)| {
            assert!(!l, "learner left behind");
            n
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["demo-0", "demo-1", "demo-2", "demo-3", "demo-4"],
        "stray or missing members"
    );
    let sts = json(&ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "statefulset",
        "demo",
        "-o",
        "json",
    ])));
    assert_eq!(sts["spec"]["replicas"], 5);
}

#[test]
fn bad_input_is_refused_with_a_clear_line_and_no_change() {
    install_crd();
    let ns = Ns::new("bad");
    let r = etcd(&ns.0, &["create", "demo", "--replicas", "0"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("spec.replicas") && r.stderr.contains("1 to 9"),
        "{}",
        r.stderr
    );
    let r = etcd(&ns.0, &["create", "demo", "--version", "3.5"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("spec.version"), "{}", r.stderr);
    let r = etcd(&ns.0, &["create", "Demo"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = etcd(&ns.0, &["create", "demo", "--storage", "256Mi"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("volumes of 256Mi are too small") && r.stderr.contains("512Mi"),
        "{}",
        r.stderr
    );
    let none = ok(kubectl(&["-n", &ns.0, "get", "etcdclusters", "-o", "name"]));
    assert_eq!(
        none.stdout.trim(),
        "",
        "nothing may be created by bad input"
    );
    let r = etcd(&ns.0, &["scale", "ghost", "--replicas", "3"]);
    assert_eq!(r.code, 3);
    assert!(
        r.stderr.contains(&format!("{}/ghost", ns.0)) && r.stderr.contains("not found"),
        "{}",
        r.stderr
    );
    let r = etcd(&ns.0, &["status", "ghost"]);
    assert_eq!(r.code, 3);
    let r = etcd(&ns.0, &["delete", "ghost", "--delete-data"]);
    assert_eq!(r.code, 2);
    // The API server's own schema also refuses what can never work.
    let bad = format!(
        "apiVersion: etcd.kubectl-etcd.io/v1alpha1\nkind: EtcdCluster\nmetadata: {{name: bad, namespace: {}}}\nspec: {{replicas: 0, version: \"3.5.16\"}}\n",
        ns.0
    );
    let r = kubectl_stdin(&["apply", "-f", "-"], &bad);
    assert_ne!(r.code, 0, "schema must reject replicas 0");
    // An unreachable API server.
    let (_dir, kc) = token_kubeconfig("https://127.0.0.1:1", "t", &ns.0);
    let r = kubectl(&["etcd", "--kubeconfig", &kc, "status", "demo"]);
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert!(r.stderr.contains("Kubernetes API"), "{}", r.stderr);
    // Dry runs print the plan and change nothing.
    let d = json(&ok(etcd(
        &ns.0,
        &["create", "dry", "--dry-run", "-o", "json"],
    )));
    // Managed TLS by default: the cluster's CA comes first.
    assert_eq!(d["nextStep"]["step"], "issueCertificate", "{d}");
    assert_eq!(d["nextStep"]["role"], "ca", "{d}");
    assert!(
        d["objects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["kind"] == "StatefulSet")
    );
    let none = ok(kubectl(&[
        "-n",
        &ns.0,
        "get",
        "etcdclusters,statefulsets",
        "-o",
        "name",
    ]));
    assert_eq!(none.stdout.trim(), "");
}

#[test]
fn rbac_denial_is_reported_with_its_own_exit_code() {
    install_crd();
    let ns = Ns::new("rbac");
    ok(kubectl(&[
        "-n",
        &ns.0,
        "create",
        "serviceaccount",
        "nobody",
    ]));
    // A bound token from the TokenRequest API (Kubernetes 1.24+ no longer makes token Secrets).
    let token = ok(kubectl(&[
        "-n",
        &ns.0,
        "create",
        "token",
        "nobody",
        "--duration",
        "10m",
    ]));
    let token = token.stdout.trim().to_string();
    let server = ok(kubectl(&[
        "config",
        "view",
        "--minify",
        "-o",
        "jsonpath={.clusters[0].cluster.server}",
    ]));
    let (_dir, kc) = token_kubeconfig(server.stdout.trim(), &token, &ns.0);
    let r = kubectl(&["etcd", "--kubeconfig", &kc, "create", "demo"]);
    assert_eq!(r.code, 6, "{}", r.stderr);
    assert!(r.stderr.contains("RBAC"), "{}", r.stderr);
}

#[test]
fn etcd_3_4_and_3_6_bootstrap_and_take_a_learner_like_3_5() {
    install_crd();
    let ns = Ns::new("versions");
    for (name, version) in [("old", "3.4.23"), ("new", "3.6.15")] {
        let r = ok(etcd(
            &ns.0,
            &[
                "create",
                name,
                "--version",
                version,
                "--timeout",
                "4m",
                "-o",
                "json",
            ],
        ));
        assert_eq!(
            r.stderr
                .contains("etcd 3.4.23 is past etcd's end of support"),
            version == "3.4.23",
            "3.4 is warned about on create, 3.6 is not: {}",
            r.stderr
        );
        let created = json(&r);
        assert_eq!(created["status"]["version"], version, "{created}");
        assert_eq!(ready_members(&created["status"]), (3, 3, 3), "{created}");
        let scaled = json(&ok(etcd(
            &ns.0,
            &[
                "scale",
                name,
                "--replicas",
                "4",
                "--timeout",
                "4m",
                "-o",
                "json",
            ],
        )));
        assert_eq!(ready_members(&scaled["status"]), (4, 4, 4), "{scaled}");
        let m = members(&ns.0, &format!("{name}-3"));
        assert!(
            m.len() == 4 && m.iter().all(|(n, l)| !l && !n.is_empty()),
            "{version}: {m:?}"
        );
    }
}

/// The database full (NOSPACE: etcd refuses writes), as users of every etcd operator meet it:
/// status says so and names the fix; `defrag --compact` gives the space back member by member,
/// leader last, and disarms the alarm.
#[test]
fn a_full_database_is_reported_and_defrag_compact_gives_the_space_back() {
    install_crd();
    let ns = Ns::new("nospace");
    ok(kubectl_stdin(
        &["apply", "-f", "-"],
        &format!(
            "apiVersion: etcd.kubectl-etcd.io/v1alpha1\nkind: EtcdCluster\nmetadata: {{name: demo, namespace: {}}}\nspec: {{replicas: 3, version: \"3.6.15\", tls: {{mode: none}}, etcd: {{quotaBackendBytes: 16777216}}}}\n",
            ns.0
        ),
    ));
    ok(etcd(&ns.0, &["reconcile", "demo", "--timeout", "4m"]));
    // Overwrite one key with 1 MiB values until etcd refuses: every old revision stays.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let refused = rt.block_on(async {
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
            kube::Api::namespaced(client().await, &ns.0);
        let mut c = kubectl_etcd::etcd::EtcdClient::connect_port_forward(
            pods,
            "demo-0",
            2379,
            Duration::from_secs(10),
        )
        .await
        .unwrap()
        .with_rpc_timeout(Duration::from_secs(20));
        for i in 0..200u32 {
            let value = vec![b'a' + (i % 26) as u8; 1 << 20];
            if let Err(e) = c.put_bytes("big", value, None).await {
                let mut text = e.to_string();
                let mut next = std::error::Error::source(&e);
                while let Some(s) = next {
                    text.push_str(&format!(": {s}"));
                    next = s.source();
                }
                return text;
            }
        }
        panic!("200 MiB went into a 16 MiB quota");
    });
    assert!(refused.contains("database space exceeded"), "{refused}");
    let alarms = ok(etcdctl(&ns.0, "demo-1", &["alarm", "list"]));
    assert!(alarms.stdout.contains("NOSPACE"), "{}", alarms.stdout);
    // status names the alarm and the way out.
    let st = etcd(&ns.0, &["status", "demo"]);
    let text = format!("{}{}", st.stdout, st.stderr);
    assert!(
        text.contains("NOSPACE") && text.contains("kubectl etcd defrag"),
        "{text}"
    );
    // The plan: followers first, the leader last; nothing changes.
    let plan = ok(etcd(&ns.0, &["defrag", "demo", "--compact", "--dry-run"]));
    // The engine heals NOSPACE first, then carries out the request.
    let lines: Vec<&str> = plan.stdout.lines().collect();
    assert!(lines[0].contains("NOSPACE"), "{}", plan.stdout);
    assert!(lines[1].starts_with("compact"), "{}", plan.stdout);
    assert!(
        lines
            .iter()
            .rfind(|l| l.starts_with("defragment"))
            .is_some_and(|l| l.contains("(leader, last)")),
        "{}",
        plan.stdout
    );
    let alarms = ok(etcdctl(&ns.0, "demo-1", &["alarm", "list"]));
    assert!(
        alarms.stdout.contains("NOSPACE"),
        "a dry run disarms nothing"
    );
    // Compacted and defragmented: every member smaller, the alarm gone, writes accepted again.
    let report = json(&ok(etcd(
        &ns.0,
        &["defrag", "demo", "--compact", "-o", "json"],
    )));
    let members = report["members"].as_array().unwrap();
    assert_eq!(members.len(), 3, "{report}");
    assert_eq!(members[2]["leader"], true, "the leader last: {report}");
    for m in members {
        assert!(
            m["dbSizeAfter"].as_i64().unwrap() < 4 << 20
                && m["dbSizeAfter"].as_i64() < m["dbSizeBefore"].as_i64(),
            "{m}"
        );
    }
    assert!(report["compactedTo"].as_i64().unwrap() > 1, "{report}");
    assert!(
        !report["disarmed"].as_array().unwrap().is_empty(),
        "{report}"
    );
    let alarms = ok(etcdctl(&ns.0, "demo-1", &["alarm", "list"]));
    assert!(!alarms.stdout.contains("NOSPACE"), "{}", alarms.stdout);
    ok(etcdctl(&ns.0, "demo-2", &["put", "after", "defrag"]));
    eventually("the cluster healthy again", Duration::from_secs(60), || {
        (etcd(&ns.0, &["status", "demo"]).code == 0).then_some(())
    });
}

/// A Kubernetes cluster whose DNS domain is not `cluster.local` (the testbed's DNS also serves
/// every record under `cluster.example`, tests/cluster/env.sh `ALT_DOMAIN`): `create
/// --cluster-domain` names the members there, in etcd's membership and their certificates (peer
/// TLS verifies them), the seed's bootstrap and the learners' joins alike; the domain cannot be
/// changed afterwards, and a bad one is refused before anything is written.
#[test]
fn a_cluster_in_another_dns_domain_names_its_members_there_from_bootstrap_to_joins() {
    install_crd();
    let ns = Ns::new("domain");
    // The testbed's DNS answers reverse lookups of this namespace's addresses in cluster.example,
    // as a cluster whose domain it is does (an etcd that checks its peers' certificate names
    // against the reverse lookup of their IPs needs that; ours skip the check).
    ok(kubectl(&[
        "label",
        "namespace",
        &ns.0,
        "testbed.kubectl-etcd.io/dns-domain=alt",
    ]));
    let bad = etcd(
        &ns.0,
        &["create", "demo", "--cluster-domain", "Cluster_Example"],
    );
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("spec.clusterDomain") && bad.stderr.contains("is not a DNS domain"),
        "{}",
        bad.stderr
    );
    let none = kubectl(&["-n", &ns.0, "get", "etcdcluster", "-o", "name"]);
    assert!(none.stdout.trim().is_empty(), "{}", none.stdout);

    ok(etcd(
        &ns.0,
        &[
            "create",
            "demo",
            "--replicas",
            "1",
            "--cluster-domain",
            "cluster.example",
            "--timeout",
            "4m",
        ],
    ));
    let up = json(&ok(etcd(
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
    )));
    assert_eq!(up["spec"]["clusterDomain"], "cluster.example", "{up}");
    assert_eq!(ready_members(&up["status"]), (3, 3, 3), "{up}");
    let list = json(&ok(etcdctl(
        &ns.0,
        "demo-0",
        &["member", "list", "-w", "json"],
    )));
    let urls: Vec<String> = list["members"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| {
            ["peerURLs", "clientURLs"]
                .into_iter()
                .flat_map(move |k| m[k].as_array().cloned().unwrap_or_default())
        })
        .filter_map(|u| u.as_str().map(String::from))
        .collect();
    assert_eq!(urls.len(), 6, "{list}");
    for (k, u) in urls.iter().enumerate() {
        assert!(
            u.starts_with("https://demo-")
                && u.ends_with(&format!(
                    ".demo.{}.svc.cluster.example:{}",
                    ns.0,
                    if k % 2 == 0 { 2380 } else { 2379 }
                )),
            "{u} in {urls:?}"
        );
    }
    let put = ok(etcdctl(&ns.0, "demo-2", &["put", "k", "v"]));
    assert!(put.stdout.contains("OK"), "{}", put.stdout);

    // Fixed once the cluster exists: the API server refuses the change (CEL), or, without CEL,
    // the engine does and keeps the members' domain.
    let patch = patch_demo(&ns.0, r#"{"spec":{"clusterDomain":"cluster.local"}}"#);
    if cel_admission() {
        assert_ne!(patch.code, 0, "{}", patch.stdout);
        assert!(
            patch
                .stderr
                .contains("spec.clusterDomain cannot change on an existing cluster"),
            "{}",
            patch.stderr
        );
    } else {
        let st = json(&etcd(
            &ns.0,
            &["reconcile", "demo", "--timeout", "1m", "-o", "json"],
        ));
        let refused = st["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "SpecRefused")
            .cloned()
            .unwrap();
        assert_eq!(refused["status"], "True", "{refused}");
    }
    let after = cluster_json(&ns.0, "demo");
    assert_eq!(after["spec"]["clusterDomain"], "cluster.example", "{after}");
}

/// A namespace whose ResourceQuota wants a memory limit on every container (as multi-tenant
/// clusters set up): the StatefulSet cannot create a single member pod. `create` waits saying
/// the quota's own words, not only "members are starting", exits 4 at its timeout (nothing to
/// undo), and once the spec gives the members a memory limit the cluster comes up.
#[test]
fn a_quota_that_refuses_the_member_pods_is_named_and_a_memory_limit_brings_the_cluster_up() {
    install_crd();
    let ns = Ns::new("quota");
    let quota = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "tenant"},
        "spec": {"hard": {"limits.memory": "4Gi"}},
    });
    ok(kubectl_stdin(
        &["-n", &ns.0, "apply", "-f", "-"],
        &quota.to_string(),
    ));
    let r = etcd(
        &ns.0,
        &["create", "demo", "--replicas", "3", "--timeout", "45s"],
    );
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(
        r.stderr.contains("the StatefulSet cannot create a pod")
            && r.stderr.contains("limits.memory"),
        "{}",
        r.stderr
    );
    let doc = cluster_json(&ns.0, "demo");
    assert!(
        doc["status"]["message"].as_str().is_some_and(
            |m| m.contains("exceeded quota") || m.contains("must specify limits.memory")
        ),
        "{}",
        doc["status"]
    );
    ok(patch_demo(
        &ns.0,
        r#"{"spec":{"resources":{"requests":{"memory":"64Mi"},"limits":{"memory":"512Mi"}}}}"#,
    ));
    let up = json(&ok(etcd(
        &ns.0,
        &["reconcile", "demo", "--timeout", "5m", "-o", "json"],
    )));
    assert_eq!(ready_members(&up["status"]), (3, 3, 3), "{up}");
    assert!(
        !up["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot create"),
        "{up}"
    );
}

/// An ephemeral cluster whose pods all restart at once (a node reboot): every member's data went
/// with its pod. The engine holds, saying so and what is left (a backup into a new cluster, or
/// an empty start), instead of waiting for members that can never answer; `status` exits 7;
/// `delete` and `create` start it again empty.
#[test]
fn an_ephemeral_cluster_whose_pods_all_restarted_holds_and_says_what_is_left() {
    install_crd();
    let ns = Ns::new("ephemeral-lost");
    let create = [
        "create",
        "demo",
        "--replicas",
        "3",
        "--ephemeral",
        "--timeout",
        "4m",
    ];
    ok(etcd(&ns.0, &create));
    ok(etcdctl(&ns.0, "demo-0", &["put", "k", "v"]));
    ok(kubectl(&[
        "-n",
        &ns.0,
        "delete",
        "pod",
        "--all",
        "--wait=false",
    ]));
    let said = eventually(
        "the hold on every member's lost data",
        Duration::from_secs(180),
        || {
            let r = etcd(&ns.0, &["reconcile", "demo", "--timeout", "40s"]);
            (r.code == 7 && r.stderr.contains("every member lost its data")).then_some(r.stderr)
        },
    );
    assert!(
        said.contains("its storage is ephemeral")
            && said.contains("restore NEW --from-backup")
            && said.contains(&format!("kubectl etcd -n {} delete demo --yes", ns.0)),
        "{said}"
    );
    let status = etcd(&ns.0, &["status", "demo"]);
    assert_eq!(status.code, 7, "{}", status.stderr);
    let doc = cluster_json(&ns.0, "demo");
    let degraded = doc["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Degraded").cloned())
        .unwrap_or_default();
    assert_eq!(
        (degraded["status"].as_str(), degraded["reason"].as_str()),
        (Some("True"), Some("QuorumLost")),
        "{}",
        doc["status"]
    );
    ok(etcd(&ns.0, &["delete", "demo", "--yes"]));
    let again = json(&ok(etcd(&ns.0, &[&create[..], &["-o", "json"]].concat())));
    assert_eq!(ready_members(&again["status"]), (3, 3, 3), "{again}");
    let get = ok(etcdctl(
        &ns.0,
        "demo-0",
        &["get", "k", "--print-value-only"],
    ));
    assert_eq!(
        get.stdout.trim(),
        "",
        "an empty start holds no key: {}",
        get.stdout
    );
}

/// `--image-pull-secret`: a Secret that does not exist, or is no registry Secret, is refused
/// before anything is written (exit 2, with the command that makes one); a registry Secret goes
/// into every member pod, and the cluster converges. (The testbed's images are local, so the
/// kubelet does not pull: what it does with the Secret is Kubernetes's.)
#[test]
fn image_pull_secrets_are_checked_before_anything_is_written_and_reach_the_members() {
    install_crd();
    let ns = Ns::new("pull");
    let create = |secret: &str| {
        etcd(
            &ns.0,
            &[
                "create",
                "demo",
                "--replicas",
                "1",
                "--image-pull-secret",
                secret,
                "--timeout",
                "2m",
            ],
        )
    };
    let missing = create("regcred");
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing
            .stderr
            .contains(&format!("Secret {}/regcred does not exist", ns.0))
            && missing
                .stderr
                .contains("create secret docker-registry regcred"),
        "{}",
        missing.stderr
    );
    ok(kubectl(&[
        "-n",
        &ns.0,
        "create",
        "secret",
        "generic",
        "opaque",
        "--from-literal=x=y",
    ]));
    let wrong = create("opaque");
    assert_eq!(wrong.code, 2, "{}", wrong.stderr);
    assert!(
        wrong.stderr.contains("is of type \"Opaque\""),
        "{}",
        wrong.stderr
    );
    let none = kubectl(&["-n", &ns.0, "get", "etcdclusters", "-o", "name"]);
    assert_eq!(none.stdout.trim(), "", "something was created");

    ok(kubectl(&[
        "-n",
        &ns.0,
        "create",
        "secret",
        "docker-registry",
        "regcred",
        "--docker-server=registry.example.org",
        "--docker-username=ci",
        "--docker-password=not-a-real-password",
    ]));
    ok(create("regcred"));
    let c = cluster_json(&ns.0, "demo");
    assert_eq!(c["spec"]["imagePullSecrets"][0]["name"], "regcred", "{c}");
    let pod = json(&ok(kubectl(&[
        "-n", &ns.0, "get", "pod", "demo-0", "-o", "json",
    ])));
    assert_eq!(
        pod["spec"]["imagePullSecrets"],
        serde_json::json!([{"name": "regcred"}]),
        "{}",
        pod["spec"]
    );
}

/// A kubeconfig whose cluster is reached through a proxy (`proxy-url`, as for a bastion's
/// `ssh -D`): create, status (a port-forward to each member) and delete go through it, as
/// kubectl's do. Before kube's proxy support was built in, every command failed at once.
#[test]
fn the_cli_works_through_the_kubeconfigs_socks5_proxy_url() {
    install_crd();
    let ns = Ns::new("socks");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (proxy, targets) = rt.block_on(common::proxy::socks5_proxy("127.0.0.1:0"));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kubeconfig");
    std::fs::copy(kubeconfig(), &config).unwrap();
    let config = config.to_str().unwrap();
    let cluster = ok(kubectl(&[
        "--kubeconfig",
        config,
        "config",
        "view",
        "--minify",
        "-o",
        "jsonpath={.clusters[0].name}",
    ]))
    .stdout;
    ok(kubectl(&[
        "--kubeconfig",
        config,
        "config",
        "set",
        &format!("clusters.{}.proxy-url", cluster.trim()),
        &format!("socks5://{proxy}"),
    ]));
    let through = |args: &[&str]| {
        let mut c = kubectl_cmd(&[&["etcd", "-n", &ns.0], args].concat());
        c.env("KUBECONFIG", config);
        run_cmd(&[&["etcd", "-n", &ns.0], args].concat(), c)
    };
    ok(through(&[
        "create",
        "demo",
        "--replicas",
        "1",
        "--insecure",
        "--timeout",
        "2m",
    ]));
    let tunnels = targets.lock().unwrap().len();
    assert!(tunnels > 0, "create did not go through the proxy");
    let st = json(&ok(through(&["status", "demo", "-o", "json"])));
    assert_eq!(st["status"]["readyReplicas"], 1, "{st}");
    assert!(
        targets.lock().unwrap().len() > tunnels,
        "status did not go through the proxy"
    );
    ok(through(&["delete", "demo", "--yes"]));
}

/// A StorageClass that does not exist: the member's claim stays Pending, and the wait says why
/// in the provisioner's words (its claim's Warning event), not only "unbound immediate
/// PersistentVolumeClaims".
#[test]
fn a_claim_that_cannot_be_provisioned_is_named_with_the_provisioners_words() {
    install_crd();
    let ns = Ns::new("noclass");
    let r = etcd(
        &ns.0,
        &[
            "create",
            "demo",
            "--replicas",
            "1",
            "--storage-class",
            "no-such-class",
            "--timeout",
            "20s",
        ],
    );
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("warning: StorageClass no-such-class does not exist"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(
            "its volume claim data-demo-0 is not bound: storageclass.storage.k8s.io \"no-such-class\" not found"
        ),
        "{}",
        r.stderr
    );
    let st = cluster_json(&ns.0, "demo");
    let said = st["status"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("no-such-class\" not found"), "{st}");
    ok(etcd(&ns.0, &["delete", "demo", "--yes"]));
}

/// A one-member ephemeral cluster `demo` in `ns` whose client Service is a NodePort (`extra`:
/// more `create` flags), and the node's address and that port.
fn node_port_cluster(ns: &str, extra: &[&str]) -> (String, u16) {
    let mut args = vec![
        "create",
        "demo",
        "--replicas",
        "1",
        "--ephemeral",
        "--service-type",
        "NodePort",
        "--timeout",
        "4m",
    ];
    args.extend(extra);
    ok(etcd(ns, &args));
    let svc = json(&ok(kubectl(&[
        "-n",
        ns,
        "get",
        "service",
        "demo-client",
        "-o",
        "json",
    ])));
    assert_eq!(svc["spec"]["type"], "NodePort", "{svc}");
    let port = svc["spec"]["ports"][0]["nodePort"]
        .as_u64()
        .expect("a node port");
    let ip = ok(kubectl(&[
        "get",
        "nodes",
        "-o",
        "jsonpath={.items[0].status.addresses[?(@.type==\"InternalIP\")].address}",
    ]))
    .stdout;
    (ip.trim().to_string(), u16::try_from(port).unwrap())
}

/// `spec.clientService`: a NodePort cluster answers on the node's address from outside the pod
/// network; a change (a load balancer with annotations, labels and source ranges) is applied by
/// the next pass without a member restart, a bad one refused, and removing it gives the plain
/// ClusterIP Service back, node port released.
#[test]
fn a_client_service_of_another_type_exposes_the_cluster_and_goes_back() {
    install_crd();
    let ns = Ns::new("expose");
    let bad = etcd(&ns.0, &["create", "demo", "--service-type", "Ingress"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    let (node_ip, node_port) = node_port_cluster(&ns.0, &["--insecure"]);
    let service = || {
        json(&ok(kubectl(&[
            "-n",
            &ns.0,
            "get",
            "service",
            "demo-client",
            "-o",
            "json",
        ])))
    };
    // etcd's own /version over the node port: the member answers from outside the pod network.
    let version = eventually(
        "etcd to answer on the node port",
        Duration::from_secs(60),
        || {
            use std::io::{Read, Write};
            let mut s = std::net::TcpStream::connect((node_ip.as_str(), node_port)).ok()?;
            s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
            s.write_all(b"GET /version HTTP/1.0\r\n\r\n").ok()?;
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            out.contains("etcdserver").then_some(out)
        },
    );
    assert!(version.starts_with("HTTP/1.0 200"), "{version}");
    // The address blocks the client port admits (none: pods only).
    let open_to = || {
        ok(kubectl(&[
            "-n",
            &ns.0,
            "get",
            "networkpolicy",
            "demo",
            "-o",
            "jsonpath={.spec.ingress[0].from[*].ipBlock.cidr}",
        ]))
        .stdout
    };
    assert_eq!(open_to().trim(), "0.0.0.0/0 ::/0");
    let status = ok(etcd(&ns.0, &["status", "demo"])).stdout;
    assert!(
        status.contains(&format!(
            "clients: http://demo-client.{}.svc:2379 (Service demo-client, NodePort; from outside",
            ns.0
        )),
        "{status}"
    );
    let uid = pod_uid(&ns.0, "demo-0");

    // A bad spec is refused by the engine (no Service change), then a load balancer.
    let patch = |p: &str| {
        ok(patch_demo(&ns.0, p));
        etcd(
            &ns.0,
            &["reconcile", "demo", "--timeout", "2m", "-o", "json"],
        )
    };
    let refused = patch(
        r#"{"spec":{"clientService":{"type":"NodePort","loadBalancerSourceRanges":["10.0.0.0/8"]}}}"#,
    );
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("spec.clientService.loadBalancerSourceRanges"),
        "{}",
        refused.stderr
    );
    ok(patch(
        r#"{"spec":{"clientService":{"type":"LoadBalancer","loadBalancerSourceRanges":["10.0.0.0/8"],"labels":{"team":"db"},"annotations":{"example.com/internal":"true"}}}}"#,
    ));
    let svc = service();
    assert_eq!(svc["spec"]["type"], "LoadBalancer", "{svc}");
    assert_eq!(
        svc["spec"]["loadBalancerSourceRanges"],
        serde_json::json!(["10.0.0.0/8"])
    );
    assert_eq!(svc["metadata"]["labels"]["team"], "db", "{svc}");
    assert_eq!(
        svc["metadata"]["annotations"]["example.com/internal"], "true",
        "{svc}"
    );
    // Steady: another pass writes nothing.
    let rv = svc["metadata"]["resourceVersion"].clone();
    ok(etcd(&ns.0, &["reconcile", "demo", "--timeout", "2m"]));
    assert_eq!(
        service()["metadata"]["resourceVersion"],
        rv,
        "an unchanged spec rewrote the Service"
    );

    // Removed: the plain Service as a cluster that never set it has, and the policy closed.
    ok(patch(r#"{"spec":{"clientService":null}}"#));
    let svc = service();
    assert_eq!(svc["spec"]["type"], "ClusterIP", "{svc}");
    assert_eq!(svc["spec"]["ports"][0].get("nodePort"), None, "{svc}");
    assert_eq!(svc["spec"].get("loadBalancerSourceRanges"), None, "{svc}");
    assert_eq!(svc["metadata"]["labels"].get("team"), None, "{svc}");
    assert_eq!(
        svc["metadata"]
            .get("annotations")
            .and_then(|a| a.get("example.com/internal")),
        None,
        "{svc}"
    );
    assert_eq!(open_to().trim(), "");
    assert_eq!(
        pod_uid(&ns.0, "demo-0"),
        uid,
        "a Service change restarted the member"
    );
}

/// A client outside the cluster, through a node port, with managed TLS: the node's address is
/// no name of the server certificate until `spec.tls.serverNames` gives it; then the engine
/// issues the certificate again and the same client's put is served, without a member restart.
#[test]
fn an_outside_client_verifies_the_server_by_a_name_spec_tls_server_names_adds() {
    install_crd();
    let ns = Ns::new("names");
    let (node_ip, node_port) = node_port_cluster(&ns.0, &[]);
    // The engine's client certificate, as a user would take it with `kubectl etcd certificate`.
    let dir = std::env::temp_dir().join(format!("ke-names-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (key, file) in [
        ("tls\\.crt", "crt"),
        ("tls\\.key", "key"),
        ("ca\\.crt", "ca"),
    ] {
        let b64 = ok(kubectl(&[
            "-n",
            &ns.0,
            "get",
            "secret",
            "demo-tls-client",
            "-o",
            &format!("jsonpath={{.data.{key}}}"),
        ]))
        .stdout;
        let out = std::process::Command::new("base64")
            .arg("-d")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(b64.as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        std::fs::write(dir.join(file), out.stdout).unwrap();
    }
    let bins =
        std::env::var("KE_ETCD_BIN_DIR").unwrap_or_else(|_| "/var/cache/kubectl-etcd/etcd".into());
    let version = std::fs::read_to_string(format!("{bins}/VERSIONS"))
        .expect("etcd binaries (tests/cluster/etcd-bins.sh)");
    let version = version
        .split_whitespace()
        .last()
        .unwrap()
        .trim_start_matches('v')
        .to_string();
    let put = || {
        let o = std::process::Command::new(format!("{bins}/v{version}/etcdctl"))
            .args([
                &format!("--endpoints=https://{node_ip}:{node_port}"),
                &format!("--cacert={}", dir.join("ca").display()),
                &format!("--cert={}", dir.join("crt").display()),
                &format!("--key={}", dir.join("key").display()),
                "--dial-timeout=5s",
                "--command-timeout=10s",
                "put",
                "outside",
                "yes",
            ])
            .output()
            .expect("etcdctl runs");
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (served, why) = put();
    assert!(
        !served,
        "served without the node's address in the certificate"
    );
    assert!(why.contains("certificate"), "{why}");
    let uid = pod_uid(&ns.0, "demo-0");

    ok(patch_demo(
        &ns.0,
        &format!(r#"{{"spec":{{"tls":{{"serverNames":["{node_ip}"]}}}}}}"#),
    ));
    let r = ok(etcd(&ns.0, &["reconcile", "demo", "--timeout", "2m"]));
    assert!(r.stderr.contains("spec.tls.serverNames"), "{}", r.stderr);
    // The kubelet brings the Secret into the pod within its sync period; etcd reads it at the
    // next handshake.
    eventually(
        "the put to be served with the node's address",
        Duration::from_secs(120),
        || put().0.then_some(()),
    );
    let got = ok(etcdctl(
        &ns.0,
        "demo-0",
        &["get", "outside", "--print-value-only"],
    ));
    assert_eq!(got.stdout.trim(), "yes");
    assert_eq!(
        pod_uid(&ns.0, "demo-0"),
        uid,
        "a certificate's names restarted the member"
    );
    // Another pass issues nothing more.
    let again = ok(etcd(&ns.0, &["reconcile", "demo", "--timeout", "2m"]));
    assert!(
        !again.stderr.contains("issue the server certificate"),
        "{}",
        again.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}
