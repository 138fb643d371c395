//! Act: carry out one `Step`. The only room that changes the world.
//!
//! Every Kubernetes write is a server-side apply with fixed names and owner references (or a
//! delete of a named object), so a repeated or half-done step is harmless.

mod adopt;
mod leader;
mod maintain;
mod writes;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, Patch, PatchParams};

use super::Context;
use crate::error::Error;
use crate::model::{Desired, Observed};
use crate::objects;
use crate::plan::Step;

use adopt::{resize_old_statefulset, take_over_service};
pub(super) use leader::leader_peers;
use leader::{LeaderCall, on_leader};
pub use maintain::Defragmentation;
use maintain::maintain;
pub use writes::{Object, planned_objects, step_objects};

fn apply_params() -> PatchParams {
    PatchParams::apply(objects::FIELD_MANAGER).force()
}

/// Server-side apply of `obj` under its own name.
pub(super) async fn apply<K>(
    api: Api<K>,
    d: &Desired,
    kind: &'static str,
    obj: &K,
) -> Result<(), Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    api.patch(&name, &apply_params(), &Patch::Apply(obj))
        .await
        .map_err(|e| Error::kube("apply", kind, &d.namespace, &name, e))?;
    Ok(())
}

fn kind_of<K: k8s_openapi::Resource>() -> &'static str {
    K::KIND
}

async fn apply_object(ctx: &Context, d: &Desired, obj: &Object) -> Result<(), Error> {
    let (client, ns) = (ctx.client.clone(), d.namespace.as_str());
    match obj {
        Object::ConfigMap(o) => {
            apply(Api::namespaced(client, ns), d, kind_of::<ConfigMap>(), o).await
        }
        Object::Service(o) => apply(Api::namespaced(client, ns), d, kind_of::<Service>(), o).await,
        Object::StatefulSet(o) => {
            apply(Api::namespaced(client, ns), d, kind_of::<StatefulSet>(), o).await
        }
        Object::Volume(o) => {
            apply(
                Api::namespaced(client, ns),
                d,
                kind_of::<PersistentVolumeClaim>(),
                o,
            )
            .await
        }
        Object::Pod(o) => apply(Api::namespaced(client, ns), d, kind_of::<Pod>(), o).await,
        Object::DisruptionBudget(o) => {
            apply(
                Api::namespaced(client, ns),
                d,
                kind_of::<PodDisruptionBudget>(),
                o,
            )
            .await
        }
        Object::NetworkPolicy(o) => {
            apply(
                Api::namespaced(client, ns),
                d,
                kind_of::<NetworkPolicy>(),
                o,
            )
            .await
        }
        Object::Certificate(o) => apply(Api::namespaced(client, ns), d, "Certificate", o)
            .await
            .map_err(|e| match e {
                Error::Kube { ref source, .. } if is_not_served(source) => Error::Usage(format!(
                    "EtcdCluster {ns}/{}: spec.tls.mode certManager needs cert-manager, and this \
                     cluster serves no Certificate (cert-manager.io/v1): install cert-manager, \
                     or use mode managed (the engine's own CA)",
                    d.name
                )),
                e => e,
            }),
    }
}

/// A 404 on a write: the resource itself is not served (its CRD is not installed).
fn is_not_served(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

async fn delete<K>(api: &Api<K>, d: &Desired, name: &str) -> Result<(), Error>
where
    K: kube::Resource
        + k8s_openapi::Resource
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    delete_with(api, d, name, &DeleteParams::default()).await
}

async fn delete_with<K>(
    api: &Api<K>,
    d: &Desired,
    name: &str,
    params: &DeleteParams,
) -> Result<(), Error>
where
    K: kube::Resource
        + k8s_openapi::Resource
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    match api.delete(name, params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(Error::kube("delete", kind_of::<K>(), &d.namespace, name, e)),
    }
}

/// What carrying out a step amounted to.
pub enum Done {
    /// The change was made.
    Changed,
    /// A member was defragmented: what it won and how long it answered nobody.
    Defragmented(Defragmentation),
    /// etcd said "not yet" (e.g. learner still catching up): a wait, not a failure.
    NotYet(String),
    /// The step may not start now, and this wait says why (a scheduled backup held back by the
    /// operator's slots, `model::fair`).
    Wait(Step),
}

/// Where a restore's time went in its pod, as phases (`-v`; `observe::restore_pod_phases`): read
/// once, only when phases are logged, before the pod goes.
async fn log_restore_pod_phases(api: &Api<Pod>, pod: &str) {
    if !tracing::enabled!(target: crate::phase::TARGET, tracing::Level::DEBUG) {
        return;
    }
    if let Ok(Some(p)) = api.get_opt(pod).await {
        for (phase, took) in super::observe::restore_pod_phases(&p) {
            crate::phase::ended(&tracing::Span::current(), &phase, took);
        }
    }
}

