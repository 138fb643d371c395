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

mod dial;

pub use dial::TlsDial;

use std::time::Duration;

use etcd_client::{AlarmAction, AlarmType, Client, MemberAddOptions};
use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;

use crate::model::fmt_id;

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

/// Why a call failed underneath (the `source` of an [`EtcdError`]).
#[derive(Debug, thiserror::Error)]
pub enum Cause {
    /// The server answered with an error, or the transport below the RPC failed.
    #[error(transparent)]
    Etcd(#[from] etcd_client::Error),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
    #[error(transparent)]
    PortForward(#[from] kube::Error),
    #[error("the port-forward carries no stream for port {0}")]
    PortForwardStream(u16),
    #[error("the response lacks {0}")]
    Incomplete(&'static str),
    #[error("the value is not UTF-8")]
    NotUtf8(#[source] std::str::Utf8Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("the member answered {0:?}")]
    Http(String),
    #[error("the answer is not the JSON expected")]
    Json(#[source] serde_json::Error),
    #[error("TLS: {0}")]
    Tls(String),
    /// The user's Secret is missing or incomplete.
    #[error("{0}")]
    Credentials(String),
}

/// A failed etcd call, named for what failed and carrying the endpoint it was sent to.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("failed to connect to etcd at {endpoint}")]
    Connect {
        endpoint: String,
        #[source]
        source: Cause,
    },
    #[error("failed to authenticate as etcd user {user:?} at {endpoint}")]
    Authenticate {
        endpoint: String,
        user: String,
        #[source]
        source: Cause,
    },
    #[error("failed to list members via {endpoint}")]
    MemberList {
        endpoint: String,
        #[source]
        source: Cause,
    },
    #[error("failed to get the status of {endpoint}")]
    Status {
        endpoint: String,
        #[source]
        source: Cause,
    },
    #[error("etcd at {endpoint} is unhealthy: a linearizable read failed")]
    Health {
        endpoint: String,
        #[source]
        source: Cause,
    },
    #[error("failed to list alarms via {endpoint}")]
    AlarmList {
        endpoint: String,
        #[source]
        source: Cause,
    },
    #[error(
        "etcd at {endpoint} is unhealthy: active alarms {alarms}{}",
        nospace_hint(alarms)
    )]
    Alarms { endpoint: String, alarms: String },
    #[error("failed to defragment {endpoint}")]
    Defragment {
        endpoint: String,
        #[source]
        source: Cause,
    },
    #[error("failed to compact the keyspace to revision {revision} via {endpoint}")]
    Compact {
        endpoint: String,
        revision: i64,
        #[source]
        source: Cause,
    },
    #[error("failed to disarm alarm {alarm} of member {member} via {endpoint}")]
    Disarm {
        endpoint: String,
        member: String,
        alarm: String,
        #[source]
        source: Cause,
    },
    #[error("failed to add learner {peer_url} via {endpoint}")]
    AddLearner {
        endpoint: String,
        peer_url: String,
        #[source]
        source: Cause,
    },
    #[error("failed to promote member {member} via {endpoint}")]
    Promote {
        endpoint: String,
        member: String,
        #[source]
        source: Cause,
    },
    #[error("failed to remove member {member} via {endpoint}")]
    Remove {
        endpoint: String,
        member: String,
        #[source]
        source: Cause,
    },
    #[error("failed to move leadership to member {to} via {endpoint}")]
    MoveLeader {
        endpoint: String,
        to: String,
        #[source]
        source: Cause,
    },
    #[error("failed to start a snapshot of {endpoint}")]
    Snapshot {
        endpoint: String,
        #[source]
        source: Cause,
    },
    #[error("failed to read the keyspace summary of {endpoint}")]
    Keyspace {
        endpoint: String,
        #[source]
        source: Cause,
    },
    #[error("failed to read the versions of {endpoint} (/version)")]
    Version {
        endpoint: String,
        #[source]
        source: Cause,
    },
    #[error("etcd at {endpoint} refused to {action} a downgrade to {target}")]
    Downgrade {
        endpoint: String,
        action: &'static str,
        target: String,
        #[source]
        source: Cause,
    },
    #[error("failed to put {key} via {endpoint}")]
    Put {
        endpoint: String,
        key: String,
        #[source]
        source: Cause,
    },
    #[error("failed to get {key} via {endpoint}")]
    Get {
        endpoint: String,
        key: String,
        #[source]
        source: Cause,
    },
}

/// Substrings (lowercase) of etcd and transport errors that go away by waiting: a cluster that just
/// started or lost its leader, a learner still catching up, a request sent to a follower, etcd
/// 3.4's one-learner limit while another learner is being promoted, a learner refusing reads (it
/// does so until promoted, and for a moment after, until it has applied its own promotion), and
/// unreachable members.
const TRANSIENT_MESSAGES: &[&str] = &[
    "unhealthy cluster",
    "can only promote a learner member which is in sync with leader",
    "rpc not supported for learner",
    "not leader",
    "no leader",
    "leader changed",
    "too many learner members",
    "request timed out",
    "timed out",
    "deadline exceeded",
    "connection refused",
    "connection reset",
    "broken pipe",
    "too many requests",
];

fn is_transient_message(text: &str) -> bool {
    let text = text.to_lowercase();
    TRANSIENT_MESSAGES.iter().any(|m| text.contains(m))
}

/// The error's own text plus every source below it.
fn chain_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(e) = next {
        text.push_str(": ");
        text.push_str(&e.to_string());
        next = e.source();
    }
    text
}

impl Cause {
    fn is_transient(&self) -> bool {
        use tonic::Code;
        match self {
            Cause::Timeout(_) => true,
            Cause::Etcd(etcd_client::Error::GRpcStatus(status)) => {
                matches!(status.code(), Code::Unavailable | Code::DeadlineExceeded)
                    || is_transient_message(&chain_text(status))
            }
            Cause::Etcd(etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_)) => {
                true
            }
            Cause::Etcd(e) => is_transient_message(&e.to_string()),
            // A connect failure is transient unless the API server refused the port-forward for
            // good (no such pod, forbidden).
            Cause::Transport(e) => {
                !refused_by_tls(e) && (!refused_by_api(e) || is_transient_message(&chain_text(e)))
            }
            Cause::PortForward(e) => !refused_by_api(e),
            Cause::Io(_) => true,
            Cause::PortForwardStream(_)
            | Cause::Incomplete(_)
            | Cause::NotUtf8(_)
            | Cause::Http(_)
            | Cause::Json(_)
            | Cause::Tls(_)
            | Cause::Credentials(_) => false,
        }
    }
}

