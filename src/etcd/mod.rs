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

/// Which peers one member counts as connected, as its `/metrics` say
/// (`etcd_network_active_peers{Local,Remote}`). etcd's leader refuses to remove a voter when,
/// without it, fewer than a quorum of the voters would be peers it counts as connected for the
/// last five seconds ("unhealthy cluster"). That count can go stale: a failed send on the
/// pipeline (a dial of a replaced pod's old address) marks a peer inactive after its streams
/// connected, and nothing marks it active again while those streams hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PeerView {
    /// The member whose view this is (the metrics' `Local`; 0 when none was named).
    pub member_id: u64,
    /// Peers it knows, and whether it counts each as connected. A peer it never connected to
    /// has no line, and counts as not connected.
    pub active: std::collections::BTreeMap<u64, bool>,
}

impl PeerView {
    /// Reads the `etcd_network_active_peers` lines of a Prometheus text exposition.
    pub fn from_metrics(text: &str) -> PeerView {
        let mut view = PeerView::default();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("etcd_network_active_peers{") else {
                continue;
            };
            let Some((labels, value)) = rest.split_once('}') else {
                continue;
            };
            let label = |name: &str| {
                labels.split(',').find_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    (k.trim() == name).then(|| v.trim().trim_matches('"'))
                })
            };
            let id = |v: Option<&str>| v.and_then(|v| u64::from_str_radix(v, 16).ok());
            let (Some(local), Some(remote)) = (id(label("Local")), id(label("Remote"))) else {
                continue;
            };
            let Ok(value) = value.trim().parse::<f64>() else {
                continue;
            };
            view.member_id = local;
            view.active.insert(remote, value > 0.0);
        }
        view
    }

    /// Whether this member counts peer `id` as connected.
    pub fn counts_connected(&self, id: u64) -> bool {
        self.active.get(&id).copied().unwrap_or(false)
    }
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

/// A member's keyspace at one revision, as a restore drill compares it (`EtcdClient::hash_at`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HashAt {
    /// etcd's `HashKV` at the revision (over what its compaction kept), and the keys there.
    Hash {
        hash_kv: u32,
        compact_revision: i64,
        keys: i64,
    },
    /// The member compacted past the revision.
    Compacted,
    /// The revision is ahead of the member's own (`revision`).
    Future { revision: i64 },
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

/// The etcd user with the `root` role every cluster with authentication on needs (etcd refuses
/// `auth enable` without it), and the role itself.
pub const ROOT: &str = "root";

pub use crate::model::AuthView;

/// One permission of an etcd role: reading (and writing, when `write`) the keys in
/// `[key, range_end)`; an empty `range_end` is the one key, `range_end` `\0` every key from `key` on.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Grant {
    pub key: Vec<u8>,
    pub range_end: Vec<u8>,
    pub write: bool,
}

impl Grant {
    /// Every key under `prefix` (an empty prefix: every key).
    pub fn prefix(prefix: &[u8], write: bool) -> Grant {
        if prefix.is_empty() {
            return Grant {
                key: vec![0],
                range_end: vec![0],
                write,
            };
        }
        Grant {
            key: prefix.to_vec(),
            range_end: prefix_end(prefix),
            write,
        }
    }
}

/// The first key after every key that starts with `prefix` (etcd's own rule: the last byte below
/// 0xff raised by one, the bytes after it dropped; all 0xff: every key from `prefix` on, `\0`).
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_grant_ends_where_etcd_ends_the_prefix() {
        assert_eq!(prefix_end(b"/app/"), b"/app0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
        let all = Grant::prefix(b"", false);
        assert_eq!((all.key, all.range_end), (vec![0], vec![0]));
        let app = Grant::prefix(b"/app/", true);
        assert_eq!(
            (app.key.as_slice(), app.range_end.as_slice(), app.write),
            (&b"/app/"[..], &b"/app0"[..], true)
        );
    }

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

    /// The lines a leader of three wrote while it counted a replaced member (fc5e…) as
    /// disconnected though its streams were up; a removed member's line stays at 0.
    const LEADER_METRICS: &str = "\
# HELP etcd_network_active_peers The current number of active peer connections.
# TYPE etcd_network_active_peers gauge
etcd_network_active_peers{Local=\"4ae6a216b8ed2c9f\",Remote=\"2eb3f5faec75e1d5\"} 0
etcd_network_active_peers{Local=\"4ae6a216b8ed2c9f\",Remote=\"70be669f0a0b239f\"} 1
etcd_network_active_peers{Local=\"4ae6a216b8ed2c9f\",Remote=\"fc5eab0e01e7f2bb\"} 0
# HELP etcd_network_disconnected_peers_total The total number of disconnected peers.
etcd_network_disconnected_peers_total{Local=\"4ae6a216b8ed2c9f\",Remote=\"fc5eab0e01e7f2bb\"} 2
etcd_network_active_peers_total{Local=\"1\",Remote=\"2\"} 1
";

    #[test]
    fn a_peer_view_reads_the_active_peers_gauge_and_nothing_else() {
        let v = PeerView::from_metrics(LEADER_METRICS);
        assert_eq!(v.member_id, 0x4ae6a216b8ed2c9f);
        assert!(v.counts_connected(0x70be669f0a0b239f));
        assert!(!v.counts_connected(0xfc5eab0e01e7f2bb));
        assert!(!v.counts_connected(0x2eb3f5faec75e1d5));
        // A peer without a line was never connected.
        assert!(!v.counts_connected(0x1234));
        assert_eq!(v.active.len(), 3);
        // Labels in another order, and a value written as a float.
        let v = PeerView::from_metrics("etcd_network_active_peers{Remote=\"b\",Local=\"a\"} 1.0\n");
        assert_eq!((v.member_id, v.counts_connected(0xb)), (0xa, true));
        assert_eq!(
            PeerView::from_metrics("no metrics here"),
            PeerView::default()
        );
    }
}
