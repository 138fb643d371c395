//! `spec.adopt` and `status.adoption`: taking over an etcd cluster that runs outside the engine
//! (`kubectl etcd adopt`). Pure data.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `spec.adopt`: the intent to take over a running etcd cluster (written by `kubectl etcd
/// adopt` after its survey). The engine grows the cluster through learners to `spec.replicas`
/// members of its own (they join the old cluster: same cluster id, same revisions), moves
/// leadership to them and retires the old members one at a time, the highest ordinal first,
/// quorum kept at every step. The old StatefulSet ends at 0 replicas, kept with its volumes.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdoptSpec {
    /// The StatefulSet of the old members (same namespace): scaled down by one after each of
    /// its members is removed, and kept at 0 replicas with its volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stateful_set: Option<String>,
    /// The old members' client URLs, as they advertise them: how the engine reaches them.
    #[serde(default)]
    pub endpoints: Vec<String>,
    /// The cluster id the survey found (16 hex digits): a member answering with another one
    /// puts the adoption on hold.
    pub cluster_id: String,
    /// Secret (`tls.crt`, `tls.key`, `ca.crt`) of the client certificate the old members want.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_secret: Option<String>,
    /// A Service of the old cluster whose selector is re-pointed to the new members before the
    /// last old member is removed, so its clients need no change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub take_over_service: Option<String>,
    /// Put the old cluster back: the new members are removed one at a time (possible while no
    /// old member was retired yet).
    #[serde(default)]
    pub abort: bool,
}

/// `status.adoption`: where an adoption stands (written by the engine with every pass while
/// `spec.adopt` is set).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdoptionStatus {
    /// Joining, Retiring, Adopted, Aborting, Aborted (`adoption_phase`).
    pub phase: String,
    /// The old members still in the cluster.
    #[serde(default)]
    pub old_members: Vec<String>,
    /// The engine's members that are voters.
    #[serde(default)]
    pub new_voters: i32,
}

/// The values of `status.adoption.phase`.
pub mod adoption_phase {
    /// The engine's members join the old cluster as learners and are promoted.
    pub const JOINING: &str = "Joining";
    /// Leadership moves to the engine's members and the old members are removed one at a time.
    pub const RETIRING: &str = "Retiring";
    /// No old member is left; the old StatefulSet is at 0 replicas.
    pub const ADOPTED: &str = "Adopted";
    /// `spec.adopt.abort`: the engine's members are removed one at a time.
    pub const ABORTING: &str = "Aborting";
    /// Only the old members are left, as before the adoption.
    pub const ABORTED: &str = "Aborted";
}
