//! Condition types and reasons: the words conditions, Events and the planner's waits share.

use serde::Serialize;

/// Condition types (metav1.Condition `type`).
pub mod condition {
    pub const READY: &str = "Ready";
    pub const SCALING: &str = "Scaling";
    pub const UPGRADING: &str = "Upgrading";
    pub const RECOVERING: &str = "Recovering";
    pub const DEGRADED: &str = "Degraded";
    /// True while a spec change cannot be carried out (e.g. an immutable storage field); the
    /// message names the field and the way forward. Everything else in the spec still applies.
    pub const SPEC_REFUSED: &str = "SpecRefused";
    /// False when the last scheduled backup failed or is older than twice the schedule's interval.
    pub const BACKUP_HEALTHY: &str = "BackupHealthy";
    /// True while the engine heals a full database (NOSPACE): compaction, defragmentation one
    /// member at a time, a raised quota; the message says which.
    pub const MAINTAINING: &str = "Maintaining";
    /// True while client traffic is plain http (`spec.tls.mode: none`, or a cluster without
    /// `spec.tls`): anyone who reaches the pods reads and writes every key.
    pub const INSECURE_TRANSPORT: &str = "InsecureTransport";
    /// True while the engine rotates the managed CA (`kubectl etcd rotate-ca`): the message
    /// says which part (the trust bundle, a member's restart, a certificate, the old CA dropped).
    pub const ROTATING_CA: &str = "RotatingCA";
    /// True while TLS is switched on or off for the running cluster (`plan::tls_switch`); the
    /// message names the phase.
    pub const SWITCHING_TLS: &str = "SwitchingTLS";
    /// True while the members' quota does not fit their volumes (`model::quota_fitting`): a
    /// volume would fill before etcd refuses writes, on every member at once. The message says
    /// the quota or the size that fits.
    pub const VOLUME_TOO_SMALL: &str = "VolumeTooSmall";
}

