//! Restore drills, pure: what a drill found against what the backup's record says and what the
//! live cluster holds at the same revision (`verdict`), and which records a drill counts for
//! (`drilled`). No client, no clock.
//!
//! What a drill proves, in order of the checks: the stored object is the one the record names
//! (size and sha256 as read, and as the object's own metadata says: tamper evidence); it is a
//! whole etcd snapshot (decompressed, decrypted, etcd's own hash: checked by the fetch); it
//! restores and an etcd serves it; and what it serves is this cluster's data at that revision
//! (the revision and key count of the record, and `HashKV` equal to the live cluster's at the
//! same revision while the live cluster can still compute it). etcd keeps its cluster id in the
//! WAL, not in the snapshot, and `snapshot restore` rewrites the membership: another cluster's
//! valid snapshot is told by its bytes (sha256), its revision and keys, and its `HashKV`.

use crate::api::{EtcdBackup, drill_outcome};
use crate::archive::store::Stamp;

/// What the record of the drilled backup claims.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    pub size: Option<i64>,
    pub sha256: Option<String>,
    pub revision: Option<i64>,
    pub keys: Option<i64>,
}

impl Recorded {
    pub fn of(b: &EtcdBackup) -> Recorded {
        let st = b.status.clone().unwrap_or_default();
        Recorded {
            size: st.size,
            sha256: st.sha256,
            revision: st.revision,
            keys: st.keys,
        }
    }
}

/// The stored object: its size, its sha256 as the drill's fetch read it (`None`: the fetch
/// failed before its end), and the stamp stored with it (`None`: it carries none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Read {
    pub size: u64,
    pub sha256: Option<String>,
    pub stamp: Option<Stamp>,
}

/// What the restored one-member etcd serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Restored {
    pub revision: i64,
    pub keys: i64,
    pub hash_kv: u32,
    pub compact_revision: i64,
}

/// What a drill's fetch read: the stored bytes and their sha256.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fetched {
    pub stored_bytes: u64,
    pub sha256: String,
}

/// A drill pod's figures (its `read` container's termination message).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DrillFigures {
    pub fetched: Fetched,
    pub restored: Restored,
}

/// The live cluster at the restored revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Live {
    /// Its `HashKV` at that revision, above its compaction, and its key count there.
    Hash {
        hash_kv: u32,
        compact_revision: i64,
        keys: i64,
    },
    /// It compacted past that revision: nothing to compare with.
    Compacted { compact_revision: i64 },
    /// That revision is ahead of the live cluster's own.
    Behind { revision: i64 },
    /// It could not be asked (no quorum, no member answered, no such cluster any more).
    Unknown(String),
}

/// A drill's result: failed when `problems` is not empty; `notes` say what was not compared.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    pub problems: Vec<String>,
    pub notes: Vec<String>,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }

    pub fn outcome(&self) -> &'static str {
        if self.passed() {
            drill_outcome::PASSED
        } else {
            drill_outcome::FAILED
        }
    }

    /// The one line for the record, the CLI and the Event: every problem, else every note.
    pub fn message(&self) -> Option<String> {
        let lines = if self.passed() {
            &self.notes
        } else {
            &self.problems
        };
        (!lines.is_empty()).then(|| lines.join("; "))
    }
}

/// Compares what a drill read (`read`) with the record; `restored` is `None` when the object
/// could not be restored at all (its fetch or restore failed, `why`).
pub fn verdict(
    rec: &Recorded,
    read: Option<&Read>,
    restored: Result<Restored, String>,
    live: &Live,
) -> Verdict {
    let mut v = Verdict::default();
    if let Some(read) = read {
        object(rec, read, &mut v);
    }
    let r = match restored {
        Ok(r) => r,
        Err(why) => {
            v.problems.push(format!("it does not restore: {why}"));
            return v;
        }
    };
    against_record(rec, &r, &mut v);
    against_live(&r, live, &mut v);
    v
}

/// The stored bytes against the record and against the stamp stored with the object.
fn object(rec: &Recorded, read: &Read, v: &mut Verdict) {
    if let (Some(want), Some(sum)) = (&rec.sha256, &read.sha256)
        && !want.eq_ignore_ascii_case(sum)
    {
        v.problems.push(format!(
            "the object's sha256 is {sum}, the record says {want} (the object was replaced or altered since it was stored)"
        ));
    }
    if let Some(size) = rec.size
        && i64::try_from(read.size) != Ok(size)
    {
        v.problems.push(format!(
            "the object holds {} bytes, the record says {size} (truncated, or another object)",
            read.size
        ));
    }
    let Some(stamp) = &read.stamp else {
        v.notes.push(
            "the object carries no size and sha256 of its own (stored before objects did, or rewritten without them)"
                .into(),
        );
        return;
    };
    let differs = read
        .sha256
        .as_ref()
        .is_some_and(|sum| !sum.eq_ignore_ascii_case(&stamp.sha256));
    if stamp.size != read.size || differs {
        v.problems.push(format!(
            "the object is not what was stored under its name ({} bytes, sha256 {} when stored): changed in place",
            stamp.size, stamp.sha256
        ));
    }
    if let Some(want) = &rec.sha256
        && !want.eq_ignore_ascii_case(&stamp.sha256)
    {
        v.problems.push(format!(
            "the object was stored as sha256 {}, not the record's {want}: another object was put under its name",
            stamp.sha256
        ));
    }
}