/// Carries out `step`. At most one change to the world (Bootstrap writes the objects of a new
/// cluster, each idempotent; a crash between them is repaired by the planner).
pub async fn act(ctx: &Context, d: &Desired, o: &Observed, step: &Step) -> Result<Done, Error> {
    if let Step::RecreateStatefulSet { .. } = step {
        return recreate_statefulset(ctx, d, step).await;
    }
    for obj in step_objects(d, step) {
        apply_object(ctx, d, &obj).await?;
    }
    let call = |c| on_leader(ctx, d, o, c);
    match step {
        // `spec.networkPolicy.enabled: false`: the policy goes (observe saw one).
        Step::ApplySupportingObjects if !d.network_policy => {
            let api: Api<NetworkPolicy> = Api::namespaced(ctx.client.clone(), &d.namespace);
            delete(&api, d, &objects::network_policy_name(&d.name)).await?;
        }
        Step::Bootstrap { .. }
        | Step::Hibernate { .. }
        | Step::RecreateStatefulSet { .. }
        | Step::ApplySupportingObjects
        | Step::WriteConfig { .. }
        | Step::UpdateTemplate { .. }
        | Step::ResizeStatefulSet { .. }
        | Step::RestoreSeed { .. }
        | Step::FenceClients => {}
        // `spec.recovery` (`plan::recover`): the I/O is `engine::recover`'s.
        Step::TakeRecoverySnapshot { .. }
        | Step::VerifyRecoverySnapshot { .. }
        | Step::DeleteLostMembers { .. }
        | Step::MarkRecovered { .. } => return super::recover::act(ctx, (d, o), step).await,
        Step::AddLearner { peer_url, .. } => return call(LeaderCall::AddLearner(peer_url)).await,
        Step::PromoteLearner { id, .. } => return call(LeaderCall::Promote(*id)).await,
        Step::MoveLeader { to_id, .. } => return call(LeaderCall::MoveLeader(*to_id)).await,
        Step::RemoveMember { id, .. } => return call(LeaderCall::Remove(*id)).await,
        Step::UpdatePeerUrl { id, to, .. } => {
            return call(LeaderCall::UpdatePeerUrl(*id, to)).await;
        }
        Step::DeleteVolume { claim, .. } => {
            let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &d.namespace);
            delete(&api, d, claim).await?;
        }
        Step::RestartMember { pod, .. } => return restart_pod(ctx, d, pod).await,
        Step::WipeMember {
            claim, pod, force, ..
        } => wipe_member(ctx, d, claim.as_deref(), pod, *force).await?,
        Step::DeleteRestorePod { pod } => {
            let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &d.namespace);
            log_restore_pod_phases(&api, pod).await;
            delete(&api, d, pod).await?;
        }
        // The decision is the change: the status this pass writes records it, and the next
        // pass's template runs the old version again (`plan::upgrade::settle`).
        Step::RollBack { .. } => {}
        Step::Downgrade { action, target } => {
            return call(LeaderCall::Downgrade(*action, *target)).await;
        }
        Step::PreUpgradeSnapshot { to, destination } => {
            let url = super::backups::pre_upgrade_snapshot(ctx, (d, o), *to, destination).await?;
            tracing::info!(cluster = %d.name, namespace = %d.namespace, %url, "pre-upgrade snapshot taken");
        }
        Step::TakeScheduledBackup { .. }
        | Step::PruneBackups { .. }
        | Step::AbandonBackup { .. }
        | Step::Drill { .. }
        | Step::CheckBackup { .. } => return super::backups::act(ctx, (d, o), step).await,
        Step::Compact { .. }
        | Step::Defragment { .. }
        | Step::DisarmNospace { .. }
        | Step::Auth { .. } => {
            return Ok(maintain(ctx, d, o, step).await);
        }
        // The decision is the change: the status this pass writes records it, and the next
        // pass's template runs the raised quota (`plan::nospace::settle`).
        Step::RaiseQuota { .. } => {}
        Step::ResizeOldStatefulSet { name, to, .. } => {
            resize_old_statefulset(ctx, d, name, *to).await?
        }
        Step::TakeOverService { service } => take_over_service(ctx, d, service).await?,
        Step::GrowVolume { claim, to, .. } => grow_volume(ctx, d, claim, to).await?,
        Step::HibernateSnapshot { destination } => {
            let url = super::backups::hibernate_snapshot(ctx, (d, o), destination).await?;
            tracing::info!(cluster = %d.name, namespace = %d.namespace, %url, "snapshot before hibernating taken");
        }
        Step::IssueCertificate { role, why, .. } => super::pki::issue(ctx, d, *role, *why).await?,
        // Applied above (`step_objects`).
        Step::RequestCertificate { .. } => {}
        Step::Hibernated | Step::Wait { .. } | Step::Hold { .. } | Step::Paused | Step::Idle => {}
    }
    Ok(Done::Changed)
}

