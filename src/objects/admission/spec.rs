//! The admission policy on EtcdClusters: a ValidatingAdmissionPolicy and its binding, shipped with
//! the operator (`install`, `manifests`, the chart), that hold every spec to the operator's allow
//! lists whoever writes it (a tenant with namespace `edit`, a CLI pass, the operator itself):
//!
//! - `spec.etcd.options` sets only the tuning flags (`model::TUNING_OPTIONS`) and those of
//!   `install --operator --allow-etcd-option` (the chart's `allowEtcdOptions`);
//! - `spec.imageRepository`, `spec.restore.toolsImage`, `spec.recovery.toolsImage` and
//!   `spec.backup.drill.toolsImage` name images
//!   under `model::DEFAULT_IMAGE_PREFIXES` or `--allow-image-prefix` (`allowImagePrefixes`).
//!
//! The lists are written into the policy itself (CEL list literals), not read from a parameter
//! object: a ConfigMap as `paramKind` is not found again after the policy, binding and ConfigMap
//! are re-created together (kubernetes/kubernetes#133827), which would refuse every write, and
//! it goes before its EtcdClusters when a namespace is deleted. A value the object had before the write passes
//! (the engine's own writes of an older cluster, its finalizer, go on); `status` writes are not
//! matched (only the engine writes status). With `--watch-namespace` the binding holds the
//! watched namespaces only, like the operator. The operator applies the same lists in its passes
//! (`model::keep_leave`).
//!
//! Pure: values out, no client. The CEL is checked by the API server (tests/e2e_privilege.rs).

use serde_json::{Value, json};

use crate::model::{DEFAULT_IMAGE_PREFIXES, TUNING_OPTIONS};

/// What the operator lets specs set beyond the defaults: `install --operator
/// --allow-etcd-option`, `--allow-image-prefix` (the chart's `allowEtcdOptions`,
/// `allowImagePrefixes`), given to the operator (`operate`) and to this policy alike.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allowed {
    pub etcd_options: Vec<String>,
    pub image_prefixes: Vec<String>,
}

impl Allowed {
    /// The operator's flags for them (`operate`'s arguments).
    pub fn operate_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for (flag, list) in [
            ("--allow-etcd-option", &self.etcd_options),
            (crate::model::ALLOW_IMAGE_PREFIX_FLAG, &self.image_prefixes),
        ] {
            if !list.is_empty() {
                args.extend([flag.to_string(), list.join(",")]);
            }
        }
        args
    }
}

/// The policy and its binding of operator install `operator`.
pub fn policy_name(operator: &str) -> String {
    format!("{operator}-etcdclusters")
}

/// A CEL list literal of `items` (flag names and image prefixes: `parse_allowed` keeps quotes
/// and backslashes out of them).
fn list<S: AsRef<str>>(items: &[S]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| {
            debug_assert!(parse_allowed(s.as_ref()).is_ok(), "{}", s.as_ref());
            format!("'{}'", s.as_ref())
        })
        .collect();
    format!("[{}]", quoted.join(", "))
}

/// An etcd flag name or image prefix as `--allow-etcd-option` and `--allow-image-prefix` take
/// it: not empty, and no quote, backslash, comma or space (it goes into the policy's CEL).
pub fn parse_allowed(s: &str) -> Result<String, String> {
    if s.is_empty() || s.contains(['\'', '"', '\\', ',', ' ']) {
        return Err(format!(
            "{s:?} is not an etcd flag name or image prefix (no quotes, backslashes, commas or spaces)"
        ));
    }
    Ok(s.to_string())
}

/// Whether the value at `path` of the spec is set, on `root` (`object`, `oldObject`).
fn set(root: &str, path: &[&str]) -> String {
    (1..=path.len())
        .map(|n| format!("has({root}.spec.{})", path[..n].join(".")))
        .collect::<Vec<_>>()
        .join(" && ")
}

