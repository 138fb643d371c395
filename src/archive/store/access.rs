//! What opening a store may use beyond what the caller hands it. Pure: no I/O.
//!
//! A person at a terminal backs up with their own cloud identity to whatever endpoint they name
//! ([`Access::ANY`]). The operator acts for every tenant whose clusters it watches, and a tenant
//! writes the destination URL and the Secret: without limits, a tenant could have the operator's
//! own cloud identity (environment, IRSA, instance metadata) read or delete objects it may reach,
//! or point its requests at any host of the network. So the operator ([`Access::operator`]) uses
//! ambient credentials only when started with `--allow-ambient-credentials`, and custom endpoints
//! only from `--s3-endpoint-allow`. AWS's own endpoints are always allowed (what they reach is
//! still decided by the credentials); the operator process's own `AWS_ENDPOINT_URL` is the
//! administrator's, not a tenant's, and is not checked.

use super::Location;
use super::location::endpoint_host_port;

/// The flag that lets the operator use its own cloud identity.
pub const FLAG_AMBIENT: &str = "--allow-ambient-credentials";
/// The flag listing the custom S3 endpoints the operator may use.
pub const FLAG_ENDPOINTS: &str = "--s3-endpoint-allow";

/// What a store may use beyond explicit credentials and AWS endpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// Without explicit credentials, use the standard AWS chain (environment, profile, web
    /// identity/IRSA, ECS, instance metadata).
    pub ambient_credentials: bool,
    /// Custom endpoints allowed (`host`, `host:port`, `*.domain`), or None: any endpoint.
    pub endpoints: Option<Vec<String>>,
}

/// Why a location may not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error(
        "{location} names no credentials Secret, and this operator uses no ambient cloud identity: set the cluster's credentialsSecret, or start the operator with {FLAG_AMBIENT} to let it use its own (environment, IRSA, instance metadata) for every cluster it watches"
    )]
    AmbientCredentials { location: String },
    #[error(
        "the S3 endpoint {endpoint} (of {location}) is not allowed by this operator: start it with {FLAG_ENDPOINTS} {host} (allowed: {allowed})"
    )]
    Endpoint {
        endpoint: String,
        location: String,
        host: String,
        allowed: String,
    },
}

impl Access {
    /// A person's own tools: ambient credentials and any endpoint.
    pub const ANY: Access = Access {
        ambient_credentials: true,
        endpoints: None,
    };

    /// The operator's: ambient credentials only when allowed, custom endpoints only when listed
    /// (entries are trimmed, lower-cased, empty ones dropped).
    pub fn operator(ambient_credentials: bool, endpoints: &[String]) -> Access {
        Access {
            ambient_credentials,
            endpoints: Some(
                endpoints
                    .iter()
                    .map(|e| e.trim().to_ascii_lowercase())
                    .filter(|e| !e.is_empty())
                    .collect(),
            ),
        }
    }

    /// Whether `loc` may be opened, `explicit_credentials` given or not. `loc` carries the
    /// endpoint of the URL or of the credentials Secret (the caller merges it first).
    pub fn check(&self, loc: &Location, explicit_credentials: bool) -> Result<(), Refused> {
        let Location::S3(s3) = loc else {
            return Ok(());
        };
        if !explicit_credentials && !self.ambient_credentials {
            return Err(Refused::AmbientCredentials {
                location: loc.to_string(),
            });
        }
        let (Some(allowed), Some(endpoint)) = (&self.endpoints, &s3.endpoint) else {
            return Ok(());
        };
        let (host, port) = endpoint_host_port(endpoint);
        let host = host.to_ascii_lowercase();
        if is_aws(&host) || allowed.iter().any(|a| entry_matches(a, &host, port)) {
            return Ok(());
        }
        Err(Refused::Endpoint {
            endpoint: endpoint.clone(),
            location: loc.to_string(),
            host: match port {
                Some(p) => format!("{host}:{p}"),
                None => host.clone(),
            },
            allowed: if allowed.is_empty() {
                "AWS endpoints only".into()
            } else {
                format!("AWS endpoints and {}", allowed.join(", "))
            },
        })
    }
}

fn is_aws(host: &str) -> bool {
    host.ends_with(".amazonaws.com") || host.ends_with(".amazonaws.com.cn")
}

