//! What the operator asks of the API server, kind by kind: the one table its RBAC is built from
//! (`install` turns it into the ClusterRole, or a Role per watched namespace plus a ClusterRole of
//! the cluster-scoped reads, and the lease Role), and what a CLI user needs (`cli_user`). Groups and resources come from
//! the Rust types the code calls the API with, never from strings typed here; the tests of
//! `engine::act` (every kind `act` writes) and `engine::scripted` (every request a pass and every
//! step without etcd makes, recorded) hold the table against what the engine does. Pure.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::Resource;

use crate::api::{EtcdBackup, EtcdCluster};

pub const GET: &str = "get";
pub const LIST: &str = "list";
pub const WATCH: &str = "watch";
pub const CREATE: &str = "create";
pub const PATCH: &str = "patch";
pub const UPDATE: &str = "update";
pub const DELETE: &str = "delete";
pub const DELETECOLLECTION: &str = "deletecollection";

/// The objects the engine owns: observed (get, and list/watch by the controller), written by
/// server-side apply (patch; create for the first write) and deleted.
const OWNED: &[&str] = &[GET, LIST, WATCH, CREATE, PATCH, UPDATE, DELETE];

/// Verbs on one resource (or subresource, `pods/eviction`) of one API group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub group: String,
    pub resource: String,
    pub verbs: &'static [&'static str],
    /// The objects it is limited to (RBAC `resourceNames`); empty: every object. A `create`
    /// cannot be limited by name (the authorizer is not told it), so rules of names never grant
    /// one.
    pub names: Vec<String>,
}

impl Access {
    /// Whether this grants `verb` on `resource` of `group`.
    pub fn grants(&self, group: &str, resource: &str, verb: &str) -> bool {
        self.group == group && self.resource == resource && self.verbs.contains(&verb)
    }
}

/// The group and resource (plural) of `K`, from its type.
pub fn resource_of<K: Resource<DynamicType = ()>>() -> (String, String) {
    (K::group(&()).into_owned(), K::plural(&()).into_owned())
}

fn of<K: Resource<DynamicType = ()>>(verbs: &'static [&'static str]) -> Access {
    let (group, resource) = resource_of::<K>();
    Access {
        group,
        resource,
        verbs,
        names: Vec::new(),
    }
}

fn sub<K: Resource<DynamicType = ()>>(sub: &str, verbs: &'static [&'static str]) -> Access {
    let (group, resource) = resource_of::<K>();
    Access {
        group,
        resource: format!("{resource}/{sub}"),
        verbs,
        names: Vec::new(),
    }
}

fn named<K: Resource<DynamicType = ()>>(verbs: &'static [&'static str], names: &[&str]) -> Access {
    Access {
        names: names.iter().map(|n| n.to_string()).collect(),
        ..of::<K>(verbs)
    }
}

