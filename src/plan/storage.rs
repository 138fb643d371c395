//! Storage changes of a running cluster: `spec.storage.size` grown, `storageClassName` changed
//! (shrinking is refused by `model::keep_storage`, and by the CRD at admission).
//!
//! Pure: no async, no clock, no client.
//!
//! ```text
//!  the claim template differs from the spec:
//!      RecreateStatefulSet (deleted orphaning its pods, applied again: no pod restarts)
//!  then one volume per pass, by the path it needs:
//!      Grow (same class, the class allows expansion, a bigger size):
//!          GrowVolume(k) ─▶ … every volume ─▶ wait until each has the new capacity
//!      Swap (another class, or a class that cannot expand):
//!          [MoveLeader] ─▶ RemoveMember(k) ─▶ the lost-member path refills the slot on a new
//!          volume from the new template (WipeMember ─▶ AddLearner ─▶ WriteConfig ─▶
//!          PromoteLearner) ─▶ the next member, highest ordinal first, the leader last
//! ```
//!
//! A swap removes one voter while every voter is healthy and ready, so the rest keeps a healthy
//! quorum; a cluster of one member is never swapped (its only copy of the data would go).

use std::fmt;

use serde::Serialize;

use super::*;
use crate::model::{Storage, VolumeView, WorkloadView};

/// How a volume reaches the spec's storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Path {
    /// The claim grows in place (its StorageClass allows expansion); the pod keeps running.
    Grow,
    /// The member moves to a new volume through the replacement path (remove, new volume, add
    /// as a learner, promote), one member at a time.
    Swap,
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Grow => write!(f, "each volume grown in place, no pod restarted"),
            Path::Swap => write!(
                f,
                "each member moved to a new volume, one at a time (removed, re-added as a \
                 learner on the new volume, promoted once caught up; the leader last)"
            ),
        }
    }
}

/// Whether observe must read the StorageClass: the claim template or a volume is smaller than
/// the spec, or on another class than the spec names.
pub fn class_needed(
    d: &Desired,
    workload: Option<&WorkloadView>,
    volumes: &BTreeMap<u32, VolumeView>,
) -> bool {
    let Storage::Volume { .. } = &d.storage else {
        return false;
    };
    workload.is_some_and(|w| {
        w.storage
            .as_ref()
            .is_some_and(|s| !same_storage(s, &d.storage))
    }) || volumes.values().any(|v| volume_path(d, None, v).is_some())
}

/// Whether two storages are the same (sizes compared by value).
fn same_storage(a: &Storage, b: &Storage) -> bool {
    match (a, b) {
        (Storage::Volume { size: x, class: cx }, Storage::Volume { size: y, class: cy }) => {
            cx == cy && x.same_size(y)
        }
        _ => a == b,
    }
}

/// The path volume `v` takes to the spec's storage, `None` when it has it. `class`: the
/// StorageClass the spec's volumes get, when it was read (`None`: not known to expand).
/// A spec without a class takes the volumes' class as it is (the cluster's default when they
/// were made): moving to the default class means naming it.
pub fn volume_path(
    d: &Desired,
    class: Option<&crate::model::StorageClassView>,
    v: &VolumeView,
) -> Option<Path> {
    let Storage::Volume { size, class: want } = &d.storage else {
        return None;
    };
    if want.is_some() && v.class != *want {
        return Some(Path::Swap);
    }
    let smaller = v
        .size
        .as_ref()
        .is_some_and(|have| have.bytes() < size.bytes());
    if !smaller {
        return None;
    }
    let expands = class.is_some_and(|c| c.expandable && v.class.as_deref() == Some(&c.name));
    Some(if expands { Path::Grow } else { Path::Swap })
}

/// The path the whole change takes, for the sentence of `RecreateStatefulSet` and `--dry-run`:
/// a class change always swaps; a bigger size grows where the class allows expansion.
pub fn template_path(d: &Desired, o: &Observed) -> Path {
    let (Some(Storage::Volume { class: have, .. }), Storage::Volume { class: want, .. }) = (
        o.statefulset.as_ref().and_then(|s| s.storage.as_ref()),
        &d.storage,
    ) else {
        return Path::Swap;
    };
    let same_class = want.is_none() || want == have;
    if same_class && o.storage_class.as_ref().is_some_and(|c| c.expandable) {
        Path::Grow
    } else {
        Path::Swap
    }
}

