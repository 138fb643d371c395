//! Client-side encryption of backups: AES-256-GCM in chunks (the STREAM construction), as
//! streaming `AsyncRead` adapters like the codec's, so memory stays bounded (one chunk each way)
//! whatever the size. Truncation, reordering and changed bytes are detected, and a wrong key is
//! told apart from damaged data. ring does the cryptography (already in the tree through rustls).
//! No I/O of its own; randomness from the system.
//!
//! Format (integers big-endian):
//! ```text
//! header    = magic "KEAEAD01" (8) | chunk size u32 (4) | salt (32) | key check (16)   60 bytes
//! chunk i   = AES-256-GCM(file key, nonce i, aad = header, plaintext i)  ciphertext | tag (16)
//! file key  = HKDF-SHA256(key, salt, "kubectl-etcd backup v1 key")
//! key check = HKDF-SHA256(key, salt, "kubectl-etcd backup v1 check"), 16 bytes
//! nonce i   = 0 (3) | i u64 (8) | 1 for the last chunk else 0 (1)
//! ```
//! Every chunk but the last holds exactly `chunk size` bytes of plaintext; the last holds fewer
//! (possibly none) and says it is the last, so a stream cut at any point fails. A fresh random
//! salt per object gives every object its own key: nonces never repeat under one key.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::hkdf;
use ring::rand::{SecureRandom, SystemRandom};
use tokio::io::{AsyncRead, ReadBuf};

/// The suffix of an encrypted object's key (after the compression's).
pub const SUFFIX: &str = ".enc";
const MAGIC: &[u8; 8] = b"KEAEAD01";
const SALT_LEN: usize = 32;
const CHECK_LEN: usize = 16;
pub const HEADER_LEN: usize = 8 + 4 + SALT_LEN + CHECK_LEN;
const TAG_LEN: usize = 16;
/// Plaintext per chunk when encrypting.
pub const CHUNK: usize = 256 * 1024;
/// The largest chunk a reader accepts from a header (a forged header must not make it allocate
/// without bound).
const MAX_CHUNK: usize = 16 * 1024 * 1024;
const INFO_KEY: &[u8] = b"kubectl-etcd backup v1 key";
const INFO_CHECK: &[u8] = b"kubectl-etcd backup v1 check";

/// The key of a Secret's data that holds a backup key when `NAME/KEY` names none.
pub const DEFAULT_SECRET_KEY: &str = "key";

/// Whether the object `key` is encrypted (its name ends in [`SUFFIX`]).
pub fn is_encrypted(key: &str) -> bool {
    key.ends_with(SUFFIX)
}

/// Where a backup key is kept: the key `key` of the Secret `name` (in the cluster's namespace).
/// Only the reference is ever written anywhere (specs, records, pod specs), never the key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct KeySecret {
    pub name: String,
    pub key: String,
}

impl KeySecret {
    /// `NAME` or `NAME/KEY` (the form of `--encryption-key-secret`).
    pub fn parse(s: &str) -> Result<KeySecret, String> {
        let (name, key) = match s.trim().split_once('/') {
            Some((n, k)) => (n, k),
            None => (s.trim(), DEFAULT_SECRET_KEY),
        };
        let dns = |n: &str| {
            !n.is_empty()
                && n.len() <= 253
                && n.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        };
        let data_key = |k: &str| {
            !k.is_empty()
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        };
        if !dns(name) || !data_key(key) {
            return Err(format!(
                "{s:?} is not a Secret and key: use NAME or NAME/KEY, e.g. backup-key/key (make it with `kubectl create secret generic backup-key --from-literal=key=$(openssl rand -hex 32)`)"
            ));
        }
        Ok(KeySecret {
            name: name.into(),
            key: key.into(),
        })
    }
}

impl fmt::Display for KeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.name, self.key)
    }
}

/// A 256-bit backup key. `Debug` shows nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; 32]);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(<redacted>)")
    }
}

