//! `EtcdCluster` and its spec: what users and `kubectl etcd` verbs write.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, LocalObjectReference, ResourceRequirements, Toleration, TopologySpreadConstraint,
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{EtcdClusterStatus, MAX_REPLICAS};

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
    /// Secrets (type `kubernetes.io/dockerconfigjson`, in the cluster's namespace) the kubelet
    /// pulls the member and restore pods' images with: for `imageRepository` or a tools image in a
    /// registry that wants credentials. A change restarts the members one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_secrets: Option<Vec<LocalObjectReference>>,
    /// The Kubernetes cluster's DNS domain (the kubelet's `clusterDomain`), which the members'
    /// names end in: `<pod>.<cluster>.<namespace>.svc.<clusterDomain>` in their URLs, in etcd's
    /// membership and in their certificates. Absent: `cluster.local`. Set it (`kubectl etcd
    /// create --cluster-domain`) where the cluster DNS serves another domain. Fixed once the
    /// cluster exists: the members' URLs are in etcd's membership.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 200),
        regex(pattern = r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")
    )]
    pub cluster_domain: Option<String>,
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
    /// How clients reach the members through the client Service `<name>-client` (absent: a
    /// ClusterIP Service, reached from inside the cluster): its type (`NodePort` or
    /// `LoadBalancer` expose etcd outside the cluster; the NetworkPolicy then admits the client
    /// port from anywhere), labels and annotations (e.g. a cloud's internal load balancer), and
    /// the load balancer's source ranges. Changes apply on the next pass; no member restarts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_service: Option<ClientServiceSpec>,
    /// etcd server tuning.
    #[serde(default)]
    pub etcd: EtcdTuning,
    /// etcd's own integrity checks, rendered for the version each member runs (`create` and
    /// `restore` write them all on; a cluster without the block runs none): docs/src/cluster.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<IntegritySpec>,
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
    /// Take over an etcd cluster that runs outside the engine (written by `kubectl etcd adopt`):
    /// see `AdoptSpec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adopt: Option<super::AdoptSpec>,
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
    /// The cluster's NetworkPolicy (on when absent): peers (2380) only from its own members;
    /// clients (2379) from its namespace, from the operator's pods and from every pod of the
    /// namespaces listed in `clientNamespaces`; the metrics listener (`spec.metrics`) from
    /// anywhere. Enforced only by a network plugin that implements NetworkPolicy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<NetworkPolicySpec>,
    /// A rebuild after quorum loss, decided by `kubectl etcd recover` (which writes it, a fresh
    /// nonce each run) and carried out by the engine under the cluster's Lease: clients fenced
    /// off, a verified snapshot of the survivor (or the named backup read back), the lost
    /// cluster's members and volumes deleted, the seed restored from the snapshot as a new
    /// cluster. Its progress is recorded on the snapshot's EtcdBackup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoverySpec>,
    /// Hibernate: after a verified snapshot (`kubectl etcd hibernate`, or the engine to
    /// `spec.backup.destination`), every member pod stops and the volumes stay; setting it back
    /// to false (`kubectl etcd wake`) starts the same members on their data (same cluster id).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hibernate: bool,
}

/// `spec.clientService`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientServiceSpec {
    /// ClusterIP (the default), NodePort or LoadBalancer.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<ClientServiceType>,
    /// Labels added to the Service (not the engine's own: app.kubernetes.io/name, instance,
    /// managed-by).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations added to the Service, e.g.
    /// `service.beta.kubernetes.io/aws-load-balancer-internal: "true"`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// With type LoadBalancer: the client CIDRs the load balancer admits (e.g. 10.0.0.0/8).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_balancer_source_ranges: Vec<String>,
}

/// `spec.clientService.type`.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ClientServiceType {
    #[serde(rename = "ClusterIP")]
    ClusterIp,
    NodePort,
    LoadBalancer,
}

impl ClientServiceType {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientServiceType::ClusterIp => "ClusterIP",
            ClientServiceType::NodePort => "NodePort",
            ClientServiceType::LoadBalancer => "LoadBalancer",
        }
    }
}

/// `spec.networkPolicy`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicySpec {
    /// Whether the engine keeps the cluster's NetworkPolicy (default true); false deletes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Namespaces whose pods may open the client port (2379), besides the cluster's own
    /// namespace and the operator's pods: each matched by its `kubernetes.io/metadata.name`
    /// label, which only the API server sets, so a namespace cannot admit itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_namespaces: Vec<String>,
}

