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
//! being read), `get` streams. There are no deadlines on whole transfers (they would have to scale
//! with the size); each HTTP request has a connect timeout and a read timeout instead.
//!
//! S3 client: aws-sdk-s3 + aws-config, no default features, with ONE rustls crypto provider (ring,
//! the one kube uses) through an HTTPS client built explicitly from aws-smithy-http-client — two
//! providers in one process panic at the first TLS handshake (ECOSYSTEM.md pitfall 1). Chosen over
//! object_store / rust-s3 (slightly faster to build) because it is the reference implementation of
//! the whole credential chain (IRSA web identity, ECS, IMDS, profiles, credential_process), has
//! typed error codes for the messages below, and explicit multipart create/upload/complete/abort.
//! Not enabled: `sso` (two more SDK crates to build; SSO users can export credentials first).
//! Build cost, measured (clean debug build of the lib on the 2-core machine, 2026-12-01): the backup
//! library adds 113 compile units, 622 unit-seconds against 1147 for everything before it; aws-sdk-s3
//! alone is 213 s (generated code for every S3 operation), aws-smithy-http-client 43 s, zstd's C
//! build 33 s, aws-sdk-sts 30 s, aws-config 23 s, croner's proc macros ~35 s.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_config::meta::region::RegionProviderChain;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_s3::config::Region;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use jiff::Timestamp;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::codec::Sha256;

/// Size of one multipart part (S3's minimum is 5 MiB; 8 MiB parts allow 80 GiB in 10 000 parts).
pub const PART_SIZE: usize = 8 * 1024 * 1024;
/// S3's limit on parts per upload.
const MAX_PARTS: u32 = 10_000;
/// Per request: time to open a TCP/TLS connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Per request: time from sending it (a part of at most 8 MiB) to the response starting.
const READ_TIMEOUT: Duration = Duration::from_secs(120);
/// Extra rounds for a part whose upload failed transiently (after the SDK's own retries).
const PART_RETRIES: u32 = 3;
/// Copy buffer of the file store.
const FILE_BUF: usize = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Locations (URLs)
// ---------------------------------------------------------------------------------------------

/// A place to keep backups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    S3(S3Location),
    File(PathBuf),
    Pvc { claim: String, path: String },
}

/// An S3 bucket and key prefix, and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct S3Location {
    pub bucket: String,
    /// Key prefix without leading or trailing slashes ("" for the bucket's root).
    pub prefix: String,
    /// e.g. "http://10.0.0.5:9000"; None: `AWS_ENDPOINT_URL(_S3)` or AWS itself.
    pub endpoint: Option<String>,
    /// None: `AWS_REGION`, the profile, or us-east-1.
    pub region: Option<String>,
    /// Address buckets as `endpoint/bucket` rather than `bucket.endpoint`. Set by `pathStyle=true`,
    /// and implied by an IP, localhost or non-AWS endpoint.
    pub path_style: bool,
}

/// A destination URL that cannot be used. Messages name the URL (never credentials) and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error(
        "{url:?} is not a backup URL: use s3://bucket/prefix, file:///absolute/path or pvc://claim/path"
    )]
    MissingScheme { url: String },
    #[error(
        "unknown scheme {scheme:?} in {url:?}: use s3://bucket/prefix, file:///absolute/path or pvc://claim/path"
    )]
    UnknownScheme { url: String, scheme: String },
    #[error(
        "never put credentials in the URL ({url}); use the standard AWS chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, IRSA) or, in the cluster, a Secret named in the spec"
    )]
    EmbeddedCredentials {
        /// The URL with the offending part cut out.
        url: String,
    },
    #[error("{url:?} names no bucket: use s3://BUCKET/prefix")]
    EmptyBucket { url: String },
    #[error(
        "invalid bucket name {bucket:?} in {url:?}: use s3://bucket/prefix and put a custom endpoint in ?endpoint=http://host:port"
    )]
    InvalidBucket { url: String, bucket: String },
    #[error(
        "{url:?} is not an absolute path: write file:///absolute/path (three slashes), e.g. file:///var/backups/etcd"
    )]
    RelativeFilePath { url: String },
    #[error(
        "{url:?} names the host {host:?}: file:// URLs are local to the machine running the command; write file:///absolute/path"
    )]
    FileHost { url: String, host: String },
    #[error(
        "invalid claim name {claim:?} in {url:?}: use pvc://CLAIM/path with the name of a PersistentVolumeClaim in the cluster's namespace"
    )]
    InvalidClaim { url: String, claim: String },
    #[error("invalid query {param:?} in {url:?}: {why}")]
    BadQuery {
        url: String,
        param: String,
        why: String,
    },
    #[error("{path:?} in {url:?} must not contain '..' or empty segments")]
    BadPath { url: String, path: String },
    #[error(
        "{url:?} names no object: add the object's name, e.g. {url}/demo-20261201T030000Z-r1234.db.zst"
    )]
    NoObjectKey { url: String },
}

/// Query parameters that would carry a secret: refused with the credentials message.
const CREDENTIAL_PARAMS: [&str; 10] = [
    "accesskey",
    "accesskeyid",
    "secretkey",
    "secretaccesskey",
    "secret",
    "sessiontoken",
    "token",
    "password",
    "x-amz-credential",
    "x-amz-signature",
];

impl Location {
    /// Parses a destination URL (see the module doc).
    pub fn parse(url: &str) -> Result<Location, UrlError> {
        let url = url.trim();
        let Some((scheme, rest)) = url.split_once("://") else {
            if let Some((scheme, _)) = url.split_once(':')
                && scheme.eq_ignore_ascii_case("file")
            {
                return Err(UrlError::RelativeFilePath { url: url.into() });
            }
            return Err(UrlError::MissingScheme { url: url.into() });
        };
        match scheme.to_ascii_lowercase().as_str() {
            "s3" => parse_s3(url, rest).map(Location::S3),
            "file" => parse_file(url, rest),
            "pvc" => parse_pvc(url, rest),
            _ => Err(UrlError::UnknownScheme {
                url: url.into(),
                scheme: scheme.into(),
            }),
        }
    }

    /// Splits the URL of one object into the location of its directory and its key:
    /// `s3://b/p/x.db.zst` → (`s3://b/p`, `x.db.zst`).
    pub fn parse_object(url: &str) -> Result<(Location, String), UrlError> {
        let loc = Location::parse(url)?;
        let none = || UrlError::NoObjectKey {
            url: loc.to_string(),
        };
        let split = |s: &str| -> Option<(String, String)> {
            if s.is_empty() {
                return None;
            }
            match s.rsplit_once('/') {
                Some((dir, key)) => Some((dir.to_string(), key.to_string())),
                None => Some((String::new(), s.to_string())),
            }
        };
        match &loc {
            Location::S3(s3) => {
                let (prefix, key) = split(&s3.prefix).ok_or_else(none)?;
                Ok((
                    Location::S3(S3Location {
                        prefix,
                        ..s3.clone()
                    }),
                    key,
                ))
            }
            Location::File(path) => {
                let (Some(dir), Some(key)) = (path.parent(), path.file_name()) else {
                    return Err(none());
                };
                Ok((
                    Location::File(dir.to_path_buf()),
                    key.to_string_lossy().into_owned(),
                ))
            }
            Location::Pvc { claim, path } => {
                let (path, key) = split(path).ok_or_else(none)?;
                Ok((
                    Location::Pvc {
                        claim: claim.clone(),
                        path,
                    },
                    key,
                ))
            }
        }
    }

