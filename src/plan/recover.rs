//! Recovery after quorum loss (`spec.recovery`, which `kubectl etcd recover` writes) as planner
//! rules: the engine carries it out as Steps under the cluster's Lease, whichever driver holds it.
//!
//! Pure: no client, no clock. Nothing of its progress is remembered: every pass observes it
//! again — the fence on the client Service, the snapshot's EtcdBackup (labelled with the
//! recovery's nonce), the mark act writes on that record (`Mark`), what is left of the lost
//! cluster, the restore pod — so a driver that crashed at any point is followed by one that
//! resumes, never repeating a half-done step blindly.
//!
//! ```text
//!  spec.recovery ─▶ FenceClients ─▶ TakeRecoverySnapshot(survivor) ─▶ VerifyRecoverySnapshot
//!                                   (from a backup: VerifyRecoverySnapshot of it)  [`verified`]
//!   ─▶ DeleteLostMembers [`deleting` first; again until nothing of the lost cluster is left]
//!   ─▶ RestoreSeed (`rules::restore_seed`, from the record) ─▶ restore pod Succeeded
//!   ─▶ MarkRecovered [`restored`] ─▶ the usual rules: fence lifted, seed bootstrapped, learners ─▶ Idle
//!
//!  before the deletion: a quorum that answers (unless `force`), a survivor that does not, a
//!  snapshot that failed `MAX_ATTEMPTS` times or was rejected (the survivor moved, the read-back
//!  failed): Hold, nothing deleted; the verb withdraws spec.recovery and the fence is lifted.
//! ```

use kube::ResourceExt;

use super::{Step, hold, reached, wait};
use crate::api::{EtcdBackup, Reason};
use crate::keys::ANNOTATION_RECOVERY;
use crate::model::records::{label, select};
use crate::model::recovery::{RecoverFrom, Recovery};
use crate::model::{
    Desired, EtcdView, Observed, RestoreMark, RestorePodView, RestoreSource, VolumeView,
};
use crate::objects;

/// Snapshots of the survivor a recovery attempts before it stops (a crash during one leaves a
/// `Running` record, a store error a `Failed` one).
pub const MAX_ATTEMPTS: usize = 3;

/// How many voters there are, how many of them are healthy (a linearizable read answered) and
/// how many answered their status, whether any names a leader, and what proves a quorum however
/// few of them answer here (`quorum_proof`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Quorum {
    pub voters: usize,
    pub healthy: usize,
    pub answering: usize,
    pub leader: bool,
    pub proof: Option<String>,
}

impl Quorum {
    pub fn of(d: &Desired, o: &Observed) -> Quorum {
        match &o.etcd {
            EtcdView::Reached(c) => Quorum {
                voters: c.voters().count(),
                healthy: c.voters().filter(|m| m.healthy).count(),
                answering: c.voters().filter(|m| m.status.is_some()).count(),
                leader: c.leader.is_some_and(|l| l != 0),
                proof: super::quorum_proof(d, o),
            },
            _ => Quorum::default(),
        }
    }
}

/// A recovery throws away the cluster's identity and whatever only the gone members had; while a
/// quorum answers there is nothing to recover from (the engine repairs lost members itself), and
/// clients may still be writing through it. A quorum answers when a majority of voters is
/// healthy, or answers with a leader elected (healthy or not: a NOSPACE alarm makes every member
/// unhealthy, and the cluster still has its quorum), or when one member proves it however few
/// answer here (its linearizable read passed: a driver cut off from the others must not rebuild
/// a cluster that serves). Refused unless `force`; the refusal names the member that proved it.
pub fn refuse_while_quorum(cluster: &str, q: &Quorum, force: bool) -> Result<(), String> {
    let need = super::quorum(q.voters);
    let has = q.healthy >= need || (q.leader && q.answering >= need) || q.proof.is_some();
    if force || q.voters == 0 || !has {
        return Ok(());
    }
    let proven = match &q.proof {
        Some(p) if q.answering < need => {
            format!("; the others do not answer from here, but they are not down: {p}")
        }
        _ => String::new(),
    };
    Err(format!(
        "{cluster} has a quorum ({} of {} voters answer, {} healthy{}{proven}): nothing to recover, and clients may be writing through it; the engine replaces lost members itself (`kubectl etcd status`, `kubectl etcd reconcile`); pass --force to rebuild it anyway (a new cluster id, writes after the snapshot lost)",
        q.answering,
        q.voters,
        q.healthy,
        if q.leader { ", a leader elected" } else { "" }
    ))
}

