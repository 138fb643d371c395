//! The kubectl plugin: flags in, one engine driven, results out.
//!
//! The only room that parses flags or prints. Mutating verbs write intent into the EtcdCluster
//! spec, then either run reconcile passes themselves until converged, or — when an operator holds
//! the engine lease — wait on the status it writes.

mod output;

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::api::{EtcdCluster, EtcdClusterSpec, StorageSpec};
use crate::engine::{self, Context, Dial, Mode, Pass};
use crate::error::Error;
use crate::lease;
use crate::model::{self, DEFAULT_VERSION};
use crate::objects;

pub use output::Format;

/// kubectl etcd — create, scale, inspect and operate etcd clusters on Kubernetes.
///
/// Every verb runs passes of the same reconcile engine that `kubectl etcd operate` runs in the
/// cluster. Flags go after the plugin name: `kubectl etcd -n team-a status demo`.
#[derive(Parser, Debug)]
#[command(name = "kubectl-etcd", bin_name = "kubectl-etcd", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub verb: Verb,
}

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
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
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

#[derive(Subcommand, Debug)]
pub enum Verb {
    /// Create an etcd cluster and wait until it is Ready.
    ///
    /// Example: kubectl etcd create demo --replicas 3 --version 3.5.16 --storage 1Gi
    Create {
        /// Cluster name (lowercase letters, digits, '-').
        name: String,
        /// Voting members (1-9; odd numbers tolerate the most failures).
        #[arg(long, default_value_t = 3)]
        replicas: i64,
        /// etcd release.
        #[arg(long, default_value = DEFAULT_VERSION)]
        version: String,
        /// Volume size per member.
        #[arg(long)]
        storage: Option<String>,
        /// StorageClass of the member volumes (default: the cluster's default class).
        #[arg(long)]
        storage_class: Option<String>,
        /// Keep data in emptyDir volumes (lost when a pod is deleted): for tests only.
        #[arg(long, conflicts_with_all = ["storage", "storage_class"])]
        ephemeral: bool,
        /// Image repository (tag is v<version>).
        #[arg(long)]
        image_repository: Option<String>,
        #[command(flatten)]
        wait: WaitFlags,
    },
    /// Change the number of voting members, one member at a time.
    ///
    /// Example: kubectl etcd scale demo --replicas 5
    Scale {
        name: String,
        #[arg(long)]
        replicas: i64,
        #[command(flatten)]
        wait: WaitFlags,
    },
    /// Show clusters, their members and the engine's next step (observes only).
    ///
    /// Examples: kubectl etcd status demo; kubectl etcd status -A -o json
    Status {
        /// One cluster; all clusters of the namespace when omitted.
        name: Option<String>,
        /// All namespaces (only without NAME).
        #[arg(short = 'A', long, conflicts_with = "name")]
        all_namespaces: bool,
    },
    /// Run reconcile passes on a cluster until it converges (repairs after a crash or a manual edit).
    ///
    /// Example: kubectl etcd reconcile demo
    Reconcile {
        name: String,
        #[command(flatten)]
        wait: WaitFlags,
    },
    /// Delete a cluster. Member volumes are kept unless --delete-data --yes is given.
    ///
    /// Example: kubectl etcd delete demo --delete-data --yes
    Delete {
        name: String,
        /// Also delete the member volumes: all data of the cluster is lost.
        #[arg(long)]
        delete_data: bool,
        /// Confirm --delete-data.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        wait: WaitFlags,
    },
    /// Run the engine as a controller (in-cluster, or from a workstation for debugging).
    ///
    /// Example: kubectl etcd operate --metrics-addr 0.0.0.0:8080
    Operate {
        /// Watch only this namespace (default: all namespaces). -n is ignored here.
        #[arg(long)]
        watch_namespace: Option<String>,
        /// Address of /metrics, /healthz and /readyz.
        #[arg(long, default_value = "0.0.0.0:8080")]
        metrics_addr: std::net::SocketAddr,
        /// How to reach etcd members (default: direct in a pod, port-forward outside).
        #[arg(long, value_enum)]
        dial: Option<DialArg>,
        /// Leader-election identity (default: operator/$POD_NAME or operator/<hostname>).
        #[arg(long)]
        identity: Option<String>,
    },
    /// Install the CRD (and with --operator the in-cluster operator) into the current context.
    ///
    /// Example: kubectl etcd install --operator --image ghcr.io/kubectl-etcd/kubectl-etcd:0.1.0
    Install {
        /// Also install the operator: namespace, service account, RBAC, Deployment.
        #[arg(long)]
        operator: bool,
        /// Operator image.
        #[arg(long, default_value = DEFAULT_OPERATOR_IMAGE)]
        image: String,
        /// Print the manifests instead of applying them.
        #[arg(long)]
        print: bool,
    },
    /// Print the EtcdCluster CRD as YAML (crds/etcdclusters.yaml is this output).
    Crd,
    /// Print the operator's install manifests as YAML (crds/operator.yaml is this output).
    ///
    /// Example: kubectl etcd manifests --image registry.example/kubectl-etcd:0.1.0 | kubectl apply -f -
    Manifests {
        /// Operator image.
        #[arg(long, default_value = DEFAULT_OPERATOR_IMAGE)]
        image: String,
    },
    /// Print shell completions (the files in completions/ are this output).
    ///
    /// `kubectl` gives `kubectl_complete-etcd`, the helper kubectl (1.26+) runs for
    /// `kubectl etcd <TAB>`; install.sh puts it on PATH.
    Completions {
        #[arg(value_enum)]
        shell: CompletionTarget,
    },
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionTarget {
    Bash,
    Zsh,
    Fish,
    /// The `kubectl_complete-etcd` helper for kubectl's plugin completion.
    Kubectl,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialArg {
    Direct,
    PortForward,
}

/// How long a verb waits out an engine hold (e.g. a member restarting during a scale-down)
/// before it reports it.
const HOLD_PATIENCE: Duration = Duration::from_secs(30);

/// Image of the operator Deployment unless --image says otherwise.
pub const DEFAULT_OPERATOR_IMAGE: &str = concat!(
    "ghcr.io/kubectl-etcd/kubectl-etcd:",
    env!("CARGO_PKG_VERSION")
);

/// "90s", "5m", "1h", "1500ms" or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration; use e.g. 90s, 5m or 1h"))?;
    match unit {
        "" | "s" => Ok(Duration::from_secs(n)),
        "ms" => Ok(Duration::from_millis(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        "h" => Ok(Duration::from_secs(n * 3600)),
        _ => Err(format!("{s:?} has an unknown unit; use s, m or h")),
    }
}

/// The CRD object (see `api::crd`).
pub fn crd() -> CustomResourceDefinition {
    crate::api::crd()
}

pub fn crd_yaml() -> String {
    format!(
        "# Generated by `kubectl etcd crd`; do not edit. Regenerate: cargo run -- crd > crds/etcdclusters.yaml\n{}",
        output::yaml(&crd())
    )
}

/// The operator's install manifests (namespace, RBAC, Deployment) as YAML documents.
pub fn operator_yaml_with(image: &str) -> String {
    let docs: Vec<String> = crate::operate::install_manifests(image, lease::NAMESPACE)
        .iter()
        .map(output::yaml)
        .collect();
    format!(
        "# Generated by `kubectl etcd manifests`; do not edit. Regenerate: cargo run -- manifests > crds/operator.yaml\n{}",
        docs.join("---\n")
    )
}

pub fn operator_yaml() -> String {
    operator_yaml_with(DEFAULT_OPERATOR_IMAGE)
}

/// Completion script for `shell`.
pub fn completions(target: CompletionTarget) -> String {
    let shell = match target {
        CompletionTarget::Bash => clap_complete::Shell::Bash,
        CompletionTarget::Zsh => clap_complete::Shell::Zsh,
        CompletionTarget::Fish => clap_complete::Shell::Fish,
        CompletionTarget::Kubectl => return kubectl_complete_script(),
    };
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "kubectl-etcd", &mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Verbs whose first argument is an existing cluster's name (completed from the API).
const VERBS_NAMING_A_CLUSTER: &[&str] = &["scale", "status", "reconcile", "delete"];

/// `kubectl_complete-etcd`: kubectl runs it with the words after `etcd` and expects cobra's
/// `__complete` protocol (one candidate per line, then `:4` = no file completion). Verbs and
/// flags come from the clap definition; cluster names from `kubectl get etcdclusters`.
fn kubectl_complete_script() -> String {
    let cmd = Cli::command();
    let long_flags = |c: &clap::Command| -> Vec<String> {
        c.get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect()
    };
    let global: Vec<String> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect();
    let verbs: Vec<&str> = cmd
        .get_subcommands()
        .map(|c| c.get_name())
        .filter(|n| *n != "help")
        .collect();
    let mut cases = String::new();
    for c in cmd.get_subcommands().filter(|c| c.get_name() != "help") {
        let own: Vec<String> = long_flags(c)
            .into_iter()
            .filter(|f| !global.contains(f) && f != "--help")
            .collect();
        cases.push_str(&format!(
            "    {}) flags=\"{}\" ;;\n",
            c.get_name(),
            own.join(" ")
        ));
    }
    format!(
        r#"#!/bin/sh
# Generated by `kubectl etcd completions kubectl`; do not edit.
# kubectl (1.26+) runs this for `kubectl etcd <TAB>` with the words after "etcd"; the last word is
# the one being completed. Answer: candidates, one per line, then ":4" (no file completion).
verbs="{verbs}"
global="{global}"
verb="" ns="" prev="" cur=""
for w in "$@"; do
  if [ -z "$verb" ]; then
    for v in $verbs; do [ "$w" = "$v" ] && verb=$v; done
  fi
  case "$prev" in -n|--namespace) ns=$w ;; esac
  prev=$cur; cur=$w
done
[ "$cur" = "$verb" ] && [ "$#" -gt 0 ] && verb=""
flags=""
case "$verb" in
{cases}esac
case "$cur" in
  -*) for f in $flags $global; do echo "$f"; done ;;
  *)
    case "$prev" in
      -n|--namespace) kubectl get namespaces -o custom-columns=:metadata.name --no-headers 2>/dev/null ;;
      -o|--output) printf 'table
json
yaml
' ;;
      *)
        if [ -z "$verb" ]; then
          for v in $verbs; do echo "$v"; done
        else
          case " {naming} " in
            *" $verb "*) kubectl get etcdclusters ${{ns:+-n "$ns"}} -o custom-columns=:metadata.name --no-headers 2>/dev/null ;;
          esac
        fi ;;
    esac ;;
