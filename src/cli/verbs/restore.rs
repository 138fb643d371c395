//! `kubectl etcd restore NEW --from URL | --from-backup B | --latest-of C`, and the `snapshot`
//! tools the restore pods run inside the cluster.
//!
//! The whole snapshot is downloaded and verified (sha256 of the stored object, decompression,
//! etcd's own hash) before any object of the new cluster is created.

use std::path::PathBuf;

use clap::Subcommand;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::{Api, PostParams};

use super::backup::bad_url;
use crate::api::{
    EtcdBackup, EtcdCluster, EtcdClusterSpec, RestoreSpec, StorageSpec, backup_phase,
};
use crate::archive::store::{Location, Store};
use crate::backup::fetch;
use crate::backup::open_store;
use crate::backup::records;
use crate::cli::flags::{Global, WaitFlags};
use crate::cli::{Session, drive, output, usage};
use crate::error::BackupError;
use crate::error::Error;
use crate::model::{self, DEFAULT_TOOLS_IMAGE};

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["from", "from_backup", "latest_of"])))]
pub struct Args {
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

/// Where a restore reads from: the object URL, its expected sha256, and the version it was taken on.
struct Source {
    url: String,
    sha256: Option<String>,
    version: Option<String>,
    secret: Option<String>,
    record: Option<String>,
}

async fn resolve_source(s: &Session, a: &Args) -> Result<Source, Error> {
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
pub(super) fn env_credentials_secret(ns: &str, name: &str) -> Option<Secret> {
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
pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let name = a.name.clone();
    model::validate_name(&name).map_err(|e| usage(&name, e))?;
    let replicas = model::validate_replicas(a.replicas).map_err(|e| usage(&name, e))?;
    if let Some(v) = &a.version {
        model::validate_version(v).map_err(|e| usage(&name, e))?;
    }
    let s = Session::connect(g).await?;
    s.ensure_crd().await?;
    let api: Api<EtcdCluster> = s.clusters();
    if api
        .get_opt(&name)
        .await
        .map_err(|e| Error::kube("get", crate::api::KIND, &s.namespace, &name, e))?
        .is_some()
    {
        return Err(Error::Conflict(format!(
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
    let verified = fetch::verify_into(&store, &key, expected.as_deref(), &mut tokio::io::sink())
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
        return drive::dry_run(
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
    drive::drive(&s, g, created, &a.wait).await
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
            let v = fetch::fetch_to_file(&store, &key, sha256.as_deref(), &to, clean.as_deref())
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
