//! The planner rules of a version change (`plan::RULES` names them): rollback, the downgrade gate,
//! the pre-upgrade snapshot, the cluster version following the members.

use crate::api::Reason;
use crate::model::{ClusterView, Desired, EtcdView, MemberView, Observed, Version, VersionChange};

use super::Step;
use super::paths::{
    CAUGHT_UP_ENTRIES, CONTAINER_START_GRACE_SECONDS, IMAGE_PULL_GRACE_SECONDS, check_downgrade,
    image_unavailable, still_starting,
};
use super::running;

/// The member that holds the rollout up, if any: a voter lagging the leader by more than
/// `CAUGHT_UP_ENTRIES`.
pub fn lagging(c: &ClusterView) -> Option<&MemberView> {
    let lead = c.leader_member()?.status.as_ref()?.raft_index;
    c.voters().find(|m| {
        m.status
            .as_ref()
            .is_none_or(|s| s.raft_index + CAUGHT_UP_ENTRIES < lead)
    })
}

/// The member this change restarted onto its template that is not healthy on it past its
/// deadline, and why: the deadline (`upgrade_timeout_seconds`; at most
/// `IMAGE_PULL_GRACE_SECONDS` for an image that cannot be pulled; at least
/// `CONTAINER_START_GRACE_SECONDS` while the kubelet is still creating its container) counts
/// from when the engine first saw it restarted by this change (`status.upgrade.restartedAt`),
/// never from its pod's creation, and for a running container from no earlier than that
/// container's start (a slow start is not the new version failing); a member once seen healthy
/// on the new version (`healthyOnTarget`) never counts (a later container restart is not the
/// upgrade's doing). Only the members the change upgrades are judged: a learner (added meanwhile,
/// its pod born on the new template) still receiving its snapshot is the scaling's to wait for.
pub(super) fn failing_member<'a>(
    d: &Desired,
    o: &'a Observed,
) -> Option<(Version, Version, u32, &'a crate::model::PodView, String)> {
    let VersionChange::Moving { from, to } = d.upgrade else {
        return None;
    };
    let r = o
        .upgrade
        .as_ref()
        .filter(|r| r.from == from && r.to == to)?;
    let rev = o.statefulset.as_ref()?.update_revision.as_ref()?;
    let healthy = |ord: u32| match &o.etcd {
        EtcdView::Reached(c) => c.member_at(ord).is_some_and(|m| m.healthy),
        _ => false,
    };
    let deadline = |p: &crate::model::PodView| {
        let reason = p.waiting_reason.as_deref();
        if image_unavailable(reason) {
            d.upgrade_timeout_seconds.min(IMAGE_PULL_GRACE_SECONDS)
        } else if still_starting(reason) {
            d.upgrade_timeout_seconds.max(CONTAINER_START_GRACE_SECONDS)
        } else {
            d.upgrade_timeout_seconds
        }
    };
    // Seconds the member has had on the new version: since its restart, and for a running
    // container no more than it has run.
    let waited = |p: &crate::model::PodView,
                  at: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time| {
        let since_restart = (o.now.as_second() - at.0.as_second()).max(0) as u64;
        match p.running_seconds {
            Some(ran) if p.running => since_restart.min(ran),
            _ => since_restart,
        }
    };
    let (ord, pod) = o.pods.iter().find(|(ord, p)| {
        p.revision.as_ref() == Some(rev)
            && !p.terminating
            && !learner(o, **ord)
            && (!p.ready || !healthy(**ord))
            && !r.status.healthy_on_target.contains(&p.name)
            && r.status
                .restarted_at
                .get(&p.name)
                .is_some_and(|at| waited(p, at) >= deadline(p))
    })?;
    let how = match pod.waiting_reason.as_deref() {
        Some(r) if image_unavailable(Some(r)) => {
            format!(" ({r}: the image {} cannot be pulled)", d.image)
        }
        Some(r) => format!(" ({r})"),
        None => String::new(),
    };
    let why = format!(
        "{} did not become healthy on {to} within {}s of its restart{how}",
        pod.name,
        deadline(pod)
    );
    Some((from, to, *ord, pod, why))
}

