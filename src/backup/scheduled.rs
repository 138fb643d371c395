//! Scheduled backups: when the next one is due (pure), taking it, applying retention, and the
//! `BackupHealthy` condition. The operator runs `pass` after each reconcile pass of a cluster.
//!
//! Retention runs only after a successful backup, only over scheduled backups of that cluster
//! (the same uid: a cluster re-created under the same name is another one), never deletes the
//! newest good one (succeeded, with quorum), nor one an EtcdCluster's `spec.restore.backupName`
//! names: a failing backup, or one taken without quorum, never costs an older one.

use std::collections::BTreeSet;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;

use super::{label, select, take};
use crate::api::{
    BackupSpec, BackupStatus, EtcdBackup, EtcdCluster, backup_phase, condition, reason,
};
use crate::archive::retention::{self, Candidate, Retention};
use crate::archive::schedule::{self, Schedule};
use crate::archive::store::Location;
use crate::error::{BackupError, Error};
use crate::model::{Desired, Observed};
use crate::reach::Reach;

/// Who takes scheduled backups, how it reaches the members, and what its stores may use.
#[derive(Clone, Copy)]
pub struct Taker<'a> {
    pub reach: &'a Reach,
    pub access: &'a crate::archive::store::Access,
    pub identity: &'a str,
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

