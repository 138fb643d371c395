//! Version changes: which paths etcd supports, what the members' template runs while a change is
//! refused or rolled back, when an upgrade is rolled back, and how it is reported.
//!
//! Pure: no async, no clock, no client. What members run comes from what they report
//! (`MemberStatusView.version`, else the last recorded `status.version`), never from image
//! strings. Time enters as pod ages (a member's pod is recreated when it is upgraded).
//!
//! ```text
//!   spec.version changes ─▶ settle: path allowed? ──no──▶ Blocked: template keeps the running
//!        │                                                version, SpecRefused + UpgradeBlocked
//!        ▼ yes: Moving{from,to}
//!   UpdateTemplate ─▶ RestartMember (unhealthy first, followers, leader last after MoveLeader;
//!        │             next only when every voter is healthy and caught up)
//!        ├─ an upgraded member not healthy within spec.upgradeTimeoutSeconds and the cluster
//!        │  still mixed ─▶ RollBack (recorded in status) ─▶ RolledBack{from,to}: template runs
//!        │  `from` again, the upgraded pods restart on it, until spec.version changes
//!        ▼
//!   every member reports `to` ─▶ Steady (status.upgrade: Upgraded)
//! ```

use crate::api::{Reason, UpgradeStatus, upgrade_state};
use crate::model::{
    ClusterView, Desired, EtcdView, MemberView, Observed, UpgradeRecord, Version, VersionChange,
};

use super::{Restart, Step};

/// The 3.5 patch every member must run before any moves to 3.6: the minimum etcd's upgrade
/// guide names (3.5.26 fixes the zombie-member bug of 3.5→3.6 upgrades).
pub const MIN_3_5_FOR_3_6: Version = Version {
    major: 3,
    minor: 5,
    patch: 26,
};

/// The 3.6 patch every member must run before any moves to 3.7: the minimum etcd's 3.7 upgrade
/// guide names ("earlier 3.6 patch releases may not be compatible with a rolling upgrade").
pub const MIN_3_6_FOR_3_7: Version = Version {
    major: 3,
    minor: 6,
    patch: 11,
};

/// The lowest patch of `minor` that may share a cluster with the next minor (upgrading from it,
/// or downgrading to it), and why, where etcd's upgrade guides name one.
pub fn min_patch_beside_next(minor: u32) -> Option<(Version, &'static str)> {
    match minor {
        5 => Some((MIN_3_5_FOR_3_6, "the zombie-member fix")),
        6 => Some((
            MIN_3_6_FOR_3_7,
            "earlier 3.6 patches may not be compatible with a rolling upgrade to 3.7",
        )),
        _ => None,
    }
}

/// Seconds an upgraded member whose image cannot be pulled (the kubelet says so) may wait
/// before the upgrade is rolled back, when that is sooner than `spec.upgradeTimeoutSeconds`: a
/// missing image does not appear by waiting, and the cluster runs a member short meanwhile.
/// (Enough for the kubelet's first retries to get past a short registry hiccup.)
pub const IMAGE_PULL_GRACE_SECONDS: u64 = 60;

/// Container waiting reasons that say the image cannot be had.
fn image_unavailable(reason: Option<&str>) -> bool {
    matches!(
        reason,
        Some("ErrImagePull" | "ImagePullBackOff" | "InvalidImageName" | "ErrImageNeverPull")
    )
}

/// A voter counts as caught up when its raft index is at most this far behind the leader's.
pub const CAUGHT_UP_ENTRIES: u64 = 5_000;

/// Why a version change is refused: the rule, and a path that works.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub rule: &'static str,
    pub message: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.rule)
    }
}

/// What a version change is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathKind {
    Same,
    /// Within one minor (either way): free.
    Patch,
    /// One minor up.
    Minor,
    /// Back to the minor some members still run, before the cluster version moved.
    Rollback,
    /// One minor down through etcd's downgrade API (3.6 → 3.5, 3.7 → 3.6): the cluster version
    /// is lowered first, then the members move, leader last.
    Downgrade,
}

/// The lowest minor etcd's downgrade API runs from: 3.5 → 3.4 needs a 3.4 patch that supports
/// `--next-cluster-version-compatible`, and 3.4.23 (the 3.4 tested here; `etcd --help`) has none.
pub const MIN_DOWNGRADE_FROM_MINOR: u32 = 6;

