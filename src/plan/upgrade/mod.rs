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
//!        │  still mixed ─▶ RollBack (status.upgrade: RollingBack) ─▶ RolledBack{from,to}:
//!        │  template runs `from` again, until spec.version changes; the upgraded pods restart
//!        │  on it (one that never ran is replaced: `stuck_on_an_old_template`), and once every
//!        │  pod runs `from`, Ready, status.upgrade says RolledBack
//!        ▼
//!   every member reports `to` ─▶ Steady (status.upgrade: Upgraded)
//! ```

use crate::api::upgrade_state;
use crate::model::{Desired, EtcdView, Observed, UpgradeRecord, Version, VersionChange};

use super::{Restart, Step};

mod paths;
mod report;
mod rules;

pub use paths::*;
pub use report::*;
pub use rules::*;

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
            rolled_back: u.state == upgrade_state::ROLLED_BACK
                || u.state == upgrade_state::ROLLING_BACK,
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
pub fn running(o: &Observed) -> Vec<Version> {
    match &o.etcd {
        EtcdView::Reached(c) => c.versions().collect(),
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

#[cfg(test)]
mod tests;
