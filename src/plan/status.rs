//! Status derivation: desired, observed and the chosen step in, the status to write out.
//!
//! Pure: `now` is passed in. Condition transition times only move when a condition's status flips.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::Step;
use crate::api::{EtcdClusterStatus, MemberStatus, Phase, Reason, condition};
use crate::model::{Desired, EtcdView, Observed, fmt_id};
use crate::objects;

fn cond(
    prev: &[Condition],
    type_: &str,
    on: bool,
    reason: Reason,
    message: String,
    generation: i64,
    now: jiff::Timestamp,
) -> Condition {
    let status = if on { "True" } else { "False" };
    let last = prev
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .map(|c| c.last_transition_time.clone())
        .unwrap_or(Time(now));
    Condition {
        type_: type_.to_string(),
        status: status.into(),
        reason: reason.as_str().into(),
        message,
        observed_generation: Some(generation),
        last_transition_time: last,
    }
}

/// Builds the status the engine writes after a pass that chose `step`.
pub fn derive_status(
    d: &Desired,
    o: &Observed,
    step: &Step,
    prev: Option<&EtcdClusterStatus>,
    now: jiff::Timestamp,
) -> EtcdClusterStatus {
    let prev_conds: &[Condition] = prev.map_or(&[], |p| &p.conditions);
    let mut st = EtcdClusterStatus {
        selector: Some(objects::selector_string(&d.name)),
        observed_generation: Some(d.generation),
        message: Some(step.to_string()),
        ..Default::default()
    };
    let mut voters = 0usize;
    let mut healthy = 0usize;
    let lost_since = super::lost_since(o);
    if let EtcdView::Reached(c) = &o.etcd {
        st.cluster_id = Some(fmt_id(c.cluster_id));
        let mut members: Vec<MemberStatus> = c
            .members
            .iter()
            .map(|m| MemberStatus {
                name: super::member_name(d, m),
                id: fmt_id(m.id),
                peer_url: m.peer_url.clone(),
                learner: m.learner,
                leader: c.leader == Some(m.id),
                version: m.status.as_ref().map(|s| s.version.clone()),
                healthy: m.healthy,
                // Rounded down to MiB, and no raft index: status changes only when something a
                // reader acts on changes, not with every write to etcd.
                db_size: m.status.as_ref().map(|s| s.db_size >> 20 << 20),
                raft_index: None,
                error: m.error.clone(),
                lost_since: m
                    .ordinal
                    .and_then(|k| lost_since.get(&k))
                    .map(|t| k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(*t)),
            })
            .collect();
        members.sort_by_key(|m| objects::ordinal_of_pod(&d.name, &m.name).unwrap_or(u32::MAX));
        voters = c.voters().count();
        healthy = c.voters().filter(|m| m.healthy).count();
        st.version = c
            .members
            .iter()
            .filter_map(|m| {
                m.status
                    .as_ref()
                    .and_then(|s| crate::model::Version::parse(&s.version))
            })
            .min()
            .map(|v| v.to_string());
        // Read from the members (`/version`); kept from the last status while none says.
        st.cluster_version = c
            .cluster_version()
            .map(|v| v.to_string())
            .or_else(|| prev.and_then(|p| p.cluster_version.clone()));
        st.replicas = members.len() as i32;
        st.ready_replicas = healthy as i32;
        st.members = members;
    } else if let Some(p) = prev {
        // Nobody answered: keep the last member list so users still see who should be there,
        // but mark nobody healthy.
        st.members = p
            .members
            .iter()
            .cloned()
            .map(|mut m| {
                m.healthy = false;
                m
            })
            .collect();
        st.replicas = p.replicas;
        st.cluster_id = p.cluster_id.clone();
        st.version = p.version.clone();
        st.cluster_version = p.cluster_version.clone();
    }

    let g = d.generation;
    let r = step.reason();
    let msg = step.to_string();
    let converged = matches!(step, Step::Idle);
    let ready =
        voters > 0 && healthy >= super::quorum(voters) && !matches!(step, Step::Hold { .. });
    // A wait counts as part of what it waits for: its typed reason says which.
    let waiting_for =
        |reasons: &[Reason]| matches!(step, Step::Wait { reason, .. } if reasons.contains(reason));
    let scaling = matches!(
        step,
        Step::AddLearner { .. }
            | Step::PromoteLearner { .. }
            | Step::RemoveMember { .. }
            | Step::ResizeStatefulSet { .. }
            | Step::DeleteVolume { .. }
            | Step::MoveLeader { .. }
            | Step::WriteConfig {
                why: super::ConfigChange::Joins,
                ..
            }
    ) || waiting_for(&[
        Reason::AddingLearner,
        Reason::PromotingLearner,
        Reason::ResizingWorkload,
        Reason::CleaningUp,
    ]) || (voters > 0
        && voters != d.replicas as usize
        && !matches!(step, Step::Hold { .. } | Step::Paused));
    let version_change = super::upgrade::condition(d, o, step);
    let upgrading = version_change.as_ref().is_some_and(|c| c.0)
        || matches!(
            step,
            Step::UpdateTemplate { .. }
                | Step::RestartMember {
                    why: super::Restart::NewTemplate,
                    ..
                }
        )
        || waiting_for(&[Reason::RollingMembers]);
    let recovering = matches!(
        step,
        Step::ApplySupportingObjects
            | Step::WipeMember { .. }
            | Step::RestartMember {
                why: super::Restart::Rejoin | super::Restart::NewVolume,
                ..
            }
            | Step::WriteConfig {
                why: super::ConfigChange::Repair,
                ..
            }
    ) || waiting_for(&[Reason::ReplacingMember])
        || matches!(
            step,
            Step::Hold {
                reason: Reason::ClientsFenced,
                ..
            }
        )
        || matches!(step, Step::ResizeStatefulSet { from, to } if to > from)
            && !matches!(o.etcd, EtcdView::Reached(_))
            && !o.volumes.is_empty();
    // A full database being healed, a quota raised for it rolling out, or one held as full.
    let maintaining = super::nospace::is_maintenance(step)
        || waiting_for(&[
            Reason::Compacting,
            Reason::Defragmenting,
            Reason::DisarmingAlarm,
        ])
        || !o.nospace.is_empty();
    let maintaining_reason = if super::nospace::is_maintenance(step) {
        r
    } else if d.quota_raised_from.is_some() {
        Reason::QuotaRaised
    } else {
        r
    };
    let unreachable = waiting_for(&[Reason::EtcdUnreachable]);
    let degraded =
        matches!(step, Step::Hold { .. }) || (voters > 0 && healthy < voters) || unreachable;
    let bootstrapping = matches!(
        step,
        Step::Bootstrap { .. }
            | Step::WriteConfig {
                why: super::ConfigChange::Bootstrapped,
                ..
            }
    ) || waiting_for(&[Reason::Bootstrapping]);

    let degraded_reason = match step {
        Step::Hold { reason, .. } => *reason,
        _ if unreachable => Reason::EtcdUnreachable,
        _ if waiting_for(&[Reason::QuorumLost]) => Reason::QuorumLost,
        _ if degraded => Reason::MembersUnhealthy,
        _ => Reason::AllMembersHealthy,
    };
    let degraded_msg = if degraded {
        match step {
            Step::Hold { .. } => msg.clone(),
            _ => format!("{healthy} of {voters} voting members healthy"),
        }
    } else {
        format!("{healthy} of {voters} voting members healthy")
    };
    st.conditions = vec![
        cond(
            prev_conds,
            condition::READY,
            ready,
            if ready { Reason::AllMembersHealthy } else { r },
            if ready {
                format!(
                    "{healthy} of {voters} voting members healthy; quorum {}",
                    super::quorum(voters.max(1))
                )
            } else {
                msg.clone()
            },
            g,
            now,
        ),
        cond(
            prev_conds,
            condition::SCALING,
            scaling,
            if scaling { r } else { Reason::AsDesired },
            if scaling {
                msg.clone()
            } else {
                format!("{voters} voting members as desired")
            },
            g,
            now,
        ),
        match version_change {
            Some((on, reason, message)) => cond(
                prev_conds,
                condition::UPGRADING,
                on,
                reason,
                message,
                g,
                now,
            ),
            None => cond(
                prev_conds,
                condition::UPGRADING,
                upgrading,
                if upgrading { r } else { Reason::AsDesired },
                if upgrading {
                    msg.clone()
                } else {
                    "every member runs the current template".into()
                },
                g,
                now,
            ),
        },
        cond(
            prev_conds,
            condition::RECOVERING,
            recovering,
            if recovering { r } else { Reason::AsDesired },
            if recovering {
                msg.clone()
            } else {
                "nothing to recover".into()
            },
            g,
            now,
        ),
        cond(
            prev_conds,
            condition::DEGRADED,
            degraded,
            degraded_reason,
            degraded_msg,
            g,
            now,
        ),
        cond(
            prev_conds,
            condition::SPEC_REFUSED,
            !d.refused.is_empty(),
            if d.refused.is_empty() {
                Reason::AsDesired
            } else {
                Reason::ImmutableField
            },
            if d.refused.is_empty() {
                "every spec field is in effect".into()
            } else {
                d.refused
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            },
            g,
            now,
        ),
        cond(
            prev_conds,
            condition::MAINTAINING,
            maintaining,
            if maintaining {
                maintaining_reason
            } else {
                Reason::AsDesired
            },
            if maintaining {
                msg.clone()
            } else {
                "no maintenance under way".into()
            },
            g,
            now,
        ),
    ];
    // From the backup records this pass observed (`plan::backup`), never carried over.
    let (backup, healthy) = super::backup::status(d, o, prev_conds);
    st.backup = backup;
    st.conditions.extend(healthy);
    st.restored_from = d.restore.as_ref().map(|r| r.url.clone());
    st.upgrade = super::upgrade::record(d, o, step, prev.and_then(|p| p.upgrade.as_ref()));
    st.maintenance = super::nospace::record(d, o, step, prev.and_then(|p| p.maintenance.as_ref()));
    st.phase = Some(match step {
        Step::Paused => Phase::Paused,
        Step::Hold { .. } => Phase::Degraded,
        _ if o.statefulset.is_none() && o.volumes.is_empty() || (!ready && bootstrapping) => {
            Phase::Creating
        }
        _ if upgrading => Phase::Upgrading,
        _ if scaling => Phase::Scaling,
        _ if degraded => Phase::Degraded,
        _ if converged || ready => Phase::Running,
        _ => Phase::Creating,
    });
    st
}

/// Whether `status` says the engine converged on `generation`: it observed that generation, the
/// cluster is Ready, and nothing is scaling, upgrading, recovering or degraded. What a driver
/// waiting on another driver's status reads (typed conditions, not the message text).
pub fn converged(status: &EtcdClusterStatus, generation: Option<i64>) -> bool {
    let is = |type_: &str, want: &str| {
        status
            .conditions
            .iter()
            .any(|c| c.type_ == type_ && c.status == want && c.observed_generation == generation)
    };
    status.observed_generation == generation
        && is(condition::READY, "True")
        && [
            condition::SCALING,
            condition::UPGRADING,
            condition::RECOVERING,
            condition::DEGRADED,
            // A requested defragmentation (or a full database) under way is not converged.
            condition::MAINTAINING,
        ]
        .iter()
        .all(|t| is(t, "False"))
}
