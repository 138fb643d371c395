//! Dialing one etcd member: directly over TCP, or through a Kubernetes port-forward.
//!
//! Both paths build a tonic [`Channel`] for exactly one member and hand it to etcd-client with
//! `Client::from_channel` (feature `raw-channel`): etcd-client's own `connect` always builds a
//! load-balanced channel, which is wrong for per-member operations.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::Client;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tonic::transport::{Channel, Endpoint, Uri};

use super::Cause;

/// TLS to one member (`spec.tls`): the client certificate the engine presents, the CA the
/// member's certificate must chain to, and the name it must carry (the member's DNS name,
/// whatever address is dialed: a pod IP, or a port-forward).
#[derive(Clone)]
pub struct TlsDial {
    /// ALPN `h2`, for gRPC.
    grpc: Arc<rustls::ClientConfig>,
    /// No ALPN, for HTTP/1 (`/version`).
    http1: Arc<rustls::ClientConfig>,
    server_name: ServerName<'static>,
}

impl std::fmt::Debug for TlsDial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsDial")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl TlsDial {
    /// From PEM: the CA bundle, the client certificate chain and its private key.
    pub fn new(ca: &[u8], cert: &[u8], key: &[u8], server_name: &str) -> Result<TlsDial, Cause> {
        let bad = |what: &str, e: &dyn std::fmt::Display| Cause::Tls(format!("{what}: {e}"));
        let mut roots = rustls::RootCertStore::empty();
        let cas: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(ca)
            .collect::<Result<_, _>>()
            .map_err(|e| bad("ca.crt is not PEM", &e))?;
        if cas.is_empty() {
            return Err(Cause::Tls("ca.crt holds no certificate".into()));
        }
        for c in cas {
            roots
                .add(c)
                .map_err(|e| bad("ca.crt holds an unusable CA certificate", &e))?;
        }
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
            .collect::<Result<_, _>>()
            .map_err(|e| bad("tls.crt is not PEM", &e))?;
        if chain.is_empty() {
            return Err(Cause::Tls("tls.crt holds no certificate".into()));
        }
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| bad("tls.key", &e))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let grpc = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| bad("protocol versions", &e))?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .map_err(|e| bad("tls.crt and tls.key do not make a client certificate", &e))?;
        let mut http1 = grpc.clone();
        http1.alpn_protocols.clear();
        let mut grpc = grpc;
        grpc.alpn_protocols = vec![b"h2".to_vec()];
        let server_name = ServerName::try_from(server_name.to_owned())
            .map_err(|e| bad("the member's name", &e))?;
        Ok(TlsDial {
            grpc: Arc::new(grpc),
            http1: Arc::new(http1),
            server_name,
        })
    }

    async fn wrap<S>(&self, stream: S, http1: bool) -> Result<BoxIo, Cause>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let config = if http1 { &self.http1 } else { &self.grpc };
        let tls = tokio_rustls::TlsConnector::from(config.clone())
            .connect(self.server_name.clone(), stream)
            .await
            .map_err(|e| match e.kind() {
                // rustls' own verdict (a certificate refused either way): not transient.
                std::io::ErrorKind::InvalidData => {
                    Cause::Tls(format!("handshake with {}: {e}", self.server_name.to_str()))
                }
                _ => Cause::Io(e),
            })?;
        Ok(Box::new(tls))
    }
}

/// A byte stream to a member: TCP or a port-forward, with or without TLS.
pub(super) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}
pub(super) type BoxIo = Box<dyn Io>;

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

/// The auth token the channel adds to every call that carries none (`EtcdClient::authenticate`):
/// a token one member issued serves another, which is how a learner (it answers no
/// `Authenticate` itself) is asked anything while etcd's authentication is on.
pub(super) type TokenSlot = Arc<std::sync::RwLock<Option<http::HeaderValue>>>;

/// The metadata key etcd reads the auth token from.
const TOKEN_HEADER: &str = "token";

async fn client(channel: Channel) -> Result<(Client, TokenSlot), Cause> {
    use tower::ServiceExt;
    let token: TokenSlot = Arc::default();
    let slot = token.clone();
    let with_token = tower::ServiceBuilder::new()
        .map_request(move |mut req: http::Request<tonic::body::Body>| {
            if let Some(t) = slot.read().ok().and_then(|t| t.clone()) {
                req.headers_mut().entry(TOKEN_HEADER).or_insert(t);
            }
            req
        })
        .service(channel)
        .map_err(|e| -> tower::BoxError { Box::new(e) });
    let channel = etcd_client::Channel::Custom(tower::util::BoxCloneSyncService::new(with_token));
    Ok((Client::from_channel(channel, None).await?, token))
}

/// Connects eagerly so an unreachable member fails here (bounded by `timeout`) rather than at the
/// first RPC. The channel reconnects by itself after a later connection loss.
pub(super) async fn direct(
    url: &str,
    timeout: Duration,
    tls: Option<&TlsDial>,
) -> Result<(Client, TokenSlot), Cause> {
    let Some(tls) = tls.cloned() else {
        let endpoint = endpoint(normalize_url(url), timeout)?;
        let channel = tokio::time::timeout(timeout, endpoint.connect())
            .await
            .map_err(|_| Cause::Timeout(timeout))??;
        return client(channel).await;
    };
    // TLS is ours (rustls, ring); tonic sees a plain http URI over the stream we hand it.
    let addr = host_port(url);
    let endpoint = endpoint(format!("http://{addr}"), timeout)?;
    let connector = tower::service_fn(move |_: Uri| {
        let (tls, addr) = (tls.clone(), addr.clone());
        async move {
            let tcp = tokio::net::TcpStream::connect(&addr).await?;
            tcp.set_nodelay(true)?;
            Ok::<_, Cause>(TokioIo::new(tls.wrap(tcp, false).await?))
        }
    });
    let channel = tokio::time::timeout(timeout, endpoint.connect_with_connector(connector))
        .await
        .map_err(|_| Cause::Timeout(timeout))??;
    client(channel).await
}

