//! `Observed`: everything one pass saw, Kubernetes and etcd alike (built by `observe`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::desired::{Storage, Tls};
use super::quantity::Quantity;
use super::version::{UpgradeRecord, Version};

/// A member or cluster id as etcdctl prints it (16 hex digits), in status and messages.
pub fn fmt_id(id: u64) -> String {
    format!("{id:016x}")
}

/// Everything one pass saw, Kubernetes and etcd alike. Built by `observe`, read by `plan`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Observed {
    /// The member StatefulSet, if it exists.
    pub statefulset: Option<WorkloadView>,
    /// Both Services and the disruption budget exist.
    pub supporting_objects: bool,
    /// The client Service selects no member: `recover` fenced clients off (`objects::is_fenced`).
    pub clients_fenced: bool,
    /// Data of the member-config ConfigMap (`None`: missing).
    pub config: Option<BTreeMap<String, String>>,
    /// Member pods by ordinal.
    pub pods: BTreeMap<u32, PodView>,
    /// Member volume claims by ordinal.
    pub volumes: BTreeMap<u32, VolumeView>,
    pub etcd: EtcdView,
    /// Ordinals of the members last recorded in status (the membership to rebuild the member
    /// config from when no member answers).
    pub known_members: std::collections::BTreeSet<u32>,
    /// The seed's restore pod, observed only for clusters restored from a snapshot.
    pub restore_pod: Option<RestorePodView>,
    /// The lowest version the members reported last time (`status.version`): what runs when
    /// no member answers now.
    pub last_version: Option<Version>,
    /// The version change recorded in status (`status.upgrade`).
    pub upgrade: Option<UpgradeRecord>,
    /// What the engine recorded of a full database it heals (`status.maintenance`).
    pub maintenance: Option<crate::api::MaintenanceStatus>,
    /// The spec's requests the engine recorded as done (`status.completed`).
    pub completed: crate::api::CompletedRequests,
    /// Members with a raised NOSPACE alarm (asked only when a member's health read failed for
    /// alarms).
    pub nospace: Vec<u64>,
    /// The keyspace's current revision: as the leader answered it with `nospace`, else the highest
    /// any member's status answer carried (0 when none answered).
    pub revision: i64,
    /// When this pass observed: the planner's only clock (it reads none of its own).
    #[serde(skip)]
    pub now: jiff::Timestamp,
    /// Ordinal → when a member was first seen looking lost (`status.members[].lostSince`).
    #[serde(skip)]
    pub lost_since: BTreeMap<u32, jiff::Timestamp>,
    /// The cluster's backup records and what the backup rules need beside them.
    #[serde(skip)]
    pub backups: BackupsView,
    /// The old cluster's objects, observed while `spec.adopt` is set.
    pub adoption: Option<super::adopt::AdoptionView>,
    /// The StorageClass new member volumes get (`spec.storage.storageClassName`, else the
    /// cluster's default), read only while a volume or the claim template differs from the
    /// spec; `None` when not read or not readable (no RBAC for StorageClasses).
    pub storage_class: Option<StorageClassView>,
    /// The certificates of the cluster's TLS Secrets (managed: the CA and its leaves; secrets:
    /// the Secrets named), read each pass; empty without TLS.
    pub certificates: Vec<super::pki::CertificateView>,
    /// Managed TLS: the CAs, and what each leaf trusts (a CA rotation's state).
    pub trust: super::pki::TrustView,
    /// The CN of the engine's client certificate (its Secret's `tls.crt`, modes managed and
    /// certManager); `None`: no readable one.
    pub client_cn: Option<String>,
    /// Mode certManager: the cert-manager `Certificate` of each leaf (empty otherwise).
    pub cert_manager: Vec<super::pki::CertManagerView>,
    /// The peers the leader counts as connected (its own `/metrics`), read only when the plan
    /// removes a voter (`plan::needs_leader_peers`); `None` when not read or not readable.
    pub leader_peers: Option<LeaderPeers>,
    /// Objects found at names the engine writes (or deletes) that are not the cluster's: no
    /// owner reference to it (member claims: not its member labels). Observe leaves them out of
    /// everything else it records; the planner holds while any is there.
    pub not_owned: Vec<NotOwned>,
}

