//! The two inputs of the planner: `Desired` (the validated spec) and `Observed` (the world).
//!
//! Pure: no client, no clock. `validate` is the only place that reads raw spec fields for
//! configuration; everything downstream reads `Desired`.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::api::{CompactionMode, EtcdCluster, MAX_REPLICAS};

/// Image repository used when the spec names none (the layout of etcd's official release images).
pub const DEFAULT_IMAGE_REPOSITORY: &str = "gcr.io/etcd-development/etcd";
/// Version `kubectl etcd create` uses when none is given: the newest patch of the newest minor
/// the project tests (tests/cluster/etcd-bins.sh; the e2e suites run it).
pub const DEFAULT_VERSION: &str = "3.7.3";
/// Newest minor past etcd's end of support: still run (clusters upgrade from it), warned about
/// on create and restore.
pub const END_OF_SUPPORT_MINOR: u32 = 4;
/// Oldest minor the engine knows how to run (learners need 3.4).
pub const MIN_MINOR: u32 = 4;
/// Newest minor the engine knows how to run (3.7: src/plan/upgrade.rs has its path rules).
pub const MAX_MINOR: u32 = 7;
/// etcd's own default of `--quota-backend-bytes` (what a spec without a quota gets).
pub const DEFAULT_QUOTA_BYTES: i64 = 2 << 30;
/// How long a member must look lost (no data, unusable data, another member's identity) before
/// the engine replaces it, when the spec names no grace period.
pub const DEFAULT_LOST_MEMBER_GRACE_SECONDS: u64 = 180;
/// Seconds an upgraded member may take to become healthy before the upgrade is rolled back,
/// when the spec names none.
pub const DEFAULT_UPGRADE_TIMEOUT_SECONDS: u64 = 300;
/// Volume size when the spec names none.
pub const DEFAULT_STORAGE_SIZE: &str = "1Gi";
/// Auto-compaction `create` and `restore` write into a new cluster's spec (`new_cluster_defaults`):
/// keep one hour of history, as KubeBlocks does (etcd-druid keeps 30 minutes).
pub const DEFAULT_AUTO_COMPACTION_MODE: &str = "periodic";
pub const DEFAULT_AUTO_COMPACTION_RETENTION: &str = "1h";

/// Fills in what a cluster created by `kubectl etcd create` or `restore` gets unless its spec
/// says otherwise: periodic auto-compaction (`DEFAULT_AUTO_COMPACTION_*`) and a preference to
/// spread the members over zones and nodes (`objects::default_topology_spread`).
///
/// Written into the spec, not assumed by `validate` when the spec is silent: the spec shows it
/// and can change it, and a cluster created before these defaults existed keeps the template it
/// has. A default that only `validate` knew would change the pod template of every existing
/// cluster, and the StatefulSet is applied whole (a resize too), so its next apply would roll
/// every member to gain a compaction flag or a scheduling hint.
pub fn new_cluster_defaults(spec: &mut crate::api::EtcdClusterSpec) {
    let t = &mut spec.etcd;
    if t.auto_compaction_mode.is_none() && t.auto_compaction_retention.is_none() {
        t.auto_compaction_mode = Some(DEFAULT_AUTO_COMPACTION_MODE.into());
        t.auto_compaction_retention = Some(DEFAULT_AUTO_COMPACTION_RETENTION.into());
    }
    if spec.topology_spread_constraints.is_none() {
        spec.topology_spread_constraints = Some(crate::objects::default_topology_spread());
    }
}

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

/// Where members keep their data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Storage {
    Ephemeral,
    Volume { size: String, class: Option<String> },
}

/// TLS of member traffic (`spec.tls`, validated). Secret names only: the engine reads the
/// client Secret when it dials, the kubelet mounts the others.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tls {
    /// The client port speaks https with client-certificate authentication.
    pub client: Option<ClientTls>,
    /// The Secret of the peer certificate: peers speak https to each other.
    pub peer_secret: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClientTls {
    /// The members' serving certificate.
    pub server_secret: String,
    /// The certificate the engine, the probe and backups present.
    pub client_secret: String,
}

impl Tls {
    /// `http` or `https`, for the client port.
    pub fn client_scheme(&self) -> &'static str {
        if self.client.is_some() {
            "https"
        } else {
            "http"
        }
    }
    /// `http` or `https`, for the peer port.
    pub fn peer_scheme(&self) -> &'static str {
        if self.peer_secret.is_some() {
            "https"
        } else {
            "http"
        }
    }
    /// "client and peer TLS", "client TLS", "peer TLS", "no TLS": for messages.
    pub fn describe(&self) -> &'static str {
        match (self.client.is_some(), self.peer_secret.is_some()) {
            (true, true) => "client and peer TLS",
            (true, false) => "client TLS",
            (false, true) => "peer TLS",
            (false, false) => "no TLS",
        }
    }
}

/// The validated, defaulted spec. Built once per pass by `validate`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Desired {
    pub name: String,
    pub namespace: String,
    /// Owner uid, for owner references and a unique initial-cluster token.
    pub uid: String,
    pub generation: i64,
    pub replicas: u32,
    /// The version the members' template runs: `spec.version`, unless `plan::upgrade::settle`
    /// kept the running version (a refused path, a rolled-back upgrade; see `upgrade`).
    pub version: Version,
    pub image_repository: String,
    pub image: String,
    /// Where a version change stands (set by `plan::upgrade::settle`; `Steady` from `validate`).
    pub upgrade: VersionChange,
    /// Seconds an upgraded member may take to become healthy (`spec.upgradeTimeoutSeconds`).
    pub upgrade_timeout_seconds: u64,
    /// The pre-upgrade snapshot `kubectl etcd upgrade` recorded for this `spec.version`
    /// (annotation): `Some(url)`, `Some("skipped")`, or `None` (e.g. a plain `kubectl apply`).
    pub pre_upgrade_backup: Option<String>,
    /// Where the engine takes the pre-upgrade snapshot of a `spec.version` change that came
    /// without one (`spec.backup.destination`).
    pub backup_destination: Option<String>,
    pub storage: Storage,
    pub resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    pub affinity: Option<k8s_openapi::api::core::v1::Affinity>,
    pub tolerations: Option<Vec<k8s_openapi::api::core::v1::Toleration>>,
    pub node_selector: Option<BTreeMap<String, String>>,
    /// `spec.topologySpreadConstraints` (a constraint without a selector gets the members' own
    /// in `objects::pod_template`).
    pub topology_spread: Option<Vec<k8s_openapi::api::core::v1::TopologySpreadConstraint>>,
    pub priority_class_name: Option<String>,
    /// Labels and annotations the member pods get besides the engine's (`spec.podMetadata`).
    pub pod_labels: BTreeMap<String, String>,
    pub pod_annotations: BTreeMap<String, String>,
    /// Extra etcd flags (`--name=value`), from the tuning section (`spec.etcd.options` last).
    pub etcd_flags: Vec<String>,
    /// `--quota-backend-bytes` when the spec sets it (0 or absent: etcd's default), or the quota
    /// the engine raised for a full database (`plan::nospace::settle`).
    pub quota_backend_bytes: Option<i64>,
    /// The spec's quota (bytes, etcd's default when unset) while `quota_backend_bytes` is the one
    /// the engine raised; `None` otherwise.
    pub quota_raised_from: Option<i64>,
    pub paused: bool,
    /// Seconds a member must look lost before it is replaced (`spec.lostMemberGraceSeconds`).
    pub lost_member_grace_seconds: u64,
    /// Spec changes the engine refuses to carry out (see `keep_immutable`); empty normally.
    pub refused: Vec<InvalidSpec>,
    /// The snapshot a new cluster starts from (`spec.restore`).
    pub restore: Option<RestoreSource>,
    /// TLS of client and peer traffic (`spec.tls`; kept as created, see `keep_immutable`).
    pub tls: Tls,
    /// The Secret of the etcd user to authenticate as while etcd's authentication is on
    /// (`spec.auth.userSecret`).
    pub auth_secret: Option<String>,
}

