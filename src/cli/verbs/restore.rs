//! `kubectl etcd restore NEW --from URL | --from-backup B | --latest-of C` (the restore pod's
//! own tools are `pod_tools`).
//!
//! Nothing of the new cluster is created before the snapshot is known good. A backup whose sha256
//! is known (its EtcdBackup record, `--sha256`) and which the cluster reads itself (s3://, pvc://)
//! is checked here without being downloaded (it exists; an encrypted one opens with its key) and
//! verified whole by the restore pod before a byte is restored: a snapshot the pod finds unusable
//! makes this command delete the cluster it created and exit 10. Any other (a URL without a
//! sha256, a file of this machine) is downloaded and verified here first (sha256 of the stored
//! object, decompression, etcd's own hash).

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Secret};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch};

use super::backup::bad_url;
use super::credentials::{
    CopyLocalCredentials, copy_local_credentials, env_secret_for, local_keys_set,
};
use crate::api::{
    EtcdBackup, EtcdCluster, EtcdClusterSpec, RestoreSpec, StorageSpec, backup_phase,
};
use crate::archive::crypt::KeySecret;
use crate::archive::fetch::{self, Verified};
use crate::archive::store::Location;
use crate::cli::flags::{
    DomainFlag, Global, ImageFlags, SecurityFlags, ServiceFlag, TlsMode, WaitFlags,
};
use crate::cli::{Session, check_secrets, drive, output, usage};
use crate::engine::backups::{self, Stored};
use crate::error::BackupError;
use crate::error::Error;
use crate::model::records::select;
use crate::model::{self, DEFAULT_TOOLS_IMAGE};
use crate::objects::pvc_agent;

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
    /// etcd release of the new cluster (default: the version the backup was taken from; for a
    /// URL of unknown origin, the default of `create`).
    #[arg(long)]
    pub version: Option<String>,
    /// Volume size per member (default: 1Gi, or the smallest whole Gi whose quota holds the
    /// snapshot's database twice over; refused when its quota would be 90 % full at once).
    #[arg(long, value_parser = crate::model::Quantity::parse)]
    pub storage: Option<crate::model::Quantity>,
    /// StorageClass of the member volumes.
    #[arg(long)]
    pub storage_class: Option<String>,
    /// Expected sha256 of the stored object (default: the one the backup record holds). When
    /// known, an s3:// or pvc:// object is verified by the restore pod, not downloaded here.
    #[arg(long)]
    pub sha256: Option<String>,
    /// Secret (namespace of the new cluster) with S3 credentials for the in-cluster download.
    #[arg(long)]
    pub credentials_secret: Option<String>,
    #[command(flatten)]
    pub copy: CopyLocalCredentials,
    /// Secret (namespace of the new cluster) with the key of an encrypted backup (NAME or
    /// NAME/KEY; default: the one its record names). Checked against the backup's header before
    /// anything is created: a missing or wrong key exits 12.
    #[arg(long, value_name = "NAME[/KEY]")]
    pub encryption_key_secret: Option<String>,
    /// Image holding kubectl-etcd, for the restore pod's download and verification.
    #[arg(long, env = "KUBECTL_ETCD_TOOLS_IMAGE", default_value = DEFAULT_TOOLS_IMAGE)]
    pub tools_image: String,
    #[command(flatten)]
    pub image: ImageFlags,
    #[command(flatten)]
    pub domain: DomainFlag,
    #[command(flatten)]
    pub service: ServiceFlag,
    #[command(flatten)]
    pub security: SecurityFlags,
    #[command(flatten)]
    pub wait: WaitFlags,
}

