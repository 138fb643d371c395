//! What a driver does after a pass: the one policy both drivers follow (the CLI's loop and
//! `operate`'s requeue and error policy), so "same result with or without an operator" is kept
//! in one place.
//!
//! Pure: a pass result in, a `Next` out. Each driver has its own `Pace` (an interactive command
//! polls faster than a controller that also gets watch events), never its own rules.

use std::time::Duration;

use super::{Outcome, Pass};
use crate::error::Error;
use crate::model::EtcdView;
use crate::plan::{self, Step};

/// What comes after a pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Nothing left to do. The CLI is done; `operate` re-checks after `Pace::converged`.
    Converged,
    /// The cluster was deleted and let go: nothing will ever be left to do.
    Released,
    /// Run the next pass after this long.
    Again(Duration),
    /// The engine holds (acting would be unsafe or ambiguous): a human must look. The CLI
    /// reports it (exit 7) once it outlasts its patience; `operate` warns and re-checks after
    /// `again`. Every `Step::Hold` lands here, whatever its reason.
    Held { message: String, again: Duration },
    /// A failure that another pass may well not see (the API or etcd hiccuped): retry after the
    /// driver's backoff.
    Retry,
    /// A failure another pass cannot fix by itself (an invalid spec, RBAC, a missing object).
    Failed,
}

/// How soon a driver runs the next pass, by what the last one did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pace {
    /// After a change: the next step can usually follow at once.
    pub acted: Duration,
    /// While waiting for the world (pods starting, a learner catching up, etcd saying not yet).
    pub waiting: Duration,
    /// While holding.
    pub holding: Duration,
    /// While paused.
    pub paused: Duration,
    /// Periodic health re-check of a converged cluster (`operate` only).
    pub converged: Duration,
}

impl Pace {
    /// An interactive command: it polls, and its pauses end early when the cluster's pods or
    /// StatefulSet change (`cli::drive`'s watches). After a change it looks again almost at
    /// once: every pass observes the world afresh (consistent reads), as an operator's pass that
    /// its own change's watch event starts does, so nothing waits on the pause; a restore's 13
    /// changes after its pod cost 0.2 s each less with 100 ms than with 300 ms (docs/src/benchmarks.md), and a new cluster's CA and three certificates, one change each, 0.3 s less
    /// with 30 ms than with 100.
    pub const CLI: Pace = Pace {
        acted: Duration::from_millis(30),
        waiting: Duration::from_millis(500),
        holding: Duration::from_secs(5),
        paused: Duration::from_millis(500),
        converged: Duration::ZERO,
    };
    /// The controller: watch events on the cluster and the objects the engine made (its
    /// StatefulSet, Services, ConfigMaps and pods) start passes too, so a wait on pods ends at
    /// their change, not at `waiting`. After a change the next step follows within a quarter
    /// second: the steps of a new cluster (its CA, three certificates, the bootstrap) change
    /// Secrets, which start no pass, and with a second between them an operator's create took
    /// 4 s longer than the CLI's.
    pub const OPERATOR: Pace = Pace {
        acted: Duration::from_millis(250),
        waiting: Duration::from_secs(3),
        holding: Duration::from_secs(30),
        paused: Duration::from_secs(60),
        converged: Duration::from_secs(60),
    };

    /// When a converged cluster is looked at again: within the last tenth of `converged`
    /// (54–60 s for the operator), spread by the cluster's `key` (its uid), so that a cluster is
    /// still looked at at least once per `converged` (a defragmentation policy, a status's
    /// database sizes wait on that). Clusters made together (a GitOps sync, a restart of the
    /// operator, which passes every cluster at once) would otherwise come back together every
    /// minute for ever: every pass's API reads, dials and memory at the same moment. With
    /// periods that differ, they drift apart within a few minutes.
    pub fn converged_for(&self, key: &str) -> Duration {
        let hash = crate::objects::fnv1a(key);
        let permille = 900 + u32::try_from(hash % 101).unwrap_or(0);
        self.converged * permille / 1000
    }

    /// What follows a pass that returned `result`.
    pub fn next(&self, result: &Result<Pass, Error>) -> Next {
        match result {
            Ok(pass) => self.after(&pass.outcome, &pass.step),
            Err(e) => self.after_error(e),
        }
    }