/// The claim template differs from the spec: the StatefulSet is re-created with the new one
/// (its claim templates are immutable), its pods untouched. Before `template_changed`, whose
/// apply of the new claim template would be refused.
pub(super) fn claim_template_outdated(d: &Desired, o: &Observed) -> Option<Step> {
    let sts = o.statefulset.as_ref()?;
    if sts.terminating {
        return Some(wait(
            Reason::ResizingStorage,
            format!(
                "StatefulSet {} is being deleted (its pods are orphaned and keep running) to be \
                 re-created with the new claim template",
                objects::statefulset_name(&d.name)
            ),
        ));
    }
    let have = sts.storage.as_ref()?;
    if same_storage(have, &d.storage) {
        return None;
    }
    Some(Step::RecreateStatefulSet {
        replicas: sts.replicas,
        storage: describe_storage(&d.storage),
        path: template_path(d, o),
    })
}

/// "2Gi of class fast", "2Gi of the default class".
pub fn describe_storage(s: &Storage) -> String {
    match s {
        Storage::Volume { size, class } => format!(
            "{size} of {}",
            class
                .as_deref()
                .map_or("the default class".to_string(), |c| format!("class {c}"))
        ),
        Storage::Ephemeral => "ephemeral storage".into(),
    }
}

/// Volumes of the members differ from the claim template (which `claim_template_outdated`
/// made match the spec): grown in place one per pass, or their members moved one at a time.
/// After the scaling rules: a learner or an empty slot is finished first.
pub(super) fn volumes_outdated(d: &Desired, o: &Observed) -> Option<Step> {
    let Storage::Volume { size, .. } = &d.storage else {
        return None;
    };
    let (c, s) = (reached(o)?, slots(o)?);
    let changes: Vec<(u32, &VolumeView, Path)> = o
        .volumes
        .iter()
        .filter(|(k, v)| **k < s && !v.terminating)
        .filter_map(|(k, v)| Some((*k, v, volume_path(d, o.storage_class.as_ref(), v)?)))
        .collect();
    if let Some((k, v, _)) = changes.iter().find(|(_, _, p)| *p == Path::Grow) {
        return Some(Step::GrowVolume {
            ordinal: *k,
            claim: v.name.clone(),
            from: v.size.as_ref().map(ToString::to_string).unwrap_or_default(),
            to: size.to_string(),
        });
    }
    let swaps: Vec<u32> = changes.iter().map(|(k, _, _)| *k).collect();
    if swaps.is_empty() {
        // A grown claim's capacity is waited for after everything else (`expansion_pending`).
        return None;
    }
    let voters = c.voters().count();
    if voters < 2 {
        return Some(hold(
            Reason::ResizingStorage,
            format!(
                "{} is the only member: moving it to a new volume would drop the only copy of \
                 the data. Scale to 3 first (`kubectl etcd scale {} --replicas 3`), or move the \
                 data to a new cluster with `kubectl etcd backup` and `kubectl etcd restore`",
                objects::pod_name(&d.name, swaps[0]),
                d.name
            ),
        ));
    }
    let all_ready = c.voters().all(|m| {
        m.healthy
            && m.ordinal
                .and_then(|k| o.pods.get(&k))
                .is_some_and(|p| p.ready && !p.terminating)
    });
    if !all_ready || c.learners().next().is_some() {
        return Some(wait(
            Reason::ResizingStorage,
            format!(
                "moving {} to a new volume waits until every member is healthy and ready",
                objects::pod_name(&d.name, swaps[0])
            ),
        ));
    }
    let leader = c.leader_member().and_then(|m| m.ordinal);
    let pick = swaps
        .iter()
        .rev()
        .find(|k| Some(**k) != leader)
        .or(swaps.first())
        .copied()?;
    let m = c.member_at(pick)?;
    if Some(pick) == leader {
        return Some(move_leader_off(d, o, c, m));
    }
    // Every voter is healthy: the rest keeps a healthy quorum of the smaller cluster.
    Some(Step::RemoveMember {
        id: m.id,
        name: member_name(d, m),
    })
}

/// How long a grown claim's capacity may take to show before the cluster holds: a resize and the
/// kubelet's file-system growth take seconds to a few minutes; a class that claims expansion but
/// has no resizer never shows it.
pub const EXPANSION_PATIENCE: jiff::SignedDuration = jiff::SignedDuration::from_mins(10);

