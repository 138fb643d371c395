//! Hibernation (`spec.hibernate`): a verified snapshot, then no member pod; waking starts the
//! same members on their volumes.
//!
//! Pure: no async, no clock, no client.
//!
//! ```text
//!  spec.hibernate: true
//!     no snapshot recorded for this generation: HibernateSnapshot (to spec.backup.destination;
//!         without one: Hold, naming `kubectl etcd hibernate … --to URL | --no-snapshot --yes`)
//!     ─▶ Hibernate (StatefulSet to 0; volumes, member config and membership kept)
//!     ─▶ Wait while pods stop ─▶ Hibernated (nothing runs, nothing is replaced or recovered)
//!  spec.hibernate: false: the StatefulSet at 0 on the volumes of a formed cluster is what a
//!     StatefulSet scaled down by hand looks like, and is repaired the same way
//!     (`etcd_unanswered`: ResizeStatefulSet back to the members' volumes): the members start on
//!     their data, each as itself (same cluster id)
//! ```
//!
//! The hibernation rule comes before every rule that could mistake stopped members for lost
//! ones (no replacement, no quorum-lost hold, no recovery).

use super::*;
use crate::model::Storage;

/// `spec.hibernate`: snapshot, stop, then stay stopped.
pub(super) fn hibernation(d: &Desired, o: &Observed) -> Option<Step> {
    if !d.hibernate {
        return None;
    }
    if d.storage == Storage::Ephemeral && o.statefulset.as_ref().is_some_and(|s| s.replicas > 0) {
        return Some(hold(
            Reason::Hibernating,
            "the members keep their data in emptyDir volumes (spec.storage.ephemeral), which \
             stopping them would delete: set spec.hibernate back to false, or take a backup and \
             delete the cluster",
        ));
    }
    // No StatefulSet: nothing runs (waking brings the members back on their volumes).
    let Some(sts) = o.statefulset.as_ref() else {
        return Some(Step::Hibernated);
    };
    if sts.replicas > 0 {
        if d.hibernate_snapshot.is_some() {
            return Some(Step::Hibernate { from: sts.replicas });
        }
        return Some(match &d.backup_destination {
            Some(destination) if reached(o).is_some() => Step::HibernateSnapshot {
                destination: destination.clone(),
            },
            Some(_) => wait(
                Reason::Hibernating,
                format!(
                    "the snapshot taken before hibernating waits for the members to answer{}",
                    pod_trouble(o)
                ),
            ),
            None => hold(
                Reason::Hibernating,
                format!(
                    "spec.hibernate needs a verified snapshot first, and the cluster has no \
                     backup destination: set spec.backup.destination, or run `kubectl etcd -n \
                     {} hibernate {} --to URL` (or `--no-snapshot --yes` to stop without one)",
                    d.namespace, d.name
                ),
            ),
        });
    }
    if let Some(p) = o.pods.values().next() {
        return Some(wait(
            Reason::Hibernating,
            format!("member pod {} is stopping", p.name),
        ));
    }
    Some(Step::Hibernated)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{desired, healthy};
    use super::*;
    use crate::api::Phase;

    fn asleep(snapshot: Option<&str>, destination: Option<&str>) -> Desired {
        let mut d = desired(3);
        d.hibernate = true;
        d.hibernate_snapshot = snapshot.map(str::to_owned);
        d.backup_destination = destination.map(str::to_owned);
        d
    }

    /// Every member pod stopped: the StatefulSet at 0, nothing answers, the volumes stay.
    fn stopped(d: &Desired) -> Observed {
        let mut o = healthy(d, 3);
        o.statefulset.as_mut().unwrap().replicas = 0;
        o.pods.clear();
        o.etcd = EtcdView::NotQueried;
        o
    }

    #[test]
    fn no_member_stops_before_a_snapshot_is_recorded_for_this_hibernation() {
        let d = asleep(None, Some("s3://b/etcd"));
        assert_eq!(
            plan(&d, &healthy(&d, 3)),
            Step::HibernateSnapshot {
                destination: "s3://b/etcd".into()
            }
        );
        let d = asleep(None, None);
        let step = plan(&d, &healthy(&d, 3));
        assert!(
            matches!(&step, Step::Hold { message, .. } if message.contains("--no-snapshot --yes") && message.contains("spec.backup.destination")),
            "{step:?}"
        );
        let d = asleep(Some("skipped"), None);
        assert_eq!(plan(&d, &healthy(&d, 3)), Step::Hibernate { from: 3 });
    }

    #[test]
    fn hibernated_members_are_never_taken_for_lost() {
        let d = asleep(Some("s3://b/etcd/x.db"), None);
        let mut o = stopped(&d);
        // However long they have been gone.
        o.lost_since = (0..3).map(|k| (k, jiff::Timestamp::UNIX_EPOCH)).collect();
        o.now = jiff::Timestamp::from_second(1_000_000).unwrap();
        assert_eq!(plan(&d, &o), Step::Hibernated);
        let mut o = healthy(&d, 3);
        o.statefulset.as_mut().unwrap().replicas = 0;
        o.etcd = EtcdView::NotQueried;
        assert!(matches!(
            plan(&d, &o),
            Step::Wait {
                reason: Reason::Hibernating,
                ..
            }
        ));
    }

    #[test]
    fn waking_brings_the_members_back_on_their_volumes() {
        let d = desired(3);
        assert_eq!(
            plan(&d, &stopped(&d)),
            Step::ResizeStatefulSet { from: 0, to: 3 }
        );
    }

    #[test]
    fn ephemeral_members_are_not_stopped() {
        let mut d = asleep(Some("skipped"), None);
        d.storage = Storage::Ephemeral;
        assert!(matches!(plan(&d, &healthy(&d, 3)), Step::Hold { .. }));
    }

    #[test]
    fn a_hibernated_cluster_shows_it_and_counts_as_arrived() {
        let d = asleep(Some("skipped"), None);
        let o = stopped(&d);
        let now = jiff::Timestamp::from_second(1_000).unwrap();
        let st = derive_status(&d, &o, &Step::Hibernated, None, now);
        assert_eq!(st.phase, Some(Phase::Hibernated));
        let ready = st
            .conditions
            .iter()
            .find(|c| c.type_ == crate::api::condition::READY)
            .unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "Hibernated")
        );
        assert!(
            st.conditions
                .iter()
                .all(|c| c.type_ != crate::api::condition::DEGRADED || c.status == "False")
        );
        assert!(converged(&st, Some(d.generation)));
    }

    /// Issue 43 R10: woken with every volume gone (deleted while asleep), no member can come
    /// back: the cluster holds and offers the hibernation snapshot's record, never waits.
    #[test]
    fn waking_with_every_volume_gone_offers_the_hibernation_snapshot() {
        let d = desired(3);
        let mut o = stopped(&d);
        o.volumes.clear();
        let mut snapshot =
            crate::api::EtcdBackup::new("demo-hibernate-1", crate::api::EtcdBackupSpec::default());
        snapshot.status = Some(crate::api::EtcdBackupStatus {
            phase: Some(crate::api::backup_phase::SUCCEEDED.into()),
            quorum: Some(true),
            verified: true,
            url: Some("s3://b/etcd/demo-hibernate.db.zst".into()),
            ..Default::default()
        });
        o.backups.records = vec![snapshot];
        let step = plan(&d, &o);
        assert!(
            matches!(&step, Step::Hold { reason: Reason::QuorumLost, message }
                if message.contains("recover demo --from-backup demo-hibernate-1")
                    && message.contains("no member volume is left")),
            "{step:?}"
        );
        // Volumes still there: woken on them, as before.
        assert_eq!(
            plan(&d, &stopped(&d)),
            Step::ResizeStatefulSet { from: 0, to: 3 }
        );
    }
}
