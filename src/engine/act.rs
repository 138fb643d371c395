//! Act: carry out one `Step`. The only room that changes the world.
//!
//! Every Kubernetes write is a server-side apply with fixed names and owner references (or a
//! delete of a named object), so a repeated or half-done step is harmless.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, Patch, PatchParams};

use super::Context;
use crate::error::Error;
use crate::etcd::{EtcdClient, EtcdError};
use crate::model::{Desired, EtcdView, Observed, RestoreMark};
use crate::objects;
use crate::plan::{AuthStep, Step};

fn apply_params() -> PatchParams {
    PatchParams::apply(objects::FIELD_MANAGER).force()
}

/// One Kubernetes object a step writes, typed, so that its kind and apiVersion come from its
/// type (or, for the disruption budget, from the version the server serves), never from a string
/// typed by hand.
// At most five per pass, built and dropped at once: their size costs nothing measurable.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Object {
    ConfigMap(ConfigMap),
    Service(Service),
    DisruptionBudget(PodDisruptionBudget),
    NetworkPolicy(NetworkPolicy),
    StatefulSet(StatefulSet),
    /// The seed's volume of a restored cluster (as the claim template would make it).
    Volume(PersistentVolumeClaim),
    /// The one-shot restore pod.
    Pod(Pod),
    /// Mode certManager: a leaf's cert-manager Certificate.
    Certificate(objects::cert_manager::Certificate),
}

impl Object {
    /// The API group and resource the object is written to, from its type.
    pub fn resource(&self) -> (String, String) {
        use crate::objects::access::resource_of;
        match self {
            Object::ConfigMap(_) => resource_of::<ConfigMap>(),
            Object::Service(_) => resource_of::<Service>(),
            Object::DisruptionBudget(_) => resource_of::<PodDisruptionBudget>(),
            Object::NetworkPolicy(_) => resource_of::<NetworkPolicy>(),
            Object::StatefulSet(_) => resource_of::<StatefulSet>(),
            Object::Volume(_) => resource_of::<PersistentVolumeClaim>(),
            Object::Pod(_) => resource_of::<Pod>(),
            Object::Certificate(_) => resource_of::<objects::cert_manager::Certificate>(),
        }
    }

    /// The object as the API server would receive it (apiVersion and kind included).
    pub fn to_json(&self) -> serde_json::Value {
        let v = match self {
            Object::ConfigMap(o) => serde_json::to_value(o),
            Object::Service(o) => serde_json::to_value(o),
            Object::DisruptionBudget(o) => serde_json::to_value(o),
            Object::NetworkPolicy(o) => serde_json::to_value(o),
            Object::StatefulSet(o) => serde_json::to_value(o),
            Object::Volume(o) => serde_json::to_value(o),
            Object::Pod(o) => serde_json::to_value(o),
            Object::Certificate(o) => serde_json::to_value(o),
        };
        // Serializing typed Kubernetes objects cannot fail (string keys only).
        v.unwrap_or_default()
    }
}

