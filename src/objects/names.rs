//! Names, label and annotation keys, ports and paths: every name the engine gives an object, and
//! the parsers that read an ordinal back from one.

use std::collections::BTreeMap;

use crate::model::Desired;

/// Container variables the kubelet fills in with the pod's own name and namespace.
pub const ENV_POD_NAME: &str = "POD_NAME";
pub const ENV_POD_NAMESPACE: &str = "POD_NS";
/// The operator pod's `app.kubernetes.io/name`, from the downward API like the two above: with
/// its namespace, whom the NetworkPolicies it writes admit (`model::OperatorPods`).
pub const ENV_OPERATOR_NAME: &str = "OPERATOR_NAME";
/// Ports, the default cluster domain, the Services' names and the pod-name parser are named in
/// `crate::keys` (below `model` and `pki`).
pub use crate::keys::{
    CLIENT_PORT, DEFAULT_CLUSTER_DOMAIN, PEER_PORT, SWITCH_PEER_PORT, client_service_name,
    ordinal_of_pod, peer_service_name,
};
/// Field manager of every server-side apply the engine does (named in `crate::keys`).
pub const FIELD_MANAGER: &str = crate::keys::MANAGER_ENGINE;
/// Label and annotation keys are named in `crate::keys` (below `model` and `objects`).
pub use crate::keys::{
    ANNOTATION_CA_GENERATION, ANNOTATION_GROW_ASKED, ANNOTATION_RESTORE, ANNOTATION_TEMPLATE_HASH,
    ANNOTATION_TLS_SWITCH, ANNOTATION_TRUSTED_CA, LABEL_FENCED, LABEL_HOSTNAME, LABEL_INSTANCE,
    LABEL_MANAGED_BY, LABEL_NAME, LABEL_REVISION, LABEL_ZONE,
};
pub const DATA_VOLUME: &str = "data";
pub const DATA_DIR: &str = "/var/lib/etcd";

/// etcd's data dir inside the member volume (`ETCD_DATA_DIR`; a restore writes it too).
pub fn data_dir() -> String {
    format!("{DATA_DIR}/data")
}
pub const CONTAINER: &str = "etcd";

/// Where the TLS Secrets are mounted in a member container, and the volumes that carry them
/// (observe reads the Secret names back from these volumes).
pub mod tls_mount {
    pub const SERVER_VOLUME: &str = "tls-server";
    pub const CLIENT_VOLUME: &str = "tls-client";
    pub const PEER_VOLUME: &str = "tls-peer";
    pub const SERVER_DIR: &str = "/etc/etcd/tls/server";
    pub const CLIENT_DIR: &str = "/etc/etcd/tls/client";
    pub const PEER_DIR: &str = "/etc/etcd/tls/peer";
}
/// Keys of a TLS Secret (those of `kubernetes.io/tls` plus the CA, as cert-manager writes them).
pub mod tls_key {
    pub const CERT: &str = "tls.crt";
    pub const KEY: &str = "tls.key";
    pub const CA: &str = "ca.crt";
}

/// The Secrets of managed TLS are named in `model::pki`, beside the roles.
pub use crate::model::pki::{managed_tls, tls_secret_name};

pub fn statefulset_name(cluster: &str) -> String {
    cluster.to_string()
}
pub fn config_name(cluster: &str) -> String {
    format!("{cluster}-members")
}
pub fn pdb_name(cluster: &str) -> String {
    cluster.to_string()
}
/// The cluster's NetworkPolicy (`objects::network_policy`).
pub fn network_policy_name(cluster: &str) -> String {
    cluster.to_string()
}
pub fn pod_name(cluster: &str, ordinal: u32) -> String {
    format!("{cluster}-{ordinal}")
}
pub fn volume_name(cluster: &str, ordinal: u32) -> String {
    format!("{DATA_VOLUME}-{cluster}-{ordinal}")
}
/// The member's DNS name (the peer Service's record): what its URLs name, and the name its TLS
/// certificates are checked against (whatever address the engine dials).
pub fn member_host(cluster: &str, namespace: &str, domain: &str, ordinal: u32) -> String {
    format!(
        "{}.{}.{namespace}.svc.{domain}",
        pod_name(cluster, ordinal),
        peer_service_name(cluster)
    )
}
/// The peer URL a member started from `d`'s template is reached at: while TLS is switched, the
/// old scheme on the peer port, then the new one on the switch port (`plan::tls_switch`).
pub fn peer_url(d: &Desired, ordinal: u32) -> String {
    use crate::model::SwitchStage;
    match &d.tls_switch {
        None => peer_url_at(d, ordinal, d.tls.peer_scheme(), PEER_PORT),
        Some(s) if s.stage == SwitchStage::Both => {
            peer_url_at(d, ordinal, s.from_scheme(), PEER_PORT)
        }
        Some(s) => peer_url_at(d, ordinal, s.to_scheme(), SWITCH_PEER_PORT),
    }
}
/// The peer URL of member `ordinal` with this scheme and port.
pub fn peer_url_at(d: &Desired, ordinal: u32, scheme: &str, port: u16) -> String {
    format!(
        "{scheme}://{}:{port}",
        member_host(&d.name, &d.namespace, &d.cluster_domain, ordinal)
    )
}
pub fn client_url(d: &Desired, ordinal: u32) -> String {
    format!(
        "{}://{}:{CLIENT_PORT}",
        d.tls.client_scheme(),
        member_host(&d.name, &d.namespace, &d.cluster_domain, ordinal)
    )
}