/// The restored member against the record: the snapshot is taken just after the record's
/// revision and key count are read, so its revision is that one or later (writes in between).
fn against_record(rec: &Recorded, r: &Restored, v: &mut Verdict) {
    match rec.revision {
        Some(want) if r.revision < want => v.problems.push(format!(
            "it restores to revision {}, older than revision {want} that the record was taken at (not this backup's snapshot)",
            r.revision
        )),
        Some(want) if r.revision == want => {
            if let Some(keys) = rec.keys
                && keys != r.keys
            {
                v.problems.push(format!(
                    "it holds {} keys at revision {want}, the record says {keys}",
                    r.keys
                ));
            }
        }
        Some(want) => v.notes.push(format!(
            "it restores to revision {} (the record's count was read at {want}, just before the snapshot)",
            r.revision
        )),
        None => v
            .notes
            .push("the record names no revision to compare".into()),
    }
}

/// The restored member against the live cluster at the same revision.
fn against_live(r: &Restored, live: &Live, v: &mut Verdict) {
    match live {
        Live::Hash {
            hash_kv,
            compact_revision,
            keys,
        } => {
            if *compact_revision != r.compact_revision {
                v.notes.push(format!(
                    "HashKV not compared: the live cluster compacted at revision {compact_revision} since (the snapshot's compaction: {})",
                    r.compact_revision
                ));
            } else if *hash_kv != r.hash_kv {
                v.problems.push(format!(
                    "its HashKV at revision {} is {}, the live cluster's is {hash_kv}: it holds other data than this cluster had at that revision (another cluster's snapshot?)",
                    r.revision, r.hash_kv
                ));
            }
            if *keys != r.keys {
                v.problems.push(format!(
                    "it holds {} keys at revision {}, the live cluster {keys}",
                    r.keys, r.revision
                ));
            }
        }
        Live::Compacted { compact_revision } => v.notes.push(format!(
            "HashKV not compared: the live cluster compacted past revision {} (at {compact_revision})",
            r.revision
        )),
        Live::Behind { revision } => v.problems.push(format!(
            "it restores to revision {}, ahead of the live cluster's revision {revision}: not a snapshot of this cluster",
            r.revision
        )),
        Live::Unknown(why) => v
            .notes
            .push(format!("not compared with the live cluster: {why}")),
    }
}

/// How a record's last drill stands for its current object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drilled {
    Passed,
    Failed,
    /// Never drilled, or drilled while the record named another object.
    Not,
}

