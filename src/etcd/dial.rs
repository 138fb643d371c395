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
