//! `Desired`: the validated spec, its defaults, and what stays fixed once the StatefulSet exists
//! (`keep_immutable`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use serde::Serialize;

use super::observed::WorkloadView;
use super::quantity::Quantity;
use super::validate::{InvalidSpec, invalid};
use super::version::{MAX_MINOR, Version, VersionChange};
use crate::keys::{LABEL_HOSTNAME, LABEL_ZONE};

/// Image repository used when the spec names none (the layout of etcd's official release images).
pub const DEFAULT_IMAGE_REPOSITORY: &str = "gcr.io/etcd-development/etcd";
/// etcd's own default of `--quota-backend-bytes` (what a spec without a quota gets).
pub const DEFAULT_QUOTA_BYTES: i64 = 2 << 30;
/// How long a member must look lost (no data, unusable data, another member's identity) before
/// the engine replaces it, when the spec names no grace period.
pub const DEFAULT_LOST_MEMBER_GRACE_SECONDS: u64 = 180;
/// Seconds an upgraded member may take to become healthy before the upgrade is rolled back,
/// when the spec names none.
pub const DEFAULT_UPGRADE_TIMEOUT_SECONDS: u64 = 300;
/// Volume size when the spec names none.
pub const DEFAULT_STORAGE_SIZE: &str = "1Gi";
/// [`DEFAULT_STORAGE_SIZE`] in bytes.
pub const DEFAULT_STORAGE_BYTES: i64 = 1 << 30;
/// Room a member's volume keeps beside the database for etcd's write-ahead log: the five WAL
/// files etcd retains (`--max-wals`, 64 MiB each) and the one it preallocates.
pub const WAL_RESERVE_BYTES: i64 = (6 * 64) << 20;

/// The largest quota (`--quota-backend-bytes`) a volume of `volume_bytes` holds safely: besides
/// the WAL, room for a second copy of the database, which etcd writes beside the first while it
/// defragments (`db.tmp`) and while a lagging member or a new learner receives the leader's
/// snapshot (`<index>.snap.db`). With a bigger quota the volume fills before etcd refuses
/// writes, and on every member at once (they hold the same data): etcd then stops, where a full
/// quota only makes it read-only until space is freed. Whole MiB, at least 0.
pub fn quota_fitting(volume_bytes: i64) -> i64 {
    ((volume_bytes - WAL_RESERVE_BYTES) / 2).max(0) >> 20 << 20
}

/// The smallest volume whose [`quota_fitting`] is `quota` bytes: whole MiB, rounded up.
pub fn volume_fitting(quota: i64) -> i64 {
    let bytes = quota.saturating_mul(2).saturating_add(WAL_RESERVE_BYTES);
    (bytes.saturating_add((1 << 20) - 1) >> 20) << 20
}

/// The smallest volume a new cluster gets: a 64 MiB quota beside the WAL's room.
pub const MIN_NEW_VOLUME: &str = "512Mi";
/// [`MIN_NEW_VOLUME`] in bytes.
pub const MIN_NEW_VOLUME_BYTES: i64 = 512 << 20;

/// Refuses a volume size too small for a new cluster (below [`MIN_NEW_VOLUME`]): etcd
/// preallocates its WAL in 64 MiB files and keeps up to six. Existing clusters are never refused
/// for it (their volumes exist).
pub fn check_new_volume(size: &Quantity) -> Result<(), String> {
    if size.signed_bytes() < MIN_NEW_VOLUME_BYTES {
        return Err(format!(
            "volumes of {size} are too small for etcd: it preallocates its write-ahead log in \
             64 MiB files and keeps up to six beside the database; give --storage \
             {MIN_NEW_VOLUME} or more"
        ));
    }
    Ok(())
}

/// The quota a new cluster's volumes of `volume_bytes` get (`new_cluster_defaults`): etcd's
/// default, or less where the volume holds no more.
pub fn new_cluster_quota(volume_bytes: i64) -> i64 {
    quota_fitting(volume_bytes).min(DEFAULT_QUOTA_BYTES)
}