    /// The URL of the object `key` under this location.
    pub fn object_url(&self, key: &str) -> String {
        self.join(key).to_string()
    }

    /// This location with `sub` appended to its prefix or path.
    pub fn join(&self, sub: &str) -> Location {
        let sub = sub.trim_matches('/');
        let cat = |base: &str| {
            if base.is_empty() {
                sub.to_string()
            } else if sub.is_empty() {
                base.to_string()
            } else {
                format!("{base}/{sub}")
            }
        };
        match self {
            Location::S3(s3) => Location::S3(S3Location {
                prefix: cat(&s3.prefix),
                ..s3.clone()
            }),
            Location::File(path) => Location::File(if sub.is_empty() {
                path.clone()
            } else {
                path.join(sub)
            }),
            Location::Pvc { claim, path } => Location::Pvc {
                claim: claim.clone(),
                path: cat(path),
            },
        }
    }

    /// A `pvc://claim/path` location as seen from a pod that mounts `claim` at `mount_dir`.
    /// None for other locations.
    pub fn pvc_as_file(&self, mount_dir: &Path) -> Option<Location> {
        match self {
            Location::Pvc { path, .. } if path.is_empty() => {
                Some(Location::File(mount_dir.to_path_buf()))
            }
            Location::Pvc { path, .. } => Some(Location::File(mount_dir.join(path))),
            _ => None,
        }
    }

    pub fn scheme(&self) -> &'static str {
        match self {
            Location::S3(_) => "s3",
            Location::File(_) => "file",
            Location::Pvc { .. } => "pvc",
        }
    }
}

impl fmt::Display for Location {
    /// The URL again (it never holds credentials: parsing refuses them).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::S3(s3) => {
                write!(f, "s3://{}", s3.bucket)?;
                if !s3.prefix.is_empty() {
                    write!(f, "/{}", s3.prefix)?;
                }
                let mut query = Vec::new();
                if let Some(e) = &s3.endpoint {
                    query.push(format!("endpoint={e}"));
                }
                if let Some(r) = &s3.region {
                    query.push(format!("region={r}"));
                }
                // Only what parsing would not infer from the endpoint.
                let implied = s3.endpoint.as_deref().is_some_and(implies_path_style);
                if s3.path_style != implied {
                    query.push(format!("pathStyle={}", s3.path_style));
                }
                if !query.is_empty() {
                    write!(f, "?{}", query.join("&"))?;
                }
                Ok(())
            }
            Location::File(path) => write!(f, "file://{}", path.display()),
            Location::Pvc { claim, path } if path.is_empty() => write!(f, "pvc://{claim}"),
            Location::Pvc { claim, path } => write!(f, "pvc://{claim}/{path}"),
        }
    }
}

impl std::str::FromStr for Location {
    type Err = UrlError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Location::parse(s)
    }
}

/// `url` with any `user:password@` cut out, for messages.
fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.into();
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://***@{host}{tail}"),
        None => url.into(),
    }
}

/// Whether an endpoint can only be addressed path-style: an IP address, localhost, or anything
/// that is not AWS (virtual-host style needs wildcard DNS that S3-compatible servers rarely have).
pub fn implies_path_style(endpoint: &str) -> bool {
    let host = endpoint_host(endpoint);
    let h = host.to_ascii_lowercase();
    let aws = h.ends_with(".amazonaws.com") || h.ends_with(".amazonaws.com.cn");
    !aws || h.parse::<std::net::IpAddr>().is_ok() || h == "localhost"
}

fn endpoint_host(endpoint: &str) -> &str {
    let rest = endpoint.split_once("://").map_or(endpoint, |(_, r)| r);
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    authority.split(':').next().unwrap_or(authority)
}

fn parse_s3(url: &str, rest: &str) -> Result<S3Location, UrlError> {
    let (main, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (bucket, prefix) = main.split_once('/').unwrap_or((main, ""));
    if bucket.contains('@') {
        return Err(UrlError::EmbeddedCredentials {
            url: without_userinfo(url),
        });
    }
    if bucket.is_empty() {
        return Err(UrlError::EmptyBucket { url: url.into() });
    }
    let bucket_ok = bucket.len() <= 255
        && bucket
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if !bucket_ok {
        return Err(UrlError::InvalidBucket {
            url: url.into(),
            bucket: bucket.into(),
        });
    }
    let prefix = clean_path(url, prefix)?;
    let mut loc = S3Location {
        bucket: bucket.into(),
        prefix,
        ..S3Location::default()
    };
    let mut path_style = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let bad = |why: &str| UrlError::BadQuery {
            url: url.split('?').next().unwrap_or(url).to_string() + "?…",
            param: k.into(),
            why: why.into(),
        };
        match k {
            "endpoint" => {
                if !(v.starts_with("http://") || v.starts_with("https://")) {
                    return Err(bad("the endpoint must be an http:// or https:// URL"));
                }
                if v.split_once("://")
                    .is_some_and(|(_, r)| r[..r.find('/').unwrap_or(r.len())].contains('@'))
                {
                    return Err(UrlError::EmbeddedCredentials {
                        url: format!("s3://{bucket}/…?endpoint={}", without_userinfo(v)),
                    });
                }
                if endpoint_host(v).is_empty() {
                    return Err(bad("the endpoint names no host"));
                }
                loc.endpoint = Some(v.trim_end_matches('/').to_string());
            }
            "region" => {
                if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                    return Err(bad("the region must be a name like us-east-1"));
                }
                loc.region = Some(v.into());
            }
            "pathStyle" => {
                path_style = Some(match v {
                    "true" | "" => true,
                    "false" => false,
                    _ => return Err(bad("pathStyle takes true or false")),
                })
            }
            _ if CREDENTIAL_PARAMS.contains(&k.to_ascii_lowercase().as_str())
                || k.to_ascii_lowercase().starts_with("aws_") =>
            {
                return Err(UrlError::EmbeddedCredentials {
                    url: format!("s3://{bucket}/…?{k}=***"),
                });
            }
            _ => return Err(bad("known parameters are endpoint, region and pathStyle")),
        }
    }
    loc.path_style =
        path_style.unwrap_or_else(|| loc.endpoint.as_deref().is_some_and(implies_path_style));
    Ok(loc)
}

/// A relative key path: slashes trimmed, no `..`, `.` or empty segments.
fn clean_path(url: &str, path: &str) -> Result<String, UrlError> {
    let path = path.trim_matches('/');
    if !path.is_empty()
        && path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(UrlError::BadPath {
            url: url.into(),
            path: path.into(),
        });
    }
    Ok(path.into())
}