/// The rule for one step `from → to` made by every member.
pub fn check_step(from: Version, to: Version) -> Result<PathKind, Refusal> {
    if from == to {
        return Ok(PathKind::Same);
    }
    if from.major != to.major {
        return Err(Refusal {
            rule: "major versions differ",
            message: format!("etcd {from} cannot change to {to}"),
        });
    }
    if from.minor == to.minor {
        return Ok(PathKind::Patch);
    }
    if to.minor < from.minor {
        return check_downgrade(from, to);
    }
    if to.minor > from.minor + 1 {
        return Err(Refusal {
            rule: "one minor at a time",
            message: format!(
                "{from} → {to} skips 3.{}: upgrade to the newest 3.{} patch first, then to {to}",
                from.minor + 1,
                from.minor + 1
            ),
        });
    }
    if let Some((min, why)) = min_patch_beside_next(from.minor)
        && from < min
    {
        return Err(Refusal {
            rule: match from.minor {
                5 => "3.5 → 3.6 needs 3.5.26 or later",
                _ => "3.6 → 3.7 needs 3.6.11 or later",
            },
            message: format!(
                "{from} → {to}: etcd's upgrade guide requires every member on {min} or later first ({why}): \
                 upgrade to {min} first, then to {to}"
            ),
        });
    }
    Ok(PathKind::Minor)
}

/// A lower minor: one minor down through etcd's downgrade API where it exists, else refused.
fn check_downgrade(from: Version, to: Version) -> Result<PathKind, Refusal> {
    if to.minor + 1 != from.minor {
        return Err(Refusal {
            rule: "one minor at a time",
            message: format!(
                "{from} → {to} skips 3.{}: go down one minor at a time, and only where etcd's downgrade procedure exists",
                from.minor - 1
            ),
        });
    }
    if from.minor < MIN_DOWNGRADE_FROM_MINOR {
        return Err(Refusal {
            rule: "no downgrade from 3.5 to 3.4",
            message: format!(
                "every member runs {from}; etcd's downgrade to 3.4 needs a 3.4 patch that supports --next-cluster-version-compatible, \
                 and 3.4.23 does not: restore the pre-upgrade snapshot into a new cluster (`kubectl etcd restore NEW --from URL`), or keep 3.{}",
                from.minor
            ),
        });
    }
    if let Some((min, _)) = min_patch_beside_next(to.minor)
        && to < min
    {
        return Err(Refusal {
            rule: match to.minor {
                5 => "a downgrade to 3.5 goes to 3.5.26 or later",
                _ => "a downgrade to 3.6 goes to 3.6.11 or later",
            },
            message: format!(
                "{from} → {to}: the 3.{} patches a 3.{} cluster may run start at {min}: downgrade to {min} or later",
                to.minor, from.minor
            ),
        });
    }
    Ok(PathKind::Downgrade)
}

/// The path from a cluster whose members run `lowest..=highest` to `to`. Going back to the
/// lower minor of a mixed cluster is a rollback, allowed while some member still runs it (the
/// cluster version has not moved).
pub fn check_path(lowest: Version, highest: Version, to: Version) -> Result<PathKind, Refusal> {
    if to.minor < highest.minor && to.major == highest.major {
        if lowest.minor == to.minor {
            return Ok(PathKind::Rollback);
        }
        return check_step(highest, to);
    }
    check_step(lowest, to)
}

/// Substrings (lowercase) of the errors etcd answers an unauthenticated read with while auth is
/// enabled: the health read of every member fails with one of them.
const AUTH_ERRORS: &[&str] = &[
    "user name is empty",
    "invalid auth token",
    "permission denied",
];

/// Whether an error is etcd refusing an unauthenticated (or wrongly authenticated) call.
pub fn is_auth_error(e: &str) -> bool {
    let e = e.to_lowercase();
    AUTH_ERRORS.iter().any(|a| e.contains(a))
}

/// Whether etcd's authentication is on, as the members' answers show it: a member took the
/// `spec.auth` user's credentials, or refused the engine for want of them.
pub fn auth_enabled(o: &Observed) -> bool {
    let EtcdView::Reached(c) = &o.etcd else {
        return false;
    };
    c.auth_enabled
        || c.members
            .iter()
            .filter_map(|m| m.error.as_deref())
            .any(is_auth_error)
}

