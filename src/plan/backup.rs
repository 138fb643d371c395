//! The backup rules: whether a scheduled backup is due, which records retention prunes, which
//! in-progress records were abandoned, and what `status.backup` and `BackupHealthy` say — all
//! from the records observe read (`Observed::backups`) and the pass's `now`.
//!
//! Pure: no async, no clock, no client. The engine asks these rules only when the cluster's own
//! rules have nothing to do (`plan` says `Idle`): a backup never pre-empts a repair, and one in
//! progress blocks nothing — it runs beside the passes (`Step::TakeScheduledBackup` only records
//! it and starts it), and the passes see it through its record.
//!
//! ```text
//!   abandoned Running record (its taker gone) ─▶ AbandonBackup (Failed, its upload aborted)
//!   schedule due, none in progress            ─▶ TakeScheduledBackup ─▶ (Running … Succeeded|Failed)
//!   succeeded scheduled backup, its object not read yet (with retention) ─▶ CheckBackup
//!   newest scheduled backup succeeded, some expired ─▶ PruneBackups
//!   newest scheduled backup failed, old failures     ─▶ PruneBackups (failures only)
//! ```
//!
//! Retention runs after a scheduled backup ended — after a failed one it deletes failures only
//! (the oldest of a run of them, past `retention::FAILURES_KEPT`) —, only over scheduled backups of that cluster
//! (the same uid: a cluster re-created under the same name is another one), never deletes the
//! newest good one (succeeded, with quorum), nor one an EtcdCluster's `spec.restore.backupName`
//! names: a failing backup, or one taken without quorum, never costs an older one.
//!
//! The record helpers it uses (`model::records::{select, label}`, `archive::naming`) are pure
//! functions of the records, below the planner: it imports nothing of `backup`.

use std::collections::BTreeSet;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::ResourceExt;

use super::Step;
use crate::api::{BackupStatus, EtcdBackup, backup_phase, condition, reason};
use crate::archive::naming::object_time;
use crate::archive::retention::{self, Candidate, Retention};
use crate::archive::schedule::Schedule;
use crate::archive::store::Location;
use crate::model::records::{label, select};
use crate::model::{BackupPlan, Desired, EtcdView, Observed, fmt_id};

#[cfg(test)]
pub(super) mod tests;

/// The next backup step, if any. The engine asks only when the cluster's own rules say `Idle`.
pub fn next(d: &Desired, o: &Observed) -> Option<Step> {
    let plan = d.backup.as_ref()?;
    if !o.backups.schedules {
        return None;
    }
    abandoned(d, o)
        .or_else(|| scheduled_backup_due(d, plan, o))
        .or_else(|| unchecked_backup(d, plan, o))
        .or_else(|| expired_backups(d, plan, o))
}

/// With a retention policy, a succeeded scheduled backup whose object the engine has not read
/// yet (or whose claim changed since): read it first (`Step::CheckBackup`), the newest first.
/// Retention counts only what was found as recorded, so no record alone — a tenant may write
/// one — pushes a real backup out.
fn unchecked_backup(d: &Desired, plan: &BackupPlan, o: &Observed) -> Option<Step> {
    plan.retention.as_ref()?;
    let mut ours: Vec<&EtcdBackup> = mine(d, o)
        .into_iter()
        .filter(|b| scheduled(b) && select::succeeded(b))
        .filter(|b| select::stored(b) == select::Stored::Unchecked)
        .collect();
    ours.sort_by_key(|b| std::cmp::Reverse(select::taken_at(b)));
    ours.into_iter().find_map(|b| {
        let (url, size, sha256) = select::claim(b)?;
        let key = plan.to.location.key_of(url)?;
        object_time(&d.namespace, &d.name, &key)?;
        Some(Step::CheckBackup {
            record: b.name_any(),
            key,
            size,
            sha256: sha256.to_string(),
        })
    })
}

/// A scheduled backup of this cluster (retention and the schedule count only those).
fn scheduled(b: &EtcdBackup) -> bool {
    b.spec.trigger.as_deref() == Some(label::TRIGGER_SCHEDULE)
}

fn phase(b: &EtcdBackup) -> Option<&str> {
    b.status.as_ref()?.phase.as_deref()
}

/// The cluster as its records name it: its uid, and the cluster id its members report.
fn identity<'a>(d: &'a Desired, cluster_id: &'a Option<String>) -> select::Identity<'a> {
    select::Identity {
        uid: Some(d.uid.as_str()).filter(|u| !u.is_empty()),
        cluster_id: cluster_id.as_deref(),
    }
}

