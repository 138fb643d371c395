//! One file per verb: its flags (`Args`) and its `run`. Verbs that change a cluster write intent
//! into the EtcdCluster and hand over to `cli::drive`.

pub mod adopt;
pub mod backup;
pub mod certificate;
pub mod create;
mod credentials;
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
pub mod rotate_ca;
pub mod scale;
pub mod status;
pub mod tls;
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

#[cfg(test)]
mod tests {
    /// Every write of a verb names the CLI's field manager (`intent_patch`, `intent_post`), so
    /// `metadata.managedFields` tells a verb's writes (spec, request annotations, what a verb
    /// creates) from the engine's; tests/e2e_status.rs checks the same on a cluster.
    #[test]
    fn every_verb_writes_as_the_cli() {
        for (file, text) in crate::fixtures::sources("cli") {
            // Spelled in two halves: this file is among those read.
            for unnamed in [
                concat!("PatchParams", "::default()"),
                concat!("PostParams", "::default()"),
            ] {
                assert!(
                    !text.contains(unnamed),
                    "{file} writes without a field manager ({unnamed}): use verbs::intent_patch or verbs::intent_post"
                );
            }
        }
    }

    /// The CLI reaches backups only through the engine (`engine::backups`), like the operator:
    /// records, stored snapshots, the agent pods' side, taking one.
    #[test]
    fn the_cli_reaches_backups_only_through_the_engine() {
        for (file, text) in crate::fixtures::sources("cli") {
            // Spelled in two halves: this file is among those read.
            let (path, module) = (
                concat!("crate::", "backup::"),
                concat!("crate::", "backup;"),
            );
            assert!(
                !text.contains(path) && !text.contains(module),
                "{file} imports crate::backup: go through crate::engine::backups"
            );
        }
    }
}
