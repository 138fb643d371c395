//! The operator's install manifests, generated from code so names, ports and RBAC agree with the
//! binary (the roles' rules are `objects::access`'s table). Pure: values out, no client.
//!
//! The CRD is not among them (it comes from `crate::api`); apply it first.

use serde_json::{Value, json};

use crate::keys::install::{
    METRICS_PATH, METRICS_VERB, leader_lease, metrics_reader_role, workload_role,
};
use crate::objects::admission::spec::Allowed;
use crate::objects::{
    ENV_OPERATOR_NAME, ENV_POD_NAME, ENV_POD_NAMESPACE, FIELD_MANAGER, LABEL_MANAGED_BY, LABEL_NAME,
};
use crate::objects::{access, admission, security};

/// The operator's namespace and the name of its Deployment, ServiceAccount, roles and bindings
/// (named in `crate::keys`, below `model`, which admits the operator's pods).
pub use crate::keys::install::{NAME, NAMESPACE};
/// Image of the operator Deployment unless `--image` says otherwise.
pub const DEFAULT_IMAGE: &str = crate::model::DEFAULT_TOOLS_IMAGE;
/// Port of `/metrics`, `/healthz` and `/readyz` inside the operator pod.
pub const METRICS_PORT: u16 = 8080;

fn labels() -> Value {
    json!({ LABEL_NAME: NAME, LABEL_MANAGED_BY: FIELD_MANAGER })
}

/// Namespace, ServiceAccount, the roles and bindings, the admission policy, Deployment.
///
/// The operator's leader Lease lives in its own namespace (`keys::install::leader_lease`), and
/// the lease Role there names it.
pub fn manifests(image: &str, namespace: &str) -> Vec<Value> {
    manifests_watching(image, namespace, &[], &[])
}

/// `manifests`, with the operator's reach set by `watch`: empty, every namespace: a
/// ClusterRole of what must be cluster-wide (`access::every_namespace`: its own resources, the
/// reads of its watches, nodes and storage classes, and binding the next role) and a ClusterRole
/// `NAME-workload` of the rest (`access::workload`), bound by the operator itself in each
/// namespace where it serves a cluster (`workload_binding`); else only those namespaces
/// (`operate --watch-namespace a,b`): a Role and RoleBinding in each, from the same table, and
/// a ClusterRole `NAME-nodes` for the only reads a Role cannot grant, Nodes and StorageClasses
/// (`access::by_scope`). Either way the admission policy (`admission`) holds the operator's
/// writes. The Helm chart's `rbac.scope` renders these (tests/chart.rs holds it to them).
/// `pull_secrets` name the operator pod's `imagePullSecrets` (Secrets in `namespace`; the
/// chart's `imagePullSecrets`).
pub fn manifests_watching(
    image: &str,
    namespace: &str,
    watch: &[String],
    pull_secrets: &[String],
) -> Vec<Value> {
    manifests_allowing(image, namespace, watch, pull_secrets, &Allowed::default())
}

/// `manifests_watching`, the operator letting specs set `allowed` beyond the defaults (its
/// `operate` flags, and the parameters of the admission policy on EtcdClusters,
/// `admission::spec`, which holds every writer of a spec to the same lists).
pub fn manifests_allowing(
    image: &str,
    namespace: &str,
    watch: &[String],
    pull_secrets: &[String],
    allowed: &Allowed,
) -> Vec<Value> {
    let meta = |name: &str, ns: Option<&str>| {
        let mut m = json!({ "name": name, "labels": labels() });
        if let Some(ns) = ns {
            m["namespace"] = json!(ns);
        }
        m
    };
    let subject = json!([{ "kind": "ServiceAccount", "name": NAME, "namespace": namespace }]);
    let mut out = vec![namespace_object(namespace)];
    out.push(json!({ "apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(NAME, Some(namespace)) }));
    let role = |kind: &str, name: &str, ns: Option<&str>, table: &[access::Access]| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": meta(name, ns), "rules": access::rules(table),
        })
    };
    let bound = |kind: &str, name: &str, ns: Option<&str>, table: &[access::Access]| {
        [
            role(kind, name, ns, table),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": format!("{kind}Binding"),
                "metadata": meta(name, ns),
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name },
                "subjects": subject,
            }),
        ]
    };
    let watch = each_once(watch);
    if watch.is_empty() {
        let workload = workload_role(NAME);
        out.extend(bound(
            "ClusterRole",
            NAME,
            None,
            &access::every_namespace(&workload),
        ));
        out.push(role("ClusterRole", &workload, None, &access::workload()));
    } else {
        let (namespaced, cluster) = access::by_scope(access::watched_namespaces());
        for &w in &watch {
            out.extend(bound("Role", NAME, Some(w), &namespaced));
        }
        out.extend(bound(
            "ClusterRole",
            &format!("{NAME}-nodes"),
            None,
            &cluster,
        ));
    }
    // Named after the Lease it grants: a Role NAME in the operator's namespace is the watched
    // namespace's when the operator watches its own (the two collided, and one overwrote the other).
    out.extend(bound(
        "Role",
        &leader_lease(NAME),
        Some(namespace),
        &access::operator_namespace(&leader_lease(NAME)),
    ));
    out.extend(admission::manifests(namespace, NAME, &labels()));
    out.extend(admission::spec::manifests(
        namespace,
        NAME,
        &watch,
        allowed,
        &labels(),
    ));
    out.extend(aggregated_roles());
    out.push(metrics_reader(NAME));
    out.push(network_policy(namespace));
    out.push(deployment(
        image,
        namespace,
        &watch,
        &each_once(pull_secrets),
        allowed,
    ));
    out
}

