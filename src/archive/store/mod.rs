//! Where backups live, named by URL, and streaming I/O to and from there.
//!
//! - `s3://bucket/prefix[?endpoint=URL&region=R&pathStyle=true]`: AWS S3 or any S3-compatible server.
//!   Endpoint and region also come from `AWS_ENDPOINT_URL`(`_S3`) / `AWS_REGION` when opening; an IP,
//!   `localhost` or non-AWS endpoint implies path-style addressing. Credentials are never part of the
//!   URL: they come from the caller (a Secret, for in-cluster runs) or the standard AWS chain
//!   (environment, profile, web identity/IRSA, ECS, IMDS).
//! - `file:///abs/path`: the machine running the command.
//! - `pvc://claim/path`: a PersistentVolumeClaim; reachable only from a pod that mounts it, where the
//!   caller turns it into a `file://` location with [`Location::pvc_as_file`], and from elsewhere
//!   through a [`Remote`] (`backup::pvc`'s agent pod).
//!
//! Keys are relative to the location (`s3://b/p` + `demo.db` is object `p/demo.db` in bucket `b`).
//!
//! Memory stays bounded whatever the size: `put` holds at most two 8 MiB parts (one uploading, one
//! being read), `get` streams (from S3, going on from where a connection broke off). There are no
//! deadlines on whole transfers (they would have to scale with the size); each HTTP request has a
//! connect timeout and a read timeout instead.
//!
//! Seams: `location` parses and prints the URLs (pure); `access` says what opening may use beyond
//! explicit credentials (the operator's limits, pure); this module holds the opened [`Store`], its
//! errors and the dispatch to the backends: `file` (a local directory), `s3` (the S3 client,
//! multipart uploads, error mapping, downloads that `resume` where a connection broke off) and
//! a [`Remote`] (carried out outside this room).

mod access;
mod file;
mod location;
mod resume;
mod s3;

pub use access::{Access, FLAG_AMBIENT, FLAG_ENDPOINTS, Refused};
pub use location::{Location, S3Location, UrlError, implies_path_style};
pub use s3::{CA_BUNDLE, CA_FILE_VARIABLE, PART_SIZE, check_pem, trust};

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use jiff::Timestamp;
use tokio::io::AsyncRead;

use s3::S3Backend;

// ---------------------------------------------------------------------------------------------
// Credentials and errors
// ---------------------------------------------------------------------------------------------

/// Static S3 credentials (from a Secret). `Debug` shows none of the secret parts.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Access key IDs are not secret to AWS, but show only enough to tell two keys apart.
        let id: String = self.access_key_id.chars().take(4).collect();
        f.debug_struct("Credentials")
            .field("access_key_id", &format_args!("{id}…"))
            .field("secret_access_key", &format_args!("<redacted>"))
            .field(
                "session_token",
                &format_args!(
                    "{}",
                    if self.session_token.is_some() {
                        "<redacted>"
                    } else {
                        "None"
                    }
                ),
            )
            .finish()
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A storage operation that failed. Messages name the bucket, key or path and the fix; they never
/// carry credentials.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "no usable S3 credentials for bucket {bucket} at {endpoint} ({code}): check the access key and secret (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, the AWS profile, IRSA, or the Secret named in the spec) and that they may use this bucket"
    )]
    Credentials {
        bucket: String,
        endpoint: String,
        code: String,
    },
    #[error(
        "bucket {bucket} does not exist at {endpoint}: create it, or fix the bucket name in the URL"
    )]
    NoSuchBucket { bucket: String, endpoint: String },
    #[error(
        "cannot reach S3 at {endpoint} ({what}) for bucket {bucket}: check the endpoint URL, DNS, proxy and network policies"
    )]
    Unreachable {
        endpoint: String,
        bucket: String,
        what: String,
        #[source]
        source: Option<BoxError>,
    },
    #[error(
        "the certificate of S3 at {endpoint} is not trusted ({why}) for bucket {bucket}: give the CA that signed it in AWS_CA_BUNDLE (on this machine the path of a PEM file; in a credentials Secret the PEM itself, under the key AWS_CA_BUNDLE)"
    )]
    Untrusted {
        endpoint: String,
        bucket: String,
        why: String,
    },
    /// The CA bundle to trust (`AWS_CA_BUNDLE`) cannot be used: bad input, nothing was sent.
    #[error("{0}; give the PEM of the CA that signed the S3 server's certificate")]
    CaBundle(String),
    #[error("{0} does not exist")]
    NotFound(String),
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("{what}: {detail}")]
    Other {
        what: String,
        detail: String,
        /// Whether trying again may succeed (throttling, 5xx, a dropped connection).
        transient: bool,
        #[source]
        source: Option<BoxError>,
    },
}

