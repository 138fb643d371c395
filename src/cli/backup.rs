//! The backup verbs: `backup NAME --to URL`, `backup list NAME`, `restore NEW --from …`, and the
//! `snapshot` tools that restore pods run inside the cluster.
//!
//! Validation comes first: a bad URL, a missing bucket, wrong credentials or a corrupt snapshot
//! fail before any object is created.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, Subcommand};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};

use super::{Global, Session, WaitFlags, connect, drive, ensure_crd, get_cluster, output};
use crate::api::{
    EtcdBackup, EtcdCluster, EtcdClusterSpec, RestoreSpec, StorageSpec, backup_phase,
};
use crate::backup::codec::Compression;
use crate::backup::store::{Credentials, Location, Store};
use crate::backup::{BackupError, label, restore, take};
use crate::engine::{Context, Dial};
use crate::error::Error;
use crate::model::{self, DEFAULT_TOOLS_IMAGE};

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BackupArgs {
    #[command(subcommand)]
    pub list: Option<BackupSub>,
    /// Cluster to back up.
    #[arg(required = true)]
    pub name: Option<String>,
    /// Destination: s3://bucket/prefix[?endpoint=URL&region=R&pathStyle=true] or file:///dir
    /// (default: the cluster's spec.backup.destination).
    #[arg(long)]
    pub to: Option<String>,
    /// none, gzip or zstd (default: the cluster's spec.backup.compression, else zstd).
    #[arg(long)]
    pub compression: Option<Compression>,
    /// Secret (in the cluster's namespace) holding S3 credentials; default: the standard AWS
    /// chain of this machine (AWS_ACCESS_KEY_ID…, profile).
    #[arg(long)]
    pub credentials_secret: Option<String>,
    /// Show which member would be snapshotted and where it would go; take nothing.
    #[arg(long)]
    pub dry_run: bool,
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
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["from", "from_backup", "latest_of"])))]
pub struct RestoreArgs {
    /// Name of the new cluster.
    pub name: String,
    /// URL of a snapshot object (s3://bucket/prefix/object.db.zst).
    #[arg(long)]
    pub from: Option<String>,
    /// An EtcdBackup record of this namespace (see `kubectl etcd backup list`).
    #[arg(long)]
    pub from_backup: Option<String>,
    /// The newest successful backup of this cluster.
    #[arg(long)]
    pub latest_of: Option<String>,
    /// Voting members of the new cluster (the others join the restored seed as learners).
    #[arg(long, default_value_t = 3)]
    pub replicas: i64,
    /// etcd release of the new cluster (default: the version the backup was taken from).
    #[arg(long)]
    pub version: Option<String>,
    /// Volume size per member.
    #[arg(long)]
    pub storage: Option<String>,
    /// StorageClass of the member volumes.
    #[arg(long)]
    pub storage_class: Option<String>,
    /// Expected sha256 of the stored object (default: the one the backup record holds).
    #[arg(long)]
    pub sha256: Option<String>,
    /// Secret (namespace of the new cluster) with S3 credentials for the in-cluster download;
    /// default: one is made from this machine's AWS_* variables and deleted with the cluster.
    #[arg(long)]
    pub credentials_secret: Option<String>,
    /// Image holding kubectl-etcd, for the restore pod's download and verification.
    #[arg(long, env = "KUBECTL_ETCD_TOOLS_IMAGE", default_value = DEFAULT_TOOLS_IMAGE)]
    pub tools_image: String,
    #[command(flatten)]
    pub wait: WaitFlags,
}

#[derive(Subcommand, Debug)]
pub enum SnapshotOp {
    /// Download URL, verify it (sha256, decompression, etcd's hash) and write it to --to.
    Fetch {
        url: String,
        #[arg(long)]
        to: PathBuf,
        #[arg(long)]
        sha256: Option<String>,
        /// A directory to remove first (a data dir left by an interrupted restore).
        #[arg(long)]
        clean: Option<PathBuf>,
    },
    /// Remove a directory of downloaded snapshots.
    Discard { dir: PathBuf },
}

