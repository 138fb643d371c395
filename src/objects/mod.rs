//! Names, labels and the Kubernetes objects of one etcd cluster.
//!
//! Pure functions: no client. Every object name, label key, port and annotation the engine uses
//! comes from here, so observe, act and the tests agree by construction.

pub mod access;
pub mod admission;
pub mod cert_manager;
pub mod certs;
pub mod drill;
pub mod install;
pub mod monitoring;
pub mod network_policy;
pub mod pvc_agent;
pub mod restore;
pub mod security;

mod member_config;
mod names;
mod ownership;
mod services;
mod workload;

pub use member_config::*;
pub use names::*;
pub use network_policy::{admitted_operator, network_policy, policy_admits_clients};
pub use ownership::*;
pub use services::*;
pub use workload::*;

#[cfg(test)]
mod tests;
