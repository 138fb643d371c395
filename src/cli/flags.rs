//! The flags every verb takes (`Global`) and the ones verbs that drive a cluster share.

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::output::Format;

#[derive(Args, Debug, Clone)]
pub struct Global {
    /// Namespace of the cluster (default: the kubeconfig context's namespace, else "default").
    #[arg(short = 'n', long, global = true, env = "KUBECTL_ETCD_NAMESPACE")]
    pub namespace: Option<String>,
    /// kubeconfig context to use.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, global = true)]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// Output format of results on stdout.
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// More log output on stderr (-v info, -vv debug).
    #[arg(short = 'v', long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// How to reach etcd members: port-forward through the API server (the default, and the
    /// only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster's
    /// network: a pod of the cluster's namespace, which its NetworkPolicy admits; the bytes of a
    /// backup then skip the API server). `operate` in a pod dials direct unless told otherwise.
    #[arg(long, global = true, value_enum, env = "KUBECTL_ETCD_DIAL")]
    pub dial: Option<DialArg>,
    /// Let `spec.adopt.endpoints` name members outside the EtcdCluster's namespace (another
    /// namespace's pods, short or external names, IPs of no pod of the namespace). Off by
    /// default: whoever may write an EtcdCluster could otherwise take over any etcd the driver
    /// reaches. For the operator: `operate --allow-foreign-adopt-endpoints`.
    #[arg(
        long,
        global = true,
        env = "KUBECTL_ETCD_ALLOW_FOREIGN_ADOPT_ENDPOINTS"
    )]
    pub allow_foreign_adopt_endpoints: bool,
    /// Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs
    /// for every namespace, so every cluster it signs for accepts the others' certificates. For
    /// the operator: `operate --allow-cluster-issuer`.
    #[arg(long, global = true, env = "KUBECTL_ETCD_ALLOW_CLUSTER_ISSUER")]
    pub allow_cluster_issuer: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialArg {
    Direct,
    PortForward,
}

