//! `validate`: the only place that reads raw spec fields for configuration.

use std::collections::BTreeMap;

use serde::Serialize;

use super::desired::{
    BackupPlan, ClientTls, DEFAULT_IMAGE_REPOSITORY, DEFAULT_LOST_MEMBER_GRACE_SECONDS,
    DEFAULT_STORAGE_SIZE, DEFAULT_TOOLS_IMAGE, DEFAULT_UPGRADE_TIMEOUT_SECONDS, Desired,
    RestoreSource, Storage, Tls, TlsOrigin,
};
use super::version::{MAX_MINOR, MIN_MINOR, UNFIT_35_BELOW, Version, VersionChange};
use crate::api::{CompactionMode, EtcdCluster, MAX_REPLICAS};

/// `spec.backup`: a destination the operator can write, a schedule that parses, a known
/// compression. (The backup section is read by the backup schedule, not by the planner.)
pub(super) fn validate_backup(b: &crate::api::BackupSpec) -> Result<BackupPlan, InvalidSpec> {
    use crate::archive::store::{Location, Sse};
    let location = Location::parse(&b.destination)
        .map_err(|e| invalid("spec.backup.destination", e.to_string()))?;
    match location {
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
    let schedule = b
        .schedule
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(crate::archive::schedule::parse)
        .transpose()
        .map_err(|e| invalid("spec.backup.schedule", e))?;
    let compression = b
        .compression
        .as_deref()
        .map(str::parse::<crate::archive::codec::Compression>)
        .transpose()
        .map_err(|e| invalid("spec.backup.compression", e))?
        .unwrap_or_default();
    let sse = b
        .server_side_encryption
        .as_ref()
        .map(|s| Sse::parse(&s.algorithm, s.kms_key_id.as_deref()))
        .transpose()
        .map_err(|e| invalid("spec.backup.serverSideEncryption", e))?;
    Ok(BackupPlan {
        to: crate::archive::Destination {
            location,
            compression,
            credentials_secret: b.credentials_secret.clone().filter(|s| !s.is_empty()),
            sse,
            encryption: encryption(b.encryption.as_ref(), "spec.backup.encryption.keySecretRef")?,
        },
        schedule,
        suspend: b.suspend,
        run_on_create: b.run_on_create,
        retention: b.retention.clone(),
    })
}

/// A Secret reference of `spec.backup.encryption` or `spec.restore.encryption`.
fn encryption(
    e: Option<&crate::api::BackupEncryption>,
    field: &'static str,
) -> Result<Option<crate::archive::crypt::KeySecret>, InvalidSpec> {
    let Some(e) = e else { return Ok(None) };
    let k = e.key_secret();
    crate::archive::crypt::KeySecret::parse(&k.to_string())
        .map(Some)
        .map_err(|why| invalid(field, why))
}

pub(super) fn validate_restore(r: &crate::api::RestoreSpec) -> Result<RestoreSource, InvalidSpec> {
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
        encryption: encryption(
            r.encryption.as_ref(),
            "spec.restore.encryption.keySecretRef",
        )?,
    })
}

/// Why a spec can never work. The message names the field and the fix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InvalidSpec {
    pub field: &'static str,
    pub message: String,
}

