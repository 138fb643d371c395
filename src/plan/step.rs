//! What the planner decides: `Step` and its parts, its condition reason, and the one sentence
//! (`Display`) shared by CLI progress, the condition message and the Event.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::maintenance::Trigger;
use super::nospace;
use crate::api::Reason;
use crate::model::Version;
use crate::model::pki::{CertRole, Issue};

/// How a hold begins when said (the status message is the step said): a driver waiting on
/// another's status tells a hold by it ([`super::held`]).
pub const HOLDING: &str = "holding: ";

/// The next thing the engine does for one cluster: at most one change to the world.
///
/// ```text
///   (no StatefulSet) ──Bootstrap──▶ members start together ──WriteConfig(bootstrapped)──▶ Idle
///   scale up:   AddLearner(n) ─▶ WriteConfig(list) ─▶ ResizeStatefulSet(n+1) ─▶ PromoteLearner ─▶ Idle
///   scale down: [MoveLeader] ─▶ RemoveMember(n-1) ─▶ ResizeStatefulSet(n-1) ─▶ DeleteVolume(n-1) ─▶ Idle
///   template:   UpdateTemplate ─▶ RestartMember (one pod at a time, leader last) ─▶ Idle
///   lost member (no/damaged/foreign data, after the grace period, rest healthy):
///               RemoveMember ─▶ [WipeMember] ─▶ AddLearner(same ordinal) ─▶ WriteConfig(list)
///               ─▶ [RestartMember(rejoin)] ─▶ PromoteLearner ─▶ Idle
///   lost objects: WriteConfig(repair from volumes / last status) ─▶ ResizeStatefulSet ─▶ …
///   NOSPACE:    Compact ─▶ Defragment (one member at a time, leader last) ─▶ DisarmNospace
///   defrag requested or by policy: [Compact] ─▶ Defragment (one at a time) (see `maintenance`)
///               [still full: RaiseQuota once ─▶ UpdateTemplate ─▶ RestartMember… ─▶ DisarmNospace]
///               (see `nospace`)
///   adopt:      learners join the old cluster, promoted, leadership moved, old members removed
///               one at a time, each followed by ResizeOldStatefulSet; [TakeOverService]
///               (see `adopt`)
///   storage grown or moved (see `storage`): RecreateStatefulSet ─▶ GrowVolume (each, in place)
///               or, per member: [MoveLeader] ─▶ RemoveMember ─▶ the lost-member path above
///   hibernate (see `hibernate`): [HibernateSnapshot] ─▶ Hibernate ─▶ Hibernated;
///               wake: ResizeStatefulSet(0 → members) ─▶ Idle
///   drain (the leader's pod about to be evicted, see `drain`): MoveLeader ─▶ Idle
///   TLS on/off (see `tls_switch`): UpdateTemplate(both schemes) ─▶ RestartMember… ─▶
///               UpdatePeerUrl (each, to the switch port) ─▶ UpdateTemplate(new scheme) ─▶
///               RestartMember… ─▶ UpdatePeerUrl (each, back to 2380) ─▶ UpdateTemplate ─▶ RestartMember…
///   etcd's authentication (see `auth`): Auth(AddRoot) ─▶ Auth(GrantRoot) ─▶ Auth(Enable)
///   anything not ready yet: Wait;  anything unsafe or ambiguous: Hold (no action, Degraded);
///   quorum lost: Hold(QuorumLost) until `kubectl etcd recover` writes spec.recovery:
///               FenceClients ─▶ TakeRecoverySnapshot ─▶ VerifyRecoverySnapshot ─▶ DeleteLostMembers
///               ─▶ RestoreSeed ─▶ MarkRecovered ─▶ ApplySupportingObjects ─▶ Bootstrap(1) ─▶ …
///               (see `recover`)
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "camelCase")]
pub enum Step {
    /// Create the member config, Services, disruption budget and StatefulSet of a new cluster.
    Bootstrap { replicas: u32 },
    /// (Re)create the Services and disruption budget.
    ApplySupportingObjects,
    /// Write the member-config ConfigMap.
    WriteConfig {
        data: BTreeMap<String, String>,
        why: ConfigChange,
    },
    /// Apply a changed pod template (no pod restarts by itself: OnDelete).
    UpdateTemplate { replicas: u32 },
    /// Add the member at `ordinal` to etcd as a non-voting learner.
    AddLearner {
        ordinal: u32,
        name: String,
        peer_url: String,
    },
    /// Set the StatefulSet's size (creates it when missing).
    ResizeStatefulSet { from: u32, to: u32 },
    /// Make a caught-up learner a voter.
    PromoteLearner { id: u64, name: String },
    /// Hand leadership to another voter before its member is removed, restarted or evicted.
    MoveLeader {
        from: String,
        to_id: u64,
        to: String,
    },
    /// Remove a member from etcd.
    RemoveMember { id: u64, name: String },
    /// Delete the data volume of a member that no longer exists, so it can never rejoin.
    DeleteVolume { ordinal: u32, claim: String },
    /// Delete a member's pod so the StatefulSet starts it again.
    RestartMember {
        ordinal: u32,
        pod: String,
        why: Restart,
    },
    /// Delete the volume, then the pod, of an ordinal whose member was removed as lost, so that
    /// it comes back empty and can be re-added as a learner.
    WipeMember {
        ordinal: u32,
        /// `None` with ephemeral storage (deleting the pod is the wipe).
        claim: Option<String>,
        pod: String,
        /// The pod is on a node that is gone: deleted without waiting for its kubelet (which
        /// never confirms), as `kubectl delete --force` would. Only for a member already removed.
        force: bool,
    },
    /// Create the seed member's volume and the one-shot pod that restores the snapshot into it.
    RestoreSeed { url: String },
    /// Delete the finished restore pod.
    DeleteRestorePod { pod: String },
    /// `spec.recovery`: fence clients off (the client Service selects no member), so that no
    /// write acknowledged after the survivor's snapshot is lost.
    FenceClients,
    /// `spec.recovery`: snapshot the survivor `member` to `to` (an EtcdBackup labelled with the
    /// recovery's nonce), once the fenced client Service lists no endpoint.
    TakeRecoverySnapshot {
        ordinal: u32,
        member: String,
        to: String,
    },
    /// `spec.recovery`: read `record` back in full and verify it, and check that the survivor
    /// did not move since its snapshot; marks the record `verified` (or `rejected`, and why).
    VerifyRecoverySnapshot { record: String },
    /// `spec.recovery`: mark `record` `deleting`, then delete the lost cluster's StatefulSet,
    /// member config and volumes (they can never rejoin: the restored cluster has a new id).
    DeleteLostMembers { record: String },
    /// `spec.recovery`: the restore pod filled the seed's volume from `record`: mark it
    /// `restored`; the usual rules take it from there.
    MarkRecovered { record: String },
    /// An upgraded member did not become healthy in time: record the rollback, so that the
    /// template runs `from` again (see `upgrade`).
    RollBack {
        member: String,
        ordinal: u32,
        from: Version,
        to: Version,
        why: String,
    },
    /// etcd's downgrade API, sent to the leader: `Enable` (validated first) lowers the cluster
    /// version to `target`'s minor before any member runs it; `Cancel` ends a downgrade no
    /// longer wanted (see `upgrade::downgrade_gate`).
    Downgrade {
        action: DowngradeStep,
        target: Version,
    },
    /// A `spec.version` change came without a pre-upgrade snapshot (a plain `kubectl apply`):
    /// take one to `destination`, verified, and record it for `to` before any member changes.
    PreUpgradeSnapshot { to: Version, destination: String },
    /// Compact the keyspace history up to `revision`, through the leader (NOSPACE, or a
    /// requested defragmentation; see `maintenance`).
    Compact { revision: i64, why: Trigger },
    /// Defragment one member (it answers nobody meanwhile): NOSPACE, requested, or by policy.
    Defragment {
        ordinal: u32,
        id: u64,
        name: String,
        why: Trigger,
    },
    /// NOSPACE: disarm the alarm of these members (every member is below 90 % of its quota).
    DisarmNospace { members: Vec<u64> },
    /// NOSPACE: still full after compaction and defragmentation: record a quota raised once by
    /// half (`status.maintenance.quotaRaised`), which `nospace::settle` puts into the template.
    RaiseQuota { from: i64, to: i64 },
    /// The schedule's `slot` has come: record a scheduled backup (`Running`) and start taking it
    /// beside the passes (see `backup`); later passes see it through its record.
    TakeScheduledBackup {
        #[serde(skip)]
        slot: jiff::Timestamp,
    },
    /// Retention lets these scheduled backups go: `(record, object key)`, the object first.
    /// `foreign`: records retention refused to count or touch (one sentence each).
    PruneBackups {
        delete: Vec<(String, Option<String>)>,
        foreign: Vec<String>,
    },
    /// Read the object of scheduled backup `record` (`key` in the destination) to its end and
    /// write what was found into `status.storeCheck`: retention counts the backup only when it
    /// has `size` bytes with this `sha256`.
    CheckBackup {
        record: String,
        key: String,
        size: i64,
        sha256: String,
    },
    /// A `Running` backup record whose taker is gone: mark it `Failed` and abort the unfinished
    /// upload its object would have had.
    AbandonBackup { record: String, taken_by: String },
    /// A scheduled restore drill: start one, finish one that ended, or sweep what is left of
    /// one (see `drill`).
    Drill { part: super::drill::DrillStep },
    /// Adoption: scale the old cluster's StatefulSet `name` down by one, after the member of its
    /// top slot was removed (the StatefulSet and its volumes are kept).
    ResizeOldStatefulSet { name: String, from: u32, to: u32 },
    /// Adoption: point the old cluster's Service `service` at the engine's members (clients keep
    /// their address); its old selector is kept in an annotation.
    TakeOverService { service: String },
    /// The claim template changed (storage grown or moved): delete the StatefulSet orphaning
    /// its pods, then apply it again with the new template (see `storage`).
    RecreateStatefulSet {
        replicas: u32,
        /// The new claims, in words ("2Gi of class fast").
        storage: String,
        path: super::storage::Path,
    },
    /// Grow one member's claim in place (its StorageClass allows expansion).
    GrowVolume {
        ordinal: u32,
        claim: String,
        from: String,
        to: String,
    },
    /// `spec.hibernate` without a snapshot for it: take a verified one to `destination` and
    /// record it (`ANNOTATION_HIBERNATE_SNAPSHOT`) before any member stops.
    HibernateSnapshot { destination: String },
    /// `spec.hibernate`: the StatefulSet to 0 (volumes, member config and membership kept).
    Hibernate { from: u32 },
    /// Hibernated: no member runs; the volumes keep the data.
    Hibernated,
    /// Managed TLS: write the Secret of `role`'s certificate, the CA (self-signed) or a leaf
    /// signed by it, new or renewed (see `pki`). The key is drawn when acting: the step carries
    /// no secret, and `--dry-run` prints none.
    IssueCertificate {
        role: CertRole,
        secret: String,
        why: Issue,
    },
    /// Mode certManager: write cert-manager's `Certificate` of `role` (see
    /// `pki::cert_manager_certificates`); cert-manager issues its Secret.
    RequestCertificate {
        role: CertRole,
        certificate: String,
        issuer: String,
    },
    /// TLS switched on or off (see `tls_switch`): move one member's peer URL (etcd's member
    /// update), once every member listens on both the old and the new URL.
    UpdatePeerUrl {
        id: u64,
        name: String,
        from: String,
        to: String,
    },
    /// `spec.tls.etcdAuth`: one step of turning etcd's authentication on (see `auth`).
    Auth { part: AuthStep },
    /// Nothing to do until the world moves on.
    Wait { reason: Reason, message: String },
    /// Acting would be unsafe or ambiguous: report and change nothing until a human or the
    /// world fixes it.
    Hold { reason: Reason, message: String },
    /// Spec says paused.
    Paused,
    /// Converged.
    Idle,
}

