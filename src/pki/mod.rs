//! Managed TLS's certificates: the per-cluster CA, the members' server and peer certificates,
//! and client certificates (the engine's, and those `kubectl etcd certificate` issues), built
//! with rcgen on ring (the provider the rest of the tree uses). The parameters of each are pure
//! functions of the cluster's name, namespace and the times (`*_params`), tested as such; only
//! `generate_key` and the signing draw randomness. Below `objects`, `engine` and `cli`; knows
//! `model` (roles, lifetimes) and `keys` (the Services' names).

pub mod der;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, string::Ia5String,
};

use crate::keys::{client_service_name, peer_service_name};
use crate::model::pki::{BACKDATE_SECONDS, CA_LIFETIME_SECONDS, CertRole, member_common_name};

/// A certificate and its key, PEM.
#[derive(Clone, Debug)]
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
}

/// Why a certificate could not be built (the message names which).
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("building {what}")]
    Build {
        what: String,
        #[source]
        source: rcgen::Error,
    },
    #[error("{0} (Unix time) is out of the range a certificate can carry")]
    Time(i64),
}

fn fail(what: impl Into<String>) -> impl FnOnce(rcgen::Error) -> PkiError {
    let what = what.into();
    move |source| PkiError::Build { what, source }
}

/// The names the members' server and peer certificates carry: every member under the headless
/// Service (a wildcard, so that a member added by a scale-up needs no new certificate), the
/// client Service in each of its forms, and the loopback (`localhost`, `127.0.0.1`) for
/// clients inside a member's pod.
pub fn member_names(cluster: &str, namespace: &str, domain: &str) -> Vec<String> {
    let peers = peer_service_name(cluster);
    let client = client_service_name(cluster);
    vec![
        format!("*.{peers}.{namespace}.svc.{domain}"),
        format!("*.{peers}.{namespace}.svc"),
        client.clone(),
        format!("{client}.{namespace}"),
        format!("{client}.{namespace}.svc"),
        format!("{client}.{namespace}.svc.{domain}"),
        "localhost".into(),
        "127.0.0.1".into(),
    ]
}

/// Adds `names` (DNS names, `*.` wildcards, IP addresses: `spec.tls.serverNames`) to the
/// certificate's subject alternative names.
pub fn add_names(p: &mut CertificateParams, names: &[String]) -> Result<(), PkiError> {
    for n in names {
        let san = match n.parse::<std::net::IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(
                Ia5String::try_from(n.as_str()).map_err(fail(format!("the name {n:?}")))?,
            ),
        };
        p.subject_alt_names.push(san);
    }
    Ok(())
}

/// The CA's subject: names the cluster, so that a certificate says whose it is.
pub fn ca_name(cluster: &str, namespace: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "kubectl-etcd");
    dn.push(DnType::CommonName, format!("etcd CA {namespace}/{cluster}"));
    dn
}

fn times(params: &mut CertificateParams, now: i64, lifetime_seconds: u64) -> Result<(), PkiError> {
    // rcgen's times are `time`'s; from the epoch by a std Duration, no `time` dependency here.
    let at = |t: i64| {
        u64::try_from(t)
            .ok()
            .filter(|s| *s < 253_402_300_799) // 9999-12-31T23:59:59Z, GeneralizedTime's last
            .map(|s| rcgen::date_time_ymd(1970, 1, 1) + std::time::Duration::from_secs(s))
            .ok_or(PkiError::Time(t))
    };
    params.not_before = at(now - BACKDATE_SECONDS)?;
    params.not_after = at(now.saturating_add(i64::try_from(lifetime_seconds).unwrap_or(i64::MAX)))?;
    Ok(())
}

/// The CA's parameters, issued at `now` (Unix time).
pub fn ca_params(cluster: &str, namespace: &str, now: i64) -> Result<CertificateParams, PkiError> {
    let mut p = CertificateParams::default();
    p.distinguished_name = ca_name(cluster, namespace);
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    times(&mut p, now, CA_LIFETIME_SECONDS)?;
    Ok(p)
}

/// A leaf's parameters: the server and peer certificates carry `member_names` and serve both
/// ends (etcd's gRPC gateway dials its own member with the server certificate; peers are
/// mutual); a client certificate carries the user (`CN`, which etcd takes as the user name
/// when its authentication is on and no token is given) and only client authentication.
pub fn leaf_params(
    role: CertRole,
    cluster: &str,
    namespace: &str,
    domain: &str,
    user: &str,
    now: i64,
    lifetime_seconds: u64,
) -> Result<CertificateParams, PkiError> {
    let mut p = match role {
        CertRole::Server | CertRole::Peer => {
            CertificateParams::new(member_names(cluster, namespace, domain))
                .map_err(fail(format!("names of {namespace}/{cluster}")))?
        }
        CertRole::Client | CertRole::Ca => CertificateParams::default(),
    };
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "kubectl-etcd");
    dn.push(
        DnType::CommonName,
        match role {
            CertRole::Client => user.to_string(),
            other => member_common_name(cluster, other),
        },
    );
    p.distinguished_name = dn;
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = match role {
        CertRole::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
        _ => vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ],
    };
    p.use_authority_key_identifier_extension = true;
    times(&mut p, now, lifetime_seconds)?;
    Ok(p)
}

/// A new key (ECDSA P-256, as etcd's own docs and cert-manager default to).
pub fn generate_key() -> Result<KeyPair, PkiError> {
    KeyPair::generate().map_err(fail("a new key"))
}

/// A new CA for the cluster, self-signed.
pub fn new_ca(cluster: &str, namespace: &str, now: i64) -> Result<Issued, PkiError> {
    let key = generate_key()?;
    let cert = ca_params(cluster, namespace, now)?
        .self_signed(&key)
        .map_err(fail(format!("the CA of {namespace}/{cluster}")))?;
    Ok(Issued {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// `params` signed by the cluster's CA (its key PEM): the issuer is the CA's subject, rebuilt
/// from the cluster's name (`ca_name`), and the authority key id that of the CA's key.
pub fn sign(
    params: &CertificateParams,
    cluster: &str,
    namespace: &str,
    ca_key_pem: &str,
) -> Result<Issued, PkiError> {
    let ca_key = KeyPair::from_pem(ca_key_pem)
        .map_err(fail(format!("the CA key of {namespace}/{cluster}")))?;
    let mut ca = CertificateParams::default();
    ca.distinguished_name = ca_name(cluster, namespace);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    let issuer = Issuer::new(ca, ca_key);
    let key = generate_key()?;
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(fail(format!("a certificate of {namespace}/{cluster}")))?;
    Ok(Issued {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// `notBefore` and `notAfter` (Unix time) of the first certificate of `pem`.
pub fn pem_validity(pem: &[u8]) -> Result<(i64, i64), String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let der = CertificateDer::pem_slice_iter(pem)
        .next()
        .ok_or("no PEM certificate")?
        .map_err(|e| format!("not PEM: {e}"))?;
    der::validity(&der).ok_or_else(|| "a certificate whose validity cannot be read".into())
}

/// Every certificate of `pem` (a trust bundle holds several), DER.
pub fn pem_certs(pem: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let certs = CertificateDer::pem_slice_iter(pem)
        .map(|c| c.map(|c| c.to_vec()).map_err(|e| format!("not PEM: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    if certs.is_empty() {
        return Err("no PEM certificate".into());
    }
    Ok(certs)
}

/// A certificate's short name: the first 16 hex digits of the SHA-256 of its DER (what status,
/// the pod template and a rotation's steps call a CA by).
pub fn fingerprint(der: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, der)
        .as_ref()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests;
