//! What the backup steps change (`plan::backup` decides them, the engine's `act` calls these):
//! deleting what retention lets go, failing an abandoned record, and the reads those rules need
//! beside the records (`restore_names`). Taking a scheduled backup is the recipe's two halves
//! (`take::start`, `take::finish`).

use std::collections::BTreeSet;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};

use super::{select, take};
use crate::api::{EtcdBackup, EtcdCluster, StoreCheck, backup_phase};
use crate::archive::codec::Sha256Reader;
use crate::archive::store::{Location, Store, StoreError};
use crate::error::{BackupError, Error};
use crate::model::Desired;
use crate::reach::Reach;

/// Deletes what retention lets go (`Step::PruneBackups`): the stored object first, then its
/// record (a record without its object would promise a restore that cannot happen). The store
/// is `req`'s (the cluster's destination, credentials and access), opened only if an object is
/// to go.
pub async fn prune(
    reach: &Reach,
    d: &Desired,
    req: &take::Request,
    delete: &[(String, Option<String>)],
) -> Result<(), Error> {
    let api: Api<EtcdBackup> = Api::namespaced(reach.client.clone(), &d.namespace);
    let mut store: Option<Store> = None;
    let result = async {
        for (name, key) in delete {
            if let Some(key) = key {
                if store.is_none() {
                    store = Some(take::open(reach, &d.namespace, req).await?);
                }
                if let Some(store) = &store {
                    store.delete(key).await.map_err(BackupError::from)?;
                }
            }
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(Error::kube("delete", "EtcdBackup", &d.namespace, name, e)),
            }
            tracing::info!(cluster = %d.name, namespace = %d.namespace, backup = %name, "retention deleted a backup");
        }
        Ok(())
    }
    .await;
    if let Some(store) = store {
        store.close().await;
    }
    result
}

/// Reads the object of `record` (`key` in `req`'s destination) to its end and writes what was
/// found into its `status.storeCheck` (`Step::CheckBackup`): the recorded size and sha256, or
/// another object, or none. A store that cannot be read now is an error: the next pass checks
/// again. The stored bytes are hashed as they come, never held.
pub async fn check(
    reach: &Reach,
    d: &Desired,
    req: &take::Request,
    record: &EtcdBackup,
    key: &str,
    now: Timestamp,
) -> Result<(), Error> {
    let Some((url, size, sha256)) = select::claim(record) else {
        return Ok(());
    };
    let store = take::open(reach, &d.namespace, req).await?;
    let found = read_whole(&store, key).await;
    store.close().await;
    let message = match found {
        Ok((n, sum)) => found_as_recorded((n, &sum), (size, sha256), key),
        Err(StoreError::NotFound(_)) => Some(format!("{key} is not in the store")),
        Err(e) => return Err(BackupError::from(e).into()),
    };
    let mut st = record.status.clone().unwrap_or_default();
    st.store_check = Some(StoreCheck {
        url: url.to_string(),
        size,
        sha256: sha256.to_string(),
        matched: message.is_none(),
        message: message.clone(),
        time: Time(now),
    });
    take::write_status(reach, record, &st).await?;
    match message {
        None => {
            tracing::info!(cluster = %d.name, namespace = %d.namespace, backup = %record.name_any(), "found the backup's object as recorded")
        }
        Some(why) => {
            tracing::warn!(cluster = %d.name, namespace = %d.namespace, backup = %record.name_any(), "the backup's object is not as recorded, so retention never counts it: {why}")
        }
    }
    Ok(())
}

/// None when `found` (bytes, sha256) is what the record says, else what differs.
pub fn found_as_recorded(found: (u64, &str), recorded: (i64, &str), key: &str) -> Option<String> {
    let ((n, sum), (size, sha256)) = (found, recorded);
    (i64::try_from(n) != Ok(size) || !sum.eq_ignore_ascii_case(sha256)).then(|| {
        format!(
            "{key} holds {n} bytes with sha256 {sum}; the record says {size} bytes with sha256 {sha256}"
        )
    })
}

