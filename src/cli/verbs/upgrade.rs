//! `kubectl etcd upgrade NAME --version V [--dry-run] [--yes] [--skip-backup]`.
//!
//! Everything is checked before anything is written: the version, the path from what the members
//! report they run (`plan::upgrade`), the backup destination. Then a verified snapshot is taken
//! (no snapshot, no upgrade), `spec.version` is written with the snapshot named in an annotation,
//! and the engine rolls the members one at a time (the same rollout `kubectl apply` of
//! `spec.version` gets from the operator).

use jiff::Timestamp;
use kube::ResourceExt;
use kube::api::Patch;
use serde_json::json;

use crate::api::{ANNOTATION_PRE_UPGRADE_BACKUP, KIND, PRE_UPGRADE_BACKUP_SKIPPED, upgrade_state};
use crate::archive::Destination;
use crate::archive::codec::Compression;
use crate::archive::naming::object_key;
use crate::archive::store::Location;
use crate::cli::flags::{Global, WaitFlags};
use crate::cli::verbs::backup::bad_url;
use crate::cli::{Session, drive, output, usage};
use crate::engine::Context;
use crate::error::Error;
use crate::model::records::label;
use crate::model::{self, Version};
use crate::plan::upgrade::{self, PathKind};

#[derive(clap::Args, Debug)]
pub struct Args {
    pub name: String,
    /// The etcd version to move every member to (e.g. 3.5.16).
    #[arg(long)]
    pub version: String,
    /// Where the pre-upgrade snapshot goes (default: the cluster's spec.backup.destination).
    #[arg(long)]
    pub to: Option<String>,
    /// Upgrade without a pre-upgrade snapshot (recorded in status.upgrade); needs --yes.
    #[arg(long)]
    pub skip_backup: bool,
    /// Confirm --skip-backup.
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub wait: WaitFlags,
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let span = crate::phase!("upgrade", cluster = %a.name);
    crate::phase::timed(span, upgrade(g, a)).await
}

async fn upgrade(g: &Global, a: Args) -> Result<(), Error> {
    let name = a.name.clone();
    let to = check_flags(&a)?;
    let s = Session::connect(g).await?;
    s.ensure_crd_current().await?;
    let ns = s.namespace.clone();
    let (mut cluster, current) = s.load_cluster(&name).await?;
    let ctx = Context::new(s.client.clone(), s.dial);
    let (_, observed) = crate::engine::observe(&ctx, &current, cluster.status.as_ref()).await?;
    let (lowest, highest) = running_versions(&s, &cluster, &observed, to)?;
    let kind = upgrade::check_change(&current, &observed, lowest, highest, to).map_err(|r| {
        Error::Usage(format!(
            "EtcdCluster {ns}/{name} cannot go from {} to {to}: {r}",
            if lowest == highest {
                lowest.to_string()
            } else {
                format!("{lowest}..{highest}")
            }
        ))
    })?;
    if kind == PathKind::Same && cluster.spec.version == to.to_string() {
        output::progress_line(&format!(
            "EtcdCluster {ns}/{name}: every member runs {to} already"
        ));
        return output::print_cluster(g.output, &cluster);
    }

    // The snapshot's destination, checked before anything is written.
    let plan = current.backup.as_ref();
    let destination = snapshot_destination(&s, &a, kind, plan)?;
    let from = if kind == PathKind::Rollback {
        highest
    } else {
        lowest
    };
    if a.wait.dry_run {
        let mut lines = upgrade::describe(&current, &observed, from, to);
        lines.insert(
            1,
            dry_run_snapshot(&s, &name, kind, to, destination.as_ref()),
        );
        lines.push(format!(
            "set spec.version of EtcdCluster {ns}/{name} from {} to {to}",
            cluster.spec.version
        ));
        return output::print_dry_run(g.output, &lines, &[], None);
    }

    let annotation = match destination {
        None if kind == PathKind::Same => String::new(),
        None => format!("{to} {PRE_UPGRADE_BACKUP_SKIPPED}"),
        Some(destination) => {
            let taking = snapshot(
                &s,
                (&ctx, &cluster),
                (destination, plan),
                ("pre-upgrade snapshot", "nothing was upgraded"),
            );
            let url = crate::phase::timed(crate::phase!("pre_upgrade_snapshot"), taking).await?;
            format!("{to} {url}")
        }
    };
    cluster.spec.version = to.to_string();
    s.validate(&name, &cluster)?;
    let patched = s
        .clusters()
        .patch(
            &name,
            &super::intent_patch(),
            &Patch::Merge(json!({
                "metadata": {"annotations": {ANNOTATION_PRE_UPGRADE_BACKUP: annotation}},
                "spec": {"version": to.to_string()},
            })),
        )
        .await
        .map_err(|e| Error::kube("upgrade", KIND, &ns, &name, e))?;
    output::progress_line(&format!(
        "EtcdCluster {ns}/{name}: version {from} → {to}, one member at a time"
    ));
    drive::drive(&s, g, patched, &a.wait).await?;
    if a.wait.no_wait {
        return Ok(());
    }
    refuse_a_rollback(&s, &name, to).await
}