/// Why a cluster is where it is: the `reason` of conditions and Events, and what the planner's
/// `Wait` and `Hold` carry, typed, so that status derivation and drivers match on variants rather
/// than strings. The string of each is its variant name (CamelCase, as metav1.Condition requires),
/// except `ClusterIdMismatch` which reads the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Reason {
    AllMembersHealthy,
    /// Ready, but not every voter is healthy: a quorum serves.
    QuorumHealthy,
    MembersUnhealthy,
    Bootstrapping,
    AddingLearner,
    PromotingLearner,
    RemovingMember,
    MovingLeader,
    ResizingWorkload,
    CleaningUp,
    RollingMembers,
    Repairing,
    AsDesired,
    InvalidSpec,
    /// Members answer with different cluster ids.
    ClusterIdMismatch,
    QuorumAtRisk,
    EtcdUnreachable,
    Paused,
    StrandedMember,
    /// A member lost its data and is being replaced (removed, wiped, re-added as a learner).
    ReplacingMember,
    /// Fewer voters than a quorum answer: the engine never acts; `kubectl etcd recover` does.
    QuorumLost,
    /// A spec change the engine cannot carry out (immutable field); everything else goes on.
    ImmutableField,
    /// `spec.etcd.options` sets a flag the operator does not allow (`--allow-etcd-option`); the
    /// rest of the spec goes on.
    OptionNotAllowed,
    /// `spec.imageRepository` or a tools image is not under an image prefix the operator allows
    /// (`--allow-image-prefix`): the members or the restore pod run the default image instead.
    ImageNotAllowed,
    /// The seed's volume is being restored from a snapshot.
    RestoringSnapshot,
    /// A scheduled backup is due but waits for a slot: the operator's bound on backups at once,
    /// per namespace or in all, is taken (`operate --max-backups-per-namespace`, `--max-backups`).
    BackupQueued,
    RestoreFailed,
    /// A member is restarted on a new etcd version.
    UpgradingMember,
    /// The upgraded member must be healthy and caught up before the next one moves.
    WaitingForMember,
    /// An upgraded member did not become healthy in time: the old version is being put back.
    RollingBack,
    /// Every member runs the old version again after a failed upgrade.
    RolledBack,
    /// `spec.version` cannot be reached from what the members run (the message says how).
    UpgradeBlocked,
    /// etcd's downgrade procedure: the cluster version is being lowered before members move
    /// to the lower minor (or a downgrade no longer wanted is cancelled).
    Downgrading,
    /// Every voter is healthy but a voter's pod has not passed its readiness probe yet.
    MembersNotReady,
    /// `kubectl etcd recover` fenced clients off the client Service and has not finished (or
    /// stopped half-way): the cluster serves no client.
    ClientsFenced,
    /// The engine carries out `spec.recovery`: fencing clients, the safety snapshot, deleting
    /// the lost cluster's members, restoring the seed.
    RebuildingCluster,
    /// NOSPACE: the engine compacts the keyspace history.
    Compacting,
    /// NOSPACE: the engine defragments one member.
    Defragmenting,
    /// NOSPACE: the engine disarms the alarm (every member below 90 % of its quota).
    DisarmingAlarm,
    /// NOSPACE: the database was still full after defragmentation; the engine raised the quota.
    QuotaRaised,
    /// `spec.tls.etcdAuth`: the engine makes etcd's user root and turns authentication on.
    EnablingAuth,
    /// NOSPACE: the database is full of live data even at the raised quota; a human decides.
    DatabaseFull,
    /// A scheduled backup is started, an abandoned one failed, or expired ones pruned.
    BackingUp,
    /// `spec.adopt`: the old cluster's members are taken over (joined, then retired).
    Adopting,
    /// `spec.adopt` names members outside the cluster's namespace, would send the `spec.auth`
    /// password over plain http, or a cluster another EtcdCluster reports: nothing is dialed.
    AdoptionRefused,
    /// A storage change (`spec.storage.size` grown, `storageClassName` changed): the StatefulSet
    /// is re-created with the new claim template, then each volume grown or each member moved.
    ResizingStorage,
    /// `spec.hibernate`: the snapshot is taken, then the member pods stop.
    Hibernating,
    /// Every member pod stopped; the volumes keep the data.
    Hibernated,
    /// Managed TLS: the engine writes the CA or a certificate (a new cluster, or a renewal).
    IssuingCertificate,
    /// Managed TLS: the CA's Secret is gone or unusable while certificates it issued remain.
    CertificateAuthorityLost,
    /// Mode certManager names a ClusterIssuer (a CA shared by every namespace) and this driver
    /// was not given `--allow-cluster-issuer`: no Certificate is written.
    IssuerNotAllowed,
    /// Managed TLS: the CA is being rotated (`kubectl etcd rotate-ca`).
    RotatingCa,
    /// TLS is switched on or off for a running cluster (`kubectl etcd tls`).
    SwitchingTls,
    /// `InsecureTransport`: client traffic is plain http.
    PlainHttp,
    /// `InsecureTransport` false: clients speak https with client certificates.
    ClientCertificates,
    /// An object at one of the cluster's names (a Service, the NetworkPolicy, a TLS Secret, a
    /// member claim, …) is not the cluster's: the engine writes and deletes nothing meanwhile.
    ObjectNotOwned,
    /// `VolumeTooSmall` false: the volumes hold the quota (or there are none).
    QuotaFitsVolume,
    /// `VolumeTooSmall` true.
    QuotaExceedsVolume,
}

