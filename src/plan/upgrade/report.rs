//! How a version change is reported: the Upgrading condition, `status.upgrade` (`record`) and
//! the lines `kubectl etcd status` prints (`describe`).

use crate::api::{Reason, UpgradeStatus, upgrade_state};
use crate::model::{Desired, EtcdView, MemberView, Observed, Version, VersionChange};

use super::paths::{CAUGHT_UP_ENTRIES, PathKind, check_step};
use super::running;
use super::{Restart, Step};

/// The Upgrading condition while a version change is in effect: (true?, reason, message), or
/// `None` to leave it to the general derivation.
pub fn condition(d: &Desired, o: &Observed, step: &Step) -> Option<(bool, Reason, String)> {
    match &d.upgrade {
        VersionChange::Steady => None,
        VersionChange::Blocked { why, .. } => Some((false, Reason::UpgradeBlocked, why.clone())),
        VersionChange::RolledBack { from, to, why } => {
            if rolled_back_everywhere(d, o, *from) && !step.is_change() {
                Some((
                    false,
                    Reason::RolledBack,
                    format!(
                        "the upgrade from {from} to {to} was rolled back: {why}; every member runs {from}. \
                         Fix the cause and set spec.version again, or set it back to {from}"
                    ),
                ))
            } else {
                Some((
                    true,
                    Reason::RollingBack,
                    format!("rolling back from {to} to {from} ({why}): {step}"),
                ))
            }
        }
        VersionChange::Moving { from, to } => match step {
            Step::RollBack { .. } => Some((true, Reason::RollingBack, step.to_string())),
            Step::RestartMember {
                pod,
                why: Restart::NewTemplate,
                ..
            } => Some((
                true,
                Reason::UpgradingMember,
                format!(
                    "{} {pod} from {from} to {to}",
                    if to < from {
                        "downgrading"
                    } else {
                        "upgrading"
                    }
                ),
            )),
            Step::MoveLeader { from: m, .. } => Some((
                true,
                Reason::UpgradingMember,
                format!("{step}, before {m} is upgraded from {from} to {to}"),
            )),
            Step::Wait {
                reason: Reason::Downgrading,
                message,
            } => Some((
                true,
                Reason::Downgrading,
                format!("moving from {from} to {to}: {message}"),
            )),
            Step::Wait { message, .. } => Some((
                true,
                Reason::WaitingForMember,
                format!("upgrading from {from} to {to}: {message}"),
            )),
            // Held before it started (no pre-upgrade snapshot possible): blocked, not under way.
            Step::Hold {
                reason: Reason::UpgradeBlocked,
                message,
            } => Some((false, Reason::UpgradeBlocked, message.clone())),
            Step::UpdateTemplate { .. } => Some((
                true,
                Reason::UpgradingMember,
                format!("upgrading from {from} to {to}: {step}"),
            )),
            Step::Idle => None,
            Step::Downgrade { .. } => Some((true, Reason::Downgrading, step.to_string())),
            Step::PreUpgradeSnapshot { .. } => Some((
                true,
                Reason::UpgradingMember,
                format!("upgrading from {from} to {to}: {step}"),
            )),
            other => Some((
                true,
                Reason::WaitingForMember,
                format!("upgrading from {from} to {to}: {other}"),
            )),
        },
    }
}

/// Whether a rollback to `from` reached every member: the StatefulSet runs the rolled-back
/// template (`d`, pinned to `from` by `settle`) and its controller took it in, every pod of it
/// is on that revision, running, Ready and not terminating, and every member reports `from`.
/// A pod still on the bad revision (its image cannot be pulled, so it never became Ready) keeps
/// the rollback under way: the StatefulSet does not replace it by itself.
pub(super) fn rolled_back_everywhere(d: &Desired, o: &Observed, from: Version) -> bool {
    let Some(sts) = o.statefulset.as_ref() else {
        return false;
    };
    let Some(rev) = sts.update_revision.as_ref() else {
        return false;
    };
    let now = running(o);
    sts.template_hash.as_deref() == Some(crate::objects::template_hash(d).as_str())
        && !sts.controller_behind
        && o.pods.len() >= sts.replicas as usize
        && o.pods
            .values()
            .all(|p| p.revision.as_ref() == Some(rev) && p.running && p.ready && !p.terminating)
        && !now.is_empty()
        && now.len() >= o.pods.len()
        && now.iter().all(|v| *v == from)
}

