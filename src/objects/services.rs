//! The cluster's supporting objects: owner reference, Services (peer, client, fenced) and the
//! disruption budget.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::monitoring;
use super::names::{
    CLIENT_PORT, LABEL_FENCED, PEER_PORT, client_service_name, labels, member_labels, pdb_name,
    peer_service_name,
};
use crate::api::EtcdCluster;
use crate::keys::ANNOTATION_CLIENT_SERVICE;
use crate::model::Desired;

/// Owner reference to the EtcdCluster: children are garbage-collected with it.
pub fn owner(d: &Desired) -> OwnerReference {
    OwnerReference {
        api_version: <EtcdCluster as kube::Resource>::api_version(&()).into_owned(),
        kind: <EtcdCluster as kube::Resource>::kind(&()).into_owned(),
        name: d.name.clone(),
        uid: d.uid.clone(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

pub(super) fn meta(d: &Desired, name: String) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(d.namespace.clone()),
        labels: Some(labels(&d.name)),
        owner_references: Some(vec![owner(d)]),
        ..Default::default()
    }
}

pub(super) fn port(name: &str, port: u16) -> ServicePort {
    ServicePort {
        name: Some(name.into()),
        port: port as i32,
        target_port: Some(IntOrString::Int(port as i32)),
        // Server-side apply of Service ports fails without protocol (it is a list-map key).
        protocol: Some("TCP".into()),
        ..Default::default()
    }
}

pub fn peer_service(d: &Desired) -> Service {
    Service {
        metadata: meta(d, peer_service_name(&d.name)),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            // Peers must resolve each other before any of them is Ready (bootstrap needs quorum).
            publish_not_ready_addresses: Some(true),
            selector: Some(member_labels(&d.name)),
            ports: Some(
                [port("client", CLIENT_PORT), port("peer", PEER_PORT)]
                    .into_iter()
                    .chain(d.metrics_port.map(|p| port(monitoring::PORT_NAME, p)))
                    .collect(),
            ),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn client_service(d: &Desired) -> Service {
    let c = &d.client_service;
    let mut metadata = meta(d, client_service_name(&d.name));
    if let Some(hash) = &c.hash {
        // The engine's labels win (validation refuses a spec that names them anyway).
        let mut labels = c.labels.clone();
        labels.extend(metadata.labels.take().unwrap_or_default());
        metadata.labels = Some(labels);
        let mut annotations = c.annotations.clone();
        annotations.insert(ANNOTATION_CLIENT_SERVICE.into(), hash.clone());
        metadata.annotations = Some(annotations);
    }
    Service {
        metadata,
        spec: Some(ServiceSpec {
            type_: c.type_.map(str::to_string),
            selector: Some(member_labels(&d.name)),
            ports: Some(vec![port("client", CLIENT_PORT)]),
            load_balancer_source_ranges: (!c.source_ranges.is_empty())
                .then(|| c.source_ranges.clone()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Whether the client Service there is is the one `spec.clientService` asks for: it carries the
/// hash of that spec (none, for a cluster that sets none). Anything else is applied again.
pub fn client_service_current(d: &Desired, svc: &Service) -> bool {
    let had = svc
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_CLIENT_SERVICE));
    had == d.client_service.hash.as_ref()
}

/// The client Service selecting no pod: clients cannot open new connections to any member while
/// `kubectl etcd recover` snapshots the survivor (writes acknowledged after the snapshot would be
/// lost). Its selector is atomic under server-side apply, so `client_service` puts it back whole.
pub fn fenced_client_service(d: &Desired) -> Service {
    let mut s = client_service(d);
    if let Some(sel) = s.spec.as_mut().and_then(|s| s.selector.as_mut()) {
        sel.insert(LABEL_FENCED.into(), "recover".into());
    }
    s
}

/// Whether a client Service's selector is the fence of `fenced_client_service`.
pub fn is_fenced(svc: &Service) -> bool {
    svc.spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .is_some_and(|sel| sel.contains_key(LABEL_FENCED))
}

/// PodDisruptionBudget (maxUnavailable 1), policy/v1 (the only version Kubernetes serves since
/// 1.25).
pub fn pdb(d: &Desired) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: meta(d, pdb_name(&d.name)),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(1)),
            selector: Some(LabelSelector {
                match_labels: Some(member_labels(&d.name)),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Whether Service `svc` sends only to pods of its own namespace, so that its DNS names
/// (`<svc>.<ns>.svc`, `<pod>.<svc>.<ns>.svc`) resolve there: it selects pods (the endpoint
/// controller then lists only pods of its namespace) and is not an ExternalName alias.
pub fn routes_to_own_pods(svc: &Service) -> bool {
    svc.spec.as_ref().is_some_and(|s| {
        s.type_.as_deref() != Some("ExternalName")
            && s.selector.as_ref().is_some_and(|m| !m.is_empty())
    })
}

/// The IPs pod `p` answers on, unless it shares its node's network (its IP is then the node's,
/// where anything of any namespace may listen).
pub fn own_pod_ips(p: &k8s_openapi::api::core::v1::Pod) -> Vec<std::net::IpAddr> {
    if p.spec.as_ref().and_then(|s| s.host_network) == Some(true) {
        return Vec::new();
    }
    let status = p.status.as_ref();
    status
        .and_then(|s| s.pod_ips.as_ref())
        .into_iter()
        .flatten()
        .map(|i| i.ip.as_str())
        .chain(status.and_then(|s| s.pod_ip.as_deref()))
        .filter_map(|ip| ip.parse().ok())
        .collect()
}