/// The steps of turning etcd's authentication on, in their order (`Step::Auth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum AuthStep {
    /// Add the user root (etcd needs it to turn authentication on), without a password.
    AddRoot,
    /// Grant it the role root.
    GrantRoot,
    /// Add the cluster's own user (the CN of the engine's client certificate), without a
    /// password.
    AddEngineUser,
    /// Grant it the role root.
    GrantEngineRole,
    /// Turn authentication on.
    Enable,
}

/// Why a member's pod is restarted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Restart {
    /// It runs an older pod template.
    NewTemplate,
    /// A learner whose pod crash-looped before its join entry existed: start it now rather
    /// than after the back-off.
    Rejoin,
    /// Its volume was deleted under it: a new pod gets a new volume.
    NewVolume,
}

/// What `Step::Downgrade` asks etcd for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DowngradeStep {
    Enable,
    Cancel,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ConfigChange {
    /// The initial members formed the cluster.
    Bootstrapped,
    /// Join entries changed (a learner was added or started).
    Joins,
    /// The config was missing or damaged.
    Repair,
}

impl Step {
    /// True when the step changes the world.
    pub fn is_change(&self) -> bool {
        !matches!(
            self,
            Step::Wait { .. } | Step::Hold { .. } | Step::Paused | Step::Hibernated | Step::Idle
        )
    }
    /// True for the steps, waits and holds of a recovery (`spec.recovery`, see `recover`).
    pub fn is_recovery(&self) -> bool {
        self.reason() == Reason::RebuildingCluster
    }
    /// True when the step changes etcd membership.
    pub fn is_membership_change(&self) -> bool {
        matches!(
            self,
            Step::AddLearner { .. } | Step::PromoteLearner { .. } | Step::RemoveMember { .. }
        )
    }
    /// Condition reason describing this step.
    pub fn reason(&self) -> Reason {
        match self {
            Step::Bootstrap { .. }
            | Step::WriteConfig {
                why: ConfigChange::Bootstrapped,
                ..
            } => Reason::Bootstrapping,
            Step::ApplySupportingObjects
            | Step::WriteConfig {
                why: ConfigChange::Repair,
                ..
            } => Reason::Repairing,
            Step::WriteConfig {
                why: ConfigChange::Joins,
                ..
            }
            | Step::AddLearner { .. } => Reason::AddingLearner,
            Step::UpdateTemplate { .. }
            | Step::RestartMember {
                why: Restart::NewTemplate,
                ..
            } => Reason::RollingMembers,
            Step::RestartMember { .. } | Step::WipeMember { .. } => Reason::ReplacingMember,
            Step::ResizeStatefulSet { .. } => Reason::ResizingWorkload,
            Step::PromoteLearner { .. } => Reason::PromotingLearner,
            Step::MoveLeader { .. } => Reason::MovingLeader,
            Step::RemoveMember { .. } => Reason::RemovingMember,
            Step::DeleteVolume { .. } | Step::DeleteRestorePod { .. } => Reason::CleaningUp,
            Step::RestoreSeed { .. } => Reason::RestoringSnapshot,
            Step::FenceClients
            | Step::TakeRecoverySnapshot { .. }
            | Step::VerifyRecoverySnapshot { .. }
            | Step::DeleteLostMembers { .. }
            | Step::MarkRecovered { .. } => Reason::RebuildingCluster,
            Step::RollBack { .. } => Reason::RollingBack,
            Step::Downgrade { .. } => Reason::Downgrading,
            Step::PreUpgradeSnapshot { .. } => Reason::UpgradingMember,
            Step::Compact { .. } => Reason::Compacting,
            Step::Defragment { .. } => Reason::Defragmenting,
            Step::DisarmNospace { .. } => Reason::DisarmingAlarm,
            Step::RaiseQuota { .. } => Reason::QuotaRaised,
            Step::Auth { .. } => Reason::EnablingAuth,
            Step::TakeScheduledBackup { .. }
            | Step::PruneBackups { .. }
            | Step::CheckBackup { .. }
            | Step::AbandonBackup { .. }
            | Step::Drill { .. } => Reason::BackingUp,
            Step::ResizeOldStatefulSet { .. } | Step::TakeOverService { .. } => Reason::Adopting,
            Step::RecreateStatefulSet { .. } | Step::GrowVolume { .. } => Reason::ResizingStorage,
            Step::HibernateSnapshot { .. } | Step::Hibernate { .. } => Reason::Hibernating,
            Step::Hibernated => Reason::Hibernated,
            Step::IssueCertificate {
                why: Issue::Rotation | Issue::Bundle | Issue::Retire,
                ..
            } => Reason::RotatingCa,
            Step::IssueCertificate { .. } | Step::RequestCertificate { .. } => {
                Reason::IssuingCertificate
            }
            Step::UpdatePeerUrl { .. } => Reason::SwitchingTls,
            Step::Wait { reason, .. } | Step::Hold { reason, .. } => *reason,
            Step::Paused => Reason::Paused,
            Step::Idle => Reason::AsDesired,
        }
    }
}