pub fn invalid(field: &'static str, message: impl Into<String>) -> InvalidSpec {
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

/// "1Gi" → 1073741824 (the suffixes `validate_quantity` accepts), so "1024Mi" equals "1Gi" as
/// the API server canonicalises it.
pub fn quantity_bytes(q: &str) -> Option<f64> {
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

pub(super) fn validate_quantity(field: &'static str, q: &str) -> Result<(), InvalidSpec> {
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
///
/// Fields are checked in a fixed order (the first broken one is the one reported).
pub fn validate(cluster: &EtcdCluster) -> Result<Desired, InvalidSpec> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    validate_name(&name)?;
    let spec = &cluster.spec;
    let replicas = validate_replicas(spec.replicas as i64)?;
    let version = validate_version(&spec.version)?;
    let repo = validate_image_repository(spec.image_repository.as_deref())?;
    let storage = validate_storage(&spec.storage)?;
    let t = &spec.etcd;
    let mut etcd_flags = validate_tuning(t)?;
    etcd_flags.extend(validate_options(&t.options)?);
    let client_service = validate_client_service(spec.client_service.as_ref())?;
    let (pod_labels, pod_annotations) = validate_pod_metadata(spec.pod_metadata.as_ref())?;
    let priority_class_name = validate_priority_class(spec.priority_class_name.as_deref())?;
    let image_pull_secrets = validate_image_pull_secrets(spec.image_pull_secrets.as_deref())?;
    let cluster_domain = validate_cluster_domain(spec.cluster_domain.as_deref())?;
    let metrics_port = spec.metrics.as_ref().map(validate_metrics).transpose()?;
    let client_namespaces = validate_client_namespaces(spec.network_policy.as_ref())?;
    let restore = spec.restore.as_ref().map(validate_restore).transpose()?;
    let backup = spec.backup.as_ref().map(validate_backup).transpose()?;
    let recovery = super::recovery::validate(spec.recovery.as_ref(), &name, backup.as_ref())?;
    let upgrade_timeout_seconds = validate_upgrade_timeout(spec.upgrade_timeout_seconds)?;
    let topology_spread = spec
        .topology_spread_constraints
        .as_ref()
        .map(|c| validate_topology_spread(c))
        .transpose()?;
    let lost_member_grace_seconds = validate_lost_member_grace(spec.lost_member_grace_seconds)?;
    let tls = tls_of(&name, cluster)?;
    engine_peer_trust(&t.options, &tls)?;
    let server_names = validate_server_names(spec.tls.as_ref(), &tls)?;
    let auth = super::auth::validate(spec, &tls)?;
    Ok(Desired {
        namespace: cluster
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        uid: cluster.metadata.uid.clone().unwrap_or_default(),
        legacy_selector: false,
        generation: cluster.metadata.generation.unwrap_or(0),
        name,
        replicas,
        version,
        image_repository: repo.to_string(),
        image: format!("{repo}:v{version}"),
        upgrade: VersionChange::Steady,
        upgrade_timeout_seconds,
        pre_upgrade_backup: pre_upgrade_backup(cluster, version),
        backup_destination: backup.as_ref().map(|b| b.to.location.to_string()),
        backup,
        storage,
        resources: spec.resources.clone(),
        affinity: spec.affinity.clone(),
        tolerations: spec.tolerations.clone(),
        node_selector: spec.node_selector.clone(),
        topology_spread,
        priority_class_name,
        image_pull_secrets,
        cluster_domain,
        metrics_port,
        network_policy: spec
            .network_policy
            .as_ref()
            .and_then(|n| n.enabled)
            .unwrap_or(true),
        client_namespaces,
        operator: Default::default(),
        client_service,
        server_names,
        pod_labels,
        pod_annotations,
        etcd_flags,
        etcd_options: t.options.clone(),
        quota_backend_bytes: t.quota_backend_bytes,
        quota_raised_from: None,
        paused: spec.paused,
        refused: Vec::new(),
        lost_member_grace_seconds,
        restore,
        pki: tls.pki,
        cert_manager: tls.cert_manager,
        insecure_asked: tls.insecure_asked,
        tls_origin: tls.origin,
        tls: tls.tls,
        tls_switch: None,
        auth_secret: auth.user_secret,
        etcd_auth: auth.etcd_auth,
        kept_client_cn: None,
        maintenance: super::maintenance::validate(spec.maintenance.as_ref())?,
        adopt: spec
            .adopt
            .as_ref()
            .map(super::adopt::validate_adopt)
            .transpose()?,
        recovery,
        hibernate: spec.hibernate,
        hibernate_snapshot: hibernate_snapshot(cluster),
    })
}

/// `spec.imageRepository`, the default when unset.
fn validate_image_repository(repo: Option<&str>) -> Result<&str, InvalidSpec> {
    let repo = repo.unwrap_or(DEFAULT_IMAGE_REPOSITORY);
    if repo.is_empty() || repo.contains(char::is_whitespace) || repo.contains('@') {
        return Err(invalid(
            "spec.imageRepository",
            format!("{repo:?} is not an image repository; use e.g. {DEFAULT_IMAGE_REPOSITORY}"),
        ));
    }
    Ok(repo)
}

/// `spec.storage`: an emptyDir, or a volume of a valid size (the default when unset).
fn validate_storage(s: &crate::api::StorageSpec) -> Result<Storage, InvalidSpec> {
    if s.ephemeral {
        return Ok(Storage::Ephemeral);
    }
    let size = s
        .size
        .clone()
        .unwrap_or_else(|| DEFAULT_STORAGE_SIZE.to_string());
    validate_quantity("spec.storage.size", &size)?;
    Ok(Storage::Volume {
        size,
        class: s.storage_class_name.clone().filter(|c| !c.is_empty()),
    })
}

/// The typed tuning fields of `spec.etcd` (quota, auto-compaction) as etcd flags.
fn validate_tuning(t: &crate::api::EtcdTuning) -> Result<Vec<String>, InvalidSpec> {
    let mut etcd_flags = Vec::new();
    if let Some(q) = t.quota_backend_bytes {
        if q < 0 {
            return Err(invalid(
                "spec.etcd.quotaBackendBytes",
                "must not be negative; 0 means etcd's default",
            ));
        }
        etcd_flags.push(format!("--quota-backend-bytes={q}"));
    }
    etcd_flags.extend(validate_auto_compaction(
        t.auto_compaction_mode.as_deref(),
        t.auto_compaction_retention.as_deref(),
    )?);
    Ok(etcd_flags)
}

/// `spec.etcd.autoCompactionMode` and `autoCompactionRetention` as etcd flags: a retention that
/// fits the mode (periodic when unset), and none of the two without the retention.
fn validate_auto_compaction(
    mode: Option<&str>,
    retention: Option<&str>,
) -> Result<Vec<String>, InvalidSpec> {
    let mode = match mode {
        None => None,
        Some(m) => Some(CompactionMode::parse(m).ok_or_else(|| {
            invalid(
                "spec.etcd.autoCompactionMode",
                format!("{m:?} is not a mode; use \"periodic\" or \"revision\""),
            )
        })?),
    };
    match (mode, retention) {
        (None, None) => Ok(Vec::new()),
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
            Ok(vec![
                format!("--auto-compaction-mode={m}"),
                format!("--auto-compaction-retention={ret}"),
            ])
        }
        (Some(_), None) => Err(invalid(
            "spec.etcd.autoCompactionRetention",
            "is required when autoCompactionMode is set",
        )),
    }
}

fn validate_upgrade_timeout(seconds: Option<i64>) -> Result<u64, InvalidSpec> {
    match seconds {
        None => Ok(DEFAULT_UPGRADE_TIMEOUT_SECONDS),
        Some(s) if s > 0 => Ok(s as u64),
        Some(_) => Err(invalid(
            "spec.upgradeTimeoutSeconds",
            "must be positive; the default is 300",
        )),
    }
}

fn validate_lost_member_grace(seconds: Option<i64>) -> Result<u64, InvalidSpec> {
    match seconds {
        None => Ok(DEFAULT_LOST_MEMBER_GRACE_SECONDS),
        Some(s) if s >= 0 => Ok(s as u64),
        Some(_) => Err(invalid(
            "spec.lostMemberGraceSeconds",
            "must not be negative; 0 replaces a lost member at once",
        )),
    }
}

/// The snapshot recorded for this hibernation: `ANNOTATION_HIBERNATE_SNAPSHOT` says
/// `<generation> <url or skipped>`, and counts only for the generation it was written for (the
/// one that set `spec.hibernate`), so that the record of an earlier hibernation never stands in
/// for a new one.
fn hibernate_snapshot(cluster: &EtcdCluster) -> Option<String> {
    let (generation, what) = cluster
        .metadata
        .annotations
        .as_ref()?
        .get(crate::api::ANNOTATION_HIBERNATE_SNAPSHOT)?
        .split_once(' ')?;
    (generation.parse::<i64>().ok()? == cluster.metadata.generation.unwrap_or(0))
        .then(|| what.to_string())
}

/// What the pre-upgrade backup annotation says was taken for `version` (an annotation naming
/// another version is of an earlier upgrade).
fn pre_upgrade_backup(cluster: &EtcdCluster, version: Version) -> Option<String> {
    cluster
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(crate::api::ANNOTATION_PRE_UPGRADE_BACKUP))
        .and_then(|v| v.split_once(' '))
        .filter(|(v, _)| Version::parse(v) == Some(version))
        .map(|(_, what)| what.to_string())
}

