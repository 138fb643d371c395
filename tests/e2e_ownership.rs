//! End-to-end (issue 42 item 2, issue 43 R5): ownership before every write.
//!
//! - Objects a tenant already has at a cluster's names (its own `default-deny` NetworkPolicy, a
//!   disruption budget, a Service, a `<name>-tls-ca` Secret) are left untouched: the engine
//!   writes and deletes nothing and says `ObjectNotOwned`, naming each; once they are gone the
//!   cluster converges.
//! - A plain etcd StatefulSet of the same instance labels in the namespace is neither selected
//!   by the cluster's Services and disruption budget nor read as a member, and it survives
//!   `delete --delete-data` with its volume.
//!
//! Objects are compared before and after by uid and resourceVersion (any write bumps the latter).
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::time::Duration;

use common::*;

const ETCD_IMAGE: &str = "gcr.io/etcd-development/etcd:v3.6.15";

/// `kind/name` of `ns` as JSON, `None` when it does not exist.
fn get(ns: &str, kind: &str, name: &str) -> Option<serde_json::Value> {
    let r = kubectl(&["-n", ns, "get", kind, name, "-o", "json"]);
    if r.code != 0 {
        assert!(r.stderr.contains("NotFound"), "{}", r.stderr);
        return None;
    }
    Some(json(&r))
}

/// What any write to an object changes: its uid (deleted and made again) and resourceVersion.
fn version(ns: &str, kind: &str, name: &str) -> (String, String) {
    let o = get(ns, kind, name).unwrap_or_else(|| panic!("{kind} {ns}/{name} is gone"));
    let s = |k: &str| o["metadata"][k].as_str().unwrap_or_default().to_string();
    (s("uid"), s("resourceVersion"))
}

