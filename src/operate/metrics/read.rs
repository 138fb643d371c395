//! The one file of this folder that reaches the API server: after a pass it reads (GET, never
//! writes) the TLS Secrets the cluster's `spec.tls` names, at most once per `certs::REFRESH`, for
//! their certificates' expiry. A scrape never gets here.

use std::time::Instant;

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};

use super::certs::{self, Certificate};
use super::{ClusterLabels, Metrics};
use crate::model::Desired;

/// Reads the certificates of `d`'s TLS Secrets when they are due and records them.
pub async fn refresh_certificates(
    metrics: &Metrics,
    client: &Client,
    cluster: &ClusterLabels,
    d: &Desired,
) {
    if metrics.certificates_due(cluster, Instant::now()) {
        let read = certificates(client, d).await;
        metrics.certificates(cluster, &read);
    }
}

/// The certificates of the Secrets `spec.tls` names. What cannot be read (a Secret missing, a
/// key that holds no certificate) is left out: the engine reports a missing Secret itself.
async fn certificates(client: &Client, d: &Desired) -> Vec<Certificate> {
    let api: Api<Secret> = Api::namespaced(client.clone(), &d.namespace);
    let mut out = Vec::new();
    for secret in certs::tls_secrets(&d.tls) {
        let found = match api.get_opt(&secret).await {
            Ok(Some(s)) => s,
            Ok(None) => continue,
            Err(e) => {
                tracing::debug!(cluster = %d.name, namespace = %d.namespace, "reading Secret {secret} for its certificates: {e}");
                continue;
            }
        };
        let data = found.data.unwrap_or_default();
        for key in certs::KEYS {
            let Some(pem) = data.get(key) else { continue };
            match certs::earliest_not_after(&pem.0) {
                Ok(not_after) => out.push(Certificate {
                    secret: secret.clone(),
                    key,
                    not_after,
                }),
                Err(e) => {
                    tracing::debug!(cluster = %d.name, namespace = %d.namespace, "Secret {secret} key {key}: {e}")
                }
            }
        }
    }
    out
}