impl Global {
    /// How a verb reaches members: as `--dial` says, else by port-forward (`operate` decides
    /// its own default from where it runs).
    pub fn dial_or(&self, default: crate::reach::Dial) -> crate::reach::Dial {
        match self.dial {
            Some(DialArg::Direct) => crate::reach::Dial::Direct,
            Some(DialArg::PortForward) => crate::reach::Dial::PortForward,
            None => default,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// How clients reach a new cluster (`spec.clientService.type`).
#[derive(Args, Debug, Clone, Default)]
pub struct ServiceFlag {
    /// The client Service's type: ClusterIP (the default: clients inside the cluster), NodePort
    /// or LoadBalancer (clients outside it; the cluster's NetworkPolicy then admits the client
    /// port from anywhere). Labels, annotations and source ranges: spec.clientService.
    #[arg(long, value_name = "TYPE", value_parser = ["ClusterIP", "NodePort", "LoadBalancer"])]
    pub service_type: Option<String>,
}

impl ServiceFlag {
    /// `spec.clientService` (none for the default, ClusterIP).
    pub fn spec(&self) -> Option<crate::api::ClientServiceSpec> {
        use crate::api::ClientServiceType;
        let type_ = match self.service_type.as_deref()? {
            "NodePort" => ClientServiceType::NodePort,
            "LoadBalancer" => ClientServiceType::LoadBalancer,
            _ => return None,
        };
        Some(crate::api::ClientServiceSpec {
            type_: Some(type_),
            ..Default::default()
        })
    }
}

/// The cluster DNS domain of a new cluster's members (`spec.clusterDomain`).
#[derive(Args, Debug, Clone, Default)]
pub struct DomainFlag {
    /// The Kubernetes cluster's DNS domain (the kubelet's clusterDomain), which the members'
    /// names end in (default cluster.local); fixed once the cluster exists.
    #[arg(long, env = "KUBECTL_ETCD_CLUSTER_DOMAIN", value_name = "DOMAIN")]
    pub cluster_domain: Option<String>,
}

impl DomainFlag {
    /// The domain, once `spec` has checked it (`cluster.local` when not given).
    pub fn domain(&self) -> String {
        crate::model::validate_cluster_domain(self.cluster_domain.as_deref())
            .unwrap_or_else(|_| crate::objects::DEFAULT_CLUSTER_DOMAIN.into())
    }

    /// The domain checked (a usage error naming the cluster when it is no DNS domain), and
    /// what the spec says: `None` for the default.
    pub fn spec(&self, cluster: &str) -> Result<Option<String>, crate::error::Error> {
        let domain = crate::model::validate_cluster_domain(self.cluster_domain.as_deref())
            .map_err(|e| super::usage(cluster, e))?;
        Ok((domain != crate::objects::DEFAULT_CLUSTER_DOMAIN).then_some(domain))
    }
}

/// Where a new cluster's images come from (`spec.imageRepository`, `spec.imagePullSecrets`).
#[derive(Args, Debug, Clone, Default)]
pub struct ImageFlags {
    /// Image repository of etcd (tag is v<version>), e.g. a mirror in your own registry.
    #[arg(long)]
    pub image_repository: Option<String>,
    /// Secret (type kubernetes.io/dockerconfigjson, the cluster's namespace) the kubelet pulls
    /// the member and restore pods' images with, for a registry that wants credentials
    /// (repeatable).
    #[arg(long = "image-pull-secret", value_name = "SECRET")]
    pub image_pull_secrets: Vec<String>,
}

impl ImageFlags {
    /// `spec.imagePullSecrets` (None without any).
    pub fn pull_secrets(&self) -> Option<Vec<k8s_openapi::api::core::v1::LocalObjectReference>> {
        crate::objects::pull_secret_refs(&self.image_pull_secrets)
    }
}

#[derive(Args, Debug, Clone)]
pub struct WaitFlags {
    /// Return once the intent is written, without waiting for convergence.
    #[arg(long)]
    pub no_wait: bool,
    /// Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Print the steps the engine would take and the objects it would write; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// TLS of a new cluster (`spec.tls`: Secrets in its namespace with `tls.crt`, `tls.key` and
/// `ca.crt`, fixed once the cluster exists) and its etcd user (`spec.auth`).
#[derive(Args, Debug, Clone, Default)]
pub struct SecurityFlags {
    /// TLS of client and peer traffic: `managed` (the engine runs a CA of the cluster's own and
    /// issues and renews every certificate; `kubectl etcd certificate` issues clients theirs),
    /// `cert-manager` (cert-manager issues and renews them: --tls-issuer), `secrets` (the
    /// --tls-*-secret flags), or `none` (plain http, as --insecure). Default: secrets when a
    /// --tls-*-secret flag is given, cert-manager with --tls-issuer, else managed (adopt: plain
    /// http, what the old members speak).
    #[arg(long, value_enum, conflicts_with = "insecure")]
    pub tls: Option<TlsMode>,
    /// Plain http for clients and peers (`spec.tls.mode: none`): anyone who reaches the pods
    /// reads and writes every key. Warned about; the `InsecureTransport` condition says so.
    #[arg(long, conflicts_with_all = ["tls_server_secret", "tls_client_secret", "tls_peer_secret"])]
    pub insecure: bool,
    /// With --tls managed or cert-manager: lifetime of the server, peer and client
    /// certificates (default 90 days, at least 5m; cert-manager: 1h); each is renewed at two
    /// thirds of it.
    #[arg(long, value_name = "DURATION")]
    pub certificate_lifetime: Option<String>,
    /// cert-manager issues the certificates (`--tls cert-manager`): the name of a CA Issuer in
    /// the cluster's namespace (or a ClusterIssuer, --tls-issuer-kind) that signs the server,
    /// peer and client certificates alike.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["insecure", "tls_server_secret", "tls_client_secret", "tls_peer_secret"])]
    pub tls_issuer: Option<String>,
    /// The kind of --tls-issuer: Issuer (default) or ClusterIssuer.
    #[arg(long, value_name = "KIND", requires = "tls_issuer", value_parser = ["Issuer", "ClusterIssuer"])]
    pub tls_issuer_kind: Option<String>,
    /// Secret with the members' serving certificate: the client port speaks https and takes
    /// only client certificates signed by its ca.crt (needs --tls-client-secret).
    #[arg(long, requires = "tls_client_secret")]
    pub tls_server_secret: Option<String>,
    /// Secret with the client certificate the engine, the readiness probe and backups present
    /// (needs --tls-server-secret).
    #[arg(long, requires = "tls_server_secret")]
    pub tls_client_secret: Option<String>,
    /// Secret with the members' peer certificate (mutual TLS between members).
    #[arg(long)]
    pub tls_peer_secret: Option<String>,
    /// Client TLS without peer TLS: raft between the members in the clear
    /// (`spec.tls.plainPeers`); a new cluster with --tls-server-secret and --tls-client-secret
    /// but no --tls-peer-secret is refused without it.
    #[arg(
        long,
        requires = "tls_client_secret",
        conflicts_with = "tls_peer_secret"
    )]
    pub plain_peers: bool,
    /// Secret with the username and password (keys `username`, `password`) of an etcd user with
    /// the root role: the engine, the readiness probe and backups authenticate as it once etcd's
    /// authentication is enabled.
    #[arg(long)]
    pub auth_secret: Option<String>,
    /// etcd's authentication by client certificate (`spec.tls.etcdAuth`, modes managed and
    /// cert-manager): each certificate's CN is its etcd user, the engine's own is the cluster's
    /// (kubectl-etcd:NAMESPACE:NAME, role root), and `kubectl etcd certificate --user U` gives U
    /// a role. `create`'s default: on for etcd 3.5
    /// and later (off for 3.4, which etcd cannot upgrade to 3.5 with it on); `restore` and
    /// `adopt`: off.
    #[arg(long, value_name = "on|off", value_parser = ["on", "off"])]
    pub etcd_auth: Option<String>,
}

impl SecurityFlags {
    pub fn auth(&self) -> Option<crate::api::AuthSpec> {
        self.auth_secret
            .clone()
            .map(|user_secret| crate::api::AuthSpec { user_secret })
    }

    /// `spec.tls` as the flags ask for it, the mode written out (`validate` checks the rest:
    /// `--tls managed` with a Secret flag, or `--tls secrets` without one, is refused there).
    /// Without a TLS flag: `unset` (`create` and `restore`: managed, a new cluster is secure by
    /// default), or no `spec.tls` at all when `unset` is `None` (`adopt`: the model's default,
    /// what the old members speak).
    pub fn spec(&self, unset: Option<TlsMode>) -> Option<crate::api::TlsSpec> {
        let names_secrets = self.tls_server_secret.is_some()
            || self.tls_client_secret.is_some()
            || self.tls_peer_secret.is_some();
        let mode = match (self.tls, self.insecure) {
            (Some(m), _) => m,
            (None, true) => TlsMode::None,
            (None, false) if names_secrets => TlsMode::Secrets,
            (None, false) if self.tls_issuer.is_some() => TlsMode::CertManager,
            (None, false) if self.certificate_lifetime.is_some() => TlsMode::Managed,
            (None, false) => unset?,
        };
        Some(crate::api::TlsSpec {
            mode: Some(mode.as_str().into()),
            certificate_lifetime: self.certificate_lifetime.clone(),
            server_secret: self.tls_server_secret.clone(),
            client_secret: self.tls_client_secret.clone(),
            peer_secret: self.tls_peer_secret.clone(),
            plain_peers: self.plain_peers,
            issuer_ref: self.tls_issuer.clone().map(|name| crate::api::IssuerRef {
                name,
                kind: self.tls_issuer_kind.clone(),
                group: None,
            }),
            etcd_auth: self.etcd_auth.as_deref() == Some("on"),
            ..Default::default()
        })
    }

    /// `--auth-secret` with `--etcd-auth on` cannot work: the certificate's passwordless root and
    /// the Secret's password user would both be the cluster's root (the engine made the first,
    /// then authenticated as the second, and never converged).
    pub fn check_auth(&self) -> Result<(), String> {
        match (&self.auth_secret, self.etcd_auth.as_deref()) {
            (Some(s), Some("on")) => Err(format!(
                "--auth-secret {s} and --etcd-auth on cannot go together (a password root and a \
                 certificate root); leave out --etcd-auth on to keep the password user, or \
                 --auth-secret to have certificates authenticate"
            )),
            _ => Ok(()),
        }
    }

    /// `spec.tls` of a new cluster of `version` (`create`): as `spec`, with etcd's
    /// authentication on by default where `model::etcd_auth_by_default` says so.
    pub fn new_cluster_spec(&self, version: crate::model::Version) -> Option<crate::api::TlsSpec> {
        let mut tls = self.spec(Some(TlsMode::Managed));
        // A password user (`--auth-secret`) is the cluster's root: no passwordless root beside it.
        if let Some(t) = tls.as_mut()
            && self.etcd_auth.is_none()
            && self.auth_secret.is_none()
        {
            t.etcd_auth = crate::model::etcd_auth_by_default(Some(t), version);
        }
        tls
    }
}

/// `--tls`: `spec.tls.mode`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsMode {
    Managed,
    CertManager,
    Secrets,
    None,
}

impl TlsMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TlsMode::Managed => "managed",
            TlsMode::CertManager => "certManager",
            TlsMode::Secrets => "secrets",
            TlsMode::None => "none",
        }
    }
}

