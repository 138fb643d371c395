//! The HTTP server (hyper) of `/metrics`, `/healthz` and `/readyz`. It holds the metrics and
//! nothing else: no Kubernetes client, so a scrape reads memory and writes nothing anywhere
//! (`the_server_holds_no_client` keeps it so).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{CONNECTION, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use super::Metrics;

const TEXT: &str = "text/plain; charset=utf-8";
pub(super) const EXPOSITION: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The answer to `method path`.
pub(super) fn respond(metrics: &Metrics, method: &Method, path: &str) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, content_type: &'static str, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        // One request per connection is all Prometheus and the kubelet need.
        r.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
        r
    };
    if method != Method::GET && method != Method::HEAD {
        return reply(StatusCode::METHOD_NOT_ALLOWED, TEXT, "only GET\n".into());
    }
    match path {
        "/metrics" => reply(StatusCode::OK, EXPOSITION, metrics.render()),
        "/healthz" => reply(StatusCode::OK, TEXT, "ok\n".into()),
        "/readyz" if metrics.ready() => reply(StatusCode::OK, TEXT, "ok\n".into()),
        "/readyz" => reply(
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            "leader election has not reached the API server yet\n".into(),
        ),
        _ => reply(StatusCode::NOT_FOUND, TEXT, "not found\n".into()),
    }
}

/// Binds `addr` (an error here stops the operator: a port clash is a configuration mistake).
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// How long a client may take to send its request head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves `/metrics`, `/healthz` and `/readyz` until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>) {
    loop {
        let conn = match listener.accept().await {
            Ok((conn, _)) => conn,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!("metrics listener: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let response = respond(&metrics, req.method(), req.uri().path());
                async move { Ok::<_, Infallible>(response) }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(conn), service)
                .await;
            if let Err(e) = served {
                tracing::debug!("metrics request failed: {e}");
            }
        });
    }
}
