//! `kubectl etcd backup NAME --to URL` and `kubectl etcd backup list NAME`.
//!
//! Validation comes first: a bad URL, a missing bucket or wrong credentials fail before any object
//! is created.

use std::time::Instant;

use clap::Subcommand;
use jiff::Timestamp;
use kube::ResourceExt;

use crate::archive::Destination;
use crate::archive::codec::Compression;
use crate::archive::crypt::KeySecret;
use crate::archive::naming::{object_key, record_name};
use crate::archive::store::{Location, Sse};
use crate::cli::flags::Global;
use crate::cli::{Session, output, usage};
use crate::engine::Context;
use crate::engine::backups::{self, Request};
use crate::error::Error;
use crate::model;
use crate::model::records::{label, select};

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    pub list: Option<BackupSub>,
    /// Cluster to back up.
    #[arg(required = true)]
    pub name: Option<String>,
    /// Destination: s3://bucket/prefix[?endpoint=URL&region=R&pathStyle=true], file:///dir (this
    /// machine) or pvc://claim/dir (a PersistentVolumeClaim of the cluster's namespace; default: the
    /// cluster's spec.backup.destination).
    #[arg(long)]
    pub to: Option<String>,
    /// none, gzip or zstd (default: the cluster's spec.backup.compression, else zstd).
    #[arg(long)]
    pub compression: Option<Compression>,
    /// Secret (in the cluster's namespace) holding S3 credentials; default: the standard AWS
    /// chain of this machine (AWS_ACCESS_KEY_ID…, profile).
    #[arg(long)]
    pub credentials_secret: Option<String>,
    /// Server-side encryption S3 applies to the object: AES256 or aws:kms (s3:// only; default:
    /// the cluster's spec.backup.serverSideEncryption when --to is not given).
    #[arg(long, value_name = "AES256|aws:kms")]
    pub sse: Option<String>,
    /// The KMS key (id, ARN or alias) of --sse aws:kms (default: the account's aws/s3 key).
    #[arg(long, requires = "sse")]
    pub sse_kms_key_id: Option<String>,
    /// Encrypt the backup on this side (AES-256-GCM, streamed) with the key in this Secret of
    /// the cluster's namespace (NAME or NAME/KEY, default key `key`; 32 bytes or 64 hex digits,
    /// e.g. `kubectl create secret generic backup-key --from-literal=key=$(openssl rand -hex 32)`).
    /// The object ends in `.enc`; its record names the Secret. Default: the cluster's
    /// spec.backup.encryption when --to is not given.
    #[arg(long, value_name = "NAME[/KEY]")]
    pub encryption_key_secret: Option<String>,
    /// Show which member would be snapshotted and where it would go; take nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Image holding kubectl-etcd, for the pod that writes to a pvc:// destination.
    #[arg(long, env = "KUBECTL_ETCD_TOOLS_IMAGE", default_value = crate::model::DEFAULT_TOOLS_IMAGE)]
    pub tools_image: String,
}

#[derive(Subcommand, Debug)]
pub enum BackupSub {
    /// List the backups of a cluster (newest first): size, revision, age, verified.
    ///
    /// Example: kubectl etcd backup list demo -o json
    List {
        /// Cluster whose backups to list (its records outlive it).
        name: String,
    },
    /// Restore drill: restore a backup into a throwaway one-member etcd (one pod, no Service,
    /// a NetworkPolicy admitting nothing) and compare its revision, key count and HashKV with
    /// the record and the live cluster; the result goes on the record (status.drill) and the
    /// pod goes. Exit 13 when the drill fails. The live cluster is only read.
    ///
    /// Example: kubectl etcd backup verify --latest-of demo
    Verify {
        /// The EtcdBackup to drill.
        #[arg(required_unless_present = "latest_of", conflicts_with = "latest_of")]
        name: Option<String>,
        /// Drill the newest good backup of this cluster.
        #[arg(long, value_name = "CLUSTER")]
        latest_of: Option<String>,
        /// Image holding kubectl-etcd, for the drill pod's fetch and reading.
        #[arg(long, env = "KUBECTL_ETCD_TOOLS_IMAGE", default_value = crate::model::DEFAULT_TOOLS_IMAGE)]
        tools_image: String,
    },
}