/// One sentence, shared by CLI progress, the condition message and the Event.
impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Bootstrap { replicas } => {
                write!(f, "bootstrap a new cluster of {replicas} members")
            }
            Step::ApplySupportingObjects => {
                write!(f, "apply the Services and the disruption budget")
            }
            Step::WriteConfig { why, .. } => match why {
                ConfigChange::Bootstrapped => {
                    write!(f, "record that the initial members formed the cluster")
                }
                ConfigChange::Joins => write!(f, "update the member list new members join with"),
                ConfigChange::Repair => write!(f, "repair the member config"),
            },
            Step::UpdateTemplate { .. } => write!(f, "apply the changed member pod template"),
            Step::AddLearner { name, .. } => write!(f, "add {name} as a learner"),
            Step::ResizeStatefulSet { from, to } => {
                write!(f, "resize the StatefulSet from {from} to {to}")
            }
            Step::PromoteLearner { name, .. } => write!(f, "promote learner {name} to voter"),
            Step::MoveLeader { from, to, .. } => write!(f, "move leadership from {from} to {to}"),
            Step::RemoveMember { name, .. } => write!(f, "remove member {name}"),
            Step::DeleteVolume { claim, .. } => {
                write!(f, "delete volume {claim} of a removed member")
            }
            Step::RestartMember { pod, why, .. } => match why {
                Restart::NewTemplate => write!(f, "restart {pod} with the new template"),
                Restart::Rejoin => {
                    write!(f, "restart {pod} to join as the learner it was added as")
                }
                Restart::NewVolume => write!(f, "restart {pod} so it gets a new volume"),
            },
            Step::WipeMember {
                claim, pod, force, ..
            } => wipe(f, claim.as_deref(), pod, *force),
            Step::RestoreSeed { url } => {
                write!(f, "restore the seed member's volume from {url}")
            }
            Step::DeleteRestorePod { pod } => write!(f, "delete the finished restore pod {pod}"),
            Step::FenceClients
            | Step::TakeRecoverySnapshot { .. }
            | Step::VerifyRecoverySnapshot { .. }
            | Step::DeleteLostMembers { .. }
            | Step::MarkRecovered { .. } => self.fmt_recovery(f),
            Step::RollBack { from, to, why, .. } => {
                write!(
                    f,
                    "roll back the upgrade to {to}: {why}; {from} is put back"
                )
            }
            Step::Downgrade { action, target } => downgrade(f, *action, *target),
            Step::PreUpgradeSnapshot { to, destination } => write!(
                f,
                "take the pre-upgrade snapshot to {destination} before any member moves to {to}"
            ),
            Step::Compact { revision, why } => compact(f, *revision, why),
            Step::Defragment { name, why, .. } => write!(
                f,
                "defragment {name} ({why}; one member at a time, the leader last, while every \
                 other voter answers)"
            ),
            Step::DisarmNospace { .. } => disarm(f),
            Step::RaiseQuota { from, to } => raise_quota(f, *from, *to),
            Step::Auth { part } => auth_step(f, *part),
            Step::TakeScheduledBackup { slot } => write!(
                f,
                "start the scheduled backup of {} (it runs beside the engine's passes)",
                slot.strftime("%Y-%m-%d %H:%M UTC")
            ),
            Step::PruneBackups { delete, foreign } => prune(f, delete, foreign),
            Step::CheckBackup { record, key, .. } => check_backup(f, record, key),
            Step::AbandonBackup { record, taken_by } => write!(
                f,
                "mark backup {record} failed: {} stopped before finishing it",
                if taken_by.is_empty() {
                    "its taker"
                } else {
                    taken_by
                }
            ),
            Step::Drill { part } => write!(f, "{part}"),
            Step::ResizeOldStatefulSet { .. } | Step::TakeOverService { .. } => self.fmt_adopt(f),
            Step::RecreateStatefulSet { .. }
            | Step::GrowVolume { .. }
            | Step::HibernateSnapshot { .. }
            | Step::Hibernate { .. }
            | Step::Hibernated => self.fmt_storage(f),
            Step::IssueCertificate { role, secret, why } => issue(f, *role, secret, *why),
            Step::RequestCertificate { .. } => self.fmt_request(f),
            Step::UpdatePeerUrl { name, from, to, .. } => {
                write!(f, "move member {name}'s peer URL from {from} to {to}")
            }
            Step::Wait { message, .. } => write!(f, "waiting: {message}"),
            Step::Hold { message, .. } => write!(f, "{HOLDING}{message}"),
            Step::Paused => write!(f, "paused: observing only"),
            Step::Idle => write!(f, "converged"),
        }
    }
}

