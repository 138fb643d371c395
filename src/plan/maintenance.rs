//! Defragmentation on request (`kubectl etcd defrag`, `spec.maintenance.defrag.request`) and by
//! policy (`spec.maintenance.defrag.policy`), as planner rules: the engine carries them out as
//! `Compact`/`Defragment` steps under the cluster's Lease, whichever driver holds it.
//!
//! Pure: no client, no clock (`Observed::now` judges a window).
//!
//! ```text
//!   request (a new nonce) ─▶ [Compact(revision)] ─▶ Defragment(each member once: learners,
//!       followers by ordinal, the leader last; each only while every other voter answers)
//!       ─▶ recorded done (status.maintenance.defrag) ─▶ Idle
//!   policy: a member worth it (wins ≥ minReclaimMiB, and fragmented ≥ fragmentedPercent or
//!       its file ≥ quotaPercent of the quota), the window open ─▶ Defragment(that member) ─▶ …
//!       (one member per pass, in the same order; a defragmented member is no longer worth it)
//! ```
//! Neither runs while NOSPACE is raised (`nospace::full_database` heals that first), and both
//! come after every repair rule: a cluster that needs anything else gets that first.

use std::fmt;

use serde::Serialize;

use super::nospace::{defrag_order, quota};
use super::{Step, reached, wait};
use crate::api::{DefragRun, Reason};
use crate::model::maintenance::DefragPolicy;
use crate::model::{ClusterView, Desired, MemberStatusView, MemberView, Observed};

/// Why a member is compacted or defragmented.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "trigger", rename_all = "camelCase")]
pub enum Trigger {
    /// The database reached its quota (`nospace`).
    Nospace,
    /// `spec.maintenance.defrag.request` with this nonce.
    Requested { nonce: String },
    /// The policy's rules: the member's file is `fragmented_percent` % free pages, or fills
    /// `quota_percent` % of its quota, and defragmenting it wins `reclaim_bytes`.
    #[serde(rename_all = "camelCase")]
    Policy {
        fragmented_percent: i64,
        quota_percent: i64,
        reclaim_bytes: i64,
    },
}

impl Trigger {
    /// The `trigger` label of the defragmentation metrics.
    pub fn label(&self) -> &'static str {
        match self {
            Trigger::Nospace => "nospace",
            Trigger::Requested { .. } => "requested",
            Trigger::Policy { .. } => "policy",
        }
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trigger::Nospace => write!(f, "NOSPACE"),
            Trigger::Requested { .. } => write!(f, "requested by kubectl etcd defrag"),
            Trigger::Policy {
                fragmented_percent,
                quota_percent,
                reclaim_bytes,
            } => write!(
                f,
                "policy: {fragmented_percent}% of its file is free pages, it fills \
                 {quota_percent}% of the quota, {} MiB to win",
                reclaim_bytes >> 20
            ),
        }
    }
}

/// A voter that does not answer: defragmenting another member now could cost quorum.
fn silent_voter(c: &ClusterView) -> Option<&MemberView> {
    c.voters().find(|m| m.status.is_none())
}

fn wait_for_voter(d: &Desired, what: &str, silent: &MemberView) -> Step {
    wait(
        Reason::MembersUnhealthy,
        format!(
            "{what} waits for {} to answer (a defragmenting member answers nobody, so every \
             other voter must)",
            super::member_name(d, silent)
        ),
    )
}

/// The run of the request `nonce` as status recorded it.
fn run_of<'a>(o: &'a Observed, nonce: &str) -> Option<&'a DefragRun> {
    o.maintenance
        .as_ref()
        .and_then(|m| m.defrag.as_ref())
        .filter(|r| r.nonce == nonce)
}

/// The next member of a requested run: the first in defragmentation order that answers and was
/// not defragmented in this run yet.
fn next_of_run<'a>(
    d: &Desired,
    c: &'a ClusterView,
    run: Option<&DefragRun>,
) -> Option<&'a MemberView> {
    let done: &[String] = run.map(|r| r.defragmented.as_slice()).unwrap_or_default();
    defrag_order(c)
        .into_iter()
        .find(|m| m.status.is_some() && !done.contains(&super::member_name(d, m)))
}