/// The survivor's revision now must be the one its snapshot recorded: a revision that moved
/// means writes are being committed (a quorum is back, or the survivor follows one, or a client
/// connected before the fence still writes), so the snapshot may lack acknowledged writes.
pub fn survivor_moved(member: &str, snapshot: i64, now: i64) -> Result<(), String> {
    if now == snapshot {
        return Ok(());
    }
    Err(format!(
        "{member} moved from revision {snapshot} (its snapshot) to {now}: writes are being committed, so a quorum may be back or forming; look again with `kubectl etcd status` and rerun recover once that settles"
    ))
}

/// How far the engine carried a recovery out, as act marks it on the recovery's record
/// (annotation `ANNOTATION_RECOVERY`: `<nonce> <mark>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Read back in full and verified; the survivor had not moved.
    Verified,
    /// The lost cluster's objects are being deleted (written before the first deletion).
    Deleting,
    /// The restore pod filled the seed's volume from it.
    Restored,
    /// Not to be rebuilt from, and why (before anything was deleted).
    Rejected(String),
}

impl Mark {
    /// The annotation's value for recovery `nonce`.
    pub fn value(&self, nonce: &str) -> String {
        match self {
            Mark::Verified => format!("{nonce} verified"),
            Mark::Deleting => format!("{nonce} deleting"),
            Mark::Restored => format!("{nonce} restored"),
            Mark::Rejected(why) => format!("{nonce} rejected: {why}"),
        }
    }

    /// The mark of recovery `nonce` on `b` (a mark of another recovery is none).
    pub fn of(b: &EtcdBackup, nonce: &str) -> Option<Mark> {
        let v = b.annotations().get(ANNOTATION_RECOVERY)?;
        let rest = v.strip_prefix(nonce)?.strip_prefix(' ')?;
        Some(match rest {
            "verified" => Mark::Verified,
            "deleting" => Mark::Deleting,
            "restored" => Mark::Restored,
            other => Mark::Rejected(other.strip_prefix("rejected: ").unwrap_or(other).into()),
        })
    }
}

/// Where a recovery stands, read from the cluster's records.
#[derive(Clone, Debug)]
pub enum Progress<'a> {
    /// No snapshot of the survivor succeeded yet; `attempts` were made (`Running` ones were
    /// interrupted: no pass of this cluster runs beside the one that reads this).
    NoSnapshot {
        attempts: usize,
        last: Option<&'a EtcdBackup>,
    },
    /// The snapshot to rebuild from, not verified yet.
    Taken(&'a EtcdBackup),
    Verified(&'a EtcdBackup),
    Deleting(&'a EtcdBackup),
    Restored(&'a EtcdBackup),
    Rejected(&'a EtcdBackup, String),
    /// `fromBackup` names no succeeded record of the cluster: why.
    NoBackup(String),
}

impl Progress<'_> {
    /// Nothing of the lost cluster was deleted yet.
    pub fn before_deletion(&self) -> bool {
        !matches!(self, Progress::Deleting(_) | Progress::Restored(_))
    }
}

/// Where recovery `r` stands among the cluster's `records`.
pub fn progress<'a>(r: &Recovery, records: &'a [EtcdBackup]) -> Progress<'a> {
    let marked = |b: &'a EtcdBackup| match Mark::of(b, &r.nonce) {
        None => Progress::Taken(b),
        Some(Mark::Verified) => Progress::Verified(b),
        Some(Mark::Deleting) => Progress::Deleting(b),
        Some(Mark::Restored) => Progress::Restored(b),
        Some(Mark::Rejected(why)) => Progress::Rejected(b, why),
    };
    match &r.from {
        RecoverFrom::Member { .. } => {
            let mut ours: Vec<&EtcdBackup> = records
                .iter()
                .filter(|b| b.labels().get(label::RECOVERY) == Some(&r.nonce))
                .collect();
            ours.sort_by_key(|b| (select::taken_at(b), b.name_any()));
            match ours.iter().rev().find(|b| select::succeeded(b)) {
                Some(b) => marked(b),
                None => Progress::NoSnapshot {
                    attempts: ours.len(),
                    last: ours.last().copied(),
                },
            }
        }
        RecoverFrom::Backup { record } => match records.iter().find(|b| b.name_any() == *record) {
            Some(b) if select::succeeded(b) => marked(b),
            Some(_) => Progress::NoBackup(format!("EtcdBackup {record} did not succeed")),
            None => Progress::NoBackup(format!(
                "EtcdBackup {record} is not a backup of this cluster (or is gone)"
            )),
        },
    }
}