/// Credentials of a Secret's standard keys (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`) and the endpoint/region it may carry.
pub async fn secret_credentials(
    client: &Client,
    ns: &str,
    secret: &str,
) -> Result<(Credentials, Option<String>, Option<String>), Error> {
    let api: Api<Secret> = Api::namespaced(client.clone(), ns);
    let s = api
        .get_opt(secret)
        .await
        .map_err(|e| Error::kube("get", "Secret", ns, secret, e))?
        .ok_or_else(|| {
            Error::Usage(format!(
                "Secret {ns}/{secret} does not exist; create it with keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            ))
        })?;
    let data = s.data.unwrap_or_default();
    let get = |k: &str| {
        data.get(k)
            .map(|v| String::from_utf8_lossy(&v.0).trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let (Some(id), Some(key)) = (get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")) else {
        return Err(Error::Usage(format!(
            "Secret {ns}/{secret} lacks AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY"
        )));
    };
    Ok((
        Credentials {
            access_key_id: id,
            secret_access_key: key,
            session_token: get("AWS_SESSION_TOKEN"),
        },
        get("AWS_ENDPOINT_URL"),
        get("AWS_REGION"),
    ))
}

/// Opens a location with the Secret's credentials (and endpoint/region, when the URL names none)
/// or, without a Secret, the standard AWS chain.
pub async fn open_store(
    client: &Client,
    ns: &str,
    loc: &Location,
    secret: Option<&str>,
) -> Result<Store, Error> {
    let (creds, loc) = match secret {
        Some(secret) => {
            let (creds, endpoint, region) = secret_credentials(client, ns, secret).await?;
            let mut loc = loc.clone();
            if let Location::S3(s3) = &mut loc {
                s3.endpoint = s3.endpoint.clone().or(endpoint);
                s3.region = s3.region.clone().or(region);
            }
            (Some(creds), loc)
        }
        None => (None, loc.clone()),
    };
    Ok(Store::open(&loc, creds).await.map_err(BackupError::from)?)
}

/// Fails unless the store answers: credentials, bucket and endpoint are checked before anything is
/// created.
async fn probe(store: &Store) -> Result<(), Error> {
    store.check().await.map_err(BackupError::from)?;
    Ok(())
}

fn bad_url(e: impl std::fmt::Display) -> Error {
    Error::Usage(e.to_string())
}

/// `kubectl etcd backup NAME [--to URL]`.
pub async fn backup(g: &Global, a: BackupArgs) -> Result<(), Error> {
    if let Some(BackupSub::List { name }) = a.list {
        return list(g, &name).await;
    }
    let name = a.name.unwrap_or_default();
    model::validate_name(&name).map_err(|e| super::usage(&name, e))?;
    let s = connect(g).await?;
    ensure_crd(&s.client).await?;
    let api: Api<EtcdCluster> = Api::namespaced(s.client.clone(), &s.namespace);
    let cluster = get_cluster(&api, &s.namespace, &name).await?;
    let spec_backup = cluster.spec.backup.clone().unwrap_or_default();
    let to = a
        .to
        .or_else(|| Some(spec_backup.destination.clone()).filter(|d| !d.is_empty()))
        .ok_or_else(|| {
            Error::Usage(format!(
                "no destination for the backup of {}/{name}: pass --to s3://bucket/prefix or file:///dir, or set spec.backup.destination",
                s.namespace
            ))
        })?;
    let destination = Location::parse(&to).map_err(bad_url)?;
    if matches!(destination, Location::Pvc { .. }) {
        return Err(Error::Usage(format!(
            "{to}: a pvc:// destination is written by the in-cluster operator (spec.backup.destination); from the command line use s3:// or file://"
        )));
    }
    let compression = match a.compression {
        Some(c) => c,
        None => spec_backup
            .compression
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(Error::Usage)?
            .unwrap_or_default(),
    };
    let desired = model::validate(&cluster).map_err(|source| Error::InvalidSpec {
        namespace: s.namespace.clone(),
        name: name.clone(),
        source,
    })?;
    let secret = a.credentials_secret.or(spec_backup.credentials_secret);
    let store = open_store(&s.client, &s.namespace, &destination, secret.as_deref()).await?;
    probe(&store).await?;
    let ctx = Context::new(s.client.clone(), Dial::PortForward).await?;
    if a.dry_run {
        let observed = crate::engine::observe(&ctx, &desired).await?;
        let source = take::choose_source(&desired, &observed).map_err(BackupError::NoSource)?;
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
                destination
                    .object_url(&take::object_key(
                        &s.namespace,
                        &name,
                        Timestamp::now(),
                        0,
                        compression
                    ))
                    .replace("-r0.db", "-r<revision>.db")
            ),
            format!(
                "record it as EtcdBackup {}/{}",
                s.namespace,
                take::record_name(&name, Timestamp::now())
            ),
        ];
        return output::print_dry_run(g.output, &lines, &[], None);
    }
    let req = take::Request {
        destination,
        compression,
        credentials_secret: secret,
        trigger: label::TRIGGER_CLI,
        taken_by: crate::lease::cli_identity(),
    };
    let record = take::create_record(&ctx, &cluster, &req, Timestamp::now())
        .await
        .map_err(Error::from)?;
    let progress = output::Progress::new(&format!("{}/{name}", s.namespace));
    progress.step(&format!("streaming a snapshot to {}", req.destination));
    let started = Instant::now();
    let shown = |n: u64| {
        let secs = started.elapsed().as_secs_f64().max(0.001);
        progress.step(&format!(
            "stored {} ({}/s)",
            output::human_bytes(n as i64),
            output::human_bytes((n as f64 / secs) as i64)
        ));
    };
    let result = take::execute(&ctx, &desired, &store, &req, record, &shown).await;
    match result {
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
            Err(e.into())
        }
    }
}

/// EtcdBackup records of `cluster`, newest first.
pub async fn records(client: &Client, ns: &str, cluster: &str) -> Result<Vec<EtcdBackup>, Error> {
    let api: Api<EtcdBackup> = Api::namespaced(client.clone(), ns);
    let mut list = api
        .list(&ListParams::default().labels(&label::selector(cluster)))
        .await
        .map_err(|e| Error::kube("list", "EtcdBackup", ns, cluster, e))?
        .items;
    list.sort_by_key(|b| std::cmp::Reverse(b.metadata.creation_timestamp.clone().map(|t| t.0)));
    Ok(list)
}

async fn list(g: &Global, cluster: &str) -> Result<(), Error> {
    let s = connect(g).await?;
    ensure_crd(&s.client).await?;
    let list = records(&s.client, &s.namespace, cluster).await?;
    output::print_backups(g.output, &list)
}

/// Where a restore reads from: the object URL, its expected sha256, and the version it was taken on.
struct Source {
    url: String,
    sha256: Option<String>,
    version: Option<String>,
    secret: Option<String>,
    record: Option<String>,
}

async fn resolve_source(s: &Session, a: &RestoreArgs) -> Result<Source, Error> {
    let from_record = |b: &EtcdBackup| -> Result<Source, Error> {
        let st = b.status.clone().unwrap_or_default();
        if st.phase.as_deref() != Some(backup_phase::SUCCEEDED) {
            return Err(Error::Usage(format!(
                "EtcdBackup {}/{} did not succeed ({}); pick another with `kubectl etcd backup list {}`",
                s.namespace,
                b.name_any(),
                st.phase.as_deref().unwrap_or("no phase"),
                b.spec.cluster
            )));
        }
        Ok(Source {
            url: st.url.unwrap_or_default(),
            sha256: st.sha256,
            version: st.etcd_version,
            secret: b.spec.credentials_secret.clone(),
            record: Some(b.name_any()),
        })
    };
    if let Some(url) = &a.from {
        return Ok(Source {
            url: url.clone(),
            sha256: None,
            version: None,
            secret: None,
            record: None,
        });
    }
    if let Some(name) = &a.from_backup {
        let api: Api<EtcdBackup> = Api::namespaced(s.client.clone(), &s.namespace);
        let b = api
            .get_opt(name)
            .await
            .map_err(|e| Error::kube("get", "EtcdBackup", &s.namespace, name, e))?
            .ok_or_else(|| {
                Error::Usage(format!(
                    "EtcdBackup {}/{name} not found; list backups with `kubectl etcd backup list CLUSTER`",
                    s.namespace
                ))
            })?;
        return from_record(&b);
    }
    let cluster = a.latest_of.clone().unwrap_or_default();
    let list = records(&s.client, &s.namespace, &cluster).await?;
    let newest = list
        .iter()
        .find(|b| {
            b.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(backup_phase::SUCCEEDED)
        })
        .ok_or_else(|| {
            Error::Usage(format!(
                "no successful backup of {}/{cluster} is recorded; take one with `kubectl etcd backup {cluster} --to URL`",
                s.namespace
            ))
        })?;
    from_record(newest)
}

/// Makes the Secret the restore pod reads S3 credentials from, out of this machine's AWS_*
/// variables (the chain's other sources cannot be handed on: pass --credentials-secret then).
fn env_credentials_secret(ns: &str, name: &str) -> Option<Secret> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let id = var("AWS_ACCESS_KEY_ID")?;
    let key = var("AWS_SECRET_ACCESS_KEY")?;
    let mut data = std::collections::BTreeMap::from([
        ("AWS_ACCESS_KEY_ID".to_string(), id),
        ("AWS_SECRET_ACCESS_KEY".to_string(), key),
    ]);
    for k in ["AWS_SESSION_TOKEN", "AWS_REGION", "AWS_ENDPOINT_URL"] {
        if let Some(v) = var(k) {
            data.insert(k.into(), v);
        }
    }
    Some(Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{name}-restore-credentials")),
            namespace: Some(ns.into()),
            ..Default::default()
        },
        string_data: Some(data),
        ..Default::default()
    })
}

