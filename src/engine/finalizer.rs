//! The engine's finalizer on an EtcdCluster, added and released with JSON patches guarded by
//! `test` operations, as kube-runtime's finalizer helper does: the list is never replaced, so a
//! finalizer another controller added or removed since this pass read the cluster is neither
//! dropped nor brought back. When the list changed in between, the `test` fails (HTTP 422) and
//! nothing is written; that change wakes the next pass, which patches from the list it reads.
//!
//! The patches are built by pure functions (tested below); `add` and `remove` send them.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, RemoveOperation, TestOperation};
use kube::ResourceExt;
use kube::api::{Api, PatchParams};
use serde_json::Value;

use crate::api::{EtcdCluster, FINALIZER, KIND};
use crate::error::Error;

/// What sending a guarded patch came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patched {
    /// Written, or there was nothing to write.
    Done,
    /// The finalizers changed since they were read: nothing written, the next pass tries again.
    Changed,
}

fn finalizers_path() -> PointerBuf {
    PointerBuf::from_tokens(["metadata", "finalizers"])
}

fn finalizer_path(index: usize) -> PointerBuf {
    PointerBuf::from_tokens([
        "metadata".to_string(),
        "finalizers".into(),
        index.to_string(),
    ])
}

/// Adds `FINALIZER` to a list read as `current` (which lacks it): the whole list when there was
/// none, else appended to exactly the list read.
pub fn add_patch(current: &[String]) -> Patch {
    if current.is_empty() {
        // An empty list is never stored (the API server drops it): the field is absent.
        return Patch(vec![
            PatchOperation::Test(TestOperation {
                path: finalizers_path(),
                value: Value::Null,
            }),
            PatchOperation::Add(AddOperation {
                path: finalizers_path(),
                value: Value::from(vec![FINALIZER]),
            }),
        ]);
    }
    Patch(vec![
        // The API server does not deduplicate finalizers: fail rather than add a second one.
        PatchOperation::Test(TestOperation {
            path: finalizers_path(),
            value: Value::from(current.to_vec()),
        }),
        PatchOperation::Add(AddOperation {
            path: finalizers_path().with_trailing_token("-"),
            value: Value::from(FINALIZER),
        }),
    ])
}

/// Removes every `FINALIZER` from a list read as `current`, each checked at its index first
/// (highest index first, so the lower ones stay where they were read); None when it holds none.
pub fn remove_patch(current: &[String]) -> Option<Patch> {
    let ops: Vec<PatchOperation> = current
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, f)| *f == FINALIZER)
        .flat_map(|(i, _)| {
            [
                PatchOperation::Test(TestOperation {
                    path: finalizer_path(i),
                    value: Value::from(FINALIZER),
                }),
                PatchOperation::Remove(RemoveOperation {
                    path: finalizer_path(i),
                }),
            ]
        })
        .collect();
    (!ops.is_empty()).then_some(Patch(ops))
}

/// Puts the finalizer on `cluster` unless it is there already.
pub async fn add(api: &Api<EtcdCluster>, cluster: &EtcdCluster) -> Result<Patched, Error> {
    if cluster.finalizers().iter().any(|f| f == FINALIZER) {
        return Ok(Patched::Done);
    }
    send(api, cluster, add_patch(cluster.finalizers()))
        .await
        .map_err(|e| kube_error("add the finalizer to", cluster, e))
}

/// Takes the finalizer off `cluster`; a cluster already gone has nothing to release.
pub async fn remove(api: &Api<EtcdCluster>, cluster: &EtcdCluster) -> Result<Patched, Error> {
    let Some(patch) = remove_patch(cluster.finalizers()) else {
        return Ok(Patched::Done);
    };
    match send(api, cluster, patch).await {
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Patched::Done),
        sent => sent.map_err(|e| kube_error("release the finalizer of", cluster, e)),
    }
}

async fn send(
    api: &Api<EtcdCluster>,
    cluster: &EtcdCluster,
    patch: Patch,
) -> Result<Patched, kube::Error> {
    let name = cluster.name_any();
    match api
        .patch(
            &name,
            &PatchParams {
                field_manager: Some(crate::keys::MANAGER_ENGINE.into()),
                ..PatchParams::default()
            },
            &kube::api::Patch::Json::<()>(patch),
        )
        .await
    {
        Ok(_) => Ok(Patched::Done),
        // A `test` that failed: the list changed since this pass read it.
        Err(kube::Error::Api(s)) if s.code == 422 => {
            tracing::debug!(
                cluster = %name,
                namespace = %cluster.namespace().unwrap_or_default(),
                "the finalizers changed since this pass read them; the next pass tries again"
            );
            Ok(Patched::Changed)
        }
        Err(e) => Err(e),
    }
}

fn kube_error(what: &'static str, cluster: &EtcdCluster, e: kube::Error) -> Error {
    let ns = cluster.namespace().unwrap_or_else(|| "default".into());
    Error::kube(what, KIND, &ns, &cluster.name_any(), e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_finalizer_is_added_as_the_whole_list_only_when_there_was_none() {
        let patch = serde_json::to_value(add_patch(&[])).unwrap();
        assert_eq!(
            patch,
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
            ])
        );
    }

    #[test]
    fn the_finalizer_is_appended_to_exactly_the_list_read() {
        let patch = serde_json::to_value(add_patch(&list(&["other.io/keep"]))).unwrap();
        assert_eq!(
            patch,
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": ["other.io/keep"]},
                {"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER},
            ])
        );
    }

    #[test]
    fn releasing_removes_only_ours_each_checked_at_its_index() {
        let patch = remove_patch(&list(&["a.io/x", FINALIZER, "b.io/y"])).unwrap();
        assert_eq!(
            serde_json::to_value(patch).unwrap(),
            json!([
                {"op": "test", "path": "/metadata/finalizers/1", "value": FINALIZER},
                {"op": "remove", "path": "/metadata/finalizers/1"},
            ])
        );
    }

    #[test]
    fn a_duplicated_finalizer_is_removed_highest_index_first() {
        let patch = remove_patch(&list(&[FINALIZER, "a.io/x", FINALIZER])).unwrap();
        let paths: Vec<String> = patch.0.iter().map(|op| op.path().to_string()).collect();
        assert_eq!(
            paths,
            [
                "/metadata/finalizers/2",
                "/metadata/finalizers/2",
                "/metadata/finalizers/0",
                "/metadata/finalizers/0"
            ]
        );
    }

    #[test]
    fn nothing_to_release_sends_no_patch() {
        assert_eq!(remove_patch(&list(&["a.io/x"])), None);
        assert_eq!(remove_patch(&[]), None);
    }
}