/// Pure: is a scheduled backup due? The first slot counts from the cluster's creation (or at
/// once with `runOnCreate`); later ones from the last run. A scheduler that was down runs one
/// backup for the slots it missed, not one per slot.
pub fn due(
    spec: &BackupSpec,
    sched: &Schedule,
    last_run: Option<Timestamp>,
    created: Timestamp,
    now: Timestamp,
) -> Due {
    if spec.suspend {
        return Due::Off;
    }
    let Some(last) = last_run else {
        if spec.run_on_create {
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

/// Pure: the `BackupHealthy` condition. False when the newest scheduled backup failed, or the
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

/// Pure: which scheduled backups of the cluster retention deletes. Records of another cluster of
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
    let candidates: Vec<Candidate> = records
        .iter()
        .filter(|b| b.spec.trigger.as_deref() == Some(label::TRIGGER_SCHEDULE))
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
                    .and_then(|k| take::object_time(owner.namespace, owner.cluster, k));
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
                time = named;
                objects.insert(b.name_any(), key);
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

/// What a scheduled-backup pass leaves behind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scheduled {
    /// When to look again (`None`: no schedule).
    pub next: Option<Duration>,
    /// The cluster's `status.backup` as it now stands (backups the CLI took count too).
    pub status: Option<BackupStatus>,
    /// What retention refused to touch (`Expiry::foreign`), for Warning Events.
    pub foreign: Vec<String>,
}

/// One scheduled-backup pass: takes the backup when due, applies retention after a success, and
/// writes `status.backup` and `BackupHealthy` when they change.
pub async fn pass(
    ctx: &Taker<'_>,
    cluster: &EtcdCluster,
    (d, o): (&Desired, &Observed),
    now: Timestamp,
) -> Result<Scheduled, Error> {
    let unscheduled = || Scheduled {
        next: None,
        status: cluster.status.as_ref().and_then(|s| s.backup.clone()),
        foreign: Vec::new(),
    };
    let Some(spec) = &cluster.spec.backup else {
        return Ok(unscheduled());
    };
    let Some(expr) = spec.schedule.as_deref().filter(|s| !s.is_empty()) else {
        return Ok(unscheduled());
    };
    // validate() already refused a bad schedule or destination.
    let sched = schedule::parse(expr).map_err(Error::Usage)?;
    let ns = d.namespace.clone();
    let prev_status = cluster.status.clone().unwrap_or_default();
    let mut st = prev_status.backup.clone().unwrap_or_default();
    let created = cluster
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(now, |t| t.0);
    let last_run = st.last_scheduled_time.as_ref().map(|t| t.0);
    let mut foreign = Vec::new();
    match due(spec, &sched, last_run, created, now) {
        Due::Off => st.next_scheduled_time = None,
        Due::At(t) => st.next_scheduled_time = Some(Time(t)),
        Due::Now(slot) => {
            st.last_scheduled_time = Some(Time(slot));
            st.next_scheduled_time = sched.next_after(now).map(Time);
            // Record the slot first: a crash mid-backup does not make the next pass run it again.
            write(ctx, cluster, &st, None).await?;
            let of = take::Of {
                desired: d,
                observed: o,
            };
            let outcome = take_scheduled(ctx, of, spec).await;
            // A crashed taker's record (and upload parts) go whatever this one's outcome.
            if let Err(e) = clean_abandoned(ctx, cluster, d, spec, ctx.identity).await {
                tracing::warn!(cluster = %d.name, namespace = %ns, "cleaning up abandoned backups failed: {e}");
            }
            match outcome {
                Ok(record) => {
                    let rs = record.status.clone().unwrap_or_default();
                    st.last_successful = Some(record.name_any());
                    st.last_successful_time = rs.completion_time.clone();
                    st.last_successful_url = rs.url.clone();
                    st.last_successful_size = rs.size;
                    if let Some(policy) = &spec.retention {
                        foreign = apply_retention(ctx, cluster, d, spec, policy).await?;
                    }
                }
                Err((name, e)) => {
                    tracing::warn!(cluster = %d.name, namespace = %ns, "scheduled backup failed: {e}");
                    st.last_failed = Some(name);
                    st.last_failed_time = Some(Time(Timestamp::now()));
                }
            }
        }
    }
    let prev_cond = prev_status
        .conditions
        .iter()
        .find(|c| c.type_ == condition::BACKUP_HEALTHY);
    let cond = health(&st, Some(&sched), d.generation, prev_cond, now);
    let changed_cond = prev_cond.is_none_or(|c| {
        c.status != cond.status || c.reason != cond.reason || c.message != cond.message
    });
    if prev_status.backup.as_ref() != Some(&st) || changed_cond {
        write(ctx, cluster, &st, changed_cond.then_some(cond)).await?;
    }
    let next = st
        .next_scheduled_time
        .as_ref()
        .map(|t| Duration::from_secs((t.0.as_second() - now.as_second()).max(1) as u64));
    Ok(Scheduled {
        next,
        status: Some(st),
        foreign,
    })
}

async fn take_scheduled(
    ctx: &Taker<'_>,
    of: take::Of<'_>,
    spec: &BackupSpec,
) -> Result<EtcdBackup, (String, Error)> {
    let fail = |e: Error| (String::new(), e);
    let to = crate::archive::Destination {
        location: Location::parse(&spec.destination)
            .map_err(|e| fail(BackupError::from(e).into()))?,
        compression: spec
            .compression
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e: String| fail(BackupError::Usage(e).into()))?
            .unwrap_or_default(),
        credentials_secret: spec.credentials_secret.clone(),
        sse: super::sse_of(spec).map_err(|e| fail(e.into()))?,
    };
    let mut req = take::Request::new(to, label::TRIGGER_SCHEDULE, ctx.identity.to_string());
    req.access = ctx.access.clone();
    let record = take::start(ctx.reach, of.desired, &req, Timestamp::now())
        .await
        .map_err(fail)?;
    let name = record.name_any();
    take::finish(ctx.reach, of, &req, record, &|_| {})
        .await
        .map_err(|e| (name, e))
}

/// Deletes what retention lets go: the stored object first, then its record (a record without
/// its object would promise a restore that cannot happen). Returns what it refused to touch.
async fn apply_retention(
    ctx: &Taker<'_>,
    cluster: &EtcdCluster,
    d: &Desired,
    spec: &BackupSpec,
    policy: &Retention,
) -> Result<Vec<String>, Error> {
    let api: Api<EtcdBackup> = Api::namespaced(ctx.reach.client.clone(), &d.namespace);
    let records =
        crate::backup::records(&ctx.reach.client, &d.namespace, &cluster.name_any()).await?;
    let pinned = restore_names(ctx, &d.namespace).await?;
    let destination = Location::parse(&spec.destination).map_err(BackupError::from)?;
    let owner = Owner {
        who: &identity(cluster),
        namespace: &d.namespace,
        cluster: &d.name,
        destination: &destination,
    };
    let expiry = expired(&records, policy, Timestamp::now(), owner, &pinned);
    for why in &expiry.foreign {
        tracing::warn!(cluster = %d.name, namespace = %d.namespace, "{why}");
    }
    let mut store = None;
    for (name, key) in expiry.delete {
        if let Some(key) = key {
            if store.is_none() {
                store = Some(
                    super::open_store(
                        &ctx.reach.client,
                        &d.namespace,
                        &destination,
                        spec.credentials_secret.as_deref(),
                        crate::model::DEFAULT_TOOLS_IMAGE,
                        ctx.access,
                    )
                    .await?,
                );
            }
            if let Some(store) = &store {
                store.delete(&key).await.map_err(BackupError::from)?;
            }
        }
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(Error::kube("delete", "EtcdBackup", &d.namespace, &name, e)),
        }
        tracing::info!(cluster = %d.name, namespace = %d.namespace, backup = %name, "retention deleted a backup");
    }
    Ok(expiry.foreign)
}

