//! `spec.recovery` (what `kubectl etcd recover` decided), validated once into what the planner's
//! recovery rules read (`plan::recover`).
//!
//! Pure: no client, no clock.

use serde::Serialize;

use super::validate::{InvalidSpec, invalid};
use super::{BackupPlan, DEFAULT_TOOLS_IMAGE};
use crate::api::RecoverySpec;
use crate::archive::Destination;
use crate::archive::store::Location;
use crate::keys;

/// `spec.recovery`, validated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recovery {
    /// This recovery's nonce: the marks on its snapshot record and the restored cluster's
    /// initial-cluster token carry it.
    pub nonce: String,
    pub from: RecoverFrom,
    /// Secret the restore pod reads the snapshot with (`None`: a pvc:// snapshot, mounted).
    pub restore_credentials_secret: Option<String>,
    pub tools_image: String,
    /// Rebuild even though a quorum answers.
    pub force: bool,
}

/// What a recovery rebuilds the cluster from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum RecoverFrom {
    /// The surviving member at `ordinal` (named `member`): its snapshot goes to `to` first.
    Member {
        ordinal: u32,
        member: String,
        // Boxed: a destination is many times the size of the other variant.
        #[serde(skip)]
        to: Box<Destination>,
    },
    /// This EtcdBackup record of the cluster.
    Backup { record: String },
}

/// Checks `spec.recovery` of cluster `name`; the survivor's snapshot is stored with the backup
/// plan's compression and SSE (`backup`), under the recovery's own credentials.
pub fn validate(
    spec: Option<&RecoverySpec>,
    name: &str,
    backup: Option<&BackupPlan>,
) -> Result<Option<Recovery>, InvalidSpec> {
    let Some(r) = spec else { return Ok(None) };
    if r.nonce.trim().is_empty() {
        return Err(invalid(
            "spec.recovery.nonce",
            "empty: a recovery needs a nonce (`kubectl etcd recover NAME --yes` writes one), or \
             remove spec.recovery",
        ));
    }
    let from = match (&r.from_member, &r.from_backup) {
        (Some(m), None) => survivor(r, name, m, backup)?,
        (None, Some(b)) if !b.trim().is_empty() => RecoverFrom::Backup { record: b.clone() },
        _ => {
            return Err(invalid(
                "spec.recovery",
                "names exactly one of fromMember (a surviving member) and fromBackup (an \
                 EtcdBackup)",
            ));
        }
    };
    Ok(Some(Recovery {
        nonce: r.nonce.clone(),
        from,
        restore_credentials_secret: r.restore_credentials_secret.clone(),
        tools_image: r
            .tools_image
            .clone()
            .filter(|i| !i.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_TOOLS_IMAGE.into()),
        force: r.force,
    }))
}

fn survivor(
    r: &RecoverySpec,
    name: &str,
    member: &str,
    backup: Option<&BackupPlan>,
) -> Result<RecoverFrom, InvalidSpec> {
    let ordinal = keys::ordinal_of_pod(name, member).ok_or_else(|| {
        invalid(
            "spec.recovery.fromMember",
            format!("{member:?} is not a member of {name} (e.g. {name}-0)"),
        )
    })?;
    let to = r.to.as_deref().ok_or_else(|| {
        invalid(
            "spec.recovery.to",
            "required with fromMember: where the survivor's snapshot is stored (s3://bucket/prefix)",
        )
    })?;
    let location = Location::parse(to).map_err(|e| invalid("spec.recovery.to", e.to_string()))?;
    if !matches!(location, Location::S3(_)) {
        return Err(invalid(
            "spec.recovery.to",
            format!(
                "{to}: the survivor's snapshot must go where the restore pod can read it back; use \
                 s3://bucket/prefix"
            ),
        ));
    }
    let base = backup.map_or_else(|| Destination::at(location.clone()), |p| p.to.clone());
    Ok(RecoverFrom::Member {
        ordinal,
        member: member.to_string(),
        to: Box::new(Destination {
            location,
            credentials_secret: r.credentials_secret.clone(),
            ..base
        }),
    })
}

/// A fresh nonce of a recovery or a restore request (`kubectl etcd recover`, `restore`,
/// `defrag`): the time, to the nanosecond (two recoveries of one cluster, or two requests, are
/// never that close).
pub fn restore_nonce(now: jiff::Timestamp) -> String {
    format!("{:x}", now.as_nanosecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RecoverySpec {
        RecoverySpec {
            nonce: "n1".into(),
            from_member: Some("demo-1".into()),
            to: Some("s3://b/p".into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_recovery_names_one_source_a_member_of_the_cluster_and_an_s3_destination() {
        let r = validate(Some(&spec()), "demo", None).unwrap().unwrap();
        assert!(matches!(r.from, RecoverFrom::Member { ordinal: 1, .. }));
        assert_eq!(r.tools_image, DEFAULT_TOOLS_IMAGE);
        let bad = |s: RecoverySpec| validate(Some(&s), "demo", None).unwrap_err().field;
        assert_eq!(
            bad(RecoverySpec {
                nonce: " ".into(),
                ..spec()
            }),
            "spec.recovery.nonce"
        );
        assert_eq!(
            bad(RecoverySpec {
                from_backup: Some("b".into()),
                ..spec()
            }),
            "spec.recovery"
        );
        assert_eq!(
            bad(RecoverySpec {
                from_member: Some("other-1".into()),
                ..spec()
            }),
            "spec.recovery.fromMember"
        );
        assert_eq!(
            bad(RecoverySpec {
                to: Some("file:///tmp".into()),
                ..spec()
            }),
            "spec.recovery.to"
        );
        let from_backup = RecoverySpec {
            from_member: None,
            from_backup: Some("demo-20261201".into()),
            to: None,
            ..spec()
        };
        let r = validate(Some(&from_backup), "demo", None).unwrap().unwrap();
        assert_eq!(
            r.from,
            RecoverFrom::Backup {
                record: "demo-20261201".into()
            }
        );
    }
}