impl Desired {
    /// A stand-in for a cluster whose spec did not validate: only its identity is known (a
    /// cluster being deleted is released whatever its spec says).
    pub fn named(name: &str, namespace: &str) -> Desired {
        Desired {
            name: name.into(),
            namespace: namespace.into(),
            uid: String::new(),
            generation: 0,
            replicas: 0,
            version: Version {
                major: 3,
                minor: MAX_MINOR,
                patch: 0,
            },
            image_repository: DEFAULT_IMAGE_REPOSITORY.into(),
            image: String::new(),
            upgrade: VersionChange::Steady,
            upgrade_timeout_seconds: DEFAULT_UPGRADE_TIMEOUT_SECONDS,
            pre_upgrade_backup: None,
            backup_destination: None,
            storage: Storage::Ephemeral,
            resources: None,
            affinity: None,
            tolerations: None,
            node_selector: None,
            topology_spread: None,
            priority_class_name: None,
            pod_labels: BTreeMap::new(),
            pod_annotations: BTreeMap::new(),
            etcd_flags: Vec::new(),
            quota_backend_bytes: None,
            quota_raised_from: None,
            paused: true,
            lost_member_grace_seconds: DEFAULT_LOST_MEMBER_GRACE_SECONDS,
            refused: Vec::new(),
            restore: None,
            tls: Tls::default(),
            auth_secret: None,
        }
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
/// volumes hold the data): a spec that changes it is refused, field by field, and the engine goes
/// on with the storage it has, so every other rule keeps working (no apply that fails with 422).
pub fn keep_immutable(d: Desired, o: &Observed) -> Desired {
    keep_storage(keep_tls(d, o), o)
}

/// Whether TLS is on, for clients and for peers, is fixed once the StatefulSet exists: every
/// member advertises its URLs, scheme included, in the membership, and a member switched alone
/// could not talk to the others. Such a change is refused and the engine goes on with the TLS
/// the members run; other Secrets of the same kind are taken (a rolling restart).
fn keep_tls(mut d: Desired, o: &Observed) -> Desired {
    let Some(have) = o.statefulset.as_ref().and_then(|s| s.tls.clone()) else {
        return d;
    };
    // Other Secrets of the same kind (a new certificate) roll out like any template change.
    if (have.client.is_some(), have.peer_secret.is_some())
        == (d.tls.client.is_some(), d.tls.peer_secret.is_some())
    {
        return d;
    }
    d.refused.push(invalid(
        "spec.tls",
        format!(
            "cannot change from {} to {} on an existing cluster (members advertise their URLs, scheme included); \
             put the old value back, or create a new cluster with the new TLS and move the data with \
             `kubectl etcd backup` and `kubectl etcd restore`",
            describe_tls(&have),
            describe_tls(&d.tls)
        ),
    ));
    d.tls = have;
    d
}

/// "client TLS (server Secret a, client Secret b)" and the like.
fn describe_tls(t: &Tls) -> String {
    let mut names = Vec::new();
    if let Some(c) = &t.client {
        names.push(format!("server Secret {}", c.server_secret));
        names.push(format!("client Secret {}", c.client_secret));
    }
    if let Some(p) = &t.peer_secret {
        names.push(format!("peer Secret {p}"));
    }
    if names.is_empty() {
        t.describe().to_string()
    } else {
        format!("{} ({})", t.describe(), names.join(", "))
    }
}

fn keep_storage(mut d: Desired, o: &Observed) -> Desired {
    let Some(have) = o.statefulset.as_ref().and_then(|s| s.storage.clone()) else {
        return d;
    };
    let same_size = |a: &str, b: &str| {
        a == b || quantity_bytes(a).is_some_and(|x| Some(x) == quantity_bytes(b))
    };
    if have == d.storage
        || matches!((&have, &d.storage), (Storage::Volume { size: a, class: ca }, Storage::Volume { size: b, class: cb }) if ca == cb && same_size(a, b))
    {
        return d;
    }
    let way = "the volumes keep the data: put the old value back, or create a new cluster with the new storage and move the data with a backup and restore";
    match (&have, &d.storage) {
        (Storage::Volume { size: a, .. }, Storage::Volume { size: b, .. }) if !same_size(a, b) => {
            d.refused.push(invalid(
                "spec.storage.size",
                format!("cannot change from {a} to {b} on an existing cluster; {way}"),
            ))
        }
        (Storage::Volume { class: a, .. }, Storage::Volume { class: b, .. }) if a != b => {
            d.refused.push(invalid(
                "spec.storage.storageClassName",
                format!(
                    "cannot change from {} to {} on an existing cluster; {way}",
                    a.as_deref().unwrap_or("the default class"),
                    b.as_deref().unwrap_or("the default class")
                ),
            ))
        }
        (Storage::Volume { .. }, _) | (_, Storage::Volume { .. }) => d.refused.push(invalid(
            "spec.storage.ephemeral",
            format!(
                "cannot switch between volumes and ephemeral storage on an existing cluster; {way}"
            ),
        )),
        _ => {}
    }
    d.storage = have;
    d
}

/// A validated `spec.restore`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RestoreSource {
    /// URL of the snapshot object (s3:// or pvc://: the restore pod fetches it in the cluster).
    pub url: String,
    pub sha256: Option<String>,
    pub credentials_secret: Option<String>,
    pub tools_image: String,
    /// `spec.restore.nonce`: part of the initial-cluster token (`objects::bootstrap_config`).
    pub nonce: Option<String>,
}

/// Image with `kubectl-etcd` used by restore pods when the spec names none.
/// (The project's release image: the same binary as the CLI and the operator.)
pub const DEFAULT_TOOLS_IMAGE: &str = concat!(
    "ghcr.io/kubectl-etcd/kubectl-etcd:",
    env!("CARGO_PKG_VERSION")
);

/// `spec.backup`: a destination the operator can write, a schedule that parses, a known
/// compression. (The backup section is read by the backup schedule, not by the planner.)
fn validate_backup(b: &crate::api::BackupSpec) -> Result<(), InvalidSpec> {
    use crate::archive::store::Location;
    let loc = Location::parse(&b.destination)
        .map_err(|e| invalid("spec.backup.destination", e.to_string()))?;
    match loc {
        Location::S3(_) => {}
        Location::File(_) => {
            return Err(invalid(
                "spec.backup.destination",
                format!(
                    "{:?} is a file on some machine, which the operator cannot write; use s3://bucket/prefix (file:// works with `kubectl etcd backup --to`)",
                    b.destination
                ),
            ));
        }
        Location::Pvc { .. } => {
            return Err(invalid(
                "spec.backup.destination",
                format!(
                    "{:?}: schedules cannot write to pvc:// yet (the operator does not exec into pods, which pvc:// backups need); use s3://bucket/prefix here, and take pvc:// backups with `kubectl etcd backup NAME --to pvc://claim/dir`",
                    b.destination
                ),
            ));
        }
    }
    if let Some(s) = b.schedule.as_deref().filter(|s| !s.is_empty()) {
        crate::archive::schedule::parse(s).map_err(|e| invalid("spec.backup.schedule", e))?;
    }
    if let Some(c) = &b.compression {
        c.parse::<crate::archive::codec::Compression>()
            .map_err(|e| invalid("spec.backup.compression", e))?;
    }
    Ok(())
}

fn validate_restore(r: &crate::api::RestoreSpec) -> Result<RestoreSource, InvalidSpec> {
    use crate::archive::store::Location;
    let loc =
        Location::parse(&r.source).map_err(|e| invalid("spec.restore.source", e.to_string()))?;
    if matches!(loc, Location::File(_)) {
        return Err(invalid(
            "spec.restore.source",
            format!(
                "{:?} is a file on some machine, which the cluster cannot read; `kubectl etcd restore --from file://…` copies it into a claim first, or upload it to s3://",
                r.source
            ),
        ));
    }
    if let Some(sum) = &r.sha256
        && (sum.len() != 64 || !sum.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(invalid(
            "spec.restore.sha256",
            format!(
                "{sum:?} is not a sha256; use the 64 hex digits `kubectl etcd backup list` shows"
            ),
        ));
    }
    Ok(RestoreSource {
        url: r.source.clone(),
        sha256: r.sha256.as_ref().map(|s| s.to_ascii_lowercase()),
        credentials_secret: r.credentials_secret.clone().filter(|s| !s.is_empty()),
        tools_image: r
            .tools_image
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| DEFAULT_TOOLS_IMAGE.into()),
        nonce: r.nonce.clone().filter(|s| !s.is_empty()),
    })
}

