//! The CRD objects generated from the types, with what the derive cannot say: admission rules,
//! list types, and no defaults under `status`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray,
};

use super::{EtcdBackup, EtcdCluster};

/// Every CRD the project installs.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![crd(), backup_crd()]
}

/// The EtcdBackup CRD (status defaults stripped like the EtcdCluster's).
pub fn backup_crd() -> CustomResourceDefinition {
    use kube::CustomResourceExt;
    let mut crd = EtcdBackup::crd();
    strip_status_defaults(&mut crd);
    crd
}

/// The CRD object, from the Rust types. Schema defaults are dropped under `status` (only the
/// engine writes status, and the 1.20 API server rejects some of them, e.g. empty-string defaults).
pub fn crd() -> CustomResourceDefinition {
    use kube::CustomResourceExt;
    let mut crd = EtcdCluster::crd();
    strip_status_defaults(&mut crd);
    add_admission_rules(&mut crd);
    crd
}

/// The spec rules the API server enforces itself (CEL, `x-kubernetes-validations`), so that
/// `kubectl apply` of a change the engine cannot carry out is refused at once, naming the field.
/// The engine keeps its own checks (`model::keep_storage`, `keep_tls`) for objects written before
/// these rules existed, or through an API server that ignores them.
pub const ADMISSION_RULES: &[(&str, &str, &str)] = &[
    (
        "storage",
        "(has(self.ephemeral) && self.ephemeral) == (has(oldSelf.ephemeral) && oldSelf.ephemeral)",
        "spec.storage.ephemeral cannot change on an existing cluster: put the old value back, or move the data to a new cluster with kubectl etcd backup and kubectl etcd restore",
    ),
    (
        "",
        "(has(self.clusterDomain) ? self.clusterDomain : 'cluster.local') == \
         (has(oldSelf.clusterDomain) ? oldSelf.clusterDomain : 'cluster.local')",
        "spec.clusterDomain cannot change on an existing cluster (the members' URLs in etcd's membership end in it): put the old value back",
    ),
    (
        "tls",
        "has(self.serverSecret) == has(self.clientSecret)",
        "spec.tls.serverSecret and spec.tls.clientSecret are set together (the members serve https with the first and the engine, probe and backups present the second)",
    ),
];

/// Message of `shrink_rule`.
pub const SHRINK_MESSAGE: &str = "spec.storage.size cannot shrink on an existing cluster (etcd's data stays on the volumes; growing is allowed, and so is going back to status.volumeCapacity, what the claims have, after an expansion that never showed): put the old value back, or create a new cluster with the smaller size and move the data with kubectl etcd backup and kubectl etcd restore";

/// The rule refusing a smaller `spec.storage.size`, on the whole object (it reads the status):
/// below the old size only down to `status.volumeCapacity`, the smallest capacity the member
/// claims have (an expansion that never showed is undone so; `model::keep_storage` agrees).
pub fn shrink_rule() -> String {
    let size =
        |x: &str| format!("quantity(has({x}.spec.storage.size) ? {x}.spec.storage.size : '1Gi')");
    let ephemeral =
        |x: &str| format!("(has({x}.spec.storage.ephemeral) && {x}.spec.storage.ephemeral)");
    format!(
        "!has(self.spec.storage) || !has(oldSelf.spec.storage) || {} || {} || {}.compareTo({}) >= 0 || (has(oldSelf.status) && has(oldSelf.status.volumeCapacity) && isQuantity(oldSelf.status.volumeCapacity) && {}.compareTo(quantity(oldSelf.status.volumeCapacity)) >= 0)",
        ephemeral("self"),
        ephemeral("oldSelf"),
        size("self"),
        size("oldSelf"),
        size("self"),
    )
}

/// Message of `tls_switch_rule`.
pub const TLS_SWITCH_MESSAGE: &str = "spec.tls cannot be switched to client TLS without peer TLS, or peer TLS alone, on an existing cluster: TLS is switched on or off for clients and peers together (kubectl etcd tls NAME --on|--off, or mode managed, none, or secrets with all three Secrets); other Secrets of the same kind may be set, and the mode the cluster has (status.tls.mode) may be written down";

