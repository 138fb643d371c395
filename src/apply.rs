//! A status written by server-side apply. Each status has one writer (`EtcdCluster.status`: the
//! engine; `EtcdBackup.status`: whoever takes the backup), which applies the whole of it under
//! its own field manager (`keys::MANAGER_*`): the API server records who owns every field, a
//! field the writer leaves out is removed, and a second writer would show in `managedFields`.
//!
//! Below `backup` and `engine`, which both write through it; no decision here.

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The apply document of `status` for a `K`: its apiVersion and kind, and the status without
/// null fields (an applied null would be a value to own; a field left out is one the writer no
/// longer sets, which the API server removes).
pub fn status_document<K: Resource<DynamicType = ()>>(
    status: &impl Serialize,
) -> Result<Value, serde_json::Error> {
    let mut status = serde_json::to_value(status)?;
    drop_nulls(&mut status);
    Ok(json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    }))
}

fn drop_nulls(v: &mut Value) {
    match v {
        Value::Object(fields) => {
            fields.retain(|_, f| !f.is_null());
            fields.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// Applies `status` to the object `meta` names, as `manager`, forcing: every field of a status
/// belongs to its one writer. A status that other managers own fields of (one written before
/// status was applied, by a merge patch: the API server names that writer `unknown`) is taken
/// over first by applying `previous`, the status read with `meta`, as it stands: from then on a
/// field the writer leaves out is removed, not kept by its old owner. No precondition: for a
/// writer that holds the object alone (a backup's taker); the engine writes through
/// [`status_over`].
pub async fn status<K, S>(
    api: &Api<K>,
    meta: &ObjectMeta,
    previous: Option<&S>,
    manager: &str,
    status: &S,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    S: Serialize,
{
    apply_status(api, meta, previous, manager, status, None).await
}

/// What [`status_over`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// The status is the one given.
    Applied,
    /// Nothing written: the object's status is no longer the one the writer read (another pass
    /// wrote it meanwhile, or the object was deleted and made again). The writer's status was
    /// derived from a stale copy; the next pass starts from the new one.
    Stale,
}

/// Writes `status` over the status `read` carries, and only over it: a compare-and-swap. The
/// object is read again; when its status (`status_of`) or uid differs from `read`'s, nothing is
/// written ([`Written::Stale`]); otherwise `status` is applied with that read's resourceVersion
/// as a precondition, so a write that slips in between makes the API server refuse it (also
/// `Stale`). Changes of spec or metadata since `read` (a finalizer, an annotation the pass itself
/// wrote) do not count: only the status is compared.
pub async fn status_over<K, S>(
    api: &Api<K>,
    read: &K,
    status_of: impl Fn(&K) -> Option<&S>,
    manager: &str,
    status: &S,
) -> Result<Written, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    S: Serialize + PartialEq,
{
    let name = read.meta().name.as_deref().unwrap_or_default();
    let now = api.get(name).await?;
    if now.meta().uid != read.meta().uid || status_of(&now) != status_of(read) {
        return Ok(Written::Stale);
    }
    let at = now.meta().resource_version.clone();
    match apply_status(api, now.meta(), status_of(&now), manager, status, at).await {
        Ok(()) => Ok(Written::Applied),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(Written::Stale),
        Err(e) => Err(e),
    }
}

/// The apply document of `status`, with `resource_version` as the write's precondition when
/// given (the API server refuses the write with 409 if the object changed since).
fn document<K: Resource<DynamicType = ()>>(
    status: &impl Serialize,
    resource_version: Option<&str>,
) -> Result<Value, kube::Error> {
    let mut doc = status_document::<K>(status).map_err(kube::Error::SerdeError)?;
    if let Some(rv) = resource_version {
        doc["metadata"] = json!({ "resourceVersion": rv });
    }
    Ok(doc)
}

async fn apply_status<K, S>(
    api: &Api<K>,
    meta: &ObjectMeta,
    previous: Option<&S>,
    manager: &str,
    status: &S,
    mut at: Option<String>,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    S: Serialize,
{
    let name = meta.name.as_deref().unwrap_or_default();
    let params = PatchParams::apply(manager).force();
    if let Some(previous) = previous.filter(|_| others_own_status(meta, manager)) {
        tracing::info!(
            name,
            namespace = meta.namespace.as_deref().unwrap_or_default(),
            manager,
            "taking over a status written by other field managers"
        );
        let doc = document::<K>(previous, at.as_deref())?;
        let mut shared = api.patch_status(name, &params, &Patch::Apply(doc)).await?;
        // Applying the value a field has makes its owners share it (force settles conflicts
        // only): the others' claims are let go of, so that `manager` owns the status alone.
        if let Some(release) = release_others(shared.meta(), manager) {
            let params = PatchParams {
                field_manager: Some(manager.into()),
                ..PatchParams::default()
            };
            shared = api
                .patch(name, &params, &Patch::Json::<()>(release))
                .await?;
        }
        // The precondition goes on from this process's own writes.
        at = at.and(shared.meta().resource_version.clone());
    }
    let doc = document::<K>(status, at.as_deref())?;
    api.patch_status(name, &params, &Patch::Apply(doc)).await?;
    Ok(())
}

/// The JSON patch that removes the managedFields entries of the status subresource other than
/// `manager`'s, each checked at its index first (highest first, so the lower ones stay where they
/// were read); `None` when there is none.
pub fn release_others(meta: &ObjectMeta, manager: &str) -> Option<json_patch::Patch> {
    use json_patch::jsonptr::PointerBuf;
    use json_patch::{PatchOperation, RemoveOperation, TestOperation};
    let at = |i: usize, field: Option<&str>| {
        let mut path = PointerBuf::from_tokens(["metadata".to_string(), "managedFields".into()]);
        path.push_back(i.to_string());
        if let Some(f) = field {
            path.push_back(f);
        }
        path
    };
    let ops: Vec<PatchOperation> = meta
        .managed_fields
        .as_deref()
        .unwrap_or_default()
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, e)| {
            e.subresource.as_deref() == Some("status") && e.manager.as_deref() != Some(manager)
        })
        .flat_map(|(i, e)| {
            [
                PatchOperation::Test(TestOperation {
                    path: at(i, Some("manager")),
                    value: Value::from(e.manager.clone()),
                }),
                PatchOperation::Test(TestOperation {
                    path: at(i, Some("subresource")),
                    value: Value::from("status"),
                }),
                PatchOperation::Remove(RemoveOperation { path: at(i, None) }),
            ]
        })
        .collect();
    (!ops.is_empty()).then_some(json_patch::Patch(ops))
}

/// Whether a manager other than `manager` owns fields of the status subresource.
pub fn others_own_status(meta: &ObjectMeta, manager: &str) -> bool {
    meta.managed_fields.iter().flatten().any(|e| {
        e.subresource.as_deref() == Some("status")
            && e.manager.as_deref() != Some(manager)
            && e.fields_v1
                .as_ref()
                .is_some_and(|f| f.0.get("f:status").is_some())
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::api::{EtcdBackup, EtcdCluster, EtcdClusterStatus, MaintenanceStatus, Phase};

    #[test]
    fn a_status_another_manager_wrote_is_taken_over_and_ours_is_not() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
        let entry = |manager: &str, subresource: Option<&str>, top: &str| ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some("Update".into()),
            subresource: subresource.map(Into::into),
            fields_v1: Some(FieldsV1(json!({ top: {} }))),
            ..Default::default()
        };
        let meta = |entries: Vec<ManagedFieldsEntry>| ObjectMeta {
            managed_fields: Some(entries),
            ..Default::default()
        };
        let engine = crate::keys::MANAGER_ENGINE;
        // A merge patch of the status before it was applied.
        let legacy = meta(vec![
            entry("unknown", None, "f:spec"),
            entry("unknown", Some("status"), "f:status"),
        ]);
        assert!(others_own_status(&legacy, engine));
        // Ours alone, and the spec's writers: nothing to take over.
        let ours = meta(vec![
            entry(crate::keys::MANAGER_CLI, None, "f:spec"),
            entry(engine, Some("status"), "f:status"),
        ]);
        assert!(!others_own_status(&ours, engine));
        assert!(!others_own_status(&ObjectMeta::default(), engine));
        // Taken over: after the engine applied the status as it stands, the other writers'
        // entries of the status go, each checked where it was read; the spec's stay.
        let shared = meta(vec![
            entry("unknown", Some("status"), "f:status"),
            entry("unknown", None, "f:spec"),
            entry(engine, Some("status"), "f:status"),
            entry("kubectl-patch", Some("status"), "f:status"),
        ]);
        assert_eq!(
            serde_json::to_value(release_others(&shared, engine).unwrap()).unwrap(),
            json!([
                {"op": "test", "path": "/metadata/managedFields/3/manager", "value": "kubectl-patch"},
                {"op": "test", "path": "/metadata/managedFields/3/subresource", "value": "status"},
                {"op": "remove", "path": "/metadata/managedFields/3"},
                {"op": "test", "path": "/metadata/managedFields/0/manager", "value": "unknown"},
                {"op": "test", "path": "/metadata/managedFields/0/subresource", "value": "status"},
                {"op": "remove", "path": "/metadata/managedFields/0"},
            ])
        );
        assert_eq!(release_others(&ours, engine), None);
    }

    #[test]
    fn the_crds_name_each_status_writer_as_keys_does() {
        let crds = serde_json::to_string(&crate::api::crds()).unwrap();
        for m in [crate::keys::MANAGER_ENGINE, crate::keys::MANAGER_BACKUP] {
            assert!(crds.contains(&format!("(field manager `{m}`)")), "{m}");
        }
    }

    /// One place writes each status (tests/e2e_status.rs checks the same on a cluster, by field
    /// manager): no file but this one sends a status write, and only the engine and the backup
    /// recipe send one through it.
    #[test]
    fn only_the_engine_and_the_backup_recipe_write_a_status() {
        let mut writers = BTreeSet::new();
        for (rel, text) in crate::fixtures::sources("") {
            if rel == "apply.rs" {
                continue;
            }
            for write in [
                "patch_status(",
                "replace_status(",
                "_subresource(\"status\"",
            ] {
                assert!(
                    !text.contains(write),
                    "{rel} writes a status itself ({write})"
                );
            }
            if text.contains("apply::status(") || text.contains("apply::status_over(") {
                writers.insert(rel);
            }
        }
        assert_eq!(
            writers,
            BTreeSet::from(["backup/take.rs".to_string(), "engine/mod.rs".to_string()])
        );
    }

    #[test]
    fn the_document_names_the_kind_and_leaves_out_what_is_not_set() {
        let status = EtcdClusterStatus {
            phase: Some(Phase::Running),
            replicas: 3,
            maintenance: Some(MaintenanceStatus::default()),
            ..Default::default()
        };
        let doc = status_document::<EtcdCluster>(&status).unwrap();
        assert_eq!(
            doc,
            json!({
                "apiVersion": "etcd.kubectl-etcd.io/v1alpha1",
                "kind": "EtcdCluster",
                "status": {
                    "phase": "Running",
                    "replicas": 3,
                    "readyReplicas": 0,
                    // Nested nulls go too; empty lists and false stay (values the writer sets).
                    "maintenance": {"defragmented": []},
                },
            })
        );
        let none = EtcdClusterStatus::default();
        let doc = status_document::<EtcdCluster>(&none).unwrap();
        assert!(doc["status"].get("maintenance").is_none(), "{doc}");
        assert_eq!(
            status_document::<EtcdBackup>(&json!({"phase": "Running"})).unwrap()["kind"],
            "EtcdBackup"
        );
    }

    /// The engine's write carries the resourceVersion it read as a precondition; the backup
    /// taker's carries none.
    #[test]
    fn a_precondition_is_the_resource_version_read() {
        let status = json!({"phase": "Running"});
        let doc = document::<EtcdCluster>(&status, Some("42")).unwrap();
        assert_eq!(doc["metadata"], json!({"resourceVersion": "42"}));
        assert_eq!(doc["status"], status);
        let doc = document::<EtcdCluster>(&status, None).unwrap();
        assert!(doc.get("metadata").is_none(), "{doc}");
    }
}
