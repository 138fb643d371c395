//! `kubectl etcd hibernate NAME [--to URL | --no-snapshot --yes]` and `kubectl etcd wake NAME`.
//!
//! Hibernate: a verified snapshot first (to `--to`, else `spec.backup.destination`; no snapshot,
//! no hibernation), then `spec.hibernate: true` with the snapshot named in an annotation for that
//! generation; the engine stops every member pod and keeps the volumes (`plan::hibernate`).
//! Wake: `spec.hibernate: false`; the engine starts the same members on their data.

use kube::api::Patch;
use serde_json::json;

use crate::api::{ANNOTATION_HIBERNATE_SNAPSHOT, HIBERNATE_SNAPSHOT_SKIPPED, KIND};
use crate::archive::store::Location;
use crate::cli::flags::{Global, WaitFlags};
use crate::cli::{Session, drive, output, usage};
use crate::engine::Context;
use crate::error::Error;
use crate::model::{self, Storage};

#[derive(clap::Args, Debug)]
pub struct Args {
    pub name: String,
    /// Where the snapshot taken before the members stop goes (default: the cluster's
    /// spec.backup.destination); s3:// or file://.
    #[arg(long)]
    pub to: Option<String>,
    /// Stop the members without a snapshot (the volumes keep the data); needs --yes.
    #[arg(long, conflicts_with = "to")]
    pub no_snapshot: bool,
    /// Confirm --no-snapshot.
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub wait: WaitFlags,
}

#[derive(clap::Args, Debug)]
pub struct WakeArgs {
    pub name: String,
    #[command(flatten)]
    pub wait: WaitFlags,
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let name = a.name.clone();
    model::validate_name(&name).map_err(|e| usage(&name, e))?;
    if a.no_snapshot && !a.yes {
        return Err(Error::Usage(format!(
            "--no-snapshot stops {name} with no snapshot to fall back on should a volume be lost \
             meanwhile; add --yes to confirm"
        )));
    }
    let s = Session::connect(g).await?;
    s.ensure_crd_current().await?;
    let ns = s.namespace.clone();
    let (cluster, d) = s.load_cluster(&name).await?;
    if d.storage == Storage::Ephemeral {
        return Err(Error::Usage(format!(
            "EtcdCluster {ns}/{name} keeps its data in emptyDir volumes (spec.storage.ephemeral), \
             which stopping its members would delete; take a backup and delete it instead"
        )));
    }
    if cluster.spec.hibernate {
        output::progress_line(&format!(
            "EtcdCluster {ns}/{name}: spec.hibernate is set already"
        ));
        return drive::drive(&s, g, cluster, &a.wait).await;
    }
    let plan = d.backup.as_ref();
    let destination =
        destination(&a, plan).map_err(|e| Error::Usage(format!("EtcdCluster {ns}/{name}: {e}")))?;
    let stop = format!(
        "set spec.hibernate of EtcdCluster {ns}/{name}: its {} member pods stop (StatefulSet to \
         0); volumes, member config and membership stay, and `kubectl etcd wake {name}` starts \
         the same members on their data",
        cluster.spec.replicas
    );
    if a.wait.dry_run {
        let first = match &destination {
            Some(loc) => format!("a verified snapshot to {loc} first"),
            None => "no snapshot (--no-snapshot)".into(),
        };
        return output::print_dry_run(g.output, &[first, stop], &[], None);
    }
    let recorded = match destination {
        None => HIBERNATE_SNAPSHOT_SKIPPED.to_string(),
        Some(loc) => {
            let ctx = Context::new(s.client.clone(), s.dial);
            super::upgrade::snapshot(
                &s,
                (&ctx, &cluster),
                (loc, plan),
                ("snapshot before hibernating", "no member was stopped"),
            )
            .await?
        }
    };
    // The patch sets spec.hibernate (generation + 1) and names the snapshot for that generation;
    // the resourceVersion makes it fail, changing nothing, if the cluster changed meanwhile.
    let generation = cluster.metadata.generation.unwrap_or(0) + 1;
    let patched = s
        .clusters()
        .patch(
            &name,
            &super::intent_patch(),
            &Patch::Merge(json!({
                "metadata": {
                    "resourceVersion": cluster.metadata.resource_version,
                    "annotations": {ANNOTATION_HIBERNATE_SNAPSHOT: format!("{generation} {recorded}")},
                },
                "spec": {"hibernate": true},
            })),
        )
        .await
        .map_err(|e| Error::kube("hibernate", KIND, &ns, &name, e))?;
    output::progress_line(&format!(
        "EtcdCluster {ns}/{name}: hibernating (snapshot: {recorded})"
    ));
    drive::drive(&s, g, patched, &a.wait).await
}