/// Whether the member at `ordinal` is a learner (no voter yet: not one the change upgrades).
pub(super) fn learner(o: &Observed, ordinal: u32) -> bool {
    matches!(&o.etcd, EtcdView::Reached(c) if c.member_at(ordinal).is_some_and(|m| m.learner))
}

/// Whether putting `from` back is still possible: the old minor is safe while the cluster
/// version has not moved (the members say so; without their word, while a member still answers
/// on the old minor), and after through etcd's downgrade API (`downgrade_gate` lowers the
/// cluster version first), where it exists.
pub(super) fn can_roll_back(o: &Observed, from: Version, to: Version) -> bool {
    let reached = match &o.etcd {
        EtcdView::Reached(c) => Some(c),
        _ => None,
    };
    let old_minor_answers = running(o).iter().any(|v| v.minor == from.minor);
    let cluster_moved = match reached.and_then(|c| c.cluster_version()) {
        Some(cv) => cv.minor != from.minor,
        None => !old_minor_answers,
    };
    from.minor == to.minor
        || !cluster_moved
        || reached.is_none()
        || check_downgrade(to, from).is_ok()
}

/// Rule: a version change in progress whose restarted member is not healthy on the new version
/// within its deadline (see `failing_member`) is rolled back to where the change started, while
/// that is possible (see `can_roll_back`; `rollback_blocked` reports it otherwise, after the
/// repairs). Only a change in progress (`VersionChange::Moving`, which `settle` never makes of a
/// finished one) is ever rolled back.
pub fn failed_upgrade(d: &Desired, o: &Observed) -> Option<Step> {
    let (from, to, ordinal, pod, why) = failing_member(d, o)?;
    can_roll_back(o, from, to).then(|| Step::RollBack {
        member: pod.name.clone(),
        ordinal,
        from,
        to,
        why,
    })
}

/// Rule (after the repairs: it holds upgrade steps only): a member failing on the new minor
/// after the cluster version moved where no downgrade goes back (3.5 → 3.4) is reported with
/// the pre-upgrade snapshot as the way back.
pub fn rollback_blocked(d: &Desired, o: &Observed) -> Option<Step> {
    let (from, to, _, pod, why) = failing_member(d, o)?;
    if can_roll_back(o, from, to) {
        return None;
    }
    Some(crate::plan::hold(
        Reason::UpgradeBlocked,
        format!(
            "{why}, and every other member already runs 3.{}: putting {from} back is no longer safe; \
             fix {}, or restore the pre-upgrade snapshot{} into a new cluster",
            to.minor,
            pod.name,
            d.pre_upgrade_backup
                .as_deref()
                .filter(|b| *b != crate::api::PRE_UPGRADE_BACKUP_SKIPPED)
                .map_or(String::new(), |b| format!(" {b}"))
        ),
    ))
}

