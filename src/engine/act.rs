//! Act: carry out one `Step`. The only room that changes the world.
//!
//! Every Kubernetes write is a server-side apply with fixed names and owner references (or a
//! delete of a named object), so a repeated or half-done step is harmless.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};

use super::Context;
use crate::error::Error;
use crate::etcd::{EtcdClient, EtcdError};
use crate::model::{Desired, EtcdView, Observed};
use crate::objects;
use crate::plan::Step;

fn apply_params() -> PatchParams {
    PatchParams::apply(objects::FIELD_MANAGER).force()
}

async fn apply<K>(
    api: &Api<K>,
    kind: &'static str,
    d: &Desired,
    name: &str,
    obj: &K,
) -> Result<(), Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    api.patch(name, &apply_params(), &Patch::Apply(obj))
        .await
        .map_err(|e| Error::kube("apply", kind, &d.namespace, name, e))?;
    Ok(())
}

async fn delete<K>(api: &Api<K>, kind: &'static str, d: &Desired, name: &str) -> Result<(), Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(Error::kube("delete", kind, &d.namespace, name, e)),
    }
}

async fn apply_config(
    ctx: &Context,
    d: &Desired,
    data: std::collections::BTreeMap<String, String>,
) -> Result<(), Error> {
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &d.namespace);
    apply(
        &api,
        "ConfigMap",
        d,
        &objects::config_name(&d.name),
        &objects::config_map(d, data),
    )
    .await
}

async fn apply_supporting(ctx: &Context, d: &Desired) -> Result<(), Error> {
    let svc: Api<Service> = Api::namespaced(ctx.client.clone(), &d.namespace);
    apply(
        &svc,
        "Service",
        d,
        &objects::peer_service_name(&d.name),
        &objects::peer_service(d),
    )
    .await?;
    apply(
        &svc,
        "Service",
        d,
        &objects::client_service_name(&d.name),
        &objects::client_service(d),
    )
    .await?;
    let pdb: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), &d.namespace, &ctx.pdb);
    let body: DynamicObject = serde_json::from_value(objects::pdb(d, &ctx.pdb.api_version))
        .map_err(|e| Error::Serialize(Box::new(e)))?;
    apply(
        &pdb,
        "PodDisruptionBudget",
        d,
        &objects::pdb_name(&d.name),
        &body,
    )
    .await
}

async fn apply_statefulset(ctx: &Context, d: &Desired, replicas: u32) -> Result<(), Error> {
    let api: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &d.namespace);
    apply(
        &api,
        "StatefulSet",
        d,
        &objects::statefulset_name(&d.name),
        &objects::statefulset(d, replicas),
    )
    .await
}

/// The seed's volume (the claim the StatefulSet will use for ordinal 0) and its restore pod.
async fn restore_seed(ctx: &Context, d: &Desired) -> Result<(), Error> {
    let Some(r) = &d.restore else { return Ok(()) };
    let (pvc, pod) = restore_objects(d, r);
    if let Some(pvc) = pvc {
        let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &d.namespace);
        let name = objects::volume_name(&d.name, 0);
        apply(&api, "PersistentVolumeClaim", d, &name, &pvc).await?;
    }
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &d.namespace);
    let name = crate::backup::restore::pod_name(&d.name);
    apply(&api, "Pod", d, &name, &pod).await
}

/// The seed's claim (as the StatefulSet's claim template would create it; none for ephemeral
/// storage, which cannot be restored into) and the restore pod.
fn restore_objects(
    d: &Desired,
    r: &crate::model::RestoreSource,
) -> (Option<PersistentVolumeClaim>, Pod) {
    let token = objects::bootstrap_config(d, 1)
        .remove(objects::config_key::INITIAL_TOKEN)
        .unwrap_or_default();
    let pvc = objects::statefulset(d, 1)
        .spec
        .and_then(|s| s.volume_claim_templates)
        .and_then(|mut t| t.pop())
        .map(|mut claim| {
            claim.metadata.name = Some(objects::volume_name(&d.name, 0));
            claim.metadata.namespace = Some(d.namespace.clone());
            claim
        });
    (pvc, crate::backup::restore::restore_pod(d, r, &token))
}

/// A client to the current leader (membership changes and leader moves go there), or failing
/// that to any healthy voter.
async fn leader_client(ctx: &Context, d: &Desired, o: &Observed) -> Result<EtcdClient, String> {
    let EtcdView::Reached(c) = &o.etcd else {
        return Err(format!("no member of {}/{} answered", d.namespace, d.name));
    };
    let mut candidates: Vec<u32> = c
        .leader_member()
        .and_then(|m| m.ordinal)
        .into_iter()
        .collect();
    candidates.extend(c.voters().filter(|m| m.healthy).filter_map(|m| m.ordinal));
    let mut last = None;
    for ord in candidates {
        let ip = o.pods.get(&ord).and_then(|p| p.ip.as_deref());
        match ctx.connect(d, ord, ip).await {
            Ok(client) => return Ok(client),
            Err(e) => last = Some(e.to_string()),
        }
    }
    Err(last.unwrap_or_else(|| {
        format!(
            "no healthy voter of {}/{} to send the change to",
            d.namespace, d.name
        )
    }))
}

/// What carrying out a step amounted to.
pub enum Done {
    /// The change was made.
    Changed,
    /// etcd said "not yet" (e.g. learner still catching up): a wait, not a failure.
    NotYet(String),
}

