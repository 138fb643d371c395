//! The recovery's decisions, pure functions of what was observed (table-tested below): whether a
//! quorum forbids it (`refuse_while_quorum`), whether the restore pod can do its part
//! (`preflight`), whether the survivor moved during its snapshot (`survivor_moved`).

use crate::archive::store::Location;
use crate::model::{EtcdView, Observed};

/// How many voters there are, how many of them are healthy (a linearizable read answered) and
/// how many answered their status, and whether any names a leader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quorum {
    pub voters: usize,
    pub healthy: usize,
    pub answering: usize,
    pub leader: bool,
}

impl Quorum {
    pub(super) fn of(o: &Observed) -> Quorum {
        match &o.etcd {
            EtcdView::Reached(c) => Quorum {
                voters: c.voters().count(),
                healthy: c.voters().filter(|m| m.healthy).count(),
                answering: c.voters().filter(|m| m.status.is_some()).count(),
                leader: c.leader.is_some_and(|l| l != 0),
            },
            _ => Quorum::default(),
        }
    }
}

/// Pure: a recovery throws away the cluster's identity and whatever only the gone members had;
/// while a quorum answers there is nothing to recover from (the engine repairs lost members
/// itself), and clients may still be writing through it. A quorum answers when a majority of
/// voters is healthy, or answers with a leader elected (healthy or not: a NOSPACE alarm makes
/// every member unhealthy, and the cluster still has its quorum). Refused unless `force`.
pub fn refuse_while_quorum(cluster: &str, q: Quorum, force: bool) -> Result<(), String> {
    let need = crate::plan::quorum(q.voters);
    let has = q.healthy >= need || (q.leader && q.answering >= need);
    if force || q.voters == 0 || !has {
        return Ok(());
    }
    Err(format!(
        "{cluster} has a quorum ({} of {} voters answer, {} healthy{}): nothing to recover, and clients may be writing through it; the engine replaces lost members itself (`kubectl etcd status`, `kubectl etcd reconcile`); pass --force to rebuild it anyway (a new cluster id, writes after the snapshot lost)",
        q.answering,
        q.voters,
        q.healthy,
        if q.leader { ", a leader elected" } else { "" }
    ))
}

/// Pure: the survivor's raft index after its snapshot was stored must be the one it had before:
/// an index that moved means entries are being committed (a quorum is back, or the survivor
/// follows one), so the snapshot may lack acknowledged writes.
pub fn survivor_moved(member: &str, before: u64, after: u64) -> Result<(), String> {
    if after == before {
        return Ok(());
    }
    Err(format!(
        "{member} moved from raft index {before} to {after} while its snapshot was taken: entries are being committed, so a quorum may be back or forming; look again with `kubectl etcd status` and rerun recover once that settles"
    ))
}

/// How the restore pod will read the snapshot (settled before anything is deleted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodCredentials {
    /// This Secret of the cluster's namespace (it exists and holds the keys).
    Secret(String),
    /// A Secret made from this machine's `AWS_*` variables (`restore::env_credentials_secret`).
    FromEnvironment,
    /// Not S3 (a pvc:// claim the pod mounts).
    NotNeeded,
}

