//! The custom resource `EtcdCluster`: spec, status, condition types and reasons.
//!
//! Pure data: no I/O, no client. Everything the API server stores about a cluster is declared here.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, ResourceRequirements, Toleration, TopologySpreadConstraint,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group owned by the project (the `#[kube]` attribute below needs literals: a unit test
/// keeps it equal to these constants).
pub const GROUP: &str = "etcd.kubectl-etcd.io";
/// API version of `EtcdCluster`.
pub const VERSION: &str = "v1alpha1";
/// Kind of the custom resource, as error messages and owner references name it.
pub const KIND: &str = "EtcdCluster";
/// Finalizer the engine puts on every EtcdCluster it manages.
pub const FINALIZER: &str = "etcd.kubectl-etcd.io/cleanup";
/// Largest cluster we accept: etcd's own guidance is 7; 9 leaves room for replacement headroom.
pub const MAX_REPLICAS: i32 = 9;

/// A highly available etcd cluster managed by kubectl-etcd.
///
/// Spec is written by users and `kubectl etcd` verbs only; status by the engine only.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "etcd.kubectl-etcd.io",
    version = "v1alpha1",
    kind = "EtcdCluster",
    plural = "etcdclusters",
    singular = "etcdcluster",
    shortname = "etcdc",
    category = "etcd",
    namespaced,
    status = "EtcdClusterStatus",
    doc = "An etcd cluster managed by kubectl-etcd",
    scale = r#"{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.selector"}"#,
    printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}"#,
    printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyReplicas"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".spec.version"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct EtcdClusterSpec {
    /// Number of voting members. Odd numbers tolerate the most failures per member.
    #[schemars(range(min = 1, max = MAX_REPLICAS))]
    pub replicas: i32,
    /// etcd release, e.g. "3.5.16" (no leading v).
    #[schemars(regex(pattern = r"^3\.[0-9]+\.[0-9]+$"))]
    pub version: String,
    /// Image repository; the tag is `v<version>`. Default: gcr.io/etcd-development/etcd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_repository: Option<String>,
    /// Where members keep their data.
    #[serde(default)]
    pub storage: StorageSpec,
    /// CPU and memory for each member's container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Passed through to the member pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Passed through to the member pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Passed through to the member pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// How the member pods spread over the nodes and zones, passed to the member pods. A
    /// constraint without a `labelSelector` selects this cluster's members. `kubectl etcd create`
    /// writes a preference (`whenUnsatisfiable: ScheduleAnyway`, so one node still runs every
    /// member) for zones (`topology.kubernetes.io/zone`) and nodes (`kubernetes.io/hostname`);
    /// absent: no constraint. A change restarts the members one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
    /// PriorityClass of the member pods (e.g. `system-cluster-critical`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Member metrics: each member serves etcd's `/metrics` and `/health` over plain HTTP on a
    /// listener of its own (`--listen-metrics-urls`), the port named `metrics` of the member pods
    /// and of the peer Service, which Prometheus scrapes without a client certificate.
    /// `kubectl etcd create` and `restore` write `{}` (port 2381); absent: no listener. Setting it
    /// restarts the members one at a time (a cluster created before it keeps its pods until then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricsSpec>,
    /// Labels and annotations added to the member pods (e.g. for a service mesh or a metrics
    /// scraper). The labels the engine selects its pods by cannot be set here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_metadata: Option<PodMetadata>,
    /// etcd server tuning.
    #[serde(default)]
    pub etcd: EtcdTuning,
    /// When true the engine observes and reports but changes nothing.
    #[serde(default)]
    pub paused: bool,
    /// Seconds a member must look lost (its volume holds no or damaged data, or another
    /// member's) before the engine replaces it: remove, wipe its volume, re-add as a learner,
    /// promote. Default 180. Restarts, evictions and node reboots never make a member look lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub lost_member_grace_seconds: Option<i64>,
    /// Where backups go, and the schedule and retention of the operator's backups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<BackupSpec>,
    /// Start the cluster from a snapshot instead of empty (written by `kubectl etcd restore`).
    /// Read only while the cluster is created: the seed member's volume is restored from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<RestoreSpec>,
    /// Seconds an upgraded member may take to become healthy before the upgrade is rolled back
    /// (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub upgrade_timeout_seconds: Option<i64>,
    /// TLS for client and peer traffic. Fixed once the cluster exists (members advertise their
    /// URLs, scheme included, in the membership).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSpec>,
    /// etcd's own authentication (`etcdctl user add root; etcdctl auth enable`): the user the
    /// engine, the readiness probe and backups authenticate as once it is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthSpec>,
    /// Maintenance the engine carries out under the cluster's Lease: defragmentation on request
    /// (`kubectl etcd defrag`) and by policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<MaintenanceSpec>,
}

