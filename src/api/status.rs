//! `EtcdCluster.status`: what the engine last observed and decided.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the engine last observed and decided. Written only by the engine, whole, by server-side
/// apply (field manager `kubectl-etcd`).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EtcdClusterStatus {
    /// One word for humans: Creating, Running, Scaling, Upgrading, Degraded, Failed, Paused, Deleting,
    /// Hibernated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub phase: Option<Phase>,
    /// The engine's next step or reason for waiting, as one sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberStatus>,
    /// Members in the etcd cluster (voters and learners); the scale subresource reads it.
    #[serde(default)]
    pub replicas: i32,
    /// Healthy voting members.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Lowest server version among members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The cluster version the members report (etcd's `/version`, e.g. "3.5.0"): the minor the
    /// whole cluster speaks. It moves up once every member runs the new minor, and down only
    /// through etcd's downgrade procedure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_version: Option<String>,
    /// etcd cluster id, 16 hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// Label selector of member pods (for the scale subresource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Last backups and the next scheduled run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<BackupStatus>,
    /// Where the cluster's data came from when it was restored (the snapshot URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_from: Option<String>,
    /// The version change in progress, or the last one rolled back (see `UpgradeStatus`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<UpgradeStatus>,
    /// A full database (NOSPACE) being healed, and a quota the engine raised for it. Absent when
    /// there is none (status is applied whole: a field left out of the apply is removed).
    #[serde(default)]
    pub maintenance: Option<MaintenanceStatus>,
    /// Where the adoption of `spec.adopt` stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adoption: Option<super::AdoptionStatus>,
    /// TLS of the cluster: its mode and each certificate's expiry (managed: and renewal time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsStatus>,
    /// Requests of the spec carried out to the end, by nonce: a rule never acts again on a
    /// request whose nonce is here, whatever records come and go (a finished recovery whose
    /// snapshot record retention or a user deleted stays finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<CompletedRequests>,
    /// The smallest capacity of the member volumes: `spec.storage.size` may go back down to it
    /// (an expansion whose capacity never showed is undone so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_capacity: Option<String>,
}

/// `status.completed`: the durable done-marks of the spec's one-time requests.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompletedRequests {
    /// The nonce of the last `spec.recovery` carried out to the end (the seed restored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<String>,
    /// The cluster id (hex) of the `spec.adopt` carried out to the end (no old member left):
    /// the old members are never dialed, waited for or admitted again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adoption: Option<String>,
    /// The `spec.restore` carried out (its nonce, else its URL): its snapshot is never restored
    /// again, whatever becomes of the seed's volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<String>,
}

/// `status.tls`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsStatus {
    /// `managed`, `secrets` or `none`: the mode in effect. A spec that names no mode reads it
    /// back, so a default decided when the cluster was born stays what it is.
    pub mode: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<CertificateStatus>,
}

/// One certificate Secret of the cluster's TLS.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertificateStatus {
    /// `ca`, `server`, `peer` or `client`.
    pub role: String,
    pub secret: String,
    /// When it expires (RFC 3339; the earliest of its chain for `secrets`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<String>,
    /// Managed leaves: when the engine renews it (two thirds of its lifetime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_at: Option<String>,
    /// What is wrong with it, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// What the engine did about a NOSPACE alarm (see `plan::nospace`). Written only by the engine,
/// whole (server-side apply: a field left out is removed).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceStatus {
    /// The revision the keyspace history was compacted to for the alarm being healed.
    #[serde(default)]
    pub compacted_to: Option<i64>,
    /// Members defragmented since that compaction (one at a time, the leader last).
    #[serde(default)]
    pub defragmented: Vec<String>,
    /// The quota raised by the engine (at most once per `spec.etcd.quotaBackendBytes`) because
    /// the database was still above 90 % of it after compaction and defragmentation. In effect
    /// while the spec's quota is `fromBytes`; dropped (the members get the spec's quota back)
    /// once the spec's quota changes or every member's database is below half of `fromBytes`.
    #[serde(default)]
    pub quota_raised: Option<QuotaRaise>,
    /// The requested defragmentation (`spec.maintenance.defrag.request`) under way, or the last
    /// one carried out.
    #[serde(default)]
    pub defrag: Option<DefragRun>,
}

/// A requested defragmentation, as far as it got.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefragRun {
    /// The request's nonce.
    pub nonce: String,
    /// The revision compacted to first (a request with `compact`).
    #[serde(default)]
    pub compacted_to: Option<i64>,
    /// Members defragmented so far, in order.
    #[serde(default)]
    pub defragmented: Vec<String>,
    /// Every member that answers was defragmented.
    #[serde(default)]
    pub done: bool,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuotaRaise {
    pub from_bytes: i64,
    pub to_bytes: i64,
}

