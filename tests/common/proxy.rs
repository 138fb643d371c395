//! A TCP proxy in front of the S3 server that cuts one connection midway, once (or refuses the
//! first downloads), and forwards everything else faithfully. Shared by the S3 store's live tests (uploads and downloads cut)
//! and the restore e2e (the restore pod downloads through it).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// Where the one cut falls.
#[derive(Clone, Copy)]
pub enum Cut {
    /// Once this many bytes went to the server, counted over every connection (mid-upload).
    Requests(u64),
    /// In the first connection whose answers reach this many bytes (mid-download).
    Answers(u64),
    /// Each of the first this many connections that ask for an object (`GET`), before an answer:
    /// a store unreachable for a while (`HEAD`s and listings pass).
    Gets(u32),
}

/// Listens on `listen` (port 0: any) and forwards to `upstream` (host:port). Returns its
/// address and the number of cuts made (0 or 1; for `Gets`, the downloads refused).
pub async fn cutting_proxy(
    listen: &str,
    upstream: String,
    cut: Cut,
) -> (SocketAddr, Arc<AtomicU32>) {
    let listener = tokio::net::TcpListener::bind(listen).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cuts = Arc::new(AtomicU32::new(0));
    let requested = Arc::new(AtomicU64::new(0));
    let cuts_out = cuts.clone();
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            let server = tokio::net::TcpStream::connect(&upstream).await.unwrap();
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            let answered = Arc::new(AtomicU64::new(0));
            let (up, down) = match cut {
                Cut::Requests(n) => (Some((requested.clone(), n)), None),
                Cut::Answers(n) => (None, Some((answered, n))),
                Cut::Gets(_) => (None, None),
            };
            let cuts = cuts.clone();
            tokio::spawn(async move {
                let (mut cr, mut sw) = (cr, sw);
                if let Cut::Gets(n) = cut {
                    let mut first = vec![0u8; 64 * 1024];
                    let got = cr.read(&mut first).await.unwrap_or(0);
                    if first[..got].starts_with(b"GET ") {
                        if cuts.fetch_add(1, Ordering::SeqCst) < n {
                            return; // dropped before any answer
                        }
                        cuts.fetch_sub(1, Ordering::SeqCst);
                    }
                    if sw.write_all(&first[..got]).await.is_err() {
                        return;
                    }
                }
                tokio::select! {
                    () = pump(cr, sw, up, &cuts) => {},
                    () = pump(sr, cw, down, &cuts) => {},
                }
            });
        }
    });
    (addr, cuts_out)
}

/// Copies `from` to `to`; with a `(counter, n)`, the first pump whose counter reaches `n` writes
/// up to that byte and drops the connection.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    limit: Option<(Arc<AtomicU64>, u64)>,
    cuts: &AtomicU32,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = from.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        if let Some((counter, cut_at)) = &limit {
            let before = counter.fetch_add(n as u64, Ordering::SeqCst);
            if before + n as u64 >= *cut_at && cuts.fetch_add(1, Ordering::SeqCst) == 0 {
                let keep = usize::try_from(cut_at.saturating_sub(before)).unwrap();
                let _ = to.write_all(&buf[..keep]).await;
                return;
            }
            if before + n as u64 >= *cut_at {
                cuts.fetch_sub(1, Ordering::SeqCst);
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// Targets a tunnelling proxy connected to (host:port), in order.
pub type Tunnelled = Arc<std::sync::Mutex<Vec<String>>>;

/// What a proxy's handshake read from its client: where to connect, and the answers for a
/// tunnel that opened and one that did not.
struct Opened {
    target: String,
    ok: &'static [u8],
    refused: &'static [u8],
}

/// A tunnelling proxy on `listen` (port 0: any): `handshake` reads each client's request, then
/// the bytes go both ways; every target connected to is recorded.
async fn tunnelling<H, F>(listen: &str, handshake: H) -> (SocketAddr, Tunnelled)
where
    H: Fn(tokio::net::TcpStream) -> F + Send + Sync + Copy + 'static,
    F: std::future::Future<Output = Option<(tokio::net::TcpStream, Opened)>> + Send,
{
    let listener = tokio::net::TcpListener::bind(listen).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let targets: Tunnelled = Arc::default();
    let seen = targets.clone();
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            let seen = seen.clone();
            tokio::spawn(async move {
                let Some((mut client, opened)) = handshake(client).await else {
                    return;
                };
                let Ok(mut upstream) = tokio::net::TcpStream::connect(&opened.target).await else {
                    let _ = client.write_all(opened.refused).await;
                    return;
                };
                seen.lock().unwrap().push(opened.target);
                if client.write_all(opened.ok).await.is_ok() {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                }
            });
        }
    });
    (addr, targets)
}

/// An HTTP proxy for HTTPS (`CONNECT host:port`, then the bytes both ways), as an egress proxy
/// of a cluster.
#[allow(dead_code)] // s3_live includes this file too, and has no use for it
pub async fn connect_proxy(listen: &str) -> (SocketAddr, Tunnelled) {
    tunnelling(listen, |mut client| async move {
        // The request head, up to its blank line (a CONNECT has no body).
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
            client.read_exact(&mut byte).await.ok()?;
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head).to_string();
        let mut words = head.split_whitespace();
        let (Some("CONNECT"), Some(target)) = (words.next(), words.next()) else {
            let _ = client
                .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                .await;
            return None;
        };
        let opened = Opened {
            target: target.to_string(),
            ok: b"HTTP/1.1 200 Connection established\r\n\r\n",
            refused: b"HTTP/1.1 502 Bad Gateway\r\n\r\n",
        };
        Some((client, opened))
    })
    .await
}

/// A SOCKS5 proxy (no authentication, CONNECT only), as `ssh -D` gives one to a bastion.
#[allow(dead_code)] // s3_live includes this file too, and has no use for it
pub async fn socks5_proxy(listen: &str) -> (SocketAddr, Tunnelled) {
    tunnelling(listen, |mut client| async move {
        // Greeting: version 5, the methods offered; answer "no authentication".
        let mut head = [0u8; 2];
        client.read_exact(&mut head).await.ok()?;
        if head[0] != 5 {
            return None;
        }
        let mut methods = vec![0u8; head[1] as usize];
        client.read_exact(&mut methods).await.ok()?;
        client.write_all(&[5, 0]).await.ok()?;
        // Request: 5, CONNECT (1), 0, address type, address, port.
        let mut req = [0u8; 4];
        client.read_exact(&mut req).await.ok()?;
        if req[1] != 1 {
            return None;
        }
        let host = match req[3] {
            1 => {
                let mut ip = [0u8; 4];
                client.read_exact(&mut ip).await.ok()?;
                std::net::Ipv4Addr::from(ip).to_string()
            }
            3 => {
                let mut len = [0u8; 1];
                client.read_exact(&mut len).await.ok()?;
                let mut name = vec![0u8; len[0] as usize];
                client.read_exact(&mut name).await.ok()?;
                String::from_utf8_lossy(&name).to_string()
            }
            _ => return None,
        };
        let mut port = [0u8; 2];
        client.read_exact(&mut port).await.ok()?;
        let opened = Opened {
            target: format!("{host}:{}", u16::from_be_bytes(port)),
            ok: &[5, 0, 0, 1, 0, 0, 0, 0, 0, 0],
            refused: &[5, 5, 0, 1, 0, 0, 0, 0, 0, 0],
        };
        Some((client, opened))
    })
    .await
}
