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
//!   every Secret gone while members run: Hold (`lost_while_members_run`: put them back, or stop
//!   every member for a new CA); the CA alone left: its lost leaves are issued again
//! ```
//!
//! CA rotation (`spec.tls.caGeneration` above the CA Secret's, written by `kubectl etcd
//! rotate-ca`). etcd reads its certificate files at each handshake but its CA files only at
//! start, so trust changes by restarts, and a certificate of the new CA is issued only once
//! every member trusts it:
//!
//! ```text
//!   IssueCertificate(ca, Rotation)        new CA signs; the old one stays as retiring (trusted)
//!   IssueCertificate(leaf, Bundle) ×3     each leaf's ca.crt = old + new (certificate kept)
//!   (UpdateTemplate, RestartMember…)      the template's trusted-CA annotation changed: the
//!                                         usual rolling restart, one member at a time, each
//!                                         Ready and caught up first, the leader last
//!   IssueCertificate(leaf, OtherCa) ×3    once every pod runs the template: leaves from the new CA
//!   Wait(RotatingCa)                      until the kubelet can have brought them into the pods
//!   IssueCertificate(ca, Retire)          the old CA leaves the CA Secret
//!   IssueCertificate(leaf, Bundle) ×3     each ca.crt = new
//!   (UpdateTemplate, RestartMember…)      members restart again and trust the new CA alone
//! ```
//!
//! Every stage is read from the Secrets (the CA Secret's generation, signing and retiring CA;
//! each leaf's `ca.crt` and the CA whose key checks its signature) and the StatefulSet's pods:
//! a crash anywhere is another observed state, and each step is one apply of one Secret.
//!
//! The rule speaks before the workload exists (the members mount the Secrets, and the engine
//! dials with the client one), and never touches a cluster whose TLS is not its own.

use crate::api::{CertificateStatus, Reason, TlsStatus};
use crate::model::pki::{
    BACKDATE_SECONDS, CertRole, CertificateView, Issue, SECRET_PROPAGATION_SECONDS, SecretCert,
    leaf_due, renew_at,
};
use crate::model::{Desired, Observed};
use crate::objects;

use super::{Step, hold, wait};

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
        SecretCert::Missing if !leaves_exist => {
            return Some(
                lost_while_members_run(d, o).unwrap_or_else(|| Step::IssueCertificate {
                    role: CertRole::Ca,
                    secret: objects::tls_secret_name(&d.name, CertRole::Ca),
                    why: Issue::Missing,
                }),
            );
        }
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
    let pki = d.pki.as_ref()?;
    let t = &o.trust;
    if pki.ca_generation > t.generation && t.retiring.is_none() {
        return issue(CertRole::Ca, Issue::Rotation);
    }
    // Every ca.crt holds the CAs to trust before anything else: a member (re)started from now
    // on loads them.
    if let Some(role) = CertRole::LEAVES
        .into_iter()
        .find(|r| matches!(view(o, *r), SecretCert::Valid { .. }) && !t.leaf_trusts_wanted(*r))
    {
        return issue(role, Issue::Bundle);
    }
    let rotating = t.retiring.is_some();
    if rotating && !members_restarted(d, o) {
        // The template rules restart the members on the trust bundle, one at a time.
        return None;
    }
    if let Some(step) = CertRole::LEAVES
        .into_iter()
        .find_map(|role| leaf_due(view(o, role), now).and_then(|why| issue(role, why)))
    {
        return Some(step);
    }
    if !rotating {
        return None;
    }
    let newest = CertRole::LEAVES
        .into_iter()
        .filter_map(|r| match view(o, r) {
            SecretCert::Valid { not_before, .. } => Some(not_before + BACKDATE_SECONDS),
            _ => None,
        })
        .max()
        .unwrap_or_default();
    let ready_at = newest + SECRET_PROPAGATION_SECONDS;
    if now < ready_at {
        return Some(wait(
            Reason::RotatingCa,
            format!(
                "every certificate is the new CA's; the retiring CA is dropped in {} s, once the \
                 kubelet can have brought the last one into the member pods",
                ready_at - now
            ),
        ));
    }
    issue(CertRole::Ca, Issue::Retire)
}

/// A leaf due for renewal while members run comes before every rule ranked above
/// `certificates` in `plan::RULES` (a recovery, an adoption, a hibernation, a restore): those may
/// hold for as long as a person takes to answer (`spec.hibernate` without a destination), and a
/// running member whose certificate expires stops serving. A renewal is one Secret written from
/// the CA every member trusts, read at the next handshake: it changes nothing those rules guard.
/// Only a renewal: a missing or lost certificate and a CA rotation keep their place, and a
/// paused cluster stays paused.
pub fn renewal(d: &Desired, o: &Observed) -> Option<Step> {
    if !o.pods.values().any(|p| p.running) {
        return None;
    }
    certificates(d, o).filter(|s| {
        matches!(
            s,
            Step::IssueCertificate {
                why: Issue::Renewal,
                ..
            }
        )
    })
}

/// Every Secret of managed TLS gone (deleted by hand, or with the namespace's Secrets) while
/// members run: a new CA is never minted then. etcd loads its CA files only when it starts, so
/// the running members trust the lost CA alone; leaves of a new CA would be refused by every one
/// of them (peers, the probe, the engine's client), and the cluster would lock itself out within
/// the kubelet's sync period. What is safe instead:
///
/// - the CA Secret survives: the lost leaves are issued again from it (`leaf_due`, Missing),
///   trusted by every member as before;
/// - the CA Secret is gone with its leaves (this hold): the Secrets come back from a copy, or the
///   user asks for a new CA by stopping every member at once (deleting the member pods). The pods
///   the StatefulSet makes again cannot start without the Secrets they mount, so once no member
///   runs, no etcd holds the old CA: the engine issues a new CA and leaves, and every member
///   starts on them with its data (a short outage; clients holding certificates of the old CA
///   are refused afterwards);
/// - no member runs (a new or hibernated cluster): a new CA is issued as at creation.
///
/// A member counts while its container runs, while terminating too (its etcd still serves: a
/// wait once every one of them is going);
/// during a switch of TLS on, a member still on the plain-http template loaded no CA.
fn lost_while_members_run(d: &Desired, o: &Observed) -> Option<Step> {
    let switching_on = d.tls_switch.as_ref().is_some_and(|s| s.on);
    let running: Vec<&str> = o
        .pods
        .values()
        .filter(|p| p.running && !(switching_on && p.tls_switch.is_none()))
        .map(|p| p.name.as_str())
        .collect();
    if running.is_empty() {
        return None;
    }
    let stopping = o.pods.values().filter(|p| p.running).all(|p| p.terminating);
    if stopping {
        return Some(wait(
            Reason::IssuingCertificate,
            format!(
                "the TLS Secrets of {}/{} are gone and its members are stopping ({}): a new CA \
                 once none runs",
                d.namespace,
                d.name,
                running.join(", ")
            ),
        ));
    }
    let lost: Vec<String> = o
        .certificates
        .iter()
        .filter(|c| !matches!(c.cert, SecretCert::Valid { .. }))
        .map(|c| c.secret.clone())
        .collect();
    let lost = if lost.is_empty() {
        objects::tls_secret_name(&d.name, CertRole::Ca)
    } else {
        lost.join(", ")
    };
    let ns = &d.namespace;
    Some(hold(
        Reason::CertificateAuthorityLost,
        format!(
            "the TLS Secrets of {ns}/{} are gone ({lost}) while members run on certificates of \
             the CA they held ({}): a new CA would be trusted by none of them (etcd loads its CA \
             files only when it starts) and the cluster would lock itself out, so none is \
             issued. Put the Secrets back from a copy; or, to go on with a new CA (data kept, \
             every member down until it starts on it, clients of the old CA refused), stop \
             every member at once: `kubectl -n {ns} delete pod -l {}`",
            d.name,
            running.join(", "),
            objects::selector_string(&d.name)
        ),
    ))
}