/// The rule refusing a partial TLS switch, on the whole object (it reads the status): client TLS
/// and peer TLS each on or off as before, unless both are switched together (the engine carries
/// that out one member at a time, `plan::tls_switch`). A spec that names a mode or Secrets says it; one that
/// names neither has the mode the engine decided at the cluster's birth
/// (`model::unset_tls_mode`): `status.tls.mode`, else managed for a cluster that never ran and
/// adopts nothing, else none. So writing down the mode a cluster has (`mode: managed` on one
/// born managed from a spec without `tls`) is no switch. When neither side names anything (a
/// status write, an edit elsewhere) the rule passes without reading the status.
pub fn tls_switch_rule() -> String {
    let decided = |x: &str| {
        format!(
            "(has({x}.spec.tls) && (has({x}.spec.tls.mode) || has({x}.spec.tls.serverSecret) || has({x}.spec.tls.clientSecret) || has({x}.spec.tls.peerSecret)))"
        )
    };
    let born_managed = |x: &str| {
        format!(
            "((has({x}.status) && has({x}.status.tls)) ? {x}.status.tls.mode == 'managed' : (!has({x}.spec.adopt) && !(has({x}.status) && (has({x}.status.clusterId) || (has({x}.status.members) && size({x}.status.members) > 0)))))"
        )
    };
    let on = |x: &str, secret: &str| {
        format!(
            "({} ? (has({x}.spec.tls.{secret}) || (has({x}.spec.tls.mode) && {x}.spec.tls.mode == 'managed')) : {})",
            decided(x),
            born_managed(x)
        )
    };
    format!(
        "(!{} && !{}) || ({} == {} && {} == {}) || {} == {}",
        decided("self"),
        decided("oldSelf"),
        on("self", "serverSecret"),
        on("oldSelf", "serverSecret"),
        on("self", "peerSecret"),
        on("oldSelf", "peerSecret"),
        on("self", "serverSecret"),
        on("self", "peerSecret"),
    )
}

/// The lists of `EtcdCluster.status` that are maps (`x-kubernetes-list-type: map`), by key.
/// Members by id, not name: etcd's ids are unique, names are not (a member added by hand may
/// take an engine member's name, and a learner that never started has none).
const STATUS_LIST_KEYS: &[(&str, &str)] = &[("conditions", "type"), ("members", "id")];

fn add_admission_rules(crd: &mut CustomResourceDefinition) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule;
    for v in &mut crd.spec.versions {
        let Some(object) = v
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        object
            .x_kubernetes_validations
            .get_or_insert_with(Vec::new)
            .extend([
                ValidationRule {
                    rule: tls_switch_rule(),
                    message: Some(TLS_SWITCH_MESSAGE.into()),
                    field_path: Some(".spec.tls".into()),
                    ..Default::default()
                },
                ValidationRule {
                    rule: shrink_rule(),
                    message: Some(SHRINK_MESSAGE.into()),
                    field_path: Some(".spec.storage.size".into()),
                    ..Default::default()
                },
            ]);
        let Some(root) = object.properties.as_mut() else {
            continue;
        };
        if let Some(spec) = root.get_mut("spec") {
            for (field, rule, message) in ADMISSION_RULES {
                let target = if field.is_empty() {
                    Some(&mut *spec)
                } else {
                    spec.properties.as_mut().and_then(|p| p.get_mut(*field))
                };
                let Some(target) = target else { continue };
                target
                    .x_kubernetes_validations
                    .get_or_insert_with(Vec::new)
                    .push(ValidationRule {
                        rule: (*rule).into(),
                        message: Some((*message).into()),
                        ..Default::default()
                    });
            }
        }
        // One condition per type, one member per id: server-side apply merges them by key.
        let mut status = root.get_mut("status").and_then(|s| s.properties.as_mut());
        for (list, key) in STATUS_LIST_KEYS {
            if let Some(list) = status.as_mut().and_then(|p| p.get_mut(*list)) {
                list.x_kubernetes_list_type = Some("map".into());
                list.x_kubernetes_list_map_keys = Some(vec![(*key).into()]);
            }
        }
    }
}