/// The client URL of a member by its pod's IP (`status.podIP`): an IPv6 address goes in
/// brackets (`https://[fd00::5]:2379`), as URLs write it.
pub fn pod_ip_client_url(d: &Desired, ip: &str) -> String {
    let host = match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => format!("[{v6}]"),
        _ => ip.to_string(),
    };
    format!("{}://{host}:{CLIENT_PORT}", d.tls.client_scheme())
}

pub fn ordinal_of_volume(cluster: &str, pvc: &str) -> Option<u32> {
    ordinal_of_pod(cluster, pvc.strip_prefix(DATA_VOLUME)?.strip_prefix('-')?)
}
/// The ordinal of a member from the peer URL the engine built for it
/// (`<scheme>://<pod>.<peer service>.<namespace>.svc.<domain>:<peer port>`), whatever cluster
/// domain it ends in; `None` for foreign members.
pub fn ordinal_of_peer_url(cluster: &str, namespace: &str, url: &str) -> Option<u32> {
    let host = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let host = host
        .strip_suffix(&format!(":{PEER_PORT}"))
        .or_else(|| host.strip_suffix(&format!(":{SWITCH_PEER_PORT}")))?;
    let middle = format!(".{}.{namespace}.svc.", peer_service_name(cluster));
    let (pod, domain) = host.split_once(&middle)?;
    (!domain.is_empty()).then(|| ordinal_of_pod(cluster, pod))?
}

/// `app.kubernetes.io/name=etcd,app.kubernetes.io/instance=NAME`: the default selector of
/// `spec.topologySpreadConstraints`, and the selector of a StatefulSet made before the member
/// labels were (`Desired::legacy_selector`). It stays so there because a StatefulSet's selector
/// is immutable (a third label would need every existing StatefulSet re-created) and the pod
/// template's spread constraints are part of its hash (a change would roll every member).
/// Neither lets a foreign etcd of the same instance name in: the StatefulSet controller claims
/// only pods named after its set (and only orphans), and a spread constraint only counts pods.
/// Everything that routes traffic, budgets disruption, admits peers, or is read or deleted as a
/// member selects `member_labels`, and so does a new StatefulSet.
pub fn selector_labels(cluster: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_NAME.to_string(), "etcd".to_string()),
        (LABEL_INSTANCE.to_string(), cluster.to_string()),
    ])
}
/// The members' labels as only the engine writes them: `selector_labels` and
/// `app.kubernetes.io/managed-by=kubectl-etcd` (every member pod and claim of the engine has
/// carried them from the start). The selector of the Services, the disruption budget and the
/// NetworkPolicy, and of every list of the cluster's pods and claims, so that another etcd of
/// the same instance name in the namespace (a `bitnami/etcd` release, whose pods say
/// `managed-by: Helm`) is never selected, read as a member or deleted with the cluster's data.
pub fn member_labels(cluster: &str) -> BTreeMap<String, String> {
    labels(cluster)
}
/// `member_labels` as a label selector, for list calls and the scale subresource.
pub fn selector_string(cluster: &str) -> String {
    member_labels(cluster)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}
/// `app.kubernetes.io/managed-by=kubectl-etcd`: the selector of every object the engine made,
/// for watches that wake a driver when one of them changes.
pub fn managed_selector() -> String {
    format!("{LABEL_MANAGED_BY}={FIELD_MANAGER}")
}

/// The cluster an object the engine made belongs to, by its labels: a member pod's, its
/// StatefulSet's or a Service's (the members' selector labels), a restore or drill pod's. `None` for
/// others (a claim's agent pod, anything unlabelled): no pass waits on them.
pub fn cluster_of(labels: &BTreeMap<String, String>) -> Option<&str> {
    if labels.get(LABEL_NAME).map(String::as_str) == Some("etcd")
        && let Some(c) = labels.get(LABEL_INSTANCE)
    {
        return Some(c);
    }
    labels
        .get(crate::keys::LABEL_RESTORE_OF)
        .or_else(|| labels.get(crate::keys::LABEL_DRILL_OF))
        .map(String::as_str)
}
pub(super) fn labels(cluster: &str) -> BTreeMap<String, String> {
    let mut l = selector_labels(cluster);
    l.insert(LABEL_MANAGED_BY.to_string(), FIELD_MANAGER.to_string());
    l
}
