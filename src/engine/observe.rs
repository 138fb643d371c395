//! Observe: read the cluster's Kubernetes objects and ask every running member about itself.
//!
//! Read-only I/O. Produces the `Observed` value the planner decides on.

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

/// The storage a StatefulSet's volume claim template asks for (`Ephemeral` without one).
fn workload_storage(s: &StatefulSet) -> Storage {
    let claim = s
        .spec
        .as_ref()
        .and_then(|s| s.volume_claim_templates.as_ref())
        .and_then(|t| {
            t.iter()
                .find(|c| c.metadata.name.as_deref() == Some(objects::DATA_VOLUME))
        });
    match claim.and_then(|c| c.spec.as_ref()) {
        None => Storage::Ephemeral,
        Some(spec) => Storage::Volume {
            size: spec
                .resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get("storage"))
                .map(|q| q.0.clone())
                .unwrap_or_default(),
            class: spec.storage_class_name.clone().filter(|c| !c.is_empty()),
        },
    }
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

/// The leader named by the answer with the highest raft term (then the longest log), ignoring
/// answers that name none.
fn leader_by_term<'a>(
    statuses: impl Iterator<Item = &'a crate::etcd::EndpointStatus>,
) -> Option<u64> {
    statuses
        .filter(|s| s.leader_id != 0)
        .max_by_key(|s| (s.raft_term, s.raft_index))
        .map(|s| s.leader_id)
}

/// The claim annotation in which the scheduler records the node a volume bound on first use was
/// provisioned for.
const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";

/// Seconds a node may be not Ready before its members count as on a gone node: Kubernetes' own
/// default before it evicts pods from such a node (a reboot takes less).
const NODE_DOWN_AFTER_SECONDS: u64 = 300;

/// The taint that says a node is shut down for good (Kubernetes' non-graceful node shutdown).
const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

/// For each member whose node cannot run it, why (`node_down`), and, for one that runs, why
/// its node is about to stop running it (`node_cordoned`). Nodes that cannot be read (no RBAC
/// for Nodes, as a namespaced CLI user may have) count as up and staying: nothing is concluded
/// from them.
async fn read_nodes(
    ctx: &Context,
    nodes_of: &BTreeMap<u32, String>,
    judge: impl Fn(&str, Option<&Node>) -> Option<String>,
) -> Vec<(u32, String)> {
    let api: Api<Node> = Api::all(ctx.client.clone());
    let names: BTreeSet<&String> = nodes_of.values().collect();
    let read = join_all(names.into_iter().map(|n| {
        let api = api.clone();
        async move { (n, api.get_opt(n).await) }
    }))
    .await;
    let mut found = BTreeMap::new();
    for (name, node) in read {
        match node {
            Ok(node) => {
                if let Some(why) = judge(name, node.as_ref()) {
                    found.insert(name.clone(), why);
                }
            }
            Err(e) => tracing::debug!(node = %name, error = %e, "node not read"),
        }
    }
    nodes_of
        .iter()
        .filter_map(|(ord, n)| Some((*ord, found.get(n)?.clone())))
        .collect()
}

/// Why a running member's node `name` is about to stop running it: cordoned
/// (`spec.unschedulable`, what `kubectl drain` sets before it evicts).
fn node_cordoned(name: &str, node: Option<&Node>) -> Option<String> {
    node?
        .spec
        .as_ref()?
        .unschedulable
        .filter(|u| *u)
        .map(|_| format!("its node {name} is cordoned (unschedulable: a drain evicts it next)"))
}

/// Why a running pod is about to go, from the pod itself: deleted, or marked by an eviction or
/// a preemption (`DisruptionTarget`).
fn pod_leaving(p: &Pod) -> Option<String> {
    if p.metadata.deletion_timestamp.is_some() {
        return Some("it is being deleted".into());
    }
    let c = p
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "DisruptionTarget" && c.status == "True")?;
    Some(format!(
        "it is marked for disruption ({})",
        c.reason.as_deref().unwrap_or("DisruptionTarget")
    ))
}

/// Why node `name` (`None`: it no longer exists) cannot run a member, if it cannot: deleted,
/// tainted out-of-service, or not Ready for [`NODE_DOWN_AFTER_SECONDS`] or longer.
fn node_down(name: &str, node: Option<&Node>, now: jiff::Timestamp) -> Option<String> {
    let Some(node) = node else {
        return Some(format!("its node {name} no longer exists"));
    };
    let spec = node.spec.as_ref();
    if spec
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key == OUT_OF_SERVICE))
    {
        return Some(format!(
            "its node {name} is tainted {OUT_OF_SERVICE} (shut down)"
        ));
    }
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))?;
    if ready.status == "True" {
        return None;
    }
    let since = ready.last_transition_time.as_ref()?.0;
    let for_seconds = (now.as_second() - since.as_second()).max(0) as u64;
    (for_seconds >= NODE_DOWN_AFTER_SECONDS).then(|| {
        format!(
            "its node {name} has not been Ready for {for_seconds}s (Ready={})",
            ready.status
        )
    })
}

/// etcd's last words in a container's status: those of the container that ended now, or of
/// the one before, but only while no container runs: a running container's `lastState` is
/// older than it (a member once replaced and restarted in place keeps its old "no data"
/// message for as long as it runs).
fn exit_message(c: &k8s_openapi::api::core::v1::ContainerStatus) -> Option<String> {
    let state = c.state.as_ref();
    let terminated = match state.and_then(|s| s.terminated.as_ref()) {
        Some(t) => Some(t),
        None if state.is_some_and(|s| s.running.is_some()) => None,
        None => c.last_state.as_ref().and_then(|s| s.terminated.as_ref()),
    };
    terminated
        .and_then(|t| t.message.clone())
        .filter(|m| !m.trim().is_empty())
}

/// The kubelet's reason for the last end of a container (`OOMKilled`, `Error`, …): of the
/// container that ended now, else of the one before (also while one runs again: a member
/// killed for memory runs a few seconds between kills; `PodView::trouble` reads it only while
/// the pod is not ready).
fn exit_reason(c: &k8s_openapi::api::core::v1::ContainerStatus) -> Option<String> {
    let ended = |s: Option<&k8s_openapi::api::core::v1::ContainerState>| {
        s.and_then(|s| s.terminated.as_ref())
            .and_then(|t| t.reason.clone())
    };
    ended(c.state.as_ref()).or_else(|| ended(c.last_state.as_ref()))
}

/// The memory limit of a pod's etcd container, as written (`512Mi`).
fn memory_limit(p: &Pod) -> Option<String> {
    p.spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == objects::CONTAINER)?
        .resources
        .as_ref()?
        .limits
        .as_ref()?
        .get("memory")
        .map(|q| q.0.clone())
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
    // Options off the driver's allow list: kept where the members run them already, else left out.
    let running = seen.sts.as_ref().and_then(etcd_command);
    let d = model::keep_options(d, running.as_deref(), &ctx.etcd_options);
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
    let (certificates, trust) = super::pki::observe(ctx, d, &mut seen.not_owned).await?;
    let cert_manager = super::pki::observe_cert_manager(ctx, d, &mut seen.not_owned).await?;
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
        cert_manager,
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

