//! The per-cluster backup series: the newest successful backup (when, how big), the schedule's
//! interval, whether the newest backup failed and how many failed.

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use super::{ClusterLabels, Metrics, family};
use crate::api::BackupStatus;

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

/// The families of this file.
pub(super) struct Backups {
    last: Family<ClusterLabels, Gauge>,
    last_size: Family<ClusterLabels, Gauge>,
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
        self.failures.remove(cluster);
    }
}

impl Metrics {
    /// Records the backups of `cluster` from its `status.backup` (scheduled and `kubectl etcd
    /// backup` alike) and the interval of its schedule (`None`: no schedule). A cluster never
    /// backed up has no timestamp series: an alert on `time() - …` then concerns only clusters
    /// that have backups.
    pub fn backup(
        &self,
        cluster: &ClusterLabels,
        status: Option<&BackupStatus>,
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