/// `spec.recovery`: what `kubectl etcd recover` decided.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecoverySpec {
    /// Tells this recovery apart from earlier ones: a new cluster id, its own snapshot record.
    pub nonce: String,
    /// Rebuild from this surviving member (e.g. demo-1): its snapshot is taken first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_member: Option<String>,
    /// Rebuild from this EtcdBackup of the cluster instead of a survivor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_backup: Option<String>,
    /// Where the survivor's snapshot is stored on the way (s3://bucket/prefix: the restore pod
    /// reads it from there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Secret with the S3 credentials the survivor's snapshot is stored and read back with (none:
    /// the taker's own chain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<String>,
    /// Secret the restore pod reads the snapshot with (none: a pvc:// snapshot, mounted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_credentials_secret: Option<String>,
    /// Image holding `kubectl-etcd`, for the restore pod (and a pvc:// store's agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_image: Option<String>,
    /// Rebuild even though a quorum answers (a new cluster id, writes after the snapshot lost).
    #[serde(default)]
    pub force: bool,
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

/// TLS of client and peer traffic. `mode: managed`: the engine runs a CA of the cluster's own
/// and issues and renews every certificate. `mode: secrets` (what a spec naming Secrets gets
/// when it names no mode): TLS Secrets in the cluster's namespace, each with the keys `tls.crt`,
/// `tls.key` and `ca.crt` (e.g. `kubectl create secret generic NAME --from-file=tls.crt
/// --from-file=tls.key --from-file=ca.crt`, or what cert-manager writes). `mode: certManager`:
/// the engine writes cert-manager `Certificate` objects (server, peer, client) for the issuer
/// `issuerRef` names and mounts the Secrets cert-manager issues and renews. `mode: none`: plain
/// http (the `InsecureTransport` condition says so).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsSpec {
    /// `managed`, `certManager`, `secrets` or `none`. No server-side default (it would switch clusters stored
    /// before the modes existed): absent, a spec naming Secrets is `secrets`; one naming none
    /// gets `managed` when the cluster is new, and keeps what it runs when the cluster existed
    /// before (the engine decides once, at the cluster's birth, and records it in
    /// `status.tls.mode`). `kubectl etcd create` writes the mode it chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(managed|certManager|secrets|none)$"))]
    pub mode: Option<String>,
    /// Mode `certManager`: the cert-manager issuer of the cluster's certificates. It must be a
    /// CA issuer (`spec.ca`, or one that writes `ca.crt` likewise, e.g. Vault): the members
    /// trust the `ca.crt` of their Secrets, so the server, peer and client certificates must
    /// share one CA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer_ref: Option<IssuerRef>,
    /// Modes managed and certManager: lifetime of the server, peer and client certificates, e.g.
    /// `2160h` (the default, 90 days); at least 5m (cert-manager: at least 1h). Each is renewed
    /// at two thirds of its lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_lifetime: Option<String>,
    /// Managed mode: raised by `kubectl etcd rotate-ca` to rotate the cluster's CA. For each new
    /// value the engine makes a new CA, has every member trust the old and the new one
    /// (restarting members one at a time, the leader last: etcd reads CA files only at start),
    /// issues every certificate again from the new CA, then drops the old one (another round of
    /// restarts). The CA Secret records the value it answers; the `RotatingCA` condition shows
    /// the progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub ca_generation: Option<i64>,
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
    /// Mode `secrets` with client TLS but no `peerSecret`: raft between the members runs in the
    /// clear, so any pod that reaches port 2380 reads every write as it is replicated. A new
    /// cluster asking for that is refused unless this says it is meant; a cluster that ran
    /// before this field existed keeps running.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plain_peers: bool,
    /// Modes managed and certManager: more names (DNS names, `*.` wildcards, IP addresses) the
    /// members' server certificate carries besides the cluster's own Services and members, for
    /// clients that reach them another way: a load balancer's name or address, a node's address
    /// and node port (`spec.clientService`). A change issues the server certificate again;
    /// members read it at their next TLS handshake, without a restart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_names: Vec<String>,
    /// Modes managed and certManager: etcd's authentication, with each client certificate's CN
    /// as its etcd user. The engine makes the user `root` (the CN of its own certificate), then
    /// turns authentication on; `kubectl etcd certificate --user U` gives U a role of its own
    /// (read-only on every key by default, or the prefixes it names). `kubectl etcd create`
    /// writes `true` for a new cluster on etcd 3.5 or later; absent, it is off (what a cluster
    /// made before it existed keeps). Setting it back to false does not turn etcd's
    /// authentication off: `kubectl exec NAME-0 -- etcdctl auth disable` does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub etcd_auth: bool,
}