fn cluster_id(o: &Observed) -> Option<String> {
    match &o.etcd {
        EtcdView::Reached(c) => Some(fmt_id(c.cluster_id)),
        _ => None,
    }
}

/// This cluster's records (not an earlier cluster's of the same name), newest first.
fn mine<'a>(d: &Desired, o: &'a Observed) -> Vec<&'a EtcdBackup> {
    let id = cluster_id(o);
    let who = identity(d, &id);
    o.backups
        .records
        .iter()
        .filter(|b| select::owner(b, &who) != select::Owner::Other)
        .collect()
}

/// A `Running` record whose taker is gone: this process signed it but is not taking it (an
/// earlier life of it died), or it started longer ago than any backup takes
/// (`select::ABANDONED_AFTER`).
fn abandoned(d: &Desired, o: &Observed) -> Option<Step> {
    let b = mine(d, o)
        .into_iter()
        .filter(|b| !o.backups.taking.contains(&b.name_any()))
        .find(|b| select::abandoned(b, &o.backups.me, o.now))?;
    Some(Step::AbandonBackup {
        record: b.name_any(),
        taken_by: b
            .status
            .as_ref()
            .and_then(|s| s.taken_by.clone())
            .unwrap_or_default(),
    })
}

/// A scheduled backup whose slot has come, unless one is still in progress (the next slot waits
/// for it: two uploads of one cluster never run at once).
fn scheduled_backup_due(d: &Desired, plan: &BackupPlan, o: &Observed) -> Option<Step> {
    let sched = plan.schedule.as_ref()?;
    let ours: Vec<&EtcdBackup> = mine(d, o).into_iter().filter(|b| scheduled(b)).collect();
    if ours.iter().any(|b| phase(b) == Some(backup_phase::RUNNING)) {
        return None;
    }
    match due(
        plan,
        sched,
        last_run(&ours),
        o.backups.created.unwrap_or(o.now),
        o.now,
    ) {
        Due::Now(slot) => Some(Step::TakeScheduledBackup { slot }),
        Due::Off | Due::At(_) => None,
    }
}

/// The wait of a due backup the operator's slots hold back (`model::fair`: `operate
/// --max-backups-per-namespace`, `--max-backups`, round-robin between namespaces): the slot is
/// taken late, never skipped. `turn` is `Turn::Wait`; `Go` waits for nothing.
pub fn queued(d: &Desired, turn: &crate::model::fair::Turn) -> Option<Step> {
    use crate::model::fair::{Full, Turn};
    let Turn::Wait {
        full,
        running,
        bound,
        ahead,
    } = turn
    else {
        return None;
    };
    let why = match full {
        Some(Full::Namespace) => format!(
            "the operator takes {running} backups in namespace {} now, at most {bound} at once \
             (operate --max-backups-per-namespace)",
            d.namespace
        ),
        Some(Full::Total) => format!(
            "the operator takes {running} backups in all namespaces now, at most {bound} at once \
             (operate --max-backups)"
        ),
        None => format!("{ahead} due backups of other namespaces take the free slots first"),
    };
    Some(super::wait(
        crate::api::Reason::BackupQueued,
        format!("the scheduled backup is due and waits for a slot: {why}; {ahead} ahead of it"),
    ))
}

/// When the newest scheduled backup started (records are newest first).
fn last_run(scheduled: &[&EtcdBackup]) -> Option<Timestamp> {
    scheduled.iter().filter_map(|b| select::taken_at(b)).max()
}

/// After a scheduled backup ended: the records retention lets go. After a failed one only
/// failures go (the oldest of a run of them, past the few newest that say why): a failing
/// schedule never costs a good backup, nor piles up a record a run.
fn expired_backups(d: &Desired, plan: &BackupPlan, o: &Observed) -> Option<Step> {
    let policy = plan.retention.as_ref()?;
    let newest = mine(d, o)
        .into_iter()
        .filter(|b| scheduled(b))
        .max_by_key(|b| select::taken_at(b))?;
    let failing = match phase(newest) {
        Some(backup_phase::SUCCEEDED) => false,
        Some(backup_phase::FAILED) => true,
        _ => return None,
    };
    let id = cluster_id(o);
    let owner = Owner {
        who: &identity(d, &id),
        namespace: &d.namespace,
        cluster: &d.name,
        destination: &plan.to.location,
    };
    // Restores name what they pin; a recovery of the spec pins the records it leans on.
    let mut pinned = o.backups.pinned.clone();
    pinned.extend(super::recover::pinned_records(d, &o.backups.records));
    let mut expiry = expired(&o.backups.records, policy, o.now, owner, &pinned);
    if failing {
        let good = |name: &str| {
            o.backups
                .records
                .iter()
                .any(|b| b.name_any() == name && select::good(b))
        };
        expiry.delete.retain(|(name, _)| !good(name));
    }
    (!expiry.delete.is_empty()).then_some(Step::PruneBackups {
        delete: expiry.delete,
        foreign: expiry.foreign,
    })
}

