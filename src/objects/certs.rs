//! The Secrets of managed TLS (`spec.tls.mode: managed`): the CA's (its certificate and key) and
//! one per leaf in the layout of `kubernetes.io/tls` plus `ca.crt`, the layout the member pods
//! mount and the engine dials with (`tls_files`), the same as bring-your-own Secrets. Owned by
//! the EtcdCluster: deleted with it. Pure.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;

use super::names::{ANNOTATION_CA_GENERATION, tls_key, tls_secret_name};
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

/// The key of a CA being retired in the CA Secret (its certificate only: it signs nothing
/// more, and stays trusted until a rotation is done).
pub const RETIRING_CA: &str = "retiring-ca.crt";

/// The CA's Secret: `ca.crt` and `ca.key`, and during a rotation the retiring CA's certificate
/// and the generation (`spec.tls.caGeneration`) the rotation answers.
pub fn ca_secret(
    d: &Desired,
    cert_pem: &str,
    key_pem: &str,
    retiring_pem: Option<&str>,
    generation: u64,
) -> Secret {
    let mut metadata = meta(d, tls_secret_name(&d.name, CertRole::Ca));
    if generation > 0 {
        metadata.annotations = Some(BTreeMap::from([(
            ANNOTATION_CA_GENERATION.to_string(),
            generation.to_string(),
        )]));
    }
    let mut entries = vec![(tls_key::CA, cert_pem), (CA_KEY, key_pem)];
    entries.extend(retiring_pem.map(|p| (RETIRING_CA, p)));
    Secret {
        metadata,
        type_: Some("Opaque".into()),
        data: Some(data(&entries)),
        ..Default::default()
    }
}

/// The trust bundle of a CA Secret's certificates: the retiring CA's (while there is one), then
/// the signing one's; what every leaf's `ca.crt` holds.
pub fn trust_bundle(ca_pem: &str, retiring_pem: Option<&str>) -> String {
    let mut out = String::new();
    for pem in retiring_pem.into_iter().chain([ca_pem]) {
        out.push_str(pem.trim_end());
        out.push('\n');
    }
    out
}

/// A leaf's Secret: `tls.crt`, `tls.key` and the CA's `ca.crt`.
pub fn leaf_secret(
    d: &Desired,
    role: CertRole,
    cert_pem: &str,
    key_pem: &str,
    ca_pem: &str,
    names: Option<&String>,
) -> Secret {
    let mut metadata = meta(d, tls_secret_name(&d.name, role));
    if let Some(names) = names {
        metadata.annotations = Some(
            [(
                crate::keys::ANNOTATION_SERVER_NAMES.to_string(),
                names.clone(),
            )]
            .into(),
        );
    }
    Secret {
        metadata,
        type_: Some("kubernetes.io/tls".into()),
        data: Some(data(&[
            (tls_key::CERT, cert_pem),
            (tls_key::KEY, key_pem),
            (tls_key::CA, ca_pem),
        ])),
        ..Default::default()
    }
}
