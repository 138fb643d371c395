//! The kubectl plugin: flags in, one engine driven, results out.
//!
//! The only room that parses flags or prints. Rooms: `args` (the command line), `verbs` (one
//! file per verb), `drive` (the loop that runs engine passes until the engine's policy says
//! done), `generate` (CRD, manifests, completions), `output` (stdout and stderr) and `retry` (reads
//! of the Kubernetes API tried again when the API server fails them in passing).

mod args;
mod drive;
mod flags;
mod generate;
mod output;
mod retry;
mod verbs;

use std::io::IsTerminal;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, ResourceExt};

use crate::api::{EtcdCluster, KIND};
use crate::error::Error;
use crate::model;

pub use crate::objects::install::DEFAULT_IMAGE as DEFAULT_OPERATOR_IMAGE;
pub use args::{Cli, Verb};
pub use flags::{Global, LogFormat, SecurityFlags, WaitFlags, parse_duration};
pub use generate::{
    CompletionTarget, VERB_TABLE_BEGIN, VERB_TABLE_END, crd, crd_yaml, operator_yaml,
    operator_yaml_with, prometheus_rules_yaml, with_verb_table,
};
pub use output::Format;

/// Runs the parsed command line. Results go to stdout, progress and logs to stderr.
pub async fn run(cli: Cli) -> Result<(), Error> {
    let g = &cli.global;
    match cli.verb {
        Verb::Create(a) => verbs::create::run(g, a).await,
        Verb::Scale(a) => verbs::scale::run(g, a).await,
        Verb::Upgrade(a) => verbs::upgrade::run(g, a).await,
        Verb::Status(a) => verbs::status::run(g, a).await,
        Verb::Reconcile(a) => verbs::reconcile::run(g, a).await,
        Verb::Delete(a) => verbs::delete::run(g, a).await,
        Verb::Operate(a) => verbs::operate::run(g, a).await,
        Verb::Install(a) => verbs::install::run(g, a).await,
        Verb::Crd => output::print_raw(&crd_yaml()),
        Verb::Manifests(a) => output::print_raw(&generate::manifests_yaml(&a)),
        Verb::Completions(a) => output::print_raw(&completions(a.shell)),
        Verb::Backup(a) => verbs::backup::run(g, a).await,
        Verb::Certificate(a) => verbs::certificate::run(g, a).await,
        Verb::RotateCa(a) => verbs::rotate_ca::run(g, a).await,
        Verb::Tls(a) => verbs::tls::run(g, a).await,
        Verb::Adopt(a) => verbs::adopt::run(g, a).await,
        Verb::Restore(a) => verbs::restore::run(g, a).await,
        Verb::Recover(a) => verbs::recover::run(g, a).await,
        Verb::Defrag(a) => verbs::defrag::run(g, a).await,
        Verb::Hibernate(a) => verbs::hibernate::run(g, a).await,
        Verb::Wake(a) => verbs::hibernate::wake(g, a).await,
        Verb::Logs(a) => verbs::logs::run(g, a).await,
        Verb::Report(a) => verbs::report::run(g, a).await,
        Verb::Snapshot { op } => {
            let mut stdout = tokio::io::stdout();
            let said = crate::pod_tools::run(op, tokio::io::stdin(), &mut stdout).await?;
            if let Some(line) = said {
                output::progress_line(&line);
            }
            Ok(())
        }
    }
}

/// Completion script for `target` (the files in completions/ are this output).
pub fn completions(target: CompletionTarget) -> String {
    use clap::CommandFactory;
    generate::completions(target, Cli::command())
}

/// The verb reference of docs/src/verbs.md (every verb and flag; tests/generated.rs keeps it
/// fresh).
pub fn verb_reference() -> String {
    use clap::CommandFactory;
    generate::verb_reference(&Cli::command())
}

/// The README's verb table: one line a verb, linking to `verb_reference`'s sections in the file
/// `reference`.
pub fn verb_summary(reference: &str) -> String {
    use clap::CommandFactory;
    generate::verb_summary(&Cli::command(), reference)
}