/// Why a spec can never work. The message names the field and the fix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InvalidSpec {
    pub field: &'static str,
    pub message: String,
}

fn invalid(field: &'static str, message: impl Into<String>) -> InvalidSpec {
    InvalidSpec {
        field,
        message: message.into(),
    }
}

/// Checks a replica count given on the command line or in a spec.
pub fn validate_replicas(replicas: i64) -> Result<u32, InvalidSpec> {
    if replicas < 1 || replicas > MAX_REPLICAS as i64 {
        return Err(invalid(
            "spec.replicas",
            format!(
                "{replicas} is out of range; use 1 to {MAX_REPLICAS} (odd numbers tolerate the most failures)"
            ),
        ));
    }
    Ok(replicas as u32)
}

/// Checks a version given on the command line or in a spec.
pub fn validate_version(version: &str) -> Result<Version, InvalidSpec> {
    let v = Version::parse(version).ok_or_else(|| {
        invalid(
            "spec.version",
            format!("{version:?} is not an etcd release; use the form 3.5.16"),
        )
    })?;
    if v.major != 3 || v.minor < MIN_MINOR || v.minor > MAX_MINOR {
        return Err(invalid(
            "spec.version",
            format!("etcd {v} is not supported; use a 3.{MIN_MINOR}, ... or 3.{MAX_MINOR} release"),
        ));
    }
    if v.minor == 5 && v.patch < UNFIT_35_BELOW {
        return Err(invalid(
            "spec.version",
            format!(
                "etcd {v} is unfit for production (3.5.0-3.5.2 can leave members with different \
                 data after a crash; etcd's own advice); use 3.5.{UNFIT_35_BELOW} or later"
            ),
        ));
    }
    Ok(v)
}

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

/// "1Gi" → 1073741824 (the suffixes `validate_quantity` accepts), so "1024Mi" equals "1Gi" as
/// the API server canonicalises it.
fn quantity_bytes(q: &str) -> Option<f64> {
    let end = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (num, unit) = q.split_at(end);
    let k: f64 = match unit {
        "" => 1.0,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        _ => return None,
    };
    Some(num.parse::<f64>().ok()? * k)
}

fn validate_quantity(field: &'static str, q: &str) -> Result<(), InvalidSpec> {
    let digits_end = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (num, unit) = q.split_at(digits_end);
    let ok_num = !num.is_empty() && num.parse::<f64>().map(|n| n > 0.0).unwrap_or(false);
    let ok_unit = matches!(
        unit,
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "k" | "M" | "G" | "T" | "P"
    );
    if !ok_num || !ok_unit {
        return Err(invalid(
            field,
            format!("{q:?} is not a positive size; use e.g. 1Gi or 500Mi"),
        ));
    }
    Ok(())
}

/// Checks a cluster name: it becomes a StatefulSet, Service and pod-name prefix.
pub fn validate_name(name: &str) -> Result<(), InvalidSpec> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name.as_bytes()[0].is_ascii_lowercase()
        && !name.ends_with('-');
    if !ok {
        return Err(invalid(
            "metadata.name",
            format!(
                "{name:?} is not a usable cluster name; use at most 40 lowercase letters, digits and '-', starting with a letter"
            ),
        ));
    }
    Ok(())
}

/// Validates and defaults a cluster's spec. The one reader of raw spec fields.
pub fn validate(cluster: &EtcdCluster) -> Result<Desired, InvalidSpec> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    validate_name(&name)?;
    let spec = &cluster.spec;
    let replicas = validate_replicas(spec.replicas as i64)?;
    let version = validate_version(&spec.version)?;
    let repo = spec
        .image_repository
        .as_deref()
        .unwrap_or(DEFAULT_IMAGE_REPOSITORY);
    if repo.is_empty() || repo.contains(char::is_whitespace) || repo.contains('@') {
        return Err(invalid(
            "spec.imageRepository",
            format!("{repo:?} is not an image repository; use e.g. {DEFAULT_IMAGE_REPOSITORY}"),
        ));
    }
    let storage = if spec.storage.ephemeral {
        Storage::Ephemeral
    } else {
        let size = spec
            .storage
            .size
            .clone()
            .unwrap_or_else(|| DEFAULT_STORAGE_SIZE.to_string());
        validate_quantity("spec.storage.size", &size)?;
        Storage::Volume {
            size,
            class: spec
                .storage
                .storage_class_name
                .clone()
                .filter(|c| !c.is_empty()),
        }
    };
    let mut etcd_flags = Vec::new();
    let t = &spec.etcd;
    if let Some(q) = t.quota_backend_bytes {
        if q < 0 {
            return Err(invalid(
                "spec.etcd.quotaBackendBytes",
                "must not be negative; 0 means etcd's default",
            ));
        }
        etcd_flags.push(format!("--quota-backend-bytes={q}"));
    }
    let mode = match t.auto_compaction_mode.as_deref() {
        None => None,
        Some(m) => Some(CompactionMode::parse(m).ok_or_else(|| {
            invalid(
                "spec.etcd.autoCompactionMode",
                format!("{m:?} is not a mode; use \"periodic\" or \"revision\""),
            )
        })?),
    };
    match (mode, &t.auto_compaction_retention) {
        (None, None) => {}
        (mode, Some(ret)) => {
            let mode = mode.unwrap_or(CompactionMode::Periodic);
            let valid = match mode {
                CompactionMode::Revision => ret.parse::<u64>().is_ok(),
                CompactionMode::Periodic => {
                    ret.parse::<u64>().is_ok()
                        || (ret.len() > 1
                            && ret.ends_with(['h', 'm', 's'])
                            && ret[..ret.len() - 1].parse::<u64>().is_ok())
                }
            };
            if !valid {
                return Err(invalid(
                    "spec.etcd.autoCompactionRetention",
                    format!(
                        "{ret:?} does not fit mode {mode:?}; use e.g. \"1h\" (periodic) or \"1000\" (revision)"
                    ),
                ));
            }
            let m = if mode == CompactionMode::Periodic {
                "periodic"
            } else {
                "revision"
            };
            etcd_flags.push(format!("--auto-compaction-mode={m}"));
            etcd_flags.push(format!("--auto-compaction-retention={ret}"));
        }
        (Some(_), None) => {
            return Err(invalid(
                "spec.etcd.autoCompactionRetention",
                "is required when autoCompactionMode is set",
            ));
        }
    }
    etcd_flags.extend(validate_options(&t.options)?);
    let (pod_labels, pod_annotations) = match &spec.pod_metadata {
        None => Default::default(),
        Some(m) => validate_pod_metadata(m)?,
    };
    let priority_class_name = spec
        .priority_class_name
        .as_ref()
        .filter(|p| !p.is_empty())
        .map(|p| validate_dns_subdomain("spec.priorityClassName", "PriorityClass", p))
        .transpose()?;
    let restore = spec.restore.as_ref().map(validate_restore).transpose()?;
    if let Some(b) = &spec.backup {
        validate_backup(b)?;
    }
    Ok(Desired {
        namespace: cluster
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        uid: cluster.metadata.uid.clone().unwrap_or_default(),
        generation: cluster.metadata.generation.unwrap_or(0),
        name,
        replicas,
        version,
        image_repository: repo.to_string(),
        image: format!("{repo}:v{version}"),
        upgrade: VersionChange::Steady,
        upgrade_timeout_seconds: match spec.upgrade_timeout_seconds {
            None => DEFAULT_UPGRADE_TIMEOUT_SECONDS,
            Some(s) if s > 0 => s as u64,
            Some(_) => {
                return Err(invalid(
                    "spec.upgradeTimeoutSeconds",
                    "must be positive; the default is 300",
                ));
            }
        },
        pre_upgrade_backup: cluster
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(crate::api::ANNOTATION_PRE_UPGRADE_BACKUP))
            .and_then(|v| v.split_once(' '))
            .filter(|(v, _)| Version::parse(v) == Some(version))
            .map(|(_, what)| what.to_string()),
        backup_destination: spec
            .backup
            .as_ref()
            .map(|b| b.destination.clone())
            .filter(|d| !d.is_empty()),
        storage,
        resources: spec.resources.clone(),
        affinity: spec.affinity.clone(),
        tolerations: spec.tolerations.clone(),
        node_selector: spec.node_selector.clone(),
        topology_spread: spec
            .topology_spread_constraints
            .as_ref()
            .map(|c| validate_topology_spread(c))
            .transpose()?,
        priority_class_name,
        pod_labels,
        pod_annotations,
        etcd_flags,
        quota_backend_bytes: t.quota_backend_bytes,
        quota_raised_from: None,
        paused: spec.paused,
        refused: Vec::new(),
        lost_member_grace_seconds: match spec.lost_member_grace_seconds {
            None => DEFAULT_LOST_MEMBER_GRACE_SECONDS,
            Some(s) if s >= 0 => s as u64,
            Some(_) => {
                return Err(invalid(
                    "spec.lostMemberGraceSeconds",
                    "must not be negative; 0 replaces a lost member at once",
                ));
            }
        },
        restore,
        tls: spec
            .tls
            .as_ref()
            .map(validate_tls)
            .transpose()?
            .unwrap_or_default(),
        auth_secret: spec
            .auth
            .as_ref()
            .map(|a| validate_secret_name("spec.auth.userSecret", &a.user_secret))
            .transpose()?,
    })
}

