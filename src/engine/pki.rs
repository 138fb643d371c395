//! Managed TLS's I/O: reading the cluster's certificate Secrets (observe) and writing one
//! (act, `Step::IssueCertificate`: a new key and certificate, signed by the cluster's CA read
//! from its Secret now). The decisions are `plan::pki`'s; the certificates `crate::pki`'s.

use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;

use super::Context;
use crate::error::Error;
use crate::model::Desired;
use crate::model::pki::{CertRole, CertificateView, SecretCert};
use crate::objects::{self, certs::CA_KEY, tls_key};

/// The CN of the engine's own client certificate: etcd takes it as the user once its
/// authentication is on (with `--client-cert-auth`), so the engine, the probe and backups keep
/// working when someone runs `etcdctl auth enable` without `spec.auth`.
pub const ENGINE_USER: &str = "root";

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
        },
        Err(why) => SecretCert::Unreadable(format!("{}: {why}", tls_key::CA)),
    }
}

/// What a leaf Secret holds; `ca`: the managed CA's certificate it must carry.
fn leaf_view(s: &Secret, ca: Option<&[u8]>) -> SecretCert {
    let files = match objects::tls_files(s) {
        Ok(f) => f,
        Err(why) => return SecretCert::Unreadable(why),
    };
    match crate::pki::pem_validity(&files.cert) {
        Ok((not_before, not_after)) => SecretCert::Valid {
            not_before,
            not_after,
            current_ca: ca.is_none_or(|ca| ca == files.ca.as_slice()),
        },
        Err(why) => SecretCert::Unreadable(format!("{}: {why}", tls_key::CERT)),
    }
}

/// The certificates of the cluster's TLS Secrets as they are now (empty without TLS).
pub async fn observe(ctx: &Context, d: &Desired) -> Result<Vec<CertificateView>, Error> {
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &d.namespace);
    let mut found = Vec::new();
    for (role, name) in secrets(d) {
        let s = api
            .get_opt(&name)
            .await
            .map_err(|e| Error::kube("get", "Secret", &d.namespace, &name, e))?;
        found.push((role, name, s));
    }
    let ca = found
        .iter()
        .find(|(r, _, _)| *r == CertRole::Ca)
        .and_then(|(_, _, s)| s.as_ref())
        .map(|s| data(s, tls_key::CA).unwrap_or_default());
    Ok(found
        .into_iter()
        .map(|(role, secret, s)| {
            let cert = match (&s, role) {
                (None, _) => SecretCert::Missing,
                (Some(s), CertRole::Ca) => ca_view(s),
                (Some(s), _) => leaf_view(s, ca.as_deref()),
            };
            CertificateView { role, secret, cert }
        })
        .collect())
}

/// The CA's certificate and key PEM, read from its Secret now.
pub async fn read_ca(
    client: &kube::Client,
    namespace: &str,
    cluster: &str,
) -> Result<(String, String), String> {
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
        (Some(c), Some(k)) => Ok((
            String::from_utf8_lossy(&c).into_owned(),
            String::from_utf8_lossy(&k).into_owned(),
        )),
        _ => Err(format!(
            "Secret {namespace}/{name} lacks {} or {CA_KEY}",
            tls_key::CA
        )),
    }
}

/// `Step::IssueCertificate`: a new CA, or a new key and leaf for `role` signed by the CA.
pub async fn issue(ctx: &Context, d: &Desired, role: CertRole) -> Result<(), Error> {
    let fail = |why: String| Error::Certificate {
        namespace: d.namespace.clone(),
        name: d.name.clone(),
        role: role.as_str(),
        why,
    };
    let now = jiff::Timestamp::now().as_second();
    let secret = if role == CertRole::Ca {
        let ca = crate::pki::new_ca(&d.name, &d.namespace, now)
            .map_err(|e| fail(super::observe::chain(&e)))?;
        objects::certs::ca_secret(d, &ca.cert_pem, &ca.key_pem)
    } else {
        let (ca_pem, ca_key) = read_ca(&ctx.client, &d.namespace, &d.name)
            .await
            .map_err(fail)?;
        let lifetime = d
            .pki
            .as_ref()
            .map(|p| p.leaf_lifetime_seconds)
            .unwrap_or_default();
        let leaf = crate::pki::leaf_params(role, &d.name, &d.namespace, ENGINE_USER, now, lifetime)
            .and_then(|p| crate::pki::sign(&p, &d.name, &d.namespace, &ca_key))
            .map_err(|e| fail(super::observe::chain(&e)))?;
        objects::certs::leaf_secret(d, role, &leaf.cert_pem, &leaf.key_pem, &ca_pem)
    };
    super::act::apply(
        Api::namespaced(ctx.client.clone(), &d.namespace),
        d,
        "Secret",
        &secret,
    )
    .await
}
