//! Which EtcdBackup records belong to which cluster, which hold a restore worth the name, and
//! which were left `Running` by a taker that is gone. Pure: records in, answers out (no client,
//! no clock: `now` is passed in).
//!
//! A record belongs to the cluster whose `metadata.uid` it carries: a cluster deleted and
//! re-created under the same name is another cluster, and neither ever prunes or shadows the
//! other's backups. Records written before the uid was recorded are matched by their etcd cluster
//! id, else by name only (`Owner::ByNameOnly`).

use std::time::Duration;

use jiff::Timestamp;
use kube::ResourceExt;

use crate::api::{EtcdBackup, backup_phase};

/// A `Running` record this much older than its start, whose taker is not known to be alive, was
/// left by a taker that crashed or was killed. (No backup stalls longer than `take::STALL`; this
/// leaves room for a very large database on a slow link.)
pub const ABANDONED_AFTER: Duration = Duration::from_secs(6 * 3600);

/// The cluster a record is matched against: its uid, and the etcd cluster id it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Identity<'a> {
    pub uid: Option<&'a str>,
    pub cluster_id: Option<&'a str>,
}

/// Whose a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Taken of this cluster (same uid, or an older record with the same etcd cluster id).
    This,
    /// An older record with neither uid nor cluster id: only its name says whose it is.
    ByNameOnly,
    /// Taken of another cluster of the same name (an earlier one, or one re-created since).
    Other,
}

/// Whose `b` is, seen from the cluster `who`.
pub fn owner(b: &EtcdBackup, who: &Identity) -> Owner {
    let record_id = b
        .status
        .as_ref()
        .and_then(|s| s.cluster_id.as_deref())
        .filter(|id| !id.trim_start_matches('0').is_empty());
    match (b.spec.cluster_uid.as_deref(), who.uid) {
        (Some(r), Some(u)) if r == u => Owner::This,
        (Some(_), Some(_)) => Owner::Other,
        _ => match (record_id, who.cluster_id) {
            (Some(r), Some(c)) if r == c => Owner::This,
            (Some(_), Some(_)) => Owner::Other,
            _ => Owner::ByNameOnly,
        },
    }
}

/// Taken while the cluster had no healthy quorum (from a lagging member, or the only survivor):
/// it holds what that member had applied, not necessarily every acknowledged write. Records
/// written before `status.quorum` existed say so in their message.
pub fn without_quorum(b: &EtcdBackup) -> bool {
    let Some(st) = &b.status else { return false };
    match st.quorum {
        Some(q) => !q,
        None => st
            .message
            .as_deref()
            .is_some_and(|m| m.contains("no healthy quorum")),
    }
}

pub fn succeeded(b: &EtcdBackup) -> bool {
    b.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(backup_phase::SUCCEEDED)
}

/// A backup to count on: it succeeded, with a healthy quorum behind the member it came from.
pub fn good(b: &EtcdBackup) -> bool {
    succeeded(b) && !without_quorum(b)
}

/// What a succeeded record claims about its object: where, how many bytes, which sha256.
pub fn claim(b: &EtcdBackup) -> Option<(&str, i64, &str)> {
    let st = b.status.as_ref()?;
    Some((st.url.as_deref()?, st.size?, st.sha256.as_deref()?))
}

/// How the engine's read of the object stands against the record's claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// Found with the claimed size and sha256: retention may count it.
    Verified,
    /// Read, and not as claimed (missing, another size or sha256): never counted nor deleted.
    Mismatched,
    /// Not read yet, or the claim changed since (or it claims nothing to read).
    Unchecked,
}

/// Whether the engine found `b`'s object as its record claims (`status.storeCheck`).
pub fn stored(b: &EtcdBackup) -> Stored {
    let (Some(claim), Some(check)) = (
        claim(b),
        b.status.as_ref().and_then(|s| s.store_check.as_ref()),
    ) else {
        return Stored::Unchecked;
    };
    if claim != (check.url.as_str(), check.size, check.sha256.as_str()) {
        return Stored::Unchecked;
    }
    if check.matched {
        Stored::Verified
    } else {
        Stored::Mismatched
    }
}

/// When a backup was taken: its start, else its record's creation.
pub fn taken_at(b: &EtcdBackup) -> Option<Timestamp> {
    b.status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .or(b.metadata.creation_timestamp.as_ref())
        .map(|t| t.0)
}

/// What `restore --latest-of` picks, and what it passed over on the way (one line each).
#[derive(Debug)]
pub struct Latest<'a> {
    pub pick: &'a EtcdBackup,
    pub passed_over: Vec<String>,
}

