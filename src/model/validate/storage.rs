//! `spec.storage` and the typed tuning of `spec.etcd`: sizes, quota, auto-compaction.

use super::{InvalidSpec, invalid};
use crate::api::CompactionMode;
use crate::model::desired::{DEFAULT_STORAGE_SIZE, Storage};

/// "1Gi" → 1073741824 (the suffixes `validate_quantity` accepts), so "1024Mi" equals "1Gi" as
/// the API server canonicalises it.
pub fn quantity_bytes(q: &str) -> Option<f64> {
    let end = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (num, unit) = q.split_at(end);
    let k: f64 = match unit {
        "" => 1.0,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        _ => return None,
    };
    Some(num.parse::<f64>().ok()? * k)
}

pub(super) fn validate_quantity(field: &'static str, q: &str) -> Result<(), InvalidSpec> {
    let digits_end = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (num, unit) = q.split_at(digits_end);
    let ok_num = !num.is_empty() && num.parse::<f64>().map(|n| n > 0.0).unwrap_or(false);
    let ok_unit = matches!(
        unit,
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "k" | "M" | "G" | "T" | "P"
    );
    if !ok_num || !ok_unit {
        return Err(invalid(
            field,
            format!("{q:?} is not a positive size; use e.g. 1Gi or 500Mi"),
        ));
    }
    Ok(())
}

/// `spec.storage`: an emptyDir, or a volume of a valid size (the default when unset).
pub(super) fn validate_storage(s: &crate::api::StorageSpec) -> Result<Storage, InvalidSpec> {
    if s.ephemeral {
        return Ok(Storage::Ephemeral);
    }
    let size = s
        .size
        .clone()
        .unwrap_or_else(|| DEFAULT_STORAGE_SIZE.to_string());
    validate_quantity("spec.storage.size", &size)?;
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
