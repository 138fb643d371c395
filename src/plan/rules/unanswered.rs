//! etcd that does not answer as one cluster: a split, members starting, every member's data
//! lost.

use super::*;

/// etcd did not answer as one cluster: hold on a split, wait while members start, bring back
/// members whose volumes lie beyond a StatefulSet scaled down by hand.
pub(in crate::plan) fn etcd_unanswered(d: &Desired, o: &Observed) -> Option<Step> {
    let s = slots(o)?;
    match &o.etcd {
        EtcdView::Reached(_) => None,
        EtcdView::Split { cluster_ids } => {
            let ids: Vec<String> = cluster_ids.iter().map(|i| fmt_id(*i)).collect();
            Some(hold(
                Reason::ClusterIdMismatch,
                format!(
                    "members answer with different cluster ids ({}); fix by hand, the engine will not act",
                    ids.join(", ")
                ),
            ))
        }
        EtcdView::NotQueried | EtcdView::Unreachable { .. } if !bootstrapped(o) => Some(wait(
            Reason::Bootstrapping,
            format!("members are starting{}", pod_trouble(o)),
        )),
        EtcdView::NotQueried | EtcdView::Unreachable { .. }
            if o.volumes.keys().max().is_some_and(|m| m + 1 > s) =>
        {
            // Nobody answers and members' volumes lie beyond the StatefulSet (someone scaled it
            // down by hand): bring those members back on their data.
            let to = o.volumes.keys().max().map_or(s, |m| m + 1);
            Some(Step::ResizeStatefulSet { from: s, to })
        }
        EtcdView::NotQueried if every_member_lost_its_data(o, s) => {
            Some(hold(Reason::QuorumLost, all_data_lost(d, o)))
        }
        // Woken (or scaled to 0 by hand) with every member's volume gone: no member can come
        // back on its data, so the backups (the hibernation snapshot the newest) are the way on.
        EtcdView::NotQueried
            if s == 0
                && o.volumes.is_empty()
                && o.pods.is_empty()
                && d.storage != crate::model::Storage::Ephemeral =>
        {
            Some(hold(Reason::QuorumLost, all_data_lost(d, o)))
        }
        EtcdView::NotQueried => Some(wait(
            Reason::EtcdUnreachable,
            format!("no member pod is running{}", pod_trouble(o)),
        )),
        EtcdView::Unreachable { errors } => Some(wait(
            Reason::EtcdUnreachable,
            format!(
                "no member answered: {}",
                errors.first().map_or("", |e| e.as_str())
            ),
        )),
    }
}

/// Every member of a formed cluster has its pod, and etcd refused to start each one for lack
/// of any data (their volumes were emptied, or the pods of an ephemeral cluster all restarted):
/// no member can ever answer again, so waiting for one is pointless.
fn every_member_lost_its_data(o: &Observed, slots: u32) -> bool {
    slots > 0
        && (0..slots).all(|k| {
            o.pods
                .get(&k)
                .is_some_and(|p| !p.running && !p.terminating && p.proven_empty())
        })
}

/// What is left to do once every member lost its data: a backup, or an empty start. A recovery
/// from a backup restores onto the seed's volume, so an ephemeral cluster's backup goes into a
/// new cluster instead.
fn all_data_lost(d: &Desired, o: &Observed) -> String {
    let (ns, name) = (&d.namespace, &d.name);
    let trouble = pod_trouble(o);
    let who = trouble
        .strip_prefix(" (")
        .and_then(|t| t.strip_suffix(')'))
        .filter(|t| !t.is_empty())
        .unwrap_or("no member pod and no member volume is left");
    let backup = newest_good_backup(o);
    let list = match backup {
        Some(_) => String::new(),
        None => format!(" (`kubectl etcd -n {ns} backup list {name}`)"),
    };
    let backup = backup.unwrap_or("BACKUP");
    let (why, restore) = if d.storage == crate::model::Storage::Ephemeral {
        (
            " (its storage is ephemeral: a member's data goes with its pod)",
            format!(
                "restore a backup into a new cluster with volumes: `kubectl etcd -n {ns} restore NEW \
                 --from-backup {backup}`{list}"
            ),
        )
    } else {
        (
            "",
            format!(
                "restore a backup: `kubectl etcd -n {ns} recover {name} --from-backup {backup} \
                 --yes`{list}"
            ),
        )
    };
    format!(
        "every member lost its data ({who}): nothing survives to rebuild from{why}. To go on, \
         {restore}; or start the cluster again empty: `kubectl etcd -n {ns} delete {name} --yes`, \
         then create it again"
    )
}

/// The newest good backup record of the cluster (succeeded, with quorum), if the pass read them.
fn newest_good_backup(o: &Observed) -> Option<&str> {
    o.backups
        .records
        .iter()
        .find(|b| crate::model::records::select::good(b))
        .and_then(|b| b.metadata.name.as_deref())
}
