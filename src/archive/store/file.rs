//! The file store: a local directory (or a claim mounted in this pod). `put` writes a `.partial`
//! file, syncs it and renames it into place, so an object is stored whole or not at all; `list`
//! never shows `.partial` files.
//!
//! A snapshot holds every key of the cluster, secrets included: files are created 0600 and the
//! directories this store creates 0700 (owner only, whatever the umask lets through; directories
//! that already exist keep their mode, which their owner chose).

use std::io;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::{ObjectInfo, Store, StoreError, Stored};
use crate::archive::codec::Sha256;

/// Copy buffer of the file store.
const FILE_BUF: usize = 1024 * 1024;
/// Mode of the files this store writes, and of the directories it creates.
const FILE_MODE: u32 = 0o600;
const DIR_MODE: u32 = 0o700;

/// `create_dir_all` with the directories it creates owner-only.
async fn create_dirs(dir: &Path) -> io::Result<()> {
    let mut b = tokio::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    b.mode(DIR_MODE);
    b.create(dir).await
}

/// A new (or truncated) file, owner read/write only.
async fn create_file(path: &Path) -> io::Result<tokio::fs::File> {
    let mut o = tokio::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    o.mode(FILE_MODE);
    o.open(path).await
}

/// The directory can be created and written.
pub(super) async fn check(store: &Store, root: &Path) -> Result<(), StoreError> {
    create_dirs(root)
        .await
        .map_err(|e| store.file_error(root, "create directory", e))?;
    let probe = root.join(".kubectl-etcd-check.partial");
    create_file(&probe)
        .await
        .map_err(|e| store.file_error(&probe, "write", e))?;
    let _ = tokio::fs::remove_file(&probe).await;
    Ok(())
}

pub(super) async fn put<R: AsyncRead + Unpin>(
    store: &Store,
    root: &Path,
    key: &str,
    mut body: R,
    progress: &(impl Fn(u64) + Send + Sync),
) -> Result<Stored, StoreError> {
    let path = root.join(key);
    let dir = path.parent().unwrap_or(root).to_path_buf();
    create_dirs(&dir)
        .await
        .map_err(|e| store.file_error(&dir, "create directory", e))?;
    let partial = PathBuf::from(format!("{}.partial", path.display()));
    let result = async {
        let mut file = create_file(&partial)
            .await
            .map_err(|e| store.file_error(&partial, "create", e))?;
        let mut sha = Sha256::default();
        let mut buf = vec![0u8; FILE_BUF];
        let mut written = 0u64;
        loop {
            let n = body.read(&mut buf).await.map_err(|e| StoreError::Io {
                what: format!("reading the data to store at {} failed", store.url(key)),
                source: e,
            })?;
            if n == 0 {
                break;
            }
            file.write_all(&buf[..n])
                .await
                .map_err(|e| store.file_error(&partial, "write", e))?;
            sha.update(&buf[..n]);
            written += n as u64;
            progress(written);
        }
        file.flush()
            .await
            .map_err(|e| store.file_error(&partial, "write", e))?;
        file.sync_all()
            .await
            .map_err(|e| store.file_error(&partial, "sync", e))?;
        drop(file);
        tokio::fs::rename(&partial, &path)
            .await
            .map_err(|e| store.file_error(&path, "rename into", e))?;
        // The rename is durable once the directory is synced; best effort (not every FS allows it).
        if let Ok(d) = tokio::fs::File::open(&dir).await {
            let _ = d.sync_all().await;
        }
        let (bytes, sha256_hex) = sha.finish();
        Ok(Stored {
            key: key.into(),
            bytes,
            sha256_hex,
        })
    }
    .await;
    if result.is_err() {
        let _ = tokio::fs::remove_file(&partial).await;
    }
    result
}

