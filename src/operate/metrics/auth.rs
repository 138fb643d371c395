//! Who may read `/metrics` (issue 42): a bearer token the API server knows (a TokenReview), whose
//! user may `get` the non-resource URL `/metrics` (a SubjectAccessReview), as kube-rbac-proxy and
//! controller-runtime's authenticated metrics server do. `/healthz` and `/readyz` stay open: the
//! kubelet probes them without a token.
//!
//! Pure: the header's token, the verdict from the two reviews' answers, and a bounded cache of
//! verdicts keyed by the token's SHA-256, so that a scrape every few seconds costs the API server
//! two reviews a minute per scraper. The reviews themselves are `review`'s.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReviewSpec, TokenReviewStatus, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReviewSpec, SubjectAccessReviewStatus,
};

/// The path the reviews guard, and the verb a GET (or HEAD) of it is authorized as.
pub use crate::keys::install::{METRICS_PATH, METRICS_VERB};

/// How `/metrics` is guarded (`operate --metrics-auth`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum MetricsAuth {
    /// A bearer token, reviewed by the API server, of a user allowed `get` on `/metrics`.
    #[default]
    Kubernetes,
    /// Anyone who reaches the port: only behind something else that guards it (a proxy, a
    /// NetworkPolicy admitting Prometheus alone). The metrics name every watched cluster.
    #[value(name = "none")]
    Off,
}

/// What a request to `/metrics` gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// 200: the user may read the metrics.
    Allowed,
    /// 401: no bearer token, a malformed header, or a token the API server does not know.
    Unauthenticated(&'static str),
    /// 403: the token's user may not `get` `/metrics`.
    Forbidden { user: String },
    /// 503: a review could not be made (the API server unreachable, the operator's role
    /// lacking `create` on the reviews). Never cached: the next scrape asks again.
    Unavailable(String),
}

impl Verdict {
    /// The HTTP status of the answer.
    pub fn status(&self) -> u16 {
        match self {
            Verdict::Allowed => 200,
            Verdict::Unauthenticated(_) => 401,
            Verdict::Forbidden { .. } => 403,
            Verdict::Unavailable(_) => 503,
        }
    }

    /// The body of a refusal: what was wrong and what fixes it (`reader`: the ClusterRole that
    /// grants `/metrics`, `keys::install::metrics_reader_role`).
    pub fn message(&self, reader: &str) -> String {
        match self {
            Verdict::Allowed => "ok\n".into(),
            Verdict::Unauthenticated(why) => format!(
                "{why}: /metrics wants `Authorization: Bearer <token>` of a ServiceAccount bound to \
                 the ClusterRole {reader} (or operate --metrics-auth none behind another guard)\n"
            ),
            Verdict::Forbidden { user } => format!(
                "{user} may not get {METRICS_PATH}: bind it to the ClusterRole {reader} \
                 (nonResourceURLs {METRICS_PATH}, get)\n"
            ),
            Verdict::Unavailable(why) => format!("cannot review the request's token: {why}\n"),
        }
    }

    /// How long the verdict holds for its token: a grant for `ttl`, a refusal for a tenth of it
    /// (a binding just made takes effect soon), an unavailable API server not at all.
    fn lifetime(&self, ttl: Duration) -> Option<Duration> {
        match self {
            Verdict::Allowed => Some(ttl),
            Verdict::Unauthenticated(_) | Verdict::Forbidden { .. } => Some(ttl / 10),
            Verdict::Unavailable(_) => None,
        }
    }
}

/// The bearer token of an `Authorization` header's value (RFC 6750: the scheme is
/// case-insensitive, one or more spaces, then the token in token68 characters).
pub fn bearer_token(header: Option<&[u8]>) -> Result<&str, Verdict> {
    let header = header.ok_or(Verdict::Unauthenticated("no Authorization header"))?;
    let header = std::str::from_utf8(header)
        .map_err(|_| Verdict::Unauthenticated("an Authorization header that is not ASCII"))?;
    let (scheme, token) = header.split_once(' ').ok_or(Verdict::Unauthenticated(
        "an Authorization header without a token",
    ))?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Verdict::Unauthenticated(
            "an Authorization header of another scheme than Bearer",
        ));
    }
    let token = token.trim_start_matches(' ');
    let token68 = |c: char| c.is_ascii_alphanumeric() || "-._~+/=".contains(c);
    if token.is_empty() || !token.chars().all(token68) {
        return Err(Verdict::Unauthenticated(
            "a bearer token that is empty or not token68",
        ));
    }
    Ok(token)
}