/// In every namespace the operator watches (the ClusterRole).
pub fn watched_namespaces() -> Vec<Access> {
    vec![
        // The controller's watch, the finalizer (a patch) and the engine's intent.
        of::<EtcdCluster>(&[GET, LIST, WATCH, PATCH, UPDATE]),
        sub::<EtcdCluster>("status", &[GET, PATCH, UPDATE]),
        sub::<EtcdCluster>("finalizers", &[UPDATE]),
        // Every kind `act` writes (`engine::act::Object`).
        of::<ConfigMap>(OWNED),
        of::<Service>(OWNED),
        of::<StatefulSet>(OWNED),
        // policy/v1.
        of::<PodDisruptionBudget>(OWNED),
        // networking.k8s.io/v1: the cluster's NetworkPolicy (`spec.networkPolicy`).
        of::<NetworkPolicy>(OWNED),
        // Member volumes are the StatefulSet's; the engine applies a restored seed's claim and
        // deletes removed or wiped members' claims (all of them with --delete-data).
        of::<PersistentVolumeClaim>(&[GET, LIST, WATCH, CREATE, PATCH, DELETE, DELETECOLLECTION]),
        // Member pods are the StatefulSet's; the engine applies only a restore pod, creates and
        // deletes restore drills' pods (`spec.backup.drill`; their NetworkPolicy is among the
        // owned kinds above), and deletes or evicts members to restart them.
        of::<Pod>(&[GET, LIST, WATCH, CREATE, PATCH, DELETE]),
        sub::<Pod>("eviction", &[CREATE]),
        // The restore pod's last log line while its download is tried again: why the restore
        // waits (optional: without it the wait does not say).
        sub::<Pod>("log", &[GET]),
        // A recovery's fence: the client Service's endpoints must be gone before the survivor's
        // snapshot (`engine::recover`).
        of::<k8s_openapi::api::discovery::v1::EndpointSlice>(&[LIST]),
        // No `pods/portforward`: the operator in a pod dials members directly; only the CLI
        // (and `operate` from a workstation, with its user's rights) port-forwards.
        // Scheduled backups: their records, and retention deleting them; a recovery's marks.
        of::<EtcdBackup>(OWNED),
        sub::<EtcdBackup>("status", &[GET, PATCH, UPDATE]),
        // S3 credentials named by spec.backup.credentialsSecret and the client certificate of
        // spec.tls.clientSecret: read by name, never listed. Managed TLS's CA and certificates
        // (`engine::pki`): written by server-side apply.
        of::<Secret>(&[GET, CREATE, PATCH]),
        // Mode certManager: cert-manager's Certificate of each leaf (cert-manager.io; the role
        // grants it whether or not cert-manager is installed).
        of::<crate::objects::cert_manager::Certificate>(OWNED),
        // The nodes of member pods (cluster-scoped; the ClusterRoleBinding grants it): a member
        // on a node that is deleted, shut down or long NotReady is replaced. Read by name only.
        of::<Node>(&[GET]),
        // The StorageClass of a storage change (cluster-scoped, like Nodes): whether the member
        // volumes may grow in place (`allowVolumeExpansion`), and which class is the default.
        of::<StorageClass>(&[GET, LIST]),
        // The Events of every step (kube's recorder writes events.k8s.io; core for old readers).
        // Core events are also listed while a member pod is missing: the StatefulSet
        // controller's `FailedCreate` says why (optional: without it the waits do not say).
        of::<k8s_openapi::api::events::v1::Event>(&[CREATE, PATCH]),
        of::<k8s_openapi::api::core::v1::Event>(&[CREATE, PATCH, LIST]),
        // The clusters' Leases live beside them (`lease`): taken, renewed, released, and
        // deleted with their cluster.
        of::<Lease>(LEASES),
        // Who may read the operator's `/metrics` (`operate::metrics::review`): the token's
        // review, then its user's access to the URL (cluster-scoped, created, never stored).
        of::<TokenReview>(&[CREATE]),
        of::<SubjectAccessReview>(&[CREATE]),
    ]
}

/// Taking, renewing, releasing and removing a Lease (`lease::Lock`).
const LEASES: &[&str] = &[GET, CREATE, UPDATE, PATCH, DELETE];

/// In the operator's own namespace only (the lease Role): its leader Lease, by name
/// (`lease::operator_leader_lease`), and the creation of it (which RBAC cannot limit by name; the
/// admission policy, `objects::admission`, admits no other Lease of the operator's there).
pub fn operator_namespace(leader: &str) -> Vec<Access> {
    vec![
        named::<Lease>(&[GET, UPDATE], &[leader]),
        of::<Lease>(&[CREATE]),
    ]
}

/// The verb that lets a subject bind a role whose rights it does not hold itself.
pub const BIND: &str = "bind";

/// What the operator watching every namespace holds in every namespace (the ClusterRole bound
/// cluster-wide): its own resources, the reads its watches make (the metadata of what the
/// engine made, `operate::triggered_by_what_it_made`), the cluster-scoped reads, and the
/// binding of `workload_role` (`workload`) in a namespace where it serves a cluster
/// (`install::workload_binding`). Nothing here writes or reads a Secret, creates a pod or
/// writes a Lease: those come with the binding, namespace by namespace.
pub fn every_namespace(workload_role: &str) -> Vec<Access> {
    let (g, r) = resource_of::<EtcdCluster>();
    let mut table: Vec<Access> = watched_namespaces()
        .into_iter()
        .filter(|a| a.group == g && a.resource.split('/').next() == Some(r.as_str()))
        .collect();
    table.extend([
        of::<StatefulSet>(&[LIST, WATCH]),
        of::<Service>(&[LIST, WATCH]),
        of::<ConfigMap>(&[LIST, WATCH]),
        of::<Pod>(&[LIST, WATCH]),
    ]);
    table.extend(by_scope(watched_namespaces()).1);
    table.extend([
        of::<RoleBinding>(&[GET, CREATE, PATCH]),
        named::<ClusterRole>(&[BIND], &[workload_role]),
    ]);
    table
}