/// The flags that need no cluster: the name, the target version, --skip-backup confirmed.
fn check_flags(a: &Args) -> Result<Version, Error> {
    let name = &a.name;
    model::validate_name(name).map_err(|e| usage(name, e))?;
    let to = model::validate_version(&a.version).map_err(|e| usage(name, e))?;
    if a.skip_backup && !a.yes {
        return Err(Error::Usage(format!(
            "--skip-backup upgrades {name} without a snapshot to go back to; add --yes to confirm"
        )));
    }
    Ok(to)
}

/// The lowest and highest version the members run, as they report it (the last recorded version
/// when none answers); refused when nobody says.
fn running_versions(
    s: &Session,
    cluster: &crate::api::EtcdCluster,
    observed: &model::Observed,
    to: Version,
) -> Result<(Version, Version), Error> {
    let reported = upgrade::running(observed);
    let last = observed.last_version;
    match (
        reported.iter().min().copied().or(last),
        reported.iter().max().copied().or(last),
    ) {
        (Some(lowest), Some(highest)) => Ok((lowest, highest)),
        _ => {
            let (ns, name) = (&s.namespace, cluster.name_any());
            Err(Error::Usage(format!(
                "EtcdCluster {ns}/{name}: no member reports its version yet, so the path to {to} cannot be checked; wait until it is Ready (`kubectl etcd status {name}`)"
            )))
        }
    }
}

/// Where the pre-upgrade snapshot goes: --to, else spec.backup.destination; none when skipped or
/// when nothing moves (every member runs the target already, e.g. back after a rollback).
fn snapshot_destination(
    s: &Session,
    a: &Args,
    kind: PathKind,
    plan: Option<&model::BackupPlan>,
) -> Result<Option<Location>, Error> {
    let needs_snapshot = kind != PathKind::Same && !a.skip_backup;
    let destination = match (&a.to, needs_snapshot) {
        (_, false) => None,
        (Some(url), true) => Some(url.clone()),
        (None, true) => plan.map(|p| p.to.location.to_string()),
    };
    match destination {
        None if needs_snapshot => Err(Error::Usage(format!(
            "EtcdCluster {}/{} has no backup destination for the pre-upgrade snapshot: set spec.backup.destination, pass --to s3://bucket/prefix or file:///dir, or pass --skip-backup --yes",
            s.namespace, a.name
        ))),
        None => Ok(None),
        Some(url) => {
            let loc = Location::parse(&url).map_err(bad_url)?;
            if matches!(loc, Location::Pvc { .. }) {
                return Err(Error::Usage(format!(
                    "{url}: the pre-upgrade snapshot does not go to pvc:// (take one first with `kubectl etcd backup NAME --to pvc://…` and pass --skip-backup --yes, or pass --to s3://… or file://…)"
                )));
            }
            Ok(Some(loc))
        }
    }
}

