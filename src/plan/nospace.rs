//! A full database (NOSPACE) healed without a human.
//!
//! Pure: no client, no clock. What was done is recorded in `status.maintenance` (`record`) and
//! read back by the next pass (`Observed::maintenance`); `settle` puts a raised quota into the
//! template, as `upgrade::settle` puts a version.
//!
//! ```text
//!   NOSPACE ─▶ Compact(revision) ─▶ Defragment(each member: learners, followers, the leader last;
//!              each only while every voter answers) ─▶ DisarmNospace (every member < 90 % of quota)
//!     still ≥ 90 % ─▶ RaiseQuota(+50 %, at most what the volumes hold, once per spec quota)
//!                     ─▶ UpdateTemplate ─▶ RestartMember…
//!                     ─▶ DisarmNospace
//!     still ≥ 90 % at the raised quota ─▶ Hold(DatabaseFull): the numbers and the choices
//!   keys deleted meanwhile (the revision moved past the compaction) ─▶ Compact again
//! ```
//! Nothing loops: each member is defragmented once per compaction, the quota is raised once, and
//! a new compaction needs a new revision (under NOSPACE only deletes make one).

use super::{Step, Trigger, hold, reached, wait};
use crate::api::{MaintenanceStatus, QuotaRaise, Reason};
use crate::model::{ClusterView, DEFAULT_QUOTA_BYTES, Desired, MemberView, Observed};

/// A member at or above this share of its quota is full: disarming would let the next writes
/// raise the alarm again at once (the `defrag` verb's rule).
pub const FULL_PERCENT: i64 = 90;

/// The quota the engine raises a full database's to: half as much again.
pub fn raised(quota: i64) -> i64 {
    quota.saturating_add(quota / 2)
}

/// The quota the members run with (etcd's default when the spec names none).
pub fn quota(d: &Desired) -> i64 {
    d.quota_backend_bytes
        .filter(|q| *q > 0)
        .unwrap_or(DEFAULT_QUOTA_BYTES)
}

/// The spec's quota, raised or not.
fn spec_quota(d: &Desired) -> i64 {
    d.quota_raised_from.unwrap_or_else(|| quota(d))
}

/// The biggest quota the members' volumes hold (`model::quota_fitting`); none without volumes.
pub(super) fn volume_room(d: &Desired) -> Option<i64> {
    let crate::model::Storage::Volume { size, .. } = &d.storage else {
        return None;
    };
    Some(crate::model::quota_fitting(size.signed_bytes()))
}

fn full(d: &Desired, db_size: i64) -> bool {
    db_size >= quota(d) / 100 * FULL_PERCENT
}