/// Where a restore reads from: the object URL, its expected sha256, and the version it was taken on.
struct Source {
    url: String,
    sha256: Option<String>,
    version: Option<String>,
    secret: Option<String>,
    record: Option<String>,
    /// The Secret its record says it was encrypted with.
    encryption: Option<KeySecret>,
    /// The database's size its record says.
    snapshot_bytes: Option<u64>,
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
            encryption: b.spec.encryption.as_ref().map(|e| e.key_secret()),
            snapshot_bytes: st.snapshot_size.and_then(|n| u64::try_from(n).ok()),
        })
    };
    if let Some(url) = &a.from {
        return Ok(Source {
            url: url.clone(),
            sha256: None,
            version: None,
            secret: None,
            record: None,
            encryption: None,
            snapshot_bytes: None,
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
    // The newest good backup of the cluster of that name as it exists now (its uid), or of the
    // one that took the newest good backup when none exists: never one taken without quorum,
    // never one of another cluster that had the same name; the newest whose restore drill
    // passed first, never one whose drill failed.
    let cluster = a.latest_of.clone().unwrap_or_default();
    let (list, live) = backups::records_and_cluster(&s.client, &s.namespace, &cluster).await?;
    let who = live.as_ref().map(backups::identity);
    let newest = select::latest(&list, who, select::Prefer::Drilled).map_err(|why| {
        Error::Usage(format!(
            "{why} for {}/{cluster}; take one with `kubectl etcd backup {cluster} --to URL`",
            s.namespace
        ))
    })?;
    for line in &newest.passed_over {
        output::progress_line(line);
    }
    from_record(newest.pick)
}

/// `kubectl etcd restore NEW --from URL | --from-backup B | --latest-of C`.
pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let span = crate::phase!("restore", cluster = %a.name);
    crate::phase::timed(span, restore(g, a)).await
}

/// The restore pod's S3 credentials: the Secret named (flag, else the record's), and whether
/// this machine's keys are copied into one (`copy_local_credentials`), decided before anything
/// is made.
fn pod_credentials(
    a: &Args,
    src: &Source,
    loc: &Location,
) -> Result<(Option<String>, bool), Error> {
    let secret = a.credentials_secret.clone().or(src.secret.clone());
    let copy = copy_local_credentials(
        loc,
        secret.as_deref(),
        a.copy.copy_local_credentials,
        local_keys_set(),
    )
    .map_err(Error::Usage)?;
    Ok((secret, copy))
}

async fn restore(g: &Global, a: Args) -> Result<(), Error> {
    let name = a.name.clone();
    let replicas = check_flags(&a)?;
    let s = Session::connect(g).await?;
    s.ensure_crd_current().await?;
    refuse_a_taken_name(&s, &name).await?;
    let src = resolve_source(&s, &a).await?;
    let (loc, key) = Location::parse_object(&src.url).map_err(bad_url)?;
    let version = pick_version(&s, &a, &src)?;
    let (secret, copy) = pod_credentials(&a, &src, &loc)?;
    let encryption = encryption_of(&s, &a, &src, &key)?;

    // Check the snapshot before anything of the new cluster exists (an encrypted one's key first,
    // against its header).
    let at = Stored {
        location: &loc,
        key: &key,
        secret: secret.as_deref(),
        tools_image: &a.tools_image,
        encryption: encryption.as_ref(),
    };
    let (verified, progress, in_cluster) = know_the_snapshot(&s, &a, &src, at).await?;
    let storage = storage_for(&s, &a, &src, &verified).inspect_err(|_| progress.abandon())?;
    // A file of this machine reaches the cluster through a staging claim the restore pod reads.
    let staging = matches!(loc, Location::File(_)).then(|| pvc_agent::staging_claim_name(&name));
    let source_url = match &staging {
        Some(claim) => Location::Pvc {
            claim: claim.clone(),
            path: String::new(),
        }
        .object_url(&key),
        None => src.url.clone(),
    };
    let made_secret = env_secret_for(&s.namespace, &name, copy);
    let restore = RestoreSpec {
        source: source_url.clone(),
        sha256: Some(verified.sha256.clone()),
        credentials_secret: secret
            .clone()
            .or_else(|| made_secret.as_ref().and_then(|s| s.metadata.name.clone())),
        backup_name: src.record.clone(),
        tools_image: Some(a.tools_image.clone()),
        nonce: Some(crate::model::recovery::restore_nonce(jiff::Timestamp::now())),
        encryption: encryption
            .as_ref()
            .map(crate::api::BackupEncryption::from_key_secret),
    };
    let mut cluster = new_cluster(&s, &a, replicas, version, restore, storage);
    let d = s.validate(&cluster.name_any(), &cluster)?;
    check_secrets(&s, &name, &d).await?;
    if a.wait.dry_run {
        progress.abandon();
        cluster.metadata.uid = Some("00000000-dry-run".into());
        let lines = dry_run_lines(&s, &name, &src, &verified, staging.as_deref(), &source_url);
        return drive::dry_run(&s, g, &cluster, &lines).await;
    }
    if let Some(claim) = &staging {
        progress.step(&format!(
            "copying {} into PersistentVolumeClaim {}/{claim}",
            src.url, s.namespace
        ));
        let staging = stage(
            &s,
            &name,
            &loc,
            &key,
            &verified,
            a.storage_class.as_deref(),
            &a.tools_image,
        );
        crate::phase::timed(crate::phase!("stage"), staging)
            .await
            .inspect_err(|_| progress.abandon())?;
    }
    progress.abandon();
    let created = crate::phase::timed(crate::phase!("create_cluster"), async {
        let created = create(&s, &cluster, staging.as_deref()).await?;
        hand_over(&s, &created, made_secret, staging.as_deref()).await?;
        Ok::<_, Error>(created)
    })
    .await?;
    output::progress_line(&format!(
        "created EtcdCluster {}/{name} from {}",
        s.namespace, src.url
    ));
    if in_cluster {
        drive_verified_in_cluster(g, &s, &a, created).await?;
    } else {
        drive::drive(&s, g, created, &a.wait).await?;
    }
    if let Some(claim) = &staging
        && !a.wait.no_wait
    {
        // The seed is restored and serving: the staged copy has done its work.
        delete_claim(&s, claim).await;
        output::progress_line(&format!(
            "deleted the staging PersistentVolumeClaim {}/{claim}",
            s.namespace
        ));
    }
    Ok(())
}

/// The member volume size: one whose quota holds the database (`model::restore_storage`; its
/// size is known when it was verified here or recorded).
fn storage_for(
    s: &Session,
    a: &Args,
    src: &Source,
    verified: &Verified,
) -> Result<Option<String>, Error> {
    let db = Some(verified.snapshot_bytes)
        .filter(|b| *b > 0)
        .or(src.snapshot_bytes)
        .unwrap_or(0);
    model::restore_storage(a.storage.as_ref(), db)
        .map(|size| size.map(|q| q.to_string()))
        .map_err(|why| Error::Usage(format!("EtcdCluster {}/{}: {why}", s.namespace, a.name)))
}

/// The flags that need no cluster: the new name, the replica count, the version.
fn check_flags(a: &Args) -> Result<u32, Error> {
    let name = &a.name;
    model::validate_name(name).map_err(|e| usage(name, e))?;
    let replicas = model::validate_replicas(a.replicas).map_err(|e| usage(name, e))?;
    if let Some(v) = &a.version {
        model::validate_version(v).map_err(|e| usage(name, e))?;
    }
    a.domain.spec(name)?;
    Ok(replicas)
}

/// A restore never overwrites: neither a cluster of that name nor the volumes an earlier one
/// left (`kubectl etcd delete` keeps them, and a restore under the old name would start on them).
async fn refuse_a_taken_name(s: &Session, name: &str) -> Result<(), Error> {
    if s.clusters()
        .get_opt(name)
        .await
        .map_err(|e| Error::kube("get", crate::api::KIND, &s.namespace, name, e))?
        .is_some()
    {
        return Err(Error::Conflict(format!(
            "EtcdCluster {}/{name} already exists: restore into a new name (a restore never overwrites a running cluster), or delete it first with `kubectl etcd delete {name} --delete-data --yes`",
            s.namespace
        )));
    }
    let left = crate::engine::member_volumes(&s.client, &s.namespace, name).await?;
    if !left.is_empty() {
        return Err(Error::Conflict(format!(
            "volumes of an earlier cluster named {}/{name} exist ({}): a restore under that name would overwrite their data; delete them with `kubectl etcd delete {name} --delete-data --yes`, or restore into a new name",
            s.namespace,
            left.join(", ")
        )));
    }
    Ok(())
}

/// The new cluster's version: --version, else the one the backup was taken on, else the default
/// of `create`; refused when the snapshot cannot be restored by it.
fn pick_version(s: &Session, a: &Args, src: &Source) -> Result<String, Error> {
    let version = match (&a.version, &src.version) {
        (Some(v), _) => v.clone(),
        (None, Some(v)) => model::Version::parse(v)
            .map(|v| v.to_string())
            .unwrap_or_else(|| model::DEFAULT_VERSION.into()),
        (None, None) => model::DEFAULT_VERSION.into(),
    };
    crate::plan::upgrade::restore_version(src.version.as_deref(), &version)
        .map_err(|e| Error::Usage(format!("EtcdCluster {}/{}: {e}", s.namespace, a.name)))?;
    if let Some(w) = model::Version::parse(&version).and_then(model::support_warning) {
        output::progress_line(&w);
    }
    Ok(version)
}

/// The Secret with the key of the snapshot `key`: `--encryption-key-secret`, else the one its
/// record names. An encrypted snapshot (`.enc`) without one is refused, naming the backup and
/// the flag; a key for a plain one is a usage error (nothing to decrypt).
fn encryption_of(
    s: &Session,
    a: &Args,
    src: &Source,
    key: &str,
) -> Result<Option<KeySecret>, Error> {
    let asked = a
        .encryption_key_secret
        .as_deref()
        .map(KeySecret::parse)
        .transpose()
        .map_err(Error::Usage)?;
    let what = match &src.record {
        Some(r) => format!("EtcdBackup {}/{r} ({})", s.namespace, src.url),
        None => src.url.clone(),
    };
    match (crate::archive::crypt::is_encrypted(key), asked.or(src.encryption.clone())) {
        (true, Some(k)) => Ok(Some(k)),
        (true, None) => Err(BackupError::Key(format!(
            "{what} is encrypted and names no key Secret: pass --encryption-key-secret NAME[/KEY] (a Secret of {} holding its key); nothing was created",
            s.namespace
        ))
        .into()),
        (false, Some(k)) if a.encryption_key_secret.is_some() => Err(Error::Usage(format!(
            "{what} is not encrypted (its name does not end in .enc): drop --encryption-key-secret {k}"
        ))),
        (false, _) => Ok(None),
    }
}

/// Reads the whole snapshot from this machine and verifies it (sha256, decryption,
/// decompression, etcd's hash); the progress started once the store is open goes on with the
/// rest of the restore. A missing or wrong key is refused naming the backup and the Secret.
async fn verify(
    s: &Session,
    a: &Args,
    src: &Source,
    at: Stored<'_>,
    expected: Option<&str>,
) -> Result<(Verified, output::Progress), Error> {
    let progress = output::Progress::new(&format!("{}/{}", s.namespace, a.name));
    let verified = backups::verify(&s.client, &s.namespace, at, expected, || {
        progress.step(&format!("verifying {}", src.url));
    })
    .await;
    let verified = verified
        .map_err(|e| name_the_key(s, src, at, e))
        .inspect_err(|_| progress.abandon())?;
    progress.note(&format!(
        "verified {} ({} stored, {} snapshot, sha256 {})",
        src.url,
        output::human_bytes(verified.stored_bytes as i64),
        output::human_bytes(verified.snapshot_bytes as i64),
        verified.sha256
    ));
    Ok((verified, progress))
}

/// Checks the snapshot without downloading it (it exists; an encrypted one opens with its key),
/// for one whose sha256 is known and which the restore pod verifies whole before restoring it.
async fn check(
    s: &Session,
    a: &Args,
    src: &Source,
    at: Stored<'_>,
    sha256: &str,
) -> Result<(Verified, output::Progress), Error> {
    let progress = output::Progress::new(&format!("{}/{}", s.namespace, a.name));
    progress.step(&format!("checking {}", src.url));
    let stored_bytes = backups::check(&s.client, &s.namespace, at)
        .await
        .map_err(|e| name_the_key(s, src, at, e))
        .inspect_err(|_| progress.abandon())?;
    progress.note(&format!(
        "found {} ({} stored, sha256 {sha256}); the restore pod verifies it whole before restoring it",
        src.url,
        output::human_bytes(stored_bytes as i64),
    ));
    let verified = Verified {
        stored_bytes,
        sha256: sha256.to_string(),
        // Known once the restore pod has read it.
        snapshot_bytes: 0,
    };
    Ok((verified, progress))
}

/// A key error names the backup and the Secret the key came from.
fn name_the_key(s: &Session, src: &Source, at: Stored<'_>, e: Error) -> Error {
    match (e, at.encryption) {
        (Error::Backup(BackupError::Key(why)), Some(k)) => BackupError::Key(format!(
            "{} (key from Secret {}/{k}): {why}; nothing was created",
            src.record.as_ref().map_or_else(
                || src.url.clone(),
                |r| format!("EtcdBackup {}/{r}", s.namespace)
            ),
            s.namespace
        ))
        .into(),
        (e, _) => e,
    }
}

/// Checks or verifies the snapshot before anything of the new cluster exists (an encrypted one's
/// key first, against its header); `true`: only checked here, the restore pod verifies it whole.
async fn know_the_snapshot(
    s: &Session,
    a: &Args,
    src: &Source,
    at: Stored<'_>,
) -> Result<(Verified, output::Progress, bool), Error> {
    let expected = a.sha256.clone().or(src.sha256.clone());
    let in_cluster = expected.is_some() && !matches!(at.location, Location::File(_));
    let (verified, progress) = match expected.as_deref().filter(|_| in_cluster) {
        // Verified whole where it is read anyway: in the restore pod, before a byte is restored.
        Some(sha256) => {
            let checking = check(s, a, src, at, sha256);
            crate::phase::timed(crate::phase!("check"), checking).await?
        }
        // The download and verification on this machine (the restore pod downloads it again).
        None => {
            let verifying = verify(s, a, src, at, expected.as_deref());
            crate::phase::timed(crate::phase!("verify"), verifying).await?
        }
    };
    Ok((verified, progress, in_cluster))
}

/// Drives the created cluster like any other, until the status says the restore pod found the
/// snapshot unusable, whoever drives it (this command, or an operator whose status this command
/// follows): then the cluster goes (`undo_unusable`).
async fn drive_verified_in_cluster(
    g: &Global,
    s: &Session,
    a: &Args,
    created: EtcdCluster,
) -> Result<(), Error> {
    let driven = tokio::select! {
        driven = drive::drive(s, g, created, &a.wait) => driven,
        message = until_unusable(s, &a.name) => Err(Error::Held {
            namespace: s.namespace.clone(),
            name: a.name.clone(),
            message,
        }),
    };
    match driven {
        Err(Error::Held { message, .. }) if message.contains(fetch::UNUSABLE) => {
            Err(undo_unusable(g, s, a, &message).await)
        }
        driven => driven.map(|_| ()),
    }
}

/// Returns the status message once it says the restore pod found the snapshot unusable.
async fn until_unusable(s: &Session, name: &str) -> String {
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        if let Ok(c) = s.get_cluster(name).await
            && let Some(message) = c.status.and_then(|st| st.message)
            && message.contains(fetch::UNUSABLE)
        {
            return message;
        }
    }
}