/// A Kubernetes client for `config`: kube's own stack (TLS, authentication, impersonation
/// headers, kube's retry of 429/503/504), over TCP connections with Nagle's algorithm off, then
/// [`retry::Transient`]. kube's default connector leaves Nagle on, and a port-forward's
/// WebSocket writes each HTTP/2 frame of an etcd call as a message of its own: the second small
/// write of a call waited for the API server's delayed ACK, 40 ms a call (a `status` of 3 members
/// took 340 ms, 170 ms without). Through a proxy the client is kube's, as built by kube.
fn api_client(config: kube::Config) -> Result<Client, kube::Error> {
    use kube::client::ConfigExt;
    use tower::ServiceBuilder;
    // Retry (a tower Retry needs a service it can clone: a Buffer's handle is one).
    let buffer = tower::buffer::BufferLayer::new(1024);
    let transient = tower::retry::RetryLayer::new(retry::Transient::default());
    if config.proxy_url.is_some() {
        return Ok(kube::client::ClientBuilder::try_from(config)?
            .with_layer(&buffer)
            .with_layer(&transient)
            .build());
    }
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let mut connector =
        hyper_timeout::TimeoutConnector::new(config.rustls_https_connector_with_connector(http)?);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let hyper = hyper_util::client::legacy::Builder::new(hyper_util::rt::TokioExecutor::new())
        .build::<_, kube::client::Body>(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.default_retry.then(|| {
            tower::retry::RetryLayer::new(kube::client::retry::RetryPolicy::server_retry())
        }))
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(tower::BoxError::from)
        .service(hyper);
    Ok(
        kube::client::ClientBuilder::new(service, config.default_namespace.clone())
            .with_layer(&buffer)
            .with_layer(&transient)
            .build(),
    )
}

/// A connected client and the namespace the verb works in (`-n`, else the context's).
struct Session {
    client: Client,
    namespace: String,
    /// How the verb reaches members (`--dial`, else port-forward).
    dial: crate::reach::Dial,
    /// `--allow-foreign-adopt-endpoints`.
    allow_foreign_adopt_endpoints: bool,
    /// `--allow-cluster-issuer`.
    allow_cluster_issuer: bool,
}

impl Session {
    async fn connect(g: &Global) -> Result<Session, Error> {
        crate::phase::timed(crate::phase!("kubeconfig"), Self::connect_untimed(g)).await
    }

    async fn connect_untimed(g: &Global) -> Result<Session, Error> {
        let options = KubeConfigOptions {
            context: g.context.clone(),
            ..Default::default()
        };
        let config_err = |e: kube::config::KubeconfigError| Error::Config(Box::new(e));
        let mut config = match &g.kubeconfig {
            Some(path) => {
                let kc = Kubeconfig::read_from(path).map_err(config_err)?;
                kube::Config::from_custom_kubeconfig(kc, &options)
                    .await
                    .map_err(config_err)?
            }
            None if g.context.is_some() => kube::Config::from_kubeconfig(&options)
                .await
                .map_err(config_err)?,
            None => kube::Config::infer()
                .await
                .map_err(|e| Error::Config(Box::new(e)))?,
        };
        let namespace = g
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        config.connect_timeout = Some(Duration::from_secs(5));
        let client = api_client(config).map_err(|e| Error::Config(Box::new(e)))?;
        Ok(Session {
            client,
            namespace,
            dial: g.dial_or(crate::reach::Dial::PortForward),
            allow_foreign_adopt_endpoints: g.allow_foreign_adopt_endpoints,
            allow_cluster_issuer: g.allow_cluster_issuer,
        })
    }

    /// The engine's context for a pass of this verb.
    fn context(&self) -> crate::engine::Context {
        let mut ctx = crate::engine::Context::new(self.client.clone(), self.dial);
        ctx.allow_foreign_adopt_endpoints = self.allow_foreign_adopt_endpoints;
        ctx.allow_cluster_issuer = self.allow_cluster_issuer;
        ctx
    }

