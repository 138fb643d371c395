//! etcd's authentication by client certificate (`spec.tls.etcdAuth`): the engine's own client
//! certificate (CN `root`) is etcd's user root, which the engine makes before it turns
//! authentication on; from then on every client certificate's CN is its user, and an
//! application's certificate reaches only what its role grants (`kubectl etcd certificate`).
//!
//! ```text
//!   off, no user root ─▶ Auth(AddRoot) ─▶ Auth(GrantRoot) ─▶ Auth(Enable) ─▶ on: nothing more
//! ```
//! Each step is one call etcd takes twice without harm, and each is decided on what a voter
//! that read linearizably answered: a pass that stopped after any of them is picked up where it
//! left. Nothing is done while any voter is unhealthy or a member is not ready (the rules before
//! this one speak then), and nothing ever turns authentication off.
//!
//! Pure: no async, no clock, no client.

use super::{AuthStep, Step, reached};
use crate::model::{Desired, Observed};

/// The next step of turning etcd's authentication on, or `None` (asked for not, on already, or
/// not known: a cluster no voter answered about).
pub fn enable(d: &Desired, o: &Observed) -> Option<Step> {
    if !d.etcd_auth {
        return None;
    }
    let a = reached(o)?.auth?;
    let part = if a.enabled {
        return None;
    } else if !a.root_user {
        AuthStep::AddRoot
    } else if !a.root_role {
        AuthStep::GrantRoot
    } else {
        AuthStep::Enable
    };
    Some(Step::Auth { part })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::AuthView;
    use crate::plan::tests::{cluster, desired, healthy};
    use crate::plan::{Step, plan};

    /// A healthy cluster of three; `spec.tls.etcdAuth` as `asked`.
    fn three(asked: bool) -> (Desired, Observed) {
        let mut d = desired(3);
        d.etcd_auth = asked;
        let o = healthy(&d, 3);
        (d, o)
    }

    #[test]
    fn authentication_is_turned_on_in_three_steps_each_picked_up_after_a_crash() {
        let (d, mut o) = three(true);
        // Not asked of etcd yet (no voter read linearizably): nothing to say.
        assert_eq!(plan(&d, &o), Step::Idle);
        let mut view = AuthView::default();
        let mut seen = vec![];
        for _ in 0..4 {
            cluster(&mut o).auth = Some(view);
            let step = plan(&d, &o);
            // What the step did is what the next pass observes (a crash after the call is
            // the same observation: the step's effect is all there is).
            match &step {
                Step::Auth {
                    part: AuthStep::AddRoot,
                } => view.root_user = true,
                Step::Auth {
                    part: AuthStep::GrantRoot,
                } => view.root_role = true,
                Step::Auth {
                    part: AuthStep::Enable,
                } => view.enabled = true,
                Step::Idle => break,
                other => panic!("unexpected {other:?}"),
            }
            seen.push(step);
        }
        assert_eq!(
            seen,
            [AuthStep::AddRoot, AuthStep::GrantRoot, AuthStep::Enable]
                .map(|part| Step::Auth { part })
        );
        assert_eq!(plan(&d, &o), Step::Idle);
    }

    #[test]
    fn a_root_user_made_by_hand_is_granted_its_role_and_nothing_is_added_twice() {
        let (d, mut o) = three(true);
        cluster(&mut o).auth = Some(AuthView {
            enabled: false,
            root_user: true,
            root_role: false,
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
        cluster(&mut o).auth = Some(AuthView {
            enabled: true,
            root_user: true,
            root_role: true,
        });
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
}