/// A cert-manager issuer (`spec.tls.issuerRef`), as cert-manager's own `issuerRef` names it.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssuerRef {
    /// The issuer's name.
    pub name: String,
    /// `Issuer` (in the cluster's namespace; the default) or `ClusterIssuer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(Issuer|ClusterIssuer)$"))]
    pub kind: Option<String>,
    /// The issuer's API group (default `cert-manager.io`; another one for external issuers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
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
    /// `AWS_SECRET_ACCESS_KEY`, optional `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ENDPOINT_URL`,
    /// and `AWS_CA_BUNDLE`: the PEM of a private CA that signed the endpoint's certificate).
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
    /// Client-side encryption of every backup (any destination): AES-256-GCM, streamed, with
    /// the key in a Secret of the cluster's namespace; objects get the suffix `.enc` and their
    /// records name the Secret (never the key). A restore needs that Secret. The CLI's `backup`
    /// uses it too unless `--encryption-key-secret` or `--to` says otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<BackupEncryption>,
    /// Scheduled restore drills: the operator restores the newest successful backup into a
    /// throwaway one-member etcd (no Service, a NetworkPolicy admitting nothing) and compares it
    /// with its record and the live cluster, as `kubectl etcd backup verify` does, at most once
    /// per `every`, only while the cluster needs nothing else. The result goes on the backup
    /// (`status.drill`) and into `status.backup.lastDrill`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drill: Option<DrillSpec>,
}

/// `spec.backup.drill`: how often the operator drills a backup.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DrillSpec {
    /// How long after the last drill of the cluster the next one comes (a duration: 10m at
    /// least, e.g. 24h). A drill needs a successful backup not drilled yet.
    pub every: String,
    /// Image holding `kubectl-etcd`, for the drill pod's fetch and read (default: the
    /// operator's own release).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_image: Option<String>,
}

/// Client-side encryption of backups: where the key is.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupEncryption {
    /// The key: 32 bytes, raw or as 64 hex digits, e.g.
    /// `kubectl create secret generic backup-key --from-literal=key=$(openssl rand -hex 32)`.
    pub key_secret_ref: SecretKeyRef,
}

/// One key of a Secret in the same namespace.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    pub name: String,
    /// The key in the Secret's data (default `key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl BackupEncryption {
    /// The reference as the archive uses it.
    pub fn key_secret(&self) -> crate::archive::crypt::KeySecret {
        crate::archive::crypt::KeySecret {
            name: self.key_secret_ref.name.clone(),
            key: self
                .key_secret_ref
                .key
                .clone()
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| crate::archive::crypt::DEFAULT_SECRET_KEY.into()),
        }
    }

    /// The spec form of a reference.
    pub fn from_key_secret(k: &crate::archive::crypt::KeySecret) -> BackupEncryption {
        BackupEncryption {
            key_secret_ref: SecretKeyRef {
                name: k.name.clone(),
                key: Some(k.key.clone()),
            },
        }
    }
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
    /// The Secret with the key of an encrypted snapshot (an object ending in `.enc`); the
    /// restore pod mounts it to decrypt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<BackupEncryption>,
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
    /// Volume size per member, e.g. "1Gi". Default 1Gi. May grow on a running cluster (each
    /// volume grown in place where its StorageClass allows expansion, else each member moved to
    /// a new volume, one at a time); never shrink (a new cluster and backup + restore do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"))]
    pub size: Option<String>,
    /// StorageClass of the member volumes; the cluster default when empty. A change moves each
    /// member to a new volume of the new class, one at a time, never below quorum.
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
    /// Other etcd server flags, by name without the dashes, e.g. `heartbeat-interval: "250"`,
    /// `election-timeout: "2500"`, `snapshot-count: "50000"`. Tuning flags only (timing, sizes,
    /// compaction, corruption checks, log level: `model::TUNING_OPTIONS`, listed in
    /// docs/src/cluster.md);
    /// the operator leaves any other out (and says so in the `SpecRefused` condition) unless it
    /// was started with `--allow-etcd-option NAME`. Flags the engine sets itself (member name,
    /// URLs, data directory, initial cluster, TLS files) are refused. A change restarts the
    /// members one at a time; a flag the member's etcd does not know makes it exit at start (its
    /// pod shows why), and setting the spec back repairs it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, String>,
}

/// etcd's integrity checks (`spec.integrity`). Each is left out for a version that does not have
/// it and starts with the upgrade that brings it; a change restarts the members one at a time.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IntegritySpec {
    /// Each member compares its data with its peers' before it serves clients
    /// (`InitialCorruptCheck`).
    #[serde(default)]
    pub initial_check: bool,
    /// How often the leader compares every member's hash of the whole keyspace, e.g. "10m"
    /// (unset or "0s": never). Each check reads every member's database once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]+[smh]$"))]
    pub corrupt_check_period: Option<String>,
    /// The leader compares its followers' hashes of each compacted revision (`CompactHashCheck`;
    /// etcd 3.5.5 and later). Cheap: etcd computes the hashes while compacting.
    #[serde(default)]
    pub compact_hash_check: bool,
    /// The compaction-hash check's period (unset: etcd's, 1m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]+[smh]$"))]
    pub compact_hash_check_period: Option<String>,
    /// A defragmenting member stops serving gRPC, so clients move to another member
    /// (`StopGRPCServiceOnDefrag`; etcd 3.5.14 and later).
    #[serde(default)]
    pub stop_serving_on_defrag: bool,
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