/// The RoleBinding of operator `operator` (its ServiceAccount in `operator_namespace`) to its
/// workload role (`keys::install::workload_role`) in `namespace`, where it serves a cluster:
/// what the operator watching every namespace writes there before its first pass
/// (`operate`), named `operator`. The admission policy admits this binding and no other.
pub fn workload_binding(namespace: &str, operator_namespace: &str, operator: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {
            "name": operator, "namespace": namespace,
            "labels": { LABEL_NAME: operator, LABEL_MANAGED_BY: FIELD_MANAGER },
        },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": workload_role(operator) },
        "subjects": [{ "kind": "ServiceAccount", "name": operator, "namespace": operator_namespace }],
    })
}

/// Each name once, in order of first mention (watched namespaces, pull Secrets).
fn each_once(names: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for n in names {
        if !out.contains(&n.as_str()) {
            out.push(n);
        }
    }
    out
}

/// Pod Security admission's label keys (`pod-security.kubernetes.io/<mode>`), and the level.
const POD_SECURITY_MODES: [&str; 3] = ["enforce", "warn", "audit"];
const POD_SECURITY_LEVEL: &str = "restricted";

/// A namespace of the install. `NAMESPACE` is the project's own: it enforces the `restricted` Pod
/// Security Standard (the operator pod wears it: `objects::security`). Another namespace the
/// operator is installed into may hold pods of others, which enforcing could stop: it only warns
/// and audits.
pub fn namespace_object(name: &str) -> Value {
    let mut labels = labels();
    for mode in POD_SECURITY_MODES {
        if mode != "enforce" || name == NAMESPACE {
            labels[format!("pod-security.kubernetes.io/{mode}")] = json!(POD_SECURITY_LEVEL);
        }
    }
    json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": name, "labels": labels } })
}

/// Kubernetes' built-in `view`, `edit` and `admin` roles gain EtcdClusters and EtcdBackups through
/// aggregation: a namespace's viewers can read them (`kubectl etcd status`, `report`), its editors
/// and admins can write them, with no RoleBinding of ours.
fn aggregated_roles() -> Vec<Value> {
    let objects = ["etcdclusters", "etcdbackups"];
    let with_status = [
        "etcdclusters",
        "etcdclusters/status",
        "etcdbackups",
        "etcdbackups/status",
    ];
    let role = |suffix: &str, to: &[&str], resources: &[&str], verbs: &[&str]| {
        let mut labels = labels();
        for r in to {
            labels[format!("rbac.authorization.k8s.io/aggregate-to-{r}")] = json!("true");
        }
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": { "name": format!("{NAME}-{suffix}"), "labels": labels },
            "rules": [{ "apiGroups": [crate::api::GROUP], "resources": resources, "verbs": verbs }],
        })
    };
    vec![
        role(
            "view",
            &["view", "edit", "admin"],
            &with_status,
            &["get", "list", "watch"],
        ),
        role(
            "edit",
            &["edit", "admin"],
            // Not status: the engine writes it (a record's status is what retention and
            // restores believe).
            &objects,
            &["create", "update", "patch", "delete", "deletecollection"],
        ),
    ]
}

/// The ClusterRole whose subjects may read the operator's `/metrics` (`operate --metrics-auth
/// kubernetes`, the default, asks a SubjectAccessReview of `get` on the URL): bind a scraper's
/// ServiceAccount to it with a ClusterRoleBinding (the monitoring pack binds its own,
/// `objects::monitoring`). Named after operator install `operator`.
pub fn metrics_reader(operator: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": { "name": metrics_reader_role(operator), "labels": labels() },
        "rules": [{ "nonResourceURLs": [METRICS_PATH], "verbs": [METRICS_VERB] }],
    })
}