/// The fields the API server would refuse only when the StatefulSet is applied (a pass that
/// fails every time): refused here, naming the constraint.
fn validate_topology_spread(
    cs: &[k8s_openapi::api::core::v1::TopologySpreadConstraint],
) -> Result<Vec<k8s_openapi::api::core::v1::TopologySpreadConstraint>, InvalidSpec> {
    const FIELD: &str = "spec.topologySpreadConstraints";
    for (i, c) in cs.iter().enumerate() {
        if c.max_skew < 1 {
            return Err(invalid(
                FIELD,
                format!("[{i}].maxSkew is {}; use 1 or more", c.max_skew),
            ));
        }
        if !is_qualified_name(&c.topology_key) {
            return Err(invalid(
                FIELD,
                format!(
                    "[{i}].topologyKey {:?} is not a label key; use e.g. topology.kubernetes.io/zone",
                    c.topology_key
                ),
            ));
        }
        if !matches!(
            c.when_unsatisfiable.as_str(),
            "DoNotSchedule" | "ScheduleAnyway"
        ) {
            return Err(invalid(
                FIELD,
                format!(
                    "[{i}].whenUnsatisfiable {:?} is neither DoNotSchedule nor ScheduleAnyway",
                    c.when_unsatisfiable
                ),
            ));
        }
    }
    Ok(cs.to_vec())
}

fn validate_secret_name(field: &'static str, name: &str) -> Result<String, InvalidSpec> {
    validate_dns_subdomain(field, "Secret", name)
}

/// A Kubernetes object name (DNS subdomain): what Secrets and PriorityClasses are named by.
fn validate_dns_subdomain(
    field: &'static str,
    kind: &str,
    name: &str,
) -> Result<String, InvalidSpec> {
    if !is_dns_subdomain(name) {
        return Err(invalid(
            field,
            format!("{name:?} is not a {kind} name; use lowercase letters, digits, '-' and '.'"),
        ));
    }
    Ok(name.to_string())
}

fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// etcd flags the engine sets itself (as `ETCD_*` variables of the member template or keys of
/// the member config): `spec.etcd.options` may not set them, nor the ones the typed tuning
/// fields own. `objects` tests that every variable of the template is in this list.
pub const ENGINE_FLAGS: &[&str] = &[
    "name",
    "data-dir",
    "wal-dir",
    "listen-client-urls",
    "advertise-client-urls",
    "listen-peer-urls",
    "initial-advertise-peer-urls",
    "initial-cluster",
    "initial-cluster-state",
    "initial-cluster-token",
    "cert-file",
    "key-file",
    "trusted-ca-file",
    "client-cert-auth",
    "peer-cert-file",
    "peer-key-file",
    "peer-trusted-ca-file",
    "peer-client-cert-auth",
    "peer-skip-client-san-verification",
    "experimental-peer-skip-client-san-verification",
    "auto-tls",
    "peer-auto-tls",
    "discovery",
    "discovery-srv",
    "discovery-token",
    "discovery-endpoints",
    "force-new-cluster",
    "config-file",
    "quota-backend-bytes",
    "auto-compaction-mode",
    "auto-compaction-retention",
];

/// Which typed field owns a flag `spec.etcd.options` may not set.
fn typed_field_of(flag: &str) -> Option<&'static str> {
    match flag {
        "quota-backend-bytes" => Some("spec.etcd.quotaBackendBytes"),
        "auto-compaction-mode" => Some("spec.etcd.autoCompactionMode"),
        "auto-compaction-retention" => Some("spec.etcd.autoCompactionRetention"),
        "cert-file"
        | "key-file"
        | "trusted-ca-file"
        | "client-cert-auth"
        | "peer-cert-file"
        | "peer-key-file"
        | "peer-trusted-ca-file"
        | "peer-client-cert-auth"
        | "auto-tls"
        | "peer-auto-tls"
        | "peer-skip-client-san-verification"
        | "experimental-peer-skip-client-san-verification" => Some("spec.tls"),
        _ => None,
    }
}

/// `spec.etcd.options` as flags, sorted by name (a stable template).
fn validate_options(options: &BTreeMap<String, String>) -> Result<Vec<String>, InvalidSpec> {
    const FIELD: &str = "spec.etcd.options";
    let mut flags = Vec::with_capacity(options.len());
    for (k, v) in options {
        let bare = k.trim_start_matches('-');
        if bare != k {
            return Err(invalid(
                FIELD,
                format!("{k:?}: name the flag without its dashes, e.g. {bare:?}"),
            ));
        }
        let well_formed = k.starts_with(|c: char| c.is_ascii_lowercase())
            && k.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if !well_formed {
            return Err(invalid(
                FIELD,
                format!(
                    "{k:?} is not an etcd flag name; use its long name without dashes, e.g. \"heartbeat-interval\""
                ),
            ));
        }
        if ENGINE_FLAGS.contains(&k.as_str()) {
            let why = match typed_field_of(k) {
                Some(f) => format!("set {f} instead"),
                None => "the engine sets it for every member; remove it".to_string(),
            };
            return Err(invalid(FIELD, format!("{k:?} cannot be set here: {why}")));
        }
        if v.is_empty() || v.contains(['\n', '\r', '\0']) {
            return Err(invalid(
                FIELD,
                format!(
                    "{k}: {v:?} is not a flag value; give one line, e.g. \"true\" for a switch"
                ),
            ));
        }
        flags.push(format!("--{k}={v}"));
    }
    Ok(flags)
}

/// Pod labels the engine sets (its selector, the StatefulSet's own): `spec.podMetadata` may not.
pub const ENGINE_POD_LABELS: &[&str] = &[
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
    "controller-revision-hash",
    "statefulset.kubernetes.io/pod-name",
    // `recover`'s fence: the client Service selects it while no pod may carry it.
    "etcd.kubectl-etcd.io/fenced-by",
];

/// A label or annotation key: an optional DNS-subdomain prefix and '/', then a name of at most
/// 63 letters, digits, '-', '_' and '.', starting and ending alphanumeric.
fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    prefix.is_none_or(is_dns_subdomain) && is_label_value(name) && !name.is_empty()
}

fn is_label_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

type PodMeta = (BTreeMap<String, String>, BTreeMap<String, String>);

fn validate_pod_metadata(m: &crate::api::PodMetadata) -> Result<PodMeta, InvalidSpec> {
    for (k, v) in &m.labels {
        if !is_qualified_name(k) {
            return Err(invalid(
                "spec.podMetadata.labels",
                format!("{k:?} is not a label key; use e.g. \"team\" or \"example.com/team\""),
            ));
        }
        if ENGINE_POD_LABELS.contains(&k.as_str()) {
            return Err(invalid(
                "spec.podMetadata.labels",
                format!("{k:?} is set by the engine (it selects its pods by it); use another key"),
            ));
        }
        if !is_label_value(v) {
            return Err(invalid(
                "spec.podMetadata.labels",
                format!(
                    "{k}: {v:?} is not a label value; use at most 63 letters, digits, '-', '_' and '.'"
                ),
            ));
        }
    }
    if let Some(k) = m.annotations.keys().find(|k| !is_qualified_name(k)) {
        return Err(invalid(
            "spec.podMetadata.annotations",
            format!("{k:?} is not an annotation key; use e.g. \"example.com/scrape\""),
        ));
    }
    Ok((m.labels.clone(), m.annotations.clone()))
}