/// `kubectl etcd restore NEW --from URL | --from-backup B | --latest-of C`.
pub async fn restore(g: &Global, a: RestoreArgs) -> Result<(), Error> {
    let name = a.name.clone();
    model::validate_name(&name).map_err(|e| super::usage(&name, e))?;
    let replicas = model::validate_replicas(a.replicas).map_err(|e| super::usage(&name, e))?;
    if let Some(v) = &a.version {
        model::validate_version(v).map_err(|e| super::usage(&name, e))?;
    }
    let s = connect(g).await?;
    ensure_crd(&s.client).await?;
    let api: Api<EtcdCluster> = Api::namespaced(s.client.clone(), &s.namespace);
    if api
        .get_opt(&name)
        .await
        .map_err(|e| Error::kube("get", crate::api::KIND, &s.namespace, &name, e))?
        .is_some()
    {
        return Err(Error::Usage(format!(
            "EtcdCluster {}/{name} already exists: restore into a new name (a restore never overwrites a running cluster), or delete it first with `kubectl etcd delete {name} --delete-data --yes`",
            s.namespace
        )));
    }
    let src = resolve_source(&s, &a).await?;
    let (loc, key) = Location::parse_object(&src.url).map_err(bad_url)?;
    if matches!(loc, Location::Pvc { .. }) {
        return Err(Error::Usage(format!(
            "{}: restoring from pvc:// is not supported yet; copy the object to s3:// first",
            src.url
        )));
    }
    let expected = a.sha256.clone().or(src.sha256.clone());
    let version = match (&a.version, &src.version) {
        (Some(v), _) => v.clone(),
        (None, Some(v)) => model::Version::parse(v)
            .map(|v| v.to_string())
            .unwrap_or_else(|| model::DEFAULT_VERSION.into()),
        (None, None) => model::DEFAULT_VERSION.into(),
    };
    let secret = a.credentials_secret.clone().or(src.secret.clone());

    // Verify the whole snapshot before anything of the new cluster exists.
    let store = open_store(&s.client, &s.namespace, &loc, secret.as_deref()).await?;
    let progress = output::Progress::new(&format!("{}/{name}", s.namespace));
    progress.step(&format!("verifying {}", src.url));
    let verified = restore::verify_into(&store, &key, expected.as_deref(), &mut tokio::io::sink())
        .await
        .inspect_err(|_| progress.abandon())?;
    progress.note(&format!(
        "verified {} ({} stored, {} snapshot, sha256 {})",
        src.url,
        output::human_bytes(verified.stored_bytes as i64),
        output::human_bytes(verified.snapshot_bytes as i64),
        verified.sha256
    ));
    if matches!(loc, Location::File(_)) {
        progress.abandon();
        return Err(Error::Usage(format!(
            "{} is verified, but a file on this machine cannot be read by the cluster: upload it to S3 and restore with --from s3://…",
            src.url
        )));
    }

    let made_secret = match (&secret, &loc) {
        (None, Location::S3(_)) => env_credentials_secret(&s.namespace, &name),
        _ => None,
    };
    let spec = EtcdClusterSpec {
        replicas: replicas as i32,
        version,
        storage: StorageSpec {
            size: a.storage.clone(),
            storage_class_name: a.storage_class.clone(),
            ephemeral: false,
        },
        restore: Some(RestoreSpec {
            source: src.url.clone(),
            sha256: Some(verified.sha256.clone()),
            credentials_secret: secret
                .clone()
                .or_else(|| made_secret.as_ref().and_then(|s| s.metadata.name.clone())),
            backup_name: src.record.clone(),
            tools_image: Some(a.tools_image.clone()),
        }),
        ..Default::default()
    };
    let mut cluster = EtcdCluster::new(&name, spec);
    cluster.metadata.namespace = Some(s.namespace.clone());
    model::validate(&cluster).map_err(|source| Error::InvalidSpec {
        namespace: s.namespace.clone(),
        name: name.clone(),
        source,
    })?;
    if a.wait.dry_run {
        progress.abandon();
        cluster.metadata.uid = Some("00000000-dry-run".into());
        return super::dry_run(
            &s,
            g,
            &cluster,
            &[format!(
                "create EtcdCluster {}/{name} restored from {} (sha256 {})",
                s.namespace, src.url, verified.sha256
            )],
        )
        .await;
    }
    progress.abandon();
    let created = api
        .create(&PostParams::default(), &cluster)
        .await
        .map_err(|e| Error::kube("create", crate::api::KIND, &s.namespace, &name, e))?;
    if let Some(mut secret) = made_secret {
        secret.metadata.owner_references = Some(vec![crate::objects::owner(
            &model::validate(&created).map_err(|source| Error::InvalidSpec {
                namespace: s.namespace.clone(),
                name: name.clone(),
                source,
            })?,
        )]);
        let secrets: Api<Secret> = Api::namespaced(s.client.clone(), &s.namespace);
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .map_err(|e| Error::kube("create", "Secret", &s.namespace, &secret.name_any(), e))?;
    }
    output::progress_line(&format!(
        "created EtcdCluster {}/{name} from {}",
        s.namespace, src.url
    ));
    drive(&s, g, created, &a.wait).await
}

/// `kubectl-etcd snapshot …`: run inside restore pods (credentials from the pod's environment).
pub async fn snapshot(op: SnapshotOp) -> Result<(), Error> {
    match op {
        SnapshotOp::Fetch {
            url,
            to,
            sha256,
            clean,
        } => {
            let (loc, key) = Location::parse_object(&url).map_err(bad_url)?;
            let store = Store::open(&loc, None).await.map_err(BackupError::from)?;
            let v = restore::fetch_to_file(&store, &key, sha256.as_deref(), &to, clean.as_deref())
                .await?;
            output::progress_line(&format!(
                "fetched and verified {url}: {} bytes stored, {} bytes of snapshot, sha256 {}",
                v.stored_bytes, v.snapshot_bytes, v.sha256
            ));
            Ok(())
        }
        SnapshotOp::Discard { dir } => {
            match tokio::fs::remove_dir_all(&dir).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::Io(e)),
            }
            output::progress_line(&format!("removed {}", dir.display()));
            Ok(())
        }
    }
}