/// `host` (any port), `host:port`, `*.domain` (its subdomains, any port), `*.domain:port`.
/// `[v6]:port` for IPv6 with a port.
fn entry_matches(entry: &str, host: &str, port: Option<u16>) -> bool {
    let (h, p) = endpoint_host_port(entry);
    let port_ok = match p {
        Some(p) => port == Some(p),
        None => true,
    };
    let host_ok = match h.strip_prefix("*.") {
        Some(domain) => host
            .strip_suffix(domain)
            .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
        None => h == host,
    };
    port_ok && host_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(url: &str) -> Location {
        Location::parse(url).unwrap()
    }

    fn allow(list: &[&str]) -> Access {
        Access::operator(
            false,
            &list.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
    }

    #[test]
    fn the_cli_uses_its_own_identity_and_any_endpoint() {
        for url in [
            "s3://b/p",
            "s3://b/p?endpoint=http://10.1.2.3:9000",
            "file:///var/b",
        ] {
            assert_eq!(Access::ANY.check(&loc(url), false), Ok(()), "{url}");
        }
    }

    #[test]
    fn the_operator_uses_ambient_credentials_only_when_started_with_the_flag() {
        let aws = loc("s3://b/p");
        let err = Access::operator(false, &[]).check(&aws, false).unwrap_err();
        assert!(matches!(err, Refused::AmbientCredentials { .. }));
        let text = err.to_string();
        assert!(
            text.contains("--allow-ambient-credentials") && text.contains("credentialsSecret"),
            "{text}"
        );
        assert_eq!(Access::operator(false, &[]).check(&aws, true), Ok(()));
        assert_eq!(Access::operator(true, &[]).check(&aws, false), Ok(()));
        // Nothing of the kind for a local directory.
        assert_eq!(
            Access::operator(false, &[]).check(&loc("file:///b"), false),
            Ok(())
        );
    }

    #[test]
    fn the_operator_reaches_aws_and_listed_endpoints_only() {
        let a = allow(&["10.250.0.1:18333", "minio.backup.svc", "*.s3.example.com"]);
        for ok in [
            "s3://b/p",
            "s3://b/p?endpoint=https://s3.eu-west-1.amazonaws.com",
            "s3://b/p?endpoint=https://s3.cn-north-1.amazonaws.com.cn",
            "s3://b/p?endpoint=http://10.250.0.1:18333",
            "s3://b/p?endpoint=http://MINIO.backup.svc:9000",
            "s3://b/p?endpoint=https://eu.s3.example.com",
        ] {
            assert_eq!(a.check(&loc(ok), true), Ok(()), "{ok}");
        }
        for bad in [
            "s3://b/p?endpoint=http://10.250.0.1:18334",
            "s3://b/p?endpoint=http://10.250.0.2:18333",
            "s3://b/p?endpoint=http://169.254.169.254",
            "s3://b/p?endpoint=http://minio.backup.svc.evil.net",
            "s3://b/p?endpoint=https://s3.example.com",
            "s3://b/p?endpoint=https://evils3.example.com",
            "s3://b/p?endpoint=https://amazonaws.com.evil.net",
        ] {
            let err = a.check(&loc(bad), true).unwrap_err();
            let text = err.to_string();
            assert!(
                text.contains("--s3-endpoint-allow") && text.contains("is not allowed"),
                "{bad}: {text}"
            );
        }
        let text = allow(&[])
            .check(&loc("s3://b/p?endpoint=http://10.0.0.5:9000"), true)
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("--s3-endpoint-allow 10.0.0.5:9000")
                && text.contains("AWS endpoints only"),
            "{text}"
        );
    }

    #[test]
    fn ipv6_entries_take_brackets() {
        let a = allow(&["[fd00::5]:9000", "fd00::6"]);
        assert_eq!(
            a.check(&loc("s3://b/p?endpoint=http://[fd00::5]:9000"), true),
            Ok(())
        );
        assert!(
            a.check(&loc("s3://b/p?endpoint=http://[fd00::5]:9001"), true)
                .is_err()
        );
        assert_eq!(
            a.check(&loc("s3://b/p?endpoint=http://[fd00::6]:1"), true),
            Ok(())
        );
    }
}