esac
echo ":4"
"#,
        verbs = verbs.join(" "),
        global = global.join(" "),
        naming = VERBS_NAMING_A_CLUSTER.join(" "),
    )
}

/// A connected client, the namespace verbs act in, and the engine context.
struct Session {
    client: Client,
    namespace: String,
}

async fn connect(g: &Global) -> Result<Session, Error> {
    let options = KubeConfigOptions {
        context: g.context.clone(),
        ..Default::default()
    };
    let config = match &g.kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path).map_err(|e| Error::Config(Box::new(e)))?;
            kube::Config::from_custom_kubeconfig(kc, &options)
                .await
                .map_err(|e| Error::Config(Box::new(e)))?
        }
        None if g.context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| Error::Config(Box::new(e)))?,
        None => kube::Config::infer()
            .await
            .map_err(|e| Error::Config(Box::new(e)))?,
    };
    let namespace = g
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let mut config = config;
    config.connect_timeout = Some(Duration::from_secs(5));
    let client = Client::try_from(config).map_err(|e| Error::Config(Box::new(e)))?;
    Ok(Session { client, namespace })
}

/// Fails with `CrdMissing` when the CRD is absent (and RBAC lets us look).
async fn ensure_crd(client: &Client) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    match api.get_opt(&crd().name_any()).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(Error::CrdMissing),
        Err(kube::Error::Api(s)) if s.code == 403 => Ok(()),
        Err(e) => Err(Error::kube(
            "get",
            "CustomResourceDefinition",
            "",
            &crd().name_any(),
            e,
        )),
    }
}

