//! etcd's authentication by client certificate (`spec.tls.etcdAuth`): the engine's own client
//! certificate carries the cluster's own user (CN `kubectl-etcd:<namespace>:<name>`,
//! `keys::engine_user`) with the role `root`, which the engine makes (beside the user `root`
//! etcd needs) before it turns authentication on; from then on every client certificate's CN is
//! its user, and an application's certificate reaches only what its role grants (`kubectl etcd
//! certificate`). The cluster's own user is no user of another cluster, even one whose CA is
//! the same (a cert-manager ClusterIssuer).
//!
//! ```text
//!   no user root ─▶ Auth(AddRoot) ─▶ Auth(GrantRoot)
//!     ─▶ Auth(AddEngineUser) ─▶ Auth(GrantEngineRole)
//!     ─▶ (client certificate of CN root) IssueCertificate(client, Identity)
//!     ─▶ (off) Auth(Enable) ─▶ on: nothing more
//! ```
//! Each step is one call etcd takes twice without harm (or one Secret written), and each is
//! decided on what a voter that read linearizably answered and what the client Secret holds: a
//! pass that stopped after any of them is picked up where it left. Nothing is done while any
//! voter is unhealthy or a member is not ready (the rules before this one speak then), and
//! nothing ever turns authentication off.
//!
//! The move of a cluster made before the CN was per cluster (its certificate's CN is `root`):
//! `settle` keeps `root` as the CN the certificate is issued with (renewals too) until etcd
//! answered that the cluster's own user has the role `root`; from then on the new CN is the
//! one to issue, and the step above writes it. The old certificate stays valid (same CA, and
//! `root` stays etcd's user), so no pass and no member's probe is ever without a working one.
//! In mode certManager the Certificate's `commonName` changes instead (cert-manager issues).
//! A cluster without `spec.tls.etcdAuth` keeps the CN it has (its authentication may have been
//! turned on by hand, for root); a new one gets its own from the start.
//!
//! Pure: no async, no clock, no client.

use super::{AuthStep, Step, reached};
use crate::model::pki::{CertRole, Issue};
use crate::model::{Desired, Observed};
use crate::objects;

/// The next step of turning etcd's authentication on, or `None` (asked for not, on already, or
/// not known: a cluster no voter answered about).
pub fn enable(d: &Desired, o: &Observed) -> Option<Step> {
    if !d.etcd_auth {
        return None;
    }
    let a = reached(o)?.auth?;
    let part = if !a.root_user {
        AuthStep::AddRoot
    } else if !a.root_role {
        AuthStep::GrantRoot
    } else if !a.engine_user {
        AuthStep::AddEngineUser
    } else if !a.engine_role {
        AuthStep::GrantEngineRole
    } else if let Some(step) = identity_moved(d, o) {
        return Some(step);
    } else if !a.enabled {
        AuthStep::Enable
    } else {
        return None;
    };
    Some(Step::Auth { part })
}

/// Managed TLS: the engine's client certificate issued again with the cluster's own CN, once
/// `settle` says so (in mode certManager, the Certificate's rule writes the new `commonName`).
fn identity_moved(d: &Desired, o: &Observed) -> Option<Step> {
    d.pki.as_ref()?;
    let want = d.client_cn();
    (o.client_cn.as_ref()? != &want).then(|| Step::IssueCertificate {
        role: CertRole::Client,
        secret: objects::tls_secret_name(&d.name, CertRole::Client),
        why: Issue::Identity,
    })
}

/// The CN the engine's client certificate is issued with (`Desired::kept_client_cn`): the one
/// it has while it is not the cluster's own and the move may not begin (no `etcdAuth`, or etcd
/// has not answered that the cluster's own user has the role `root`); once begun (cert-manager
/// asked for the new CN already), never back.
pub fn settle(mut d: Desired, o: &Observed) -> Desired {
    let own = d.engine_user();
    let cn = match &o.client_cn {
        Some(cn) if *cn == own => return d,
        Some(cn) => cn.clone(),
        None if born_empty(&d, o) => return d,
        // No readable certificate, and etcd's data came from elsewhere (a snapshot, an adopted
        // etcd, members running already): its users are not known, but an authenticated etcd
        // always has root. From there it moves like a cluster made before.
        None => crate::keys::LEGACY_ENGINE_USER.to_string(),
    };
    let ready = d.etcd_auth
        && reached(o)
            .and_then(|c| c.auth)
            .is_some_and(|a| a.engine_role);
    let begun = o.cert_manager.iter().any(|c| {
        c.role == CertRole::Client
            && c.spec.as_ref().and_then(|s| s.common_name.as_ref()) == Some(&own)
    });
    if !(ready || begun) {
        d.kept_client_cn = Some(cn);
    }
    d
}