/// The NetworkPolicy of the operator's own pods: ingress to the metrics port alone, from
/// anywhere (Prometheus runs wherever its owner put it, and `/metrics` answers only a reviewed
/// token, `operate --metrics-auth`; the kubelet's probes use the same port). Nothing else listens
/// in the pod. Egress is not restricted: the operator must reach the API server (an address
/// behind the `kubernetes` Service that a policy's peers cannot name portably: often the host
/// network), the client port of members in every namespace it serves, DNS, and the S3 endpoints
/// its backups name (any host, any port the `--s3-endpoint-allow` list admits); a policy that
/// listed them would either admit everything or break backups to a store it could not foresee.
/// The operator's egress is held by what it will dial instead (the S3 endpoint allow list, adopt
/// endpoints of the cluster's own namespace).
pub fn network_policy(namespace: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": { "name": NAME, "namespace": namespace, "labels": labels() },
        "spec": {
            "podSelector": { "matchLabels": { LABEL_NAME: NAME } },
            "policyTypes": ["Ingress"],
            "ingress": [{ "ports": [{ "protocol": "TCP", "port": METRICS_PORT }] }],
        },
    })
}

fn deployment(
    image: &str,
    namespace: &str,
    watch: &[&str],
    pull_secrets: &[&str],
    allowed: &Allowed,
) -> Value {
    let mut args = vec!["operate".to_string()];
    if !watch.is_empty() {
        args.extend(["--watch-namespace".to_string(), watch.join(",")]);
    }
    args.extend(allowed.operate_args());
    let selector = json!({ LABEL_NAME: NAME });
    let probe = |path: &str, period: u32| json!({ "httpGet": { "path": path, "port": "metrics" }, "periodSeconds": period, "timeoutSeconds": 2, "failureThreshold": 3 });
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": NAME, "namespace": namespace, "labels": labels() },
        "spec": {
            // One replica by default; more are safe (the engine Lease picks one leader) and only
            // shorten failover.
            "replicas": 1,
            "selector": { "matchLabels": selector },
            "template": {
                "metadata": { "labels": labels() },
                "spec": {
                    "serviceAccountName": NAME,
                    // Long enough for a pass in flight to finish and the Lease to be released.
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": { "runAsNonRoot": true, "runAsUser": security::UID, "runAsGroup": security::GID, "seccompProfile": { "type": "RuntimeDefault" } },
                    "containers": [{
                        "name": "operator",
                        "image": image,
                        "imagePullPolicy": "IfNotPresent",
                        "args": args,
                        // Its Lease identity, and whom the NetworkPolicies it writes admit
                        // (`model::OperatorPods`): its namespace and name label.
                        "env": [
                            { "name": ENV_POD_NAME, "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } },
                            { "name": ENV_POD_NAMESPACE, "valueFrom": { "fieldRef": { "fieldPath": "metadata.namespace" } } },
                            { "name": ENV_OPERATOR_NAME, "valueFrom": { "fieldRef": { "fieldPath": format!("metadata.labels['{LABEL_NAME}']") } } },
                        ],
                        "ports": [{ "name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP" }],
                        "readinessProbe": probe("/readyz", 5),
                        "livenessProbe": probe("/healthz", 10),
                        "resources": {
                            "requests": { "cpu": "50m", "memory": "64Mi" },
                            "limits": { "memory": "256Mi" },
                        },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "runAsNonRoot": true,
                            "capabilities": { "drop": ["ALL"] },
                        },
                    }],
                },
            },
        },
    });
    // Absent unless asked for: an install without Secrets keeps the field to whoever else
    // sets it (server-side apply), and the ServiceAccount's own pull Secrets still apply.
    let names: Vec<String> = pull_secrets.iter().map(|n| n.to_string()).collect();
    if let Some(refs) = super::pull_secret_refs(&names) {
        d["spec"]["template"]["spec"]["imagePullSecrets"] = json!(refs);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::GROUP;

    fn kind<'a>(all: &'a [Value], kind: &str, ns: Option<&str>) -> &'a Value {
        all.iter()
            .find(|o| o["kind"] == kind && ns.is_none_or(|ns| o["metadata"]["namespace"] == ns))
            .unwrap_or_else(|| panic!("no {kind}"))
    }

    fn allows(role: &Value, group: &str, resource: &str, verb: &str) -> bool {
        let has = |v: &Value, s: &str| {
            v.as_array()
                .is_some_and(|a| a.iter().any(|x| x == s || x == "*"))
        };
        role["rules"].as_array().unwrap().iter().any(|r| {
            has(&r["apiGroups"], group) && has(&r["resources"], resource) && has(&r["verbs"], verb)
        })
    }

    /// Every request the controller and the engine make in a pod (observe, act, status,
    /// finalizer, deletion, events, watches of owned objects; members are dialed directly).
    const ENGINE_REQUESTS: &[(&str, &str, &str)] = &[
        (GROUP, "etcdclusters", "list"),
        (GROUP, "etcdclusters", "watch"),
        (GROUP, "etcdclusters", "patch"),
        (GROUP, "etcdclusters/status", "patch"),
        ("apps", "statefulsets", "get"),
        ("apps", "statefulsets", "watch"),
        ("apps", "statefulsets", "patch"),
        ("apps", "statefulsets", "create"),
        ("", "services", "patch"),
        ("", "services", "watch"),
        ("", "configmaps", "get"),
        ("", "configmaps", "patch"),
        ("", "configmaps", "watch"),
        ("", "pods", "list"),
        ("", "pods", "delete"),
        ("", "persistentvolumeclaims", "list"),
        ("", "persistentvolumeclaims", "delete"),
        ("", "persistentvolumeclaims", "deletecollection"),
        ("policy", "poddisruptionbudgets", "get"),
        ("policy", "poddisruptionbudgets", "patch"),
        ("networking.k8s.io", "networkpolicies", "get"),
        ("networking.k8s.io", "networkpolicies", "patch"),
        ("networking.k8s.io", "networkpolicies", "delete"),
        ("events.k8s.io", "events", "create"),
        ("events.k8s.io", "events", "patch"),
        // restore: the seed's claim and restore pod (server-side apply), then the pod's deletion
        ("", "pods", "get"),
        ("", "pods", "patch"),
        ("", "persistentvolumeclaims", "patch"),
        // scheduled backups: records, their status, retention, credentials
        (GROUP, "etcdbackups", "create"),
        (GROUP, "etcdbackups", "list"),
        (GROUP, "etcdbackups", "delete"),
        (GROUP, "etcdbackups/status", "patch"),
        ("", "secrets", "get"),
        // scheduled restore drills (`backup::drill`): a pod and a NetworkPolicy created, listed
        // and deleted by name (never by collection), the verdict on the record's status
        ("", "pods", "create"),
        ("networking.k8s.io", "networkpolicies", "create"),
        ("networking.k8s.io", "networkpolicies", "list"),
        // the node of each member's pod (a member on a gone node is replaced)
        ("", "nodes", "get"),
        // a storage change: may the volumes grow in place, which class is the default
        ("storage.k8s.io", "storageclasses", "get"),
        ("storage.k8s.io", "storageclasses", "list"),
    ];

    fn list(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn watching_several_namespaces_writes_the_same_role_in_each_and_one_cluster_role_of_reads() {
        let all = manifests_watching(
            "img",
            NAMESPACE,
            &list(&["team-a", "team-b", "team-a"]),
            &[],
        );
        let a = kind(&all, "Role", Some("team-a"));
        let b = kind(&all, "Role", Some("team-b"));
        assert_eq!(a["rules"], b["rules"]);
        for (g, r, v) in ENGINE_REQUESTS {
            if !["nodes", "storageclasses"].contains(r) {
                assert!(allows(b, g, r, v), "{v} {g}/{r} not granted in team-b");
            }
        }
        assert!(
            allows(a, "coordination.k8s.io", "leases", "update"),
            "the clusters' Leases"
        );
        assert_eq!(
            all.iter().filter(|o| o["kind"] == "Role").count(),
            3,
            "team-a, team-b and the lease Role"
        );
        assert_eq!(all.iter().filter(|o| o["kind"] == "RoleBinding").count(), 3);
        let cluster_roles: Vec<&Value> = all
            .iter()
            .filter(|o| o["kind"] == "ClusterRole")
            .map(|o| &o["metadata"]["name"])
            .collect();
        assert_eq!(
            cluster_roles,
            [
                "kubectl-etcd-operator-nodes",
                "kubectl-etcd-operator-view",
                "kubectl-etcd-operator-edit",
                "kubectl-etcd-operator-metrics-reader"
            ],
            "no ClusterRole reaching namespaced objects"
        );
        let d = kind(&all, "Deployment", None);
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["args"],
            json!(["operate", "--watch-namespace", "team-a,team-b"])
        );
    }

    #[test]
    fn watching_one_namespace_grants_the_engine_there_and_nodes_alone_cluster_wide() {
        let all = manifests_watching("img", NAMESPACE, &list(&["team-a"]), &[]);
        let role = kind(&all, "Role", Some("team-a"));
        let nodes = all
            .iter()
            .find(|o| {
                o["kind"] == "ClusterRole" && o["metadata"]["name"] == format!("{NAME}-nodes")
            })
            .expect("a ClusterRole for nodes");
        for (g, r, v) in ENGINE_REQUESTS {
            let cluster_scoped = ["nodes", "storageclasses"].contains(r);
            let granted = if cluster_scoped { nodes } else { role };
            assert!(allows(granted, g, r, v), "{v} {g}/{r} not granted");
        }
        // and the reviews of a /metrics request's token
        assert!(allows(
            nodes,
            "authentication.k8s.io",
            "tokenreviews",
            "create"
        ));
        assert!(allows(
            nodes,
            "authorization.k8s.io",
            "subjectaccessreviews",
            "create"
        ));
        assert!(!allows(
            role,
            "authentication.k8s.io",
            "tokenreviews",
            "create"
        ));
        assert_eq!(nodes["rules"].as_array().unwrap().len(), 4, "{nodes}");
        assert!(
            !allows(role, "", "nodes", "get"),
            "a Role cannot grant nodes"
        );
        let binding = kind(&all, "RoleBinding", Some("team-a"));
        assert_eq!(binding["subjects"][0]["namespace"], NAMESPACE);
        // no ClusterRole reaching every namespace's objects
        assert!(
            all.iter()
                .all(|o| o["metadata"]["name"] != NAME || o["kind"] != "ClusterRole")
        );
        let d = kind(&all, "Deployment", None);
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["args"],
            json!(["operate", "--watch-namespace", "team-a"])
        );
        // watching every namespace is `manifests`
        assert_eq!(
            manifests_watching("img", NAMESPACE, &[], &[]),
            manifests("img", NAMESPACE)
        );
    }

    fn cluster_role<'a>(all: &'a [Value], name: &str) -> &'a Value {
        all.iter()
            .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no ClusterRole {name}"))
    }

    #[test]
    fn every_request_of_the_engine_is_granted_cluster_wide_or_by_the_workload_binding() {
        let all = manifests("img", NAMESPACE);
        let every = cluster_role(&all, NAME);
        let workload = cluster_role(&all, "kubectl-etcd-operator-workload");
        for (g, r, v) in ENGINE_REQUESTS {
            assert!(
                allows(every, g, r, v) || allows(workload, g, r, v),
                "neither ClusterRole grants {v} on {r} in group {g:?}"
            );
        }
        // Only the first is bound cluster-wide; the workload role by the operator, namespace by
        // namespace (`workload_binding`).
        let bindings: Vec<&Value> = all
            .iter()
            .filter(|o| o["kind"] == "ClusterRoleBinding")
            .map(|o| &o["roleRef"]["name"])
            .collect();
        assert_eq!(bindings, [NAME]);
        let b = workload_binding("team-a", "ops", NAME);
        assert_eq!(b["metadata"]["namespace"], "team-a");
        assert_eq!(b["metadata"]["name"], NAME);
        assert_eq!(b["roleRef"]["name"], workload["metadata"]["name"]);
        assert_eq!(
            b["subjects"],
            json!([{ "kind": "ServiceAccount", "name": NAME, "namespace": "ops" }])
        );
        drop(serde_json::from_value::<k8s_openapi::api::rbac::v1::RoleBinding>(b.clone()).unwrap());
    }

    #[test]
    fn cluster_wide_the_operator_reads_and_binds_but_writes_no_secret_pod_or_lease() {
        let all = manifests("img", NAMESPACE);
        let every = cluster_role(&all, NAME);
        // It reviews the tokens of /metrics requests (`operate::metrics::review`).
        assert!(allows(
            every,
            "authentication.k8s.io",
            "tokenreviews",
            "create"
        ));
        assert!(allows(
            every,
            "authorization.k8s.io",
            "subjectaccessreviews",
            "create"
        ));
        for (g, r, v) in [
            ("", "secrets", "get"),
            ("", "secrets", "create"),
            ("", "secrets", "patch"),
            ("", "pods", "create"),
            ("", "pods", "delete"),
            ("", "pods", "get"),
            ("coordination.k8s.io", "leases", "update"),
            ("coordination.k8s.io", "leases", "create"),
            ("apps", "statefulsets", "patch"),
            ("", "persistentvolumeclaims", "delete"),
        ] {
            assert!(!allows(every, g, r, v), "cluster-wide {v} {g}/{r}");
        }
        // the watches of the controller (metadata of what the engine made)
        for r in ["statefulsets", "services", "configmaps", "pods"] {
            let g = if r == "statefulsets" { "apps" } else { "" };
            assert!(
                allows(every, g, r, "watch") && allows(every, g, r, "list"),
                "{r}"
            );
        }
        // binding exactly the workload role, by name
        let bind: Vec<&Value> = every["rules"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["verbs"].as_array().unwrap().contains(&json!("bind")))
            .collect();
        assert_eq!(bind.len(), 1);
        assert_eq!(bind[0]["resources"], json!(["clusterroles"]));
        assert_eq!(
            bind[0]["resourceNames"],
            json!(["kubectl-etcd-operator-workload"])
        );
        assert!(allows(
            every,
            "rbac.authorization.k8s.io",
            "rolebindings",
            "create"
        ));
        assert!(!allows(
            every,
            "rbac.authorization.k8s.io",
            "rolebindings",
            "delete"
        ));
        assert!(!allows(
            every,
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            "create"
        ));
    }

    #[test]
    fn viewers_and_editors_of_a_namespace_get_its_etcd_objects_through_aggregation() {
        let all = manifests("img", NAMESPACE);
        let named = |n: &str| {
            all.iter()
                .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == n)
                .unwrap_or_else(|| panic!("no ClusterRole {n}"))
        };
        let view = named("kubectl-etcd-operator-view");
        assert_eq!(
            view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"],
            "true"
        );
        assert!(allows(view, GROUP, "etcdclusters", "list"));
        assert!(allows(view, GROUP, "etcdbackups", "get"));
        assert!(!allows(view, GROUP, "etcdclusters", "patch"));
        let edit = named("kubectl-etcd-operator-edit");
        assert_eq!(
            edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"],
            "true"
        );
        assert!(
            edit["metadata"]["labels"]
                .get("rbac.authorization.k8s.io/aggregate-to-view")
                .is_none()
        );
        assert!(allows(edit, GROUP, "etcdclusters", "patch"));
        assert!(!allows(edit, GROUP, "etcdbackups/status", "patch"));
        assert!(!allows(edit, GROUP, "etcdclusters/status", "update"));
        // The operator pod runs under the restricted standard's seccomp profile.
        let dep = kind(&all, "Deployment", None);
        assert_eq!(
            dep["spec"]["template"]["spec"]["securityContext"]["seccompProfile"]["type"],
            "RuntimeDefault"
        );
    }

    #[test]
    fn the_workload_role_is_least_privilege() {
        let all = manifests("img", NAMESPACE);
        let role = cluster_role(&all, "kubectl-etcd-operator-workload");
        // Secrets are read one by name (spec.backup.credentialsSecret), never enumerated; the
        // only ones written are managed TLS's, by name (server-side apply), never deleted (the
        // garbage collector does, through their owner reference).
        assert!(!allows(role, "", "secrets", "list"));
        assert!(!allows(role, "", "secrets", "watch"));
        assert!(!allows(role, "", "secrets", "delete"));
        assert!(!allows(role, "", "secrets", "update"));
        assert!(!allows(role, "", "pods/exec", "create"));
        assert!(!allows(role, GROUP, "etcdclusters", "delete"));
        // Member pods come from the StatefulSet; the pods the engine creates are a restore pod and
        // drill pods, neither attached to.
        assert!(!allows(role, "", "pods/attach", "create"));
        // The clusters' Leases live beside them, so wherever clusters are; never listed.
        assert!(!allows(role, "coordination.k8s.io", "leases", "list"));
        assert!(allows(role, "coordination.k8s.io", "leases", "update"));
        for o in all.iter().filter(|o| o["kind"] == "ClusterRole") {
            let text = serde_json::to_string(o).unwrap();
            assert!(!text.contains("\"*\""), "no wildcards: {text}");
        }
    }

    #[test]
    fn the_lease_role_names_the_leader_lease_in_the_operators_own_namespace() {
        let all = manifests("img", "ops");
        let role = kind(&all, "Role", Some("ops"));
        let rules = role["rules"].as_array().unwrap();
        assert_eq!(
            rules[0],
            json!({ "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "update"], "resourceNames": ["kubectl-etcd-operator-leader"] })
        );
        // RBAC cannot limit a create by name: the admission policy admits the leader's alone
        assert_eq!(
            rules[1],
            json!({ "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"] })
        );
        assert_eq!(rules.len(), 2);
        assert_eq!(all.iter().filter(|o| o["kind"] == "Role").count(), 1);
        let namespaces: Vec<&Value> = all
            .iter()
            .filter(|o| o["kind"] == "Namespace")
            .map(|o| &o["metadata"]["name"])
            .collect();
        assert_eq!(namespaces, ["ops"], "nothing in {NAMESPACE}");
        // The project's namespace enforces the restricted standard; one it shares only warns.
        let labels = &all[0]["metadata"]["labels"];
        assert_eq!(labels["pod-security.kubernetes.io/enforce"], Value::Null);
        assert_eq!(labels["pod-security.kubernetes.io/warn"], "restricted");
        assert_eq!(
            namespace_object(NAMESPACE)["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
            "restricted"
        );
        let binding = kind(&all, "RoleBinding", Some("ops"));
        assert_eq!(binding["subjects"][0]["namespace"], "ops");
        assert!(all.iter().all(|o| o["metadata"]["namespace"] != NAMESPACE));
    }

    #[test]
    fn the_operator_pods_admit_the_metrics_port_alone_and_keep_their_egress() {
        let all = manifests("img", "ops");
        let p = kind(&all, "NetworkPolicy", Some("ops"));
        assert_eq!(p["spec"]["policyTypes"], json!(["Ingress"]));
        assert_eq!(
            p["spec"]["ingress"],
            json!([{ "ports": [{ "protocol": "TCP", "port": METRICS_PORT }] }])
        );
        // it selects the operator's pods, and the probes' port is the one it admits
        let d = kind(&all, "Deployment", Some("ops"));
        for (k, v) in p["spec"]["podSelector"]["matchLabels"].as_object().unwrap() {
            assert_eq!(&d["spec"]["template"]["metadata"]["labels"][k], v);
        }
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["ports"][0]["containerPort"], METRICS_PORT);
        assert_eq!(c["livenessProbe"]["httpGet"]["port"], c["ports"][0]["name"]);
        drop(
            serde_json::from_value::<k8s_openapi::api::networking::v1::NetworkPolicy>(p.clone())
                .unwrap(),
        );
    }

    #[test]
    fn a_metrics_reader_role_grants_get_of_metrics_and_nothing_else_in_every_scope() {
        for watch in [vec![], list(&["team-a"])] {
            let all = manifests_watching("img", "ops", &watch, &[]);
            let reader = cluster_role(&all, "kubectl-etcd-operator-metrics-reader");
            assert_eq!(
                reader["rules"],
                json!([{ "nonResourceURLs": ["/metrics"], "verbs": ["get"] }])
            );
            // nobody is bound to it by the install: whoever scrapes is, by its owner
            assert!(
                all.iter()
                    .all(|o| o["roleRef"]["name"] != reader["metadata"]["name"])
            );
        }
    }

    #[test]
    fn the_admission_policy_of_the_operator_ships_with_it() {
        for watch in [vec![], list(&["team-a"])] {
            let all = manifests_watching("img", "ops", &watch, &[]);
            let policy = kind(&all, "ValidatingAdmissionPolicy", None);
            assert_eq!(policy["metadata"]["name"], NAME);
            assert_eq!(
                policy["spec"]["matchConditions"][0]["expression"],
                "request.userInfo.username == 'system:serviceaccount:ops:kubectl-etcd-operator'"
            );
            let binding = kind(&all, "ValidatingAdmissionPolicyBinding", None);
            assert_eq!(binding["spec"]["policyName"], NAME);
        }
    }

    #[test]
    fn pull_secrets_reach_the_operator_pod_once_each_and_only_when_named() {
        let deployment = |secrets: &[&str]| {
            let secrets: Vec<String> = secrets.iter().map(|s| s.to_string()).collect();
            kind(
                &manifests_watching("img", NAMESPACE, &[], &secrets),
                "Deployment",
                None,
            )
            .clone()
        };
        let pod = |d: &Value| d["spec"]["template"]["spec"].clone();
        assert!(pod(&deployment(&[])).get("imagePullSecrets").is_none());
        assert_eq!(
            pod(&deployment(&["regcred", "mirror", "regcred"]))["imagePullSecrets"],
            json!([{ "name": "regcred" }, { "name": "mirror" }])
        );
    }

    #[test]
    fn the_deployment_runs_operate_as_a_locked_down_non_root_pod() {
        let all = manifests("example.com/kubectl-etcd:1.0", NAMESPACE);
        assert_eq!(all.iter().filter(|o| o["kind"] == "Namespace").count(), 1);
        let d = kind(&all, "Deployment", Some(NAMESPACE));
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(c["image"], "example.com/kubectl-etcd:1.0");
        assert_eq!(c["args"], json!(["operate"]));
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c["env"][0]["name"], ENV_POD_NAME);
        assert_eq!(
            c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.name"
        );
        assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
        assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
        assert_eq!(c["ports"][0]["containerPort"], METRICS_PORT);
        assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(c["securityContext"]["runAsNonRoot"], true);
        let selector = &d["spec"]["selector"]["matchLabels"];
        for (k, v) in selector.as_object().unwrap() {
            assert_eq!(
                &d["spec"]["template"]["metadata"]["labels"][k], v,
                "the selector matches the pod labels"
            );
        }
    }

    #[test]
    fn the_deployment_tells_the_operator_its_namespace_and_name_for_the_network_policies() {
        let all = manifests("img", "ops");
        let d = kind(&all, "Deployment", Some("ops"));
        let env = &d["spec"]["template"]["spec"]["containers"][0]["env"];
        let field = |name: &str| {
            env.as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == name)
                .map(|e| e["valueFrom"]["fieldRef"]["fieldPath"].clone())
                .unwrap_or_else(|| panic!("no {name} in {env}"))
        };
        assert_eq!(field(ENV_POD_NAMESPACE), "metadata.namespace");
        // The label the downward API reads is one the pod carries, with the operator's name.
        assert_eq!(
            field(ENV_OPERATOR_NAME),
            format!("metadata.labels['{LABEL_NAME}']")
        );
        assert_eq!(
            d["spec"]["template"]["metadata"]["labels"][LABEL_NAME],
            NAME
        );
    }

    #[test]
    fn every_manifest_parses_as_its_kubernetes_type() {
        use k8s_openapi::api::{
            admissionregistration::v1::ValidatingAdmissionPolicy,
            apps::v1::Deployment,
            rbac::v1::{ClusterRole, Role},
        };
        let all = manifests("img", "ops");
        for o in &all {
            match o["kind"].as_str().unwrap() {
                "Deployment" => drop(serde_json::from_value::<Deployment>(o.clone()).unwrap()),
                "ClusterRole" => drop(serde_json::from_value::<ClusterRole>(o.clone()).unwrap()),
                "Role" => drop(serde_json::from_value::<Role>(o.clone()).unwrap()),
                "ValidatingAdmissionPolicy" => {
                    drop(serde_json::from_value::<ValidatingAdmissionPolicy>(o.clone()).unwrap())
                }
                _ => {}
            }
        }
    }
}