#[allow(clippy::type_complexity)] // the same pair `Store::get` returns
pub(super) async fn get(
    store: &Store,
    root: &Path,
    key: &str,
) -> Result<(Box<dyn AsyncRead + Unpin + Send>, Option<u64>), StoreError> {
    let path = root.join(key);
    let file = tokio::fs::File::open(&path)
        .await
        .map_err(|e| store.file_error(&path, "open", e))?;
    let size = file.metadata().await.ok().map(|m| m.len());
    Ok((Box::new(file), size))
}

pub(super) async fn head(
    store: &Store,
    root: &Path,
    key: &str,
) -> Result<Option<ObjectInfo>, StoreError> {
    let path = root.join(key);
    match tokio::fs::metadata(&path).await {
        Ok(m) if m.is_file() => Ok(Some(file_info(key.into(), &m))),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(store.file_error(&path, "read", e)),
    }
}

pub(super) async fn delete(store: &Store, root: &Path, key: &str) -> Result<(), StoreError> {
    let path = root.join(key);
    match tokio::fs::remove_file(&path).await {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(store.file_error(&path, "delete", e)),
    }
}

/// Removes the `.partial` files of `prefix` (what a crashed `put` left) and counts them.
pub(super) async fn remove_partials(
    store: &Store,
    root: &Path,
    prefix: &str,
) -> Result<usize, StoreError> {
    let (dir, start) = match prefix.rsplit_once('/') {
        Some((d, s)) => (root.join(d), s),
        None => (root.to_path_buf(), prefix),
    };
    let mut n = 0;
    let Ok(mut entries) = tokio::fs::read_dir(&dir).await else {
        return Ok(0);
    };
    while let Ok(Some(e)) = entries.next_entry().await {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with(start) && name.ends_with(".partial") {
            tokio::fs::remove_file(e.path())
                .await
                .map_err(|err| store.file_error(&e.path(), "delete", err))?;
            n += 1;
        }
    }
    Ok(n)
}

fn file_info(key: String, m: &std::fs::Metadata) -> ObjectInfo {
    ObjectInfo {
        key,
        size: m.len(),
        last_modified: m.modified().ok().and_then(|t| Timestamp::try_from(t).ok()),
        // Files carry no stamp of their own: their record's size and sha256 are the claim.
        stamp: None,
    }
}