// The sentences of the steps that take more than one `write!` (parts of `Display for Step`).

fn wipe(f: &mut fmt::Formatter<'_>, claim: Option<&str>, pod: &str, force: bool) -> fmt::Result {
    match claim {
        Some(claim) => write!(f, "wipe {pod}: delete volume {claim}, then the pod")?,
        None => write!(f, "wipe {pod}: delete the pod (ephemeral data)")?,
    }
    if force {
        write!(f, " (at once: its node is gone)")?;
    }
    Ok(())
}

fn issue(f: &mut fmt::Formatter<'_>, role: CertRole, secret: &str, why: Issue) -> fmt::Result {
    match (role, why) {
        (CertRole::Ca, Issue::Rotation) => {
            return write!(
                f,
                "rotate the CA: create a new one, the old one kept as retiring and trusted \
                 beside it until every member restarted and every certificate is the new CA's \
                 (Secret {secret})"
            );
        }
        (CertRole::Ca, Issue::Retire) => {
            return write!(
                f,
                "drop the retiring CA (Secret {secret}): every certificate is the new CA's; the \
                 members restart once more, one at a time, to stop trusting the old one"
            );
        }
        (CertRole::Ca, _) => {
            return write!(
                f,
                "create the cluster's certificate authority (Secret {secret})"
            );
        }
        _ => {}
    }
    let role = role.as_str();
    match why {
        Issue::Missing => write!(f, "issue the {role} certificate (Secret {secret})"),
        Issue::Unreadable => write!(
            f,
            "issue the {role} certificate again (Secret {secret} holds no usable one)"
        ),
        Issue::OtherCa => write!(
            f,
            "issue the {role} certificate again from the cluster's CA (Secret {secret} holds \
             another CA's)"
        ),
        Issue::Bundle => write!(
            f,
            "write the CA rotation's trust bundle into the {role} certificate's ca.crt (Secret \
             {secret}; the certificate and key kept)"
        ),
        Issue::Rotation | Issue::Retire => write!(f, "rotate the CA (Secret {secret})"),
        Issue::Names => write!(
            f,
            "issue the {role} certificate again for the names spec.tls.serverNames gives \
             (Secret {secret}); members read it at their next TLS handshake, without a restart"
        ),
        Issue::Renewal => write!(
            f,
            "renew the {role} certificate (Secret {secret}): two thirds of its lifetime have \
             passed; members read it at their next TLS handshake, without a restart"
        ),
        Issue::Identity => write!(
            f,
            "issue the {role} certificate again with the cluster's own CN (Secret {secret}): \
             its etcd user has the role root; the old certificate (CN root) stays valid"
        ),
    }
}