/// The member volume size of a cluster restored from a database of `snapshot_bytes`: `given`
/// (`--storage`) unless the quota its volumes get would be 90 % full or more at once (etcd's
/// NOSPACE, the engine's `FULL_PERCENT`) where a bigger volume gets a bigger quota: refused
/// with the size to give instead. With none given, the smallest whole GiB, the default at
/// least, whose quota is at least twice the database (or etcd's default). `None`: the default
/// size.
pub fn restore_storage(
    given: Option<&Quantity>,
    snapshot_bytes: u64,
) -> Result<Option<Quantity>, String> {
    const GIB: i64 = 1 << 30;
    let db = i64::try_from(snapshot_bytes).unwrap_or(i64::MAX);
    let wanted = db.saturating_mul(2).min(DEFAULT_QUOTA_BYTES);
    let fitting_gib = (volume_fitting(wanted).saturating_add(GIB - 1) / GIB).max(1);
    let Some(given) = given else {
        return Ok((new_cluster_quota(DEFAULT_STORAGE_BYTES) < wanted)
            .then(|| Quantity::gib(fitting_gib.unsigned_abs())));
    };
    check_new_volume(given)?;
    let quota = new_cluster_quota(given.signed_bytes());
    // (A database that fills etcd's default quota needs a bigger quota, not a bigger volume.)
    if quota < DEFAULT_QUOTA_BYTES && db >= quota / 100 * 90 {
        return Err(format!(
            "the snapshot's database ({} MiB) would fill {}% of the quota volumes of {given} \
             hold ({} MiB: etcd keeps room for its WAL and a second copy of the database), and \
             etcd would refuse writes at once; give --storage {fitting_gib}Gi or more",
            db >> 20,
            if quota > 0 { db * 100 / quota } else { 100 },
            quota >> 20,
        ));
    }
    Ok(Some(given.clone()))
}

/// Auto-compaction `create` and `restore` write into a new cluster's spec (`new_cluster_defaults`):
/// keep one hour of history, as KubeBlocks does (etcd-druid keeps 30 minutes).
pub const DEFAULT_AUTO_COMPACTION_MODE: &str = "periodic";
pub const DEFAULT_AUTO_COMPACTION_RETENTION: &str = "1h";

/// Fills in what a cluster created by `kubectl etcd create` or `restore` gets unless its spec
/// says otherwise: a quota that fits its volume ([`quota_fitting`], when that is below etcd's
/// default), periodic auto-compaction (`DEFAULT_AUTO_COMPACTION_*`) and a preference to
/// spread the members over zones and nodes (`objects::default_topology_spread`), and a metrics
/// listener (`spec.metrics`, port 2381).
///
/// Written into the spec, not assumed by `validate` when the spec is silent: the spec shows it
/// and can change it, and a cluster created before these defaults existed keeps the template it
/// has. A default that only `validate` knew would change the pod template of every existing
/// cluster, and the StatefulSet is applied whole (a resize too), so its next apply would roll
/// every member to gain a compaction flag or a scheduling hint.
pub fn new_cluster_defaults(spec: &mut crate::api::EtcdClusterSpec) {
    let t = &mut spec.etcd;
    if t.auto_compaction_mode.is_none() && t.auto_compaction_retention.is_none() {
        t.auto_compaction_mode = Some(DEFAULT_AUTO_COMPACTION_MODE.into());
        t.auto_compaction_retention = Some(DEFAULT_AUTO_COMPACTION_RETENTION.into());
    }
    if spec.integrity.is_none() && !super::integrity::set_by_options(&spec.etcd.options) {
        spec.integrity = Some(super::integrity::new_cluster_default());
    }
    if spec.topology_spread_constraints.is_none() {
        spec.topology_spread_constraints = Some(default_topology_spread());
    }
    if spec.metrics.is_none() {
        spec.metrics = Some(crate::api::MetricsSpec::default());
    }
    // etcd's default quota (2 GiB) does not fit the default volume (1 GiB): a quota that does.
    if spec.etcd.quota_backend_bytes.is_none() && !spec.storage.ephemeral {
        let size = spec.storage.size.as_deref().unwrap_or(DEFAULT_STORAGE_SIZE);
        if let Some(size) = Quantity::read(size) {
            let quota = new_cluster_quota(size.signed_bytes());
            if quota < DEFAULT_QUOTA_BYTES {
                spec.etcd.quota_backend_bytes = Some(quota);
            }
        }
    }
}