async fn get_cluster(api: &Api<EtcdCluster>, ns: &str, name: &str) -> Result<EtcdCluster, Error> {
    match api.get_opt(name).await {
        Ok(Some(c)) => Ok(c),
        Ok(None) => Err(Error::NotFound {
            namespace: ns.into(),
            name: name.into(),
        }),
        Err(e) => Err(Error::kube("get", crate::api::KIND, ns, name, e)),
    }
}

/// Runs the parsed command line. Results go to stdout, progress and logs to stderr.
pub async fn run(cli: Cli) -> Result<(), Error> {
    let g = cli.global.clone();
    match cli.verb {
        Verb::Crd => output::print_raw(&crd_yaml()),
        Verb::Manifests { image } => output::print_raw(&operator_yaml_with(&image)),
        Verb::Completions { shell } => output::print_raw(&completions(shell)),
        Verb::Install {
            operator,
            image,
            print,
        } => install(&g, operator, &image, print).await,
        Verb::Create {
            name,
            replicas,
            version,
            storage,
            storage_class,
            ephemeral,
            image_repository,
            wait,
        } => {
            // Validate everything before anything is written.
            model::validate_name(&name).map_err(|e| usage(&name, e))?;
            let replicas = model::validate_replicas(replicas).map_err(|e| usage(&name, e))?;
            let version = model::validate_version(&version)
                .map_err(|e| usage(&name, e))?
                .to_string();
            let spec = EtcdClusterSpec {
                replicas: replicas as i32,
                version,
                image_repository,
                storage: StorageSpec {
                    size: storage,
                    storage_class_name: storage_class,
                    ephemeral,
                },
                ..Default::default()
            };
            let s = connect(&g).await?;
            let mut cluster = EtcdCluster::new(&name, spec);
            cluster.metadata.namespace = Some(s.namespace.clone());
            model::validate(&cluster).map_err(|source| Error::InvalidSpec {
                namespace: s.namespace.clone(),
                name: name.clone(),
                source,
            })?;
            ensure_crd(&s.client).await?;
            let api: Api<EtcdCluster> = Api::namespaced(s.client.clone(), &s.namespace);
            if wait.dry_run {
                if api
                    .get_opt(&name)
                    .await
                    .map_err(|e| Error::kube("get", crate::api::KIND, &s.namespace, &name, e))?
                    .is_some()
                {
                    return Err(Error::AlreadyExists {
                        namespace: s.namespace,
                        name,
                    });
                }
                cluster.metadata.uid = Some("00000000-dry-run".into());
                return dry_run(
                    &s,
                    &g,
                    &cluster,
                    &[format!("create EtcdCluster {}/{name}", s.namespace)],
                )
                .await;
            }
            let created = match api.create(&PostParams::default(), &cluster).await {
                Ok(c) => c,
                Err(kube::Error::Api(st)) if st.code == 409 => {
                    return Err(Error::AlreadyExists {
                        namespace: s.namespace,
                        name,
                    });
                }
                Err(e) => {
                    return Err(Error::kube(
                        "create",
                        crate::api::KIND,
                        &s.namespace,
                        &name,
                        e,
                    ));
                }
            };
            output::progress_line(&format!("created EtcdCluster {}/{name}", s.namespace));
            drive(&s, &g, created, &wait).await
        }
        Verb::Scale {
            name,
            replicas,
            wait,
        } => {
            let replicas = model::validate_replicas(replicas).map_err(|e| usage(&name, e))?;
            let s = connect(&g).await?;
            ensure_crd(&s.client).await?;
            let api: Api<EtcdCluster> = Api::namespaced(s.client.clone(), &s.namespace);
            let mut cluster = get_cluster(&api, &s.namespace, &name).await?;
            let from = cluster.spec.replicas;
            cluster.spec.replicas = replicas as i32;
            model::validate(&cluster).map_err(|source| Error::InvalidSpec {
                namespace: s.namespace.clone(),
                name: name.clone(),
                source,
            })?;
            if wait.dry_run {
                return dry_run(
                    &s,
                    &g,
                    &cluster,
                    &[format!(
                        "set spec.replicas of EtcdCluster {}/{name} from {from} to {replicas}",
                        s.namespace
                    )],
                )
                .await;
            }
            let patched = api
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"replicas": replicas}})),
                )
                .await
                .map_err(|e| Error::kube("scale", crate::api::KIND, &s.namespace, &name, e))?;
            output::progress_line(&format!(
                "EtcdCluster {}/{name}: replicas {from} → {replicas}",
                s.namespace
            ));
            drive(&s, &g, patched, &wait).await
        }
        Verb::Reconcile { name, wait } => {
            let s = connect(&g).await?;
            ensure_crd(&s.client).await?;
            let api: Api<EtcdCluster> = Api::namespaced(s.client.clone(), &s.namespace);
            let cluster = get_cluster(&api, &s.namespace, &name).await?;
            if wait.dry_run {
                return dry_run(&s, &g, &cluster, &[]).await;
            }
            drive(&s, &g, cluster, &wait).await
        }
        Verb::Status {
            name,
            all_namespaces,
        } => status(&g, name, all_namespaces).await,
        Verb::Delete {
            name,
            delete_data,
            yes,
            wait,
        } => {
            if delete_data && !yes {
                return Err(Error::Usage(format!(
                    "--delete-data deletes every member volume of {name} and all its data; add --yes to confirm"
                )));
            }
            let s = connect(&g).await?;
            ensure_crd(&s.client).await?;
            let api: Api<EtcdCluster> = Api::namespaced(s.client.clone(), &s.namespace);
            let cluster = get_cluster(&api, &s.namespace, &name).await?;
            if wait.dry_run {
                let mut lines = vec![format!(
                    "delete EtcdCluster {}/{name} and its StatefulSet, Services, ConfigMap and disruption budget",
                    s.namespace
                )];
                lines.push(if delete_data {
                    "delete the member volumes (all data)".into()
                } else {
                    "keep the member volumes".into()
                });
                output::print_dry_run(g.output, &lines, &[], None)?;
                return Ok(());
            }
            delete(&s, &api, cluster, delete_data, &wait).await
        }
        Verb::Operate {
            watch_namespace,
            metrics_addr,
            dial,
            identity,
        } => {
            let s = connect(&g).await?;
            let in_cluster = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
            let dial = match dial {
                Some(DialArg::Direct) => Dial::Direct,
                Some(DialArg::PortForward) => Dial::PortForward,
                None if in_cluster => Dial::Direct,
                None => Dial::PortForward,
            };
            let identity = identity.unwrap_or_else(|| {
                let who = std::env::var("POD_NAME")
                    .ok()
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(lease::hostname);
                lease::operator_identity(&who)
            });
            crate::operate::run(crate::operate::OperateOptions {
                client: s.client,
                namespace: watch_namespace,
                identity,
                metrics_addr,
                dial,
            })
            .await
        }
    }
}