/// `https://host:2379/` → `host:2379`.
fn host_port(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.trim_end_matches('/').to_owned()
}

/// Every connection the channel opens (the first one, and each reconnect) is a fresh port-forward
/// to `pod`:`port` through the Kubernetes API server; no local socket is bound.
pub(super) async fn port_forward(
    pods: Api<Pod>,
    pod: &str,
    port: u16,
    timeout: Duration,
    tls: Option<TlsDial>,
) -> Result<(Client, TokenSlot), Cause> {
    // The URI only names the peer in the HTTP/2 `:authority` header; the connector ignores it.
    let endpoint = endpoint(format!("http://{pod}:{port}"), timeout)?;
    let pod = pod.to_owned();
    let connector = tower::service_fn(move |_: Uri| {
        let pods = pods.clone();
        let pod = pod.clone();
        let tls = tls.clone();
        async move {
            let stream = open_port_forward(&pods, &pod, port).await?.into_inner();
            let io: BoxIo = match &tls {
                Some(tls) => tls.wrap(stream, false).await?,
                None => Box::new(stream),
            };
            Ok::<_, Cause>(TokioIo::new(io))
        }
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
    let mut forwarder = crate::phase::timed(
        crate::phase!("port_forward", pod),
        pods.portforward(pod, &[port]),
    )
    .await?;
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
pub(super) struct Raw {
    pub(super) path: RawPath,
    pub(super) tls: Option<TlsDial>,
}

#[derive(Clone)]
pub(super) enum RawPath {
    /// `host:port`.
    Tcp(String),
    PortForward {
        pods: Box<Api<Pod>>,
        pod: String,
        port: u16,
    },
}

impl Raw {
    pub(super) fn from_url(url: &str, tls: Option<TlsDial>) -> Raw {
        Raw {
            path: RawPath::Tcp(host_port(url)),
            tls,
        }
    }
}

/// The largest HTTP answer read of `/version` (about 50 bytes).
pub(super) const MAX_VERSION_ANSWER: u64 = 64 * 1024;

/// The largest HTTP answer read of `/metrics` (about 200 KiB on a member of three).
pub(super) const MAX_METRICS_ANSWER: u64 = 8 << 20;

/// `GET path` over HTTP/1.0 on a fresh connection: the body of a 200 answer, read up to `max`
/// bytes. etcd serves HTTP/1 and gRPC on the same client port.
pub(super) async fn http_get(
    raw: &Raw,
    path: &str,
    max: u64,
    timeout: Duration,
) -> Result<Vec<u8>, Cause> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!("GET {path} HTTP/1.0\r\nHost: etcd\r\n\r\n");
    let exchange = async {
        let mut answer = Vec::new();
        let stream: BoxIo = match &raw.path {
            RawPath::Tcp(addr) => Box::new(tokio::net::TcpStream::connect(addr).await?),
            RawPath::PortForward { pods, pod, port } => {
                Box::new(open_port_forward(pods, pod, *port).await?.into_inner())
            }
        };
        let mut s = match &raw.tls {
            Some(tls) => tls.wrap(stream, true).await?,
            None => stream,
        };
        s.write_all(request.as_bytes()).await?;
        // Read up to the end of the body its Content-Length announces, not up to the close: a
        // port-forward passes the close on about a second after etcd closed.
        let mut chunk = [0u8; 16384];
        while !http_complete(&answer) && (answer.len() as u64) < max {
            match s.read(&mut chunk).await {
                Ok(0) => break,
                Ok(n) => answer.extend_from_slice(&chunk[..n]),
                // A TLS peer may end without close_notify once it answered (HTTP/1.0): what
                // was read counts.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !answer.is_empty() => {
                    break;
                }
                Err(e) => return Err(e.into()),
            }
        }
        if answer.len() as u64 >= max && !http_complete(&answer) {
            return Err(Cause::Incomplete("its end within the bytes it may take"));
        }
        Ok::<_, Cause>(answer)
    };
    let answer = tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| Cause::Timeout(timeout))??;
    http_body(&answer)
}

/// Whether `answer` holds a whole HTTP/1 answer: its header and as many body bytes as its
/// `Content-Length` says (without one, the answer ends with the connection).
fn http_complete(answer: &[u8]) -> bool {
    let Some(split) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&answer[..split]);
    let length = head.lines().skip(1).find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse::<usize>().ok())?
    });
    length.is_some_and(|n| answer.len() >= split + 4 + n)
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
    fn an_http_answer_is_whole_once_its_content_length_arrived() {
        let head =
            b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\ncontent-length: 5\r\n\r\n";
        assert!(!http_complete(&head[..20]));
        let mut answer = head.to_vec();
        assert!(!http_complete(&answer));
        answer.extend_from_slice(b"{\"a\"");
        assert!(!http_complete(&answer));
        answer.push(b'}');
        assert!(http_complete(&answer));
        // Without a length, only the close ends the answer.
        assert!(!http_complete(b"HTTP/1.0 200 OK\r\n\r\n{}"));
    }

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
            matches!(Raw::from_url("http://10.0.0.1:2379", None).path, RawPath::Tcp(a) if a == "10.0.0.1:2379")
        );
        assert!(
            matches!(Raw::from_url("demo-0.demo:2379/", None).path, RawPath::Tcp(a) if a == "demo-0.demo:2379")
        );
        assert_eq!(
            host_port("https://demo-0.demo.ns.svc:2379"),
            "demo-0.demo.ns.svc:2379"
        );
    }
}
