use std::sync::Arc;
use std::time::Duration;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;

use super::*;

const NOW: i64 = 1_800_000_000;
const DAY: u64 = 86_400;

fn der(pem: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
}

fn roots(ca: &Issued) -> Arc<rustls::RootCertStore> {
    let mut r = rustls::RootCertStore::empty();
    r.add(der(&ca.cert_pem)).unwrap();
    Arc::new(r)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn at(t: i64) -> UnixTime {
    UnixTime::since_unix_epoch(Duration::from_secs(u64::try_from(t).unwrap()))
}

/// Whether `leaf` verifies as a server certificate for `host` under `ca` at `t`.
fn serves(ca: &Issued, leaf: &Issued, host: &str, t: i64) -> bool {
    let v = WebPkiServerVerifier::builder_with_provider(roots(ca), provider())
        .build()
        .unwrap();
    v.verify_server_cert(
        &der(&leaf.cert_pem),
        &[],
        &ServerName::try_from(host.to_string()).unwrap(),
        &[],
        at(t),
    )
    .is_ok()
}

/// Whether `leaf` verifies as a client certificate under `ca` at `t`.
fn authenticates(ca: &Issued, leaf: &Issued, t: i64) -> bool {
    let v = WebPkiClientVerifier::builder_with_provider(roots(ca), provider())
        .build()
        .unwrap();
    v.verify_client_cert(&der(&leaf.cert_pem), &[], at(t))
        .is_ok()
}

fn issue(ca: &Issued, role: CertRole, lifetime: u64) -> Issued {
    let p = leaf_params(
        role,
        "demo",
        "team",
        "cluster.local",
        "alice",
        NOW,
        lifetime,
    )
    .unwrap();
    sign(&p, "demo", "team", &ca.key_pem).unwrap()
}

#[test]
fn the_server_certificate_names_every_member_the_client_service_and_the_loopback() {
    let ca = new_ca("demo", "team", NOW).unwrap();
    let server = issue(&ca, CertRole::Server, 90 * DAY);
    for host in [
        "demo-0.demo.team.svc.cluster.local",
        // A member a scale-up adds later is covered too.
        "demo-11.demo.team.svc.cluster.local",
        "demo-2.demo.team.svc",
        "demo-client",
        "demo-client.team",
        "demo-client.team.svc",
        "demo-client.team.svc.cluster.local",
        "localhost",
        "127.0.0.1",
    ] {
        assert!(serves(&ca, &server, host, NOW), "{host}");
    }
    for host in [
        "demo-0.other.team.svc.cluster.local",
        "demo-0.demo.elsewhere.svc.cluster.local",
        "other-client.team.svc",
        "10.0.0.1",
    ] {
        assert!(!serves(&ca, &server, host, NOW), "{host} was accepted");
    }
    // Peers are mutual: the peer certificate serves and authenticates.
    let peer = issue(&ca, CertRole::Peer, 90 * DAY);
    assert!(serves(
        &ca,
        &peer,
        "demo-1.demo.team.svc.cluster.local",
        NOW
    ));
    assert!(authenticates(&ca, &peer, NOW));
    // etcd's gRPC gateway dials its own member with the server certificate.
    assert!(authenticates(&ca, &server, NOW));
}

#[test]
fn a_client_certificate_authenticates_but_serves_nothing() {
    let ca = new_ca("demo", "team", NOW).unwrap();
    let client = issue(&ca, CertRole::Client, 90 * DAY);
    assert!(authenticates(&ca, &client, NOW));
    assert!(!serves(&ca, &client, "localhost", NOW));
    // Another cluster's CA does not take it.
    let other = new_ca("demo", "elsewhere", NOW).unwrap();
    assert!(!authenticates(&other, &client, NOW));
    // The dialer takes the pair as a client certificate.
    crate::etcd::TlsDial::new(
        ca.cert_pem.as_bytes(),
        client.cert_pem.as_bytes(),
        client.key_pem.as_bytes(),
        "demo-0.demo.team.svc.cluster.local",
    )
    .unwrap();
}

#[test]
fn validity_starts_a_minute_back_and_lasts_the_lifetime() {
    let ca = new_ca("demo", "team", NOW).unwrap();
    assert_eq!(
        pem_validity(ca.cert_pem.as_bytes()).unwrap(),
        (
            NOW - BACKDATE_SECONDS,
            NOW + i64::try_from(CA_LIFETIME_SECONDS).unwrap()
        )
    );
    let leaf = issue(&ca, CertRole::Server, 600);
    let (nb, na) = pem_validity(leaf.cert_pem.as_bytes()).unwrap();
    assert_eq!((nb, na), (NOW - BACKDATE_SECONDS, NOW + 600));
    assert!(serves(&ca, &leaf, "localhost", NOW + 599));
    assert!(!serves(&ca, &leaf, "localhost", NOW + 601), "expired");
    assert!(!serves(&ca, &leaf, "localhost", NOW - 120), "not valid yet");
    // Renewal falls at two thirds of notBefore..notAfter: 660 s with 60 s back, so 380 s after
    // issue.
    assert_eq!(crate::model::pki::renew_at(nb, na), NOW + 380);
}

#[test]
fn the_ca_is_a_ca_and_a_leaf_is_not() {
    let ca = new_ca("demo", "team", NOW).unwrap();
    let leaf = issue(&ca, CertRole::Server, 90 * DAY);
    // A leaf used as a CA signs nothing a verifier takes.
    let fake = Issued {
        cert_pem: leaf.cert_pem.clone(),
        key_pem: leaf.key_pem.clone(),
    };
    let forged = issue(&fake, CertRole::Client, 90 * DAY);
    assert!(!authenticates(&ca, &forged, NOW));
    assert!(!authenticates(&fake, &forged, NOW));
}

#[test]
fn a_client_certificate_names_its_user() {
    let p = leaf_params(
        CertRole::Client,
        "demo",
        "team",
        "cluster.local",
        "alice",
        NOW,
        DAY,
    )
    .unwrap();
    assert!(p.subject_alt_names.is_empty());
    let cn = p.distinguished_name.get(&DnType::CommonName).unwrap();
    assert_eq!(
        format!("{cn:?}"),
        format!("{:?}", rcgen::DnValue::from("alice"))
    );
    assert_eq!(
        p.extended_key_usages,
        vec![ExtendedKeyUsagePurpose::ClientAuth]
    );
}

#[test]
fn the_common_name_is_read_back_from_the_certificate() {
    let ca = new_ca("demo", "team", NOW).unwrap();
    let user = crate::keys::engine_user("team", "demo");
    let p = leaf_params(
        CertRole::Client,
        "demo",
        "team",
        "cluster.local",
        &user,
        NOW,
        DAY,
    );
    let leaf = sign(&p.unwrap(), "demo", "team", &ca.key_pem).unwrap();
    assert_eq!(der::common_name(&der(&leaf.cert_pem)), Some(user));
    let server = issue(&ca, CertRole::Server, DAY);
    assert_eq!(
        der::common_name(&der(&server.cert_pem)).as_deref(),
        Some("demo server")
    );
    assert_eq!(der::common_name(b"not a certificate"), None);
}

#[test]
fn times_out_of_range_are_refused() {
    assert!(matches!(
        leaf_params(
            CertRole::Client,
            "demo",
            "team",
            "cluster.local",
            "u",
            -5,
            DAY
        ),
        Err(PkiError::Time(_))
    ));
    assert!(matches!(
        leaf_params(
            CertRole::Client,
            "demo",
            "team",
            "cluster.local",
            "u",
            NOW,
            u64::MAX
        ),
        Err(PkiError::Time(_))
    ));
}

/// A trust bundle: both CAs' certificates, PEM, one after the other.
fn bundle(cas: &[&Issued]) -> Arc<rustls::RootCertStore> {
    let mut r = rustls::RootCertStore::empty();
    for ca in cas {
        r.add(der(&ca.cert_pem)).unwrap();
    }
    Arc::new(r)
}

#[test]
fn a_leaf_says_which_ca_signed_it() {
    let old = new_ca("demo", "team", NOW).unwrap();
    let new = new_ca("demo", "team", NOW + 10).unwrap();
    let leaf = issue(&new, CertRole::Peer, DAY);
    let d = |i: &Issued| der(&i.cert_pem).to_vec();
    assert!(der::signed_by(&d(&leaf), &d(&new)));
    assert!(
        !der::signed_by(&d(&leaf), &d(&old)),
        "same subject, other key"
    );
    assert!(!der::signed_by(&d(&leaf), &d(&leaf)));
    assert!(!der::signed_by(b"not a certificate", &d(&new)));
    assert_ne!(fingerprint(&d(&old)), fingerprint(&d(&new)));
    assert_eq!(fingerprint(&d(&old)).len(), 16);
}

#[test]
fn a_bundle_of_two_cas_with_one_subject_trusts_the_leaves_of_both() {
    // A rotation's trust bundle: the old and the new CA carry the same subject (the issuer the
    // leaves name); verifiers pick the one whose key checks.
    let old = new_ca("demo", "team", NOW).unwrap();
    let new = new_ca("demo", "team", NOW + 10).unwrap();
    let pem = format!("{}{}", old.cert_pem, new.cert_pem);
    assert_eq!(pem_certs(pem.as_bytes()).unwrap().len(), 2);
    for ca in [&old, &new] {
        let client = issue(ca, CertRole::Client, DAY);
        let v = WebPkiClientVerifier::builder_with_provider(bundle(&[&old, &new]), provider())
            .build()
            .unwrap();
        assert!(
            v.verify_client_cert(&der(&client.cert_pem), &[], at(NOW + 60))
                .is_ok()
        );
        let server = issue(ca, CertRole::Server, DAY);
        let v = WebPkiServerVerifier::builder_with_provider(bundle(&[&old, &new]), provider())
            .build()
            .unwrap();
        let host = ServerName::try_from("localhost").unwrap();
        assert!(
            v.verify_server_cert(&der(&server.cert_pem), &[], &host, &[], at(NOW + 60))
                .is_ok()
        );
    }
    // Once the old CA left the bundle its certificates are refused.
    let stale = issue(&old, CertRole::Client, DAY);
    assert!(!authenticates(&new, &stale, NOW + 60));
}

/// `spec.tls.serverNames`: a load balancer's name, a wildcard and an address are served by the
/// server certificate besides the cluster's own names; nothing else is.
#[test]
fn server_names_are_served_beside_the_clusters_own() {
    let ca = new_ca("demo", "team", NOW).unwrap();
    let mut p = leaf_params(
        CertRole::Server,
        "demo",
        "team",
        "cluster.local",
        "alice",
        NOW,
        90 * DAY,
    )
    .unwrap();
    let names: Vec<String> = [
        "etcd.example.com",
        "*.lb.example.com",
        "203.0.113.10",
        "fd00::10",
    ]
    .map(String::from)
    .to_vec();
    add_names(&mut p, &names).unwrap();
    let server = sign(&p, "demo", "team", &ca.key_pem).unwrap();
    for host in [
        "etcd.example.com",
        "a.lb.example.com",
        "203.0.113.10",
        "fd00::10",
        "demo-client.team.svc",
    ] {
        assert!(serves(&ca, &server, host, NOW), "{host}");
    }
    for host in ["example.com", "203.0.113.11"] {
        assert!(!serves(&ca, &server, host, NOW), "{host} was accepted");
    }
}