pub(crate) fn bad_url(e: impl std::fmt::Display) -> Error {
    Error::Usage(e.to_string())
}

/// `kubectl etcd backup NAME [--to URL]`.
pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    match a.list {
        Some(BackupSub::List { name }) => return list(g, &name).await,
        Some(BackupSub::Verify {
            name,
            latest_of,
            tools_image,
        }) => return verify(g, name, latest_of, &tools_image).await,
        None => {}
    }
    let name = a.name.unwrap_or_default();
    model::validate_name(&name).map_err(|e| usage(&name, e))?;
    let s = Session::connect(g).await?;
    s.ensure_crd().await?;
    let (cluster, desired) = s.load_cluster(&name).await?;
    // The cluster's backup plan fills in what the flags leave out (its SSE only for its own
    // destination).
    let plan = desired.backup.as_ref();
    let location = match a.to.as_deref() {
        Some(url) => Location::parse(url).map_err(bad_url)?,
        None => plan.map(|p| p.to.location.clone()).ok_or_else(|| {
            Error::Usage(format!(
                "no destination for the backup of {}/{name}: pass --to s3://bucket/prefix or file:///dir, or set spec.backup.destination",
                s.namespace
            ))
        })?,
    };
    let sse = match &a.sse {
        Some(alg) => Some(Sse::parse(alg, a.sse_kms_key_id.as_deref()).map_err(Error::Usage)?),
        None if a.to.is_none() => plan.and_then(|p| p.to.sse.clone()),
        None => None,
    };
    let encryption = match &a.encryption_key_secret {
        Some(k) => Some(KeySecret::parse(k).map_err(Error::Usage)?),
        None if a.to.is_none() => plan.and_then(|p| p.to.encryption.clone()),
        None => None,
    };
    let to = Destination {
        encryption,
        location,
        compression: a
            .compression
            .or(plan.map(|p| p.to.compression))
            .unwrap_or_default(),
        credentials_secret: a
            .credentials_secret
            .or_else(|| plan.and_then(|p| p.to.credentials_secret.clone())),
        sse,
    };
    let ctx = Context::new(s.client.clone(), s.dial);
    let mut req = ctx.backup_request(to, label::TRIGGER_CLI);
    req.tools_image = a.tools_image;
    if a.dry_run {
        return dry_run(g, &s, &ctx, &name, &desired, &req).await;
    }
    let progress = output::Progress::new(&format!("{}/{name}", s.namespace));
    progress.step(&format!("streaming a snapshot to {}", req.to.location));
    let started = Instant::now();
    let shown = |n: u64| {
        let secs = started.elapsed().as_secs_f64().max(0.001);
        progress.step(&format!(
            "stored {} ({}/s)",
            output::human_bytes(n as i64),
            output::human_bytes((n as f64 / secs) as i64)
        ));
    };
    let taking = backups::take(&ctx, &cluster, &req, &shown);
    match crate::phase::timed(crate::phase!("backup", cluster = %name), taking).await {
        Ok(record) => {
            let st = record.status.clone().unwrap_or_default();
            progress.finish(&format!(
                "backup {} stored at {} ({}, sha256 {})",
                record.name_any(),
                st.url.as_deref().unwrap_or(""),
                output::human_bytes(st.size.unwrap_or(0)),
                st.sha256.as_deref().unwrap_or("")
            ));
            if let Some(m) = &st.message {
                output::progress_line(&format!("warning: {m}"));
            }
            output::print_backups(g.output, &[record])
        }
        Err(e) => {
            progress.abandon();
            Err(e)
        }
    }
}

