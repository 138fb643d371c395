//! Backups: where they are stored (`store`: S3, local files, PVC paths as URLs, streamed with bounded
//! memory), how their bytes are encoded and checked (`codec`), which ones to delete (`retention`, pure)
//! and when the next one runs (`schedule`, pure).

pub mod codec;
pub mod retention;
pub mod schedule;
pub mod store;