/// Rule: before a member restarts onto a lower minor than the cluster version, etcd's
/// downgrade API lowers the cluster version (leader; validated first), and every member still
/// on the higher minor reports the lower storage version. A downgrade enabled for a minor the
/// template does not run (a rolled-back downgrade, a changed spec.version) is cancelled.
///
/// ```text
///   template minor < cluster version ─▶ Downgrade{Enable} ─▶ Wait (cluster version moving)
///      ─▶ Wait (storage versions) ─▶ stale_members (followers, leader last) ─▶ etcd ends the
///      downgrade by itself once every member runs the lower minor
/// ```
pub fn downgrade_gate(d: &Desired, o: &Observed) -> Option<Step> {
    let EtcdView::Reached(c) = &o.etcd else {
        return None;
    };
    let target = d.version;
    let enabled = c
        .members
        .iter()
        .filter_map(|m| m.status.as_ref())
        .find_map(|s| s.downgrading_to);
    if let Some(t) = enabled
        && (t.major, t.minor) != (target.major, target.minor)
    {
        return Some(Step::Downgrade {
            action: crate::plan::DowngradeStep::Cancel,
            target: t,
        });
    }
    let rev = o.statefulset.as_ref()?.update_revision.as_ref()?;
    let stale = o
        .pods
        .values()
        .any(|p| p.revision.as_ref().is_some_and(|r| r != rev));
    let highest = running(o).into_iter().max()?;
    if !stale || target.minor >= highest.minor || target.major != highest.major {
        return None;
    }
    let minor = format!("{}.{}", target.major, target.minor);
    let Some(cv) = c.cluster_version() else {
        return Some(crate::plan::wait(
            Reason::Downgrading,
            format!("members move to {minor} once they report the cluster version"),
        ));
    };
    if cv.minor > target.minor {
        if enabled.is_some() {
            return Some(cluster_version_goes_down(d, o, c, &minor, cv, highest));
        }
        if c.leader_member().is_none_or(|l| !l.healthy) {
            return Some(crate::plan::wait(
                Reason::Downgrading,
                format!("enabling etcd's downgrade to {minor} needs a healthy leader"),
            ));
        }
        return Some(Step::Downgrade {
            action: crate::plan::DowngradeStep::Enable,
            target: Version { patch: 0, ..target },
        });
    }
    storage_versions_behind(d, c, target, &minor)
}

/// With the downgrade enabled, the cluster version (`cv`) goes down to `minor` within seconds,
/// but only once every member reports its version: a member down stops the downgrade, so say
/// so, and what ends it, rather than wait (a hold when the member will not come back by itself).
fn cluster_version_goes_down(
    d: &Desired,
    o: &Observed,
    c: &ClusterView,
    minor: &str,
    cv: Version,
    highest: Version,
) -> Step {
    let silent: Vec<&MemberView> = c.members.iter().filter(|m| m.status.is_none()).collect();
    if silent.is_empty() {
        return crate::plan::wait(
            Reason::Downgrading,
            format!(
                "etcd's downgrade to {minor} is enabled; the cluster version ({cv}) follows within seconds"
            ),
        );
    }
    let names: Vec<String> = silent
        .iter()
        .map(|m| crate::plan::member_name(d, m))
        .collect();
    let message = format!(
        "etcd's downgrade to {minor} is enabled, but the cluster version ({cv}) goes down only once \
         every member answers, and {} does not{}: bring it back, or set spec.version back to \
         {highest} to cancel the downgrade",
        names.join(", "),
        crate::plan::pod_trouble(o)
    );
    let stuck = silent.iter().all(|m| {
        m.ordinal.and_then(|k| o.pods.get(&k)).is_none_or(|p| {
            !p.running
                && !p.terminating
                && (p.restarts > 0
                    || p.waiting_reason
                        .as_deref()
                        .is_some_and(|r| r != "ContainerCreating"))
        })
    });
    if stuck {
        crate::plan::hold(Reason::Downgrading, message)
    } else {
        crate::plan::wait(Reason::Downgrading, message)
    }
}

/// The cluster speaks the lower minor: the members still on the higher one rewrite their db
/// schema to it (3.6 reports a storage version) before a lower binary may open it.
fn storage_versions_behind(
    d: &Desired,
    c: &ClusterView,
    target: Version,
    minor: &str,
) -> Option<Step> {
    let behind: Vec<String> = c
        .members
        .iter()
        .filter(|m| {
            m.status
                .as_ref()
                .and_then(|s| s.storage_version)
                .is_some_and(|v| v.minor > target.minor)
        })
        .map(|m| crate::plan::member_name(d, m))
        .collect();
    if behind.is_empty() {
        return None;
    }
    Some(crate::plan::wait(
        Reason::Downgrading,
        format!(
            "the storage version of {} is still above {minor}",
            behind.join(", ")
        ),
    ))
}