/// Whether `create` turns etcd's authentication on (`spec.tls.etcdAuth`) for a new cluster of
/// `version` with `tls`, unless a flag says otherwise: with a client certificate the engine
/// names (modes managed and certManager), on etcd 3.5 and later. Not on 3.4: etcd does not
/// support a rolling upgrade from 3.4 to 3.5 with authentication on (`plan::upgrade` refuses
/// it), so a 3.4 cluster born with it could not be upgraded without turning it off first.
pub fn etcd_auth_by_default(tls: Option<&crate::api::TlsSpec>, version: super::Version) -> bool {
    let mode = tls.and_then(|t| t.mode.as_deref());
    matches!(mode, Some("managed" | "certManager")) && (version.major, version.minor) >= (3, 5)
}

/// Where members keep their data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Storage {
    Ephemeral,
    Volume {
        size: Quantity,
        class: Option<String>,
    },
}

/// `spec.clientService`, validated. `hash` is `None` exactly when the spec sets none: the
/// Service of such a cluster stays as every earlier release wrote it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ClientService {
    /// `NodePort` or `LoadBalancer`; `None`: ClusterIP, not written.
    pub type_: Option<&'static str>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub source_ranges: Vec<String>,
    pub hash: Option<String>,
}

impl Desired {
    /// The hash a managed server certificate's Secret records of `server_names` (`None`
    /// without any: Secrets issued before the field existed stay current).
    pub fn server_names_hash(&self) -> Option<String> {
        (!self.server_names.is_empty())
            .then(|| format!("{:016x}", fnv1a(&self.server_names.join(","))))
    }

    /// The cluster's own etcd user, the CN of the engine's client certificate
    /// (`keys::engine_user`).
    pub fn engine_user(&self) -> String {
        crate::keys::engine_user(&self.namespace, &self.name)
    }

    /// The CN the engine's client certificate is issued with now: the cluster's own user, or
    /// the one it keeps until its move (`kept_client_cn`).
    pub fn client_cn(&self) -> String {
        self.kept_client_cn
            .clone()
            .unwrap_or_else(|| self.engine_user())
    }
}

impl ClientService {
    /// Reached from outside the cluster (a node port or a load balancer).
    pub fn exposed(&self) -> bool {
        self.type_.is_some_and(|t| t != "ClusterIP")
    }
}

/// TLS of member traffic (`spec.tls`, validated). Secret names only: the engine reads the
/// client Secret when it dials, the kubelet mounts the others.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tls {
    /// The client port speaks https with client-certificate authentication.
    pub client: Option<ClientTls>,
    /// The Secret of the peer certificate: peers speak https to each other.
    pub peer_secret: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClientTls {
    /// The members' serving certificate.
    pub server_secret: String,
    /// The certificate the engine, the probe and backups present.
    pub client_secret: String,
}

impl Tls {
    /// `http` or `https`, for the client port.
    pub fn client_scheme(&self) -> &'static str {
        if self.client.is_some() {
            "https"
        } else {
            "http"
        }
    }
    /// `http` or `https`, for the peer port.
    pub fn peer_scheme(&self) -> &'static str {
        if self.peer_secret.is_some() {
            "https"
        } else {
            "http"
        }
    }
    /// "client and peer TLS", "client TLS", "peer TLS", "no TLS": for messages.
    pub fn describe(&self) -> &'static str {
        match (self.client.is_some(), self.peer_secret.is_some()) {
            (true, true) => "client and peer TLS",
            (true, false) => "client TLS",
            (false, true) => "peer TLS",
            (false, false) => "no TLS",
        }
    }
}

/// TLS switched on or off for a running cluster (`plan::tls_switch`): which way, the Secrets of
/// the TLS side, and the stage the member template is at. Read back from the template's
/// `tls-switch` annotation (`keep_tls`), then from the member list (`plan::tls_switch::settle`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TlsSwitch {
    /// http → https (false: https → http).
    pub on: bool,
    /// The client and peer Secrets of the TLS side: the target when on, what the members ran
    /// when off.
    pub secrets: Tls,
    pub stage: SwitchStage,
}