/// `status.backup` and the `BackupHealthy` condition, from the records: the newest successful
/// backup of the cluster (whoever took it), the newest failed scheduled one, the schedule's last
/// and next run. No condition without a schedule; no `status.backup` without either.
pub fn status(
    d: &Desired,
    o: &Observed,
    prev: &[Condition],
) -> (Option<BackupStatus>, Option<Condition>) {
    let schedule = d
        .backup
        .as_ref()
        .and_then(|p| p.schedule.as_ref().map(|s| (p, s)));
    let mut st = BackupStatus::default();
    let done_at = |b: &EtcdBackup| {
        b.status
            .as_ref()
            .and_then(|s| s.completion_time.as_ref().map(|t| t.0))
            .or_else(|| select::taken_at(b))
    };
    if let Some(ok) = mine(d, o)
        .into_iter()
        .filter(|b| phase(b) == Some(backup_phase::SUCCEEDED))
        .max_by_key(|b| done_at(b))
    {
        let rs = ok.status.clone().unwrap_or_default();
        st.last_successful = Some(ok.name_any());
        st.last_successful_time = done_at(ok).map(Time);
        st.last_successful_url = rs.url;
        st.last_successful_size = rs.size;
    }
    if let Some(failed) = mine(d, o)
        .into_iter()
        .filter(|b| scheduled(b) && phase(b) == Some(backup_phase::FAILED))
        .max_by_key(|b| done_at(b))
    {
        st.last_failed = Some(failed.name_any());
        st.last_failed_time = done_at(failed).map(Time);
    }
    super::drill::status(d, o, &mut st);
    let Some((plan, sched)) = schedule else {
        return ((st != BackupStatus::default()).then_some(st), None);
    };
    let ours: Vec<&EtcdBackup> = mine(d, o).into_iter().filter(|b| scheduled(b)).collect();
    let last = last_run(&ours);
    st.last_scheduled_time = last.map(Time);
    let running = ours.iter().any(|b| phase(b) == Some(backup_phase::RUNNING));
    st.next_scheduled_time = match due(plan, sched, last, o.backups.created.unwrap_or(o.now), o.now)
    {
        Due::Off => None,
        Due::At(t) => Some(Time(t)),
        // Waiting for the one in progress: the slot after it.
        Due::Now(_) if running => sched.next_after(o.now).map(Time),
        // Due (the cluster busy, or no operator): the slot that waits, so that the status stays
        // the same from pass to pass.
        Due::Now(slot) => Some(Time(slot)),
    };
    let prev = prev.iter().find(|c| c.type_ == condition::BACKUP_HEALTHY);
    let cond = health(&st, Some(sched), d.generation, prev, o.now);
    (Some(st), Some(cond))
}

/// What the schedule says at `now`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Due {
    /// No schedule, or suspended: nothing runs.
    Off,
    /// A run is due (the slot it fills).
    Now(Timestamp),
    /// The next run.
    At(Timestamp),
}

/// Is a scheduled backup due? The first slot counts from the cluster's creation (or at
/// once with `runOnCreate`); later ones from the last run. A scheduler that was down runs one
/// backup for the slots it missed, not one per slot.
pub fn due(
    plan: &BackupPlan,
    sched: &Schedule,
    last_run: Option<Timestamp>,
    created: Timestamp,
    now: Timestamp,
) -> Due {
    if plan.suspend {
        return Due::Off;
    }
    let Some(last) = last_run else {
        if plan.run_on_create {
            return Due::Now(now);
        }
        return match sched.next_after(created) {
            Some(t) if t <= now => Due::Now(sched.last_at_or_before(now).unwrap_or(t)),
            Some(t) => Due::At(t),
            None => Due::Off,
        };
    };
    match sched.next_after(last) {
        Some(t) if t <= now => Due::Now(sched.last_at_or_before(now).unwrap_or(t)),
        Some(t) => Due::At(t),
        None => Due::Off,
    }
}