/// `check_path`, then the gates etcd documents for the step, on what the members show:
/// 3.4 → 3.5 not while auth is enabled; 3.5 → 3.6 not with v2 store data (only a member
/// serving the v2 API, `--enable-v2`, can hold any: the pod template never passes it, and a
/// restored snapshot carries no v2 store); 3.6 → 3.7 not with an `--experimental-*` flag in
/// `spec.etcd.options` (3.7 removed them all and does not start with one; 3.6 has the new name
/// of each). 3.7 has no v2 store at all, and 3.6 neither serves nor keeps one: no v2 gate there.
pub fn check_change(
    d: &Desired,
    o: &Observed,
    lowest: Version,
    highest: Version,
    to: Version,
) -> Result<PathKind, Refusal> {
    let kind = check_path(lowest, highest, to)?;
    if kind == PathKind::Minor && lowest.minor == 4 && to.minor == 5 && auth_enabled(o) {
        return Err(Refusal {
            rule: "no 3.4 → 3.5 while auth is enabled",
            message: format!(
                "etcd's authentication is on, and etcd does not support a rolling upgrade to {to} with it: \
                 disable it (`etcdctl --user root auth disable`), upgrade, then enable it again"
            ),
        });
    }
    if kind == PathKind::Minor
        && lowest.minor == 5
        && to.minor == 6
        && d.etcd_flags.iter().any(|f| f.starts_with("--enable-v2"))
    {
        return Err(Refusal {
            rule: "no 3.5 → 3.6 with v2 store data",
            message: format!(
                "the members serve the v2 API (--enable-v2), so the v2 store may hold data that {to} refuses to start with: \
                 move it to the v3 API, check with `etcdutl check v2store`, drop --enable-v2, then upgrade"
            ),
        });
    }
    if kind == PathKind::Minor && to.minor >= 7 {
        let experimental: Vec<&str> = d
            .etcd_flags
            .iter()
            .filter_map(|f| f.strip_prefix("--"))
            .filter_map(|f| f.split('=').next())
            .filter(|f| f.starts_with("experimental-"))
            .collect();
        if !experimental.is_empty() {
            return Err(Refusal {
                rule: "no --experimental-* flags on 3.7",
                message: format!(
                    "spec.etcd.options sets {}: etcd {to} removed every --experimental-* flag and does not start with one; \
                     set its 3.6 name (without experimental-, or a --feature-gates entry) while on {lowest}, then upgrade",
                    experimental.join(", ")
                ),
            });
        }
    }
    Ok(kind)
}

/// The version the members reported last and the version change recorded in the status the
/// engine wrote last.
pub fn from_status(
    last: Option<&crate::api::EtcdClusterStatus>,
) -> (Option<Version>, Option<UpgradeRecord>) {
    let Some(st) = last else {
        return (None, None);
    };
    let version = st.version.as_deref().and_then(Version::parse);
    let record = st.upgrade.as_ref().and_then(|u| {
        Some(UpgradeRecord {
            from: Version::parse(&u.from_version)?,
            to: Version::parse(&u.to_version)?,
            rolled_back: u.state == crate::api::upgrade_state::ROLLED_BACK,
            status: u.clone(),
        })
    });
    (version, record)
}

/// A member of the cluster gives no status (its pod is down, or it does not answer).
fn some_member_silent(o: &Observed) -> bool {
    match &o.etcd {
        EtcdView::Reached(c) => c.members.iter().any(|m| m.status.is_none()),
        _ => false,
    }
}

/// Versions the members report now.
fn running(o: &Observed) -> Vec<Version> {
    match &o.etcd {
        EtcdView::Reached(c) => c
            .members
            .iter()
            .filter_map(|m| m.status.as_ref().and_then(|s| Version::parse(&s.version)))
            .collect(),
        _ => Vec::new(),
    }
}

fn pin(mut d: Desired, v: Version) -> Desired {
    d.version = v;
    d.image = format!("{}:v{v}", d.image_repository);
    d
}