impl StoreError {
    /// Whether retrying the same request may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Unreachable { .. } => true,
            StoreError::Other { transient, .. } => *transient,
            _ => false,
        }
    }

    pub fn other(what: impl Into<String>, detail: impl Into<String>) -> StoreError {
        StoreError::Other {
            what: what.into(),
            detail: detail.into(),
            transient: false,
            source: None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The store
// ---------------------------------------------------------------------------------------------

/// Server-side encryption asked of S3 for every object a store writes
/// (`x-amz-server-side-encryption`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sse {
    /// `AES256`: keys managed by S3 (SSE-S3).
    Aes256,
    /// `aws:kms`: a KMS key, the account's default one (`aws/s3`) when no id is given.
    Kms { key_id: Option<String> },
}

impl Sse {
    /// From the spec's or the command line's words: `AES256` or `aws:kms` (with an optional
    /// key id, which only `aws:kms` takes).
    pub fn parse(algorithm: &str, kms_key_id: Option<&str>) -> Result<Sse, String> {
        let key_id = kms_key_id.map(str::trim).filter(|k| !k.is_empty());
        match (algorithm.trim(), key_id) {
            ("AES256", None) => Ok(Sse::Aes256),
            ("AES256", Some(_)) => {
                Err("a KMS key id goes with server-side encryption aws:kms, not AES256".into())
            }
            ("aws:kms", key_id) => Ok(Sse::Kms {
                key_id: key_id.map(Into::into),
            }),
            (other, _) => Err(format!(
                "unknown server-side encryption {other:?}: use AES256 or aws:kms"
            )),
        }
    }
}

/// What `put` stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub key: String,
    pub bytes: u64,
    /// sha256 of the stored bytes, lower-case hex.
    pub sha256_hex: String,
}

/// One stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Relative to the store's location.
    pub key: String,
    pub size: u64,
    pub last_modified: Option<Timestamp>,
    /// The size and sha256 stored with the object when it was written (tamper evidence: S3
    /// object metadata); `None` when it carries none.
    pub stamp: Option<Stamp>,
}

/// What an object says of itself: the size and sha256 of its bytes, stored with it as it was
/// written (S3 user metadata `x-amz-meta-kubectl-etcd-size` and `-sha256`). A drill compares it
/// with the bytes it reads and with the record: an object changed in place (a flipped byte, cut
/// short) no longer matches its own stamp, and another object copied over it brings its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub size: u64,
    pub sha256: String,
}

impl Stamp {
    /// The user metadata names (S3 prefixes them with `x-amz-meta-`).
    pub const SIZE: &'static str = "kubectl-etcd-size";
    pub const SHA256: &'static str = "kubectl-etcd-sha256";

    /// From an object's user metadata, when it holds both.
    pub fn from_metadata(m: &std::collections::HashMap<String, String>) -> Option<Stamp> {
        Some(Stamp {
            size: m.get(Stamp::SIZE)?.trim().parse().ok()?,
            sha256: m.get(Stamp::SHA256)?.trim().to_ascii_lowercase(),
        })
    }
}

/// Object storage reached by something outside this room (the pvc:// agent of `backup::pvc`),
/// with the file store's semantics: `put` stores atomically or not at all.
pub trait Remote: Send + Sync {
    fn check(&self) -> BoxFuture<'_, Result<(), StoreError>>;
    fn put<'a>(
        &'a self,
        key: &'a str,
        body: &'a mut (dyn AsyncRead + Unpin + Send),
        progress: &'a (dyn Fn(u64) + Send + Sync),
    ) -> BoxFuture<'a, Result<Stored, StoreError>>;
    #[allow(clippy::type_complexity)] // the same pair `Store::get` returns
    fn get<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<(Box<dyn AsyncRead + Unpin + Send>, Option<u64>), StoreError>>;
    fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<ObjectInfo>, StoreError>>;
    fn head<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<ObjectInfo>, StoreError>>;
    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Releases what the remote holds (best effort).
    fn close(&self) -> BoxFuture<'_, ()>;
}

/// An opened location: S3, a local directory, or a [`Remote`].
#[derive(Clone)]
pub struct Store {
    location: Location,
    backend: Backend,
}

#[derive(Clone)]
enum Backend {
    S3(S3Backend),
    File(PathBuf),
    /// A location only something outside this room can reach (pvc://: an agent pod).
    Remote(Arc<dyn Remote>),
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.location.to_string())
            .finish()
    }
}

