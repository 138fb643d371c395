//! Observe: read the cluster's Kubernetes objects and ask every running member about itself.
//!
//! Read-only I/O. Produces the `Observed` value the planner decides on.

mod adoption;
mod events;
mod members;
mod nodes;
mod pods;
mod restore_pod;
mod workload;

use std::collections::{BTreeMap, BTreeSet};

use futures::future::join_all;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, PersistentVolumeClaim, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams};

use super::Context;
use crate::api::EtcdClusterStatus;
use crate::error::Error;
use crate::etcd::EtcdClient;
use crate::model::{
    self, ClusterView, Desired, EtcdView, MemberStatusView, MemberView, Observed, PodView,
    RestoreMark, RestorePodView, Storage, StorageClassView, Version, VolumeView, WorkloadView,
};
use crate::objects;

use adoption::observe_adoption;
use events::{cannot_create, name_unbound_claims, pods_missing};
pub(super) use members::chain;
use members::observe_members;
use nodes::nodes_of;
use pods::pod_view;
pub(super) use restore_pod::restore_pod_phases;
use restore_pod::{fetch_retrying, restore_pod_view};
use workload::{member_claims, storage_class, volume_views, workload_view};

async fn get_opt<K>(
    api: &Api<K>,
    kind: &'static str,
    ns: &str,
    name: &str,
) -> Result<Option<K>, Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name)
        .await
        .map_err(|e| Error::kube("get", kind, ns, name, e))
}

/// The members recorded in the status the engine wrote last: the membership that survives the
/// loss of every other object but the volumes.
fn known_members(d: &Desired, last: Option<&EtcdClusterStatus>) -> BTreeSet<u32> {
    last.map(|st| {
        st.members
            .iter()
            .filter_map(|m| objects::ordinal_of_pod(&d.name, &m.name))
            .collect()
    })
    .unwrap_or_default()
}

