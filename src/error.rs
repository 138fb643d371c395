//! Errors of the engine and the CLI, and the one mapping from an error to an exit code.

use crate::archive::fetch::FetchError;
use crate::archive::store::{StoreError, UrlError};
use crate::etcd::EtcdError;
use crate::model::InvalidSpec;

/// Documented exit codes (docs/src/exit-codes.md).
pub mod exit {
    pub const OK: i32 = 0;
    /// Something failed that fits no other code.
    pub const FAILURE: i32 = 1;
    /// Bad command line or invalid spec: nothing was changed.
    pub const USAGE: i32 = 2;
    /// The named cluster (or another object) does not exist.
    pub const NOT_FOUND: i32 = 3;
    /// `--timeout` passed before the cluster converged (it keeps converging).
    pub const TIMEOUT: i32 = 4;
    /// The Kubernetes API could not be reached.
    pub const API_UNREACHABLE: i32 = 5;
    /// RBAC denied a request.
    pub const FORBIDDEN: i32 = 6;
    /// etcd did not answer, or the engine holds because acting would be unsafe.
    pub const ETCD_UNAVAILABLE: i32 = 7;
    /// The EtcdCluster CRD is not installed.
    pub const CRD_MISSING: i32 = 8;
    /// The object exists already.
    pub const CONFLICT: i32 = 9;
    /// A backup or restore failed: storage (credentials, bucket, endpoint), the snapshot, or its
    /// verification. The message names which.
    pub const BACKUP_FAILED: i32 = 10;
    /// `adopt` refused the running cluster (unhealthy, an unsupported version, learners, mixed
    /// cluster ids, names taken): nothing was changed. The message names every reason.
    pub const ADOPT_REFUSED: i32 = 11;
    /// An encrypted backup's key is missing or wrong (or its Secret holds no key): refused
    /// before anything was created or written. The message names the backup and the Secret.
    pub const BACKUP_KEY: i32 = 12;
    /// A restore drill (`backup verify`) found the backup is not what its record says, or it
    /// does not restore: its `status.drill` and the message name every reason.
    pub const DRILL_FAILED: i32 = 13;
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid spec of EtcdCluster {namespace}/{name}: {source}")]
    InvalidSpec {
        namespace: String,
        name: String,
        source: InvalidSpec,
    },
    #[error("{0}")]
    Usage(String),
    #[error(
        "EtcdCluster {namespace}/{name} not found; list clusters with `kubectl etcd status -A` or create it with `kubectl etcd create {name}`"
    )]
    NotFound { namespace: String, name: String },
    #[error(
        "EtcdCluster {namespace}/{name} has no member pod; see `kubectl etcd status {name}` and `kubectl -n {namespace} get statefulset {name}`"
    )]
    NoPods { namespace: String, name: String },
    #[error(
        "EtcdCluster {namespace}/{name} already exists; change it with `kubectl etcd scale` or delete it first"
    )]
    AlreadyExists { namespace: String, name: String },
    #[error(
        "the EtcdCluster CRD is not installed in this cluster; install it with `kubectl etcd install` (or `kubectl apply -f crds/`)"
    )]
    CrdMissing,
    #[error(
        "the installed EtcdCluster CRD is older than this kubectl-etcd: it has no {}, which the API server would drop from every write; update it with `kubectl etcd install` (or upgrade the Helm chart, or `kubectl apply -f crds/`) and retry; nothing was changed",
        missing.join(", ")
    )]
    CrdStale { missing: Vec<String> },
    #[error("failed to {verb} {kind} {}{name}", if namespace.is_empty() { String::new() } else { format!("{namespace}/") })]
    Kube {
        verb: &'static str,
        kind: &'static str,
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "cannot reach the Kubernetes API; check --kubeconfig/--context and that the cluster is up"
    )]
    ApiUnreachable(#[source] kube::Error),
    #[error("failed to load the kubeconfig; pass --kubeconfig or set KUBECONFIG")]
    Config(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("etcd of EtcdCluster {namespace}/{name} did not answer")]
    Etcd {
        namespace: String,
        name: String,
        #[source]
        source: EtcdError,
    },
    #[error(
        "EtcdCluster {namespace}/{name} did not converge within {seconds} s (last: {last}); it keeps converging, watch it with `kubectl etcd status {name}`"
    )]
    Timeout {
        namespace: String,
        name: String,
        seconds: u64,
        last: String,
    },
    #[error("EtcdCluster {namespace}/{name}: {message}")]
    Held {
        namespace: String,
        name: String,
        message: String,
    },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("failed to serialize output")]
    Serialize(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// An object of that name exists; the message says what to do instead.
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Backup(#[from] BackupError),
    /// `kubectl etcd adopt` will not take the running cluster over: every reason, one each.
    #[error("cannot adopt {what} into EtcdCluster {namespace}/{name}, nothing was changed: {}", reasons.join("; "))]
    AdoptRefused {
        namespace: String,
        name: String,
        what: String,
        reasons: Vec<String>,
    },
    /// Managed TLS: a certificate could not be built, or the CA Secret it is signed with read.
    #[error("failed to issue the {role} certificate of EtcdCluster {namespace}/{name}: {why}")]
    Certificate {
        namespace: String,
        name: String,
        role: &'static str,
        why: String,
    },
}

/// Why a backup or restore failed, apart from the Kubernetes API (whose failures are `Error::Kube`
/// like everywhere else). Credentials never appear in these messages.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The operator's limits refuse the location (its credentials or endpoint).
    #[error(transparent)]
    Refused(#[from] crate::archive::store::Refused),
    #[error("cannot take a snapshot: {0}")]
    NoSource(String),
    #[error(transparent)]
    Etcd(Box<EtcdError>),
    #[error("the snapshot is unusable: {0}")]
    Corrupt(String),
    /// The member the snapshot was taken from failed on the way (it could not be dialed, or its
    /// stream broke: its pod went away, the connection or port-forward broke, it stalled), at
    /// the StatefulSet ordinal `ordinal`: another member may serve it.
    #[error("{cause}")]
    SourceLost {
        ordinal: u32,
        #[source]
        cause: Box<BackupError>,
    },
    /// The encryption key: its Secret missing or holding no key, or not the backup's.
    #[error("{0}")]
    Key(String),
    /// A restore drill failed: the backup does not restore, or is not what its record says.
    #[error("the restore drill of EtcdBackup {backup} failed: {why}")]
    DrillFailed { backup: String, why: String },
}

impl From<FetchError> for BackupError {
    fn from(e: FetchError) -> Self {
        match e {
            FetchError::Store(e) => BackupError::Store(e),
            FetchError::Corrupt(m) => BackupError::Corrupt(m),
            FetchError::Local(m) => BackupError::Usage(m),
            e @ FetchError::Key { .. } => BackupError::Key(e.to_string()),
        }
    }
}

impl From<FetchError> for Error {
    fn from(e: FetchError) -> Self {
        Error::Backup(e.into())
    }
}

impl BackupError {
    /// Whether trying again may succeed (a storage hiccup, an etcd member that did not answer).
    pub fn is_transient(&self) -> bool {
        match self {
            BackupError::Store(e) => e.is_transient(),
            BackupError::Etcd(e) => e.is_transient(),
            BackupError::SourceLost { .. } => true,
            BackupError::Usage(_)
            | BackupError::Url(_)
            | BackupError::Refused(_)
            | BackupError::NoSource(_)
            | BackupError::Key(_)
            | BackupError::DrillFailed { .. }
            | BackupError::Corrupt(_) => false,
        }
    }

    /// The documented exit code (docs/src/exit-codes.md).
    pub fn exit_code(&self) -> i32 {
        match self {
            BackupError::Usage(_)
            | BackupError::Url(_)
            | BackupError::Refused(_)
            | BackupError::Store(crate::archive::store::StoreError::CaBundle(_)) => exit::USAGE,
            BackupError::Store(_) | BackupError::Corrupt(_) => exit::BACKUP_FAILED,
            BackupError::NoSource(_) | BackupError::Etcd(_) => exit::ETCD_UNAVAILABLE,
            BackupError::Key(_) => exit::BACKUP_KEY,
            BackupError::DrillFailed { .. } => exit::DRILL_FAILED,
            BackupError::SourceLost { cause, .. } => cause.exit_code(),
        }
    }
}

impl Error {
    pub fn kube(
        verb: &'static str,
        kind: &'static str,
        namespace: &str,
        name: &str,
        source: kube::Error,
    ) -> Error {
        match &source {
            kube::Error::HyperError(_) | kube::Error::Service(_) => Error::ApiUnreachable(source),
            _ => Error::Kube {
                verb,
                kind,
                namespace: namespace.into(),
                name: name.into(),
                source,
            },
        }
    }

    fn kube_source(&self) -> Option<&kube::Error> {
        match self {
            Error::Kube { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The HTTP status of a failed Kubernetes request, if any.
    pub fn api_code(&self) -> Option<u16> {
        match self.kube_source()? {
            kube::Error::Api(s) => Some(s.code),
            _ => None,
        }
    }

    /// Whether another pass may well not meet this failure: the API server or etcd hiccuped, or
    /// a write raced another writer. Invalid specs, RBAC denials, missing objects and requests
    /// the API server refused as malformed are not: repeating them changes nothing.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::ApiUnreachable(_) | Error::Etcd { .. } | Error::Io(_) => true,
            Error::Kube { .. } => match self.api_code() {
                // No HTTP status: the connection or the response broke.
                None => true,
                Some(code) => code == 409 || code == 429 || code >= 500,
            },
            Error::InvalidSpec { .. }
            | Error::Usage(_)
            | Error::NotFound { .. }
            | Error::NoPods { .. }
            | Error::AlreadyExists { .. }
            | Error::Conflict(_)
            | Error::CrdMissing
            | Error::CrdStale { .. }
            | Error::Config(_)
            | Error::Timeout { .. }
            | Error::Held { .. }
            | Error::AdoptRefused { .. }
            | Error::Certificate { .. }
            | Error::Serialize(_) => false,
            Error::Backup(e) => e.is_transient(),
        }
    }

    /// The documented exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::InvalidSpec { .. } | Error::Usage(_) => exit::USAGE,
            Error::NotFound { .. } | Error::NoPods { .. } => exit::NOT_FOUND,
            Error::AlreadyExists { .. } | Error::Conflict(_) => exit::CONFLICT,
            Error::CrdMissing | Error::CrdStale { .. } => exit::CRD_MISSING,
            Error::ApiUnreachable(_) | Error::Config(_) => exit::API_UNREACHABLE,
            Error::Etcd { .. } | Error::Held { .. } => exit::ETCD_UNAVAILABLE,
            Error::Timeout { .. } => exit::TIMEOUT,
            Error::Kube { .. } => match self.api_code() {
                Some(403 | 401) => exit::FORBIDDEN,
                Some(404) => exit::NOT_FOUND,
                Some(409) => exit::CONFLICT,
                Some(422 | 400) => exit::USAGE,
                _ => exit::FAILURE,
            },
            Error::Io(_) | Error::Serialize(_) | Error::Certificate { .. } => exit::FAILURE,
            Error::Backup(e) => e.exit_code(),
            Error::AdoptRefused { .. } => exit::ADOPT_REFUSED,
        }
    }

    /// One line for people: the message and its causes, and the fix for RBAC denials.
    pub fn report(&self) -> String {
        let mut s = self.to_string();
        let mut src = std::error::Error::source(self);
        while let Some(e) = src {
            // The API's own message, not the Debug dump kube's Display carries.
            if let Some(kube::Error::Api(st)) = e.downcast_ref::<kube::Error>() {
                s.push_str(": ");
                s.push_str(&st.message);
                break;
            }
            let m = e.to_string();
            if !s.contains(&m) {
                s.push_str(": ");
                s.push_str(&m);
            }
            src = e.source();
        }
        if self.exit_code() == exit::FORBIDDEN {
            s.push_str(" (RBAC denied it: ask for the role in docs/src/install.md, \"Permissions\", or use --context with more rights)");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_err(code: u16) -> Error {
        let status = kube::core::Status::failure("denied", "Forbidden").with_code(code);
        Error::Kube {
            verb: "create",
            kind: "EtcdCluster",
            namespace: "ns".into(),
            name: "demo".into(),
            source: kube::Error::Api(Box::new(status)),
        }
    }

    #[test]
    fn api_failures_map_to_documented_codes() {
        assert_eq!(api_err(403).exit_code(), exit::FORBIDDEN);
        assert_eq!(api_err(404).exit_code(), exit::NOT_FOUND);
        assert_eq!(api_err(409).exit_code(), exit::CONFLICT);
        assert_eq!(api_err(500).exit_code(), exit::FAILURE);
        assert!(api_err(403).report().contains("RBAC"));
        assert!(
            api_err(403)
                .report()
                .starts_with("failed to create EtcdCluster ns/demo")
        );
    }

    #[test]
    fn only_failures_another_pass_may_not_meet_are_transient() {
        for code in [409, 429, 500, 503] {
            assert!(api_err(code).is_transient(), "{code}");
        }
        for code in [400, 401, 403, 404, 422] {
            assert!(!api_err(code).is_transient(), "{code}");
        }
        assert!(!Error::CrdMissing.is_transient());
        assert!(
            !Error::Held {
                namespace: "ns".into(),
                name: "demo".into(),
                message: "holding".into()
            }
            .is_transient()
        );
    }

    #[test]
    fn user_errors_name_the_object_and_the_fix() {
        let e = Error::NotFound {
            namespace: "ns".into(),
            name: "demo".into(),
        };
        assert_eq!(e.exit_code(), exit::NOT_FOUND);
        assert!(e.report().contains("ns/demo") && e.report().contains("kubectl etcd create demo"));
        assert_eq!(Error::CrdMissing.exit_code(), exit::CRD_MISSING);
    }
}
