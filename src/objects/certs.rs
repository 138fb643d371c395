//! The Secrets of managed TLS (`spec.tls.mode: managed`): the CA's (its certificate and key) and
//! one per leaf in the layout of `kubernetes.io/tls` plus `ca.crt`, the layout the member pods
//! mount and the engine dials with (`tls_files`), the same as bring-your-own Secrets. Owned by
//! the EtcdCluster: deleted with it. Pure.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;

use super::names::{tls_key, tls_secret_name};
use super::services::meta;
use crate::model::Desired;
use crate::model::pki::CertRole;

/// The key of the CA's private key in its Secret (beside `ca.crt`).
pub const CA_KEY: &str = "ca.key";

fn data(entries: &[(&str, &str)]) -> BTreeMap<String, ByteString> {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
        .collect()
}

/// The CA's Secret: `ca.crt` and `ca.key`.
pub fn ca_secret(d: &Desired, cert_pem: &str, key_pem: &str) -> Secret {
    Secret {
        metadata: meta(d, tls_secret_name(&d.name, CertRole::Ca)),
        type_: Some("Opaque".into()),
        data: Some(data(&[(tls_key::CA, cert_pem), (CA_KEY, key_pem)])),
        ..Default::default()
    }
}

/// A leaf's Secret: `tls.crt`, `tls.key` and the CA's `ca.crt`.
pub fn leaf_secret(
    d: &Desired,
    role: CertRole,
    cert_pem: &str,
    key_pem: &str,
    ca_pem: &str,
) -> Secret {
    Secret {
        metadata: meta(d, tls_secret_name(&d.name, role)),
        type_: Some("kubernetes.io/tls".into()),
        data: Some(data(&[
            (tls_key::CERT, cert_pem),
            (tls_key::KEY, key_pem),
            (tls_key::CA, ca_pem),
        ])),
        ..Default::default()
    }
}