/// The template a TLS switch runs (see `plan::tls_switch` for the whole path).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum SwitchStage {
    /// Members serve both schemes on the client port, the old scheme on the peer port and the
    /// new one on the switch port, and advertise the old client scheme.
    Both,
    /// Members serve the new scheme only: client port, peer port and switch port.
    Moved,
}

impl TlsSwitch {
    /// The scheme the members spoke before the switch.
    pub fn from_scheme(&self) -> &'static str {
        if self.on { "http" } else { "https" }
    }
    /// The scheme they speak after it.
    pub fn to_scheme(&self) -> &'static str {
        if self.on { "https" } else { "http" }
    }
    /// The template annotation recording the switch: `on/both`, `off/moved`, …
    pub fn marker(&self) -> String {
        format!(
            "{}/{}",
            if self.on { "on" } else { "off" },
            match self.stage {
                SwitchStage::Both => "both",
                SwitchStage::Moved => "moved",
            }
        )
    }
    /// The way and stage of a `marker`.
    pub fn parse_marker(s: &str) -> Option<(bool, SwitchStage)> {
        let (way, stage) = s.split_once('/')?;
        let on = match way {
            "on" => true,
            "off" => false,
            _ => return None,
        };
        let stage = match stage {
            "both" => SwitchStage::Both,
            "moved" => SwitchStage::Moved,
            _ => return None,
        };
        Some((on, stage))
    }
}

/// Where the TLS mode of `Desired.tls` comes from (see `unset_tls_mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum TlsOrigin {
    /// `spec.tls` names the mode, or names Secrets (`secrets`).
    #[default]
    Spec,
    /// The spec names none: `status.tls.mode`, what the engine decided when the cluster was born.
    Recorded,
    /// The spec names none and nothing was recorded, but status shows members: a cluster made
    /// before the decision was recorded keeps the plain http it was created with.
    BornBefore,
    /// The spec names none and adopts a running cluster: its new members speak what the old
    /// ones speak (plain http without Secrets).
    Adopting,
    /// The spec names none, nothing was recorded and nothing shows the cluster ever ran: it is
    /// being born, with managed TLS. A StatefulSet that exists all the same (status lost, the
    /// manifest restored by a backup tool) is followed, not refused (`keep_tls`).
    Birth,
}

/// What `validate` makes of `spec.backup`: where and how the cluster's backups are stored, and
/// when the operator takes them.
#[derive(Clone, Debug, PartialEq)]
pub struct BackupPlan {
    /// Location, compression, credentials Secret, SSE.
    pub to: crate::archive::Destination,
    /// `None`: no schedule (backups are taken on demand).
    pub schedule: Option<crate::archive::schedule::Schedule>,
    /// The schedule is suspended: nothing runs.
    pub suspend: bool,
    /// The first scheduled backup runs at once, not at the first slot after creation.
    pub run_on_create: bool,
    /// Which scheduled backups to keep (`None`: all).
    pub retention: Option<crate::archive::retention::Retention>,
    /// Scheduled restore drills (`spec.backup.drill`; `None`: only on demand).
    pub drill: Option<super::drill::DrillPlan>,
}

