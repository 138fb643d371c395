//! `spec.backup.drill`: how often the operator drills a backup of the cluster, validated.
//!
//! Pure: no client, no clock.

use serde::Serialize;

use super::{DEFAULT_TOOLS_IMAGE, InvalidSpec, invalid};

/// `spec.backup.drill`, validated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DrillPlan {
    /// Seconds from the last drill of the cluster to the next one (at least
    /// [`MIN_EVERY_SECONDS`]).
    pub every_seconds: u64,
    /// Image of the drill pod's fetch and read.
    pub tools_image: String,
}

/// A restore drill's pod of the cluster, as a pass saw it (`objects::drill`).
#[derive(Clone, Debug, PartialEq)]
pub struct DrillPod {
    pub name: String,
    /// The EtcdBackup it drills.
    pub backup: String,
    /// Started by the engine (`spec.backup.drill`), not by `kubectl etcd backup verify`.
    pub scheduled: bool,
    pub created: Option<jiff::Timestamp>,
    /// Once it ended: the restored figures, or why the backup did not restore.
    pub ended: Option<Result<super::records::drill::DrillFigures, String>>,
}

/// A restore drill's NetworkPolicy of the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrillPolicy {
    pub name: String,
    pub created: Option<jiff::Timestamp>,
}

/// The shortest `spec.backup.drill.every`: a drill reads the whole backup and restores it (a
/// gibibyte takes minutes), and a drill pod may run for `objects::drill::DEADLINE_SECONDS`
/// (15 min); drills back to back would make the drill the cluster's main load on the store.
pub const MIN_EVERY_SECONDS: u64 = 600;

/// `spec.backup.drill`: an interval of at least [`MIN_EVERY_SECONDS`], a tools image (the
/// operator's release by default).
pub fn validate(d: &crate::api::DrillSpec) -> Result<DrillPlan, InvalidSpec> {
    let min = MIN_EVERY_SECONDS / 60;
    let every = match humantime::parse_duration(d.every.trim()) {
        Ok(e) if e.as_secs() >= MIN_EVERY_SECONDS => e.as_secs(),
        Ok(_) => {
            return Err(invalid(
                "spec.backup.drill.every",
                format!(
                    "{:?} is shorter than {min}m: each drill reads and restores a whole backup; \
                     use {min}m or more, e.g. 24h",
                    d.every
                ),
            ));
        }
        Err(e) => {
            return Err(invalid(
                "spec.backup.drill.every",
                format!("{:?} is not a duration ({e}); use e.g. 24h", d.every),
            ));
        }
    };
    Ok(DrillPlan {
        every_seconds: every,
        tools_image: d
            .tools_image
            .clone()
            .filter(|i| !i.is_empty())
            .unwrap_or_else(|| DEFAULT_TOOLS_IMAGE.into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::DrillSpec;

    fn every(s: &str) -> Result<DrillPlan, InvalidSpec> {
        validate(&DrillSpec {
            every: s.into(),
            tools_image: None,
        })
    }

    #[test]
    fn a_drill_interval_is_a_duration_of_ten_minutes_or_more() {
        assert_eq!(every("24h").unwrap().every_seconds, 86_400);
        assert_eq!(every("10m").unwrap().every_seconds, 600);
        assert_eq!(every("24h").unwrap().tools_image, DEFAULT_TOOLS_IMAGE);
        let short = every("5m").unwrap_err().to_string();
        assert!(
            short.contains("spec.backup.drill.every") && short.contains("10m or more"),
            "{short}"
        );
        let bad = every("daily").unwrap_err().to_string();
        assert!(
            bad.contains("spec.backup.drill.every") && bad.contains("not a duration"),
            "{bad}"
        );
        let image = validate(&DrillSpec {
            every: "1h".into(),
            tools_image: Some("example.org/tools:1".into()),
        })
        .unwrap();
        assert_eq!(image.tools_image, "example.org/tools:1");
    }
}