fn parse_file(url: &str, rest: &str) -> Result<Location, UrlError> {
    if rest.contains('?') {
        return Err(UrlError::BadQuery {
            url: url.into(),
            param: rest.split_once('?').map_or("", |(_, q)| q).into(),
            why: "file:// URLs take no parameters".into(),
        });
    }
    let path = match rest.split_once('/') {
        Some(("", _)) => rest,
        Some(("localhost", p)) => &rest[rest.len() - p.len() - 1..],
        Some((host, _)) if host.starts_with('.') || host.starts_with('~') => {
            return Err(UrlError::RelativeFilePath { url: url.into() });
        }
        Some((host, _)) => {
            if host.contains('@') {
                return Err(UrlError::EmbeddedCredentials {
                    url: without_userinfo(url),
                });
            }
            return Err(UrlError::FileHost {
                url: url.into(),
                host: host.into(),
            });
        }
        None => return Err(UrlError::RelativeFilePath { url: url.into() }),
    };
    let path = Path::new(path);
    if !path.is_absolute() {
        return Err(UrlError::RelativeFilePath { url: url.into() });
    }
    // Normalise "/a/b/" and "/a//b" to "/a/b"; keep ".." (an odd but valid local path).
    let clean: PathBuf = path.components().collect();
    Ok(Location::File(clean))
}

fn parse_pvc(url: &str, rest: &str) -> Result<Location, UrlError> {
    if rest.contains('?') {
        return Err(UrlError::BadQuery {
            url: url.into(),
            param: rest.split_once('?').map_or("", |(_, q)| q).into(),
            why: "pvc:// URLs take no parameters".into(),
        });
    }
    let (claim, path) = rest.split_once('/').unwrap_or((rest, ""));
    if claim.contains('@') {
        return Err(UrlError::EmbeddedCredentials {
            url: without_userinfo(url),
        });
    }
    // A DNS-1123 subdomain, as Kubernetes requires of PVC names.
    let claim_ok = !claim.is_empty()
        && claim.len() <= 253
        && claim
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && claim.starts_with(|c: char| c.is_ascii_alphanumeric())
        && claim.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !claim_ok {
        return Err(UrlError::InvalidClaim {
            url: url.into(),
            claim: claim.into(),
        });
    }
    Ok(Location::Pvc {
        claim: claim.into(),
        path: clean_path(url, path)?,
    })
}

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

#[derive(Clone)]
struct S3Backend {
    client: aws_sdk_s3::Client,
    bucket: String,
    prefix: String,
    /// For messages: the endpoint in use ("AWS S3 (region …)" when none is configured).
    endpoint: String,
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
            Location::S3(s3) => Backend::S3(S3Backend::open(s3, creds).await),
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
            Backend::File(root) => {
                tokio::fs::create_dir_all(root)
                    .await
                    .map_err(|e| self.file_error(root, "create directory", e))?;
                let probe = root.join(".kubectl-etcd-check.partial");
                tokio::fs::write(&probe, b"")
                    .await
                    .map_err(|e| self.file_error(&probe, "write", e))?;
                let _ = tokio::fs::remove_file(&probe).await;
                Ok(())
            }
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
            Backend::File(root) => put_file(self, root, key, body, &progress).await,
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
            Backend::File(root) => {
                let path = root.join(key);
                let file = tokio::fs::File::open(&path)
                    .await
                    .map_err(|e| self.file_error(&path, "open", e))?;
                let size = file.metadata().await.ok().map(|m| m.len());
                Ok((Box::new(file), size))
            }
        }
    }

    /// Objects whose key starts with `prefix` (relative to the location; "" for all), sorted by key.
    pub async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, StoreError> {
        let mut out = match &self.backend {
            Backend::S3(s3) => s3.list(prefix).await?,
            Backend::Remote(remote) => remote.list(prefix).await?,
            Backend::File(root) => list_files(self, root, prefix).await?,
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
            Backend::File(root) => {
                let path = root.join(key);
                match tokio::fs::remove_file(&path).await {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                    Err(e) => Err(self.file_error(&path, "delete", e)),
                }
            }
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
            Backend::File(root) => {
                let (dir, start) = match prefix.rsplit_once('/') {
                    Some((d, s)) => (root.join(d), s),
                    None => (root.clone(), prefix),
                };
                let mut n = 0;
                let Ok(mut entries) = tokio::fs::read_dir(&dir).await else {
                    return Ok(0);
                };
                while let Ok(Some(e)) = entries.next_entry().await {
                    let name = e.file_name().to_string_lossy().to_string();
                    if name.starts_with(start) && name.ends_with(".partial") {
                        tokio::fs::remove_file(e.path())
                            .await
                            .map_err(|err| self.file_error(&e.path(), "delete", err))?;
                        n += 1;
                    }
                }
                Ok(n)
            }
        }
    }

    /// Size and time of `key`, or None when it does not exist.
    pub async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        check_key(key).map_err(|why| self.bad_key(key, why))?;
        match &self.backend {
            Backend::S3(s3) => s3.head(key).await,
            Backend::Remote(remote) => remote.head(key).await,
            Backend::File(root) => {
                let path = root.join(key);
                match tokio::fs::metadata(&path).await {
                    Ok(m) if m.is_file() => Ok(Some(file_info(key.into(), &m))),
                    Ok(_) => Ok(None),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(self.file_error(&path, "read", e)),
                }
            }
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

/// Reads up to `PART_SIZE` bytes into `buf` (emptied first, its allocation kept): fewer only at
/// the end of `body`.
async fn read_part<R: AsyncRead + Unpin>(body: &mut R, mut buf: BytesMut) -> io::Result<BytesMut> {
    buf.clear();
    buf.reserve(PART_SIZE);
    while buf.len() < PART_SIZE {
        // `take` bounds the read so the Vec never grows past one part.
        let want = (PART_SIZE - buf.len()) as u64;
        if (&mut *body).take(want).read_buf(&mut buf).await? == 0 {
            break;
        }
    }
    Ok(buf)
}

// ----- file -----

async fn put_file<R: AsyncRead + Unpin>(
    store: &Store,
    root: &Path,
    key: &str,
    mut body: R,
    progress: &(impl Fn(u64) + Send + Sync),
) -> Result<Stored, StoreError> {
    let path = root.join(key);
    let dir = path.parent().unwrap_or(root).to_path_buf();
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(|e| store.file_error(&dir, "create directory", e))?;
    let partial = PathBuf::from(format!("{}.partial", path.display()));
    let result = async {
        let mut file = tokio::fs::File::create(&partial)
            .await
            .map_err(|e| store.file_error(&partial, "create", e))?;
        let mut sha = Sha256::default();
        let mut buf = vec![0u8; FILE_BUF];
        let mut written = 0u64;
        loop {
            let n = body.read(&mut buf).await.map_err(|e| StoreError::Io {
                what: format!("reading the data to store at {} failed", store.url(key)),
                source: e,
            })?;
            if n == 0 {
                break;
            }
            file.write_all(&buf[..n])
                .await
                .map_err(|e| store.file_error(&partial, "write", e))?;
            sha.update(&buf[..n]);
            written += n as u64;
            progress(written);
        }
        file.flush()
            .await
            .map_err(|e| store.file_error(&partial, "write", e))?;
        file.sync_all()
            .await
            .map_err(|e| store.file_error(&partial, "sync", e))?;
        drop(file);
        tokio::fs::rename(&partial, &path)
            .await
            .map_err(|e| store.file_error(&path, "rename into", e))?;
        // The rename is durable once the directory is synced; best effort (not every FS allows it).
        if let Ok(d) = tokio::fs::File::open(&dir).await {
            let _ = d.sync_all().await;
        }
        let (bytes, sha256_hex) = sha.finish();
        Ok(Stored {
            key: key.into(),
            bytes,
            sha256_hex,
        })
    }
    .await;
    if result.is_err() {
        let _ = tokio::fs::remove_file(&partial).await;
    }
    result
}

fn file_info(key: String, m: &std::fs::Metadata) -> ObjectInfo {
    ObjectInfo {
        key,
        size: m.len(),
        last_modified: m.modified().ok().and_then(|t| Timestamp::try_from(t).ok()),
    }
}

async fn list_files(
    store: &Store,
    root: &Path,
    prefix: &str,
) -> Result<Vec<ObjectInfo>, StoreError> {
    let mut out = Vec::new();
    let mut dirs = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = dirs.pop() {
        let mut entries = match tokio::fs::read_dir(&dir).await {
            Ok(e) => e,
            // A location nobody wrote to yet holds nothing.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(store.file_error(&dir, "list", e)),
        };
        while let Some(entry) = entries
            .next_entry()
            .await
            .map_err(|e| store.file_error(&dir, "list", e))?
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            let key = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            // Only descend where the prefix can still match.
            let could_match = key.starts_with(prefix) || prefix.starts_with(&format!("{key}/"));
            let meta = entry
                .metadata()
                .await
                .map_err(|e| store.file_error(&entry.path(), "read", e))?;
            if meta.is_dir() {
                if could_match {
                    dirs.push((entry.path(), key));
                }
            } else if meta.is_file() && key.starts_with(prefix) && !name.ends_with(".partial") {
                out.push(file_info(key, &meta));
            }
        }
    }
    Ok(out)
}