/// The validated, defaulted spec. Built once per pass by `validate`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Desired {
    pub name: String,
    pub namespace: String,
    /// Owner uid, for owner references and a unique initial-cluster token.
    pub uid: String,
    /// The StatefulSet keeps the two-label selector it was made with (`objects::selector_labels`,
    /// before the member labels were its selector): immutable, set by `keep_immutable`.
    pub legacy_selector: bool,
    pub generation: i64,
    pub replicas: u32,
    /// The version the members' template runs: `spec.version`, unless `plan::upgrade::settle`
    /// kept the running version (a refused path, a rolled-back upgrade; see `upgrade`).
    pub version: Version,
    pub image_repository: String,
    pub image: String,
    /// Where a version change stands (set by `plan::upgrade::settle`; `Steady` from `validate`).
    pub upgrade: VersionChange,
    /// Seconds an upgraded member may take to become healthy (`spec.upgradeTimeoutSeconds`).
    pub upgrade_timeout_seconds: u64,
    /// The pre-upgrade snapshot `kubectl etcd upgrade` recorded for this `spec.version`
    /// (annotation): `Some(url)`, `Some("skipped")`, or `None` (e.g. a plain `kubectl apply`).
    pub pre_upgrade_backup: Option<String>,
    /// Where the engine takes the pre-upgrade snapshot of a `spec.version` change that came
    /// without one (`spec.backup.destination`).
    pub backup_destination: Option<String>,
    /// What `validate` made of `spec.backup` (`None`: no backup settings). Nothing reads
    /// `spec.backup` after `validate`.
    #[serde(skip)]
    pub backup: Option<BackupPlan>,
    pub storage: Storage,
    pub resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    pub affinity: Option<k8s_openapi::api::core::v1::Affinity>,
    pub tolerations: Option<Vec<k8s_openapi::api::core::v1::Toleration>>,
    pub node_selector: Option<BTreeMap<String, String>>,
    /// `spec.topologySpreadConstraints` (a constraint without a selector gets the members' own
    /// in `objects::pod_template`).
    pub topology_spread: Option<Vec<k8s_openapi::api::core::v1::TopologySpreadConstraint>>,
    pub priority_class_name: Option<String>,
    /// Names of `spec.imagePullSecrets`, in their order (member and restore pods).
    pub image_pull_secrets: Vec<String>,
    /// The cluster DNS domain the members' names end in (`spec.clusterDomain`, default
    /// `cluster.local`).
    pub cluster_domain: String,
    /// Port of the members' plaintext metrics listener (`spec.metrics`); `None`: no listener.
    pub metrics_port: Option<u16>,
    /// Whether the engine keeps the cluster's NetworkPolicy (`spec.networkPolicy.enabled`,
    /// default true).
    pub network_policy: bool,
    /// Namespaces whose pods the NetworkPolicy admits to the client port
    /// (`spec.networkPolicy.clientNamespaces`), sorted, each once.
    pub client_namespaces: Vec<String>,
    /// The operator's pods the NetworkPolicy admits to the client port: not from the spec, but
    /// from the driver or the policy there is (`model::keep_operator`, applied in `observe`).
    pub operator: super::OperatorPods,
    /// The client Service's type, labels and annotations (`spec.clientService`; default: none).
    pub client_service: ClientService,
    /// Names the server certificate carries besides the cluster's own (`spec.tls.serverNames`,
    /// modes managed and certManager).
    pub server_names: Vec<String>,
    /// Labels and annotations the member pods get besides the engine's (`spec.podMetadata`).
    pub pod_labels: BTreeMap<String, String>,
    pub pod_annotations: BTreeMap<String, String>,
    /// Extra etcd flags (`--name=value`), from the tuning section (`spec.etcd.options` last).
    pub etcd_flags: Vec<String>,
    /// `spec.etcd.options` (checked for form; `keep_options` applies the allow list).
    pub etcd_options: BTreeMap<String, String>,
    /// `spec.integrity`, rendered for the template's version (`integrity::flags`).
    pub integrity: Option<super::integrity::Integrity>,
    /// `--quota-backend-bytes` when the spec sets it (0 or absent: etcd's default), or the quota
    /// the engine raised for a full database (`plan::nospace::settle`).
    pub quota_backend_bytes: Option<i64>,
    /// The spec's quota (bytes, etcd's default when unset) while `quota_backend_bytes` is the one
    /// the engine raised; `None` otherwise.
    pub quota_raised_from: Option<i64>,
    pub paused: bool,
    /// Seconds a member must look lost before it is replaced (`spec.lostMemberGraceSeconds`).
    pub lost_member_grace_seconds: u64,
    /// Spec changes the engine refuses to carry out (see `keep_immutable`); empty normally.
    pub refused: Vec<InvalidSpec>,
    /// The snapshot a new cluster starts from (`spec.restore`).
    pub restore: Option<RestoreSource>,
    /// TLS of client and peer traffic (`spec.tls`; kept as created, see `keep_immutable`).
    /// In managed mode it names the engine's own Secrets (`objects::tls_secret_name`).
    pub tls: Tls,
    /// `spec.tls.mode: managed`: the engine issues and renews the certificates of `tls`.
    pub pki: Option<super::pki::ManagedPki>,
    /// `spec.tls.mode: certManager`: cert-manager issues and renews the certificates of `tls`
    /// (the same Secret names as managed mode's), for the issuer named here.
    pub cert_manager: Option<super::pki::CertManagerTls>,
    /// `spec.tls.mode: none` was asked for explicitly (`--insecure`); a spec without `spec.tls`
    /// runs without TLS too (what a cluster created before the modes existed keeps).
    pub insecure_asked: bool,
    /// Where the mode of `tls` comes from: the spec, or the default decided at birth.
    pub tls_origin: TlsOrigin,
    /// TLS being switched on or off (`tls` is the target); `None` normally.
    pub tls_switch: Option<TlsSwitch>,
    /// The Secret of the etcd user to authenticate as while etcd's authentication is on
    /// (`spec.auth.userSecret`).
    pub auth_secret: Option<String>,
    /// etcd's authentication by client certificate (`spec.tls.etcdAuth`): the engine keeps the
    /// user `root` and turns it on (`plan::auth`). Only with managed or cert-manager TLS.
    pub etcd_auth: bool,
    /// The CN the engine's client certificate keeps for now instead of `engine_user()`: a
    /// cluster made before the CN was per cluster keeps `root` until its own user has the role
    /// `root` (`plan::auth::settle`). `None`: `engine_user()`.
    pub kept_client_cn: Option<String>,
    /// Defragmentation on request and by policy (`spec.maintenance`).
    pub maintenance: super::maintenance::Maintenance,
    /// The running cluster to take over (`spec.adopt`).
    pub adopt: Option<super::adopt::Adoption>,
    /// What `kubectl etcd recover` decided (`spec.recovery`; see `plan::recover`).
    pub recovery: Option<super::recovery::Recovery>,
    /// `spec.hibernate`: no member pod runs, the volumes stay.
    pub hibernate: bool,
    /// The snapshot taken before this hibernation (`ANNOTATION_HIBERNATE_SNAPSHOT` written for
    /// this generation): its URL, or `skipped`; `None`: none yet.
    pub hibernate_snapshot: Option<String>,
}

