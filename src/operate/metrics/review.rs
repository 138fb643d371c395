//! The reviews of a `/metrics` request's token (`auth`'s rules; act): a TokenReview, then a
//! SubjectAccessReview of its user getting `/metrics`, with the verdict cached per token. The one
//! file of the metrics server that reaches the API server, and only for a token not seen within
//! the cache's lifetime; `/healthz` and `/readyz` never do.

use std::sync::Mutex;
use std::time::Instant;

use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use kube::api::{Api, PostParams};

use super::auth::{self, Cache, MetricsAuth, Verdict};

/// What guards `/metrics` (`operate --metrics-auth`).
pub enum Guard {
    /// Anyone who reaches the port.
    Open,
    Reviewed(Reviewer),
}

impl Guard {
    /// The guard of `mode` for the operator of `pods` (whose reader ClusterRole a refusal names;
    /// `None`, outside a pod: the default install's), reviewing with `client`'s identity.
    pub fn new(
        mode: MetricsAuth,
        client: &kube::Client,
        pods: Option<&crate::model::OperatorPods>,
    ) -> Guard {
        let operator = pods.map_or(crate::keys::install::NAME, |p| &p.name);
        match mode {
            MetricsAuth::Off => Guard::Open,
            MetricsAuth::Kubernetes => Guard::Reviewed(Reviewer {
                client: client.clone(),
                reader: crate::keys::install::metrics_reader_role(operator),
                cache: Mutex::new(Cache::default()),
            }),
        }
    }

    /// The verdict on a request to `/metrics` with `authorization` (the header's value).
    pub async fn check(&self, authorization: Option<&[u8]>) -> Verdict {
        match self {
            Guard::Open => Verdict::Allowed,
            Guard::Reviewed(r) => r.check(authorization).await,
        }
    }

    /// The ClusterRole a refusal names.
    pub fn reader(&self) -> &str {
        match self {
            Guard::Open => "",
            Guard::Reviewed(r) => &r.reader,
        }
    }
}

pub struct Reviewer {
    client: kube::Client,
    reader: String,
    cache: Mutex<Cache>,
}

impl Reviewer {
    async fn check(&self, authorization: Option<&[u8]>) -> Verdict {
        let token = match auth::bearer_token(authorization) {
            Ok(t) => t,
            Err(refused) => return refused,
        };
        let key = auth::token_key(token);
        let cached = self
            .cache
            .lock()
            .ok()
            .and_then(|c| c.get(&key, Instant::now()));
        if let Some(verdict) = cached {
            return verdict;
        }
        let verdict = self.review(token).await;
        match &verdict {
            Verdict::Unavailable(why) => tracing::warn!("/metrics refused (503): {why}"),
            Verdict::Allowed => {}
            refused => tracing::debug!("/metrics refused: {}", refused.message(&self.reader)),
        }
        if let Ok(mut cache) = self.cache.lock() {
            cache.put(key, verdict.clone(), Instant::now());
        }
        verdict
    }

    async fn review(&self, token: &str) -> Verdict {
        let pp = PostParams::default();
        let review = TokenReview {
            spec: auth::token_review(token),
            ..TokenReview::default()
        };
        let answer = match Api::<TokenReview>::all(self.client.clone())
            .create(&pp, &review)
            .await
        {
            Ok(a) => a,
            Err(e) => return unavailable("TokenReview", &e),
        };
        let user = match auth::authenticated(answer.status.as_ref()) {
            Ok(u) => u,
            Err(refused) => return refused,
        };
        let access = SubjectAccessReview {
            spec: auth::access_review(&user),
            ..SubjectAccessReview::default()
        };
        match Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&pp, &access)
            .await
        {
            Ok(a) => auth::authorized(&user, a.status.as_ref()),
            Err(e) => unavailable("SubjectAccessReview", &e),
        }
    }
}

/// A review the API server did not answer: the fix is usually the operator's ClusterRole
/// (`create` on tokenreviews and subjectaccessreviews).
fn unavailable(kind: &str, e: &kube::Error) -> Verdict {
    Verdict::Unavailable(format!(
        "creating a {kind} failed ({e}); the operator's ClusterRole grants create on \
         tokenreviews and subjectaccessreviews (kubectl etcd manifests)"
    ))
}