/// The validation of the image at `path` of the spec (`field`, as the messages name it).
fn image_rule(field: &str, path: &[&str], who: &str) -> Value {
    let at = format!("object.spec.{}", path.join("."));
    let under = format!(
        "variables.prefixes.exists(p, p != '' && ({at} == p || {at}.startsWith(p + '/') || \
         {at}.startsWith(p + ':') || {at}.startsWith(p + '@') || (p.endsWith('/') && {at}.startsWith(p))))"
    );
    let kept = format!(
        "(oldObject != null && {} && oldObject.spec.{} == {at})",
        set("oldObject", path),
        path.join(".")
    );
    let message = format!(
        " is not under an image prefix {who} allows ({} or those of its --allow-image-prefix, \
         Helm value allowImagePrefixes); use one of them, or ask the owner of the operator to allow it",
        DEFAULT_IMAGE_PREFIXES.join(", ")
    );
    json!({
        "expression": format!("!({}) || {at} == '' || {under} || {kept}", set("object", path)),
        "message": format!("{field}{message}"),
        "messageExpression": format!("'{field} ' + {at} + '{message}'"),
        "reason": "Forbidden",
    })
}

/// The validations, in order; `who` names the operator.
fn validations(who: &str) -> Vec<Value> {
    let options = "object.spec.etcd.options";
    let off_list = "!(k in variables.tuning) && !(k in variables.options)";
    let kept = format!(
        "(oldObject != null && {} && k in oldObject.{options2} && oldObject.{options2}[k] == {options}[k])",
        set("oldObject", &["etcd", "options"]),
        options2 = "spec.etcd.options",
    );
    let message = format!(
        " not tuning flags {who} allows (heartbeat-interval, election-timeout, snapshot-count, …); \
         remove them, or ask the owner of the operator to allow each (`kubectl etcd install --operator \
         --allow-etcd-option NAME`, Helm value allowEtcdOptions)"
    );
    vec![
        json!({
            "expression": format!(
                "!({}) || {options}.all(k, !({off_list}) || {kept})",
                set("object", &["etcd", "options"])
            ),
            "message": format!("spec.etcd.options sets flags{message}"),
            "messageExpression": format!(
                "'spec.etcd.options sets ' + {options}.filter(k, {off_list}).join(', ') + ':{message}'"
            ),
            "reason": "Forbidden",
        }),
        image_rule("spec.imageRepository", &["imageRepository"], who),
        image_rule("spec.restore.toolsImage", &["restore", "toolsImage"], who),
        image_rule("spec.recovery.toolsImage", &["recovery", "toolsImage"], who),
        image_rule(
            "spec.backup.drill.toolsImage",
            &["backup", "drill", "toolsImage"],
            who,
        ),
    ]
}

