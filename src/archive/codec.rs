//! The bytes of a backup on their way to and from storage: compression, the sha256 of what is stored,
//! and etcd's own snapshot trailer check.
//!
//! Everything here is a streaming `AsyncRead` adapter: nothing buffers a whole snapshot, so memory stays
//! bounded whatever the database size. No I/O of its own, no clock.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::str::FromStr;
use std::task::{Context, Poll};

use async_compression::Level;
use async_compression::tokio::bufread::{GzipDecoder, GzipEncoder, ZstdDecoder, ZstdEncoder};
use ring::digest;
use tokio::io::{AsyncRead, BufReader, ReadBuf};

/// Read buffer in front of the (de)compressors: large enough to keep them busy, small enough to ignore.
const BUF: usize = 128 * 1024;

/// Length of the sha256 that etcd appends to the `Maintenance.Snapshot` stream.
pub const SNAPSHOT_HASH_LEN: usize = 32;

/// How a backup's bytes are compressed. zstd by default: fast, and etcd's bbolt
/// pages compress well with it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    None,
    Gzip,
    #[default]
    Zstd,
}

impl Compression {
    pub const ALL: [Compression; 3] = [Compression::None, Compression::Gzip, Compression::Zstd];

    /// The name used on the command line and in the CRD.
    pub fn as_str(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }

    /// The file-name suffix of an object written with this compression ("" for none).
    pub fn suffix(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => ".gz",
            Compression::Zstd => ".zst",
        }
    }

    /// The compression of an object, from its key's suffix before an encryption suffix
    /// (`.enc`, `archive::crypt`); anything unknown is uncompressed.
    pub fn from_key(key: &str) -> Compression {
        let key = key.strip_suffix(super::crypt::SUFFIX).unwrap_or(key);
        if key.ends_with(".zst") {
            Compression::Zstd
        } else if key.ends_with(".gz") {
            Compression::Gzip
        } else {
            Compression::None
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Compression {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Compression::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown compression {s:?}: use one of none, gzip, zstd"))
    }
}

/// The zstd level of backups (`compress`).
pub const ZSTD_LEVEL: i32 = 1;

/// `reader`'s bytes, compressed.
pub fn compress<'a, R>(c: Compression, reader: R) -> impl AsyncRead + Unpin + Send + 'a
where
    R: AsyncRead + Unpin + Send + 'a,
{
    let boxed: Box<dyn AsyncRead + Unpin + Send + 'a> = match c {
        Compression::None => Box::new(reader),
        Compression::Gzip => Box::new(GzipEncoder::new(BufReader::with_capacity(BUF, reader))),
        // Level 1, one thread, in line. On Kubernetes-like data (tests/bench-objects.py) level 1
        // stores within 0.2 % of level 3's bytes at 1.5 times its speed, and a backup dialed
        // directly spends more time compressing than in any other stage (docs/src/benchmarks.md,
        // backup benchmark). A worker thread (`zstdmt`, one worker) took as long on the testbed, whose
        // other core runs etcd and the store, for 10 MiB more peak RSS (2026-12-06).
        Compression::Zstd => Box::new(ZstdEncoder::with_quality(
            BufReader::with_capacity(BUF, reader),
            Level::Precise(ZSTD_LEVEL),
        )),
    };
    boxed
}

/// `reader`'s bytes, decompressed. A truncated or damaged compressed stream ends in an error, never
/// in a silently short result.
pub fn decompress<'a, R>(c: Compression, reader: R) -> impl AsyncRead + Unpin + Send + 'a
where
    R: AsyncRead + Unpin + Send + 'a,
{
    let boxed: Box<dyn AsyncRead + Unpin + Send + 'a> = match c {
        Compression::None => Box::new(reader),
        Compression::Gzip => {
            let mut d = GzipDecoder::new(BufReader::with_capacity(BUF, reader));
            d.multiple_members(true);
            Box::new(d)
        }
        Compression::Zstd => {
            let mut d = ZstdDecoder::new(BufReader::with_capacity(BUF, reader));
            d.multiple_members(true);
            Box::new(d)
        }
    };
    boxed
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}

/// A running sha256 and byte count.
#[derive(Clone)]
pub struct Sha256 {
    ctx: digest::Context,
    bytes: u64,
}