fn usage(name: &str, e: model::InvalidSpec) -> Error {
    Error::Usage(format!("EtcdCluster {name}: {e}"))
}

/// Observe and plan only; print the steps and objects.
async fn dry_run(
    s: &Session,
    g: &Global,
    cluster: &EtcdCluster,
    intent: &[String],
) -> Result<(), Error> {
    let ctx = Context::new(s.client.clone(), Dial::PortForward).await?;
    let pass = engine::reconcile_once(&ctx, cluster, Mode::DryRun).await?;
    let objects = engine::planned_objects(&ctx, &pass.desired, &pass.step);
    let mut lines: Vec<String> = intent.to_vec();
    lines.push(format!("next engine step: {}", pass.step));
    if pass.desired.replicas as usize != pass.status.members.iter().filter(|m| !m.learner).count()
        && !pass.status.members.is_empty()
    {
        lines.push(format!(
            "then, one member at a time: {} → {} voting members (each added as a learner and promoted once caught up, or removed after moving leadership)",
            pass.status.members.len(),
            pass.desired.replicas
        ));
    }
    output::print_dry_run(g.output, &lines, &objects, Some(&pass.step))
}

/// Whether an operator is running the engine for us (then the CLI only waits on status).
async fn operator_holder(client: &Client) -> Result<Option<String>, Error> {
    Ok(lease::active_holder(client.clone(), lease::NAMESPACE)
        .await?
        .filter(|h| lease::is_operator(h)))
}