/// The fields the API server would refuse only when the StatefulSet is applied (a pass that
/// fails every time): refused here, naming the constraint.
pub(super) fn validate_topology_spread(
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

/// `spec.priorityClassName` (empty: none).
fn validate_priority_class(name: Option<&str>) -> Result<Option<String>, InvalidSpec> {
    name.filter(|p| !p.is_empty())
        .map(|p| validate_dns_subdomain("spec.priorityClassName", "PriorityClass", p))
        .transpose()
}

/// `spec.imagePullSecrets`: each a Secret name, none twice.
fn validate_image_pull_secrets(
    refs: Option<&[k8s_openapi::api::core::v1::LocalObjectReference]>,
) -> Result<Vec<String>, InvalidSpec> {
    let mut names: Vec<String> = Vec::new();
    for r in refs.unwrap_or_default() {
        let name = validate_secret_name("spec.imagePullSecrets", &r.name)?;
        if names.contains(&name) {
            return Err(invalid(
                "spec.imagePullSecrets",
                format!("Secret {name:?} is named twice; name each Secret once"),
            ));
        }
        names.push(name);
    }
    Ok(names)
}

/// `spec.networkPolicy.clientNamespaces`: namespace names (RFC 1123 labels), each once;
/// returned sorted.
fn validate_client_namespaces(
    spec: Option<&crate::api::NetworkPolicySpec>,
) -> Result<Vec<String>, InvalidSpec> {
    let field = "spec.networkPolicy.clientNamespaces";
    let mut names: Vec<String> = Vec::new();
    for n in spec
        .map(|s| s.client_namespaces.as_slice())
        .unwrap_or_default()
    {
        if !is_dns_label(n) {
            return Err(invalid(
                field,
                format!(
                    "{n:?} is not a namespace name; list namespaces by name (at most 63 lowercase \
                     letters, digits and '-'), e.g. [\"billing\"]: no patterns, no labels"
                ),
            ));
        }
        if names.contains(n) {
            return Err(invalid(
                field,
                format!("namespace {n:?} is listed twice; list each once"),
            ));
        }
        names.push(n.clone());
    }
    names.sort();
    Ok(names)
}

/// A namespace name (RFC 1123 label): 1-63 lowercase letters, digits and '-', neither first
/// nor last.
pub fn is_dns_label(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

pub(super) fn validate_secret_name(field: &'static str, name: &str) -> Result<String, InvalidSpec> {
    validate_dns_subdomain(field, "Secret", name)
}

/// A Kubernetes object name (DNS subdomain): what Secrets and PriorityClasses are named by.
pub(super) fn validate_dns_subdomain(
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

/// Checks `spec.clusterDomain` (absent or empty: `cluster.local`): dot-separated DNS labels
/// (1-63 lowercase letters, digits and '-', neither first nor last), a trailing dot dropped.
pub fn validate_cluster_domain(domain: Option<&str>) -> Result<String, InvalidSpec> {
    let Some(given) = domain.filter(|d| !d.is_empty()) else {
        return Ok(crate::keys::DEFAULT_CLUSTER_DOMAIN.into());
    };
    let domain = given.strip_suffix('.').unwrap_or(given);
    if domain.len() > 200 || !domain.split('.').all(is_dns_label) {
        return Err(invalid(
            "spec.clusterDomain",
            format!(
                "{domain:?} is not a DNS domain; use the kubelet's clusterDomain, e.g. cluster.local \
                 (lowercase letters, digits, '-' and '.')"
            ),
        ));
    }
    Ok(domain.to_string())
}

/// A Kubernetes object name (RFC 1123 subdomain): Secrets, PriorityClasses.
pub fn is_dns_subdomain(name: &str) -> bool {
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
    "listen-metrics-urls",
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
pub(super) fn typed_field_of(flag: &str) -> Option<&'static str> {
    match flag {
        "quota-backend-bytes" => Some("spec.etcd.quotaBackendBytes"),
        "listen-metrics-urls" => Some("spec.metrics"),
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

/// The etcd flags `spec.etcd.options` may set without the operator's leave: tuning of timing,
/// sizes, compaction, corruption checks and logging, none of which opens a listener, weakens
/// TLS or durability, or turns on an old API. Anything else (`enable-pprof`, `enable-v2`,
/// `unsafe-no-fsync`, `listen-client-http-urls`, `cipher-suites`, `tls-min-version`,
/// `feature-gates`, …) needs `--allow-etcd-option NAME` on the operator (and the CLI) that runs
/// the cluster (`keep_options`).
pub const TUNING_OPTIONS: &[&str] = &[
    "heartbeat-interval",
    "election-timeout",
    "snapshot-count",
    "snapshot-catchup-entries",
    "experimental-snapshot-catchup-entries",
    "max-snapshots",
    "max-wals",
    "max-txn-ops",
    "max-request-bytes",
    "max-concurrent-streams",
    "max-learners",
    "experimental-max-learners",
    "grpc-keepalive-min-time",
    "grpc-keepalive-interval",
    "grpc-keepalive-timeout",
    "backend-batch-interval",
    "backend-batch-limit",
    "backend-bbolt-freelist-type",
    "experimental-backend-bbolt-freelist-type",
    "compaction-batch-limit",
    "experimental-compaction-batch-limit",
    "compaction-sleep-interval",
    "experimental-compaction-sleep-interval",
    "corrupt-check-time",
    "experimental-corrupt-check-time",
    "initial-corrupt-check",
    "experimental-initial-corrupt-check",
    "compact-hash-check-time",
    "experimental-compact-hash-check-time",
    "experimental-compact-hash-check-enabled",
    "watch-progress-notify-interval",
    "experimental-watch-progress-notify-interval",
    "warning-apply-duration",
    "experimental-warning-apply-duration",
    "warning-unary-request-duration",
    "experimental-warning-unary-request-duration",
    "bootstrap-defrag-threshold-megabytes",
    "experimental-bootstrap-defrag-threshold-megabytes",
    "downgrade-check-time",
    "experimental-downgrade-check-time",
    "pre-vote",
    "log-level",
];

/// Which `spec.etcd.options` a driver lets through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionLeave {
    /// Any well-formed flag: the CLI's passes, which write the StatefulSet with their user's own
    /// rights (who could write any flag into it directly).
    Any,
    /// The tuning flags and these (`--allow-etcd-option`): the operator, whose rights are not
    /// the spec writer's.
    Tuning(Vec<String>),
}

impl OptionLeave {
    /// Whether option `name` may be set.
    pub fn allows(&self, name: &str) -> bool {
        match self {
            OptionLeave::Any => true,
            OptionLeave::Tuning(extra) => {
                TUNING_OPTIONS.contains(&name) || extra.iter().any(|a| a == name)
            }
        }
    }
}

/// The error of option `name` off the allow list: the flag, and both ways out.
fn not_allowed(name: &str, what: &str) -> InvalidSpec {
    invalid(
        "spec.etcd.options",
        format!(
            "{name:?} is not a tuning flag this operator allows{what}; remove it, or give \
             `--allow-etcd-option {name}` to the operator (`kubectl etcd operate`) and to \
             `kubectl etcd create` (tuning flags such as heartbeat-interval, election-timeout and \
             snapshot-count need no leave)"
        ),
    )
}

/// The spec's options the driver may not set: an error naming the first, for verbs that refuse
/// before they write (`kubectl etcd create`).
pub fn check_options(d: &Desired, leave: &OptionLeave) -> Result<(), InvalidSpec> {
    match d.etcd_options.keys().find(|k| !leave.allows(k)) {
        Some(k) => Err(not_allowed(k, "")),
        None => Ok(()),
    }
}

/// The options off the allow list, as a pass applies them: a member template that runs one
/// already keeps it (the cluster is not changed behind its owner's back), any other is left out
/// of the template; either way the cluster's `SpecRefused` condition names it. `running`: the
/// etcd command of the StatefulSet's template (`None`: no StatefulSet yet). Pure.
pub fn keep_options(mut d: Desired, running: Option<&[String]>, leave: &OptionLeave) -> Desired {
    let refused: Vec<(String, String)> = d
        .etcd_options
        .iter()
        .filter(|(k, _)| !leave.allows(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in refused {
        let flag = format!("--{k}={v}");
        if running.is_some_and(|r| r.contains(&flag)) {
            d.refused.push(not_allowed(
                &k,
                " (the running members keep it until it is removed)",
            ));
        } else {
            d.etcd_flags.retain(|f| f != &flag);
            d.etcd_options.remove(&k);
            d.refused
                .push(not_allowed(&k, " (left out of the members)"));
        }
    }
    d
}

/// The flags of peer trust the engine sets in modes managed and certManager, where it knows the
/// peer certificate's CN (`objects::allowed_peer_cn`): `peer-cert-allowed-cn`, and
/// `peer-cert-allowed-hostname`, which etcd refuses beside it. Mode secrets leaves both to the
/// spec (the engine does not know the CN of the user's certificates).
pub const PEER_TRUST_FLAGS: [&str; 2] = ["peer-cert-allowed-cn", "peer-cert-allowed-hostname"];

fn engine_peer_trust(
    options: &BTreeMap<String, String>,
    tls: &TlsChoice,
) -> Result<(), InvalidSpec> {
    let issued = tls.pki.is_some() || tls.cert_manager.is_some();
    match PEER_TRUST_FLAGS.iter().find(|f| options.contains_key(**f)) {
        Some(f) if issued => Err(invalid(
            "spec.etcd.options",
            format!(
                "{f:?} cannot be set here: with the certificates the engine has issued, the peer port admits only the cluster's peer certificate already; remove it (or use spec.tls.mode: secrets to choose)"
            ),
        )),
        _ => Ok(()),
    }
}

/// `spec.etcd.options` as flags, sorted by name (a stable template).
pub(super) fn validate_options(
    options: &BTreeMap<String, String>,
) -> Result<Vec<String>, InvalidSpec> {
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

pub use crate::keys::ENGINE_POD_LABELS;

/// A label or annotation key: an optional DNS-subdomain prefix and '/', then a name of at most
/// 63 letters, digits, '-', '_' and '.', starting and ending alphanumeric.
pub(super) fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    prefix.is_none_or(is_dns_subdomain) && is_label_value(name) && !name.is_empty()
}

pub(super) fn is_label_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

pub(super) type PodMeta = (BTreeMap<String, String>, BTreeMap<String, String>);

pub(super) fn validate_pod_metadata(
    m: Option<&crate::api::PodMetadata>,
) -> Result<PodMeta, InvalidSpec> {
    let Some(m) = m else {
        return Ok(Default::default());
    };
    validate_metadata(
        ("spec.podMetadata.labels", "spec.podMetadata.annotations"),
        &m.labels,
        &m.annotations,
    )
}

/// `spec.clientService`: labels and annotations as for pods, source ranges as CIDRs and only
/// for a load balancer.
fn validate_client_service(
    s: Option<&crate::api::ClientServiceSpec>,
) -> Result<super::ClientService, InvalidSpec> {
    use crate::api::ClientServiceType;
    let Some(s) = s else {
        return Ok(Default::default());
    };
    let (labels, annotations) = validate_metadata(
        (
            "spec.clientService.labels",
            "spec.clientService.annotations",
        ),
        &s.labels,
        &s.annotations,
    )?;
    let field = "spec.clientService.loadBalancerSourceRanges";
    if !s.load_balancer_source_ranges.is_empty() && s.type_ != Some(ClientServiceType::LoadBalancer)
    {
        return Err(invalid(
            field,
            "source ranges apply to a load balancer only; set spec.clientService.type: LoadBalancer or remove them".to_string(),
        ));
    }
    if let Some(bad) = s.load_balancer_source_ranges.iter().find(|r| !is_cidr(r)) {
        return Err(invalid(
            field,
            format!("{bad:?} is not a CIDR; use e.g. 10.0.0.0/8 or fd00::/8"),
        ));
    }
    let hash = serde_json::to_string(s).unwrap_or_default();
    Ok(super::ClientService {
        type_: s.type_.map(ClientServiceType::as_str),
        labels,
        annotations,
        source_ranges: s.load_balancer_source_ranges.clone(),
        hash: Some(format!("{:016x}", super::fnv1a(&hash))),
    })
}

/// `spec.tls.serverNames`: DNS names (a leading `*.` allowed) or IP addresses, each once, and
/// only where the engine or cert-manager issues the server certificate.
fn validate_server_names(
    spec: Option<&crate::api::TlsSpec>,
    tls: &TlsChoice,
) -> Result<Vec<String>, InvalidSpec> {
    let field = "spec.tls.serverNames";
    let names = spec.map(|t| t.server_names.clone()).unwrap_or_default();
    if names.is_empty() {
        return Ok(names);
    }
    if tls.pki.is_none() && tls.cert_manager.is_none() {
        return Err(invalid(
            field,
            "the server certificate is issued only in modes managed and certManager; in mode \
             secrets put the names into your own certificate"
                .to_string(),
        ));
    }
    let mut seen: Vec<&String> = Vec::new();
    for n in &names {
        let dns = n.strip_prefix("*.").unwrap_or(n);
        if n.parse::<std::net::IpAddr>().is_err() && !is_dns_subdomain(dns) {
            return Err(invalid(
                field,
                format!(
                    "{n:?} is neither a DNS name nor an IP address; use e.g. etcd.example.com, *.example.com or 203.0.113.10"
                ),
            ));
        }
        if seen.contains(&n) {
            return Err(invalid(field, format!("{n:?} is named twice")));
        }
        seen.push(n);
    }
    Ok(names)
}

/// An address block: an IPv4 or IPv6 address, '/', and a prefix length it holds.
fn is_cidr(s: &str) -> bool {
    let Some((ip, len)) = s.split_once('/') else {
        return false;
    };
    let Ok(len) = len.parse::<u8>() else {
        return false;
    };
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => len <= 32,
        Ok(std::net::IpAddr::V6(_)) => len <= 128,
        Err(_) => false,
    }
}

/// Labels and annotations the engine adds to an object of its own (`fields`: where the spec
/// names them): keys qualified names, label values valid, none of the engine's own labels.
fn validate_metadata(
    fields: (&'static str, &'static str),
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> Result<PodMeta, InvalidSpec> {
    for (k, v) in labels {
        if !is_qualified_name(k) {
            return Err(invalid(
                fields.0,
                format!("{k:?} is not a label key; use e.g. \"team\" or \"example.com/team\""),
            ));
        }
        if ENGINE_POD_LABELS.contains(&k.as_str()) {
            return Err(invalid(
                fields.0,
                format!("{k:?} is set by the engine (it selects its pods by it); use another key"),
            ));
        }
        if !is_label_value(v) {
            return Err(invalid(
                fields.0,
                format!(
                    "{k}: {v:?} is not a label value; use at most 63 letters, digits, '-', '_' and '.'"
                ),
            ));
        }
    }
    if let Some(k) = annotations.keys().find(|k| !is_qualified_name(k)) {
        return Err(invalid(
            fields.1,
            format!("{k:?} is not an annotation key; use e.g. \"example.com/scrape\""),
        ));
    }
    Ok((labels.clone(), annotations.clone()))
}

/// The TLS mode `spec.tls` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsMode {
    Managed,
    CertManager,
    Secrets,
    None,
}

/// What `validate_tls_mode` makes of `spec.tls`.
#[derive(Debug)]
pub(super) struct TlsChoice {
    /// The Secrets the members run with.
    pub tls: Tls,
    /// Mode managed: the engine's CA and what it issues.
    pub pki: Option<super::pki::ManagedPki>,
    /// Mode certManager: the issuer.
    pub cert_manager: Option<super::pki::CertManagerTls>,
    /// Plain http asked for explicitly.
    pub insecure_asked: bool,
    pub origin: TlsOrigin,
}

/// `spec.tls` of `cluster` (named `name`), the default of a spec naming no mode decided from its
/// status (`unset_tls_mode`), and no move between managed and certManager (`issuer_kept`).
fn tls_of(name: &str, cluster: &EtcdCluster) -> Result<TlsChoice, InvalidSpec> {
    let status = cluster.status.as_ref();
    let unset = unset_tls_mode(status, cluster.spec.adopt.is_some());
    let tls = validate_tls_mode(name, cluster.spec.tls.as_ref(), unset)?;
    issuer_kept(status, &tls)?;
    Ok(tls)
}

/// managed and certManager run the same Secrets, each signed by a CA the members loaded at
/// start: a running cluster moved from one to the other would have its certificates rewritten
/// by another CA, which the members do not trust, and lose quorum. Refused once the cluster
/// recorded its mode (`status.tls.mode`).
fn issuer_kept(
    status: Option<&crate::api::EtcdClusterStatus>,
    tls: &TlsChoice,
) -> Result<(), InvalidSpec> {
    let recorded = status.and_then(|s| s.tls.as_ref()).map(|t| t.mode.as_str());
    let (from, to) = match recorded {
        Some("managed") if tls.cert_manager.is_some() => ("managed", "certManager"),
        Some("certManager") if tls.pki.is_some() => ("certManager", "managed"),
        _ => return Ok(()),
    };
    Err(invalid(
        "spec.tls.mode",
        format!(
            "the cluster runs TLS mode {from}; moving it to {to} would rewrite every certificate \
             from a CA the members do not trust: set mode: {from} again (a new cluster restored \
             from a backup can use {to})"
        ),
    ))
}

/// The mode a spec that names neither a mode nor Secrets gets, and why (`TlsOrigin`).
///
/// New clusters are secure by default, and old ones must not flip: a switch of TLS on a running
/// cluster is refused (`keep_tls`), so a default that changed what an existing cluster runs
/// would leave it refusing its own spec. So the default is decided once, when the cluster is
/// born, and remembered in `status.tls.mode` (written by every pass, `plan::pki::status`):
///
/// ```text
///   status.tls.mode managed | none   ──▶ that mode (Recorded)
///   no record, status shows members  ──▶ none     (BornBefore: made before the record existed)
///   no record, spec.adopt            ──▶ none     (Adopting: the old members speak what they speak)
///   no record, no sign of a member   ──▶ managed  (Birth; keep_tls follows a StatefulSet that
///                                                  exists all the same: a status lost, e.g. a
///                                                  manifest restored by a backup tool)
/// ```
///
/// A `secrets` record without Secrets in the spec (they were removed) is no birth decision: it
/// reads as `none`, and `keep_tls` refuses the change as it refuses any other.
pub fn unset_tls_mode(
    status: Option<&crate::api::EtcdClusterStatus>,
    adopting: bool,
) -> (TlsMode, TlsOrigin) {
    match status.and_then(|s| s.tls.as_ref()).map(|t| t.mode.as_str()) {
        Some("managed") => return (TlsMode::Managed, TlsOrigin::Recorded),
        Some("none") => return (TlsMode::None, TlsOrigin::Recorded),
        _ => {}
    }
    let ran =
        status.is_some_and(|s| s.cluster_id.is_some() || !s.members.is_empty() || s.tls.is_some());
    if ran {
        (TlsMode::None, TlsOrigin::BornBefore)
    } else if adopting {
        (TlsMode::None, TlsOrigin::Adopting)
    } else {
        (TlsMode::Managed, TlsOrigin::Birth)
    }
}

/// `spec.tls`: the TLS the members run (Secret names), the managed CA's settings in managed mode,
/// whether plain http was asked for explicitly, and where the mode came from. Without a mode,
/// Secrets named mean `secrets`; none named means `unset` (see `unset_tls_mode`; no server-side
/// default, see `TlsSpec::mode`).
pub(super) fn validate_tls_mode(
    name: &str,
    t: Option<&crate::api::TlsSpec>,
    unset: (TlsMode, TlsOrigin),
) -> Result<TlsChoice, InvalidSpec> {
    let empty = crate::api::TlsSpec::default();
    let t = t.unwrap_or(&empty);
    let names_secrets =
        t.server_secret.is_some() || t.client_secret.is_some() || t.peer_secret.is_some();
    let (mode, origin) = match t.mode.as_deref() {
        None if names_secrets => (TlsMode::Secrets, TlsOrigin::Spec),
        None if t.issuer_ref.is_some() => (TlsMode::CertManager, TlsOrigin::Spec),
        None => unset,
        Some("managed") => (TlsMode::Managed, TlsOrigin::Spec),
        Some("certManager") => (TlsMode::CertManager, TlsOrigin::Spec),
        Some("secrets") => (TlsMode::Secrets, TlsOrigin::Spec),
        Some("none") => (TlsMode::None, TlsOrigin::Spec),
        Some(other) => {
            return Err(invalid(
                "spec.tls.mode",
                format!("{other:?} is not a TLS mode; use managed, certManager, secrets or none"),
            ));
        }
    };
    let ca_generation = fields_of_mode(mode, t)?;
    let choice = |tls, pki, cert_manager, insecure_asked| TlsChoice {
        tls,
        pki,
        cert_manager,
        insecure_asked,
        origin,
    };
    match mode {
        TlsMode::Managed | TlsMode::CertManager if names_secrets => Err(invalid(
            "spec.tls.mode",
            format!(
                "{} issues its own certificates: remove serverSecret, clientSecret and peerSecret, or use mode: secrets",
                if mode == TlsMode::Managed {
                    "managed"
                } else {
                    "certManager"
                }
            ),
        )),
        TlsMode::None if names_secrets => Err(invalid(
            "spec.tls.mode",
            "none runs plain http: remove serverSecret, clientSecret and peerSecret, or use mode: secrets",
        )),
        TlsMode::Secrets if !names_secrets => Err(invalid(
            "spec.tls.mode",
            "secrets needs serverSecret and clientSecret (and peerSecret for peer TLS); or use mode: managed",
        )),
        TlsMode::Managed => {
            let leaf_lifetime_seconds = t
                .certificate_lifetime
                .as_deref()
                .map(validate_certificate_lifetime)
                .transpose()?
                .unwrap_or(super::pki::DEFAULT_LEAF_LIFETIME_SECONDS);
            let pki = super::pki::ManagedPki {
                leaf_lifetime_seconds,
                ca_generation,
                trust: None,
            };
            Ok(choice(
                super::pki::managed_tls(name),
                Some(pki),
                None,
                false,
            ))
        }
        TlsMode::CertManager => {
            let issuer = validate_issuer_ref(t)?;
            Ok(choice(
                super::pki::managed_tls(name),
                None,
                Some(issuer),
                false,
            ))
        }
        TlsMode::Secrets => {
            let tls = validate_tls(t)?;
            plain_peers_asked(name, t, &tls, unset.1 == TlsOrigin::Birth)?;
            Ok(choice(tls, None, None, false))
        }
        TlsMode::None => Ok(choice(Tls::default(), None, None, t.mode.is_some())),
    }
}

/// The fields of `spec.tls` that belong to one mode, refused in another; the CA generation of
/// mode managed.
fn fields_of_mode(mode: TlsMode, t: &crate::api::TlsSpec) -> Result<u64, InvalidSpec> {
    if mode != TlsMode::Managed && t.ca_generation.is_some() {
        return Err(invalid(
            "spec.tls.caGeneration",
            "rotates the CA of mode managed (the engine has none otherwise); remove it or set mode: managed",
        ));
    }
    if !matches!(mode, TlsMode::Managed | TlsMode::CertManager) && t.certificate_lifetime.is_some()
    {
        return Err(invalid(
            "spec.tls.certificateLifetime",
            "applies only to modes managed and certManager (nobody issues a certificate otherwise); remove it or set one of them",
        ));
    }
    if mode != TlsMode::CertManager && t.issuer_ref.is_some() {
        return Err(invalid(
            "spec.tls.issuerRef",
            "names the cert-manager issuer of mode certManager; remove it or set mode: certManager",
        ));
    }
    if t.plain_peers && mode != TlsMode::Secrets {
        return Err(invalid(
            "spec.tls.plainPeers",
            "applies only to mode secrets without peerSecret (managed and certManager run peer TLS, none runs no TLS at all); remove it",
        ));
    }
    match t.ca_generation {
        Some(g) if g < 0 => Err(invalid(
            "spec.tls.caGeneration",
            format!("{g} is negative; `kubectl etcd rotate-ca` raises it by one"),
        )),
        g => Ok(g.unwrap_or_default() as u64),
    }
}

/// `spec.tls.issuerRef` and `certificateLifetime` of mode certManager.
fn validate_issuer_ref(t: &crate::api::TlsSpec) -> Result<super::pki::CertManagerTls, InvalidSpec> {
    let Some(r) = &t.issuer_ref else {
        return Err(invalid(
            "spec.tls.issuerRef",
            "is missing: mode certManager needs the cert-manager issuer that signs the cluster's certificates, e.g. issuerRef: {name: etcd-ca} (a CA Issuer in the cluster's namespace) or {name: etcd-ca, kind: ClusterIssuer}",
        ));
    };
    if !is_dns_subdomain(&r.name) {
        return Err(invalid(
            "spec.tls.issuerRef.name",
            format!(
                "{:?} is not an object name; use the name of a cert-manager Issuer or ClusterIssuer",
                r.name
            ),
        ));
    }
    let kind = r.kind.clone().unwrap_or_else(|| "Issuer".into());
    let group = r.group.clone().unwrap_or_else(|| "cert-manager.io".into());
    if group == "cert-manager.io" && !matches!(kind.as_str(), "Issuer" | "ClusterIssuer") {
        return Err(invalid(
            "spec.tls.issuerRef.kind",
            format!("{kind:?} is not a cert-manager issuer kind; use Issuer or ClusterIssuer"),
        ));
    }
    if !is_dns_subdomain(&group) {
        return Err(invalid(
            "spec.tls.issuerRef.group",
            format!("{group:?} is not an API group; leave it out for cert-manager.io"),
        ));
    }
    let lifetime_seconds = t
        .certificate_lifetime
        .as_deref()
        .map(validate_certificate_lifetime)
        .transpose()?;
    if let Some(s) = lifetime_seconds.filter(|s| *s < super::pki::MIN_CERT_MANAGER_LIFETIME_SECONDS)
    {
        return Err(invalid(
            "spec.tls.certificateLifetime",
            format!("{s}s is shorter than cert-manager accepts; use at least 1h"),
        ));
    }
    Ok(super::pki::CertManagerTls {
        issuer_name: r.name.clone(),
        issuer_kind: kind,
        issuer_group: group,
        lifetime_seconds,
        cluster_issuer_allowed: false,
    })
}

/// Client TLS without peer TLS (`tls`, from `t`) leaves raft in the clear: refused for a `new`
/// cluster unless `spec.tls.plainPeers` says it is meant (clusters that ran before the field
/// existed keep running); `plainPeers` beside a peer Secret contradicts itself.
fn plain_peers_asked(
    name: &str,
    t: &crate::api::TlsSpec,
    tls: &Tls,
    new: bool,
) -> Result<(), InvalidSpec> {
    match (
        tls.client.is_some(),
        tls.peer_secret.is_some(),
        t.plain_peers,
    ) {
        (_, true, true) => Err(invalid(
            "spec.tls.plainPeers",
            "says raft runs in the clear, but peerSecret gives the members peer TLS: remove one of them",
        )),
        (true, false, false) if new => Err(invalid(
            "spec.tls.peerSecret",
            format!(
                "is missing: client TLS without peer TLS leaves raft in the clear, and any pod that reaches port 2380 reads every write as it is replicated; add peerSecret (a certificate for *.{name}.<namespace>.svc.cluster.local, as server and client; --tls-peer-secret), use mode: managed, or set plainPeers: true (--plain-peers) if that is meant"
            ),
        )),
        _ => Ok(()),
    }
}

fn validate_certificate_lifetime(s: &str) -> Result<u64, InvalidSpec> {
    let min = super::pki::MIN_LEAF_LIFETIME_SECONDS;
    match humantime::parse_duration(s) {
        Ok(d) if d.as_secs() >= min => Ok(d.as_secs()),
        Ok(_) => Err(invalid(
            "spec.tls.certificateLifetime",
            format!(
                "{s:?} is shorter than {}m: renewal comes at two thirds of the lifetime and needs time to reach every member",
                min / 60
            ),
        )),
        Err(e) => Err(invalid(
            "spec.tls.certificateLifetime",
            format!("{s:?} is not a duration ({e}); use e.g. 2160h (90 days)"),
        )),
    }
}

pub(super) fn validate_tls(t: &crate::api::TlsSpec) -> Result<Tls, InvalidSpec> {
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

/// `spec.metrics`: the listener's port, 2381 unless set; never the client's or the peers'.
fn validate_metrics(m: &crate::api::MetricsSpec) -> Result<u16, InvalidSpec> {
    use crate::keys::{CLIENT_PORT, MEMBER_METRICS_PORT, PEER_PORT, SWITCH_PEER_PORT};
    let port = m.port.unwrap_or(i32::from(MEMBER_METRICS_PORT));
    match u16::try_from(port) {
        Ok(p) if p != 0 && ![CLIENT_PORT, PEER_PORT, SWITCH_PEER_PORT].contains(&p) => Ok(p),
        _ => Err(invalid(
            "spec.metrics.port",
            format!(
                "{port} is not a free port of the member: give one of 1-65535 other than {CLIENT_PORT} (client), {PEER_PORT} (peers) and {SWITCH_PEER_PORT} (peers while TLS is switched), e.g. {MEMBER_METRICS_PORT}"
            ),
        )),
    }
}