/// The objects `step` writes, in the order they are written: the one table from steps to
/// objects, which `act` applies and `--dry-run` prints. Pure.
pub fn step_objects(d: &Desired, step: &Step) -> Vec<Object> {
    // `spec.networkPolicy.enabled: false`: `act` deletes the policy instead.
    let policy =
        || Some(Object::NetworkPolicy(objects::network_policy(d))).filter(|_| d.network_policy);
    let supporting = || {
        [
            Object::Service(objects::peer_service(d)),
            Object::Service(objects::client_service(d)),
            Object::DisruptionBudget(objects::pdb(d)),
        ]
        .into_iter()
        .chain(policy())
        .collect::<Vec<_>>()
    };
    let config = |data| Object::ConfigMap(objects::config_map(d, data));
    let sts = |replicas| Object::StatefulSet(objects::statefulset(d, replicas));
    match step {
        Step::Bootstrap { replicas } => {
            // A restored seed's claim says `Restored` before anything else is written: from then
            // on the restore never runs again (see `plan::restore_seed`).
            let mut out: Vec<Object> = seed_claim(d, RestoreMark::Restored)
                .filter(|_| d.restore.is_some())
                .into_iter()
                .collect();
            out.push(config(objects::bootstrap_config(d, *replicas)));
            out.extend(supporting());
            out.push(sts(*replicas));
            out
        }
        Step::ApplySupportingObjects => supporting(),
        // `spec.recovery`: the client Service selecting no member (`plan::recover`).
        Step::FenceClients => vec![Object::Service(objects::fenced_client_service(d))],
        Step::WriteConfig { data, .. } => vec![config(data.clone())],
        // The peer Service and the NetworkPolicy carry the template's metrics port: a template
        // that gains or drops the listener (`spec.metrics`) brings them along.
        Step::UpdateTemplate { replicas } => [Object::Service(objects::peer_service(d))]
            .into_iter()
            .chain(policy())
            .chain([sts(*replicas)])
            .collect(),
        Step::ResizeStatefulSet { to, .. } => vec![sts(*to)],
        // Applied after the old StatefulSet is gone (`recreate_statefulset`).
        Step::RecreateStatefulSet { replicas, .. } => vec![sts(*replicas)],
        Step::Hibernate { .. } => vec![sts(0)],
        Step::RestoreSeed { .. } => restore_objects(d),
        Step::RequestCertificate { role, .. } => d
            .cert_manager
            .iter()
            .map(|cm| Object::Certificate(objects::cert_manager::certificate(d, cm, *role)))
            .collect(),
        Step::AddLearner { .. }
        | Step::PromoteLearner { .. }
        | Step::MoveLeader { .. }
        | Step::RemoveMember { .. }
        | Step::UpdatePeerUrl { .. }
        | Step::DeleteVolume { .. }
        | Step::RestartMember { .. }
        | Step::WipeMember { .. }
        | Step::DeleteRestorePod { .. }
        | Step::TakeRecoverySnapshot { .. }
        | Step::VerifyRecoverySnapshot { .. }
        | Step::DeleteLostMembers { .. }
        | Step::MarkRecovered { .. }
        | Step::RollBack { .. }
        | Step::Downgrade { .. }
        | Step::PreUpgradeSnapshot { .. }
        | Step::Compact { .. }
        | Step::Defragment { .. }
        | Step::DisarmNospace { .. }
        | Step::RaiseQuota { .. }
        | Step::Auth { .. }
        | Step::TakeScheduledBackup { .. }
        | Step::PruneBackups { .. }
        | Step::CheckBackup { .. }
        | Step::AbandonBackup { .. }
        // Patches of the old cluster's objects, not objects of the engine's.
        | Step::ResizeOldStatefulSet { .. }
        | Step::TakeOverService { .. }
        | Step::GrowVolume { .. }
        | Step::HibernateSnapshot { .. }
        | Step::Hibernated
        // A new key is drawn when acting: no Secret to print beforehand.
        | Step::IssueCertificate { .. }
        | Step::Wait { .. }
        | Step::Hold { .. }
        | Step::Paused
        | Step::Idle => vec![],
    }
}

/// The seed's claim (as the StatefulSet's claim template makes it; none for ephemeral storage) and
/// the restore pod that fills it.
fn restore_objects(d: &Desired) -> Vec<Object> {
    let Some(r) = &d.restore else { return vec![] };
    let token = objects::bootstrap_config(d, 1)
        .remove(objects::config_key::INITIAL_TOKEN)
        .unwrap_or_default();
    seed_claim(d, RestoreMark::Restoring)
        .into_iter()
        .chain([Object::Pod(crate::objects::restore::restore_pod(
            d, r, &token,
        ))])
        .collect()
}