/// `--dry-run`: the store answers (probed, then closed), and which member would be snapshotted
/// to where.
async fn dry_run(
    g: &Global,
    s: &Session,
    ctx: &Context,
    name: &str,
    desired: &model::Desired,
    req: &Request,
) -> Result<(), Error> {
    let compression = req.to.compression;
    let source = backups::would_take(ctx, desired, req).await?;
    let lines = vec![
        format!(
            "snapshot {} (raft index {}, etcd {}){}",
            source.member,
            source.raft_index,
            source.version,
            if source.quorum {
                ""
            } else {
                " — the cluster has no healthy quorum"
            }
        ),
        format!(
            "stream it {} to {}",
            match compression {
                Compression::None => "uncompressed".to_string(),
                c => format!("{c}-compressed"),
            },
            req.to
                .location
                .object_url(&object_key(
                    &s.namespace,
                    name,
                    Timestamp::now(),
                    0,
                    compression,
                    req.to.encryption.is_some(),
                ))
                .replace("-r0.db", "-r<revision>.db")
        ),
        format!(
            "record it as EtcdBackup {}/{}",
            s.namespace,
            record_name(name, Timestamp::now())
        ),
    ];
    output::print_dry_run(g.output, &lines, &[], None)
}

async fn list(g: &Global, cluster: &str) -> Result<(), Error> {
    let s = Session::connect(g).await?;
    s.ensure_crd().await?;
    let list = backups::records(&s.client, &s.namespace, cluster).await?;
    let live = s
        .clusters()
        .get_opt(cluster)
        .await
        .map_err(|e| Error::kube("get", crate::api::KIND, &s.namespace, cluster, e))?;
    for line in list_notes(&list, live.as_ref().map(backups::identity)) {
        output::progress_line(&line);
    }
    output::print_backups(g.output, &list)
}

/// `kubectl etcd backup verify NAME | --latest-of CLUSTER`: one restore drill.
async fn verify(
    g: &Global,
    name: Option<String>,
    latest_of: Option<String>,
    tools_image: &str,
) -> Result<(), Error> {
    let s = Session::connect(g).await?;
    s.ensure_crd().await?;
    let record = match (name, latest_of) {
        (Some(name), _) => {
            let api: kube::Api<crate::api::EtcdBackup> =
                kube::Api::namespaced(s.client.clone(), &s.namespace);
            api.get_opt(&name)
                .await
                .map_err(|e| Error::kube("get", "EtcdBackup", &s.namespace, &name, e))?
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "EtcdBackup {}/{name} not found; list backups with `kubectl etcd backup list CLUSTER`",
                        s.namespace
                    ))
                })?
        }
        (None, cluster) => {
            let cluster = cluster.unwrap_or_default();
            let (list, live) =
                backups::records_and_cluster(&s.client, &s.namespace, &cluster).await?;
            let who = live.as_ref().map(backups::identity);
            select::latest(&list, who, select::Prefer::Newest)
                .map_err(|why| Error::Usage(format!("{why} for {}/{cluster}", s.namespace)))?
                .pick
                .clone()
        }
    };
    let backup = format!("{}/{}", s.namespace, record.name_any());
    let (cluster, _) = s.load_cluster(&record.spec.cluster).await?;
    let progress = output::Progress::new(&backup);
    progress.step("restoring it into a throwaway etcd");
    let ctx = Context::new(s.client.clone(), s.dial);
    let (written, verdict) = match backups::drill(&ctx, &cluster, &record, tools_image).await {
        Ok(done) => done,
        Err(e) => {
            progress.abandon();
            return Err(e);
        }
    };
    let drill = written
        .status
        .as_ref()
        .and_then(|st| st.drill.clone())
        .unwrap_or_default();
    let figures = match (drill.revision, drill.keys, drill.hash_kv) {
        (Some(r), Some(k), Some(h)) => format!(
            "revision {r}, {k} keys, HashKV {h}{}",
            match drill.live_hash_kv {
                Some(l) => format!(" (the live cluster's: {l})"),
                None => String::new(),
            }
        ),
        _ => "nothing restored".into(),
    };
    progress.finish(&format!("restore drill {}: {figures}", verdict.outcome()));
    for note in &verdict.notes {
        output::progress_line(&format!("note: {note}"));
    }
    output::print_backups(g.output, &[written])?;
    if verdict.passed() {
        Ok(())
    } else {
        Err(crate::error::BackupError::DrillFailed {
            backup,
            why: verdict.problems.join("; "),
        }
        .into())
    }
}