/// The namespace's claims at the cluster's volume names: the members' (their labels say so),
/// and the others, not the cluster's (a StatefulSet would start a member on one of them).
fn member_claims(
    d: &Desired,
    claims: Vec<PersistentVolumeClaim>,
) -> (Vec<PersistentVolumeClaim>, Vec<model::NotOwned>) {
    let mut foreign = Vec::new();
    let ours = claims
        .into_iter()
        .filter(|c| {
            let at_our_name = c
                .metadata
                .name
                .as_deref()
                .is_some_and(|n| objects::ordinal_of_volume(&d.name, n).is_some());
            if !at_our_name {
                return false;
            }
            let n = objects::not_owned_by_labels(d, "PersistentVolumeClaim", &c.metadata);
            let mine = n.is_none();
            foreign.extend(n);
            mine
        })
        .collect();
    (ours, foreign)
}

/// The pods of ordinals below the StatefulSet's replicas that do not exist: its controller has
/// not created them yet, or cannot.
fn pods_missing(d: &Desired, replicas: u32, pods: &[Pod]) -> Vec<String> {
    let have: std::collections::BTreeSet<u32> = pods
        .iter()
        .filter_map(|p| objects::ordinal_of_pod(&d.name, p.metadata.name.as_deref()?))
        .collect();
    (0..replicas)
        .filter(|k| !have.contains(k))
        .map(|k| objects::pod_name(&d.name, k))
        .collect()
}

/// A failed create within this long is taken to be why a pod is still missing (the
/// StatefulSet controller retries with a backoff of up to about 17 minutes).
const CREATE_FAILURE_SECONDS: i64 = 20 * 60;

/// Why the StatefulSet's controller could not create a member pod or its claim, from its
/// newest `FailedCreate` event (a ResourceQuota, a LimitRange, an admission webhook or policy,
/// a missing PriorityClass or ServiceAccount); `None` when there is none of late or the
/// events may not be read.
async fn cannot_create(
    ctx: &Context,
    d: &Desired,
    missing: &[String],
    now: jiff::Timestamp,
) -> Option<String> {
    let api: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(ctx.client.clone(), &d.namespace);
    let lp = ListParams::default().fields(&format!(
        "involvedObject.kind=StatefulSet,involvedObject.name={},reason=FailedCreate",
        objects::statefulset_name(&d.name)
    ));
    let events = match api.list(&lp).await {
        Ok(l) => l.items,
        Err(e) => {
            tracing::debug!(cluster = %d.name, error = %e, "events not read");
            return None;
        }
    };
    newest_create_failure(&events, missing, now)
}

/// A pod the scheduler holds back for its claim, while that claim is Pending: its
/// `unschedulable` says why the claim is not bound, in the provisioner's words, when its events
/// say (only then is anything read).
async fn name_unbound_claims(
    ctx: &Context,
    d: &Desired,
    pvcs: &[PersistentVolumeClaim],
    pods: &mut BTreeMap<u32, PodView>,
    now: jiff::Timestamp,
) {
    for (ord, pod) in pods {
        let waits_on_claim = pod
            .unschedulable
            .as_deref()
            .is_some_and(|m| m.contains("PersistentVolumeClaim"));
        let claim = objects::volume_name(&d.name, *ord);
        let pending = pvcs.iter().any(|c| {
            c.metadata.name.as_deref() == Some(claim.as_str())
                && c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending")
        });
        if waits_on_claim
            && pending
            && let Some(why) = claim_trouble(ctx, d, &claim, now).await
        {
            pod.unschedulable = Some(format!("its volume claim {claim} is not bound: {why}"));
        }
    }
}

/// Why the claim `claim` stays unbound, from its newest Warning event of late
/// (`ProvisioningFailed`: a StorageClass that does not exist, a provisioner's refusal, a quota
/// on storage); `None` when there is none or the events may not be read.
async fn claim_trouble(
    ctx: &Context,
    d: &Desired,
    claim: &str,
    now: jiff::Timestamp,
) -> Option<String> {
    let api: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(ctx.client.clone(), &d.namespace);
    let lp = ListParams::default().fields(&format!(
        "involvedObject.kind=PersistentVolumeClaim,involvedObject.name={claim},type=Warning"
    ));
    match api.list(&lp).await {
        Ok(l) => newest_recent(&l.items, |_| true, now),
        Err(e) => {
            tracing::debug!(cluster = %d.name, error = %e, "events not read");
            None
        }
    }
}

/// When an event last happened.
fn event_time(e: &k8s_openapi::api::core::v1::Event) -> Option<jiff::Timestamp> {
    e.last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| e.event_time.as_ref().map(|t| t.0))
        .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// The message of the newest event that `about` picks, when it is recent
/// (`CREATE_FAILURE_SECONDS`).
fn newest_recent(
    events: &[k8s_openapi::api::core::v1::Event],
    about: impl Fn(&k8s_openapi::api::core::v1::Event) -> bool,
    now: jiff::Timestamp,
) -> Option<String> {
    let (at, e) = events
        .iter()
        .filter(|e| about(e))
        .filter_map(|e| Some((event_time(e)?, e)))
        .max_by_key(|(at, _)| *at)?;
    (now.as_second() - at.as_second() <= CREATE_FAILURE_SECONDS)
        .then(|| e.message.clone())
        .flatten()
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
}

/// The message of the newest of these events, when it is recent (`CREATE_FAILURE_SECONDS`) and
/// about a pod still missing (its claim's failure names the pod too): an old refusal of a pod
/// that exists now says nothing.
fn newest_create_failure(
    events: &[k8s_openapi::api::core::v1::Event],
    missing: &[String],
    now: jiff::Timestamp,
) -> Option<String> {
    let about_a_missing_pod = |e: &k8s_openapi::api::core::v1::Event| {
        e.message.as_deref().is_some_and(|m| {
            missing
                .iter()
                .any(|p| m.contains(&format!("Pod {p} ")) || m.contains(&format!("\"{p}\"")))
        })
    };
    newest_recent(events, about_a_missing_pod, now)
}

/// The StatefulSet as the planner reads it, with the smallest capacity of the member claims.
fn workload_view(d: &Desired, s: &StatefulSet, pvcs: &[PersistentVolumeClaim]) -> WorkloadView {
    WorkloadView {
        replicas: s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0).max(0) as u32,
        template_hash: s
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(objects::ANNOTATION_TEMPLATE_HASH).cloned()),
        update_revision: s.status.as_ref().and_then(|s| s.update_revision.clone()),
        storage: Some(workload_storage(s)),
        tls: s
            .spec
            .as_ref()
            .map(|spec| objects::template_tls(&spec.template)),
        tls_switch: s
            .spec
            .as_ref()
            .and_then(|spec| spec.template.metadata.as_ref()?.annotations.as_ref())
            .and_then(|a| a.get(objects::ANNOTATION_TLS_SWITCH).cloned()),
        cluster_domain: s
            .spec
            .as_ref()
            .and_then(|spec| objects::template_domain(&spec.template)),
        terminating: s.metadata.deletion_timestamp.is_some(),
        controller_behind: controller_behind(s),
        cannot_create: None,
        volume_capacity: model::smallest_capacity(&volume_views(d, pvcs)).map(str::to_owned),
        member_selector: s
            .spec
            .as_ref()
            .and_then(|spec| spec.selector.match_labels.as_ref())
            .and_then(|l| l.get(objects::LABEL_MANAGED_BY))
            .is_some_and(|v| v == objects::FIELD_MANAGER),
    }
}

