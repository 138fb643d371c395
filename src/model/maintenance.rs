//! `spec.maintenance`, validated once into what the planner's maintenance rules read
//! (`plan::maintenance`).
//!
//! Pure: no client, no clock (a window is judged at the `now` the caller passes).

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use super::validate::{InvalidSpec, invalid};
use crate::api::{DefragRequest, MaintenanceSpec};
use crate::archive::schedule::{self, Schedule};

/// A member is fragmented at this share of free pages in its file (`fragmentedPercent`).
pub const DEFAULT_FRAGMENTED_PERCENT: u8 = 45;
/// The least a policy defragmentation must win (`minReclaimMiB`).
pub const DEFAULT_MIN_RECLAIM_MIB: i64 = 64;
/// How long a maintenance window stays open (`window.minutes`).
pub const DEFAULT_WINDOW_MINUTES: u32 = 60;

/// `spec.maintenance`, validated and defaulted.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Maintenance {
    /// `spec.maintenance.defrag.request`: defragment every member once per nonce.
    pub defrag_request: Option<DefragRequest>,
    /// `spec.maintenance.defrag.policy`: when a member is defragmented by itself.
    pub defrag_policy: Option<DefragPolicy>,
}

/// When a member is defragmented without being asked (see `api::DefragPolicy`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DefragPolicy {
    pub fragmented_percent: u8,
    pub quota_percent: Option<u8>,
    pub min_reclaim_bytes: i64,
    pub window: Option<Window>,
}

/// A window that opens at each time of `schedule` and stays open for `length`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Window {
    #[serde(serialize_with = "schedule_as_str")]
    pub schedule: Schedule,
    pub minutes: u32,
}

fn schedule_as_str<S: serde::Serializer>(s: &Schedule, out: S) -> Result<S::Ok, S::Error> {
    out.serialize_str(s.as_str())
}

impl Window {
    fn length(&self) -> SignedDuration {
        SignedDuration::from_mins(i64::from(self.minutes))
    }

    /// Whether the window is open at `now`: the schedule last fired less than its length ago.
    pub fn open_at(&self, now: Timestamp) -> bool {
        self.schedule
            .last_at_or_before(now)
            .is_some_and(|t| now.duration_since(t) < self.length())
    }

    /// When the window opens next after `now`.
    pub fn next_opening(&self, now: Timestamp) -> Option<Timestamp> {
        self.schedule.next_after(now)
    }
}

/// Checks and defaults `spec.maintenance`.
pub fn validate(spec: Option<&MaintenanceSpec>) -> Result<Maintenance, InvalidSpec> {
    let Some(defrag) = spec.and_then(|m| m.defrag.as_ref()) else {
        return Ok(Maintenance::default());
    };
    if let Some(r) = &defrag.request
        && r.nonce.trim().is_empty()
    {
        return Err(invalid(
            "spec.maintenance.defrag.request.nonce",
            "empty: a request needs a nonce (`kubectl etcd defrag NAME` writes one), or remove \
             spec.maintenance.defrag.request",
        ));
    }
    let policy = match &defrag.policy {
        None => None,
        Some(p) => {
            let percent = |field: &'static str, v: u8| {
                if (1..=100).contains(&v) {
                    Ok(v)
                } else {
                    Err(invalid(
                        field,
                        format!("{v}: give a percentage from 1 to 100"),
                    ))
                }
            };
            let fragmented_percent = percent(
                "spec.maintenance.defrag.policy.fragmentedPercent",
                p.fragmented_percent.unwrap_or(DEFAULT_FRAGMENTED_PERCENT),
            )?;
            let quota_percent = p
                .quota_percent
                .map(|q| percent("spec.maintenance.defrag.policy.quotaPercent", q))
                .transpose()?;
            let mib = p.min_reclaim_mib.unwrap_or(DEFAULT_MIN_RECLAIM_MIB);
            if !(0..=1 << 20).contains(&mib) {
                return Err(invalid(
                    "spec.maintenance.defrag.policy.minReclaimMiB",
                    format!("{mib}: give MiB from 0 to 1048576"),
                ));
            }
            let window = match &p.window {
                None => None,
                Some(w) => {
                    let schedule = schedule::parse(&w.schedule).map_err(|e| {
                        invalid("spec.maintenance.defrag.policy.window.schedule", e)
                    })?;
                    let minutes = w.minutes.unwrap_or(DEFAULT_WINDOW_MINUTES);
                    if minutes == 0 {
                        return Err(invalid(
                            "spec.maintenance.defrag.policy.window.minutes",
                            "0: a window must stay open at least a minute",
                        ));
                    }
                    Some(Window { schedule, minutes })
                }
            };
            Some(DefragPolicy {
                fragmented_percent,
                quota_percent,
                min_reclaim_bytes: mib << 20,
                window,
            })
        }
    };
    Ok(Maintenance {
        defrag_request: defrag.request.clone(),
        defrag_policy: policy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{DefragPolicy as Spec, DefragSpec, MaintenanceWindow};

    fn spec(p: Spec) -> MaintenanceSpec {
        MaintenanceSpec {
            defrag: Some(DefragSpec {
                request: None,
                policy: Some(p),
            }),
        }
    }

    #[test]
    fn a_policy_gets_its_defaults_and_no_spec_means_no_policy() {
        assert_eq!(validate(None).unwrap(), Maintenance::default());
        let m = validate(Some(&spec(Spec::default()))).unwrap();
        let p = m.defrag_policy.unwrap();
        assert_eq!(p.fragmented_percent, 45);
        assert_eq!(p.min_reclaim_bytes, 64 << 20);
        assert_eq!((p.quota_percent, p.window), (None, None));
    }

    #[test]
    fn a_bad_percentage_schedule_or_nonce_is_refused_naming_the_field() {
        let bad = |p: Spec| validate(Some(&spec(p))).unwrap_err().to_string();
        let e = bad(Spec {
            fragmented_percent: Some(0),
            ..Default::default()
        });
        assert!(e.contains("fragmentedPercent"), "{e}");
        let e = bad(Spec {
            quota_percent: Some(120),
            ..Default::default()
        });
        assert!(e.contains("quotaPercent"), "{e}");
        let e = bad(Spec {
            window: Some(MaintenanceWindow {
                schedule: "0 3 * *".into(),
                minutes: None,
            }),
            ..Default::default()
        });
        assert!(
            e.contains("window.schedule") && e.contains("5 fields"),
            "{e}"
        );
        let e = validate(Some(&MaintenanceSpec {
            defrag: Some(DefragSpec {
                request: Some(DefragRequest {
                    nonce: " ".into(),
                    compact: false,
                }),
                policy: None,
            }),
        }))
        .unwrap_err()
        .to_string();
        assert!(e.contains("request.nonce"), "{e}");
    }

    #[test]
    fn a_window_is_open_from_each_firing_for_its_minutes() {
        let w = Window {
            schedule: schedule::parse("0 3 * * *").unwrap(),
            minutes: 30,
        };
        let at = |s: &str| s.parse::<Timestamp>().unwrap();
        assert!(w.open_at(at("2026-01-02T03:00:00Z")));
        assert!(w.open_at(at("2026-01-02T03:29:59Z")));
        assert!(!w.open_at(at("2026-01-02T03:30:00Z")));
        assert!(!w.open_at(at("2026-01-02T02:59:59Z")));
        assert_eq!(
            w.next_opening(at("2026-01-02T04:00:00Z")),
            Some(at("2026-01-03T03:00:00Z"))
        );
    }
}
