//! `spec.storage` and the typed tuning of `spec.etcd`: sizes, quota, auto-compaction.

use super::{InvalidSpec, invalid};
use crate::api::CompactionMode;
use crate::model::desired::{DEFAULT_STORAGE_SIZE, Storage};
use crate::model::quantity::Quantity;

/// `spec.storage`: an emptyDir, or a volume of a valid size (the default when unset).
pub(super) fn validate_storage(s: &crate::api::StorageSpec) -> Result<Storage, InvalidSpec> {
    if s.ephemeral {
        return Ok(Storage::Ephemeral);
    }
    let size = s.size.as_deref().unwrap_or(DEFAULT_STORAGE_SIZE);
    let size = Quantity::parse(size).map_err(|e| invalid("spec.storage.size", e))?;
    if size.bytes() == 0 {
        return Err(invalid(
            "spec.storage.size",
            format!(
                "\"{size}\" is no room for a member's data; give a positive size, e.g. 1Gi or 500Mi"
            ),
        ));
    }
    Ok(Storage::Volume {
        size,
        class: s.storage_class_name.clone().filter(|c| !c.is_empty()),
    })
}

/// The typed tuning fields of `spec.etcd` (quota, auto-compaction) as etcd flags.
pub(super) fn validate_tuning(t: &crate::api::EtcdTuning) -> Result<Vec<String>, InvalidSpec> {
    let mut etcd_flags = Vec::new();
    if let Some(q) = t.quota_backend_bytes {
        if q < 0 {
            return Err(invalid(
                "spec.etcd.quotaBackendBytes",
                "must not be negative; 0 means etcd's default",
            ));
        }
        etcd_flags.push(format!("--quota-backend-bytes={q}"));
    }
    etcd_flags.extend(validate_auto_compaction(
        t.auto_compaction_mode.as_deref(),
        t.auto_compaction_retention.as_deref(),
    )?);
    Ok(etcd_flags)
}

/// `spec.etcd.autoCompactionMode` and `autoCompactionRetention` as etcd flags: a retention that
/// fits the mode (periodic when unset), and none of the two without the retention.
fn validate_auto_compaction(
    mode: Option<&str>,
    retention: Option<&str>,
) -> Result<Vec<String>, InvalidSpec> {
    let mode = match mode {
        None => None,
        Some(m) => Some(CompactionMode::parse(m).ok_or_else(|| {
            invalid(
                "spec.etcd.autoCompactionMode",
                format!("{m:?} is not a mode; use \"periodic\" or \"revision\""),
            )
        })?),
    };
    match (mode, retention) {
        (None, None) => Ok(Vec::new()),
        (mode, Some(ret)) => {
            let mode = mode.unwrap_or(CompactionMode::Periodic);
            let valid = match mode {
                CompactionMode::Revision => ret.parse::<u64>().is_ok(),
                CompactionMode::Periodic => {
                    ret.parse::<u64>().is_ok()
                        || (ret.len() > 1
                            && ret.ends_with(['h', 'm', 's'])
                            && ret[..ret.len() - 1].parse::<u64>().is_ok())
                }
            };
            if !valid {
                return Err(invalid(
                    "spec.etcd.autoCompactionRetention",
                    format!(
                        "{ret:?} does not fit mode {mode:?}; use e.g. \"1h\" (periodic) or \"1000\" (revision)"
                    ),
                ));
            }
            let m = if mode == CompactionMode::Periodic {
                "periodic"
            } else {
                "revision"
            };
            Ok(vec![
                format!("--auto-compaction-mode={m}"),
                format!("--auto-compaction-retention={ret}"),
            ])
        }
        (Some(_), None) => Err(invalid(
            "spec.etcd.autoCompactionRetention",
            "is required when autoCompactionMode is set",
        )),
    }
}
