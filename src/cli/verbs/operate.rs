//! `kubectl etcd operate`: parse the operator's flags and hand over to `crate::operate`.

use std::net::SocketAddr;

use crate::archive::store::Access;
use crate::cli::Session;
use crate::cli::flags::Global;
use crate::engine::Dial;
use crate::error::Error;
use crate::keys::install;
use crate::model::fair::Bounds;
use crate::objects::install::METRICS_PORT;
use crate::{lease, operate};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Watch only these namespaces, comma-separated or repeated (default: all namespaces): one
    /// watch per namespace, so the operator needs rights in those alone (`kubectl etcd install
    /// --operator --watch-namespace` writes them). -n is ignored here.
    /// Example: --watch-namespace team-a,team-b
    #[arg(long, value_delimiter = ',', value_name = "NAMESPACE")]
    pub watch_namespace: Vec<String>,
    /// Address of /metrics, /healthz and /readyz. The default, [::], is every IPv6 and IPv4
    /// address (IPv4 alone on a kernel without IPv6); 0.0.0.0:PORT is IPv4 only.
    #[arg(long, default_value_t = SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, METRICS_PORT)))]
    pub metrics_addr: SocketAddr,
    /// Who may read /metrics. kubernetes: a bearer token the API server accepts (TokenReview)
    /// of a user allowed `get` on the non-resource URL /metrics (SubjectAccessReview; the
    /// ClusterRole kubectl-etcd-operator-metrics-reader grants it), each verdict cached a minute.
    /// none: anyone who reaches the port (only behind another guard: a proxy, a NetworkPolicy).
    /// /healthz and /readyz are always open.
    #[arg(long, value_enum, default_value_t = operate::MetricsAuth::Kubernetes)]
    pub metrics_auth: operate::MetricsAuth,
    /// Leader-election identity (default: operator/$POD_NAME or operator/<hostname>); `operator/`
    /// is put before one given without it (CLI verbs tell an operator by it).
    #[arg(long)]
    pub identity: Option<String>,
    /// Let backups of a cluster without `spec.backup.credentialsSecret` use this process's own
    /// cloud identity (AWS_* environment, profile, IRSA, ECS, instance metadata). Off by default:
    /// every tenant whose cluster the operator watches could otherwise have it read and delete
    /// objects with that identity.
    #[arg(long)]
    pub allow_ambient_credentials: bool,
    /// Custom S3 endpoints backups may use, from a destination's `?endpoint=` or a credentials
    /// Secret's AWS_ENDPOINT_URL: HOST (any port), HOST:PORT, *.DOMAIN, [IPv6]:PORT or an endpoint
    /// URL, comma-separated or repeated. AWS endpoints are always allowed; by default nothing else.
    /// Example: --s3-endpoint-allow minio.backup.svc,10.0.0.5:9000
    #[arg(long, value_delimiter = ',', value_name = "HOST[:PORT]")]
    pub s3_endpoint_allow: Vec<String>,
    /// Let `spec.etcd.options` set this etcd flag (repeatable, or comma-separated) besides the
    /// tuning flags every cluster may set (heartbeat-interval, election-timeout, snapshot-count,
    /// …; docs/src/security.md). Off the list by default: enable-pprof, enable-v2, unsafe-no-fsync,
    /// listen-client-http-urls, cipher-suites, tls-min-version, feature-gates and any other.
    /// Example: --allow-etcd-option enable-pprof
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    pub allow_etcd_option: Vec<String>,
    /// Let `spec.imageRepository`, `spec.restore.toolsImage` and `spec.recovery.toolsImage` name
    /// images under this prefix (repeatable, or comma-separated): the same repository, or below
    /// it (`registry.example/` takes everything of that registry). Allowed always:
    /// gcr.io/etcd-development/etcd and ghcr.io/kubectl-etcd/kubectl-etcd. A cluster naming
    /// another runs the default image instead (condition SpecRefused names the field).
    /// Example: --allow-image-prefix registry.example/mirror/
    #[arg(long, value_delimiter = ',', value_name = "PREFIX", value_parser = crate::objects::admission::spec::parse_allowed)]
    pub allow_image_prefix: Vec<String>,
    /// Scheduled backups taken at once in one namespace; a due backup beyond waits in its
    /// namespace's line (condition reason BackupQueued), so one tenant's schedules cannot starve
    /// the others'.
    #[arg(long, default_value_t = Bounds::BACKUPS.per_namespace as u16, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_backups_per_namespace: u16,
    /// Scheduled backups taken at once in all namespaces (each holds a stream buffer and a
    /// member's snapshot in flight): the operator's memory stays bounded however many are due.
    /// A freed slot goes to the namespaces in turn (round-robin), whichever has most waiting.
    #[arg(long, default_value_t = Bounds::BACKUPS.total as u16, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_backups: u16,
    /// Reconcile passes run at once in one namespace; a pass beyond waits for one of them to end
    /// (metric kubectl_etcd_queued{work="pass"}), so one tenant's many clusters cannot crowd
    /// out the others' (passes of different namespaces never wait for each other).
    #[arg(long, default_value_t = Bounds::PASSES.per_namespace as u16, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_passes_per_namespace: u16,
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let s = Session::connect(g).await?;
    let in_cluster = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    // The global --dial; by default direct in a pod, port-forward outside.
    let dial = g.dial_or(if in_cluster {
        Dial::Direct
    } else {
        Dial::PortForward
    });
    // In a pod: the leader Lease in the operator's own namespace, named after its install, and
    // its workload role bound where it serves clusters (`operate::binding`).
    let pods = operate::own_pods();
    let in_pod = in_cluster && pods.is_some();
    let (lease_namespace, leader_lease) = match pods.as_ref().filter(|_| in_pod) {
        Some(p) => (p.namespace.clone(), Some(install::leader_lease(&p.name))),
        None => (lease::NAMESPACE.to_string(), None),
    };
    operate::run(operate::OperateOptions {
        identity: a
            .identity
            .as_deref()
            .map_or_else(operate::default_identity, lease::operator_identity),
        store_access: Access::operator(a.allow_ambient_credentials, &a.s3_endpoint_allow),
        leave: crate::model::Leave::operator(a.allow_etcd_option, a.allow_image_prefix),
        namespaces: a.watch_namespace,
        operator: pods,
        lease_namespace,
        leader_lease,
        bind_workload: in_pod,
        allow_foreign_adopt_endpoints: g.allow_foreign_adopt_endpoints,
        backup_bounds: Bounds {
            per_namespace: usize::from(a.max_backups_per_namespace),
            total: usize::from(a.max_backups),
        },
        pass_bounds: Bounds {
            per_namespace: usize::from(a.max_passes_per_namespace),
            ..Bounds::PASSES
        },
        allow_cluster_issuer: g.allow_cluster_issuer,
        metrics_auth: a.metrics_auth,
        ..operate::OperateOptions::new(s.client, None, a.metrics_addr, dial)
    })
    .await
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    /// The kubelet probes an IPv6-only cluster's pod on its IPv6 address: the default must bind
    /// `[::]` (every address of both families, `metrics::bind`), never `0.0.0.0`.
    #[test]
    fn the_metrics_address_defaults_to_both_families() {
        let cli = crate::cli::Cli::try_parse_from(["kubectl-etcd", "operate"]).unwrap();
        let crate::cli::Verb::Operate(a) = cli.verb else {
            panic!("not operate")
        };
        assert_eq!(a.metrics_addr.to_string(), "[::]:8080");
    }

    fn operate(args: &[&str]) -> Result<super::Args, String> {
        let argv = ["kubectl-etcd", "operate"].iter().chain(args);
        match crate::cli::Cli::try_parse_from(argv) {
            Ok(cli) => match cli.verb {
                crate::cli::Verb::Operate(a) => Ok(a),
                _ => panic!("not operate"),
            },
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn the_fair_share_bounds_default_to_two_and_eight_backups_and_four_passes_a_namespace() {
        let a = operate(&[]).unwrap();
        assert_eq!(
            (
                a.max_backups_per_namespace,
                a.max_backups,
                a.max_passes_per_namespace
            ),
            (2, 8, 4)
        );
        let a = operate(&["--max-passes-per-namespace", "1", "--max-backups", "3"]).unwrap();
        assert_eq!((a.max_passes_per_namespace, a.max_backups), (1, 3));
    }

    #[test]
    fn a_bound_of_zero_is_refused_naming_its_flag() {
        for flag in [
            "--max-passes-per-namespace",
            "--max-backups-per-namespace",
            "--max-backups",
        ] {
            let e = operate(&[flag, "0"]).unwrap_err();
            assert!(e.contains(flag) && e.contains("0 is not in 1..="), "{e}");
        }
    }
}
