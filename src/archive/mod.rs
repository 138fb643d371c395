//! The backup archive, apart from any cluster: where backups are stored (`store`: S3, local files,
//! PVC paths as URLs, streamed with bounded memory), how their bytes are encoded and checked
//! (`codec`; `crypt`, client-side AES-256-GCM encryption; `frame`, the pvc:// put stream),
//! getting one back verified (`fetch`), which ones to delete (`retention`, pure) and when the next
//! one runs (`schedule`, pure).
//!
//! A leaf room: it imports nothing of this crate, so the API types, `validate` and the pod
//! builders can use its values while `backup` (taking and restoring, above the engine) uses its
//! I/O.

pub mod codec;
pub mod crypt;
pub mod fetch;
pub mod frame;
pub mod retention;
pub mod schedule;
pub mod store;
