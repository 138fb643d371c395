//! The two inputs of the planner: `Desired` (the validated spec) and `Observed` (the world).
//!
//! Pure: no client, no clock. `validate` is the only place that reads raw spec fields for
//! configuration; everything downstream reads `Desired`.
//!
//! `version`: etcd versions; `desired`: `Desired` and its defaults; `validate`: spec → `Desired`;
//! `observed`: `Observed` and its views.

mod desired;
pub mod maintenance;
mod observed;
mod validate;
mod version;

pub use desired::*;
pub use observed::*;
pub use validate::*;
pub use version::*;

#[cfg(test)]
mod tests;
