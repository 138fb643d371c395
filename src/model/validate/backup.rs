//! `spec.backup` and `spec.restore`: where backups go and where a restore reads from.

use super::{InvalidSpec, invalid};
use crate::model::desired::{BackupPlan, DEFAULT_TOOLS_IMAGE, RestoreSource};

/// `spec.backup`: a destination the operator can write, a schedule that parses, a known
/// compression, a drill interval (`model::drill`).
pub(super) fn validate_backup(b: &crate::api::BackupSpec) -> Result<BackupPlan, InvalidSpec> {
    use crate::archive::store::{Location, Sse};
    let location = Location::parse(&b.destination)
        .map_err(|e| invalid("spec.backup.destination", e.to_string()))?;
    match location {
        Location::S3(_) => {}
        Location::File(_) => {
            return Err(invalid(
                "spec.backup.destination",
                format!(
                    "{:?} is a file on some machine, which the operator cannot write; use s3://bucket/prefix (file:// works with `kubectl etcd backup --to`)",
                    b.destination
                ),
            ));
        }
        Location::Pvc { .. } => {
            return Err(invalid(
                "spec.backup.destination",
                format!(
                    "{:?}: schedules cannot write to pvc:// yet (the operator does not exec into pods, which pvc:// backups need); use s3://bucket/prefix here, and take pvc:// backups with `kubectl etcd backup NAME --to pvc://claim/dir`",
                    b.destination
                ),
            ));
        }
    }
    let schedule = b
        .schedule
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(crate::archive::schedule::parse)
        .transpose()
        .map_err(|e| invalid("spec.backup.schedule", e))?;
    let compression = b
        .compression
        .as_deref()
        .map(str::parse::<crate::archive::codec::Compression>)
        .transpose()
        .map_err(|e| invalid("spec.backup.compression", e))?
        .unwrap_or_default();
    let sse = b
        .server_side_encryption
        .as_ref()
        .map(|s| Sse::parse(&s.algorithm, s.kms_key_id.as_deref()))
        .transpose()
        .map_err(|e| invalid("spec.backup.serverSideEncryption", e))?;
    Ok(BackupPlan {
        to: crate::archive::Destination {
            location,
            compression,
            credentials_secret: b.credentials_secret.clone().filter(|s| !s.is_empty()),
            sse,
            encryption: encryption(b.encryption.as_ref(), "spec.backup.encryption.keySecretRef")?,
        },
        schedule,
        suspend: b.suspend,
        run_on_create: b.run_on_create,
        retention: b.retention.clone(),
        drill: b
            .drill
            .as_ref()
            .map(super::super::drill::validate)
            .transpose()?,
    })
}

/// A Secret reference of `spec.backup.encryption` or `spec.restore.encryption`.
fn encryption(
    e: Option<&crate::api::BackupEncryption>,
    field: &'static str,
) -> Result<Option<crate::archive::crypt::KeySecret>, InvalidSpec> {
    let Some(e) = e else { return Ok(None) };
    let k = e.key_secret();
    crate::archive::crypt::KeySecret::parse(&k.to_string())
        .map(Some)
        .map_err(|why| invalid(field, why))
}

pub(super) fn validate_restore(r: &crate::api::RestoreSpec) -> Result<RestoreSource, InvalidSpec> {
    use crate::archive::store::Location;
    let loc =
        Location::parse(&r.source).map_err(|e| invalid("spec.restore.source", e.to_string()))?;
    if matches!(loc, Location::File(_)) {
        return Err(invalid(
            "spec.restore.source",
            format!(
                "{:?} is a file on some machine, which the cluster cannot read; `kubectl etcd restore --from file://…` copies it into a claim first, or upload it to s3://",
                r.source
            ),
        ));
    }
    if let Some(sum) = &r.sha256
        && (sum.len() != 64 || !sum.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(invalid(
            "spec.restore.sha256",
            format!(
                "{sum:?} is not a sha256; use the 64 hex digits `kubectl etcd backup list` shows"
            ),
        ));
    }
    Ok(RestoreSource {
        url: r.source.clone(),
        sha256: r.sha256.as_ref().map(|s| s.to_ascii_lowercase()),
        credentials_secret: r.credentials_secret.clone().filter(|s| !s.is_empty()),
        tools_image: r
            .tools_image
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| DEFAULT_TOOLS_IMAGE.into()),
        nonce: r.nonce.clone().filter(|s| !s.is_empty()),
        encryption: encryption(
            r.encryption.as_ref(),
            "spec.restore.encryption.keySecretRef",
        )?,
    })
}