/// After intent is written: run passes until converged (or wait on the operator's status).
async fn drive(
    s: &Session,
    g: &Global,
    cluster: EtcdCluster,
    wait: &WaitFlags,
) -> Result<(), Error> {
    let ns = s.namespace.clone();
    let name = cluster.name_any();
    if wait.no_wait {
        return output::print_cluster(g.output, &cluster);
    }
    let progress = output::Progress::new(&format!("{ns}/{name}"));
    let started = Instant::now();
    let api: Api<EtcdCluster> = Api::namespaced(s.client.clone(), &ns);
    if let Some(holder) = operator_holder(&s.client).await? {
        progress.note(&format!(
            "operator {holder} holds the engine lease: waiting on its status"
        ));
        return wait_on_status(&api, g, &ns, &name, wait.timeout, started, &progress).await;
    }
    let identity = lease::cli_identity();
    let lock = lease::Lock::new(
        s.client.clone(),
        lease::NAMESPACE,
        identity,
        Duration::from_secs(20),
    );
    let ctx = Context::new(s.client.clone(), Dial::PortForward).await?;
    let mut last_note = String::new();
    // A hold that outlasts this is reported (exit 7) instead of waited out to --timeout.
    let mut holding_since: Option<Instant> = None;
    let result = loop {
        if started.elapsed() > wait.timeout {
            break Err(Error::Timeout {
                namespace: ns.clone(),
                name: name.clone(),
                seconds: wait.timeout.as_secs(),
                last: last_note.clone(),
            });
        }
        // Hold the engine lease while acting (when the operator namespace exists), so an
        // operator starting meanwhile waits for us instead of acting at once.
        match lock.try_acquire_or_renew().await {
            Ok(lease::Acquired::HeldBy { holder }) if lease::is_operator(&holder) => {
                progress.note(&format!(
                    "operator {holder} took over: waiting on its status"
                ));
                break wait_on_status(&api, g, &ns, &name, wait.timeout, started, &progress)
                    .await
                    .map(|()| None);
            }
            Ok(lease::Acquired::HeldBy { holder }) => {
                progress.step(&format!("waiting: {holder} is acting on this cluster"));
                tokio::time::sleep(Duration::from_secs(2)).await;
                continue;
            }
            Ok(lease::Acquired::Held) => {}
            // No operator namespace (nobody to coordinate with), or no rights on leases.
            Err(e) => tracing::debug!("engine lease not used: {}", e.report()),
        }
        let current = match api.get_opt(&name).await {
            Ok(Some(c)) => c,
            Ok(None) => {
                break Err(Error::NotFound {
                    namespace: ns.clone(),
                    name: name.clone(),
                });
            }
            Err(e) => break Err(Error::kube("get", crate::api::KIND, &ns, &name, e)),
        };
        let pass = match engine::reconcile_once(&ctx, &current, Mode::Act).await {
            Ok(p) => p,
            Err(e @ Error::InvalidSpec { .. }) => break Err(e),
            Err(e)
                if matches!(
                    e.exit_code(),
                    crate::error::exit::FORBIDDEN | crate::error::exit::NOT_FOUND
                ) =>
            {
                break Err(e);
            }
            Err(e) => {
                // Transient API trouble: report and retry within the timeout.
                progress.step(&format!("retrying after error: {}", e.report()));
                tokio::time::sleep(Duration::from_secs(2)).await;
                continue;
            }
        };
        let note = pass.step.to_string();
        if note != last_note && !pass.converged() {
            progress.step(&note);
            last_note = note;
        }
        if pass.converged() {
            break Ok(Some(pass));
        }
        if let crate::plan::Step::Hold { message, .. } = &pass.step {
            if holding_since.get_or_insert_with(Instant::now).elapsed() > HOLD_PATIENCE {
                break Err(Error::Held {
                    namespace: ns.clone(),
                    name: name.clone(),
                    message: message.clone(),
                });
            }
        } else {
            holding_since = None;
        }
        let pause = match (&pass.outcome, &pass.step) {
            (engine::Outcome::Acted, _) => Duration::from_millis(300),
            (_, crate::plan::Step::Hold { .. }) => Duration::from_secs(5),
            _ => Duration::from_millis(500),
        };
        tokio::time::sleep(pause).await;
    };
    lock.release().await;
    match result {
        Ok(None) => Ok(()),
        Ok(Some(pass)) => {
            progress.finish(&format!(
                "converged in {:.1} s",
                started.elapsed().as_secs_f64()
            ));
            let done = api.get_opt(&name).await.ok().flatten();
            match done {
                Some(c) => output::print_cluster(g.output, &c),
                None => output::print_pass(g.output, &pass),
            }
        }
        Err(e) => {
            progress.abandon();
            Err(e)
        }
    }
}

