//! `EtcdBackup`: the record of one backup of one cluster.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One backup of one cluster: taken by `kubectl etcd backup` or by the operator's schedule, listed by
/// `kubectl etcd backup list`, restored by `kubectl etcd restore --from-backup`.
///
/// The record outlives its cluster (no owner reference): backups are what is left when a cluster is
/// gone. Deleting the record does not delete the stored object; retention deletes both.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "etcd.kubectl-etcd.io",
    version = "v1alpha1",
    kind = "EtcdBackup",
    // The engine's Observed holds records, and Observed is compared.
    derive = "PartialEq",
    plural = "etcdbackups",
    singular = "etcdbackup",
    shortname = "etcdb",
    category = "etcd",
    namespaced,
    status = "EtcdBackupStatus",
    doc = "A snapshot of an etcd cluster managed by kubectl-etcd",
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".spec.cluster"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Size","type":"integer","jsonPath":".status.size"}"#,
    printcolumn = r#"{"name":"Revision","type":"integer","jsonPath":".status.revision"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct EtcdBackupSpec {
    /// The EtcdCluster (same namespace) the snapshot is taken of.
    pub cluster: String,
    /// Where to store it: `s3://bucket/prefix`, `pvc://claim/path` or `file:///path` (the last
    /// only for backups the CLI takes itself).
    pub destination: String,
    /// none, gzip or zstd (default zstd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(none|gzip|zstd)$"))]
    pub compression: Option<String>,
    /// Secret with the S3 credentials (see `EtcdCluster.spec.backup.credentialsSecret`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<String>,
    /// Who asked for it: "cli" or "schedule" (retention only ever deletes scheduled backups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// The EtcdCluster's `metadata.uid` when the backup was taken: retention and
    /// `restore --latest-of` select by it, so a cluster re-created under the same name never
    /// mixes with (or prunes) the backups of the one before. Records written before this field
    /// existed have none: they are matched by their etcd cluster id, else by name only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_uid: Option<String>,
    /// Set when the object is encrypted on the client: the Secret whose key it was encrypted
    /// with (a restore needs it; the key itself is never written here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<crate::api::BackupEncryption>,
}

/// What happened to a backup. Written only by whoever took it, whole, by server-side apply
/// (field manager `kubectl-etcd-backup`).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EtcdBackupStatus {
    /// Running, Succeeded or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Who is taking it (`cli/<host>/<pid>` or `operator/<pod>`): the one that claimed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_by: Option<String>,
    /// URL of the stored object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Stored bytes (after compression).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    /// Bytes of the etcd snapshot before compression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_size: Option<i64>,
    /// sha256 (hex) of the stored bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<String>,
    /// etcd revision the snapshot holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// Keys in the keyspace when the snapshot was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<i64>,
    /// Server version of the member it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_version: Option<String>,
    /// The member it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// True when etcd's own hash inside the snapshot was checked while it was stored.
    #[serde(default)]
    pub verified: bool,
    /// False when the member it came from had no healthy quorum behind it: the snapshot holds
    /// only what that member had applied, so retention never counts it as a good backup and
    /// `restore --latest-of` never picks it (name it with `--from-backup` to use it anyway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<f64>,
    /// Why it failed, or a warning (e.g. taken from a member without quorum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The operator's read of the stored object: written by the engine only, after it read the
    /// object at `url` to its end. Retention counts a backup only when this check found the
    /// object with the `size` and `sha256` above (a record alone proves nothing: anyone who may
    /// take a backup writes records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_check: Option<StoreCheck>,
    /// The last restore drill of this backup (`kubectl etcd backup verify`,
    /// `spec.backup.drill`): restored into a throwaway one-member etcd and compared with this
    /// record and the live cluster. Written by the drill only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drill: Option<DrillStatus>,
}

/// What a restore drill found (`EtcdBackupStatus.drill`).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DrillStatus {
    pub time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// Passed or Failed.
    pub outcome: String,
    /// The objects restored, by URL (the backup's object; later also the archive segments
    /// replayed after it). A drill counts for the record only while its `url` is still this.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<String>,
    /// The stored object as read: its size and sha256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// What the restored member holds: its revision, its number of keys, etcd's `HashKV` at
    /// that revision and the compaction it was computed above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_kv: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_revision: Option<i64>,
    /// The live cluster's `HashKV` at the same revision, when it could still be computed there
    /// (not compacted past it, nor since the backup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_hash_kv: Option<i64>,
    /// Why it failed, or what could not be compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<f64>,
}

/// Outcomes of a restore drill.
pub mod drill_outcome {
    pub const PASSED: &str = "Passed";
    pub const FAILED: &str = "Failed";
}

/// What the engine found when it read a backup's object (`EtcdBackupStatus.storeCheck`).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoreCheck {
    /// The claim checked: the record's `url`, `size` and `sha256` at the time. A record whose
    /// claim changed since is checked again.
    pub url: String,
    pub size: i64,
    pub sha256: String,
    /// True when the object was found with exactly that size and sha256.
    pub matched: bool,
    /// What was found instead (missing, another size, another sha256).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
}

/// Phases of an EtcdBackup.
pub mod backup_phase {
    pub const RUNNING: &str = "Running";
    pub const SUCCEEDED: &str = "Succeeded";
    pub const FAILED: &str = "Failed";
}
