//! The member StatefulSet: pod template (env, probes, TLS mounts, auth), its hash, the volume
//! claim template.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec, StatefulSetUpdateStrategy};
use k8s_openapi::api::core::v1::{
    ConfigMapEnvSource, Container, ContainerPort, EmptyDirVolumeSource, EnvFromSource, EnvVar,
    EnvVarSource, ExecAction, Lifecycle, LifecycleHandler, ObjectFieldSelector,
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PodSpec, PodTemplateSpec, Probe,
    ResourceRequirements, SecretKeySelector, SecretVolumeSource, SleepAction,
    TopologySpreadConstraint, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::monitoring;
use super::names::{
    ANNOTATION_TEMPLATE_HASH, ANNOTATION_TLS_SWITCH, ANNOTATION_TRUSTED_CA, CLIENT_PORT, CONTAINER,
    DATA_DIR, DATA_VOLUME, ENV_POD_NAME, ENV_POD_NAMESPACE, PEER_PORT, config_name, data_dir,
    labels, member_labels, peer_service_name, selector_labels, statefulset_name, tls_key,
    tls_mount,
};
use super::services::meta;
use crate::model::{ClientTls, Desired, Storage, Tls};

pub(super) fn env_field(name: &str, path: &str) -> EnvVar {
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

pub(super) fn env_secret(name: &str, secret: &str, key: &str) -> EnvVar {
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
pub(super) fn auth_env(d: &Desired) -> Vec<EnvVar> {
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

pub(super) fn env_value(name: &str, value: impl Into<String>) -> EnvVar {
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
///
/// Timing: the kubelet probes once as the container starts (too early: etcd serves only once
/// its cluster elected a leader) and then every period, so a new member is Ready up to one
/// period after it can serve. A 2 s period keeps that under the 4 s etcd's leader takes to raise
/// a new cluster's version (which `create` waits for anyway); 3 failures in a row (6 s) take a
/// member out of the client Service, about as soon as the 10 s of 2 × 5 s before.
/// How often the kubelet runs the readiness probe.
pub const PROBE_PERIOD_SECONDS: i32 = 2;

pub(super) fn readiness_probe(_: &Desired) -> Probe {
    let timing = Probe {
        period_seconds: Some(PROBE_PERIOD_SECONDS),
        timeout_seconds: Some(4),
        failure_threshold: Some(3),
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

/// How long a member keeps serving after its pod is marked for deletion, before etcd gets
/// SIGTERM (a `preStop` sleep, the kubelet's own: etcd's images have no shell).
///
/// Deleting the pod takes it out of the client Service's endpoints at once, but kube-proxy
/// rewrites the node's rules only at its next sync (at most once a second by default). A client
/// connecting in between reached a member whose listener had just closed: refused, it waited
/// gRPC's 1 s reconnect backoff, the longest write stall of an upgrade (1.1–1.2 s in
/// `tests/bench-upgrade.sh`). Meanwhile the member serves as before: the connections already
/// open finish their calls; the restart is this much longer.
pub const PRE_STOP_SLEEP_SECONDS: i64 = 2;

fn lifecycle() -> Lifecycle {
    Lifecycle {
        pre_stop: Some(LifecycleHandler {
            sleep: Some(SleepAction {
                seconds: PRE_STOP_SLEEP_SECONDS,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn pod_template(d: &Desired) -> PodTemplateSpec {
    let (tls_env, tls_volumes, tls_mounts) = tls_parts(
        template_tls_of(d),
        d.version,
        &MemberTrust {
            allowed_peer_cn: allowed_peer_cn(d),
            probe_host: probe_host(d),
        },
    );
    let container = member_container(d, tls_env, tls_mounts);
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
    let mut pod_annotations = d.pod_annotations.clone();
    // The CAs the members trust, once a rotation began: etcd reads its CA files only at start,
    // so a change of them must restart the members (one at a time, as any template change).
    if let Some(trust) = d.pki.as_ref().and_then(|p| p.trust.as_ref()) {
        pod_annotations.insert(ANNOTATION_TRUSTED_CA.to_string(), trust.clone());
    }
    // The stage of a TLS switch: the pods carry it, so the planner knows where each listens.
    if let Some(s) = &d.tls_switch {
        pod_annotations.insert(ANNOTATION_TLS_SWITCH.to_string(), s.marker());
    }
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            annotations: (!pod_annotations.is_empty()).then_some(pod_annotations),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container],
            volumes,
            affinity: d.affinity.clone(),
            tolerations: d.tolerations.clone(),
            node_selector: d.node_selector.clone(),
            topology_spread_constraints: topology_spread(d),
            priority_class_name: d.priority_class_name.clone(),
            image_pull_secrets: pull_secret_refs(&d.image_pull_secrets),
            // etcd flushes on SIGTERM quickly; a long grace only slows member replacement
            // (the `preStop` sleep counts in it).
            termination_grace_period_seconds: Some(10),
            // Service links would inject ETCD_* variables (for a Service named "etcd") that
            // etcd reads as flags.
            enable_service_links: Some(false),
            // etcd never calls the Kubernetes API.
            automount_service_account_token: Some(false),
            // A member's volume takes the pod's group (`fsGroup`): what a root member of an
            // older operator wrote stays readable after the template rolls to this one.
            security_context: Some(super::security::pod_context()),
            ..Default::default()
        }),
    }
}

/// Secret names as a pod's `imagePullSecrets` lists them (None without any: templates of
/// clusters that name none stay byte-identical). The one place the CLI's flags and the pods
/// make them.
pub fn pull_secret_refs(
    names: &[String],
) -> Option<Vec<k8s_openapi::api::core::v1::LocalObjectReference>> {
    (!names.is_empty()).then(|| {
        names
            .iter()
            .map(|name| k8s_openapi::api::core::v1::LocalObjectReference { name: name.clone() })
            .collect()
    })
}

/// The etcd container of every member.
fn member_container(d: &Desired, tls_env: Vec<EnvVar>, tls_mounts: Vec<VolumeMount>) -> Container {
    let mut args = vec!["etcd".to_string()];
    args.extend(d.etcd_flags.iter().cloned());
    if let Some(i) = &d.integrity {
        args.extend(crate::model::integrity::flags(i, d.version));
    }
    Container {
        name: CONTAINER.into(),
        image: Some(d.image.clone()),
        image_pull_policy: Some("IfNotPresent".into()),
        command: Some(args),
        env: Some(member_env(d, tls_env)),
        env_from: Some(vec![EnvFromSource {
            config_map_ref: Some(ConfigMapEnvSource {
                name: config_name(&d.name),
                optional: Some(false),
            }),
            ..Default::default()
        }]),
        ports: Some(member_ports(d)),
        readiness_probe: Some(readiness_probe(d)),
        lifecycle: Some(lifecycle()),
        resources: Some(d.resources.clone().unwrap_or_else(default_member_resources)),
        // The restricted standard (`security`): etcd writes only its data dir, in the volume.
        security_context: Some(super::security::container_context()),
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
    }
}

/// A member's own DNS name as its pod spells it (`$(POD_NAME)`/`$(POD_NS)` are expanded by the
/// kubelet from the variables defined before): what it advertises, and what the engine dials
/// and verifies (`member_host`).
fn own_host(d: &Desired) -> String {
    format!(
        "$({ENV_POD_NAME}).{}.$({ENV_POD_NAMESPACE}).svc.{}",
        peer_service_name(&d.name),
        d.cluster_domain
    )
}

/// etcd reads its flags from ETCD_* variables; the member-config adds the bootstrap ones.
fn member_env(d: &Desired, tls_env: Vec<EnvVar>) -> Vec<EnvVar> {
    let host = own_host(d);
    let urls = member_urls(d);
    vec![
        env_field(ENV_POD_NAME, "metadata.name"),
        env_field(ENV_POD_NAMESPACE, "metadata.namespace"),
        env_value("ETCD_NAME", format!("$({ENV_POD_NAME})")),
        env_value("ETCD_DATA_DIR", data_dir()),
        env_value("ETCD_LISTEN_CLIENT_URLS", urls.listen_client),
        env_value(
            "ETCD_ADVERTISE_CLIENT_URLS",
            format!("{}://{host}:{CLIENT_PORT}", urls.advertise_client),
        ),
        env_value("ETCD_LISTEN_PEER_URLS", urls.listen_peer),
        env_value(
            "ETCD_INITIAL_ADVERTISE_PEER_URLS",
            format!(
                "{}://{host}:{}",
                urls.advertise_peer.0, urls.advertise_peer.1
            ),
        ),
    ]
    .into_iter()
    // Plain HTTP whatever the client port speaks: /metrics and /health only.
    .chain(
        d.metrics_port
            .map(|p| env_value("ETCD_LISTEN_METRICS_URLS", format!("http://0.0.0.0:{p}"))),
    )
    .chain(etcdctl_api_env(d.version))
    .chain(tls_env)
    .chain(auth_env(d))
    .collect()
}

/// Where a member listens and what it advertises (schemes, and the port of its peer URL).
struct MemberUrls {
    listen_client: String,
    advertise_client: &'static str,
    listen_peer: String,
    advertise_peer: (&'static str, u16),
}

/// The listeners of `d`'s template. While TLS is switched (`plan::tls_switch`) the client port
/// serves both schemes (etcd serves http and https on one listener), then the new one only;
/// the peer port keeps the old scheme and the switch port serves the new one, then both serve
/// the new one. Without a switch: the scheme of `d.tls` on each port.
fn member_urls(d: &Desired) -> MemberUrls {
    use super::names::SWITCH_PEER_PORT;
    use crate::model::SwitchStage;
    let any = "0.0.0.0";
    match &d.tls_switch {
        None => {
            let (cs, ps) = (d.tls.client_scheme(), d.tls.peer_scheme());
            MemberUrls {
                listen_client: format!("{cs}://{any}:{CLIENT_PORT}"),
                advertise_client: cs,
                listen_peer: format!("{ps}://{any}:{PEER_PORT}"),
                advertise_peer: (ps, PEER_PORT),
            }
        }
        Some(s) if s.stage == SwitchStage::Both => MemberUrls {
            listen_client: format!("http://{any}:{CLIENT_PORT},https://{any}:{CLIENT_PORT}"),
            advertise_client: s.from_scheme(),
            listen_peer: format!(
                "{}://{any}:{PEER_PORT},{}://{any}:{SWITCH_PEER_PORT}",
                s.from_scheme(),
                s.to_scheme()
            ),
            advertise_peer: (s.from_scheme(), PEER_PORT),
        },
        Some(s) => {
            let to = s.to_scheme();
            MemberUrls {
                listen_client: format!("{to}://{any}:{CLIENT_PORT}"),
                advertise_client: to,
                listen_peer: format!("{to}://{any}:{PEER_PORT},{to}://{any}:{SWITCH_PEER_PORT}"),
                advertise_peer: (to, SWITCH_PEER_PORT),
            }
        }
    }
}

/// The TLS Secrets `d`'s template mounts: those of the TLS side while a switch serves both
/// schemes, else `d.tls`.
fn template_tls_of(d: &Desired) -> &Tls {
    match &d.tls_switch {
        Some(s) if s.stage == crate::model::SwitchStage::Both => &s.secrets,
        _ => &d.tls,
    }
}

/// The client and peer ports, and the metrics port when `spec.metrics` asks for one.
fn member_ports(d: &Desired) -> Vec<ContainerPort> {
    vec![
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
    ]
    .into_iter()
    .chain(d.metrics_port.map(|p| ContainerPort {
        name: Some(monitoring::PORT_NAME.into()),
        container_port: i32::from(p),
        protocol: Some("TCP".into()),
        ..Default::default()
    }))
    .collect()
}

/// `spec.topologySpreadConstraints`, each selecting the cluster's pods unless it says otherwise.
fn topology_spread(d: &Desired) -> Option<Vec<TopologySpreadConstraint>> {
    d.topology_spread.as_ref().map(|cs| {
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
    })
}

/// A member's resources when `spec.resources` is silent: requests only (the scheduler keeps room
/// for an idle member of a small cluster), no limits (a CPU limit throttles heartbeats into
/// elections; a memory limit kills a member whose database grew). Production clusters set
/// `spec.resources` for their load.
pub fn default_member_resources() -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_string(), Quantity("50m".into())),
            ("memory".to_string(), Quantity("128Mi".into())),
        ])),
        ..Default::default()
    }
}

/// The member container's TLS variables, volumes and mounts. etcd reads its TLS flags from
/// `ETCD_*` variables (every one a flag of 3.4 to 3.7); the image's etcdctl (the readiness
/// probe, `kubectl exec … etcdctl`) gets the client certificate from `ETCDCTL_*` ones and talks to
/// its own member at `probe_host`, verifying the serving certificate against it.
///
/// Peer TLS skips etcd's check of a peer certificate's names against the connecting peer's
/// address (the certificate must still be signed by the peer CA): members of a StatefulSet have
/// no fixed IP, so etcd would have to find the pod's DNS name by a reverse lookup of its IP, which
/// fails while the record of a new pod is not served yet (or names a previous holder of a reused
/// IP), and a joining learner is refused (`tls: "10.244.0.251" does not match any of DNSNames`).
/// The flag is `--experimental-peer-skip-client-san-verification` up to 3.5 and
/// `--peer-skip-client-san-verification` from 3.6 (the experimental name is deprecated there and
/// gone in 3.7): each version gets its own name.
///
/// The peer port admits only the cluster's peer certificate when the engine knows its CN
/// (`allowed_peer_cn`): without it, any certificate of the peer CA, an application's included,
/// could read `/members` and post raft messages there.
pub(super) fn tls_parts(
    t: &Tls,
    version: crate::model::Version,
    trust: &MemberTrust,
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
                format!("https://{}:{CLIENT_PORT}", trust.probe_host),
            ),
            env_value("ETCDCTL_CERT", file(CLIENT_DIR, tls_key::CERT)),
            env_value("ETCDCTL_KEY", file(CLIENT_DIR, tls_key::KEY)),
            env_value("ETCDCTL_CACERT", file(CLIENT_DIR, tls_key::CA)),
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
        env.extend(
            trust
                .allowed_peer_cn
                .as_deref()
                .map(|cn| env_value(PEER_CERT_ALLOWED_CN, cn)),
        );
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
pub(super) fn etcdctl_api_env(version: crate::model::Version) -> Option<EnvVar> {
    ((version.major, version.minor) < (3, 6)).then(|| env_value("ETCDCTL_API", "3"))
}

/// etcd's `--peer-cert-allowed-cn` (every version from 3.4 to 3.7; a list from 3.5, one CN in
/// 3.4): a peer connection is refused unless the other end's certificate has this CN, both ways
/// (etcd checks it on the certificates its members serve and present alike).
pub const PEER_CERT_ALLOWED_CN: &str = "ETCD_PEER_CERT_ALLOWED_CN";

/// Whom a member's TLS admits and verifies besides its CAs (`tls_parts`).
pub(super) struct MemberTrust {
    /// The only CN the peer port admits (`allowed_peer_cn`).
    pub allowed_peer_cn: Option<String>,
    /// The name the in-pod etcdctl dials and checks the serving certificate against
    /// (`probe_host`).
    pub probe_host: String,
}

/// Where the in-pod etcdctl (the readiness probe) reaches its own member, a name the serving
/// certificate carries so that it is verified: the loopback address, in the modes whose
/// certificates the engine names (`crate::pki::member_names` holds `127.0.0.1`; no name lookup,
/// so a member stays Ready while the cluster's DNS is down); otherwise the member's own DNS
/// name, the one the engine verifies too (`member_host`: the user's serving certificate must
/// carry it), which the kubelet's `/etc/hosts` maps to the pod's address (a StatefulSet pod has
/// that hostname and subdomain).
pub fn probe_host(d: &Desired) -> String {
    if d.pki.is_some() || d.cert_manager.is_some() {
        "127.0.0.1".into()
    } else {
        own_host(d)
    }
}

/// The CN the peer port admits: the peer certificate's, in the modes where the engine names it
/// (managed, certManager: `member_common_name`); `None` for Secrets the user brings, whose CN
/// the engine does not know.
pub fn allowed_peer_cn(d: &Desired) -> Option<String> {
    (d.pki.is_some() || d.cert_manager.is_some())
        .then(|| crate::model::pki::member_common_name(&d.name, crate::model::pki::CertRole::Peer))
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

/// The etcd container of a StatefulSet's pod template (its command and image, as the members
/// run them).
pub fn running_container(s: &StatefulSet) -> Option<&Container> {
    s.spec
        .as_ref()?
        .template
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == CONTAINER)
}

/// The cluster domain the members of a template advertise their names in (`member_env`'s
/// `ETCD_INITIAL_ADVERTISE_PEER_URLS`, `<scheme>://$(POD_NAME).<peers>.$(POD_NS).svc.<domain>:<port>`);
/// `None` for a template that does not say.
pub fn template_domain(t: &PodTemplateSpec) -> Option<String> {
    let url = t
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == CONTAINER)?
        .env
        .as_ref()?
        .iter()
        .find(|e| e.name == "ETCD_INITIAL_ADVERTISE_PEER_URLS")?
        .value
        .as_deref()?;
    let after = url.split_once(&format!(".$({ENV_POD_NAMESPACE}).svc."))?.1;
    let domain = after.rsplit_once(':').map_or(after, |(d, _)| d);
    (!domain.is_empty()).then(|| domain.to_string())
}

/// The spread `create` writes into a new cluster's spec (a default of the spec: `model`'s).
pub use crate::model::default_topology_spread;

/// FNV-1a over the serialised template: stable across Rust releases (unlike `DefaultHasher`),
/// and compared against our own annotation, never against fields admission may rewrite.
pub fn template_hash(d: &Desired) -> String {
    let json = serde_json::to_string(&(pod_template(d), volume_claim(d))).unwrap_or_default();
    format!("{:016x}", super::member_config::fnv1a(&json))
}

pub(super) fn volume_claim(d: &Desired) -> Option<PersistentVolumeClaim> {
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
                        Quantity(size.to_string()),
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
            // Immutable: one made before the member labels were its selector keeps its own.
            selector: LabelSelector {
                match_labels: Some(match d.legacy_selector {
                    true => selector_labels(&d.name),
                    false => member_labels(&d.name),
                }),
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
