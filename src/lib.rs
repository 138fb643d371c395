//! kubectl-etcd: an etcd operator whose kubectl verbs run the same reconcile engine as `operate`.
//!
//! Rooms, and the way dependencies point: `api` ← `model` ← `plan` ← `observe`/`act` ← `engine`
//! ← `cli`, `operate`. `objects` (names, labels, builders) and `etcd` (gRPC) are leaves.
pub mod api;
pub mod etcd;
pub mod model;
pub mod objects;
pub mod plan;
pub mod engine;
pub mod error;
pub mod lease;
pub mod cli;
pub mod operate;