/// A version change as the engine records it: what the members ran before it (the version a
/// rollback puts back), where it goes, and how it ended. Written only by the engine.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeStatus {
    /// The version every member ran when the change started.
    pub from_version: String,
    /// The version `spec.version` asked for.
    pub to_version: String,
    /// `Upgrading` while members move; `RollingBack` from the engine's rollback until every
    /// member pod runs `fromVersion` again (Ready, on the rolled-back template), then
    /// `RolledBack`; `Upgraded` once every member runs `toVersion`.
    pub state: String,
    /// Why it was rolled back (the member and what it did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The pre-upgrade snapshot (its URL), as `kubectl etcd upgrade` recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
    /// True when `kubectl etcd upgrade --skip-backup` went ahead without a snapshot.
    #[serde(default)]
    pub skip_backup: bool,
    /// Members this change restarted onto its template, and when the engine first saw each
    /// there: a member's rollback deadline counts from this time, not from its pod's creation.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub restarted_at: BTreeMap<String, k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// Members seen healthy on `toVersion` during this change: none of them ever rolls it back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub healthy_on_target: Vec<String>,
}

/// `UpgradeStatus.state` values.
pub mod upgrade_state {
    pub const UPGRADING: &str = "Upgrading";
    /// The engine rolled the change back; some member pod does not run `fromVersion` yet.
    pub const ROLLING_BACK: &str = "RollingBack";
    /// Every member pod runs `fromVersion` again.
    pub const ROLLED_BACK: &str = "RolledBack";
    /// Every member runs `toVersion`.
    pub const UPGRADED: &str = "Upgraded";
}

pub use crate::keys::ANNOTATION_PRE_UPGRADE_BACKUP;
/// Value of `ANNOTATION_PRE_UPGRADE_BACKUP` for `--skip-backup`.
pub const PRE_UPGRADE_BACKUP_SKIPPED: &str = "skipped";
pub use crate::keys::ANNOTATION_HIBERNATE_SNAPSHOT;
/// What `ANNOTATION_HIBERNATE_SNAPSHOT` records for `kubectl etcd hibernate --no-snapshot`.
pub const HIBERNATE_SNAPSHOT_SKIPPED: &str = "skipped";

/// Backups of a cluster as the engine last saw them.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupStatus {
    /// The newest successful backup (EtcdBackup name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// Where the newest successful backup is stored (object URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_url: Option<String>,
    /// Stored bytes of the newest successful backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_size: Option<i64>,
    /// The newest failed backup, when it is newer than the newest successful one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failed_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// When the schedule runs next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_scheduled_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// When the schedule last created a backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scheduled_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// The newest restore drill of the cluster's backups (scheduled or `backup verify`), and
    /// with `spec.backup.drill` when the next one is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_drill: Option<LastDrill>,
    /// With `spec.backup.drill`: when the next drill is due (it runs once a successful backup
    /// not drilled yet exists and the cluster needs nothing else).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_drill_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
}

/// The newest restore drill of a cluster's backups (`status.backup.lastDrill`).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastDrill {
    /// The EtcdBackup drilled.
    pub backup: String,
    pub time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// Passed or Failed.
    pub outcome: String,
    /// Why it failed (the record's `status.drill.message` has the rest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When a drill of the cluster last passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_passed_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
}

/// One etcd member as last observed.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberStatus {
    /// The member's name: its pod's for the engine's members, else what etcd reports (the id
    /// while it reports none). Two members may share one (one of them `foreign`).
    pub name: String,
    /// Member id, 16 hex digits: unique in the cluster, the key of this list (the API server
    /// merges the entries by it).
    pub id: String,
    /// Not one of the engine's members: its peer URL is none the engine builds (added by hand,
    /// e.g. with `etcdctl member add`, or an old member of a cluster being adopted).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub foreign: bool,
    #[serde(default)]
    pub peer_url: String,
    #[serde(default)]
    pub learner: bool,
    #[serde(default)]
    pub leader: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default)]
    pub healthy: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raft_index: Option<u64>,
    /// Why the member is not healthy, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the engine first saw this member look lost (its pod says its data is gone): the
    /// grace period before it is replaced counts from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_since: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Phase {
    Creating,
    Running,
    Scaling,
    Upgrading,
    Degraded,
    Failed,
    Paused,
    Deleting,
    /// `spec.hibernate`: no member pod runs; the volumes keep the data.
    Hibernated,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}
