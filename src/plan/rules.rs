//! The planner's rules, in the order `RULES` tries them: each looks at desired and observed state
//! and names the step it calls for, or nothing.
//!
//! Pure: no async, no clock, no client.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::model::{RestoreMark, RestorePodView, fmt_id};

/// Paused: nothing acts, a recovery neither. Clients fenced off by a recovery stay so; the hold
/// names the ways out.
pub(super) fn paused(d: &Desired, o: &Observed) -> Option<Step> {
    if d.paused && o.clients_fenced {
        let ways_out = if o.statefulset.is_none() && o.volumes.is_empty() {
            // Unpaused without spec.recovery, the engine would bootstrap an empty cluster.
            "the old members are deleted: unpause it for the recovery (spec.recovery) to go on"
                .to_string()
        } else {
            format!(
                "unpause it for the recovery to go on, or withdraw spec.recovery too to let \
                 clients back to the members as they are (`kubectl etcd recover {}` decides again)",
                d.name
            )
        };
        return Some(hold(
            Reason::ClientsFenced,
            format!(
                "paused with clients fenced off (Service {} selects no member) by `kubectl etcd \
                 recover`; {ways_out}",
                objects::client_service_name(&d.name),
            ),
        ));
    }
    d.paused.then_some(Step::Paused)
}

/// Clients fenced off with no recovery under way (one restored its seed, or was withdrawn): the
/// Services are applied again, which puts the client Service's selector back whole. First of
/// the acting rules after the recovery's: a restore that waits long must not keep clients off
/// a cluster that serves.
pub(super) fn fenced_clients(d: &Desired, o: &Observed) -> Option<Step> {
    (o.clients_fenced && !super::recover::under_way(d, o)).then_some(Step::ApplySupportingObjects)
}

/// The member config is missing or lacks what every member reads.
pub(super) fn config_lost(o: &Observed) -> bool {
    o.config.as_ref().is_none_or(|c| {
        !c.contains_key(config_key::INITIAL_CLUSTER) || !c.contains_key(config_key::INITIAL_TOKEN)
    })
}

/// The members that survive the loss of every object but the volumes and the status: each
/// volume, each member last recorded in status, each StatefulSet slot.
pub(super) fn surviving_members(o: &Observed) -> BTreeSet<u32> {
    let mut m: BTreeSet<u32> = o.volumes.keys().copied().collect();
    m.extend(o.known_members.iter().copied());
    m.extend(0..slots(o).unwrap_or(0));
    m
}

