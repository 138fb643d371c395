//! The Kubernetes name rules the spec's fields follow: DNS labels and subdomains, label keys
//! and values, address blocks, the cluster domain.

use super::{InvalidSpec, invalid};

/// A namespace name (RFC 1123 label): 1-63 lowercase letters, digits and '-', neither first
/// nor last.
pub fn is_dns_label(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

pub(in crate::model) fn validate_secret_name(
    field: &'static str,
    name: &str,
) -> Result<String, InvalidSpec> {
    validate_dns_subdomain(field, "Secret", name)
}

/// A Kubernetes object name (DNS subdomain): what Secrets and PriorityClasses are named by.
pub(in crate::model) fn validate_dns_subdomain(
    field: &'static str,
    kind: &str,
    name: &str,
) -> Result<String, InvalidSpec> {
    if !is_dns_subdomain(name) {
        return Err(invalid(
            field,
            format!("{name:?} is not a {kind} name; use lowercase letters, digits, '-' and '.'"),
        ));
    }
    Ok(name.to_string())
}

/// Checks `spec.clusterDomain` (absent or empty: `cluster.local`): dot-separated DNS labels
/// (1-63 lowercase letters, digits and '-', neither first nor last), a trailing dot dropped.
pub fn validate_cluster_domain(domain: Option<&str>) -> Result<String, InvalidSpec> {
    let Some(given) = domain.filter(|d| !d.is_empty()) else {
        return Ok(crate::keys::DEFAULT_CLUSTER_DOMAIN.into());
    };
    let domain = given.strip_suffix('.').unwrap_or(given);
    if domain.len() > 200 || !domain.split('.').all(is_dns_label) {
        return Err(invalid(
            "spec.clusterDomain",
            format!(
                "{domain:?} is not a DNS domain; use the kubelet's clusterDomain, e.g. cluster.local \
                 (lowercase letters, digits, '-' and '.')"
            ),
        ));
    }
    Ok(domain.to_string())
}

/// A Kubernetes object name (RFC 1123 subdomain): Secrets, PriorityClasses.
pub fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

pub use crate::keys::ENGINE_POD_LABELS;

/// A label or annotation key: an optional DNS-subdomain prefix and '/', then a name of at most
/// 63 letters, digits, '-', '_' and '.', starting and ending alphanumeric.
pub(super) fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    prefix.is_none_or(is_dns_subdomain) && is_label_value(name) && !name.is_empty()
}

pub(super) fn is_label_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

/// An address block: an IPv4 or IPv6 address, '/', and a prefix length it holds.
pub(super) fn is_cidr(s: &str) -> bool {
    let Some((ip, len)) = s.split_once('/') else {
        return false;
    };
    let Ok(len) = len.parse::<u8>() else {
        return false;
    };
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => len <= 32,
        Ok(std::net::IpAddr::V6(_)) => len <= 128,
        Err(_) => false,
    }
}
