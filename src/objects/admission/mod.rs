//! The operator's admission policy: a ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1)
//! and its binding, shipped with the operator (`install`, the chart), that hold the operator's
//! ServiceAccount to what the engine writes, whatever its RBAC says:
//!
//! - nothing in `kube-system`, `kube-public`, `kube-node-lease`, nor in a namespace labelled
//!   `LABEL_REFUSE_OPERATOR=true`;
//! - Secrets only of managed TLS's names and types (`<cluster>-tls-ca`, Opaque;
//!   `<cluster>-tls-{server,peer,client}`, kubernetes.io/tls), with the engine's label;
//! - Leases only its own: its leader Lease in its namespace, the clusters' engine Leases
//!   (`etcdcluster.<namespace>.<name>`) beside them;
//! - RoleBindings only its own binding of its workload role (`access::workload`) to itself, never
//!   in its own namespace or a protected one, never deleted.
//!
//! Pure: values out, no client. The CEL is checked by the API server (tests/e2e_privilege.rs).

use serde_json::{Value, json};

pub mod spec;

use crate::keys::install::{leader_lease, service_account_user, workload_role};
use crate::keys::{CLUSTER_LEASE_PREFIX, LABEL_MANAGED_BY, MANAGER_ENGINE};
use crate::model::pki::CertRole;

/// The namespaces of Kubernetes itself, where the operator never writes.
pub const PROTECTED_NAMESPACES: [&str; 3] = ["kube-system", "kube-public", "kube-node-lease"];

/// A namespace labelled with this key and value `true` is refused to the operator: it writes
/// nothing there (its clusters there are not served).
pub use crate::keys::LABEL_REFUSE_OPERATOR;

/// What a Secret name may end in, and the type the engine gives it (`objects::certs`).
fn secret_kinds() -> Vec<(String, &'static str)> {
    let mut out = vec![(format!("-tls-{}", CertRole::Ca.as_str()), "Opaque")];
    out.extend(
        CertRole::LEAVES
            .iter()
            .map(|r| (format!("-tls-{}", r.as_str()), "kubernetes.io/tls")),
    );
    out
}

/// A CEL string literal of `s` (names, label keys and types: no quote or backslash in them).
fn lit(s: &str) -> String {
    debug_assert!(!s.contains(['\'', '\\']), "{s}");
    format!("'{s}'")
}

/// One validation: `expression` must hold, else `message`.
fn rule(expression: String, message: String) -> Value {
    json!({ "expression": expression, "message": message, "reason": "Forbidden" })
}

/// The validations, in order; `who` names the operator in the messages.
fn validations(namespace: &str, operator: &str) -> Vec<Value> {
    let who = format!("the kubectl-etcd operator {namespace}/{operator}");
    let protected: Vec<String> = PROTECTED_NAMESPACES.iter().map(|n| lit(n)).collect();
    let label = lit(LABEL_REFUSE_OPERATOR);
    let is = |group: &str, resource: &str| {
        format!(
            "(request.resource.group == {} && request.resource.resource == {})",
            lit(group),
            lit(resource)
        )
    };
    let secret_ok = secret_kinds()
        .iter()
        .map(|(suffix, ty)| {
            format!(
                "(request.name.matches({}) && (request.operation == 'DELETE' || object.type == {}))",
                lit(&format!("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?{suffix}$")),
                lit(ty)
            )
        })
        .collect::<Vec<_>>()
        .join(" || ");
    let labelled = format!(
        "(request.operation == 'DELETE' || (has(object.metadata.labels) && {m} in object.metadata.labels && object.metadata.labels[{m}] == {v}))",
        m = lit(LABEL_MANAGED_BY),
        v = lit(MANAGER_ENGINE)
    );
    let binding_ok = format!(
        "request.operation != 'DELETE' && request.namespace != {ns} && request.name == {name} \
         && object.roleRef.kind == 'ClusterRole' && object.roleRef.name == {role} \
         && size(object.subjects) == 1 && object.subjects[0].kind == 'ServiceAccount' \
         && object.subjects[0].name == {name} && object.subjects[0].namespace == {ns}",
        ns = lit(namespace),
        name = lit(operator),
        role = lit(&workload_role(operator)),
    );
    vec![
        rule(
            format!("!(request.namespace in [{}])", protected.join(", ")),
            format!(
                "{who} writes nothing in {}: they belong to Kubernetes itself (admission policy {operator})",
                PROTECTED_NAMESPACES.join(", ")
            ),
        ),
        rule(
            format!(
                "request.namespace == '' || !has(namespaceObject.metadata.labels) || !({label} in namespaceObject.metadata.labels) || namespaceObject.metadata.labels[{label}] != 'true'"
            ),
            format!(
                "{who} writes nothing in a namespace labelled {LABEL_REFUSE_OPERATOR}=true; remove the label to let it serve the clusters there (admission policy {operator})"
            ),
        ),
        rule(
            format!("!{} || (({secret_ok}) && {labelled})", is("", "secrets")),
            format!(
                "{who} writes only the Secrets of managed TLS: <cluster>-tls-ca (Opaque) and <cluster>-tls-server, -peer, -client (kubernetes.io/tls), labelled {LABEL_MANAGED_BY}={MANAGER_ENGINE} (admission policy {operator})"
            ),
        ),
        rule(
            format!(
                "!{} || (request.namespace == {} && request.name == {}) || request.name.startsWith({} + request.namespace + '.')",
                is("coordination.k8s.io", "leases"),
                lit(namespace),
                lit(&leader_lease(operator)),
                lit(CLUSTER_LEASE_PREFIX)
            ),
            format!(
                "{who} writes only its own Leases: {namespace}/{} and each cluster's {CLUSTER_LEASE_PREFIX}<namespace>.<name> beside it (admission policy {operator})",
                leader_lease(operator)
            ),
        ),
        rule(
            format!(
                "!{} || ({binding_ok})",
                is("rbac.authorization.k8s.io", "rolebindings")
            ),
            format!(
                "{who} writes only its RoleBinding {operator} of ClusterRole {} to itself, outside its own namespace, and deletes none (admission policy {operator})",
                workload_role(operator)
            ),
        ),
    ]
}