/// No StatefulSet: a new cluster is bootstrapped whole; one deleted under a formed cluster is
/// brought back on its volumes (their data makes the members start as themselves), its member
/// config first (the pods cannot start without it). A cluster started from a snapshot went
/// through `restore_seed` before this rule.
pub(super) fn workload_missing(d: &Desired, o: &Observed) -> Option<Step> {
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
pub(super) fn member_config_lost(d: &Desired, o: &Observed) -> Option<Step> {
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
pub(super) fn workload_resized_by_hand(_: &Desired, o: &Observed) -> Option<Step> {
    let (c, s) = (reached(o)?, slots(o)?);
    let top = c.voters().filter_map(|m| m.ordinal).max()?;
    (top >= s).then_some(Step::ResizeStatefulSet {
        from: s,
        to: top + 1,
    })
}

/// Fewer voters than a quorum answer (status and the member list need no quorum, so the
/// survivors still do): report who is gone and what to run; never act on it. While a gone
/// member's pod is still starting (or about to be recreated) this is a wait; once every gone
/// member's pod is stuck (crash-looping, its data gone, its image missing) it is a hold.
pub(super) fn quorum_lost(d: &Desired, o: &Observed) -> Option<Step> {
    let c = reached(o)?;
    let voters = c.voters().count();
    let answering = c.voters().filter(|m| m.status.is_some()).count();
    if voters == 0 || answering >= quorum(voters) {
        return None;
    }
    let gone: Vec<&MemberView> = c.voters().filter(|m| m.status.is_none()).collect();
    let names: Vec<String> = gone.iter().map(|m| member_name(d, m)).collect();
    if let Some(proof) = quorum_proof(d, o) {
        // The driver is cut off from them, not the cluster from its quorum: nothing is judged
        // on what it cannot see (no member is replaced, no recovery is right).
        return Some(wait(
            Reason::EtcdUnreachable,
            format!(
                "{} of {voters} voters answer here, yet the cluster has a quorum: {proof}; {} \
                 {} unreachable from here, not down. Nothing is changed until they answer (check \
                 the network path from this driver, or run it in the cluster)",
                answering,
                names.join(", "),
                if names.len() == 1 { "is" } else { "are" },
            ),
        ));
    }
    let stuck = |m: &&MemberView| {
        m.ordinal.and_then(|k| o.pods.get(&k)).is_some_and(|p| {
            !p.running && !p.terminating && (p.restarts > 0 || p.data_loss().is_some())
                || p.waiting_reason
                    .as_deref()
                    .is_some_and(|r| r == "ImagePullBackOff" || r == "ErrImagePull")
        })
    };
    if !gone.iter().all(stuck) {
        return Some(wait(
            Reason::QuorumLost,
            format!(
                "quorum lost while members start: {answering} of {voters} voters answer; waiting for {}",
                names.join(", ")
            ),
        ));
    }
    Some(hold(
        Reason::QuorumLost,
        format!(
            "quorum lost: {answering} of {voters} voters answer (gone: {}{}); no write can succeed. \
             Bring the gone members back, or run `kubectl etcd -n {} recover {}` to rebuild the \
             cluster from the best survivor",
            names.join(", "),
            pod_trouble(o),
            d.namespace,
            d.name
        ),
    ))
}

/// What proves the cluster has a quorum however few of its voters this driver reaches, in a
/// sentence naming the member: a voter that passed its linearizable read in this pass (etcd
/// serves one only after its leader confirmed its leadership with a majority of the voters,
/// ReadIndex), else a voter this driver does not reach at all whose pod the kubelet counts Ready
/// (its readiness probe is the same read from inside the pod, `objects::workload`, failing it
/// takes the pod out within seconds). A voter that answered here but failed the read is fresher
/// evidence than its pod's readiness, which lags a real loss by up to three probe periods.
/// `None`: nothing seen proves one. A member that does not answer here may be cut off from this
/// driver only; a proven quorum says the cluster serves, whatever the driver reaches.
pub fn quorum_proof(d: &Desired, o: &Observed) -> Option<String> {
    let c = reached(o)?;
    if let Some(m) = c.voters().find(|m| m.healthy || m.alarmed) {
        return Some(format!(
            "{} answered a linearizable read, which its leader serves only with a majority of the \
             voters behind it",
            member_name(d, m)
        ));
    }
    c.voters()
        .filter(|m| m.status.is_none())
        .find(|m| {
            m.ordinal
                .and_then(|k| o.pods.get(&k))
                .is_some_and(|p| p.ready && p.running && !p.terminating)
        })
        .map(|m| {
            format!(
                "{}'s pod is Ready (the kubelet's probe, a linearizable read inside the pod, passes)",
                member_name(d, m)
            )
        })
}

/// Why member `m` looks lost, if it does: it does not answer as itself, and its pod says its
/// data is gone or unusable, answers as another member, or is on (or pinned by its volume to)
/// a node that is gone.
pub(super) fn looks_lost(o: &Observed, m: &MemberView) -> Option<String> {
    // A member that answers (status, even without health) runs on its own data: never lost.
    if m.healthy || m.status.is_some() {
        return None;
    }
    if m.identity_mismatch {
        return Some(
            "its pod answers as another member (its volume holds another member's data)".into(),
        );
    }
    let pod = o.pods.get(&m.ordinal?)?;
    pod.data_loss()
        .map(str::to_owned)
        .or_else(|| pod.node_down.clone())
}

/// When each member that looks lost now was first seen so (what status records as
/// `members[].lostSince`): the time recorded before (`o.lost_since`), else this pass's. Kept as
/// it was while no member answers.
pub fn lost_since(o: &Observed) -> BTreeMap<u32, jiff::Timestamp> {
    let Some(c) = reached(o) else {
        return o.lost_since.clone();
    };
    c.members
        .iter()
        .filter_map(|m| {
            let k = m.ordinal?;
            looks_lost(o, m)?;
            Some((k, o.lost_since.get(&k).copied().unwrap_or(o.now)))
        })
        .collect()
}

/// A voter that lost its data is replaced once it has looked lost for the grace period (counted
/// from when the sign was first seen, `lost_since`, never from its pod's creation), and only
/// while the others keep a healthy quorum: it is removed here; `slots_without_a_member` wipes
/// and re-adds it.
pub(super) fn lost_members(d: &Desired, o: &Observed) -> Option<Step> {
    let c = reached(o)?;
    // Voters first; then a learner that started once (one that never did has no data to lose:
    // `learner_in_its_slot` starts it).
    let (m, why) = c
        .voters()
        .chain(c.learners().filter(|m| m.started))
        .find_map(|m| looks_lost(o, m).map(|w| (m, w)))?;
    let name = member_name(d, m);
    let since = m.ordinal.and_then(|k| o.lost_since.get(&k)).copied();
    let age = since.map_or(0, |t| (o.now.as_second() - t.as_second()).max(0) as u64);
    let grace = d.lost_member_grace_seconds;
    if age < grace {
        return Some(wait(
            Reason::ReplacingMember,
            format!(
                "{name} looks lost: {why}; it is replaced if it still does {grace}s after this was first seen ({age}s so far)"
            ),
        ));
    }
    if m.learner {
        // A learner counts toward no quorum: it is removed, then refilled in its slot.
        return Some(Step::RemoveMember { id: m.id, name });
    }
    let voters = c.voters().count();
    let rest_healthy = c.voters().filter(|v| v.id != m.id && v.healthy).count();
    if voters < 2 || rest_healthy < quorum(voters - 1) {
        return Some(hold(
            Reason::QuorumAtRisk,
            format!(
                "{name} is lost ({why}), but removing it would leave {rest_healthy} healthy of {} voters; bring the others back first",
                voters.saturating_sub(1)
            ),
        ));
    }
    Some(Step::RemoveMember { id: m.id, name })
}

pub(super) fn supporting_objects_missing(_: &Desired, o: &Observed) -> Option<Step> {
    (!o.supporting_objects).then_some(Step::ApplySupportingObjects)
}

pub(super) fn template_changed(d: &Desired, o: &Observed) -> Option<Step> {
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
pub(super) fn workload_catching_up(d: &Desired, o: &Observed) -> Option<Step> {
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
pub(super) fn stuck_on_an_old_template(d: &Desired, o: &Observed) -> Option<Step> {
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

/// etcd did not answer as one cluster: hold on a split, wait while members start, bring back
/// members whose volumes lie beyond a StatefulSet scaled down by hand.
pub(super) fn etcd_unanswered(d: &Desired, o: &Observed) -> Option<Step> {
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

pub(super) fn foreign_members(_: &Desired, o: &Observed) -> Option<Step> {
    let m = reached(o)?.members.iter().find(|m| m.ordinal.is_none())?;
    Some(hold(
        Reason::StrandedMember,
        format!(
            "member {} ({}) was not added by kubectl-etcd; remove it with etcdctl",
            m.name, m.peer_url
        ),
    ))
}

pub(super) fn member_config_outdated(d: &Desired, o: &Observed) -> Option<Step> {
    let config = wanted_config(d, o, reached(o)?);
    if o.config.as_ref() == Some(&config) {
        return None;
    }
    let why = if o
        .config
        .as_ref()
        .is_none_or(|c| !c.contains_key(config_key::INITIAL_CLUSTER))
    {
        ConfigChange::Repair
    } else if !bootstrapped(o) {
        ConfigChange::Bootstrapped
    } else {
        ConfigChange::Joins
    };
    Some(Step::WriteConfig { data: config, why })
}

pub(super) fn bootstrap_in_progress(_: &Desired, o: &Observed) -> Option<Step> {
    (!bootstrapped(o)).then(|| wait(Reason::Bootstrapping, "initial members are starting"))
}

pub(super) fn pods_beyond_the_workload_terminating(_: &Desired, o: &Observed) -> Option<Step> {
    let s = slots(o)?;
    let (ord, pod) = o.pods.iter().find(|(o, p)| **o >= s && p.terminating)?;
    Some(wait(
        Reason::ResizingWorkload,
        format!("pod {} of ordinal {ord} is terminating", pod.name),
    ))
}

/// 1. Members without a StatefulSet slot (highest first): a learner added before the resize,
///    or one left behind by a reversed scale-up.
pub(super) fn members_beyond_the_workload(d: &Desired, o: &Observed) -> Option<Step> {
    let (c, s) = (reached(o)?, slots(o)?);
    let voters = c.voters().count();
    let mut beyond: Vec<&MemberView> = c
        .members
        .iter()
        .filter(|m| m.ordinal.unwrap_or(0) >= s)
        .collect();
    beyond.sort_by_key(|m| std::cmp::Reverse(m.ordinal));
    let m = beyond.first()?;
    let ord = m.ordinal.unwrap_or(0);
    let remove = Step::RemoveMember {
        id: m.id,
        name: member_name(d, m),
    };
    if m.learner && ord == s && ord < d.replicas && beyond.len() == 1 {
        if o.volumes.contains_key(&ord) {
            // A volume from an earlier member of this ordinal would make the learner start
            // with foreign data. Take the learner out; the volume is deleted next.
            return Some(remove);
        }
        return Some(Step::ResizeStatefulSet { from: s, to: s + 1 });
    }
    if m.learner {
        return Some(remove);
    }
    // A voter without a pod slot: only removed when the rest keeps a healthy majority.
    let rest_healthy = c.voters().filter(|v| v.id != m.id && v.healthy).count();
    if rest_healthy >= quorum(voters - 1) {
        return Some(remove);
    }
    Some(hold(
        Reason::QuorumAtRisk,
        format!(
            "voter {} has no pod, and removing it would leave {rest_healthy} healthy of {} voters",
            member_name(d, m),
            voters - 1
        ),
    ))
}

/// 2. StatefulSet slots without a member: the top one beyond the spec is shrunk away (a removed
///    member); any other is refilled in place (a member removed as lost, or a removal the spec
///    took back): once its pod proves its volume empty (etcd found no entry to join under) it
///    is added back as a learner; a volume that may still hold the old member's data is wiped
///    first, so no member ever starts on someone else's data.
pub(super) fn slots_without_a_member(d: &Desired, o: &Observed) -> Option<Step> {
    let (c, s) = (reached(o)?, slots(o)?);
    let ord = (0..s).rev().find(|o| c.member_at(*o).is_none())?;
    if ord == s - 1 && ord >= d.replicas {
        return Some(Step::ResizeStatefulSet { from: s, to: s - 1 });
    }
    let pod_name = objects::pod_name(&d.name, ord);
    let with_volumes = matches!(d.storage, crate::model::Storage::Volume { .. });
    // The slot's member was removed (as lost) and its pod is on a node that is gone, or waits
    // for one its volume is pinned to: neither ever goes by itself. Both go now, the pod without
    // waiting for a kubelet that never confirms (the removed member can never rejoin; its data
    // is what the wipe deletes), and the StatefulSet starts it elsewhere on a new volume.
    if o.pods.get(&ord).is_some_and(|p| p.node_down.is_some()) {
        return Some(Step::WipeMember {
            ordinal: ord,
            claim: o.volumes.get(&ord).map(|v| v.name.clone()),
            pod: pod_name,
            force: true,
        });
    }
    let pod = o.pods.get(&ord).filter(|p| !p.terminating);
    if with_volumes {
        match o.volumes.get(&ord) {
            Some(v) if v.terminating => {
                // The pod holds the volume until it goes.
                return Some(match pod {
                    Some(_) => Step::RestartMember {
                        ordinal: ord,
                        pod: pod_name,
                        why: Restart::NewVolume,
                    },
                    None => wait(
                        Reason::ReplacingMember,
                        format!("volume {} is being deleted", v.name),
                    ),
                });
            }
            None => {
                // A pod whose volume was deleted under it never gets a new one by itself.
                return Some(match pod {
                    Some(p) if !p.running => Step::RestartMember {
                        ordinal: ord,
                        pod: pod_name,
                        why: Restart::NewVolume,
                    },
                    _ => wait(
                        Reason::ReplacingMember,
                        format!("pod {pod_name} is getting a new volume"),
                    ),
                });
            }
            Some(_) => {}
        }
    }
    let Some(pod) = pod else {
        return Some(wait(
            Reason::ReplacingMember,
            format!("pod {pod_name} is being recreated"),
        ));
    };
    if pod.data_loss().is_some_and(|_| pod.proven_empty()) {
        let voters = c.voters().count();
        let healthy = c.voters().filter(|m| m.healthy).count();
        if healthy < voters {
            return Some(wait(
                Reason::MembersUnhealthy,
                format!(
                    "{healthy} of {voters} members are healthy; re-adding {pod_name} waits for all"
                ),
            ));
        }
        return Some(Step::AddLearner {
            ordinal: ord,
            name: pod_name,
            peer_url: objects::peer_url(d, ord),
        });
    }
    if pod.restarts == 0 && pod.last_exit_message.is_none() {
        let trouble = pod.trouble().map(|t| format!(" ({t})")).unwrap_or_default();
        return Some(wait(
            Reason::ReplacingMember,
            format!("pod {pod_name} is starting{trouble}"),
        ));
    }
    // Never wipe a pod whose etcd answers: the member list (perhaps from a lagging member) may
    // not name it yet, or it is a removed member about to stop by itself.
    if let Some(id) = pod.answered_as {
        return Some(wait(
            Reason::ReplacingMember,
            format!(
                "pod {pod_name} answers as member {}, which the member list does not name; it is not \
                 wiped while it answers",
                fmt_id(id)
            ),
        ));
    }
    Some(Step::WipeMember {
        ordinal: ord,
        claim: with_volumes.then(|| objects::volume_name(&d.name, ord)),
        pod: pod_name,
        force: false,
    })
}

/// 3. Volumes of ordinals beyond the StatefulSet belong to removed members: delete them so
///    those members can never come back with stale data.
pub(super) fn volumes_of_removed_members(d: &Desired, o: &Observed) -> Option<Step> {
    let s = slots(o)?;
    let (ord, v) = o.volumes.iter().find(|(o, _)| **o >= s)?;
    if v.terminating {
        return Some(wait(
            Reason::CleaningUp,
            format!("volume {} is being deleted", v.name),
        ));
    }
    if !o.pods.contains_key(ord) {
        return Some(Step::DeleteVolume {
            ordinal: *ord,
            claim: v.name.clone(),
        });
    }
    Some(wait(
        Reason::CleaningUp,
        format!(
            "pod of removed member {} is still present",
            objects::pod_name(&d.name, *ord)
        ),
    ))
}

/// 4. A learner in its slot is promoted once caught up (or removed when no longer wanted).
pub(super) fn learner_in_its_slot(d: &Desired, o: &Observed) -> Option<Step> {
    let c = reached(o)?;
    let l = c.learners().next()?;
    let name = member_name(d, l);
    if c.voters().count() >= d.replicas as usize {
        return Some(Step::RemoveMember { id: l.id, name });
    }
    let pod = l.ordinal.and_then(|k| o.pods.get(&k));
    if !l.started && pod.is_some_and(|p| p.waiting_reason.as_deref() == Some("CrashLoopBackOff")) {
        // Its pod crashed before its join entry existed (a refilled slot): start it now.
        return Some(Step::RestartMember {
            ordinal: l.ordinal.unwrap_or_default(),
            pod: objects::pod_name(&d.name, l.ordinal.unwrap_or_default()),
            why: Restart::Rejoin,
        });
    }
    if !l.started || l.status.is_none() {
        let trouble = pod
            .and_then(|p| p.trouble())
            .map(|t| format!(" ({t})"))
            .unwrap_or_default();
        return Some(wait(
            Reason::AddingLearner,
            format!("learner {name} is starting{trouble}"),
        ));
    }
    if !caught_up(l, c.leader_member()) {
        return Some(wait(
            Reason::PromotingLearner,
            format!("learner {name} is catching up with the leader"),
        ));
    }
    Some(Step::PromoteLearner { id: l.id, name })
}

/// 5. Scale, one member at a time.
pub(super) fn scale_one_member_at_a_time(d: &Desired, o: &Observed) -> Option<Step> {
    let (c, s) = (reached(o)?, slots(o)?);
    let voters = c.voters().count();
    let healthy_voters = c.voters().filter(|m| m.healthy).count();
    let target = d.replicas as usize;
    if voters < target {
        if healthy_voters < voters {
            return Some(wait(
                Reason::MembersUnhealthy,
                format!(
                    "{healthy_voters} of {voters} members are healthy; adding a member waits for all"
                ),
            ));
        }
        return Some(Step::AddLearner {
            ordinal: s,
            name: objects::pod_name(&d.name, s),
            peer_url: objects::peer_url(d, s),
        });
    }
    if voters == target {
        return None;
    }
    let Some(victim) = c.member_at(s - 1) else {
        return Some(hold(
            Reason::StrandedMember,
            "member list and StatefulSet disagree",
        ));
    };
    let rest_healthy = c
        .voters()
        .filter(|v| v.id != victim.id && v.healthy)
        .count();
    if rest_healthy < quorum(voters - 1) {
        return Some(hold(
            Reason::QuorumAtRisk,
            format!(
                "removing {} would leave {rest_healthy} healthy of {} voters (quorum {})",
                member_name(d, victim),
                voters - 1,
                quorum(voters - 1)
            ),
        ));
    }
    if c.leader == Some(victim.id) {
        return Some(move_leader_off(d, o, c, victim));
    }
    Some(Step::RemoveMember {
        id: victim.id,
        name: member_name(d, victim),
    })
}

/// 6. Members on an old template restart one at a time, highest ordinal first, leader last.
pub(super) fn stale_members(d: &Desired, o: &Observed) -> Option<Step> {
    let c = reached(o)?;
    let rev = o.statefulset.as_ref()?.update_revision.as_ref()?;
    let stale: Vec<u32> = o
        .pods
        .iter()
        .filter(|(_, p)| p.revision.as_ref().is_some_and(|r| r != rev))
        .map(|(o, _)| *o)
        .collect();
    if stale.is_empty() {
        return None;
    }
    if let Some(p) = stale
        .iter()
        .filter_map(|k| o.pods.get(k))
        .find(|p| p.terminating)
    {
        return Some(wait(
            Reason::RollingMembers,
            p.node_gone()
                .unwrap_or_else(|| format!("pod {} is restarting", p.name)),
        ));
    }
    // A stale pod whose member gives no status at all serves nobody: restarting it cannot cost
    // quorum (this is how a reverted bad template is undone), but only while every other voter
    // answers and no restart is under way (every other voter's pod ready). A member that answers
    // but is slow or not ready (load, a WAL replay) waits for the gate below like any other.
    if let Some(k) = stale.iter().rev().copied().find(|k| {
        o.pods.get(k).is_some_and(|p| !p.ready)
            && c.member_at(*k).is_none_or(|m| m.status.is_none())
            && c.voters().filter(|m| m.ordinal != Some(*k)).all(|m| {
                m.status.is_some()
                    && m.ordinal
                        .and_then(|j| o.pods.get(&j))
                        .is_some_and(|p| p.ready && !p.terminating)
            })
    }) {
        return Some(Step::RestartMember {
            ordinal: k,
            pod: objects::pod_name(&d.name, k),
            why: Restart::NewTemplate,
        });
    }
    let voters = c.voters().count();
    // A member whose only trouble is a raised alarm (NOSPACE) answers and keeps quorum: the
    // alarm must not block a restart whose purpose may be to clear it (a raised quota).
    let healthy_voters = c.voters().filter(|m| m.healthy || m.alarmed).count();
    if healthy_voters < voters || o.pods.values().any(|p| !p.ready) {
        // A member already on the new template that does not come up (a flag its etcd does
        // not know, a resource it cannot get) says so: the rollout stops there, untouched.
        let failing = o
            .pods
            .values()
            .filter(|p| p.revision.as_ref() == Some(rev) && !p.ready && !p.terminating)
            .find(|p| {
                p.restarts > 0
                    || p.waiting_reason.as_deref() == Some("CrashLoopBackOff")
                    || p.trouble().is_some()
            });
        if let Some(p) = failing {
            let why = p.trouble().map(|t| format!(": {t}")).unwrap_or_default();
            return Some(wait(
                Reason::RollingMembers,
                format!(
                    "{} does not start on the new template ({} restarts{why}); the next restart \
                     waits. Fix the spec (setting it back undoes the change)",
                    p.name, p.restarts
                ),
            ));
        }
        return Some(wait(
            Reason::RollingMembers,
            "a restart waits until every member is healthy and ready",
        ));
    }
    if let Some(m) = upgrade::lagging(c) {
        return Some(wait(
            Reason::RollingMembers,
            format!(
                "a restart waits until {} has caught up with the leader",
                member_name(d, m)
            ),
        ));
    }
    let leader_ord = c.leader_member().and_then(|l| l.ordinal);
    let pick = stale
        .iter()
        .rev()
        .find(|o| Some(**o) != leader_ord)
        .or(stale.first())
        .copied()
        .unwrap_or(0);
    if let Some(m) = c
        .member_at(pick)
        .filter(|_| Some(pick) == leader_ord && voters > 1)
    {
        return Some(move_leader_off(d, o, c, m));
    }
    Some(Step::RestartMember {
        ordinal: pick,
        pod: objects::pod_name(&d.name, pick),
        why: Restart::NewTemplate,
    })
}

/// 7. Right-sized and current, but a voter is unhealthy: reported, not touched.
pub(super) fn unhealthy_voters(d: &Desired, o: &Observed) -> Option<Step> {
    let sick: Vec<String> = reached(o)?
        .voters()
        .filter(|m| !m.healthy)
        .map(|m| member_name(d, m))
        .collect();
    (!sick.is_empty()).then(|| {
        wait(
            Reason::MembersUnhealthy,
            format!("unhealthy: {}", sick.join(", ")),
        )
    })
}

/// 8. Every voter is healthy, but a voter's pod is not Ready yet.
///
/// Its readiness probe (a linearizable read with the pod's own etcdctl) has not passed since it
/// started or was promoted, so the client Service does not send it clients. Converged means
/// served: wait for the kubelet's next probe rather than report a member the Service skips.
pub(super) fn voters_not_ready(d: &Desired, o: &Observed) -> Option<Step> {
    let mut waiting: Vec<(u32, String)> = reached(o)?
        .voters()
        .filter_map(|m| {
            let k = m.ordinal?;
            let p = o.pods.get(&k)?;
            (p.running && !p.ready && !p.terminating).then(|| (k, member_name(d, m)))
        })
        .collect();
    waiting.sort();
    (!waiting.is_empty()).then(|| {
        let names: Vec<String> = waiting.into_iter().map(|(_, n)| n).collect();
        wait(
            Reason::MembersNotReady,
            format!(
                "healthy, not Ready yet: {} (its readiness probe has not passed since it started \
                 or was promoted; the client Service skips it until then)",
                names.join(", ")
            ),
        )
    })
}

/// The done-mark `status.completed.restore` keeps for `spec.restore`: its nonce, else its URL.
fn restore_done_mark(r: &crate::model::RestoreSource) -> &str {
    r.nonce.as_deref().unwrap_or(&r.url)
}

/// `spec.restore` itself, not the restore a recovery settles into `d.restore` (its nonce is the
/// recovery's): a recovery's restore is the recovery's to mark (`status.completed.recovery`), and
/// the seed's claim may carry an earlier restore's mark while it deletes the old members.
fn own_restore(d: &Desired) -> Option<&crate::model::RestoreSource> {
    d.restore.as_ref().filter(|r| {
        d.recovery
            .as_ref()
            .is_none_or(|rec| r.nonce.as_deref() != Some(rec.nonce.as_str()))
    })
}

/// `status.completed.restore` after a pass: the mark kept, or the spec's restore once the seed
/// runs on its restored volume (the StatefulSet made on it). From then on the snapshot is never
/// restored again: a cluster that later loses every volume and object is a recovery's to
/// rebuild, not an old snapshot's to roll back to silently.
pub(super) fn restore_completed_mark(d: &Desired, o: &Observed) -> Option<String> {
    let restored = o.statefulset.is_some()
        && o.volumes
            .values()
            .any(|v| !v.terminating && v.restore == Some(RestoreMark::Restored));
    match own_restore(d) {
        Some(r) if restored => Some(restore_done_mark(r).to_string()),
        _ => o.completed.restore.clone(),
    }
}

/// A cluster restored from a snapshot, before its StatefulSet exists: the seed's volume is filled by
/// the restore pod (its certificates are made meanwhile), then the seed alone is bootstrapped on it
/// (the others join as learners).
///
/// The restore runs once: its claim carries `RestoreMark::Restoring` from the moment the restore
/// makes it, and `Restored` from the seed's bootstrap on. `None` once the seed was bootstrapped (the
/// member config or the StatefulSet exists, or the seed's volume says `Restored`: a restored
/// cluster whose objects were deleted, or deleted and applied again, comes back on its volumes like
/// any other), and for clusters not restored. Volumes the restore did not make (an earlier
/// cluster's, kept by `delete`) are never restored over: the rule holds and names them.
pub(super) fn restore_seed(d: &Desired, o: &Observed) -> Option<Step> {
    let r = d.restore.as_ref()?;
    if o.config.is_some()
        || o.statefulset.is_some()
        || own_restore(d)
            .is_some_and(|r| o.completed.restore.as_deref() == Some(restore_done_mark(r)))
    {
        return None;
    }
    if o.volumes
        .values()
        .any(|v| !v.terminating && v.restore == Some(RestoreMark::Restored))
    {
        return None;
    }
    if o.restore_pod.is_none()
        && let Some(v) = o.volumes.values().find(|v| v.terminating)
    {
        // `recover` deleted the old members' volumes: the seed's claim gets a new one.
        return Some(wait(
            Reason::RestoringSnapshot,
            format!("old volume {} is being deleted", v.name),
        ));
    }
    let foreign: Vec<&str> = o
        .volumes
        .iter()
        .filter(|(ord, v)| {
            let the_restores_own = **ord == 0 && v.restore == Some(RestoreMark::Restoring);
            !v.terminating && !the_restores_own
        })
        .map(|(_, v)| v.name.as_str())
        .collect();
    if !foreign.is_empty() {
        return Some(hold(
            Reason::RestoreFailed,
            format!(
                "volumes of an earlier cluster named {} exist ({}): restoring {} over them would \
                 destroy their data. To start from the snapshot, delete them (kubectl etcd delete \
                 {} --delete-data --yes) or restore under another name; to keep their data, \
                 remove spec.restore",
                d.name,
                foreign.join(", "),
                r.url,
                d.name
            ),
        ));
    }
    let restore_pod = crate::objects::restore::pod_name(&d.name);
    Some(match &o.restore_pod {
        None => Step::RestoreSeed { url: r.url.clone() },
        // The TLS material the members need is made meanwhile (it does not depend on the
        // snapshot): the seed starts as soon as its volume is filled.
        Some(RestorePodView::Running) => certificate_to_make(d, o).unwrap_or_else(|| {
            wait(
                Reason::RestoringSnapshot,
                format!(
                    "restoring {} into the volume of {}",
                    r.url,
                    objects::pod_name(&d.name, 0)
                ),
            )
        }),
        Some(RestorePodView::Retrying(why)) => certificate_to_make(d, o).unwrap_or_else(|| {
            wait(
                Reason::RestoringSnapshot,
                format!(
                    "restoring {} into the volume of {}: the download fails and is tried again \
                     for about five minutes ({why})",
                    r.url,
                    objects::pod_name(&d.name, 0)
                ),
            )
        }),
        Some(RestorePodView::Stuck(why)) => hold(
            Reason::RestoreFailed,
            format!(
                "the restore pod {restore_pod} cannot start ({why}); {}, the restore then goes on \
                 by itself",
                restore_pod_fix(d, why)
            ),
        ),
        // Found unusable while verified whole, before a byte was restored: a damaged backup,
        // which no retry mends. (A download that broke off and could not go on is a storage
        // failure, held below with the advice to retry.)
        Some(RestorePodView::Failed(why)) if why.contains(crate::archive::fetch::UNUSABLE) => hold(
            Reason::RestoreFailed,
            format!(
                "the restore pod {restore_pod} found {} unusable ({why}); nothing was \
                     restored: for a damaged backup, delete this cluster (kubectl etcd -n {} \
                     delete {} --delete-data --yes) and restore another; else fix the cause, then \
                     delete pod {restore_pod} to retry",
                r.url, d.namespace, d.name
            ),
        ),
        Some(RestorePodView::Failed(why)) => hold(
            Reason::RestoreFailed,
            format!(
                "the restore from {} failed ({why}); fix the cause, then delete pod {restore_pod} \
                 to retry",
                r.url,
            ),
        ),
        Some(RestorePodView::Succeeded) => Step::Bootstrap { replicas: 1 },
    })
}

/// What to change for a restore pod that cannot start: the field of its image when the nodes
/// cannot pull it.
fn restore_pod_fix(d: &Desired, why: &str) -> String {
    let pull = ["ErrImagePull", "ImagePullBackOff", "InvalidImageName"]
        .iter()
        .any(|r| why.contains(r));
    if !pull {
        return "fix the cause (a missing Secret or image)".into();
    }
    format!(
        "set {}.toolsImage to an image of kubectl-etcd the nodes can pull (the `--tools-image` of \
         restore and recover)",
        if d.recovery.is_some() {
            "spec.recovery"
        } else {
            "spec.restore"
        }
    )
}

/// A certificate the PKI rules would issue or request now (not their waits or holds, which speak
/// in their turn once the restore is done).
fn certificate_to_make(d: &Desired, o: &Observed) -> Option<Step> {
    super::pki::certificates(d, o)
        .or_else(|| super::pki::cert_manager_certificates(d, o))
        .filter(|s| {
            matches!(
                s,
                Step::IssueCertificate { .. } | Step::RequestCertificate { .. }
            )
        })
}

/// The restore pod has done its work once the seed runs from the StatefulSet.
pub(super) fn restore_pod_left(d: &Desired, o: &Observed) -> Option<Step> {
    o.restore_pod.as_ref()?;
    Some(Step::DeleteRestorePod {
        pod: crate::objects::restore::pod_name(&d.name),
    })
}

/// ` (demo-0, demo-1: its etcd was OOMKilled …; demo-2: …)` for the pods in trouble
/// (`PodView::trouble`, pods of one trouble named together), else empty.
pub(super) fn pod_trouble(o: &Observed) -> String {
    let mut troubles: Vec<(String, Vec<&str>)> = Vec::new();
    for p in o.pods.values() {
        let Some(t) = p.trouble() else { continue };
        match troubles.iter_mut().find(|(seen, _)| *seen == t) {
            Some((_, names)) => names.push(&p.name),
            None => troubles.push((t, vec![&p.name])),
        }
    }
    if troubles.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = troubles
        .iter()
        .map(|(t, names)| format!("{}: {t}", names.join(", ")))
        .collect();
    format!(" ({})", parts.join("; "))
}

/// Leadership off `from` before a step takes it down: to the lowest healthy voter whose pod
/// stays (`drain`); never to one about to be evicted, which would cost the election the move
/// avoids: then the step waits for the drain to pass.
pub(super) fn move_leader_off(
    d: &Desired,
    o: &Observed,
    c: &ClusterView,
    from: &MemberView,
) -> Step {
    let candidates = || {
        c.voters()
            .filter(|m| m.id != from.id && (m.healthy || m.alarmed))
    };
    if let Some(m) = candidates().find(|m| super::drain::leaving(o, m))
        && candidates().all(|m| super::drain::leaving(o, m))
    {
        return wait(
            Reason::MovingLeader,
            format!(
                "moving leadership off {} waits: {} (and any other voter that could take it) is \
                 about to go ({}); once the drain is over, or the node uncordoned, it goes on",
                member_name(d, from),
                member_name(d, m),
                m.ordinal
                    .and_then(|k| o.pods.get(&k))
                    .and_then(|p| p.leaving.as_deref())
                    .unwrap_or("leaving")
            ),
        );
    }
    match candidates()
        .filter(|m| !super::drain::leaving(o, m))
        .min_by_key(|m| m.ordinal)
    {
        Some(to) => Step::MoveLeader {
            from: member_name(d, from),
            to_id: to.id,
            to: member_name(d, to),
        },
        None => hold(
            Reason::QuorumAtRisk,
            format!(
                "no healthy voter can take over leadership from {}",
                member_name(d, from)
            ),
        ),
    }
}

/// The member's name as the engine knows it (etcd reports none before a member first starts).
pub fn member_name(d: &Desired, m: &MemberView) -> String {
    match m.ordinal {
        Some(o) => objects::pod_name(&d.name, o),
        None if !m.name.is_empty() => m.name.clone(),
        None => fmt_id(m.id),
    }
}