/// The cluster as its backup records name it.
pub fn identity(cluster: &EtcdCluster) -> select::Identity<'_> {
    select::Identity {
        uid: cluster.metadata.uid.as_deref(),
        cluster_id: cluster
            .status
            .as_ref()
            .and_then(|s| s.cluster_id.as_deref()),
    }
}

/// Names of the EtcdBackups that an EtcdCluster of `ns` restores from (`spec.restore.backupName`):
/// a restore may still read them, so retention never deletes them.
async fn restore_names(ctx: &Taker<'_>, ns: &str) -> Result<BTreeSet<String>, Error> {
    let api: Api<EtcdCluster> = Api::namespaced(ctx.reach.client.clone(), ns);
    let list = api
        .list(&Default::default())
        .await
        .map_err(|e| Error::kube("list", crate::api::KIND, ns, "", e))?;
    Ok(list
        .items
        .iter()
        .filter_map(|c| c.spec.restore.as_ref()?.backup_name.clone())
        .collect())
}

/// Marks `Failed` the `Running` records whose taker is gone (`select::abandoned`), after aborting
/// the unfinished uploads their objects would have had (the key starts with the cluster and the
/// start time; the revision that follows is not recorded until the end).
async fn clean_abandoned(
    ctx: &Taker<'_>,
    cluster: &EtcdCluster,
    d: &Desired,
    spec: &BackupSpec,
    me: &str,
) -> Result<(), Error> {
    let records =
        crate::backup::records(&ctx.reach.client, &d.namespace, &cluster.name_any()).await?;
    let now = Timestamp::now();
    let destination = Location::parse(&spec.destination).ok();
    for record in records.iter().filter(|b| select::abandoned(b, me, now)) {
        let mut st = record.status.clone().unwrap_or_default();
        let mut aborted = 0;
        // Only in the cluster's own destination: a record may name any place.
        let loc = Location::parse(&record.spec.destination)
            .ok()
            .filter(|l| Some(l) == destination.as_ref());
        if let (Some(loc), Some(start)) = (loc, st.start_time.as_ref()) {
            let store = super::open_store(
                &ctx.reach.client,
                &d.namespace,
                &loc,
                spec.credentials_secret.as_deref(),
                crate::model::DEFAULT_TOOLS_IMAGE,
                ctx.access,
            )
            .await?;
            let prefix = take::object_prefix(&d.namespace, &d.name, start.0);
            aborted = store
                .abort_uploads(&prefix)
                .await
                .map_err(BackupError::from)?;
            store.close().await;
        }
        st.phase = Some(backup_phase::FAILED.into());
        st.completion_time = Some(Time(now));
        st.message = Some(format!(
            "abandoned: {} stopped before finishing it (crashed or killed); {aborted} unfinished upload(s) aborted",
            st.taken_by.as_deref().unwrap_or("its taker")
        ));
        take::write_status(ctx.reach, record, &st).await?;
        tracing::info!(cluster = %d.name, namespace = %d.namespace, backup = %record.name_any(), "marked an abandoned backup failed");
    }
    Ok(())
}