impl Store {
    /// Opens a location. S3 credentials: `creds` when given, else the standard AWS chain.
    /// `pvc://` is refused here: it needs a Kubernetes client and an agent pod
    /// (`backup::pvc::open`, which makes a [`Store::remote`]), or a pod that mounts the claim
    /// ([`Location::pvc_as_file`]).
    pub async fn open(loc: &Location, creds: Option<Credentials>) -> Result<Store, StoreError> {
        let backend = match loc {
            Location::File(path) => Backend::File(path.clone()),
            Location::Pvc { claim, .. } => {
                return Err(StoreError::other(
                    format!("cannot open {loc} from here"),
                    format!(
                        "a pvc:// location is reachable only inside the cluster, from a pod that mounts the claim {claim}; use s3:// or file:// from the command line"
                    ),
                ));
            }
            Location::S3(s3) => Backend::S3(S3Backend::open(s3, creds).await?),
        };
        Ok(Store {
            location: loc.clone(),
            backend,
        })
    }

    /// A store whose operations `remote` carries out (pvc://: an agent pod).
    pub fn remote(loc: &Location, remote: Arc<dyn Remote>) -> Store {
        Store {
            location: loc.clone(),
            backend: Backend::Remote(remote),
        }
    }

    /// Releases what opening took: a pvc:// store's agent pod is deleted. Other stores hold
    /// nothing; a store that is never closed leaves an agent that exits when idle.
    pub async fn close(&self) {
        if let Backend::Remote(remote) = &self.backend {
            remote.close().await;
        }
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// This store asking S3 for server-side encryption of every object it writes. Only S3 has
    /// it: refused for other locations (their bytes are on a disk of your own; see client-side
    /// encryption).
    pub fn with_sse(mut self, sse: Option<Sse>) -> Result<Store, StoreError> {
        match (&mut self.backend, sse) {
            (_, None) => {}
            (Backend::S3(s3), sse) => s3.sse = sse,
            (_, Some(_)) => {
                return Err(StoreError::other(
                    format!("cannot ask {} for server-side encryption", self.location),
                    "server-side encryption is an S3 feature; use an s3:// destination",
                ));
            }
        }
        Ok(self)
    }

    /// The URL of `key` in this store, for messages and records.
    pub fn url(&self, key: &str) -> String {
        self.location.object_url(key)
    }

    /// Checks that the location is usable before anything is produced for it: S3 answers, the
    /// bucket exists and the credentials may list it; a directory can be created and written.
    /// (Uploading is the real test of write permission; this catches the common mistakes early.)
    pub async fn check(&self) -> Result<(), StoreError> {
        match &self.backend {
            Backend::S3(s3) => s3.check().await,
            Backend::Remote(remote) => remote.check().await,
            Backend::File(root) => file::check(self, root).await,
        }
    }

    /// Stores `body` under `key`, streaming with bounded memory, and returns its size and sha256.
    /// `progress` is called with the number of bytes stored so far. Nothing is left behind on
    /// failure: S3 multipart uploads are aborted, partial files removed.
    pub async fn put<R>(
        &self,
        key: &str,
        body: R,
        progress: impl Fn(u64) + Send + Sync,
    ) -> Result<Stored, StoreError>
    where
        R: AsyncRead + Unpin + Send,
    {
        check_key(key).map_err(|why| self.bad_key(key, why))?;
        match &self.backend {
            Backend::S3(s3) => s3.put(self, key, body, &progress).await,
            Backend::Remote(remote) => {
                let mut body = body;
                remote.put(key, &mut body, &progress).await
            }
            Backend::File(root) => file::put(self, root, key, body, &progress).await,
        }
    }

    /// A reader of the object `key` and its size when known.
    pub async fn get(
        &self,
        key: &str,
    ) -> Result<(Box<dyn AsyncRead + Unpin + Send>, Option<u64>), StoreError> {
        check_key(key).map_err(|why| self.bad_key(key, why))?;
        match &self.backend {
            Backend::S3(s3) => s3.get(self, key).await,
            Backend::Remote(remote) => remote.get(key).await,
            Backend::File(root) => file::get(self, root, key).await,
        }
    }

    /// Objects whose key starts with `prefix` (relative to the location; "" for all), sorted by key.
    pub async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, StoreError> {
        let mut out = match &self.backend {
            Backend::S3(s3) => s3.list(prefix).await?,
            Backend::Remote(remote) => remote.list(prefix).await?,
            Backend::File(root) => file::list(self, root, prefix).await?,
        };
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Deletes `key`; deleting what does not exist is not an error (as in S3).
    pub async fn delete(&self, key: &str) -> Result<(), StoreError> {
        check_key(key).map_err(|why| self.bad_key(key, why))?;
        match &self.backend {
            Backend::S3(s3) => s3.delete(key).await,
            Backend::Remote(remote) => remote.delete(key).await,
            Backend::File(root) => file::delete(self, root, key).await,
        }
    }

    /// Aborts every unfinished upload whose key starts with `prefix` (relative to the location)
    /// and returns how many there were: the parts a crashed taker left behind (S3 keeps them,
    /// billed, until aborted). A file store's `.partial` files of that prefix are removed; a
    /// pvc:// store has nothing to abort (its agent removes what a cut connection left).
    pub async fn abort_uploads(&self, prefix: &str) -> Result<usize, StoreError> {
        match &self.backend {
            Backend::S3(s3) => s3.abort_uploads(prefix).await,
            Backend::Remote(_) => Ok(0),
            Backend::File(root) => file::remove_partials(self, root, prefix).await,
        }
    }

    /// Size and time of `key`, or None when it does not exist.
    pub async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        check_key(key).map_err(|why| self.bad_key(key, why))?;
        match &self.backend {
            Backend::S3(s3) => s3.head(key).await,
            Backend::Remote(remote) => remote.head(key).await,
            Backend::File(root) => file::head(self, root, key).await,
        }
    }

    fn bad_key(&self, key: &str, why: &str) -> StoreError {
        StoreError::other(
            format!("invalid object name {key:?} in {}", self.location),
            why,
        )
    }

    fn file_error(&self, path: &Path, verb: &str, e: io::Error) -> StoreError {
        if e.kind() == io::ErrorKind::NotFound && verb == "open" {
            return StoreError::NotFound(format!("file://{}", path.display()));
        }
        let hint = match e.kind() {
            io::ErrorKind::PermissionDenied => {
                "; check the permissions of the directory or pick another"
            }
            io::ErrorKind::StorageFull => "; free some space or pick another place",
            _ => "",
        };
        StoreError::Io {
            what: format!("cannot {verb} {}{hint}", path.display()),
            source: e,
        }
    }
}

/// Object names are relative and clean: they must not escape the location.
fn check_key(key: &str) -> Result<(), &'static str> {
    if key.is_empty() {
        return Err("the name is empty");
    }
    if key.starts_with('/') {
        return Err("names are relative to the location; drop the leading '/'");
    }
    if key
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err("names must not contain '.', '..' or empty segments");
    }
    if key.chars().any(|c| c.is_control() || c == '\\') {
        return Err("names must not contain control characters or '\\'");
    }
    if key.ends_with(".partial") {
        return Err("names ending in .partial are reserved for uploads in progress");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_debug_redacts_the_secret_and_token() {
        let c = Credentials {
            access_key_id: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            session_token: Some("FwoGZXIvYXdzEXAMPLETOKEN".into()),
        };
        let d = format!("{c:?}");
        assert!(
            !d.contains("wJalr") && !d.contains("FwoG") && !d.contains("IOSFODNN"),
            "{d}"
        );
        assert!(d.contains("AKIA") && d.contains("<redacted>"), "{d}");
    }

    #[test]
    fn keys_must_stay_inside_the_location() {
        for ok in ["demo.db", "demo/2026/x.db.zst"] {
            assert!(check_key(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "/abs",
            "a/../b",
            "..",
            "a//b",
            "./a",
            "a\\b",
            "x.db.partial",
            "a\nb",
        ] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sse_takes_aes256_or_aws_kms_with_an_optional_key() {
        assert_eq!(Sse::parse("AES256", None), Ok(Sse::Aes256));
        assert_eq!(
            Sse::parse("aws:kms", Some(" ")),
            Ok(Sse::Kms { key_id: None })
        );
        assert_eq!(
            Sse::parse("aws:kms", Some("alias/etcd")),
            Ok(Sse::Kms {
                key_id: Some("alias/etcd".into())
            })
        );
        assert!(
            Sse::parse("AES256", Some("k"))
                .unwrap_err()
                .contains("aws:kms")
        );
        assert!(
            Sse::parse("aes256", None)
                .unwrap_err()
                .contains("use AES256 or aws:kms")
        );
    }

    #[tokio::test]
    async fn sse_is_refused_for_a_local_directory() {
        let store = Store::open(&Location::File("/tmp/x".into()), None)
            .await
            .unwrap();
        let err = store.with_sse(Some(Sse::Aes256)).unwrap_err().to_string();
        assert!(err.contains("S3 feature"), "{err}");
    }

    #[tokio::test]
    async fn pvc_locations_are_refused_outside_the_cluster() {
        let loc = Location::parse("pvc://backups/demo").unwrap();
        let err = Store::open(&loc, None).await.unwrap_err().to_string();
        assert!(
            err.contains("only inside the cluster") && err.contains("backups"),
            "{err}"
        );
    }
}