/// Recovery `r` was carried out to the end: its nonce is the done-mark in status
/// (`status.completed.recovery`). Done for good, whatever records come and go: its snapshot
/// record deleted by retention or by hand must never read as "no snapshot yet" (a new fence and
/// rebuild under a new cluster id) or "no such backup" (a hold for ever).
pub fn completed(r: &Recovery, o: &Observed) -> bool {
    o.completed.recovery.as_deref() == Some(r.nonce.as_str())
}

/// A recovery is under way: decided and not restored yet (its fence stays while it is).
pub fn under_way(d: &Desired, o: &Observed) -> bool {
    d.recovery.as_ref().is_some_and(|r| {
        !completed(r, o) && !matches!(progress(r, &o.backups.records), Progress::Restored(_))
    })
}

/// `status.completed.recovery` after a pass: the mark kept, or the recovery of the spec once its
/// record says the seed was restored.
pub fn completed_mark(d: &Desired, o: &Observed) -> Option<String> {
    match &d.recovery {
        Some(r) if matches!(progress(r, &o.backups.records), Progress::Restored(_)) => {
            Some(r.nonce.clone())
        }
        _ => o.completed.recovery.clone(),
    }
}

/// The records recovery `r` leans on, which retention must keep while the spec names it: the
/// backup it rebuilds from, or its survivor's snapshots.
pub fn pinned_records(d: &Desired, records: &[EtcdBackup]) -> Vec<String> {
    let Some(r) = &d.recovery else {
        return Vec::new();
    };
    match &r.from {
        RecoverFrom::Backup { record } => vec![record.clone()],
        RecoverFrom::Member { .. } => records
            .iter()
            .filter(|b| b.labels().get(label::RECOVERY) == Some(&r.nonce))
            .map(ResourceExt::name_any)
            .collect(),
    }
}

/// Once its snapshot is verified, a recovery restores the seed from it: `d.restore` is that
/// snapshot (with the recovery's nonce, so each recovery is a new cluster id), for the restore
/// rules and the restored cluster's member config.
pub fn settle(mut d: Desired, o: &Observed) -> Desired {
    let Some(r) = d.recovery.clone() else {
        return d;
    };
    let (Progress::Verified(rec) | Progress::Deleting(rec) | Progress::Restored(rec)) =
        progress(&r, &o.backups.records)
    else {
        return d;
    };
    let st = rec.status.clone().unwrap_or_default();
    let Some(url) = st.url else { return d };
    d.restore = Some(RestoreSource {
        url,
        sha256: st.sha256,
        credentials_secret: r.restore_credentials_secret,
        tools_image: r.tools_image,
        nonce: Some(r.nonce),
        encryption: rec
            .spec
            .encryption
            .as_ref()
            .map(crate::api::BackupEncryption::key_secret),
    });
    d
}

/// The rule: the next step of the recovery `spec.recovery` asks for (see the module's diagram);
/// silent once the seed is restored, and without a recovery.
pub fn recovery(d: &Desired, o: &Observed) -> Option<Step> {
    let r = d.recovery.as_ref().filter(|r| !completed(r, o))?;
    match progress(r, &o.backups.records) {
        Progress::Restored(_) => None,
        Progress::Deleting(rec) => after_deletion(d, o, &rec.name_any()),
        p => before_deletion(d, o, r, p),
    }
}

/// How to stop a recovery that holds before deleting anything.
fn ways_out(d: &Desired) -> String {
    format!(
        "nothing was deleted; rerun `kubectl etcd -n {ns} recover {name}` once the cause is fixed, \
         or withdraw it (`kubectl -n {ns} patch etcdcluster {name} --type merge -p \
         '{{\"spec\":{{\"recovery\":null}}}}'`): the engine then lets clients back",
        ns = d.namespace,
        name = d.name
    )
}

fn stopped(d: &Desired, o: &Observed, why: String) -> Step {
    let reason = if o.clients_fenced {
        Reason::ClientsFenced
    } else {
        Reason::RebuildingCluster
    };
    hold(
        reason,
        format!(
            "recovery stopped before deleting anything: {why}; {}",
            ways_out(d)
        ),
    )
}