/// What the operator watching every namespace holds in a namespace once it serves a cluster
/// there (a ClusterRole bound by a RoleBinding the operator writes, `install::workload_binding`):
/// the namespaced rights of `watched_namespaces` less those `every_namespace` grants anyway.
pub fn workload() -> Vec<Access> {
    let (g, r) = resource_of::<EtcdCluster>();
    by_scope(watched_namespaces())
        .0
        .into_iter()
        .filter(|a| !(a.group == g && a.resource.split('/').next() == Some(r.as_str())))
        .collect()
}

/// Whether `a` is on a cluster-scoped resource, which only a ClusterRole can grant: Nodes (the
/// node of a member that does not answer) and StorageClasses (a storage change), read only, and
/// the reviews of a `/metrics` request's token.
pub fn is_cluster_scoped(a: &Access) -> bool {
    [
        resource_of::<Node>(),
        resource_of::<StorageClass>(),
        resource_of::<TokenReview>(),
        resource_of::<SubjectAccessReview>(),
    ]
    .iter()
    .any(|(g, r)| (a.group.as_str(), a.resource.as_str()) == (g.as_str(), r.as_str()))
}

/// `table` split into what a Role in one namespace can grant and what needs a ClusterRole.
pub fn by_scope(table: Vec<Access>) -> (Vec<Access>, Vec<Access>) {
    table.into_iter().partition(|a| !is_cluster_scoped(a))
}

/// What a `kubectl etcd` user needs in a namespace to create, scale, upgrade, back up and delete
/// the clusters there (bind it with a RoleBinding in that namespace; nothing is needed in the
/// operator's): the CLI runs the same engine as the operator, so the engine's namespaced rights,
/// plus creating and deleting EtcdClusters and EtcdBackups, and port-forwarding to members
/// (the CLI dials them through the API server). Cluster-scoped reads are optional: without
/// Nodes the engine concludes nothing from them, without the CRD the binary's version check is
/// skipped; StorageClasses are read only by a storage change.
pub fn cli_user() -> Vec<Access> {
    let (mut table, _) = by_scope(watched_namespaces());
    for a in &mut table {
        if (a.group.as_str(), a.resource.as_str()) == (crate::api::GROUP, "etcdclusters")
            || (a.group.as_str(), a.resource.as_str()) == (crate::api::GROUP, "etcdbackups")
        {
            a.verbs = CLI_OBJECTS;
        }
    }
    table.push(sub::<Pod>("portforward", &[CREATE, GET]));
    table
}

/// A CLI user's verbs on EtcdClusters and EtcdBackups: everything.
const CLI_OBJECTS: &[&str] = &[GET, LIST, WATCH, CREATE, PATCH, UPDATE, DELETE];