/// `spec.maintenance`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceSpec {
    /// Defragmentation: one member at a time (learners and followers first, the leader last),
    /// each only while every other voter answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defrag: Option<DefragSpec>,
}

/// `spec.maintenance.defrag`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefragSpec {
    /// A one-off defragmentation of every member, written by `kubectl etcd defrag`; carried out
    /// once per nonce (`status.maintenance.defrag` records the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<DefragRequest>,
    /// Defragment a member by itself when the rules below say it is worth it. Absent: only on
    /// request (and to heal NOSPACE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<DefragPolicy>,
}

/// A requested defragmentation of every member.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefragRequest {
    /// Identifies the request: a new nonce is a new run (`kubectl etcd defrag` writes the time).
    pub nonce: String,
    /// First compact the keyspace history up to the current revision.
    #[serde(default)]
    pub compact: bool,
}

/// When a member is defragmented without being asked: it would win at least `minReclaimMiB`
/// (its file size minus the bytes in use) and either its fragmented share is at least
/// `fragmentedPercent` or its file fills at least `quotaPercent` of the quota. A member that
/// would win less is never defragmented by policy, so a database of live data is not
/// rewritten again and again.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefragPolicy {
    /// Share of the file that is free pages, in percent (default 45).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub fragmented_percent: Option<u8>,
    /// Share of the quota the file fills, in percent (default: this rule is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub quota_percent: Option<u8>,
    /// The least a defragmentation must win, in MiB (default 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "minReclaimMiB")]
    #[schemars(range(min = 0))]
    pub min_reclaim_mib: Option<i64>,
    /// Only while this window is open (default: any time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<MaintenanceWindow>,
}

/// A window that opens at each time of a cron schedule (UTC) and stays open `minutes`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceWindow {
    /// 5-field cron expression, UTC, e.g. "0 3 * * *" (03:00 daily).
    pub schedule: String,
    /// How long the window stays open (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub minutes: Option<u32>,
}

/// Extra metadata of the member pods.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodMetadata {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// The etcd user of the engine, the probe and backups.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthSpec {
    /// A Secret in the cluster's namespace with the keys `username` and `password` (type
    /// `kubernetes.io/basic-auth`, e.g. `kubectl create secret generic NAME
    /// --from-literal=username=root --from-literal=password=...`) of an etcd user with the
    /// `root` role. Used only while etcd's authentication is enabled; a new Secret name rolls
    /// out to the members one at a time.
    pub user_secret: String,
}

/// TLS Secrets in the cluster's namespace, each with the keys `tls.crt`, `tls.key` and `ca.crt`
/// (e.g. `kubectl create secret generic NAME --from-file=tls.crt --from-file=tls.key --from-file=ca.crt`,
/// or what cert-manager writes).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsSpec {
    /// The members' serving certificate for clients: the client port speaks https and accepts
    /// only clients with a certificate signed by this Secret's `ca.crt`. Its names must cover
    /// `*.<cluster>.<namespace>.svc.cluster.local` (each member) and, for clients of the client
    /// Service, `<cluster>-client.<namespace>.svc`. Set together with `clientSecret`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_secret: Option<String>,
    /// A client certificate (signed by the server Secret's CA; trusting the server certificate
    /// through its own `ca.crt`) for the engine, the readiness probe and backups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The members' certificate for peer traffic, used as server and client (mutual TLS between
    /// members; its names must cover `*.<cluster>.<namespace>.svc.cluster.local`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_secret: Option<String>,
}

