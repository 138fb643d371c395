//! The TLS part of an adoption's survey, its I/O: the Secrets the flags name and the certificates
//! the old members present (through a port-forward), handed to `certs`' pure checks.

use kube::api::Api;

use super::{Args, certs};
use crate::cli::Session;
use crate::error::Error;
use crate::model::ClusterView;
use crate::objects;

/// The TLS part of the survey: the new members' TLS flags against the old cluster's schemes,
/// then the new Secrets against the certificates an old member presents (`certs`).
pub(super) async fn tls_refusals(
    s: &Session,
    a: &Args,
    c: &ClusterView,
    endpoints: &[String],
    service: Option<&str>,
) -> Result<Vec<String>, Error> {
    let ns = &s.namespace;
    let f = &a.security;
    let domain = a.domain.domain();
    let pattern = format!(
        "*.{}.{ns}.svc.{domain}",
        objects::peer_service_name(&a.name),
    );
    let why = certs::scheme_refusals(
        c,
        endpoints,
        f.tls_peer_secret.as_deref(),
        f.tls_server_secret.is_some(),
        service,
        &pattern,
    );
    if !why.is_empty() {
        return Ok(why);
    }
    let new_hosts: Vec<String> = (0..endpoints.len() as u32)
        .map(|k| objects::member_host(&a.name, ns, &domain, k))
        .collect();
    let now = rustls::pki_types::UnixTime::now();
    let mut why = Vec::new();
    let old_peer = c
        .members
        .iter()
        .find(|m| m.peer_url.starts_with("https://"));
    if let (Some(secret), Some(m)) = (&f.tls_peer_secret, old_peer) {
        let files = secret_files(s, secret, "--tls-peer-secret").await?;
        match (files, presented(s, &m.name, &m.peer_url).await) {
            (Ok(files), Ok(old)) => why.extend(certs::peer_refusals(
                &certs::Named {
                    label: format!("Secret {ns}/{secret} (--tls-peer-secret)"),
                    files: &files,
                },
                &old,
                &new_hosts,
                &pattern,
                now,
            )),
            (Err(e), _) | (_, Err(e)) => why.push(e),
        }
    }
    let old_client = endpoints.iter().find(|e| e.starts_with("https://"));
    if let (Some(server), Some(client), Some(url)) =
        (&f.tls_server_secret, &a.tls_secret, old_client)
    {
        let files = (
            secret_files(s, server, "--tls-server-secret").await?,
            secret_files(s, client, "--tls-secret").await?,
        );
        let member = crate::reach::pod_of_url(url).map_or_else(|| url.clone(), |(p, _)| p);
        match (files, presented(s, &member, url).await) {
            ((Ok(server_files), Ok(client_files)), Ok(old)) => {
                why.extend(certs::client_refusals(
                    &certs::Named {
                        label: format!("Secret {ns}/{server} (--tls-server-secret)"),
                        files: &server_files,
                    },
                    &certs::Named {
                        label: format!("Secret {ns}/{client} (--tls-secret)"),
                        files: &client_files,
                    },
                    &old,
                    &new_hosts,
                    &service
                        .map(|svc| certs::service_hosts(svc, ns, &domain))
                        .unwrap_or_default(),
                    now,
                ));
            }
            ((Err(e), _) | (_, Err(e)), _) | (_, Err(e)) => why.push(e),
        }
    }
    Ok(why)
}

/// `tls.crt`, `tls.key` and `ca.crt` of Secret `name` (given as `flag`), or the refusal.
async fn secret_files(
    s: &Session,
    name: &str,
    flag: &str,
) -> Result<Result<objects::TlsFiles, String>, Error> {
    let ns = &s.namespace;
    let api: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(s.client.clone(), ns);
    let found = api
        .get_opt(name)
        .await
        .map_err(|e| Error::kube("get", "Secret", ns, name, e))?;
    Ok(match found {
        None => Err(format!(
            "Secret {ns}/{name} ({flag}) does not exist: create it first, e.g. `kubectl -n {ns} \
             create secret generic {name} --from-file=tls.crt --from-file=tls.key \
             --from-file=ca.crt`"
        )),
        Some(found) => {
            objects::tls_files(&found).map_err(|why| format!("Secret {ns}/{name} ({flag}) {why}"))
        }
    })
}

/// What old member `member` presents at `url` (its peer or client URL), through a port-forward
/// to the pod the URL names; the refusal when it cannot be read.
async fn presented(s: &Session, member: &str, url: &str) -> Result<certs::Presented, String> {
    let host = crate::reach::host_of_url(url);
    let Some((pod, port)) = crate::reach::pod_of_url(url) else {
        return Err(format!(
            "{member} advertises {url}, which names no pod to read its certificate through"
        ));
    };
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(s.client.clone(), &s.namespace);
    let chain = certs::presented_chain(&pods, &pod, port, &host, crate::reach::CONNECT_TIMEOUT)
        .await
        .map_err(|e| format!("the certificate {member} presents at {url} cannot be read: {e}"))?;
    Ok(certs::Presented {
        member: member.to_string(),
        host,
        chain,
    })
}
