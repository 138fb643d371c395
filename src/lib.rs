//! kubectl-etcd: an etcd operator whose kubectl verbs run the same reconcile engine as `operate`.
pub mod etcd;