/// Ordinal → when each member was first seen looking lost, as the status the engine wrote last
/// recorded it (`members[].lostSince`).
fn lost_since(d: &Desired, last: Option<&EtcdClusterStatus>) -> BTreeMap<u32, jiff::Timestamp> {
    last.map(|st| {
        st.members
            .iter()
            .filter_map(|m| {
                Some((
                    objects::ordinal_of_pod(&d.name, &m.name)?,
                    m.lost_since.as_ref()?.0,
                ))
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Reads the cluster's objects, asks its members, and reads back what the engine recorded last
/// (`last`: the status read with the spec; `None` where none was read). Returns the spec as the
/// world lets it apply (`model::keep_immutable`, computed here once per pass) and the complete
/// observation: nothing is filled in afterwards.
pub async fn observe(
    ctx: &Context,
    d: &Desired,
    last: Option<&EtcdClusterStatus>,
) -> Result<(Desired, Observed), Error> {
    let mut seen = crate::phase::timed(crate::phase!("read_objects"), read_objects(ctx, d)).await?;
    let mut statefulset = seen.sts.as_ref().map(|s| workload_view(d, s, &seen.pvcs));
    if let Some(w) = statefulset.as_mut() {
        let missing = pods_missing(d, w.replicas, &seen.pods);
        if !missing.is_empty() {
            w.cannot_create = cannot_create(ctx, d, &missing, jiff::Timestamp::now()).await;
        }
    }
    // The spec as the world lets it apply (storage and TLS stay what the StatefulSet has): the
    // members are dialed with it, and the pass decides with it.
    let d = model::keep_immutable(d.clone(), statefulset.as_ref());
    // Options and images off the driver's allow lists: kept where the members run them already,
    // else left out or replaced by the default (`model::keep_leave`).
    let running = seen.sts.as_ref().and_then(objects::running_container);
    let d = model::keep_leave(d, running, &ctx.leave);
    // The operator the policy admits: this driver when it is an operator in a pod, else whom
    // the policy admits already (a CLI pass never locks out an operator installed elsewhere).
    let admitted = seen
        .network_policy
        .as_ref()
        .and_then(objects::admitted_operator);
    let d = model::keep_operator(d, ctx.operator.as_ref(), admitted.clone());
    let d = &d;
    let now = jiff::Timestamp::now();
    let mut pods: BTreeMap<u32, PodView> = seen
        .pods
        .iter()
        .filter_map(|p| {
            let ord = objects::ordinal_of_pod(&d.name, p.metadata.name.as_deref()?)?;
            Some((ord, pod_view(p, now)))
        })
        .collect();
    name_unbound_claims(ctx, d, &seen.pvcs, &mut pods, now).await;
    let nodes = nodes_of(d, &seen.pods, &seen.pvcs);
    // The old members of a cluster being adopted, through their client URLs: none dialed
    // while the adoption is refused (`model::refusal`, checked before the first dial).
    let reach_old = crate::plan::adopt::old_members_reachable(d, last);
    let adoption = match &d.adopt {
        Some(a) => Some(observe_adoption(ctx, d, a, reach_old).await?),
        None => None,
    };
    let old_endpoints = match (&d.adopt, &adoption) {
        (Some(a), Some(v)) if reach_old && v.refused.is_none() => a.endpoints.clone(),
        _ => Vec::new(),
    };
    let (etcd, full) = crate::phase::timed(
        crate::phase!("ask_members"),
        observe_members(ctx, d, (&mut pods, &old_endpoints), nodes, now),
    )
    .await;
    // A recovery restores the seed too (`plan::recover::settle` names the snapshot after this).
    let restore_pod = if d.restore.is_some() || d.recovery.is_some() {
        let api = Api::<Pod>::namespaced(ctx.client.clone(), &d.namespace);
        let name = crate::objects::restore::pod_name(&d.name);
        match get_opt(&api, "Pod", &d.namespace, &name).await? {
            Some(p) if let Some(n) = objects::not_owned_by_reference(d, "Pod", &p.metadata) => {
                seen.not_owned.push(n);
                None
            }
            Some(p) => Some(match restore_pod_view(&p) {
                RestorePodView::Running => fetch_retrying(&api, &p, now)
                    .await
                    .map_or(RestorePodView::Running, RestorePodView::Retrying),
                view => view,
            }),
            None => None,
        }
    } else {
        None
    };
    let volumes = volume_views(d, &seen.pvcs);
    let storage_class = match crate::plan::storage::class_needed(d, statefulset.as_ref(), &volumes)
    {
        true => storage_class(ctx, d).await,
        false => None,
    };
    let (last_version, upgrade) = crate::plan::upgrade::from_status(last);
    let (certificates, trust, client_cn) = super::pki::observe(ctx, d, &mut seen.not_owned).await?;
    let observed = Observed {
        statefulset,
        supporting_objects: seen.supporting_current(d, admitted.as_ref()),
        clients_fenced: seen.client_svc.as_ref().is_some_and(objects::is_fenced),
        config: seen.cm.map(|c| c.data.unwrap_or_default()),
        pods,
        volumes,
        etcd,
        known_members: known_members(d, last),
        restore_pod,
        last_version,
        upgrade,
        maintenance: last.and_then(|s| s.maintenance.clone()),
        completed: last.and_then(|s| s.completed.clone()).unwrap_or_default(),
        nospace: full.nospace,
        revision: full.revision,
        now,
        lost_since: lost_since(d, last),
        // Read by the engine beside the cluster (`engine::backups::observe`).
        backups: Default::default(),
        adoption,
        storage_class,
        certificates,
        trust,
        client_cn,
        cert_manager: super::pki::observe_cert_manager(ctx, d, &mut seen.not_owned).await?,
        // Read by the engine when the plan removes a voter (`plan::needs_leader_peers`).
        leader_peers: None,
        not_owned: seen.not_owned,
    };
    Ok((d.clone(), observed))
}

/// The cluster's Kubernetes objects, as one pass reads them.
struct Objects {
    sts: Option<StatefulSet>,
    peer_svc: Option<Service>,
    client_svc: Option<Service>,
    pdb: Option<PodDisruptionBudget>,
    network_policy: Option<NetworkPolicy>,
    cm: Option<ConfigMap>,
    pods: Vec<Pod>,
    pvcs: Vec<PersistentVolumeClaim>,
    /// Objects at the cluster's names that are not the cluster's (left out of the fields above).
    not_owned: Vec<model::NotOwned>,
}

impl Objects {
    /// Whether the Services, the disruption budget and the policy are there as `d` wants them
    /// (`admitted`: the operator the policy there admits).
    fn supporting_current(&self, d: &Desired, admitted: Option<&model::OperatorPods>) -> bool {
        // Each selects the members by `member_labels` (one made before they did is applied again).
        let members = |svc: &Service| objects::service_selects_members(&d.name, svc);
        self.peer_svc.as_ref().is_some_and(members)
            && self.client_svc.as_ref().is_some_and(members)
            && self
                .pdb
                .as_ref()
                .is_some_and(|p| objects::budget_selects_members(&d.name, p))
            && self
                .network_policy
                .as_ref()
                .is_none_or(|p| objects::policy_selects_members(&d.name, p))
            // A fenced Service (`spec.recovery`) is recovery's to put back.
            && self
                .client_svc
                .as_ref()
                .is_some_and(|s| objects::client_service_current(d, s) || objects::is_fenced(s))
            && self.pdb.is_some()
            // `spec.networkPolicy.enabled` switched either way is the supporting objects' step,
            // and so is a policy that does not admit the operator (one installed elsewhere) or
            // not the listed client namespaces.
            && self.network_policy.is_some() == d.network_policy
            && self.network_policy.as_ref().is_none_or(|p| {
                d.adopt.is_some()
                    || (admitted == Some(&d.operator) && objects::policy_admits_clients(d, p))
            })
    }
}

/// Reads the cluster's objects, all at once.
async fn read_objects(ctx: &Context, d: &Desired) -> Result<Objects, Error> {
    let ns = d.namespace.as_str();
    let client = ctx.client.clone();
    let sts_api: Api<StatefulSet> = Api::namespaced(client.clone(), ns);
    let svc_api: Api<Service> = Api::namespaced(client.clone(), ns);
    let cm_api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let pod_api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pvc_api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let pdb_api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), ns);
    let policy_api: Api<NetworkPolicy> = Api::namespaced(client.clone(), ns);
    let lp = ListParams::default().labels(&objects::selector_string(&d.name));

    let (sts_name, peer_name, client_name, pdb_name, cm_name) = (
        objects::statefulset_name(&d.name),
        objects::peer_service_name(&d.name),
        objects::client_service_name(&d.name),
        objects::pdb_name(&d.name),
        objects::config_name(&d.name),
    );
    let policy_name = objects::network_policy_name(&d.name);
    let (sts, peer_svc, client_svc, pdb, network_policy, cm, pods, pvcs) = tokio::try_join!(
        get_opt(&sts_api, "StatefulSet", ns, &sts_name),
        get_opt(&svc_api, "Service", ns, &peer_name),
        get_opt(&svc_api, "Service", ns, &client_name),
        get_opt(&pdb_api, "PodDisruptionBudget", ns, &pdb_name),
        get_opt(&policy_api, "NetworkPolicy", ns, &policy_name),
        get_opt(&cm_api, "ConfigMap", ns, &cm_name),
        async {
            pod_api
                .list(&lp)
                .await
                .map_err(|e| Error::kube("list", "Pod", ns, &d.name, e))
        },
        // Every claim: one at a member's name without the member labels is not the cluster's.
        async {
            pvc_api
                .list(&ListParams::default())
                .await
                .map_err(|e| Error::kube("list", "PersistentVolumeClaim", ns, &d.name, e))
        },
    )?;
    let mut not_owned = Vec::new();
    let mut own = |kind: &str, meta: Option<&ObjectMeta>| {
        let n = meta.and_then(|m| objects::not_owned_by_reference(d, kind, m));
        let mine = meta.is_some() && n.is_none();
        not_owned.extend(n);
        mine
    };
    let sts = sts.filter(|o| own("StatefulSet", Some(&o.metadata)));
    let peer_svc = peer_svc.filter(|o| own("Service", Some(&o.metadata)));
    let client_svc = client_svc.filter(|o| own("Service", Some(&o.metadata)));
    let pdb = pdb.filter(|o| own("PodDisruptionBudget", Some(&o.metadata)));
    let network_policy = network_policy.filter(|o| own("NetworkPolicy", Some(&o.metadata)));
    let cm = cm.filter(|o| own("ConfigMap", Some(&o.metadata)));
    let (pvcs, foreign) = member_claims(d, pvcs.items);
    not_owned.extend(foreign);
    Ok(Objects {
        sts,
        peer_svc,
        client_svc,
        pdb,
        network_policy,
        cm,
        pods: pods.items,
        pvcs,
        not_owned,
    })
}