/// Every claim asks for the spec's size; one whose volume has not reached it yet (the resize
/// under way, the kubelet growing the file system) is waited for, for `EXPANSION_PATIENCE` from
/// when it was asked (`VolumeView::grow_asked`; a claim grown without the mark is not waited
/// for), then held, naming the claim and both ways out. Asked by `plan` after every rule and the
/// backups: a capacity that never shows stops no repair, renewal, backup or other rule.
pub fn expansion_pending(d: &Desired, o: &Observed) -> Option<Step> {
    let Storage::Volume { size, .. } = &d.storage else {
        return None;
    };
    let want = size.bytes();
    let v = o.volumes.values().find(|v| {
        !v.terminating
            && v.capacity.as_ref().is_some_and(|have| have.bytes() < want)
            && v.size.as_ref().is_some_and(|asked| asked.bytes() >= want)
    })?;
    let capacity = v
        .capacity
        .as_ref()
        .map_or("unknown".to_string(), ToString::to_string);
    let asked = v.grow_asked.map(|t| o.now.duration_since(t));
    if let Some(waited) = asked.filter(|w| *w < EXPANSION_PATIENCE) {
        return Some(wait(
            Reason::ResizingStorage,
            format!(
                "volume {} is being expanded to {size} (capacity {capacity} so far, asked {}s \
                 ago; held after {}s)",
                v.name,
                waited.as_secs(),
                EXPANSION_PATIENCE.as_secs()
            ),
        ));
    }
    let back = crate::model::smallest_capacity(&o.volumes)
        .map_or_else(|| capacity.clone(), ToString::to_string);
    Some(hold(
        Reason::ResizingStorage,
        format!(
            "volume {} asks for {size} but its capacity is still {capacity}{}: its StorageClass \
             allows expansion, yet nothing resizes the volume (no resizer for its provisioner). \
             Install the class's volume resizer, or set spec.storage.size back to {back}, what the \
             claims have (`kubectl etcd scale {} --storage {back}`)",
            v.name,
            asked.map_or(String::new(), |w| format!(
                " {}s after it was asked",
                w.as_secs()
            )),
            d.name
        ),
    ))
}