/// "90s", "5m", "1h 30m", "1500ms" (humantime's forms) or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse()
            .map(Duration::from_secs)
            .map_err(|_| format!("{s:?} is too large a number of seconds"));
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("{s:?} is not a duration ({e}); use e.g. 90s, 5m or 1h"))
}

/// A Secret's name (an RFC 1123 subdomain, what Kubernetes accepts for a Secret).
pub fn parse_secret_name(s: &str) -> Result<String, String> {
    match crate::model::is_dns_subdomain(s) {
        true => Ok(s.to_string()),
        false => Err(format!(
            "{s:?} is not a Secret name; use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
        )),
    }
}

/// What the installed operator lets specs set beyond the defaults, given to its `operate` and
/// to the admission policy on EtcdClusters alike (`objects::admission::spec`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AllowArgs {
    /// Let `spec.etcd.options` set this etcd flag besides the tuning flags (repeatable, or
    /// comma-separated), in the operator's passes and at the API server (admission policy).
    /// Example: --allow-etcd-option enable-pprof
    #[arg(long, value_delimiter = ',', value_name = "NAME", value_parser = crate::objects::admission::spec::parse_allowed)]
    pub allow_etcd_option: Vec<String>,
    /// Let `spec.imageRepository` and the tools images name images under this prefix besides
    /// gcr.io/etcd-development/etcd and ghcr.io/kubectl-etcd/kubectl-etcd (repeatable, or
    /// comma-separated; `registry.example/` takes all of that registry), in the operator's
    /// passes and at the API server (admission policy).
    /// Example: --allow-image-prefix registry.example/mirror/
    #[arg(long, value_delimiter = ',', value_name = "PREFIX", value_parser = crate::objects::admission::spec::parse_allowed)]
    pub allow_image_prefix: Vec<String>,
}