/// A cluster whose etcd starts empty: no members yet, not restored, not adopted. Its engine's
/// certificate is the cluster's own from the first.
fn born_empty(d: &Desired, o: &Observed) -> bool {
    o.statefulset.is_none() && d.restore.is_none() && d.adopt.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::AuthView;
    use crate::plan::tests::{cluster, desired, healthy};
    use crate::plan::{Step, plan, settle as settle_all};

    /// A healthy cluster of three; `spec.tls.etcdAuth` as `asked`.
    fn three(asked: bool) -> (Desired, Observed) {
        let mut d = desired(3);
        d.etcd_auth = asked;
        let o = healthy(&d, 3);
        (d, o)
    }

    /// Everything on: both users with the role root, authentication enabled.
    const ON: AuthView = AuthView {
        enabled: true,
        root_user: true,
        root_role: true,
        engine_user: true,
        engine_role: true,
    };

    /// The step the planner takes on `o`, the spec settled on it as the engine settles it.
    fn next(d: &Desired, o: &Observed) -> Step {
        plan(&settle_all(d.clone(), o), o)
    }

    /// What `step` did, as the next pass observes it (a crash after the call is the same
    /// observation: the step's effect is all there is). The client certificate is issued with
    /// the CN the settled spec gives it.
    fn done(step: &Step, d: &Desired, o: &mut Observed) {
        let view = cluster(o).auth.as_mut().unwrap();
        match step {
            Step::Auth { part } => match part {
                AuthStep::AddRoot => view.root_user = true,
                AuthStep::GrantRoot => view.root_role = true,
                AuthStep::AddEngineUser => view.engine_user = true,
                AuthStep::GrantEngineRole => view.engine_role = true,
                AuthStep::Enable => view.enabled = true,
            },
            Step::IssueCertificate {
                role: CertRole::Client,
                why: Issue::Identity,
                ..
            } => o.client_cn = Some(settle_all(d.clone(), o).client_cn()),
            other => panic!("unexpected {other:?}"),
        }
    }

    /// Runs the planner on `o` until it is idle: the steps taken.
    fn converge(d: &Desired, o: &mut Observed) -> Vec<Step> {
        let mut seen = vec![];
        for _ in 0..8 {
            let step = next(d, o);
            if step == Step::Idle {
                return seen;
            }
            done(&step, d, o);
            seen.push(step);
        }
        panic!("no end: {seen:?}")
    }

    fn identity_step(d: &Desired) -> Step {
        Step::IssueCertificate {
            role: CertRole::Client,
            secret: objects::tls_secret_name(&d.name, CertRole::Client),
            why: Issue::Identity,
        }
    }

    #[test]
    fn authentication_is_turned_on_in_five_steps_each_picked_up_after_a_crash() {
        let (d, mut o) = three(true);
        // Not asked of etcd yet (no voter read linearizably): nothing to say.
        assert_eq!(plan(&d, &o), Step::Idle);
        cluster(&mut o).auth = Some(AuthView::default());
        assert_eq!(
            converge(&d, &mut o),
            [
                AuthStep::AddRoot,
                AuthStep::GrantRoot,
                AuthStep::AddEngineUser,
                AuthStep::GrantEngineRole,
                AuthStep::Enable
            ]
            .map(|part| Step::Auth { part })
        );
        assert_eq!(cluster(&mut o).auth, Some(ON));
    }

    #[test]
    fn a_root_user_made_by_hand_is_granted_its_role_and_nothing_is_added_twice() {
        let (d, mut o) = three(true);
        cluster(&mut o).auth = Some(AuthView {
            root_user: true,
            ..Default::default()
        });
        assert_eq!(
            plan(&d, &o),
            Step::Auth {
                part: AuthStep::GrantRoot
            }
        );
    }

    #[test]
    fn without_spec_tls_etcd_auth_nothing_is_turned_on_and_on_is_never_turned_off() {
        let (d, mut o) = three(false);
        cluster(&mut o).auth = Some(AuthView::default());
        assert_eq!(plan(&d, &o), Step::Idle);
        // On by hand, not asked in the spec: left on.
        cluster(&mut o).auth = Some(ON);
        assert_eq!(plan(&d, &o), Step::Idle);
    }

    #[test]
    fn authentication_waits_while_a_voter_is_unhealthy() {
        let (d, mut o) = three(true);
        cluster(&mut o).auth = Some(AuthView::default());
        cluster(&mut o).members[1].healthy = false;
        assert!(
            !matches!(plan(&d, &o), Step::Auth { .. }),
            "{}",
            plan(&d, &o)
        );
    }

    /// A managed cluster of three with authentication on, made before the engine's CN was per
    /// cluster: its client certificate is CN root, etcd knows only the user root.
    fn made_before(asked: bool) -> (Desired, Observed) {
        let mut d = crate::fixtures::cluster("demo")
            .replicas(3)
            .spec(|s| {
                s.tls = Some(crate::api::TlsSpec {
                    mode: Some("managed".into()),
                    etcd_auth: asked,
                    ..Default::default()
                });
            })
            .desired();
        d.etcd_auth = asked;
        let mut o = healthy(&d, 3);
        // The certificate rules are not the point: every Secret is current (no rule speaks).
        o.certificates = CertRole::LEAVES
            .into_iter()
            .chain([CertRole::Ca])
            .map(|role| crate::model::pki::CertificateView {
                role,
                secret: objects::tls_secret_name(&d.name, role),
                cert: crate::model::pki::SecretCert::Valid {
                    not_before: o.now.as_second() - 60,
                    not_after: o.now.as_second() + 90 * 86_400,
                    current_ca: true,
                    names_current: true,
                },
            })
            .collect();
        o.client_cn = Some("root".into());
        cluster(&mut o).auth = Some(AuthView {
            engine_user: false,
            engine_role: false,
            ..ON
        });
        (d, o)
    }

    #[test]
    fn a_cluster_made_with_cn_root_moves_to_its_own_user_once_etcd_has_it_each_step_resumable() {
        let (d, mut o) = made_before(true);
        // Until its own user has the role root, the certificate keeps root (renewals too).
        assert_eq!(settle_all(d.clone(), &o).client_cn(), "root");
        let steps = converge(&d, &mut o);
        assert_eq!(
            steps,
            [
                Step::Auth {
                    part: AuthStep::AddEngineUser
                },
                Step::Auth {
                    part: AuthStep::GrantEngineRole
                },
                identity_step(&d),
            ]
        );
        assert_eq!(o.client_cn, Some(d.engine_user()));
        assert_eq!(
            d.engine_user(),
            format!("kubectl-etcd:{}:demo", d.namespace)
        );
        // Moved: nothing acts on it again, renewals keep the cluster's own CN.
        assert_eq!(settle_all(d.clone(), &o).kept_client_cn, None);
        assert_eq!(next(&d, &o), Step::Idle);
    }

    #[test]
    fn a_crash_before_the_secret_was_written_issues_it_again_and_never_moves_back() {
        let (d, mut o) = made_before(true);
        cluster(&mut o).auth = Some(ON);
        // The user and its role are there, the Secret still CN root: the write is repeated.
        assert_eq!(next(&d, &o), identity_step(&d));
        // No voter answered this pass: the move waits (nothing issued with an unproven CN)...
        o.etcd = crate::model::EtcdView::NotQueried;
        assert_eq!(settle_all(d.clone(), &o).client_cn(), "root");
        // ...but in mode certManager, once its Certificate asked for the new CN, it never
        // goes back to root.
        o.cert_manager = vec![crate::model::pki::CertManagerView {
            role: CertRole::Client,
            spec: Some(crate::api::cert_manager::CertificateSpec {
                common_name: Some(d.engine_user()),
                ..Default::default()
            }),
            condition: String::new(),
        }];
        assert_eq!(settle_all(d.clone(), &o).client_cn(), d.engine_user());
    }

    #[test]
    fn without_etcd_auth_an_old_cluster_keeps_cn_root_and_a_new_one_gets_its_own() {
        let (d, mut o) = made_before(false);
        // Its authentication may have been turned on by hand, for root: kept.
        cluster(&mut o).auth = None;
        assert_eq!(settle_all(d.clone(), &o).client_cn(), "root");
        assert_eq!(next(&d, &o), Step::Idle);
        // A new cluster (no client Secret, no members yet) is issued its own CN.
        o.client_cn = None;
        o.statefulset = None;
        assert_eq!(settle_all(d.clone(), &o).client_cn(), d.engine_user());
    }

    #[test]
    fn a_lost_client_secret_of_a_running_or_restored_cluster_is_issued_as_root_then_moves() {
        // Members run (or the data is a snapshot's): the users etcd has are not known, but an
        // authenticated etcd always has root.
        let (d, mut o) = made_before(true);
        o.client_cn = None;
        assert_eq!(settle_all(d.clone(), &o).client_cn(), "root");
        let mut restored = d.clone();
        restored.restore = crate::plan::tests::restored(3).restore;
        assert!(restored.restore.is_some());
        o.statefulset = None;
        assert_eq!(settle_all(restored, &o).client_cn(), "root");
        // Issued as root, it moves once the cluster's own user has the role root.
        let (d, mut o) = made_before(true);
        cluster(&mut o).auth = Some(ON);
        o.client_cn = None;
        assert_eq!(settle_all(d.clone(), &o).client_cn(), d.engine_user());
    }
}
