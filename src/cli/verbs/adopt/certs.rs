//! TLS of an adoption, checked before anything changes: the Secrets the new members will use
//! (`--tls-peer-secret`, `--tls-server-secret`) against the certificates the old members present.
//! The new members join the old cluster, so with peer TLS each side must trust the other's peer
//! certificate, and with client TLS the clients of the old members must trust the new ones.
//!
//! The checks are pure (certificates and `now` in, refusals out), with rustls' own webpki
//! verifiers (the ones the engine dials with: no X.509 crate). What the old members trust is
//! judged by the CA that issued the certificate they present: etcd clusters sign their
//! certificates with the CA they trust. `presented_chain` is the one I/O: a TLS handshake through
//! a port-forward, stopped once the member showed its certificate (nothing is sent).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::model::ClusterView;
use crate::objects::TlsFiles;

/// A certificate chain a member presented (its certificate first), and where.
#[derive(Clone, Debug)]
pub(super) struct Presented {
    /// The old member, for messages.
    pub member: String,
    /// The host of the URL it was reached at (its certificate must cover it).
    pub host: String,
    pub chain: Vec<CertificateDer<'static>>,
}

/// A Secret of the new members, for messages: `Secret ns/name (--flag)`.
pub(super) struct Named<'a> {
    pub label: String,
    pub files: &'a TlsFiles,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn pem_certs(pem: &[u8], key: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{key} is not PEM: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{key} holds no certificate"));
    }
    Ok(certs)
}

