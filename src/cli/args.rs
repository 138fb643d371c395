//! The command line: the verb enum.
//!
//! Help text lives in the doc comments here (an example per verb); the global flags and the
//! flags verbs share live in `flags`, each verb's own flags next to its code in `verbs/`. Adding
//! a verb is a variant below and a line in `cli::run`.

use clap::{Parser, Subcommand};

use super::flags::Global;
use super::generate;
use super::verbs::{
    adopt, backup, certificate, create, defrag, delete, hibernate, install, logs, operate,
    reconcile, recover, report, restore, rotate_ca, scale, status, tls, upgrade,
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

#[derive(Subcommand, Debug)]
pub enum Verb {
    /// Create an etcd cluster and wait until it is Ready.
    ///
    /// Example: kubectl etcd create demo --replicas 3 --version 3.6.16 --storage 1Gi
    Create(create::Args),
    /// Change the number of members, or grow or move the member volumes.
    ///
    /// Members are added and removed one at a time; volumes grow in place where the StorageClass
    /// allows expansion, else they move one member at a time.
    ///
    /// Examples: kubectl etcd scale demo --replicas 5; kubectl etcd scale demo --storage 2Gi --dry-run;
    /// kubectl etcd scale demo --storage-class fast
    Scale(scale::Args),
    /// Move every member to another etcd version, one member at a time.
    ///
    /// A verified snapshot first; rolls back by itself when an upgraded member does not become
    /// healthy.
    ///
    /// Examples: kubectl etcd upgrade demo --version 3.5.16 --dry-run;
    /// kubectl etcd upgrade demo --version 3.5.16 --to s3://backups/etcd
    Upgrade(upgrade::Args),
    /// Take over an etcd cluster that runs outside kubectl-etcd, with no downtime.
    ///
    /// The old cluster is a StatefulSet (e.g. Bitnami's chart): new members join it as learners,
    /// are promoted, take over leadership, and the old members are retired one at a time (same
    /// cluster id, same revisions). Surveys first and refuses what cannot be adopted safely (exit
    /// 11); changes nothing without --yes; run again after a crash, it resumes.
    ///
    /// Examples: kubectl etcd adopt etcd-main --from statefulset/etcd --dry-run;
    /// kubectl etcd adopt etcd-main --from statefulset/etcd --take-over-service --yes --timeout 15m;
    /// kubectl etcd adopt etcd-main --abort
    Adopt(adopt::Args),
    /// Take a snapshot now, to S3, a file or a volume (`backup list NAME` lists them).
    ///
    /// Examples: kubectl etcd backup demo --to s3://backups/etcd -o json;
    /// kubectl etcd backup demo --to file:///var/backups --compression gzip; kubectl etcd backup list demo
    Backup(backup::Args),
    /// Create a new cluster from a backup (verified before anything is created).
    ///
    /// Examples: kubectl etcd restore demo2 --latest-of demo; kubectl etcd restore demo2 --from-backup demo-20261201101500;
    /// kubectl etcd restore demo2 --from s3://backups/etcd/default-demo-20261201T101500Z-r42.db.zst
    Restore(restore::Args),
    /// Issue a client certificate for an application from the cluster's own CA.
    ///
    /// Managed TLS only. Writes ca.crt, USER.crt and USER.key (0600) and prints their paths. etcd
    /// takes USER as the user once its authentication is on.
    ///
    /// Example: kubectl etcd certificate demo --user app --out ./app-certs
    Certificate(certificate::Args),
    /// Rotate the CA of a cluster with managed TLS, one member at a time.
    ///
    /// A new CA is trusted beside the old one, the members restarted one at a time, every
    /// certificate issued again, then the old CA dropped (another round of restarts). Clients of
    /// `kubectl etcd certificate` need a new one.
    ///
    /// Examples: kubectl etcd rotate-ca demo --dry-run; kubectl etcd rotate-ca demo
    RotateCa(rotate_ca::Args),
    /// Switch TLS on or off for a running cluster, one member at a time.
    ///
    /// On is managed TLS (client certificates, mutual peer TLS), off plain http. The members
    /// restart one at a time (three rounds) and move their peer URLs by etcd member updates; no
    /// acknowledged write is lost, quorum is kept throughout.
    ///
    /// Examples: kubectl etcd tls demo --on --dry-run; kubectl etcd tls demo --on; kubectl etcd tls demo --off
    Tls(tls::Args),
    /// Rebuild a cluster that lost quorum from its best surviving member (or a backup).
    ///
    /// Shows what survives and what is at stake; changes nothing without --yes.
    /// Examples: kubectl etcd recover demo --dry-run; kubectl etcd recover demo --yes;
    /// kubectl etcd recover demo --from-member demo-2 --yes; kubectl etcd recover demo --from-backup demo-20261201101500 --yes
    Recover(recover::Args),
    /// Give the space of deleted and overwritten keys back, one member at a time.
    ///
    /// Followers first, the leader last, each only while every other voter answers; ends a
    /// NOSPACE alarm once every member is below its quota.
    ///
    /// Examples: kubectl etcd defrag demo --dry-run; kubectl etcd defrag demo --compact
    Defrag(defrag::Args),
    /// Stop every member after a verified snapshot, keeping the volumes.
    ///
    /// `kubectl etcd wake NAME` starts them again.
    ///
    /// Examples: kubectl etcd hibernate demo --to s3://backups/etcd; kubectl etcd hibernate demo --no-snapshot --yes
    Hibernate(hibernate::Args),
    /// Start the members of a hibernated cluster again (same members, same data).
    ///
    /// Example: kubectl etcd wake demo
    Wake(hibernate::WakeArgs),
    /// Tools the restore pods run inside the cluster.
    #[command(hide = true)]
    Snapshot {
        #[command(subcommand)]
        op: crate::pod_tools::SnapshotOp,
    },
    /// Show clusters, their members and the engine's next step (observes only).
    ///
    /// Examples: kubectl etcd status demo; kubectl etcd status -A -o json
    Status(status::Args),
    /// Print every member's etcd log, interleaved by time (reads only).
    ///
    /// Each line is prefixed with its member.
    ///
    /// Examples: kubectl etcd logs demo --since 10m; kubectl etcd logs demo --member demo-1 --follow;
    /// kubectl etcd logs demo --raw
    Logs(logs::Args),
    /// Write a support bundle (tar.gz) of a cluster or the operator (reads only).
    ///
    /// The cluster, its objects, events, members, the engine's next step and the operator's
    /// logs; Secret values never.
    ///
    /// What could not be read is listed in the archive's REPORT.md and index.json.
    /// Examples: kubectl etcd report demo; kubectl etcd report demo --logs --since 2h -f demo.tar.gz;
    /// kubectl etcd report --operator
    Report(report::Args),
    /// Run reconcile passes until a cluster converges (after a crash or a manual edit).
    ///
    /// Example: kubectl etcd reconcile demo
    Reconcile(reconcile::Args),
    /// Delete a cluster (its volumes are kept unless --delete-data --yes).
    ///
    /// Example: kubectl etcd delete demo --delete-data --yes
    Delete(delete::Args),
    /// Run the engine as a controller (in-cluster, or from a workstation for debugging).
    ///
    /// Example: kubectl etcd operate --metrics-addr 0.0.0.0:8080
    Operate(operate::Args),
    /// Install the CRDs, and with --operator the operator, into the current context.
    ///
    /// Example: kubectl etcd install --operator --image ghcr.io/kubectl-etcd/kubectl-etcd:0.1.0
    ///
    /// Example: kubectl etcd install --operator --monitoring
    Install(install::Args),
    /// Print the CRDs (EtcdCluster, EtcdBackup) as YAML (crds/crds.yaml is this output).
    Crd,
    /// Print the operator's install manifests as YAML (crds/operator.yaml is this output).
    ///
    /// Example: kubectl etcd manifests --image registry.example/kubectl-etcd:0.1.0 | kubectl apply -f -
    ///
    /// Example: kubectl etcd manifests --monitoring | kubectl apply -f -
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

impl Cli {
    /// The log filter when `RUST_LOG` is unset or empty: a verb `warn` (stderr is for people),
    /// `operate` `info`, `-v` info, `-vv` debug; `-v` on a verb also shows how long each phase
    /// took (`crate::phase`). The chatty client crates stay at `warn`, each named in full: a
    /// directive matches every target it is a prefix of (`kube=warn` would silence
    /// `kubectl_etcd` too).
    pub fn log_filter(&self) -> String {
        let operate = self.verb.is_long_running();
        let level = match (self.global.verbose, operate) {
            (0, false) => "warn",
            (0, true) | (1, _) => "info",
            _ => "debug",
        };
        let phases = if self.global.verbose > 0 && !operate {
            ",phase=debug"
        } else {
            ""
        };
        format!(
            "{level},kube_client=warn,kube_runtime=warn,kube_core=warn,tower=warn,hyper=warn,\
             hyper_util=warn,h2=warn{phases}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Format;
    use clap::CommandFactory;

    #[test]
    fn the_log_filter_quiets_other_crates_never_this_one() {
        let filter = |args: &[&str]| {
            let mut all = vec!["kubectl-etcd"];
            all.extend_from_slice(args);
            Cli::try_parse_from(all).unwrap().log_filter()
        };
        let operate = filter(&["operate"]);
        assert!(operate.starts_with("info,"), "{operate}");
        assert!(filter(&["status"]).starts_with("warn,"));
        assert!(filter(&["-v", "status"]).contains("phase=debug"));
        assert!(filter(&["-vv", "status"]).starts_with("debug,"));
        for directive in operate.split(',').skip(1) {
            let (target, _) = directive.split_once('=').unwrap();
            assert!(
                !"kubectl_etcd".starts_with(target),
                "{directive} would set this crate's own level"
            );
        }
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// `kubectl etcd --help` lists each verb in one short line, as kubectl does: the first
    /// paragraph of a verb's doc comment is its summary, the rest shows in `VERB --help`.
    #[test]
    fn help_lists_each_verb_in_one_short_line() {
        let help = Cli::command().render_help().to_string();
        let commands = help
            .split("Commands:\n")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .unwrap_or_else(|| panic!("no Commands section:\n{help}"));
        let verbs: Vec<String> = Cli::command()
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name().to_string())
            .collect();
        let lines: Vec<&str> = commands.lines().collect();
        assert_eq!(
            lines.len(),
            verbs.len() + 1,
            "one line a verb, and help:\n{commands}"
        );
        for line in lines {
            let verb = line.split_whitespace().next().unwrap_or_default();
            assert!(
                verb == "help" || verbs.iter().any(|v| v == verb),
                "a line that names no verb (a summary of two lines?): {line:?}"
            );
            assert!(
                line.len() <= 100,
                "a summary too long for one line: {line:?}"
            );
        }
        for c in Cli::command()
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
        {
            let about = c.get_about().map(ToString::to_string).unwrap_or_default();
            assert!(
                !about.is_empty() && about.len() <= 84,
                "{}: a one-line summary of at most 84 characters, the rest after a blank line: {about:?}",
                c.get_name()
            );
        }
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
            Verb::Scale(scale::Args {
                replicas: Some(5),
                ..
            })
        ));
    }

    #[test]
    fn dial_is_one_global_flag_port_forward_unless_told() {
        use crate::reach::Dial;
        let dial = |args: &[&str], default: Dial| {
            let mut all = vec!["kubectl-etcd"];
            all.extend_from_slice(args);
            Cli::try_parse_from(all).unwrap().global.dial_or(default)
        };
        assert_eq!(
            dial(&["status", "demo"], Dial::PortForward),
            Dial::PortForward
        );
        // Before or after the verb, for every verb (`operate` kept its spelling).
        assert_eq!(
            dial(&["--dial", "direct", "backup", "demo"], Dial::PortForward),
            Dial::Direct
        );
        assert_eq!(
            dial(&["operate", "--dial", "port-forward"], Dial::Direct),
            Dial::PortForward
        );
        assert_eq!(dial(&["operate"], Dial::Direct), Dial::Direct);
        assert!(Cli::try_parse_from(["kubectl-etcd", "status", "--dial", "udp"]).is_err());
    }
}