/// Records a backup taken outside the schedule (`kubectl etcd backup`) as the cluster's newest
/// successful one, so `status` shows it too.
pub async fn note_success(
    ctx: &Taker<'_>,
    cluster: &EtcdCluster,
    record: &EtcdBackup,
) -> Result<(), Error> {
    let rs = record.status.clone().unwrap_or_default();
    let mut st = cluster
        .status
        .as_ref()
        .and_then(|s| s.backup.clone())
        .unwrap_or_default();
    st.last_successful = Some(record.name_any());
    st.last_successful_time = rs.completion_time;
    st.last_successful_url = rs.url;
    st.last_successful_size = rs.size;
    write(ctx, cluster, &st, None).await
}

/// Writes `status.backup` (and the `BackupHealthy` condition, replacing its old self).
async fn write(
    ctx: &Taker<'_>,
    cluster: &EtcdCluster,
    st: &BackupStatus,
    cond: Option<Condition>,
) -> Result<(), Error> {
    let ns = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let api: Api<EtcdCluster> = Api::namespaced(ctx.reach.client.clone(), &ns);
    let mut patch = json!({ "status": { "backup": st } });
    if let Some(cond) = cond {
        // Conditions are a list: a merge patch replaces it whole, so read the newest first.
        let fresh = api
            .get_status(&name)
            .await
            .map_err(|e| Error::kube("get", crate::api::KIND, &ns, &name, e))?;
        let mut conds: Vec<Condition> = fresh
            .status
            .map(|s| s.conditions)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.type_ != condition::BACKUP_HEALTHY)
            .collect();
        conds.push(cond);
        patch["status"]["conditions"] = json!(conds);
    }
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(|e| {
            Error::kube(
                "update the backup status of",
                crate::api::KIND,
                &ns,
                &name,
                e,
            )
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn spec() -> BackupSpec {
        BackupSpec {
            destination: "s3://b/p".into(),
            schedule: Some("0 * * * *".into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_first_run_counts_from_creation_unless_run_on_create() {
        let sched = schedule::parse("0 * * * *").unwrap();
        let created = t("2026-12-01T10:20:00Z");
        assert_eq!(
            due(&spec(), &sched, None, created, t("2026-12-01T10:30:00Z")),
            Due::At(t("2026-12-01T11:00:00Z"))
        );
        let mut s = spec();
        s.run_on_create = true;
        let now = t("2026-12-01T10:30:00Z");
        assert_eq!(due(&s, &sched, None, created, now), Due::Now(now));
    }

    #[test]
    fn a_scheduler_that_was_down_runs_once_for_the_slots_it_missed() {
        let sched = schedule::parse("0 * * * *").unwrap();
        let last = Some(t("2026-12-01T08:00:00Z"));
        assert_eq!(
            due(
                &spec(),
                &sched,
                last,
                t("2026-12-01T00:00:00Z"),
                t("2026-12-01T11:05:00Z")
            ),
            Due::Now(t("2026-12-01T11:00:00Z"))
        );
        // Once that slot is recorded, the next is an hour later.
        assert_eq!(
            due(
                &spec(),
                &sched,
                Some(t("2026-12-01T11:00:00Z")),
                t("2026-12-01T00:00:00Z"),
                t("2026-12-01T11:05:00Z")
            ),
            Due::At(t("2026-12-01T12:00:00Z"))
        );
    }

    #[test]
    fn a_suspended_schedule_runs_nothing() {
        let sched = schedule::parse("* * * * *").unwrap();
        let mut s = spec();
        s.suspend = true;
        assert_eq!(
            due(
                &s,
                &sched,
                None,
                t("2026-12-01T00:00:00Z"),
                t("2026-12-02T00:00:00Z")
            ),
            Due::Off
        );
    }

    #[test]
    fn backup_health_reads_failure_and_age() {
        let sched = schedule::parse("0 * * * *").unwrap();
        let now = t("2026-12-01T12:30:00Z");
        let mut st = BackupStatus {
            last_successful: Some("demo-1".into()),
            last_successful_time: Some(Time(t("2026-12-01T12:00:05Z"))),
            ..Default::default()
        };
        let c = health(&st, Some(&sched), 1, None, now);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", reason::BACKUP_SUCCEEDED)
        );
        st.last_failed = Some("demo-2".into());
        st.last_failed_time = Some(Time(t("2026-12-01T12:01:00Z")));
        let c = health(&st, Some(&sched), 1, Some(&c), now);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", reason::BACKUP_FAILED)
        );
        assert!(c.message.contains("demo-2"));
        st.last_failed = None;
        st.last_failed_time = None;
        let c = health(&st, Some(&sched), 1, None, t("2026-12-01T14:30:00Z"));
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", reason::BACKUP_OVERDUE)
        );
    }

    /// The names `expired` deletes for cluster ns/demo with destination s3://b/p.
    fn names(
        records: &[EtcdBackup],
        policy: &Retention,
        now: Timestamp,
        who: &select::Identity,
        pinned: &BTreeSet<String>,
    ) -> Vec<String> {
        let dest = Location::parse("s3://b/p").unwrap();
        let owner = Owner {
            who,
            namespace: "ns",
            cluster: "demo",
            destination: &dest,
        };
        let e = expired(records, policy, now, owner, pinned);
        assert!(e.foreign.is_empty(), "{:?}", e.foreign);
        e.delete.into_iter().map(|(n, _)| n).collect()
    }

    fn record(name: &str, trigger: &str, phase: &str, start: &str) -> EtcdBackup {
        let mut b = EtcdBackup::new(
            name,
            crate::api::EtcdBackupSpec {
                cluster: "demo".into(),
                destination: "s3://b/p".into(),
                trigger: Some(trigger.into()),
                ..Default::default()
            },
        );
        b.status = Some(crate::api::EtcdBackupStatus {
            phase: Some(phase.into()),
            start_time: Some(Time(t(start))),
            ..Default::default()
        });
        b
    }

    #[test]
    fn retention_only_ever_deletes_scheduled_backups_and_keeps_the_newest_success() {
        let records = vec![
            record("s1", "schedule", "Succeeded", "2026-12-01T10:00:00Z"),
            record("s2", "schedule", "Succeeded", "2026-12-01T11:00:00Z"),
            record("cli", "cli", "Succeeded", "2026-12-01T09:00:00Z"),
            record("s3", "schedule", "Failed", "2026-12-01T12:00:00Z"),
            record("s4", "schedule", "Running", "2026-12-01T12:01:00Z"),
        ];
        let policy = Retention {
            keep_last: Some(1),
            ..Default::default()
        };
        let gone = names(
            &records,
            &policy,
            t("2026-12-01T12:02:00Z"),
            &select::Identity::default(),
            &BTreeSet::new(),
        );
        assert!(gone.contains(&"s1".to_string()), "{gone:?}");
        assert!(
            !gone.contains(&"s2".to_string()),
            "the newest success stays: {gone:?}"
        );
        assert!(!gone.contains(&"cli".to_string()) && !gone.contains(&"s4".to_string()));
    }

    /// A scheduled, successful backup of cluster uid `uid` taken at `start`, with quorum.
    fn of(uid: &str, name: &str, start: &str) -> EtcdBackup {
        let mut b = record(name, "schedule", "Succeeded", start);
        b.spec.cluster_uid = Some(uid.into());
        b.status.as_mut().unwrap().quorum = Some(true);
        b
    }

    const OLD: select::Identity = select::Identity {
        uid: Some("old"),
        cluster_id: None,
    };
    const NEW: select::Identity = select::Identity {
        uid: Some("new"),
        cluster_id: None,
    };

    fn keep_last(n: u32) -> Retention {
        Retention {
            keep_last: Some(n),
            ..Default::default()
        }
    }

    #[test]
    fn a_cluster_re_created_empty_under_the_same_name_never_pushes_out_the_old_backups() {
        let records = vec![
            of("old", "old-1", "2026-12-01T08:00:00Z"),
            of("old", "old-2", "2026-12-01T09:00:00Z"),
            of("new", "new-1", "2026-12-01T10:00:00Z"),
            of("new", "new-2", "2026-12-01T11:00:00Z"),
        ];
        let now = t("2026-12-01T12:00:00Z");
        let gone = names(&records, &keep_last(1), now, &NEW, &BTreeSet::new());
        assert_eq!(gone, vec!["new-1"]);
        // The old cluster (were it back) counts only its own.
        let gone = names(&records, &keep_last(1), now, &OLD, &BTreeSet::new());
        assert_eq!(gone, vec!["old-1"]);
    }

    #[test]
    fn records_without_a_uid_are_matched_by_cluster_id_else_by_name() {
        let mut legacy_other = record(
            "legacy-other",
            "schedule",
            "Succeeded",
            "2026-12-01T07:00:00Z",
        );
        legacy_other.status.as_mut().unwrap().cluster_id = Some("00000000000000aa".into());
        let mut legacy_mine = record(
            "legacy-mine",
            "schedule",
            "Succeeded",
            "2026-12-01T08:00:00Z",
        );
        legacy_mine.status.as_mut().unwrap().cluster_id = Some("00000000000000bb".into());
        let legacy_unknown = record(
            "legacy-unknown",
            "schedule",
            "Failed",
            "2026-12-01T06:00:00Z",
        );
        let records = vec![
            legacy_other,
            legacy_mine,
            legacy_unknown,
            of("new", "new-1", "2026-12-01T10:00:00Z"),
        ];
        let who = select::Identity {
            uid: Some("new"),
            cluster_id: Some("00000000000000bb"),
        };
        let gone = names(
            &records,
            &keep_last(1),
            t("2026-12-01T12:00:00Z"),
            &who,
            &BTreeSet::new(),
        );
        assert_eq!(gone, vec!["legacy-unknown", "legacy-mine"]);
    }

    #[test]
    fn backups_without_quorum_never_push_a_good_backup_out() {
        let mut records = vec![of("u", "good", "2026-12-01T08:00:00Z")];
        for h in 9..12 {
            let mut b = of(
                "u",
                &format!("lagging-{h}"),
                &format!("2026-12-01T{h:02}:00:00Z"),
            );
            b.status.as_mut().unwrap().quorum = Some(false);
            records.push(b);
        }
        let who = select::Identity {
            uid: Some("u"),
            cluster_id: None,
        };
        let gone = names(
            &records,
            &keep_last(1),
            t("2026-12-01T12:00:00Z"),
            &who,
            &BTreeSet::new(),
        );
        assert!(!gone.contains(&"good".to_string()), "{gone:?}");
    }

    #[test]
    fn a_backup_an_etcd_cluster_restores_from_is_never_pruned() {
        let records = vec![
            of("u", "read-by-restore", "2026-12-01T08:00:00Z"),
            of("u", "b", "2026-12-01T09:00:00Z"),
            of("u", "c", "2026-12-01T10:00:00Z"),
        ];
        let who = select::Identity {
            uid: Some("u"),
            cluster_id: None,
        };
        let pinned = BTreeSet::from(["read-by-restore".to_string()]);
        let gone = names(
            &records,
            &keep_last(1),
            t("2026-12-01T12:00:00Z"),
            &who,
            &pinned,
        );
        assert_eq!(gone, vec!["b"]);
    }

    /// A successful scheduled backup of uid `u` whose object is `url`.
    fn stored(name: &str, start: &str, url: &str) -> EtcdBackup {
        let mut b = of("u", name, start);
        b.status.as_mut().unwrap().url = Some(url.into());
        b
    }

    /// `expired` with keepLast 1 for ns/demo (uid u) backed up to `dest`, at 12:00.
    fn keep_last_one_of_u(records: &[EtcdBackup], dest: &Location) -> Expiry {
        let who = select::Identity {
            uid: Some("u"),
            cluster_id: None,
        };
        let owner = Owner {
            who: &who,
            namespace: "ns",
            cluster: "demo",
            destination: dest,
        };
        let now = t("2026-12-01T12:00:00Z");
        expired(records, &keep_last(1), now, owner, &BTreeSet::new())
    }

    #[test]
    fn retention_deletes_only_this_clusters_objects_in_its_destination_and_reports_the_rest() {
        let dest = Location::parse("s3://b/p?endpoint=http://10.0.0.5:9000").unwrap();
        let at = |h: u32| format!("2026-12-01T{h:02}:00:00Z");
        let obj = |h: u32| format!("ns-demo-20261201T{h:02}0000.000Z-r7.db.zst");
        let mine = |h: u32| format!("s3://b/p/{}?endpoint=http://10.0.0.5:9000", obj(h));
        let records = vec![
            stored("old", &at(1), &mine(1)),
            // Forged: elsewhere on the server, or in the destination under a name not ours.
            stored(
                "other-bucket",
                &at(2),
                &format!("s3://precious/{}?endpoint=http://10.0.0.5:9000", obj(2)),
            ),
            stored("aws", &at(3), &format!("s3://b/p/{}", obj(3))),
            stored(
                "other-host",
                &at(4),
                &format!("s3://b/p/{}?endpoint=http://evil:9000", obj(4)),
            ),
            stored(
                "prefix-games",
                &at(5),
                &format!("s3://b/p2/{}?endpoint=http://10.0.0.5:9000", obj(5)),
            ),
            stored(
                "not-our-name",
                &at(6),
                "s3://b/p/ns-other-20261201T060000.000Z-r7.db?endpoint=http://10.0.0.5:9000",
            ),
            stored("mid", &at(7), &mine(7)),
            stored("new", &at(8), &mine(8)),
        ];
        let e = keep_last_one_of_u(&records, &dest);
        assert_eq!(
            e.delete,
            vec![
                ("old".to_string(), Some(obj(1))),
                ("mid".to_string(), Some(obj(7)))
            ]
        );
        assert_eq!(e.foreign.len(), 5, "{:#?}", e.foreign);
        for (f, name) in e.foreign.iter().zip([
            "other-bucket",
            "aws",
            "other-host",
            "prefix-games",
            "not-our-name",
        ]) {
            assert!(
                f.contains(&format!("EtcdBackup ns/{name} names"))
                    && f.contains("leaves it and its record alone"),
                "{f}"
            );
        }
    }

    #[test]
    fn a_forged_record_cannot_pass_for_the_newest_backup_by_its_start_time() {
        let dest = Location::parse("s3://b/p").unwrap();
        // The record claims to be the newest; its object's name says it is the oldest.
        let records = vec![
            stored(
                "forged-time",
                "2026-12-01T11:00:00Z",
                "s3://b/p/ns-demo-20261201T010000.000Z-r1.db",
            ),
            stored(
                "real",
                "2026-12-01T05:00:00Z",
                "s3://b/p/ns-demo-20261201T050000.000Z-r5.db",
            ),
        ];
        let e = keep_last_one_of_u(&records, &dest);
        let names: Vec<&str> = e.delete.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["forged-time"]);
    }

    #[test]
    fn a_record_dated_in_the_future_is_neither_counted_nor_deleted() {
        let dest = Location::parse("s3://b/p").unwrap();
        // now is 12:00: a name dated 23:00 would be the newest and push "real" out.
        let records = vec![
            stored(
                "future",
                "2026-12-01T11:00:00Z",
                "s3://b/p/ns-demo-20261201T230000.000Z-r9.db",
            ),
            stored(
                "real",
                "2026-12-01T05:00:00Z",
                "s3://b/p/ns-demo-20261201T050000.000Z-r5.db",
            ),
            stored(
                "skewed",
                "2026-12-01T04:00:00Z",
                "s3://b/p/ns-demo-20261201T120500.000Z-r6.db",
            ),
        ];
        let e = keep_last_one_of_u(&records, &dest);
        let names: Vec<&str> = e.delete.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["real"], "a clock 5 minutes ahead still counts");
        assert_eq!(e.foreign.len(), 1, "{:#?}", e.foreign);
        assert!(
            e.foreign[0].contains("EtcdBackup ns/future") && e.foreign[0].contains("after now")
        );
    }
}