/// Which of the eligible backups `latest` picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefer {
    /// The newest backup whose restore drill passed; with none drilled, the newest one; never
    /// one whose drill failed (`restore --latest-of`).
    Drilled,
    /// The newest one, drilled or not (`backup verify --latest-of`: the one to drill).
    Newest,
}

/// The newest good backup of the cluster `who` (the cluster as it exists now), or — when no
/// cluster of that name exists — of the cluster that took the newest good backup, as `prefer`
/// says. Backups without quorum, backups of another cluster of the same name, and (preferring
/// drilled ones) backups whose drill failed or that a drilled one is preferred to, are passed
/// over and named.
pub fn latest<'a>(
    records: &'a [EtcdBackup],
    who: Option<Identity<'_>>,
    prefer: Prefer,
) -> Result<Latest<'a>, String> {
    let mut newest_first: Vec<&EtcdBackup> = records.iter().collect();
    newest_first.sort_by_key(|b| std::cmp::Reverse(taken_at(b)));
    let who = match who {
        Some(w) => w,
        None => {
            let Some(first) = newest_first.iter().find(|b| good(b)) else {
                return Err(none_good(&newest_first));
            };
            Identity {
                uid: first.spec.cluster_uid.as_deref(),
                cluster_id: first.status.as_ref().and_then(|s| s.cluster_id.as_deref()),
            }
        }
    };
    let mut passed_over = Vec::new();
    let mut others = 0;
    let mut eligible = Vec::new();
    for b in &newest_first {
        if owner(b, &who) == Owner::Other {
            if succeeded(b) && eligible.is_empty() {
                others += 1;
            }
            continue;
        }
        if !succeeded(b) {
            continue;
        }
        if without_quorum(b) {
            if eligible.is_empty() {
                passed_over.push(format!(
                    "passed over {}: taken without a healthy quorum (name it with --from-backup to use it)",
                    b.name_any()
                ));
            }
            continue;
        }
        eligible.push(*b);
    }
    let pick = match prefer {
        Prefer::Newest => eligible.first().copied(),
        Prefer::Drilled => drilled_pick(&eligible, &mut passed_over),
    };
    let Some(pick) = pick else {
        if !eligible.is_empty() {
            return Err(format!(
                "no good backup: the restore drill of each of the {} good one(s) failed ({}; see `kubectl etcd backup list`, name one with --from-backup to use it anyway)",
                eligible.len(),
                eligible
                    .iter()
                    .map(|b| b.name_any())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        return Err(none_good(&newest_first));
    };
    if others > 0 {
        passed_over.push(format!(
            "passed over {others} newer backup(s) of another cluster of the same name (re-created since, or deleted); see `kubectl etcd backup list`"
        ));
    }
    if owner(pick, &who) == Owner::ByNameOnly {
        passed_over.push(format!(
            "{} predates cluster uids in records: matched by name only",
            pick.name_any()
        ));
    }
    Ok(Latest { pick, passed_over })
}

/// The newest of `eligible` (newest first) whose drill passed, else the newest never drilled;
/// never one whose drill failed. What it passes over on the way is said in `notes`.
fn drilled_pick<'a>(
    eligible: &[&'a EtcdBackup],
    notes: &mut Vec<String>,
) -> Option<&'a EtcdBackup> {
    use super::drill::{Drilled, drilled};
    let passed = eligible.iter().position(|b| drilled(b) == Drilled::Passed);
    let undrilled = eligible.iter().position(|b| drilled(b) == Drilled::Not);
    let at = passed.or(undrilled)?;
    for b in &eligible[..at] {
        let why = match drilled(b) {
            Drilled::Failed => format!(
                "its restore drill failed ({})",
                b.status
                    .as_ref()
                    .and_then(|s| s.drill.as_ref())
                    .and_then(|d| d.message.as_deref())
                    .unwrap_or("see its status.drill")
            ),
            _ => format!(
                "not drilled, and {} passed its restore drill",
                eligible[at].name_any()
            ),
        };
        notes.push(format!("passed over {}: {why}", b.name_any()));
    }
    Some(eligible[at])
}

fn none_good(records: &[&EtcdBackup]) -> String {
    let no_quorum = records
        .iter()
        .filter(|b| succeeded(b) && without_quorum(b))
        .count();
    if no_quorum > 0 {
        format!(
            "no good backup: the {no_quorum} successful one(s) were taken without a healthy quorum (name one with --from-backup to use it anyway)"
        )
    } else {
        "no successful backup is recorded".into()
    }
}

/// A `Running` record whose taker is gone: the taker is `me` (a process that is not taking it
/// now, so an earlier life of mine that died), or it started more than `ABANDONED_AFTER` ago.
pub fn abandoned(b: &EtcdBackup, me: &str, now: Timestamp) -> bool {
    let Some(st) = &b.status else { return false };
    if st.phase.as_deref() != Some(backup_phase::RUNNING) {
        return false;
    }
    if st.taken_by.as_deref() == Some(me) {
        return true;
    }
    taken_at(b).is_some_and(|t| {
        now.duration_since(t)
            .try_into()
            .is_ok_and(|age: Duration| age > ABANDONED_AFTER)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{EtcdBackupSpec, EtcdBackupStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    const NOW: &str = "2026-12-01T12:00:00Z";

    /// A backup record: `name` of cluster `demo`, uid, taken `hours_ago`, succeeded with quorum.
    struct B(EtcdBackup);

    fn backup(name: &str, uid: Option<&str>, hours_ago: i64) -> B {
        let mut b = EtcdBackup::new(
            name,
            EtcdBackupSpec {
                cluster: "demo".into(),
                destination: "s3://b/p".into(),
                cluster_uid: uid.map(Into::into),
                ..Default::default()
            },
        );
        let t: Timestamp = NOW.parse().unwrap();
        b.status = Some(EtcdBackupStatus {
            phase: Some(backup_phase::SUCCEEDED.into()),
            start_time: Some(Time(t - jiff::SignedDuration::from_hours(hours_ago))),
            cluster_id: Some("00000000000000aa".into()),
            quorum: Some(true),
            ..Default::default()
        });
        B(b)
    }

    impl B {
        fn st(mut self, f: impl FnOnce(&mut EtcdBackupStatus)) -> Self {
            f(self.0.status.as_mut().unwrap());
            self
        }
        fn without_quorum(self) -> Self {
            self.st(|s| s.quorum = Some(false))
        }
        fn failed(self) -> Self {
            self.st(|s| s.phase = Some(backup_phase::FAILED.into()))
        }
        fn cluster_id(self, id: Option<&str>) -> Self {
            self.st(|s| s.cluster_id = id.map(Into::into))
        }
    }

    /// `b` with a restore drill of `outcome` of the object it names.
    fn drilled(b: B, outcome: &str) -> B {
        b.st(|s| {
            s.url = Some("s3://b/p/x".into());
            s.drill = Some(crate::api::DrillStatus {
                outcome: outcome.into(),
                objects: vec!["s3://b/p/x".into()],
                ..Default::default()
            });
        })
    }

    #[test]
    fn latest_of_prefers_the_newest_drilled_backup_and_never_a_failed_drill() {
        let l = list(vec![
            drilled(backup("failed", Some("uid-old"), 1), "Failed"),
            backup("undrilled", Some("uid-old"), 2),
            drilled(backup("passed", Some("uid-old"), 3), "Passed"),
            backup("older", Some("uid-old"), 4),
        ]);
        let got = latest(&l, Some(OLD), Prefer::Drilled).unwrap();
        assert_eq!(got.pick.name_any(), "passed");
        assert!(
            got.passed_over[0].contains("failed: its restore drill failed"),
            "{:?}",
            got.passed_over
        );
        assert!(
            got.passed_over[1].contains("undrilled: not drilled, and passed passed"),
            "{:?}",
            got.passed_over
        );
        // `backup verify --latest-of` drills the newest, whatever its drills.
        assert_eq!(
            latest(&l, Some(OLD), Prefer::Newest)
                .unwrap()
                .pick
                .name_any(),
            "failed"
        );
        // None drilled but a failed one: the newest never drilled.
        let l = list(vec![
            drilled(backup("failed", Some("uid-old"), 1), "Failed"),
            backup("undrilled", Some("uid-old"), 2),
        ]);
        assert_eq!(
            latest(&l, Some(OLD), Prefer::Drilled)
                .unwrap()
                .pick
                .name_any(),
            "undrilled"
        );
        // Every good one failed its drill: refused, naming them.
        let l = list(vec![drilled(
            backup("failed", Some("uid-old"), 1),
            "Failed",
        )]);
        let e = latest(&l, Some(OLD), Prefer::Drilled).unwrap_err();
        assert!(
            e.contains("restore drill of each of the 1 good one(s) failed (failed"),
            "{e}"
        );
    }

    fn list(bs: Vec<B>) -> Vec<EtcdBackup> {
        bs.into_iter().map(|b| b.0).collect()
    }

    const OLD: Identity = Identity {
        uid: Some("uid-old"),
        cluster_id: Some("00000000000000aa"),
    };
    const NEW: Identity = Identity {
        uid: Some("uid-new"),
        cluster_id: Some("00000000000000bb"),
    };

    #[test]
    fn a_record_belongs_to_the_cluster_whose_uid_it_carries() {
        let b = backup("a", Some("uid-old"), 1).0;
        assert_eq!(owner(&b, &OLD), Owner::This);
        assert_eq!(owner(&b, &NEW), Owner::Other);
    }

    #[test]
    fn an_older_record_without_uid_is_matched_by_cluster_id_else_by_name() {
        let b = backup("a", None, 1).0;
        assert_eq!(owner(&b, &OLD), Owner::This);
        assert_eq!(owner(&b, &NEW), Owner::Other);
        let failed = backup("f", None, 1).failed().cluster_id(None).0;
        assert_eq!(owner(&failed, &NEW), Owner::ByNameOnly);
        // A zero id (taken while etcd could not be reached) says nothing.
        let zero = backup("z", None, 1).cluster_id(Some("0000000000000000")).0;
        assert_eq!(owner(&zero, &NEW), Owner::ByNameOnly);
    }

    #[test]
    fn a_backup_without_quorum_is_not_good_and_older_records_say_it_in_their_message() {
        assert!(good(&backup("a", None, 1).0));
        assert!(!good(&backup("a", None, 1).without_quorum().0));
        let legacy = backup("l", None, 1)
            .st(|s| {
                s.quorum = None;
                s.message = Some(
                    "taken from demo-2 while the cluster had no healthy quorum: it holds what that member had applied".into(),
                );
            })
            .0;
        assert!(without_quorum(&legacy) && !good(&legacy));
        assert!(!good(&backup("f", None, 1).failed().0));
    }

    #[test]
    fn latest_of_skips_backups_without_quorum_and_says_so() {
        let l = list(vec![
            backup("lagging", Some("uid-old"), 1).without_quorum(),
            backup("good", Some("uid-old"), 2),
        ]);
        let got = latest(&l, Some(OLD), Prefer::Drilled).unwrap();
        assert_eq!(got.pick.name_any(), "good");
        assert!(
            got.passed_over[0].contains("lagging"),
            "{:?}",
            got.passed_over
        );
    }

    #[test]
    fn latest_of_a_cluster_re_created_empty_picks_its_own_backups_not_the_old_ones() {
        let l = list(vec![
            backup("new-empty", Some("uid-new"), 1).cluster_id(Some("00000000000000bb")),
            backup("old-data", Some("uid-old"), 5),
        ]);
        assert_eq!(
            latest(&l, Some(NEW), Prefer::Drilled)
                .unwrap()
                .pick
                .name_any(),
            "new-empty"
        );
        assert_eq!(
            latest(&l, Some(OLD), Prefer::Drilled)
                .unwrap()
                .pick
                .name_any(),
            "old-data"
        );
        let got = latest(&l, Some(OLD), Prefer::Drilled).unwrap();
        assert!(
            got.passed_over[0].contains("another cluster"),
            "{:?}",
            got.passed_over
        );
    }

    #[test]
    fn latest_of_a_deleted_cluster_follows_the_newest_good_backup() {
        let l = list(vec![
            backup("lagging", Some("uid-new"), 1).without_quorum(),
            backup("newest-good", Some("uid-new"), 2),
            backup("old", Some("uid-old"), 3),
        ]);
        assert_eq!(
            latest(&l, None, Prefer::Drilled).unwrap().pick.name_any(),
            "newest-good"
        );
    }

    #[test]
    fn latest_of_with_only_backups_without_quorum_refuses_naming_the_way() {
        let l = list(vec![backup("lagging", Some("uid-old"), 1).without_quorum()]);
        let e = latest(&l, Some(OLD), Prefer::Drilled).unwrap_err();
        assert!(e.contains("--from-backup"), "{e}");
        let e = latest(&l, None, Prefer::Drilled).unwrap_err();
        assert!(e.contains("without a healthy quorum"), "{e}");
    }

    #[test]
    fn latest_of_says_when_it_matched_an_older_record_by_name_only() {
        let l = list(vec![backup("legacy", None, 1).cluster_id(None)]);
        let got = latest(&l, Some(NEW), Prefer::Drilled).unwrap();
        assert!(
            got.passed_over[0].contains("by name only"),
            "{:?}",
            got.passed_over
        );
    }

    #[test]
    fn a_running_record_is_abandoned_when_its_taker_is_me_or_it_is_too_old() {
        let now: Timestamp = NOW.parse().unwrap();
        let running = |by: &str, hours: i64| {
            backup("r", Some("u"), hours)
                .st(|s| {
                    s.phase = Some(backup_phase::RUNNING.into());
                    s.taken_by = Some(by.into());
                })
                .0
        };
        assert!(!abandoned(&running("operator/a", 1), "operator/b", now));
        assert!(abandoned(&running("operator/b", 1), "operator/b", now));
        assert!(abandoned(&running("cli/host/1", 7), "operator/b", now));
        assert!(!abandoned(
            &backup("done", Some("u"), 7).0,
            "operator/b",
            now
        ));
    }
}
