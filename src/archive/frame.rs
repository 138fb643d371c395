//! The frames of a pvc:// `put`: how a byte stream crosses a channel that cannot be closed to
//! mark its end (the exec stdin of older API servers, see `backup::pvc`). Pure: no cluster, no
//! file; any `AsyncRead`/`AsyncWrite` pair.
//!
//! A frame is `[u32 BE length][bytes]`; a zero-length frame ends the data and is followed by the
//! total byte count (u64 BE) and the sha256 of all bytes (64 hex digits). The receiver's reader
//! ends only once that trailer arrived and matches; a cut stream or a mismatch is an error, never
//! a short file. Memory stays bounded: one frame at a time.

use std::io;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::archive::codec::Sha256;

/// Largest data frame of the put protocol.
pub const MAX_FRAME: usize = 1024 * 1024;
/// Bytes read from the body per frame on the sending side.
pub const SEND_CHUNK: usize = 256 * 1024;

/// The header of a data frame of `len` bytes (1..=MAX_FRAME).
pub fn frame_header(len: usize) -> [u8; 4] {
    (len as u32).to_be_bytes()
}

/// The end of the data: a zero-length frame, the byte count and the sha256 (hex).
pub fn end_frame(total: u64, sha256_hex: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 8 + 64);
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(sha256_hex.as_bytes());
    out
}

/// The data carried by a framed stream, as a reader: it ends (EOF) only after the end frame
/// arrived and the byte count and sha256 match; every other ending is an error.
pub fn unframe<R>(input: R) -> impl AsyncRead + Unpin + Send
where
    R: AsyncRead + Unpin + Send + 'static,
{
    struct State<R> {
        input: R,
        sha: Sha256,
    }
    let bad = |m: String| io::Error::new(io::ErrorKind::InvalidData, m);
    let stream = futures::stream::try_unfold(
        State {
            input,
            sha: Sha256::default(),
        },
        // Returning None ends the stream: the reader never asks again after the end frame.
        move |mut st| async move {
            let mut head = [0u8; 4];
            read_exact_or(&mut st.input, &mut head, "before the end of the data").await?;
            let len = u32::from_be_bytes(head) as usize;
            if len == 0 {
                let mut count = [0u8; 8];
                read_exact_or(&mut st.input, &mut count, "inside the end frame").await?;
                let mut sum = [0u8; 64];
                read_exact_or(&mut st.input, &mut sum, "inside the end frame").await?;
                let total = u64::from_be_bytes(count);
                let (got, sha) = st.sha.finish();
                if got != total {
                    return Err(bad(format!(
                        "received {got} bytes, the sender sent {total}"
                    )));
                }
                if !sha.as_bytes().eq_ignore_ascii_case(&sum) {
                    return Err(bad(format!(
                        "the received bytes hash to sha256 {sha}, the sender's hash to {}",
                        String::from_utf8_lossy(&sum)
                    )));
                }
                return Ok(None);
            }
            if len > MAX_FRAME {
                return Err(bad(format!(
                    "a frame of {len} bytes is larger than {MAX_FRAME}: not a kubectl-etcd put stream"
                )));
            }
            let mut buf = BytesMut::zeroed(len);
            read_exact_or(&mut st.input, &mut buf, "inside a frame").await?;
            st.sha.update(&buf);
            Ok(Some((buf.freeze(), st)))
        },
    );
    tokio_util::io::StreamReader::new(Box::pin(stream))
}

async fn read_exact_or<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut [u8],
    when: &str,
) -> io::Result<()> {
    r.read_exact(buf).await.map(|_| ()).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the data stream was cut {when} (the sender stopped or the connection broke)"
                ),
            )
        } else {
            e
        }
    })
}

/// Writes `body` as frames to `out`, then the end frame. Returns the byte count and sha256.
pub async fn frame<R, W>(
    mut body: R,
    out: &mut W,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> io::Result<(u64, String)>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut sha = Sha256::default();
    let mut buf = vec![0u8; SEND_CHUNK];
    let mut sent = 0u64;
    loop {
        let n = body.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        out.write_all(&frame_header(n)).await?;
        out.write_all(&buf[..n]).await?;
        sha.update(&buf[..n]);
        sent += n as u64;
        progress(sent);
    }
    let (total, hex) = sha.finish();
    out.write_all(&end_frame(total, &hex)).await?;
    out.flush().await?;
    Ok((total, hex))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `data` as a whole framed stream.
    pub(crate) async fn framed(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        frame(data, &mut out, &|_| {}).await.unwrap();
        out
    }

    async fn unframed(input: Vec<u8>) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        unframe(std::io::Cursor::new(input))
            .read_to_end(&mut out)
            .await
            .map(|_| out)
    }

    /// `n` bytes of a pattern that is no run of one value.
    pub(crate) fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[tokio::test]
    async fn frames_carry_any_size_and_end_only_with_a_matching_trailer() {
        for n in [0, 1, SEND_CHUNK - 1, SEND_CHUNK, 3 * SEND_CHUNK + 7] {
            let d = data(n);
            assert_eq!(unframed(framed(&d).await).await.unwrap(), d, "{n} bytes");
        }
    }

    #[tokio::test]
    async fn a_cut_stream_is_an_error_not_a_short_file() {
        let whole = framed(&data(SEND_CHUNK + 10)).await;
        for cut in [0, 3, 100, SEND_CHUNK + 4, whole.len() - 1] {
            let e = unframed(whole[..cut].to_vec()).await.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "cut at {cut}");
        }
    }

    #[tokio::test]
    async fn a_wrong_count_or_hash_in_the_trailer_is_refused() {
        let d = data(1000);
        let mut body = frame_header(d.len()).to_vec();
        body.extend_from_slice(&d);
        let mut sha = Sha256::default();
        sha.update(&d);
        let (n, hex) = sha.finish();
        let mut wrong_count = body.clone();
        wrong_count.extend(end_frame(n + 1, &hex));
        assert!(
            unframed(wrong_count)
                .await
                .unwrap_err()
                .to_string()
                .contains("sent 1001")
        );
        let mut wrong_sha = body.clone();
        wrong_sha.extend(end_frame(n, &"0".repeat(64)));
        assert!(
            unframed(wrong_sha)
                .await
                .unwrap_err()
                .to_string()
                .contains("sha256")
        );
        let mut huge = frame_header(MAX_FRAME + 1).to_vec();
        huge.extend_from_slice(&[0; 16]);
        assert!(
            unframed(huge)
                .await
                .unwrap_err()
                .to_string()
                .contains("larger than")
        );
    }
}
