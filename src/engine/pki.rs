//! Managed TLS's I/O: reading the cluster's certificate Secrets (observe) and writing one
//! (act, `Step::IssueCertificate`: a new key and certificate, signed by the cluster's CA read
//! from its Secret now). The decisions are `plan::pki`'s; the certificates `crate::pki`'s.

use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;

use super::Context;
use crate::error::Error;
use crate::model::Desired;
use crate::model::pki::{CertRole, CertificateView, Issue, LeafTrust, SecretCert, TrustView};
use crate::objects::{
    self,
    certs::{CA_KEY, RETIRING_CA},
    tls_key,
};

/// The Secrets of the cluster's TLS, by role: the engine's own in managed mode, the ones
/// `spec.tls` names otherwise (none without TLS).
fn secrets(d: &Desired) -> Vec<(CertRole, String)> {
    if d.pki.is_some() {
        return [CertRole::Ca]
            .into_iter()
            .chain(CertRole::LEAVES)
            .map(|r| (r, objects::tls_secret_name(&d.name, r)))
            .collect();
    }
    let mut out = Vec::new();
    if let Some(c) = &d.tls.client {
        out.push((CertRole::Server, c.server_secret.clone()));
        out.push((CertRole::Client, c.client_secret.clone()));
    }
    if let Some(p) = &d.tls.peer_secret {
        out.push((CertRole::Peer, p.clone()));
    }
    out
}

fn data(s: &Secret, key: &str) -> Option<Vec<u8>> {
    s.data
        .as_ref()?
        .get(key)
        .map(|b| b.0.clone())
        .filter(|b| !b.is_empty())
}

/// What a CA Secret holds: its certificate's validity, once it has a key beside it.
fn ca_view(s: &Secret) -> SecretCert {
    let (Some(cert), Some(_)) = (data(s, tls_key::CA), data(s, CA_KEY)) else {
        return SecretCert::Unreadable(format!("lacks {} or {CA_KEY}", tls_key::CA));
    };
    match crate::pki::pem_validity(&cert) {
        Ok((not_before, not_after)) => SecretCert::Valid {
            not_before,
            not_after,
            current_ca: true,
            names_current: true,
        },
        Err(why) => SecretCert::Unreadable(format!("{}: {why}", tls_key::CA)),
    }
}

/// The first certificate of a PEM, DER.
fn first_der(pem: &[u8]) -> Option<Vec<u8>> {
    crate::pki::pem_certs(pem).ok()?.into_iter().next()
}

/// What a leaf Secret holds; `ca`: the managed CA's certificate (DER) that must have signed it;
/// `names`: the serverNames hash its Secret must record (`Some(None)`: none), when it matters.
fn leaf_view(s: &Secret, ca: Option<&[u8]>, names: Option<Option<String>>) -> SecretCert {
    let files = match objects::tls_files(s) {
        Ok(f) => f,
        Err(why) => return SecretCert::Unreadable(why),
    };
    match crate::pki::pem_validity(&files.cert) {
        Ok((not_before, not_after)) => SecretCert::Valid {
            not_before,
            not_after,
            current_ca: ca.is_none_or(|ca| {
                first_der(&files.cert).is_some_and(|leaf| crate::pki::der::signed_by(&leaf, ca))
            }),
            names_current: names.is_none_or(|want| want.as_ref() == names_of(s)),
        },
        Err(why) => SecretCert::Unreadable(format!("{}: {why}", tls_key::CERT)),
    }
}