impl Default for Sha256 {
    fn default() -> Self {
        Sha256 {
            ctx: digest::Context::new(&digest::SHA256),
            bytes: 0,
        }
    }
}

impl Sha256 {
    pub fn update(&mut self, data: &[u8]) {
        self.ctx.update(data);
        self.bytes += data.len() as u64;
    }

    /// Bytes hashed so far and their sha256 in hex.
    pub fn finish(&self) -> (u64, String) {
        (self.bytes, hex(self.ctx.clone().finish().as_ref()))
    }
}

impl fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sha256")
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// Pass-through reader that counts and hashes what flows through it.
#[derive(Debug)]
pub struct Sha256Reader<R> {
    inner: R,
    sha: Sha256,
}

impl<R> Sha256Reader<R> {
    pub fn new(inner: R) -> Self {
        Sha256Reader {
            inner,
            sha: Sha256::default(),
        }
    }

    /// Bytes read so far and their sha256 in hex (callable at any time; usually after EOF).
    pub fn finish(&self) -> (u64, String) {
        self.sha.finish()
    }

    pub fn bytes(&self) -> u64 {
        self.sha.bytes
    }

    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Sha256Reader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &poll {
            this.sha.update(&buf.filled()[before..]);
        }
        poll
    }
}

/// Pass-through reader that raises `failed` at its reader's first error: whether a pipeline's
/// failure came from this stage or from a later one (a snapshot's source or its store).
pub struct Watched<R> {
    inner: R,
    failed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<R> Watched<R> {
    pub fn new(inner: R, failed: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Self {
        Watched { inner, failed }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Err(_)) = &poll {
            self.failed
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        poll
    }
}

/// Pass-through reader of an etcd snapshot (uncompressed) that checks etcd's trailer at the end:
/// the `Maintenance.Snapshot` stream ends with the sha256 of everything before it, so a whole
/// snapshot has `len % 512 == 32` and `sha256(all but the last 32 bytes) == last 32 bytes`.
/// When that does not hold, the end of the stream becomes an `InvalidData` error
/// "snapshot is truncated or corrupt: …" instead of EOF, so no consumer can mistake a damaged
/// snapshot for a whole one.
pub struct SnapshotVerifier<R> {
    inner: R,
    /// sha256 of everything but the last `SNAPSHOT_HASH_LEN` bytes seen so far.
    body: digest::Context,
    /// The last (up to) `SNAPSHOT_HASH_LEN` bytes seen so far: the trailer candidate.
    tail: Vec<u8>,
    total: u64,
    verified: bool,
}

impl<R> SnapshotVerifier<R> {
    pub fn new(inner: R) -> Self {
        SnapshotVerifier {
            inner,
            body: digest::Context::new(&digest::SHA256),
            tail: Vec::with_capacity(2 * SNAPSHOT_HASH_LEN),
            total: 0,
            verified: false,
        }
    }

    /// Whether the end of the stream was reached and the trailer checked out.
    pub fn verified(&self) -> bool {
        self.verified
    }

    /// Bytes read so far, trailer included.
    pub fn bytes(&self) -> u64 {
        self.total
    }

    fn feed(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        if data.len() >= SNAPSHOT_HASH_LEN {
            // Everything held back so far and all but the new last 32 bytes are body.
            self.body.update(&self.tail);
            let (body, tail) = data.split_at(data.len() - SNAPSHOT_HASH_LEN);
            self.body.update(body);
            self.tail.clear();
            self.tail.extend_from_slice(tail);
        } else {
            self.tail.extend_from_slice(data);
            if self.tail.len() > SNAPSHOT_HASH_LEN {
                let spill = self.tail.len() - SNAPSHOT_HASH_LEN;
                self.body.update(&self.tail[..spill]);
                self.tail.drain(..spill);
            }
        }
    }

    fn check(&self) -> Result<(), String> {
        if self.total == 0 {
            return Err("it is empty".into());
        }
        if self.total % 512 != SNAPSHOT_HASH_LEN as u64 {
            return Err(format!(
                "{} bytes is not a whole etcd snapshot (a database of 512-byte multiples plus a {SNAPSHOT_HASH_LEN}-byte sha256)",
                self.total
            ));
        }
        let want = self.body.clone().finish();
        if want.as_ref() != self.tail.as_slice() {
            return Err(format!(
                "etcd's sha256 at its end ({}) does not match its {} bytes of data ({})",
                hex(&self.tail),
                self.total - SNAPSHOT_HASH_LEN as u64,
                hex(want.as_ref())
            ));
        }
        Ok(())
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for SnapshotVerifier<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len() - before;
                if n > 0 {
                    this.feed(&buf.filled()[before..]);
                    Poll::Ready(Ok(()))
                } else if buf.remaining() == 0 || this.verified {
                    Poll::Ready(Ok(()))
                } else {
                    match this.check() {
                        Ok(()) => {
                            this.verified = true;
                            Poll::Ready(Ok(()))
                        }
                        Err(why) => Poll::Ready(Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("snapshot is truncated or corrupt: {why}"),
                        ))),
                    }
                }
            }
            other => other,
        }
    }
}