/// Backups of one cluster: the destination `kubectl etcd backup` uses when given none, and the
/// schedule the in-cluster operator runs.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupSpec {
    /// Where backups are stored: `s3://bucket/prefix` (`file://` is only reachable from the
    /// machine running the CLI, and `pvc://` only through the CLI's agent pod, so schedules and
    /// retention cannot use them; `kubectl etcd backup --to` can).
    pub destination: String,
    /// Secret in the cluster's namespace with the S3 credentials (keys `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, optional `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ENDPOINT_URL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<String>,
    /// Cron expression (5 fields, UTC), e.g. "0 */6 * * *". No schedule: backups only on demand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// Stop scheduled runs (existing backups and retention are kept as they are).
    #[serde(default)]
    pub suspend: bool,
    /// Take the first scheduled backup as soon as the cluster is running.
    #[serde(default)]
    pub run_on_create: bool,
    /// none, gzip or zstd (default zstd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(none|gzip|zstd)$"))]
    pub compression: Option<String>,
    /// Which scheduled backups to keep. Retention never deletes the newest successful backup and
    /// never deletes anything because a backup failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<crate::archive::retention::Retention>,
    /// Server-side encryption S3 applies to every backup object (s3:// only); the CLI's
    /// `backup` uses it too unless `--sse` or `--to` says otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_encryption: Option<ServerSideEncryption>,
}

/// `x-amz-server-side-encryption` of every backup object.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerSideEncryption {
    /// `AES256` (keys managed by S3, SSE-S3) or `aws:kms` (SSE-KMS).
    #[schemars(regex(pattern = r"^(AES256|aws:kms)$"))]
    pub algorithm: String,
    /// With `aws:kms`: the KMS key's id, ARN or alias (default: the account's `aws/s3` key).
    /// The credentials need `kms:GenerateDataKey` on it to write and `kms:Decrypt` to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms_key_id: Option<String>,
}

/// The snapshot a new cluster starts from.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreSpec {
    /// URL of the snapshot object, e.g. `s3://bucket/prefix/default-demo-20261201T101500Z-r1234.db.zst`.
    pub source: String,
    /// sha256 (hex) of the stored object; the restore refuses a snapshot that does not match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Secret with the S3 credentials (same keys as `backup.credentialsSecret`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<String>,
    /// The EtcdBackup the snapshot was recorded by, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_name: Option<String>,
    /// Image holding `kubectl-etcd` (fetches and verifies the snapshot into the seed's volume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_image: Option<String>,
    /// Makes this restore a cluster of its own: it goes into etcd's initial-cluster token, from
    /// which etcd derives the cluster id. `kubectl etcd restore` and `recover` write a fresh one
    /// each time, so two restores of the same snapshot into the same cluster (a second `recover
    /// --from-backup B`) get different cluster ids, and a member of the first can never join the
    /// second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
}

/// The members' metrics listener.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricsSpec {
    /// Port of the listener (default 2381; not the client's 2379 nor the peers' 2380).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i32>,
}

/// Member storage.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageSpec {
    /// Volume size per member, e.g. "1Gi". Default 1Gi.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"))]
    pub size: Option<String>,
    /// StorageClass of the member volumes; the cluster default when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    /// Keep data in an emptyDir: fast and disposable, lost when a pod is deleted.
    #[serde(default)]
    pub ephemeral: bool,
}

/// etcd server flags the engine passes through.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EtcdTuning {
    /// --quota-backend-bytes (etcd default 2 GiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub quota_backend_bytes: Option<i64>,
    /// --auto-compaction-mode: "periodic" or "revision" (a string in the schema: 1.20 rejects
    /// the null member schemars gives optional enums).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(periodic|revision)$"))]
    pub auto_compaction_mode: Option<String>,
    /// --auto-compaction-retention, e.g. "1h" (periodic) or "1000" (revision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_compaction_retention: Option<String>,
    /// Any other etcd server flag, by its name without the dashes, e.g.
    /// `heartbeat-interval: "250"`, `election-timeout: "2500"`, `snapshot-count: "50000"`. Flags
    /// the engine sets itself (member name, URLs, data directory, initial cluster, TLS files)
    /// are refused. A change restarts the members one at a time; a flag the member's etcd does
    /// not know makes it exit at start (its pod shows why), and setting the spec back repairs it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactionMode {
    Periodic,
    Revision,
}

impl CompactionMode {
    pub fn parse(s: &str) -> Option<CompactionMode> {
        match s {
            "periodic" => Some(CompactionMode::Periodic),
            "revision" => Some(CompactionMode::Revision),
            _ => None,
        }
    }
}

/// What the engine last observed and decided. Written only by the engine.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EtcdClusterStatus {
    /// One word for humans: Creating, Running, Scaling, Upgrading, Degraded, Failed, Paused, Deleting.
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
    /// A full database (NOSPACE) being healed, and a quota the engine raised for it. Written as
    /// null when there is none (status is a merge patch: an absent field would keep the old one).
    #[serde(default)]
    pub maintenance: Option<MaintenanceStatus>,
}

