//! etcd versions: `Version` (parsed once), the minors the engine runs, and where a change of
//! `spec.version` stands.

use std::fmt;

use serde::Serialize;

/// Version `kubectl etcd create` uses when none is given: the newest patch of the newest minor
/// the project tests (tests/cluster/etcd-bins.sh; the e2e suites run it).
pub const DEFAULT_VERSION: &str = "3.7.3";
/// Newest minor past etcd's end of support: still run (clusters upgrade from it), warned about
/// on create and restore.
pub const END_OF_SUPPORT_MINOR: u32 = 4;
/// Oldest minor the engine knows how to run (learners need 3.4).
pub const MIN_MINOR: u32 = 4;
/// Newest minor the engine knows how to run (3.7: src/plan/upgrade/paths.rs has its path rules).
pub const MAX_MINOR: u32 = 7;

/// An etcd release `3.<minor>.<patch>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    /// Parses "3.5.16" (a leading "v" is accepted so users can paste image tags).
    pub fn parse(s: &str) -> Option<Version> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let mut it = s.split('.');
        let mut num = || -> Option<u32> {
            let p = it.next()?;
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 6 {
                return None;
            }
            p.parse().ok()
        };
        let v = Version {
            major: num()?,
            minor: num()?,
            patch: num()?,
        };
        if it.next().is_some() {
            return None;
        }
        Some(v)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Where a change of `spec.version` stands, decided by `plan::upgrade::settle` from what the
/// members report (never from image strings).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum VersionChange {
    /// Nothing to change, or nothing runs yet.
    Steady,
    /// Members move from `from` to `to` one at a time (`Desired.version` is `to`).
    Moving { from: Version, to: Version },
    /// An upgrade to `to` failed and `from` is put back (`Desired.version` is `from`) until
    /// `spec.version` changes.
    RolledBack {
        from: Version,
        to: Version,
        why: String,
    },
    /// `spec.version` (`to`) cannot be reached from `from`: the members keep `from`.
    Blocked {
        from: Version,
        to: Version,
        why: String,
    },
}

/// `status.upgrade` as the last pass wrote it (read back by observe).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UpgradeRecord {
    pub from: Version,
    pub to: Version,
    pub rolled_back: bool,
    pub status: crate::api::UpgradeStatus,
}

/// Storage is fixed once the StatefulSet exists (its volume claim template is immutable, and the
/// 3.5.0–3.5.2 can corrupt data (a member applying entries it had not persisted after a crash,
/// etcd-io/etcd#13766); etcd advises against them in production.
pub const UNFIT_35_BELOW: u32 = 3;

/// A warning for people when `v` is past etcd's end of support, naming what to run instead.
pub fn support_warning(v: Version) -> Option<String> {
    (v.major == 3 && v.minor <= END_OF_SUPPORT_MINOR).then(|| {
        format!(
            "warning: etcd {v} is past etcd's end of support (3.{END_OF_SUPPORT_MINOR} gets no more fixes); \
             it is kept so clusters can upgrade from it: create {DEFAULT_VERSION} (the default) instead, \
             or plan `kubectl etcd upgrade NAME --version 3.5.30` soon"
        )
    })
}