pub(super) async fn list(
    store: &Store,
    root: &Path,
    prefix: &str,
) -> Result<Vec<ObjectInfo>, StoreError> {
    let mut out = Vec::new();
    let mut dirs = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = dirs.pop() {
        let mut entries = match tokio::fs::read_dir(&dir).await {
            Ok(e) => e,
            // A location nobody wrote to yet holds nothing.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(store.file_error(&dir, "list", e)),
        };
        while let Some(entry) = entries
            .next_entry()
            .await
            .map_err(|e| store.file_error(&dir, "list", e))?
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            let key = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            // Only descend where the prefix can still match.
            let could_match = key.starts_with(prefix) || prefix.starts_with(&format!("{key}/"));
            let meta = entry
                .metadata()
                .await
                .map_err(|e| store.file_error(&entry.path(), "read", e))?;
            if meta.is_dir() {
                if could_match {
                    dirs.push((entry.path(), key));
                }
            } else if meta.is_file() && key.starts_with(prefix) && !name.ends_with(".partial") {
                out.push(file_info(key, &meta));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::store::Location;

    #[tokio::test]
    async fn files_round_trip_with_sha_listing_and_deletion() {
        let dir = tempfile::tempdir().unwrap();
        let loc = Location::parse(&format!("file://{}/backups", dir.path().display())).unwrap();
        let store = Store::open(&loc, None).await.unwrap();
        assert!(
            store.list("").await.unwrap().is_empty(),
            "a new location is empty"
        );
        store.check().await.unwrap();
        assert!(
            store.list("").await.unwrap().is_empty(),
            "check leaves nothing behind"
        );

        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let seen = std::sync::atomic::AtomicU64::new(0);
        let stored = store
            .put("demo/a.db", &data[..], |n| {
                seen.store(n, std::sync::atomic::Ordering::Relaxed)
            })
            .await
            .unwrap();
        assert_eq!(stored.bytes, data.len() as u64);
        assert_eq!(seen.into_inner(), data.len() as u64);
        let mut want = Sha256::default();
        want.update(&data);
        assert_eq!(stored.sha256_hex, want.finish().1);
        store.put("demo/b.db", &b"x"[..], |_| {}).await.unwrap();
        store.put("other.db", &b"y"[..], |_| {}).await.unwrap();

        let (mut r, size) = store.get("demo/a.db").await.unwrap();
        let mut back = Vec::new();
        r.read_to_end(&mut back).await.unwrap();
        assert_eq!((back == data, size), (true, Some(data.len() as u64)));

        let keys: Vec<String> = store
            .list("demo/")
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.key)
            .collect();
        assert_eq!(keys, ["demo/a.db", "demo/b.db"]);
        assert_eq!(store.list("").await.unwrap().len(), 3);
        let head = store.head("demo/a.db").await.unwrap().unwrap();
        assert_eq!(head.size, data.len() as u64);
        assert!(head.last_modified.is_some());

        store.delete("demo/a.db").await.unwrap();
        store.delete("demo/a.db").await.unwrap(); // idempotent
        assert_eq!(store.head("demo/a.db").await.unwrap(), None);
        let err = store.get("demo/a.db").await.err().unwrap();
        assert!(
            matches!(&err, StoreError::NotFound(u) if u.ends_with("/backups/demo/a.db")),
            "{err}"
        );
    }

    /// A body that yields some bytes and then fails, like a snapshot stream cut off half-way.
    struct Failing(usize);

    impl AsyncRead for Failing {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            if self.0 == 0 {
                return std::task::Poll::Ready(Err(io::Error::other("etcd stream broke")));
            }
            let n = self.0.min(buf.remaining());
            buf.put_slice(&vec![7u8; n]);
            self.0 -= n;
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn snapshots_are_written_0600_in_directories_created_0700() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("backups");
        let store = Store::open(&Location::File(root.clone()), None)
            .await
            .unwrap();
        store.check().await.unwrap();
        store
            .put("demo/daily/a.db", &b"x"[..], |_| {})
            .await
            .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&root.join("demo/daily/a.db")), 0o600);
        for d in ["", "demo", "demo/daily"] {
            assert_eq!(mode(&root.join(d)), 0o700, "{d:?}");
        }
        // A directory that exists keeps the mode its owner chose.
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o750)).unwrap();
        let store = Store::open(&Location::File(shared.clone()), None)
            .await
            .unwrap();
        store.put("b.db", &b"y"[..], |_| {}).await.unwrap();
        assert_eq!((mode(&shared), mode(&shared.join("b.db"))), (0o750, 0o600));
    }

    #[tokio::test]
    async fn a_failed_file_upload_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&Location::File(dir.path().into()), None)
            .await
            .unwrap();
        let err = store
            .put("x/a.db", Failing(5_000_000), |_| {})
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Io { .. }), "{err:?}");
        assert!(
            err.to_string()
                .contains("reading the data to store at file://"),
            "{err}"
        );
        assert!(store.list("").await.unwrap().is_empty());
        let left: Vec<_> = std::fs::read_dir(dir.path().join("x")).unwrap().collect();
        assert!(left.is_empty(), "partial file left: {left:?}");
    }

    #[tokio::test]
    async fn an_unwritable_directory_is_a_clear_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, b"not a dir").unwrap();
        let store = Store::open(&Location::File(blocker.clone()), None)
            .await
            .unwrap();
        let err = store.put("a.db", &b"x"[..], |_| {}).await.unwrap_err();
        assert!(
            err.to_string().contains(&blocker.display().to_string()),
            "{err}"
        );
        let err = store.check().await.unwrap_err();
        assert!(
            err.to_string().contains(&blocker.display().to_string()),
            "{err}"
        );
    }
}