/// What the engine did about a NOSPACE alarm (see `plan::nospace`). Written only by the engine,
/// every field every time (null or empty included): a merge patch keeps fields it does not name.
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
    /// `Upgrading` while members move, `RolledBack` once the engine put `fromVersion` back.
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
    pub const ROLLED_BACK: &str = "RolledBack";
    /// Every member runs `toVersion`.
    pub const UPGRADED: &str = "Upgraded";
}

pub use crate::keys::ANNOTATION_PRE_UPGRADE_BACKUP;
/// Value of `ANNOTATION_PRE_UPGRADE_BACKUP` for `--skip-backup`.
pub const PRE_UPGRADE_BACKUP_SKIPPED: &str = "skipped";

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
}

/// One etcd member as last observed.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberStatus {
    pub name: String,
    /// Member id, 16 hex digits.
    pub id: String,
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
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

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
}

/// What happened to a backup. Written only by whoever took it.
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
}

/// Phases of an EtcdBackup.
pub mod backup_phase {
    pub const RUNNING: &str = "Running";
    pub const SUCCEEDED: &str = "Succeeded";
    pub const FAILED: &str = "Failed";
}

/// Every CRD the project installs.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![crd(), backup_crd()]
}

/// The EtcdBackup CRD (status defaults stripped like the EtcdCluster's).
pub fn backup_crd() -> CustomResourceDefinition {
    use kube::CustomResourceExt;
    let mut crd = EtcdBackup::crd();
    strip_status_defaults(&mut crd);
    crd
}

/// The CRD object, from the Rust types. Schema defaults are dropped under `status` (only the
/// engine writes status, and the 1.20 API server rejects some of them, e.g. empty-string defaults).
pub fn crd() -> CustomResourceDefinition {
    use kube::CustomResourceExt;
    let mut crd = EtcdCluster::crd();
    strip_status_defaults(&mut crd);
    add_admission_rules(&mut crd);
    crd
}

/// The spec rules the API server enforces itself (CEL, `x-kubernetes-validations`), so that
/// `kubectl apply` of a change the engine cannot carry out is refused at once, naming the field.
/// The engine keeps its own checks (`model::keep_storage`, `keep_tls`) for objects written before
/// these rules existed, or through an API server that ignores them.
pub const ADMISSION_RULES: &[(&str, &str, &str)] = &[
    (
        "storage",
        "(has(self.ephemeral) && self.ephemeral) || (has(oldSelf.ephemeral) && oldSelf.ephemeral) || \
         quantity(has(self.size) ? self.size : '1Gi').compareTo(quantity(has(oldSelf.size) ? oldSelf.size : '1Gi')) == 0",
        "spec.storage.size cannot change on an existing cluster (the volumes keep the data): put the old value back, or create a new cluster with the new size and move the data with kubectl etcd backup and kubectl etcd restore",
    ),
    (
        "storage",
        "(has(self.storageClassName) ? self.storageClassName : '') == (has(oldSelf.storageClassName) ? oldSelf.storageClassName : '')",
        "spec.storage.storageClassName cannot change on an existing cluster (the volumes keep the data): put the old value back, or move the data to a new cluster with kubectl etcd backup and kubectl etcd restore",
    ),
    (
        "storage",
        "(has(self.ephemeral) && self.ephemeral) == (has(oldSelf.ephemeral) && oldSelf.ephemeral)",
        "spec.storage.ephemeral cannot change on an existing cluster: put the old value back, or move the data to a new cluster with kubectl etcd backup and kubectl etcd restore",
    ),
    (
        "tls",
        "has(self.serverSecret) == has(self.clientSecret)",
        "spec.tls.serverSecret and spec.tls.clientSecret are set together (the members serve https with the first and the engine, probe and backups present the second)",
    ),
    (
        "",
        "(has(self.tls) && has(self.tls.serverSecret)) == (has(oldSelf.tls) && has(oldSelf.tls.serverSecret)) && \
         (has(self.tls) && has(self.tls.peerSecret)) == (has(oldSelf.tls) && has(oldSelf.tls.peerSecret))",
        "spec.tls cannot be switched on or off on an existing cluster (members advertise their URLs, scheme included): put the old value back, or create a new cluster with the new TLS and move the data with kubectl etcd backup and kubectl etcd restore; other Secrets of the same kind may be set",
    ),
];