/// Whether the StatefulSet controller has not yet taken in the StatefulSet's latest spec: until
/// it has, its update revision names an older template (a rollout read from it would find
/// nothing to restart).
fn controller_behind(s: &StatefulSet) -> bool {
    let observed = s.status.as_ref().and_then(|st| st.observed_generation);
    match (s.metadata.generation, observed) {
        (Some(generation), Some(observed)) => observed < generation,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// The etcd command of a StatefulSet's member template (flags included).
fn etcd_command(s: &StatefulSet) -> Option<Vec<String>> {
    s.spec
        .as_ref()?
        .template
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == objects::CONTAINER)?
        .command
        .clone()
}

/// A member pod as the planner sees it (`answered_as` and `node_down` are filled in once its
/// etcd was asked).
fn pod_view(p: &Pod, now: jiff::Timestamp) -> PodView {
    let status = p.status.as_ref();
    let cstatus = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find(|c| c.name == objects::CONTAINER));
    let seconds_since = |t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
        t.map_or(0, |t| (now.as_second() - t.0.as_second()).max(0) as u64)
    };
    PodView {
        name: p.metadata.name.clone().unwrap_or_default(),
        ready: status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True")),
        running: cstatus
            .and_then(|c| c.state.as_ref())
            .is_some_and(|s| s.running.is_some()),
        terminating: p.metadata.deletion_timestamp.is_some(),
        controlled: p
            .metadata
            .owner_references
            .as_ref()
            .is_some_and(|o| o.iter().any(|o| o.controller == Some(true))),
        revision: p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(objects::LABEL_REVISION).cloned()),
        trusted_ca: p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(objects::ANNOTATION_TRUSTED_CA).cloned()),
        tls_switch: p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(objects::ANNOTATION_TLS_SWITCH).cloned()),
        ip: status.and_then(|s| s.pod_ip.clone()),
        restarts: cstatus.map_or(0, |c| c.restart_count),
        waiting_reason: cstatus
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.clone()),
        last_exit_message: cstatus.and_then(exit_message),
        last_exit_reason: cstatus.and_then(exit_reason),
        memory_limit: memory_limit(p),
        unschedulable: status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| {
                c.iter().find(|c| {
                    c.type_ == "PodScheduled"
                        && c.status == "False"
                        && c.reason.as_deref() == Some("Unschedulable")
                })
            })
            .map(|c| c.message.clone().unwrap_or_default().trim().to_string())
            .map(|m| {
                if m.is_empty() {
                    "no node fits it".into()
                } else {
                    m
                }
            }),
        answered_as: None,
        node_down: None,
        leaving: pod_leaving(p),
        overdue_seconds: seconds_since(p.metadata.deletion_timestamp.as_ref()),
        age_seconds: seconds_since(p.metadata.creation_timestamp.as_ref()),
        running_seconds: cstatus
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.running.as_ref())
            .and_then(|r| r.started_at.as_ref())
            .map(|t| seconds_since(Some(t))),
    }
}

/// The node each member's pod runs on, or, for a pod not scheduled yet, the one its volume was
/// provisioned on (the scheduler records it on the claim for volumes bound on first use).
fn nodes_of(d: &Desired, pods: &[Pod], pvcs: &[PersistentVolumeClaim]) -> BTreeMap<u32, String> {
    let on_pods = pods.iter().filter_map(|p| {
        let ord = objects::ordinal_of_pod(&d.name, p.metadata.name.as_deref()?)?;
        Some((ord, p.spec.as_ref()?.node_name.clone()?))
    });
    let on_volumes = pvcs.iter().filter_map(|v| {
        let ord = objects::ordinal_of_volume(&d.name, v.metadata.name.as_deref()?)?;
        let node = v.metadata.annotations.as_ref()?.get(SELECTED_NODE)?;
        Some((ord, node.clone()))
    });
    on_pods
        .chain(on_volumes)
        .fold(BTreeMap::new(), |mut m, (ord, node)| {
            m.entry(ord).or_insert(node);
            m
        })
}

fn volume_views(d: &Desired, pvcs: &[PersistentVolumeClaim]) -> BTreeMap<u32, VolumeView> {
    pvcs.iter()
        .filter_map(|v| {
            let name = v.metadata.name.clone()?;
            let ord = objects::ordinal_of_volume(&d.name, &name)?;
            Some((
                ord,
                VolumeView {
                    name,
                    terminating: v.metadata.deletion_timestamp.is_some(),
                    restore: v
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(objects::ANNOTATION_RESTORE))
                        .and_then(|m| RestoreMark::parse(m)),
                    class: v.spec.as_ref().and_then(|s| s.storage_class_name.clone()),
                    size: v
                        .spec
                        .as_ref()
                        .and_then(|s| s.resources.as_ref()?.requests.as_ref()?.get("storage"))
                        .map(|q| q.0.clone()),
                    capacity: v
                        .status
                        .as_ref()
                        .and_then(|s| s.capacity.as_ref()?.get("storage"))
                        .map(|q| q.0.clone()),
                    grow_asked: v
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(objects::ANNOTATION_GROW_ASKED))
                        .and_then(|t| t.parse().ok()),
                },
            ))
        })
        .collect()
}

/// Asks the members (`observe_etcd`), then marks on each pod the member its etcd answered as,
/// and, for those whose etcd did not answer, why their node cannot run them; for those that
/// answered, whether their node is cordoned (one read per node a member runs on).
async fn observe_members(
    ctx: &Context,
    d: &Desired,
    (pods, old_endpoints): (&mut BTreeMap<u32, PodView>, &[String]),
    nodes_of: BTreeMap<u32, String>,
    now: jiff::Timestamp,
) -> (EtcdView, FullDatabase) {
    let mut answered = BTreeMap::new();
    let mut full = FullDatabase::default();
    let etcd = observe_etcd(ctx, d, (pods, old_endpoints), &mut answered, &mut full).await;
    for (ord, id) in answered {
        if let Some(p) = pods.get_mut(&ord) {
            p.answered_as = Some(id);
        }
    }
    let (silent, answering): (BTreeMap<u32, String>, BTreeMap<u32, String>) = nodes_of
        .into_iter()
        .partition(|(ord, _)| pods.get(ord).is_none_or(|p| p.answered_as.is_none()));
    let down = |name: &str, node: Option<&Node>| node_down(name, node, now);
    let (down, cordoned) = futures::join!(
        read_nodes(ctx, &silent, down),
        read_nodes(ctx, &answering, node_cordoned)
    );
    for (ord, reason) in down {
        if let Some(p) = pods.get_mut(&ord) {
            p.node_down = Some(reason);
        }
    }
    for (ord, reason) in cordoned {
        if let Some(p) = pods.get_mut(&ord) {
            p.leaving.get_or_insert(reason);
        }
    }
    (etcd, full)
}

/// The old cluster's StatefulSet and the Service to take over, while `spec.adopt` is set, and
/// (`reach_old`: the old members are still to be dialed) whether they may be dialed at all.
async fn observe_adoption(
    ctx: &Context,
    d: &Desired,
    a: &model::Adoption,
    reach_old: bool,
) -> Result<model::AdoptionView, Error> {
    let ns = d.namespace.as_str();
    let mut view = model::AdoptionView::default();
    if reach_old {
        let c = confinement(ctx, d, a).await?;
        view.refused = model::refusal(a, ns, &d.cluster_domain, &c);
    }
    if let Some(name) = &a.statefulset {
        let api: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), ns);
        view.old_replicas = get_opt(&api, "StatefulSet", ns, name)
            .await?
            .map(|s| s.spec.and_then(|s| s.replicas).unwrap_or(0).max(0) as u32);
    }
    if let Some(name) = &a.take_over_service {
        let api: Api<Service> = Api::namespaced(ctx.client.clone(), ns);
        let svc = get_opt(&api, "Service", ns, name).await?;
        view.service_found = svc.is_some();
        view.service_taken = svc
            .and_then(|s| s.spec?.selector)
            .is_some_and(|sel| sel == objects::member_labels(&d.name));
    }
    Ok(view)
}