/// `status.upgrade` after this pass.
pub fn record(
    d: &Desired,
    o: &Observed,
    step: &Step,
    prev: Option<&UpgradeStatus>,
) -> Option<UpgradeStatus> {
    let backup = |to: Version| {
        let keep = prev.filter(|p| Version::parse(&p.to_version) == Some(to));
        let from_annotation = d.pre_upgrade_backup.clone();
        let skip = from_annotation.as_deref() == Some(crate::api::PRE_UPGRADE_BACKUP_SKIPPED);
        (
            from_annotation
                .filter(|_| !skip)
                .or_else(|| keep.and_then(|p| p.backup.clone())),
            skip || keep.is_some_and(|p| p.skip_backup),
        )
    };
    let st = |from: Version, to: Version, state: &str, message: Option<String>| {
        let (backup, skip_backup) = backup(to);
        UpgradeStatus {
            from_version: from.to_string(),
            to_version: to.to_string(),
            state: state.into(),
            message,
            backup,
            skip_backup,
            ..Default::default()
        }
    };
    if let Step::RollBack { from, to, why, .. } = step {
        return Some(st(
            *from,
            *to,
            upgrade_state::ROLLING_BACK,
            Some(why.clone()),
        ));
    }
    match &d.upgrade {
        VersionChange::Moving { from, to } => {
            let mut s = st(*from, *to, upgrade_state::UPGRADING, None);
            if let Some(p) = prev.filter(|p| {
                p.state == upgrade_state::UPGRADING
                    && Version::parse(&p.from_version) == Some(*from)
                    && Version::parse(&p.to_version) == Some(*to)
            }) {
                s.restarted_at = p.restarted_at.clone();
                s.healthy_on_target = p.healthy_on_target.clone();
            }
            track_members(&mut s, d, o, step, *from, *to);
            Some(s)
        }
        VersionChange::RolledBack { from, .. } => prev.cloned().map(|mut p| {
            if p.state == upgrade_state::ROLLING_BACK && rolled_back_everywhere(d, o, *from) {
                p.state = upgrade_state::ROLLED_BACK.into();
            }
            p
        }),
        VersionChange::Blocked { .. } => prev.cloned(),
        VersionChange::Steady => {
            let now = running(o);
            prev.cloned().map(|mut p| {
                if p.state == upgrade_state::UPGRADING
                    && !now.is_empty()
                    && now
                        .iter()
                        .all(|v| Version::parse(&p.to_version) == Some(*v))
                {
                    p.state = upgrade_state::UPGRADED.into();
                }
                p
            })
        }
    }
}

/// Notes in `s` which members this change restarted, and when (the restart step of this pass,
/// or the first pass that sees a member's pod on the new template without it answering on
/// `from`: a crash between a restart and its status write loses nothing), and which members
/// answered healthy on `to`.
pub(super) fn track_members(
    s: &mut UpgradeStatus,
    d: &Desired,
    o: &Observed,
    step: &Step,
    from: Version,
    to: Version,
) {
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(o.now);
    if let Step::RestartMember {
        pod,
        why: Restart::NewTemplate,
        ..
    } = step
    {
        s.restarted_at.insert(pod.clone(), now.clone());
    }
    let members = match &o.etcd {
        EtcdView::Reached(c) => c.members.as_slice(),
        _ => &[],
    };
    let version_of = |ord: u32| {
        members
            .iter()
            .find(|m| m.ordinal == Some(ord))
            .and_then(|m| m.status.as_ref())
            .and_then(|st| st.version)
    };
    // Only once the StatefulSet runs this change's template: before, its update revision is
    // still the old one, which every pod is on.
    let applied = o.statefulset.as_ref().is_some_and(|sts| {
        sts.template_hash.as_deref() == Some(crate::objects::template_hash(d).as_str())
    });
    if let Some(rev) = o
        .statefulset
        .as_ref()
        .and_then(|sts| sts.update_revision.as_ref())
        .filter(|_| applied)
    {
        for (ord, p) in &o.pods {
            if p.revision.as_ref() == Some(rev)
                && !p.terminating
                && !super::rules::learner(o, *ord)
                && (from == to || version_of(*ord) != Some(from))
                && !s.healthy_on_target.contains(&p.name)
            {
                s.restarted_at
                    .entry(p.name.clone())
                    .or_insert_with(|| now.clone());
            }
        }
    }
    for m in members {
        let name = crate::plan::member_name(d, m);
        if m.healthy
            && m.status.as_ref().and_then(|st| st.version) == Some(to)
            && !s.healthy_on_target.contains(&name)
        {
            s.healthy_on_target.push(name);
        }
    }
    s.healthy_on_target.sort();
}

/// What `kubectl etcd upgrade --dry-run` prints: the path, the member order and the gates.
pub fn describe(d: &Desired, o: &Observed, from: Version, to: Version) -> Vec<String> {
    let mut lines = vec![format!(
        "path: {from} → {to} ({})",
        match check_step(from, to) {
            Ok(PathKind::Patch) => "patch change",
            Ok(PathKind::Minor) => "one minor up",
            Ok(PathKind::Downgrade) => "one minor down through etcd's downgrade API",
            _ => "rollback",
        }
    )];
    if check_step(from, to) == Ok(PathKind::Downgrade) {
        lines.push(format!(
            "before the first member changes: etcd's downgrade validate + enable {}.{} (the cluster version goes down), then storage versions follow",
            to.major, to.minor
        ));
    }
    if let EtcdView::Reached(c) = &o.etcd {
        let leader = c.leader;
        let mut order: Vec<&MemberView> = c.voters().collect();
        // Unhealthy first, then followers from the highest ordinal, the leader last.
        order.sort_by_key(|m| {
            (
                m.healthy,
                Some(m.id) == leader,
                std::cmp::Reverse(m.ordinal),
            )
        });
        let names: Vec<String> = order
            .iter()
            .map(|m| {
                let name = crate::plan::member_name(d, m);
                let v = m
                    .status
                    .as_ref()
                    .and_then(|s| s.version)
                    .map_or_else(|| "?".to_string(), |v| v.to_string());
                if Some(m.id) == leader {
                    format!("{name} ({v}, leader: leadership moves off it first)")
                } else if !m.healthy {
                    format!("{name} ({v}, unhealthy)")
                } else {
                    format!("{name} ({v})")
                }
            })
            .collect();
        lines.push(format!("order: {}", names.join(" → ")));
    }
    lines.push(format!(
        "gates before each member: every voter healthy and ready, raft index within {CAUGHT_UP_ENTRIES} of the leader's"
    ));
    lines.push(format!(
        "rollback: a member not healthy {}s after its restart puts {from} back while the cluster is mixed",
        d.upgrade_timeout_seconds
    ));
    lines
}