fn add_admission_rules(crd: &mut CustomResourceDefinition) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule;
    for v in &mut crd.spec.versions {
        let Some(root) = v
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
            .and_then(|s| s.properties.as_mut())
        else {
            continue;
        };
        if let Some(spec) = root.get_mut("spec") {
            for (field, rule, message) in ADMISSION_RULES {
                let target = if field.is_empty() {
                    Some(&mut *spec)
                } else {
                    spec.properties.as_mut().and_then(|p| p.get_mut(*field))
                };
                let Some(target) = target else { continue };
                target
                    .x_kubernetes_validations
                    .get_or_insert_with(Vec::new)
                    .push(ValidationRule {
                        rule: (*rule).into(),
                        message: Some((*message).into()),
                        ..Default::default()
                    });
            }
        }
        // One condition per type: server-side apply merges them by type.
        if let Some(conditions) = root
            .get_mut("status")
            .and_then(|s| s.properties.as_mut())
            .and_then(|p| p.get_mut("conditions"))
        {
            conditions.x_kubernetes_list_type = Some("map".into());
            conditions.x_kubernetes_list_map_keys = Some(vec!["type".into()]);
        }
    }
}

fn strip_status_defaults(crd: &mut CustomResourceDefinition) {
    for v in &mut crd.spec.versions {
        if let Some(status) = v
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
            .and_then(|s| s.properties.as_mut())
            .and_then(|p| p.get_mut("status"))
        {
            strip_defaults(status);
        }
    }
}

fn strip_defaults(s: &mut JSONSchemaProps) {
    s.default = None;
    for p in s.properties.iter_mut().flat_map(|p| p.values_mut()) {
        strip_defaults(p);
    }
    if let Some(JSONSchemaPropsOrArray::Schema(items)) = s.items.as_mut() {
        strip_defaults(items);
    }
}

/// Condition types (metav1.Condition `type`).
pub mod condition {
    pub const READY: &str = "Ready";
    pub const SCALING: &str = "Scaling";
    pub const UPGRADING: &str = "Upgrading";
    pub const RECOVERING: &str = "Recovering";
    pub const DEGRADED: &str = "Degraded";
    /// True while a spec change cannot be carried out (e.g. an immutable storage field); the
    /// message names the field and the way forward. Everything else in the spec still applies.
    pub const SPEC_REFUSED: &str = "SpecRefused";
    /// False when the last scheduled backup failed or is older than twice the schedule's interval.
    pub const BACKUP_HEALTHY: &str = "BackupHealthy";
    /// True while the engine heals a full database (NOSPACE): compaction, defragmentation one
    /// member at a time, a raised quota; the message says which.
    pub const MAINTAINING: &str = "Maintaining";
}

/// Why a cluster is where it is: the `reason` of conditions and Events, and what the planner's
/// `Wait` and `Hold` carry, typed, so that status derivation and drivers match on variants rather
/// than strings. The string of each is its variant name (CamelCase, as metav1.Condition requires),
/// except `ClusterIdMismatch` which reads the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Reason {
    AllMembersHealthy,
    MembersUnhealthy,
    Bootstrapping,
    AddingLearner,
    PromotingLearner,
    RemovingMember,
    MovingLeader,
    ResizingWorkload,
    CleaningUp,
    RollingMembers,
    Repairing,
    AsDesired,
    InvalidSpec,
    /// Members answer with different cluster ids.
    ClusterIdMismatch,
    QuorumAtRisk,
    EtcdUnreachable,
    Paused,
    StrandedMember,
    /// A member lost its data and is being replaced (removed, wiped, re-added as a learner).
    ReplacingMember,
    /// Fewer voters than a quorum answer: the engine never acts; `kubectl etcd recover` does.
    QuorumLost,
    /// A spec change the engine cannot carry out (immutable field); everything else goes on.
    ImmutableField,
    /// The seed's volume is being restored from a snapshot.
    RestoringSnapshot,
    RestoreFailed,
    /// A member is restarted on a new etcd version.
    UpgradingMember,
    /// The upgraded member must be healthy and caught up before the next one moves.
    WaitingForMember,
    /// An upgraded member did not become healthy in time: the old version is being put back.
    RollingBack,
    /// Every member runs the old version again after a failed upgrade.
    RolledBack,
    /// `spec.version` cannot be reached from what the members run (the message says how).
    UpgradeBlocked,
    /// etcd's downgrade procedure: the cluster version is being lowered before members move
    /// to the lower minor (or a downgrade no longer wanted is cancelled).
    Downgrading,
    /// Every voter is healthy but a voter's pod has not passed its readiness probe yet.
    MembersNotReady,
    /// `kubectl etcd recover` fenced clients off the client Service and has not finished (or
    /// stopped half-way): the cluster is paused and serves no client.
    ClientsFenced,
    /// NOSPACE: the engine compacts the keyspace history.
    Compacting,
    /// NOSPACE: the engine defragments one member.
    Defragmenting,
    /// NOSPACE: the engine disarms the alarm (every member below 90 % of its quota).
    DisarmingAlarm,
    /// NOSPACE: the database was still full after defragmentation; the engine raised the quota.
    QuotaRaised,
    /// NOSPACE: the database is full of live data even at the raised quota; a human decides.
    DatabaseFull,
    /// A scheduled backup is started, an abandoned one failed, or expired ones pruned.
    BackingUp,
}

