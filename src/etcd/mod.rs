//! The etcd wrapper: speaks gRPC to one etcd member per [`EtcdClient`].
//!
//! May touch: the network to one etcd member, and — only to dial it — the Kubernetes API for a
//! port-forward. Knows nothing of custom resources, plans or Kubernetes objects; it turns etcd's
//! answers into plain data ([`Member`], [`MemberList`], [`EndpointStatus`]) and etcd's failures into
//! [`EtcdError`], which says which member failed at what and whether waiting may help
//! ([`EtcdError::is_transient`]).
//!
//! One client talks to exactly one member: a client built with several endpoints would
//! load-balance every call, while status, move-leader and the like are questions for one member.
//! Every call is bounded by the client's RPC timeout, so a dead member never hangs a caller.
//!
//! The plain data lives here; `client` holds the RPCs, `error` the failures and which of them pass
//! by waiting, `dial` the ways to reach a member (direct, TLS, port-forward).

mod client;
mod dial;
mod error;

pub use client::EtcdClient;
pub use dial::TlsDial;
pub use error::{Cause, EtcdError};

use std::time::Duration;

use serde::Serialize;

/// How long one RPC may take unless [`EtcdClient::with_rpc_timeout`] says otherwise.
pub const DEFAULT_RPC_TIMEOUT: Duration = Duration::from_secs(5);

/// One entry of etcd's member list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Member {
    pub id: u64,
    /// Empty for a member that was added but has never started (etcd learns the name from it).
    pub name: String,
    pub peer_urls: Vec<String>,
    /// Empty for a member that has never started.
    pub client_urls: Vec<String>,
    pub is_learner: bool,
}

impl Member {
    /// Whether the member process has ever run and published itself. Its client URLs are the
    /// sign: a member added with `member add` has neither name nor client URLs until it starts,
    /// but the members of a static bootstrap carry their names from `--initial-cluster` from the
    /// start, so a name alone does not prove a member ever ran.
    pub fn started(&self) -> bool {
        !self.client_urls.is_empty()
    }
}

impl From<&etcd_client::Member> for Member {
    fn from(m: &etcd_client::Member) -> Self {
        Self {
            id: m.id(),
            name: m.name().to_owned(),
            peer_urls: m.peer_urls().to_vec(),
            client_urls: m.client_urls().to_vec(),
            is_learner: m.is_learner(),
        }
    }
}

/// The member list as one member sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemberList {
    pub cluster_id: u64,
    pub members: Vec<Member>,
}

/// One member's view of itself (`etcdctl endpoint status`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EndpointStatus {
    pub member_id: u64,
    pub cluster_id: u64,
    /// 0 while the member knows no leader.
    pub leader_id: u64,
    /// The server's version, e.g. "3.5.16".
    pub version: String,
    pub db_size: i64,
    pub db_size_in_use: i64,
    pub raft_index: u64,
    pub raft_applied_index: u64,
    pub raft_term: u64,
    /// The keyspace revision this member has applied (the response header's).
    pub revision: i64,
    pub is_learner: bool,
    pub errors: Vec<String>,
    /// The version of the db file's schema (3.6+; empty before).
    pub storage_version: String,
    /// The target of a downgrade in progress ("3.5.0"), as this member knows it (3.6+; empty
    /// when none is enabled or before 3.6).
    pub downgrade_target: String,
}

impl EndpointStatus {
    pub fn is_leader(&self) -> bool {
        self.leader_id != 0 && self.leader_id == self.member_id
    }
}

/// What a member's `/version` says.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Versions {
    pub server: String,
    /// "3.5.0"; empty while not decided yet.
    pub cluster: String,
}

/// The three actions of etcd's downgrade API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DowngradeAction {
    Validate,
    Enable,
    Cancel,
}

/// The size of a member's keyspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Keyspace {
    pub revision: i64,
    pub keys: i64,
}

/// What `EtcdClient::authenticate` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// The member issued a token: etcd's authentication is on.
    Authenticated,
    /// etcd's authentication is off: no token needed.
    Off,
    /// A learner: it issues no token; one from another member serves.
    Learner,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_is_started_once_it_published_its_client_urls() {
        let mut member = Member {
            id: 1,
            name: String::new(),
            peer_urls: vec!["http://127.0.0.1:2380".into()],
            client_urls: vec![],
            is_learner: true,
        };
        assert!(!member.started());
        // A static-bootstrap member has its name before it ever ran.
        member.name = "m1".into();
        assert!(!member.started());
        member.client_urls = vec!["http://127.0.0.1:2379".into()];
        assert!(member.started());
    }
}