/// The seed's claim as the StatefulSet's claim template makes it, marked `mark` (none for
/// ephemeral storage).
fn seed_claim(d: &Desired, mark: RestoreMark) -> Option<Object> {
    objects::statefulset(d, 1)
        .spec
        .and_then(|s| s.volume_claim_templates)
        .and_then(|mut t| t.pop())
        .map(|mut claim| {
            claim.metadata.name = Some(objects::volume_name(&d.name, 0));
            claim.metadata.namespace = Some(d.namespace.clone());
            claim
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(
                    objects::ANNOTATION_RESTORE.to_string(),
                    mark.as_str().to_string(),
                );
            Object::Volume(claim)
        })
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

/// The peers the leader counts as connected (`Observed::leader_peers`); `None` when no leader is
/// known or its `/metrics` cannot be read (the removal is then asked as it is, and etcd checks).
pub(super) async fn leader_peers(
    ctx: &Context,
    d: &Desired,
    o: &Observed,
) -> Option<crate::model::LeaderPeers> {
    let EtcdView::Reached(c) = &o.etcd else {
        return None;
    };
    let leader = c.leader_member()?;
    let ordinal = leader.ordinal?;
    let ip = o.pods.get(&ordinal).and_then(|p| p.ip.as_deref());
    let read = async {
        let client = ctx.connect(d, ordinal, ip).await?;
        client.peer_view().await
    };
    match read.await {
        Ok(view) if view.member_id == leader.id => {
            let connected: std::collections::BTreeSet<u64> = view
                .active
                .into_iter()
                .filter_map(|(id, active)| active.then_some(id))
                .collect();
            tracing::debug!(cluster = %d.name, namespace = %d.namespace, leader = %leader.name, connected = ?connected, "the leader's peer count");
            Some(crate::model::LeaderPeers {
                leader: leader.id,
                connected,
            })
        }
        Ok(_) => None,
        Err(e) => {
            tracing::debug!(cluster = %d.name, namespace = %d.namespace, error = %e, "the leader's peer count was not read");
            None
        }
    }
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
    // While an old cluster is adopted and its member leads, the change goes to it.
    let old_leads = c.leader_member().is_some_and(|m| m.ordinal.is_none());
    if !old_leads {
        for ord in candidates {
            let ip = o.pods.get(&ord).and_then(|p| p.ip.as_deref());
            match ctx.connect(d, ord, ip).await {
                Ok(client) => return Ok(client),
                Err(e) => last = Some(e.to_string()),
            }
        }
    }
    if let Some(a) = &d.adopt {
        match old_leader_client(ctx, d, &a.endpoints, c.leader).await {
            Ok(client) => return Ok(client),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        format!(
            "no healthy voter of {}/{} to send the change to",
            d.namespace, d.name
        )
    }))
}

