//! The two inputs of the planner: `Desired` (the validated spec) and `Observed` (the world).
//!
//! Pure: no client, no clock. `validate` is the only place that reads raw spec fields for
//! configuration; everything downstream reads `Desired`.
//!
//! `version`: etcd versions; `quantity`: sizes, parsed once where they enter; `desired`: `Desired`
//! and its defaults; `validate`: spec → `Desired`;
//! `auth`: `spec.auth` and `spec.tls.etcdAuth`, never both; `drill`: `spec.backup.drill`; `observed`: `Observed` and its views; `records`: the `EtcdBackup` records' labels and selection.

mod adopt;
mod allow;
mod auth;
mod desired;
pub mod drill;
pub mod fair;
pub mod integrity;
pub mod maintenance;
mod observed;
mod operator;
pub mod pki;
mod quantity;
pub mod records;
pub mod recovery;
mod validate;
mod version;

pub use adopt::*;
pub use allow::*;
pub use desired::*;
pub use observed::*;
pub use operator::*;
pub use quantity::Quantity;
pub use validate::*;
pub use version::*;

#[cfg(test)]
mod tests;