/// The spread `create` writes into a new cluster's spec (`new_cluster_defaults`): at most
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

/// FNV-1a: a stable, dependency-free hash (tokens, template hashes, spreads; not for
/// security), the same in every run and build, unlike std's hasher.
pub fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Desired {
    /// A stand-in for a cluster whose spec did not validate: only its identity is known (a
    /// cluster being deleted is released whatever its spec says).
    pub fn named(name: &str, namespace: &str) -> Desired {
        Desired {
            name: name.into(),
            namespace: namespace.into(),
            uid: String::new(),
            legacy_selector: false,
            generation: 0,
            replicas: 0,
            version: Version {
                major: 3,
                minor: MAX_MINOR,
                patch: 0,
            },
            image_repository: DEFAULT_IMAGE_REPOSITORY.into(),
            image: String::new(),
            upgrade: VersionChange::Steady,
            upgrade_timeout_seconds: DEFAULT_UPGRADE_TIMEOUT_SECONDS,
            pre_upgrade_backup: None,
            backup_destination: None,
            backup: None,
            storage: Storage::Ephemeral,
            resources: None,
            affinity: None,
            tolerations: None,
            node_selector: None,
            topology_spread: None,
            priority_class_name: None,
            image_pull_secrets: Vec::new(),
            cluster_domain: crate::keys::DEFAULT_CLUSTER_DOMAIN.into(),
            metrics_port: None,
            network_policy: true,
            client_namespaces: Vec::new(),
            operator: Default::default(),
            client_service: ClientService::default(),
            server_names: Vec::new(),
            pod_labels: BTreeMap::new(),
            pod_annotations: BTreeMap::new(),
            etcd_flags: Vec::new(),
            integrity: None,
            etcd_options: BTreeMap::new(),
            quota_backend_bytes: None,
            quota_raised_from: None,
            paused: true,
            lost_member_grace_seconds: DEFAULT_LOST_MEMBER_GRACE_SECONDS,
            refused: Vec::new(),
            restore: None,
            tls: Tls::default(),
            pki: None,
            cert_manager: None,
            insecure_asked: false,
            tls_origin: TlsOrigin::Spec,
            tls_switch: None,
            auth_secret: None,
            etcd_auth: false,
            kept_client_cn: None,
            maintenance: super::maintenance::Maintenance::default(),
            adopt: None,
            recovery: None,
            hibernate: false,
            hibernate_snapshot: None,
        }
    }
}
/// volumes hold the data): a spec that changes it is refused, field by field, and the engine goes
/// on with the storage it has, so every other rule keeps working (no apply that fails with 422).
///
/// Called once per pass, by `observe` (what the members are dialed with is this `Desired`).
pub fn keep_immutable(mut d: Desired, workload: Option<&WorkloadView>) -> Desired {
    // A new StatefulSet selects the member labels; one made before keeps its own selector.
    d.legacy_selector = workload.is_some_and(|w| !w.member_selector);
    keep_domain(keep_storage(keep_tls(d, workload), workload), workload)
}