    /// What follows a pass that failed with `e`.
    pub fn after_error(&self, e: &Error) -> Next {
        if e.is_transient() {
            Next::Retry
        } else {
            Next::Failed
        }
    }

    /// What follows a pass that ended with `outcome` after choosing `step`.
    pub fn after(&self, outcome: &Outcome, step: &Step) -> Next {
        match (outcome, step) {
            (Outcome::Released, _) => Next::Released,
            (Outcome::Acted, _) => Next::Again(self.acted),
            // A due backup in line for a slot: the backup runner starts a pass of the cluster
            // when its turn comes (`backups::Runner`); meanwhile a look every `holding` keeps
            // its place in line, without an observe of the cluster every few seconds per
            // waiting backup.
            (
                _,
                Step::Wait {
                    reason: crate::api::Reason::BackupQueued,
                    ..
                },
            ) => Next::Again(self.holding),
            (Outcome::NotYet(_), _) | (_, Step::Wait { .. }) => Next::Again(self.waiting),
            (_, Step::Hold { message, .. }) => Next::Held {
                message: message.clone(),
                again: self.holding,
            },
            (_, Step::Idle | Step::Hibernated) => Next::Converged,
            (_, Step::Paused) => Next::Again(self.paused),
            // A change that was not made (a dry run): look again soon.
            (Outcome::Unchanged, _) => Next::Again(self.acted),
        }
    }
}

/// What `status` reports as trouble (exit 7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trouble {
    /// The engine holds; the hold's message.
    Held(String),
    /// The cluster was formed but none of its members answers.
    Silent,
}