/// What `model::refusal` needs to know of the namespace before an old member is dialed: the
/// Services the endpoints name, the pods' IPs when an endpoint is an IP, and the EtcdClusters
/// that report the cluster id to adopt.
async fn confinement(
    ctx: &Context,
    d: &Desired,
    a: &model::Adoption,
) -> Result<model::Confinement, Error> {
    let ns = d.namespace.as_str();
    let mut c = model::Confinement {
        foreign_allowed: ctx.allow_foreign_adopt_endpoints,
        credentials: d.auth_secret.is_some(),
        ..Default::default()
    };
    let svc_api: Api<Service> = Api::namespaced(ctx.client.clone(), ns);
    for name in model::services_named(a, ns, &d.cluster_domain) {
        if let Some(s) = get_opt(&svc_api, "Service", ns, &name).await? {
            c.services.insert(name, objects::routes_to_own_pods(&s));
        }
    }
    if model::names_an_ip(a) {
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
        let list = pods
            .list(&ListParams::default())
            .await
            .map_err(|e| Error::kube("list", "Pod", ns, &d.name, e))?;
        c.pod_ips = list.items.iter().flat_map(objects::own_pod_ips).collect();
    }
    c.claimed_by = clusters_reporting(ctx, d, a.cluster_id).await?;
    Ok(c)
}

/// The other EtcdClusters (`namespace/name`) whose status reports cluster id `id`: of every
/// namespace, or of the cluster's own where the driver may not list them all (a namespaced
/// operator, a tenant's CLI), where the endpoints are confined to unless the driver allows
/// foreign ones.
async fn clusters_reporting(ctx: &Context, d: &Desired, id: u64) -> Result<Vec<String>, Error> {
    use crate::api::{EtcdCluster, KIND};
    let lp = ListParams::default();
    let ns = d.namespace.as_str();
    let all = match Api::<EtcdCluster>::all(ctx.client.clone()).list(&lp).await {
        Ok(l) => l.items,
        Err(e) => {
            tracing::debug!(cluster = %d.name, namespace = %ns, error = %e,
                "EtcdClusters of other namespaces not listed; the cluster id is checked against this one's");
            Api::<EtcdCluster>::namespaced(ctx.client.clone(), ns)
                .list(&lp)
                .await
                .map_err(|e| Error::kube("list", KIND, ns, &d.name, e))?
                .items
        }
    };
    let id = model::fmt_id(id);
    Ok(all
        .iter()
        .filter(|c| {
            c.status
                .as_ref()
                .and_then(|s| s.cluster_id.as_deref())
                .is_some_and(|i| i.eq_ignore_ascii_case(&id))
        })
        .map(|c| {
            format!(
                "{}/{}",
                c.metadata.namespace.as_deref().unwrap_or_default(),
                c.metadata.name.as_deref().unwrap_or_default()
            )
        })
        .filter(|other| *other != format!("{ns}/{}", d.name))
        .collect())
}

/// The StorageClass new member volumes get: the spec's, else the cluster's default. `None` when
/// it cannot be read (a namespaced user without access to StorageClasses): the planner then
/// takes the path that needs no expansion.
async fn storage_class(ctx: &Context, d: &Desired) -> Option<StorageClassView> {
    use k8s_openapi::api::storage::v1::StorageClass;
    const DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
    let api: Api<StorageClass> = Api::all(ctx.client.clone());
    let read = match &d.storage {
        Storage::Volume {
            class: Some(name), ..
        } => api.get_opt(name).await.map(|c| c.into_iter().collect()),
        Storage::Volume { class: None, .. } => api.list(&ListParams::default()).await.map(|l| {
            l.items
                .into_iter()
                .filter(|c| {
                    c.metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(DEFAULT_CLASS))
                        .is_some_and(|v| v == "true")
                })
                .collect()
        }),
        Storage::Ephemeral => return None,
    };
    let classes: Vec<StorageClass> = read
        .map_err(|e| tracing::debug!(error = %e, "storage class not read"))
        .ok()?;
    let class = classes.into_iter().next()?;
    Some(StorageClassView {
        name: class.metadata.name.unwrap_or_default(),
        expandable: class.allow_volume_expansion == Some(true),
    })
}

/// The NOSPACE alarms and the current revision (`Observed::nospace`, `revision`): asked of the
/// keyspace only when a member's health read failed for alarms, else the highest revision the
/// members' status answers carried.
#[derive(Default)]
struct FullDatabase {
    nospace: Vec<u64>,
    revision: i64,
}

/// The status of every container of `p`, init containers first.
fn containers(p: &Pod) -> impl Iterator<Item = &k8s_openapi::api::core::v1::ContainerStatus> {
    p.status.iter().flat_map(|s| {
        s.init_container_statuses
            .iter()
            .flatten()
            .chain(s.container_statuses.iter().flatten())
    })
}

/// Running until the pod has ended; a failure carries the failing container's last words.
/// Seconds the restore pod's download runs before its log is read for failed attempts.
const FETCH_LOG_AFTER_SECONDS: u64 = 10;

/// Why the restore pod's download keeps failing, while it tries again (its last log line says
/// so): the store unreachable from the pod, refused credentials, a missing bucket. `None` when
/// its fetch runs without a failure said, or its log may not be read.
async fn fetch_retrying(api: &Api<Pod>, p: &Pod, now: jiff::Timestamp) -> Option<String> {
    let fetching = containers(p).find(|c| c.name == crate::objects::restore::FETCH_CONTAINER)?;
    let started = fetching
        .state
        .as_ref()?
        .running
        .as_ref()?
        .started_at
        .as_ref()?;
    if now.as_second() - started.0.as_second() < FETCH_LOG_AFTER_SECONDS as i64 {
        return None;
    }
    let params = kube::api::LogParams {
        container: Some(crate::objects::restore::FETCH_CONTAINER.into()),
        tail_lines: Some(1),
        ..Default::default()
    };
    match api.logs(p.metadata.name.as_deref()?, &params).await {
        Ok(log) => failed_attempt(&log),
        Err(e) => {
            tracing::debug!(error = %e, "the restore pod's log was not read");
            None
        }
    }
}

/// The error of a log line that says an attempt of the fetch failed (text or JSON format).
fn failed_attempt(log: &str) -> Option<String> {
    let line = log.lines().rev().find(|l| !l.trim().is_empty())?.trim();
    if !line.contains(crate::archive::fetch::ATTEMPT_FAILED) {
        return None;
    }
    let error = match serde_json::from_str::<serde_json::Value>(line) {
        Ok(v) => v["fields"]["error"].as_str().map(String::from),
        Err(_) => line.split_once(" error=").map(|(_, e)| e.to_string()),
    }?;
    Some(match error.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &error[..i]),
        None => error,
    })
}