/// A new key and leaf for `role`, signed by the cluster's CA, with `spec.tls.serverNames` on
/// the server's (and their hash on its Secret).
async fn new_leaf(ctx: &Context, d: &Desired, role: CertRole, now: i64) -> Result<Secret, String> {
    let ca = read_ca(&ctx.client, &d.namespace, &d.name).await?;
    let lifetime = d
        .pki
        .as_ref()
        .map(|p| p.leaf_lifetime_seconds)
        .unwrap_or_default();
    let leaf = crate::pki::leaf_params(
        role,
        &d.name,
        &d.namespace,
        &d.cluster_domain,
        &d.client_cn(),
        now,
        lifetime,
    )
    .and_then(|mut p| {
        let names = match role {
            CertRole::Server => d.server_names.as_slice(),
            _ => &[],
        };
        crate::pki::add_names(&mut p, names)?;
        crate::pki::sign(&p, &d.name, &d.namespace, &ca.key_pem)
    })
    .map_err(|e| super::observe::chain(&e))?;
    let names = d.server_names_hash().filter(|_| role == CertRole::Server);
    Ok(objects::certs::leaf_secret(
        d,
        role,
        &leaf.cert_pem,
        &leaf.key_pem,
        &ca.bundle(),
        names.as_ref(),
    ))
}

/// The serverNames hash a leaf Secret records (`Desired::server_names_hash`).
fn names_of(s: &Secret) -> Option<&String> {
    s.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(crate::keys::ANNOTATION_SERVER_NAMES))
}

/// The `spec.tls.caGeneration` a CA Secret answers (its annotation; 0 without).
fn generation_of(s: &Secret) -> u64 {
    s.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(objects::ANNOTATION_CA_GENERATION))
        .and_then(|g| g.parse().ok())
        .unwrap_or_default()
}

/// A CA rotation's state as the Secrets hold it: the CA Secret's generation, signing and
/// retiring CA, and the CAs in each leaf's `ca.crt`.
fn trust_view(found: &[(CertRole, String, Option<Secret>)]) -> TrustView {
    let fingerprints = |pem: &[u8]| {
        crate::pki::pem_certs(pem)
            .map(|certs| certs.iter().map(|c| crate::pki::fingerprint(c)).collect())
            .unwrap_or_default()
    };
    let mut t = TrustView::default();
    for (role, _, s) in found {
        let Some(s) = s else { continue };
        if *role == CertRole::Ca {
            t.generation = generation_of(s);
            t.signing = data(s, tls_key::CA)
                .and_then(|p| first_der(&p))
                .map(|c| crate::pki::fingerprint(&c));
            t.retiring = data(s, RETIRING_CA)
                .and_then(|p| first_der(&p))
                .map(|c| crate::pki::fingerprint(&c));
        } else if let Some(ca) = data(s, tls_key::CA) {
            t.leaves.push(LeafTrust {
                role: *role,
                trusts: fingerprints(&ca),
            });
        }
    }
    t
}

