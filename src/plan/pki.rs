//! Managed TLS (`spec.tls.mode: managed`): the CA first, then each leaf the members mount
//! (server, peer, client), issued when missing and renewed at two thirds of its lifetime, one
//! Secret per pass; and `status.tls`. Pure: the certificates as observe read them, and `now`.
//!
//! ```text
//!   no CA ──IssueCertificate(ca)──▶ no leaves ──IssueCertificate(server|peer|client)──▶ …
//!   a leaf past 2/3 of its lifetime ──IssueCertificate(leaf, Renewal)──▶ (the kubelet brings the
//!   Secret into the pods; etcd reads its certificate files at each handshake: no restart)
//!   CA gone or unusable while its leaves remain: Hold (a new CA would not be trusted by members
//!   that loaded the old one at start)
//! ```
//!
//! The rule speaks before the workload exists (the members mount the Secrets, and the engine
//! dials with the client one), and never touches a cluster whose TLS is not its own.

use crate::api::{CertificateStatus, Reason, TlsStatus};
use crate::model::pki::{CertRole, CertificateView, Issue, SecretCert, leaf_due, renew_at};
use crate::model::{Desired, Observed};
use crate::objects;

use super::{Step, hold};

fn view(o: &Observed, role: CertRole) -> &SecretCert {
    o.certificates
        .iter()
        .find(|c| c.role == role)
        .map_or(&SecretCert::Missing, |c| &c.cert)
}

/// The certificate the engine writes next, if any.
pub fn certificates(d: &Desired, o: &Observed) -> Option<Step> {
    d.pki.as_ref()?;
    let now = o.now.as_second();
    let issue = |role, why| {
        Some(Step::IssueCertificate {
            role,
            secret: objects::tls_secret_name(&d.name, role),
            why,
        })
    };
    let leaves_exist = CertRole::LEAVES
        .iter()
        .any(|r| matches!(view(o, *r), SecretCert::Valid { .. }));
    match view(o, CertRole::Ca) {
        SecretCert::Missing if !leaves_exist => return issue(CertRole::Ca, Issue::Missing),
        SecretCert::Valid { .. } => {}
        lost => {
            let secret = objects::tls_secret_name(&d.name, CertRole::Ca);
            let why = match lost {
                SecretCert::Unreadable(why) => format!("holds no usable CA ({why})"),
                _ => "is gone".to_string(),
            };
            return Some(hold(
                Reason::CertificateAuthorityLost,
                format!(
                    "the CA Secret {}/{secret} {why} while certificates it issued remain: a new \
                     CA would not be trusted by members that loaded the old one when they \
                     started; put the Secret back from a copy (the members keep serving with \
                     the certificates they have)",
                    d.namespace
                ),
            ));
        }
    }
    CertRole::LEAVES
        .into_iter()
        .find_map(|role| leaf_due(view(o, role), now).and_then(|why| issue(role, why)))
}