/// What the in-cluster restore needs, as found before anything changes.
#[derive(Clone, Debug)]
pub struct Preflight<'a> {
    /// Where the restore pod will read the snapshot.
    pub source: &'a Location,
    /// The Secret named (flag or spec), and whether it exists and holds credentials.
    pub secret: Option<(&'a str, Result<(), String>)>,
    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` are set here.
    pub env_credentials: bool,
    pub tools_image: &'a str,
    /// `spec.storage.ephemeral`: members keep their data on no volume.
    pub ephemeral: bool,
}

/// Pure: can the restore pod do its part? Refused (naming the flag or field that fixes it) when
/// it cannot: otherwise the old members would be deleted for a restore that never finishes.
pub fn preflight(cluster: &str, p: &Preflight) -> Result<PodCredentials, String> {
    if p.ephemeral {
        return Err(format!(
            "{cluster} keeps its data on ephemeral storage (spec.storage.ephemeral): the restore writes the seed's volume, which its members would not use; restore into a new cluster with volumes instead (`kubectl etcd restore NEW --from-backup B`)"
        ));
    }
    if p.tools_image.trim().is_empty() {
        return Err(
            "no tools image for the restore pod: pass --tools-image IMAGE (or set KUBECTL_ETCD_TOOLS_IMAGE)"
                .into(),
        );
    }
    match p.source {
        Location::File(_) => Err(format!(
            "{} is a file on some machine, which the restore pod cannot read: rebuild from a backup on s3:// or pvc://, or from a survivor with --to s3://bucket/prefix",
            p.source
        )),
        Location::Pvc { .. } => Ok(PodCredentials::NotNeeded),
        Location::S3(_) => match &p.secret {
            Some((name, Ok(()))) => Ok(PodCredentials::Secret(name.to_string())),
            Some((_, Err(why))) => Err(format!(
                "{why}; the restore pod needs it to read {}: fix the Secret or pass another with --credentials-secret",
                p.source
            )),
            None if p.env_credentials => Ok(PodCredentials::FromEnvironment),
            None => Err(format!(
                "the restore pod needs S3 credentials to read {}: pass --credentials-secret SECRET (keys AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY here to have one made",
                p.source
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DEFAULT_TOOLS_IMAGE;

    fn q(voters: usize, healthy: usize) -> Quorum {
        Quorum {
            voters,
            healthy,
            answering: healthy,
            leader: false,
        }
    }

    #[test]
    fn recover_refuses_while_a_healthy_quorum_answers_unless_forced() {
        // (voters, healthy, force) → may act
        let table = [
            ((3, 3, false), false),
            ((3, 2, false), false),
            ((3, 1, false), true),
            ((3, 0, false), true),
            ((5, 3, false), false),
            ((5, 2, false), true),
            ((0, 0, false), true), // nothing answers at all (a backup is the only way)
            ((3, 3, true), true),
        ];
        for ((voters, healthy, force), ok) in table {
            let got = refuse_while_quorum("ns/demo", q(voters, healthy), force);
            assert_eq!(
                got.is_ok(),
                ok,
                "{voters} voters, {healthy} healthy, force {force}: {got:?}"
            );
            if let Err(e) = got {
                assert!(e.contains("--force") && e.contains("ns/demo"), "{e}");
            }
        }
        // NOSPACE everywhere: nobody healthy, but a majority answers with a leader.
        let full = Quorum {
            voters: 3,
            healthy: 0,
            answering: 2,
            leader: true,
        };
        assert!(refuse_while_quorum("ns/demo", full, false).is_err());
        // Survivors answer, but no leader: quorum lost.
        let lost = Quorum {
            leader: false,
            ..full
        };
        assert!(refuse_while_quorum("ns/demo", lost, false).is_ok());
        let one = Quorum {
            answering: 1,
            ..full
        };
        assert!(refuse_while_quorum("ns/demo", one, false).is_ok());
    }

    #[test]
    fn a_survivor_that_moved_during_its_snapshot_stops_the_recovery() {
        assert!(survivor_moved("demo-1", 120, 120).is_ok());
        let e = survivor_moved("demo-1", 120, 125).unwrap_err();
        assert!(
            e.contains("demo-1") && e.contains("120") && e.contains("125"),
            "{e}"
        );
    }

    fn s3() -> Location {
        Location::parse("s3://backups/etcd").unwrap()
    }

    fn pre<'a>(source: &'a Location) -> Preflight<'a> {
        Preflight {
            source,
            secret: None,
            env_credentials: false,
            tools_image: DEFAULT_TOOLS_IMAGE,
            ephemeral: false,
        }
    }

    #[test]
    fn the_restore_pod_gets_the_named_secret_or_one_from_this_machine_or_the_recovery_is_refused() {
        let loc = s3();
        let named = Preflight {
            secret: Some(("s3-creds", Ok(()))),
            env_credentials: true,
            ..pre(&loc)
        };
        assert_eq!(
            preflight("ns/demo", &named),
            Ok(PodCredentials::Secret("s3-creds".into()))
        );
        let missing = Preflight {
            secret: Some((
                "s3-creds",
                Err("Secret ns/s3-creds does not exist".to_string()),
            )),
            env_credentials: true,
            ..pre(&loc)
        };
        let e = preflight("ns/demo", &missing).unwrap_err();
        assert!(
            e.contains("does not exist") && e.contains("--credentials-secret"),
            "{e}"
        );
        let env = Preflight {
            env_credentials: true,
            ..pre(&loc)
        };
        assert_eq!(
            preflight("ns/demo", &env),
            Ok(PodCredentials::FromEnvironment)
        );
        let e = preflight("ns/demo", &pre(&loc)).unwrap_err();
        assert!(e.contains("--credentials-secret"), "{e}");
    }

    #[test]
    fn a_file_backup_an_empty_tools_image_or_ephemeral_storage_is_refused_before_anything_is_deleted()
     {
        let file = Location::parse("file:///var/backups").unwrap();
        let e = preflight("ns/demo", &pre(&file)).unwrap_err();
        assert!(e.contains("cannot read"), "{e}");
        let loc = s3();
        let no_image = Preflight {
            tools_image: " ",
            env_credentials: true,
            ..pre(&loc)
        };
        assert!(
            preflight("ns/demo", &no_image)
                .unwrap_err()
                .contains("--tools-image")
        );
        let ephemeral = Preflight {
            ephemeral: true,
            env_credentials: true,
            ..pre(&loc)
        };
        assert!(
            preflight("ns/demo", &ephemeral)
                .unwrap_err()
                .contains("spec.storage.ephemeral")
        );
        let pvc = Location::parse("pvc://backups/etcd").unwrap();
        assert_eq!(
            preflight("ns/demo", &pre(&pvc)),
            Ok(PodCredentials::NotNeeded)
        );
    }
}