/// The dry run's line about the pre-upgrade snapshot.
fn dry_run_snapshot(
    s: &Session,
    name: &str,
    kind: PathKind,
    to: Version,
    destination: Option<&Location>,
) -> String {
    match destination {
        Some(d) => format!(
            "before the first member changes: a verified snapshot to {}",
            d.object_url(&object_key(
                &s.namespace,
                name,
                Timestamp::now(),
                0,
                Compression::default(),
                false,
            ))
            .replace("-r0.db", "-r<revision>.db")
        ),
        None if kind == PathKind::Same => {
            format!("every member runs {to} already: no snapshot needed")
        }
        None => "no pre-upgrade snapshot (--skip-backup; recorded in status.upgrade)".into(),
    }
}

/// Converged can mean rolled back: that is a failed upgrade.
async fn refuse_a_rollback(s: &Session, name: &str, to: Version) -> Result<(), Error> {
    let after = s.get_cluster(name).await?;
    if let Some(u) = after.status.as_ref().and_then(|st| st.upgrade.as_ref())
        && (u.state == upgrade_state::ROLLED_BACK || u.state == upgrade_state::ROLLING_BACK)
        && u.to_version == to.to_string()
    {
        return Err(Error::Held {
            namespace: s.namespace.clone(),
            name: name.to_string(),
            message: format!(
                "the upgrade to {to} was rolled back to {}: {}",
                u.from_version,
                u.message.as_deref().unwrap_or("")
            ),
        });
    }
    Ok(())
}

/// Takes a snapshot before a change (`what`: "pre-upgrade snapshot"; `nothing`: what a failure
/// left undone) through the engine (the one backup recipe) and returns its URL; fails unless it
/// was stored and verified. `hibernate` takes its snapshot here too.
pub(super) async fn snapshot(
    s: &Session,
    (ctx, cluster): (&Context, &crate::api::EtcdCluster),
    (destination, plan): (Location, Option<&model::BackupPlan>),
    (what, nothing): (&str, &str),
) -> Result<String, Error> {
    let (ns, name) = (&s.namespace, cluster.name_any());
    // The cluster's credentials, compression and SSE, to wherever the snapshot goes.
    let to = match plan {
        Some(p) => Destination {
            location: destination,
            ..p.to.clone()
        },
        None => Destination::at(destination),
    };
    // pvc:// is refused above: no agent pod.
    let req = ctx.backup_request(to, label::TRIGGER_CLI);
    let progress = output::Progress::new(&format!("{ns}/{name}"));
    progress.step(&format!("{what} to {}", req.to.location));
    let record = match crate::engine::backups::take(ctx, cluster, &req, &|_| {}).await {
        Ok(r) => r,
        Err(e) => {
            progress.abandon();
            return Err(e);
        }
    };
    let st = record.status.clone().unwrap_or_default();
    let Some(url) = st.url.clone().filter(|_| st.verified) else {
        progress.abandon();
        return Err(Error::Held {
            namespace: ns.clone(),
            name,
            message: format!(
                "the {what} {} was not verified ({}); {nothing}",
                record.name_any(),
                st.message.as_deref().unwrap_or("no message")
            ),
        });
    };
    progress.finish(&format!(
        "{what} {} stored at {url} ({})",
        record.name_any(),
        output::human_bytes(st.size.unwrap_or(0))
    ));
    Ok(url)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[test]
    fn skipping_the_snapshot_needs_an_explicit_yes() {
        let cli = crate::cli::Cli::try_parse_from([
            "kubectl-etcd",
            "upgrade",
            "demo",
            "--version",
            "3.5.16",
            "--skip-backup",
        ])
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = rt.block_on(crate::cli::run(cli)).unwrap_err();
        assert_eq!(err.exit_code(), crate::error::exit::USAGE);
        assert!(err.to_string().contains("--yes"), "{err}");
    }

    #[test]
    fn an_unknown_version_is_refused_before_any_connection() {
        for bad in ["3.9.0", "banana", "3.5"] {
            let cli = crate::cli::Cli::try_parse_from([
                "kubectl-etcd",
                "upgrade",
                "demo",
                "--version",
                bad,
            ])
            .unwrap();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let err = rt.block_on(crate::cli::run(cli)).unwrap_err();
            assert_eq!(err.exit_code(), crate::error::exit::USAGE, "{bad}: {err}");
        }
    }
}
