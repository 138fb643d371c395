//! The HTTP server (hyper) of `/metrics`, `/healthz` and `/readyz`. It holds the metrics and the
//! guard of `/metrics` (`review::Guard`), nothing else: no Kubernetes client of its own, so a
//! scrape reads memory and writes nothing anywhere (`the_server_holds_no_client` keeps it so);
//! the guard's reviews are the only requests a scrape may cause.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{AUTHORIZATION, CONNECTION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use super::Metrics;
use super::auth::{METRICS_PATH, Verdict};
use super::review::Guard;

const TEXT: &str = "text/plain; charset=utf-8";
pub(super) const EXPOSITION: &str = "text/plain; version=0.0.4; charset=utf-8";

fn reply(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    // One request per connection is all Prometheus and the kubelet need.
    r.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    r
}

/// Whether the request `method path` must pass the guard first: a read of `/metrics` (other
/// methods are refused with 405 anyway, the probes stay open for the kubelet).
pub(super) fn guarded(method: &Method, path: &str) -> bool {
    path == METRICS_PATH && (method == Method::GET || method == Method::HEAD)
}

/// The answer to a request the guard refused (`reader`: the ClusterRole that would grant it).
pub(super) fn refuse(verdict: &Verdict, reader: &str) -> Response<Full<Bytes>> {
    let status =
        StatusCode::from_u16(verdict.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = reply(status, TEXT, verdict.message(reader));
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"kubectl-etcd\""),
        );
    }
    r
}

/// The answer to `method path` (once the guard let a read of `/metrics` through).
pub(super) fn respond(metrics: &Metrics, method: &Method, path: &str) -> Response<Full<Bytes>> {
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

/// Binds `addr` (`bind`) and serves there (`serve`) in a task of its own; the addresses bound.
pub async fn start(
    addr: SocketAddr,
    guard: Guard,
    metrics: Arc<Metrics>,
) -> std::io::Result<(tokio::task::JoinHandle<()>, String)> {
    let listeners = bind(addr).await?;
    let bound: Vec<String> = listeners
        .iter()
        .filter_map(|l| l.local_addr().ok().map(|a| a.to_string()))
        .collect();
    let server = tokio::spawn(serve(listeners, Arc::new(guard), metrics));
    Ok((server, bound.join(",")))
}

/// Serves `/metrics` (behind `guard`), `/healthz` and `/readyz` on every listener until the
/// task is dropped.
pub async fn serve(listeners: Vec<TcpListener>, guard: Arc<Guard>, metrics: Arc<Metrics>) {
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
        let (metrics, guard) = (metrics.clone(), guard.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let (metrics, guard) = (metrics.clone(), guard.clone());
                async move {
                    if guarded(req.method(), req.uri().path()) {
                        let header = req.headers().get(AUTHORIZATION).map(|h| h.as_bytes());
                        let verdict = guard.check(header).await;
                        if verdict != Verdict::Allowed {
                            return Ok::<_, Infallible>(refuse(&verdict, guard.reader()));
                        }
                    }
                    Ok(respond(&metrics, req.method(), req.uri().path()))
                }
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