/// The schedule's interval around `t` (two consecutive runs), for the overdue check.
fn interval(sched: &Schedule, t: Timestamp) -> Option<Duration> {
    let a = sched.next_after(t)?;
    let b = sched.next_after(a)?;
    Some(Duration::from_secs(
        (b.as_second() - a.as_second()).max(0) as u64
    ))
}

/// The `BackupHealthy` condition. False when the newest scheduled backup failed, or the
/// newest success is older than twice the schedule's interval.
pub fn health(
    st: &BackupStatus,
    sched: Option<&Schedule>,
    generation: i64,
    prev: Option<&Condition>,
    now: Timestamp,
) -> Condition {
    let ts = |t: &Option<Time>| t.as_ref().map(|t| t.0);
    let (ok, why, message) = match sched {
        None => (
            true,
            reason::NO_SCHEDULE,
            "no backup schedule; backups are taken on demand".to_string(),
        ),
        Some(sched) => {
            let last_ok = ts(&st.last_successful_time);
            let last_failed = ts(&st.last_failed_time);
            let limit = interval(sched, now).map(|d| d * 2);
            match (last_ok, last_failed) {
                (_, Some(f)) if last_ok.is_none_or(|o| f > o) => (
                    false,
                    reason::BACKUP_FAILED,
                    format!(
                        "the last scheduled backup {} failed",
                        st.last_failed.as_deref().unwrap_or("")
                    ),
                ),
                (Some(o), _)
                    if limit
                        .is_some_and(|l| now.as_second() - o.as_second() > l.as_secs() as i64) =>
                {
                    (
                        false,
                        reason::BACKUP_OVERDUE,
                        format!(
                            "the newest successful backup {} is older than twice the schedule's interval",
                            st.last_successful.as_deref().unwrap_or("")
                        ),
                    )
                }
                (Some(_), _) => (
                    true,
                    reason::BACKUP_SUCCEEDED,
                    format!(
                        "the newest backup {} succeeded",
                        st.last_successful.as_deref().unwrap_or("")
                    ),
                ),
                (None, _) => (
                    true,
                    reason::NO_SCHEDULE,
                    "no scheduled backup has run yet".to_string(),
                ),
            }
        }
    };
    let status = if ok { "True" } else { "False" };
    Condition {
        type_: condition::BACKUP_HEALTHY.into(),
        status: status.into(),
        reason: why.into(),
        message,
        observed_generation: Some(generation),
        last_transition_time: prev
            .filter(|c| c.status == status)
            .map(|c| c.last_transition_time.clone())
            .unwrap_or(Time(now)),
    }
}

/// Who the backups belong to and where they must lie: retention deletes nothing else.
#[derive(Clone, Copy, Debug)]
pub struct Owner<'a> {
    pub who: &'a select::Identity<'a>,
    pub namespace: &'a str,
    pub cluster: &'a str,
    /// The cluster's `spec.backup.destination`.
    pub destination: &'a Location,
}

/// How far past `now` an object's name may be dated (clocks of the nodes that took backups
/// differ a little); anything later is not a backup of ours.
const FUTURE_SKEW: jiff::SignedDuration = jiff::SignedDuration::from_secs(600);

/// For each object key of the destination, the verified record that names it first (created first,
/// then by name): a later record naming the same object is a copy, and deleting it would delete
/// the first one's object.
fn first_namers(
    records: &[EtcdBackup],
    destination: &Location,
) -> std::collections::BTreeMap<String, String> {
    let mut by_key: std::collections::BTreeMap<String, (Option<Timestamp>, String)> =
        std::collections::BTreeMap::new();
    let verified = |b: &&EtcdBackup| scheduled(b) && select::stored(b) == select::Stored::Verified;
    for b in records.iter().filter(verified) {
        let Some(key) = b
            .status
            .as_ref()
            .and_then(|s| s.url.as_deref())
            .and_then(|u| destination.key_of(u))
        else {
            continue;
        };
        let this = (
            b.metadata.creation_timestamp.as_ref().map(|t| t.0),
            b.name_any(),
        );
        by_key
            .entry(key)
            .and_modify(|first| {
                if this < *first {
                    *first = this.clone();
                }
            })
            .or_insert_with(|| this.clone());
    }
    by_key.into_iter().map(|(k, (_, name))| (k, name)).collect()
}