impl Reason {
    /// The condition/Event reason string.
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::AllMembersHealthy => "AllMembersHealthy",
            Reason::MembersUnhealthy => "MembersUnhealthy",
            Reason::Bootstrapping => "Bootstrapping",
            Reason::AddingLearner => "AddingLearner",
            Reason::PromotingLearner => "PromotingLearner",
            Reason::RemovingMember => "RemovingMember",
            Reason::MovingLeader => "MovingLeader",
            Reason::ResizingWorkload => "ResizingWorkload",
            Reason::CleaningUp => "CleaningUp",
            Reason::RollingMembers => "RollingMembers",
            Reason::Repairing => "Repairing",
            Reason::AsDesired => "AsDesired",
            Reason::InvalidSpec => "InvalidSpec",
            Reason::ClusterIdMismatch => "ClusterIdMismatch",
            Reason::QuorumAtRisk => "QuorumAtRisk",
            Reason::EtcdUnreachable => "EtcdUnreachable",
            Reason::Paused => "Paused",
            Reason::StrandedMember => "StrandedMember",
            Reason::ReplacingMember => "ReplacingMember",
            Reason::QuorumLost => "QuorumLost",
            Reason::ImmutableField => "ImmutableField",
            Reason::RestoringSnapshot => "RestoringSnapshot",
            Reason::RestoreFailed => "RestoreFailed",
            Reason::UpgradingMember => "UpgradingMember",
            Reason::WaitingForMember => "WaitingForMember",
            Reason::RollingBack => "RollingBack",
            Reason::RolledBack => "RolledBack",
            Reason::UpgradeBlocked => "UpgradeBlocked",
            Reason::Downgrading => "Downgrading",
            Reason::MembersNotReady => "MembersNotReady",
            Reason::ClientsFenced => "ClientsFenced",
            Reason::Compacting => "Compacting",
            Reason::Defragmenting => "Defragmenting",
            Reason::DisarmingAlarm => "DisarmingAlarm",
            Reason::QuotaRaised => "QuotaRaised",
            Reason::DatabaseFull => "DatabaseFull",
            Reason::BackingUp => "BackingUp",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Condition reasons as strings, for code that writes or matches them outside the planner.
pub mod reason {
    use super::Reason;
    pub const ALL_MEMBERS_HEALTHY: &str = Reason::AllMembersHealthy.as_str();
    pub const MEMBERS_UNHEALTHY: &str = Reason::MembersUnhealthy.as_str();
    pub const BOOTSTRAPPING: &str = Reason::Bootstrapping.as_str();
    pub const ADDING_LEARNER: &str = Reason::AddingLearner.as_str();
    pub const PROMOTING_LEARNER: &str = Reason::PromotingLearner.as_str();
    pub const REMOVING_MEMBER: &str = Reason::RemovingMember.as_str();
    pub const MOVING_LEADER: &str = Reason::MovingLeader.as_str();
    pub const RESIZING_WORKLOAD: &str = Reason::ResizingWorkload.as_str();
    pub const CLEANING_UP: &str = Reason::CleaningUp.as_str();
    pub const ROLLING_MEMBERS: &str = Reason::RollingMembers.as_str();
    pub const REPAIRING: &str = Reason::Repairing.as_str();
    pub const AS_DESIRED: &str = Reason::AsDesired.as_str();
    pub const INVALID_SPEC: &str = Reason::InvalidSpec.as_str();
    pub const SPLIT_BRAIN: &str = Reason::ClusterIdMismatch.as_str();
    pub const QUORUM_AT_RISK: &str = Reason::QuorumAtRisk.as_str();
    pub const ETCD_UNREACHABLE: &str = Reason::EtcdUnreachable.as_str();
    pub const PAUSED: &str = Reason::Paused.as_str();
    pub const STRANDED_MEMBER: &str = Reason::StrandedMember.as_str();
    pub const RESTORING: &str = Reason::RestoringSnapshot.as_str();
    pub const RESTORE_FAILED: &str = Reason::RestoreFailed.as_str();
    pub const UPGRADING_MEMBER: &str = Reason::UpgradingMember.as_str();
    pub const WAITING_FOR_MEMBER: &str = Reason::WaitingForMember.as_str();
    pub const ROLLING_BACK: &str = Reason::RollingBack.as_str();
    pub const ROLLED_BACK: &str = Reason::RolledBack.as_str();
    pub const UPGRADE_BLOCKED: &str = Reason::UpgradeBlocked.as_str();
    // BackupHealthy's reasons (written by the backup schedule, not by the planner).
    pub const BACKUP_SUCCEEDED: &str = "BackupSucceeded";
    pub const BACKUP_FAILED: &str = "BackupFailed";
    pub const BACKUP_OVERDUE: &str = "BackupOverdue";
    pub const NO_SCHEDULE: &str = "NoSchedule";
    /// An Event's: retention found a backup record naming an object that is not one of the
    /// cluster's backups in its destination, and left it alone.
    pub const BACKUP_OUTSIDE_DESTINATION: &str = "BackupOutsideDestination";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_derived_resource_uses_the_named_constants() {
        use kube::Resource;
        assert_eq!(EtcdCluster::group(&()), GROUP);
        assert_eq!(EtcdCluster::version(&()), VERSION);
        assert_eq!(EtcdCluster::kind(&()), KIND);
        assert_eq!(EtcdCluster::api_version(&()), format!("{GROUP}/{VERSION}"));
    }

