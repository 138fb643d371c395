//! S3's failures in words: an SDK error mapped to a `StoreError` that names the bucket or the
//! object and the fix (no credentials, an endpoint out of reach, a certificate not trusted, an
//! answer by its code), and whether a failure is worth another try.

use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};

use super::*;
use crate::archive::store::StoreError;

impl S3Backend {
    /// Maps an SDK error to a `StoreError` naming the bucket/object and the fix.
    pub(super) fn error<E>(
        &self,
        what: String,
        object: Option<&str>,
        err: SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
    ) -> StoreError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let chain = error_chain(&Some(&err as &dyn std::error::Error));
        match err {
            SdkError::TimeoutError(_) => StoreError::Unreachable {
                endpoint: self.endpoint.clone(),
                bucket: self.bucket.clone(),
                what: "timed out".into(),
                source: None,
            },
            SdkError::DispatchFailure(d) => {
                self.dispatch_error(what, d.is_timeout(), d.is_io(), chain)
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
                let e = s.err();
                let answer = Answer {
                    status: s.raw().status().as_u16(),
                    code: e.code().unwrap_or("").to_string(),
                    message: e.message().unwrap_or("").to_string(),
                    region: s
                        .raw()
                        .headers()
                        .get("x-amz-bucket-region")
                        .map(str::to_string),
                };
                self.service_error(what, object, answer)
            }
            _ => StoreError::other(what, chain),
        }
    }

    /// A request that was not answered: no credentials, the endpoint unreachable, or else.
    pub(super) fn dispatch_error(
        &self,
        what: String,
        timeout: bool,
        io: bool,
        text: String,
    ) -> StoreError {
        let kind = if timeout {
            "timed out"
        } else if io {
            "connection failed"
        } else {
            "request not sent"
        };
        if is_credentials_problem(&text) {
            return self.no_credentials(text);
        }
        if let Some(why) = untrusted_certificate(&text) {
            return StoreError::Untrusted {
                endpoint: self.endpoint.clone(),
                bucket: self.bucket.clone(),
                why,
            };
        }
        if timeout || io || text.contains("dns") || text.contains("connect") {
            return StoreError::Unreachable {
                endpoint: self.endpoint.clone(),
                bucket: self.bucket.clone(),
                what: kind.into(),
                source: Some(text.into()),
            };
        }
        StoreError::Other {
            what,
            detail: text,
            transient: false,
            source: None,
        }
    }

    /// An S3 error answer, by its code (and its status when the code says little).
    pub(super) fn service_error(
        &self,
        what: String,
        object: Option<&str>,
        answer: Answer,
    ) -> StoreError {
        let Answer {
            status,
            code,
            message,
            region,
        } = answer;
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
                let region = region.unwrap_or_else(|| "REGION".into());
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
                let transient = is_transient(status, &code);
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

    pub(super) fn no_credentials(&self, text: String) -> StoreError {
        let _ = text;
        StoreError::Credentials {
            bucket: self.bucket.clone(),
            endpoint: self.endpoint.clone(),
            code: "no credentials found".into(),
        }
    }
}

/// The messages of an error and its sources, joined (the SDK's top-level messages alone say little).
pub(super) fn error_chain(e: &Option<&dyn std::error::Error>) -> String {
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

/// Why the TLS client refused the server's certificate, from rustls's words in an error chain
/// (`invalid peer certificate: UnknownIssuer`, `certificate not valid for name …`, `certificate
/// expired …`), else None.
pub(super) fn untrusted_certificate(text: &str) -> Option<String> {
    const INVALID: &str = "invalid peer certificate: ";
    if let Some(at) = text.find(INVALID) {
        let rest = &text[at + INVALID.len()..];
        let kind: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if !kind.is_empty() {
            return Some(format!("{INVALID}{kind}"));
        }
    }
    [
        "certificate not valid for name",
        "certificate expired",
        "UnknownIssuer",
    ]
    .iter()
    .find_map(|phrase| {
        let at = text.find(phrase)?;
        let said: String = text[at..]
            .chars()
            .take_while(|c| !matches!(c, ';' | ')' | '\n'))
            .take(160)
            .collect();
        Some(said.trim_end_matches([' ', ':', ',']).to_string())
    })
}

pub(super) fn is_credentials_problem(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("credentials") || t.contains("no auth scheme") || t.contains("identity")
}

/// What an S3 error answer says: its HTTP status, error code and message, and the bucket's
/// region when the answer names it.
pub(super) struct Answer {
    status: u16,
    code: String,
    message: String,
    region: Option<String>,
}

/// The object read changed between two requests of one download: its bytes cannot be joined.
pub(super) fn replaced(what: &str) -> StoreError {
    StoreError::Other {
        what: what.into(),
        detail: "it was replaced while it was read (its ETag changed); start again".into(),
        transient: false,
        source: None,
    }
}

/// Whether an S3 error answer is worth retrying: throttling, timeouts, server errors.
pub(super) fn is_transient(status: u16, code: &str) -> bool {
    status >= 500
        || status == 429
        || matches!(
            code,
            "SlowDown"
                | "RequestTimeout"
                | "InternalError"
                | "ServiceUnavailable"
                | "Throttling"
                | "ThrottlingException"
                | "RequestTimeTooSkewed"
        )
}