fn validate_tls(t: &crate::api::TlsSpec) -> Result<Tls, InvalidSpec> {
    let client = match (&t.server_secret, &t.client_secret) {
        (None, None) => None,
        (Some(server), Some(client)) => Some(ClientTls {
            server_secret: validate_secret_name("spec.tls.serverSecret", server)?,
            client_secret: validate_secret_name("spec.tls.clientSecret", client)?,
        }),
        (Some(_), None) => {
            return Err(invalid(
                "spec.tls.clientSecret",
                "is required with serverSecret: the engine, the readiness probe and backups need a client certificate the members accept",
            ));
        }
        (None, Some(_)) => {
            return Err(invalid(
                "spec.tls.serverSecret",
                "is required with clientSecret: a client certificate is of use only when the members serve TLS",
            ));
        }
    };
    let peer_secret = t
        .peer_secret
        .as_deref()
        .map(|p| validate_secret_name("spec.tls.peerSecret", p))
        .transpose()?;
    Ok(Tls {
        client,
        peer_secret,
    })
}

// ---------------------------------------------------------------------------------------------
// Observed

/// A member or cluster id as etcdctl prints it (16 hex digits), in status and messages.
pub fn fmt_id(id: u64) -> String {
    format!("{id:016x}")
}

/// Everything one pass saw, Kubernetes and etcd alike. Built by `observe`, read by `plan`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Observed {
    /// The member StatefulSet, if it exists.
    pub statefulset: Option<WorkloadView>,
    /// Both Services and the disruption budget exist.
    pub supporting_objects: bool,
    /// The client Service selects no member: `recover` fenced clients off (`objects::is_fenced`).
    pub clients_fenced: bool,
    /// Data of the member-config ConfigMap (`None`: missing).
    pub config: Option<BTreeMap<String, String>>,
    /// Member pods by ordinal.
    pub pods: BTreeMap<u32, PodView>,
    /// Member volume claims by ordinal.
    pub volumes: BTreeMap<u32, VolumeView>,
    pub etcd: EtcdView,
    /// Ordinals of the members last recorded in status (the membership to rebuild the member
    /// config from when no member answers).
    pub known_members: std::collections::BTreeSet<u32>,
    /// The seed's restore pod, observed only for clusters restored from a snapshot.
    pub restore_pod: Option<RestorePodView>,
    /// The lowest version the members reported last time (`status.version`): what runs when
    /// no member answers now.
    pub last_version: Option<Version>,
    /// The version change recorded in status (`status.upgrade`).
    pub upgrade: Option<UpgradeRecord>,
    /// What the engine recorded of a full database it heals (`status.maintenance`).
    pub maintenance: Option<crate::api::MaintenanceStatus>,
    /// Members with a raised NOSPACE alarm (asked only when a member's health read failed for
    /// alarms).
    pub nospace: Vec<u64>,
    /// The keyspace's current revision as the leader answered it (asked only with `nospace`;
    /// 0 otherwise).
    pub revision: i64,
    /// When this pass observed: the planner's only clock (it reads none of its own).
    #[serde(skip)]
    pub now: jiff::Timestamp,
    /// Ordinal → when a member was first seen looking lost (`status.members[].lostSince`).
    #[serde(skip)]
    pub lost_since: BTreeMap<u32, jiff::Timestamp>,
}

/// The one-shot pod that restores a seed member's volume.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum RestorePodView {
    Running,
    /// A container cannot start and will not by itself (a missing Secret, an image that cannot
    /// be pulled): the reason and message the kubelet gives.
    Stuck(String),
    Succeeded,
    /// Why it failed (the failing container's termination message).
    Failed(String),
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WorkloadView {
    pub replicas: u32,
    /// Hash of the pod template the engine last applied (annotation).
    pub template_hash: Option<String>,
    /// The StatefulSet's current update revision.
    pub update_revision: Option<String>,
    /// Storage of its volume claim template (immutable once created); `None`: not observed.
    pub storage: Option<Storage>,
    /// TLS of its pod template (fixed once created); `None`: not observed.
    pub tls: Option<Tls>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PodView {
    pub name: String,
    pub ready: bool,
    pub running: bool,
    pub terminating: bool,
    /// A controller owns it (a StatefulSet; with none observed, a deleted one whose pods the
    /// garbage collector is about to delete). An orphan is adopted by the next StatefulSet.
    pub controlled: bool,
    pub revision: Option<String>,
    pub ip: Option<String>,
    /// Container restarts (a crash-looping member shows here).
    pub restarts: i32,
    /// Why the container is not running (e.g. ImagePullBackOff, CrashLoopBackOff).
    pub waiting_reason: Option<String>,
    /// The last lines etcd wrote before its container last stopped (termination message).
    pub last_exit_message: Option<String>,
    /// Seconds since the pod was created.
    pub age_seconds: u64,
    /// Its etcd answered the engine this pass, as this member id (whatever the member list says).
    pub answered_as: Option<u64>,
    /// Why the node this pod runs on, or its volume is pinned to (a Pending pod), cannot run it:
    /// deleted, NotReady for long, or tainted out-of-service (`None` when it can, or when Nodes
    /// may not be read).
    pub node_down: Option<String>,
    /// Seconds since its deletion's grace period ran out (0 while not deleted or within it): a
    /// pod still there long after is on a node that no longer confirms anything (NotReady,
    /// deleted, shut down).
    pub overdue_seconds: u64,
}

/// Seconds past its deletion's grace after which a pod is taken to be on a node that is gone.
pub const NODE_GONE_AFTER_SECONDS: u64 = 120;

impl PodView {
    /// Why this pod will not go by itself, and what to do, when it is stuck on a gone node.
    pub fn node_gone(&self) -> Option<String> {
        (self.terminating && self.overdue_seconds >= NODE_GONE_AFTER_SECONDS).then(|| {
            format!(
                "pod {} has been terminating {}s past its grace period: its node is gone (NotReady, deleted or \
                 shut down) and confirms nothing; if the node is shut down, taint it \
                 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute, or `kubectl delete pod {} --force` \
                 once you know its etcd no longer runs",
                self.name, self.overdue_seconds, self.name
            )
        })
    }
}

impl PodView {
    /// Why this pod's member has no usable data, read from etcd's last words; `None` when
    /// nothing says so (a pod that merely restarts, is evicted or waits for its node never does).
    pub fn data_loss(&self) -> Option<&'static str> {
        let msg = self.last_exit_message.as_deref()?;
        DATA_LOSS_SIGNS
            .iter()
            .find(|(sign, _)| msg.contains(sign))
            .map(|(_, what)| *what)
    }

    /// The line of etcd's last words that says why it stopped: a flag error (etcd prints its
    /// usage after it), a fatal or panic log line, else the last line; at most 200 characters.
    pub fn exit_reason(&self) -> Option<String> {
        let lines: Vec<&str> = self
            .last_exit_message
            .as_deref()?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        const SIGNS: [&str; 5] = [
            "flag provided but not defined",
            "\"level\":\"fatal\"",
            "\"level\":\"panic\"",
            "panic:",
            "error",
        ];
        let line = SIGNS
            .iter()
            .find_map(|sign| lines.iter().find(|l| l.to_lowercase().contains(sign)))
            .or(lines.last())?;
        Some(match line.char_indices().nth(200) {
            Some((i, _)) => format!("{}…", &line[..i]),
            None => line.to_string(),
        })
    }

    /// etcd refused to start this member for lack of any data (no write-ahead log): its volume
    /// is empty, so the member may be added back on it as a learner without wiping.
    pub fn proven_empty(&self) -> bool {
        self.last_exit_message
            .as_deref()
            .is_some_and(|m| EMPTY_VOLUME_SIGNS.iter().any(|s| m.contains(s)))
    }
}

/// Signs that etcd found no write-ahead log and exited before writing anything.
const EMPTY_VOLUME_SIGNS: &[&str] = &["couldn't find local name", "member count is unequal"];