    /// The EtcdCluster CRD is installed (a user without the right to read CRDs goes on).
    async fn ensure_crd(&self) -> Result<(), Error> {
        self.installed_crd().await.map(|_| ())
    }

    /// The EtcdCluster CRD is installed and declares every spec field this binary writes: an
    /// older one would have the API server drop them silently (e.g. `hibernate` exiting 0 with no
    /// pod stopped). The verbs that write a cluster's spec check this before writing.
    async fn ensure_crd_current(&self) -> Result<(), Error> {
        let Some(installed) = self.installed_crd().await? else {
            return Ok(());
        };
        let missing = crate::api::missing_spec_fields(&crd(), &installed);
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Error::CrdStale { missing })
        }
    }

    /// The installed EtcdCluster CRD; `None` when RBAC hides it.
    async fn installed_crd(&self) -> Result<Option<CustomResourceDefinition>, Error> {
        let api: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let name = crd().name_any();
        match api.get_opt(&name).await {
            Ok(Some(c)) => Ok(Some(c)),
            Ok(None) => Err(Error::CrdMissing),
            Err(kube::Error::Api(s)) if s.code == 403 => Ok(None),
            Err(e) => Err(Error::kube("get", "CustomResourceDefinition", "", &name, e)),
        }
    }

    fn clusters(&self) -> Api<EtcdCluster> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    async fn get_cluster(&self, name: &str) -> Result<EtcdCluster, Error> {
        match self.clusters().get_opt(name).await {
            Ok(Some(c)) => Ok(c),
            Ok(None) => Err(Error::NotFound {
                namespace: self.namespace.clone(),
                name: name.into(),
            }),
            Err(e) => Err(Error::kube("get", KIND, &self.namespace, name, e)),
        }
    }

    /// `cluster`'s spec validated, or `Error::InvalidSpec` naming the cluster `name` in this
    /// session's namespace: the one mapping of an invalid spec the verbs share.
    fn validate(&self, name: &str, cluster: &EtcdCluster) -> Result<model::Desired, Error> {
        model::validate(cluster).map_err(|source| Error::InvalidSpec {
            namespace: self.namespace.clone(),
            name: name.to_string(),
            source,
        })
    }

    /// The cluster `name`, read, and its spec validated (`validate`): where a verb on an existing
    /// cluster starts.
    async fn load_cluster(&self, name: &str) -> Result<(EtcdCluster, model::Desired), Error> {
        let cluster = self.get_cluster(name).await?;
        let d = self.validate(name, &cluster)?;
        Ok((cluster, d))
    }

    /// The cluster, or `None` when RBAC hides it: verbs that only read (`logs`, `report`) go on
    /// with what the user may read. A cluster that does not exist is still an error.
    async fn get_cluster_if_readable(&self, name: &str) -> Result<Option<EtcdCluster>, Error> {
        match self.get_cluster(name).await {
            Ok(c) => Ok(Some(c)),
            Err(e) if e.exit_code() == crate::error::exit::FORBIDDEN => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Every Secret a new cluster names exists: each TLS one holds `tls.crt`, `tls.key` and `ca.crt`
/// (the client one a usable client certificate), the user one `username` and `password`.
/// Checked before anything is written (a missing Secret would leave the member pods waiting
/// for their volumes).
async fn check_secrets(s: &Session, name: &str, d: &model::Desired) -> Result<(), Error> {
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(s.client.clone(), &s.namespace);
    let mut named: Vec<(&str, &str)> = Vec::new();
    // Managed TLS's Secrets are the engine's to write, certManager's cert-manager's.
    let byo = d.pki.is_none() && d.cert_manager.is_none();
    if let Some(cm) = &d.cert_manager {
        check_issuer(s, name, cm).await?;
    }
    if let Some(c) = d.tls.client.as_ref().filter(|_| byo) {
        named.push(("spec.tls.serverSecret", &c.server_secret));
        named.push(("spec.tls.clientSecret", &c.client_secret));
    }
    if let Some(p) = d.tls.peer_secret.as_ref().filter(|_| byo) {
        named.push(("spec.tls.peerSecret", p));
    }
    if let Some(a) = &d.auth_secret {
        named.push(("spec.auth.userSecret", a));
    }
    for (field, secret) in named {
        let bad = |why: String| {
            usage(
                name,
                model::InvalidSpec {
                    field,
                    message: why,
                },
            )
        };
        let found = secrets
            .get_opt(secret)
            .await
            .map_err(|e| Error::kube("get", "Secret", &s.namespace, secret, e))?
            .ok_or_else(|| {
                let example = if field == "spec.auth.userSecret" {
                    "--from-literal=username=root --from-literal=password=..."
                } else {
                    "--from-file=tls.crt --from-file=tls.key --from-file=ca.crt"
                };
                bad(format!(
                    "Secret {}/{secret} does not exist; create it first, e.g. \
                     `kubectl -n {} create secret generic {secret} {example}`",
                    s.namespace, s.namespace
                ))
            })?;
        if field == "spec.auth.userSecret" {
            crate::objects::user_credentials(&found)
                .map_err(|why| bad(format!("Secret {}/{secret} {why}", s.namespace)))?;
            continue;
        }
        let files = crate::objects::tls_files(&found)
            .map_err(|why| bad(format!("Secret {}/{secret} {why}", s.namespace)))?;
        if field == "spec.tls.clientSecret" {
            crate::etcd::TlsDial::new(&files.ca, &files.cert, &files.key, "member.invalid")
                .map_err(|e| bad(format!("Secret {}/{secret}: {e}", s.namespace)))?;
        }
    }
    check_pull_secrets(&secrets, name, d).await?;
    warn_of_a_missing_storage_class(s, name, d).await;
    Ok(())
}

/// Says on stderr when the StorageClass the member volumes name does not exist: their claims
/// would stay Pending (unless PersistentVolumes of that class are made by hand, so this is no
/// refusal). Says nothing where StorageClasses may not be read.
async fn warn_of_a_missing_storage_class(s: &Session, name: &str, d: &model::Desired) {
    let model::Storage::Volume {
        class: Some(class), ..
    } = &d.storage
    else {
        return;
    };
    let api: Api<k8s_openapi::api::storage::v1::StorageClass> = Api::all(s.client.clone());
    if let Ok(None) = api.get_opt(class).await {
        output::progress_line(&format!(
            "warning: StorageClass {class} does not exist: the volumes of EtcdCluster {name} stay \
             Pending unless PersistentVolumes of that class are made by hand (`kubectl get \
             storageclass` lists the classes)"
        ));
    }
}

/// Each Secret of `spec.imagePullSecrets` exists and holds registry credentials (the kubelet
/// skips one that does not, and the pods then wait on an image pull that is refused).
async fn check_pull_secrets(
    secrets: &Api<k8s_openapi::api::core::v1::Secret>,
    name: &str,
    d: &model::Desired,
) -> Result<(), Error> {
    for secret in &d.image_pull_secrets {
        match pull_secret(secrets, &d.namespace, secret).await? {
            PullSecret::Usable => {}
            PullSecret::Missing(message) | PullSecret::WrongType(message) => {
                return Err(usage(
                    name,
                    model::InvalidSpec {
                        field: "spec.imagePullSecrets",
                        message,
                    },
                ));
            }
        }
    }
    Ok(())
}

/// Whether the kubelet can pull with a Secret, and if not, why and how to make it.
pub(crate) enum PullSecret {
    Usable,
    Missing(String),
    WrongType(String),
}

/// Reads Secret `ns/secret` (of `secrets`) as an image pull Secret.
pub(crate) async fn pull_secret(
    secrets: &Api<k8s_openapi::api::core::v1::Secret>,
    ns: &str,
    secret: &str,
) -> Result<PullSecret, Error> {
    const TYPES: [&str; 2] = ["kubernetes.io/dockerconfigjson", "kubernetes.io/dockercfg"];
    let Some(found) = secrets
        .get_opt(secret)
        .await
        .map_err(|e| Error::kube("get", "Secret", ns, secret, e))?
    else {
        return Ok(PullSecret::Missing(format!(
            "Secret {ns}/{secret} does not exist; create it first, e.g. `kubectl -n {ns} \
             create secret docker-registry {secret} --docker-server=REGISTRY \
             --docker-username=USER --docker-password=PASSWORD`"
        )));
    };
    let kind = found.type_.unwrap_or_default();
    if !TYPES.contains(&kind.as_str()) {
        return Ok(PullSecret::WrongType(format!(
            "Secret {ns}/{secret} is of type {kind:?}, not kubernetes.io/dockerconfigjson: \
             the kubelet would not pull with it; make it with `kubectl -n {ns} create secret \
             docker-registry {secret} …`"
        )));
    }
    Ok(PullSecret::Usable)
}

/// Mode certManager: a ClusterIssuer only with `--allow-cluster-issuer`, the cluster serves
/// cert-manager's Certificate, and the issuer of
/// `spec.tls.issuerRef` exists (a cert-manager.io one; not checked where the user may not read
/// issuers, or for an external issuer's group).
async fn check_issuer(
    s: &Session,
    name: &str,
    cm: &model::pki::CertManagerTls,
) -> Result<(), Error> {
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
    let bad = |field, message: String| usage(name, model::InvalidSpec { field, message });
    let leave = model::pki::CertManagerTls {
        cluster_issuer_allowed: s.allow_cluster_issuer,
        ..cm.clone()
    };
    if let Some(why) = leave.refusal(&s.namespace, name) {
        return Err(bad("spec.tls.issuerRef.kind", why));
    }
    let certs: Api<crate::objects::cert_manager::Certificate> =
        Api::namespaced(s.client.clone(), &s.namespace);
    match certs.list_metadata(&ListParams::default().limit(1)).await {
        Err(kube::Error::Api(e)) if e.code == 404 => {
            return Err(bad(
                "spec.tls.mode",
                "certManager needs cert-manager, and this cluster serves no Certificate \
                 (cert-manager.io/v1): install cert-manager first, or use --tls managed (the \
                 engine's own CA)"
                    .into(),
            ));
        }
        Err(kube::Error::Api(e)) if e.code == 403 => return Ok(()),
        Err(e) => return Err(Error::kube("list", "Certificate", &s.namespace, "", e)),
        Ok(_) => {}
    }
    if cm.issuer_group != "cert-manager.io" {
        return Ok(());
    }
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "cert-manager.io",
        "v1",
        &cm.issuer_kind,
    ));
    let (api, place): (Api<DynamicObject>, String) = if cm.issuer_kind == "ClusterIssuer" {
        (Api::all_with(s.client.clone(), &ar), cm.issuer_name.clone())
    } else {
        (
            Api::namespaced_with(s.client.clone(), &s.namespace, &ar),
            format!("{}/{}", s.namespace, cm.issuer_name),
        )
    };
    match api.get_opt(&cm.issuer_name).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(bad(
            "spec.tls.issuerRef",
            format!(
                "{} {place} does not exist; create a CA issuer first (cert-manager's `spec.ca` \
                 with the CA's Secret), or name another one with --tls-issuer",
                cm.issuer_kind
            ),
        )),
        Err(kube::Error::Api(e)) if e.code == 403 => Ok(()),
        Err(e) => Err(Error::kube(
            "get",
            "Issuer",
            &s.namespace,
            &cm.issuer_name,
            e,
        )),
    }
}

fn usage(name: &str, e: model::InvalidSpec) -> Error {
    Error::Usage(format!("EtcdCluster {name}: {e}"))
}

/// True when stderr is a terminal (progress bars) — and false in CI.
pub fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn delete_data_needs_an_explicit_yes() {
        let cli = Cli::try_parse_from(["kubectl-etcd", "delete", "demo", "--delete-data"]).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = rt.block_on(run(cli)).unwrap_err();
        assert_eq!(err.exit_code(), crate::error::exit::USAGE);
        assert!(err.to_string().contains("--yes"));
    }
}
