//! Names, labels and the Kubernetes objects of one etcd cluster.
//!
//! Pure functions: no client. Every object name, label key, port and annotation the engine uses
//! comes from here, so observe, act and the tests agree by construction.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec, StatefulSetUpdateStrategy};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapEnvSource, Container, ContainerPort, EmptyDirVolumeSource, EnvFromSource,
    EnvVar, EnvVarSource, ExecAction, ObjectFieldSelector, PersistentVolumeClaim,
    PersistentVolumeClaimSpec, PodSpec, PodTemplateSpec, Probe, SecretKeySelector,
    SecretVolumeSource, Service, ServicePort, ServiceSpec, TopologySpreadConstraint, Volume,
    VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::api::EtcdCluster;
use crate::model::{ClientTls, Desired, Storage, Tls};

pub mod access;
pub mod install;
pub mod pvc_agent;
pub mod restore;

/// DNS domain of the Kubernetes cluster the members live in.
pub const CLUSTER_DOMAIN: &str = "cluster.local";
/// Container variables the kubelet fills in with the pod's own name and namespace.
pub const ENV_POD_NAME: &str = "POD_NAME";
pub const ENV_POD_NAMESPACE: &str = "POD_NS";
pub const CLIENT_PORT: u16 = 2379;
pub const PEER_PORT: u16 = 2380;
/// Field manager of every server-side apply the engine does.
pub const FIELD_MANAGER: &str = "kubectl-etcd";
pub const LABEL_NAME: &str = "app.kubernetes.io/name";
pub const LABEL_INSTANCE: &str = "app.kubernetes.io/instance";
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const ANNOTATION_TEMPLATE_HASH: &str = "etcd.kubectl-etcd.io/template-hash";
/// On the seed's claim of a restored cluster: `restoring`, then `restored` (`model::RestoreMark`).
pub const ANNOTATION_RESTORE: &str = "etcd.kubectl-etcd.io/restore";
/// In the client Service's selector while `kubectl etcd recover` fences clients off (no pod
/// carries it, so the Service has no endpoints); the engine's next apply of the Service, once the
/// cluster is unpaused, takes it out again (`fenced_client_service`).
pub const LABEL_FENCED: &str = "etcd.kubectl-etcd.io/fenced-by";
/// Label a StatefulSet puts on its pods naming their revision.
pub const LABEL_REVISION: &str = "controller-revision-hash";
/// Kubernetes' well-known labels of a node's zone and name: what members spread over.
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
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

/// Keys of the member-config ConfigMap. They are etcd's own environment variables: the member
/// container takes them with `envFrom` when it starts, so the image needs no shell (etcd's
/// official images since 3.5 are distroless).
pub mod config_key {
    /// Before the bootstrap: the initial members. After it: the current member list (learners
    /// included), which is what a member starting without data must present to join.
    pub const INITIAL_CLUSTER: &str = "ETCD_INITIAL_CLUSTER";
    /// "new" until the initial members have all started, then "existing": from then on a
    /// member without data can only join the cluster as the member it was added as, and never
    /// found a second cluster.
    pub const INITIAL_CLUSTER_STATE: &str = "ETCD_INITIAL_CLUSTER_STATE";
    pub const INITIAL_TOKEN: &str = "ETCD_INITIAL_CLUSTER_TOKEN";
}

pub const STATE_NEW: &str = "new";
pub const STATE_EXISTING: &str = "existing";

/// Whether the member config says the initial members formed the cluster.
pub fn is_bootstrapped(config: &BTreeMap<String, String>) -> bool {
    config
        .get(config_key::INITIAL_CLUSTER_STATE)
        .map(String::as_str)
        == Some(STATE_EXISTING)
}

pub fn statefulset_name(cluster: &str) -> String {
    cluster.to_string()
}
/// Headless Service: stable per-member DNS names for peers (publishes not-ready addresses).
pub fn peer_service_name(cluster: &str) -> String {
    cluster.to_string()
}
/// ClusterIP Service for clients.
pub fn client_service_name(cluster: &str) -> String {
    format!("{cluster}-client")
}
pub fn config_name(cluster: &str) -> String {
    format!("{cluster}-members")
}
pub fn pdb_name(cluster: &str) -> String {
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
pub fn member_host(cluster: &str, namespace: &str, ordinal: u32) -> String {
    format!(
        "{}.{}.{namespace}.svc.{CLUSTER_DOMAIN}",
        pod_name(cluster, ordinal),
        peer_service_name(cluster)
    )
}
pub fn peer_url(d: &Desired, ordinal: u32) -> String {
    format!(
        "{}://{}:{PEER_PORT}",
        d.tls.peer_scheme(),
        member_host(&d.name, &d.namespace, ordinal)
    )
}
pub fn client_url(d: &Desired, ordinal: u32) -> String {
    format!(
        "{}://{}:{CLIENT_PORT}",
        d.tls.client_scheme(),
        member_host(&d.name, &d.namespace, ordinal)
    )
}

/// `demo-3` → 3 for cluster `demo`. Parsed as a number, never compared as a string.
pub fn ordinal_of_pod(cluster: &str, pod: &str) -> Option<u32> {
    let rest = pod.strip_prefix(cluster)?.strip_prefix('-')?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}
pub fn ordinal_of_volume(cluster: &str, pvc: &str) -> Option<u32> {
    ordinal_of_pod(cluster, pvc.strip_prefix(DATA_VOLUME)?.strip_prefix('-')?)
}
/// The ordinal of a member from the peer URL the engine built for it; `None` for foreign members.
pub fn ordinal_of_peer_url(cluster: &str, namespace: &str, url: &str) -> Option<u32> {
    let host = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?
        .strip_suffix(&format!(":{PEER_PORT}"))?;
    let pod = host.strip_suffix(&format!(
        ".{}.{namespace}.svc.{CLUSTER_DOMAIN}",
        peer_service_name(cluster)
    ))?;
    ordinal_of_pod(cluster, pod)
}

pub fn selector_labels(cluster: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_NAME.to_string(), "etcd".to_string()),
        (LABEL_INSTANCE.to_string(), cluster.to_string()),
    ])
}
/// `app.kubernetes.io/name=etcd,app.kubernetes.io/instance=demo` for list calls and the scale subresource.
pub fn selector_string(cluster: &str) -> String {
    selector_labels(cluster)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}