/// The TokenReview of `token`: the API server's own audiences (a ServiceAccount token of a
/// TokenRequest or of a token Secret).
pub fn token_review(token: &str) -> TokenReviewSpec {
    TokenReviewSpec {
        token: Some(token.to_string()),
        audiences: None,
    }
}

/// The user a TokenReview's answer names, or 401.
pub fn authenticated(status: Option<&TokenReviewStatus>) -> Result<UserInfo, Verdict> {
    let unknown = Verdict::Unauthenticated("a token the API server does not accept");
    let status = status.ok_or(unknown.clone())?;
    match (&status.authenticated, &status.user) {
        (Some(true), Some(user)) if user.username.as_deref().is_some_and(|u| !u.is_empty()) => {
            Ok(user.clone())
        }
        _ => Err(unknown),
    }
}

/// The SubjectAccessReview of `user` getting `/metrics` (a non-resource URL: no namespace).
pub fn access_review(user: &UserInfo) -> SubjectAccessReviewSpec {
    SubjectAccessReviewSpec {
        user: user.username.clone(),
        groups: user.groups.clone(),
        uid: user.uid.clone(),
        extra: user.extra.clone(),
        non_resource_attributes: Some(NonResourceAttributes {
            path: Some(METRICS_PATH.into()),
            verb: Some(METRICS_VERB.into()),
        }),
        resource_attributes: None,
    }
}

/// The verdict of a SubjectAccessReview's answer for `user`: allowed only when it says so and
/// denies nothing (a `denied` wins over an `allowed`, as the API server's own chain does).
pub fn authorized(user: &UserInfo, status: Option<&SubjectAccessReviewStatus>) -> Verdict {
    match status {
        Some(s) if s.allowed && s.denied != Some(true) => Verdict::Allowed,
        _ => Verdict::Forbidden {
            user: user.username.clone().unwrap_or_default(),
        },
    }
}

/// The cache key of a token: its SHA-256 (the token itself is never kept).
pub type TokenKey = [u8; 32];

pub fn token_key(token: &str) -> TokenKey {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut key = [0u8; 32];
    key.copy_from_slice(digest.as_ref());
    key
}

/// Verdicts by token, each until its expiry; at most `capacity` of them (a flood of made-up
/// tokens evicts the oldest, never grows the operator's memory).
pub struct Cache {
    ttl: Duration,
    capacity: usize,
    entries: HashMap<TokenKey, (Instant, Verdict)>,
}

impl Cache {
    /// A grant holds a minute (controller-runtime's authentication cache holds one as long).
    pub const TTL: Duration = Duration::from_secs(60);
    /// Scrapers are few (a Prometheus or two, a person with curl): 256 tokens is plenty.
    pub const CAPACITY: usize = 256;

    pub fn new(ttl: Duration, capacity: usize) -> Cache {
        Cache {
            ttl,
            capacity: capacity.max(1),
            entries: HashMap::new(),
        }
    }

    /// The verdict for `key` if one holds at `now`.
    pub fn get(&self, key: &TokenKey, now: Instant) -> Option<Verdict> {
        self.entries
            .get(key)
            .filter(|(until, _)| now < *until)
            .map(|(_, v)| v.clone())
    }

