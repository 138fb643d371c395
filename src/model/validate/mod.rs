//! `validate`: the only place that reads raw spec fields for configuration.
//!
//! `validate` reads the spec top to bottom and hands each part to the file that checks it:
//! `storage` (sizes, quota, compaction), `options` (`spec.etcd.options` and the flags the
//! engine owns), `placement` (where and how the pods run: spreading, pull Secrets, pod and
//! Service metadata, client namespaces), `tls` (`spec.tls` and its modes), `backup`
//! (`spec.backup` and `spec.restore`) and `names` (the Kubernetes name rules all of them use).

mod backup;
mod names;
mod options;
mod placement;
mod storage;
mod tls;

use backup::*;
pub use names::*;
pub use options::*;
use placement::*;
use storage::*;
pub use tls::*;

use serde::Serialize;

use crate::api::{EtcdCluster, MAX_REPLICAS};
use crate::model::desired::{
    DEFAULT_IMAGE_REPOSITORY, DEFAULT_LOST_MEMBER_GRACE_SECONDS, DEFAULT_UPGRADE_TIMEOUT_SECONDS,
    Desired,
};
use crate::model::version::{MAX_MINOR, MIN_MINOR, UNFIT_35_BELOW, Version, VersionChange};

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
    let recovery =
        crate::model::recovery::validate(spec.recovery.as_ref(), &name, backup.as_ref())?;
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
    let auth = crate::model::auth::validate(spec, &tls)?;
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
        integrity: super::integrity::validate(spec.integrity.as_ref(), &t.options)?,
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
        maintenance: crate::model::maintenance::validate(spec.maintenance.as_ref())?,
        adopt: spec
            .adopt
            .as_ref()
            .map(crate::model::adopt::validate_adopt)
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