/// Where the snapshot goes: `--to`, else the cluster's backup destination; `None` with
/// `--no-snapshot`. Refused (the message) without either, or for pvc://.
fn destination(a: &Args, plan: Option<&model::BackupPlan>) -> Result<Option<Location>, String> {
    let url = match (&a.to, a.no_snapshot) {
        (_, true) => return Ok(None),
        (Some(url), false) => url.clone(),
        (None, false) => match plan {
            Some(p) => p.to.location.to_string(),
            None => {
                return Err(
                    "no backup destination for the snapshot taken before hibernating: \
                     set spec.backup.destination, pass --to s3://bucket/prefix or file:///dir, or \
                     pass --no-snapshot --yes"
                        .into(),
                );
            }
        },
    };
    let loc = Location::parse(&url).map_err(|e| e.to_string())?;
    if matches!(loc, Location::Pvc { .. }) {
        return Err(format!(
            "{url}: the snapshot before hibernating does not go to pvc:// (its agent pod would \
             need a running member); pass --to s3://… or file://…"
        ));
    }
    Ok(Some(loc))
}

pub async fn wake(g: &Global, a: WakeArgs) -> Result<(), Error> {
    let name = a.name.clone();
    model::validate_name(&name).map_err(|e| usage(&name, e))?;
    let s = Session::connect(g).await?;
    s.ensure_crd_current().await?;
    let ns = s.namespace.clone();
    let mut cluster = s.get_cluster(&name).await?;
    if a.wait.dry_run {
        let line = if cluster.spec.hibernate {
            format!(
                "set spec.hibernate of EtcdCluster {ns}/{name} to false: its members start on \
                 their volumes, each as itself (same cluster id)"
            )
        } else {
            format!("EtcdCluster {ns}/{name} is not hibernating: nothing to change")
        };
        cluster.spec.hibernate = false;
        return drive::dry_run(&s, g, &cluster, &[line]).await;
    }
    if !cluster.spec.hibernate {
        output::progress_line(&format!("EtcdCluster {ns}/{name} is not hibernating"));
        return drive::drive(&s, g, cluster, &a.wait).await;
    }
    let patched = s
        .clusters()
        .patch(
            &name,
            &super::intent_patch(),
            &Patch::Merge(json!({"spec": {"hibernate": false}})),
        )
        .await
        .map_err(|e| Error::kube("wake", KIND, &ns, &name, e))?;
    output::progress_line(&format!(
        "EtcdCluster {ns}/{name}: waking, the members start on their volumes"
    ));
    drive::drive(&s, g, patched, &a.wait).await
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[test]
    fn hibernating_without_a_snapshot_needs_an_explicit_yes() {
        let cli =
            crate::cli::Cli::try_parse_from(["kubectl-etcd", "hibernate", "demo", "--no-snapshot"])
                .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = rt.block_on(crate::cli::run(cli)).unwrap_err();
        assert_eq!(err.exit_code(), crate::error::exit::USAGE);
        assert!(err.to_string().contains("--yes"), "{err}");
    }
}
