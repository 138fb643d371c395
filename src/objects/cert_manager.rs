//! cert-manager's `Certificate` (cert-manager.io/v1), as far as mode `certManager` writes and
//! reads it: one per leaf (server, peer, client) with the names, usages and Secret of managed
//! mode's leaves (`crate::pki::leaf_params`), signed by the issuer `spec.tls.issuerRef` names.
//! cert-manager writes and renews the Secrets (`tls.crt`, `tls.key`, `ca.crt`: the layout the
//! members mount); the Certificates are owned by the EtcdCluster and deleted with it. Pure.

use super::names::tls_secret_name;
use super::services::meta;
use crate::model::Desired;
use crate::model::pki::{CertManagerTls, CertRole};

/// cert-manager's types, with the other API types (`crate::api::cert_manager`).
pub use crate::api::cert_manager::*;

/// The Certificate of `role` (a leaf) for cluster `d`: the name and Secret of managed mode's
/// leaf, its names and usages, a new ECDSA P-256 key at every renewal, renewed at two thirds of
/// its lifetime.
pub fn certificate(d: &Desired, cm: &CertManagerTls, role: CertRole) -> Certificate {
    let name = tls_secret_name(&d.name, role);
    let (dns_names, ip_addresses) = match role {
        CertRole::Server | CertRole::Peer => {
            let extra = match role {
                CertRole::Server => d.server_names.clone(),
                _ => vec![],
            };
            crate::pki::member_names(&d.name, &d.namespace, &d.cluster_domain)
                .into_iter()
                .chain(extra)
                .partition(|n| n.parse::<std::net::IpAddr>().is_err())
        }
        _ => (vec![], vec![]),
    };
    let usages = match role {
        CertRole::Client => vec!["digital signature", "key encipherment", "client auth"],
        _ => vec![
            "digital signature",
            "key encipherment",
            "server auth",
            "client auth",
        ],
    };
    let common_name = match role {
        // etcd takes a client certificate's CN as its user once authentication is on.
        CertRole::Client => d.client_cn(),
        other => crate::model::pki::member_common_name(&d.name, other),
    };
    let spec = CertificateSpec {
        secret_name: name.clone(),
        issuer_ref: IssuerRef {
            name: cm.issuer_name.clone(),
            kind: Some(cm.issuer_kind.clone()),
            group: Some(cm.issuer_group.clone()),
        },
        common_name: Some(common_name),
        dns_names,
        ip_addresses,
        usages: usages.into_iter().map(String::from).collect(),
        // cert-manager's own default (2160h) unless the spec names one; renewal at two thirds
        // of it as in managed mode (cert-manager's default renewBefore is a third).
        duration: cm.lifetime_seconds.map(|s| format!("{s}s")),
        renew_before: cm.lifetime_seconds.map(|s| format!("{}s", s / 3)),
        private_key: Some(PrivateKey {
            algorithm: Some("ECDSA".into()),
            size: Some(256),
            rotation_policy: Some("Always".into()),
        }),
        secret_template: Some(SecretTemplate {
            labels: super::names::labels(&d.name),
        }),
    };
    let mut c = Certificate::new(&name, spec);
    c.metadata = meta(d, name);
    c
}

