//! Certificate expiry per cluster: the `notAfter` of the certificates in the TLS Secrets that
//! `spec.tls` names (bring-your-own: the engine mounts them, nobody renews them), as Unix time,
//! labelled with the Secret and its key (`tls.crt`, `ca.crt`). Pure: `read.rs` fetches the
//! Secrets. Parsing takes PEM through rustls' pki-types (as the TLS dialer does) and then the
//! few DER elements of an X.509 certificate up to its validity (`crate::pki::der`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::{ClusterLabels, Metrics, Seen, family};
use crate::model::Tls;
use crate::objects::tls_key;
pub use crate::pki::der::not_after;

/// The keys of a TLS Secret whose certificates are reported (the key itself is no certificate).
pub const KEYS: [&str; 2] = [tls_key::CERT, tls_key::CA];
/// How often the Secrets of one cluster are read again (a renewal shows within this; the alert
/// speaks of days).
pub const REFRESH: Duration = Duration::from_secs(300);

/// The Secrets `spec.tls` names, each once (one Secret may serve more than one role).
pub fn tls_secrets(t: &Tls) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let named = t
        .client
        .iter()
        .flat_map(|c| [&c.server_secret, &c.client_secret])
        .chain(t.peer_secret.as_ref());
    for n in named {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    names
}

/// One certificate (the earliest to expire of a Secret key's chain or bundle).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificate {
    pub secret: String,
    pub key: &'static str,
    /// `notAfter` as Unix time (seconds).
    pub not_after: i64,
}

/// The earliest `notAfter` among the PEM certificates of `pem` (a chain or a CA bundle: the one
/// that expires first is the one that breaks).
pub fn earliest_not_after(pem: &[u8]) -> Result<i64, String> {
    let mut earliest: Option<i64> = None;
    for der in CertificateDer::pem_slice_iter(pem) {
        let der = der.map_err(|e| format!("not PEM: {e}"))?;
        let t = not_after(&der).ok_or("a certificate whose validity cannot be read")?;
        earliest = Some(earliest.map_or(t, |e| e.min(t)));
    }
    earliest.ok_or_else(|| "no PEM certificate".to_string())
}

/// One certificate of one cluster: the Secret and its key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CertLabels {
    namespace: String,
    name: String,
    secret: String,
    key: String,
}

/// The family of this file.
pub(super) struct Certs {
    expiration: Family<CertLabels, Gauge>,
}

fn labels(cluster: &ClusterLabels, secret: &str, key: &str) -> CertLabels {
    CertLabels {
        namespace: cluster.namespace.clone(),
        name: cluster.name.clone(),
        secret: secret.into(),
        key: key.into(),
    }
}

impl Certs {
    pub(super) fn register(r: &mut Registry) -> Certs {
        Certs {
            expiration: family(
                r,
                "certificate_expiration_timestamp",
                "When a certificate of the cluster's TLS Secrets (spec.tls) expires (notAfter; the earliest of a chain or bundle), as Unix time",
                Some(Unit::Seconds),
            ),
        }
    }

    /// Drops the label sets of a deleted cluster.
    pub(super) fn forget(&self, cluster: &ClusterLabels, seen: &Seen) {
        for (secret, key) in &seen.certs {
            self.expiration.remove(&labels(cluster, secret, key));
        }
    }
}

impl Metrics {
    /// Whether the certificates of `cluster` are due to be read (first time, or `REFRESH` after
    /// the last read); a `true` counts as this read.
    pub fn certificates_due(&self, cluster: &ClusterLabels, now: Instant) -> bool {
        self.seen(cluster, |s| {
            let due = s
                .certs_read
                .is_none_or(|at| now.saturating_duration_since(at) >= REFRESH);
            if due {
                s.certs_read = Some(now);
            }
            due
        })
    }

    /// Records the certificates read of `cluster` (those no longer there lose their series).
    pub fn certificates(&self, cluster: &ClusterLabels, certs: &[Certificate]) {
        let now: BTreeSet<(String, String)> = certs
            .iter()
            .map(|c| (c.secret.clone(), c.key.to_string()))
            .collect();
        let before = self.seen(cluster, |s| std::mem::replace(&mut s.certs, now.clone()));
        for (secret, key) in before.difference(&now) {
            self.certs.expiration.remove(&labels(cluster, secret, key));
        }
        for c in certs {
            self.certs
                .expiration
                .get_or_create(&labels(cluster, &c.secret, c.key))
                .set(c.not_after);
        }
    }
}