/// What etcd prints when it cannot start a member from its data directory, and what that means.
const DATA_LOSS_SIGNS: &[(&str, &str)] = &[
    (
        "couldn't find local name",
        "its volume holds no data (the member config lets no member join on an empty volume)",
    ),
    (
        "member count is unequal",
        "its volume holds no data (it tried to join with a stale member list)",
    ),
    (
        "is out of range [lastIndex",
        "its log is behind what it acknowledged (its data was lost or rolled back)",
    ),
    ("crc mismatch", "its write-ahead log is corrupt"),
    (
        "failed to find database snapshot file",
        "its data directory is damaged (snapshot file missing)",
    ),
    (
        "failed to recover v3 backend",
        "its data directory is damaged",
    ),
    ("wal: file not found", "its data directory is damaged"),
    (
        "has already been bootstrapped",
        "its volume holds no data but the cluster remembers it",
    ),
];

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VolumeView {
    pub name: String,
    pub terminating: bool,
    /// What the volume says of a restore (`objects::ANNOTATION_RESTORE`): none on a volume the
    /// StatefulSet made, `Restoring` on the seed's claim the restore made, `Restored` once the
    /// seed was bootstrapped on it.
    pub restore: Option<RestoreMark>,
}

/// A restore's mark on the seed's volume: the durable record that the restore ran, which outlives
/// the EtcdCluster (`kubectl etcd delete` keeps volumes), so a restore never runs twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum RestoreMark {
    /// The restore made this claim and may (re)fill it.
    Restoring,
    /// The seed was bootstrapped on the restored data: it is a member's volume now.
    Restored,
}

impl RestoreMark {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Restoring => "restoring",
            Self::Restored => "restored",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Restoring, Self::Restored]
            .into_iter()
            .find(|m| m.as_str() == s)
    }
}

/// What etcd said, as a whole.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub enum EtcdView {
    /// No member pod was running, so nobody was asked.
    #[default]
    NotQueried,
    /// Pods run but no member answered.
    Unreachable {
        errors: Vec<String>,
    },
    /// Members answered with different cluster ids: two clusters answer to one name.
    Split {
        cluster_ids: Vec<u64>,
    },
    Reached(ClusterView),
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ClusterView {
    pub cluster_id: u64,
    pub leader: Option<u64>,
    pub members: Vec<MemberView>,
    /// The member list came from a member that passed no linearizable read (no leader confirmed
    /// its applied index), so it may lag behind membership changes: steps that destroy a member
    /// (remove, wipe) wait for a confirmed list.
    pub list_unconfirmed: bool,
    /// etcd's authentication is on: a member accepted the `spec.auth` user's credentials.
    pub auth_enabled: bool,
}

impl ClusterView {
    pub fn member_at(&self, ordinal: u32) -> Option<&MemberView> {
        self.members.iter().find(|m| m.ordinal == Some(ordinal))
    }
    pub fn voters(&self) -> impl Iterator<Item = &MemberView> {
        self.members.iter().filter(|m| !m.learner)
    }
    /// The cluster version as the leader reports it (else any member that knows it): the minor
    /// every member speaks, which a rollback to an older minor must respect.
    pub fn cluster_version(&self) -> Option<Version> {
        let of = |m: &MemberView| {
            m.status
                .as_ref()
                .and_then(|s| Version::parse(&s.cluster_version))
        };
        self.leader_member()
            .and_then(of)
            .or_else(|| self.members.iter().find_map(of))
    }
    pub fn learners(&self) -> impl Iterator<Item = &MemberView> {
        self.members.iter().filter(|m| m.learner)
    }
    pub fn leader_member(&self) -> Option<&MemberView> {
        self.leader
            .and_then(|l| self.members.iter().find(|m| m.id == l))
    }
}

