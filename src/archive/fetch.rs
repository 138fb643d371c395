//! Getting a backup back: fetch a stored snapshot and verify it — before anything of a new
//! cluster is created (the `restore` verb), and again inside the cluster while the restore pod
//! writes it to the seed's volume (`kubectl-etcd snapshot fetch`). The pod itself is built in
//! `objects::restore`. No cluster: a [`Store`] in, a local sink or file out.

use std::path::Path;

use tokio::io::{AsyncRead, AsyncWriteExt};

use crate::archive::codec::{self, Compression, Sha256Reader, SnapshotVerifier};
use crate::archive::store::{Store, StoreError};

/// Why a fetch failed (the backup error takes each variant over as its own kind, so the exit
/// code stays that of a storage failure, a corrupt snapshot or a usage error).
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The bytes are not the snapshot the record names, or not a whole snapshot.
    #[error("the snapshot is unusable: {0}")]
    Corrupt(String),
    /// This side's files: the target cannot be written, or a data dir must not be overwritten.
    #[error("{0}")]
    Local(String),
}

/// What a verified read of a stored snapshot found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub stored_bytes: u64,
    pub sha256: String,
    pub snapshot_bytes: u64,
}

/// Reads `key` from `store` to the end: the stored bytes' sha256 must equal `expected` (when
/// known), the bytes must decompress (by the key's suffix), and etcd's own hash inside the snapshot
/// must check out. Everything read goes to `sink`.
pub async fn verify_into<W>(
    store: &Store,
    key: &str,
    expected: Option<&str>,
    sink: &mut W,
) -> Result<Verified, FetchError>
where
    W: tokio::io::AsyncWrite + Unpin,
{
    let (body, _) = store.get(key).await?;
    verify_stream(body, Compression::from_key(key), expected, sink, key).await
}

/// `verify_into` over any stream of stored bytes (the file-transfer path and tests).
pub async fn verify_stream<R, W>(
    body: R,
    compression: Compression,
    expected: Option<&str>,
    sink: &mut W,
    what: &str,
) -> Result<Verified, FetchError>
where
    R: AsyncRead + Unpin + Send,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut stored = Sha256Reader::new(body);
    let (copied, verified, snapshot_bytes) = {
        let mut snapshot = SnapshotVerifier::new(codec::decompress(compression, &mut stored));
        let copied = tokio::io::copy(&mut snapshot, sink).await;
        (copied, snapshot.verified(), snapshot.bytes())
    };
    let (stored_bytes, sha256) = stored.finish();
    if let Some(want) = expected
        && !want.eq_ignore_ascii_case(&sha256)
    {
        return Err(FetchError::Corrupt(format!(
            "{what}: its sha256 is {sha256}, the backup record says {want} (the object was changed or damaged)"
        )));
    }
    copied.map_err(|e| FetchError::Corrupt(format!("{what}: {e}")))?;
    sink.flush()
        .await
        .map_err(|e| FetchError::Corrupt(format!("{what}: {e}")))?;
    if !verified {
        return Err(FetchError::Corrupt(format!(
            "{what}: the snapshot ended without etcd's hash"
        )));
    }
    Ok(Verified {
        stored_bytes,
        sha256,
        snapshot_bytes,
    })
}

/// Downloads, verifies and writes the snapshot to `to` (through `<to>.partial`, renamed only once
/// verified), first removing `clean` (a data dir left by an earlier, interrupted restore: the
/// seed never ran as a member before its restore finished).
///
/// `clean` is removed only when it is the restore's own: an interrupted restore leaves its
/// working directory (the parent of `to`) beside it, which the restore deletes only once it has
/// finished. A data dir without it is a member's (a volume kept from an earlier cluster, or one
/// restored and run since): it is refused, never removed.
pub async fn fetch_to_file(
    store: &Store,
    key: &str,
    expected: Option<&str>,
    to: &Path,
    clean: Option<&Path>,
) -> Result<Verified, FetchError> {
    let io = |what: &str, e: std::io::Error| FetchError::Local(format!("{what}: {e}"));
    if let Some(dir) = clean
        && dir.exists()
    {
        let own = to.parent().is_some_and(Path::exists);
        if !own {
            return Err(FetchError::Local(format!(
                "{} holds etcd data this restore did not write (a volume kept from an earlier \
                 cluster, or one restored and run since); refusing to overwrite it: delete the \
                 cluster's volumes (kubectl etcd delete NAME --delete-data --yes) or restore under \
                 another name",
                dir.display()
            )));
        }
        tokio::fs::remove_dir_all(dir)
            .await
            .map_err(|e| io(&format!("remove {}", dir.display()), e))?;
    }
    if let Some(parent) = to.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| io(&format!("create {}", parent.display()), e))?;
    }
    let partial = to.with_extension("partial");
    let mut file = tokio::fs::File::create(&partial)
        .await
        .map_err(|e| io(&format!("create {}", partial.display()), e))?;
    let verified = verify_into(store, key, expected, &mut file).await;
    let verified = match verified {
        Ok(v) => v,
        Err(e) => {
            let _ = tokio::fs::remove_file(&partial).await;
            return Err(e);
        }
    };
    file.sync_all()
        .await
        .map_err(|e| io(&format!("sync {}", partial.display()), e))?;
    tokio::fs::rename(&partial, to)
        .await
        .map_err(|e| io(&format!("rename {}", partial.display()), e))?;
    Ok(verified)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::store::Location;

    #[tokio::test]
    async fn a_data_dir_the_restore_did_not_write_is_refused_never_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        std::fs::create_dir_all(data.join("member/wal")).unwrap();
        let to = tmp.path().join("restore/snapshot.db");
        let store = Store::open(&Location::File(tmp.path().join("store")), None)
            .await
            .unwrap();
        // A member's data dir (no restore working dir beside it): refused, untouched.
        let err = fetch_to_file(&store, "x.db", None, &to, Some(&data))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("did not write"), "{err}");
        assert!(data.join("member/wal").exists());
        // Left by an interrupted restore (its working dir is there): cleaned before the fetch.
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        let _ = fetch_to_file(&store, "x.db", None, &to, Some(&data)).await;
        assert!(!data.exists());
    }
}