fn labels(cluster: &str) -> BTreeMap<String, String> {
    let mut l = selector_labels(cluster);
    l.insert(LABEL_MANAGED_BY.to_string(), FIELD_MANAGER.to_string());
    l
}

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

fn meta(d: &Desired, name: String) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(d.namespace.clone()),
        labels: Some(labels(&d.name)),
        owner_references: Some(vec![owner(d)]),
        ..Default::default()
    }
}

fn port(name: &str, port: u16) -> ServicePort {
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
            selector: Some(selector_labels(&d.name)),
            ports: Some(vec![port("client", CLIENT_PORT), port("peer", PEER_PORT)]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn client_service(d: &Desired) -> Service {
    Service {
        metadata: meta(d, client_service_name(&d.name)),
        spec: Some(ServiceSpec {
            selector: Some(selector_labels(&d.name)),
            ports: Some(vec![port("client", CLIENT_PORT)]),
            ..Default::default()
        }),
        ..Default::default()
    }
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
                match_labels: Some(selector_labels(&d.name)),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn initial_cluster(d: &Desired, ordinals: impl IntoIterator<Item = u32>) -> String {
    ordinals
        .into_iter()
        .map(|o| format!("{}={}", pod_name(&d.name, o), peer_url(d, o)))
        .collect::<Vec<_>>()
        .join(",")
}

/// FNV-1a: a stable, dependency-free hash for tokens (not for security).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// How a member that has started before is listed in the member config once the cluster is
/// formed: under a name no pod carries (cluster names never hold a '.'), so the URL list still
/// matches the cluster's (etcd checks count and URLs) while no pod finds its own name there.
pub fn started_member_alias(pod: &str) -> String {
    format!("{pod}.started")
}

/// `ETCD_INITIAL_CLUSTER` of a formed cluster: every current member's peer URL; only the
/// members in `may_join` (added by the engine, never started) under their own name.
///
/// This is what makes it impossible for a member to start on an empty volume as a voter: etcd
/// reads these flags only when its data directory holds no write-ahead log, and then joins as
/// the member listed under its name. A member with data ignores them; a member that lost its
/// data finds no entry under its name and exits with "couldn't find local name" before it
/// contacts anyone; only the learner the engine just added can join, as that learner.
pub fn join_list(
    d: &Desired,
    members: impl IntoIterator<Item = u32>,
    may_join: impl Fn(u32) -> bool,
) -> String {
    let mut ordinals: Vec<u32> = members.into_iter().collect();
    ordinals.sort_unstable();
    ordinals.dedup();
    ordinals
        .into_iter()
        .map(|o| {
            let pod = pod_name(&d.name, o);
            let name = if may_join(o) {
                pod
            } else {
                started_member_alias(&pod)
            };
            format!("{name}={}", peer_url(d, o))
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The member config of a formed cluster whose config was lost, rebuilt from what survives
/// (the volumes and the membership last recorded in status) when no member answers: every
/// member keeps its data and starts as itself; nobody may join until etcd answers again.
pub fn repaired_config(
    d: &Desired,
    members: impl IntoIterator<Item = u32>,
) -> BTreeMap<String, String> {
    let mut data = bootstrap_config(d, 0);
    data.insert(
        config_key::INITIAL_CLUSTER.to_string(),
        join_list(d, members, |_| false),
    );
    data.insert(
        config_key::INITIAL_CLUSTER_STATE.to_string(),
        STATE_EXISTING.to_string(),
    );
    data
}

/// The member-config data for a brand-new cluster of `replicas` members.
pub fn bootstrap_config(d: &Desired, replicas: u32) -> BTreeMap<String, String> {
    let token_suffix: String = d.uid.chars().filter(|c| *c != '-').take(8).collect();
    BTreeMap::from([
        (
            config_key::INITIAL_CLUSTER.to_string(),
            initial_cluster(d, 0..replicas),
        ),
        (
            config_key::INITIAL_CLUSTER_STATE.to_string(),
            // A restored seed starts on the data the restore wrote: the cluster exists already.
            if d.restore.is_some() {
                STATE_EXISTING
            } else {
                STATE_NEW
            }
            .to_string(),
        ),
        (
            config_key::INITIAL_TOKEN.to_string(),
            match &d.restore {
                // Every restore (and recovery) is a new cluster: its own token, so its own id.
                // The nonce tells apart two restores of one snapshot into the same cluster (same
                // uid, same URL: `recover --from-backup B` twice).
                Some(r) => {
                    let seed = match &r.nonce {
                        Some(n) => format!("{}#{n}", r.url),
                        None => r.url.clone(),
                    };
                    format!("{}-{}-{:08x}", d.name, token_suffix, fnv1a(&seed) as u32)
                }
                None => format!("{}-{}", d.name, token_suffix),
            },
        ),
    ])
}

pub fn config_map(d: &Desired, data: BTreeMap<String, String>) -> ConfigMap {
    ConfigMap {
        metadata: meta(d, config_name(&d.name)),
        data: Some(data),
        ..Default::default()
    }
}

fn env_field(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn env_secret(name: &str, secret: &str, key: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.into(),
                key: key.into(),
                optional: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The keys of a `spec.auth.userSecret` (those of the `kubernetes.io/basic-auth` type).
pub mod auth_key {
    pub const USERNAME: &str = "username";
    pub const PASSWORD: &str = "password";
}

/// The probe's and `kubectl exec … etcdctl`'s etcd user (`spec.auth`): etcdctl reads
/// `ETCDCTL_USER`/`ETCDCTL_PASSWORD`, and goes on unauthenticated while etcd's authentication is
/// off (3.4 to 3.7).
fn auth_env(d: &Desired) -> Vec<EnvVar> {
    d.auth_secret
        .iter()
        .flat_map(|s| {
            [
                env_secret("ETCDCTL_USER", s, auth_key::USERNAME),
                env_secret("ETCDCTL_PASSWORD", s, auth_key::PASSWORD),
            ]
        })
        .collect()
}

/// The name and password in a `spec.auth.userSecret`.
pub fn user_credentials(
    secret: &k8s_openapi::api::core::v1::Secret,
) -> Result<(String, String), String> {
    let data = secret.data.clone().unwrap_or_default();
    let get = |k: &str| {
        data.get(k)
            .and_then(|b| String::from_utf8(b.0.clone()).ok())
            .filter(|v| !v.is_empty())
    };
    match (get(auth_key::USERNAME), get(auth_key::PASSWORD)) {
        (Some(user), Some(password)) => Ok((user, password)),
        _ => Err(format!(
            "lacks a non-empty {} or {}; the user Secret holds both (type kubernetes.io/basic-auth)",
            auth_key::USERNAME,
            auth_key::PASSWORD
        )),
    }
}

fn env_value(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..Default::default()
    }
}

/// Readiness, so that the client Service routes only to voters that can serve: a learner is
/// never ready, nor is a member cut off from its quorum. `/health` (3.4, 3.5) and `/readyz`
/// (3.6, whose checks call the server directly) pass for learners; a linearizable read through
/// the gRPC API does not (etcd refuses it for learners), so the probe is one, with the image's
/// own etcdctl (present in etcd's official images, distroless or not).
fn readiness_probe(_: &Desired) -> Probe {
    let timing = Probe {
        period_seconds: Some(5),
        timeout_seconds: Some(4),
        failure_threshold: Some(2),
        ..Default::default()
    };
    Probe {
        exec: Some(ExecAction {
            command: Some(
                [
                    "etcdctl",
                    "--command-timeout=3s",
                    "get",
                    "--consistency=l",
                    "--keys-only",
                    "kubectl-etcd-readiness",
                ]
                .map(String::from)
                .to_vec(),
            ),
        }),
        ..timing
    }
}

pub fn pod_template(d: &Desired) -> PodTemplateSpec {
    // `$(POD_NAME)`/`$(POD_NS)` are expanded by the kubelet from the variables defined before.
    let host = format!(
        "$({ENV_POD_NAME}).{}.$({ENV_POD_NAMESPACE}).svc.{CLUSTER_DOMAIN}",
        peer_service_name(&d.name)
    );
    let mut args = vec!["etcd".to_string()];
    args.extend(d.etcd_flags.iter().cloned());
    let (cs, ps) = (d.tls.client_scheme(), d.tls.peer_scheme());
    let (tls_env, tls_volumes, tls_mounts) = tls_parts(&d.tls, d.version);
    let container = Container {
        name: CONTAINER.into(),
        image: Some(d.image.clone()),
        image_pull_policy: Some("IfNotPresent".into()),
        command: Some(args),
        // etcd reads its flags from ETCD_* variables; the member-config adds the bootstrap ones.
        env: Some(
            vec![
                env_field(ENV_POD_NAME, "metadata.name"),
                env_field(ENV_POD_NAMESPACE, "metadata.namespace"),
                env_value("ETCD_NAME", format!("$({ENV_POD_NAME})")),
                env_value("ETCD_DATA_DIR", data_dir()),
                env_value(
                    "ETCD_LISTEN_CLIENT_URLS",
                    format!("{cs}://0.0.0.0:{CLIENT_PORT}"),
                ),
                env_value(
                    "ETCD_ADVERTISE_CLIENT_URLS",
                    format!("{cs}://{host}:{CLIENT_PORT}"),
                ),
                env_value(
                    "ETCD_LISTEN_PEER_URLS",
                    format!("{ps}://0.0.0.0:{PEER_PORT}"),
                ),
                env_value(
                    "ETCD_INITIAL_ADVERTISE_PEER_URLS",
                    format!("{ps}://{host}:{PEER_PORT}"),
                ),
            ]
            .into_iter()
            .chain(etcdctl_api_env(d.version))
            .chain(tls_env)
            .chain(auth_env(d))
            .collect(),
        ),
        env_from: Some(vec![EnvFromSource {
            config_map_ref: Some(ConfigMapEnvSource {
                name: config_name(&d.name),
                optional: Some(false),
            }),
            ..Default::default()
        }]),
        ports: Some(vec![
            ContainerPort {
                name: Some("client".into()),
                container_port: CLIENT_PORT as i32,
                protocol: Some("TCP".into()),
                ..Default::default()
            },
            ContainerPort {
                name: Some("peer".into()),
                container_port: PEER_PORT as i32,
                protocol: Some("TCP".into()),
                ..Default::default()
            },
        ]),
        readiness_probe: Some(readiness_probe(d)),
        resources: d.resources.clone(),
        // etcd's last words (e.g. "couldn't find local name", a corrupt WAL) become the
        // container's termination message: observe reads why a member cannot start from the
        // pod status, without a shell in the image or access to logs.
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        volume_mounts: Some(
            std::iter::once(VolumeMount {
                name: DATA_VOLUME.into(),
                mount_path: DATA_DIR.into(),
                ..Default::default()
            })
            .chain(tls_mounts)
            .collect(),
        ),
        ..Default::default()
    };
    let mut volumes = match d.storage {
        Storage::Ephemeral => vec![Volume {
            name: DATA_VOLUME.into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        }],
        Storage::Volume { .. } => Vec::new(),
    };
    volumes.extend(tls_volumes);
    let volumes = (!volumes.is_empty()).then_some(volumes);
    // The user's labels first: validation refuses the engine's keys, and ours win regardless.
    let mut pod_labels = d.pod_labels.clone();
    pod_labels.extend(labels(&d.name));
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            annotations: (!d.pod_annotations.is_empty()).then(|| d.pod_annotations.clone()),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container],
            volumes,
            affinity: d.affinity.clone(),
            tolerations: d.tolerations.clone(),
            node_selector: d.node_selector.clone(),
            topology_spread_constraints: d.topology_spread.as_ref().map(|cs| {
                cs.iter()
                    .cloned()
                    .map(|mut c| {
                        c.label_selector.get_or_insert_with(|| LabelSelector {
                            match_labels: Some(selector_labels(&d.name)),
                            ..Default::default()
                        });
                        c
                    })
                    .collect()
            }),
            priority_class_name: d.priority_class_name.clone(),
            // etcd flushes on SIGTERM quickly; a long grace only slows member replacement.
            termination_grace_period_seconds: Some(10),
            // Service links would inject ETCD_* variables (for a Service named "etcd") that
            // etcd reads as flags.
            enable_service_links: Some(false),
            ..Default::default()
        }),
    }
}

/// The member container's TLS variables, volumes and mounts. etcd reads its TLS flags from
/// `ETCD_*` variables (every one a flag of 3.4 to 3.7); the image's etcdctl (the readiness
/// probe, `kubectl exec … etcdctl`) gets the client certificate from `ETCDCTL_*` ones and talks to
/// its own member on the loopback address, whose name the serving certificate need not carry
/// (`ETCDCTL_INSECURE_SKIP_TLS_VERIFY`: the member still checks the probe's certificate).
///
/// Peer TLS skips etcd's check of a peer certificate's names against the connecting peer's
/// address (the certificate must still be signed by the peer CA): members of a StatefulSet have
/// no fixed IP, so etcd would have to find the pod's DNS name by a reverse lookup of its IP, which
/// fails while the record of a new pod is not served yet (or names a previous holder of a reused
/// IP), and a joining learner is refused (`tls: "10.244.0.251" does not match any of DNSNames`).
/// The flag is `--experimental-peer-skip-client-san-verification` up to 3.5 and
/// `--peer-skip-client-san-verification` from 3.6 (the experimental name is deprecated there and
/// gone in 3.7): each version gets its own name.
fn tls_parts(
    t: &Tls,
    version: crate::model::Version,
) -> (Vec<EnvVar>, Vec<Volume>, Vec<VolumeMount>) {
    use tls_mount::*;
    let file = |dir: &str, key: &str| format!("{dir}/{key}");
    let (mut env, mut volumes, mut mounts) = (Vec::new(), Vec::new(), Vec::new());
    let mut mount = |volume: &str, secret: &str, dir: &str| {
        volumes.push(Volume {
            name: volume.into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(secret.into()),
                default_mode: Some(0o400),
                ..Default::default()
            }),
            ..Default::default()
        });
        mounts.push(VolumeMount {
            name: volume.into(),
            mount_path: dir.into(),
            read_only: Some(true),
            ..Default::default()
        });
    };
    if let Some(c) = &t.client {
        mount(SERVER_VOLUME, &c.server_secret, SERVER_DIR);
        mount(CLIENT_VOLUME, &c.client_secret, CLIENT_DIR);
        env.extend([
            env_value("ETCD_CERT_FILE", file(SERVER_DIR, tls_key::CERT)),
            env_value("ETCD_KEY_FILE", file(SERVER_DIR, tls_key::KEY)),
            env_value("ETCD_TRUSTED_CA_FILE", file(SERVER_DIR, tls_key::CA)),
            env_value("ETCD_CLIENT_CERT_AUTH", "true"),
            env_value(
                "ETCDCTL_ENDPOINTS",
                format!("https://127.0.0.1:{CLIENT_PORT}"),
            ),
            env_value("ETCDCTL_CERT", file(CLIENT_DIR, tls_key::CERT)),
            env_value("ETCDCTL_KEY", file(CLIENT_DIR, tls_key::KEY)),
            env_value("ETCDCTL_CACERT", file(CLIENT_DIR, tls_key::CA)),
            env_value("ETCDCTL_INSECURE_SKIP_TLS_VERIFY", "true"),
        ]);
    }
    if let Some(p) = &t.peer_secret {
        mount(PEER_VOLUME, p, PEER_DIR);
        env.extend([
            env_value("ETCD_PEER_CERT_FILE", file(PEER_DIR, tls_key::CERT)),
            env_value("ETCD_PEER_KEY_FILE", file(PEER_DIR, tls_key::KEY)),
            env_value("ETCD_PEER_TRUSTED_CA_FILE", file(PEER_DIR, tls_key::CA)),
            env_value("ETCD_PEER_CLIENT_CERT_AUTH", "true"),
            env_value(peer_skip_san_variable(version), "true"),
        ]);
    }
    (env, volumes, mounts)
}

/// The PEM files of a TLS Secret.
pub struct TlsFiles {
    pub ca: Vec<u8>,
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
}

/// `ca.crt`, `tls.crt` and `tls.key` of a TLS Secret, or which of them are missing.
pub fn tls_files(secret: &k8s_openapi::api::core::v1::Secret) -> Result<TlsFiles, String> {
    use tls_key::{CA, CERT, KEY};
    let data = secret.data.clone().unwrap_or_default();
    let get = |k: &str| data.get(k).map(|b| b.0.clone()).filter(|b| !b.is_empty());
    match (get(CA), get(CERT), get(KEY)) {
        (Some(ca), Some(cert), Some(key)) => Ok(TlsFiles { ca, cert, key }),
        (ca, cert, key) => {
            let missing: Vec<&str> = [
                (CA, ca.is_none()),
                (CERT, cert.is_none()),
                (KEY, key.is_none()),
            ]
            .into_iter()
            .filter_map(|(k, m)| m.then_some(k))
            .collect();
            Err(format!(
                "lacks {}; a TLS Secret holds tls.crt, tls.key and ca.crt",
                missing.join(", ")
            ))
        }
    }
}

/// `ETCDCTL_API=3` for the image's etcdctl up to 3.5; from 3.6 etcdctl speaks only v3 and warns
/// about the variable on every call ("unrecognized environment variable"), so it gets none.
fn etcdctl_api_env(version: crate::model::Version) -> Option<EnvVar> {
    ((version.major, version.minor) < (3, 6)).then(|| env_value("ETCDCTL_API", "3"))
}

/// The variable of etcd's "skip the SAN check of peer client certificates" flag for `version`.
pub fn peer_skip_san_variable(version: crate::model::Version) -> &'static str {
    if (version.major, version.minor) >= (3, 6) {
        "ETCD_PEER_SKIP_CLIENT_SAN_VERIFICATION"
    } else {
        "ETCD_EXPERIMENTAL_PEER_SKIP_CLIENT_SAN_VERIFICATION"
    }
}