fn strip_status_defaults(crd: &mut CustomResourceDefinition) {
    for v in &mut crd.spec.versions {
        if let Some(status) = v
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
            .and_then(|s| s.properties.as_mut())
            .and_then(|p| p.get_mut("status"))
        {
            strip_defaults(status);
        }
    }
}

fn strip_defaults(s: &mut JSONSchemaProps) {
    s.default = None;
    for p in s.properties.iter_mut().flat_map(|p| p.values_mut()) {
        strip_defaults(p);
    }
    if let Some(JSONSchemaPropsOrArray::Schema(items)) = s.items.as_mut() {
        strip_defaults(items);
    }
}

/// The `spec` fields `ours` declares that `installed` does not (dotted paths, e.g.
/// `spec.hibernate`): an older CRD, whose structural schema makes the API server drop them from
/// every write. A field under one `installed` keeps whole (preserve-unknown-fields) counts as there.
pub fn missing_spec_fields(
    ours: &CustomResourceDefinition,
    installed: &CustomResourceDefinition,
) -> Vec<String> {
    fn spec_of(c: &CustomResourceDefinition) -> Option<&JSONSchemaProps> {
        let v = c.spec.versions.iter().find(|v| v.storage)?;
        v.schema
            .as_ref()?
            .open_api_v3_schema
            .as_ref()?
            .properties
            .as_ref()?
            .get("spec")
    }
    fn walk(ours: &JSONSchemaProps, theirs: &JSONSchemaProps, at: &str, out: &mut Vec<String>) {
        if theirs.x_kubernetes_preserve_unknown_fields == Some(true) {
            return;
        }
        let (ours, theirs) = match (&ours.items, &theirs.items) {
            (Some(JSONSchemaPropsOrArray::Schema(o)), Some(JSONSchemaPropsOrArray::Schema(t))) => {
                (o.as_ref(), t.as_ref())
            }
            _ => (ours, theirs),
        };
        let Some(props) = &ours.properties else {
            return;
        };
        for (name, o) in props {
            let path = format!("{at}.{name}");
            match theirs.properties.as_ref().and_then(|p| p.get(name)) {
                Some(t) => walk(o, t, &path, out),
                None => out.push(path),
            }
        }
    }
    let mut out = Vec::new();
    match (spec_of(ours), spec_of(installed)) {
        (Some(o), Some(t)) => walk(o, t, "spec", &mut out),
        (Some(_), None) => out.push("spec".into()),
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::MAX_REPLICAS;

    #[test]
    fn an_older_crd_is_told_by_the_spec_fields_it_lacks() {
        assert_eq!(missing_spec_fields(&crd(), &crd()), Vec::<String>::new());
        let mut old = crd();
        let spec = old.spec.versions[0]
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
            .and_then(|s| s.properties.as_mut())
            .and_then(|p| p.get_mut("spec"))
            .unwrap();
        let props = spec.properties.as_mut().unwrap();
        props
            .remove("hibernate")
            .expect("spec.hibernate in the CRD");
        let storage = props
            .get_mut("storage")
            .unwrap()
            .properties
            .as_mut()
            .unwrap();
        storage.remove("storageClassName").unwrap();
        assert_eq!(
            missing_spec_fields(&crd(), &old),
            vec!["spec.hibernate", "spec.storage.storageClassName"]
        );
        // a newer CRD (more fields than ours) is fine
        assert_eq!(missing_spec_fields(&old, &crd()), Vec::<String>::new());
        // the backup CRD is not the cluster one: its spec lacks ours
        assert!(!missing_spec_fields(&crd(), &backup_crd()).is_empty());
    }

    #[test]
    fn the_crd_refuses_fixed_fields_at_admission_and_merges_conditions_and_members_by_key() {
        let crd = crd();
        let schema = crd.spec.versions[0]
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .unwrap();
        let props = schema.properties.as_ref().unwrap();
        let spec = &props["spec"];
        let rules = |s: &JSONSchemaProps| -> Vec<(String, String)> {
            s.x_kubernetes_validations
                .iter()
                .flatten()
                .map(|r| (r.rule.clone(), r.message.clone().unwrap_or_default()))
                .collect()
        };
        let storage = rules(&spec.properties.as_ref().unwrap()["storage"]);
        // Growing and a class change are carried out on the running cluster; switching to or
        // from ephemeral storage is refused here, shrinking on the whole object (below).
        assert!(
            storage
                .iter()
                .any(|(rule, message)| rule.contains("oldSelf")
                    && message.starts_with("spec.storage.ephemeral cannot change")),
            "{storage:?}"
        );
        assert!(
            !storage.iter().any(|(_, m)| m.contains("storageClassName")),
            "{storage:?}"
        );
        let tls = rules(&spec.properties.as_ref().unwrap()["tls"]);
        assert!(
            tls.iter()
                .any(|(r, _)| r.contains("has(self.clientSecret)"))
        );
        // The TLS switch rule sits on the whole object: it reads the mode recorded in status.
        let switch = rules(schema);
        assert_eq!(switch.len(), 2, "{switch:?}");
        // The shrink rule too: down to status.volumeCapacity, what the claims have, is allowed.
        let (shrink, message) = &switch[1];
        assert!(
            message.starts_with("spec.storage.size cannot shrink")
                && shrink.contains("oldSelf.spec.storage.size")
                && shrink.contains("quantity(oldSelf.status.volumeCapacity)"),
            "{shrink}"
        );
        assert_eq!(
            schema.x_kubernetes_validations.as_ref().unwrap()[1]
                .field_path
                .as_deref(),
            Some(".spec.storage.size")
        );
        let (rule, message) = &switch[0];
        assert!(
            message.starts_with("spec.tls cannot be switched"),
            "{message}"
        );
        assert!(
            rule.contains("oldSelf.spec.tls") && rule.contains("self.status.tls.mode == 'managed'"),
            "{rule}"
        );
        assert_eq!(
            schema.x_kubernetes_validations.as_ref().unwrap()[0]
                .field_path
                .as_deref(),
            Some(".spec.tls")
        );
        assert!(!rules(spec).iter().any(|(r, _)| r.contains("oldSelf.tls")));
        // Every rule is one line (a folded line would not change its meaning, but reads worse).
        for (rule, _) in storage.iter().chain(&tls).chain(&switch) {
            assert!(!rule.contains('\n') && !rule.contains("  "), "{rule}");
        }
        let status = props["status"].properties.as_ref().unwrap();
        for (list, key) in [("conditions", "type"), ("members", "id")] {
            assert_eq!(status[list].x_kubernetes_list_type.as_deref(), Some("map"));
            assert_eq!(
                status[list].x_kubernetes_list_map_keys.as_deref(),
                Some(&[key.to_string()][..])
            );
            // A map key must be required (the API server refuses the CRD otherwise).
            let items = match status[list].items.as_ref() {
                Some(JSONSchemaPropsOrArray::Schema(items)) => items,
                other => panic!("{list}: {other:?}"),
            };
            assert!(items.required.iter().flatten().any(|r| r == key), "{list}");
        }
    }

    #[test]
    fn the_crd_caps_replicas_at_max_replicas() {
        let crd = crd();
        let schema = crd.spec.versions[0]
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .unwrap();
        let replicas = &schema.properties.as_ref().unwrap()["spec"]
            .properties
            .as_ref()
            .unwrap()["replicas"];
        assert_eq!(replicas.maximum, Some(f64::from(MAX_REPLICAS)));
        assert_eq!(replicas.minimum, Some(1.0));
    }
}
