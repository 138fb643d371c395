//! The Kubernetes objects: the StatefulSet, the member config and the supporting objects
//! missing, resized by hand or behind their template, and pods stuck on an old template.

use super::*;

/// The member config is missing or lacks what every member reads.
pub(in crate::plan) fn config_lost(o: &Observed) -> bool {
    o.config.as_ref().is_none_or(|c| {
        !c.contains_key(config_key::INITIAL_CLUSTER) || !c.contains_key(config_key::INITIAL_TOKEN)
    })
}

/// The members that survive the loss of every object but the volumes and the status: each
/// volume, each member last recorded in status, each StatefulSet slot.
pub(in crate::plan) fn surviving_members(o: &Observed) -> BTreeSet<u32> {
    let mut m: BTreeSet<u32> = o.volumes.keys().copied().collect();
    m.extend(o.known_members.iter().copied());
    m.extend(0..slots(o).unwrap_or(0));
    m
}

/// No StatefulSet: a new cluster is bootstrapped whole; one deleted under a formed cluster is
/// brought back on its volumes (their data makes the members start as themselves), its member
/// config first (the pods cannot start without it). A cluster started from a snapshot went
/// through `restore_seed` before this rule.
pub(in crate::plan) fn workload_missing(d: &Desired, o: &Observed) -> Option<Step> {
    if o.statefulset.is_some() {
        return None;
    }
    // Pods of a StatefulSet deleted a moment ago (the cluster deleted and created again) keep
    // their names until they are gone: a new StatefulSet cannot create its pods over them, and
    // its controller backs off for minutes. Wait for them instead.
    let leftovers: Vec<&str> = o
        .pods
        .values()
        .filter(|p| p.terminating || p.controlled)
        .map(|p| p.name.as_str())
        .collect();
    if !leftovers.is_empty() {
        return Some(wait(
            Reason::CleaningUp,
            format!(
                "pods of the deleted StatefulSet {} are still going: {}",
                objects::statefulset_name(&d.name),
                leftovers.join(", ")
            ),
        ));
    }
    let survivors = surviving_members(o);
    if o.config.is_none() && survivors.is_empty() {
        return Some(Step::Bootstrap {
            replicas: d.replicas,
        });
    }
    if config_lost(o) {
        return Some(Step::WriteConfig {
            data: objects::repaired_config(d, survivors),
            why: ConfigChange::Repair,
        });
    }
    let to = o.volumes.keys().max().map_or(d.replicas, |m| m + 1);
    Some(Step::ResizeStatefulSet { from: 0, to })
}

/// The member config was deleted under a formed cluster and no member answers (the pods cannot
/// start without it): rebuild it from the volumes and the last recorded membership. Every
/// member keeps its data and starts as itself; nobody may join until etcd answers again.
pub(in crate::plan) fn member_config_lost(d: &Desired, o: &Observed) -> Option<Step> {
    if !config_lost(o) || reached(o).is_some() {
        return None;
    }
    Some(Step::WriteConfig {
        data: objects::repaired_config(d, surviving_members(o)),
        why: ConfigChange::Repair,
    })
}

/// A StatefulSet resized by hand below its voters is put back first: always safe (the members
/// come back on their own volumes), and the quorum the edit cost comes back with them.
pub(in crate::plan) fn workload_resized_by_hand(_: &Desired, o: &Observed) -> Option<Step> {
    let (c, s) = (reached(o)?, slots(o)?);
    let top = c.voters().filter_map(|m| m.ordinal).max()?;
    (top >= s).then_some(Step::ResizeStatefulSet {
        from: s,
        to: top + 1,
    })
}

pub(in crate::plan) fn supporting_objects_missing(_: &Desired, o: &Observed) -> Option<Step> {
    (!o.supporting_objects).then_some(Step::ApplySupportingObjects)
}

pub(in crate::plan) fn template_changed(d: &Desired, o: &Observed) -> Option<Step> {
    let sts = o.statefulset.as_ref()?;
    (sts.template_hash.as_deref() != Some(objects::template_hash(d).as_str())).then_some(
        Step::UpdateTemplate {
            replicas: sts.replicas,
        },
    )
}

/// The StatefulSet controller has not yet taken in the template (or replicas) written last:
/// its update revision is still the old template's, so every pod would look current and a
/// rollout (an upgrade) would end before it began. Waits, for seconds, until it has. Not for a
/// StatefulSet being deleted (its controller no longer acts on it).
pub(in crate::plan) fn workload_catching_up(d: &Desired, o: &Observed) -> Option<Step> {
    let sts = o.statefulset.as_ref()?;
    (sts.controller_behind && !sts.terminating).then(|| {
        wait(
            Reason::RollingMembers,
            format!(
                "StatefulSet {}: its controller has not yet taken in the spec written last",
                objects::statefulset_name(&d.name)
            ),
        )
    })
}

/// Pods on an older revision of the template whose etcd does not run (an image that cannot be
/// pulled, a crash loop, a container that cannot be created) are replaced, highest ordinal
/// first, one at a time (none while a pod terminates). The StatefulSet's OnDelete updates never
/// replace them, and a reverted template (a rollback, a spec set back) must reach exactly the
/// pods the bad one broke: `stale_members` does so only while a quorum answers, and not at all
/// when no member runs (a one-member cluster whose upgrade was rolled back, every member woken
/// on an image that cannot be pulled). A member whose etcd does not run serves nobody: replacing
/// its pod costs no quorum, and its volume, with its data, stays. A pod on a node that is gone
/// is left to the rules for lost members; a downgrade waits for its gate.
pub(in crate::plan) fn stuck_on_an_old_template(d: &Desired, o: &Observed) -> Option<Step> {
    let sts = o.statefulset.as_ref()?;
    let rev = sts.update_revision.as_ref()?;
    if sts.controller_behind || sts.terminating || o.pods.values().any(|p| p.terminating) {
        return None;
    }
    // A template on a lower minor than a member runs or the cluster version says goes through
    // etcd's downgrade first (`upgrade::downgrade_gate`, then `stale_members`), never around it.
    let minor = |v: crate::model::Version| (v.major, v.minor);
    let cluster_version = reached(o).and_then(|c| c.cluster_version());
    if upgrade::running(o)
        .into_iter()
        .chain(cluster_version)
        .any(|v| minor(v) > minor(d.version))
    {
        return None;
    }
    let (k, _) = o.pods.iter().rev().find(|(_, p)| {
        p.revision.as_ref().is_some_and(|r| r != rev) && !p.running && p.node_down.is_none()
    })?;
    Some(Step::RestartMember {
        ordinal: *k,
        pod: objects::pod_name(&d.name, *k),
        why: Restart::NewTemplate,
    })
}