/// The restore pod found the snapshot unusable (`message`, the engine's hold): nothing of it was
/// restored. The cluster this command created goes with its volume, as if never created, and the
/// error (exit 10) says why.
async fn undo_unusable(g: &Global, s: &Session, a: &Args, message: &str) -> Error {
    let (ns, name) = (&s.namespace, &a.name);
    let undo = super::delete::Args {
        name: name.clone(),
        delete_data: true,
        yes: true,
        wait: WaitFlags {
            no_wait: false,
            timeout: a.wait.timeout,
            dry_run: false,
        },
    };
    let left = match super::delete::run(g, undo).await {
        Ok(()) => format!("EtcdCluster {ns}/{name} was deleted with its volume: nothing is left"),
        Err(e) => format!(
            "deleting EtcdCluster {ns}/{name} failed ({}): delete it with `kubectl etcd -n {ns} \
             delete {name} --delete-data --yes`",
            e.report()
        ),
    };
    BackupError::Corrupt(format!("{message}; {left}")).into()
}

/// The EtcdCluster to create: the flags' shape, restored from `restore`.
fn new_cluster(
    s: &Session,
    a: &Args,
    replicas: u32,
    version: String,
    restore: RestoreSpec,
    size: Option<String>,
) -> EtcdCluster {
    let mut spec = EtcdClusterSpec {
        replicas: replicas as i32,
        version,
        storage: StorageSpec {
            size,
            storage_class_name: a.storage_class.clone(),
            ephemeral: false,
        },
        restore: Some(restore),
        image_repository: a.image.image_repository.clone(),
        image_pull_secrets: a.image.pull_secrets(),
        tls: a.security.spec(Some(TlsMode::Managed)),
        auth: a.security.auth(),
        // Checked before anything is written (`run`).
        cluster_domain: a.domain.spec(&a.name).ok().flatten(),
        client_service: a.service.spec(),
        ..Default::default()
    };
    model::new_cluster_defaults(&mut spec);
    let mut cluster = EtcdCluster::new(&a.name, spec);
    cluster.metadata.namespace = Some(s.namespace.clone());
    cluster
}