/// The TLS a member pod template runs, read back from its Secret volumes (observe).
pub fn template_tls(t: &PodTemplateSpec) -> Tls {
    let secret = |volume: &str| {
        t.spec
            .as_ref()?
            .volumes
            .as_ref()?
            .iter()
            .find(|v| v.name == volume)?
            .secret
            .as_ref()?
            .secret_name
            .clone()
    };
    Tls {
        client: secret(tls_mount::SERVER_VOLUME)
            .zip(secret(tls_mount::CLIENT_VOLUME))
            .map(|(server_secret, client_secret)| ClientTls {
                server_secret,
                client_secret,
            }),
        peer_secret: secret(tls_mount::PEER_VOLUME),
    }
}

/// The spread `create` writes into a new cluster's spec (`model::new_cluster_defaults`): at most
/// one member more in any zone, then on any node, than in another, as a preference
/// (`ScheduleAnyway`: a one-node cluster still runs every member). No selector: `pod_template`
/// gives each constraint without one the members' own.
pub fn default_topology_spread() -> Vec<TopologySpreadConstraint> {
    [LABEL_ZONE, LABEL_HOSTNAME]
        .into_iter()
        .map(|key| TopologySpreadConstraint {
            max_skew: 1,
            topology_key: key.into(),
            when_unsatisfiable: "ScheduleAnyway".into(),
            ..Default::default()
        })
        .collect()
}