fn downgrade(f: &mut fmt::Formatter<'_>, action: DowngradeStep, target: Version) -> fmt::Result {
    match action {
        DowngradeStep::Enable => write!(
            f,
            "enable etcd's downgrade to {}.{} (validated first): the cluster version goes down before any member runs {}.{}",
            target.major, target.minor, target.major, target.minor
        ),
        DowngradeStep::Cancel => write!(
            f,
            "cancel etcd's downgrade to {}.{}: spec.version no longer goes there",
            target.major, target.minor
        ),
    }
}

fn compact(f: &mut fmt::Formatter<'_>, revision: i64, why: &Trigger) -> fmt::Result {
    match why {
        Trigger::Nospace => write!(
            f,
            "compact the keyspace history up to revision {revision} (NOSPACE: the database \
             reached its quota)"
        ),
        why => write!(
            f,
            "compact the keyspace history up to revision {revision} ({why})"
        ),
    }
}

fn raise_quota(f: &mut fmt::Formatter<'_>, from: i64, to: i64) -> fmt::Result {
    write!(
        f,
        "raise the quota from {} to {} MiB, once (NOSPACE: the database is still above \
         {}% of it after compaction and defragmentation); spec.etcd.quotaBackendBytes \
         is unchanged, and its own next change replaces this",
        from >> 20,
        to >> 20,
        nospace::FULL_PERCENT
    )
}