/// Whether a TLS handshake refused a certificate somewhere in the error's chain (our connector's
/// own `Cause::Tls`, under tonic's transport error): that does not pass by retrying.
fn refused_by_tls(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if matches!(e.downcast_ref::<Cause>(), Some(Cause::Tls(_))) {
            return true;
        }
        next = e.source();
    }
    false
}

/// Whether the API server refused for good (4xx other than 429: no such pod, forbidden) somewhere
/// in the error's chain.
fn refused_by_api(error: &(dyn std::error::Error + 'static)) -> bool {
    api_code(error).is_some_and(|code| (400..500).contains(&code) && code != 429)
}

/// The HTTP code of the first kube API error in the chain. `source()` alone cannot find it: a
/// transparent `Cause` and an `io::Error` both report their inner error's source, skipping the
/// inner error itself, and tonic wraps the connector's error in both.
fn api_code(error: &(dyn std::error::Error + 'static)) -> Option<u16> {
    if let Some(kube::Error::Api(status)) = error.downcast_ref::<kube::Error>() {
        return Some(status.code);
    }
    if let Some(Cause::PortForward(kube::Error::Api(status))) = error.downcast_ref::<Cause>() {
        return Some(status.code);
    }
    if let Some(inner) = error
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::get_ref)
        && let Some(code) = api_code(inner)
    {
        return Some(code);
    }
    error.source().and_then(api_code)
}

/// What to do about a NOSPACE alarm, for the message of an unhealthy member.
fn nospace_hint(alarms: &str) -> &'static str {
    if alarms.contains("NOSPACE") {
        " (the database reached its quota and etcd refuses writes: free space with \
         `kubectl etcd defrag CLUSTER --compact`, which disarms the alarm, or raise spec.etcd.quotaBackendBytes)"
    } else {
        ""
    }
}