fn restore_pod_view(p: &Pod) -> RestorePodView {
    let status = p.status.as_ref();
    match status.and_then(|s| s.phase.as_deref()) {
        Some("Succeeded") => RestorePodView::Succeeded,
        Some("Failed") => {
            let why = containers(p)
                .filter_map(|c| {
                    let t = c.state.as_ref()?.terminated.as_ref()?;
                    (t.exit_code != 0).then(|| {
                        format!(
                            "{} exited {}: {}",
                            c.name,
                            t.exit_code,
                            t.message.as_deref().unwrap_or("").trim()
                        )
                    })
                })
                .next()
                .unwrap_or_else(|| "the pod failed".into());
            RestorePodView::Failed(why)
        }
        _ => containers(p)
            .find_map(|c| {
                let w = c.state.as_ref()?.waiting.as_ref()?;
                let reason = w.reason.as_deref()?;
                crate::model::STUCK_REASONS.contains(&reason).then(|| {
                    let message = w.message.as_deref().unwrap_or("").trim();
                    if message.is_empty() {
                        format!("{}: {reason}", c.name)
                    } else {
                        format!("{}: {reason}: {message}", c.name)
                    }
                })
            })
            .map_or(RestorePodView::Running, RestorePodView::Stuck),
    }
}

/// Pure: where a finished restore pod's time went, as phases (`restore_pod:start` from its
/// creation to its first container's start: scheduling, image pulls, volume attach; then one per
/// container that ran: `restore_pod:fetch` the download and verification, `restore_pod:restore`
/// `etcdutl snapshot restore`, `restore_pod:finish`), to the second the kubelet records.
pub fn restore_pod_phases(p: &Pod) -> Vec<(String, std::time::Duration)> {
    let between = |from: &jiff::Timestamp, to: &jiff::Timestamp| {
        std::time::Duration::try_from(to.duration_since(*from)).unwrap_or_default()
    };
    let ran: Vec<(&str, jiff::Timestamp, jiff::Timestamp)> = containers(p)
        .filter_map(|c| {
            let t = c.state.as_ref()?.terminated.as_ref()?;
            Some((
                c.name.as_str(),
                t.started_at.as_ref()?.0,
                t.finished_at.as_ref()?.0,
            ))
        })
        .collect();
    let created = p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let first = ran.iter().map(|(_, started, _)| *started).min();
    created
        .zip(first)
        .map(|(c, f)| ("restore_pod:start".to_string(), between(&c, &f)))
        .into_iter()
        .chain(
            ran.iter()
                .map(|(name, from, to)| (format!("restore_pod:{name}"), between(from, to))),
        )
        .collect()
}

/// What one running member said about itself.
struct Answer {
    /// `None`: a member the engine did not add (an old member being adopted).
    ordinal: Option<u32>,
    client: Option<EtcdClient>,
    status: Option<crate::etcd::EndpointStatus>,
    /// The cluster version from `/version`; `None` when it did not answer (it is not needed
    /// for health, only to tell a mixed cluster from one whose cluster version moved).
    cluster_version: Option<Version>,
    health: Result<(), String>,
    /// The health read failed only for raised alarms.
    alarmed: bool,
}

impl Answer {
    /// Its linearizable health read passed (raised alarms are checked after that read): a
    /// voter whose applied index the leader confirmed. Learners answer no linearizable read.
    fn read_linearizably(&self) -> bool {
        self.status.as_ref().is_some_and(|s| !s.is_learner) && (self.health.is_ok() || self.alarmed)
    }
}

async fn ask(ctx: &Context, d: &Desired, ordinal: u32, pod: &PodView) -> Answer {
    let (dialed, versions) = tokio::join!(
        ctx.connect(d, ordinal, pod.ip.as_deref()),
        crate::phase::timed(
            crate::phase!("version", member = ordinal),
            ctx.versions_beside(d, ordinal),
        )
    );
    crate::phase::timed(
        crate::phase!("etcd_rpcs", member = ordinal),
        answer(d, Some(ordinal), dialed, versions),
    )
    .await
}

/// What the member at `client` (dialed, or the error dialing it) said about itself; `versions`:
/// its `/version`, when already asked beside the dial.
async fn answer(
    d: &Desired,
    ordinal: Option<u32>,
    dialed: Result<EtcdClient, crate::etcd::EtcdError>,
    versions: Option<Result<crate::etcd::Versions, crate::etcd::EtcdError>>,
) -> Answer {
    let mut a = Answer {
        ordinal,
        client: None,
        status: None,
        cluster_version: None,
        health: Err(String::new()),
        alarmed: false,
    };
    let mut client = match dialed {
        Ok(c) => c,
        Err(e) => {
            a.health = Err(crate::error::Error::Etcd {
                namespace: d.namespace.clone(),
                name: d.name.clone(),
                source: e,
            }
            .report());
            return a;
        }
    };
    // The cluster version comes over plain HTTP on a connection of its own: asked beside the
    // gRPC calls rather than after them (one round trip per member instead of two), unless
    // already asked beside the dial.
    let http = client.clone();
    let mut reader = client.clone();
    let versions = async move {
        match versions {
            Some(v) => v,
            None => http.versions().await,
        }
    };
    let (status, versions) = tokio::join!(
        async {
            // Both at once (on one connection). Learners refuse linearizable reads: for a
            // learner the health answer is dropped, answering status is all it can show.
            let (status, health) = tokio::join!(client.status(), reader.health());
            let health = match &status {
                Ok(s) if !s.is_learner => Some(health),
                _ => None,
            };
            (status, health)
        },
        versions
    );
    match status {
        (Ok(s), health) => {
            a.health = match health {
                None => Ok(()),
                Some(health) => {
                    a.alarmed = matches!(health, Err(crate::etcd::EtcdError::Alarms { .. }));
                    health.map_err(|e| chain(&e))
                }
            };
            a.status = Some(s);
            match versions {
                Ok(v) => a.cluster_version = Version::parse(&v.cluster),
                Err(e) => tracing::debug!(error = %e, "no cluster version"),
            }
        }
        (Err(e), _) => a.health = Err(chain(&e)),
    }
    if d.auth_secret.is_none()
        && let Err(e) = &mut a.health
        && crate::plan::upgrade::is_auth_error(e)
    {
        e.push_str(AUTH_HINT);
    }
    a.client = Some(client);
    a
}

/// What to do when etcd refuses the engine for want of a user.
const AUTH_HINT: &str = " (etcd's authentication is on: set spec.auth.userSecret to a Secret \
     with the username and password of an etcd user with the root role)";

/// The error and its causes in one line: the cause says what etcd answered (e.g. "user name
/// is empty" while auth is on, which the upgrade gates read).
pub(super) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut next = e.source();
    while let Some(c) = next {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        next = c.source();
    }
    s
}