fn check_backup(f: &mut fmt::Formatter<'_>, record: &str, key: &str) -> fmt::Result {
    write!(
        f,
        "read backup {record}'s object {key} and check its recorded size and sha256 (retention \
         counts only a backup found as recorded)"
    )
}

fn prune(
    f: &mut fmt::Formatter<'_>,
    delete: &[(String, Option<String>)],
    foreign: &[String],
) -> fmt::Result {
    let names: Vec<&str> = delete.iter().map(|(n, _)| n.as_str()).collect();
    write!(
        f,
        "delete the backups retention lets go: {}",
        names.join(", ")
    )?;
    if !foreign.is_empty() {
        write!(
            f,
            " ({} record(s) left alone: outside the destination, or not found as recorded)",
            foreign.len()
        )?;
    }
    Ok(())
}

fn disarm(f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(
        f,
        "disarm NOSPACE: every member is below {}% of its quota again, so etcd accepts writes",
        nospace::FULL_PERCENT
    )
}

fn auth_step(f: &mut fmt::Formatter<'_>, part: AuthStep) -> fmt::Result {
    let root = crate::etcd::ROOT;
    match part {
        AuthStep::AddRoot => write!(
            f,
            "add etcd user {root} (etcd needs it), before authentication is turned on"
        ),
        AuthStep::GrantRoot => write!(f, "grant etcd role {root} to user {root}"),
        AuthStep::AddEngineUser => write!(
            f,
            "add the cluster's own etcd user (the CN of the engine's client certificate, \
             kubectl-etcd:<namespace>:<name>)"
        ),
        AuthStep::GrantEngineRole => write!(
            f,
            "grant etcd role {root} to the cluster's own user (the engine's client certificate)"
        ),
        AuthStep::Enable => write!(
            f,
            "turn etcd's authentication on (spec.tls.etcdAuth): each client certificate's CN is \
             its user from now on"
        ),
    }
}