impl EtcdError {
    /// The endpoint the failed call was sent to.
    pub fn endpoint(&self) -> &str {
        match self {
            EtcdError::Connect { endpoint, .. }
            | EtcdError::Authenticate { endpoint, .. }
            | EtcdError::MemberList { endpoint, .. }
            | EtcdError::Status { endpoint, .. }
            | EtcdError::Health { endpoint, .. }
            | EtcdError::AlarmList { endpoint, .. }
            | EtcdError::Alarms { endpoint, .. }
            | EtcdError::AddLearner { endpoint, .. }
            | EtcdError::Promote { endpoint, .. }
            | EtcdError::Remove { endpoint, .. }
            | EtcdError::MoveLeader { endpoint, .. }
            | EtcdError::Put { endpoint, .. }
            | EtcdError::Get { endpoint, .. }
            | EtcdError::Snapshot { endpoint, .. }
            | EtcdError::Keyspace { endpoint, .. }
            | EtcdError::Version { endpoint, .. }
            | EtcdError::Defragment { endpoint, .. }
            | EtcdError::Compact { endpoint, .. }
            | EtcdError::Disarm { endpoint, .. }
            | EtcdError::Downgrade { endpoint, .. } => endpoint,
        }
    }

    fn cause(&self) -> Option<&Cause> {
        match self {
            EtcdError::Connect { source, .. }
            | EtcdError::Authenticate { source, .. }
            | EtcdError::MemberList { source, .. }
            | EtcdError::Status { source, .. }
            | EtcdError::Health { source, .. }
            | EtcdError::AlarmList { source, .. }
            | EtcdError::AddLearner { source, .. }
            | EtcdError::Promote { source, .. }
            | EtcdError::Remove { source, .. }
            | EtcdError::MoveLeader { source, .. }
            | EtcdError::Put { source, .. }
            | EtcdError::Get { source, .. }
            | EtcdError::Snapshot { source, .. }
            | EtcdError::Keyspace { source, .. }
            | EtcdError::Version { source, .. }
            | EtcdError::Defragment { source, .. }
            | EtcdError::Compact { source, .. }
            | EtcdError::Disarm { source, .. }
            | EtcdError::Downgrade { source, .. } => Some(source),
            EtcdError::Alarms { .. } => None,
        }
    }

    /// Whether waiting and retrying may succeed: the cluster is (re)electing or just started, a
    /// learner is still catching up (or, as a learner, refuses reads), the call reached a follower
    /// where the leader was needed, etcd 3.4 still has a learner, or the member did not answer. Callers treat these as "wait",
    /// everything else as broken. Raised alarms are not transient: they need an operator.
    pub fn is_transient(&self) -> bool {
        self.cause().is_some_and(Cause::is_transient)
    }
}

/// What a member's `/version` says.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Versions {
    pub server: String,
    /// "3.5.0"; empty while not decided yet.
    pub cluster: String,
}

#[derive(serde::Deserialize)]
struct VersionAnswer {
    #[serde(default)]
    etcdserver: String,
    #[serde(default)]
    etcdcluster: String,
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

