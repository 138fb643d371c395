//! Uploads to S3: one request for a small object, else a multipart upload with bounded memory
//! (parts read, hashed and sent in order, a few at once) that is aborted, and aborted again until
//! gone, when it fails.

use std::future::Future;
use std::io;
use std::time::Duration;

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use futures::stream::FuturesOrdered;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::*;
use crate::archive::codec::Sha256;
use crate::archive::store::{Store, StoreError, Stored};

/// The largest object S3 copies in one request (CopyObject: 5 GiB).
pub(super) const COPY_LIMIT: u64 = 5 << 30;

impl S3Backend {
    pub(in crate::archive::store) async fn put<R: AsyncRead + Unpin + Send>(
        &self,
        store: &Store,
        key: &str,
        mut body: R,
        progress: &(impl Fn(u64) + Send + Sync),
    ) -> Result<Stored, StoreError> {
        let full = self.full_key(key);
        let read_err = |e: io::Error| StoreError::Io {
            what: format!("reading the data to store at {} failed", store.url(key)),
            source: e,
        };
        let first = read_part(&mut body, BytesMut::new())
            .await
            .map_err(read_err)?;
        let mut sha = Sha256::default();
        if first.len() < PART_SIZE {
            // Small enough for one request.
            sha.update(&first);
            let (bytes, sha256_hex) = sha.finish();
            let stamp = super::super::Stamp {
                size: bytes,
                sha256: sha256_hex.clone(),
            };
            self.put_whole(key, &full, first.freeze(), &stamp).await?;
            progress(bytes);
            return Ok(Stored {
                key: key.into(),
                bytes,
                sha256_hex,
            });
        }

        let created = create_with_sse(self.client.create_multipart_upload(), self.sse.as_ref())
            .bucket(&self.bucket)
            .key(&full)
            .send()
            .await
            .map_err(|e| {
                self.error(
                    format!("cannot start uploading {}", self.object_url(key)),
                    Some(key),
                    e,
                )
            })?;
        let upload_id = created.upload_id().unwrap_or_default().to_string();
        if upload_id.is_empty() {
            return Err(StoreError::other(
                format!("cannot start uploading {}", self.object_url(key)),
                format!(
                    "{} answered CreateMultipartUpload without an upload id",
                    self.endpoint
                ),
            ));
        }
        // Aborts the upload if this future is dropped half-way (Ctrl-C, a cancelled task).
        let mut guard = AbortGuard {
            backend: Some(self.clone()),
            key: full.clone(),
            upload_id: upload_id.clone(),
        };
        let result = self
            .upload_parts(
                key, &full, &upload_id, first, &mut body, &mut sha, progress, read_err,
            )
            .await;
        let done = match result {
            Ok(parts) => self.complete(key, &full, &upload_id, parts).await,
            Err(err) => Err(err),
        };
        if done.is_err() {
            self.abort(&full, &upload_id).await;
        }
        guard.backend = None;
        done?;
        let (bytes, sha256_hex) = sha.finish();
        let stamp = super::super::Stamp {
            size: bytes,
            sha256: sha256_hex.clone(),
        };
        self.stamp(key, &full, &stamp).await?;
        Ok(Stored {
            key: key.into(),
            bytes,
            sha256_hex,
        })
    }

    /// Stores `body` in one request.
    pub(super) async fn put_whole(
        &self,
        key: &str,
        full: &str,
        body: Bytes,
        stamp: &super::super::Stamp,
    ) -> Result<(), StoreError> {
        put_with_sse(self.client.put_object(), self.sse.as_ref())
            .bucket(&self.bucket)
            .key(full)
            .metadata(super::super::Stamp::SIZE, stamp.size.to_string())
            .metadata(super::super::Stamp::SHA256, &stamp.sha256)
            .body(ByteStream::from(body))
            .send()
            .await
            .map_err(|e| {
                self.error(
                    format!("cannot upload {}", self.object_url(key)),
                    Some(key),
                    e,
                )
            })?;
        Ok(())
    }

    /// Writes `stamp` into the metadata of the object a multipart upload just completed: its
    /// sha256 is known only once every part is read, after the upload began. S3 changes an
    /// object's metadata only by copying it onto itself (server-side, nothing goes through
    /// here), which one request does up to [`COPY_LIMIT`]; a larger object keeps no stamp of its
    /// own (its record still names its size and sha256).
    pub(super) async fn stamp(
        &self,
        key: &str,
        full: &str,
        stamp: &super::super::Stamp,
    ) -> Result<(), StoreError> {
        if stamp.size > COPY_LIMIT {
            return Ok(());
        }
        let (sse, kms) = sse_fields(self.sse.as_ref());
        self.client
            .copy_object()
            .bucket(&self.bucket)
            .key(full)
            .copy_source(format!("{}/{full}", self.bucket))
            .metadata_directive(aws_sdk_s3::types::MetadataDirective::Replace)
            .metadata(super::super::Stamp::SIZE, stamp.size.to_string())
            .metadata(super::super::Stamp::SHA256, &stamp.sha256)
            .set_server_side_encryption(sse)
            .set_ssekms_key_id(kms)
            .send()
            .await
            .map_err(|e| {
                self.error(
                    format!(
                        "cannot stamp {} with its size and sha256",
                        self.object_url(key)
                    ),
                    Some(key),
                    e,
                )
            })?;
        Ok(())
    }