impl Step {
    /// The sentences of a recovery's steps (`recover`).
    fn fmt_recovery(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::FenceClients => write!(
                f,
                "recover: fence clients off (the client Service selects no member until the \
                     rebuilt cluster serves)"
            ),
            Step::TakeRecoverySnapshot { member, to, .. } => write!(
                f,
                "recover: snapshot {member} to {to} (once the client Service lists no endpoint)"
            ),
            Step::VerifyRecoverySnapshot { record } => write!(
                f,
                "recover: read EtcdBackup {record} back and verify it (and that the survivor did \
                     not move)"
            ),
            Step::DeleteLostMembers { record } => write!(
                f,
                "recover: delete the lost cluster's StatefulSet, member config and volumes (the \
                     rebuild starts from EtcdBackup {record})"
            ),
            Step::MarkRecovered { record } => write!(
                f,
                "recover: the seed's volume is restored from EtcdBackup {record}; the seed starts \
                     next"
            ),
            _ => Ok(()),
        }
    }

    /// The sentence of `RequestCertificate` (mode certManager).
    fn fmt_request(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Step::RequestCertificate {
            role,
            certificate,
            issuer,
        } = self
        else {
            return Ok(());
        };
        write!(
            f,
            "ask cert-manager for the {} certificate (Certificate {certificate}, {issuer})",
            role.as_str()
        )
    }

    /// The sentences of an adoption's own steps (`adopt`).
    fn fmt_adopt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::ResizeOldStatefulSet { name, from, to } => write!(
                f,
                "scale the old StatefulSet {name} from {from} to {to} (its top member was removed; \
                 its volumes are kept)"
            ),
            Step::TakeOverService { service } => write!(
                f,
                "point Service {service} at the new members before the last old member goes"
            ),
            _ => Ok(()),
        }
    }

    /// The sentences of the storage and hibernation steps (see `storage`, `hibernate`).
    fn fmt_storage(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::RecreateStatefulSet { storage, path, .. } => write!(
                f,
                "re-create the StatefulSet with claims of {storage} (its pods keep running); \
                 then {path}"
            ),
            Step::GrowVolume {
                claim, from, to, ..
            } => write!(f, "grow volume {claim} from {from} to {to} in place"),
            Step::HibernateSnapshot { destination } => write!(
                f,
                "take a verified snapshot to {destination} before the members stop (hibernate)"
            ),
            Step::Hibernate { from } => write!(
                f,
                "hibernate: stop the {from} member pods; their volumes keep the data"
            ),
            Step::Hibernated => write!(
                f,
                "hibernated: no member runs, the volumes keep the data (`kubectl etcd wake` \
                 starts them again)"
            ),
            _ => Ok(()),
        }
    }
}