impl Key {
    /// A key from a file's or a Secret's bytes: 32 raw bytes, or 64 hex digits (surrounding
    /// whitespace ignored), e.g. `head -c 32 /dev/urandom > backup.key` or `openssl rand -hex 32`.
    pub fn parse(bytes: &[u8]) -> Result<Key, String> {
        if let Ok(raw) = <[u8; 32]>::try_from(bytes) {
            return Ok(Key(raw));
        }
        let text = std::str::from_utf8(bytes).unwrap_or("").trim();
        if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            let mut key = [0u8; 32];
            for (i, k) in key.iter_mut().enumerate() {
                *k = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap_or(0);
            }
            return Ok(Key(key));
        }
        Err(format!(
            "an encryption key is 32 bytes, raw or as 64 hex digits (this one has {} bytes): make one with `openssl rand -hex 32`",
            bytes.len()
        ))
    }

    fn derive(&self, salt: &[u8], info: &[u8], out: &mut [u8]) {
        struct Len(usize);
        impl hkdf::KeyType for Len {
            fn len(&self) -> usize {
                self.0
            }
        }
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, salt).extract(&self.0);
        let infos = [info];
        // Only fails for outputs longer than 255 hashes; ours are 16 and 32 bytes.
        if let Ok(okm) = prk.expand(&infos, Len(out.len())) {
            let _ = okm.fill(out);
        }
    }

    /// The object key and key check of a header's salt.
    fn for_salt(&self, salt: &[u8]) -> (LessSafeKey, [u8; CHECK_LEN]) {
        let mut k = [0u8; 32];
        self.derive(salt, INFO_KEY, &mut k);
        let mut check = [0u8; CHECK_LEN];
        self.derive(salt, INFO_CHECK, &mut check);
        let key = UnboundKey::new(&AES_256_GCM, &k).map(LessSafeKey::new);
        // AES_256_GCM takes any 32-byte key.
        (key.unwrap_or_else(|_| unreachable!()), check)
    }
}

/// Why decryption failed. Carried inside the `io::Error` (kind `InvalidData`) the reader returns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptError {
    #[error("not an encrypted backup (no kubectl-etcd encryption header)")]
    NotEncrypted,
    #[error("the encryption header is damaged: {0}")]
    BadHeader(String),
    #[error(
        "the encryption key is not the one this backup was encrypted with: use the Secret its record names (spec.encryption.keySecretRef of the EtcdBackup, the cluster's spec.backup.encryption when it was taken)"
    )]
    WrongKey,
    #[error(
        "the encrypted data ends after chunk {chunks} without its final chunk: the backup is truncated"
    )]
    Truncated { chunks: u64 },
    #[error(
        "chunk {chunk} of the encrypted data fails authentication: the backup was changed, damaged or truncated"
    )]
    Tampered { chunk: u64 },
}

fn invalid(e: CryptError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// The `CryptError` inside an error a decrypting reader returned, if any.
pub fn crypt_error(e: &io::Error) -> Option<&CryptError> {
    e.get_ref().and_then(|i| i.downcast_ref::<CryptError>())
}

fn nonce(counter: u64, last: bool) -> Nonce {
    let mut n = [0u8; 12];
    n[3..11].copy_from_slice(&counter.to_be_bytes());
    n[11] = u8::from(last);
    Nonce::assume_unique_for_key(n)
}

/// Reads `inner` to the end into `buf[*filled..]` (as far as it fits). Ready(Ok(true)) when the
/// buffer is full, Ready(Ok(false)) at the end of `inner`.
fn fill<R: AsyncRead + Unpin>(
    inner: &mut R,
    cx: &mut Context<'_>,
    buf: &mut [u8],
    filled: &mut usize,
) -> Poll<io::Result<bool>> {
    while *filled < buf.len() {
        let mut rb = ReadBuf::new(&mut buf[*filled..]);
        match Pin::new(&mut *inner).poll_read(cx, &mut rb) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Ready(Ok(())) if rb.filled().is_empty() => return Poll::Ready(Ok(false)),
            Poll::Ready(Ok(())) => *filled += rb.filled().len(),
        }
    }
    Poll::Ready(Ok(true))
}

/// Copies `src[*pos..]` into `out` as far as it fits.
fn emit(src: &[u8], pos: &mut usize, out: &mut ReadBuf<'_>) {
    let n = (src.len() - *pos).min(out.remaining());
    out.put_slice(&src[*pos..*pos + n]);
    *pos += n;
}

/// Encrypts what `inner` yields (see the module doc for the format).
pub struct Encrypt<R> {
    inner: R,
    key: LessSafeKey,
    header: [u8; HEADER_LEN],
    header_pos: usize,
    chunk: usize,
    /// Plaintext being gathered, then the sealed chunk being handed out.
    buf: Vec<u8>,
    filled: usize,
    sealed: bool,
    out_pos: usize,
    counter: u64,
    done: bool,
}