/// The RBAC rules of `table`, one per resource.
pub fn rules(table: &[Access]) -> Vec<serde_json::Value> {
    table
        .iter()
        .map(|a| {
            let mut rule = serde_json::json!({
                "apiGroups": [a.group],
                "resources": [a.resource],
                "verbs": a.verbs,
            });
            if !a.names.is_empty() {
                rule["resourceNames"] = serde_json::json!(a.names);
            }
            rule
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_resources_come_from_the_types() {
        let t = watched_namespaces();
        assert!(t.iter().any(|a| a.grants("apps", "statefulsets", PATCH)));
        assert!(t.iter().any(|a| a.grants("", "pods/eviction", CREATE)));
        assert!(
            t.iter()
                .any(|a| a.grants(crate::api::GROUP, "etcdclusters/status", PATCH))
        );
        assert!(
            t.iter()
                .any(|a| a.grants("policy", "poddisruptionbudgets", GET))
        );
        assert!(
            operator_namespace("x")
                .iter()
                .all(|a| a.group == "coordination.k8s.io")
        );
        assert!(
            t.iter()
                .any(|a| a.grants("networking.k8s.io", "networkpolicies", DELETE))
        );
    }

    #[test]
    fn the_in_cluster_role_cannot_port_forward() {
        assert!(
            !watched_namespaces()
                .iter()
                .any(|a| a.resource == "pods/portforward"),
            "only the CLI port-forwards, with its user's own rights"
        );
    }

    #[test]
    fn nodes_storage_classes_and_the_metrics_reviews_alone_need_a_cluster_role() {
        let (namespaced, cluster) = by_scope(watched_namespaces());
        let names: Vec<&str> = cluster.iter().map(|a| a.resource.as_str()).collect();
        assert_eq!(
            names,
            [
                "nodes",
                "storageclasses",
                "tokenreviews",
                "subjectaccessreviews"
            ]
        );
        // Read only, but for the reviews, which the API server answers and stores nowhere.
        assert!(
            cluster.iter().all(|a| a.resource.ends_with("reviews")
                || a.verbs.iter().all(|v| [GET, LIST].contains(v))),
            "read only: {cluster:?}"
        );
        assert!(
            cluster
                .iter()
                .filter(|a| a.resource.ends_with("reviews"))
                .all(|a| a.verbs == [CREATE])
        );
        assert!(
            namespaced
                .iter()
                .any(|a| a.grants("coordination.k8s.io", "leases", CREATE))
        );
        assert!(namespaced.iter().all(|a| !is_cluster_scoped(a)));
    }

    #[test]
    fn a_cli_user_needs_the_engine_port_forwarding_and_its_leases_in_its_namespace_only() {
        let t = cli_user();
        for (g, r, v) in [
            (crate::api::GROUP, "etcdclusters", CREATE),
            (crate::api::GROUP, "etcdclusters", DELETE),
            (crate::api::GROUP, "etcdbackups", CREATE),
            ("", "pods/portforward", CREATE),
            ("apps", "statefulsets", PATCH),
            ("coordination.k8s.io", "leases", UPDATE),
        ] {
            assert!(t.iter().any(|a| a.grants(g, r, v)), "{v} {g}/{r}");
        }
        assert!(
            t.iter().all(|a| !is_cluster_scoped(a)),
            "a Role can grant all of it"
        );
    }

    #[test]
    fn each_resource_has_one_rule() {
        for t in [watched_namespaces(), cli_user()] {
            for a in &t {
                assert_eq!(
                    t.iter()
                        .filter(|b| (&b.group, &b.resource) == (&a.group, &a.resource))
                        .count(),
                    1,
                    "{a:?}"
                );
            }
        }
    }

    #[test]
    fn every_namespace_writes_only_etcd_clusters_and_the_binding_of_its_workload_role() {
        let t = every_namespace("op-workload");
        for a in &t {
            let writes = a
                .verbs
                .iter()
                .any(|v| [CREATE, PATCH, UPDATE, DELETE].contains(v));
            let etcd = a.group == crate::api::GROUP && a.resource.starts_with("etcdclusters");
            let binding = a.resource == "rolebindings";
            // A review is asked, not written: the API server stores nothing.
            let review = ["tokenreviews", "subjectaccessreviews"].contains(&a.resource.as_str());
            assert!(
                !writes || etcd || binding || review,
                "cluster-wide write: {a:?}"
            );
            assert!(a.resource != "secrets" && a.resource != "leases", "{a:?}");
        }
        let bind: Vec<&Access> = t.iter().filter(|a| a.verbs.contains(&BIND)).collect();
        assert_eq!(bind.len(), 1);
        assert_eq!(bind[0].resource, "clusterroles");
        assert_eq!(bind[0].names, ["op-workload"]);
    }

    #[test]
    fn the_workload_role_and_every_namespace_together_are_the_engines_table() {
        let (every, work) = (every_namespace("w"), workload());
        for a in watched_namespaces() {
            for v in a.verbs {
                assert!(
                    every
                        .iter()
                        .chain(&work)
                        .any(|b| b.grants(&a.group, &a.resource, v)),
                    "{v} {}/{} granted by neither",
                    a.group,
                    a.resource
                );
            }
        }
        assert!(
            work.iter().all(|a| !is_cluster_scoped(a)),
            "a Role-like table"
        );
        assert!(work.iter().any(|a| a.grants("", "secrets", CREATE)));
    }

    #[test]
    fn a_rule_of_names_carries_them_and_one_without_does_not() {
        let rules = rules(&operator_namespace("op-leader"));
        assert_eq!(rules[0]["resourceNames"], serde_json::json!(["op-leader"]));
        assert_eq!(rules[0]["verbs"], serde_json::json!([GET, UPDATE]));
        assert!(rules[1].get("resourceNames").is_none());
        assert_eq!(rules[1]["verbs"], serde_json::json!([CREATE]));
    }
}