/// Mode certManager: a hold while the issuer is a ClusterIssuer this driver may not use
/// (`CertManagerTls::refusal`); else the cert-manager `Certificate` the engine writes next (missing, or its
/// spec not the one wanted: one per pass), else a wait while cert-manager has not issued a leaf
/// the members mount and the engine dials with, else a hold while the leaves do not share the
/// CA in the server Secret's `ca.crt` (an issuer that is no CA issuer: members would refuse
/// each other). Renewal is cert-manager's; etcd reads its certificate files at each handshake.
pub fn cert_manager_certificates(d: &Desired, o: &Observed) -> Option<Step> {
    let cm = d.cert_manager.as_ref()?;
    if let Some(why) = cm.refusal(&d.namespace, &d.name) {
        return Some(hold(Reason::IssuerNotAllowed, why));
    }
    let issuer = format!("{} {}", cm.issuer_kind, cm.issuer_name);
    for role in CertRole::LEAVES {
        let want = objects::cert_manager::certificate(d, cm, role).spec;
        let have = o.cert_manager.iter().find(|c| c.role == role);
        if have.and_then(|c| c.spec.as_ref()) != Some(&want) {
            return Some(Step::RequestCertificate {
                role,
                certificate: objects::tls_secret_name(&d.name, role),
                issuer,
            });
        }
    }
    let condition = |role: CertRole| {
        o.cert_manager
            .iter()
            .find(|c| c.role == role)
            .map(|c| c.condition.clone())
            .unwrap_or_default()
    };
    for role in CertRole::LEAVES {
        let secret = objects::tls_secret_name(&d.name, role);
        match view(o, role) {
            SecretCert::Valid {
                current_ca: true, ..
            } => {}
            SecretCert::Valid { .. } => {
                return Some(hold(
                    Reason::CertificateAuthorityLost,
                    format!(
                        "the {} certificate in Secret {}/{secret} is not signed by the CA in the \
                         server Secret's ca.crt: the members trust that CA alone; {issuer} must \
                         be a CA issuer (spec.ca) that signs the server, peer and client \
                         certificates alike",
                        role.as_str(),
                        d.namespace
                    ),
                ));
            }
            SecretCert::Missing | SecretCert::Unreadable(_) => {
                let why = match view(o, role) {
                    SecretCert::Unreadable(why) => format!(" ({why})"),
                    _ => String::new(),
                };
                return Some(wait(
                    Reason::IssuingCertificate,
                    format!(
                        "cert-manager has not issued Secret {}/{secret}{why} yet (Certificate \
                         {secret}, {issuer}: {})",
                        d.namespace,
                        condition(role)
                    ),
                ));
            }
        }
    }
    None
}

/// Whether every member pod was started from a template trusting the CAs to trust now (its
/// `trusted-ca` annotation, which the StatefulSet copies from the template), and is Ready and
/// not terminating: its etcd loaded them. Nothing runs before the StatefulSet exists.
fn members_restarted(d: &Desired, o: &Observed) -> bool {
    let Some(sts) = o.statefulset.as_ref() else {
        return true;
    };
    let want = d.pki.as_ref().and_then(|p| p.trust.as_ref());
    o.pods.len() >= sts.replicas as usize
        && o.pods
            .values()
            .all(|p| p.trusted_ca.as_ref() == want && p.ready && !p.terminating)
}

/// Whether some member pod was started trusting other CAs than the ones to trust now.
fn trust_rolling(d: &Desired, o: &Observed) -> bool {
    let want = d.pki.as_ref().and_then(|p| p.trust.as_ref());
    want.is_some() && o.pods.values().any(|p| p.trusted_ca.as_ref() != want)
}

/// The trust the pod template records (`ManagedPki::trust`), from the CA Secret: once a rotation
/// began, the CAs to trust; before any, nothing (templates of clusters that never rotated stay
/// as they were).
pub fn settle(mut d: Desired, o: &Observed) -> Desired {
    let t = &o.trust;
    if let Some(p) = d.pki.as_mut()
        && (t.generation > 0 || t.retiring.is_some())
        && t.signing.is_some()
    {
        p.trust = Some(t.template_value());
    }
    d
}

/// Whether a CA rotation is under way (the `RotatingCA` condition): asked for and not begun, a
/// retiring CA, a leaf whose `ca.crt` is not the CAs to trust, or members not yet restarted on
/// them.
pub fn rotating(d: &Desired, o: &Observed) -> bool {
    let Some(p) = d.pki.as_ref() else {
        return false;
    };
    let t = &o.trust;
    t.signing.is_some()
        && (p.ca_generation > t.generation
            || t.retiring.is_some()
            || CertRole::LEAVES.iter().any(|r| !t.leaf_trusts_wanted(*r))
            || trust_rolling(d, o))
}