/// Pure: what `backup list` says on stderr beside the table: backups taken without quorum (never
/// picked by `restore --latest-of`), of another cluster of the same name, and records matched by
/// name only (written before records carried the cluster's uid).
fn list_notes(list: &[crate::api::EtcdBackup], who: Option<select::Identity>) -> Vec<String> {
    use kube::ResourceExt;
    let names = |f: &dyn Fn(&crate::api::EtcdBackup) -> bool| -> Vec<String> {
        list.iter().filter(|b| f(b)).map(|b| b.name_any()).collect()
    };
    let mut out = Vec::new();
    let no_quorum = names(&|b| select::succeeded(b) && select::without_quorum(b));
    if !no_quorum.is_empty() {
        out.push(format!(
            "taken without a healthy quorum (never picked by restore --latest-of nor counted by retention): {}",
            no_quorum.join(", ")
        ));
    }
    if let Some(who) = who {
        let other = names(&|b| select::owner(b, &who) == select::Owner::Other);
        if !other.is_empty() {
            out.push(format!(
                "of an earlier cluster of the same name (another uid or cluster id): {}",
                other.join(", ")
            ));
        }
        let by_name = names(&|b| select::owner(b, &who) == select::Owner::ByNameOnly);
        if !by_name.is_empty() {
            out.push(format!(
                "written before records carried the cluster's uid, matched by name only: {}",
                by_name.join(", ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> crate::cli::Verb {
        crate::cli::Cli::try_parse_from(std::iter::once("kubectl-etcd").chain(args.iter().copied()))
            .unwrap()
            .verb
    }

    #[test]
    fn backup_list_names_backups_without_quorum_of_another_cluster_and_matched_by_name() {
        use crate::api::{EtcdBackup, EtcdBackupSpec, EtcdBackupStatus, backup_phase};
        let rec = |name: &str, uid: Option<&str>, quorum: Option<bool>| {
            let mut b = EtcdBackup::new(
                name,
                EtcdBackupSpec {
                    cluster: "demo".into(),
                    cluster_uid: uid.map(Into::into),
                    ..Default::default()
                },
            );
            b.status = Some(EtcdBackupStatus {
                phase: Some(backup_phase::SUCCEEDED.into()),
                quorum,
                ..Default::default()
            });
            b
        };
        let list = vec![
            rec("mine", Some("u1"), Some(true)),
            rec("lagging", Some("u1"), Some(false)),
            rec("earlier", Some("u0"), Some(true)),
            rec("legacy", None, None),
        ];
        let who = select::Identity {
            uid: Some("u1"),
            cluster_id: None,
        };
        let notes = list_notes(&list, Some(who));
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].ends_with(": lagging"), "{notes:?}");
        assert!(notes[1].ends_with(": earlier"), "{notes:?}");
        assert!(notes[2].ends_with(": legacy"), "{notes:?}");
        assert!(list_notes(&list[..1], Some(who)).is_empty());
    }

    #[test]
    fn backup_takes_a_cluster_or_lists_one() {
        match parse(&[
            "backup",
            "demo",
            "--to",
            "s3://b/p",
            "--compression",
            "gzip",
        ]) {
            crate::cli::Verb::Backup(a) => {
                assert_eq!(a.name.as_deref(), Some("demo"));
                assert_eq!(a.compression, Some(Compression::Gzip));
                assert!(a.list.is_none());
            }
            other => panic!("{other:?}"),
        }
        match parse(&["backup", "list", "demo"]) {
            crate::cli::Verb::Backup(Args {
                list: Some(BackupSub::List { name }),
                ..
            }) => assert_eq!(name, "demo"),
            other => panic!("{other:?}"),
        }
        assert!(
            crate::cli::Cli::try_parse_from(["kubectl-etcd", "backup", "--to", "s3://b"]).is_err()
        );
        assert!(
            crate::cli::Cli::try_parse_from([
                "kubectl-etcd",
                "backup",
                "demo",
                "--compression",
                "lz4"
            ])
            .is_err()
        );
    }
}