impl<R: AsyncRead + Unpin> Encrypt<R> {
    pub fn new(inner: R, key: &Key) -> io::Result<Encrypt<R>> {
        Self::with_chunk(inner, key, CHUNK)
    }

    fn with_chunk(inner: R, key: &Key, chunk: usize) -> io::Result<Encrypt<R>> {
        let mut salt = [0u8; SALT_LEN];
        SystemRandom::new().fill(&mut salt).map_err(|_| {
            io::Error::other("no randomness from the system for the encryption salt")
        })?;
        let (file_key, check) = key.for_salt(&salt);
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&(chunk as u32).to_be_bytes());
        header[12..12 + SALT_LEN].copy_from_slice(&salt);
        header[12 + SALT_LEN..].copy_from_slice(&check);
        Ok(Encrypt {
            inner,
            key: file_key,
            header,
            header_pos: 0,
            chunk,
            buf: Vec::with_capacity(chunk + TAG_LEN),
            filled: 0,
            sealed: false,
            out_pos: 0,
            counter: 0,
            done: false,
        })
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Encrypt<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        loop {
            if me.header_pos < HEADER_LEN {
                emit(&me.header, &mut me.header_pos, out);
                return Poll::Ready(Ok(()));
            }
            if me.sealed {
                if me.out_pos < me.buf.len() {
                    emit(&me.buf, &mut me.out_pos, out);
                    return Poll::Ready(Ok(()));
                }
                me.sealed = false;
                me.filled = 0;
                me.out_pos = 0;
            }
            if me.done {
                return Poll::Ready(Ok(()));
            }
            me.buf.resize(me.chunk, 0);
            let full = ready!(fill(&mut me.inner, cx, &mut me.buf, &mut me.filled))?;
            // A full chunk is never the last: the last holds fewer bytes (possibly none).
            let last = !full;
            me.buf.truncate(me.filled);
            me.key
                .seal_in_place_append_tag(
                    nonce(me.counter, last),
                    Aad::from(&me.header[..]),
                    &mut me.buf,
                )
                .map_err(|_| io::Error::other("AES-GCM refused to encrypt a chunk"))?;
            me.counter += 1;
            me.sealed = true;
            me.done = last;
        }
    }
}

/// Decrypts and authenticates what an [`Encrypt`] wrote; fails (with a [`CryptError`] inside the
/// `io::Error`) on a wrong key, a changed byte or a stream cut short, before handing out anything
/// of the chunk concerned.
pub struct Decrypt<R> {
    inner: R,
    key: Key,
    header: [u8; HEADER_LEN],
    header_filled: usize,
    file_key: Option<LessSafeKey>,
    chunk: usize,
    buf: Vec<u8>,
    filled: usize,
    /// Plaintext bytes of the opened chunk in `buf` (0 while gathering).
    plain: usize,
    out_pos: usize,
    counter: u64,
    done: bool,
}

impl<R: AsyncRead + Unpin> Decrypt<R> {
    pub fn new(inner: R, key: &Key) -> Decrypt<R> {
        Decrypt {
            inner,
            key: key.clone(),
            header: [0u8; HEADER_LEN],
            header_filled: 0,
            file_key: None,
            chunk: 0,
            buf: Vec::new(),
            filled: 0,
            plain: 0,
            out_pos: 0,
            counter: 0,
            done: false,
        }
    }

