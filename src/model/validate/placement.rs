//! Where and how the pods run: topology spreading, priority class, pull Secrets, pod and
//! client Service metadata, and the namespaces the network policy admits.

use std::collections::BTreeMap;

use super::{
    ENGINE_POD_LABELS, InvalidSpec, invalid, is_cidr, is_dns_label, is_label_value,
    is_qualified_name, validate_dns_subdomain, validate_secret_name,
};

/// The fields the API server would refuse only when the StatefulSet is applied (a pass that
/// fails every time): refused here, naming the constraint.
pub(super) fn validate_topology_spread(
    cs: &[k8s_openapi::api::core::v1::TopologySpreadConstraint],
) -> Result<Vec<k8s_openapi::api::core::v1::TopologySpreadConstraint>, InvalidSpec> {
    const FIELD: &str = "spec.topologySpreadConstraints";
    for (i, c) in cs.iter().enumerate() {
        if c.max_skew < 1 {
            return Err(invalid(
                FIELD,
                format!("[{i}].maxSkew is {}; use 1 or more", c.max_skew),
            ));
        }
        if !is_qualified_name(&c.topology_key) {
            return Err(invalid(
                FIELD,
                format!(
                    "[{i}].topologyKey {:?} is not a label key; use e.g. topology.kubernetes.io/zone",
                    c.topology_key
                ),
            ));
        }
        if !matches!(
            c.when_unsatisfiable.as_str(),
            "DoNotSchedule" | "ScheduleAnyway"
        ) {
            return Err(invalid(
                FIELD,
                format!(
                    "[{i}].whenUnsatisfiable {:?} is neither DoNotSchedule nor ScheduleAnyway",
                    c.when_unsatisfiable
                ),
            ));
        }
    }
    Ok(cs.to_vec())
}

/// `spec.priorityClassName` (empty: none).
pub(super) fn validate_priority_class(name: Option<&str>) -> Result<Option<String>, InvalidSpec> {
    name.filter(|p| !p.is_empty())
        .map(|p| validate_dns_subdomain("spec.priorityClassName", "PriorityClass", p))
        .transpose()
}

/// `spec.imagePullSecrets`: each a Secret name, none twice.
pub(super) fn validate_image_pull_secrets(
    refs: Option<&[k8s_openapi::api::core::v1::LocalObjectReference]>,
) -> Result<Vec<String>, InvalidSpec> {
    let mut names: Vec<String> = Vec::new();
    for r in refs.unwrap_or_default() {
        let name = validate_secret_name("spec.imagePullSecrets", &r.name)?;
        if names.contains(&name) {
            return Err(invalid(
                "spec.imagePullSecrets",
                format!("Secret {name:?} is named twice; name each Secret once"),
            ));
        }
        names.push(name);
    }
    Ok(names)
}

/// `spec.networkPolicy.clientNamespaces`: namespace names (RFC 1123 labels), each once;
/// returned sorted.
pub(super) fn validate_client_namespaces(
    spec: Option<&crate::api::NetworkPolicySpec>,
) -> Result<Vec<String>, InvalidSpec> {
    let field = "spec.networkPolicy.clientNamespaces";
    let mut names: Vec<String> = Vec::new();
    for n in spec
        .map(|s| s.client_namespaces.as_slice())
        .unwrap_or_default()
    {
        if !is_dns_label(n) {
            return Err(invalid(
                field,
                format!(
                    "{n:?} is not a namespace name; list namespaces by name (at most 63 lowercase \
                     letters, digits and '-'), e.g. [\"billing\"]: no patterns, no labels"
                ),
            ));
        }
        if names.contains(n) {
            return Err(invalid(
                field,
                format!("namespace {n:?} is listed twice; list each once"),
            ));
        }
        names.push(n.clone());
    }
    names.sort();
    Ok(names)
}

pub(super) type PodMeta = (BTreeMap<String, String>, BTreeMap<String, String>);

pub(super) fn validate_pod_metadata(
    m: Option<&crate::api::PodMetadata>,
) -> Result<PodMeta, InvalidSpec> {
    let Some(m) = m else {
        return Ok(Default::default());
    };
    validate_metadata(
        ("spec.podMetadata.labels", "spec.podMetadata.annotations"),
        &m.labels,
        &m.annotations,
    )
}

/// `spec.clientService`: labels and annotations as for pods, source ranges as CIDRs and only
/// for a load balancer.
pub(super) fn validate_client_service(
    s: Option<&crate::api::ClientServiceSpec>,
) -> Result<crate::model::ClientService, InvalidSpec> {
    use crate::api::ClientServiceType;
    let Some(s) = s else {
        return Ok(Default::default());
    };
    let (labels, annotations) = validate_metadata(
        (
            "spec.clientService.labels",
            "spec.clientService.annotations",
        ),
        &s.labels,
        &s.annotations,
    )?;
    let field = "spec.clientService.loadBalancerSourceRanges";
    if !s.load_balancer_source_ranges.is_empty() && s.type_ != Some(ClientServiceType::LoadBalancer)
    {
        return Err(invalid(
            field,
            "source ranges apply to a load balancer only; set spec.clientService.type: LoadBalancer or remove them".to_string(),
        ));
    }
    if let Some(bad) = s.load_balancer_source_ranges.iter().find(|r| !is_cidr(r)) {
        return Err(invalid(
            field,
            format!("{bad:?} is not a CIDR; use e.g. 10.0.0.0/8 or fd00::/8"),
        ));
    }
    let hash = serde_json::to_string(s).unwrap_or_default();
    Ok(crate::model::ClientService {
        type_: s.type_.map(ClientServiceType::as_str),
        labels,
        annotations,
        source_ranges: s.load_balancer_source_ranges.clone(),
        hash: Some(format!("{:016x}", crate::model::fnv1a(&hash))),
    })
}

/// Labels and annotations the engine adds to an object of its own (`fields`: where the spec
/// names them): keys qualified names, label values valid, none of the engine's own labels.
fn validate_metadata(
    fields: (&'static str, &'static str),
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> Result<PodMeta, InvalidSpec> {
    for (k, v) in labels {
        if !is_qualified_name(k) {
            return Err(invalid(
                fields.0,
                format!("{k:?} is not a label key; use e.g. \"team\" or \"example.com/team\""),
            ));
        }
        if ENGINE_POD_LABELS.contains(&k.as_str()) {
            return Err(invalid(
                fields.0,
                format!("{k:?} is set by the engine (it selects its pods by it); use another key"),
            ));
        }
        if !is_label_value(v) {
            return Err(invalid(
                fields.0,
                format!(
                    "{k}: {v:?} is not a label value; use at most 63 letters, digits, '-', '_' and '.'"
                ),
            ));
        }
    }
    if let Some(k) = annotations.keys().find(|k| !is_qualified_name(k)) {
        return Err(invalid(
            fields.1,
            format!("{k:?} is not an annotation key; use e.g. \"example.com/scrape\""),
        ));
    }
    Ok((labels.clone(), annotations.clone()))
}