/// Asks every running member for its status and health, and one voter for the member list.
/// `answered` gets, for each pod whose etcd answered, the member id it answered as; `full` the
/// NOSPACE alarms and the revision when a member's health read failed for alarms.
async fn observe_etcd(
    ctx: &Context,
    d: &Desired,
    (pods, old_endpoints): (&BTreeMap<u32, PodView>, &[String]),
    answered: &mut BTreeMap<u32, u64>,
    full: &mut FullDatabase,
) -> EtcdView {
    let running: Vec<(u32, &PodView)> = pods
        .iter()
        .filter(|(_, p)| p.running && !p.terminating)
        .map(|(o, p)| (*o, p))
        .collect();
    if running.is_empty() && old_endpoints.is_empty() {
        return EtcdView::NotQueried;
    }
    let mut answers: Vec<Answer> = join_all(running.iter().map(|(o, p)| ask(ctx, d, *o, p))).await;
    // The old members of a cluster being adopted, through their client URLs.
    answers.extend(
        join_all(
            old_endpoints.iter().map(|url| async move {
                answer(d, None, ctx.connect_url(d, url).await, None).await
            }),
        )
        .await,
    );
    answered.extend(
        answers
            .iter()
            .filter_map(|a| Some((a.ordinal?, a.status.as_ref()?.member_id))),
    );
    let mut cluster_ids: Vec<u64> = answers
        .iter()
        .filter_map(|a| a.status.as_ref().map(|s| s.cluster_id))
        .collect();
    cluster_ids.sort_unstable();
    cluster_ids.dedup();
    if cluster_ids.len() > 1 {
        return EtcdView::Split { cluster_ids };
    }
    // The leader is the one named by the answer with the highest raft term (a member cut off
    // from the others may still name a leader of an older term).
    let leader = leader_by_term(answers.iter().filter_map(|a| a.status.as_ref()));
    let mut errors: Vec<String> = answers
        .iter()
        .filter_map(|a| a.health.as_ref().err().filter(|e| !e.is_empty()).cloned())
        .collect();
    let listed = crate::phase::timed(
        crate::phase!("member_list"),
        member_list(&answers, leader, &mut errors),
    )
    .await;
    let Some((list, list_unconfirmed)) = listed else {
        if errors.is_empty() {
            errors.push("no member answered".into());
        }
        return EtcdView::Unreachable { errors };
    };
    *full = full_database(&answers, leader).await;
    let members = list
        .members
        .iter()
        .map(|m| cut_off_from_here(member_view(d, m, &answers), pods))
        .collect();
    let auth = if d.etcd_auth {
        crate::phase::timed(crate::phase!("auth"), auth_view(&answers, leader)).await
    } else {
        None
    };
    EtcdView::Reached(ClusterView {
        cluster_id: list.cluster_id,
        leader,
        members,
        list_unconfirmed,
        auth_enabled: auth.is_some_and(|a| a.enabled)
            || answers
                .iter()
                .any(|a| a.client.as_ref().is_some_and(|c| c.authenticated())),
        auth,
    })
}

/// The member list, and whether it is unconfirmed. It is asked of a member whose linearizable
/// read passed just before (its health check: etcd's ReadIndex made it apply everything the
/// leader had committed, membership changes included, so its list is as current as a
/// linearizable one; etcd 3.5.13+'s `linearizable` member list does the same inside the server,
/// which the client library does not expose), the leader first; only when none passed, any
/// voter, then anyone, and the list is marked unconfirmed. `None` when nobody gave one (`errors`
/// says why).
async fn member_list(
    answers: &[Answer],
    leader: Option<u64>,
    errors: &mut Vec<String>,
) -> Option<(crate::etcd::MemberList, bool)> {
    let mut order: Vec<&Answer> = answers.iter().filter(|a| a.status.is_some()).collect();
    order.sort_by_key(|a| {
        let s = a.status.as_ref().unwrap();
        (
            !a.read_linearizably(),
            Some(s.member_id) != leader,
            s.is_learner,
            a.ordinal,
        )
    });
    for a in order {
        let mut c = a.client.clone().expect("answered members have a client");
        match c.member_list().await {
            Ok(l) => return Some((l, !a.read_linearizably())),
            Err(e) => errors.push(e.to_string()),
        }
    }
    None
}

/// The NOSPACE alarms and the current revision. Alarms are the cluster's (every member reports
/// them): asked of the leader, or else of a member that answers, once per pass and only while
/// one is raised. The revision comes with them, else from the status answers' headers (a
/// requested compaction's target).
/// etcd's authentication and its root user (`spec.tls.etcdAuth`), asked of a voter whose
/// linearizable read passed, the leader first: a lagging member could still show a root user
/// or an enabled authentication that is gone, or the other way round. `None` when none answered.
async fn auth_view(answers: &[Answer], leader: Option<u64>) -> Option<crate::etcd::AuthView> {
    let mut askable: Vec<&Answer> = answers.iter().filter(|a| a.read_linearizably()).collect();
    askable.sort_by_key(|a| a.status.as_ref().map(|s| s.member_id) != leader);
    for a in askable {
        let mut c = a.client.clone()?;
        match c.auth_view().await {
            Ok(v) => return Some(v),
            Err(e) => tracing::debug!(member = a.ordinal, error = %e, "authentication not read"),
        }
    }
    None
}

async fn full_database(answers: &[Answer], leader: Option<u64>) -> FullDatabase {
    let mut full = FullDatabase::default();
    if answers.iter().any(|a| a.alarmed) {
        let mut askable: Vec<&Answer> = answers.iter().filter(|a| a.status.is_some()).collect();
        askable.sort_by_key(|a| a.status.as_ref().map(|s| s.member_id) != leader);
        for a in askable {
            let mut c = a.client.clone().expect("answered members have a client");
            match (c.alarms().await, c.keyspace().await) {
                (Ok(alarms), Ok(k)) => {
                    full.nospace = alarms
                        .into_iter()
                        .filter(|(_, alarm)| alarm == "NOSPACE")
                        .map(|(m, _)| m)
                        .collect();
                    full.revision = k.revision;
                    break;
                }
                (Err(e), _) | (_, Err(e)) => {
                    tracing::debug!(member = a.ordinal, error = %e, "alarms not read");
                }
            }
        }
    }
    if full.revision <= 0 {
        full.revision = answers
            .iter()
            .filter_map(|a| a.status.as_ref().map(|s| s.revision))
            .max()
            .unwrap_or(0);
    }
    full
}

/// A member that did not answer this driver while the kubelet counts its pod Ready (the
/// readiness probe is a linearizable read from inside the pod) is cut off from here, not down:
/// its error says so, so that nobody reads a path this driver lacks as a member gone.
fn cut_off_from_here(mut m: MemberView, pods: &BTreeMap<u32, PodView>) -> MemberView {
    let ready = m
        .ordinal
        .and_then(|k| pods.get(&k))
        .is_some_and(|p| p.ready && p.running && !p.terminating);
    if m.status.is_none() && ready {
        let why = m.error.take().unwrap_or_default();
        m.error = Some(format!(
            "unreachable from here, not down (its pod is Ready: its own linearizable read passes): {why}"
        ));
    }
    m
}