// ----- S3 -----

/// `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, as aws-config reads them.
fn env_endpoint() -> Option<String> {
    ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()))
}

impl S3Backend {
    async fn open(loc: &S3Location, creds: Option<Credentials>) -> S3Backend {
        let endpoint = loc.endpoint.clone().or_else(env_endpoint);
        let path_style = loc.path_style || endpoint.as_deref().is_some_and(implies_path_style);
        // ONE crypto provider (ring) for TLS, the one kube uses.
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        let region = {
            let env_region = ["AWS_REGION", "AWS_DEFAULT_REGION"]
                .iter()
                .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()));
            let chain = RegionProviderChain::first_try(loc.region.clone().map(Region::new))
                .or_else(env_region.map(Region::new));
            // A custom endpoint does not care about the region: skip the profile lookup. Not
            // `or_default_provider()`: its IMDS step is built without our HTTP client and panics
            // ("a http_client is required") wherever no region is set — seen in a restore pod.
            let chain = if endpoint.is_some() {
                chain
            } else {
                chain.or_else(aws_config::profile::ProfileFileRegionProvider::builder().build())
            };
            chain.or_else(Region::new("us-east-1"))
        };
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .http_client(http)
            .region(region)
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(CONNECT_TIMEOUT)
                    .read_timeout(READ_TIMEOUT)
                    .build(),
            )
            .retry_config(RetryConfig::standard().with_max_attempts(3));
        if let Some(c) = creds {
            loader = loader.credentials_provider(aws_sdk_s3::config::Credentials::new(
                c.access_key_id,
                c.secret_access_key,
                c.session_token,
                None,
                "kubectl-etcd",
            ));
        }
        let sdk = loader.load().await;
        let mut conf = aws_sdk_s3::config::Builder::from(&sdk).force_path_style(path_style);
        if let Some(e) = &loc.endpoint {
            conf = conf.endpoint_url(e);
        }
        let shown = endpoint.clone().unwrap_or_else(|| {
            format!(
                "AWS S3 ({})",
                sdk.region().map_or("us-east-1".into(), |r| r.to_string())
            )
        });
        S3Backend {
            client: aws_sdk_s3::Client::from_conf(conf.build()),
            bucket: loc.bucket.clone(),
            prefix: loc.prefix.clone(),
            endpoint: shown,
        }
    }

    fn full_key(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.into()
        } else {
            format!("{}/{key}", self.prefix)
        }
    }

    /// Maps an SDK error to a `StoreError` naming the bucket/object and the fix.
    fn error<E>(
        &self,
        what: String,
        object: Option<&str>,
        err: SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
    ) -> StoreError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let unreachable = |what: &str, source: BoxError| StoreError::Unreachable {
            endpoint: self.endpoint.clone(),
            bucket: self.bucket.clone(),
            what: what.into(),
            source: Some(source),
        };
        let chain = error_chain(&Some(&err as &dyn std::error::Error));
        match err {
            SdkError::TimeoutError(_) => StoreError::Unreachable {
                endpoint: self.endpoint.clone(),
                bucket: self.bucket.clone(),
                what: "timed out".into(),
                source: None,
            },
            SdkError::DispatchFailure(d) => {
                let kind = if d.is_timeout() {
                    "timed out"
                } else if d.is_io() {
                    "connection failed"
                } else {
                    "request not sent"
                };
                let text = chain;
                if is_credentials_problem(&text) {
                    return self.no_credentials(text);
                }
                if d.is_timeout() || d.is_io() || text.contains("dns") || text.contains("connect") {
                    let source: BoxError = text.into();
                    return unreachable(kind, source);
                }
                StoreError::Other {
                    what,
                    detail: text,
                    transient: false,
                    source: None,
                }
            }
            SdkError::ConstructionFailure(_) => {
                if is_credentials_problem(&chain) {
                    return self.no_credentials(chain);
                }
                StoreError::other(what, chain)
            }
            SdkError::ResponseError(r) => {
                let status = r.raw().status().as_u16();
                StoreError::Other {
                    what,
                    detail: format!("unreadable response (HTTP {status}) from {}", self.endpoint),
                    transient: true,
                    source: None,
                }
            }
            SdkError::ServiceError(s) => {
                let status = s.raw().status().as_u16();
                let e = s.err();
                let code = e.code().unwrap_or("").to_string();
                let message = e.message().unwrap_or("").to_string();
                match code.as_str() {
                    "InvalidAccessKeyId"
                    | "SignatureDoesNotMatch"
                    | "AccessDenied"
                    | "InvalidToken"
                    | "ExpiredToken"
                    | "TokenRefreshRequired"
                    | "InvalidSecurity" => StoreError::Credentials {
                        bucket: self.bucket.clone(),
                        endpoint: self.endpoint.clone(),
                        code,
                    },
                    // The bucket lives in another region than the one requests are signed for.
                    "PermanentRedirect"
                    | "AuthorizationHeaderMalformed"
                    | "IllegalLocationConstraintException" => {
                        let region = s
                            .raw()
                            .headers()
                            .get("x-amz-bucket-region")
                            .map(str::to_string)
                            .unwrap_or_else(|| "REGION".into());
                        StoreError::Other {
                            what,
                            detail: format!(
                                "bucket {} is in another region ({code}{}); add ?region={region} to the URL or set AWS_REGION={region}",
                                self.bucket,
                                if message.is_empty() {
                                    String::new()
                                } else {
                                    format!(": {message}")
                                }
                            ),
                            transient: false,
                            source: None,
                        }
                    }
                    "NoSuchBucket" => StoreError::NoSuchBucket {
                        bucket: self.bucket.clone(),
                        endpoint: self.endpoint.clone(),
                    },
                    "NoSuchKey" => StoreError::NotFound(self.object_url(object.unwrap_or(""))),
                    // A bare 404 (HEAD has no body): the object when one was named, else the bucket.
                    "NotFound" | "" if status == 404 => match object {
                        Some(key) => StoreError::NotFound(self.object_url(key)),
                        None => StoreError::NoSuchBucket {
                            bucket: self.bucket.clone(),
                            endpoint: self.endpoint.clone(),
                        },
                    },
                    _ if status == 403 => StoreError::Credentials {
                        bucket: self.bucket.clone(),
                        endpoint: self.endpoint.clone(),
                        code: if code.is_empty() {
                            "HTTP 403".into()
                        } else {
                            code
                        },
                    },
                    _ => {
                        let transient = status >= 500
                            || status == 429
                            || matches!(
                                code.as_str(),
                                "SlowDown"
                                    | "RequestTimeout"
                                    | "InternalError"
                                    | "ServiceUnavailable"
                                    | "Throttling"
                                    | "ThrottlingException"
                                    | "RequestTimeTooSkewed"
                            );
                        let code = if code.is_empty() {
                            format!("HTTP {status}")
                        } else {
                            code
                        };
                        StoreError::Other {
                            what,
                            detail: if message.is_empty() {
                                code
                            } else {
                                format!("{code}: {message}")
                            },
                            transient,
                            source: None,
                        }
                    }
                }
            }
            _ => StoreError::other(what, chain),
        }
    }

    fn no_credentials(&self, text: String) -> StoreError {
        let _ = text;
        StoreError::Credentials {
            bucket: self.bucket.clone(),
            endpoint: self.endpoint.clone(),
            code: "no credentials found".into(),
        }
    }

    fn object_url(&self, key: &str) -> String {
        format!("s3://{}/{}", self.bucket, self.full_key(key))
    }

    async fn put<R: AsyncRead + Unpin + Send>(
        &self,
        store: &Store,
        key: &str,
        mut body: R,
        progress: &(impl Fn(u64) + Send + Sync),
    ) -> Result<Stored, StoreError> {
        let full = self.full_key(key);
        let read_err = |e: io::Error| StoreError::Io {
            what: format!("reading the data to store at {} failed", store.url(key)),
            source: e,
        };
        let first = read_part(&mut body, BytesMut::new())
            .await
            .map_err(read_err)?;
        let mut sha = Sha256::default();
        if first.len() < PART_SIZE {
            // Small enough for one request.
            sha.update(&first);
            let (bytes, sha256_hex) = sha.finish();
            let body = first.freeze();
            self.client
                .put_object()
                .bucket(&self.bucket)
                .key(&full)
                .body(ByteStream::from(body))
                .send()
                .await
                .map_err(|e| {
                    self.error(
                        format!("cannot upload {}", self.object_url(key)),
                        Some(key),
                        e,
                    )
                })?;
            progress(bytes);
            return Ok(Stored {
                key: key.into(),
                bytes,
                sha256_hex,
            });
        }

        let created = self
            .client
            .create_multipart_upload()
            .bucket(&self.bucket)
            .key(&full)
            .send()
            .await
            .map_err(|e| {
                self.error(
                    format!("cannot start uploading {}", self.object_url(key)),
                    Some(key),
                    e,
                )
            })?;
        let upload_id = created.upload_id().unwrap_or_default().to_string();
        if upload_id.is_empty() {
            return Err(StoreError::other(
                format!("cannot start uploading {}", self.object_url(key)),
                format!(
                    "{} answered CreateMultipartUpload without an upload id",
                    self.endpoint
                ),
            ));
        }
        // Aborts the upload if this future is dropped half-way (Ctrl-C, a cancelled task).
        let mut guard = AbortGuard {
            backend: Some(self.clone()),
            key: full.clone(),
            upload_id: upload_id.clone(),
        };
        let result = self
            .upload_parts(
                key, &full, &upload_id, first, &mut body, &mut sha, progress, read_err,
            )
            .await;
        match result {
            Ok(parts) => {
                let done = self
                    .client
                    .complete_multipart_upload()
                    .bucket(&self.bucket)
                    .key(&full)
                    .upload_id(&upload_id)
                    .multipart_upload(
                        CompletedMultipartUpload::builder()
                            .set_parts(Some(parts))
                            .build(),
                    )
                    .send()
                    .await;
                if let Err(e) = done {
                    let err = self.error(
                        format!("cannot finish uploading {}", self.object_url(key)),
                        Some(key),
                        e,
                    );
                    self.abort(&full, &upload_id).await;
                    guard.backend = None;
                    return Err(err);
                }
                guard.backend = None;
                let (bytes, sha256_hex) = sha.finish();
                Ok(Stored {
                    key: key.into(),
                    bytes,
                    sha256_hex,
                })
            }
            Err(err) => {
                self.abort(&full, &upload_id).await;
                guard.backend = None;
                Err(err)
            }
        }
    }

    /// Uploads `first` and then the rest of `body` part by part, reading the next part while the
    /// current one uploads: two part buffers, allocated once and taken in turns (fresh 8 MiB
    /// allocations per part leave the allocator holding several of them: +9 MiB peak RSS measured).
    #[allow(clippy::too_many_arguments)] // one private step of `put`; a struct would only rename them
    async fn upload_parts<R: AsyncRead + Unpin + Send>(
        &self,
        key: &str,
        full: &str,
        upload_id: &str,
        first: BytesMut,
        body: &mut R,
        sha: &mut Sha256,
        progress: &(impl Fn(u64) + Send + Sync),
        read_err: impl Fn(io::Error) -> StoreError,
    ) -> Result<Vec<CompletedPart>, StoreError> {
        let mut parts = Vec::new();
        let mut current = first;
        let mut spare = BytesMut::new();
        let mut number: u32 = 1;
        let mut stored: u64 = 0;
        loop {
            if number > MAX_PARTS {
                return Err(StoreError::other(
                    format!("cannot upload {}", self.object_url(key)),
                    format!(
                        "it is larger than S3's limit of {MAX_PARTS} parts of {} MiB",
                        PART_SIZE >> 20
                    ),
                ));
            }
            sha.update(&current);
            let len = current.len() as u64;
            let part = current.freeze();
            let (etag, next) = tokio::try_join!(
                self.upload_part(key, full, upload_id, number, &part),
                async { read_part(body, spare).await.map_err(&read_err) },
            )?;
            // The SDK has dropped its copies of the handle once the part is stored.
            spare = part.try_into_mut().unwrap_or_default();
            stored += len;
            progress(stored);
            parts.push(
                CompletedPart::builder()
                    .e_tag(etag)
                    .part_number(number as i32)
                    .build(),
            );
            if next.is_empty() {
                return Ok(parts);
            }
            current = next;
            number += 1;
        }
    }

    /// One part, retried with backoff while the failure is transient.
    async fn upload_part(
        &self,
        key: &str,
        full: &str,
        upload_id: &str,
        number: u32,
        part: &Bytes,
    ) -> Result<String, StoreError> {
        let mut attempt = 0;
        loop {
            let sent = self
                .client
                .upload_part()
                .bucket(&self.bucket)
                .key(full)
                .upload_id(upload_id)
                .part_number(number as i32)
                .body(ByteStream::from(part.clone()))
                .send()
                .await;
            match sent {
                Ok(out) => return Ok(out.e_tag().unwrap_or_default().to_string()),
                Err(e) => {
                    let err = self.error(
                        format!("cannot upload part {number} of {}", self.object_url(key)),
                        Some(key),
                        e,
                    );
                    if !err.is_transient() || attempt >= PART_RETRIES {
                        return Err(err);
                    }
                    attempt += 1;
                    let wait = Duration::from_millis(500 << attempt);
                    tracing::warn!(key = full, part = number, attempt, error = %err, "retrying a part upload in {wait:?}");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn abort(&self, full: &str, upload_id: &str) {
        let aborted = self
            .client
            .abort_multipart_upload()
            .bucket(&self.bucket)
            .key(full)
            .upload_id(upload_id)
            .send()
            .await;
        if let Err(e) = aborted {
            let err = self.error(
                format!("cannot abort the upload of s3://{}/{full}", self.bucket),
                None,
                e,
            );
            tracing::warn!(key = full, upload_id, error = %err, "abandoned multipart upload; a bucket lifecycle rule (AbortIncompleteMultipartUpload) removes its parts");
        }
    }

    async fn get(
        &self,
        store: &Store,
        key: &str,
    ) -> Result<(Box<dyn AsyncRead + Unpin + Send>, Option<u64>), StoreError> {
        let out = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(self.full_key(key))
            .send()
            .await
            .map_err(|e| self.error(format!("cannot download {}", store.url(key)), Some(key), e))?;
        let size = out.content_length().and_then(|n| u64::try_from(n).ok());
        Ok((Box::new(out.body.into_async_read()), size))
    }

    async fn abort_uploads(&self, prefix: &str) -> Result<usize, StoreError> {
        let full_prefix = self.full_key(prefix);
        let what = || format!("s3://{}/{full_prefix}", self.bucket);
        let mut aborted = 0;
        // Aborting changes the listing: list from the start again until nothing is left.
        loop {
            let page = self
                .client
                .list_multipart_uploads()
                .bucket(&self.bucket)
                .prefix(&full_prefix)
                .send()
                .await
                .map_err(|e| {
                    self.error(
                        format!("cannot list the unfinished uploads of {}", what()),
                        None,
                        e,
                    )
                })?;
            let uploads: Vec<(String, String)> = page
                .uploads()
                .iter()
                .filter_map(|u| Some((u.key()?.to_string(), u.upload_id()?.to_string())))
                .collect();
            if uploads.is_empty() {
                return Ok(aborted);
            }
            for (key, id) in uploads {
                self.client
                    .abort_multipart_upload()
                    .bucket(&self.bucket)
                    .key(&key)
                    .upload_id(&id)
                    .send()
                    .await
                    .map_err(|e| {
                        self.error(
                            format!("cannot abort the upload of s3://{}/{key}", self.bucket),
                            None,
                            e,
                        )
                    })?;
                aborted += 1;
            }
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, StoreError> {
        let full_prefix = if self.prefix.is_empty() {
            prefix.to_string()
        } else {
            format!("{}/{prefix}", self.prefix)
        };
        let strip = if self.prefix.is_empty() {
            0
        } else {
            self.prefix.len() + 1
        };
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(&full_prefix)
            .into_paginator()
            .send();
        let mut out = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| {
                self.error(
                    format!("cannot list s3://{}/{full_prefix}", self.bucket),
                    None,
                    e,
                )
            })?;
            for o in page.contents() {
                let Some(k) = o.key() else { continue };
                if k.len() < strip {
                    continue;
                }
                out.push(ObjectInfo {
                    key: k[strip..].to_string(),
                    size: o.size().and_then(|n| u64::try_from(n).ok()).unwrap_or(0),
                    last_modified: o.last_modified().and_then(to_timestamp),
                });
            }
        }
        Ok(out)
    }

    async fn check(&self) -> Result<(), StoreError> {
        self.client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(&self.prefix)
            .max_keys(1)
            .send()
            .await
            .map_err(|e| {
                self.error(
                    format!("cannot list s3://{}/{}", self.bucket, self.prefix),
                    None,
                    e,
                )
            })?;
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(self.full_key(key))
            .send()
            .await
            .map_err(|e| {
                self.error(
                    format!("cannot delete {}", self.object_url(key)),
                    Some(key),
                    e,
                )
            })?;
        Ok(())
    }

    async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        let res = self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(self.full_key(key))
            .send()
            .await;
        match res {
            Ok(o) => Ok(Some(ObjectInfo {
                key: key.into(),
                size: o
                    .content_length()
                    .and_then(|n| u64::try_from(n).ok())
                    .unwrap_or(0),
                last_modified: o.last_modified().and_then(to_timestamp),
            })),
            Err(e) => match self.error(
                format!("cannot read {}", self.object_url(key)),
                Some(key),
                e,
            ) {
                // HEAD answers 404 without a body: tell a missing bucket from a missing object.
                StoreError::NotFound(_) => {
                    match self.client.head_bucket().bucket(&self.bucket).send().await {
                        Ok(_) => Ok(None),
                        Err(e) => {
                            Err(self.error(format!("cannot read bucket {}", self.bucket), None, e))
                        }
                    }
                }
                other => Err(other),
            },
        }
    }
}

/// Aborts a multipart upload when dropped armed (the `put` future was cancelled mid-upload).
struct AbortGuard {
    backend: Option<S3Backend>,
    key: String,
    upload_id: String,
}

impl Drop for AbortGuard {
    fn drop(&mut self) {
        if let Some(backend) = self.backend.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            let (key, id) = (
                std::mem::take(&mut self.key),
                std::mem::take(&mut self.upload_id),
            );
            rt.spawn(async move { backend.abort(&key, &id).await });
        }
    }
}

fn to_timestamp(t: &aws_sdk_s3::primitives::DateTime) -> Option<Timestamp> {
    Timestamp::new(t.secs(), t.subsec_nanos() as i32).ok()
}

/// The messages of an error and its sources, joined (the SDK's top-level messages alone say little).
fn error_chain(e: &Option<&dyn std::error::Error>) -> String {
    let mut parts = Vec::new();
    let mut next = *e;
    while let Some(err) = next {
        let s = err.to_string();
        if !parts.contains(&s) {
            parts.push(s);
        }
        next = err.source();
    }
    parts.join(": ")
}

fn is_credentials_problem(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("credentials") || t.contains("no auth scheme") || t.contains("identity")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3(url: &str) -> S3Location {
        match Location::parse(url).unwrap() {
            Location::S3(s) => s,
            other => panic!("{url} parsed as {other:?}"),
        }
    }

    #[test]
    fn s3_urls_parse_bucket_prefix_and_query() {
        let l = s3("s3://backups/etcd/prod/");
        assert_eq!(
            (l.bucket.as_str(), l.prefix.as_str()),
            ("backups", "etcd/prod")
        );
        assert_eq!((l.endpoint, l.region, l.path_style), (None, None, false));

        let l = s3("s3://b?endpoint=http://10.250.0.1:18333/&region=eu-west-1");
        assert_eq!(l.prefix, "");
        assert_eq!(l.endpoint.as_deref(), Some("http://10.250.0.1:18333"));
        assert_eq!(l.region.as_deref(), Some("eu-west-1"));
        assert!(l.path_style, "an IP endpoint implies path style");

        assert!(s3("s3://b/p?endpoint=https://minio.example.com").path_style);
        assert!(!s3("s3://b/p?endpoint=https://s3.eu-west-1.amazonaws.com").path_style);
        assert!(s3("s3://b/p?pathStyle=true").path_style);
        assert!(!s3("s3://b/p?endpoint=https://minio.example.com&pathStyle=false").path_style);
    }

    #[test]
    fn urls_display_back_to_themselves() {
        for url in [
            "s3://backups",
            "s3://backups/etcd/prod",
            "s3://b/p?endpoint=http://10.250.0.1:18333&region=us-east-1",
            "s3://b/p?pathStyle=true",
            "s3://b/p?endpoint=https://s3.amazonaws.com&pathStyle=true",
            "s3://b/p?endpoint=https://minio.example.com&pathStyle=false",
            "file:///var/backups/etcd",
            "pvc://etcd-backups",
            "pvc://etcd-backups/demo/daily",
        ] {
            let loc = Location::parse(url).unwrap();
            assert_eq!(loc.to_string(), url);
            assert_eq!(Location::parse(&loc.to_string()).unwrap(), loc);
        }
        assert_eq!(
            Location::parse("file:///a//b/").unwrap().to_string(),
            "file:///a/b"
        );
        assert_eq!(
            Location::parse("file://localhost/a").unwrap().to_string(),
            "file:///a"
        );
    }

    #[test]
    fn bad_urls_are_refused_with_the_fix() {
        let cases: &[(&str, &str)] = &[
            ("gs://bucket/x", "unknown scheme \"gs\""),
            (
                "http://host/x",
                "use s3://bucket/prefix, file:///absolute/path",
            ),
            ("/var/backups", "not a backup URL"),
            ("s3:///prefix", "names no bucket"),
            ("s3://", "names no bucket"),
            (
                "s3://host:9000/bucket",
                "put a custom endpoint in ?endpoint=",
            ),
            ("s3://b/p?endpoint=minio:9000", "http:// or https://"),
            (
                "s3://b/p?regoin=x",
                "known parameters are endpoint, region and pathStyle",
            ),
            ("s3://b/a/../c", "must not contain '..'"),
            ("file://relative/path", "names the host \"relative\""),
            ("file://./backups", "not an absolute path"),
            ("file:backups", "not an absolute path"),
            ("file:///x?y=1", "take no parameters"),
            ("pvc:///x", "invalid claim name \"\""),
            ("pvc://Bad_Claim/x", "invalid claim name"),
            ("pvc://c/../x", "must not contain '..'"),
        ];
        for (url, want) in cases {
            let err = Location::parse(url).unwrap_err().to_string();
            assert!(err.contains(want), "{url}: {err}");
        }
    }

    #[test]
    fn credentials_in_the_url_are_refused_and_not_echoed() {
        for url in [
            "s3://AKIAEXAMPLE:hunter2secret@bucket/p",
            "s3://hunter2secret@bucket/p",
            "s3://b/p?endpoint=http://AKIAEXAMPLE:hunter2secret@host:9000",
            "s3://b/p?secretKey=hunter2secret",
            "s3://b/p?aws_secret_access_key=hunter2secret",
            "s3://b/p?X-Amz-Signature=hunter2secret",
            "file://user:hunter2secret@host/x",
            "pvc://user:hunter2secret@claim/x",
        ] {
            let err = Location::parse(url).unwrap_err();
            assert!(
                matches!(err, UrlError::EmbeddedCredentials { .. }),
                "{url}: {err:?}"
            );
            let text = err.to_string();
            assert!(
                text.starts_with("never put credentials in the URL"),
                "{text}"
            );
            assert!(text.contains("; use "), "{text}");
            assert!(
                !text.contains("hunter2secret"),
                "{url}: secret echoed: {text}"
            );
            assert!(
                !format!("{err:?}").contains("hunter2secret"),
                "{url}: secret in Debug"
            );
        }
    }

    #[test]
    fn object_urls_split_into_location_and_key_and_join_back() {
        for (url, dir, key) in [
            ("s3://b/etcd/demo-1.db.zst", "s3://b/etcd", "demo-1.db.zst"),
            ("s3://b/demo-1.db", "s3://b", "demo-1.db"),
            (
                "s3://b/p/x.db.gz?endpoint=http://127.0.0.1:18333",
                "s3://b/p?endpoint=http://127.0.0.1:18333",
                "x.db.gz",
            ),
            ("file:///var/b/x.db", "file:///var/b", "x.db"),
            ("pvc://claim/d/x.db", "pvc://claim/d", "x.db"),
            ("pvc://claim/x.db", "pvc://claim", "x.db"),
        ] {
            let (loc, k) = Location::parse_object(url).unwrap();
            assert_eq!((loc.to_string().as_str(), k.as_str()), (dir, key), "{url}");
            assert_eq!(
                loc.object_url(&k),
                Location::parse(url).unwrap().to_string()
            );
        }
        for url in ["s3://b", "s3://b/", "pvc://claim", "file:///"] {
            let err = Location::parse_object(url).unwrap_err().to_string();
            assert!(err.contains("names no object"), "{url}: {err}");
        }
    }

    #[test]
    fn a_pvc_location_maps_onto_its_mount() {
        let loc = Location::parse("pvc://backups/demo").unwrap();
        assert_eq!(
            loc.pvc_as_file(Path::new("/backup")).unwrap().to_string(),
            "file:///backup/demo"
        );
        assert_eq!(
            Location::parse("pvc://backups")
                .unwrap()
                .pvc_as_file(Path::new("/m"))
                .unwrap(),
            Location::File("/m".into())
        );
        assert_eq!(
            Location::parse("s3://b")
                .unwrap()
                .pvc_as_file(Path::new("/m")),
            None
        );
    }

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

    #[tokio::test]
    async fn pvc_locations_are_refused_outside_the_cluster() {
        let loc = Location::parse("pvc://backups/demo").unwrap();
        let err = Store::open(&loc, None).await.unwrap_err().to_string();
        assert!(
            err.contains("only inside the cluster") && err.contains("backups"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn files_round_trip_with_sha_listing_and_deletion() {
        let dir = tempfile::tempdir().unwrap();
        let loc = Location::parse(&format!("file://{}/backups", dir.path().display())).unwrap();
        let store = Store::open(&loc, None).await.unwrap();
        assert!(
            store.list("").await.unwrap().is_empty(),
            "a new location is empty"
        );
        store.check().await.unwrap();
        assert!(
            store.list("").await.unwrap().is_empty(),
            "check leaves nothing behind"
        );

        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let seen = std::sync::atomic::AtomicU64::new(0);
        let stored = store
            .put("demo/a.db", &data[..], |n| {
                seen.store(n, std::sync::atomic::Ordering::Relaxed)
            })
            .await
            .unwrap();
        assert_eq!(stored.bytes, data.len() as u64);
        assert_eq!(seen.into_inner(), data.len() as u64);
        let mut want = Sha256::default();
        want.update(&data);
        assert_eq!(stored.sha256_hex, want.finish().1);
        store.put("demo/b.db", &b"x"[..], |_| {}).await.unwrap();
        store.put("other.db", &b"y"[..], |_| {}).await.unwrap();

        let (mut r, size) = store.get("demo/a.db").await.unwrap();
        let mut back = Vec::new();
        r.read_to_end(&mut back).await.unwrap();
        assert_eq!((back == data, size), (true, Some(data.len() as u64)));

        let keys: Vec<String> = store
            .list("demo/")
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.key)
            .collect();
        assert_eq!(keys, ["demo/a.db", "demo/b.db"]);
        assert_eq!(store.list("").await.unwrap().len(), 3);
        let head = store.head("demo/a.db").await.unwrap().unwrap();
        assert_eq!(head.size, data.len() as u64);
        assert!(head.last_modified.is_some());

        store.delete("demo/a.db").await.unwrap();
        store.delete("demo/a.db").await.unwrap(); // idempotent
        assert_eq!(store.head("demo/a.db").await.unwrap(), None);
        let err = store.get("demo/a.db").await.err().unwrap();
        assert!(
            matches!(&err, StoreError::NotFound(u) if u.ends_with("/backups/demo/a.db")),
            "{err}"
        );
    }

    /// A body that yields some bytes and then fails, like a snapshot stream cut off half-way.
    struct Failing(usize);

    impl AsyncRead for Failing {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            if self.0 == 0 {
                return std::task::Poll::Ready(Err(io::Error::other("etcd stream broke")));
            }
            let n = self.0.min(buf.remaining());
            buf.put_slice(&vec![7u8; n]);
            self.0 -= n;
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_failed_file_upload_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&Location::File(dir.path().into()), None)
            .await
            .unwrap();
        let err = store
            .put("x/a.db", Failing(5_000_000), |_| {})
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Io { .. }), "{err:?}");
        assert!(
            err.to_string()
                .contains("reading the data to store at file://"),
            "{err}"
        );
        assert!(store.list("").await.unwrap().is_empty());
        let left: Vec<_> = std::fs::read_dir(dir.path().join("x")).unwrap().collect();
        assert!(left.is_empty(), "partial file left: {left:?}");
    }

    #[tokio::test]
    async fn an_unwritable_directory_is_a_clear_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, b"not a dir").unwrap();
        let store = Store::open(&Location::File(blocker.clone()), None)
            .await
            .unwrap();
        let err = store.put("a.db", &b"x"[..], |_| {}).await.unwrap_err();
        assert!(
            err.to_string().contains(&blocker.display().to_string()),
            "{err}"
        );
        let err = store.check().await.unwrap_err();
        assert!(
            err.to_string().contains(&blocker.display().to_string()),
            "{err}"
        );
    }

    #[tokio::test]
    async fn read_part_fills_whole_parts_until_the_end() {
        let data = vec![1u8; 2 * PART_SIZE + 10];
        let mut r = &data[..];
        let part = read_part(&mut r, BytesMut::new()).await.unwrap();
        assert_eq!(part.len(), PART_SIZE);
        let at = part.as_ptr();
        let part = read_part(&mut r, part).await.unwrap();
        assert_eq!(part.len(), PART_SIZE);
        assert_eq!(part.as_ptr(), at, "the buffer is reused, not reallocated");
        // A part handed to the SDK and dropped there comes back as the same allocation.
        let frozen = part.freeze();
        drop(frozen.clone());
        let part = frozen.try_into_mut().unwrap();
        assert_eq!(part.as_ptr(), at);
        assert_eq!(read_part(&mut r, part).await.unwrap().len(), 10);
        assert!(read_part(&mut r, BytesMut::new()).await.unwrap().is_empty());
    }

    #[test]
    fn random_urls_never_panic_and_what_parses_prints_back_to_itself() {
        const TOKENS: [&str; 26] = [
            "s3://",
            "file://",
            "pvc://",
            "/",
            "a",
            "B",
            "..",
            ".",
            "?",
            "&",
            "=",
            "endpoint",
            "region",
            "pathStyle",
            "true",
            "false",
            "http://",
            "https://",
            "@",
            ":",
            "1",
            "é",
            " ",
            "%",
            "localhost",
            "-",
        ];
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut parsed = 0;
        for _ in 0..30_000 {
            let len = 1 + next() % 10;
            // Mostly a scheme first, so that many parse and the round trip is exercised.
            let first = next() % 4;
            let url: String = (0..len)
                .map(|i| {
                    TOKENS[((if i == 0 { first } else { next() }) % TOKENS.len() as u64) as usize]
                })
                .collect();
            let Ok(loc) = Location::parse(&url) else {
                continue;
            };
            parsed += 1;
            let shown = loc.to_string();
            assert_eq!(
                Location::parse(&shown).as_ref(),
                Ok(&loc),
                "{url:?} → {shown:?}"
            );
            if let Ok((dir, key)) = Location::parse_object(&url) {
                assert_eq!(dir.object_url(&key), shown, "{url:?}");
            }
        }
        assert!(
            parsed > 1000,
            "only {parsed} random URLs parsed: the generator tests little"
        );
    }

    #[test]
    fn path_style_follows_the_endpoint() {
        for (ep, want) in [
            ("http://127.0.0.1:9000", true),
            ("http://[::1]:9000", true),
            ("http://localhost:9000", true),
            ("https://minio.internal", true),
            ("https://s3.us-west-2.amazonaws.com", false),
            ("https://s3.cn-north-1.amazonaws.com.cn", false),
        ] {
            assert_eq!(implies_path_style(ep), want, "{ep}");
        }
    }
}