/// An object at one of the cluster's names that is not the cluster's (`objects::ownership`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NotOwned {
    /// Its kind (`NetworkPolicy`, `Secret`, …).
    pub kind: String,
    pub name: String,
    /// Its controller as `Kind name`, when it has one.
    pub controller: Option<String>,
    /// Its controller is an earlier EtcdCluster of the same name (another uid): the garbage
    /// collector deletes it, unless it was orphaned.
    pub earlier: bool,
}

/// The peers etcd's leader counts as connected: whom its quorum check before a removal counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LeaderPeers {
    /// The leader whose count this is.
    pub leader: u64,
    /// The members it counts as connected (itself not among them).
    pub connected: std::collections::BTreeSet<u64>,
}

/// What the planner needs of a StorageClass.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StorageClassView {
    pub name: String,
    /// `allowVolumeExpansion`: a claim of this class may grow in place.
    pub expandable: bool,
}

/// The cluster's EtcdBackup records as a pass read them (`plan::backup` decides from them, and
/// `status.backup` is derived from them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BackupsView {
    /// Records labelled with the cluster's name, newest first.
    pub records: Vec<crate::api::EtcdBackup>,
    /// Names of the records whose backup this process is taking now (read before `records`,
    /// so a record finished meanwhile reads as finished).
    pub taking: std::collections::BTreeSet<String>,
    /// Who this process is, as it signs the backups it takes (`status.takenBy`).
    pub me: String,
    /// This driver takes scheduled backups (a long-running operator; the CLI exits when its verb
    /// is done, which would abandon one).
    pub schedules: bool,
    /// EtcdBackups an EtcdCluster of the namespace restores from (`spec.restore.backupName`):
    /// never pruned. Read only with a retention policy.
    pub pinned: std::collections::BTreeSet<String>,
    /// When the EtcdCluster was created: its first scheduled slot counts from then.
    pub created: Option<jiff::Timestamp>,
    /// The restore drills' pods and NetworkPolicies of the cluster (read by the operator only).
    pub drill_pods: Vec<super::drill::DrillPod>,
    pub drill_policies: Vec<super::drill::DrillPolicy>,
}

