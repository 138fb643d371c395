//! `EtcdBackup` records as the planner and the backup code read them, pure: their labels
//! (`label`: which cluster, who asked) and which records are whose, which hold a restore worth
//! the name, which were abandoned (`select`). Below the planner: `plan::backup` decides from them
//! without importing `backup`, which takes and prunes the backups.

/// Labels of EtcdBackup records: which cluster, and who asked (retention only deletes scheduled ones).
pub mod label {
    use std::collections::BTreeMap;

    pub const CLUSTER: &str = "etcd.kubectl-etcd.io/cluster";
    pub const TRIGGER: &str = "etcd.kubectl-etcd.io/trigger";
    pub const TRIGGER_CLI: &str = "cli";
    pub const TRIGGER_SCHEDULE: &str = "schedule";
    /// The engine's pre-upgrade snapshot of a `spec.version` change applied without one.
    pub const TRIGGER_UPGRADE: &str = "upgrade";
    /// The survivor's snapshot of a recovery (`spec.recovery`).
    pub const TRIGGER_RECOVER: &str = "recover";
    /// On a recovery's snapshot record: the recovery's nonce (which record is whose attempt).
    pub const RECOVERY: &str = "etcd.kubectl-etcd.io/recovery";
    /// The engine's snapshot before the members stop for `spec.hibernate`.
    pub const TRIGGER_HIBERNATE: &str = "hibernate";

    pub fn for_cluster(cluster: &str, trigger: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (CLUSTER.to_string(), cluster.to_string()),
            (TRIGGER.to_string(), trigger.to_string()),
        ])
    }

    pub fn selector(cluster: &str) -> String {
        format!("{CLUSTER}={cluster}")
    }
}

pub mod drill;
pub mod select;
