//! The per-cluster backup series: the newest successful backup (when, how big, how long it
//! took), the schedule's interval, whether the newest backup failed and how many failed. All read
//! from what a pass saw: `status.backup` (derived from the EtcdBackup records) and the records.

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use super::{ClusterLabels, Metrics, family};
use crate::api::{BackupStatus, EtcdBackup};
use crate::engine::Pass;

/// The interval of a backup schedule around `now` (two consecutive runs), also while it is
/// suspended: `BackupOverdue` compares the newest backup's age with twice this.
pub fn schedule_interval(
    sched: Option<&crate::archive::schedule::Schedule>,
    now: jiff::Timestamp,
) -> Option<Duration> {
    let sched = sched?;
    let a = sched.next_after(now)?;
    let b = sched.next_after(a)?;
    u64::try_from(b.as_second() - a.as_second())
        .ok()
        .map(Duration::from_secs)
}

/// How long the newest successful backup took, in seconds: from its record (the EtcdBackup that
/// `status.backup.lastSuccessful` names), its `durationSeconds` (completion − start, measured to
/// the millisecond by whoever took it), else `completionTime − startTime`. `None` when the record
/// is gone (pruned) or carries neither.
pub(super) fn last_duration(status: Option<&BackupStatus>, records: &[EtcdBackup]) -> Option<f64> {
    let name = status?.last_successful.as_deref()?;
    let st = records
        .iter()
        .find(|b| b.metadata.name.as_deref() == Some(name))?
        .status
        .as_ref()?;
    let from_times = || {
        let (start, end) = (st.start_time.as_ref()?.0, st.completion_time.as_ref()?.0);
        let ms = end.as_millisecond() - start.as_millisecond();
        (ms >= 0).then(|| ms as f64 / 1000.0)
    };
    st.duration_seconds
        .filter(|d| *d >= 0.0)
        .or_else(from_times)
}

/// The families of this file.
pub(super) struct Backups {
    last: Family<ClusterLabels, Gauge>,
    last_size: Family<ClusterLabels, Gauge>,
    last_duration: Family<ClusterLabels, Gauge<f64, AtomicU64>>,
    interval: Family<ClusterLabels, Gauge>,
    failing: Family<ClusterLabels, Gauge>,
    failures: Family<ClusterLabels, Counter>,
}

impl Backups {
    pub(super) fn register(r: &mut Registry) -> Backups {
        Backups {
            last: family(
                r,
                "last_successful_backup_timestamp",
                "When the newest successful backup of the cluster finished (status.backup), as Unix time; no series before the first",
                Some(Unit::Seconds),
            ),
            last_size: family(
                r,
                "last_successful_backup_size_bytes",
                "Stored bytes of the newest successful backup",
                None,
            ),
            last_duration: family(
                r,
                "last_successful_backup_duration",
                "How long the newest successful backup took (its record's durationSeconds: completion - start)",
                Some(Unit::Seconds),
            ),
            interval: family(
                r,
                "backup_interval",
                "The interval of the cluster's backup schedule (also while suspended); no series without a schedule",
                Some(Unit::Seconds),
            ),
            failing: family(
                r,
                "backup_failing",
                "1 when the newest backup of the cluster failed (newer than the newest success)",
                None,
            ),
            failures: family(
                r,
                "backup_failures",
                "Failed backups of the cluster seen by this operator",
                None,
            ),
        }
    }

    /// Drops the label sets of a deleted cluster.
    pub(super) fn forget(&self, cluster: &ClusterLabels) {
        for f in [&self.last, &self.last_size, &self.interval, &self.failing] {
            f.remove(cluster);
        }
        self.last_duration.remove(cluster);
        self.failures.remove(cluster);
    }
}

impl Metrics {
    /// Records the backups of the cluster a pass saw: its `status.backup`, the newest successful
    /// record's duration, the interval of its schedule around the pass's `now`.
    pub(super) fn backups_of(&self, cluster: &ClusterLabels, pass: &Pass) {
        let status = pass.status.backup.as_ref();
        let schedule = pass
            .desired
            .backup
            .as_ref()
            .and_then(|b| b.schedule.as_ref());
        self.backup(
            cluster,
            status,
            last_duration(status, &pass.observed.backups.records),
            schedule_interval(schedule, pass.observed.now),
        );
    }

    /// Records the backups of `cluster` from its `status.backup` (scheduled and `kubectl etcd
    /// backup` alike), the newest success's duration and the interval of its schedule (`None`:
    /// no schedule). A cluster never backed up has no timestamp series: an alert on `time() - …`
    /// then concerns only clusters that have backups.
    pub(super) fn backup(
        &self,
        cluster: &ClusterLabels,
        status: Option<&BackupStatus>,
        duration: Option<f64>,
        interval: Option<Duration>,
    ) {
        let g = &self.backups;
        let ok = status.and_then(|s| s.last_successful_time.as_ref());
        match ok {
            Some(t) => {
                g.last.get_or_create(cluster).set(t.0.as_second());
            }
            None => drop(g.last.remove(cluster)),
        }
        match status.and_then(|s| s.last_successful_size) {
            Some(b) => {
                g.last_size.get_or_create(cluster).set(b);
            }
            None => drop(g.last_size.remove(cluster)),
        }
        match duration {
            Some(secs) => {
                g.last_duration.get_or_create(cluster).set(secs);
            }
            None => drop(g.last_duration.remove(cluster)),
        }
        match interval {
            Some(i) => {
                let secs = i64::try_from(i.as_secs()).unwrap_or(i64::MAX);
                g.interval.get_or_create(cluster).set(secs);
            }
            None => drop(g.interval.remove(cluster)),
        }
        let failed = status.and_then(|s| s.last_failed_time.as_ref());
        let failing = failed.is_some_and(|f| ok.is_none_or(|o| f.0 > o.0));
        g.failing.get_or_create(cluster).set(i64::from(failing));
        let name = status.and_then(|s| s.last_failed.clone());
        let new_failure = self.seen(cluster, |s| {
            let new = s
                .last_failed
                .as_ref()
                .is_some_and(|before| name.is_some() && *before != name);
            s.last_failed = Some(name);
            new
        });
        let failures = g.failures.get_or_create(cluster);
        if new_failure {
            failures.inc();
        }
    }
}