    /// Remembers `verdict` for `key` from `now` (an unavailable one is not remembered): expired
    /// entries go first, then, when full, the one closest to its expiry.
    pub fn put(&mut self, key: TokenKey, verdict: Verdict, now: Instant) {
        let Some(lifetime) = verdict.lifetime(self.ttl) else {
            return;
        };
        self.entries.retain(|_, (until, _)| now < *until);
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            let soonest = self
                .entries
                .iter()
                .min_by_key(|(_, (until, _))| *until)
                .map(|(k, _)| *k);
            if let Some(k) = soonest {
                self.entries.remove(&k);
            }
        }
        self.entries.insert(key, (now + lifetime, verdict));
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

impl Default for Cache {
    fn default() -> Cache {
        Cache::new(Cache::TTL, Cache::CAPACITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::UserInfo;

    fn unauthenticated(v: Result<&str, Verdict>) -> bool {
        matches!(v, Err(Verdict::Unauthenticated(_)))
    }

    #[test]
    fn a_bearer_header_gives_its_token_whatever_the_scheme_case() {
        assert_eq!(bearer_token(Some(b"Bearer abc.def-ghi")), Ok("abc.def-ghi"));
        assert_eq!(bearer_token(Some(b"bearer abc")), Ok("abc"));
        assert_eq!(bearer_token(Some(b"BEARER  a+b/c==")), Ok("a+b/c=="));
    }

    #[test]
    fn no_header_another_scheme_or_a_bad_token_is_unauthenticated() {
        for header in [
            None,
            Some(&b"Basic dXNlcjpwYXNz"[..]),
            Some(b"Bearer"),
            Some(b"Bearer "),
            Some(b"Bearer   "),
            Some(b"Bearer a b"),
            Some(b"Bearer a\"b"),
            Some(b"Bearerabc"),
            Some(b"Bearer \xff\xfe"),
            Some(b""),
        ] {
            assert!(unauthenticated(bearer_token(header)), "{header:?}");
        }
    }

    fn user(name: &str) -> UserInfo {
        UserInfo {
            username: Some(name.into()),
            groups: Some(vec!["system:serviceaccounts".into()]),
            uid: Some("u-1".into()),
            extra: None,
        }
    }

    #[test]
    fn only_an_authenticated_token_review_with_a_user_names_one() {
        let ok = TokenReviewStatus {
            authenticated: Some(true),
            user: Some(user("system:serviceaccount:mon:prom")),
            ..Default::default()
        };
        assert_eq!(
            authenticated(Some(&ok)).unwrap().username.as_deref(),
            Some("system:serviceaccount:mon:prom")
        );
        let no = TokenReviewStatus {
            authenticated: Some(false),
            error: Some("token expired".into()),
            ..Default::default()
        };
        let nameless = TokenReviewStatus {
            authenticated: Some(true),
            user: Some(user("")),
            ..Default::default()
        };
        let silent = TokenReviewStatus {
            user: Some(user("x")),
            ..Default::default()
        };
        for status in [Some(&no), Some(&nameless), Some(&silent), None] {
            assert!(
                matches!(authenticated(status), Err(Verdict::Unauthenticated(_))),
                "{status:?}"
            );
        }
    }

    #[test]
    fn the_access_review_asks_get_of_the_metrics_url_for_the_whole_user() {
        let spec = access_review(&user("alice"));
        assert_eq!(spec.user.as_deref(), Some("alice"));
        assert_eq!(spec.uid.as_deref(), Some("u-1"));
        assert_eq!(spec.groups, Some(vec!["system:serviceaccounts".into()]));
        let url = spec.non_resource_attributes.unwrap();
        assert_eq!(url.path.as_deref(), Some("/metrics"));
        assert_eq!(url.verb.as_deref(), Some("get"));
        assert!(spec.resource_attributes.is_none());
        assert_eq!(token_review("t").token.as_deref(), Some("t"));
    }

    #[test]
    fn access_is_allowed_only_when_allowed_and_not_denied() {
        let alice = user("alice");
        let status = |allowed: bool, denied: Option<bool>| SubjectAccessReviewStatus {
            allowed,
            denied,
            ..Default::default()
        };
        assert_eq!(
            authorized(&alice, Some(&status(true, None))),
            Verdict::Allowed
        );
        assert_eq!(
            authorized(&alice, Some(&status(true, Some(false)))),
            Verdict::Allowed
        );
        let forbidden = Verdict::Forbidden {
            user: "alice".into(),
        };
        for s in [
            status(false, None),
            status(true, Some(true)),
            status(false, Some(true)),
        ] {
            assert_eq!(authorized(&alice, Some(&s)), forbidden, "{s:?}");
        }
        assert_eq!(authorized(&alice, None), forbidden);
    }

    #[test]
    fn each_verdict_has_its_status_and_a_message_naming_the_fix() {
        let reader = "kubectl-etcd-operator-metrics-reader";
        assert_eq!(Verdict::Allowed.status(), 200);
        let no = Verdict::Unauthenticated("no Authorization header");
        assert_eq!(no.status(), 401);
        assert!(no.message(reader).contains(reader));
        assert!(no.message(reader).contains("--metrics-auth none"));
        let forbidden = Verdict::Forbidden { user: "bob".into() };
        assert_eq!(forbidden.status(), 403);
        assert!(
            forbidden
                .message(reader)
                .starts_with("bob may not get /metrics")
        );
        assert!(forbidden.message(reader).contains(reader));
        assert_eq!(Verdict::Unavailable("x".into()).status(), 503);
    }

    #[test]
    fn the_cache_key_is_the_tokens_sha256_never_the_token() {
        let key = token_key("abc");
        assert_eq!(
            key[..4],
            [0xba, 0x78, 0x16, 0xbf],
            "sha256(abc) = ba7816bf…"
        );
        assert_ne!(token_key("abd"), key);
    }

    #[test]
    fn a_grant_is_cached_for_the_ttl_a_refusal_for_a_tenth_and_an_outage_never() {
        let ttl = Duration::from_secs(60);
        let mut c = Cache::new(ttl, 8);
        let t0 = Instant::now();
        let (a, b, d) = (token_key("a"), token_key("b"), token_key("d"));
        c.put(a, Verdict::Allowed, t0);
        c.put(b, Verdict::Forbidden { user: "b".into() }, t0);
        c.put(d, Verdict::Unavailable("down".into()), t0);
        assert_eq!(
            c.get(&a, t0 + Duration::from_secs(59)),
            Some(Verdict::Allowed)
        );
        assert_eq!(c.get(&a, t0 + ttl), None);
        assert!(c.get(&b, t0 + Duration::from_secs(5)).is_some());
        assert_eq!(c.get(&b, t0 + Duration::from_secs(6)), None);
        assert_eq!(c.get(&d, t0), None);
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn the_cache_is_bounded_and_evicts_the_expired_then_the_soonest_to_expire() {
        let ttl = Duration::from_secs(60);
        let mut c = Cache::new(ttl, 3);
        let t0 = Instant::now();
        let s = Duration::from_secs;
        c.put(token_key("old"), Verdict::Allowed, t0);
        c.put(token_key("x"), Verdict::Allowed, t0 + s(10));
        c.put(token_key("y"), Verdict::Allowed, t0 + s(20));
        // full: the soonest to expire ("old") goes
        c.put(token_key("z"), Verdict::Allowed, t0 + s(30));
        assert_eq!(c.len(), 3);
        assert_eq!(c.get(&token_key("old"), t0 + s(30)), None);
        assert!(c.get(&token_key("x"), t0 + s(30)).is_some());
        // a renewal of a cached token evicts nothing
        c.put(token_key("z"), Verdict::Allowed, t0 + s(31));
        assert!(c.get(&token_key("x"), t0 + s(31)).is_some());
        // a flood of tokens never grows it past its capacity
        for i in 0..1000 {
            c.put(token_key(&format!("t{i}")), Verdict::Allowed, t0 + s(40));
        }
        assert_eq!(c.len(), 3);
        // expired entries go before any live one
        let mut c = Cache::new(ttl, 2);
        c.put(token_key("gone"), Verdict::Allowed, t0);
        c.put(token_key("live"), Verdict::Allowed, t0 + s(50));
        c.put(token_key("new"), Verdict::Allowed, t0 + s(70));
        assert!(c.get(&token_key("live"), t0 + s(70)).is_some());
        assert!(c.get(&token_key("new"), t0 + s(70)).is_some());
        assert_eq!(Cache::new(ttl, 0).capacity, 1);
    }

    #[test]
    fn the_default_is_kubernetes_and_none_is_spelled_none() {
        use clap::ValueEnum;
        assert_eq!(MetricsAuth::default(), MetricsAuth::Kubernetes);
        assert_eq!(MetricsAuth::from_str("none", false), Ok(MetricsAuth::Off));
        assert_eq!(
            MetricsAuth::from_str("kubernetes", false),
            Ok(MetricsAuth::Kubernetes)
        );
    }
}