/// FNV-1a over the serialised template: stable across Rust releases (unlike `DefaultHasher`),
/// and compared against our own annotation, never against fields admission may rewrite.
pub fn template_hash(d: &Desired) -> String {
    let json = serde_json::to_string(&(pod_template(d), volume_claim(d))).unwrap_or_default();
    let mut h: u64 = 0xcbf29ce484222325;
    for b in json.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

fn volume_claim(d: &Desired) -> Option<PersistentVolumeClaim> {
    match &d.storage {
        Storage::Ephemeral => None,
        Storage::Volume { size, class } => Some(PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(DATA_VOLUME.into()),
                labels: Some(labels(&d.name)),
                ..Default::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                access_modes: Some(vec!["ReadWriteOnce".into()]),
                storage_class_name: class.clone(),
                resources: Some(VolumeResourceRequirements {
                    requests: Some(BTreeMap::from([(
                        "storage".to_string(),
                        Quantity(size.clone()),
                    )])),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
    }
}

/// The member StatefulSet at `replicas`. Parallel pod management (members bootstrap together;
/// the engine itself adds one member at a time) and OnDelete updates (the engine restarts members
/// one at a time, healthy cluster first; the StatefulSet controller never does on its own).
pub fn statefulset(d: &Desired, replicas: u32) -> StatefulSet {
    let mut metadata = meta(d, statefulset_name(&d.name));
    metadata.annotations = Some(BTreeMap::from([(
        ANNOTATION_TEMPLATE_HASH.to_string(),
        template_hash(d),
    )]));
    StatefulSet {
        metadata,
        spec: Some(StatefulSetSpec {
            replicas: Some(replicas as i32),
            service_name: Some(peer_service_name(&d.name)),
            pod_management_policy: Some("Parallel".into()),
            selector: LabelSelector {
                match_labels: Some(selector_labels(&d.name)),
                ..Default::default()
            },
            update_strategy: Some(StatefulSetUpdateStrategy {
                type_: Some("OnDelete".into()),
                ..Default::default()
            }),
            template: pod_template(d),
            volume_claim_templates: volume_claim(d).map(|c| vec![c]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired() -> Desired {
        crate::fixtures::cluster("demo").desired()
    }

    #[test]
    fn ordinals_are_parsed_from_names_and_urls() {
        assert_eq!(ordinal_of_pod("demo", "demo-12"), Some(12));
        assert_eq!(ordinal_of_pod("demo", "demo-x"), None);
        assert_eq!(ordinal_of_pod("demo", "demox-1"), None);
        assert_eq!(ordinal_of_pod("demo", "demo-2-1"), None);
        assert_eq!(ordinal_of_volume("demo", "data-demo-4"), Some(4));
        let mut d = desired();
        let url = peer_url(&d, 10);
        assert_eq!(url, "http://demo-10.demo.ns.svc.cluster.local:2380");
        assert_eq!(ordinal_of_peer_url("demo", "ns", &url), Some(10));
        d.tls.peer_secret = Some("peer".into());
        let url = peer_url(&d, 10);
        assert_eq!(url, "https://demo-10.demo.ns.svc.cluster.local:2380");
        assert_eq!(ordinal_of_peer_url("demo", "ns", &url), Some(10));
        assert_eq!(ordinal_of_peer_url("demo", "other", &url), None);
        assert_eq!(
            ordinal_of_peer_url("demo", "ns", "http://10.0.0.1:2380"),
            None
        );
    }

    #[test]
    fn the_auth_user_reaches_etcdctl_from_its_secret_and_only_with_spec_auth() {
        let env = |d: &Desired| -> Vec<EnvVar> {
            pod_template(d).spec.unwrap().containers[0]
                .env
                .clone()
                .unwrap_or_default()
        };
        let mut d = desired();
        assert!(!env(&d).iter().any(|e| e.name.starts_with("ETCDCTL_USER")));
        d.auth_secret = Some("etcd-root".into());
        let from = |name: &str| {
            env(&d)
                .into_iter()
                .find(|e| e.name == name)
                .and_then(|e| e.value_from?.secret_key_ref)
                .map(|r| (r.name, r.key))
        };
        assert_eq!(
            from("ETCDCTL_USER"),
            Some(("etcd-root".into(), "username".into()))
        );
        assert_eq!(
            from("ETCDCTL_PASSWORD"),
            Some(("etcd-root".into(), "password".into()))
        );
        // A new user Secret is a new template: it rolls out like any template change.
        assert_ne!(template_hash(&d), template_hash(&desired()));
    }

    #[test]
    fn user_credentials_need_a_username_and_a_password() {
        use k8s_openapi::ByteString;
        let secret = |pairs: &[(&str, &str)]| k8s_openapi::api::core::v1::Secret {
            data: Some(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                    .collect(),
            ),
            ..Default::default()
        };
        assert_eq!(
            user_credentials(&secret(&[("username", "root"), ("password", "pw")])),
            Ok(("root".into(), "pw".into()))
        );
        for bad in [
            secret(&[("username", "root")]),
            secret(&[("username", "root"), ("password", "")]),
            secret(&[("user", "root"), ("password", "pw")]),
        ] {
            let e = user_credentials(&bad).unwrap_err();
            assert!(e.contains("username") && e.contains("password"), "{e}");
        }
    }

    #[test]
    fn bootstrap_config_lists_every_initial_member_and_a_unique_token() {
        let c = bootstrap_config(&desired(), 3);
        assert_eq!(
            c[config_key::INITIAL_CLUSTER],
            "demo-0=http://demo-0.demo.ns.svc.cluster.local:2380,demo-1=http://demo-1.demo.ns.svc.cluster.local:2380,demo-2=http://demo-2.demo.ns.svc.cluster.local:2380"
        );
        assert_eq!(c[config_key::INITIAL_TOKEN], "demo-1234abcd");
        assert_eq!(c[config_key::INITIAL_CLUSTER_STATE], "new");
        assert!(!is_bootstrapped(&c));
    }

    #[test]
    fn services_always_name_their_port_protocol() {
        for s in [peer_service(&desired()), client_service(&desired())] {
            for p in s.spec.unwrap().ports.unwrap() {
                assert_eq!(p.protocol.as_deref(), Some("TCP"));
            }
        }
        assert_eq!(
            peer_service(&desired())
                .spec
                .unwrap()
                .publish_not_ready_addresses,
            Some(true)
        );
    }

    #[test]
    fn the_fenced_client_service_selects_no_member_and_the_plain_one_lifts_the_fence() {
        let d = desired();
        let fenced = fenced_client_service(&d);
        assert!(is_fenced(&fenced) && !is_fenced(&client_service(&d)));
        let member = statefulset(&d, 3).spec.unwrap().template.metadata.unwrap();
        let pod_labels = member.labels.unwrap();
        let sel = fenced.spec.unwrap().selector.unwrap();
        assert!(
            !sel.iter().all(|(k, v)| pod_labels.get(k) == Some(v)),
            "a member pod matches the fence: {sel:?}"
        );
        assert_eq!(fenced.metadata.name, client_service(&d).metadata.name);
    }

    #[test]
    fn spreading_reaches_the_template_selecting_the_members_and_a_silent_spec_keeps_its_hash() {
        let d = crate::fixtures::cluster("demo")
            .spec(crate::model::new_cluster_defaults)
            .desired();
        let spec = pod_template(&d).spec.unwrap();
        let cs = spec.topology_spread_constraints.unwrap();
        assert_eq!(cs.len(), 2);
        for c in &cs {
            assert_eq!(c.when_unsatisfiable, "ScheduleAnyway", "a preference only");
            assert_eq!(
                c.label_selector.as_ref().unwrap().match_labels.as_ref(),
                Some(&selector_labels("demo"))
            );
        }
        let args = spec.containers[0].command.clone().unwrap();
        assert!(args.contains(&"--auto-compaction-retention=1h".to_string()));
        // A cluster whose spec predates the defaults keeps the template it was created with
        // (the hash every such StatefulSet carries): its members are not restarted because a
        // default appeared. Change this value only for a change meant to roll every cluster.
        let silent = desired();
        assert!(
            pod_template(&silent)
                .spec
                .unwrap()
                .topology_spread_constraints
                .is_none()
        );
        assert_eq!(template_hash(&silent), "4299cb5d25f74c50");
    }

    #[test]
    fn template_hash_changes_with_the_template_only() {
        let a = desired();
        let mut b = desired();
        assert_eq!(template_hash(&a), template_hash(&b));
        b.replicas = 5;
        assert_eq!(
            template_hash(&a),
            template_hash(&b),
            "replicas are not part of the template"
        );
        b.image = "other/etcd:v3.5.16".into();
        assert_ne!(template_hash(&a), template_hash(&b));
    }

    #[test]
    fn statefulset_uses_on_delete_parallel_and_owner_reference() {
        let s = statefulset(&desired(), 4);
        let spec = s.spec.as_ref().unwrap();
        assert_eq!(spec.replicas, Some(4));
        assert_eq!(spec.pod_management_policy.as_deref(), Some("Parallel"));
        assert_eq!(
            spec.update_strategy.as_ref().unwrap().type_.as_deref(),
            Some("OnDelete")
        );
        assert_eq!(s.metadata.owner_references.unwrap()[0].kind, "EtcdCluster");
        assert_eq!(spec.volume_claim_templates.as_ref().unwrap().len(), 1);
        let mut e = desired();
        e.storage = Storage::Ephemeral;
        let s = statefulset(&e, 1);
        assert!(s.spec.as_ref().unwrap().volume_claim_templates.is_none());
        assert!(
            s.spec.unwrap().template.spec.unwrap().volumes.unwrap()[0]
                .empty_dir
                .is_some()
        );
    }

    #[test]
    fn pod_metadata_options_and_priority_reach_the_template_and_the_selector_stays() {
        let plain = pod_template(&desired());
        let plain_meta = plain.metadata.clone().unwrap();
        assert!(plain_meta.annotations.is_none(), "no empty annotations");
        assert!(plain.spec.as_ref().unwrap().priority_class_name.is_none());
        let d = crate::fixtures::cluster("demo")
            .spec(|s| {
                s.priority_class_name = Some("system-cluster-critical".into());
                s.pod_metadata = Some(crate::api::PodMetadata {
                    labels: [("team".to_string(), "db".to_string())].into(),
                    annotations: [("example.com/scrape".to_string(), "true".to_string())].into(),
                });
                s.etcd.options = [
                    ("heartbeat-interval".to_string(), "250".to_string()),
                    ("election-timeout".to_string(), "2500".to_string()),
                ]
                .into();
            })
            .desired();
        let t = pod_template(&d);
        let meta = t.metadata.unwrap();
        let labels = meta.labels.unwrap();
        assert_eq!(labels["team"], "db");
        for (k, v) in selector_labels("demo") {
            assert_eq!(labels[&k], v, "the selector label {k} is kept");
        }
        for k in super::labels("demo")
            .keys()
            .map(String::as_str)
            .chain([LABEL_REVISION, LABEL_FENCED])
        {
            assert!(
                crate::model::ENGINE_POD_LABELS.contains(&k),
                "{k} is the engine's but spec.podMetadata may set it"
            );
        }
        for k in labels
            .keys()
            .filter(|k| !plain_meta.labels.as_ref().unwrap().contains_key(*k))
        {
            assert_eq!(k, "team");
        }
        assert_eq!(meta.annotations.unwrap()["example.com/scrape"], "true");
        let spec = t.spec.unwrap();
        assert_eq!(
            spec.priority_class_name.as_deref(),
            Some("system-cluster-critical")
        );
        let args = spec.containers[0].command.clone().unwrap();
        assert_eq!(
            &args[args.len() - 2..],
            ["--election-timeout=2500", "--heartbeat-interval=250"],
            "options come last, sorted: {args:?}"
        );
    }

    #[test]
    fn readiness_excludes_learners_on_every_version() {
        let probe = |v: &str| {
            let d = crate::fixtures::cluster("demo").version(v).desired();
            pod_template(&d).spec.unwrap().containers[0]
                .readiness_probe
                .clone()
                .unwrap()
        };
        // /health and /readyz pass for learners; a linearizable gRPC read does not.
        for v in ["3.4.23", "3.5.16", "3.6.15", "3.7.3"] {
            let p = probe(v);
            assert!(p.http_get.is_none(), "{v}");
            let cmd = p.exec.unwrap().command.unwrap();
            assert_eq!(cmd[0], "etcdctl");
            assert!(cmd.contains(&"--consistency=l".to_string()), "{cmd:?}");
        }
    }

    #[test]
    fn etcdctl_api_is_set_only_where_etcdctl_knows_it() {
        for (v, set) in [
            ("3.4.23", true),
            ("3.5.35", true),
            ("3.6.16", false),
            ("3.7.3", false),
        ] {
            let d = crate::fixtures::cluster("demo").version(v).desired();
            let env = pod_template(&d).spec.unwrap().containers[0]
                .env
                .clone()
                .unwrap();
            assert_eq!(env.iter().any(|e| e.name == "ETCDCTL_API"), set, "{v}");
        }
    }

    #[test]
    fn etcd_tuning_flags_reach_the_container() {
        let mut d = desired();
        d.etcd_flags = vec!["--quota-backend-bytes=1".into()];
        let t = pod_template(&d);
        let cmd = t.spec.unwrap().containers[0].command.clone().unwrap();
        assert_eq!(cmd, ["etcd", "--quota-backend-bytes=1"]);
    }

    #[test]
    fn members_need_no_shell_in_the_image_only_etcd_variables() {
        let t = pod_template(&desired());
        let spec = t.spec.unwrap();
        assert_eq!(spec.enable_service_links, Some(false));
        let c = &spec.containers[0];
        assert_eq!(c.command.as_ref().unwrap()[0], "etcd");
        let env: BTreeMap<String, String> = c
            .env
            .clone()
            .unwrap()
            .into_iter()
            .filter_map(|e| Some((e.name, e.value?)))
            .collect();
        assert_eq!(env["ETCD_NAME"], "$(POD_NAME)");
        assert_eq!(
            env["ETCD_INITIAL_ADVERTISE_PEER_URLS"],
            "http://$(POD_NAME).demo.$(POD_NS).svc.cluster.local:2380"
        );
        // Every ETCD_* variable is a flag etcd knows (an unknown one stops etcd 3.4).
        let known = KNOWN_ETCD_VARIABLES;
        assert!(
            env.keys()
                .filter(|k| k.starts_with("ETCD_"))
                .all(|k| known.contains(&k.as_str())),
            "{env:?}"
        );
        assert_eq!(
            c.env_from.as_ref().unwrap()[0]
                .config_map_ref
                .as_ref()
                .unwrap()
                .name,
            "demo-members"
        );
    }

    /// The `ETCD_*` variables the template may set: flags of every etcd from 3.4 to 3.7 (but
    /// the experimental name of the peer SAN flag, which only 3.4 and 3.5 get: 3.7 removed it).
    const KNOWN_ETCD_VARIABLES: [&str; 16] = [
        "ETCD_PEER_SKIP_CLIENT_SAN_VERIFICATION",
        "ETCD_EXPERIMENTAL_PEER_SKIP_CLIENT_SAN_VERIFICATION",
        "ETCD_NAME",
        "ETCD_DATA_DIR",
        "ETCD_LISTEN_CLIENT_URLS",
        "ETCD_ADVERTISE_CLIENT_URLS",
        "ETCD_LISTEN_PEER_URLS",
        "ETCD_INITIAL_ADVERTISE_PEER_URLS",
        "ETCD_CERT_FILE",
        "ETCD_KEY_FILE",
        "ETCD_TRUSTED_CA_FILE",
        "ETCD_CLIENT_CERT_AUTH",
        "ETCD_PEER_CERT_FILE",
        "ETCD_PEER_KEY_FILE",
        "ETCD_PEER_TRUSTED_CA_FILE",
        "ETCD_PEER_CLIENT_CERT_AUTH",
    ];

    fn with_tls(client: bool, peer: bool) -> Desired {
        let mut d = desired();
        d.tls = Tls {
            client: client.then(|| ClientTls {
                server_secret: "srv".into(),
                client_secret: "cli".into(),
            }),
            peer_secret: peer.then(|| "peer".into()),
        };
        d
    }

    #[test]
    fn tls_switches_schemes_mounts_the_secrets_and_reads_back_from_the_template() {
        for (client, peer) in [(false, false), (true, false), (false, true), (true, true)] {
            let d = with_tls(client, peer);
            let t = pod_template(&d);
            assert_eq!(template_tls(&t), d.tls, "{client} {peer}");
            let spec = t.spec.clone().unwrap();
            let c = &spec.containers[0];
            let env: BTreeMap<String, String> = c
                .env
                .clone()
                .unwrap()
                .into_iter()
                .filter_map(|e| Some((e.name, e.value?)))
                .collect();
            let cs = if client { "https" } else { "http" };
            let ps = if peer { "https" } else { "http" };
            assert_eq!(
                env["ETCD_LISTEN_CLIENT_URLS"],
                format!("{cs}://0.0.0.0:2379")
            );
            assert_eq!(
                env["ETCD_ADVERTISE_CLIENT_URLS"],
                format!("{cs}://$(POD_NAME).demo.$(POD_NS).svc.cluster.local:2379")
            );
            assert_eq!(env["ETCD_LISTEN_PEER_URLS"], format!("{ps}://0.0.0.0:2380"));
            assert_eq!(
                env["ETCD_INITIAL_ADVERTISE_PEER_URLS"],
                format!("{ps}://$(POD_NAME).demo.$(POD_NS).svc.cluster.local:2380")
            );
            assert!(
                env.keys()
                    .filter(|k| k.starts_with("ETCD_"))
                    .all(|k| KNOWN_ETCD_VARIABLES.contains(&k.as_str())),
                "{env:?}"
            );
            // spec.etcd.options cannot set what the template or the member config sets.
            for k in env
                .keys()
                .map(String::as_str)
                .chain([
                    config_key::INITIAL_CLUSTER,
                    config_key::INITIAL_CLUSTER_STATE,
                    config_key::INITIAL_TOKEN,
                ])
                .filter_map(|k| k.strip_prefix("ETCD_"))
            {
                let flag = k.to_lowercase().replace('_', "-");
                assert!(
                    crate::model::ENGINE_FLAGS.contains(&flag.as_str()),
                    "{flag} is set by the engine but spec.etcd.options may set it"
                );
            }
            assert_eq!(env.contains_key("ETCD_CLIENT_CERT_AUTH"), client);
            assert_eq!(
                env.contains_key("ETCDCTL_CERT"),
                client,
                "the probe's certificate"
            );
            assert_eq!(env.contains_key("ETCD_PEER_CLIENT_CERT_AUTH"), peer);
            // Every file a variable names is in a mounted volume.
            let mounts: Vec<String> = c
                .volume_mounts
                .clone()
                .unwrap()
                .into_iter()
                .map(|m| m.mount_path)
                .collect();
            for (k, v) in &env {
                if k.ends_with("_FILE")
                    || ["ETCDCTL_CERT", "ETCDCTL_KEY", "ETCDCTL_CACERT"].contains(&k.as_str())
                {
                    assert!(
                        mounts.iter().any(|m| v.starts_with(&format!("{m}/"))),
                        "{k}={v} is not under a mount: {mounts:?}"
                    );
                }
            }
            let volumes = spec.volumes.unwrap_or_default();
            assert_eq!(volumes.len(), usize::from(client) * 2 + usize::from(peer));
            // The member config lists the peers under the same scheme.
            let c = bootstrap_config(&d, 3);
            assert!(
                c[config_key::INITIAL_CLUSTER]
                    .starts_with(&format!("demo-0={ps}://demo-0.demo.ns")),
                "{c:?}"
            );
        }
        // A template change of TLS changes the hash (a rolling restart for new Secrets).
        assert_ne!(
            template_hash(&with_tls(true, false)),
            template_hash(&with_tls(false, false))
        );
    }

    #[test]
    fn a_tls_secret_gives_its_three_files_or_names_the_missing_ones() {
        use k8s_openapi::ByteString;
        let secret = |keys: &[&str]| k8s_openapi::api::core::v1::Secret {
            data: Some(
                keys.iter()
                    .map(|k| (k.to_string(), ByteString(b"pem".to_vec())))
                    .collect(),
            ),
            ..Default::default()
        };
        let f = tls_files(&secret(&["ca.crt", "tls.crt", "tls.key"])).unwrap();
        assert_eq!(
            (f.ca, f.cert, f.key),
            (b"pem".to_vec(), b"pem".to_vec(), b"pem".to_vec())
        );
        let e = tls_files(&secret(&["tls.crt"])).err().unwrap();
        assert!(e.starts_with("lacks ca.crt, tls.key;"), "{e}");
        let e = tls_files(&k8s_openapi::api::core::v1::Secret::default())
            .err()
            .unwrap();
        assert!(e.starts_with("lacks ca.crt, tls.crt, tls.key;"), "{e}");
    }
}