/// What a dry run says the restore would create.
fn dry_run_lines(
    s: &Session,
    name: &str,
    src: &Source,
    verified: &Verified,
    staging: Option<&str>,
    source_url: &str,
) -> Vec<String> {
    staging
        .iter()
        .map(|claim| {
            format!(
                "copy {} into a new PersistentVolumeClaim {}/{claim} ({})",
                src.url,
                s.namespace,
                pvc_agent::staging_size(verified.stored_bytes)
            )
        })
        .chain([format!(
            "create EtcdCluster {}/{name} restored from {source_url} (sha256 {})",
            s.namespace, verified.sha256
        )])
        .collect()
}

/// Creates the cluster; the staging claim goes when that fails.
async fn create(
    s: &Session,
    cluster: &EtcdCluster,
    staging: Option<&str>,
) -> Result<EtcdCluster, Error> {
    let name = cluster.name_any();
    let created = s
        .clusters()
        .create(&super::intent_post(), cluster)
        .await
        .map_err(|e| Error::kube("create", crate::api::KIND, &s.namespace, &name, e));
    if created.is_err()
        && let Some(claim) = staging
    {
        delete_claim(s, claim).await;
    }
    created
}

/// Gives the created cluster what this command made for it: the credentials Secret (created now,
/// owned by the cluster) and the staging claim (owned by it, so it is deleted with the cluster
/// if this command stops before the restore is done).
async fn hand_over(
    s: &Session,
    created: &EtcdCluster,
    made_secret: Option<Secret>,
    staging: Option<&str>,
) -> Result<(), Error> {
    if made_secret.is_none() && staging.is_none() {
        return Ok(());
    }
    let owner = crate::objects::owner(&s.validate(&created.name_any(), created)?);
    if let Some(mut secret) = made_secret {
        secret.metadata.owner_references = Some(vec![owner.clone()]);
        let secrets: Api<Secret> = Api::namespaced(s.client.clone(), &s.namespace);
        secrets
            .create(&super::intent_post(), &secret)
            .await
            .map_err(|e| Error::kube("create", "Secret", &s.namespace, &secret.name_any(), e))?;
    }
    if let Some(claim) = staging {
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(s.client.clone(), &s.namespace);
        claims
            .patch(
                claim,
                &super::intent_patch(),
                &Patch::Merge(serde_json::json!({"metadata": {"ownerReferences": [owner]}})),
            )
            .await
            .map_err(|e| Error::kube("patch", "PersistentVolumeClaim", &s.namespace, claim, e))?;
    }
    Ok(())
}

