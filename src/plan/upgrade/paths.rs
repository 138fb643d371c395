//! Which version changes etcd supports: the minimum patches beside the next minor, one step at
//! a time, and downgrades (one minor, through etcd's downgrade API).

use crate::model::Version;

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

/// Seconds a restarted member's container may take to start at all (the kubelet still pulling
/// its image or setting it up: `ContainerCreating`, `PodInitializing`) before that alone counts
/// as a failed upgrade, when that is later than `spec.upgradeTimeoutSeconds`. A container that
/// has not started says nothing of the new version; on a loaded node, or while an image of a
/// few dozen MiB is pulled, its creation alone took longer than a short timeout, and the
/// upgrade was rolled back for it (CI, the fault matrix's `upgrade_done_etcd_restarted` row).
pub const CONTAINER_START_GRACE_SECONDS: u64 = 300;

/// Container waiting reasons that say the kubelet is still bringing the container up.
pub(super) fn still_starting(reason: Option<&str>) -> bool {
    matches!(reason, Some("ContainerCreating" | "PodInitializing"))
}

/// Container waiting reasons that say the image cannot be had.
pub(super) fn image_unavailable(reason: Option<&str>) -> bool {
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
pub(super) fn check_downgrade(from: Version, to: Version) -> Result<PathKind, Refusal> {
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

/// Pure: may a snapshot taken on etcd `snapshot` be restored into a cluster of `target`? The
/// same path rules as an upgrade (`check_step`): the same minor, or one minor up
/// from a patch etcd allows it from. Never down a minor: etcd goes down only through its downgrade
/// procedure on a running cluster, never by restoring newer data into older members. A snapshot
/// of unknown origin (a bare URL) is not checked.
pub fn restore_version(snapshot: Option<&str>, target: &str) -> Result<(), String> {
    let (Some(from), Some(to)) = (snapshot.and_then(Version::parse), Version::parse(target)) else {
        return Ok(());
    };
    match check_step(from, to) {
        Ok(PathKind::Same | PathKind::Patch | PathKind::Minor) => Ok(()),
        Ok(PathKind::Rollback | PathKind::Downgrade) => Err(format!(
            "a snapshot taken on etcd {from} cannot be restored into {to}: its data is of 3.{} and etcd goes down a minor only through its downgrade procedure on a running cluster; restore into 3.{}.x (--version), then downgrade with `kubectl etcd upgrade NAME --version {to}`",
            from.minor, from.minor
        )),
        Err(refusal) => Err(format!(
            "a snapshot taken on etcd {from} cannot be restored into {to}: {refusal}; restore into {from} (--version {from}) and upgrade from there"
        )),
    }
}

#[cfg(test)]
mod restore_tests {
    use super::*;

    #[test]
    fn a_snapshot_is_restored_only_where_an_upgrade_could_go() {
        assert!(restore_version(Some("3.5.16"), "3.5.16").is_ok());
        assert!(restore_version(Some("3.5.16"), "3.5.35").is_ok());
        assert!(restore_version(Some("3.5.35"), "3.6.15").is_ok());
        assert!(restore_version(None, "3.6.15").is_ok());
        // Down a minor, two minors up, and 3.5 → 3.6 from before 3.5.26 are refused.
        let e = restore_version(Some("3.6.15"), "3.5.35").unwrap_err();
        assert!(e.contains("downgrade"), "{e}");
        let e = restore_version(Some("3.4.23"), "3.6.15").unwrap_err();
        assert!(e.contains("--version 3.4.23"), "{e}");
        assert!(restore_version(Some("3.5.16"), "3.6.15").is_err());
    }
}
