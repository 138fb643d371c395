//! Scheduled restore drills (`spec.backup.drill`): whether one is due, what becomes of a drill
//! pod a pass finds (finished, or left behind), and what `status.backup.lastDrill` says — from
//! the records and drill objects observe read and the pass's `now`.
//!
//! Pure: no async, no clock, no client. Asked last, only when the cluster's own rules and the
//! backup rules have nothing to do: a drill never pre-empts a repair, a membership or version
//! step, or a backup. A drill pod only reads (the backup from the store, the live cluster's
//! `HashKV`); it runs beside the passes, one per cluster at a time, and later passes see it.
//!
//! ```text
//!   a drill pod the engine started has ended        ─▶ Drill(Finish): the verdict on the record,
//!                                                       its pod and NetworkPolicy deleted
//!   a drill pod or policy nobody will finish (its record gone, past its deadline, a policy
//!   without its pod, a `backup verify` pod long dead) ─▶ Drill(Sweep)
//!   a drill pod running                             ─▶ nothing (it runs beside the passes)
//!   drills on; the newest good backup of the cluster not drilled for the object it names;
//!   the last drill of the cluster older than `every`, or none ─▶ Drill(Start)
//! ```
//!
//! A crash mid-drill is one more observed state: the next pass finds the pod, waits for it to end
//! (it stops itself at `DEADLINE_SECONDS`) and finishes it, or sweeps what no one will finish.

use std::fmt;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use serde::Serialize;

use super::Step;
use crate::api::{BackupStatus, EtcdBackup, LastDrill, drill_outcome};
use crate::model::drill::{DrillPod, DrillPolicy};
use crate::model::records::drill::{Drilled, drilled};
use crate::model::records::select;
use crate::model::{Desired, Observed};
use crate::objects::drill::DEADLINE_SECONDS;

#[cfg(test)]
mod tests;

/// The grace after a drill pod's deadline (which Kubernetes enforces) before a pass sweeps a pod
/// that still has not ended.
const GRACE_SECONDS: i64 = 120;
/// A NetworkPolicy without its pod this long after its creation is left over (a driver that
/// died between creating the two; they are created in one step, seconds apart).
const LONE_POLICY_SECONDS: i64 = 60;

/// The parts of a scheduled drill (`Step::Drill`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "part", rename_all = "camelCase")]
pub enum DrillStep {
    /// Create the drill pod of `record` and its NetworkPolicy (see `objects::drill`).
    Start { record: String },
    /// The drill pod `pod` of `record` ended: compare, write `status.drill` on the record,
    /// delete the pod and its policy.
    Finish { record: String, pod: String },
    /// Delete drill objects no one will finish, by name: `why`, one sentence.
    Sweep {
        pods: Vec<String>,
        policies: Vec<String>,
        why: String,
    },
}

impl fmt::Display for DrillStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DrillStep::Start { record } => write!(
                f,
                "start a restore drill of backup {record} (a throwaway one-member etcd with no \
                 Service; it runs beside the engine's passes and only reads the live cluster)"
            ),
            DrillStep::Finish { record, pod } => write!(
                f,
                "record the restore drill of backup {record} (its pod {pod} ended) and delete \
                 its pod and NetworkPolicy"
            ),
            DrillStep::Sweep {
                pods,
                policies,
                why,
            } => {
                let all: Vec<String> = pods
                    .iter()
                    .map(|p| format!("pod {p}"))
                    .chain(policies.iter().map(|p| format!("NetworkPolicy {p}")))
                    .collect();
                write!(
                    f,
                    "delete the leftover drill objects {}: {why}",
                    all.join(", ")
                )
            }
        }
    }
}

/// The next drill step, if any. The engine asks only when nothing else is to be done.
pub fn next(d: &Desired, o: &Observed) -> Option<Step> {
    if !o.backups.schedules {
        return None;
    }
    leftover(d, o)
        .or_else(|| due(d, o).map(|record| DrillStep::Start { record }))
        .map(|part| Step::Drill { part })
}

/// What to do with the drill objects found: finish an ended pod the engine started, else sweep
/// what no one will finish.
fn leftover(d: &Desired, o: &Observed) -> Option<DrillStep> {
    let pods = &o.backups.drill_pods;
    if let Some(p) = pods
        .iter()
        .find(|p| p.scheduled && p.ended.is_some() && known(o, p))
    {
        return Some(DrillStep::Finish {
            record: p.backup.clone(),
            pod: p.name.clone(),
        });
    }
    let age = |t: Option<Timestamp>| t.map_or(0, |t| o.now.as_second() - t.as_second());
    let mut why = Vec::new();
    let stale: Vec<String> = pods
        .iter()
        .filter(|p| {
            let reason = if p.scheduled && !known(o, p) {
                Some(format!("the record {} is gone", p.backup))
            } else if age(p.created) > DEADLINE_SECONDS + GRACE_SECONDS {
                Some(format!(
                    "{} ran past the drill's deadline of {DEADLINE_SECONDS} s",
                    p.name
                ))
            } else {
                None
            };
            reason.map(|r| why.push(r)).is_some()
        })
        .map(|p| p.name.clone())
        .collect();
    let alone: Vec<String> = o
        .backups
        .drill_policies
        .iter()
        .filter(|n| {
            !pods.iter().any(|p| p.name == n.name) && age(n.created) > LONE_POLICY_SECONDS
                || stale.contains(&n.name)
        })
        .map(|n: &DrillPolicy| n.name.clone())
        .collect();
    if stale.is_empty() && alone.is_empty() {
        return None;
    }
    if stale.is_empty() {
        why.push(format!(
            "no drill pod of {}/{} goes with them",
            d.namespace, d.name
        ));
    }
    Some(DrillStep::Sweep {
        pods: stale,
        policies: alone,
        why: why.join("; "),
    })
}