/// The certificates of the cluster's TLS Secrets as they are now (empty without TLS), (in
/// managed mode) what they say of a CA rotation, and (managed and certManager) the CN of the
/// engine's client certificate.
/// Managed mode: a Secret at one of the engine's names that is not the cluster's goes to
/// `not_owned` and reads as missing (the planner holds on it before anything issues over it).
pub async fn observe(
    ctx: &Context,
    d: &Desired,
    not_owned: &mut Vec<crate::model::NotOwned>,
) -> Result<(Vec<CertificateView>, TrustView, Option<String>), Error> {
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &d.namespace);
    let mut found = Vec::new();
    for (role, name) in secrets(d) {
        let s = api
            .get_opt(&name)
            .await
            .map_err(|e| Error::kube("get", "Secret", &d.namespace, &name, e))?;
        // Only managed mode writes these Secrets; the ones `spec.tls` names are the user's.
        let foreign = s
            .as_ref()
            .filter(|_| d.pki.is_some())
            .and_then(|s| objects::not_owned_by_reference(d, "Secret", &s.metadata));
        let s = if foreign.is_some() { None } else { s };
        not_owned.extend(foreign);
        found.push((role, name, s));
    }
    let trust = if d.pki.is_some() {
        trust_view(&found)
    } else {
        TrustView::default()
    };
    // Managed: the CA Secret's CA signs every leaf. certManager: the server Secret's `ca.crt`,
    // the CA every member trusts, must have signed each leaf.
    let signer = if d.cert_manager.is_some() {
        CertRole::Server
    } else {
        CertRole::Ca
    };
    let ca = found
        .iter()
        .find(|(r, _, _)| *r == signer)
        .and_then(|(_, _, s)| s.as_ref())
        .map(|s| {
            data(s, tls_key::CA)
                .and_then(|p| first_der(&p))
                .unwrap_or_default()
        });
    let client_cn = found
        .iter()
        .filter(|_| d.pki.is_some() || d.cert_manager.is_some())
        .find(|(r, _, _)| *r == CertRole::Client)
        .and_then(|(_, _, s)| objects::tls_files(s.as_ref()?).ok())
        .and_then(|f| first_der(&f.cert))
        .and_then(|der| crate::pki::der::common_name(&der));
    let certificates = found
        .into_iter()
        .map(|(role, secret, s)| {
            let cert = match (&s, role) {
                (None, _) => SecretCert::Missing,
                (Some(s), CertRole::Ca) => ca_view(s),
                (Some(s), _) => {
                    // Managed server certificates record the serverNames they were issued for
                    // (cert-manager reissues on its Certificate's names by itself).
                    let names = match role {
                        CertRole::Server if d.pki.is_some() => Some(d.server_names_hash()),
                        _ => None,
                    };
                    leaf_view(s, ca.as_deref(), names)
                }
            };
            CertificateView { role, secret, cert }
        })
        .collect();
    Ok((certificates, trust, client_cn))
}

/// Mode certManager: the cert-manager `Certificate` of each leaf (empty in other modes). A
/// cluster that does not serve the kind reads as no Certificate: the act that writes one says
/// that cert-manager is missing.
pub async fn observe_cert_manager(
    ctx: &Context,
    d: &Desired,
    not_owned: &mut Vec<crate::model::NotOwned>,
) -> Result<Vec<crate::model::pki::CertManagerView>, Error> {
    use objects::cert_manager::{Certificate, not_ready};
    if d.cert_manager.is_none() {
        return Ok(Vec::new());
    }
    let api: Api<Certificate> = Api::namespaced(ctx.client.clone(), &d.namespace);
    let mut out = Vec::new();
    for role in CertRole::LEAVES {
        let name = objects::tls_secret_name(&d.name, role);
        let c = api
            .get_opt(&name)
            .await
            .map_err(|e| Error::kube("get", "Certificate", &d.namespace, &name, e))?;
        let foreign = c
            .as_ref()
            .and_then(|c| objects::not_owned_by_reference(d, "Certificate", &c.metadata));
        let c = if foreign.is_some() { None } else { c };
        not_owned.extend(foreign);
        out.push(crate::model::pki::CertManagerView {
            role,
            condition: c.as_ref().map(not_ready).unwrap_or_default(),
            spec: c.map(|c| c.spec),
        });
    }
    Ok(out)
}

/// The CA's Secret as the act reads it now: the signing CA's certificate and key, and the
/// retiring CA's certificate during a rotation.
pub struct CaFiles {
    pub cert_pem: String,
    pub key_pem: String,
    pub retiring_pem: Option<String>,
    /// The `spec.tls.caGeneration` the Secret answers (its annotation; 0 without).
    pub generation: u64,
}

impl CaFiles {
    /// What every `ca.crt` holds now: the retiring CA (while there is one) and the signing one.
    pub fn bundle(&self) -> String {
        objects::certs::trust_bundle(&self.cert_pem, self.retiring_pem.as_deref())
    }
}