/// The one-shot pod that restores a seed member's volume.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum RestorePodView {
    Running,
    /// It runs, and its download failed and is being tried again: the last failure (the store
    /// unreachable from the pod, refused credentials, a missing bucket).
    Retrying(String),
    /// A container cannot start and will not by itself (a missing Secret, an image that cannot
    /// be pulled): the reason and message the kubelet gives.
    Stuck(String),
    Succeeded,
    /// Why it failed (the failing container's termination message).
    Failed(String),
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WorkloadView {
    pub replicas: u32,
    /// Hash of the pod template the engine last applied (annotation).
    pub template_hash: Option<String>,
    /// The StatefulSet's current update revision.
    pub update_revision: Option<String>,
    /// Storage of its volume claim template (immutable once created); `None`: not observed.
    pub storage: Option<Storage>,
    /// TLS of its pod template (Secrets mounted); `None`: not observed.
    pub tls: Option<Tls>,
    /// Its pod template's `tls-switch` annotation (`TlsSwitch::marker`): a TLS switch is under way.
    pub tls_switch: Option<String>,
    /// The cluster domain its members advertise their names in (`objects::template_domain`);
    /// `None`: not observed.
    pub cluster_domain: Option<String>,
    /// It is being deleted (orphaning its pods, to be re-created with a new claim template).
    pub terminating: bool,
    /// Its controller has not yet taken in its latest spec (`status.observedGeneration` below
    /// `metadata.generation`): `update_revision` is still the one of an older template.
    pub controller_behind: bool,
    /// Why its controller cannot create a member pod or claim (its newest `FailedCreate`
    /// event, read only while a pod is missing): e.g. a ResourceQuota refuses it.
    pub cannot_create: Option<String>,
    /// Its selector carries the member labels (`objects::member_labels`); false for one made
    /// before it did (a StatefulSet's selector is immutable: `Desired::legacy_selector`).
    pub member_selector: bool,
    /// The smallest capacity of the member claims (`smallest_capacity`, observed with it): below
    /// its claim template's size after an expansion that never showed, and then the size the
    /// spec may go back to.
    pub volume_capacity: Option<Quantity>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PodView {
    pub name: String,
    pub ready: bool,
    pub running: bool,
    pub terminating: bool,
    /// A controller owns it (a StatefulSet; with none observed, a deleted one whose pods the
    /// garbage collector is about to delete). An orphan is adopted by the next StatefulSet.
    pub controlled: bool,
    pub revision: Option<String>,
    /// The CAs its template trusted (annotation, managed TLS after a CA rotation began): what
    /// its etcd loaded at start.
    pub trusted_ca: Option<String>,
    /// The TLS switch stage its template ran (`TlsSwitch::marker`; `None`: no switch): where
    /// its etcd listens.
    pub tls_switch: Option<String>,
    pub ip: Option<String>,
    /// Container restarts (a crash-looping member shows here).
    pub restarts: i32,
    /// Why the container is not running (e.g. ImagePullBackOff, CrashLoopBackOff).
    pub waiting_reason: Option<String>,
    /// The last lines etcd wrote before its container last stopped (termination message).
    pub last_exit_message: Option<String>,
    /// The kubelet's reason for the container's last end (`OOMKilled`, `Error`, …), also while
    /// it runs again.
    pub last_exit_reason: Option<String>,
    /// The memory limit of its etcd container, as written (`None`: no limit).
    pub memory_limit: Option<String>,
    /// Why the scheduler cannot place it (its `PodScheduled` condition, reason
    /// `Unschedulable`): e.g. "0/3 nodes are available: 3 Insufficient memory."
    pub unschedulable: Option<String>,
    /// Seconds since the pod was created.
    pub age_seconds: u64,
    /// Seconds its etcd container has been running this time (`None`: not running, or not
    /// known).
    pub running_seconds: Option<u64>,
    /// Its etcd answered the engine this pass, as this member id (whatever the member list says).
    pub answered_as: Option<u64>,
    /// Why the node this pod runs on, or its volume is pinned to (a Pending pod), cannot run it:
    /// deleted, NotReady for long, or tainted out-of-service (`None` when it can, or when Nodes
    /// may not be read).
    pub node_down: Option<String>,
    /// Seconds since its deletion's grace period ran out (0 while not deleted or within it): a
    /// pod still there long after is on a node that no longer confirms anything (NotReady,
    /// deleted, shut down).
    pub overdue_seconds: u64,
    /// Why this pod is about to go while it still runs (`None`: nothing says so): its node is
    /// cordoned (a drain starts so), an eviction or preemption marked it (`DisruptionTarget`),
    /// or it is being deleted. `plan::drain` moves leadership off such a member.
    pub leaving: Option<String>,
}

/// Seconds past its deletion's grace after which a pod is taken to be on a node that is gone.
pub const NODE_GONE_AFTER_SECONDS: u64 = 120;

impl PodView {
    /// Why this pod will not go by itself, and what to do, when it is stuck on a gone node.
    pub fn node_gone(&self) -> Option<String> {
        (self.terminating && self.overdue_seconds >= NODE_GONE_AFTER_SECONDS).then(|| {
            format!(
                "pod {} has been terminating {}s past its grace period: its node is gone (NotReady, deleted or \
                 shut down) and confirms nothing; if the node is shut down, taint it \
                 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute, or `kubectl delete pod {} --force` \
                 once you know its etcd no longer runs",
                self.name, self.overdue_seconds, self.name
            )
        })
    }
}

impl PodView {
    /// Why this pod's member has no usable data, read from etcd's last words; `None` when
    /// nothing says so (a pod that merely restarts, is evicted or waits for its node never does).
    pub fn data_loss(&self) -> Option<&'static str> {
        let msg = self.last_exit_message.as_deref()?;
        DATA_LOSS_SIGNS
            .iter()
            .find(|(sign, _)| msg.contains(sign))
            .map(|(_, what)| *what)
    }

    /// The line of etcd's last words that says why it stopped: a flag error (etcd prints its
    /// usage after it), a fatal or panic log line, else the last line; at most 200 characters.
    pub fn exit_reason(&self) -> Option<String> {
        let lines: Vec<&str> = self
            .last_exit_message
            .as_deref()?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        const SIGNS: [&str; 5] = [
            "flag provided but not defined",
            "\"level\":\"fatal\"",
            "\"level\":\"panic\"",
            "panic:",
            "error",
        ];
        let line = SIGNS
            .iter()
            .find_map(|sign| lines.iter().find(|l| l.to_lowercase().contains(sign)))
            .or(lines.last())?;
        Some(match line.char_indices().nth(200) {
            Some((i, _)) => format!("{}…", &line[..i]),
            None => line.to_string(),
        })
    }

    /// Why this pod's etcd does not serve, in words that say what to do: the image or the
    /// container cannot start, the kernel killed etcd at its memory limit, or etcd's own last
    /// words; `None` while it is ready, or starting with nothing said yet. Restart counts are
    /// left out so that the status it goes into changes only when the trouble does.
    pub fn trouble(&self) -> Option<String> {
        if self.ready {
            return None;
        }
        if let Some(why) = &self.unschedulable {
            return Some(format!(
                "it cannot be scheduled: {why} (spec.resources, nodeSelector, affinity, \
                 tolerations and the volumes' StorageClass decide where it fits)"
            ));
        }
        if let Some(w) = self
            .waiting_reason
            .as_deref()
            .filter(|w| STUCK_REASONS.contains(w))
        {
            let pull = if matches!(w, "ErrImagePull" | "ImagePullBackOff") {
                " (the kubelet cannot pull its image: check spec.imageRepository and \
                 spec.version, and for a registry that wants credentials spec.imagePullSecrets)"
            } else {
                ""
            };
            return Some(format!("its container cannot start: {w}{pull}"));
        }
        if self.last_exit_reason.as_deref() == Some("OOMKilled") {
            let at = self
                .memory_limit
                .as_deref()
                .map(|l| format!(" at its memory limit {l}"))
                .unwrap_or_default();
            return Some(format!(
                "its etcd was OOMKilled{at}: raise spec.resources.limits.memory (and requests) above \
                 what the member needs"
            ));
        }
        if self.running || (self.restarts == 0 && self.last_exit_message.is_none()) {
            return None;
        }
        let said = |sign: &str| {
            self.last_exit_message
                .as_deref()
                .is_some_and(|m| m.contains(sign))
        };
        if said("no space left on device") {
            return Some(
                "its volume is full (no space left on device): grow spec.storage.size (in place \
                 where the StorageClass allows expansion)"
                    .into(),
            );
        }
        if said("permission denied") && said("data dir") {
            return Some(
                "etcd may not write its data directory (permission denied): the volume's driver \
                 must apply the pod's fsGroup (65532), as the kubelet does for most drivers"
                    .into(),
            );
        }
        match (self.data_loss(), self.exit_reason()) {
            (Some(what), _) => Some(what.to_string()),
            (None, Some(line)) => Some(format!("its etcd exits: {line}")),
            (None, None) => self
                .waiting_reason
                .as_ref()
                .filter(|r| *r != "ContainerCreating")
                .map(|r| format!("its container is waiting: {r}")),
        }
    }

    /// etcd refused to start this member for lack of any data (no write-ahead log): its volume
    /// is empty, so the member may be added back on it as a learner without wiping.
    pub fn proven_empty(&self) -> bool {
        self.last_exit_message
            .as_deref()
            .is_some_and(|m| EMPTY_VOLUME_SIGNS.iter().any(|s| m.contains(s)))
    }
}

