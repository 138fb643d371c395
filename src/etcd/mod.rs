//! etcd client layer (placeholder until the etcd-layer branch lands).
pub fn fmt_id(id: u64) -> String {
    format!("{id:016x}")
}