/// The record of `p` is among the cluster's records.
fn known(o: &Observed, p: &DrillPod) -> bool {
    o.backups.records.iter().any(|b| b.name_any() == p.backup)
}

/// The record a drill is due for: with drills on and no drill object of the cluster left, the
/// newest good backup of the cluster when it was not drilled for the object it names and the
/// last drill of the cluster is at least `every` old.
fn due(d: &Desired, o: &Observed) -> Option<String> {
    let plan = d.backup.as_ref()?.drill.as_ref()?;
    if !o.backups.drill_pods.is_empty() || !o.backups.drill_policies.is_empty() {
        return None;
    }
    let mine = mine(d, o);
    let newest = newest_good(&mine)?;
    if drilled(newest) != Drilled::Not {
        return None;
    }
    match last_drill(&mine) {
        Some((_, at)) if o.now < at + every(plan.every_seconds) => None,
        _ => Some(newest.name_any()),
    }
}

fn every(seconds: u64) -> SignedDuration {
    SignedDuration::from_secs(i64::try_from(seconds).unwrap_or(i64::MAX / 2))
}

/// This cluster's records (not those of an earlier cluster of the same name).
fn mine<'a>(d: &Desired, o: &'a Observed) -> Vec<&'a EtcdBackup> {
    let id = match &o.etcd {
        crate::model::EtcdView::Reached(c) => Some(crate::model::fmt_id(c.cluster_id)),
        _ => None,
    };
    let who = select::Identity {
        uid: Some(d.uid.as_str()).filter(|u| !u.is_empty()),
        cluster_id: id.as_deref(),
    };
    o.backups
        .records
        .iter()
        .filter(|b| select::owner(b, &who) != select::Owner::Other)
        .collect()
}

/// The newest good backup (succeeded, with quorum) that names its object.
fn newest_good<'a>(records: &[&'a EtcdBackup]) -> Option<&'a EtcdBackup> {
    records
        .iter()
        .copied()
        .filter(|b| select::good(b) && b.status.as_ref().is_some_and(|s| s.url.is_some()))
        .max_by_key(|b| select::taken_at(b))
}

/// The newest drill of the cluster's records: the record and when.
fn last_drill<'a>(records: &[&'a EtcdBackup]) -> Option<(&'a EtcdBackup, Timestamp)> {
    records
        .iter()
        .filter_map(|b| Some((*b, drill_time(b)?)))
        .max_by_key(|(_, t)| *t)
}

fn drill_time(b: &EtcdBackup) -> Option<Timestamp> {
    Some(b.status.as_ref()?.drill.as_ref()?.time.as_ref()?.0)
}

/// `status.backup.lastDrill` and `nextDrillTime`, into `st`: the newest drill of the cluster's
/// backups (whoever ran it) and, with drills on, when the next is due: `every` after the last,
/// or (never drilled) once the newest good backup exists.
pub fn status(d: &Desired, o: &Observed, st: &mut BackupStatus) {
    let mine = mine(d, o);
    let last = last_drill(&mine);
    st.last_drill = last.map(|(b, at)| {
        let drill = b
            .status
            .as_ref()
            .and_then(|s| s.drill.clone())
            .unwrap_or_default();
        let passed = mine
            .iter()
            .filter(|b| drill_passed(b))
            .filter_map(|b| drill_time(b))
            .max();
        LastDrill {
            backup: b.name_any(),
            time: Some(Time(at)),
            outcome: drill.outcome,
            message: drill.message.filter(|_| !drill_passed(b)),
            last_passed_time: passed.map(Time),
        }
    });
    let Some(plan) = d.backup.as_ref().and_then(|b| b.drill.as_ref()) else {
        return;
    };
    st.next_drill_time = match last {
        Some((_, at)) => Some(Time(at + every(plan.every_seconds))),
        None => newest_good(&mine).and_then(select::taken_at).map(Time),
    };
}

fn drill_passed(b: &EtcdBackup) -> bool {
    b.status
        .as_ref()
        .and_then(|s| s.drill.as_ref())
        .is_some_and(|x| x.outcome == drill_outcome::PASSED)
}