/// Decides what the members' template runs: `spec.version` when the path from what the members
/// run is allowed, else the running version (`Blocked`, refused in `SpecRefused`), or the old
/// version of a rolled-back upgrade until `spec.version` changes. A cluster where nothing ran
/// yet takes `spec.version` as it is.
pub fn settle(d: Desired, o: &Observed) -> Desired {
    let now = running(o);
    let (Some(lowest), Some(highest)) = (
        now.iter().min().copied().or(o.last_version),
        now.iter().max().copied().or(o.last_version),
    ) else {
        return d;
    };
    let to = d.version;
    if let Some(r) = o.upgrade.as_ref().filter(|r| r.rolled_back && r.to == to) {
        let why = r.status.message.clone().unwrap_or_default();
        let from = r.from;
        let mut d = pin(d, from);
        d.upgrade = VersionChange::RolledBack { from, to, why };
        return d;
    }
    match check_change(&d, o, lowest, highest, to) {
        // Every member that answers runs `to`; a change under way is not done while a member
        // of the cluster does not answer (it may be the upgraded member that never came back).
        // Only a change still in progress (`Upgrading`): a finished one (`Upgraded`) is never
        // made `Moving` again by a member giving no status (a container restart, a node hiccup).
        Ok(PathKind::Same) => match o.upgrade.as_ref().filter(|r| {
            !r.rolled_back
                && r.status.state == upgrade_state::UPGRADING
                && r.to == to
                && r.from != to
                && some_member_silent(o)
        }) {
            Some(r) => {
                let from = r.from;
                let mut d = d;
                d.upgrade = VersionChange::Moving { from, to };
                d
            }
            None => d,
        },
        Ok(_) => {
            // A change already under way keeps the version it started from (the rollback target).
            let from = o
                .upgrade
                .as_ref()
                .filter(|r| !r.rolled_back && r.to == to && now.contains(&r.from))
                .map_or(if lowest == to { highest } else { lowest }, |r| r.from);
            // No snapshot, no upgrade: until the pre-upgrade snapshot is recorded, the template
            // keeps running `from` (its other changes go ahead), so that every repair works
            // meanwhile and `pre_upgrade_snapshot`, an upgrade step, holds only the upgrade. A
            // template that already runs `to` (a rollout under way) is not taken back.
            let applied = o.statefulset.as_ref().is_some_and(|sts| {
                sts.template_hash.as_deref() == Some(crate::objects::template_hash(&d).as_str())
            });
            let mut d = if from != to && d.pre_upgrade_backup.is_none() && !applied {
                pin(d, from)
            } else {
                d
            };
            d.upgrade = VersionChange::Moving { from, to };
            d
        }
        Err(refusal) => {
            // Keep what runs; a mixed cluster finishes where it was going (its highest version
            // when that is still reachable, else its lowest).
            let keep = o
                .upgrade
                .as_ref()
                .filter(|r| !r.rolled_back && now.contains(&r.to))
                .map_or(lowest, |r| r.to);
            let why = format!("spec.version {to} refused: {refusal}");
            let mut d = pin(d, keep);
            d.refused.push(crate::model::InvalidSpec {
                field: "spec.version",
                message: why.clone(),
            });
            d.upgrade = VersionChange::Blocked {
                from: keep,
                to,
                why,
            };
            d
        }
    }
}

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
/// deadline, and why: the deadline (`upgrade_timeout_seconds`, at most
/// `IMAGE_PULL_GRACE_SECONDS` for an image that cannot be pulled) counts from when the engine
/// first saw it restarted by this change (`status.upgrade.restartedAt`), never from its pod's
/// creation; a member once seen healthy on the new version (`healthyOnTarget`) never counts (a
/// later container restart is not the upgrade's doing).
fn failing_member<'a>(
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
        if image_unavailable(p.waiting_reason.as_deref()) {
            d.upgrade_timeout_seconds.min(IMAGE_PULL_GRACE_SECONDS)
        } else {
            d.upgrade_timeout_seconds
        }
    };
    let (ord, pod) = o.pods.iter().find(|(ord, p)| {
        p.revision.as_ref() == Some(rev)
            && !p.terminating
            && (!p.ready || !healthy(**ord))
            && !r.status.healthy_on_target.contains(&p.name)
            && r.status
                .restarted_at
                .get(&p.name)
                .is_some_and(|at| o.now.as_second() - at.0.as_second() >= deadline(p) as i64)
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

/// Whether putting `from` back is still possible: the old minor is safe while the cluster
/// version has not moved (the members say so; without their word, while a member still answers
/// on the old minor), and after through etcd's downgrade API (`downgrade_gate` lowers the
/// cluster version first), where it exists.
fn can_roll_back(o: &Observed, from: Version, to: Version) -> bool {
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
    Some(super::hold(
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
        .find_map(|s| Version::parse(&s.downgrading_to));
    if let Some(t) = enabled
        && (t.major, t.minor) != (target.major, target.minor)
    {
        return Some(Step::Downgrade {
            action: super::DowngradeStep::Cancel,
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
        return Some(super::wait(
            Reason::Downgrading,
            format!("members move to {minor} once they report the cluster version"),
        ));
    };
    if cv.minor > target.minor {
        if enabled.is_some() {
            // etcd lowers the cluster version only once every member reports its version: a
            // member down stops the downgrade, so say so, and what ends it, rather than wait.
            let silent: Vec<&MemberView> =
                c.members.iter().filter(|m| m.status.is_none()).collect();
            if !silent.is_empty() {
                let names: Vec<String> = silent.iter().map(|m| super::member_name(d, m)).collect();
                let message = format!(
                    "etcd's downgrade to {minor} is enabled, but the cluster version ({cv}) goes down only once \
                     every member answers, and {} does not{}: bring it back, or set spec.version back to \
                     {highest} to cancel the downgrade",
                    names.join(", "),
                    super::pod_trouble(o)
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
                return Some(if stuck {
                    super::hold(Reason::Downgrading, message)
                } else {
                    super::wait(Reason::Downgrading, message)
                });
            }
            return Some(super::wait(
                Reason::Downgrading,
                format!(
                    "etcd's downgrade to {minor} is enabled; the cluster version ({cv}) follows within seconds"
                ),
            ));
        }
        if c.leader_member().is_none_or(|l| !l.healthy) {
            return Some(super::wait(
                Reason::Downgrading,
                format!("enabling etcd's downgrade to {minor} needs a healthy leader"),
            ));
        }
        return Some(Step::Downgrade {
            action: super::DowngradeStep::Enable,
            target: Version { patch: 0, ..target },
        });
    }
    // The cluster speaks the lower minor: the members still on the higher one rewrite their db
    // schema to it (3.6 reports a storage version) before a lower binary may open it.
    let behind: Vec<String> = c
        .members
        .iter()
        .filter(|m| {
            m.status.as_ref().is_some_and(|s| {
                Version::parse(&s.storage_version).is_some_and(|v| v.minor > target.minor)
            })
        })
        .map(|m| super::member_name(d, m))
        .collect();
    if !behind.is_empty() {
        return Some(super::wait(
            Reason::Downgrading,
            format!(
                "the storage version of {} is still above {minor}",
                behind.join(", ")
            ),
        ));
    }
    None
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
        None => super::hold(
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
fn cluster_version_rises(o: &Observed) -> Option<Step> {
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
            .is_some_and(|s| !s.downgrading_to.is_empty())
    });
    let cv = c.cluster_version()?;
    (!downgrading && minor(&cv) < minor(&first)).then(|| {
        super::wait(
            Reason::Bootstrapping,
            format!(
                "every member runs {first}; the cluster version ({cv}) rises to {}.{} within seconds",
                first.major, first.minor
            ),
        )
    })
}

/// The recorded change of minor (`status.upgrade`) is done once the cluster version follows.
fn recorded_minor_change_follows(d: &Desired, o: &Observed) -> Option<Step> {
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
    Some(super::wait(
        Reason::WaitingForMember,
        format!(
            "every member runs {}; the cluster version ({}) follows within seconds",
            r.to,
            cv.map_or("not reported yet".into(), |v| v.to_string())
        ),
    ))
}

/// The Upgrading condition while a version change is in effect: (true?, reason, message), or
/// `None` to leave it to the general derivation.
pub fn condition(d: &Desired, o: &Observed, step: &Step) -> Option<(bool, Reason, String)> {
    let now = running(o);
    match &d.upgrade {
        VersionChange::Steady => None,
        VersionChange::Blocked { why, .. } => Some((false, Reason::UpgradeBlocked, why.clone())),
        VersionChange::RolledBack { from, to, why } => {
            let back = !now.is_empty() && now.iter().all(|v| v == from);
            if back && !step.is_change() {
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
            upgrade_state::ROLLED_BACK,
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
        VersionChange::RolledBack { .. } => prev.cloned(),
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
fn track_members(
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
            .and_then(|st| Version::parse(&st.version))
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
        let name = super::member_name(d, m);
        if m.healthy
            && m.status.as_ref().and_then(|st| Version::parse(&st.version)) == Some(to)
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
                let name = super::member_name(d, m);
                let v = m.status.as_ref().map_or("?", |s| s.version.as_str());
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

#[cfg(test)]
mod tests;
