//! The HTTP server (hyper) of `/metrics`, `/healthz` and `/readyz`. It holds the metrics and
//! nothing else: no Kubernetes client, so a scrape reads memory and writes nothing anywhere
//! (`the_server_holds_no_client` keeps it so).

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
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
///
/// `[::]` (the default) means every address of both families, so that the kubelet's probes and
/// Prometheus reach the operator on IPv6-only, dual-stack and IPv4-only clusters alike: one
/// dual-stack socket where the kernel allows it (`net.ipv6.bindv6only=0`, Linux's default), a
/// second socket for IPv4 where IPv6 sockets take IPv6 alone, and `0.0.0.0` alone on a kernel
/// without IPv6. Any other address is bound as given (`0.0.0.0:8080` is IPv4 only).
pub async fn bind(addr: SocketAddr) -> std::io::Result<Vec<TcpListener>> {
    let ipv4_any = SocketAddr::from((Ipv4Addr::UNSPECIFIED, addr.port()));
    if addr.ip() != IpAddr::V6(Ipv6Addr::UNSPECIFIED) {
        return Ok(vec![TcpListener::bind(addr).await?]);
    }
    match TcpListener::bind(addr).await {
        // Refused with "address in use" where the first socket already takes IPv4.
        Ok(v6) => match TcpListener::bind((Ipv4Addr::UNSPECIFIED, v6.local_addr()?.port())).await {
            Ok(v4) => Ok(vec![v6, v4]),
            Err(_) => Ok(vec![v6]),
        },
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(e),
        // No IPv6 in this kernel (EAFNOSUPPORT, EADDRNOTAVAIL): IPv4 is all there is.
        Err(e) => TcpListener::bind(ipv4_any)
            .await
            .map_err(|_| e)
            .map(|l| vec![l]),
    }
}

/// How long a client may take to send its request head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves `/metrics`, `/healthz` and `/readyz` on every listener until the task is dropped.
pub async fn serve(listeners: Vec<TcpListener>, metrics: Arc<Metrics>) {
    loop {
        let accepted = futures::future::select_all(listeners.iter().map(|l| Box::pin(l.accept())));
        let conn = match accepted.await.0 {
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