    /// The member's server version and the cluster version it sees (etcd's `/version`; the
    /// cluster version is empty until the leader has decided it, a few seconds after start).
    pub async fn versions(&self) -> Result<Versions, EtcdError> {
        let err = |source| EtcdError::Version {
            endpoint: self.endpoint.clone(),
            source,
        };
        let body = dial::http_get(&self.raw, "/version", self.rpc_timeout)
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
        let opts = etcd_client::GetOptions::new()
            .with_all_keys()
            .with_count_only()
            .with_serializable();
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

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::{Code, Status};

    fn grpc(code: Code, message: &str) -> Cause {
        Cause::Etcd(etcd_client::Error::GRpcStatus(Status::new(code, message)))
    }

    fn promote_failing_with(source: Cause) -> EtcdError {
        EtcdError::Promote {
            endpoint: "http://127.0.0.1:2379".into(),
            member: fmt_id(1),
            source,
        }
    }

    #[test]
    fn a_refused_user_is_not_transient_and_is_named() {
        for (code, message) in [
            (
                Code::InvalidArgument,
                "etcdserver: authentication failed, invalid user ID or password",
            ),
            (Code::InvalidArgument, "etcdserver: user name is empty"),
        ] {
            let error = EtcdError::Authenticate {
                endpoint: "pod/ns/demo-0:2379".into(),
                user: "root".into(),
                source: grpc(code, message),
            };
            assert!(!error.is_transient(), "{message} should not be transient");
            assert!(error.to_string().contains("\"root\""), "{error}");
        }
        let missing = EtcdError::Authenticate {
            endpoint: "pod/ns/demo-0:2379".into(),
            user: String::new(),
            source: Cause::Credentials("Secret ns/u does not exist".into()),
        };
        assert!(!missing.is_transient());
    }

    #[test]
    fn waiting_errors_from_etcd_are_transient() {
        // Messages and codes as etcd's gRPC layer sends them (api/v3rpc/rpctypes).
        for (code, message) in [
            (Code::Unavailable, "etcdserver: unhealthy cluster"),
            (
                Code::FailedPrecondition,
                "etcdserver: can only promote a learner member which is in sync with leader",
            ),
            (Code::FailedPrecondition, "etcdserver: not leader"),
            (Code::Unavailable, "etcdserver: no leader"),
            (Code::Unavailable, "etcdserver: leader changed"),
            (
                Code::FailedPrecondition,
                "etcdserver: too many learner members in cluster",
            ),
            (Code::Unavailable, "etcdserver: request timed out"),
            (
                Code::FailedPrecondition,
                "etcdserver: rpc not supported for learner",
            ),
            (Code::DeadlineExceeded, "context deadline exceeded"),
            (
                Code::Unknown,
                "transport error: tcp connect error: Connection refused (os error 111)",
            ),
        ] {
            let error = promote_failing_with(grpc(code, message));
            assert!(error.is_transient(), "{message} should be transient");
        }
        assert!(promote_failing_with(Cause::Timeout(DEFAULT_RPC_TIMEOUT)).is_transient());
    }

    #[test]
    fn refusals_that_waiting_cannot_fix_are_not_transient() {
        for (code, message) in [
            (Code::NotFound, "etcdserver: member not found"),
            (
                Code::FailedPrecondition,
                "etcdserver: can only promote a learner member",
            ),
            (
                Code::FailedPrecondition,
                "etcdserver: Peer URLs already exists",
            ),
            (Code::InvalidArgument, "etcdserver: member ID already exist"),
            (Code::PermissionDenied, "etcdserver: permission denied"),
        ] {
            let error = promote_failing_with(grpc(code, message));
            assert!(!error.is_transient(), "{message} should not be transient");
        }
        let alarms = EtcdError::Alarms {
            endpoint: "http://127.0.0.1:2379".into(),
            alarms: "000000000000002a:NOSPACE".into(),
        };
        assert!(!alarms.is_transient());
        assert!(!promote_failing_with(Cause::Incomplete("a header")).is_transient());
    }

    #[test]
    fn a_port_forward_to_a_missing_pod_is_not_transient_but_a_server_error_is() {
        let api = |code: u16| {
            Cause::PortForward(kube::Error::Api(Box::new(kube::core::Status {
                code,
                message: format!("code {code}"),
                ..Default::default()
            })))
        };
        assert!(!promote_failing_with(api(404)).is_transient());
        // as tonic hands the connector's error back: boxed, possibly inside an io::Error
        let wrapped = std::io::Error::other(api(404));
        assert!(refused_by_api(&wrapped));
        assert!(!refused_by_api(&std::io::Error::other(api(503))));
        assert!(!promote_failing_with(api(403)).is_transient());
        assert!(promote_failing_with(api(429)).is_transient());
        assert!(promote_failing_with(api(503)).is_transient());
    }

    #[test]
    fn errors_name_the_endpoint_and_keep_the_cause_as_source() {
        let error = EtcdError::AddLearner {
            endpoint: "http://127.0.0.1:2379".into(),
            peer_url: "http://127.0.0.1:2380".into(),
            source: grpc(Code::Unavailable, "etcdserver: unhealthy cluster"),
        };
        assert_eq!(
            error.to_string(),
            "failed to add learner http://127.0.0.1:2380 via http://127.0.0.1:2379"
        );
        assert_eq!(error.endpoint(), "http://127.0.0.1:2379");
        let source = std::error::Error::source(&error).expect("a source");
        assert!(source.to_string().contains("unhealthy cluster"));
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
}