/// A requested defragmentation not carried out yet: its next step (see the module's diagram).
pub fn requested_defrag(d: &Desired, o: &Observed) -> Option<Step> {
    let r = d.maintenance.defrag_request.as_ref()?;
    let run = run_of(o, &r.nonce);
    if run.is_some_and(|r| r.done) || !o.nospace.is_empty() {
        return None;
    }
    let c = reached(o)?;
    if let Some(silent) = silent_voter(c) {
        return Some(wait_for_voter(d, "the requested defragmentation", silent));
    }
    let why = Trigger::Requested {
        nonce: r.nonce.clone(),
    };
    if r.compact && run.and_then(|r| r.compacted_to).is_none() {
        if o.revision <= 0 {
            return Some(wait(
                Reason::Compacting,
                "the requested compaction waits for the current revision",
            ));
        }
        return Some(Step::Compact {
            revision: o.revision,
            why,
        });
    }
    let m = next_of_run(d, c, run)?;
    Some(Step::Defragment {
        ordinal: m.ordinal.unwrap_or_default(),
        id: m.id,
        name: super::member_name(d, m),
        why,
    })
}

/// What defragmenting a member with status `s` would win, when the policy says it is worth it.
fn worth(p: &DefragPolicy, quota: i64, s: &MemberStatusView) -> Option<Trigger> {
    let reclaim = s.db_size.saturating_sub(s.db_size_in_use);
    if reclaim <= 0 || reclaim < p.min_reclaim_bytes || s.db_size <= 0 {
        return None;
    }
    let fragmented_percent = reclaim.saturating_mul(100) / s.db_size;
    let quota_percent = s.db_size.saturating_mul(100) / quota.max(1);
    let fragmented = fragmented_percent >= i64::from(p.fragmented_percent);
    let filling = p
        .quota_percent
        .is_some_and(|q| quota_percent >= i64::from(q));
    (fragmented || filling).then_some(Trigger::Policy {
        fragmented_percent,
        quota_percent,
        reclaim_bytes: reclaim,
    })
}

/// The policy finds a member worth defragmenting and its window is open: that member (the first
/// in defragmentation order, so the leader last).
pub fn policy_defrag(d: &Desired, o: &Observed) -> Option<Step> {
    let p = d.maintenance.defrag_policy.as_ref()?;
    if !o.nospace.is_empty() {
        return None;
    }
    let c = reached(o)?;
    let q = quota(d);
    let (m, why) = defrag_order(c)
        .into_iter()
        .find_map(|m| Some((m, worth(p, q, m.status.as_ref()?)?)))?;
    // A closed window is no reason to wait: the cluster is as desired until it opens.
    if p.window.as_ref().is_some_and(|w| !w.open_at(o.now)) {
        return None;
    }
    if let Some(silent) = silent_voter(c) {
        return Some(wait_for_voter(d, "the policy's defragmentation", silent));
    }
    Some(Step::Defragment {
        ordinal: m.ordinal.unwrap_or_default(),
        id: m.id,
        name: super::member_name(d, m),
        why,
    })
}

/// `status.maintenance.defrag` after a pass that chose `step`: the requested run as far as it
/// got, marked done once no member is left; `prev` otherwise (the last run stays on record).
pub fn record(
    d: &Desired,
    o: &Observed,
    step: &Step,
    prev: Option<DefragRun>,
) -> Option<DefragRun> {
    let Some(r) = d.maintenance.defrag_request.as_ref() else {
        return prev;
    };
    let mut run = prev
        .filter(|p| p.nonce == r.nonce)
        .unwrap_or_else(|| DefragRun {
            nonce: r.nonce.clone(),
            ..Default::default()
        });
    let ours = |why: &Trigger| matches!(why, Trigger::Requested { nonce } if *nonce == r.nonce);
    match step {
        Step::Compact { revision, why } if ours(why) => run.compacted_to = Some(*revision),
        Step::Defragment { name, why, .. } if ours(why) && !run.defragmented.contains(name) => {
            run.defragmented.push(name.clone());
        }
        Step::Defragment { why, .. } if ours(why) => {}
        // Every member that answers is done (and the compaction, when asked for): the run is.
        _ if !run.done
            && o.nospace.is_empty()
            && (!r.compact || run.compacted_to.is_some())
            && reached(o).is_some_and(|c| {
                silent_voter(c).is_none() && next_of_run(d, c, Some(&run)).is_none()
            }) =>
        {
            run.done = true;
        }
        _ => {}
    }
    Some(run)
}

#[cfg(test)]
mod tests {
    use super::super::plan;
    use super::super::tests::{cluster, healthy};
    use super::*;
    use crate::api::{DefragRequest, MaintenanceStatus};
    use crate::model::maintenance::{Maintenance, Window};

    const MIB: i64 = 1 << 20;

    fn requested(compact: bool) -> Desired {
        let mut d = crate::fixtures::cluster("demo").replicas(3).desired();
        d.maintenance = Maintenance {
            defrag_request: Some(DefragRequest {
                nonce: "n1".into(),
                compact,
            }),
            defrag_policy: None,
        };
        d
    }