/// Carries out `step`. At most one change to the world (Bootstrap writes the objects of a new
/// cluster, each idempotent; a crash between them is repaired by the planner).
pub async fn act(ctx: &Context, d: &Desired, o: &Observed, step: &Step) -> Result<Done, Error> {
    let etcd_err = |source: EtcdError| Error::Etcd {
        namespace: d.namespace.clone(),
        name: d.name.clone(),
        source,
    };
    let etcd_result = |r: Result<(), EtcdError>| -> Result<Done, Error> {
        match r {
            Ok(()) => Ok(Done::Changed),
            Err(e) if e.is_transient() => Ok(Done::NotYet(
                crate::error::Error::Etcd {
                    namespace: d.namespace.clone(),
                    name: d.name.clone(),
                    source: e,
                }
                .report(),
            )),
            Err(e) => Err(etcd_err(e)),
        }
    };
    match step {
        Step::Bootstrap { replicas } => {
            apply_config(ctx, d, objects::bootstrap_config(d, *replicas)).await?;
            apply_supporting(ctx, d).await?;
            apply_statefulset(ctx, d, *replicas).await?;
        }
        Step::ApplySupportingObjects => apply_supporting(ctx, d).await?,
        Step::WriteConfig { data, .. } => apply_config(ctx, d, data.clone()).await?,
        Step::UpdateTemplate { replicas } => apply_statefulset(ctx, d, *replicas).await?,
        Step::ResizeStatefulSet { to, .. } => apply_statefulset(ctx, d, *to).await?,
        Step::AddLearner { peer_url, .. } => {
            let mut c = match leader_client(ctx, d, o).await {
                Ok(c) => c,
                Err(why) => return Ok(Done::NotYet(why)),
            };
            return etcd_result(c.add_learner(peer_url).await.map(|_| ()));
        }
        Step::PromoteLearner { id, .. } => {
            let mut c = match leader_client(ctx, d, o).await {
                Ok(c) => c,
                Err(why) => return Ok(Done::NotYet(why)),
            };
            return etcd_result(c.promote(*id).await);
        }
        Step::MoveLeader { to_id, .. } => {
            let mut c = match leader_client(ctx, d, o).await {
                Ok(c) => c,
                Err(why) => return Ok(Done::NotYet(why)),
            };
            return etcd_result(c.move_leader(*to_id).await);
        }
        Step::RemoveMember { id, .. } => {
            let mut c = match leader_client(ctx, d, o).await {
                Ok(c) => c,
                Err(why) => return Ok(Done::NotYet(why)),
            };
            return etcd_result(c.remove(*id).await);
        }
        Step::DeleteVolume { claim, .. } => {
            let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &d.namespace);
            delete(&api, "PersistentVolumeClaim", d, claim).await?;
        }
        Step::RestartMember { pod, .. } => {
            let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &d.namespace);
            delete(&api, "Pod", d, pod).await?;
        }
        Step::RestoreSeed { .. } => restore_seed(ctx, d).await?,
        Step::DeleteRestorePod { pod } => {
            let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &d.namespace);
            delete(&api, "Pod", d, pod).await?;
        }
        Step::Wait { .. } | Step::Hold { .. } | Step::Paused | Step::Idle => {}
    }
    Ok(Done::Changed)
}

/// The objects a step would write, for `--dry-run`.
pub fn planned_objects(ctx: &Context, d: &Desired, step: &Step) -> Vec<serde_json::Value> {
    let v = |x: serde_json::Result<serde_json::Value>| x.unwrap_or_default();
    let with_kind = |mut val: serde_json::Value, api_version: &str, kind: &str| {
        if let Some(m) = val.as_object_mut() {
            m.insert("apiVersion".into(), api_version.into());
            m.insert("kind".into(), kind.into());
        }
        val
    };
    let sts = |r: u32| {
        with_kind(
            v(serde_json::to_value(objects::statefulset(d, r))),
            "apps/v1",
            "StatefulSet",
        )
    };
    let supporting = || {
        vec![
            with_kind(
                v(serde_json::to_value(objects::peer_service(d))),
                "v1",
                "Service",
            ),
            with_kind(
                v(serde_json::to_value(objects::client_service(d))),
                "v1",
                "Service",
            ),
            objects::pdb(d, &ctx.pdb.api_version),
        ]
    };
    let cm = |data| {
        with_kind(
            v(serde_json::to_value(objects::config_map(d, data))),
            "v1",
            "ConfigMap",
        )
    };
    match step {
        Step::Bootstrap { replicas } => {
            let mut out = vec![cm(objects::bootstrap_config(d, *replicas))];
            out.extend(supporting());
            out.push(sts(*replicas));
            out
        }
        Step::ApplySupportingObjects => supporting(),
        Step::WriteConfig { data, .. } => vec![cm(data.clone())],
        Step::UpdateTemplate { replicas } => vec![sts(*replicas)],
        Step::ResizeStatefulSet { to, .. } => vec![sts(*to)],
        Step::RestoreSeed { .. } => match &d.restore {
            Some(r) => {
                let (pvc, pod) = restore_objects(d, r);
                let mut out: Vec<serde_json::Value> = pvc
                    .map(|p| with_kind(v(serde_json::to_value(p)), "v1", "PersistentVolumeClaim"))
                    .into_iter()
                    .collect();
                out.push(with_kind(v(serde_json::to_value(pod)), "v1", "Pod"));
                out
            }
            None => vec![],
        },
        _ => vec![],
    }
}