/// The cluster domain is fixed once members exist: their URLs in etcd's membership end in it. A
/// spec that changes it is refused and the engine goes on with the domain the members have.
pub(super) fn keep_domain(mut d: Desired, workload: Option<&WorkloadView>) -> Desired {
    let Some(have) = workload.and_then(|w| w.cluster_domain.clone()) else {
        return d;
    };
    if have != d.cluster_domain {
        d.refused.push(invalid(
            "spec.clusterDomain",
            format!(
                "cannot change from {have} to {} on an existing cluster (the members' URLs in \
                 etcd's membership end in it); put the old value back",
                d.cluster_domain
            ),
        ));
        d.cluster_domain = have;
    }
    d
}

/// Whether TLS is on, for clients and for peers, changes on a running cluster only between plain
/// http and full TLS (client and peer): a switch (`TlsSwitch`, carried out by `plan::tls_switch`)
/// that starts when the spec asks for the other one and runs to its end once begun (the
/// template's `tls-switch` annotation says it is under way). Any other change of kind is refused
/// and the engine goes on with the TLS the members run; other Secrets of the same kind are taken
/// (a rolling restart).
///
/// A default decided at birth (`TlsOrigin::Birth`) meeting a StatefulSet that exists all the
/// same follows the StatefulSet without a refusal: nobody asked for the change.
pub(super) fn keep_tls(mut d: Desired, workload: Option<&WorkloadView>) -> Desired {
    let Some(w) = workload else {
        return d;
    };
    let Some(have) = w.tls.clone() else {
        return d;
    };
    let kind = |t: &Tls| (t.client.is_some(), t.peer_secret.is_some());
    let full = |t: &Tls| kind(t) == (true, true);
    let plain = |t: &Tls| kind(t) == (false, false);
    let managed = super::pki::managed_tls(&d.name);
    if let Some((on, stage)) = w.tls_switch.as_deref().and_then(TlsSwitch::parse_marker) {
        // A switch under way runs to its end: the members' URLs are half moved.
        let asked = if on { full(&d.tls) } else { plain(&d.tls) };
        if !asked {
            d.refused.push(invalid(
                "spec.tls",
                format!(
                    "TLS is being switched {} (members are moving their URLs); the switch ends \
                     first, then switch again",
                    if on { "on" } else { "off" }
                ),
            ));
            if on {
                d.tls = if full(&have) {
                    have.clone()
                } else {
                    managed.clone()
                };
                if d.tls == managed {
                    d.pki.get_or_insert_with(Default::default);
                }
            } else {
                d.tls = Tls::default();
                d.pki = None;
            }
        }
        // Switching off, the template mounts the old Secrets until the members serve http only.
        let secrets = match (on, full(&have)) {
            (true, _) => d.tls.clone(),
            (false, true) => have,
            (false, false) => managed,
        };
        d.tls_switch = Some(TlsSwitch { on, secrets, stage });
        return d;
    }
    // Other Secrets of the same kind (a new certificate) roll out like any template change.
    if kind(&have) == kind(&d.tls) {
        return d;
    }
    // A default nobody asked for is no switch (see the doc above).
    let asked = d.tls_origin != TlsOrigin::Birth;
    if asked && ((plain(&have) && full(&d.tls)) || (full(&have) && plain(&d.tls))) {
        let on = plain(&have);
        d.tls_switch = Some(TlsSwitch {
            on,
            secrets: if on { d.tls.clone() } else { have },
            stage: SwitchStage::Both,
        });
        return d;
    }
    if asked {
        d.refused.push(invalid(
        "spec.tls",
        format!(
            "cannot change from {} to {} on an existing cluster: TLS is switched on or off for client and \
             peer traffic together (mode managed or secrets with all three Secrets, or none); put the old \
             value back, or create a new cluster with the new TLS and move the data with \
             `kubectl etcd backup` and `kubectl etcd restore`",
                describe_tls(&have),
                describe_tls(&d.tls)
            ),
        ));
    }
    // The engine manages the certificates of the TLS the members keep only when those are its
    // own Secrets.
    if have == managed {
        d.pki.get_or_insert_with(Default::default);
    } else {
        d.pki = None;
    }
    d.tls = have;
    d
}