/// Rule: no snapshot, no upgrade. A version change without a recorded pre-upgrade snapshot
/// (`kubectl apply` of spec.version; `kubectl etcd upgrade` records one, or `skipped`) takes
/// one to `spec.backup.destination` before the template changes, or holds when there is none.
/// An upgrade step: it comes after every repair rule, and `settle` keeps the template on the
/// running version meanwhile (`d.version` is not `to` yet), so a hold here holds only the
/// upgrade.
pub fn pre_upgrade_snapshot(d: &Desired, _: &Observed) -> Option<Step> {
    let VersionChange::Moving { from, to } = d.upgrade else {
        return None;
    };
    // The template runs `to` already: the snapshot was recorded, or the rollout is under way.
    if from == to || d.pre_upgrade_backup.is_some() || d.version == to {
        return None;
    }
    Some(match &d.backup_destination {
        Some(destination) => Step::PreUpgradeSnapshot {
            to,
            destination: destination.clone(),
        },
        None => crate::plan::hold(
            Reason::UpgradeBlocked,
            format!(
                "{from} → {to} needs a pre-upgrade snapshot and spec.backup.destination is not set: set it, or run \
                 `kubectl etcd -n {} upgrade {} --version {to} --to file:///DIR` (or `--skip-backup --yes`, recorded in status)",
                d.namespace, d.name
            ),
        ),
    })
}

/// Rule: a change of minor is done when the cluster version moved too (etcd's leader raises it
/// a few seconds after every member runs the new minor; the next minor needs it): until then
/// the change waits, so that `upgrade` returns, and status says Upgraded, only after it.
pub fn cluster_version_follows(d: &Desired, o: &Observed) -> Option<Step> {
    recorded_minor_change_follows(d, o).or_else(|| cluster_version_rises(o))
}

/// A cluster just formed speaks 3.0 until its leader raises the cluster version to the minor
/// every member runs, a few seconds later: until then it is not done forming (`create` returns,
/// and status settles, only after; clients that need the new minor's API would be refused).
/// Not during etcd's downgrade (which lowers the cluster version first) nor while a member
/// gives no status (the leader waits for every member).
pub(super) fn cluster_version_rises(o: &Observed) -> Option<Step> {
    let EtcdView::Reached(c) = &o.etcd else {
        return None;
    };
    let now = running(o);
    let first = *now.first()?;
    let minor = |v: &Version| (v.major, v.minor);
    if now.len() < c.members.len() || now.iter().any(|v| minor(v) != minor(&first)) {
        return None;
    }
    let downgrading = c.members.iter().any(|m| {
        m.status
            .as_ref()
            .is_some_and(|s| s.downgrading_to.is_some())
    });
    let cv = c.cluster_version()?;
    (!downgrading && minor(&cv) < minor(&first)).then(|| {
        crate::plan::wait(
            Reason::Bootstrapping,
            format!(
                "every member runs {first}; the cluster version ({cv}) rises to {}.{} within seconds",
                first.major, first.minor
            ),
        )
    })
}

/// The recorded change of minor (`status.upgrade`) is done once the cluster version follows.
pub(super) fn recorded_minor_change_follows(d: &Desired, o: &Observed) -> Option<Step> {
    let r = o
        .upgrade
        .as_ref()
        .filter(|r| !r.rolled_back && r.to == d.version && r.from.minor != r.to.minor)?;
    let EtcdView::Reached(c) = &o.etcd else {
        return None;
    };
    let now = running(o);
    if now.len() < c.members.len() || now.iter().any(|v| *v != r.to) {
        return None;
    }
    let cv = c.cluster_version();
    if cv.is_some_and(|cv| (cv.major, cv.minor) == (r.to.major, r.to.minor)) {
        return None;
    }
    Some(crate::plan::wait(
        Reason::WaitingForMember,
        format!(
            "every member runs {}; the cluster version ({}) follows within seconds",
            r.to,
            cv.map_or("not reported yet".into(), |v| v.to_string())
        ),
    ))
}