pub(super) fn mib(bytes: i64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// Defragmentation order, as the `defrag` verb's: learners, then followers by ordinal, the
/// leader last (a defragmenting member answers nobody; moving leadership for it costs more).
pub fn defrag_order(c: &ClusterView) -> Vec<&MemberView> {
    let mut ms: Vec<&MemberView> = c.members.iter().filter(|m| m.ordinal.is_some()).collect();
    ms.sort_by_key(|m| (c.leader == Some(m.id), !m.learner, m.ordinal));
    ms
}

/// The quota the template runs: the spec's, or the one raised for a full database while the
/// spec's is still the one it was raised from.
pub fn settle(mut d: Desired, o: &Observed) -> Desired {
    let Some(r) = o.maintenance.as_ref().and_then(|m| m.quota_raised.as_ref()) else {
        return d;
    };
    if quota(&d) != r.from_bytes || r.to_bytes <= r.from_bytes {
        return d;
    }
    d.etcd_flags
        .retain(|f| !f.starts_with("--quota-backend-bytes="));
    d.etcd_flags
        .insert(0, format!("--quota-backend-bytes={}", r.to_bytes));
    d.quota_backend_bytes = Some(r.to_bytes);
    d.quota_raised_from = Some(r.from_bytes);
    d
}

/// A member's pod runs an older template: a rollout (a raised quota) is under way.
fn rolling(o: &Observed) -> bool {
    let Some(rev) = o
        .statefulset
        .as_ref()
        .and_then(|s| s.update_revision.as_ref())
    else {
        return false;
    };
    o.pods
        .values()
        .any(|p| p.revision.as_ref().is_some_and(|r| r != rev))
}

/// NOSPACE is raised: the next step of healing it (see the module's diagram).
pub fn full_database(d: &Desired, o: &Observed) -> Option<Step> {
    let c = reached(o)?;
    if o.nospace.is_empty() {
        return None;
    }
    // A rollout goes first: `stale_members` restarts members whose only trouble is the alarm.
    if rolling(o) {
        return None;
    }
    if let Some(silent) = c.voters().find(|m| m.status.is_none()) {
        return Some(wait(
            Reason::MembersUnhealthy,
            format!(
                "NOSPACE: compaction and defragmentation wait for {} to answer (a defragmenting \
                 member answers nobody, so every other voter must)",
                super::member_name(d, silent)
            ),
        ));
    }
    let rec = o.maintenance.clone().unwrap_or_default();
    // A new revision under NOSPACE means deleted keys: compact again to free them.
    if rec.compacted_to.is_none_or(|r| r < o.revision) {
        if o.revision <= 0 {
            return Some(wait(
                Reason::Compacting,
                "NOSPACE: the current revision is not known yet",
            ));
        }
        return Some(Step::Compact {
            revision: o.revision,
            why: Trigger::Nospace,
        });
    }
    if let Some(m) = defrag_order(c)
        .into_iter()
        .find(|m| m.status.is_some() && !rec.defragmented.contains(&super::member_name(d, m)))
    {
        return Some(Step::Defragment {
            ordinal: m.ordinal.unwrap_or_default(),
            id: m.id,
            name: super::member_name(d, m),
            why: Trigger::Nospace,
        });
    }
    let fullest = c
        .members
        .iter()
        .filter_map(|m| Some((m, m.status.as_ref()?)))
        .filter(|(_, s)| full(d, s.db_size))
        .max_by_key(|(_, s)| s.db_size);
    let Some((m, s)) = fullest else {
        return Some(Step::DisarmNospace {
            members: o.nospace.clone(),
        });
    };
    let spec = spec_quota(d);
    let raised_once = d.quota_raised_from.is_some()
        || rec
            .quota_raised
            .as_ref()
            .is_some_and(|r| r.from_bytes == spec);
    let q = quota(d);
    // Never past what the volumes hold: a full quota makes etcd read-only, a full volume stops
    // it on every member at once.
    let room = volume_room(d);
    let to = raised(q).min(room.unwrap_or(i64::MAX));
    if !raised_once && to > q {
        return Some(Step::RaiseQuota { from: q, to });
    }
    let then = match (&d.storage, room) {
        (crate::model::Storage::Volume { size, .. }, Some(room)) if !raised_once => format!(
            "volumes of {size} hold no bigger quota (up to {}: etcd needs room for its WAL and a \
             second copy of the database); etcd refuses writes until spec.storage.size grows (to \
             at least {}Mi for a {} quota) and spec.etcd.quotaBackendBytes with it",
            mib(room),
            crate::model::volume_fitting(raised(q)) >> 20,
            mib(raised(q)),
        ),
        _ => format!(
            "the engine already raised the quota once (spec.etcd.quotaBackendBytes {}); etcd \
             refuses writes until spec.etcd.quotaBackendBytes is raised (the members restart one \
             at a time)",
            mib(spec)
        ),
    };
    Some(hold(
        Reason::DatabaseFull,
        format!(
            "the database is full of live data: {} holds {} ({} in use) of its {} quota after \
             compaction to revision {} and defragmentation of every member, and {then}, or keys \
             are deleted (etcd accepts deletes; the engine then compacts and defragments again)",
            super::member_name(d, m),
            mib(s.db_size),
            mib(s.db_size_in_use),
            mib(q),
            rec.compacted_to.unwrap_or_default(),
        ),
    ))
}

/// `status.maintenance` after a pass that chose `step`: what was done for the alarm being
/// healed (cleared once no alarm is raised), and a raised quota while it is in effect.
pub fn record(
    d: &Desired,
    o: &Observed,
    step: &Step,
    prev: Option<&MaintenanceStatus>,
) -> Option<MaintenanceStatus> {
    let mut m = prev.cloned().unwrap_or_default();
    let c = reached(o);
    if let Some(r) = &m.quota_raised {
        // Back to the spec's quota once it changed (the human's decision replaces ours), or once
        // the database holds less than half of it again (after a defragmentation).
        let roomy = c.is_some_and(|c| {
            o.nospace.is_empty()
                && c.members.iter().all(|x| {
                    x.status
                        .as_ref()
                        .is_some_and(|s| s.db_size < r.from_bytes / 2)
                })
        });
        if spec_quota(d) != r.from_bytes || roomy {
            m.quota_raised = None;
        }
    }
    m.defrag = super::maintenance::record(d, o, step, m.defrag.take());
    match step {
        Step::Compact {
            revision,
            why: Trigger::Nospace,
        } => {
            m.compacted_to = Some(*revision);
            m.defragmented.clear();
        }
        Step::Defragment {
            name,
            why: Trigger::Nospace,
            ..
        } if !m.defragmented.contains(name) => m.defragmented.push(name.clone()),
        Step::Defragment {
            why: Trigger::Nospace,
            ..
        } => {}
        Step::RaiseQuota { from, to } => {
            m.quota_raised = Some(QuotaRaise {
                from_bytes: *from,
                to_bytes: *to,
            });
        }
        _ if c.is_some() && o.nospace.is_empty() => {
            m.compacted_to = None;
            m.defragmented.clear();
        }
        _ => {}
    }
    (m != MaintenanceStatus::default()).then_some(m)
}

/// Whether the step heals a full database or defragments (the `Maintaining` condition).
pub fn is_maintenance(step: &Step) -> bool {
    matches!(
        step,
        Step::Compact { .. }
            | Step::Defragment { .. }
            | Step::DisarmNospace { .. }
            | Step::RaiseQuota { .. }
            | Step::Hold {
                reason: Reason::DatabaseFull,
                ..
            }
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::{cluster, healthy};
    use super::super::{derive_status, plan};
    use super::*;
    use crate::api::condition;

    const MIB: i64 = 1 << 20;

    fn desired() -> Desired {
        crate::fixtures::cluster("demo")
            .replicas(3)
            .spec(|s| s.etcd.quota_backend_bytes = Some(16 * MIB))
            .desired()
    }

    /// Three members (leader demo-0) at the 16 MiB quota with NOSPACE raised, each database
    /// `size` bytes of which `in_use` hold data, at revision 500.
    fn full(d: &Desired, size: i64, in_use: i64) -> Observed {
        let mut o = healthy(d, 3);
        for m in &mut cluster(&mut o).members {
            (m.healthy, m.alarmed) = (false, true);
            let s = m.status.as_mut().unwrap();
            (s.db_size, s.db_size_in_use) = (size, in_use);
        }
        o.nospace = vec![100];
        o.revision = 500;
        o
    }

    fn set_db(o: &mut Observed, size: i64, in_use: i64) {
        for m in &mut cluster(o).members {
            let s = m.status.as_mut().unwrap();
            (s.db_size, s.db_size_in_use) = (size, in_use);
        }
    }

    /// Plans, and records the step in `o.maintenance` as the status of the pass would.
    fn pass(d: &Desired, o: &mut Observed) -> Step {
        let d = settle(d.clone(), o);
        let step = plan(&d, o);
        o.maintenance = record(&d, o, &step, o.maintenance.as_ref());
        step
    }

    #[test]
    fn nospace_compacts_then_defragments_followers_first_the_leader_last_then_disarms() {
        let d = desired();
        let mut o = full(&d, 16 * MIB, 16 * MIB);
        assert_eq!(
            pass(&d, &mut o),
            Step::Compact {
                revision: 500,
                why: Trigger::Nospace
            }
        );
        // Compaction frees pages; the files keep their size until defragmented.
        set_db(&mut o, 16 * MIB, 2 * MIB);
        let mut order = Vec::new();
        loop {
            match pass(&d, &mut o) {
                Step::Defragment { name, ordinal, .. } => {
                    let s = cluster(&mut o)
                        .member_at(ordinal)
                        .and_then(|m| m.status.clone())
                        .unwrap();
                    assert!(s.db_size > 0);
                    for m in &mut cluster(&mut o).members {
                        if m.ordinal == Some(ordinal) {
                            m.status.as_mut().unwrap().db_size = 2 * MIB;
                        }
                    }
                    order.push(name);
                }
                Step::DisarmNospace { members } => {
                    assert_eq!(members, vec![100]);
                    break;
                }
                other => panic!("{other:?} after {order:?}"),
            }
        }
        assert_eq!(order, ["demo-1", "demo-2", "demo-0"], "the leader last");
        // The alarm is gone: the record of the healing goes with it.
        o.nospace.clear();
        for m in &mut cluster(&mut o).members {
            (m.healthy, m.alarmed) = (true, false);
        }
        assert_eq!(pass(&d, &mut o), Step::Idle);
        assert_eq!(o.maintenance, None);
    }

    #[test]
    fn nospace_waits_while_a_voter_does_not_answer_so_a_defragmentation_never_costs_quorum() {
        let d = desired();
        let mut o = full(&d, 16 * MIB, 16 * MIB);
        cluster(&mut o).members[2].status = None;
        let step = plan(&d, &o);
        assert!(
            matches!(&step, Step::Wait { message, .. } if message.contains("demo-2")),
            "{step:?}"
        );
        // Mid-way too: nothing is defragmented while another voter is silent.
        o.maintenance = Some(MaintenanceStatus {
            compacted_to: Some(500),
            defragmented: vec!["demo-1".into()],
            ..Default::default()
        });
        assert!(matches!(plan(&d, &o), Step::Wait { .. }));
    }

    #[test]
    fn a_database_still_full_gets_its_quota_raised_once_then_is_held_with_the_numbers() {
        let d = desired();
        // Live data: compaction and defragmentation free nothing.
        let mut o = full(&d, 15 * MIB, 15 * MIB);
        assert!(matches!(pass(&d, &mut o), Step::Compact { .. }));
        for _ in 0..3 {
            assert!(matches!(pass(&d, &mut o), Step::Defragment { .. }));
        }
        let step = pass(&d, &mut o);
        assert_eq!(
            step,
            Step::RaiseQuota {
                from: 16 * MIB,
                to: 24 * MIB
            }
        );
        assert!(step.to_string().contains("from 16 to 24 MiB"), "{step}");
        // The next pass's template runs the raised quota (a rolling restart), the spec keeps 16.
        let raised = settle(d.clone(), &o);
        assert!(
            raised
                .etcd_flags
                .contains(&format!("--quota-backend-bytes={}", 24 * MIB))
        );
        assert_ne!(
            crate::objects::template_hash(&raised),
            crate::objects::template_hash(&d)
        );
        assert!(matches!(pass(&d, &mut o), Step::UpdateTemplate { .. }));
        o.statefulset.as_mut().unwrap().template_hash =
            Some(crate::objects::template_hash(&raised));
        // Rolled out; 15 MiB of 24: below 90 %, so the alarm is disarmed.
        assert!(matches!(pass(&d, &mut o), Step::DisarmNospace { .. }));
        // Full again at the raised quota: held with the numbers and the choices, never raised
        // twice, never looped on.
        set_db(&mut o, 23 * MIB, 23 * MIB);
        let step = pass(&d, &mut o);
        let Step::Hold {
            reason: Reason::DatabaseFull,
            message,
        } = &step
        else {
            panic!("{step:?}")
        };
        assert!(
            message.contains("23.0 MiB")
                && message.contains("24.0 MiB")
                && message.contains("spec.etcd.quotaBackendBytes")
                && message.contains("deleted"),
            "{message}"
        );
        assert_eq!(pass(&d, &mut o), step, "the hold stays a hold");
        // Keys deleted (a new revision): compacted and defragmented again.
        o.revision = 600;
        assert_eq!(
            pass(&d, &mut o),
            Step::Compact {
                revision: 600,
                why: Trigger::Nospace
            }
        );
    }

    #[test]
    fn a_quota_is_raised_only_as_far_as_the_volumes_hold_it() {
        // 1 GiB volumes hold a 320 MiB quota: 256 MiB is raised to 320, not 384.
        let d = crate::fixtures::cluster("demo")
            .replicas(3)
            .spec(|s| s.etcd.quota_backend_bytes = Some(256 * MIB))
            .desired();
        let mut o = full(&d, 250 * MIB, 250 * MIB);
        while !matches!(
            pass(&d, &mut o),
            Step::RaiseQuota { .. } | Step::Hold { .. }
        ) {}
        assert_eq!(
            o.maintenance
                .as_ref()
                .and_then(|m| m.quota_raised.as_ref())
                .map(|r| r.to_bytes),
            Some(320 * MIB)
        );
        // 320 MiB on 1 GiB volumes (what a new cluster gets): no room to raise, held with the
        // size that would hold more.
        let d = crate::fixtures::cluster("demo")
            .replicas(3)
            .spec(crate::model::new_cluster_defaults)
            .desired();
        let mut o = full(&d, 315 * MIB, 315 * MIB);
        let step = loop {
            if let s @ (Step::RaiseQuota { .. } | Step::Hold { .. }) = pass(&d, &mut o) {
                break s;
            }
        };
        let Step::Hold {
            reason: Reason::DatabaseFull,
            message,
        } = &step
        else {
            panic!("{step:?}")
        };
        assert!(
            message.contains("volumes of 1Gi hold no bigger quota (up to 320.0 MiB")
                && message.contains("at least 1344Mi for a 480.0 MiB quota"),
            "{message}"
        );
        assert_eq!(pass(&d, &mut o), step, "the hold stays a hold");
    }

    #[test]
    fn a_raised_quota_gives_way_to_a_new_spec_quota_and_to_a_roomy_database() {
        let d = desired();
        let mut o = full(&d, 15 * MIB, 15 * MIB);
        o.maintenance = Some(MaintenanceStatus {
            quota_raised: Some(QuotaRaise {
                from_bytes: 16 * MIB,
                to_bytes: 24 * MIB,
            }),
            ..Default::default()
        });
        assert_eq!(settle(d.clone(), &o).quota_backend_bytes, Some(24 * MIB));
        // The human raised the spec's quota: theirs applies, ours is dropped.
        let bigger = crate::fixtures::cluster("demo")
            .replicas(3)
            .spec(|s| s.etcd.quota_backend_bytes = Some(64 * MIB))
            .desired();
        let b = settle(bigger.clone(), &o);
        assert_eq!(b.quota_backend_bytes, Some(64 * MIB));
        assert_eq!(record(&b, &o, &Step::Idle, o.maintenance.as_ref()), None);
        // No alarm, and every database under half the spec's quota: back to the spec's.
        o.nospace.clear();
        set_db(&mut o, 7 * MIB, 7 * MIB);
        let s = settle(d.clone(), &o);
        assert_eq!(record(&s, &o, &Step::Idle, o.maintenance.as_ref()), None);
        set_db(&mut o, 9 * MIB, 9 * MIB);
        assert!(record(&s, &o, &Step::Idle, o.maintenance.as_ref()).is_some());
    }

    #[test]
    fn the_status_apply_clears_a_finished_healing() {
        // Status is applied whole by the engine: a field it leaves out is removed.
        use crate::api::{EtcdCluster, EtcdClusterStatus};
        use crate::apply::status_document;
        let none = status_document::<EtcdCluster>(&EtcdClusterStatus::default()).unwrap();
        assert!(none["status"].get("maintenance").is_none(), "{none}");
        let raised_only = status_document::<EtcdCluster>(&EtcdClusterStatus {
            maintenance: Some(MaintenanceStatus {
                quota_raised: Some(QuotaRaise::default()),
                ..Default::default()
            }),
            ..Default::default()
        })
        .unwrap();
        let m = &raised_only["status"]["maintenance"];
        assert!(m.get("compactedTo").is_none(), "{m}");
        assert_eq!(m["defragmented"], serde_json::json!([]));
    }

    #[test]
    fn maintaining_says_what_the_engine_does_about_a_full_database() {
        let d = desired();
        let o = full(&d, 16 * MIB, 2 * MIB);
        let step = Step::Defragment {
            ordinal: 1,
            id: 101,
            name: "demo-1".into(),
            why: Trigger::Nospace,
        };
        let st = derive_status(
            &d,
            &o,
            &step,
            None,
            jiff::Timestamp::from_second(1).unwrap(),
        );
        let c = st
            .conditions
            .iter()
            .find(|c| c.type_ == condition::MAINTAINING)
            .unwrap();
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", "Defragmenting")
        );
        assert!(c.message.contains("defragment demo-1"), "{}", c.message);
        let idle = derive_status(
            &d,
            &healthy(&d, 3),
            &Step::Idle,
            None,
            jiff::Timestamp::from_second(1).unwrap(),
        );
        let c = idle
            .conditions
            .iter()
            .find(|c| c.type_ == condition::MAINTAINING)
            .unwrap();
        assert_eq!(c.status, "False");
    }
}