    /// Completes a multipart upload of `parts` (the caller aborts it on failure).
    pub(super) async fn complete(
        &self,
        key: &str,
        full: &str,
        upload_id: &str,
        parts: Vec<CompletedPart>,
    ) -> Result<(), StoreError> {
        self.client
            .complete_multipart_upload()
            .bucket(&self.bucket)
            .key(full)
            .upload_id(upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .map_err(|e| {
                self.error(
                    format!("cannot finish uploading {}", self.object_url(key)),
                    Some(key),
                    e,
                )
            })?;
        Ok(())
    }

    /// Uploads `first` and then the rest of `body` part by part, up to [`PARTS_IN_FLIGHT`] parts
    /// at once while the next one is read ([`send_parts`]).
    #[allow(clippy::too_many_arguments)] // one private step of `put`; a struct would only rename them
    pub(super) async fn upload_parts<R: AsyncRead + Unpin + Send>(
        &self,
        key: &str,
        full: &str,
        upload_id: &str,
        first: BytesMut,
        body: &mut R,
        sha: &mut Sha256,
        progress: &(impl Fn(u64) + Send + Sync),
        read_err: impl Fn(io::Error) -> StoreError,
    ) -> Result<Vec<CompletedPart>, StoreError> {
        let too_many = || {
            StoreError::other(
                format!("cannot upload {}", self.object_url(key)),
                format!(
                    "it is larger than S3's limit of {MAX_PARTS} parts of {} MiB",
                    PART_SIZE >> 20
                ),
            )
        };
        let upload = |number: u32, part: Bytes| async move {
            self.upload_part(key, full, upload_id, number, &part)
                .await
                .map(|etag| (etag, part))
        };
        let sent = send_parts(
            first,
            body,
            PARTS_IN_FLIGHT,
            sha,
            progress,
            read_err,
            too_many,
            upload,
        )
        .await?;
        Ok(sent
            .into_iter()
            .map(|(number, etag)| {
                CompletedPart::builder()
                    .e_tag(etag)
                    .part_number(number as i32)
                    .build()
            })
            .collect())
    }

    /// One part, retried with backoff while the failure is transient.
    pub(super) async fn upload_part(
        &self,
        key: &str,
        full: &str,
        upload_id: &str,
        number: u32,
        part: &Bytes,
    ) -> Result<String, StoreError> {
        let mut attempt = 0;
        loop {
            let sent = self
                .client
                .upload_part()
                .bucket(&self.bucket)
                .key(full)
                .upload_id(upload_id)
                .part_number(number as i32)
                .body(ByteStream::from(part.clone()))
                .send()
                .await;
            match sent {
                Ok(out) => return Ok(out.e_tag().unwrap_or_default().to_string()),
                Err(e) => {
                    let err = self.error(
                        format!("cannot upload part {number} of {}", self.object_url(key)),
                        Some(key),
                        e,
                    );
                    if !err.is_transient() || attempt >= PART_RETRIES {
                        return Err(err);
                    }
                    attempt += 1;
                    let wait = Duration::from_millis(500 << attempt);
                    tracing::warn!(key = full, part = number, attempt, error = %err, "retrying a part upload in {wait:?}");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// Aborts a multipart upload, and again until `ListParts` no longer finds it: a part whose
    /// upload was under way (a cancelled put's, its connection just dropped) may land after the
    /// abort and keep the upload, and its storage, alive (S3's documentation says to abort again
    /// until the upload is gone), and an abort refused by a busy store is worth asking again.
    pub(super) async fn abort(&self, full: &str, upload_id: &str) {
        use aws_sdk_s3::operation::abort_multipart_upload::AbortMultipartUploadError;
        let (mut last, mut still_listed) = (None, false);
        for wait in ABORT_CHECKS {
            let aborted = self
                .client
                .abort_multipart_upload()
                .bucket(&self.bucket)
                .key(full)
                .upload_id(upload_id)
                .send()
                .await;
            match aborted {
                Err(e)
                    if !e
                        .as_service_error()
                        .is_some_and(AbortMultipartUploadError::is_no_such_upload) =>
                {
                    last = Some(self.error(
                        format!("cannot abort the upload of s3://{}/{full}", self.bucket),
                        None,
                        e,
                    ));
                }
                _ => last = None,
            }
            tokio::time::sleep(wait).await;
            let listed = self
                .client
                .list_parts()
                .bucket(&self.bucket)
                .key(full)
                .upload_id(upload_id)
                .send()
                .await;
            match listed {
                // Still there: abort it again.
                Ok(_) => still_listed = true,
                // Gone. (`ListParts` has no typed "no such upload": its code says it.)
                Err(e) if e.as_service_error().and_then(|e| e.code()) == Some("NoSuchUpload") => {
                    return;
                }
                // Cannot tell (no right to list parts, say): the abort's own answer stands.
                Err(_) => {
                    still_listed = false;
                    break;
                }
            }
        }
        let why = match last {
            Some(e) => e.to_string(),
            None if still_listed => "still listed after its aborts".to_string(),
            None => return,
        };
        tracing::warn!(key = full, upload_id, error = %why, "abandoned multipart upload; a bucket lifecycle rule (AbortIncompleteMultipartUpload) removes its parts");
    }
}

/// The multipart pipeline, apart from S3: hashes `first` and every following part of `body` into
/// `sha` in order, hands each to `upload` (numbered from 1; it gives the part back with its
/// etag), at most `window` of them uploading at once while the next part is read, and returns the
/// etags in part order. Memory: `window + 1` part buffers, allocated once and reused in turns
/// (fresh 8 MiB allocations per part leave the allocator holding several: +9 MiB peak RSS
/// measured). The first error ends it: the uploads still in flight are dropped with it.
#[allow(clippy::too_many_arguments)] // the pipeline's inputs; a struct would only rename them
pub(super) async fn send_parts<R, U, F>(
    first: BytesMut,
    body: &mut R,
    window: usize,
    sha: &mut Sha256,
    progress: &(impl Fn(u64) + Send + Sync),
    read_err: impl Fn(io::Error) -> StoreError,
    too_many: impl Fn() -> StoreError,
    upload: U,
) -> Result<Vec<(u32, String)>, StoreError>
where
    R: AsyncRead + Unpin + Send,
    U: Fn(u32, Bytes) -> F,
    F: Future<Output = Result<(String, Bytes), StoreError>>,
{
    let mut in_flight = FuturesOrdered::new();
    let mut done = Landed::default();
    let mut next = first;
    let mut number: u32 = 0;
    loop {
        let last = next.len() < PART_SIZE;
        if !next.is_empty() {
            number += 1;
            if number > MAX_PARTS {
                return Err(too_many());
            }
            sha.update(&next);
            let part = next.freeze();
            let upload = &upload;
            in_flight.push_back(async move { (number, upload(number, part).await) });
        }
        if last {
            while let Some((n, got)) = in_flight.next().await {
                done.land(n, got, progress)?;
            }
            return Ok(done.sent);
        }
        while in_flight.len() >= window.max(1) {
            if let Some((n, got)) = in_flight.next().await {
                done.land(n, got, progress)?;
            }
        }
        // Read the next part while the uploads go on (the read is never cancelled: a part read
        // half-way would lose bytes).
        let read = read_part(body, done.spares.pop().unwrap_or_default());
        tokio::pin!(read);
        next = loop {
            tokio::select! {
                r = &mut read => break r.map_err(&read_err)?,
                Some((n, got)) = in_flight.next(), if !in_flight.is_empty() => done.land(n, got, progress)?,
            }
        };
    }
}

/// The parts [`send_parts`] has stored so far, and their buffers back for the next reads.
#[derive(Default)]
pub(super) struct Landed {
    sent: Vec<(u32, String)>,
    spares: Vec<BytesMut>,
    stored: u64,
}

impl Landed {
    fn land(
        &mut self,
        number: u32,
        got: Result<(String, Bytes), StoreError>,
        progress: &impl Fn(u64),
    ) -> Result<(), StoreError> {
        let (etag, part) = got?;
        self.stored += part.len() as u64;
        progress(self.stored);
        self.sent.push((number, etag));
        // The SDK has dropped its copies of the handle once the part is stored.
        self.spares.push(part.try_into_mut().unwrap_or_default());
        Ok(())
    }
}

/// Reads up to `PART_SIZE` bytes into `buf` (emptied first, its allocation kept): fewer only at
/// the end of `body`.
pub(super) async fn read_part<R: AsyncRead + Unpin>(
    body: &mut R,
    mut buf: BytesMut,
) -> io::Result<BytesMut> {
    buf.clear();
    buf.reserve(PART_SIZE);
    while buf.len() < PART_SIZE {
        // `take` bounds the read so the Vec never grows past one part.
        let want = (PART_SIZE - buf.len()) as u64;
        if (&mut *body).take(want).read_buf(&mut buf).await? == 0 {
            break;
        }
    }
    Ok(buf)
}

/// The pauses after each abort before `ListParts` checks that the upload is gone (a part under
/// way may land after an abort; `S3Backend::abort`).
pub(super) const ABORT_CHECKS: [std::time::Duration; 4] = [
    std::time::Duration::from_millis(500),
    std::time::Duration::from_secs(1),
    std::time::Duration::from_secs(2),
    std::time::Duration::from_secs(4),
];

/// Aborts a multipart upload when dropped armed (the `put` future was cancelled mid-upload).
pub(super) struct AbortGuard {
    backend: Option<S3Backend>,
    key: String,
    upload_id: String,
}

impl Drop for AbortGuard {
    fn drop(&mut self) {
        if let Some(backend) = self.backend.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            let (key, id) = (
                std::mem::take(&mut self.key),
                std::mem::take(&mut self.upload_id),
            );
            rt.spawn(async move { backend.abort(&key, &id).await });
        }
    }
}