/// The size and sha256 of `key`'s stored bytes, read to the end.
async fn read_whole(store: &Store, key: &str) -> Result<(u64, String), StoreError> {
    let (body, _) = store.get(key).await?;
    let mut hashed = Sha256Reader::new(body);
    tokio::io::copy(&mut hashed, &mut tokio::io::sink())
        .await
        .map_err(|e| StoreError::Io {
            what: format!("reading {}", store.url(key)),
            source: e,
        })?;
    Ok(hashed.finish())
}

/// Marks `Failed` a `Running` record whose taker is gone (`Step::AbandonBackup`), after aborting
/// the unfinished upload its object would have had (the key starts with the cluster and the
/// start time; the revision that follows is not recorded until the end) — only in the cluster's
/// own destination (`req`'s): a record may name any place.
pub async fn abandon(
    reach: &Reach,
    d: &Desired,
    req: &take::Request,
    record: &EtcdBackup,
    now: Timestamp,
) -> Result<(), Error> {
    let mut st = record.status.clone().unwrap_or_default();
    let mut aborted = 0;
    let ours = Location::parse(&record.spec.destination)
        .ok()
        .is_some_and(|l| l == req.to.location);
    if let (true, Some(start)) = (ours, select::taken_at(record)) {
        let store = take::open(reach, &d.namespace, req).await?;
        let prefix = take::object_prefix(&d.namespace, &d.name, start);
        let r = store.abort_uploads(&prefix).await;
        store.close().await;
        aborted = r.map_err(BackupError::from)?;
    }
    st.phase = Some(backup_phase::FAILED.into());
    st.completion_time = Some(Time(now));
    st.message = Some(format!(
        "abandoned: {} stopped before finishing it (crashed or killed); {aborted} unfinished upload(s) aborted",
        st.taken_by.as_deref().unwrap_or("its taker")
    ));
    take::write_status(reach, record, &st).await?;
    tracing::info!(cluster = %d.name, namespace = %d.namespace, backup = %record.name_any(), "marked an abandoned backup failed");
    Ok(())
}

/// The cluster as its backup records name it.
pub fn identity(cluster: &EtcdCluster) -> select::Identity<'_> {
    select::Identity {
        uid: cluster.metadata.uid.as_deref(),
        cluster_id: cluster
            .status
            .as_ref()
            .and_then(|s| s.cluster_id.as_deref()),
    }
}

/// Names of the EtcdBackups that an EtcdCluster of `ns` restores from (`spec.restore.backupName`):
/// a restore may still read them, so retention never deletes them.
pub async fn restore_names(client: &kube::Client, ns: &str) -> Result<BTreeSet<String>, Error> {
    let api: Api<EtcdCluster> = Api::namespaced(client.clone(), ns);
    let list = api
        .list(&Default::default())
        .await
        .map_err(|e| Error::kube("list", crate::api::KIND, ns, "", e))?;
    Ok(list
        .items
        .iter()
        .filter_map(|c| c.spec.restore.as_ref()?.backup_name.clone())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_engine_read_is_compared_with_the_record_exactly() {
        let sum = "ab".repeat(32);
        assert_eq!(found_as_recorded((10, &sum), (10, &sum), "k"), None);
        assert_eq!(
            found_as_recorded((10, &sum.to_uppercase()), (10, &sum), "k"),
            None
        );
        let why = found_as_recorded((11, &sum), (10, &sum), "k").unwrap();
        assert!(
            why.contains("k holds 11 bytes") && why.contains("the record says 10 bytes"),
            "{why}"
        );
        assert!(found_as_recorded((10, &"cd".repeat(32)), (10, &sum), "k").is_some());
        assert!(found_as_recorded((10, &sum), (-1, &sum), "k").is_some());
    }
}