/// The CA's certificate and key PEM (and a retiring CA's certificate), read from its Secret now.
pub async fn read_ca(
    client: &kube::Client,
    namespace: &str,
    cluster: &str,
) -> Result<CaFiles, String> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let name = objects::tls_secret_name(cluster, CertRole::Ca);
    let s = api
        .get_opt(&name)
        .await
        .map_err(|e| format!("reading Secret {namespace}/{name}: {e}"))?
        .ok_or_else(|| {
            format!(
                "Secret {namespace}/{name} does not exist (is {namespace}/{cluster} an EtcdCluster with spec.tls.mode: managed?)"
            )
        })?;
    match (data(&s, tls_key::CA), data(&s, CA_KEY)) {
        (Some(c), Some(k)) => Ok(CaFiles {
            cert_pem: String::from_utf8_lossy(&c).into_owned(),
            key_pem: String::from_utf8_lossy(&k).into_owned(),
            retiring_pem: data(&s, RETIRING_CA).map(|r| String::from_utf8_lossy(&r).into_owned()),
            generation: generation_of(&s),
        }),
        _ => Err(format!(
            "Secret {namespace}/{name} lacks {} or {CA_KEY}",
            tls_key::CA
        )),
    }
}

/// `Step::IssueCertificate`: a new CA (the first, or a rotation's with the old one kept as
/// retiring), the retiring CA dropped, a leaf's `ca.crt` made the trust bundle, or a new key and
/// leaf for `role` signed by the CA. Each is one apply of one Secret: a crash leaves either the
/// Secret as it was or as wanted, and the next pass reads which.
pub async fn issue(ctx: &Context, d: &Desired, role: CertRole, why: Issue) -> Result<(), Error> {
    let fail = |why: String| Error::Certificate {
        namespace: d.namespace.clone(),
        name: d.name.clone(),
        role: role.as_str(),
        why,
    };
    let now = jiff::Timestamp::now().as_second();
    let generation = |d: &Desired| d.pki.as_ref().map(|p| p.ca_generation).unwrap_or_default();
    let secret = match (role, why) {
        (CertRole::Ca, Issue::Rotation) => {
            let old = read_ca(&ctx.client, &d.namespace, &d.name)
                .await
                .map_err(fail)?;
            let ca = crate::pki::new_ca(&d.name, &d.namespace, now)
                .map_err(|e| fail(super::observe::chain(&e)))?;
            objects::certs::ca_secret(
                d,
                &ca.cert_pem,
                &ca.key_pem,
                Some(&old.cert_pem),
                generation(d),
            )
        }
        (CertRole::Ca, Issue::Retire) => {
            let ca = read_ca(&ctx.client, &d.namespace, &d.name)
                .await
                .map_err(fail)?;
            objects::certs::ca_secret(d, &ca.cert_pem, &ca.key_pem, None, ca.generation)
        }
        (CertRole::Ca, _) => {
            let ca = crate::pki::new_ca(&d.name, &d.namespace, now)
                .map_err(|e| fail(super::observe::chain(&e)))?;
            // A first CA answers the generation the spec has: no rotation for it.
            objects::certs::ca_secret(d, &ca.cert_pem, &ca.key_pem, None, generation(d))
        }
        (_, Issue::Bundle) => {
            let ca = read_ca(&ctx.client, &d.namespace, &d.name)
                .await
                .map_err(fail)?;
            let name = objects::tls_secret_name(&d.name, role);
            let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &d.namespace);
            let s = api
                .get_opt(&name)
                .await
                .map_err(|e| Error::kube("get", "Secret", &d.namespace, &name, e))?
                .ok_or_else(|| fail(format!("Secret {}/{name} is gone", d.namespace)))?;
            let files = objects::tls_files(&s).map_err(fail)?;
            objects::certs::leaf_secret(
                d,
                role,
                &String::from_utf8_lossy(&files.cert),
                &String::from_utf8_lossy(&files.key),
                &ca.bundle(),
                // The certificate is kept, and so is what it was issued for.
                names_of(&s),
            )
        }
        _ => new_leaf(ctx, d, role, now).await.map_err(fail)?,
    };
    super::act::apply(
        Api::namespaced(ctx.client.clone(), &d.namespace),
        d,
        "Secret",
        &secret,
    )
    .await
}