    fn policy(window: Option<&str>) -> Desired {
        let mut d = crate::fixtures::cluster("demo").replicas(3).desired();
        d.maintenance.defrag_policy = Some(DefragPolicy {
            fragmented_percent: 45,
            quota_percent: Some(80),
            min_reclaim_bytes: 8 * MIB,
            window: window.map(|s| Window {
                schedule: crate::archive::schedule::parse(s).unwrap(),
                minutes: 60,
            }),
        });
        d
    }

    /// Sets the database of the member at `ordinal`: `size` bytes of which `in_use` hold data.
    fn db(o: &mut Observed, ordinal: u32, size: i64, in_use: i64) {
        let s = cluster(o)
            .members
            .iter_mut()
            .find(|m| m.ordinal == Some(ordinal))
            .and_then(|m| m.status.as_mut())
            .unwrap();
        (s.db_size, s.db_size_in_use) = (size, in_use);
    }

    /// Plans, and records the step as the status of the pass would.
    fn pass(d: &Desired, o: &mut Observed) -> Step {
        let step = plan(d, o);
        let prev = o.maintenance.clone();
        o.maintenance = super::super::nospace::record(d, o, &step, prev.as_ref());
        step
    }

    fn defragmented(step: &Step) -> Option<&str> {
        match step {
            Step::Defragment { name, .. } => Some(name),
            _ => None,
        }
    }

    #[test]
    fn a_request_compacts_then_defragments_every_member_once_the_leader_last_then_is_done() {
        let d = requested(true);
        let mut o = healthy(&d, 3);
        o.revision = 700;
        let step = pass(&d, &mut o);
        assert_eq!(
            step,
            Step::Compact {
                revision: 700,
                why: Trigger::Requested { nonce: "n1".into() }
            }
        );
        assert!(step.to_string().contains("requested"), "{step}");
        let mut order = Vec::new();
        loop {
            let step = pass(&d, &mut o);
            match defragmented(&step) {
                Some(name) => order.push(name.to_string()),
                None => {
                    assert_eq!(step, Step::Idle);
                    break;
                }
            }
        }
        assert_eq!(order, ["demo-1", "demo-2", "demo-0"], "the leader last");
        let run = o
            .maintenance
            .as_ref()
            .and_then(|m| m.defrag.clone())
            .unwrap();
        assert!(run.done && run.compacted_to == Some(700), "{run:?}");
        // Done: the same request never runs again, whatever the world does meanwhile.
        o.revision = 900;
        assert_eq!(pass(&d, &mut o), Step::Idle);
        // A new nonce is a new run.
        let mut again = d.clone();
        again.maintenance.defrag_request.as_mut().unwrap().nonce = "n2".into();
        assert_eq!(
            pass(&again, &mut o),
            Step::Compact {
                revision: 900,
                why: Trigger::Requested { nonce: "n2".into() }
            }
        );
    }

    #[test]
    fn a_request_without_compact_defragments_learners_first() {
        let d = requested(false);
        let mut o = healthy(&d, 3);
        cluster(&mut o).leader = Some(101);
        // (A caught-up learner would be promoted first by the full planner: the rule alone.)
        cluster(&mut o).members[2].learner = true;
        let mut order = Vec::new();
        while let Some(step) = requested_defrag(&d, &o) {
            order.push(defragmented(&step).unwrap().to_string());
            o.maintenance = super::super::nospace::record(&d, &o, &step, o.maintenance.as_ref());
        }
        assert_eq!(order, ["demo-2", "demo-0", "demo-1"]);
    }

    #[test]
    fn a_request_waits_while_a_voter_is_silent_and_goes_on_where_it_stopped() {
        let d = requested(false);
        let mut o = healthy(&d, 3);
        assert_eq!(defragmented(&pass(&d, &mut o)), Some("demo-1"));
        cluster(&mut o).members[2].status = None;
        let step = requested_defrag(&d, &o).unwrap();
        assert!(
            matches!(&step, Step::Wait { message, .. } if message.contains("demo-2")),
            "{step:?}"
        );
        // Not done while waiting: the record says what is left.
        o.maintenance = super::super::nospace::record(&d, &o, &step, o.maintenance.as_ref());
        assert!(
            !o.maintenance
                .as_ref()
                .unwrap()
                .defrag
                .as_ref()
                .unwrap()
                .done
        );
        cluster(&mut o).members[2].status = cluster(&mut o).members[1].status.clone();
        assert_eq!(defragmented(&pass(&d, &mut o)), Some("demo-2"));
        assert_eq!(defragmented(&pass(&d, &mut o)), Some("demo-0"));
        assert_eq!(pass(&d, &mut o), Step::Idle);
    }