/// Whether a pass is trouble for `status`: a hold, or a cluster that was formed but none of
/// whose members answers (whatever the engine would do next about it). Anything else —
/// converging, waiting, paused — is not.
pub fn trouble(pass: &Pass) -> Option<Trouble> {
    match &pass.step {
        Step::Hold { message, .. } => Some(Trouble::Held(message.clone())),
        // Fewer voters than a quorum answer: trouble even when the next step repairs it (e.g.
        // a StatefulSet scaled down by hand is put back).
        step if let EtcdView::Reached(c) = &pass.observed.etcd
            && c.voters().count() > 0
            && c.voters().filter(|m| m.status.is_some()).count()
                < plan::quorum(c.voters().count())
            && plan::quorum_proof(&pass.desired, &pass.observed).is_none() =>
        {
            let gone: Vec<String> = c
                .voters()
                .filter(|m| m.status.is_none())
                .map(|m| plan::member_name(&pass.desired, m))
                .collect();
            Some(Trouble::Held(format!(
                "quorum lost: {} of {} voters answer (gone: {}); next: {step}",
                c.voters().count() - gone.len(),
                c.voters().count(),
                gone.join(", ")
            )))
        }
        // Every voter answers, but fewer than a quorum are healthy (no leader, NOSPACE on
        // every member): no write can succeed.
        step if let EtcdView::Reached(c) = &pass.observed.etcd
            && plan::formed(&pass.observed)
            && c.voters().count() > 0
            && c.voters().filter(|m| m.healthy).count() < plan::quorum(c.voters().count())
            // One healthy voter (its read passed, no alarm raised) says writes succeed: the
            // others only failed their reads from here.
            && !c.voters().any(|m| m.healthy) =>
        {
            let sick: Vec<String> = c
                .voters()
                .filter(|m| !m.healthy)
                .map(|m| match &m.error {
                    Some(e) => format!("{}: {e}", plan::member_name(&pass.desired, m)),
                    None => plan::member_name(&pass.desired, m),
                })
                .collect();
            Some(Trouble::Held(format!(
                "no healthy quorum: {} of {} voters healthy ({}); next: {step}",
                c.voters().count() - sick.len(),
                c.voters().count(),
                sick.join("; ")
            )))
        }
        // Hibernated, or stopping for it: silence is what the spec asked for.
        Step::Hibernated | Step::Hibernate { .. } => None,
        Step::Wait {
            reason: crate::api::Reason::Hibernating,
            ..
        } => None,
        _ if plan::formed(&pass.observed)
            && matches!(
                pass.observed.etcd,
                EtcdView::NotQueried | EtcdView::Unreachable { .. }
            ) =>
        {
            Some(Trouble::Silent)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converged_clusters_come_back_within_the_last_tenth_of_a_minute_spread_by_uid() {
        let p = Pace::OPERATOR;
        let periods: Vec<Duration> = (0..200)
            .map(|i| p.converged_for(&format!("0f7c1d2e-4b5a-4c3d-9e8f-{i:012}")))
            .collect();
        assert!(
            periods
                .iter()
                .all(|d| *d >= Duration::from_secs(54) && *d <= Duration::from_secs(60)),
            "{periods:?}"
        );
        // The same cluster always gets the same period; clusters differ (spread, not one value).
        assert_eq!(p.converged_for("a"), p.converged_for("a"));
        let mut distinct: Vec<u128> = periods.iter().map(Duration::as_millis).collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > 60, "{} distinct periods", distinct.len());
        let low = periods.iter().filter(|d| d.as_secs() < 57).count();
        assert!((60..=140).contains(&low), "{low} of 200 below 57 s");
        assert_eq!(Pace::CLI.converged_for("a"), Duration::ZERO);
    }
    use crate::api::Reason;
    use crate::model::Observed;

    fn wait() -> Step {
        Step::Wait {
            reason: Reason::Bootstrapping,
            message: "pods starting".into(),
        }
    }
    fn hold(reason: Reason) -> Step {
        Step::Hold {
            reason,
            message: "2 of 3 down".into(),
        }
    }

    #[test]
    fn the_next_pass_comes_sooner_the_more_is_going_on() {
        let p = Pace::OPERATOR;
        let s = |n| Next::Again(Duration::from_secs(n));
        assert_eq!(
            p.after(&Outcome::Acted, &Step::ApplySupportingObjects),
            Next::Again(Duration::from_millis(250))
        );
        assert_eq!(
            p.after(&Outcome::NotYet("unhealthy cluster".into()), &wait()),
            s(3)
        );
        assert_eq!(p.after(&Outcome::Unchanged, &wait()), s(3));
        assert_eq!(p.after(&Outcome::Unchanged, &Step::Paused), s(60));
        assert_eq!(p.after(&Outcome::Unchanged, &Step::Idle), Next::Converged);
        assert_eq!(p.after(&Outcome::Released, &Step::Idle), Next::Released);
    }

    #[test]
    fn a_backup_waiting_for_a_slot_looks_again_at_the_holding_pace_its_turn_wakes_it() {
        let queued = Step::Wait {
            reason: crate::api::Reason::BackupQueued,
            message: "the scheduled backup is due and waits for a slot".into(),
        };
        let why = Outcome::NotYet(queued.to_string());
        assert_eq!(
            Pace::OPERATOR.after(&why, &queued),
            Next::Again(Duration::from_secs(30))
        );
    }

    #[test]
    fn every_hold_is_held_whatever_its_reason() {
        for reason in [
            Reason::QuorumAtRisk,
            Reason::QuorumLost,
            Reason::ClusterIdMismatch,
            Reason::StrandedMember,
        ] {
            let step = hold(reason);
            for pace in [Pace::CLI, Pace::OPERATOR] {
                assert_eq!(
                    pace.after(&Outcome::Unchanged, &step),
                    Next::Held {
                        message: "2 of 3 down".into(),
                        again: pace.holding
                    }
                );
            }
        }
    }

    #[test]
    fn both_drivers_decide_alike_and_differ_only_in_pace() {
        let kind = |n: Next| match n {
            Next::Again(_) => "again",
            Next::Held { .. } => "held",
            Next::Converged => "converged",
            Next::Released => "released",
            Next::Retry => "retry",
            Next::Failed => "failed",
        };
        for (outcome, step) in [
            (Outcome::Acted, Step::ApplySupportingObjects),
            (Outcome::Unchanged, wait()),
            (Outcome::Unchanged, hold(Reason::QuorumAtRisk)),
            (Outcome::Unchanged, Step::Idle),
            (Outcome::Unchanged, Step::Paused),
            (Outcome::Released, Step::Idle),
            (Outcome::NotYet("x".into()), wait()),
        ] {
            assert_eq!(
                kind(Pace::CLI.after(&outcome, &step)),
                kind(Pace::OPERATOR.after(&outcome, &step)),
                "{outcome:?} {step}"
            );
        }
    }

    #[test]
    fn status_reports_holds_and_silent_formed_clusters_as_trouble_and_nothing_else() {
        let d = crate::fixtures::cluster("demo").desired();
        let pass = |step: Step, observed: Observed| Pass {
            status: Default::default(),
            desired: d.clone(),
            observed,
            step,
            outcome: Outcome::Unchanged,
            defragmented: None,
        };
        assert_eq!(
            trouble(&pass(hold(Reason::QuorumAtRisk), Observed::default())),
            Some(Trouble::Held("2 of 3 down".into()))
        );
        let mut formed = Observed {
            config: Some(crate::objects::bootstrap_config(&d, 3)),
            ..Default::default()
        };
        assert_eq!(
            trouble(&pass(wait(), formed.clone())),
            None,
            "not formed yet: starting, not trouble"
        );
        formed.config.as_mut().unwrap().insert(
            crate::objects::config_key::INITIAL_CLUSTER_STATE.into(),
            crate::objects::STATE_EXISTING.into(),
        );
        // Silent whatever the next step: even while the engine brings members back.
        let resize = Step::ResizeStatefulSet { from: 0, to: 3 };
        assert_eq!(
            trouble(&pass(resize, formed.clone())),
            Some(Trouble::Silent)
        );
        formed.etcd = EtcdView::Reached(Default::default());
        assert_eq!(trouble(&pass(Step::Idle, formed.clone())), None);
        // Fewer voters than a quorum answer: trouble, even while the next step repairs it.
        let voter = |ordinal: u32, answers: bool| crate::model::MemberView {
            id: 100 + ordinal as u64,
            ordinal: Some(ordinal),
            status: answers.then(Default::default),
            ..Default::default()
        };
        formed.etcd = EtcdView::Reached(crate::model::ClusterView {
            members: vec![voter(0, true), voter(1, false), voter(2, false)],
            ..Default::default()
        });
        let put_back = Step::ResizeStatefulSet { from: 1, to: 3 };
        match trouble(&pass(put_back, formed.clone())) {
            Some(Trouble::Held(m)) => assert!(
                m.contains("quorum lost: 1 of 3") && m.contains("gone: demo-1, demo-2"),
                "{m}"
            ),
            other => panic!("{other:?}"),
        }
        // Every voter answers, none is healthy (NOSPACE everywhere, or no leader): trouble.
        let nospace = |ordinal: u32| crate::model::MemberView {
            error: Some("active alarms 64:NOSPACE".into()),
            alarmed: true,
            ..voter(ordinal, true)
        };
        formed.etcd = EtcdView::Reached(crate::model::ClusterView {
            members: vec![nospace(0), nospace(1), nospace(2)],
            ..Default::default()
        });
        let unhealthy = Step::Wait {
            reason: Reason::MembersUnhealthy,
            message: "unhealthy: demo-0, demo-1, demo-2".into(),
        };
        match trouble(&pass(unhealthy, formed.clone())) {
            Some(Trouble::Held(m)) => assert!(
                m.contains("no healthy quorum: 0 of 3")
                    && m.contains("demo-2: active alarms 64:NOSPACE"),
                "{m}"
            ),
            other => panic!("{other:?}"),
        }
        // A healthy quorum with one member down is no trouble.
        let healthy = |ordinal: u32| crate::model::MemberView {
            healthy: true,
            ..voter(ordinal, true)
        };
        formed.etcd = EtcdView::Reached(crate::model::ClusterView {
            members: vec![healthy(0), healthy(1), nospace(2)],
            ..Default::default()
        });
        assert_eq!(trouble(&pass(wait(), formed)), None);
    }

    #[test]
    fn errors_are_retried_only_when_another_pass_may_not_see_them() {
        let invalid: Result<Pass, Error> = Err(Error::InvalidSpec {
            namespace: "ns".into(),
            name: "demo".into(),
            source: crate::model::validate(&crate::fixtures::cluster("demo").replicas(0).build())
                .unwrap_err(),
        });
        assert_eq!(Pace::CLI.next(&invalid), Next::Failed);
        let io: Result<Pass, Error> = Err(Error::Io(std::io::Error::other("reset")));
        assert_eq!(Pace::OPERATOR.next(&io), Next::Retry);
    }
}
