//! `kubectl etcd scale NAME [--replicas N] [--storage SIZE] [--storage-class CLASS]`: write the
//! new size (of the cluster, of its volumes, or both), then drive the cluster there.
//!
//! A bigger `--storage` or another `--storage-class` re-creates the StatefulSet with the new
//! claim template (its pods keep running), then grows each volume in place where the class
//! allows expansion, or else moves each member to a new volume, one at a time
//! (`plan::storage`); `--dry-run` says which. A smaller `--storage` is refused: no volume
//! shrinks, and the data moves to a smaller cluster only through backup and restore.

use kube::api::Patch;
use serde_json::{Map, Value, json};

use crate::api::KIND;
use crate::cli::flags::{Global, WaitFlags};
use crate::cli::{Session, drive, output, usage};
use crate::error::Error;
use crate::model::{self, InvalidSpec, Storage};

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("size").required(true).multiple(true)
    .args(["replicas", "storage", "storage_class"])))]
pub struct Args {
    pub name: String,
    /// Voting members (1-9), one member added or removed at a time.
    #[arg(long)]
    pub replicas: Option<i64>,
    /// Volume size per member, bigger than now (e.g. 2Gi): grown in place where the
    /// StorageClass allows expansion, else each member moved to a new volume.
    #[arg(long, value_parser = crate::model::Quantity::parse)]
    pub storage: Option<crate::model::Quantity>,
    /// StorageClass to move the member volumes to, one member at a time.
    #[arg(long)]
    pub storage_class: Option<String>,
    #[command(flatten)]
    pub wait: WaitFlags,
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let name = a.name.clone();
    let replicas = a
        .replicas
        .map(model::validate_replicas)
        .transpose()
        .map_err(|e| usage(&name, e))?;
    let s = Session::connect(g).await?;
    s.ensure_crd_current().await?;
    let api = s.clusters();
    let (mut cluster, before) = s.load_cluster(&name).await?;
    let ns = s.namespace.clone();
    let mut spec = Map::new();
    let mut intent = Vec::new();
    if let Some(r) = replicas {
        intent.push(format!(
            "set spec.replicas of EtcdCluster {ns}/{name} from {} to {r}",
            cluster.spec.replicas
        ));
        cluster.spec.replicas = r as i32;
        spec.insert("replicas".into(), json!(r));
    }
    if a.storage.is_some() || a.storage_class.is_some() {
        let storage = &mut cluster.spec.storage;
        if let Some(size) = &a.storage {
            storage.size = Some(size.to_string());
        }
        if let Some(class) = &a.storage_class {
            storage.storage_class_name = Some(class.clone());
        }
        let after = model::validate(&cluster).map_err(|e| usage(&name, e))?;
        let capacity = cluster
            .status
            .as_ref()
            .and_then(|s| s.volume_capacity.as_deref())
            .and_then(model::Quantity::read);
        refuse_shrink(&before.storage, &after.storage, capacity).map_err(|e| usage(&name, e))?;
        intent.push(format!(
            "set spec.storage of EtcdCluster {ns}/{name} from {} to {}",
            crate::plan::storage::describe_storage(&before.storage),
            crate::plan::storage::describe_storage(&after.storage)
        ));
        spec.insert(
            "storage".into(),
            json!({"size": cluster.spec.storage.size, "storageClassName": cluster.spec.storage.storage_class_name}),
        );
    }
    s.validate(&name, &cluster)?;
    if a.wait.dry_run {
        return drive::dry_run(&s, g, &cluster, &intent).await;
    }
    let patched = api
        .patch(
            &name,
            &super::intent_patch(),
            &Patch::Merge(json!({ "spec": Value::Object(spec) })),
        )
        .await
        .map_err(|e| Error::kube("scale", KIND, &ns, &name, e))?;
    for line in &intent {
        output::progress_line(line);
    }
    if let Some(hint) = model::validate(&patched)
        .ok()
        .and_then(|after| quota_hint(&before, &after))
    {
        output::progress_line(&hint);
    }
    drive::drive(&s, g, patched, &a.wait).await
}