/// `status.tls`: the mode, and each certificate's expiry and renewal time (managed) as observed.
/// Written for every cluster, `none` included: it is the record a spec without a mode reads
/// (`model::unset_tls_mode`).
pub fn status(d: &Desired, o: &Observed) -> Option<TlsStatus> {
    let mode = if d.pki.is_some() {
        "managed"
    } else if d.tls.client.is_some() || d.tls.peer_secret.is_some() {
        "secrets"
    } else {
        "none"
    };
    let time = |t: i64| {
        jiff::Timestamp::from_second(t)
            .map(|t| t.to_string())
            .unwrap_or_default()
    };
    let certificates = o
        .certificates
        .iter()
        .map(|CertificateView { role, secret, cert }| {
            let mut c = CertificateStatus {
                role: role.as_str().into(),
                secret: secret.clone(),
                ..Default::default()
            };
            match cert {
                SecretCert::Missing => c.problem = Some("the Secret does not exist".into()),
                SecretCert::Unreadable(why) => c.problem = Some(why.clone()),
                SecretCert::Valid {
                    not_before,
                    not_after,
                    current_ca,
                } => {
                    c.not_after = Some(time(*not_after));
                    if d.pki.is_some() && *role != CertRole::Ca {
                        c.renew_at = Some(time(renew_at(*not_before, *not_after)));
                    }
                    if !current_ca {
                        c.problem = Some("issued by another CA than the cluster's".into());
                    }
                }
            }
            c
        })
        .collect();
    Some(TlsStatus {
        mode: mode.into(),
        certificates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::cluster;

    const NOW: i64 = 1_800_000_000;
    const DAY: i64 = 86_400;

    fn managed() -> Desired {
        cluster("demo")
            .spec(|s| {
                s.tls = Some(crate::api::TlsSpec {
                    mode: Some("managed".into()),
                    ..Default::default()
                });
            })
            .desired()
    }

    fn valid(issued: i64, lifetime: i64) -> SecretCert {
        SecretCert::Valid {
            not_before: issued - 60,
            not_after: issued + lifetime,
            current_ca: true,
        }
    }

    fn observed(certs: &[(CertRole, SecretCert)]) -> Observed {
        Observed {
            now: jiff::Timestamp::from_second(NOW).unwrap(),
            certificates: certs
                .iter()
                .map(|(role, cert)| CertificateView {
                    role: *role,
                    secret: objects::tls_secret_name("demo", *role),
                    cert: cert.clone(),
                })
                .collect(),
            ..Default::default()
        }
    }

    fn all_fresh() -> Vec<(CertRole, SecretCert)> {
        vec![
            (CertRole::Ca, valid(NOW - DAY, 3650 * DAY)),
            (CertRole::Server, valid(NOW - DAY, 90 * DAY)),
            (CertRole::Peer, valid(NOW - DAY, 90 * DAY)),
            (CertRole::Client, valid(NOW - DAY, 90 * DAY)),
        ]
    }

    fn issues(step: Option<Step>) -> Option<(CertRole, Issue)> {
        match step? {
            Step::IssueCertificate { role, why, secret } => {
                assert_eq!(secret, objects::tls_secret_name("demo", role));
                Some((role, why))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_new_managed_cluster_gets_its_ca_first_then_each_leaf() {
        let d = managed();
        assert_eq!(
            issues(certificates(&d, &observed(&[]))),
            Some((CertRole::Ca, Issue::Missing))
        );
        let ca = [(CertRole::Ca, valid(NOW, 3650 * DAY))];
        assert_eq!(
            issues(certificates(&d, &observed(&ca))),
            Some((CertRole::Server, Issue::Missing))
        );
        let mut some = ca.to_vec();
        some.push((CertRole::Server, valid(NOW, 90 * DAY)));
        assert_eq!(
            issues(certificates(&d, &observed(&some))),
            Some((CertRole::Peer, Issue::Missing))
        );
        assert_eq!(certificates(&d, &observed(&all_fresh())), None);
    }

    #[test]
    fn the_planner_asks_for_certificates_before_it_builds_the_workload() {
        let d = managed();
        let o = observed(&[]);
        assert!(matches!(
            super::super::plan(&d, &o),
            Step::IssueCertificate {
                role: CertRole::Ca,
                ..
            }
        ));
        // Once they exist the usual first step follows.
        let o = observed(&all_fresh());
        assert!(matches!(super::super::plan(&d, &o), Step::Bootstrap { .. }));
    }

    #[test]
    fn a_leaf_is_renewed_at_two_thirds_of_its_lifetime_one_per_pass() {
        let d = managed();
        let mut certs = all_fresh();
        // Peer issued 59 days ago for 90 (+60 s back): renewal 60 days minus 20 s after issue.
        certs[2].1 = valid(NOW - 59 * DAY, 90 * DAY);
        assert_eq!(certificates(&d, &observed(&certs)), None);
        certs[2].1 = valid(NOW - 60 * DAY, 90 * DAY);
        assert_eq!(
            issues(certificates(&d, &observed(&certs))),
            Some((CertRole::Peer, Issue::Renewal))
        );
        // Two due: the first in issuing order now, the other on a later pass.
        certs[3].1 = valid(NOW - 80 * DAY, 90 * DAY);
        assert_eq!(
            issues(certificates(&d, &observed(&certs))),
            Some((CertRole::Peer, Issue::Renewal))
        );
        // A five-minute lifetime (the shortest the spec takes) renews 180 s after issue.
        certs = all_fresh();
        certs[1].1 = valid(NOW - 179, 300);
        assert_eq!(certificates(&d, &observed(&certs)), None);
        certs[1].1 = valid(NOW - 180, 300);
        assert_eq!(
            issues(certificates(&d, &observed(&certs))),
            Some((CertRole::Server, Issue::Renewal))
        );
    }

    #[test]
    fn a_leaf_of_another_ca_or_unreadable_is_issued_again() {
        let d = managed();
        let mut certs = all_fresh();
        certs[3].1 = SecretCert::Valid {
            not_before: NOW,
            not_after: NOW + DAY,
            current_ca: false,
        };
        assert_eq!(
            issues(certificates(&d, &observed(&certs))),
            Some((CertRole::Client, Issue::OtherCa))
        );
        certs[1].1 = SecretCert::Unreadable("lacks tls.key".into());
        assert_eq!(
            issues(certificates(&d, &observed(&certs))),
            Some((CertRole::Server, Issue::Unreadable))
        );
    }

    #[test]
    fn a_lost_ca_with_leaves_left_holds_and_names_the_secret() {
        let d = managed();
        let mut certs = all_fresh();
        certs.remove(0);
        match certificates(&d, &observed(&certs)) {
            Some(Step::Hold { reason, message }) => {
                assert_eq!(reason, Reason::CertificateAuthorityLost);
                assert!(message.contains("demo-tls-ca"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let mut certs = all_fresh();
        certs[0].1 = SecretCert::Unreadable("lacks ca.key".into());
        assert!(matches!(
            certificates(&d, &observed(&certs)),
            Some(Step::Hold { .. })
        ));
    }

    #[test]
    fn clusters_without_managed_tls_get_no_certificates() {
        let plain = cluster("demo").desired();
        assert_eq!(certificates(&plain, &observed(&[])), None);
        let st = status(&plain, &observed(&[])).unwrap();
        assert_eq!(
            (st.mode.as_str(), st.certificates.len()),
            ("none", 0),
            "recorded: a spec without a mode reads it back"
        );
        let byo = cluster("demo")
            .spec(|s| {
                s.tls = Some(crate::api::TlsSpec {
                    server_secret: Some("srv".into()),
                    client_secret: Some("cli".into()),
                    ..Default::default()
                });
            })
            .desired();
        assert_eq!(byo.pki, None);
        assert_eq!(certificates(&byo, &observed(&[])), None);
        assert_eq!(status(&byo, &observed(&[])).unwrap().mode, "secrets");
    }

    #[test]
    fn a_new_cluster_without_a_mode_starts_with_its_ca_and_records_managed() {
        let d = cluster("demo").spec(|s| s.tls = None).desired();
        assert_eq!(
            certificates(&d, &observed(&[])),
            Some(Step::IssueCertificate {
                role: CertRole::Ca,
                secret: "demo-tls-ca".into(),
                why: Issue::Missing,
            })
        );
        assert_eq!(status(&d, &observed(&[])).unwrap().mode, "managed");
    }

    #[test]
    fn status_shows_each_expiry_and_renewal_time() {
        let d = managed();
        let st = status(&d, &observed(&all_fresh())).unwrap();
        assert_eq!(st.mode, "managed");
        let server = st.certificates.iter().find(|c| c.role == "server").unwrap();
        assert_eq!(server.secret, "demo-tls-server");
        let na = jiff::Timestamp::from_second(NOW - DAY + 90 * DAY).unwrap();
        assert_eq!(server.not_after.as_deref(), Some(na.to_string().as_str()));
        assert!(server.renew_at.is_some());
        let ca = st.certificates.iter().find(|c| c.role == "ca").unwrap();
        assert_eq!(ca.renew_at, None, "the CA is not renewed by the engine");
    }
}