/// The policy and its binding for operator install `operator` whose ServiceAccount is in
/// `namespace`, watching `watch` (empty: every namespace), letting specs set `allowed`.
pub fn manifests(
    namespace: &str,
    operator: &str,
    watch: &[&str],
    allowed: &Allowed,
    labels: &Value,
) -> Vec<Value> {
    let who = format!("the kubectl-etcd operator {namespace}/{operator}");
    let mut binding = json!({});
    if !watch.is_empty() {
        binding["matchResources"] = json!({ "namespaceSelector": { "matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "In", "values": watch,
        }] } });
    }
    super::policy_and_binding(
        &policy_name(operator),
        labels,
        json!({
            // etcdclusters alone: its status subresource is the engine's.
            "matchConstraints": { "resourceRules": [{
                "apiGroups": [crate::api::GROUP], "apiVersions": ["*"],
                "operations": ["CREATE", "UPDATE"], "resources": ["etcdclusters"],
            }] },
            "variables": [
                { "name": "tuning", "expression": list(TUNING_OPTIONS) },
                { "name": "options", "expression": list(&allowed.etcd_options) },
                { "name": "prefixes", "expression": format!(
                    "{} + {}", list(&DEFAULT_IMAGE_PREFIXES), list(&allowed.image_prefixes)
                ) },
            ],
            "validations": validations(&who),
        }),
        binding,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(watch: &[&str]) -> Vec<Value> {
        let allowed = Allowed {
            etcd_options: vec!["enable-pprof".into()],
            image_prefixes: vec!["registry.example/".into(), "mirror.example/etcd".into()],
        };
        manifests("ops", "etcd-op", watch, &allowed, &json!({}))
    }

    #[test]
    fn the_lists_are_the_policys_own_and_the_operators_flags() {
        let all = all(&[]);
        let vars = &all[0]["spec"]["variables"];
        assert_eq!(vars[1]["expression"], "['enable-pprof']");
        assert_eq!(
            vars[2]["expression"],
            "['gcr.io/etcd-development/etcd', 'ghcr.io/kubectl-etcd/kubectl-etcd'] + \
             ['registry.example/', 'mirror.example/etcd']"
        );
        let none = manifests("ops", "etcd-op", &[], &Allowed::default(), &json!({}));
        assert_eq!(none[0]["spec"]["variables"][1]["expression"], "[]");
        let binding = &all[1]["spec"];
        assert_eq!(binding["policyName"], "etcd-op-etcdclusters");
        assert_eq!(binding["validationActions"], json!(["Deny"]));
        assert!(binding["matchResources"].is_null(), "every namespace");
        for bad in ["", "a'b", "a,b", "a b", "a\\b"] {
            assert!(parse_allowed(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_allowed("registry.example/").unwrap(),
            "registry.example/"
        );
        let allowed = Allowed {
            etcd_options: vec!["enable-pprof".into(), "enable-v2".into()],
            image_prefixes: vec!["r.example/".into()],
        };
        assert_eq!(
            allowed.operate_args(),
            [
                "--allow-etcd-option",
                "enable-pprof,enable-v2",
                "--allow-image-prefix",
                "r.example/"
            ]
        );
        assert!(Allowed::default().operate_args().is_empty());
    }

    #[test]
    fn the_policy_holds_every_write_of_an_etcdcluster_spec_and_not_its_status() {
        let all = all(&["team-a", "team-b"]);
        let p = &all[0]["spec"];
        let rules = &p["matchConstraints"]["resourceRules"][0];
        assert_eq!(rules["resources"], json!(["etcdclusters"]));
        assert_eq!(rules["operations"], json!(["CREATE", "UPDATE"]));
        assert!(p["matchConditions"].is_null(), "every user");
        assert_eq!(p["failurePolicy"], "Fail");
        assert_eq!(
            all[1]["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"],
            json!(["team-a", "team-b"])
        );
        let tuning = p["variables"][0]["expression"].as_str().unwrap();
        assert!(tuning.contains("'heartbeat-interval'") && !tuning.contains("enable-pprof"));
        let prefixes = p["variables"][2]["expression"].as_str().unwrap();
        assert!(prefixes.starts_with(
            "['gcr.io/etcd-development/etcd', 'ghcr.io/kubectl-etcd/kubectl-etcd'] + "
        ));
    }

    #[test]
    fn each_validation_names_its_field_and_keeps_what_the_object_had() {
        let all = all(&[]);
        let v = all[0]["spec"]["validations"].as_array().unwrap();
        let fields = [
            "spec.etcd.options",
            "spec.imageRepository",
            "spec.restore.toolsImage",
            "spec.recovery.toolsImage",
            "spec.backup.drill.toolsImage",
        ];
        assert_eq!(v.len(), fields.len());
        for (rule, field) in v.iter().zip(fields) {
            let message = rule["message"].as_str().unwrap();
            assert!(message.starts_with(field), "{message}");
            assert!(message.contains("operator ops/etcd-op"), "{message}");
            assert!(message.contains("--allow-"), "{message}");
            let expr = rule["expression"].as_str().unwrap();
            assert!(expr.contains("oldObject != null"), "{expr}");
            assert!(!rule["messageExpression"].as_str().unwrap().is_empty());
        }
        assert_eq!(
            crate::model::IMAGE_FIELDS,
            fields[1..],
            "the operator's passes check the same fields"
        );
    }

    #[test]
    fn the_manifests_parse_as_their_kubernetes_types() {
        use k8s_openapi::api::admissionregistration::v1::{
            ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
        };
        let all = all(&["team-a"]);
        serde_json::from_value::<ValidatingAdmissionPolicy>(all[0].clone()).unwrap();
        serde_json::from_value::<ValidatingAdmissionPolicyBinding>(all[1].clone()).unwrap();
    }
}
