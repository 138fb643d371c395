//! Reads of the Kubernetes API tried again when the API server fails them in passing.
//!
//! kube's own retry covers 429, 503 and 504, for every request. A loaded API server also answers
//! 500 (its etcd timed out) and 502, and drops connections it had accepted (a restart, an idle connection closed
//! under the request): one such answer used to end a `recover` that had waited minutes. Reads
//! (GET, HEAD: a watch too) are safe to send again, so they are, a few times with a growing
//! pause. Writes are not (a POST may have been carried out before the connection broke): the
//! engine's next pass observes again and decides anew. A connection that cannot be opened at all
//! (refused, timed out) is not retried: a cluster that is not there is said at once.

use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use tower::BoxError;
use tower::retry::Policy;

/// Tries after the first, at most.
pub const RETRIES: u32 = 4;
/// The pause before the first retry; it doubles each time (0.25 + 0.5 + 1 + 2 s in all).
pub const FIRST_PAUSE: Duration = Duration::from_millis(250);

/// How a request went, as far as retrying goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Answered(StatusCode),
    /// The connection was opened, then failed before an answer came.
    Broken,
    /// No connection could be opened.
    NoConnection,
}

/// Pure: the pause before retry number `retried + 1` of a `method` request that went `outcome`,
/// `None` when it is not tried again.
pub fn pause(method: &Method, outcome: Outcome, retried: u32) -> Option<Duration> {
    let read = *method == Method::GET || *method == Method::HEAD;
    let transient = match outcome {
        Outcome::Answered(s) => matches!(
            s,
            StatusCode::INTERNAL_SERVER_ERROR | StatusCode::BAD_GATEWAY
        ),
        Outcome::Broken => true,
        Outcome::NoConnection => false,
    };
    (read && transient && retried < RETRIES).then(|| FIRST_PAUSE * 2u32.pow(retried))
}

/// The tower policy around [`pause`], one per request (tower clones it for each).
#[derive(Clone, Default)]
pub struct Transient {
    retried: u32,
}

/// Whether `e` failed before any connection was made (hyper's connect errors, wherever they
/// sit in the chain of sources).
fn no_connection(e: &BoxError) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e.as_ref());
    while let Some(err) = cur {
        if let Some(h) = err.downcast_ref::<hyper_util::client::legacy::Error>() {
            return h.is_connect();
        }
        cur = err.source();
    }
    false
}

impl<Res> Policy<Request<Body>, Response<Res>, BoxError> for Transient {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        req: &mut Request<Body>,
        result: &mut Result<Response<Res>, BoxError>,
    ) -> Option<Self::Future> {
        let outcome = match result {
            Ok(r) => Outcome::Answered(r.status()),
            Err(e) if no_connection(e) => Outcome::NoConnection,
            Err(_) => Outcome::Broken,
        };
        let wait = pause(req.method(), outcome, self.retried)?;
        self.retried += 1;
        tracing::debug!(
            method = %req.method(),
            uri = %req.uri(),
            ?outcome,
            retry = self.retried,
            "the API server failed a read in passing; trying again"
        );
        Some(tokio::time::sleep(wait))
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        if !(req.method() == Method::GET || req.method() == Method::HEAD) {
            return None;
        }
        let mut copy = Request::builder()
            .method(req.method().clone())
            .uri(req.uri().clone())
            .version(req.version())
            .body(req.body().try_clone()?)
            .ok()?;
        *copy.headers_mut() = req.headers().clone();
        *copy.extensions_mut() = req.extensions().clone();
        Some(copy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_tried_again_on_a_passing_failure_with_growing_pauses() {
        let broken = Outcome::Broken;
        let pauses: Vec<_> = (0..=RETRIES)
            .map(|n| pause(&Method::GET, broken, n))
            .collect();
        assert_eq!(
            pauses,
            [250, 500, 1000, 2000]
                .map(|ms| Some(Duration::from_millis(ms)))
                .into_iter()
                .chain([None])
                .collect::<Vec<_>>()
        );
        for s in [500, 502] {
            let s = StatusCode::from_u16(s).unwrap();
            assert!(
                pause(&Method::GET, Outcome::Answered(s), 0).is_some(),
                "{s}"
            );
        }
    }

    #[test]
    fn writes_answers_and_absent_servers_are_not_tried_again() {
        for m in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            let s = Outcome::Answered(StatusCode::INTERNAL_SERVER_ERROR);
            assert_eq!(pause(&m, s, 0), None, "{m}");
            assert_eq!(pause(&m, Outcome::Broken, 0), None, "{m}");
        }
        for s in [200, 201, 400, 401, 403, 404, 409, 422, 429, 503, 504] {
            let s = StatusCode::from_u16(s).unwrap();
            // 429, 503 and 504 are kube's own retry's, which honours Retry-After.
            assert_eq!(pause(&Method::GET, Outcome::Answered(s), 0), None, "{s}");
        }
        assert_eq!(pause(&Method::GET, Outcome::NoConnection, 0), None);
    }
}