    #[test]
    fn nospace_is_healed_before_a_request_or_the_policy_acts() {
        let mut d = requested(false);
        d.maintenance.defrag_policy = policy(None).maintenance.defrag_policy;
        let mut o = healthy(&d, 3);
        o.nospace = vec![100];
        assert_eq!(requested_defrag(&d, &o), None);
        assert_eq!(policy_defrag(&d, &o), None);
    }

    #[test]
    fn the_policy_defragments_a_member_only_above_its_thresholds() {
        let d = policy(None);
        let mut o = healthy(&d, 3);
        assert_eq!(policy_defrag(&d, &o), None, "20 KiB files: nothing to win");
        // 50 % free but only 5 MiB to win: below minReclaimMiB.
        db(&mut o, 1, 10 * MIB, 5 * MIB);
        assert_eq!(policy_defrag(&d, &o), None);
        // 40 % free, 40 MiB to win: below fragmentedPercent, and the quota (2 GiB) far.
        db(&mut o, 1, 100 * MIB, 60 * MIB);
        assert_eq!(policy_defrag(&d, &o), None);
        // 50 % free, 50 MiB to win: worth it.
        db(&mut o, 1, 100 * MIB, 50 * MIB);
        let step = plan(&d, &o);
        assert_eq!(defragmented(&step), Some("demo-1"), "{step:?}");
        assert!(step.to_string().contains("policy: 50%"), "{step}");
        // Defragmented: nothing left to win, nothing to do.
        db(&mut o, 1, 50 * MIB, 50 * MIB);
        assert_eq!(plan(&d, &o), Step::Idle);
    }

    #[test]
    fn the_policy_defragments_a_member_filling_its_quota_only_when_it_wins_enough() {
        let mut d = policy(None);
        d.quota_backend_bytes = Some(100 * MIB);
        let mut o = healthy(&d, 3);
        // 85 % of the quota, 10 % free (9 MiB): the quota rule, with enough to win.
        db(&mut o, 2, 85 * MIB, 76 * MIB);
        assert_eq!(defragmented(&plan(&d, &o)), Some("demo-2"));
        // Full of live data: never rewritten again and again.
        db(&mut o, 2, 85 * MIB, 84 * MIB);
        assert_eq!(plan(&d, &o), Step::Idle);
    }

    #[test]
    fn the_policy_takes_one_member_at_a_time_followers_first_the_leader_last() {
        let d = policy(None);
        let mut o = healthy(&d, 3);
        for i in 0..3 {
            db(&mut o, i, 100 * MIB, 10 * MIB);
        }
        let mut order = Vec::new();
        loop {
            let step = plan(&d, &o);
            let Some(name) = defragmented(&step) else {
                assert_eq!(step, Step::Idle);
                break;
            };
            let Step::Defragment { ordinal, .. } = step else {
                unreachable!()
            };
            order.push(name.to_string());
            db(&mut o, ordinal, 10 * MIB, 10 * MIB);
        }
        assert_eq!(order, ["demo-1", "demo-2", "demo-0"]);
    }

    #[test]
    fn the_policy_waits_while_a_voter_is_silent() {
        let d = policy(None);
        let mut o = healthy(&d, 3);
        db(&mut o, 0, 100 * MIB, 10 * MIB);
        cluster(&mut o).members[1].status = None;
        let step = policy_defrag(&d, &o).unwrap();
        assert!(
            matches!(&step, Step::Wait { message, .. } if message.contains("demo-1")),
            "{step:?}"
        );
    }

    #[test]
    fn the_policy_acts_only_while_its_window_is_open() {
        let d = policy(Some("0 3 * * *"));
        let mut o = healthy(&d, 3);
        db(&mut o, 1, 100 * MIB, 10 * MIB);
        o.now = "2026-01-02T02:59:00Z".parse().unwrap();
        assert_eq!(plan(&d, &o), Step::Idle, "closed: as desired, not waiting");
        o.now = "2026-01-02T03:10:00Z".parse().unwrap();
        assert_eq!(defragmented(&plan(&d, &o)), Some("demo-1"));
        o.now = "2026-01-02T04:00:00Z".parse().unwrap();
        assert_eq!(plan(&d, &o), Step::Idle);
    }

    #[test]
    fn a_policy_defragmentation_is_maintaining_and_leaves_no_run_record() {
        let d = policy(None);
        let mut o = healthy(&d, 3);
        db(&mut o, 1, 100 * MIB, 10 * MIB);
        let step = pass(&d, &mut o);
        assert_eq!(o.maintenance, None::<MaintenanceStatus>);
        assert!(super::super::nospace::is_maintenance(&step));
    }
}