fn before_deletion(d: &Desired, o: &Observed, r: &Recovery, p: Progress) -> Option<Step> {
    let who = format!("{}/{}", d.namespace, d.name);
    if let Err(why) = refuse_while_quorum(&who, &Quorum::of(d, o), r.force) {
        return Some(stopped(d, o, why));
    }
    match &p {
        Progress::Rejected(rec, why) => {
            return Some(stopped(
                d,
                o,
                format!("EtcdBackup {}: {why}", rec.name_any()),
            ));
        }
        Progress::NoBackup(why) => return Some(stopped(d, o, why.clone())),
        _ => {}
    }
    if !o.clients_fenced {
        return Some(Step::FenceClients);
    }
    Some(match p {
        Progress::NoSnapshot { attempts, last } => snapshot(d, o, r, attempts, last)?,
        Progress::Taken(rec) => Step::VerifyRecoverySnapshot {
            record: rec.name_any(),
        },
        Progress::Verified(rec) => Step::DeleteLostMembers {
            record: rec.name_any(),
        },
        // Handled above and in `recovery`.
        Progress::Rejected(..)
        | Progress::NoBackup(_)
        | Progress::Deleting(_)
        | Progress::Restored(_) => return None,
    })
}

/// The survivor's snapshot: taken while the survivor answers, at most `MAX_ATTEMPTS` times.
fn snapshot(
    d: &Desired,
    o: &Observed,
    r: &Recovery,
    attempts: usize,
    last: Option<&EtcdBackup>,
) -> Option<Step> {
    let RecoverFrom::Member {
        ordinal,
        member,
        to,
    } = &r.from
    else {
        return None;
    };
    if attempts >= MAX_ATTEMPTS {
        let why = last
            .and_then(|b| b.status.as_ref())
            .and_then(|s| s.message.clone())
            .unwrap_or_else(|| "interrupted".into());
        return Some(stopped(
            d,
            o,
            format!("the snapshot of {member} failed {attempts} times (last: {why})"),
        ));
    }
    let answers = reached(o).is_some_and(|c| {
        c.members
            .iter()
            .any(|m| m.ordinal == Some(*ordinal) && m.status.is_some())
    });
    if !answers {
        return Some(stopped(
            d,
            o,
            format!("{member}, the member to rebuild from, does not answer"),
        ));
    }
    Some(Step::TakeRecoverySnapshot {
        ordinal: *ordinal,
        member: member.clone(),
        to: to.location.to_string(),
    })
}

/// The seed's claim a restore made (after the deletion began: this recovery's restore), which
/// the deletion leaves alone, as it does the restore pod while that claim exists.
pub fn the_restores_claim(ordinal: u32, v: &VolumeView) -> bool {
    ordinal == 0 && v.restore == Some(RestoreMark::Restoring) && !v.terminating
}

/// What is left of the lost cluster (besides the seed's claim and restore pod a restore of this
/// recovery made), by name.
fn remnants(d: &Desired, o: &Observed) -> Vec<String> {
    let seed_restoring = |ord: u32, v: &VolumeView| the_restores_claim(ord, v);
    let mut left = Vec::new();
    if o.statefulset.is_some() {
        left.push(format!(
            "StatefulSet {}",
            objects::statefulset_name(&d.name)
        ));
    }
    if o.config.is_some() {
        left.push(format!("ConfigMap {}", objects::config_name(&d.name)));
    }
    left.extend(o.pods.values().map(|p| format!("Pod {}", p.name)));
    left.extend(
        o.volumes
            .iter()
            .filter(|(k, v)| !seed_restoring(**k, v))
            .map(|(_, v)| format!("PersistentVolumeClaim {}", v.name)),
    );
    let restoring = o.volumes.iter().any(|(k, v)| seed_restoring(*k, v));
    if o.restore_pod.is_some() && !restoring {
        left.push(format!("Pod {}", objects::restore::pod_name(&d.name)));
    }
    left
}

/// After the deletion began: delete what is left (again: a crash may have cut it short), wait
/// while it goes, then restore the seed and mark the record once the restore pod succeeded.
fn after_deletion(d: &Desired, o: &Observed, record: &str) -> Option<Step> {
    let left = remnants(d, o);
    let going = o.pods.values().any(|p| p.terminating) || o.volumes.values().any(|v| v.terminating);
    if !left.is_empty() {
        return Some(if going {
            wait(
                Reason::RebuildingCluster,
                format!("the lost cluster's objects are going: {}", left.join(", ")),
            )
        } else {
            Step::DeleteLostMembers {
                record: record.into(),
            }
        });
    }
    if o.restore_pod == Some(RestorePodView::Succeeded) {
        return Some(Step::MarkRecovered {
            record: record.into(),
        });
    }
    super::rules::restore_seed(d, o)
}

#[cfg(test)]
pub(super) mod tests;
