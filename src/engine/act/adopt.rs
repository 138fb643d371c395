//! Adoption's changes to the old cluster's own objects: its StatefulSet's size and its Service.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, Patch, PatchParams};

use crate::engine::Context;
use crate::error::Error;
use crate::model::Desired;
use crate::objects;

/// Scales the adopted cluster's old StatefulSet `name` to `to` (a merge patch of its size: it is
/// not the engine's object, nothing else of it changes).
pub(super) async fn resize_old_statefulset(
    ctx: &Context,
    d: &Desired,
    name: &str,
    to: u32,
) -> Result<(), Error> {
    let api: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &d.namespace);
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "spec": { "replicas": to } })),
    )
    .await
    .map_err(|e| Error::kube("scale", "StatefulSet", &d.namespace, name, e))?;
    Ok(())
}

/// Points the old Service `name` at the engine's members: its selector becomes theirs (the
/// old keys set to null: a merge patch merges maps), and its old selector is kept in the
/// annotation `keys::ANNOTATION_ADOPTED_SELECTOR`, to put back by hand if ever wanted.
pub(super) async fn take_over_service(ctx: &Context, d: &Desired, name: &str) -> Result<(), Error> {
    let ns = &d.namespace;
    let api: Api<Service> = Api::namespaced(ctx.client.clone(), ns);
    let svc = api
        .get(name)
        .await
        .map_err(|e| Error::kube("get", "Service", ns, name, e))?;
    let old = svc.spec.and_then(|s| s.selector).unwrap_or_default();
    let ours = objects::member_labels(&d.name);
    let mut selector = serde_json::Map::new();
    for k in old.keys().filter(|k| !ours.contains_key(k.as_str())) {
        selector.insert(k.clone(), serde_json::Value::Null);
    }
    for (k, v) in &ours {
        selector.insert(k.clone(), v.clone().into());
    }
    let kept = serde_json::to_string(&old).map_err(|e| Error::Serialize(Box::new(e)))?;
    let patch = serde_json::json!({
        "metadata": { "annotations": { crate::keys::ANNOTATION_ADOPTED_SELECTOR: kept } },
        "spec": { "selector": selector },
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| Error::kube("take over", "Service", ns, name, e))?;
    Ok(())
}