    fn open_header(&mut self) -> Result<(), CryptError> {
        if &self.header[..8] != MAGIC {
            return Err(CryptError::NotEncrypted);
        }
        let chunk = u32::from_be_bytes([
            self.header[8],
            self.header[9],
            self.header[10],
            self.header[11],
        ]) as usize;
        if chunk == 0 || chunk > MAX_CHUNK {
            return Err(CryptError::BadHeader(format!(
                "chunk size {chunk} out of range"
            )));
        }
        let (file_key, check) = self.key.for_salt(&self.header[12..12 + SALT_LEN]);
        if check[..] != self.header[12 + SALT_LEN..] {
            return Err(CryptError::WrongKey);
        }
        self.file_key = Some(file_key);
        self.chunk = chunk;
        self.buf = vec![0u8; chunk + TAG_LEN];
        Ok(())
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Decrypt<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        loop {
            let Some(file_key) = &me.file_key else {
                let whole = ready!(fill(
                    &mut me.inner,
                    cx,
                    &mut me.header,
                    &mut me.header_filled
                ))?;
                if !whole {
                    let ours =
                        me.header_filled >= MAGIC.len() && &me.header[..MAGIC.len()] == MAGIC;
                    return Poll::Ready(Err(invalid(if ours {
                        CryptError::Truncated { chunks: 0 }
                    } else {
                        CryptError::NotEncrypted
                    })));
                }
                me.open_header().map_err(invalid)?;
                continue;
            };
            if me.plain > 0 {
                if me.out_pos < me.plain {
                    emit(&me.buf[..me.plain], &mut me.out_pos, out);
                    return Poll::Ready(Ok(()));
                }
                me.plain = 0;
                me.filled = 0;
                me.out_pos = 0;
            }
            if me.done {
                return Poll::Ready(Ok(()));
            }
            let full = ready!(fill(&mut me.inner, cx, &mut me.buf, &mut me.filled))?;
            let last = !full;
            if last && me.filled == 0 {
                return Poll::Ready(Err(invalid(CryptError::Truncated { chunks: me.counter })));
            }
            let chunk = me.counter;
            let opened = file_key
                .open_in_place(
                    nonce(chunk, last),
                    Aad::from(&me.header[..]),
                    &mut me.buf[..me.filled],
                )
                .map(|p| p.len())
                .map_err(|_| invalid(CryptError::Tampered { chunk }))?;
            me.counter += 1;
            me.done = last;
            me.plain = opened;
            me.out_pos = 0;
            if opened == 0 {
                // An empty last chunk: nothing to hand out; `done` ends the stream.
                me.filled = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn key(b: u8) -> Key {
        Key([b; 32])
    }

    /// Deterministic bytes that do not repeat within a chunk.
    fn data(len: usize) -> Vec<u8> {
        (0..len as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect()
    }

    async fn encrypt(plain: &[u8], k: &Key, chunk: usize) -> Vec<u8> {
        let mut out = Vec::new();
        Encrypt::with_chunk(plain, k, chunk)
            .unwrap()
            .read_to_end(&mut out)
            .await
            .unwrap();
        out
    }

    async fn decrypt(sealed: &[u8], k: &Key) -> Result<Vec<u8>, CryptError> {
        let mut out = Vec::new();
        match Decrypt::new(sealed, k).read_to_end(&mut out).await {
            Ok(_) => Ok(out),
            Err(e) => Err(crypt_error(&e).cloned().expect("a CryptError inside")),
        }
    }

    #[tokio::test]
    async fn data_of_any_length_round_trips_and_the_overhead_is_a_header_and_a_tag_per_chunk() {
        let k = key(1);
        for len in [0, 1, 99, 100, 101, 250, 1000, 1024] {
            let plain = data(len);
            let sealed = encrypt(&plain, &k, 100).await;
            let chunks = len / 100 + 1;
            assert_eq!(sealed.len(), HEADER_LEN + len + chunks * TAG_LEN, "{len}");
            assert_eq!(decrypt(&sealed, &k).await.unwrap(), plain, "{len}");
        }
        // The real chunk size, with a reader that hands out a few bytes at a time.
        let plain = data(3 * CHUNK + 17);
        let sealed = encrypt(&plain, &k, CHUNK).await;
        let mut back = Vec::new();
        let mut r = Decrypt::new(&sealed[..], &k);
        let mut small = [0u8; 1000];
        loop {
            let n = r.read(&mut small).await.unwrap();
            if n == 0 {
                break;
            }
            back.extend_from_slice(&small[..n]);
        }
        assert!(back == plain);
    }

    #[tokio::test]
    async fn two_encryptions_of_the_same_bytes_differ() {
        let k = key(1);
        let a = encrypt(b"same", &k, 100).await;
        let b = encrypt(b"same", &k, 100).await;
        assert_ne!(a, b, "a fresh salt per object");
        assert!(!a.windows(4).any(|w| w == b"same"));
    }

    #[tokio::test]
    async fn a_wrong_key_is_named_as_such() {
        let sealed = encrypt(&data(500), &key(1), 100).await;
        assert_eq!(decrypt(&sealed, &key(2)).await, Err(CryptError::WrongKey));
    }

    #[tokio::test]
    async fn a_stream_cut_anywhere_is_refused() {
        let k = key(1);
        let sealed = encrypt(&data(450), &k, 100).await;
        for cut in (0..sealed.len()).step_by(7).chain([
            HEADER_LEN,
            HEADER_LEN + 116,
            HEADER_LEN + 4 * 116,
            sealed.len() - 1,
        ]) {
            let err = decrypt(&sealed[..cut], &k).await.unwrap_err();
            assert!(
                matches!(
                    err,
                    CryptError::Truncated { .. }
                        | CryptError::Tampered { .. }
                        | CryptError::NotEncrypted
                ),
                "cut at {cut}: {err:?}"
            );
        }
        // Cut exactly after a whole chunk: every chunk read is authentic, the last one is missing.
        let whole = encrypt(&data(300), &k, 100).await;
        let err = decrypt(&whole[..HEADER_LEN + 2 * 116], &k)
            .await
            .unwrap_err();
        assert_eq!(err, CryptError::Truncated { chunks: 2 });
        assert!(err.to_string().contains("truncated"), "{err}");
    }

    #[tokio::test]
    async fn a_changed_dropped_or_reordered_chunk_is_refused() {
        let k = key(1);
        let sealed = encrypt(&data(450), &k, 100).await;
        let chunk = |i: usize| HEADER_LEN + i * 116..HEADER_LEN + (i + 1) * 116;
        let mut flipped = sealed.clone();
        flipped[chunk(2).start + 5] ^= 1;
        assert_eq!(
            decrypt(&flipped, &k).await,
            Err(CryptError::Tampered { chunk: 2 })
        );
        let mut dropped = sealed[..chunk(1).start].to_vec();
        dropped.extend_from_slice(&sealed[chunk(2).start..]);
        assert_eq!(
            decrypt(&dropped, &k).await,
            Err(CryptError::Tampered { chunk: 1 })
        );
        let mut swapped = sealed[..chunk(1).start].to_vec();
        swapped.extend_from_slice(&sealed[chunk(2)]);
        swapped.extend_from_slice(&sealed[chunk(1)]);
        swapped.extend_from_slice(&sealed[chunk(3).start..]);
        assert_eq!(
            decrypt(&swapped, &k).await,
            Err(CryptError::Tampered { chunk: 1 })
        );
        let mut appended = sealed.clone();
        appended.extend_from_slice(&sealed[chunk(0)]);
        assert!(
            decrypt(&appended, &k).await.is_err(),
            "bytes after the last chunk"
        );
        // The header is bound to every chunk: a changed chunk size does not go unnoticed.
        let mut header = sealed.clone();
        header[11] = 99;
        assert!(decrypt(&header, &k).await.is_err());
    }

    #[tokio::test]
    async fn plain_bytes_are_not_taken_for_an_encrypted_backup() {
        assert_eq!(
            decrypt(
                b"plain snapshot bytes, long enough to fill a header......",
                &key(1)
            )
            .await,
            Err(CryptError::NotEncrypted)
        );
        assert_eq!(decrypt(b"", &key(1)).await, Err(CryptError::NotEncrypted));
    }

    #[test]
    fn key_secrets_are_a_name_and_a_data_key_defaulting_to_key() {
        assert_eq!(
            KeySecret::parse("backup-key").unwrap(),
            KeySecret {
                name: "backup-key".into(),
                key: "key".into()
            }
        );
        let k = KeySecret::parse("backup-key/etcd.key").unwrap();
        assert_eq!(k.to_string(), "backup-key/etcd.key");
        for bad in ["", "/key", "Upper", "name/", "a/b/c", "name/k y"] {
            let err = KeySecret::parse(bad).unwrap_err();
            assert!(err.contains("NAME/KEY"), "{bad}: {err}");
        }
        assert!(is_encrypted("ns-demo-20261201T000000.000Z-r1.db.zst.enc"));
        assert!(!is_encrypted("ns-demo-20261201T000000.000Z-r1.db.zst"));
    }

    #[test]
    fn keys_are_32_raw_bytes_or_64_hex_digits_and_never_shown() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF\n";
        let k = Key::parse(hex.as_bytes()).unwrap();
        assert_eq!(k.0[1], 0x11);
        assert_eq!(k.0[31], 0xff);
        assert_eq!(Key::parse(&[7u8; 32]).unwrap(), key(7));
        for bad in [&b"short"[..], &[0u8; 33], &[b'g'; 64]] {
            let err = Key::parse(bad).unwrap_err();
            assert!(err.contains("openssl rand -hex 32"), "{err}");
        }
        assert_eq!(format!("{k:?}"), "Key(<redacted>)");
    }
}
