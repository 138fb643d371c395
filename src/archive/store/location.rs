//! Locations: backup URLs (`s3://`, `file://`, `pvc://`) parsed, checked, joined and printed back.
//! Pure: no I/O.

use std::fmt;
use std::path::{Path, PathBuf};

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
    /// PEM of the CA certificates an `https://` endpoint's certificate may chain to, beside the
    /// system's roots (a server with a certificate of a private CA): a credentials Secret's
    /// `AWS_CA_BUNDLE`. Never part of the URL. None: `AWS_CA_BUNDLE` of the environment
    /// (`s3::trust`), else the system's roots alone.
    pub ca_bundle: Option<String>,
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

    /// The key of the object `url` names when it lies directly in this location (not below it),
    /// else None. Compared on the parsed URLs, never as text: the same bucket, endpoint and prefix
    /// (S3; region and addressing style do not change which object a URL names), the same
    /// directory (file), the same claim and path (pvc).
    pub fn key_of(&self, url: &str) -> Option<String> {
        let (dir, key) = Location::parse_object(url).ok()?;
        let same = match (self, &dir) {
            (Location::S3(a), Location::S3(b)) => {
                a.bucket == b.bucket
                    && a.prefix == b.prefix
                    && match (&a.endpoint, &b.endpoint) {
                        (None, None) => true,
                        (Some(x), Some(y)) => x.eq_ignore_ascii_case(y),
                        _ => false,
                    }
            }
            (Location::File(a), Location::File(b)) => a == b,
            (
                Location::Pvc { claim, path },
                Location::Pvc {
                    claim: c2,
                    path: p2,
                },
            ) => claim == c2 && path == p2,
            _ => false,
        };
        same.then_some(key)
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
    endpoint_host_port(endpoint).0
}

/// The host (IPv6 without brackets) and port of an endpoint URL or a bare `host[:port]`; the
/// port of a URL without one is its scheme's (80, 443).
pub(super) fn endpoint_host_port(endpoint: &str) -> (&str, Option<u16>) {
    let (scheme, rest) = endpoint.split_once("://").unwrap_or(("", endpoint));
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']').unwrap_or((v6, ""));
        (host, after.strip_prefix(':'))
    } else {
        match authority.split_once(':') {
            Some((h, p)) if !p.contains(':') => (h, Some(p)),
            _ => (authority, None), // no port, or a bare IPv6 address
        }
    };
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    };
    (host, port.and_then(|p| p.parse().ok()).or(default))
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
    fn a_location_holds_only_objects_directly_in_it() {
        let dest = Location::parse("s3://b/etcd/prod?endpoint=http://10.0.0.5:9000").unwrap();
        let key = |url: &str| dest.key_of(url);
        assert_eq!(
            key("s3://b/etcd/prod/x.db.zst?endpoint=http://10.0.0.5:9000/").as_deref(),
            Some("x.db.zst")
        );
        assert_eq!(
            key("s3://b/etcd/prod/x.db?endpoint=http://10.0.0.5:9000&region=eu-west-1&pathStyle=true")
                .as_deref(),
            Some("x.db"),
            "region and addressing style name the same object"
        );
        for foreign in [
            "s3://b/etcd/prod/x.db",                               // AWS, not the server
            "s3://b/etcd/prod/x.db?endpoint=http://10.0.0.6:9000", // another server
            "s3://other/etcd/prod/x.db?endpoint=http://10.0.0.5:9000", // another bucket
            "s3://b/etcd/prod2/x.db?endpoint=http://10.0.0.5:9000", // a string prefix only
            "s3://b/etcd/prod/sub/x.db?endpoint=http://10.0.0.5:9000", // below, not in it
            "s3://b/etcd/x.db?endpoint=http://10.0.0.5:9000",      // above
            "s3://b/etcd/prod/../prod/x.db?endpoint=http://10.0.0.5:9000", // refused by parsing
            "file:///etcd/prod/x.db",
            "s3://b/etcd/prod?endpoint=http://10.0.0.5:9000", // the prefix itself
            "not a url",
        ] {
            assert_eq!(key(foreign), None, "{foreign}");
        }
        let aws = Location::parse("s3://b").unwrap();
        assert_eq!(aws.key_of("s3://b/x.db").as_deref(), Some("x.db"));
        assert_eq!(aws.key_of("s3://b/p/x.db"), None);
        let dir = Location::parse("file:///var/b").unwrap();
        assert_eq!(dir.key_of("file:///var/b/x.db").as_deref(), Some("x.db"));
        assert_eq!(dir.key_of("file:///var/bb/x.db"), None);
        let pvc = Location::parse("pvc://c/d").unwrap();
        assert_eq!(pvc.key_of("pvc://c/d/x.db").as_deref(), Some("x.db"));
        assert_eq!(pvc.key_of("pvc://c2/d/x.db"), None);
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