/// With `--features e2e` (tests/run-all.sh), against $KUBECONFIG: the API server
/// accepts every manifest (server-side dry run: nothing is created but the test namespace).
#[cfg(all(test, feature = "e2e"))]
mod live {
    use super::*;
    use kube::api::{
        Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams,
    };

    #[tokio::test]
    // Runs with --features e2e (tests/run-all.sh), against $KUBECONFIG.
    async fn the_api_server_accepts_the_manifests() {
        let client = kube::Client::try_default().await.unwrap();
        let ns = format!("ke-manifests-{}", std::process::id());
        let nss = crate::testing::create_namespace(&client, &ns).await;
        let mut failures = vec![];
        for mut obj in manifests("testbed.local/kubectl-etcd:dev", &ns) {
            // The lease namespace may not exist here: validate its objects in the test namespace.
            if obj["metadata"]["namespace"] == NAMESPACE {
                obj["metadata"]["namespace"] = ns.clone().into();
            }
            let (group, version) = match obj["apiVersion"].as_str().unwrap().split_once('/') {
                Some((g, v)) => (g.to_string(), v.to_string()),
                None => (
                    String::new(),
                    obj["apiVersion"].as_str().unwrap().to_string(),
                ),
            };
            let kind = obj["kind"].as_str().unwrap().to_string();
            let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(&group, &version, &kind));
            let name = obj["metadata"]["name"].as_str().unwrap().to_string();
            let api: Api<DynamicObject> = match obj["metadata"]["namespace"].as_str() {
                Some(n) => Api::namespaced_with(client.clone(), n, &ar),
                None => Api::all_with(client.clone(), &ar),
            };
            let pp = PatchParams::apply("kubectl-etcd-test").force().dry_run();
            if let Err(e) = api.patch(&name, &pp, &Patch::Apply(&obj)).await {
                failures.push(format!("{kind} {name}: {e}"));
            }
        }
        let _ = nss.delete(&ns, &DeleteParams::default()).await;
        assert!(failures.is_empty(), "{failures:#?}");
    }
}