/// One member of the list, joined with what its own etcd answered (versions parsed here, once).
fn member_view(d: &Desired, m: &crate::etcd::Member, answers: &[Answer]) -> MemberView {
    // Two pods answering as one member: the last (highest ordinal) speaks for it.
    let answer = answers
        .iter()
        .rfind(|a| a.status.as_ref().is_some_and(|s| s.member_id == m.id));
    let status = answer.and_then(|a| a.status.as_ref());
    let ordinal = m
        .peer_urls
        .iter()
        .find_map(|u| objects::ordinal_of_peer_url(&d.name, &d.namespace, u));
    let at_ordinal = ordinal.and_then(|o| answers.iter().find(|a| a.ordinal == Some(o)));
    // The pod of this member's ordinal answered, but as another member.
    let imposter = at_ordinal
        .and_then(|a| a.status.as_ref())
        .filter(|s| s.member_id != m.id)
        .map(|s| s.member_id);
    let error = match answer {
        Some(a) => a.health.clone().err(),
        None if imposter.is_some() => Some(format!(
            "its pod answers as member {}",
            crate::model::fmt_id(imposter.unwrap_or_default())
        )),
        None => at_ordinal
            .and_then(|a| a.health.clone().err())
            .or_else(|| Some("no running pod answered for this member".into())),
    };
    MemberView {
        id: m.id,
        name: m.name.clone(),
        ordinal,
        peer_url: m.peer_urls.first().cloned().unwrap_or_default(),
        learner: m.is_learner,
        started: m.started(),
        status: status.map(|s| MemberStatusView {
            version: Version::parse(&s.version),
            cluster_version: answer.and_then(|a| a.cluster_version),
            storage_version: Version::parse(&s.storage_version),
            downgrading_to: Version::parse(&s.downgrade_target),
            db_size: s.db_size,
            db_size_in_use: s.db_size_in_use,
            raft_index: s.raft_index,
            raft_term: s.raft_term,
            leader: s.leader_id,
        }),
        healthy: answer.is_some_and(|a| a.health.is_ok()),
        error: error.filter(|e| !e.is_empty()),
        identity_mismatch: imposter.is_some(),
        alarmed: answer.is_some_and(|a| a.alarmed),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
        ContainerStatus,
    };

    use super::{
        Pod, controller_behind, exit_message, exit_reason, failed_attempt, leader_by_term,
        member_claims, memory_limit, newest_create_failure, node_cordoned, node_down, pod_leaving,
        pod_view, pods_missing,
    };

    #[test]
    fn a_claim_at_a_members_name_without_its_labels_is_not_the_clusters_and_others_are_ignored() {
        use k8s_openapi::api::core::v1::PersistentVolumeClaim;
        let d = crate::fixtures::cluster("demo").desired();
        let claim = |name: &str, managed_by: Option<&str>| {
            let mut labels = crate::objects::selector_labels("demo");
            if let Some(m) = managed_by {
                labels.insert(crate::keys::LABEL_MANAGED_BY.into(), m.into());
            }
            let mut c = PersistentVolumeClaim::default();
            c.metadata.name = Some(name.into());
            c.metadata.labels = Some(labels);
            c
        };
        let (ours, foreign) = member_claims(
            &d,
            vec![
                claim("data-demo-0", Some("kubectl-etcd")),
                // A plain etcd's claim at a member's name: the StatefulSet would mount it.
                claim("data-demo-1", None),
                // A Helm release `demo` of bitnami/etcd: its claims are named after its set.
                claim("data-demo-etcd-0", Some("Helm")),
                claim("data-other-0", Some("kubectl-etcd")),
            ],
        );
        let names: Vec<_> = ours
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        assert_eq!(names, ["data-demo-0"]);
        assert_eq!(foreign.len(), 1);
        assert_eq!(
            (foreign[0].kind.as_str(), foreign[0].name.as_str()),
            ("PersistentVolumeClaim", "data-demo-1")
        );
    }

    #[test]
    fn a_statefulset_is_behind_until_its_controller_observed_its_generation() {
        use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};
        let sts = |generation: Option<i64>, observed: Option<i64>| StatefulSet {
            metadata: kube::api::ObjectMeta {
                generation,
                ..Default::default()
            },
            status: Some(StatefulSetStatus {
                observed_generation: observed,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(controller_behind(&sts(Some(3), Some(2))));
        assert!(controller_behind(&sts(Some(1), None)));
        assert!(!controller_behind(&sts(Some(3), Some(3))));
        assert!(!controller_behind(&sts(None, None)));
    }

    #[test]
    fn a_finished_restore_pods_time_is_its_start_then_each_container_that_ran() {
        use k8s_openapi::api::core::v1::{Pod, PodStatus};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let at = |s: i64| Time(jiff::Timestamp::from_second(1_000_000 + s).unwrap());
        let ran = |name: &str, from: i64, to: i64| ContainerStatus {
            name: name.into(),
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    started_at: Some(at(from)),
                    finished_at: Some(at(to)),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut pod = Pod::default();
        pod.metadata.creation_timestamp = Some(at(0));
        pod.status = Some(PodStatus {
            init_container_statuses: Some(vec![ran("fetch", 4, 14), ran("restore", 15, 18)]),
            container_statuses: Some(vec![ran("finish", 19, 19)]),
            ..Default::default()
        });
        let secs: Vec<(String, u64)> = super::restore_pod_phases(&pod)
            .into_iter()
            .map(|(p, d)| (p, d.as_secs()))
            .collect();
        let want = [
            ("restore_pod:start", 4),
            ("restore_pod:fetch", 10),
            ("restore_pod:restore", 3),
            ("restore_pod:finish", 0),
        ]
        .map(|(p, s)| (p.to_string(), s));
        assert_eq!(secs, want);
        // A container still running (or never started) has no time yet.
        pod.status.as_mut().unwrap().container_statuses = Some(vec![ContainerStatus {
            name: "finish".into(),
            ..Default::default()
        }]);
        assert_eq!(super::restore_pod_phases(&pod).len(), 3);
    }

    #[test]
    fn a_node_is_down_when_deleted_shut_down_or_not_ready_for_five_minutes() {
        use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus, Taint};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let now = jiff::Timestamp::from_second(1_000_000).unwrap();
        let node = |ready: &str, since_s: i64, taint: Option<&str>| Node {
            spec: Some(NodeSpec {
                taints: taint.map(|k| {
                    vec![Taint {
                        key: k.into(),
                        effect: "NoExecute".into(),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: ready.into(),
                    last_transition_time: Some(Time(
                        now - jiff::SignedDuration::from_secs(since_s),
                    )),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            node_down("n1", None, now).as_deref(),
            Some("its node n1 no longer exists")
        );
        assert_eq!(node_down("n1", Some(&node("True", 9999, None)), now), None);
        // A reboot is shorter than Kubernetes' own eviction delay.
        assert_eq!(
            node_down("n1", Some(&node("Unknown", 299, None)), now),
            None
        );
        assert_eq!(
            node_down("n1", Some(&node("Unknown", 300, None)), now).as_deref(),
            Some("its node n1 has not been Ready for 300s (Ready=Unknown)")
        );
        let shut = node("False", 1, Some("node.kubernetes.io/out-of-service"));
        assert!(
            node_down("n1", Some(&shut), now)
                .unwrap()
                .contains("out-of-service")
        );
        // Other taints say nothing.
        let cordoned = node("True", 1, Some("node.kubernetes.io/unschedulable"));
        assert_eq!(node_down("n1", Some(&cordoned), now), None);
    }

    #[test]
    fn a_cordoned_node_says_its_member_is_leaving_an_uncordoned_one_says_nothing() {
        use k8s_openapi::api::core::v1::{Node, NodeSpec};
        let node = |unschedulable: Option<bool>| Node {
            spec: Some(NodeSpec {
                unschedulable,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(
            node_cordoned("n1", Some(&node(Some(true))))
                .unwrap()
                .contains("its node n1 is cordoned")
        );
        assert_eq!(node_cordoned("n1", Some(&node(Some(false)))), None);
        assert_eq!(node_cordoned("n1", Some(&node(None))), None);
        // A deleted node is `node_down`'s to judge, not a drain.
        assert_eq!(node_cordoned("n1", None), None);
    }

    #[test]
    fn a_pod_marked_for_eviction_or_being_deleted_is_leaving() {
        use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let pod = |condition: Option<(&str, &str)>, deleted: bool| Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                deletion_timestamp: deleted.then_some(Time(jiff::Timestamp::UNIX_EPOCH)),
                ..Default::default()
            },
            status: Some(PodStatus {
                conditions: condition.map(|(status, reason)| {
                    vec![PodCondition {
                        type_: "DisruptionTarget".into(),
                        status: status.into(),
                        reason: Some(reason.into()),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(pod_leaving(&pod(None, false)), None);
        assert_eq!(
            pod_leaving(&pod(Some(("True", "EvictionByEvictionAPI")), false)).as_deref(),
            Some("it is marked for disruption (EvictionByEvictionAPI)")
        );
        assert_eq!(
            pod_leaving(&pod(Some(("False", "EvictionByEvictionAPI")), false)),
            None
        );
        assert_eq!(
            pod_leaving(&pod(None, true)).as_deref(),
            Some("it is being deleted")
        );
    }

    #[test]
    fn the_leader_is_the_one_named_in_the_highest_term() {
        let answer = |member_id, leader_id, raft_term| crate::etcd::EndpointStatus {
            member_id,
            leader_id,
            raft_term,
            cluster_id: 7,
            version: "3.6.16".into(),
            db_size: 0,
            db_size_in_use: 0,
            raft_index: 10,
            raft_applied_index: 10,
            revision: 3,
            is_learner: false,
            errors: Vec::new(),
            storage_version: String::new(),
            downgrade_target: String::new(),
        };
        // demo-0 was cut off and still names itself, leader of term 2; the others moved on.
        let answers = [
            answer(1, 1, 2),
            answer(2, 3, 5),
            answer(3, 3, 5),
            answer(4, 0, 9),
        ];
        assert_eq!(leader_by_term(answers.iter()), Some(3));
        assert_eq!(leader_by_term([answer(1, 0, 1)].iter()), None);
    }

    fn status(state: ContainerState) -> ContainerStatus {
        ContainerStatus {
            name: "etcd".into(),
            state: Some(state),
            last_state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    message: Some("couldn't find local name \"demo-1\"".into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_running_containers_last_state_message_is_older_than_it_and_ignored() {
        let running = status(ContainerState {
            running: Some(ContainerStateRunning::default()),
            ..Default::default()
        });
        assert_eq!(exit_message(&running), None);
        let crash_looping = status(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some("CrashLoopBackOff".into()),
                ..Default::default()
            }),
            ..Default::default()
        });
        assert!(
            exit_message(&crash_looping)
                .unwrap()
                .contains("couldn't find local name")
        );
    }

    #[test]
    fn a_failed_fetch_attempt_is_read_from_the_restore_pods_last_line_in_either_format() {
        let text = "2026-12-05T21:57:52.011174Z  WARN the fetch failed; trying again in 2s \
                    attempt=1 error=cannot reach S3 at http://127.0.0.1:18333 (connection failed) \
                    for bucket etcd-backups: check the endpoint URL, DNS, proxy and network policies\n";
        assert_eq!(
            failed_attempt(text).as_deref(),
            Some(
                "cannot reach S3 at http://127.0.0.1:18333 (connection failed) for bucket \
                 etcd-backups: check the endpoint URL, DNS, proxy and network policies"
            )
        );
        let json = r#"{"timestamp":"2026-12-05T21:57:52Z","level":"WARN","fields":{"message":"the fetch failed; trying again in 4s","attempt":2,"error":"access denied by the store"}}"#;
        assert_eq!(
            failed_attempt(json).as_deref(),
            Some("access denied by the store")
        );
        // A download going on, or nothing logged yet: nothing to say.
        assert_eq!(
            failed_attempt("2026-12-05T21:57:52Z  INFO fetching s3://b/k\n"),
            None
        );
        assert_eq!(failed_attempt(""), None);
    }

    #[test]
    fn the_newest_recent_failed_create_says_why_a_pod_is_missing() {
        let event = |at: i64, message: &str| {
            serde_json::from_value::<k8s_openapi::api::core::v1::Event>(serde_json::json!({
                "metadata": {"name": format!("demo.{at}")},
                "involvedObject": {"kind": "StatefulSet", "name": "demo"},
                "reason": "FailedCreate",
                "message": message,
                "lastTimestamp": jiff::Timestamp::from_second(at).unwrap().to_string(),
            }))
            .unwrap()
        };
        let now = jiff::Timestamp::from_second(10_000).unwrap();
        let quota = "create Pod demo-2 in StatefulSet demo failed error: pods \"demo-2\" is forbidden: \
                     exceeded quota: tight, requested: pods=1, used: pods=2, limited: pods=2";
        let missing = ["demo-2".to_string()];
        let older = "create Pod demo-2 in StatefulSet demo failed error: an older refusal";
        assert_eq!(
            newest_create_failure(&[event(9_000, older), event(9_900, quota)], &missing, now)
                .as_deref(),
            Some(quota)
        );
        // One from long ago, or about a pod that exists now, says nothing.
        assert_eq!(
            newest_create_failure(&[event(1_000, quota)], &missing, now),
            None
        );
        assert_eq!(
            newest_create_failure(&[event(9_900, quota)], &["demo-1".to_string()], now),
            None
        );
        assert_eq!(newest_create_failure(&[], &missing, now), None);
        let d = crate::fixtures::cluster("demo").desired();
        let pod = |name: &str| Pod {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            pods_missing(&d, 3, &[pod("demo-0"), pod("demo-1")]),
            ["demo-2"]
        );
        assert!(pods_missing(&d, 2, &[pod("demo-0"), pod("demo-1")]).is_empty());
    }

    #[test]
    fn a_kill_for_memory_is_read_with_the_containers_limit_also_while_it_runs_again() {
        let killed = |state: ContainerState| ContainerStatus {
            name: "etcd".into(),
            state: Some(state),
            last_state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    reason: Some("OOMKilled".into()),
                    exit_code: 137,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let running = killed(ContainerState {
            running: Some(ContainerStateRunning::default()),
            ..Default::default()
        });
        assert_eq!(exit_reason(&running).as_deref(), Some("OOMKilled"));
        let now_ended = ContainerStatus {
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    reason: Some("Error".into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..running.clone()
        };
        assert_eq!(exit_reason(&now_ended).as_deref(), Some("Error"));
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "demo-1"},
            "spec": {"containers": [
                {"name": "other", "resources": {"limits": {"memory": "1Gi"}}},
                {"name": "etcd", "resources": {"limits": {"memory": "48Mi", "cpu": "1"}}}
            ]},
            "status": {"containerStatuses": [serde_json::to_value(&running).unwrap()]}
        }))
        .unwrap();
        assert_eq!(memory_limit(&pod).as_deref(), Some("48Mi"));
        let v = pod_view(&pod, jiff::Timestamp::from_second(1).unwrap());
        assert_eq!(
            (v.last_exit_reason.as_deref(), v.memory_limit.as_deref()),
            (Some("OOMKilled"), Some("48Mi"))
        );
        assert_eq!(v.unschedulable, None);
        let pending: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "demo-2"},
            "status": {"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/1 nodes are available: 1 Insufficient memory."
            }]}
        }))
        .unwrap();
        let v = pod_view(&pending, jiff::Timestamp::from_second(1).unwrap());
        assert_eq!(
            v.unschedulable.as_deref(),
            Some("0/1 nodes are available: 1 Insufficient memory.")
        );
        assert!(v.trouble().unwrap().starts_with(
            "it cannot be scheduled: 0/1 nodes are available: 1 Insufficient memory."
        ));
    }
}
