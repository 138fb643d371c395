//! The command line: global flags, the verb enum, and the flags verbs share.
//!
//! Help text lives in the doc comments here (an example per verb); each verb's own flags live
//! next to its code in `verbs/`. Adding a verb is a variant below and a line in `cli::run`.

use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use super::generate;
use super::output::Format;
use super::verbs::{
    backup, create, delete, install, operate, reconcile, restore, scale, status, upgrade,
};

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
    Create(create::Args),
    /// Change the number of voting members, one member at a time.
    ///
    /// Example: kubectl etcd scale demo --replicas 5
    Scale(scale::Args),
    /// Move every member to another etcd version, one member at a time, after a verified
    /// snapshot; rolls back by itself when an upgraded member does not become healthy.
    ///
    /// Examples: kubectl etcd upgrade demo --version 3.5.16 --dry-run;
    /// kubectl etcd upgrade demo --version 3.5.16 --to s3://backups/etcd
    Upgrade(upgrade::Args),
    /// Take a snapshot now and stream it to S3 or a file; `backup list NAME` lists backups.
    ///
    /// Examples: kubectl etcd backup demo --to s3://backups/etcd -o json;
    /// kubectl etcd backup demo --to file:///var/backups --compression gzip; kubectl etcd backup list demo
    Backup(backup::Args),
    /// Create a new cluster from a backup (verified before anything is created).
    ///
    /// Examples: kubectl etcd restore demo2 --latest-of demo; kubectl etcd restore demo2 --from-backup demo-20261201101500;
    /// kubectl etcd restore demo2 --from s3://backups/etcd/default-demo-20261201T101500Z-r42.db.zst
    Restore(restore::Args),
    /// Tools the restore pods run inside the cluster.
    #[command(hide = true)]
    Snapshot {
        #[command(subcommand)]
        op: restore::SnapshotOp,
    },
    /// Show clusters, their members and the engine's next step (observes only).
    ///
    /// Examples: kubectl etcd status demo; kubectl etcd status -A -o json
    Status(status::Args),
    /// Run reconcile passes on a cluster until it converges (repairs after a crash or a manual edit).
    ///
    /// Example: kubectl etcd reconcile demo
    Reconcile(reconcile::Args),
    /// Delete a cluster. Member volumes are kept unless --delete-data --yes is given.
    ///
    /// Example: kubectl etcd delete demo --delete-data --yes
    Delete(delete::Args),
    /// Run the engine as a controller (in-cluster, or from a workstation for debugging).
    ///
    /// Example: kubectl etcd operate --metrics-addr 0.0.0.0:8080
    Operate(operate::Args),
    /// Install the CRD (and with --operator the in-cluster operator) into the current context.
    ///
    /// Example: kubectl etcd install --operator --image ghcr.io/kubectl-etcd/kubectl-etcd:0.1.0
    Install(install::Args),
    /// Print the CRDs (EtcdCluster, EtcdBackup) as YAML (crds/crds.yaml is this output).
    Crd,
    /// Print the operator's install manifests as YAML (crds/operator.yaml is this output).
    ///
    /// Example: kubectl etcd manifests --image registry.example/kubectl-etcd:0.1.0 | kubectl apply -f -
    Manifests(generate::ManifestsArgs),
    /// Print shell completions (the files in completions/ are this output).
    ///
    /// `kubectl` gives `kubectl_complete-etcd`, the helper kubectl (1.26+) runs for
    /// `kubectl etcd <TAB>`; install.sh puts it on PATH.
    Completions(generate::CompletionsArgs),
}

impl Verb {
    /// `operate` logs at `info` by default; the other verbs at `warn` (stderr is for people).
    pub fn is_long_running(&self) -> bool {
        matches!(self, Verb::Operate(_))
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

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
        assert!(matches!(
            cli.verb,
            Verb::Scale(scale::Args { replicas: 5, .. })
        ));
    }
}