/// A client to the old member that leads (`leader`), found among the adopted cluster's
/// `endpoints` by asking each who it is.
async fn old_leader_client(
    ctx: &Context,
    d: &Desired,
    endpoints: &[String],
    leader: Option<u64>,
) -> Result<EtcdClient, String> {
    let mut last = String::from("no old member answered");
    for url in endpoints {
        match ctx.connect_url(d, url).await {
            Ok(mut c) => match c.status().await {
                Ok(s) if Some(s.member_id) == leader => return Ok(c),
                Ok(_) => last = format!("no old member at {} leads", endpoints.join(", ")),
                Err(e) => last = e.to_string(),
            },
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

/// Scales the adopted cluster's old StatefulSet `name` to `to` (a merge patch of its size: it is
/// not the engine's object, nothing else of it changes).
async fn resize_old_statefulset(
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
async fn take_over_service(ctx: &Context, d: &Desired, name: &str) -> Result<(), Error> {
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

/// What carrying out a step amounted to.
pub enum Done {
    /// The change was made.
    Changed,
    /// A member was defragmented: what it won and how long it answered nobody.
    Defragmented(Defragmentation),
    /// etcd said "not yet" (e.g. learner still catching up): a wait, not a failure.
    NotYet(String),
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
        Step::TakeScheduledBackup { .. } => super::backups::start_scheduled(ctx, (d, o)).await?,
        Step::PruneBackups { delete, foreign } => {
            super::backups::prune(ctx, d, delete, foreign).await?
        }
        Step::AbandonBackup { record, .. } => super::backups::abandon(ctx, (d, o), record).await?,
        Step::CheckBackup { record, key, .. } => {
            super::backups::check_stored(ctx, (d, o), record, key).await?
        }
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

/// What a step asks of the leader (membership and etcd's downgrade API).
enum LeaderCall<'a> {
    AddLearner(&'a str),
    Promote(u64),
    MoveLeader(u64),
    Remove(u64),
    UpdatePeerUrl(u64, &'a str),
    Downgrade(crate::plan::DowngradeStep, crate::model::Version),
}

/// Sends `call` to the leader: not yet while no leader answers or on a transient error.
async fn on_leader(
    ctx: &Context,
    d: &Desired,
    o: &Observed,
    call: LeaderCall<'_>,
) -> Result<Done, Error> {
    use crate::etcd::DowngradeAction as A;
    let mut c = match leader_client(ctx, d, o).await {
        Ok(c) => c,
        Err(why) => return Ok(Done::NotYet(why)),
    };
    let r = match call {
        LeaderCall::AddLearner(peer_url) => c.add_learner(peer_url).await.map(|_| ()),
        LeaderCall::Promote(id) => c.promote(id).await,
        LeaderCall::MoveLeader(id) => c.move_leader(id).await,
        LeaderCall::Remove(id) => c.remove(id).await,
        LeaderCall::UpdatePeerUrl(id, url) => c.update_peer_url(id, url).await,
        LeaderCall::Downgrade(action, target) => {
            let minor = format!("{}.{}", target.major, target.minor);
            match action {
                crate::plan::DowngradeStep::Enable => {
                    match c.downgrade(A::Validate, &minor).await {
                        Ok(_) => c.downgrade(A::Enable, &minor).await.map(|_| ()),
                        Err(e) => Err(e),
                    }
                }
                crate::plan::DowngradeStep::Cancel => {
                    c.downgrade(A::Cancel, &minor).await.map(|_| ())
                }
            }
        }
    };
    let etcd = |source: EtcdError| Error::Etcd {
        namespace: d.namespace.clone(),
        name: d.name.clone(),
        source,
    };
    match r {
        Ok(()) => Ok(Done::Changed),
        Err(e) if e.is_transient() => Ok(Done::NotYet(etcd(e).report())),
        Err(e) => Err(etcd(e)),
    }
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

/// Longest a member's defragmentation may take (a member answers nobody meanwhile).
const DEFRAG_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// One member's defragmentation, measured (for the operator's metrics and the CLI's report).
#[derive(Clone, Debug, PartialEq)]
pub struct Defragmentation {
    pub member: String,
    /// `plan::Trigger::label`: nospace, requested or policy.
    pub trigger: &'static str,
    /// The member's database file before and after (`None`: its status did not answer).
    pub before: Option<i64>,
    pub after: Option<i64>,
    /// How long the member answered nobody.
    pub pause: std::time::Duration,
}

impl Defragmentation {
    /// Bytes given back to the file system (0 when unknown).
    pub fn won(&self) -> u64 {
        match (self.before, self.after) {
            (Some(b), Some(a)) => u64::try_from(b.saturating_sub(a)).unwrap_or(0),
            _ => 0,
        }
    }
}

/// Defragments the member at `ordinal`, measuring what it won and its pause.
async fn defragment(
    ctx: &Context,
    d: &Desired,
    o: &Observed,
    (ordinal, member, trigger): (u32, &str, &'static str),
) -> Result<Defragmentation, EtcdError> {
    let ip = o.pods.get(&ordinal).and_then(|p| p.ip.as_deref());
    let mut c = ctx.connect(d, ordinal, ip).await?;
    let before = c.status().await.ok().map(|s| s.db_size);
    let started = std::time::Instant::now();
    c.defragment(DEFRAG_TIMEOUT).await?;
    let pause = started.elapsed();
    let after = c.status().await.ok().map(|s| s.db_size);
    Ok(Defragmentation {
        member: member.to_string(),
        trigger,
        before,
        after,
        pause,
    })
}

/// Compaction, defragmentation and disarming (`plan::nospace`, `plan::maintenance`). Every
/// failure is a "not yet": the status of this pass must not record a step that did not happen
/// (`nospace::record` counts a member as defragmented from the step), and the next pass
/// observes again.
async fn maintain(ctx: &Context, d: &Desired, o: &Observed, step: &Step) -> Done {
    let report = |source: EtcdError| {
        Error::Etcd {
            namespace: d.namespace.clone(),
            name: d.name.clone(),
            source,
        }
        .report()
    };
    let r = match step {
        Step::Compact { revision, .. } => {
            let mut c = match leader_client(ctx, d, o).await {
                Ok(c) => c,
                Err(why) => return Done::NotYet(why),
            };
            match c.compact(*revision).await {
                // Compacted already (auto-compaction, or a pass that stopped before its status):
                // the history up to `revision` is gone either way.
                Err(e) if report_has(&e, "required revision has been compacted") => Ok(()),
                r => r,
            }
        }
        Step::Defragment {
            ordinal, name, why, ..
        } => {
            return match defragment(ctx, d, o, (*ordinal, name, why.label())).await {
                Ok(m) => Done::Defragmented(m),
                Err(e) => Done::NotYet(report(e)),
            };
        }
        Step::DisarmNospace { members } => {
            let mut c = match leader_client(ctx, d, o).await {
                Ok(c) => c,
                Err(why) => return Done::NotYet(why),
            };
            let mut r = Ok(());
            for m in members {
                r = c.disarm_nospace(*m).await;
                if r.is_err() {
                    break;
                }
            }
            r
        }
        // etcd's authentication (`plan::auth`): one call each, through the leader.
        Step::Auth { part } => {
            let mut c = match leader_client(ctx, d, o).await {
                Ok(c) => c,
                Err(why) => return Done::NotYet(why),
            };
            let root = crate::etcd::ROOT;
            match part {
                AuthStep::AddRoot => c.add_user(root).await,
                AuthStep::GrantRoot => c.grant_role(root, root).await,
                AuthStep::Enable => c.enable_auth().await,
            }
        }
        _ => Ok(()),
    };
    match r {
        Ok(()) => Done::Changed,
        Err(e) => Done::NotYet(report(e)),
    }
}

/// Whether etcd's answer (anywhere in the error's causes) says `what`.
fn report_has(e: &EtcdError, what: &str) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = next {
        if c.to_string().contains(what) {
            return true;
        }
        next = c.source();
    }
    false
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

/// The objects a step would write, as JSON, for `--dry-run`.
pub fn planned_objects(d: &Desired, step: &Step) -> Vec<serde_json::Value> {
    step_objects(d, step).iter().map(Object::to_json).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(objs: &[Object]) -> Vec<(String, String, String)> {
        objs.iter()
            .map(Object::to_json)
            .map(|v| {
                let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
                (
                    s("apiVersion"),
                    s("kind"),
                    v["metadata"]["name"].as_str().unwrap_or_default().into(),
                )
            })
            .collect()
    }

    #[test]
    fn a_bootstrap_writes_config_services_budget_policy_and_statefulset_in_that_order() {
        let d = crate::fixtures::cluster("demo").desired();
        let objs = step_objects(&d, &Step::Bootstrap { replicas: 3 });
        let t = |a: &str, k: &str, n: &str| (a.to_string(), k.to_string(), n.to_string());
        assert_eq!(
            kinds(&objs),
            [
                t("v1", "ConfigMap", "demo-members"),
                t("v1", "Service", "demo"),
                t("v1", "Service", "demo-client"),
                t("policy/v1", "PodDisruptionBudget", "demo"),
                t("networking.k8s.io/v1", "NetworkPolicy", "demo"),
                t("apps/v1", "StatefulSet", "demo"),
            ]
        );
        let budget = objs[3].to_json();
        assert_eq!(budget["spec"]["maxUnavailable"], 1);
        assert_eq!(
            budget["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"],
            "demo"
        );
        assert_eq!(
            budget["metadata"]["ownerReferences"][0]["kind"],
            "EtcdCluster"
        );
    }

    #[test]
    fn a_restore_marks_the_seed_claim_restoring_and_its_bootstrap_marks_it_restored_first() {
        let mut c = crate::fixtures::cluster("demo").build();
        c.spec.restore = Some(crate::api::RestoreSpec {
            source: "s3://b/p/ns-demo-20261201T000000Z-r5.db.zst".into(),
            ..Default::default()
        });
        let d = crate::model::validate(&c).unwrap();
        let mark = |o: &Object| {
            let v = o.to_json();
            (
                v["kind"].as_str().unwrap_or_default().to_string(),
                v["metadata"]["annotations"][objects::ANNOTATION_RESTORE]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        };
        let restore = step_objects(
            &d,
            &Step::RestoreSeed {
                url: "s3://b/p".into(),
            },
        );
        assert_eq!(
            mark(&restore[0]),
            ("PersistentVolumeClaim".into(), "restoring".into())
        );
        let boot = step_objects(&d, &Step::Bootstrap { replicas: 1 });
        assert_eq!(
            mark(&boot[0]),
            ("PersistentVolumeClaim".into(), "restored".into()),
            "the mark is written before the member config"
        );
        assert_eq!(boot[0].to_json()["metadata"]["name"], "data-demo-0");
        // A cluster not restored writes no claim of its own.
        let plain = crate::fixtures::cluster("demo").desired();
        let boot = step_objects(&plain, &Step::Bootstrap { replicas: 3 });
        assert_eq!(mark(&boot[0]).0, "ConfigMap");
    }

    #[test]
    fn the_operator_role_may_observe_and_apply_every_kind_act_writes() {
        let mut c = crate::fixtures::cluster("demo").build();
        c.spec.restore = Some(crate::api::RestoreSpec {
            source: "s3://b/p/ns-demo-20261201T000000Z-r5.db.zst".into(),
            ..Default::default()
        });
        let d = crate::model::validate(&c).unwrap();
        let mut objs = step_objects(&d, &Step::Bootstrap { replicas: 3 });
        objs.extend(step_objects(
            &d,
            &Step::RestoreSeed {
                url: "s3://b/p".into(),
            },
        ));
        let cm = crate::fixtures::cluster("demo").cert_manager().desired();
        objs.extend(step_objects(
            &cm,
            &Step::RequestCertificate {
                role: crate::model::pki::CertRole::Peer,
                certificate: "demo-tls-peer".into(),
                issuer: "Issuer etcd-ca".into(),
            },
        ));
        // Adding a kind to `Object` fails to compile here until it is counted (and so checked).
        let variant = |o: &Object| match o {
            Object::ConfigMap(_) => 0,
            Object::Service(_) => 1,
            Object::DisruptionBudget(_) => 2,
            Object::StatefulSet(_) => 3,
            Object::Volume(_) => 4,
            Object::Pod(_) => 5,
            Object::NetworkPolicy(_) => 6,
            Object::Certificate(_) => 7,
        };
        let seen: std::collections::BTreeSet<i32> = objs.iter().map(variant).collect();
        assert_eq!(
            seen.len(),
            8,
            "every kind of Object is written by some step"
        );
        let table = crate::objects::access::watched_namespaces();
        for o in &objs {
            let (group, resource) = o.resource();
            assert_eq!(
                o.to_json()["apiVersion"]
                    .as_str()
                    .unwrap()
                    .rsplit_once('/')
                    .map_or("", |(g, _)| g),
                group,
                "{resource}"
            );
            for verb in ["get", "list", "watch", "patch", "delete"] {
                assert!(
                    table.iter().any(|a| a.grants(&group, &resource, verb)),
                    "the operator's role lacks {verb} on {resource}"
                );
            }
        }
    }

    #[test]
    fn only_object_steps_have_objects() {
        let d = crate::fixtures::cluster("demo").desired();
        assert_eq!(
            kinds(&step_objects(
                &d,
                &Step::ResizeStatefulSet { from: 3, to: 4 }
            ))
            .len(),
            1
        );
        assert_eq!(step_objects(&d, &Step::ApplySupportingObjects).len(), 4);
        let mut off = d.clone();
        off.network_policy = false;
        assert_eq!(step_objects(&off, &Step::ApplySupportingObjects).len(), 3);
        for step in [
            Step::Idle,
            Step::Paused,
            Step::RemoveMember {
                id: 1,
                name: "demo-2".into(),
            },
        ] {
            assert!(step_objects(&d, &step).is_empty(), "{step}");
        }
    }
}