fn roots(cas: &[CertificateDer<'static>]) -> Arc<RootCertStore> {
    let mut r = RootCertStore::empty();
    for c in cas {
        // A CA rustls cannot use trusts nothing: the checks below then fail, naming the Secret.
        let _ = r.add(c.clone());
    }
    Arc::new(r)
}

/// Whether `chain` is a server certificate of one of `cas` for `host`.
fn verify_server(
    cas: &[CertificateDer<'static>],
    chain: &[CertificateDer<'static>],
    host: &str,
    now: UnixTime,
) -> Result<(), rustls::Error> {
    let v = rustls::client::WebPkiServerVerifier::builder_with_provider(roots(cas), provider())
        .build()
        .map_err(|e| rustls::Error::General(e.to_string()))?;
    let name = ServerName::try_from(host.to_owned())
        .map_err(|e| rustls::Error::General(format!("{host}: {e}")))?;
    v.verify_server_cert(&chain[0], &chain[1..], &name, &[], now)
        .map(|_| ())
}

/// Whether `chain` is a client certificate of one of `cas`.
fn verify_client(
    cas: &[CertificateDer<'static>],
    chain: &[CertificateDer<'static>],
    now: UnixTime,
) -> Result<(), rustls::Error> {
    let v = rustls::server::WebPkiClientVerifier::builder_with_provider(roots(cas), provider())
        .build()
        .map_err(|e| rustls::Error::General(e.to_string()))?;
    v.verify_client_cert(&chain[0], &chain[1..], now)
        .map(|_| ())
}

fn wrong_name(e: &rustls::Error) -> bool {
    matches!(
        e,
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
        )
    )
}

/// The CAs of `cas` that issued what `p` presented (its chain verifies against them; its names
/// are the old cluster's business).
fn issuers(
    cas: &[CertificateDer<'static>],
    p: &Presented,
    now: UnixTime,
) -> Vec<CertificateDer<'static>> {
    cas.iter()
        .filter(
            |ca| match verify_server(std::slice::from_ref(ca), &p.chain, &p.host, now) {
                Ok(()) => true,
                Err(e) => wrong_name(&e),
            },
        )
        .cloned()
        .collect()
}

/// The leaf of `secret` as a server certificate of `cas` for every host of `hosts`: one refusal
/// naming the hosts it does not cover, or the reason it is no server certificate of them.
fn covers(
    cas: &[CertificateDer<'static>],
    chain: &[CertificateDer<'static>],
    hosts: &[String],
    now: UnixTime,
) -> Result<(), String> {
    let mut uncovered = Vec::new();
    for h in hosts {
        match verify_server(cas, chain, h, now) {
            Ok(()) => {}
            Err(e) if wrong_name(&e) => uncovered.push(h.clone()),
            Err(e) => {
                return Err(format!(
                    "is not a server certificate of the old members' CA ({e})"
                ));
            }
        }
    }
    if uncovered.is_empty() {
        Ok(())
    } else {
        Err(format!("does not cover {}", uncovered.join(", ")))
    }
}

/// Peer TLS: the new peer certificate (`peer`) against the peer certificate an old member
/// presented. The new members must trust it (their `ca.crt`), and the old members the new one:
/// signed by the CA of the old peer certificates, usable as client and server, covering each new
/// member's peer name (`new_hosts`; `pattern` is what to add, e.g. `*.main.ns.svc.cluster.local`).
pub(super) fn peer_refusals(
    peer: &Named,
    old: &Presented,
    new_hosts: &[String],
    pattern: &str,
    now: UnixTime,
) -> Vec<String> {
    let label = &peer.label;
    let (cas, chain) = match (
        pem_certs(&peer.files.ca, "ca.crt"),
        pem_certs(&peer.files.cert, "tls.crt"),
    ) {
        (Ok(a), Ok(c)) => (a, c),
        (Err(e), _) | (_, Err(e)) => return vec![format!("{label}: {e}")],
    };
    let mut why = Vec::new();
    if let Err(e) = crate::etcd::TlsDial::new(
        &peer.files.ca,
        &peer.files.cert,
        &peer.files.key,
        "member.invalid",
    ) {
        why.push(format!("{label}: {e}"));
    }
    let old_cas = issuers(&cas, old, now);
    if old_cas.is_empty() {
        why.push(format!(
            "{label}: its ca.crt does not trust the peer certificate {} presents, so the new \
             members could not reach the old ones: put the old cluster's CA in ca.crt",
            old.member
        ));
        return why;
    }
    if let Err(e) = verify_client(&old_cas, &chain, now) {
        why.push(format!(
            "{label}: its tls.crt is not a client certificate of the CA that signed the old \
             members' peer certificates ({e}), so the old members would refuse the new ones: sign \
             it with the old cluster's CA, extendedKeyUsage serverAuth and clientAuth"
        ));
        return why;
    }
    if let Err(e) = covers(&old_cas, &chain, new_hosts, now) {
        why.push(format!(
            "{label}: its tls.crt {e} (the new members' peer names): sign it for DNS:{pattern}"
        ));
    }
    why
}

/// Client TLS, when the old members serve https: the new serving certificate (`server`) must be
/// one the old members' clients trust (the CA of `--tls-secret`, `client`, that verifies what an
/// old member presents), covering each new member (`new_hosts`) and every name of the taken-over
/// Service the old serving certificate covers (`service_hosts`); and the new members must accept
/// the client certificate the old ones accept (`client` against the server Secret's `ca.crt`).
pub(super) fn client_refusals(
    server: &Named,
    client: &Named,
    old: &Presented,
    new_hosts: &[String],
    service_hosts: &[String],
    now: UnixTime,
) -> Vec<String> {
    let label = &server.label;
    let parsed = (
        pem_certs(&server.files.ca, "ca.crt"),
        pem_certs(&server.files.cert, "tls.crt"),
        pem_certs(&client.files.ca, "ca.crt"),
        pem_certs(&client.files.cert, "tls.crt"),
    );
    let (server_cas, server_chain, client_cas, client_chain) = match parsed {
        (Ok(a), Ok(b), Ok(c), Ok(d)) => (a, b, c, d),
        (Err(e), ..) | (_, Err(e), ..) => return vec![format!("{label}: {e}")],
        (.., Err(e), _) | (.., Err(e)) => return vec![format!("{}: {e}", client.label)],
    };
    let mut why = Vec::new();
    let trusted = issuers(&client_cas, old, now);
    if trusted.is_empty() {
        why.push(format!(
            "{}: its ca.crt does not trust the serving certificate {} presents",
            client.label, old.member
        ));
        return why;
    }
    let old_names: Vec<String> = service_hosts
        .iter()
        .filter(|h| verify_server(&trusted, &old.chain, h, now).is_ok())
        .cloned()
        .collect();
    let hosts: Vec<String> = new_hosts.iter().chain(&old_names).cloned().collect();
    if let Err(e) = covers(&trusted, &server_chain, &hosts, now) {
        why.push(format!(
            "{label}: its tls.crt {e}: clients of the old members would refuse the new ones; \
             sign it with the CA the old serving certificates come from, for the new members \
             and the names the old serving certificate has ({})",
            if old_names.is_empty() {
                "none of the Service's".to_string()
            } else {
                old_names.join(", ")
            }
        ));
    }
    if let Err(e) = verify_client(&server_cas, &client_chain, now) {
        why.push(format!(
            "{label}: its ca.crt does not accept the client certificate of {} that the old \
             members accept ({e}): clients of the old members would be refused; put the CA of \
             their client certificates in ca.crt",
            client.label
        ));
    }
    why
}

/// The names a client may dial Service `svc` of namespace `ns` by.
pub(super) fn service_hosts(svc: &str, ns: &str, domain: &str) -> Vec<String> {
    vec![
        svc.to_string(),
        format!("{svc}.{ns}"),
        format!("{svc}.{ns}.svc"),
        format!("{svc}.{ns}.svc.{domain}"),
    ]
}

/// The new members' TLS against the old cluster's, from the URLs alone: peer TLS on both
/// sides or on neither (members of one cluster dial each other as they advertise), and with
/// the client Service taken over, its clients' scheme unchanged. `peer_secret`: the new peer
/// Secret; `client_tls`: the new members serve https; `pattern`: the name to sign new peer
/// certificates for.
pub(super) fn scheme_refusals(
    c: &ClusterView,
    endpoints: &[String],
    peer_secret: Option<&str>,
    client_tls: bool,
    service: Option<&str>,
    pattern: &str,
) -> Vec<String> {
    let tls = |url: &str| url.starts_with("https://");
    let mut why = Vec::new();
    let peer_tls = c.members.iter().find(|m| tls(&m.peer_url));
    let peer_plain = c.members.iter().find(|m| !tls(&m.peer_url));
    match (peer_tls, peer_plain, peer_secret) {
        (Some(t), Some(p), _) => why.push(format!(
            "{} speaks TLS to its peers ({}) and {} does not ({}): finish that change first",
            t.name, t.peer_url, p.name, p.peer_url
        )),
        (Some(m), None, None) => why.push(format!(
            "{} speaks TLS to its peers ({}): pass --tls-peer-secret S, a Secret (tls.crt, \
             tls.key, ca.crt) with a peer certificate signed by the old cluster's CA for \
             DNS:{pattern} (usages serverAuth and clientAuth) and that CA in ca.crt",
            m.name, m.peer_url
        )),
        (None, Some(m), Some(secret)) => why.push(format!(
            "--tls-peer-secret {secret}: the old members speak plain http to their peers ({}), \
             so they could not talk to new members speaking https: adopt without it",
            m.peer_url
        )),
        _ => {}
    }
    let old_https = endpoints.iter().any(|e| tls(e));
    if let Some(svc) = service {
        if old_https && !client_tls {
            why.push(format!(
                "the old members serve clients over https ({}): with Service {svc} taken over, \
                 the new members must too: pass --tls-server-secret (a serving certificate of the \
                 CA the clients trust) and --tls-client-secret",
                endpoints.join(", ")
            ));
        } else if !old_https && client_tls {
            why.push(format!(
                "the old members serve clients over plain http ({}): with Service {svc} taken \
                 over its clients would find https: adopt without --tls-server-secret, or \
                 without --take-over-service",
                endpoints.join(", ")
            ));
        }
    }
    why
}

/// Records the chain a server presents, then stops the handshake (nothing is sent).
#[derive(Debug)]
struct Capture {
    seen: Mutex<Vec<CertificateDer<'static>>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for Capture {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let chain = std::iter::once(end_entity)
            .chain(intermediates)
            .map(|c| c.clone().into_owned())
            .collect();
        if let Ok(mut seen) = self.seen.lock() {
            *seen = chain;
        }
        Err(rustls::Error::General("certificate read".into()))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The certificate chain pod `pod` presents on `port` (through a port-forward), for `host`.
pub(super) async fn presented_chain(
    pods: &Api<Pod>,
    pod: &str,
    port: u16,
    host: &str,
    timeout: Duration,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let capture = Arc::new(Capture {
        seen: Mutex::default(),
        provider: provider(),
    });
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(capture.clone())
        .with_no_client_auth();
    let name = ServerName::try_from(host.to_owned()).map_err(|e| format!("{host}: {e}"))?;
    let mut forwarder = pods
        .portforward(pod, &[port])
        .await
        .map_err(|e| format!("port-forward to pod {pod}:{port}: {e}"))?;
    let stream = forwarder
        .take_stream(port)
        .ok_or_else(|| format!("port-forward to pod {pod}:{port} gave no stream"))?;
    let handshake = tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, stream);
    let outcome = tokio::time::timeout(timeout, handshake).await;
    forwarder.abort();
    let seen = capture.seen.lock().map(|s| s.clone()).unwrap_or_default();
    if seen.is_empty() {
        return Err(match outcome {
            Err(_) => format!("pod {pod}:{port} showed no certificate within {timeout:?}"),
            Ok(Err(e)) => format!("pod {pod}:{port} showed no certificate: {e}"),
            Ok(Ok(_)) => format!("pod {pod}:{port} showed no certificate"),
        });
    }
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD_CA: &str = include_str!("testdata/old-ca.pem");
    const OTHER_CA: &str = include_str!("testdata/other-ca.pem");
    const OLD_PEER: &str = include_str!("testdata/old-peer.pem");
    const OLD_SERVER: &str = include_str!("testdata/old-server.pem");
    const OLD_CLIENT: &str = include_str!("testdata/old-client.pem");
    const GOOD_PEER: &str = include_str!("testdata/good-peer.pem");
    const GOOD_SERVER: &str = include_str!("testdata/good-server.pem");
    const OTHER_CA_PEER: &str = include_str!("testdata/other-ca-peer.pem");
    const WRONG_NAMES_PEER: &str = include_str!("testdata/wrong-names-peer.pem");
    const SERVER_ONLY_PEER: &str = include_str!("testdata/server-only-peer.pem");

    /// 2027-01-15: inside every test certificate's validity (made 2026-12-02, 100 years).
    fn now() -> UnixTime {
        UnixTime::since_unix_epoch(Duration::from_secs(1_800_000_000))
    }

    /// The key of each leaf the new members would use.
    fn key_of(cert: &str) -> &'static str {
        [
            (GOOD_PEER, include_str!("testdata/good-peer.key")),
            (OTHER_CA_PEER, include_str!("testdata/other-ca-peer.key")),
            (
                WRONG_NAMES_PEER,
                include_str!("testdata/wrong-names-peer.key"),
            ),
            (
                SERVER_ONLY_PEER,
                include_str!("testdata/server-only-peer.key"),
            ),
        ]
        .into_iter()
        .find(|(c, _)| *c == cert)
        .map_or("", |(_, k)| k)
    }

    fn files(ca: &str, cert: &str) -> TlsFiles {
        TlsFiles {
            ca: ca.as_bytes().to_vec(),
            cert: cert.as_bytes().to_vec(),
            key: key_of(cert).as_bytes().to_vec(),
        }
    }

    fn presented(pem: &str) -> Presented {
        Presented {
            member: "etcd-0".into(),
            host: "etcd-0.etcd.ns.svc.cluster.local".into(),
            chain: pem_certs(pem.as_bytes(), "x").unwrap(),
        }
    }

    fn new_hosts() -> Vec<String> {
        (0..3)
            .map(|k| crate::objects::member_host("main", "ns", "cluster.local", k))
            .collect()
    }

    fn peer_check(ca: &str, cert: &str) -> Vec<String> {
        let f = files(ca, cert);
        peer_refusals(
            &Named {
                label: "Secret ns/main-peer (--tls-peer-secret)".into(),
                files: &f,
            },
            &presented(OLD_PEER),
            &new_hosts(),
            "*.main.ns.svc.cluster.local",
            now(),
        )
    }

    /// `why` is one refusal, saying each of `parts`.
    fn one_saying(why: &[String], parts: &[&str]) {
        assert_eq!(why.len(), 1, "{why:?}");
        for p in parts {
            assert!(why[0].contains(p), "{p:?} not in {why:?}");
        }
    }

    #[test]
    fn a_peer_certificate_of_the_old_clusters_ca_for_the_new_names_is_accepted() {
        assert_eq!(peer_check(OLD_CA, GOOD_PEER), Vec::<String>::new());
        // A bundle of CAs in ca.crt (the old one among them) is fine too.
        let bundle = format!("{OTHER_CA}{OLD_CA}");
        assert_eq!(peer_check(&bundle, GOOD_PEER), Vec::<String>::new());
    }

    #[test]
    fn a_ca_that_does_not_trust_the_old_members_is_refused_naming_the_secret() {
        one_saying(
            &peer_check(OTHER_CA, OTHER_CA_PEER),
            &[
                "Secret ns/main-peer (--tls-peer-secret): its ca.crt does not trust the peer certificate etcd-0 presents",
                "put the old cluster's CA in ca.crt",
            ],
        );
    }

    #[test]
    fn a_peer_certificate_of_another_ca_is_refused_even_when_ca_crt_trusts_both() {
        let bundle = format!("{OLD_CA}{OTHER_CA}");
        one_saying(
            &peer_check(&bundle, OTHER_CA_PEER),
            &[
                "not a client certificate of the CA that signed the old members' peer certificates",
                "sign it with the old cluster's CA",
            ],
        );
    }

    #[test]
    fn a_peer_certificate_without_the_new_members_names_is_refused_naming_them() {
        one_saying(
            &peer_check(OLD_CA, WRONG_NAMES_PEER),
            &[
                "does not cover main-0.main.ns.svc.cluster.local, main-1.main.ns.svc.cluster.local, main-2.main.ns.svc.cluster.local",
                "sign it for DNS:*.main.ns.svc.cluster.local",
            ],
        );
    }

    #[test]
    fn a_peer_certificate_only_for_servers_is_refused() {
        one_saying(
            &peer_check(OLD_CA, SERVER_ONLY_PEER),
            &["not a client certificate"],
        );
    }

    #[test]
    fn unreadable_peer_secrets_are_refused() {
        let why = peer_check("not pem", GOOD_PEER);
        assert!(why[0].contains("ca.crt holds no certificate"), "{why:?}");
        // A key that is not the certificate's.
        let mut f = files(OLD_CA, GOOD_PEER);
        f.key = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".to_vec();
        let why = peer_refusals(
            &Named {
                label: "S".into(),
                files: &f,
            },
            &presented(OLD_PEER),
            &new_hosts(),
            "*",
            now(),
        );
        assert!(why.iter().any(|w| w.contains("tls.key")), "{why:?}");
    }

    #[test]
    fn an_expired_or_not_yet_valid_certificate_is_refused() {
        let before = UnixTime::since_unix_epoch(Duration::from_secs(1_700_000_000));
        let f = files(OLD_CA, GOOD_PEER);
        let why = peer_refusals(
            &Named {
                label: "S".into(),
                files: &f,
            },
            &presented(OLD_PEER),
            &new_hosts(),
            "*",
            before,
        );
        assert!(!why.is_empty());
    }

    fn client_check(server_ca: &str, server_cert: &str, service: &[String]) -> Vec<String> {
        let s = files(server_ca, server_cert);
        let c = files(OLD_CA, OLD_CLIENT);
        client_refusals(
            &Named {
                label: "Secret ns/main-server (--tls-server-secret)".into(),
                files: &s,
            },
            &Named {
                label: "Secret ns/old-client (--tls-secret)".into(),
                files: &c,
            },
            &presented(OLD_SERVER),
            &new_hosts(),
            service,
            now(),
        )
    }

    #[test]
    fn a_serving_certificate_of_the_old_ca_covering_the_taken_over_service_is_accepted() {
        let svc = service_hosts("etcd", "ns", "cluster.local");
        assert_eq!(
            client_check(OLD_CA, GOOD_SERVER, &svc),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_serving_certificate_missing_a_service_name_the_old_one_had_is_refused() {
        // GOOD_PEER covers the members but not `etcd` nor `etcd.ns.svc`, which OLD_SERVER has;
        // `etcd.ns` the old one lacked too, so it is not asked for.
        let why = client_check(
            OLD_CA,
            GOOD_PEER,
            &service_hosts("etcd", "ns", "cluster.local"),
        );
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(
            why[0].contains("does not cover etcd, etcd.ns.svc:"),
            "{why:?}"
        );
        assert!(why[0].contains("(etcd, etcd.ns.svc)"), "{why:?}");
        // Without a Service taken over the members' names are enough.
        assert_eq!(client_check(OLD_CA, GOOD_PEER, &[]), Vec::<String>::new());
    }

    #[test]
    fn a_serving_certificate_of_another_ca_and_a_ca_refusing_the_old_clients_are_refused() {
        let why = client_check(OTHER_CA, OTHER_CA_PEER, &[]);
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(
            why[0].contains("clients of the old members would refuse the new ones"),
            "{why:?}"
        );
        assert!(
            why[1].contains(
                "does not accept the client certificate of Secret ns/old-client (--tls-secret)"
            ),
            "{why:?}"
        );
    }

    fn old_members(peer_scheme: &str) -> ClusterView {
        ClusterView {
            members: (0..3)
                .map(|k| crate::model::MemberView {
                    id: k + 1,
                    name: format!("etcd-{k}"),
                    peer_url: format!("{peer_scheme}://etcd-{k}.etcd.ns.svc.cluster.local:2380"),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn endpoints(scheme: &str) -> Vec<String> {
        (0..3)
            .map(|k| format!("{scheme}://etcd-{k}.etcd.ns.svc.cluster.local:2379"))
            .collect()
    }

    const PATTERN: &str = "*.main.ns.svc.cluster.local";

    #[test]
    fn peer_tls_needs_a_peer_secret_naming_what_to_sign() {
        let c = old_members("https");
        let why = scheme_refusals(&c, &endpoints("http"), None, false, None, PATTERN);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(
            why[0].starts_with("etcd-0 speaks TLS to its peers (https://etcd-0."),
            "{why:?}"
        );
        assert!(why[0].contains("pass --tls-peer-secret S"), "{why:?}");
        assert!(
            why[0].contains("DNS:*.main.ns.svc.cluster.local"),
            "{why:?}"
        );
        assert!(
            scheme_refusals(&c, &endpoints("http"), Some("p"), false, None, PATTERN).is_empty()
        );
    }

    #[test]
    fn a_peer_secret_for_plain_peers_and_mixed_peers_are_refused() {
        let why = scheme_refusals(
            &old_members("http"),
            &endpoints("http"),
            Some("p"),
            false,
            None,
            PATTERN,
        );
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(
            why[0].starts_with("--tls-peer-secret p: the old members speak plain http"),
            "{why:?}"
        );
        let mut c = old_members("https");
        c.members[2].peer_url = "http://etcd-2.etcd.ns.svc.cluster.local:2380".into();
        let why = scheme_refusals(&c, &endpoints("http"), Some("p"), false, None, PATTERN);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].contains("and etcd-2 does not"), "{why:?}");
        assert!(
            scheme_refusals(
                &old_members("http"),
                &endpoints("http"),
                None,
                false,
                None,
                PATTERN
            )
            .is_empty()
        );
    }

    #[test]
    fn a_taken_over_service_keeps_its_clients_scheme() {
        let c = old_members("http");
        let why = scheme_refusals(&c, &endpoints("https"), None, false, Some("etcd"), PATTERN);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(
            why[0].contains(
                "with Service etcd taken over, the new members must too: pass --tls-server-secret"
            ),
            "{why:?}"
        );
        let why = scheme_refusals(&c, &endpoints("http"), None, true, Some("etcd"), PATTERN);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].contains("its clients would find https"), "{why:?}");
        // Without the Service taken over the clients move themselves: either is fine.
        assert!(scheme_refusals(&c, &endpoints("https"), None, false, None, PATTERN).is_empty());
        assert!(
            scheme_refusals(&c, &endpoints("https"), None, true, Some("etcd"), PATTERN).is_empty()
        );
    }
}