/// Bigger volumes keep the quota the members run (changing it restarts every member): says how
/// much more the new volumes hold, when they hold more than the quota.
fn quota_hint(before: &model::Desired, after: &model::Desired) -> Option<String> {
    let (model::Storage::Volume { size: old, .. }, model::Storage::Volume { size: new, .. }) =
        (&before.storage, &after.storage)
    else {
        return None;
    };
    let quota = crate::plan::nospace::quota(after);
    let fits = model::new_cluster_quota(new.signed_bytes());
    (new.bytes() > old.bytes() && fits > quota).then(|| {
        format!(
            "the quota stays {} MiB (changing it restarts every member, one at a time); volumes \
             of {new} hold up to {} MiB: set spec.etcd.quotaBackendBytes to {fits} to use them",
            quota >> 20,
            fits >> 20
        )
    })
}

/// A smaller size, or volumes switched to or from ephemeral storage, is refused before anything
/// is written (the CRD refuses it at admission too), with the way that works. Going back to
/// `capacity` (`status.volumeCapacity`, what the claims have) is no shrink: it undoes an
/// expansion that never showed.
fn refuse_shrink(
    before: &Storage,
    after: &Storage,
    capacity: Option<model::Quantity>,
) -> Result<(), InvalidSpec> {
    match (before, after) {
        (Storage::Volume { size: a, .. }, Storage::Volume { size: b, .. })
            if b.bytes() < a.bytes() && capacity.is_none_or(|c| b.bytes() < c.bytes()) =>
        {
            Err(model::invalid(
                "spec.storage.size",
                format!(
                    "cannot shrink from {a} to {b}: no volume shrinks. Create a new cluster with \
                     --storage {b} and move the data with `kubectl etcd backup` and `kubectl etcd \
                     restore`"
                ),
            ))
        }
        (Storage::Ephemeral, _) => Err(model::invalid(
            "spec.storage",
            "the members keep their data in emptyDir volumes (ephemeral): there is no volume to \
             grow or move; create a new cluster and move the data with backup and restore",
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn volume(size: &str, class: Option<&str>) -> Storage {
        Storage::Volume {
            size: size.into(),
            class: class.map(str::to_owned),
        }
    }

    #[test]
    fn growing_and_moving_are_allowed_shrinking_is_refused_with_the_way_that_works() {
        assert!(refuse_shrink(&volume("1Gi", None), &volume("2Gi", None), None).is_ok());
        assert!(refuse_shrink(&volume("1Gi", None), &volume("1024Mi", Some("fast")), None).is_ok());
        let e = refuse_shrink(&volume("2Gi", None), &volume("1Gi", None), None).unwrap_err();
        assert_eq!(e.field, "spec.storage.size");
        assert!(e.message.contains("kubectl etcd backup"), "{e}");
        assert!(refuse_shrink(&Storage::Ephemeral, &volume("1Gi", None), None).is_err());
        // Back to what the claims have after an expansion that never showed; not below it.
        let stalled = || Some("1Gi".into());
        assert!(refuse_shrink(&volume("2Gi", None), &volume("1Gi", None), stalled()).is_ok());
        assert!(refuse_shrink(&volume("2Gi", None), &volume("512Mi", None), stalled()).is_err());
    }

    #[test]
    fn bigger_volumes_say_the_quota_they_would_hold() {
        let at = |size: &str, quota: Option<i64>| {
            crate::fixtures::cluster("demo")
                .spec(|s| {
                    s.storage.size = Some(size.into());
                    s.etcd.quota_backend_bytes = quota;
                })
                .desired()
        };
        let q = Some(320 << 20);
        let hint = quota_hint(&at("1Gi", q), &at("2Gi", q)).unwrap();
        assert!(
            hint.contains("stays 320 MiB") && hint.contains("quotaBackendBytes to 872415232"),
            "{hint}"
        );
        // Already at etcd's default, or volumes not bigger: nothing to say.
        assert_eq!(quota_hint(&at("1Gi", None), &at("8Gi", None)), None);
        assert_eq!(quota_hint(&at("2Gi", q), &at("2048Mi", q)), None);
    }

    #[test]
    fn scale_needs_a_size_of_some_kind() {
        use clap::Parser;
        let parse = |args: &[&str]| {
            crate::cli::Cli::try_parse_from([&["kubectl-etcd", "scale", "demo"], args].concat())
        };
        assert!(parse(&[]).is_err());
        assert!(parse(&["--storage", "2Gi"]).is_ok());
        // A size that is none is refused as the flag is read, with the way to write one.
        let e = parse(&["--storage", "2GB"]).unwrap_err().to_string();
        assert!(e.contains("--storage") && e.contains("e.g. 1Gi"), "{e}");
        assert!(parse(&["--storage-class", "fast", "--replicas", "3"]).is_ok());
    }
}
