//! The backup archive, apart from any cluster: where backups are stored (`store`: S3, local files,
//! PVC paths as URLs, streamed with bounded memory), how their bytes are encoded and checked
//! (`codec`; `crypt`, client-side AES-256-GCM encryption; `frame`, the pvc:// put stream),
//! getting one back verified (`fetch`), what stored backups and their records are named (`naming`), which ones to delete (`retention`, pure) and when the next
//! one runs (`schedule`, pure).
//!
//! A leaf room: it imports nothing of this crate, so the API types, `validate` and the pod
//! builders can use its values while `backup` (taking and restoring, above the engine) uses its
//! I/O.

pub mod codec;
pub mod crypt;
pub mod fetch;
pub mod frame;
pub mod naming;
pub mod retention;
pub mod schedule;
pub mod store;

/// Where and how a cluster's backups are stored: what `validate` makes of `spec.backup`
/// (`model::BackupPlan`), or what a verb's flags say instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destination {
    pub location: store::Location,
    pub compression: codec::Compression,
    /// A Secret of the cluster's namespace with S3 credentials (`None`: the ambient chain, if
    /// the taker may use it).
    pub credentials_secret: Option<String>,
    /// Server-side encryption asked of S3.
    pub sse: Option<store::Sse>,
    /// Client-side encryption (`crypt`) with the key in this Secret of the cluster's namespace.
    pub encryption: Option<crypt::KeySecret>,
}

impl Destination {
    /// `location` with the default compression, no Secret, no SSE, no encryption.
    pub fn at(location: store::Location) -> Destination {
        Destination {
            location,
            compression: codec::Compression::default(),
            credentials_secret: None,
            sse: None,
            encryption: None,
        }
    }
}
