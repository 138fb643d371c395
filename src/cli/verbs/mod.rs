//! One file per verb: its flags (`Args`) and its `run`. Verbs that change a cluster write intent
//! into the EtcdCluster and hand over to `cli::drive`.

pub mod adopt;
pub mod backup;
pub mod create;
pub mod defrag;
pub mod delete;
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
