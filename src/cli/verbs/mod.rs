//! One file per verb: its flags (`Args`) and its `run`. Verbs that change a cluster write intent
//! into the EtcdCluster and hand over to `cli::drive`.

pub mod adopt;
pub mod backup;
pub mod create;
pub mod defrag;
pub mod delete;
pub mod hibernate;
pub mod install;
pub mod logs;
pub mod operate;
pub mod reconcile;
pub mod recover;
pub mod report;
pub mod restore;
pub mod scale;
pub mod status;
pub mod upgrade;

/// How a verb writes what it asks for (spec, request annotations): as the CLI's field manager,
/// so `metadata.managedFields` tells a verb's writes from the engine's.
pub(crate) fn intent_patch() -> kube::api::PatchParams {
    kube::api::PatchParams {
        field_manager: Some(crate::keys::MANAGER_CLI.into()),
        ..Default::default()
    }
}

/// `intent_patch` for a verb that creates the EtcdCluster.
pub(crate) fn intent_post() -> kube::api::PostParams {
    kube::api::PostParams {
        field_manager: Some(crate::keys::MANAGER_CLI.into()),
        ..Default::default()
    }
}