/// Waiting reasons of a container that does not start until someone fixes its cause.
pub const STUCK_REASONS: &[&str] = &[
    "CreateContainerConfigError",
    "CreateContainerError",
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
];

/// Signs that etcd found no write-ahead log and exited before writing anything.
pub(super) const EMPTY_VOLUME_SIGNS: &[&str] =
    &["couldn't find local name", "member count is unequal"];

/// What etcd prints when it cannot start a member from its data directory, and what that means.
pub(super) const DATA_LOSS_SIGNS: &[(&str, &str)] = &[
    (
        "couldn't find local name",
        "its volume holds no data (the member config lets no member join on an empty volume)",
    ),
    (
        "member count is unequal",
        "its volume holds no data (it tried to join with a stale member list)",
    ),
    (
        "is out of range [lastIndex",
        "its log is behind what it acknowledged (its data was lost or rolled back)",
    ),
    ("crc mismatch", "its write-ahead log is corrupt"),
    (
        "failed to find database snapshot file",
        "its data directory is damaged (snapshot file missing)",
    ),
    (
        "failed to recover v3 backend",
        "its data directory is damaged",
    ),
    ("wal: file not found", "its data directory is damaged"),
    // A write-ahead log whose head is destroyed: etcd truncates it as a torn write ("repaired
    // WAL"), finds no member id in what is left and panics (3.5, 3.6), or restarts as member 0
    // and dereferences nil (3.7); 3.4 stops at the record it cannot read.
    (
        "cannot use none as id",
        "its write-ahead log is damaged (no member id left in it)",
    ),
    (
        "\"local-member-id\":\"0\"",
        "its write-ahead log is damaged (no member id left in it)",
    ),
    (
        "etcdmain: wal: max entry size limit exceeded",
        "its write-ahead log is damaged",
    ),
    // bbolt's meta pages both destroyed (a permission error opening it is no damage).
    ("invalid database", "its database file is damaged"),
    (
        "has already been bootstrapped",
        "its volume holds no data but the cluster remembers it",
    ),
];

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VolumeView {
    pub name: String,
    pub terminating: bool,
    /// What the volume says of a restore (`objects::ANNOTATION_RESTORE`): none on a volume the
    /// StatefulSet made, `Restoring` on the seed's claim the restore made, `Restored` once the
    /// seed was bootstrapped on it.
    pub restore: Option<RestoreMark>,
    /// Its StorageClass (`spec.storageClassName`; `None`: not set yet).
    pub class: Option<String>,
    /// The size it asks for (`spec.resources.requests.storage`).
    pub size: Option<Quantity>,
    /// The size it has (`status.capacity.storage`; `None` before it is bound).
    pub capacity: Option<Quantity>,
    /// When the engine asked it to grow (`objects::ANNOTATION_GROW_ASKED`, written with the new
    /// request by `GrowVolume`): the expansion's wait is bounded from then.
    #[serde(skip)]
    pub grow_asked: Option<jiff::Timestamp>,
}