/// `status.tls`: the mode, and each certificate's expiry and renewal time (managed) as observed.
/// Written for every cluster, `none` included: it is the record a spec without a mode reads
/// (`model::unset_tls_mode`).
pub fn status(d: &Desired, o: &Observed) -> Option<TlsStatus> {
    // A TLS switch records its new mode once it is over (`tls_switch`): until then the members
    // speak the old one.
    let mode = if let Some(s) = d.tls_switch.as_ref() {
        match (s.on, s.secrets == objects::managed_tls(&d.name)) {
            (true, _) => "none",
            (false, true) => "managed",
            (false, false) => "secrets",
        }
    } else if d.pki.is_some() {
        "managed"
    } else if d.cert_manager.is_some() {
        "certManager"
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
                    names_current,
                } => {
                    c.not_after = Some(time(*not_after));
                    if d.pki.is_some() && *role != CertRole::Ca {
                        c.renew_at = Some(time(renew_at(*not_before, *not_after)));
                    }
                    if !current_ca {
                        c.problem = Some("issued by another CA than the cluster's".into());
                    } else if !names_current {
                        c.problem = Some("issued for other names than spec.tls.serverNames".into());
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
            names_current: true,
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

    fn cert_manager() -> Desired {
        cluster("demo").cert_manager().desired()
    }

    /// What cert-manager holds for `d`: each leaf's Certificate as the engine writes it.
    fn requested(d: &Desired) -> Vec<crate::model::pki::CertManagerView> {
        CertRole::LEAVES
            .into_iter()
            .map(|role| crate::model::pki::CertManagerView {
                role,
                spec: Some(
                    objects::cert_manager::certificate(d, d.cert_manager.as_ref().unwrap(), role)
                        .spec,
                ),
                condition: "Ready=False Pending: Issuing certificate".into(),
            })
            .collect()
    }

    #[test]
    fn a_cluster_issuer_is_held_unless_the_driver_has_the_leave() {
        let shared = cluster("demo")
            .cert_manager()
            .spec(|s| {
                s.tls.as_mut().unwrap().issuer_ref.as_mut().unwrap().kind =
                    Some("ClusterIssuer".into())
            })
            .desired();
        let o = observed(&[]);
        // Without the leave (the default of the operator and the CLI): nothing is requested,
        // whatever cert-manager holds already.
        for held in [o.clone(), {
            let mut o = o.clone();
            o.cert_manager = requested(&shared);
            o
        }] {
            match cert_manager_certificates(&shared, &held) {
                Some(Step::Hold {
                    reason: Reason::IssuerNotAllowed,
                    message,
                }) => {
                    for part in [
                        "ns/demo",
                        "ClusterIssuer etcd-ca",
                        "kind: Issuer",
                        "--allow-cluster-issuer",
                        "KUBECTL_ETCD_ALLOW_CLUSTER_ISSUER",
                    ] {
                        assert!(message.contains(part), "{part}: {message}");
                    }
                }
                other => panic!("{other:?}"),
            }
        }
        // With it: the Certificates name the ClusterIssuer.
        let allowed = crate::model::pki::keep_issuer(shared.clone(), true);
        match cert_manager_certificates(&allowed, &o) {
            Some(Step::RequestCertificate { issuer, .. }) => {
                assert_eq!(issuer, "ClusterIssuer etcd-ca");
            }
            other => panic!("{other:?}"),
        }
        // An Issuer of the namespace needs no leave; another group's kind is not cert-manager's.
        assert!(matches!(
            cert_manager_certificates(&cert_manager(), &o),
            Some(Step::RequestCertificate { .. })
        ));
        let mut external = shared.clone();
        external.cert_manager.as_mut().unwrap().issuer_group = "awspca.cert-manager.io".into();
        assert!(matches!(
            cert_manager_certificates(&external, &o),
            Some(Step::RequestCertificate { .. })
        ));
        // The driver's leave does not change what is requested.
        assert_eq!(
            objects::cert_manager::certificate(
                &allowed,
                allowed.cert_manager.as_ref().unwrap(),
                CertRole::Peer
            )
            .spec,
            objects::cert_manager::certificate(
                &shared,
                shared.cert_manager.as_ref().unwrap(),
                CertRole::Peer
            )
            .spec
        );
    }

    #[test]
    fn cert_manager_mode_writes_each_certificate_then_waits_for_its_secret() {
        let d = cert_manager();
        assert_eq!(d.pki, None);
        assert_eq!(d.tls, objects::managed_tls("demo"));
        // nothing yet: the server's Certificate first, and the engine issues nothing itself
        let o = observed(&[]);
        assert_eq!(certificates(&d, &o), None);
        match cert_manager_certificates(&d, &o) {
            Some(Step::RequestCertificate {
                role: CertRole::Server,
                certificate,
                issuer,
            }) => {
                assert_eq!(certificate, "demo-tls-server");
                assert_eq!(issuer, "Issuer etcd-ca");
            }
            other => panic!("{other:?}"),
        }
        // a Certificate edited by hand (another issuer) is written again
        let mut o = observed(&[]);
        o.cert_manager = requested(&d);
        o.cert_manager[1].spec.as_mut().unwrap().issuer_ref.name = "other".into();
        assert!(matches!(
            cert_manager_certificates(&d, &o),
            Some(Step::RequestCertificate {
                role: CertRole::Peer,
                ..
            })
        ));
        // every Certificate as wanted, no Secret yet: a wait that says what cert-manager says
        o.cert_manager = requested(&d);
        match cert_manager_certificates(&d, &o) {
            Some(Step::Wait { reason, message }) => {
                assert_eq!(reason, Reason::IssuingCertificate);
                assert!(message.contains("Secret ns/demo-tls-server"), "{message}");
                assert!(
                    message.contains("Pending: Issuing certificate"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
        // issued, all by the server's CA: nothing to say (renewal is cert-manager's)
        let mut o = observed(&all_fresh()[1..]);
        o.cert_manager = requested(&d);
        assert_eq!(cert_manager_certificates(&d, &o), None);
        assert_eq!(status(&d, &o).unwrap().mode, "certManager");
        // a leaf another CA signed (the issuer is no CA issuer): held, naming the fix
        let mut certs = all_fresh()[1..].to_vec();
        certs[2].1 = SecretCert::Valid {
            not_before: NOW - DAY,
            not_after: NOW + DAY,
            current_ca: false,
            names_current: true,
        };
        let mut o = observed(&certs);
        o.cert_manager = requested(&d);
        match cert_manager_certificates(&d, &o) {
            Some(Step::Hold { message, .. }) => {
                assert!(message.contains("client certificate"), "{message}");
                assert!(message.contains("CA issuer"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        // other modes: silent
        assert_eq!(cert_manager_certificates(&managed(), &observed(&[])), None);
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
    fn a_restores_certificates_are_made_while_its_restore_pod_runs() {
        let d = cluster("demo")
            .spec(|s| {
                s.tls = Some(crate::api::TlsSpec {
                    mode: Some("managed".into()),
                    ..Default::default()
                });
                s.restore = Some(crate::api::RestoreSpec {
                    source: "s3://backups/demo.db.zst".into(),
                    ..Default::default()
                });
            })
            .desired();
        let running = |certs: &[(CertRole, SecretCert)]| Observed {
            restore_pod: Some(crate::model::RestorePodView::Running),
            ..observed(certs)
        };
        // The restore pod first: the snapshot is the long part.
        assert!(matches!(
            super::super::plan(&d, &observed(&[])),
            Step::RestoreSeed { .. }
        ));
        // Then, while it runs, one certificate per pass.
        assert!(matches!(
            super::super::plan(&d, &running(&[])),
            Step::IssueCertificate {
                role: CertRole::Ca,
                ..
            }
        ));
        let ca = [(CertRole::Ca, valid(NOW, 10 * 365 * DAY))];
        assert!(matches!(
            super::super::plan(&d, &running(&ca)),
            Step::IssueCertificate {
                role: CertRole::Server,
                ..
            }
        ));
        // All made: the restore is waited for.
        assert!(matches!(
            super::super::plan(&d, &running(&all_fresh())),
            Step::Wait {
                reason: Reason::RestoringSnapshot,
                ..
            }
        ));
        // A PKI that needs a person (the CA gone under its leaves) does not hide the restore's
        // progress: it speaks once the restore is done.
        let lost = [(CertRole::Server, valid(NOW, 90 * DAY))];
        assert!(matches!(
            super::super::plan(&d, &running(&lost)),
            Step::Wait {
                reason: Reason::RestoringSnapshot,
                ..
            }
        ));
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
            names_current: true,
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
                    peer_secret: Some("peer".into()),
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

/// CA rotation: each stage from the Secrets and pods alone, the full planner around it, and a
/// simulated world (Secrets, the kubelet's lag in bringing them into pods, what each member
/// loaded at start) driven through a rotation with a crash at every pass.
#[cfg(test)]
pub(super) mod rotation {
    use std::collections::{BTreeMap, BTreeSet};

    use super::super::tests::healthy;
    use super::*;
    use crate::api::condition;
    use crate::fixtures::cluster;
    use crate::model::pki::{LeafTrust, TrustView};

    const NOW: i64 = 1_800_000_000;
    const DAY: i64 = 86_400;
    const A: &str = "aaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbb";

    fn managed(generation: i64) -> Desired {
        cluster("demo")
            .replicas(3)
            .spec(|s| {
                s.tls = Some(crate::api::TlsSpec {
                    mode: Some("managed".into()),
                    ca_generation: (generation > 0).then_some(generation),
                    ..Default::default()
                });
            })
            .desired()
    }

    /// A state of the Secrets: the CA Secret's generation, signing and retiring CA; each leaf's
    /// signer (`current_ca` against the signing CA) and `ca.crt`; when the leaves were issued.
    struct Secrets {
        generation: u64,
        signing: &'static str,
        retiring: Option<&'static str>,
        issuer: [&'static str; 3],
        trusts: [Vec<&'static str>; 3],
        issued: [i64; 3],
    }

    impl Secrets {
        fn steady(ca: &'static str) -> Self {
            Secrets {
                generation: 0,
                signing: ca,
                retiring: None,
                issuer: [ca; 3],
                trusts: [vec![ca], vec![ca], vec![ca]],
                issued: [NOW - DAY; 3],
            }
        }
    }

    /// A healthy 3-member cluster of `d` with these Secrets, each pod started trusting `loaded`
    /// (`None`: before any rotation).
    fn observed(d: &Desired, s: &Secrets, loaded: Option<&str>, now: i64) -> Observed {
        let mut o = healthy(d, 3);
        o.now = jiff::Timestamp::from_second(now).unwrap();
        o.certificates = std::iter::once(CertificateView {
            role: CertRole::Ca,
            secret: objects::tls_secret_name("demo", CertRole::Ca),
            cert: SecretCert::Valid {
                not_before: NOW - 100 * DAY,
                not_after: NOW + 3000 * DAY,
                current_ca: true,
                names_current: true,
            },
        })
        .chain(
            CertRole::LEAVES
                .iter()
                .enumerate()
                .map(|(i, r)| CertificateView {
                    role: *r,
                    secret: objects::tls_secret_name("demo", *r),
                    cert: SecretCert::Valid {
                        not_before: s.issued[i] - BACKDATE_SECONDS,
                        not_after: s.issued[i] + 90 * DAY,
                        current_ca: s.issuer[i] == s.signing,
                        names_current: true,
                    },
                }),
        )
        .collect();
        o.trust = TrustView {
            generation: s.generation,
            signing: Some(s.signing.into()),
            retiring: s.retiring.map(Into::into),
            leaves: CertRole::LEAVES
                .iter()
                .enumerate()
                .map(|(i, r)| LeafTrust {
                    role: *r,
                    trusts: s.trusts[i].iter().map(|t| t.to_string()).collect(),
                })
                .collect(),
        };
        for p in o.pods.values_mut() {
            p.trusted_ca = loaded.map(Into::into);
        }
        o
    }

    /// The planner's step as the engine takes it: `settle` first.
    fn next(d: &Desired, o: &Observed) -> Step {
        super::super::plan(&settle(d.clone(), o), o)
    }

    fn cert_step(step: Option<Step>) -> Option<(CertRole, Issue)> {
        match step? {
            Step::IssueCertificate { role, why, .. } => Some((role, why)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_raised_generation_starts_with_a_new_ca_kept_beside_the_old() {
        let d = managed(1);
        let o = observed(&d, &Secrets::steady(A), None, NOW);
        assert_eq!(
            cert_step(certificates(&d, &o)),
            Some((CertRole::Ca, Issue::Rotation))
        );
        let step = next(&d, &o);
        assert_eq!(step.reason(), Reason::RotatingCa);
        assert!(step.to_string().contains("retiring"), "{step}");
        // Without a raised generation nothing happens.
        let d0 = managed(0);
        assert_eq!(
            certificates(&d0, &observed(&d0, &Secrets::steady(A), None, NOW)),
            None
        );
        assert!(!rotating(
            &d0,
            &observed(&d0, &Secrets::steady(A), None, NOW)
        ));
    }

    #[test]
    fn every_leaf_trusts_both_cas_before_any_member_restarts() {
        let d = managed(1);
        let mut s = Secrets::steady(A);
        s.generation = 1;
        s.signing = B;
        s.retiring = Some(A);
        let o = observed(&d, &s, None, NOW);
        // The leaves are the old CA's: not issued again before the members trust the new one.
        assert_eq!(
            cert_step(certificates(&d, &o)),
            Some((CertRole::Server, Issue::Bundle))
        );
        s.trusts[0] = vec![A, B];
        assert_eq!(
            cert_step(certificates(&d, &observed(&d, &s, None, NOW))),
            Some((CertRole::Peer, Issue::Bundle))
        );
        s.trusts[1] = vec![B, A];
        s.trusts[2] = vec![A, B];
        let o = observed(&d, &s, None, NOW);
        assert_eq!(certificates(&settle(d.clone(), &o), &o), None);
        // Then the usual rolling restart: the template records the CAs to trust.
        assert!(matches!(next(&d, &o), Step::UpdateTemplate { .. }));
        assert!(rotating(&settle(d.clone(), &o), &o));
    }

    #[test]
    fn the_members_restart_one_at_a_time_the_leader_last_and_no_leaf_moves_meanwhile() {
        let d = managed(1);
        let mut s = Secrets::steady(A);
        (s.generation, s.signing, s.retiring) = (1, B, Some(A));
        s.trusts = [vec![A, B], vec![A, B], vec![A, B]];
        let mut o = observed(&d, &s, None, NOW);
        let settled = settle(d.clone(), &o);
        let sts = o.statefulset.as_mut().unwrap();
        sts.template_hash = Some(objects::template_hash(&settled));
        sts.update_revision = Some("rev2".into());
        let leader = match &o.etcd {
            crate::model::EtcdView::Reached(c) => c.leader_member().and_then(|m| m.ordinal),
            _ => None,
        };
        match next(&d, &o) {
            Step::RestartMember { ordinal, .. } => assert_ne!(Some(ordinal), leader),
            other => panic!("{other:?}"),
        }
        // One pod restarted on the bundle, the others not yet: still no certificate.
        let trust = settled.pki.as_ref().unwrap().trust.clone();
        let first = *o.pods.keys().find(|k| Some(**k) != leader).unwrap();
        let p = o.pods.get_mut(&first).unwrap();
        p.trusted_ca = trust.clone();
        p.revision = Some("rev2".into());
        assert_eq!(certificates(&settled, &o), None);
        // Every pod on the bundle but one not Ready yet: still none.
        for p in o.pods.values_mut() {
            p.trusted_ca = trust.clone();
            p.revision = Some("rev2".into());
        }
        o.pods.get_mut(&first).unwrap().ready = false;
        assert_eq!(certificates(&settled, &o), None);
        o.pods.get_mut(&first).unwrap().ready = true;
        assert_eq!(
            cert_step(certificates(&settled, &o)),
            Some((CertRole::Server, Issue::OtherCa))
        );
    }

    #[test]
    fn the_old_ca_leaves_only_after_every_leaf_is_the_new_cas_and_the_kubelet_had_time() {
        let d = managed(1);
        let mut s = Secrets::steady(A);
        (s.generation, s.signing, s.retiring) = (1, B, Some(A));
        s.trusts = [vec![A, B], vec![A, B], vec![A, B]];
        s.issuer = [B, B, A];
        let o = observed(&d, &s, None, NOW);
        let loaded = settle(d.clone(), &o).pki.unwrap().trust;
        let at = |s: &Secrets, now| observed(&d, s, loaded.as_deref(), now);
        assert_eq!(
            cert_step(certificates(&settle(d.clone(), &at(&s, NOW)), &at(&s, NOW))),
            Some((CertRole::Client, Issue::OtherCa))
        );
        s.issuer = [B; 3];
        s.issued = [NOW - 60, NOW - 30, NOW];
        let o = at(&s, NOW + 30);
        match certificates(&settle(d.clone(), &o), &o) {
            Some(Step::Wait { reason, message }) => {
                assert_eq!(reason, Reason::RotatingCa);
                assert!(message.contains("90 s"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let o = at(&s, NOW + SECRET_PROPAGATION_SECONDS);
        assert_eq!(
            cert_step(certificates(&settle(d.clone(), &o), &o)),
            Some((CertRole::Ca, Issue::Retire))
        );
    }

    #[test]
    fn once_the_old_ca_is_dropped_the_bundles_shrink_then_the_members_restart_again() {
        let d = managed(1);
        let mut s = Secrets::steady(B);
        s.generation = 1;
        s.trusts = [vec![A, B], vec![A, B], vec![A, B]];
        let o = observed(&d, &s, Some("aaaaaaaaaaaaaaaa,bbbbbbbbbbbbbbbb"), NOW);
        let settled = settle(d.clone(), &o);
        assert_eq!(settled.pki.as_ref().unwrap().trust.as_deref(), Some(B));
        assert_eq!(
            cert_step(certificates(&settled, &o)),
            Some((CertRole::Server, Issue::Bundle))
        );
        s.trusts = [vec![B], vec![B], vec![B]];
        let o = observed(&d, &s, Some("aaaaaaaaaaaaaaaa,bbbbbbbbbbbbbbbb"), NOW);
        assert!(matches!(next(&d, &o), Step::UpdateTemplate { .. }));
        assert!(
            rotating(&settle(d.clone(), &o), &o),
            "until the members dropped the old CA"
        );
        let o = observed(&d, &s, Some(B), NOW);
        let settled = settle(d.clone(), &o);
        assert!(!rotating(&settled, &o));
        assert_eq!(certificates(&settled, &o), None);
    }

    #[test]
    fn a_second_request_during_a_rotation_waits_for_it_to_finish() {
        let d = managed(2);
        let mut s = Secrets::steady(A);
        (s.generation, s.signing, s.retiring) = (1, B, Some(A));
        let o = observed(&d, &s, None, NOW);
        assert_eq!(
            cert_step(certificates(&d, &o)),
            Some((CertRole::Server, Issue::Bundle))
        );
    }

    #[test]
    fn the_rotating_ca_condition_keeps_a_driver_waiting() {
        let d = managed(1);
        let o = observed(&d, &Secrets::steady(A), None, NOW);
        let step = next(&d, &o);
        let st = super::super::derive_status(&settle(d.clone(), &o), &o, &step, None, o.now);
        let c = st
            .conditions
            .iter()
            .find(|c| c.type_ == condition::ROTATING_CA)
            .unwrap();
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", "RotatingCA")
        );
        assert!(!super::super::converged(&st, Some(d.generation)));
        let d0 = managed(0);
        let o = observed(&d0, &Secrets::steady(A), None, NOW);
        let st = super::super::derive_status(&d0, &o, &Step::Idle, None, o.now);
        let c = st
            .conditions
            .iter()
            .find(|c| c.type_ == condition::ROTATING_CA)
            .unwrap();
        assert_eq!(c.status, "False");
    }

    #[test]
    fn a_cluster_that_never_rotated_keeps_its_template() {
        let d = managed(0);
        let o = observed(&d, &Secrets::steady(A), None, NOW);
        assert_eq!(settle(d.clone(), &o).pki.unwrap().trust, None);
        assert_eq!(
            objects::template_hash(&settle(d.clone(), &o)),
            objects::template_hash(&d)
        );
    }

    /// One certificate as a pod's files hold it: the CA that signed it, the CAs of its `ca.crt`.
    #[derive(Clone, Debug, PartialEq)]
    struct Files {
        issuer: String,
        trusts: BTreeSet<String>,
    }

    /// The simulated world of a rotation: the Secrets (with their history, for the kubelet's
    /// lag), and per member what its etcd loaded as CAs at start and its template annotation.
    struct World {
        now: i64,
        generation: u64,
        signing: String,
        retiring: Option<String>,
        next_ca: u32,
        /// Per leaf: its history of (written at, files).
        leaves: BTreeMap<CertRole, Vec<(i64, Files)>>,
        issued: BTreeMap<CertRole, i64>,
        /// Per member: CAs loaded at start, template annotation at creation.
        members: Vec<(BTreeSet<String>, Option<String>)>,
        restarting: Option<usize>,
    }

    /// The kubelet brings a changed Secret into running pods within this (< the engine's wait).
    const KUBELET_LAG: i64 = 90;
    const PASS_SECONDS: i64 = 20;

    impl World {
        fn new() -> Self {
            let files = Files {
                issuer: "ca0".into(),
                trusts: BTreeSet::from(["ca0".to_string()]),
            };
            World {
                now: NOW,
                generation: 0,
                signing: "ca0".into(),
                retiring: None,
                next_ca: 1,
                leaves: CertRole::LEAVES
                    .iter()
                    .map(|r| (*r, vec![(NOW - DAY, files.clone())]))
                    .collect(),
                issued: CertRole::LEAVES.iter().map(|r| (*r, NOW - DAY)).collect(),
                members: vec![(files.trusts.clone(), None); 3],
                restarting: None,
            }
        }

        fn current(&self, r: CertRole) -> &Files {
            &self.leaves[&r].last().unwrap().1
        }

        /// What a running pod's files hold: the newest version written `KUBELET_LAG` ago at
        /// the latest (the worst case: the kubelet as late as it may be).
        fn mounted(&self, r: CertRole) -> &Files {
            let h = &self.leaves[&r];
            &h.iter()
                .rev()
                .find(|(at, _)| *at <= self.now - KUBELET_LAG)
                .unwrap_or(&h[0])
                .1
        }

        fn wanted(&self) -> BTreeSet<String> {
            self.retiring
                .iter()
                .chain([&self.signing])
                .cloned()
                .collect()
        }

        fn observed(&self, d: &Desired) -> Observed {
            let mut o = healthy(d, 3);
            o.now = jiff::Timestamp::from_second(self.now).unwrap();
            o.certificates = std::iter::once(CertificateView {
                role: CertRole::Ca,
                secret: objects::tls_secret_name("demo", CertRole::Ca),
                cert: SecretCert::Valid {
                    not_before: NOW - DAY,
                    not_after: NOW + 3000 * DAY,
                    current_ca: true,
                    names_current: true,
                },
            })
            .chain(CertRole::LEAVES.iter().map(|r| CertificateView {
                role: *r,
                secret: objects::tls_secret_name("demo", *r),
                cert: SecretCert::Valid {
                    not_before: self.issued[r] - BACKDATE_SECONDS,
                    not_after: self.issued[r] + 90 * DAY,
                    current_ca: self.current(*r).issuer == self.signing,
                    names_current: true,
                },
            }))
            .collect();
            o.trust = TrustView {
                generation: self.generation,
                signing: Some(self.signing.clone()),
                retiring: self.retiring.clone(),
                leaves: CertRole::LEAVES
                    .iter()
                    .map(|r| LeafTrust {
                        role: *r,
                        trusts: self.current(*r).trusts.iter().cloned().collect(),
                    })
                    .collect(),
            };
            let settled = settle(d.clone(), &o);
            let sts = o.statefulset.as_mut().unwrap();
            sts.template_hash = Some(objects::template_hash(&settled));
            for (k, p) in &mut o.pods {
                let (_, annotation) = &self.members[*k as usize];
                p.trusted_ca = annotation.clone();
                p.ready = self.restarting != Some(*k as usize);
            }
            o
        }

        fn write(&mut self, r: CertRole, files: Files) {
            let now = self.now;
            self.leaves.get_mut(&r).unwrap().push((now, files));
        }

        /// Acts on the step as the engine would; restarts the next member whose template
        /// annotation differs (what UpdateTemplate and RestartMember do, one per pass).
        fn act(&mut self, d: &Desired, step: Option<Step>) {
            self.restarting = None;
            match step {
                Some(Step::IssueCertificate { role, why, .. }) => match (role, why) {
                    (CertRole::Ca, Issue::Rotation) => {
                        self.retiring = Some(self.signing.clone());
                        self.signing = format!("ca{}", self.next_ca);
                        self.next_ca += 1;
                        self.generation = d.pki.as_ref().unwrap().ca_generation;
                    }
                    (CertRole::Ca, Issue::Retire) => self.retiring = None,
                    (CertRole::Ca, other) => panic!("{other:?}"),
                    (r, Issue::Bundle) => {
                        let files = Files {
                            issuer: self.current(r).issuer.clone(),
                            trusts: self.wanted(),
                        };
                        self.write(r, files);
                    }
                    (r, _) => {
                        let files = Files {
                            issuer: self.signing.clone(),
                            trusts: self.wanted(),
                        };
                        self.issued.insert(r, self.now);
                        self.write(r, files);
                    }
                },
                Some(Step::Wait { .. }) | None => {
                    let want = settle(d.clone(), &self.observed(d)).pki.unwrap().trust;
                    if let Some(k) = (0..3).rev().find(|k| self.members[*k].1 != want) {
                        // A new pod mounts the Secrets as they are now.
                        let loaded = self.current(CertRole::Peer).trusts.clone();
                        assert_eq!(
                            loaded,
                            self.current(CertRole::Server).trusts,
                            "a restart loads one trust for both ports"
                        );
                        self.members[k] = (loaded, want);
                        self.restarting = Some(k);
                    }
                }
                Some(other) => panic!("unexpected step {other:?}"),
            }
        }

        /// Every member accepts every other's peer certificate (mutual TLS), the engine's
        /// client and the probe's; the engine accepts every member's server certificate.
        fn check(&self) {
            let peer = &self.mounted(CertRole::Peer).issuer;
            let server = &self.mounted(CertRole::Server).issuer;
            for (k, (loaded, _)) in self.members.iter().enumerate() {
                if self.restarting == Some(k) {
                    continue;
                }
                assert!(
                    loaded.contains(peer),
                    "member {k} refuses peers (t={})",
                    self.now
                );
                assert!(
                    loaded.contains(&self.current(CertRole::Client).issuer),
                    "member {k} refuses the engine's client certificate"
                );
                assert!(
                    loaded.contains(&self.mounted(CertRole::Client).issuer),
                    "member {k} refuses its probe"
                );
            }
            assert!(
                self.current(CertRole::Client).trusts.contains(server),
                "the engine refuses the members' server certificate (t={})",
                self.now
            );
            assert!(
                self.mounted(CertRole::Client).trusts.contains(server),
                "the probe refuses the member's server certificate"
            );
        }
    }

    /// Runs a rotation to its end; `crash_at`: a pass after which the engine restarts (a pass
    /// that decides but never acts), to show every stage is found again from the world alone.
    fn rotate(crash_at: Option<usize>) -> (World, Vec<Step>) {
        let d = managed(1);
        let mut w = World::new();
        let mut steps = Vec::new();
        for pass in 0..200 {
            let o = w.observed(&d);
            let settled = settle(d.clone(), &o);
            let step = certificates(&settled, &o);
            if crash_at == Some(pass) {
                // Crashed before acting: the next pass decides again from the world.
                let again = certificates(&settle(d.clone(), &w.observed(&d)), &w.observed(&d));
                assert_eq!(again, step, "the same world, the same step");
                w.now += PASS_SECONDS;
                continue;
            }
            let idle = step.is_none()
                && !rotating(&settled, &o)
                && w.members
                    .iter()
                    .all(|(_, a)| *a == settled.pki.as_ref().unwrap().trust);
            if idle {
                return (w, steps);
            }
            steps.extend(step.clone());
            w.act(&d, step);
            w.now += PASS_SECONDS;
            w.check();
        }
        panic!("the rotation did not finish in 200 passes");
    }

    /// The spec and world a finished rotation leaves (the rule audit, `plan::audit`).
    pub(in crate::plan) fn rotated() -> (Desired, Observed) {
        let (mut w, _) = rotate(None);
        // The member restarted last is Ready again.
        w.restarting = None;
        let d = managed(1);
        let o = w.observed(&d);
        (d, o)
    }

    /// A managed cluster at rest on its first CA, its members started on it: where switching
    /// TLS on ends (`plan::tls_switch`; the rule audit).
    pub(in crate::plan) fn managed_at_rest() -> (Desired, Observed) {
        let d = managed(0);
        let o = observed(&d, &Secrets::steady(A), None, NOW);
        (d, o)
    }

    #[test]
    fn a_simulated_rotation_never_breaks_trust_and_ends_on_the_new_ca_alone() {
        let (w, steps) = rotate(None);
        assert_eq!(w.signing, "ca1");
        assert_eq!(w.retiring, None);
        for r in CertRole::LEAVES {
            assert_eq!(w.current(r).issuer, "ca1");
            assert_eq!(w.current(r).trusts, BTreeSet::from(["ca1".to_string()]));
        }
        for (loaded, _) in &w.members {
            assert!(!loaded.contains("ca0"), "the old CA is no longer trusted");
        }
        let certs: Vec<(CertRole, Issue)> = steps
            .iter()
            .filter_map(|s| match s {
                Step::IssueCertificate { role, why, .. } => Some((*role, *why)),
                _ => None,
            })
            .collect();
        use CertRole::*;
        use Issue::*;
        assert_eq!(
            certs,
            vec![
                (Ca, Rotation),
                (Server, Bundle),
                (Peer, Bundle),
                (Client, Bundle),
                (Server, OtherCa),
                (Peer, OtherCa),
                (Client, OtherCa),
                (Ca, Retire),
                (Server, Bundle),
                (Peer, Bundle),
                (Client, Bundle),
            ]
        );
    }

    #[test]
    fn a_crash_at_any_pass_of_a_rotation_changes_nothing_of_its_course() {
        let (_, clean) = rotate(None);
        let passes = clean.len() + 20;
        for crash in 0..passes {
            let (w, steps) = rotate(Some(crash));
            assert_eq!(w.signing, "ca1", "crash at pass {crash}");
            assert!(w.members.iter().all(|(l, _)| !l.contains("ca0")));
            let issued = |s: &[Step]| {
                s.iter()
                    .filter(|s| matches!(s, Step::IssueCertificate { .. }))
                    .count()
            };
            assert_eq!(issued(&steps), issued(&clean), "crash at pass {crash}");
        }
    }
}

/// Issue 43 R3: the Secrets of managed TLS deleted under a running cluster never become a new
/// CA that no running member trusts.
#[cfg(test)]
mod lost_secrets {
    use super::super::tests::healthy;
    use super::*;
    use crate::fixtures::cluster;

    const NOW: i64 = 1_800_000_000;
    const DAY: i64 = 86_400;

    fn managed() -> Desired {
        cluster("demo")
            .replicas(3)
            .spec(|s| {
                s.tls = Some(crate::api::TlsSpec {
                    mode: Some("managed".into()),
                    ..Default::default()
                });
            })
            .desired()
    }

    /// A healthy 3-member cluster of `d` whose Secrets of `lost` roles were deleted.
    fn without(d: &Desired, lost: &[CertRole]) -> Observed {
        let mut o = healthy(d, 3);
        o.now = jiff::Timestamp::from_second(NOW).unwrap();
        o.certificates = [CertRole::Ca]
            .into_iter()
            .chain(CertRole::LEAVES)
            .map(|role| CertificateView {
                role,
                secret: objects::tls_secret_name("demo", role),
                cert: if lost.contains(&role) {
                    SecretCert::Missing
                } else {
                    SecretCert::Valid {
                        not_before: NOW - DAY,
                        not_after: NOW + 90 * DAY,
                        current_ca: true,
                        names_current: true,
                    }
                },
            })
            .collect();
        o
    }

    const ALL: [CertRole; 4] = [
        CertRole::Ca,
        CertRole::Server,
        CertRole::Peer,
        CertRole::Client,
    ];

    #[test]
    fn every_secret_deleted_under_running_members_holds_naming_them_and_the_way_out() {
        let d = managed();
        let o = without(&d, &ALL);
        let step = super::super::plan(&d, &o);
        let Step::Hold { reason, message } = &step else {
            panic!("a new CA no member trusts: {step:?}");
        };
        assert_eq!(*reason, Reason::CertificateAuthorityLost);
        for secret in [
            "demo-tls-ca",
            "demo-tls-server",
            "demo-tls-peer",
            "demo-tls-client",
        ] {
            assert!(message.contains(secret), "{secret}: {message}");
        }
        assert!(message.contains("demo-0, demo-1, demo-2"), "{message}");
        assert!(message.contains("from a copy"), "{message}");
        assert!(
            message.contains(
                "kubectl -n ns delete pod -l app.kubernetes.io/instance=demo,\
                 app.kubernetes.io/managed-by=kubectl-etcd,app.kubernetes.io/name=etcd"
            ),
            "{message}"
        );
        // One member still running is enough: it would refuse the others' new certificates.
        let mut o = without(&d, &ALL);
        for k in [1, 2] {
            o.pods.get_mut(&k).unwrap().running = false;
        }
        assert!(matches!(
            certificates(&d, &o),
            Some(Step::Hold { message, .. }) if message.contains("(demo-0)")
        ));
    }

    #[test]
    fn the_ca_secret_left_alone_issues_the_lost_leaves_again_from_it() {
        let d = managed();
        let o = without(&d, &CertRole::LEAVES);
        assert!(matches!(
            super::super::plan(&d, &o),
            Step::IssueCertificate {
                role: CertRole::Server,
                why: Issue::Missing,
                ..
            }
        ));
        let o = without(&d, &[CertRole::Client]);
        assert!(matches!(
            certificates(&d, &o),
            Some(Step::IssueCertificate {
                role: CertRole::Client,
                why: Issue::Missing,
                ..
            })
        ));
    }

    /// The documented way to a new CA: every member pod deleted at once. While one still
    /// terminates its etcd serves on the old CA; once the pods the StatefulSet makes again wait
    /// for their Secrets (not running), the new CA comes first, then each leaf.
    #[test]
    fn once_every_member_is_stopped_a_new_ca_and_its_leaves_are_issued() {
        let d = managed();
        let mut o = without(&d, &ALL);
        o.pods.get_mut(&0).unwrap().terminating = true;
        assert!(matches!(certificates(&d, &o), Some(Step::Hold { .. })));
        for p in o.pods.values_mut() {
            p.terminating = true;
        }
        assert!(matches!(
            certificates(&d, &o),
            Some(Step::Wait { reason: Reason::IssuingCertificate, message })
                if message.contains("stopping")
        ));
        for p in o.pods.values_mut() {
            (p.terminating, p.running, p.ready) = (false, false, false);
            p.waiting_reason = Some("ContainerCreating".into());
        }
        o.etcd = crate::model::EtcdView::NotQueried;
        assert!(matches!(
            super::super::plan(&d, &o),
            Step::IssueCertificate {
                role: CertRole::Ca,
                why: Issue::Missing,
                ..
            }
        ));
        let mut o2 = without(&d, &CertRole::LEAVES);
        o2.pods = o.pods.clone();
        o2.etcd = crate::model::EtcdView::NotQueried;
        assert!(matches!(
            super::super::plan(&d, &o2),
            Step::IssueCertificate {
                role: CertRole::Server,
                ..
            }
        ));
    }

    #[test]
    fn a_cluster_without_running_members_gets_a_new_ca_as_at_creation() {
        let d = managed();
        let mut o = without(&d, &ALL);
        o.pods.clear();
        assert!(matches!(
            certificates(&d, &o),
            Some(Step::IssueCertificate {
                role: CertRole::Ca,
                ..
            })
        ));
    }

    /// Switching TLS on: members still on the plain-http template loaded no CA.
    #[test]
    fn members_still_on_plain_http_while_tls_is_switched_on_loaded_no_ca() {
        let mut d = managed();
        d.tls_switch = Some(crate::model::TlsSwitch {
            on: true,
            secrets: objects::managed_tls("demo"),
            stage: crate::model::SwitchStage::Both,
        });
        let mut o = without(&d, &ALL);
        assert!(matches!(
            certificates(&d, &o),
            Some(Step::IssueCertificate {
                role: CertRole::Ca,
                ..
            })
        ));
        o.pods.get_mut(&2).unwrap().tls_switch = Some(d.tls_switch.as_ref().unwrap().marker());
        assert!(matches!(certificates(&d, &o), Some(Step::Hold { .. })));
    }
}

/// Issue 43 R9: renewal outranks the holds ranked above the certificates rule.
#[cfg(test)]
mod renewal_first {
    use super::super::tests::healthy;
    use super::*;
    use crate::fixtures::cluster;

    const NOW: i64 = 1_800_000_000;

    /// A running 3-member cluster with 5-minute certificates, the server's due (issued 200 s ago).
    fn due(d: &Desired) -> Observed {
        let mut o = healthy(d, 3);
        o.now = jiff::Timestamp::from_second(NOW).unwrap();
        o.certificates = [CertRole::Ca]
            .into_iter()
            .chain(CertRole::LEAVES)
            .map(|role| {
                let issued = if role == CertRole::Server {
                    NOW - 200
                } else {
                    NOW - 10
                };
                CertificateView {
                    role,
                    secret: objects::tls_secret_name("demo", role),
                    cert: SecretCert::Valid {
                        not_before: issued - BACKDATE_SECONDS,
                        not_after: issued + 300,
                        current_ca: true,
                        names_current: true,
                    },
                }
            })
            .collect();
        o
    }

    fn managed(f: impl FnOnce(&mut Desired)) -> Desired {
        let mut d = cluster("demo")
            .replicas(3)
            .spec(|s| {
                s.tls = Some(crate::api::TlsSpec {
                    mode: Some("managed".into()),
                    certificate_lifetime: Some("5m".into()),
                    ..Default::default()
                });
            })
            .desired();
        f(&mut d);
        d
    }

    #[test]
    fn a_hibernation_held_for_a_destination_still_renews_the_running_members_certificates() {
        let d = managed(|d| d.hibernate = true);
        let o = due(&d);
        assert_eq!(
            super::super::plan(&d, &o),
            Step::IssueCertificate {
                role: CertRole::Server,
                secret: "demo-tls-server".into(),
                why: Issue::Renewal,
            }
        );
        // Renewed: the hold speaks again.
        let mut o = due(&d);
        if let SecretCert::Valid {
            not_before,
            not_after,
            ..
        } = &mut o.certificates[1].cert
        {
            (*not_before, *not_after) = (NOW - BACKDATE_SECONDS, NOW + 300);
        }
        assert!(matches!(
            super::super::plan(&d, &o),
            Step::Hold {
                reason: Reason::Hibernating,
                ..
            }
        ));
    }

    #[test]
    fn renewal_waits_when_nothing_runs_or_the_cluster_is_paused() {
        let d = managed(|d| d.paused = true);
        assert_eq!(super::super::plan(&d, &due(&d)), Step::Paused);
        let d = managed(|d| d.hibernate = true);
        let mut o = due(&d);
        for p in o.pods.values_mut() {
            p.running = false;
        }
        assert_eq!(renewal(&d, &o), None);
    }
}