impl Reason {
    /// The condition/Event reason string.
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::AllMembersHealthy => "AllMembersHealthy",
            Reason::QuorumHealthy => "QuorumHealthy",
            Reason::MembersUnhealthy => "MembersUnhealthy",
            Reason::Bootstrapping => "Bootstrapping",
            Reason::AddingLearner => "AddingLearner",
            Reason::PromotingLearner => "PromotingLearner",
            Reason::RemovingMember => "RemovingMember",
            Reason::MovingLeader => "MovingLeader",
            Reason::ResizingWorkload => "ResizingWorkload",
            Reason::CleaningUp => "CleaningUp",
            Reason::RollingMembers => "RollingMembers",
            Reason::Repairing => "Repairing",
            Reason::AsDesired => "AsDesired",
            Reason::InvalidSpec => "InvalidSpec",
            Reason::ClusterIdMismatch => "ClusterIdMismatch",
            Reason::QuorumAtRisk => "QuorumAtRisk",
            Reason::EtcdUnreachable => "EtcdUnreachable",
            Reason::Paused => "Paused",
            Reason::StrandedMember => "StrandedMember",
            Reason::ReplacingMember => "ReplacingMember",
            Reason::QuorumLost => "QuorumLost",
            Reason::ImmutableField => "ImmutableField",
            Reason::OptionNotAllowed => "OptionNotAllowed",
            Reason::ImageNotAllowed => "ImageNotAllowed",
            Reason::RestoringSnapshot => "RestoringSnapshot",
            Reason::BackupQueued => "BackupQueued",
            Reason::RestoreFailed => "RestoreFailed",
            Reason::UpgradingMember => "UpgradingMember",
            Reason::WaitingForMember => "WaitingForMember",
            Reason::RollingBack => "RollingBack",
            Reason::RolledBack => "RolledBack",
            Reason::UpgradeBlocked => "UpgradeBlocked",
            Reason::Downgrading => "Downgrading",
            Reason::MembersNotReady => "MembersNotReady",
            Reason::ClientsFenced => "ClientsFenced",
            Reason::RebuildingCluster => "RebuildingCluster",
            Reason::Compacting => "Compacting",
            Reason::Defragmenting => "Defragmenting",
            Reason::DisarmingAlarm => "DisarmingAlarm",
            Reason::QuotaRaised => "QuotaRaised",
            Reason::EnablingAuth => "EnablingAuth",
            Reason::DatabaseFull => "DatabaseFull",
            Reason::BackingUp => "BackingUp",
            Reason::Adopting => "Adopting",
            Reason::AdoptionRefused => "AdoptionRefused",
            Reason::ResizingStorage => "ResizingStorage",
            Reason::Hibernating => "Hibernating",
            Reason::Hibernated => "Hibernated",
            Reason::IssuingCertificate => "IssuingCertificate",
            Reason::CertificateAuthorityLost => "CertificateAuthorityLost",
            Reason::IssuerNotAllowed => "IssuerNotAllowed",
            Reason::RotatingCa => "RotatingCA",
            Reason::SwitchingTls => "SwitchingTLS",
            Reason::PlainHttp => "PlainHttp",
            Reason::ClientCertificates => "ClientCertificates",
            Reason::ObjectNotOwned => "ObjectNotOwned",
            Reason::QuotaFitsVolume => "QuotaFitsVolume",
            Reason::QuotaExceedsVolume => "QuotaExceedsVolume",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Condition reasons as strings, for code that writes or matches them outside the planner.
pub mod reason {
    use super::Reason;
    pub const ALL_MEMBERS_HEALTHY: &str = Reason::AllMembersHealthy.as_str();
    pub const QUORUM_HEALTHY: &str = Reason::QuorumHealthy.as_str();
    pub const MEMBERS_UNHEALTHY: &str = Reason::MembersUnhealthy.as_str();
    pub const BOOTSTRAPPING: &str = Reason::Bootstrapping.as_str();
    pub const ADDING_LEARNER: &str = Reason::AddingLearner.as_str();
    pub const PROMOTING_LEARNER: &str = Reason::PromotingLearner.as_str();
    pub const REMOVING_MEMBER: &str = Reason::RemovingMember.as_str();
    pub const MOVING_LEADER: &str = Reason::MovingLeader.as_str();
    pub const RESIZING_WORKLOAD: &str = Reason::ResizingWorkload.as_str();
    pub const CLEANING_UP: &str = Reason::CleaningUp.as_str();
    pub const ROLLING_MEMBERS: &str = Reason::RollingMembers.as_str();
    pub const REPAIRING: &str = Reason::Repairing.as_str();
    pub const AS_DESIRED: &str = Reason::AsDesired.as_str();
    pub const INVALID_SPEC: &str = Reason::InvalidSpec.as_str();
    pub const SPLIT_BRAIN: &str = Reason::ClusterIdMismatch.as_str();
    pub const QUORUM_AT_RISK: &str = Reason::QuorumAtRisk.as_str();
    pub const ETCD_UNREACHABLE: &str = Reason::EtcdUnreachable.as_str();
    pub const PAUSED: &str = Reason::Paused.as_str();
    pub const STRANDED_MEMBER: &str = Reason::StrandedMember.as_str();
    pub const RESTORING: &str = Reason::RestoringSnapshot.as_str();
    pub const RESTORE_FAILED: &str = Reason::RestoreFailed.as_str();
    pub const UPGRADING_MEMBER: &str = Reason::UpgradingMember.as_str();
    pub const WAITING_FOR_MEMBER: &str = Reason::WaitingForMember.as_str();
    pub const ROLLING_BACK: &str = Reason::RollingBack.as_str();
    pub const ROLLED_BACK: &str = Reason::RolledBack.as_str();
    pub const UPGRADE_BLOCKED: &str = Reason::UpgradeBlocked.as_str();
    pub const OBJECT_NOT_OWNED: &str = Reason::ObjectNotOwned.as_str();
    // BackupHealthy's reasons (written by the backup schedule, not by the planner).
    pub const BACKUP_SUCCEEDED: &str = "BackupSucceeded";
    pub const BACKUP_FAILED: &str = "BackupFailed";
    pub const BACKUP_OVERDUE: &str = "BackupOverdue";
    pub const NO_SCHEDULE: &str = "NoSchedule";
    /// An Event's: retention found a backup record naming an object that is not one of the
    /// cluster's backups in its destination, and left it alone.
    pub const BACKUP_OUTSIDE_DESTINATION: &str = "BackupOutsideDestination";
}