/// `Step::GrowVolume`: a merge patch of the claim's request alone, with when it was asked
/// (`objects::ANNOTATION_GROW_ASKED`: the planner bounds the wait for its capacity from then). The
/// claim is the StatefulSet's (it made it), and an apply would have to restate (and take over)
/// the rest of its spec.
async fn grow_volume(ctx: &Context, d: &Desired, claim: &str, to: &str) -> Result<(), Error> {
    let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &d.namespace);
    let patch = serde_json::json!({
        "metadata": {"annotations": {objects::ANNOTATION_GROW_ASKED: jiff::Timestamp::now().to_string()}},
        "spec": {"resources": {"requests": {"storage": to}}},
    });
    api.patch(claim, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| {
            Error::kube(
                "grow",
                kind_of::<PersistentVolumeClaim>(),
                &d.namespace,
                claim,
                e,
            )
        })?;
    Ok(())
}

/// How long `RecreateStatefulSet` waits for the old StatefulSet to go (the garbage collector
/// orphans its pods first); after that the next pass sees it terminating and waits.
const RECREATE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// `Step::RecreateStatefulSet`: its claim templates are immutable, so the StatefulSet is deleted
/// with propagation `Orphan` (its pods and claims keep running and stay), then applied again with
/// the new claim template; the new one adopts the pods (same selector, same pod template, so the
/// same revision: no pod restarts). A crash in between leaves no StatefulSet, which the planner
/// brings back on the members' volumes (`workload_missing`).
async fn recreate_statefulset(ctx: &Context, d: &Desired, step: &Step) -> Result<Done, Error> {
    let api: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &d.namespace);
    let name = objects::statefulset_name(&d.name);
    delete_with(&api, d, &name, &DeleteParams::orphan()).await?;
    let started = std::time::Instant::now();
    loop {
        let gone = api
            .get_opt(&name)
            .await
            .map_err(|e| Error::kube("get", kind_of::<StatefulSet>(), &d.namespace, &name, e))?
            .is_none();
        if gone {
            break;
        }
        if started.elapsed() > RECREATE_PATIENCE {
            return Ok(Done::NotYet(format!(
                "StatefulSet {}/{name} is still being deleted",
                d.namespace
            )));
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    for obj in step_objects(d, step) {
        apply_object(ctx, d, &obj).await?;
    }
    Ok(Done::Changed)
}

/// The claim first: deleting the pod first would let the StatefulSet start it again on the old
/// volume. The claim stays (Terminating) until its pod is gone; `force` for a pod on a node that
/// is gone.
async fn wipe_member(
    ctx: &Context,
    d: &Desired,
    claim: Option<&str>,
    pod: &str,
    force: bool,
) -> Result<(), Error> {
    if let Some(claim) = claim {
        let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &d.namespace);
        delete(&api, d, claim).await?;
    }
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &d.namespace);
    if force {
        delete_with(&api, d, pod, &DeleteParams::default().grace_period(0)).await?;
    } else {
        delete(&api, d, pod).await?;
    }
    Ok(())
}

/// Restarts a member's pod, judged on a fresh read of it: a pod that serves (ready) is evicted
/// through the Eviction API, so the cluster's disruption budget is honoured (a refusal is a
/// "not yet"); a pod that serves nobody is deleted (it is already disrupted, and the budget's
/// default unhealthy-pod policy refuses its eviction while any other pod is down).
async fn restart_pod(ctx: &Context, d: &Desired, pod: &str) -> Result<Done, Error> {
    let ns = &d.namespace;
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
    let current = api
        .get_opt(pod)
        .await
        .map_err(|e| Error::kube("get", "Pod", ns, pod, e))?;
    let Some(current) = current.filter(|p| p.metadata.deletion_timestamp.is_none()) else {
        return Ok(Done::Changed);
    };
    let ready = current
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    if !ready {
        delete(&api, d, pod).await?;
        return Ok(Done::Changed);
    }
    let body = serde_json::json!({
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": { "name": pod, "namespace": ns },
    });
    let request = http::Request::post(format!("/api/v1/namespaces/{ns}/pods/{pod}/eviction"))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(serde_json::to_vec(&body).map_err(|e| Error::Serialize(Box::new(e)))?)
        .map_err(|e| Error::Serialize(Box::new(e)))?;
    match ctx.client.request::<serde_json::Value>(request).await {
        Ok(_) => Ok(Done::Changed),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Done::Changed),
        Err(kube::Error::Api(s)) if s.code == 429 => Ok(Done::NotYet(format!(
            "the disruption budget of {ns}/{} allows no eviction of {pod} now",
            d.name
        ))),
        Err(e) => Err(Error::kube("evict", "Pod", ns, pod, e)),
    }
}