impl AllowArgs {
    pub fn allowed(&self) -> crate::objects::admission::spec::Allowed {
        crate::objects::admission::spec::Allowed {
            etcd_options: self.allow_etcd_option.clone(),
            image_prefixes: self.allow_image_prefix.clone(),
        }
    }
}

/// A namespace name (an RFC 1123 label: what Kubernetes accepts for a Namespace).
pub fn parse_namespace(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric());
    match ok {
        true => Ok(s.to_string()),
        false => Err(format!(
            "{s:?} is not a namespace name; use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit"
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn create_refuses_a_password_root_beside_certificate_authentication() {
        use clap::Parser;
        let security = |args: &[&str]| {
            let all = [
                &["kubectl-etcd", "create", "demo", "--version", "3.6.16"],
                args,
            ]
            .concat();
            let cli = crate::cli::Cli::try_parse_from(all).unwrap();
            let crate::cli::Verb::Create(a) = cli.verb else {
                panic!("not create")
            };
            a.security
        };
        let both = security(&["--auth-secret", "root-pw", "--etcd-auth", "on"]);
        let why = both.check_auth().unwrap_err();
        assert!(
            why.contains("--auth-secret root-pw")
                && why.contains("--etcd-auth on")
                && why.contains("leave out"),
            "{why}"
        );
        security(&["--auth-secret", "root-pw"])
            .check_auth()
            .unwrap();
        security(&["--auth-secret", "root-pw", "--etcd-auth", "off"])
            .check_auth()
            .unwrap();
        security(&["--etcd-auth", "on"]).check_auth().unwrap();
    }

    use super::*;

    #[test]
    fn namespace_names_are_rfc_1123_labels() {
        assert_eq!(parse_namespace("team-a1").unwrap(), "team-a1");
        for bad in ["", "Ops", "-ops", "ops-", "a.b", &"x".repeat(64)] {
            assert!(parse_namespace(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(
            parse_duration("1500ms").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(parse_duration("1h 30m").unwrap(), Duration::from_secs(5400));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("").is_err());
    }
}
