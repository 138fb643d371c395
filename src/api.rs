//! The custom resource `EtcdCluster`: spec, status, condition types and reasons.
//!
//! Pure data: no I/O, no client. Everything the API server stores about a cluster is declared here.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, ResourceRequirements, Toleration};
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
    /// etcd cluster id, 16 hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// Label selector of member pods (for the scale subresource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
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

/// The CRD object, from the Rust types. Schema defaults are dropped under `status` (only the
/// engine writes status, and the 1.20 API server rejects some of them, e.g. empty-string defaults).
pub fn crd() -> CustomResourceDefinition {
    use kube::CustomResourceExt;
    let mut crd = EtcdCluster::crd();
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
    crd
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