/// Why a Certificate is not ready, from cert-manager's `Ready` condition ("" when it says
/// nothing yet).
pub fn not_ready(c: &Certificate) -> String {
    let Some(ready) = c
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
    else {
        return "cert-manager has not looked at it yet".into();
    };
    match (&ready.reason, &ready.message) {
        (Some(r), Some(m)) => format!("Ready={} {r}: {m}", ready.status),
        (Some(r), None) => format!("Ready={} {r}", ready.status),
        (None, Some(m)) => format!("Ready={}: {m}", ready.status),
        (None, None) => format!("Ready={}", ready.status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm() -> CertManagerTls {
        CertManagerTls {
            issuer_name: "etcd-ca".into(),
            issuer_kind: "Issuer".into(),
            issuer_group: "cert-manager.io".into(),
            lifetime_seconds: Some(3 * 3600),
            cluster_issuer_allowed: false,
        }
    }

    #[test]
    fn each_leaf_asks_for_managed_modes_secret_names_and_usages() {
        let d = crate::fixtures::cluster("demo").desired();
        let server = certificate(&d, &cm(), CertRole::Server);
        assert_eq!(server.metadata.name.as_deref(), Some("demo-tls-server"));
        assert_eq!(server.spec.secret_name, "demo-tls-server");
        assert!(
            server
                .spec
                .dns_names
                .contains(&"*.demo.ns.svc.cluster.local".to_string())
        );
        assert!(
            server
                .spec
                .dns_names
                .contains(&"demo-client.ns.svc".to_string())
        );
        // cert-manager refuses an IP among dnsNames
        assert_eq!(server.spec.ip_addresses, vec!["127.0.0.1".to_string()]);
        assert!(server.spec.usages.contains(&"server auth".to_string()));
        // spec.tls.serverNames: on the server's Certificate only, names and addresses apart.
        let mut named = d.clone();
        named.server_names = vec!["etcd.example.com".into(), "203.0.113.10".into()];
        let s = certificate(&named, &cm(), CertRole::Server).spec;
        assert!(s.dns_names.contains(&"etcd.example.com".to_string()));
        assert_eq!(
            s.ip_addresses,
            vec!["127.0.0.1".to_string(), "203.0.113.10".to_string()]
        );
        let peer = certificate(&named, &cm(), CertRole::Peer).spec;
        assert!(!peer.dns_names.contains(&"etcd.example.com".to_string()));
        let client = certificate(&d, &cm(), CertRole::Client);
        // The cluster's own user; a cluster made before it keeps root until its move.
        assert_eq!(
            client.spec.common_name,
            Some(format!("kubectl-etcd:{}:{}", d.namespace, d.name))
        );
        let mut kept = d.clone();
        kept.kept_client_cn = Some("root".into());
        let client = certificate(&kept, &cm(), CertRole::Client);
        assert_eq!(client.spec.common_name.as_deref(), Some("root"));
        assert!(client.spec.dns_names.is_empty());
        assert!(!client.spec.usages.contains(&"server auth".to_string()));
        let peer = certificate(&d, &cm(), CertRole::Peer);
        assert!(peer.spec.usages.contains(&"client auth".to_string()));
        assert_eq!(peer.spec.duration.as_deref(), Some("10800s"));
        assert_eq!(peer.spec.renew_before.as_deref(), Some("3600s"));
        assert_eq!(peer.spec.issuer_ref.name, "etcd-ca");
        // owned by the cluster: deleted with it
        assert_eq!(
            peer.metadata
                .owner_references
                .as_ref()
                .map(|o| o[0].kind.as_str()),
            Some("EtcdCluster")
        );
    }

    #[test]
    fn the_manifest_is_cert_managers_shape() {
        let d = crate::fixtures::cluster("demo").desired();
        let mut no_lifetime = cm();
        no_lifetime.lifetime_seconds = None;
        let v = serde_json::to_value(certificate(&d, &no_lifetime, CertRole::Peer)).unwrap();
        assert_eq!(v["apiVersion"], "cert-manager.io/v1");
        assert_eq!(v["kind"], "Certificate");
        assert_eq!(v["spec"]["secretName"], "demo-tls-peer");
        assert_eq!(v["spec"]["issuerRef"]["kind"], "Issuer");
        assert_eq!(v["spec"]["privateKey"]["rotationPolicy"], "Always");
        // cert-manager's defaults where the spec names no lifetime
        assert!(v["spec"].get("duration").is_none());
        assert!(v["spec"].get("renewBefore").is_none());
    }

    #[test]
    fn not_ready_says_cert_managers_reason() {
        let d = crate::fixtures::cluster("demo").desired();
        let mut c = certificate(&d, &cm(), CertRole::Server);
        assert_eq!(not_ready(&c), "cert-manager has not looked at it yet");
        c.status = Some(CertificateStatus {
            conditions: vec![CertificateCondition {
                type_: "Ready".into(),
                status: "False".into(),
                reason: Some("IssuerNotReady".into()),
                message: Some("Issuer etcd-ca not found".into()),
            }],
        });
        assert_eq!(
            not_ready(&c),
            "Ready=False IssuerNotReady: Issuer etcd-ca not found"
        );
    }
}