async fn wait_on_status(
    api: &Api<EtcdCluster>,
    g: &Global,
    ns: &str,
    name: &str,
    timeout: Duration,
    started: Instant,
    progress: &output::Progress,
) -> Result<(), Error> {
    let mut last = String::new();
    loop {
        let c = get_cluster(api, ns, name).await?;
        if let Some(st) = &c.status {
            let msg = st.message.clone().unwrap_or_default();
            if msg != last {
                progress.step(&msg);
                last = msg;
            }
            let current = st.observed_generation == c.metadata.generation;
            let ready = st
                .conditions
                .iter()
                .any(|k| k.type_ == crate::api::condition::READY && k.status == "True");
            if current
                && ready
                && st.message.as_deref() == Some(&crate::plan::Step::Idle.to_string())
            {
                progress.finish(&format!(
                    "converged in {:.1} s",
                    started.elapsed().as_secs_f64()
                ));
                return output::print_cluster(g.output, &c);
            }
        }
        if started.elapsed() > timeout {
            progress.abandon();
            return Err(Error::Timeout {
                namespace: ns.into(),
                name: name.into(),
                seconds: timeout.as_secs(),
                last,
            });
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn delete(
    s: &Session,
    api: &Api<EtcdCluster>,
    cluster: EtcdCluster,
    delete_data: bool,
    wait: &WaitFlags,
) -> Result<(), Error> {
    let ns = s.namespace.clone();
    let name = cluster.name_any();
    if delete_data {
        api.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {engine::ANNOTATION_DELETE_DATA: "true"}}}),
            ),
        )
        .await
        .map_err(|e| Error::kube("mark for data deletion", crate::api::KIND, &ns, &name, e))?;
    }
    match api.delete(&name, &DeleteParams::foreground()).await {
        Ok(_) => {}
        Err(kube::Error::Api(st)) if st.code == 404 => {
            return Err(Error::NotFound {
                namespace: ns,
                name,
            });
        }
        Err(e) => return Err(Error::kube("delete", crate::api::KIND, &ns, &name, e)),
    }
    output::progress_line(&format!(
        "deleting EtcdCluster {ns}/{name}{}",
        if delete_data {
            " and its volumes"
        } else {
            " (volumes kept)"
        }
    ));
    if wait.no_wait {
        return Ok(());
    }
    let started = Instant::now();
    let ctx = Context::new(s.client.clone(), Dial::PortForward).await?;
    loop {
        match api.get_opt(&name).await {
            Ok(None) => break,
            Ok(Some(c)) => {
                // Without an operator the CLI releases the finalizer itself (same engine pass).
                if operator_holder(&s.client).await?.is_none()
                    && c.metadata.deletion_timestamp.is_some()
                {
                    engine::reconcile_once(&ctx, &c, Mode::Act).await?;
                }
            }
            Err(e) => return Err(Error::kube("get", crate::api::KIND, &ns, &name, e)),
        }
        if started.elapsed() > wait.timeout {
            return Err(Error::Timeout {
                namespace: ns,
                name,
                seconds: wait.timeout.as_secs(),
                last: "deleting".into(),
            });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    if delete_data {
        // Volumes are deleted by the finalizer; wait until they are gone too.
        let pvcs: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
            Api::namespaced(s.client.clone(), &ns);
        let lp = ListParams::default().labels(&objects::selector_string(&name));
        while pvcs
            .list(&lp)
            .await
            .map(|l| !l.items.is_empty())
            .unwrap_or(false)
            && started.elapsed() < wait.timeout
        {
            let _ = pvcs.delete_collection(&DeleteParams::default(), &lp).await;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    output::progress_line(&format!("deleted EtcdCluster {ns}/{name}"));
    Ok(())
}

async fn status(g: &Global, name: Option<String>, all: bool) -> Result<(), Error> {
    let s = connect(g).await?;
    ensure_crd(&s.client).await?;
    let ctx = Context::new(s.client.clone(), Dial::PortForward).await?;
    match name {
        Some(name) => {
            let api: Api<EtcdCluster> = Api::namespaced(s.client.clone(), &s.namespace);
            let cluster = get_cluster(&api, &s.namespace, &name).await?;
            let pass = engine::reconcile_once(&ctx, &cluster, Mode::DryRun).await;
            output::print_status(g.output, &cluster, pass.as_ref().ok())?;
            // Scripts can rely on the exit code: 0 only when etcd answers (once the cluster was
            // formed) and nothing holds.
            let pass = pass?;
            let formed = pass
                .observed
                .config
                .as_ref()
                .is_some_and(objects::is_bootstrapped);
            match (&pass.step, &pass.observed.etcd) {
                (crate::plan::Step::Hold { message, .. }, _) => Err(Error::Held {
                    namespace: s.namespace,
                    name,
                    message: message.clone(),
                }),
                (
                    step,
                    crate::model::EtcdView::NotQueried | crate::model::EtcdView::Unreachable { .. },
                ) if formed => Err(Error::Held {
                    namespace: s.namespace.clone(),
                    message: format!(
                        "no member answered (next step: {step}); check the member pods: kubectl -n {} get pods -l {}",
                        s.namespace,
                        objects::selector_string(&name)
                    ),
                    name,
                }),
                _ => Ok(()),
            }
        }
        None => {
            let api: Api<EtcdCluster> = if all {
                Api::all(s.client.clone())
            } else {
                Api::namespaced(s.client.clone(), &s.namespace)
            };
            let list = api.list(&ListParams::default()).await.map_err(|e| {
                Error::kube(
                    "list",
                    crate::api::KIND,
                    if all { "*" } else { &s.namespace },
                    "*",
                    e,
                )
            })?;
            let mut rows: Vec<(EtcdCluster, Option<Pass>)> = Vec::new();
            for c in list.items {
                let pass = engine::reconcile_once(&ctx, &c, Mode::DryRun).await.ok();
                rows.push((c, pass));
            }
            output::print_status_list(g.output, &rows, all)
        }
    }
}

async fn install(g: &Global, operator: bool, image: &str, print: bool) -> Result<(), Error> {
    let mut docs: Vec<serde_json::Value> =
        vec![serde_json::to_value(crd()).map_err(|e| Error::Serialize(Box::new(e)))?];
    if operator {
        docs.extend(crate::operate::install_manifests(image, lease::NAMESPACE));
    }
    if print {
        let text: Vec<String> = docs.iter().map(output::yaml).collect();
        return output::print_raw(&text.join("---\n"));
    }
    let s = connect(g).await?;
    let crds: Api<CustomResourceDefinition> = Api::all(s.client.clone());
    let crd = crd();
    crds.patch(
        &crd.name_any(),
        &PatchParams::apply(objects::FIELD_MANAGER).force(),
        &Patch::Apply(&crd),
    )
    .await
    .map_err(|e| Error::kube("apply", "CustomResourceDefinition", "", &crd.name_any(), e))?;
    let crd_name = crd.name_any();
    let established = kube::runtime::wait::await_condition(
        crds.clone(),
        &crd_name,
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(30), established)
        .await
        .map_err(|_| {
            Error::Usage("the CRD was applied but did not become Established within 30 s".into())
        })?
        .map_err(|e| Error::Usage(format!("waiting for the CRD failed: {e}")))?;
    output::progress_line(&format!(
        "applied CustomResourceDefinition {}",
        crd.name_any()
    ));
    for doc in docs.iter().skip(1) {
        apply_dynamic(&s.client, doc).await?;
    }
    Ok(())
}

/// Server-side apply of one manifest given as JSON (install manifests).
async fn apply_dynamic(client: &Client, doc: &serde_json::Value) -> Result<(), Error> {
    let obj: kube::api::DynamicObject =
        serde_json::from_value(doc.clone()).map_err(|e| Error::Serialize(Box::new(e)))?;
    let tm = obj.types.clone().unwrap_or_default();
    let gvk = kube::api::GroupVersionKind::try_from(&tm)
        .map_err(|e| Error::Usage(format!("bad manifest: {e}")))?;
    let (ar, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .map_err(|e| Error::kube("discover", "APIResource", "", &gvk.kind, e))?;
    let name = obj.name_any();
    let api: Api<kube::api::DynamicObject> = match (caps.scope, obj.metadata.namespace.as_deref()) {
        (kube::discovery::Scope::Namespaced, Some(ns)) => {
            Api::namespaced_with(client.clone(), ns, &ar)
        }
        _ => Api::all_with(client.clone(), &ar),
    };
    api.patch(
        &name,
        &PatchParams::apply(objects::FIELD_MANAGER).force(),
        &Patch::Apply(&obj),
    )
    .await
    .map_err(|e| {
        Error::kube(
            "apply",
            "manifest",
            obj.metadata.namespace.as_deref().unwrap_or(""),
            &name,
            e,
        )
    })?;
    output::progress_line(&format!("applied {} {}", gvk.kind, name));
    Ok(())
}

/// True when stderr is a terminal (progress bars) — and false in CI.
pub fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(
            parse_duration("1500ms").unwrap(),
            Duration::from_millis(1500)
        );
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5d").is_err());
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn flags_parse_after_the_plugin_name() {
        let cli = Cli::try_parse_from([
            "kubectl-etcd",
            "-n",
            "team",
            "scale",
            "demo",
            "--replicas",
            "5",
            "--timeout",
            "90s",
            "-o",
            "json",
        ])
        .unwrap();
        assert_eq!(cli.global.namespace.as_deref(), Some("team"));
        assert_eq!(cli.global.output, Format::Json);
        assert!(matches!(cli.verb, Verb::Scale { replicas: 5, .. }));
    }

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