/// `--dry-run` of a storage change: the lines that say what happens and which path.
pub fn describe(d: &Desired, o: &Observed) -> Vec<String> {
    let path = template_path(d, o);
    let class = match &o.storage_class {
        Some(c) if c.expandable => format!("StorageClass {} allows volume expansion", c.name),
        Some(c) => format!("StorageClass {} does not allow volume expansion", c.name),
        None => "the StorageClass could not be read, so no expansion is assumed".into(),
    };
    let why = match (&o.statefulset, &d.storage) {
        (
            Some(WorkloadView {
                storage: Some(Storage::Volume { class: have, .. }),
                ..
            }),
            Storage::Volume { class: want, .. },
        ) if want.is_some() && want != have => "the class changes".to_string(),
        _ => class,
    };
    vec![
        format!(
            "re-create StatefulSet {} with claims of {} (deleted orphaning its pods, which keep \
             running)",
            objects::statefulset_name(&d.name),
            describe_storage(&d.storage)
        ),
        format!("path: {path} ({why})"),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::tests::{cluster, desired, healthy};
    use super::*;
    use crate::model::StorageClassView;

    /// The cluster wants `size` of `class`; the world still has 1Gi of the default class
    /// (`standard`), whose expansion is `expandable`.
    fn changed(size: &str, class: Option<&str>, expandable: bool) -> (Desired, Observed) {
        let before = desired(3);
        let mut o = healthy(&before, 3);
        for v in o.volumes.values_mut() {
            v.class = Some("standard".into());
        }
        let mut d = before;
        d.storage = Storage::Volume {
            size: size.into(),
            class: class.map(str::to_owned),
        };
        o.storage_class = Some(StorageClassView {
            name: class.unwrap_or("standard").into(),
            expandable,
        });
        (d, o)
    }

    /// The StatefulSet re-created with the spec's claim template.
    fn recreated(d: &Desired, o: &mut Observed) {
        let sts = o.statefulset.as_mut().unwrap();
        sts.storage = Some(d.storage.clone());
        sts.template_hash = Some(objects::template_hash(d));
    }

    #[test]
    fn a_changed_claim_template_re_creates_the_statefulset_first_naming_the_path() {
        let (d, o) = changed("2Gi", None, true);
        let step = plan(&d, &o);
        assert!(
            matches!(
                &step,
                Step::RecreateStatefulSet {
                    replicas: 3,
                    path: Path::Grow,
                    ..
                }
            ),
            "{step:?}"
        );
        assert!(step.to_string().contains("grown in place"), "{step}");
        let (d, o) = changed("2Gi", None, false);
        assert!(matches!(
            plan(&d, &o),
            Step::RecreateStatefulSet {
                path: Path::Swap,
                ..
            }
        ));
        // A class change always swaps, expandable or not.
        let (d, o) = changed("1Gi", Some("fast"), true);
        let step = plan(&d, &o);
        assert!(
            matches!(
                step,
                Step::RecreateStatefulSet {
                    path: Path::Swap,
                    ..
                }
            ),
            "{step:?}"
        );
        assert!(step.to_string().contains("one at a time"), "{step}");
    }

    #[test]
    fn the_same_size_written_differently_moves_no_volume() {
        let (d, mut o) = changed("1024Mi", None, true);
        // The template is applied as any template change (the API server compares the claim
        // template by value); no StatefulSet re-created, no volume grown, no member moved.
        assert_eq!(plan(&d, &o), Step::UpdateTemplate { replicas: 3 });
        recreated(&d, &mut o);
        assert_eq!(plan(&d, &o), Step::Idle);
    }

    #[test]
    fn a_statefulset_being_deleted_for_its_claim_template_is_waited_for() {
        let (d, mut o) = changed("2Gi", None, true);
        o.statefulset.as_mut().unwrap().terminating = true;
        assert!(matches!(
            plan(&d, &o),
            Step::Wait {
                reason: Reason::ResizingStorage,
                ..
            }
        ));
    }

    #[test]
    fn expandable_volumes_grow_one_per_pass_then_their_capacity_is_waited_for() {
        let (d, mut o) = changed("2Gi", None, true);
        recreated(&d, &mut o);
        assert_eq!(
            plan(&d, &o),
            Step::GrowVolume {
                ordinal: 0,
                claim: objects::volume_name(&d.name, 0),
                from: "1Gi".into(),
                to: "2Gi".into()
            }
        );
        for v in o.volumes.values_mut() {
            v.size = Some("2Gi".into());
            v.grow_asked = Some(o.now);
        }
        let step = plan(&d, &o);
        assert!(
            matches!(&step, Step::Wait { reason: Reason::ResizingStorage, message } if message.contains("capacity 1Gi")),
            "{step:?}"
        );
        for v in o.volumes.values_mut() {
            v.capacity = Some("2Gi".into());
        }
        assert_eq!(plan(&d, &o), Step::Idle);
    }

    #[test]
    fn members_move_to_the_new_class_highest_ordinal_first_and_the_leader_last() {
        let (d, mut o) = changed("1Gi", Some("fast"), false);
        recreated(&d, &mut o);
        // The leader is demo-0 (id 100): demo-2 goes first.
        assert_eq!(
            plan(&d, &o),
            Step::RemoveMember {
                id: 102,
                name: "demo-2".into()
            }
        );
        o.volumes.get_mut(&2).unwrap().class = Some("fast".into());
        o.volumes.get_mut(&1).unwrap().class = Some("fast".into());
        assert!(matches!(
            plan(&d, &o),
            Step::MoveLeader { ref from, .. } if from == "demo-0"
        ));
        cluster(&mut o).leader = Some(101);
        assert_eq!(
            plan(&d, &o),
            Step::RemoveMember {
                id: 100,
                name: "demo-0".into()
            }
        );
    }

    #[test]
    fn a_swap_waits_for_every_member_healthy_and_ready() {
        let (d, mut o) = changed("1Gi", Some("fast"), false);
        recreated(&d, &mut o);
        o.pods.get_mut(&1).unwrap().ready = false;
        let step = plan(&d, &o);
        assert!(
            matches!(&step, Step::Wait { .. }),
            "a member not ready: {step:?}"
        );
        let (d, mut o) = changed("1Gi", Some("fast"), false);
        recreated(&d, &mut o);
        cluster(&mut o).members[1].healthy = false;
        assert!(!matches!(plan(&d, &o), Step::RemoveMember { .. }));
    }

    #[test]
    fn a_single_member_is_never_swapped() {
        let before = desired(1);
        let mut o = healthy(&before, 1);
        let mut d = before;
        d.storage = Storage::Volume {
            size: "1Gi".into(),
            class: Some("fast".into()),
        };
        recreated(&d, &mut o);
        let step = plan(&d, &o);
        assert!(
            matches!(&step, Step::Hold { message, .. } if message.contains("only member") && message.contains("--replicas 3")),
            "{step:?}"
        );
    }

    #[test]
    fn a_refilled_slot_is_finished_before_the_next_member_moves() {
        let (d, mut o) = changed("1Gi", Some("fast"), false);
        recreated(&d, &mut o);
        // demo-2 was removed; its slot is being refilled (a crash may have come anywhere).
        cluster(&mut o).members.retain(|m| m.ordinal != Some(2));
        let step = plan(&d, &o);
        assert!(
            !matches!(step, Step::RemoveMember { .. }),
            "a second member removed while a slot is empty: {step:?}"
        );
    }

    #[test]
    fn without_a_class_in_the_spec_the_volumes_class_stands() {
        let (d, o) = changed("1Gi", None, false);
        assert_eq!(plan(&d, &o), Step::Idle);
        assert!(!class_needed(&d, o.statefulset.as_ref(), &o.volumes));
        let (d, o) = changed("2Gi", None, false);
        assert!(class_needed(&d, o.statefulset.as_ref(), &o.volumes));
    }

    #[test]
    fn dry_run_lines_name_the_path_and_why() {
        let (d, o) = changed("2Gi", None, false);
        let lines = describe(&d, &o);
        assert!(lines[0].contains("2Gi of the default class"), "{lines:?}");
        assert!(
            lines[1].contains("one at a time")
                && lines[1].contains("does not allow volume expansion"),
            "{lines:?}"
        );
        let (d, o) = changed("1Gi", Some("fast"), true);
        assert!(describe(&d, &o)[1].contains("the class changes"));
    }

    /// Every claim asked for 2Gi `ago` (`None`: without the mark); each still has 1Gi.
    fn grown_without_capacity(ago: Option<i64>) -> (Desired, Observed) {
        let (d, mut o) = changed("2Gi", None, true);
        recreated(&d, &mut o);
        for v in o.volumes.values_mut() {
            v.size = Some("2Gi".into());
            v.grow_asked = ago.map(|s| o.now - jiff::SignedDuration::from_secs(s));
        }
        (d, o)
    }

    #[test]
    fn an_expansion_whose_capacity_never_shows_holds_naming_the_claim_and_the_fix() {
        let (d, o) = grown_without_capacity(Some(60));
        let step = plan(&d, &o);
        assert!(
            matches!(&step, Step::Wait { reason: Reason::ResizingStorage, message } if message.contains("capacity 1Gi so far")),
            "{step:?}"
        );
        for ago in [Some(EXPANSION_PATIENCE.as_secs() + 1), None] {
            let (d, o) = grown_without_capacity(ago);
            let step = plan(&d, &o);
            let Step::Hold { reason, message } = &step else {
                panic!("{ago:?}: {step:?}");
            };
            assert_eq!(*reason, Reason::ResizingStorage);
            assert!(
                message.contains(&objects::volume_name(&d.name, 0))
                    && message.contains("spec.storage.size back to 1Gi")
                    && message.contains("kubectl etcd scale demo --storage 1Gi")
                    && message.contains("resizer"),
                "{message}"
            );
        }
    }

    #[test]
    fn an_expansion_waited_for_stops_no_later_rule() {
        // A voter not ready (a rule after the storage rules) and a due certificate: both still
        // planned while the capacity is waited for, and after the hold.
        for ago in [60, EXPANSION_PATIENCE.as_secs() + 1] {
            let (d, mut o) = grown_without_capacity(Some(ago));
            o.pods.get_mut(&1).unwrap().ready = false;
            let step = plan(&d, &o);
            assert!(
                matches!(
                    &step,
                    Step::Wait {
                        reason: Reason::MembersNotReady,
                        ..
                    }
                ),
                "{ago}: {step:?}"
            );
        }
    }

    #[test]
    fn the_size_set_back_to_what_the_claims_have_ends_the_hold() {
        let (mut d, mut o) = grown_without_capacity(Some(EXPANSION_PATIENCE.as_secs() + 1));
        let sts = o.statefulset.as_mut().unwrap();
        sts.volume_capacity = crate::model::smallest_capacity(&o.volumes).cloned();
        d.storage = Storage::Volume {
            size: "1Gi".into(),
            class: None,
        };
        let d = crate::model::keep_immutable(d, o.statefulset.as_ref());
        assert!(d.refused.is_empty(), "{:?}", d.refused);
        assert!(matches!(
            plan(&d, &o),
            Step::RecreateStatefulSet { replicas: 3, .. }
        ));
        recreated(&d, &mut o);
        assert_eq!(plan(&d, &o), Step::Idle);
        // Below what the claims have is still a shrink.
        let mut small = d.clone();
        small.storage = Storage::Volume {
            size: "512Mi".into(),
            class: None,
        };
        let small = crate::model::keep_immutable(small, o.statefulset.as_ref());
        assert!(
            small.refused[0]
                .message
                .contains("shrink from 1Gi to 512Mi"),
            "{:?}",
            small.refused
        );
    }
}