impl<R> fmt::Debug for SnapshotVerifier<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SnapshotVerifier")
            .field("total", &self.total)
            .field("verified", &self.verified)
            .finish()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// A fake snapshot shaped like etcd's: `pages` 4 KiB pages of varied bytes and the sha256 trailer.
    pub(crate) fn fake_snapshot(pages: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        let mut db = Vec::with_capacity(pages * 4096 + SNAPSHOT_HASH_LEN);
        for i in 0..pages * 4096 {
            // Compressible but not constant: runs of a xorshift byte.
            if i % 64 == 0 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
            db.push((x >> (i % 8)) as u8);
        }
        let sum = digest::digest(&digest::SHA256, &db);
        db.extend_from_slice(sum.as_ref());
        db
    }

    /// Reads in small uneven pieces, so adapters see chunk boundaries everywhere.
    struct Trickle {
        data: Vec<u8>,
        pos: usize,
        step: usize,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let step = 1 + (self.pos * 7 + self.step) % self.step;
            let end = (self.pos + step)
                .min(self.data.len())
                .min(self.pos + buf.remaining());
            buf.put_slice(&self.data[self.pos..end]);
            self.pos = end;
            Poll::Ready(Ok(()))
        }
    }

    fn trickle(data: Vec<u8>, step: usize) -> Trickle {
        Trickle { data, pos: 0, step }
    }

    async fn read_all(mut r: impl AsyncRead + Unpin) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        r.read_to_end(&mut out).await?;
        Ok(out)
    }

    #[test]
    fn compression_names_suffixes_and_detection_agree() {
        for c in Compression::ALL {
            assert_eq!(c.as_str().parse::<Compression>().unwrap(), c);
            assert_eq!(
                Compression::from_key(&format!("demo-1.db{}", c.suffix())),
                c
            );
            assert_eq!(
                Compression::from_key(&format!("demo-1.db{}.enc", c.suffix())),
                c
            );
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        }
        assert_eq!(" ZSTD ".parse::<Compression>().unwrap(), Compression::Zstd);
        assert_eq!(Compression::default(), Compression::Zstd);
        let err = "lz4".parse::<Compression>().unwrap_err();
        assert!(err.contains("none, gzip, zstd"), "{err}");
    }

    #[tokio::test]
    async fn every_compression_round_trips_large_and_empty_inputs() {
        let snap = fake_snapshot(600, 7); // 2.4 MiB: several zstd blocks and read buffers
        for c in Compression::ALL {
            for input in [snap.clone(), Vec::new()] {
                let packed = read_all(compress(c, trickle(input.clone(), 5000)))
                    .await
                    .unwrap();
                if c != Compression::None && !input.is_empty() {
                    assert!(packed.len() < input.len(), "{c} did not compress");
                }
                let back = read_all(decompress(c, trickle(packed, 3000)))
                    .await
                    .unwrap();
                assert_eq!(back, input, "{c}");
            }
        }
    }

    #[tokio::test]
    async fn a_truncated_compressed_stream_is_an_error_not_a_short_result() {
        let snap = fake_snapshot(64, 3);
        for c in [Compression::Gzip, Compression::Zstd] {
            let mut packed = read_all(compress(c, &snap[..])).await.unwrap();
            packed.truncate(packed.len() / 2);
            let got = read_all(decompress(c, &packed[..])).await;
            assert!(
                got.is_err(),
                "{c}: truncated stream decoded to {} bytes",
                got.unwrap().len()
            );
        }
    }

    #[tokio::test]
    async fn sha256_reader_passes_bytes_through_and_hashes_them() {
        let data = fake_snapshot(10, 11);
        let mut r = Sha256Reader::new(trickle(data.clone(), 333));
        assert_eq!(read_all(&mut r).await.unwrap(), data);
        let (n, hex_sum) = r.finish();
        assert_eq!(n, data.len() as u64);
        assert_eq!(
            hex_sum,
            hex(digest::digest(&digest::SHA256, &data).as_ref())
        );
        // sha256("") is well known: the empty reader agrees.
        let empty = Sha256Reader::new(&b""[..]);
        assert_eq!(
            empty.finish(),
            (
                0,
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".into()
            )
        );
    }

    #[tokio::test]
    async fn a_whole_snapshot_verifies_whatever_the_chunking() {
        let snap = fake_snapshot(20, 5);
        for step in [1, 7, 31, 32, 33, 512, 4096, 100_000] {
            let mut v = SnapshotVerifier::new(trickle(snap.clone(), step));
            assert_eq!(read_all(&mut v).await.unwrap(), snap, "step {step}");
            assert!(v.verified(), "step {step}");
            assert_eq!(v.bytes(), snap.len() as u64);
        }
    }

    #[tokio::test]
    async fn a_truncated_snapshot_fails_at_its_end() {
        let snap = fake_snapshot(20, 5);
        for cut in [1, 31, 32, 33, 512, 4096, snap.len() - 1] {
            let err = read_all(SnapshotVerifier::new(&snap[..cut]))
                .await
                .unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
            assert!(
                err.to_string()
                    .starts_with("snapshot is truncated or corrupt: "),
                "{err}"
            );
        }
        // Cut at a page boundary plus 32 bytes: the size looks right, the hash cannot.
        let err = read_all(SnapshotVerifier::new(&snap[..4096 * 3 + 32]))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("does not match"), "{err}");
        let err = read_all(SnapshotVerifier::new(&b""[..])).await.unwrap_err();
        assert!(err.to_string().contains("empty"), "{err}");
    }

    #[tokio::test]
    async fn a_flipped_bit_anywhere_fails_the_check() {
        let snap = fake_snapshot(8, 9);
        for pos in [0, 1000, snap.len() - 33, snap.len() - 32, snap.len() - 1] {
            let mut bad = snap.clone();
            bad[pos] ^= 0x10;
            let err = read_all(SnapshotVerifier::new(trickle(bad, 100)))
                .await
                .unwrap_err();
            assert!(
                err.to_string().contains("does not match"),
                "pos {pos}: {err}"
            );
        }
    }

    #[tokio::test]
    async fn a_compressed_snapshot_verifies_after_decompression() {
        let snap = fake_snapshot(50, 13);
        for c in Compression::ALL {
            let packed = read_all(compress(c, &snap[..])).await.unwrap();
            let mut stored = Sha256Reader::new(&packed[..]);
            let got = read_all(SnapshotVerifier::new(decompress(c, &mut stored)))
                .await
                .unwrap();
            assert_eq!(got, snap);
            assert_eq!(
                stored.finish().0,
                packed.len() as u64,
                "{c}: sha covers the stored bytes"
            );
        }
    }

    #[tokio::test]
    async fn a_watched_reader_says_whether_it_failed_not_whether_it_ended() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        use tokio::io::AsyncReadExt;
        let failed = Arc::new(AtomicBool::new(false));
        let mut whole = Watched::new(&b"abc"[..], failed.clone());
        let mut out = Vec::new();
        whole.read_to_end(&mut out).await.unwrap();
        assert_eq!(
            (out.as_slice(), failed.load(Ordering::Relaxed)),
            (&b"abc"[..], false)
        );
        let broken = tokio_test_reader();
        let mut watched = Watched::new(broken, failed.clone());
        assert!(watched.read_to_end(&mut out).await.is_err());
        assert!(failed.load(Ordering::Relaxed));
    }

    /// A reader that gives 3 bytes, then a broken pipe.
    fn tokio_test_reader() -> impl AsyncRead + Unpin {
        use tokio::io::AsyncReadExt;
        (&b"abc"[..]).chain(FailingReader)
    }

    struct FailingReader;

    impl AsyncRead for FailingReader {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Poll::Ready(Err(io::Error::from(io::ErrorKind::BrokenPipe)))
        }
    }
}