/// One member as etcd lists it, joined with its own status answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MemberView {
    pub id: u64,
    /// Name etcd reports (empty for a learner that never started).
    pub name: String,
    /// Ordinal parsed from the peer URL (which the engine always builds); `None`: not ours.
    pub ordinal: Option<u32>,
    pub peer_url: String,
    pub learner: bool,
    pub started: bool,
    /// Its own answer to status/health; `None` when it did not answer.
    pub status: Option<MemberStatusView>,
    pub healthy: bool,
    pub error: Option<String>,
    /// The pod of this member's ordinal answers as another member: its volume holds someone
    /// else's data.
    pub identity_mismatch: bool,
    /// Its health read failed only for raised alarms (NOSPACE): it answers and its linearizable
    /// read passed, so it counts toward quorum, and a restart (a raised quota) may go ahead.
    pub alarmed: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemberStatusView {
    pub version: String,
    /// The cluster version this member reports on `/version` ("3.5.0"); empty while etcd has
    /// not decided it yet, or when `/version` did not answer.
    pub cluster_version: String,
    /// The db schema version (3.6+; empty before).
    pub storage_version: String,
    /// The target of an enabled downgrade ("3.5.0"; 3.6+; empty when none).
    pub downgrading_to: String,
    pub db_size: i64,
    /// Bytes of the db file holding data (the rest is free pages a defragmentation gives back).
    pub db_size_in_use: i64,
    pub raft_index: u64,
    pub raft_term: u64,
    pub leader: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::EtcdClusterSpec;

    fn cluster(spec: EtcdClusterSpec) -> EtcdCluster {
        crate::fixtures::cluster("demo").spec(|s| *s = spec).build()
    }
    fn spec(replicas: i32, version: &str) -> EtcdClusterSpec {
        crate::fixtures::cluster("demo")
            .replicas(replicas)
            .version(version)
            .build()
            .spec
    }

    #[test]
    fn a_new_cluster_gets_compaction_and_spreading_unless_its_spec_says_otherwise() {
        let mut s = spec(3, "3.5.16");
        new_cluster_defaults(&mut s);
        let d = validate(&cluster(s)).unwrap();
        assert!(
            d.etcd_flags
                .iter()
                .any(|f| f == "--auto-compaction-mode=periodic")
                && d.etcd_flags
                    .iter()
                    .any(|f| f == "--auto-compaction-retention=1h"),
            "{:?}",
            d.etcd_flags
        );
        let keys: Vec<_> = d
            .topology_spread
            .iter()
            .flatten()
            .map(|c| (c.topology_key.as_str(), c.when_unsatisfiable.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("topology.kubernetes.io/zone", "ScheduleAnyway"),
                ("kubernetes.io/hostname", "ScheduleAnyway")
            ]
        );
        // What the user chose stays: revision compaction, and no spreading at all.
        let mut s = spec(3, "3.5.16");
        s.etcd.auto_compaction_mode = Some("revision".into());
        s.etcd.auto_compaction_retention = Some("1000".into());
        s.topology_spread_constraints = Some(vec![]);
        new_cluster_defaults(&mut s);
        assert_eq!(s.etcd.auto_compaction_retention.as_deref(), Some("1000"));
        assert_eq!(s.etcd.auto_compaction_mode.as_deref(), Some("revision"));
        assert_eq!(s.topology_spread_constraints, Some(vec![]));
        // A spec that says nothing (a cluster created before the defaults) gets neither.
        let d = validate(&cluster(spec(3, "3.5.16"))).unwrap();
        assert!(d.topology_spread.is_none());
        assert!(!d.etcd_flags.iter().any(|f| f.contains("compaction")));
    }

    #[test]
    fn a_spread_constraint_the_api_server_would_refuse_is_refused_by_name() {
        for (skew, key, when, says) in [
            (0, "kubernetes.io/hostname", "ScheduleAnyway", "maxSkew"),
            (1, "not a key", "ScheduleAnyway", "topologyKey"),
            (
                1,
                "kubernetes.io/hostname",
                "Sometimes",
                "whenUnsatisfiable",
            ),
        ] {
            let mut s = spec(3, "3.5.16");
            s.topology_spread_constraints =
                Some(vec![k8s_openapi::api::core::v1::TopologySpreadConstraint {
                    max_skew: skew,
                    topology_key: key.into(),
                    when_unsatisfiable: when.into(),
                    ..Default::default()
                }]);
            let e = validate(&cluster(s)).unwrap_err();
            assert_eq!(e.field, "spec.topologySpreadConstraints");
            assert!(e.message.contains(says), "{e:?}");
        }
    }

    #[test]
    fn versions_parse_with_or_without_v() {
        assert_eq!(
            Version::parse("3.5.16"),
            Some(Version {
                major: 3,
                minor: 5,
                patch: 16
            })
        );
        assert_eq!(Version::parse("v3.4.23").unwrap().to_string(), "3.4.23");
        for bad in [
            "", "3", "3.5", "3.5.x", "3.5.16.1", "3..1", "-3.5.1", "3.5.1-rc",
        ] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn schedules_refuse_pvc_and_file_destinations_and_restores_read_pvc_but_not_files() {
        let with_backup = |dest: &str| {
            let mut s = spec(3, "3.5.16");
            s.backup = Some(crate::api::BackupSpec {
                destination: dest.into(),
                ..Default::default()
            });
            validate(&cluster(s))
        };
        assert!(with_backup("s3://b/p").is_ok());
        let e = with_backup("pvc://backups/etcd").unwrap_err();
        assert_eq!(e.field, "spec.backup.destination");
        assert!(
            e.message.contains("kubectl etcd backup NAME --to pvc://"),
            "{e}"
        );
        assert!(with_backup("file:///var/backups").is_err());

        let with_restore = |source: &str| {
            let mut s = spec(3, "3.5.16");
            s.restore = Some(crate::api::RestoreSpec {
                source: source.into(),
                ..Default::default()
            });
            validate(&cluster(s))
        };
        let d = with_restore("pvc://backups/etcd/x.db.zst").unwrap();
        assert_eq!(d.restore.unwrap().url, "pvc://backups/etcd/x.db.zst");
        let e = with_restore("file:///var/backups/x.db.zst").unwrap_err();
        assert!(e.message.contains("restore --from file://"), "{e}");
    }

    #[test]
    fn the_auth_user_secret_is_a_secret_name() {
        let mut s = spec(3, "3.6.15");
        assert_eq!(validate(&cluster(s.clone())).unwrap().auth_secret, None);
        s.auth = Some(crate::api::AuthSpec {
            user_secret: "etcd-root".into(),
        });
        assert_eq!(
            validate(&cluster(s.clone()))
                .unwrap()
                .auth_secret
                .as_deref(),
            Some("etcd-root")
        );
        for bad in ["", "Root", "root_user", "-root"] {
            s.auth = Some(crate::api::AuthSpec {
                user_secret: bad.into(),
            });
            let e = validate(&cluster(s.clone())).unwrap_err();
            assert_eq!(e.field, "spec.auth.userSecret", "{bad:?}: {e:?}");
        }
    }

    #[test]
    fn ids_are_formatted_like_etcdctl() {
        assert_eq!(fmt_id(0x8e9e05c52164694d), "8e9e05c52164694d");
        assert_eq!(fmt_id(0x2a), "000000000000002a");
    }

    fn tls(server: Option<&str>, client: Option<&str>, peer: Option<&str>) -> crate::api::TlsSpec {
        crate::api::TlsSpec {
            server_secret: server.map(Into::into),
            client_secret: client.map(Into::into),
            peer_secret: peer.map(Into::into),
        }
    }

    #[test]
    fn tls_needs_server_and_client_secrets_together_and_secret_names() {
        let mut s = spec(3, "3.6.15");
        s.tls = Some(tls(Some("srv"), Some("cli"), Some("peer")));
        let d = validate(&cluster(s.clone())).unwrap();
        assert_eq!(
            d.tls.client,
            Some(ClientTls {
                server_secret: "srv".into(),
                client_secret: "cli".into()
            })
        );
        assert_eq!(d.tls.peer_secret.as_deref(), Some("peer"));
        assert_eq!(
            (d.tls.client_scheme(), d.tls.peer_scheme()),
            ("https", "https")
        );
        s.tls = Some(tls(None, None, Some("peer")));
        let d = validate(&cluster(s.clone())).unwrap();
        assert_eq!(
            (d.tls.client_scheme(), d.tls.peer_scheme()),
            ("http", "https")
        );
        s.tls = None;
        assert_eq!(validate(&cluster(s.clone())).unwrap().tls, Tls::default());
        for (t, field) in [
            (tls(Some("srv"), None, None), "spec.tls.clientSecret"),
            (tls(None, Some("cli"), None), "spec.tls.serverSecret"),
            (tls(Some("Srv"), Some("cli"), None), "spec.tls.serverSecret"),
            (
                tls(Some("srv"), Some("cli-"), None),
                "spec.tls.clientSecret",
            ),
            (tls(None, None, Some("")), "spec.tls.peerSecret"),
        ] {
            s.tls = Some(t.clone());
            let e = validate(&cluster(s.clone())).unwrap_err();
            assert_eq!(e.field, field, "{t:?}: {e:?}");
        }
    }

    #[test]
    fn switching_tls_on_an_existing_cluster_is_refused_but_new_secrets_are_taken() {
        let on = |t: crate::api::TlsSpec| {
            let mut s = spec(3, "3.6.15");
            s.tls = Some(t);
            validate(&cluster(s)).unwrap()
        };
        let running = on(tls(Some("srv"), Some("cli"), None));
        let have = Observed {
            statefulset: Some(WorkloadView {
                tls: Some(running.tls.clone()),
                ..Default::default()
            }),
            ..Default::default()
        };
        // Off: refused, the members keep client TLS.
        let d = keep_immutable(validate(&cluster(spec(3, "3.6.15"))).unwrap(), &have);
        assert_eq!(d.tls, running.tls);
        assert_eq!(d.refused.len(), 1);
        assert_eq!(d.refused[0].field, "spec.tls");
        assert!(
            d.refused[0].message.contains(
                "cannot change from client TLS (server Secret srv, client Secret cli) to no TLS"
            ),
            "{}",
            d.refused[0].message
        );
        // Peer TLS added: refused too.
        let d = keep_immutable(on(tls(Some("srv"), Some("cli"), Some("peer"))), &have);
        assert_eq!(d.tls, running.tls);
        assert_eq!(d.refused.len(), 1);
        // Another server certificate: taken.
        let d = keep_immutable(on(tls(Some("srv2"), Some("cli"), None)), &have);
        assert!(d.refused.is_empty());
        assert_eq!(d.tls.client.unwrap().server_secret, "srv2");
        // Nothing observed yet: whatever the spec says.
        let d = keep_immutable(on(tls(None, None, Some("p"))), &Observed::default());
        assert!(d.refused.is_empty());
    }

    #[test]
    fn storage_changes_are_refused_and_the_existing_storage_kept() {
        let have = Observed {
            statefulset: Some(WorkloadView {
                storage: Some(Storage::Volume {
                    size: "1Gi".into(),
                    class: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut s = spec(3, "3.5.16");
        s.storage.size = Some("1024Mi".into());
        let d = keep_immutable(validate(&cluster(s.clone())).unwrap(), &have);
        assert!(d.refused.is_empty(), "the same size written differently");
        s.storage.size = Some("2Gi".into());
        let d = keep_immutable(validate(&cluster(s.clone())).unwrap(), &have);
        assert_eq!(d.refused.len(), 1);
        assert_eq!(d.refused[0].field, "spec.storage.size");
        assert!(
            d.refused[0].message.contains("from 1Gi to 2Gi"),
            "{}",
            d.refused[0]
        );
        assert!(d.refused[0].message.contains("put the old value back"));
        assert_eq!(
            d.storage,
            Storage::Volume {
                size: "1Gi".into(),
                class: None
            }
        );
        assert_eq!(d.replicas, 3, "the rest of the spec applies");
        s.storage.size = None;
        s.storage.storage_class_name = Some("fast".into());
        let d = keep_immutable(validate(&cluster(s.clone())).unwrap(), &have);
        assert_eq!(d.refused[0].field, "spec.storage.storageClassName");
        s.storage.storage_class_name = None;
        s.storage.ephemeral = true;
        let d = keep_immutable(validate(&cluster(s)).unwrap(), &have);
        assert_eq!(d.refused[0].field, "spec.storage.ephemeral");
        assert!(matches!(d.storage, Storage::Volume { .. }));
    }

    #[test]
    fn versions_compare_numerically_not_as_strings() {
        assert!(Version::parse("3.5.10").unwrap() > Version::parse("3.5.9").unwrap());
    }

    #[test]
    fn a_valid_spec_is_defaulted() {
        let d = validate(&cluster(spec(3, "3.5.16"))).unwrap();
        assert_eq!(d.replicas, 3);
        assert_eq!(d.image, "gcr.io/etcd-development/etcd:v3.5.16");
        assert_eq!(
            d.storage,
            Storage::Volume {
                size: "1Gi".into(),
                class: None
            }
        );
        assert_eq!(d.namespace, "ns");
        assert!(d.etcd_flags.is_empty());
    }

    #[test]
    fn replicas_out_of_range_are_rejected_with_the_fix() {
        for r in [0, -1, 10] {
            let e = validate(&cluster(spec(r, "3.5.16"))).unwrap_err();
            assert_eq!(e.field, "spec.replicas");
            assert!(e.message.contains("1 to 9"), "{e}");
        }
    }

    #[test]
    fn etcd_3_5_0_to_3_5_2_are_refused_as_unfit_for_production() {
        for v in ["3.5.0", "3.5.1", "3.5.2"] {
            let e = validate(&cluster(spec(3, v))).unwrap_err();
            assert_eq!(e.field, "spec.version", "{v}");
            assert!(e.message.contains("use 3.5.3 or later"), "{e}");
        }
        assert!(validate(&cluster(spec(3, "3.5.3"))).is_ok());
    }

    #[test]
    fn malformed_and_unsupported_versions_are_rejected() {
        for v in ["latest", "3.5", "2.3.8", "3.3.27", "3.9.0", "4.0.0"] {
            let e = validate(&cluster(spec(3, v))).unwrap_err();
            assert_eq!(e.field, "spec.version", "{v}");
        }
    }

    #[test]
    fn only_end_of_support_minors_are_warned_about_and_the_default_is_not_one() {
        let w = support_warning(Version::parse("3.4.23").unwrap()).unwrap();
        assert!(
            w.contains("etcd 3.4.23 is past etcd's end of support"),
            "{w}"
        );
        assert!(
            w.contains(DEFAULT_VERSION),
            "the warning names what to run: {w}"
        );
        for v in ["3.5.16", "3.5.30", "3.6.15", DEFAULT_VERSION] {
            assert_eq!(support_warning(Version::parse(v).unwrap()), None, "{v}");
        }
        let d = Version::parse(DEFAULT_VERSION).unwrap();
        assert!(
            d.minor + 1 >= MAX_MINOR && d.minor <= MAX_MINOR,
            "the default is of the newest minor the engine runs, or the one before while the newest is not yet proven on the whole suite"
        );
    }

    #[test]
    fn bad_names_are_rejected() {
        for n in ["", "Demo", "1demo", "demo-", "a_b", &"x".repeat(41)] {
            assert!(validate_name(n).is_err(), "{n}");
        }
        assert!(validate_name("demo-2").is_ok());
    }

    #[test]
    fn storage_size_must_be_a_positive_quantity() {
        let mut s = spec(3, "3.5.16");
        s.storage.size = Some("lots".into());
        assert_eq!(
            validate(&cluster(s.clone())).unwrap_err().field,
            "spec.storage.size"
        );
        s.storage.size = Some("0Gi".into());
        assert!(validate(&cluster(s.clone())).is_err());
        s.storage.size = Some("512Mi".into());
        s.storage.storage_class_name = Some("fast".into());
        assert_eq!(
            validate(&cluster(s.clone())).unwrap().storage,
            Storage::Volume {
                size: "512Mi".into(),
                class: Some("fast".into())
            }
        );
        s.storage.ephemeral = true;
        assert_eq!(validate(&cluster(s)).unwrap().storage, Storage::Ephemeral);
    }

    #[test]
    fn tuning_becomes_flags_and_bad_retention_is_rejected() {
        let mut s = spec(3, "3.5.16");
        s.etcd.quota_backend_bytes = Some(4 << 30);
        s.etcd.auto_compaction_mode = Some("revision".into());
        s.etcd.auto_compaction_retention = Some("1000".into());
        let d = validate(&cluster(s.clone())).unwrap();
        assert_eq!(
            d.etcd_flags,
            vec![
                "--quota-backend-bytes=4294967296",
                "--auto-compaction-mode=revision",
                "--auto-compaction-retention=1000"
            ]
        );
        s.etcd.auto_compaction_retention = Some("1h".into());
        assert_eq!(
            validate(&cluster(s.clone())).unwrap_err().field,
            "spec.etcd.autoCompactionRetention"
        );
        s.etcd.auto_compaction_mode = Some("periodic".into());
        assert!(validate(&cluster(s.clone())).is_ok());
        s.etcd.auto_compaction_retention = None;
        assert!(validate(&cluster(s)).is_err());
    }

    #[test]
    fn etcd_options_become_flags_and_engine_flags_are_refused_naming_the_way() {
        let with = |k: &str, v: &str| {
            let mut s = spec(3, "3.5.16");
            s.etcd.options = [(k.to_string(), v.to_string())].into();
            validate(&cluster(s))
        };
        assert_eq!(
            with("snapshot-count", "50000").unwrap().etcd_flags,
            vec!["--snapshot-count=50000"]
        );
        let refused = |k: &str, v: &str, says: &str| {
            let e = with(k, v).unwrap_err();
            assert_eq!(e.field, "spec.etcd.options");
            assert!(e.message.contains(says), "{k}={v}: {}", e.message);
        };
        refused("--heartbeat-interval", "250", "\"heartbeat-interval\"");
        refused("Heartbeat_Interval", "250", "not an etcd flag name");
        refused("initial-cluster", "a=b", "the engine sets it");
        refused("data-dir", "/tmp", "the engine sets it");
        refused("quota-backend-bytes", "1", "spec.etcd.quotaBackendBytes");
        refused("cert-file", "/x", "spec.tls");
        refused("enable-pprof", "", "not a flag value");
        refused("log-level", "info\n--force-new-cluster", "not a flag value");
    }

    #[test]
    fn pod_metadata_is_checked_and_the_engine_labels_are_its_own() {
        let with = |labels: &[(&str, &str)], annotations: &[(&str, &str)]| {
            let mut s = spec(3, "3.5.16");
            let m = |kv: &[(&str, &str)]| {
                kv.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            };
            s.pod_metadata = Some(crate::api::PodMetadata {
                labels: m(labels),
                annotations: m(annotations),
            });
            validate(&cluster(s))
        };
        let d = with(
            &[("team", "db"), ("example.com/tier", "")],
            &[("sidecar.istio.io/inject", "false")],
        )
        .unwrap();
        assert_eq!(d.pod_labels["team"], "db");
        assert_eq!(d.pod_annotations["sidecar.istio.io/inject"], "false");
        for (labels, says) in [
            (
                &[("app.kubernetes.io/instance", "other")][..],
                "set by the engine",
            ),
            (&[("bad key", "x")][..], "not a label key"),
            (&[("team", "has space")][..], "not a label value"),
            (&[("Example.com/x", "y")][..], "not a label key"),
        ] {
            let e = with(labels, &[]).unwrap_err();
            assert_eq!(e.field, "spec.podMetadata.labels");
            assert!(e.message.contains(says), "{labels:?}: {}", e.message);
        }
        let e = with(&[], &[("/x", "y")]).unwrap_err();
        assert_eq!(e.field, "spec.podMetadata.annotations");
        let mut s = spec(3, "3.5.16");
        s.priority_class_name = Some("High_Priority".into());
        assert_eq!(
            validate(&cluster(s)).unwrap_err().field,
            "spec.priorityClassName"
        );
    }

    #[test]
    fn the_exit_reason_is_the_line_that_says_why_not_the_usage_after_it() {
        let pod = |msg: &str| PodView {
            last_exit_message: Some(msg.into()),
            ..Default::default()
        };
        assert_eq!(
            pod("flag provided but not defined: -x\nUsage:\n  etcd [flags]\n    Start an etcd server.\n")
                .exit_reason()
                .as_deref(),
            Some("flag provided but not defined: -x")
        );
        let fatal = r#"{"level":"info","msg":"starting"}
{"level":"fatal","msg":"failed to start etcd","error":"listen tcp: address in use"}"#;
        assert!(pod(fatal).exit_reason().unwrap().contains("address in use"));
        assert_eq!(
            pod("one\ntwo\n\n").exit_reason().as_deref(),
            Some("two"),
            "no sign: the last line"
        );
        assert_eq!(
            pod(&"é".repeat(300)).exit_reason().unwrap().chars().count(),
            201
        );
        assert_eq!(PodView::default().exit_reason(), None);
    }
}
