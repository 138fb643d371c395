//! What failed in a call to etcd ([`EtcdError`]: named for the call, carrying the endpoint) and
//! why underneath ([`Cause`]), and whether waiting may help ([`EtcdError::is_transient`]): the
//! classification of etcd's, the transport's and the port-forward's failures. Pure: no client.

use std::time::Duration;

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
    #[error("failed to move the peer URL of member {member} to {peer_url} via {endpoint}")]
    UpdatePeerUrl {
        endpoint: String,
        member: String,
        peer_url: String,
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
    #[error("failed to read the peer connections of {endpoint} (/metrics)")]
    Metrics {
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
    #[error("failed to {what} via {endpoint}")]
    Auth {
        endpoint: String,
        what: String,
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
        " (the database reached its quota and etcd refuses writes: the engine compacts, \
         defragments one member at a time and disarms the alarm by itself, raising the quota once \
         if that frees too little; by hand: `kubectl etcd defrag CLUSTER --compact`, or raise \
         spec.etcd.quotaBackendBytes)"
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
            | EtcdError::UpdatePeerUrl { endpoint, .. }
            | EtcdError::MoveLeader { endpoint, .. }
            | EtcdError::Put { endpoint, .. }
            | EtcdError::Auth { endpoint, .. }
            | EtcdError::Get { endpoint, .. }
            | EtcdError::Snapshot { endpoint, .. }
            | EtcdError::Keyspace { endpoint, .. }
            | EtcdError::Version { endpoint, .. }
            | EtcdError::Metrics { endpoint, .. }
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
            | EtcdError::UpdatePeerUrl { source, .. }
            | EtcdError::MoveLeader { source, .. }
            | EtcdError::Put { source, .. }
            | EtcdError::Auth { source, .. }
            | EtcdError::Get { source, .. }
            | EtcdError::Snapshot { source, .. }
            | EtcdError::Keyspace { source, .. }
            | EtcdError::Version { source, .. }
            | EtcdError::Metrics { source, .. }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::DEFAULT_RPC_TIMEOUT;
    use crate::model::fmt_id;
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
}