/// Copies the verified snapshot `key` of the local directory `loc` into a new staging claim,
/// through an agent pod; the copy's sha256 must be the verified one. On failure the claim goes.
async fn stage(
    s: &Session,
    name: &str,
    loc: &Location,
    key: &str,
    verified: &Verified,
    class: Option<&str>,
    tools_image: &str,
) -> Result<(), Error> {
    let ns = &s.namespace;
    let claim = pvc_agent::staging_claim(name, ns, verified.stored_bytes, class);
    let claim_name = claim.metadata.name.clone().unwrap_or_default();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(s.client.clone(), ns);
    claims
        .create(&super::intent_post(), &claim)
        .await
        .map_err(|e| match e {
            kube::Error::Api(st) if st.code == 409 => Error::Conflict(format!(
                "PersistentVolumeClaim {ns}/{claim_name} already exists (left by an earlier restore of {name}?): delete it with `kubectl -n {ns} delete pvc {claim_name}` and try again"
            )),
            e => Error::kube("create", "PersistentVolumeClaim", ns, &claim_name, e),
        })?;
    let at = Stored {
        location: loc,
        key,
        secret: None,
        tools_image,
        encryption: None,
    };
    let copied = backups::copy_to_claim(&s.client, ns, at, &claim_name, &verified.sha256).await;
    if copied.is_err() {
        delete_claim(s, &claim_name).await;
    }
    copied
}

/// Deletes a staging claim (best effort: it is owned by the cluster once that exists).
async fn delete_claim(s: &Session, claim: &str) {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(s.client.clone(), &s.namespace);
    if let Err(e) = claims.delete(claim, &DeleteParams::default()).await {
        tracing::warn!(namespace = %s.namespace, claim, error = %e, "could not delete the staging claim");
    }
}
