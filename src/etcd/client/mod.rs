//! [`EtcdClient`]: one member's RPCs, each bounded by the client's RPC timeout, etcd's answers
//! turned into this room's plain data and its failures into [`EtcdError`]s.

mod auth;

use std::time::Duration;

use etcd_client::{AlarmAction, AlarmType, Client, MemberAddOptions};
use k8s_openapi::api::core::v1::Pod;

use super::dial::{self, TlsDial};
use super::{
    Auth, Cause, DEFAULT_RPC_TIMEOUT, DowngradeAction, EndpointStatus, EtcdError, HashAt, Keyspace,
    Member, MemberList, Versions,
};
use crate::model::fmt_id;

#[derive(serde::Deserialize)]
struct VersionAnswer {
    #[serde(default)]
    etcdserver: String,
    #[serde(default)]
    etcdcluster: String,
}

/// A client for one etcd member.
#[derive(Clone)]
pub struct EtcdClient {
    client: Client,
    /// The same member again, for what etcd serves only over HTTP.
    raw: dial::Raw,
    endpoint: String,
    rpc_timeout: Duration,
    /// The member accepted credentials (`authenticate`): etcd's authentication is on.
    authenticated: bool,
    /// The auth token every call carries, once there is one.
    token: dial::TokenSlot,
}

impl std::fmt::Debug for EtcdClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdClient")
            .field("endpoint", &self.endpoint)
            .field("rpc_timeout", &self.rpc_timeout)
            .finish_non_exhaustive()
    }
}

impl EtcdClient {
    /// Direct dial, e.g. "http://10.244.0.5:2379" (a bare "host:port" gets `http://`). Fails within
    /// `timeout` if the member cannot be reached.
    pub async fn connect(url: &str, timeout: Duration) -> Result<Self, EtcdError> {
        Self::connect_tls(url, timeout, None).await
    }

    /// Direct dial, with TLS when `tls` is given (the URL's scheme is then https).
    pub async fn connect_tls(
        url: &str,
        timeout: Duration,
        tls: Option<TlsDial>,
    ) -> Result<Self, EtcdError> {
        let endpoint = dial::normalize_url(url);
        let (client, token) = dial::direct(&endpoint, timeout, tls.as_ref())
            .await
            .map_err(|source| EtcdError::Connect {
                endpoint: endpoint.clone(),
                source,
            })?;
        let raw = dial::Raw::from_url(&endpoint, tls);
        Ok(Self::new(client, token, raw, endpoint))
    }