    #[test]
    fn the_crd_refuses_fixed_fields_at_admission_and_merges_conditions_by_type() {
        let crd = crd();
        let schema = crd.spec.versions[0]
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .unwrap();
        let props = schema.properties.as_ref().unwrap();
        let spec = &props["spec"];
        let rules = |s: &JSONSchemaProps| -> Vec<(String, String)> {
            s.x_kubernetes_validations
                .iter()
                .flatten()
                .map(|r| (r.rule.clone(), r.message.clone().unwrap_or_default()))
                .collect()
        };
        let storage = rules(&spec.properties.as_ref().unwrap()["storage"]);
        for field in ["size", "storageClassName", "ephemeral"] {
            assert!(
                storage
                    .iter()
                    .any(|(rule, message)| rule.contains("oldSelf")
                        && message.starts_with(&format!("spec.storage.{field} cannot change"))),
                "{field}: {storage:?}"
            );
        }
        let tls = rules(&spec.properties.as_ref().unwrap()["tls"]);
        assert!(
            tls.iter()
                .any(|(r, _)| r.contains("has(self.clientSecret)"))
        );
        assert!(rules(spec).iter().any(
            |(r, m)| r.contains("oldSelf.tls") && m.starts_with("spec.tls cannot be switched")
        ));
        // Every rule is one line (a folded line would not change its meaning, but reads worse).
        for (rule, _) in storage.iter().chain(&tls) {
            assert!(!rule.contains('\n') && !rule.contains("  "), "{rule}");
        }
        let conditions = &props["status"].properties.as_ref().unwrap()["conditions"];
        assert_eq!(conditions.x_kubernetes_list_type.as_deref(), Some("map"));
        assert_eq!(
            conditions.x_kubernetes_list_map_keys.as_deref(),
            Some(&["type".to_string()][..])
        );
    }

    #[test]
    fn the_crd_caps_replicas_at_max_replicas() {
        let crd = crd();
        let schema = crd.spec.versions[0]
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .unwrap();
        let replicas = &schema.properties.as_ref().unwrap()["spec"]
            .properties
            .as_ref()
            .unwrap()["replicas"];
        assert_eq!(replicas.maximum, Some(f64::from(MAX_REPLICAS)));
        assert_eq!(replicas.minimum, Some(1.0));
    }
}
