//! The custom resources `EtcdCluster` and `EtcdBackup`: spec, status, condition types and
//! reasons, and the CRDs generated from them.
//!
//! Pure data: no I/O, no client. Everything the API server stores about a cluster is declared here:
//! the cluster's spec (`cluster`), its status (`status`), the backup record (`backup`), condition
//! types and reasons (`conditions`), and the CRD objects with their admission rules (`crd`).

mod adopt;
mod backup;
pub mod cert_manager;
mod cluster;
mod conditions;
mod crd;
mod status;

pub use adopt::{AdoptSpec, AdoptionStatus, adoption_phase};
pub use backup::*;
pub use cluster::*;
pub use conditions::*;
pub use crd::*;
pub use status::*;

/// API group owned by the project (the `#[kube]` attributes of `cluster` and `backup` need
/// literals: a unit test keeps them equal to these constants).
pub const GROUP: &str = "etcd.kubectl-etcd.io";
/// API version of `EtcdCluster`.
pub const VERSION: &str = "v1alpha1";
/// Kind of the custom resource, as error messages and owner references name it.
pub const KIND: &str = "EtcdCluster";
/// Finalizer the engine puts on every EtcdCluster it manages.
pub const FINALIZER: &str = "etcd.kubectl-etcd.io/cleanup";
/// Largest cluster we accept: etcd's own guidance is 7; 9 leaves room for replacement headroom.
pub const MAX_REPLICAS: i32 = 9;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_derived_resource_uses_the_named_constants() {
        use kube::Resource;
        assert_eq!(EtcdCluster::group(&()), GROUP);
        assert_eq!(EtcdCluster::version(&()), VERSION);
        assert_eq!(EtcdCluster::kind(&()), KIND);
        assert_eq!(EtcdCluster::api_version(&()), format!("{GROUP}/{VERSION}"));
    }
}
