//! Dialing one etcd member: directly over TCP, or through a Kubernetes port-forward.
//!
//! Both paths build a tonic [`Channel`] for exactly one member and hand it to etcd-client with
//! `Client::from_channel` (feature `raw-channel`): etcd-client's own `connect` always builds a
//! load-balanced channel, which is wrong for per-member operations.

use std::time::Duration;

use etcd_client::Client;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use tonic::transport::{Channel, Endpoint, Uri};

use super::Cause;

/// HTTP/2 pings keep a silently dead peer (a killed pod behind a port-forward) from looking alive.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(10);

/// Adds `http://` to a bare `host:port`, as etcdctl does.
pub(super) fn normalize_url(url: &str) -> String {
    if url.contains("://") {
        url.to_owned()
    } else {
        format!("http://{url}")
    }
}

fn endpoint(uri: String, timeout: Duration) -> Result<Endpoint, Cause> {
    Ok(Endpoint::from_shared(uri)?
        .connect_timeout(timeout)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(KEEP_ALIVE_INTERVAL)
        .keep_alive_timeout(timeout))
}

async fn client(channel: Channel) -> Result<Client, Cause> {
    Ok(Client::from_channel(etcd_client::Channel::Tonic(channel), None).await?)
}

/// Connects eagerly so an unreachable member fails here (bounded by `timeout`) rather than at the
/// first RPC. The channel reconnects by itself after a later connection loss.
pub(super) async fn direct(url: &str, timeout: Duration) -> Result<Client, Cause> {
    let endpoint = endpoint(normalize_url(url), timeout)?;
    let channel = tokio::time::timeout(timeout, endpoint.connect())
        .await
        .map_err(|_| Cause::Timeout(timeout))??;
    client(channel).await
}

/// Every connection the channel opens (the first one, and each reconnect) is a fresh port-forward
/// to `pod`:`port` through the Kubernetes API server; no local socket is bound.
pub(super) async fn port_forward(
    pods: Api<Pod>,
    pod: &str,
    port: u16,
    timeout: Duration,
) -> Result<Client, Cause> {
    // The URI only names the peer in the HTTP/2 `:authority` header; the connector ignores it.
    let endpoint = endpoint(format!("http://{pod}:{port}"), timeout)?;
    let pod = pod.to_owned();
    let connector = tower::service_fn(move |_: Uri| {
        let pods = pods.clone();
        let pod = pod.clone();
        async move { open_port_forward(&pods, &pod, port).await }
    });
    let channel = tokio::time::timeout(timeout, endpoint.connect_with_connector(connector))
        .await
        .map_err(|_| Cause::Timeout(timeout))??;
    client(channel).await
}

async fn open_port_forward(
    pods: &Api<Pod>,
    pod: &str,
    port: u16,
) -> Result<TokioIo<tokio::io::DuplexStream>, Cause> {
    let mut forwarder = pods.portforward(pod, &[port]).await?;
    let stream = forwarder
        .take_stream(port)
        .ok_or_else(|| Cause::PortForwardStream(port))?;
    let errors = forwarder.take_error(port);
    let pod = pod.to_owned();
    // The forwarder's message loop runs in its own task; this one reports how it ended. The
    // connection itself learns about a failure from the stream closing.
    tokio::spawn(async move {
        if let Some(errors) = errors
            && let Some(message) = errors.await
        {
            tracing::debug!(pod = %pod, port, %message, "etcd port-forward reported an error");
        }
        if let Err(error) = forwarder.join().await {
            tracing::debug!(pod = %pod, port, %error, "etcd port-forward ended");
        }
    });
    Ok(TokioIo::new(stream))
}

/// How to open a plain connection to the member again, for what etcd serves only over HTTP
/// (`/version` carries the cluster version; the gRPC API of 3.4 has none).
#[derive(Clone)]
pub(super) enum Raw {
    /// `host:port`.
    Tcp(String),
    PortForward {
        pods: Box<Api<Pod>>,
        pod: String,
        port: u16,
    },
}

impl Raw {
    pub(super) fn from_url(url: &str) -> Raw {
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        Raw::Tcp(rest.trim_end_matches('/').to_owned())
    }
}

/// The largest HTTP answer read (`/version` is about 50 bytes).
const MAX_HTTP_ANSWER: u64 = 64 * 1024;

/// `GET path` over HTTP/1.0 on a fresh connection: the body of a 200 answer. etcd serves HTTP/1
/// and gRPC on the same client port.
pub(super) async fn http_get(raw: &Raw, path: &str, timeout: Duration) -> Result<Vec<u8>, Cause> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!("GET {path} HTTP/1.0\r\nHost: etcd\r\nAccept: application/json\r\n\r\n");
    let exchange = async {
        let mut answer = Vec::new();
        match raw {
            Raw::Tcp(addr) => {
                let mut s = tokio::net::TcpStream::connect(addr).await?;
                s.write_all(request.as_bytes()).await?;
                s.take(MAX_HTTP_ANSWER).read_to_end(&mut answer).await?;
            }
            Raw::PortForward { pods, pod, port } => {
                let mut s = open_port_forward(pods, pod, *port).await?.into_inner();
                s.write_all(request.as_bytes()).await?;
                s.take(MAX_HTTP_ANSWER).read_to_end(&mut answer).await?;
            }
        }
        Ok::<_, Cause>(answer)
    };
    let answer = tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| Cause::Timeout(timeout))??;
    http_body(&answer)
}

/// The body of a `200` HTTP/1 answer.
fn http_body(answer: &[u8]) -> Result<Vec<u8>, Cause> {
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or(Cause::Incomplete("an HTTP header"))?;
    let head = String::from_utf8_lossy(&answer[..split]);
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(Cause::Http(status.to_owned()));
    }
    Ok(answer[split + 4..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_answer_gives_its_body_only_when_it_is_a_200() {
        let ok =
            b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"etcdserver\":\"3.5.30\"}";
        assert_eq!(http_body(ok).unwrap(), b"{\"etcdserver\":\"3.5.30\"}");
        let missing = b"HTTP/1.0 404 Not Found\r\n\r\n404 page not found";
        assert!(matches!(http_body(missing), Err(Cause::Http(s)) if s.contains("404")));
        assert!(matches!(
            http_body(b"HTTP/1.0 200"),
            Err(Cause::Incomplete(_))
        ));
    }

    #[test]
    fn a_url_becomes_host_and_port() {
        assert!(
            matches!(Raw::from_url("http://10.0.0.1:2379"), Raw::Tcp(a) if a == "10.0.0.1:2379")
        );
        assert!(
            matches!(Raw::from_url("demo-0.demo:2379/"), Raw::Tcp(a) if a == "demo-0.demo:2379")
        );
    }
}