/// `kubectl exec POD -- ARGS` in `ns`. A pod its own StatefulSet is making again (seen once in
/// CI: "pods twin-etcd-0 not found" right after it was ready) or whose container is starting is
/// waited for, up to two minutes, and the namespace's events are printed to say why; any other
/// failure fails the test at once.
fn exec_in(ns: &str, pod: &str, args: &[&str]) -> Run {
    let mut all = vec!["-n", ns, "exec", pod, "--"];
    all.extend_from_slice(args);
    let start = std::time::Instant::now();
    loop {
        let r = kubectl(&all);
        if r.code == 0 {
            return r;
        }
        let passing = r.stderr.contains("NotFound")
            || r.stderr.contains("not found")
            || r.stderr.contains("container not ready")
            || r.stderr.contains("unable to upgrade connection");
        if !passing || start.elapsed() > Duration::from_secs(120) {
            eprintln!("{}", events(ns));
            return ok(r);
        }
        eprintln!(
            "exec in {ns}/{pod} failed ({}); waiting for the pod. Events:\n{}",
            r.stderr.trim(),
            events(ns)
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// The events of `ns`, oldest first, one line each (for a failure's message).
fn events(ns: &str) -> String {
    kubectl(&[
        "-n",
        ns,
        "get",
        "events",
        "--sort-by=.lastTimestamp",
        "-o",
        "custom-columns=TIME:.lastTimestamp,OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message",
    ])
    .stdout
}

/// The Degraded condition of the cluster: (reason, message).
fn degraded(ns: &str, name: &str) -> Option<(String, String)> {
    let c = cluster_json(ns, name);
    c["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Degraded")
        .map(|c| {
            (
                c["reason"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
}

/// The pods behind a Service's endpoints (every EndpointSlice of it, ready or not).
fn endpoint_pods(ns: &str, service: &str) -> Vec<String> {
    let slices = json(&ok(kubectl(&[
        "-n",
        ns,
        "get",
        "endpointslices",
        "-l",
        &format!("kubernetes.io/service-name={service}"),
        "-o",
        "json",
    ])));
    let mut pods: Vec<String> = slices["items"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .filter_map(|e| e["targetRef"]["name"].as_str().map(str::to_string))
        .collect();
    pods.sort();
    pods.dedup();
    pods
}

#[test]
fn foreign_objects_at_the_clusters_names_are_left_untouched_and_the_cluster_holds_until_they_go() {
    install_crd();
    let ns = Ns::new("owned");
    let name = "default-deny";
    // The tenant's own objects, named as the engine would name the cluster's.
    let foreign = format!(
        r#"
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: {name}, namespace: {ns}}}
spec:
  podSelector: {{}}
  policyTypes: [Ingress]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: {name}, namespace: {ns}}}
spec:
  minAvailable: 1
  selector: {{matchLabels: {{app: web}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: {name}-client, namespace: {ns}}}
spec:
  selector: {{app: web}}
  ports: [{{port: 80}}]
---
apiVersion: v1
kind: Secret
metadata: {{name: {name}-tls-ca, namespace: {ns}}}
stringData: {{note: the tenant's own}}
"#,
        ns = ns.0
    );
    ok(kubectl_stdin(&["apply", "-f", "-"], &foreign));
    let objects = [
        ("networkpolicy", name.to_string()),
        ("pdb", name.to_string()),
        ("service", format!("{name}-client")),
        ("secret", format!("{name}-tls-ca")),
    ];
    let before: Vec<_> = objects.iter().map(|(k, n)| version(&ns.0, k, n)).collect();

    // The cluster, its policy switched off: the engine would have deleted the policy of its name.
    let cluster = format!(
        r#"
apiVersion: etcd.kubectl-etcd.io/v1alpha1
kind: EtcdCluster
metadata: {{name: {name}, namespace: {ns}}}
spec:
  replicas: 1
  version: "3.6.15"
  storage: {{ephemeral: true}}
  networkPolicy: {{enabled: false}}
  tls: {{mode: managed}}
"#,
        ns = ns.0
    );
    ok(kubectl_stdin(&["apply", "-f", "-"], &cluster));
    let started = std::time::Instant::now();
    let r = etcd(&ns.0, &["reconcile", name, "--timeout", "2m"]);
    assert_eq!(
        r.code, 7,
        "a hold, exit 7\nstdout: {}\nstderr: {}",
        r.stdout, r.stderr
    );
    for (kind, n) in [
        ("NetworkPolicy", name.to_string()),
        ("PodDisruptionBudget", name.to_string()),
        ("Service", format!("{name}-client")),
        ("Secret", format!("{name}-tls-ca")),
    ] {
        assert!(
            r.stderr.contains(&format!("{kind} {}/{n}", ns.0)),
            "the hold names {kind} {n}: {}",
            r.stderr
        );
    }
    assert!(r.stderr.contains("delete or rename them"), "{}", r.stderr);
    eprintln!("held after {:?}", started.elapsed());
    let (reason, message) = degraded(&ns.0, name).expect("a Degraded condition");
    assert_eq!(reason, "ObjectNotOwned", "{message}");
    assert!(
        message.contains(&format!("NetworkPolicy {}/{name}", ns.0)),
        "{message}"
    );
    // Nothing of the tenant's changed, and nothing of the cluster's was written.
    let after: Vec<_> = objects.iter().map(|(k, n)| version(&ns.0, k, n)).collect();
    assert_eq!(before, after, "a foreign object was written");
    for (kind, n) in [
        ("statefulset", name.to_string()),
        ("configmap", format!("{name}-members")),
        ("service", name.to_string()),
    ] {
        assert!(get(&ns.0, kind, &n).is_none(), "{kind} {n} was written");
    }
    // The tenant's Secret still holds what it held.
    let secret = get(&ns.0, "secret", &format!("{name}-tls-ca")).unwrap();
    assert_eq!(
        secret["data"].as_object().map(|d| d.len()),
        Some(1),
        "{secret}"
    );

    // Once they are gone, the cluster comes up (without a policy: it is switched off).
    for (kind, n) in &objects {
        ok(kubectl(&["-n", &ns.0, "delete", kind, n]));
    }
    ok(etcd(&ns.0, &["reconcile", name, "--timeout", "3m"]));
    assert!(get(&ns.0, "networkpolicy", name).is_none());
    let ca = get(&ns.0, "secret", &format!("{name}-tls-ca")).expect("the cluster's CA");
    assert_eq!(ca["metadata"]["ownerReferences"][0]["kind"], "EtcdCluster");
    ok(etcd(&ns.0, &["status", name]));
}

#[test]
fn a_plain_etcd_of_the_same_instance_labels_is_not_selected_and_survives_delete_with_data() {
    install_crd();
    let ns = Ns::new("twin");
    let name = "twin";
    // A plain etcd StatefulSet (as a Helm release named `twin` would make it): the cluster's
    // name and instance labels on its pods and its claim, even the cluster StatefulSet's very
    // selector, but its own name and no `managed-by: kubectl-etcd`.
    let twin = format!(
        r#"
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: {name}-etcd, namespace: {ns}}}
spec:
  replicas: 1
  serviceName: {name}-etcd
  selector: {{matchLabels: {{app.kubernetes.io/name: etcd, app.kubernetes.io/instance: {name}}}}}
  template:
    metadata:
      labels: {{app.kubernetes.io/name: etcd, app.kubernetes.io/instance: {name}, app.kubernetes.io/managed-by: Helm}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: etcd
        image: {ETCD_IMAGE}
        command: [etcd, --name, foreign, --data-dir, /var/lib/etcd/data,
                  --listen-client-urls, "http://0.0.0.0:2379", --advertise-client-urls, "http://127.0.0.1:2379"]
        ports: [{{name: client, containerPort: 2379}}]
        readinessProbe: {{httpGet: {{path: /health, port: 2379}}, periodSeconds: 2}}
        volumeMounts: [{{name: data, mountPath: /var/lib/etcd}}]
  volumeClaimTemplates:
  - metadata:
      name: data
      labels: {{app.kubernetes.io/name: etcd, app.kubernetes.io/instance: {name}}}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {{requests: {{storage: 64Mi}}}}
"#,
        ns = ns.0
    );
    ok(kubectl_stdin(&["apply", "-f", "-"], &twin));
    let (twin_pod, twin_claim) = (format!("{name}-etcd-0"), format!("data-{name}-etcd-0"));
    eventually(
        "the plain etcd to be ready",
        Duration::from_secs(180),
        || {
            (pod_field(
                &ns.0,
                &twin_pod,
                "{.status.conditions[?(@.type==\"Ready\")].status}",
            ) == "True")
                .then_some(())
        },
    );
    exec_in(&ns.0, &twin_pod, &["etcdctl", "put", "theirs", "kept"]);

    ok(etcd(
        &ns.0,
        &["create", name, "--replicas", "1", "--timeout", "3m"],
    ));
    // Ours alone behind the client and peer Services, and counted by the disruption budget.
    eventually("the Services' endpoints", Duration::from_secs(60), || {
        (endpoint_pods(&ns.0, &format!("{name}-client")) == [format!("{name}-0")]).then_some(())
    });
    assert_eq!(endpoint_pods(&ns.0, name), [format!("{name}-0")]);
    let pdb = get(&ns.0, "pdb", name).expect("the cluster's disruption budget");
    assert_eq!(pdb["status"]["expectedPods"], 1, "{pdb}");
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/managed-by"],
        "kubectl-etcd"
    );
    let policy = get(&ns.0, "networkpolicy", name).expect("the cluster's NetworkPolicy");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/managed-by"],
        "kubectl-etcd"
    );
    // Its members are its own: one, and not the plain etcd's.
    let status = json(&ok(etcd(&ns.0, &["status", name, "-o", "json"])));
    let members = status["status"]["members"]
        .as_array()
        .or_else(|| status["members"].as_array())
        .cloned()
        .unwrap_or_default();
    assert_eq!(members.len(), 1, "{status}");
    assert!(!status.to_string().contains(&twin_pod), "{status}");

    // The claim's resourceVersion would move with a deletion timestamp; the StatefulSet and
    // the pod write their status as they run, so they are compared by uid and deletion.
    let alive = |kind: &str, n: &str| {
        let o = get(&ns.0, kind, n).unwrap_or_else(|| panic!("{kind} {n} is gone"));
        assert!(
            o["metadata"]["deletionTimestamp"].is_null(),
            "{kind} {n} is being deleted"
        );
        o["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let sts = format!("{name}-etcd");
    let before = (
        alive("statefulset", &sts),
        alive("pod", &twin_pod),
        version(&ns.0, "pvc", &twin_claim),
    );
    ok(etcd(
        &ns.0,
        &["delete", name, "--delete-data", "--yes", "--timeout", "3m"],
    ));
    assert!(
        get(&ns.0, "pvc", &format!("data-{name}-0")).is_none(),
        "ours is deleted"
    );
    let after = (
        alive("statefulset", &sts),
        alive("pod", &twin_pod),
        version(&ns.0, "pvc", &twin_claim),
    );
    assert_eq!(
        before,
        after,
        "the plain etcd's objects were touched; events:\n{}",
        events(&ns.0)
    );
    let kept = exec_in(
        &ns.0,
        &twin_pod,
        &["etcdctl", "get", "theirs", "--print-value-only"],
    );
    assert_eq!(kept.stdout.trim(), "kept");
}