/// The smallest capacity of the member claims (`None`: none bound): what each member's data fits
/// in, so the least `spec.storage.size` may go back to after an expansion that never showed.
pub fn smallest_capacity(volumes: &BTreeMap<u32, VolumeView>) -> Option<&Quantity> {
    volumes
        .values()
        .filter(|v| !v.terminating)
        .filter_map(|v| v.capacity.as_ref())
        .min_by_key(|c| c.bytes())
}

/// A restore's mark on the seed's volume: the durable record that the restore ran, which outlives
/// the EtcdCluster (`kubectl etcd delete` keeps volumes), so a restore never runs twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum RestoreMark {
    /// The restore made this claim and may (re)fill it.
    Restoring,
    /// The seed was bootstrapped on the restored data: it is a member's volume now.
    Restored,
}

impl RestoreMark {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Restoring => "restoring",
            Self::Restored => "restored",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Restoring, Self::Restored]
            .into_iter()
            .find(|m| m.as_str() == s)
    }
}

/// What etcd said, as a whole.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub enum EtcdView {
    /// No member pod was running, so nobody was asked.
    #[default]
    NotQueried,
    /// Pods run but no member answered.
    Unreachable {
        errors: Vec<String>,
    },
    /// Members answered with different cluster ids: two clusters answer to one name.
    Split {
        cluster_ids: Vec<u64>,
    },
    Reached(ClusterView),
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ClusterView {
    pub cluster_id: u64,
    pub leader: Option<u64>,
    pub members: Vec<MemberView>,
    /// The member list came from a member that passed no linearizable read (no leader confirmed
    /// its applied index), so it may lag behind membership changes: steps that destroy a member
    /// (remove, wipe) wait for a confirmed list.
    pub list_unconfirmed: bool,
    /// etcd's authentication is on: a member accepted the `spec.auth` user's credentials, or
    /// said so when asked (`auth`).
    pub auth_enabled: bool,
    /// etcd's authentication and its root user, asked of a voter that read linearizably, only
    /// for a cluster with `spec.tls.etcdAuth`; `None`: not asked, or no answer.
    pub auth: Option<AuthView>,
}

