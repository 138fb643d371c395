//! `spec.adopt` validated (`Adoption`), and what a pass sees of the old cluster's Kubernetes
//! objects (`AdoptionView`). Pure.

use serde::Serialize;

use super::validate::{InvalidSpec, invalid, validate_dns_subdomain, validate_secret_name};

/// The adoption the spec asks for (`spec.adopt`, validated).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Adoption {
    /// The old members' StatefulSet (`None`: the old members run elsewhere; they are removed
    /// from etcd and nothing else is touched).
    pub statefulset: Option<String>,
    /// The old members' client URLs.
    pub endpoints: Vec<String>,
    /// The cluster id the survey found.
    pub cluster_id: u64,
    /// Secret of the client certificate the old members want.
    pub tls_secret: Option<String>,
    /// The old Service re-pointed to the engine's members before the last old member goes.
    pub take_over_service: Option<String>,
    pub abort: bool,
}

impl Adoption {
    /// The ordinal of old member `name` in the old StatefulSet (`<statefulset>-<n>`), parsed
    /// as a number.
    pub fn old_ordinal(&self, name: &str) -> Option<u32> {
        let rest = name
            .strip_prefix(self.statefulset.as_deref()?)?
            .strip_prefix('-')?;
        if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        rest.parse().ok()
    }
}

/// What a pass sees of the old cluster's Kubernetes objects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AdoptionView {
    /// The old StatefulSet's `spec.replicas` (`None`: it does not exist).
    pub old_replicas: Option<u32>,
    /// The Service to take over already selects the engine's members.
    pub service_taken: bool,
    /// The Service to take over exists.
    pub service_found: bool,
}

/// `spec.adopt` → `Adoption`.
pub fn validate_adopt(a: &crate::api::AdoptSpec) -> Result<Adoption, InvalidSpec> {
    let statefulset = a
        .stateful_set
        .as_deref()
        .map(|s| validate_dns_subdomain("spec.adopt.statefulSet", "StatefulSet", s))
        .transpose()?;
    if a.endpoints.is_empty() {
        return Err(invalid(
            "spec.adopt.endpoints",
            "names no old member; `kubectl etcd adopt` writes the client URLs it surveyed",
        ));
    }
    for e in &a.endpoints {
        let ok = (e.starts_with("http://") || e.starts_with("https://"))
            && !e.contains(char::is_whitespace);
        if !ok {
            return Err(invalid(
                "spec.adopt.endpoints",
                format!("{e:?} is not a client URL; use e.g. http://etcd-0.etcd.ns.svc:2379"),
            ));
        }
    }
    let cluster_id = u64::from_str_radix(&a.cluster_id, 16).map_err(|_| {
        invalid(
            "spec.adopt.clusterId",
            format!("{:?} is not a cluster id (16 hex digits)", a.cluster_id),
        )
    })?;
    Ok(Adoption {
        statefulset,
        endpoints: a.endpoints.clone(),
        cluster_id,
        tls_secret: a
            .tls_secret
            .as_deref()
            .map(|s| validate_secret_name("spec.adopt.tlsSecret", s))
            .transpose()?,
        take_over_service: a
            .take_over_service
            .as_deref()
            .map(|s| validate_dns_subdomain("spec.adopt.takeOverService", "Service", s))
            .transpose()?,
        abort: a.abort,
    })
}