/// The policy and its binding for operator install `operator` whose ServiceAccount is in
/// `namespace` (both named `operator`: cluster-scoped, one per install).
pub fn manifests(namespace: &str, operator: &str, labels: &Value) -> Vec<Value> {
    policy_and_binding(
        operator,
        labels,
        json!({
            "matchConstraints": {
                "resourceRules": [{
                    "apiGroups": ["*"], "apiVersions": ["*"],
                    "operations": ["CREATE", "UPDATE", "DELETE"],
                    "resources": ["*/*"],
                }],
            },
            "matchConditions": [{
                "name": "the-operator",
                "expression": format!("request.userInfo.username == {}", lit(&service_account_user(namespace, operator))),
            }],
            "validations": validations(namespace, operator),
        }),
        json!({}),
    )
}

/// ValidatingAdmissionPolicy `name` of `spec`, failing closed, and its binding `name` (of
/// `binding`'s spec besides), denying what it refuses.
fn policy_and_binding(
    name: &str,
    labels: &Value,
    mut spec: Value,
    mut binding: Value,
) -> Vec<Value> {
    let meta = json!({ "name": name, "labels": labels });
    spec["failurePolicy"] = json!("Fail");
    binding["policyName"] = json!(name);
    binding["validationActions"] = json!(["Deny"]);
    vec![
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": meta,
            "spec": spec,
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": meta,
            "spec": binding,
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Value {
        manifests("ops", "etcd-op", &json!({})).remove(0)
    }

    #[test]
    fn the_policy_matches_the_operators_service_account_alone() {
        let p = policy();
        assert_eq!(
            p["spec"]["matchConditions"][0]["expression"],
            "request.userInfo.username == 'system:serviceaccount:ops:etcd-op'"
        );
        assert_eq!(p["spec"]["failurePolicy"], "Fail");
        let rules = &p["spec"]["matchConstraints"]["resourceRules"][0];
        assert_eq!(rules["resources"], json!(["*/*"]));
        assert_eq!(rules["operations"], json!(["CREATE", "UPDATE", "DELETE"]));
        let binding = manifests("ops", "etcd-op", &json!({})).remove(1);
        assert_eq!(binding["spec"]["policyName"], "etcd-op");
        assert_eq!(binding["spec"]["validationActions"], json!(["Deny"]));
    }

    #[test]
    fn each_rule_names_the_operator_and_the_policy() {
        let p = policy();
        let all = p["spec"]["validations"].as_array().unwrap();
        assert_eq!(all.len(), 5);
        for v in all {
            let m = v["message"].as_str().unwrap();
            assert!(m.contains("operator ops/etcd-op"), "{m}");
            assert!(m.ends_with("(admission policy etcd-op)"), "{m}");
        }
        let text = p.to_string();
        for ns in PROTECTED_NAMESPACES {
            assert!(text.contains(&format!("'{ns}'")), "{ns}");
        }
    }

    #[test]
    fn secrets_are_managed_tls_names_with_their_types_and_leases_the_operators_own() {
        let p = policy();
        let expr = |i: usize| {
            p["spec"]["validations"][i]["expression"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let secrets = expr(2);
        for role in ["ca", "server", "peer", "client"] {
            assert!(secrets.contains(&format!("-tls-{role}$")), "{secrets}");
        }
        assert!(secrets.contains("object.type == 'Opaque'"));
        assert!(secrets.contains("object.type == 'kubernetes.io/tls'"));
        assert!(secrets.contains(LABEL_MANAGED_BY));
        let leases = expr(3);
        assert!(
            leases.contains("request.name == 'etcd-op-leader'"),
            "{leases}"
        );
        assert!(leases.contains("request.namespace == 'ops'"), "{leases}");
        assert!(
            leases.contains("'etcdcluster.' + request.namespace + '.'"),
            "{leases}"
        );
        let bindings = expr(4);
        assert!(
            bindings.contains("object.roleRef.name == 'etcd-op-workload'"),
            "{bindings}"
        );
        assert!(
            bindings.contains("request.namespace != 'ops'"),
            "{bindings}"
        );
    }

    #[test]
    fn the_policy_parses_as_its_kubernetes_type() {
        use k8s_openapi::api::admissionregistration::v1::{
            ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
        };
        let all = manifests("ops", "etcd-op", &json!({"a": "b"}));
        serde_json::from_value::<ValidatingAdmissionPolicy>(all[0].clone()).unwrap();
        serde_json::from_value::<ValidatingAdmissionPolicyBinding>(all[1].clone()).unwrap();
    }
}