impl ClusterView {
    pub fn member_at(&self, ordinal: u32) -> Option<&MemberView> {
        self.members.iter().find(|m| m.ordinal == Some(ordinal))
    }
    pub fn voters(&self) -> impl Iterator<Item = &MemberView> {
        self.members.iter().filter(|m| !m.learner)
    }
    /// The cluster version as the leader reports it (else any member that knows it): the minor
    /// every member speaks, which a rollback to an older minor must respect.
    pub fn cluster_version(&self) -> Option<Version> {
        let of = |m: &MemberView| m.status.as_ref().and_then(|s| s.cluster_version);
        self.leader_member()
            .and_then(of)
            .or_else(|| self.members.iter().find_map(of))
    }
    /// The versions the members that answered run.
    pub fn versions(&self) -> impl Iterator<Item = Version> + '_ {
        self.members
            .iter()
            .filter_map(|m| m.status.as_ref()?.version)
    }
    pub fn learners(&self) -> impl Iterator<Item = &MemberView> {
        self.members.iter().filter(|m| m.learner)
    }
    pub fn leader_member(&self) -> Option<&MemberView> {
        self.leader
            .and_then(|l| self.members.iter().find(|m| m.id == l))
    }
}

/// One member as etcd lists it, joined with its own status answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MemberView {
    pub id: u64,
    /// Name etcd reports (empty for a learner that never started).
    pub name: String,
    /// Ordinal parsed from the peer URL (which the engine always builds); `None`: not ours.
    pub ordinal: Option<u32>,
    pub peer_url: String,
    pub learner: bool,
    pub started: bool,
    /// Its own answer to status/health; `None` when it did not answer.
    pub status: Option<MemberStatusView>,
    pub healthy: bool,
    pub error: Option<String>,
    /// The pod of this member's ordinal answers as another member: its volume holds someone
    /// else's data.
    pub identity_mismatch: bool,
    /// Its health read failed only for raised alarms (NOSPACE): it answers and its linearizable
    /// read passed, so it counts toward quorum, and a restart (a raised quota) may go ahead.
    pub alarmed: bool,
}

/// A member's own answer. Versions are parsed once, by observe: nothing downstream reads a
/// version string of a member.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemberStatusView {
    /// The server version it runs (`None`: it reported none that parses).
    pub version: Option<Version>,
    /// The cluster version this member reports on `/version` (3.5.0); `None` while etcd has
    /// not decided it yet, or when `/version` did not answer.
    pub cluster_version: Option<Version>,
    /// The db schema version (3.6+; `None` before).
    pub storage_version: Option<Version>,
    /// The target of an enabled downgrade (3.5.0; 3.6+; `None` when none).
    pub downgrading_to: Option<Version>,
    pub db_size: i64,
    /// Bytes of the db file holding data (the rest is free pages a defragmentation gives back).
    pub db_size_in_use: i64,
    pub raft_index: u64,
    pub raft_term: u64,
    pub leader: u64,
}

/// What a member says of etcd's authentication and its root user (`crate::etcd::EtcdClient::auth_view`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AuthView {
    /// Authentication is on.
    pub enabled: bool,
    /// The user `root` exists.
    pub root_user: bool,
    /// The user `root` has the role `root`.
    pub root_role: bool,
    /// The cluster's own user (the engine's certificate's CN, `keys::engine_user`) exists.
    pub engine_user: bool,
    /// The cluster's own user has the role `root`.
    pub engine_role: bool,
}