/// Whether `b`'s last drill passed or failed, for the object the record names now.
pub fn drilled(b: &EtcdBackup) -> Drilled {
    let Some(st) = &b.status else {
        return Drilled::Not;
    };
    let (Some(drill), Some(url)) = (&st.drill, &st.url) else {
        return Drilled::Not;
    };
    if drill.objects.first().is_none_or(|o| o != url) {
        return Drilled::Not;
    }
    match drill.outcome.as_str() {
        drill_outcome::PASSED => Drilled::Passed,
        drill_outcome::FAILED => Drilled::Failed,
        _ => Drilled::Not,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> Recorded {
        Recorded {
            size: Some(100),
            sha256: Some("ab".repeat(32)),
            revision: Some(50),
            keys: Some(20),
        }
    }

    fn read() -> Read {
        Read {
            size: 100,
            sha256: Some("ab".repeat(32)),
            stamp: Some(Stamp {
                size: 100,
                sha256: "ab".repeat(32),
            }),
        }
    }

    fn restored() -> Restored {
        Restored {
            revision: 50,
            keys: 20,
            hash_kv: 7,
            compact_revision: 1,
        }
    }

    fn live() -> Live {
        Live::Hash {
            hash_kv: 7,
            compact_revision: 1,
            keys: 20,
        }
    }

    #[test]
    fn a_good_backup_passes_with_hash_kv_equal_to_the_live_clusters() {
        let v = verdict(&rec(), Some(&read()), Ok(restored()), &live());
        assert!(v.passed(), "{v:?}");
        assert_eq!(v.outcome(), "Passed");
        assert_eq!(v.message(), None);
    }

    #[test]
    fn a_flipped_or_truncated_object_that_does_not_restore_fails_naming_why() {
        // Changed in place, read to the end (the fetch had a sha256) ...
        let mut r = read();
        r.sha256 = Some("cd".repeat(32));
        let v = verdict(
            &rec(),
            Some(&r),
            Err("etcd's hash does not match".into()),
            &live(),
        );
        let m = v.message().unwrap();
        assert!(m.contains("sha256 is cdcd"), "{m}");
        assert!(m.contains("changed in place"), "{m}");
        // ... or cut short and rewritten without its stamp (the fetch stopped early).
        let r = Read {
            size: 60,
            sha256: None,
            stamp: None,
        };
        let v = verdict(
            &rec(),
            Some(&r),
            Err("the snapshot ended without etcd's hash".into()),
            &live(),
        );
        assert!(!v.passed());
        let m = v.message().unwrap();
        assert!(m.contains("holds 60 bytes, the record says 100"), "{m}");
        assert!(m.contains("does not restore: the snapshot ended"), "{m}");
    }

    #[test]
    fn another_clusters_valid_snapshot_fails_on_its_bytes_revision_and_hash_kv() {
        let r = Read {
            size: 90,
            sha256: Some("ef".repeat(32)),
            stamp: Some(Stamp {
                size: 90,
                sha256: "ef".repeat(32),
            }),
        };
        let foreign = Restored {
            revision: 12,
            keys: 5,
            hash_kv: 99,
            compact_revision: 1,
        };
        let live = Live::Hash {
            hash_kv: 3,
            compact_revision: 1,
            keys: 9,
        };
        let v = verdict(&rec(), Some(&r), Ok(foreign), &live);
        let m = v.message().unwrap();
        assert!(m.contains("the record says abab"), "{m}");
        assert!(m.contains("older than revision 50"), "{m}");
        assert!(
            m.contains("HashKV at revision 12 is 99, the live cluster's is 3"),
            "{m}"
        );
        assert!(
            !m.contains("changed in place"),
            "its own stamp is whole: {m}"
        );
        assert!(m.contains("another object was put under its name"), "{m}");
        // Even with a record that names no checksum, HashKV alone tells it.
        let bare = Recorded::default();
        let v = verdict(&bare, None, Ok(foreign), &live);
        assert!(!v.passed());
        assert!(v.message().unwrap().contains("another cluster's snapshot"));
    }

    #[test]
    fn the_same_bytes_with_a_record_changed_since_fail_on_the_record() {
        let mut r = rec();
        r.keys = Some(21);
        let v = verdict(&r, Some(&read()), Ok(restored()), &live());
        assert!(
            v.message()
                .unwrap()
                .contains("holds 20 keys at revision 50, the record says 21"),
            "{v:?}"
        );
    }

    #[test]
    fn a_later_revision_than_the_records_count_is_a_note_not_a_failure() {
        let mut r = restored();
        r.revision = 53;
        r.keys = 23;
        let live = Live::Hash {
            hash_kv: 7,
            compact_revision: 1,
            keys: 23,
        };
        let v = verdict(&rec(), Some(&read()), Ok(r), &live);
        assert!(v.passed(), "{v:?}");
        assert!(v.message().unwrap().contains("restores to revision 53"));
    }

    #[test]
    fn hash_kv_is_compared_only_over_the_same_compaction_and_never_past_it() {
        let compacted_since = Live::Hash {
            hash_kv: 8,
            compact_revision: 30,
            keys: 20,
        };
        let v = verdict(&rec(), Some(&read()), Ok(restored()), &compacted_since);
        assert!(v.passed(), "{v:?}");
        assert!(
            v.message()
                .unwrap()
                .contains("compacted at revision 30 since")
        );
        let past = Live::Compacted {
            compact_revision: 80,
        };
        let v = verdict(&rec(), Some(&read()), Ok(restored()), &past);
        assert!(v.passed(), "{v:?}");
        assert!(v.message().unwrap().contains("compacted past revision 50"));
        let gone = Live::Unknown("EtcdCluster ns/demo does not exist".into());
        assert!(verdict(&rec(), Some(&read()), Ok(restored()), &gone).passed());
    }

    #[test]
    fn a_revision_ahead_of_the_live_cluster_is_not_this_clusters() {
        let v = verdict(
            &rec(),
            Some(&read()),
            Ok(restored()),
            &Live::Behind { revision: 40 },
        );
        assert!(
            v.message()
                .unwrap()
                .contains("ahead of the live cluster's revision 40")
        );
    }

    #[test]
    fn an_object_without_its_own_checksum_is_a_note() {
        let mut r = read();
        r.stamp = None;
        let v = verdict(&rec(), Some(&r), Ok(restored()), &live());
        assert!(v.passed());
        assert!(
            v.message()
                .unwrap()
                .contains("no size and sha256 of its own")
        );
    }

    #[test]
    fn a_drill_counts_only_for_the_object_the_record_names_now() {
        let mut b = EtcdBackup::new("b", Default::default());
        assert_eq!(drilled(&b), Drilled::Not);
        b.status = Some(crate::api::EtcdBackupStatus {
            url: Some("s3://b/x".into()),
            drill: Some(crate::api::DrillStatus {
                outcome: "Passed".into(),
                objects: vec!["s3://b/x".into()],
                ..Default::default()
            }),
            ..Default::default()
        });
        assert_eq!(drilled(&b), Drilled::Passed);
        b.status.as_mut().unwrap().drill.as_mut().unwrap().outcome = "Failed".into();
        assert_eq!(drilled(&b), Drilled::Failed);
        b.status.as_mut().unwrap().url = Some("s3://b/y".into());
        assert_eq!(drilled(&b), Drilled::Not);
    }
}