/// What the engine's read of a record's object found, for a report.
fn check_note(b: &EtcdBackup) -> String {
    match (
        select::stored(b),
        b.status.as_ref().and_then(|s| s.store_check.as_ref()),
    ) {
        (select::Stored::Mismatched, Some(c)) => c
            .message
            .clone()
            .unwrap_or_else(|| "not as recorded".into()),
        _ => "not checked yet".into(),
    }
}

/// What retention decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expiry {
    /// Names of the EtcdBackup records to delete, with the object each names, if any (a key in
    /// the destination).
    pub delete: Vec<(String, Option<String>)>,
    /// Records of the cluster that name an object outside its destination, or not named as its
    /// backups are: neither counted nor deleted, only reported (one sentence each).
    pub foreign: Vec<String>,
}

/// Which scheduled backups of the cluster retention deletes. Records of another cluster of
/// the same name are neither counted nor deleted; nor is a record whose object does not lie
/// directly in the destination under a name this cluster's backups get (a record is writable by
/// anyone who may take a backup: it must not steer the operator's credentials at other objects).
/// A backup counts at the time in its object's name, not the record's. A backup without quorum
/// counts as a failed one; `pinned` names are never deleted.
pub fn expired(
    records: &[EtcdBackup],
    policy: &Retention,
    now: Timestamp,
    owner: Owner<'_>,
    pinned: &BTreeSet<String>,
) -> Expiry {
    let mut foreign = Vec::new();
    let mut objects = std::collections::BTreeMap::new();
    let first_namer = first_namers(records, owner.destination);
    let candidates: Vec<Candidate> = records
        .iter()
        .filter(|b| scheduled(b))
        .filter(|b| select::owner(b, owner.who) != select::Owner::Other)
        .filter_map(|b| {
            let st = b.status.as_ref()?;
            let phase = st.phase.as_deref()?;
            // A backup still running is neither kept nor deleted.
            if phase == backup_phase::RUNNING {
                return None;
            }
            let mut time = st
                .start_time
                .as_ref()
                .map(|t| t.0)
                .or_else(|| b.metadata.creation_timestamp.as_ref().map(|t| t.0))?;
            if let Some(url) = st.url.as_deref() {
                let key = owner.destination.key_of(url);
                let named = key
                    .as_deref()
                    .and_then(|k| object_time(owner.namespace, owner.cluster, k));
                let (Some(key), Some(named)) = (key, named) else {
                    foreign.push(format!(
                        "EtcdBackup {}/{} names {url}, which is not a backup of {}/{} in {}: retention leaves it and its record alone",
                        owner.namespace,
                        b.name_any(),
                        owner.namespace,
                        owner.cluster,
                        owner.destination
                    ));
                    return None;
                };
                // Named for a time to come: no backup of ours (a forged record would count as
                // the newest and push the real ones out).
                if named > now + FUTURE_SKEW {
                    foreign.push(format!(
                        "EtcdBackup {}/{} names {url}, dated {named}, after now ({now}): retention leaves it and its record alone",
                        owner.namespace,
                        b.name_any(),
                    ));
                    return None;
                }
                if select::stored(b) != select::Stored::Verified {
                    foreign.push(format!(
                        "EtcdBackup {}/{} names {url}, which the operator has not found in the store with the recorded size and sha256 ({}): retention leaves it and its record alone",
                        owner.namespace,
                        b.name_any(),
                        check_note(b),
                    ));
                    return None;
                }
                if let Some(first) = first_namer.get(key.as_str())
                    && *first != b.name_any()
                {
                    foreign.push(format!(
                        "EtcdBackup {}/{} names {url}, the object of EtcdBackup {first}: retention leaves it and its record alone",
                        owner.namespace,
                        b.name_any(),
                    ));
                    return None;
                }
                time = named;
                objects.insert(b.name_any(), key);
            } else if select::succeeded(b) {
                // A success with no object to find is no backup to count.
                foreign.push(format!(
                    "EtcdBackup {}/{} succeeded without naming its object: retention leaves it and its record alone",
                    owner.namespace,
                    b.name_any(),
                ));
                return None;
            }
            Some(Candidate {
                name: b.name_any(),
                time,
                succeeded: select::good(b),
                pinned: pinned.contains(&b.name_any()),
            })
        })
        .collect();
    let delete = retention::to_delete(&candidates, policy, now)
        .into_iter()
        .map(|name| {
            let key = objects.remove(&name);
            (name, key)
        })
        .collect();
    Expiry { delete, foreign }
}