    /// Through the Kubernetes API: every new connection opens a port-forward to `pod`:`port`
    /// (no local socket). Fails within `timeout` if the first one cannot be opened.
    pub async fn connect_port_forward(
        pods: kube::Api<Pod>,
        pod: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Self, EtcdError> {
        Self::connect_port_forward_tls(pods, pod, port, timeout, None).await
    }

    /// Through the Kubernetes API, with TLS over the port-forward when `tls` is given.
    pub async fn connect_port_forward_tls(
        pods: kube::Api<Pod>,
        pod: &str,
        port: u16,
        timeout: Duration,
        tls: Option<TlsDial>,
    ) -> Result<Self, EtcdError> {
        let endpoint = match pods.namespace() {
            Some(ns) => format!("pod/{ns}/{pod}:{port}"),
            None => format!("pod/{pod}:{port}"),
        };
        let raw = dial::Raw {
            path: dial::RawPath::PortForward {
                pods: Box::new(pods.clone()),
                pod: pod.to_owned(),
                port,
            },
            tls: tls.clone(),
        };
        let (client, token) = dial::port_forward(pods, pod, port, timeout, tls)
            .await
            .map_err(|source| EtcdError::Connect {
                endpoint: endpoint.clone(),
                source,
            })?;
        Ok(Self::new(client, token, raw, endpoint))
    }

    fn new(client: Client, token: dial::TokenSlot, raw: dial::Raw, endpoint: String) -> Self {
        Self {
            client,
            token,
            raw,
            endpoint,
            rpc_timeout: DEFAULT_RPC_TIMEOUT,
            authenticated: false,
        }
    }

    /// Authenticates as `user`: later calls carry the token the member issues. While etcd's
    /// authentication is off the credentials go unused and this is no error (they are set up
    /// before `etcdctl auth enable`); a learner issues no token (`Auth::Learner`: use one from
    /// another member, `use_token`).
    pub async fn authenticate(&mut self, user: &str, password: &str) -> Result<Auth, EtcdError> {
        let mut auth = self.client.auth_client();
        let call = auth.authenticate(user.to_string(), password.to_string());
        match Self::call(self.rpc_timeout, call).await {
            Ok(resp) => {
                let token = http::HeaderValue::from_str(resp.token()).map_err(|_| {
                    EtcdError::Authenticate {
                        endpoint: self.endpoint.clone(),
                        user: user.to_string(),
                        source: Cause::Incomplete("a token usable as gRPC metadata"),
                    }
                })?;
                self.use_token(token);
                Ok(Auth::Authenticated)
            }
            Err(Cause::Etcd(etcd_client::Error::GRpcStatus(s)))
                if s.message().contains("authentication is not enabled") =>
            {
                Ok(Auth::Off)
            }
            Err(Cause::Etcd(etcd_client::Error::GRpcStatus(s)))
                if s.message().contains("rpc not supported for learner") =>
            {
                Ok(Auth::Learner)
            }
            Err(source) => Err(EtcdError::Authenticate {
                endpoint: self.endpoint.clone(),
                user: user.to_string(),
                source,
            }),
        }
    }

    /// The token later calls carry (`authenticate`).
    pub fn token(&self) -> Option<http::HeaderValue> {
        self.token.read().ok().and_then(|t| t.clone())
    }

    /// Makes later calls carry `token` (one another member issued; etcd shares tokens through
    /// raft, so every member, learners included, knows them).
    pub fn use_token(&mut self, token: http::HeaderValue) {
        if let Ok(mut slot) = self.token.write() {
            *slot = Some(token);
        }
        self.authenticated = true;
    }

    /// Whether `authenticate` found etcd's authentication on.
    pub fn authenticated(&self) -> bool {
        self.authenticated
    }

    /// Bounds every later RPC of this client by `timeout`.
    pub fn with_rpc_timeout(mut self, timeout: Duration) -> Self {
        self.rpc_timeout = timeout;
        self
    }

    /// The label of the member this client talks to (its URL, or `pod/<ns>/<pod>:<port>`).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Runs one RPC under the client's timeout.
    async fn call<T>(
        timeout: Duration,
        rpc: impl Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, Cause> {
        tokio::time::timeout(timeout, rpc)
            .await
            .map_err(|_| Cause::Timeout(timeout))?
            .map_err(Cause::Etcd)
    }

    pub async fn member_list(&mut self) -> Result<MemberList, EtcdError> {
        let resp = Self::call(self.rpc_timeout, self.client.member_list())
            .await
            .map_err(|source| EtcdError::MemberList {
                endpoint: self.endpoint.clone(),
                source,
            })?;
        Ok(MemberList {
            cluster_id: resp.header().map_or(0, |h| h.cluster_id()),
            members: resp.members().iter().map(Member::from).collect(),
        })
    }

    pub async fn status(&mut self) -> Result<EndpointStatus, EtcdError> {
        let resp = Self::call(self.rpc_timeout, self.client.status())
            .await
            .map_err(|source| EtcdError::Status {
                endpoint: self.endpoint.clone(),
                source,
            })?;
        let header = resp.header().ok_or_else(|| EtcdError::Status {
            endpoint: self.endpoint.clone(),
            source: Cause::Incomplete("a header"),
        })?;
        Ok(EndpointStatus {
            member_id: header.member_id(),
            cluster_id: header.cluster_id(),
            leader_id: resp.leader(),
            version: resp.version().to_owned(),
            db_size: resp.db_size(),
            db_size_in_use: resp.raft_used_db_size(),
            raft_index: resp.raft_index(),
            raft_applied_index: resp.raft_applied_index(),
            raft_term: resp.raft_term(),
            revision: header.revision(),
            is_learner: resp.is_learner(),
            errors: resp.errors().to_vec(),
            storage_version: resp.storage_version().to_owned(),
            downgrade_target: resp
                .downgrade_info()
                .filter(|i| i.enabled())
                .map_or(String::new(), |i| i.target_version().to_owned()),
        })
    }

    /// Like `etcdctl endpoint health`: a linearizable read must succeed and no alarm may be raised.
    pub async fn health(&mut self) -> Result<(), EtcdError> {
        // The key need not exist; etcdctl reads the same one. Gets are linearizable by default.
        Self::call(self.rpc_timeout, self.client.get("health", None))
            .await
            .map_err(|source| EtcdError::Health {
                endpoint: self.endpoint.clone(),
                source,
            })?;
        let alarms = Self::call(
            self.rpc_timeout,
            self.client.alarm(AlarmAction::Get, AlarmType::None, None),
        )
        .await
        .map_err(|source| EtcdError::AlarmList {
            endpoint: self.endpoint.clone(),
            source,
        })?;
        let raised: Vec<String> = alarms
            .alarms()
            .iter()
            .filter(|a| a.alarm() != AlarmType::None)
            .map(|a| format!("{}:{}", fmt_id(a.member_id()), a.alarm().as_str_name()))
            .collect();
        if raised.is_empty() {
            Ok(())
        } else {
            Err(EtcdError::Alarms {
                endpoint: self.endpoint.clone(),
                alarms: raised.join(", "),
            })
        }
    }

    /// Adds a learner with the given peer URL; returns the new (not yet started) member.
    pub async fn add_learner(&mut self, peer_url: &str) -> Result<Member, EtcdError> {
        let error = |source| EtcdError::AddLearner {
            endpoint: self.endpoint.clone(),
            peer_url: peer_url.to_owned(),
            source,
        };
        let options = MemberAddOptions::new().with_is_learner();
        let resp = Self::call(
            self.rpc_timeout,
            self.client.member_add([peer_url], Some(options)),
        )
        .await
        .map_err(error)?;
        resp.member()
            .map(Member::from)
            .ok_or_else(|| error(Cause::Incomplete("the added member")))
    }

    /// Promotes a learner to a voting member; fails (transiently) until it has caught up.
    pub async fn promote(&mut self, id: u64) -> Result<(), EtcdError> {
        Self::call(self.rpc_timeout, self.client.member_promote(id))
            .await
            .map_err(|source| EtcdError::Promote {
                endpoint: self.endpoint.clone(),
                member: fmt_id(id),
                source,
            })?;
        Ok(())
    }

    pub async fn remove(&mut self, id: u64) -> Result<(), EtcdError> {
        Self::call(self.rpc_timeout, self.client.member_remove(id))
            .await
            .map_err(|source| EtcdError::Remove {
                endpoint: self.endpoint.clone(),
                member: fmt_id(id),
                source,
            })?;
        Ok(())
    }

    /// Moves member `id`'s peer URL to `peer_url` (etcd's member update).
    pub async fn update_peer_url(&mut self, id: u64, peer_url: &str) -> Result<(), EtcdError> {
        Self::call(
            self.rpc_timeout,
            self.client.member_update(id, [peer_url.to_string()]),
        )
        .await
        .map_err(|source| EtcdError::UpdatePeerUrl {
            endpoint: self.endpoint.clone(),
            member: fmt_id(id),
            peer_url: peer_url.to_owned(),
            source,
        })?;
        Ok(())
    }

    /// The member's server version and the cluster version it sees (etcd's `/version`; the
    /// cluster version is empty until the leader has decided it, a few seconds after start).
    pub async fn versions(&self) -> Result<Versions, EtcdError> {
        Self::versions_at(&self.raw, &self.endpoint, self.rpc_timeout).await
    }

    /// `/version` of `pod`:`port` through a port-forward of its own, with no gRPC connection:
    /// asked beside [`connect_port_forward_tls`](Self::connect_port_forward_tls) rather than
    /// after it (the two port-forwards open at the same time).
    pub async fn versions_port_forward(
        pods: kube::Api<Pod>,
        pod: &str,
        port: u16,
        tls: Option<TlsDial>,
        timeout: Duration,
    ) -> Result<Versions, EtcdError> {
        let endpoint = match pods.namespace() {
            Some(ns) => format!("pod/{ns}/{pod}:{port}"),
            None => format!("pod/{pod}:{port}"),
        };
        let raw = dial::Raw {
            path: dial::RawPath::PortForward {
                pods: Box::new(pods),
                pod: pod.to_owned(),
                port,
            },
            tls,
        };
        Self::versions_at(&raw, &endpoint, timeout).await
    }

    /// Which peers this member counts as connected (etcd's `/metrics`,
    /// `etcd_network_active_peers`): the count etcd's leader checks before it removes a voter.
    pub async fn peer_view(&self) -> Result<super::PeerView, EtcdError> {
        let err = |source| EtcdError::Metrics {
            endpoint: self.endpoint.clone(),
            source,
        };
        let body = dial::http_get(
            &self.raw,
            "/metrics",
            dial::MAX_METRICS_ANSWER,
            self.rpc_timeout,
        )
        .await
        .map_err(err)?;
        let text = std::str::from_utf8(&body).map_err(|e| err(Cause::NotUtf8(e)))?;
        Ok(super::PeerView::from_metrics(text))
    }

    async fn versions_at(
        raw: &dial::Raw,
        endpoint: &str,
        timeout: Duration,
    ) -> Result<Versions, EtcdError> {
        let err = |source| EtcdError::Version {
            endpoint: endpoint.to_owned(),
            source,
        };
        let body = dial::http_get(raw, "/version", dial::MAX_VERSION_ANSWER, timeout)
            .await
            .map_err(err)?;
        let v: VersionAnswer = serde_json::from_slice(&body).map_err(|e| err(Cause::Json(e)))?;
        Ok(Versions {
            server: v.etcdserver,
            cluster: v.etcdcluster,
        })
    }

    /// etcd's downgrade API (3.5+): `Validate` checks that the cluster can go to `target`
    /// ("3.5"), `Enable` starts it (members may then run the lower minor, leader last), `Cancel`
    /// ends it. Answers the cluster version. Must reach the leader for `Enable`/`Cancel`.
    pub async fn downgrade(
        &mut self,
        action: DowngradeAction,
        target: &str,
    ) -> Result<String, EtcdError> {
        use etcd_client::DowngradeOptions as O;
        let (name, options) = match action {
            DowngradeAction::Validate => ("validate", O::Validate(target.to_owned())),
            DowngradeAction::Enable => ("enable", O::Enable(target.to_owned())),
            DowngradeAction::Cancel => ("cancel", O::Cancel),
        };
        let mut m = self.client.maintenance_client();
        let resp = Self::call(self.rpc_timeout, m.downgrade(options))
            .await
            .map_err(|source| EtcdError::Downgrade {
                endpoint: self.endpoint.clone(),
                action: name,
                target: target.to_owned(),
                source,
            })?;
        Ok(resp.version().to_owned())
    }

    /// Transfers leadership to member `to`. Must be sent to the current leader (a follower
    /// answers "not leader", which is transient: ask the leader).
    pub async fn move_leader(&mut self, to: u64) -> Result<(), EtcdError> {
        Self::call(self.rpc_timeout, self.client.move_leader(to))
            .await
            .map_err(|source| EtcdError::MoveLeader {
                endpoint: self.endpoint.clone(),
                to: fmt_id(to),
                source,
            })?;
        Ok(())
    }

    /// Streams a snapshot of this member's backend (`Maintenance.Snapshot`, a local read that
    /// works without quorum). The bytes end with etcd's 32-byte sha256 trailer. No deadline covers
    /// the whole transfer (it scales with the database); a stream that yields nothing for
    /// `stall` fails instead.
    pub async fn snapshot(
        &mut self,
        stall: Duration,
    ) -> Result<impl tokio::io::AsyncRead + Send + Unpin + use<>, EtcdError> {
        let endpoint = self.endpoint.clone();
        let stream = Self::call(self.rpc_timeout, self.client.snapshot())
            .await
            .map_err(|source| EtcdError::Snapshot {
                endpoint: endpoint.clone(),
                source,
            })?;
        let chunks = futures::stream::try_unfold(stream, move |mut stream| {
            let endpoint = endpoint.clone();
            async move {
                let next = tokio::time::timeout(stall, stream.message())
                    .await
                    .map_err(|_| {
                        std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("the snapshot stream of {endpoint} stalled for {stall:?}"),
                        )
                    })?
                    .map_err(|e| {
                        std::io::Error::other(format!(
                            "the snapshot stream of {endpoint} failed: {e}"
                        ))
                    })?;
                Ok::<_, std::io::Error>(
                    next.map(|m| (bytes::Bytes::copy_from_slice(m.blob()), stream)),
                )
            }
        });
        Ok(tokio_util::io::StreamReader::new(Box::pin(chunks)))
    }

    /// Defragments this member's database (it answers nobody meanwhile): `timeout` bounds the
    /// call instead of the RPC timeout, since a large database takes a while.
    pub async fn defragment(&mut self, timeout: Duration) -> Result<(), EtcdError> {
        Self::call(timeout, self.client.defragment())
            .await
            .map_err(|source| EtcdError::Defragment {
                endpoint: self.endpoint.clone(),
                source,
            })?;
        Ok(())
    }

    /// Compacts the keyspace history up to `revision` (physically: the freed pages can then be
    /// defragmented away). An already compacted revision counts as done.
    pub async fn compact(&mut self, revision: i64) -> Result<(), EtcdError> {
        let opts = etcd_client::CompactionOptions::new().with_physical();
        match Self::call(self.rpc_timeout, self.client.compact(revision, Some(opts))).await {
            Ok(_) => Ok(()),
            Err(Cause::Etcd(e))
                if e.to_string()
                    .contains("required revision has been compacted") =>
            {
                Ok(())
            }
            Err(source) => Err(EtcdError::Compact {
                endpoint: self.endpoint.clone(),
                revision,
                source,
            }),
        }
    }

    /// The raised alarms: (member id, alarm name, e.g. "NOSPACE").
    pub async fn alarms(&mut self) -> Result<Vec<(u64, String)>, EtcdError> {
        let resp = Self::call(
            self.rpc_timeout,
            self.client.alarm(AlarmAction::Get, AlarmType::None, None),
        )
        .await
        .map_err(|source| EtcdError::AlarmList {
            endpoint: self.endpoint.clone(),
            source,
        })?;
        Ok(resp
            .alarms()
            .iter()
            .filter(|a| a.alarm() != AlarmType::None)
            .map(|a| (a.member_id(), a.alarm().as_str_name().to_owned()))
            .collect())
    }

    /// Disarms the NOSPACE alarm of `member` (etcd accepts writes again once none is raised).
    pub async fn disarm_nospace(&mut self, member: u64) -> Result<(), EtcdError> {
        let mut opts = etcd_client::AlarmOptions::new();
        opts.with_member(member);
        Self::call(
            self.rpc_timeout,
            self.client
                .alarm(AlarmAction::Deactivate, AlarmType::Nospace, Some(opts)),
        )
        .await
        .map_err(|source| EtcdError::Disarm {
            endpoint: self.endpoint.clone(),
            member: fmt_id(member),
            alarm: "NOSPACE".into(),
            source,
        })?;
        Ok(())
    }

    /// The current revision and the number of keys (a serializable count: no quorum needed).
    pub async fn keyspace(&mut self) -> Result<Keyspace, EtcdError> {
        self.keyspace_read(true).await
    }

    /// The same by a linearizable read: it passes only on a member of a quorum whose applied
    /// index the leader confirmed, so the revision is at least that of every write acknowledged
    /// before it (a member cut off from its peers answers the serializable count with what it
    /// had, and fails this one).
    pub async fn keyspace_linearizable(&mut self) -> Result<Keyspace, EtcdError> {
        self.keyspace_read(false).await
    }

    async fn keyspace_read(&mut self, serializable: bool) -> Result<Keyspace, EtcdError> {
        let mut opts = etcd_client::GetOptions::new()
            .with_all_keys()
            .with_count_only();
        if serializable {
            opts = opts.with_serializable();
        }
        let resp = Self::call(self.rpc_timeout, self.client.get(vec![0u8], Some(opts)))
            .await
            .map_err(|source| EtcdError::Keyspace {
                endpoint: self.endpoint.clone(),
                source,
            })?;
        Ok(Keyspace {
            revision: resp.header().map_or(0, |h| h.revision()),
            keys: resp.count(),
        })
    }

    /// The keyspace at `revision` (0: the latest): etcd's `HashKV` there, the compaction it was
    /// computed above, and the number of keys (a serializable count at that revision).
    pub async fn hash_at(&mut self, revision: i64) -> Result<HashAt, EtcdError> {
        let failed = |source| EtcdError::Keyspace {
            endpoint: self.endpoint.clone(),
            source,
        };
        let hash = match Self::call(self.rpc_timeout, self.client.hash_kv(revision)).await {
            Ok(h) => h,
            Err(Cause::Etcd(e)) if e.to_string().contains("has been compacted") => {
                return Ok(HashAt::Compacted);
            }
            Err(Cause::Etcd(e)) if e.to_string().contains("future revision") => {
                let now = self.keyspace().await?;
                return Ok(HashAt::Future {
                    revision: now.revision,
                });
            }
            Err(source) => return Err(failed(source)),
        };
        let at = if revision == 0 {
            hash.header().map_or(0, |h| h.revision())
        } else {
            revision
        };
        let opts = etcd_client::GetOptions::new()
            .with_all_keys()
            .with_count_only()
            .with_serializable()
            .with_revision(at);
        let keys = Self::call(self.rpc_timeout, self.client.get(vec![0u8], Some(opts)))
            .await
            .map_err(failed)?
            .count();
        Ok(HashAt::Hash {
            hash_kv: hash.hash(),
            compact_revision: hash.compact_version(),
            keys,
        })
    }

    /// Grants a lease of `ttl` seconds (writers and tests attach keys to it).
    pub async fn lease_grant(&mut self, ttl: i64) -> Result<i64, EtcdError> {
        let resp = Self::call(self.rpc_timeout, self.client.lease_grant(ttl, None))
            .await
            .map_err(|source| EtcdError::Put {
                endpoint: self.endpoint.clone(),
                key: format!("(lease of {ttl} s)"),
                source,
            })?;
        Ok(resp.id())
    }

    /// Puts raw bytes, attached to `lease` when given.
    pub async fn put_bytes(
        &mut self,
        key: &str,
        value: Vec<u8>,
        lease: Option<i64>,
    ) -> Result<(), EtcdError> {
        let opts = lease.map(|l| etcd_client::PutOptions::new().with_lease(l));
        Self::call(self.rpc_timeout, self.client.put(key, value, opts))
            .await
            .map_err(|source| EtcdError::Put {
                endpoint: self.endpoint.clone(),
                key: key.to_owned(),
                source,
            })?;
        Ok(())
    }

    pub async fn put(&mut self, key: &str, value: &str) -> Result<(), EtcdError> {
        Self::call(self.rpc_timeout, self.client.put(key, value, None))
            .await
            .map_err(|source| EtcdError::Put {
                endpoint: self.endpoint.clone(),
                key: key.to_owned(),
                source,
            })?;
        Ok(())
    }

    pub async fn get(&mut self, key: &str) -> Result<Option<String>, EtcdError> {
        let error = |source| EtcdError::Get {
            endpoint: self.endpoint.clone(),
            key: key.to_owned(),
            source,
        };
        let resp = Self::call(self.rpc_timeout, self.client.get(key, None))
            .await
            .map_err(error)?;
        match resp.kvs().first() {
            None => Ok(None),
            Some(kv) => kv
                .value_str()
                .map(|v| Some(v.to_owned()))
                .map_err(|e| match e {
                    etcd_client::Error::Utf8Error(e) => error(Cause::NotUtf8(e)),
                    e => error(Cause::Etcd(e)),
                }),
        }
    }
}
