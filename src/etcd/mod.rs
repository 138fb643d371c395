//! etcd client layer (in progress).