/// "client TLS (server Secret a, client Secret b)" and the like.
pub(super) fn describe_tls(t: &Tls) -> String {
    let mut names = Vec::new();
    if let Some(c) = &t.client {
        names.push(format!("server Secret {}", c.server_secret));
        names.push(format!("client Secret {}", c.client_secret));
    }
    if let Some(p) = &t.peer_secret {
        names.push(format!("peer Secret {p}"));
    }
    if names.is_empty() {
        t.describe().to_string()
    } else {
        format!("{} ({})", t.describe(), names.join(", "))
    }
}

/// Storage may grow and move to another class on a running cluster (`plan::storage` carries it
/// out: the claim template first, then each volume grown in place or each member moved to a new
/// volume). Shrinking is refused (etcd's data lives on the volumes, and no volume shrinks), as
/// is a switch between volumes and ephemeral storage; the engine goes on with the size, or the
/// storage kind, the StatefulSet has.
pub(super) fn keep_storage(mut d: Desired, workload: Option<&WorkloadView>) -> Desired {
    let Some(have) = workload.and_then(|s| s.storage.clone()) else {
        return d;
    };
    let way = "the volumes keep the data: put the old value back, or create a new cluster with the new storage and move the data with `kubectl etcd backup` and `kubectl etcd restore`";
    match (&have, &mut d.storage) {
        (Storage::Volume { size: a, .. }, Storage::Volume { size: b, .. }) => {
            // Back down to what the claims have is no shrink: an expansion that never showed
            // (`plan::storage::expansion_pending`) is undone that way.
            let floor = workload
                .and_then(|w| w.volume_capacity.as_ref())
                .filter(|c| c.bytes() < a.bytes())
                .unwrap_or(a);
            if b.bytes() < floor.bytes() {
                d.refused.push(invalid(
                    "spec.storage.size",
                    format!("cannot shrink from {floor} to {b} on an existing cluster; {way}"),
                ));
                *b = a.clone();
            }
            return d;
        }
        (Storage::Ephemeral, Storage::Ephemeral) => return d,
        _ => d.refused.push(invalid(
            "spec.storage.ephemeral",
            format!(
                "cannot switch between volumes and ephemeral storage on an existing cluster; {way}"
            ),
        )),
    }
    d.storage = have;
    d
}

/// A validated `spec.restore`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RestoreSource {
    /// URL of the snapshot object (s3:// or pvc://: the restore pod fetches it in the cluster).
    pub url: String,
    pub sha256: Option<String>,
    pub credentials_secret: Option<String>,
    pub tools_image: String,
    /// `spec.restore.nonce`: part of the initial-cluster token (`objects::bootstrap_config`).
    pub nonce: Option<String>,
    /// The Secret with the key of an encrypted snapshot (the restore pod mounts it).
    pub encryption: Option<crate::archive::crypt::KeySecret>,
}

/// Image with `kubectl-etcd` used by restore pods when the spec names none.
/// (The project's release image: the same binary as the CLI and the operator.)
pub const DEFAULT_TOOLS_IMAGE: &str = concat!(
    "ghcr.io/kubectl-etcd/kubectl-etcd:",
    env!("CARGO_PKG_VERSION")
);
