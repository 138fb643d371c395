//! Taking a backup: pick the member, stream its snapshot through etcd's hash check, compression,
//! encryption (with a key Secret) and sha256 straight into the store, and record the result in an
//! `EtcdBackup`.
//!
//! No temporary file and no fixed deadline: memory is bounded by the codec's buffers and the
//! store's part buffers whatever the database size, and only a stalled stream fails.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, PostParams};

use super::label;
use crate::api::{EtcdBackup, EtcdBackupSpec, EtcdBackupStatus, backup_phase};
use crate::archive::Destination;
use crate::archive::codec::{self, Compression, SnapshotVerifier};
use crate::archive::crypt::{Encrypt, Key};
use crate::archive::store::{Access, Store, Stored};
use crate::error::{BackupError, Error};
use crate::etcd::Keyspace;
use crate::model::{Desired, EtcdView, Observed, Version};
use crate::objects;
use crate::reach::Reach;

// Pure names of objects and records live in the archive (the planner reads them too).
pub use crate::archive::naming::{object_key, object_prefix, object_time, record_name};

/// A snapshot stream that yields nothing for this long has failed (a slow one never does).
pub const STALL: Duration = Duration::from_secs(60);

/// The member a snapshot is taken from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub ordinal: u32,
    pub member: String,
    pub raft_index: u64,
    pub version: String,
    /// A healthy majority answered: the snapshot holds every acknowledged write. The pass's
    /// observation says so; the taker proves it again on the source itself, by a linearizable
    /// read just before the snapshot ([`proven_by_a_linearizable_read`]).
    pub quorum: bool,
}

/// Pure: the healthy voter with the highest raft index. Without a healthy majority, the answering
/// member with the highest raft index (voters first; learners serve snapshots only from 3.5 on), so
/// a cluster that lost quorum can still be backed up — the caller says so.
pub fn choose_source(d: &Desired, o: &Observed) -> Result<Source, String> {
    choose_source_except(d, o, &[])
}

/// Pure: [`choose_source`] among the members but those at `lost` (ordinals whose stream broke in
/// this backup); the quorum is still judged on every member as observed.
pub fn choose_source_except(d: &Desired, o: &Observed, lost: &[u32]) -> Result<Source, String> {
    let c = match &o.etcd {
        EtcdView::Reached(c) => c,
        EtcdView::Split { .. } => {
            return Err(format!(
                "members of {}/{} answer with different cluster ids; back up a member by hand",
                d.namespace, d.name
            ));
        }
        EtcdView::Unreachable { errors } => {
            return Err(format!(
                "no member of {}/{} answered: {}",
                d.namespace,
                d.name,
                errors.first().map_or("", String::as_str)
            ));
        }
        EtcdView::NotQueried => {
            return Err(format!(
                "no member pod of {}/{} is running",
                d.namespace, d.name
            ));
        }
    };
    let voters = c.voters().count();
    let healthy = c.voters().filter(|m| m.healthy).count();
    let quorum = voters > 0 && healthy >= crate::plan::quorum(voters);
    let learners_serve = |v: Option<Version>| v.is_some_and(|v| v.minor >= 5);
    let best = c
        .members
        .iter()
        .filter(|m| m.ordinal.is_some())
        .filter_map(|m| m.status.as_ref().map(|s| (m, s)))
        .filter(|(m, s)| !m.learner || learners_serve(s.version))
        .filter(|(m, _)| !quorum || (m.healthy && !m.learner))
        .filter(|(m, _)| !m.ordinal.is_some_and(|o| lost.contains(&o)))
        .max_by_key(|(m, s)| (!m.learner, s.raft_index, std::cmp::Reverse(m.ordinal)));
    let Some((m, s)) = best else {
        if !lost.is_empty() {
            return Err(format!(
                "no other member of {}/{} can serve a snapshot",
                d.namespace, d.name
            ));
        }
        return Err(format!(
            "no member of {}/{} can serve a snapshot (none answered its status)",
            d.namespace, d.name
        ));
    };
    let ordinal = m.ordinal.unwrap_or(0);
    Ok(Source {
        ordinal,
        member: objects::pod_name(&d.name, ordinal),
        raft_index: s.raft_index,
        version: s.version.map(|v| v.to_string()).unwrap_or_default(),
        quorum,
    })
}

/// What a finished snapshot transfer produced.
#[derive(Clone, Debug)]
pub struct Taken {
    pub source: Source,
    pub keyspace: Keyspace,
    pub cluster_id: u64,
    pub key: String,
    pub stored_bytes: u64,
    pub sha256: String,
    pub snapshot_bytes: u64,
}

/// Streams one snapshot of `source` into `store` under `key`. The pipeline is
/// etcd stream → etcd hash check → compression → encryption (with `secret`) → (store: sha256,
/// upload); a snapshot whose own trailing hash does not check out fails the upload, which the
/// store then aborts.
pub async fn stream_snapshot(
    reach: &Reach,
    (d, o): (&Desired, &Observed),
    source: &Source,
    (store, key, compression, secret): (&Store, &str, Compression, Option<&Key>),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(Keyspace, Stored, u64), BackupError> {
    let span = crate::phase!("snapshot", member = %source.member);
    let transfer = transfer(
        reach,
        (d, o),
        source,
        (store, key, compression, secret),
        progress,
        &span,
    );
    crate::phase::timed(span.clone(), transfer).await
}

/// `stream_snapshot` within its phase `span`; when that is enabled, the time of each stage of the
/// pipeline is logged as a phase of its own once the store has it: `etcd_stream` (waiting for
/// etcd's bytes, its hash check included), `compress`, `encrypt`, `upload` (the store's time not
/// spent reading the pipeline). They add up to the transfer's wall time.
async fn transfer(
    reach: &Reach,
    (d, o): (&Desired, &Observed),
    source: &Source,
    (store, key, compression, secret): (&Store, &str, Compression, Option<&Key>),
    progress: &(dyn Fn(u64) + Sync),
    span: &tracing::Span,
) -> Result<(Keyspace, Stored, u64), BackupError> {
    use crate::phase::Clock;
    let ip = o.pods.get(&source.ordinal).and_then(|p| p.ip.clone());
    let mut client = reach
        .connect(d, source.ordinal, ip.as_deref())
        .await
        .map_err(|e| BackupError::Etcd(Box::new(e)))?;
    let keyspace = client
        .keyspace()
        .await
        .map_err(|e| BackupError::Etcd(Box::new(e)))?;
    let stream = client
        .snapshot(STALL)
        .await
        .map_err(|e| BackupError::Etcd(Box::new(e)))?;
    let mut verifier = SnapshotVerifier::new(stream);
    // Whether what the member sent failed (its stream broke or ended short of etcd's hash), not
    // the compression nor the store: another member may serve.
    let broke = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sent = codec::Watched::new(&mut verifier, broke.clone());
    let clocks: [Clock; 3] = std::array::from_fn(|_| Clock::for_span(span));
    let packed = clocks[1].time(codec::compress(compression, clocks[0].time(sent)));
    let body: Box<dyn tokio::io::AsyncRead + Unpin + Send + '_> = match secret {
        Some(k) => Box::new(clocks[2].time(Encrypt::new(packed, k).map_err(|e| {
            BackupError::Key(format!(
                "cannot encrypt the backup of {}: {e}",
                source.member
            ))
        })?)),
        None => Box::new(packed),
    };
    let started = std::time::Instant::now();
    let stored = store.put(key, body, progress).await.map_err(|e| {
        if broke.load(std::sync::atomic::Ordering::Relaxed) {
            BackupError::SourceLost {
                ordinal: source.ordinal,
                cause: Box::new(BackupError::Store(e)),
            }
        } else {
            BackupError::Store(e)
        }
    })?;
    if clocks[0].is_on() {
        let stages = match secret {
            Some(_) => &["etcd_stream", "compress", "encrypt", "upload"][..],
            None => &["etcd_stream", "compress", "upload"][..],
        };
        let busy: Vec<_> = clocks[..stages.len() - 1]
            .iter()
            .map(Clock::total)
            .collect();
        let own = crate::phase::own_times(&busy, started.elapsed());
        for (stage, took) in stages.iter().zip(own) {
            crate::phase::ended(span, stage, took);
        }
    }
    if !verifier.verified() {
        return Err(BackupError::Corrupt(format!(
            "the snapshot stream of {} ended without etcd's hash",
            source.member
        )));
    }
    Ok((keyspace, stored, verifier.bytes()))
}

/// What to back up, where and how, and who takes it.
#[derive(Clone, Debug)]
pub struct Request {
    pub to: Destination,
    /// `label::TRIGGER_*`: who asked.
    pub trigger: &'static str,
    /// Who takes it (`cli/<host>/<pid>`, `operator/<pod>`), recorded in its status.
    pub taken_by: String,
    /// Snapshot this member (ordinal) rather than the one `choose_source` picks (`recover`).
    pub member: Option<u32>,
    /// Image of the agent pod a pvc:// destination is written through.
    pub tools_image: String,
    /// What the store may use beyond the credentials Secret (`archive::store::Access`).
    pub access: Access,
    /// Labels the record gets beside the cluster's and the trigger's (a recovery's nonce).
    pub labels: std::collections::BTreeMap<String, String>,
}

impl Request {
    /// A backup to `to` for `trigger`, taken by `taken_by`, with the default tools image and no
    /// restriction on the store (the CLI's; the operator narrows `access`).
    pub fn new(to: Destination, trigger: &'static str, taken_by: String) -> Request {
        Request {
            to,
            trigger,
            taken_by,
            member: None,
            tools_image: crate::model::DEFAULT_TOOLS_IMAGE.into(),
            access: Access::ANY,
            labels: Default::default(),
        }
    }
}

/// The cluster a backup is of, as one pass saw it: its validated spec (with what the members
/// run kept, `model::keep_immutable`) and what was observed.
#[derive(Clone, Copy, Debug)]
pub struct Of<'a> {
    pub desired: &'a Desired,
    pub observed: &'a Observed,
}

/// THE recipe: every backup (the `backup` verb, `upgrade`'s and the engine's pre-upgrade
/// snapshot, `recover`'s safety snapshot, the schedules) is taken by it or by its two halves
/// (`start`, `finish`). Opens the store with the request's credentials, SSE and access, and
/// probes it (a bad bucket or credentials fail before any record exists); records the backup
/// (`Running`), streams the snapshot with the request's compression, and writes the outcome
/// into the record (`Succeeded`, or `Failed` with the reason). Returns the final record.
pub async fn take(
    reach: &Reach,
    of: Of<'_>,
    req: &Request,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<EtcdBackup, Error> {
    let ns = &of.desired.namespace;
    let opening = async {
        Ok::<_, Error>((
            encryption_key(reach, ns, req).await?,
            open(reach, ns, req).await?,
        ))
    };
    let (secret, store) = crate::phase::timed(crate::phase!("open_store"), opening).await?;
    let taken = async {
        let recording = start(reach, of.desired, req, Timestamp::now());
        let record = crate::phase::timed(crate::phase!("create_record"), recording).await?;
        execute(reach, of, (&store, secret.as_ref()), req, record, progress).await
    }
    .await;
    store.close().await;
    taken
}

/// The first half of the recipe for a backup taken beside the engine's passes (a schedule):
/// only the `Running` record, at once, so that the next pass sees the backup in progress.
pub async fn start(
    reach: &Reach,
    d: &Desired,
    req: &Request,
    now: Timestamp,
) -> Result<EtcdBackup, Error> {
    create_record(reach, d, req, now).await
}

/// The second half: opens and probes the store, streams, and writes the outcome into `record`
/// (a store that cannot be opened fails the record too: it never stays `Running`).
pub async fn finish(
    reach: &Reach,
    of: Of<'_>,
    req: &Request,
    record: EtcdBackup,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<EtcdBackup, Error> {
    let ns = &of.desired.namespace;
    let opened = match encryption_key(reach, ns, req).await {
        Ok(secret) => open(reach, ns, req).await.map(|store| (store, secret)),
        Err(e) => Err(e),
    };
    let (store, secret) = match opened {
        Ok(opened) => opened,
        Err(e) => {
            let mut st = record.status.clone().unwrap_or_default();
            st.phase = Some(backup_phase::FAILED.into());
            st.completion_time = Some(Time(Timestamp::now()));
            st.message = Some(e.to_string());
            write_status(reach, &record, &st).await?;
            return Err(e);
        }
    };
    let taken = execute(reach, of, (&store, secret.as_ref()), req, record, progress).await;
    store.close().await;
    taken
}

/// The key of the request's client-side encryption, read from its Secret (none without
/// encryption): a missing Secret or key fails before any record exists.
pub async fn encryption_key(reach: &Reach, ns: &str, req: &Request) -> Result<Option<Key>, Error> {
    match &req.to.encryption {
        Some(k) => super::secret_key(&reach.client, ns, k).await.map(Some),
        None => Ok(None),
    }
}

/// Opens the request's store (its Secret's credentials and endpoint, SSE, the taker's access)
/// and probes it: credentials, bucket and endpoint answer, or nothing is created.
pub async fn open(reach: &Reach, ns: &str, req: &Request) -> Result<Store, Error> {
    let store = super::open_store(
        &reach.client,
        ns,
        &req.to.location,
        req.to.credentials_secret.as_deref(),
        &req.tools_image,
        &req.access,
    )
    .await?;
    let ready = match store.clone().with_sse(req.to.sse.clone()) {
        Ok(s) => s.check().await.map(|()| s),
        Err(e) => Err(e),
    };
    match ready {
        Ok(s) => Ok(s),
        Err(e) => {
            store.close().await;
            Err(BackupError::from(e).into())
        }
    }
}

/// The member at `ordinal` as a snapshot source, if it answers its status (no quorum needed).
pub async fn source_at(
    reach: &Reach,
    d: &Desired,
    o: &Observed,
    ordinal: u32,
) -> Result<Source, BackupError> {
    let ip = o.pods.get(&ordinal).and_then(|p| p.ip.clone());
    let mut client = reach
        .connect(d, ordinal, ip.as_deref())
        .await
        .map_err(|e| BackupError::Etcd(Box::new(e)))?;
    let st = client
        .status()
        .await
        .map_err(|e| BackupError::Etcd(Box::new(e)))?;
    Ok(Source {
        ordinal,
        member: objects::pod_name(&d.name, ordinal),
        raft_index: st.raft_index,
        version: st.version,
        quorum: false,
    })
}

fn backup_api(reach: &Reach, ns: &str) -> Api<EtcdBackup> {
    Api::namespaced(reach.client.clone(), ns)
}

fn kube_err(verb: &'static str, ns: &str, name: &str, e: kube::Error) -> Error {
    Error::kube(verb, "EtcdBackup", ns, name, e)
}

/// Creates the EtcdBackup record of a backup about to be taken, claimed by `req.taken_by`.
async fn create_record(
    reach: &Reach,
    d: &Desired,
    req: &Request,
    now: Timestamp,
) -> Result<EtcdBackup, Error> {
    let ns = d.namespace.clone();
    let name = record_name(&d.name, now);
    let mut record = EtcdBackup::new(
        &name,
        EtcdBackupSpec {
            cluster: d.name.clone(),
            destination: req.to.location.to_string(),
            compression: Some(req.to.compression.as_str().into()),
            credentials_secret: req.to.credentials_secret.clone(),
            trigger: Some(req.trigger.into()),
            cluster_uid: Some(d.uid.clone()).filter(|u| !u.is_empty()),
            encryption: req
                .to
                .encryption
                .as_ref()
                .map(crate::api::BackupEncryption::from_key_secret),
        },
    );
    record.metadata.namespace = Some(ns.clone());
    let mut labels = label::for_cluster(&d.name, req.trigger);
    labels.extend(req.labels.clone());
    record.metadata.labels = Some(labels);
    let api = backup_api(reach, &ns);
    // Two backups of one cluster within one second: the later record takes a suffix.
    let mut attempt = 1;
    let created = loop {
        let pp = PostParams {
            field_manager: Some(crate::keys::MANAGER_BACKUP.into()),
            ..PostParams::default()
        };
        match api.create(&pp, &record).await {
            Ok(c) => break c,
            Err(kube::Error::Api(s)) if s.code == 409 && attempt < 10 => {
                attempt += 1;
                record.metadata.name = Some(format!("{name}-{attempt}"));
            }
            Err(e) => return Err(kube_err("create", &ns, &name, e)),
        }
    };
    let status = EtcdBackupStatus {
        phase: Some(backup_phase::RUNNING.into()),
        taken_by: Some(req.taken_by.clone()),
        compression: Some(req.to.compression.as_str().into()),
        start_time: Some(Time(now)),
        ..Default::default()
    };
    write_status(reach, &created, &status).await?;
    let mut created = created;
    created.status = Some(status);
    Ok(created)
}

/// Writes a backup's status whole, by server-side apply as its one writer: whoever takes it
/// (`keys::MANAGER_BACKUP`).
pub async fn write_status(
    reach: &Reach,
    record: &EtcdBackup,
    status: &EtcdBackupStatus,
) -> Result<(), Error> {
    let ns = record.namespace().unwrap_or_default();
    crate::apply::status(
        &backup_api(reach, &ns),
        &record.metadata,
        record.status.as_ref(),
        crate::keys::MANAGER_BACKUP,
        status,
    )
    .await
    .map_err(|e| kube_err("update the status of", &ns, &record.name_any(), e))
}

/// Takes the backup `record` describes into the open `store` and writes its outcome into its
/// status (Succeeded or Failed, never left Running by an error of the transfer).
async fn execute(
    reach: &Reach,
    of: Of<'_>,
    (store, secret): (&Store, Option<&Key>),
    req: &Request,
    mut record: EtcdBackup,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<EtcdBackup, Error> {
    let started = record
        .status
        .as_ref()
        .and_then(|s| s.start_time.clone())
        .map_or_else(Timestamp::now, |t| t.0);
    let mut status = record.status.clone().unwrap_or_default();
    let (d, observed) = (of.desired, of.observed);
    let outcome = async {
        let mut lost = Vec::new();
        loop {
            let e = match attempt(reach, of, (store, secret), req, started, &lost, progress).await {
                Ok(taken) => return Ok(taken),
                Err(Error::Backup(e)) => e,
                Err(e) => return Err(e),
            };
            let Some(ordinal) = try_again(&e, req.member, &lost, d, observed) else {
                return Err(Error::Backup(e));
            };
            tracing::warn!(
                namespace = %d.namespace,
                cluster = %d.name,
                member = %objects::pod_name(&d.name, ordinal),
                error = %Error::Backup(e).report(),
                "the snapshot failed on its way from this member; taking it again from another one"
            );
            lost.push(ordinal);
        }
    }
    .await;
    let finished = Timestamp::now();
    status.completion_time = Some(Time(finished));
    status.duration_seconds =
        Some(((finished.as_millisecond() - started.as_millisecond()) as f64 / 1000.0).max(0.0));
    let result = match outcome {
        Ok(t) => {
            status.phase = Some(backup_phase::SUCCEEDED.into());
            status.url = Some(req.to.location.object_url(&t.key));
            status.size = Some(t.stored_bytes as i64);
            status.snapshot_size = Some(t.snapshot_bytes as i64);
            status.sha256 = Some(t.sha256.clone());
            status.revision = Some(t.keyspace.revision);
            status.keys = Some(t.keyspace.keys);
            status.etcd_version = Some(t.source.version.clone());
            status.member = Some(t.source.member.clone());
            status.cluster_id = Some(format!("{:016x}", t.cluster_id));
            status.verified = true;
            status.quorum = Some(t.source.quorum);
            status.message = (!t.source.quorum).then(|| {
                format!(
                    "taken from {} while the cluster had no healthy quorum: it holds what that member had applied",
                    t.source.member
                )
            });
            Ok(())
        }
        Err(e) => {
            status.phase = Some(backup_phase::FAILED.into());
            status.message = Some(e.to_string());
            Err(e)
        }
    };
    write_status(reach, &record, &status).await?;
    record.status = Some(status);
    result.map(|()| record)
}

/// One try of a backup: the source (`req.member`, else the best member but those in `lost`), its
/// revision, then the stream into a new object. A source that fails on the way is named by
/// [`lost_source`].
async fn attempt(
    reach: &Reach,
    of: Of<'_>,
    (store, secret): (&Store, Option<&Key>),
    req: &Request,
    started: Timestamp,
    lost: &[u32],
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Taken, Error> {
    let (d, observed) = (of.desired, of.observed);
    let source = match req.member {
        Some(ordinal) => source_at(reach, d, observed, ordinal).await?,
        None => choose_source_except(d, observed, lost).map_err(BackupError::NoSource)?,
    };
    let cluster_id = match &observed.etcd {
        EtcdView::Reached(c) => c.cluster_id,
        _ => 0,
    };
    let failed_at = |e: BackupError| match e {
        BackupError::Etcd(_) => BackupError::SourceLost {
            ordinal: source.ordinal,
            cause: Box::new(e),
        },
        e => e,
    };
    // The revision is in the name: read it first (the snapshot holds at least this revision).
    let ip = observed
        .pods
        .get(&source.ordinal)
        .and_then(|p| p.ip.clone());
    let mut client = reach
        .connect(d, source.ordinal, ip.as_deref())
        .await
        .map_err(|e| failed_at(BackupError::Etcd(Box::new(e))))?;
    let read = if proven_by_a_linearizable_read(&source) {
        client.keyspace_linearizable().await
    } else {
        client.keyspace().await
    };
    let revision = read
        .map_err(|e| failed_at(BackupError::Etcd(Box::new(e))))?
        .revision;
    let key = object_key(
        &d.namespace,
        &d.name,
        started,
        revision,
        req.to.compression,
        secret.is_some(),
    );
    let (keyspace, stored, snapshot_bytes) = stream_snapshot(
        reach,
        (d, observed),
        &source,
        (store, &key, req.to.compression, secret),
        progress,
    )
    .await
    .map_err(failed_at)?;
    Ok(Taken {
        source,
        keyspace,
        cluster_id,
        key,
        stored_bytes: stored.bytes,
        sha256: stored.sha256_hex,
        snapshot_bytes,
    })
}

/// Pure: whether the try reads the source's revision by a linearizable read: when the snapshot
/// will be recorded as holding every acknowledged write (`quorum`). The observation that chose the
/// source may be older than the try (a retry on another member comes after a stream that broke,
/// minutes later): a member cut off from its peers since would still answer a serializable read
/// with what it had, and its snapshot would count as complete. The linearizable read fails on
/// it instead, so the try fails on that source and the next member is tried. A backup without a
/// quorum (or of one named member, `recover`'s) reads serializably and says so in its record.
fn proven_by_a_linearizable_read(source: &Source) -> bool {
    source.quorum
}

/// Pure: the ordinal of the member a failed try was taking its snapshot from, when another member
/// may serve it: the member could not be dialed or answer, or its stream broke on the way (its pod
/// went away, the connection or port-forward broke, it stalled). `None` for what another member
/// would not change (the store, the key, a damaged snapshot).
fn lost_source(e: &BackupError) -> Option<u32> {
    match e {
        BackupError::SourceLost { ordinal, .. } => Some(*ordinal),
        _ => None,
    }
}

/// Pure: after a try failed with `e`, the member to leave for another one: the source lost on the
/// way, while another member can serve and tries are left (`lost`: the members left so far);
/// `None` to fail with `e` (never for a backup of one named member, `member`).
fn try_again(
    e: &BackupError,
    member: Option<u32>,
    lost: &[u32],
    d: &Desired,
    o: &Observed,
) -> Option<u32> {
    lost_source(e).filter(|ordinal| {
        member.is_none()
            && lost.len() + 1 < SOURCE_ATTEMPTS
            && choose_source_except(d, o, &[lost, &[*ordinal]].concat()).is_ok()
    })
}

/// Members a backup tries before it fails: when the stream from one fails on the way, the
/// snapshot is taken again, from the start and into a new object, from the next best member.
const SOURCE_ATTEMPTS: usize = 3;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClusterView, MemberStatusView, MemberView};

    fn desired() -> Desired {
        let mut c = crate::api::EtcdCluster::new(
            "demo",
            crate::api::EtcdClusterSpec {
                replicas: 3,
                version: "3.5.16".into(),
                ..Default::default()
            },
        );
        c.metadata.namespace = Some("ns".into());
        crate::model::validate(&c).unwrap()
    }

    fn member(ord: u32, index: u64, healthy: bool, learner: bool, version: &str) -> MemberView {
        MemberView {
            id: 100 + ord as u64,
            name: format!("demo-{ord}"),
            ordinal: Some(ord),
            learner,
            started: true,
            healthy,
            status: Some(MemberStatusView {
                version: Version::parse(version),
                raft_index: index,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn observed(members: Vec<MemberView>) -> Observed {
        Observed {
            etcd: EtcdView::Reached(ClusterView {
                cluster_id: 7,
                leader: Some(100),
                members,
                auth_enabled: false,
                auth: None,
                list_unconfirmed: false,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_healthy_voter_with_the_highest_index_serves_the_snapshot() {
        let o = observed(vec![
            member(0, 10, true, false, "3.5.16"),
            member(1, 12, true, false, "3.5.16"),
            member(2, 15, false, false, "3.5.16"),
            member(3, 20, true, true, "3.5.16"),
        ]);
        let s = choose_source(&desired(), &o).unwrap();
        assert_eq!(
            (s.member.as_str(), s.raft_index, s.quorum),
            ("demo-1", 12, true)
        );
    }

    #[test]
    fn without_quorum_the_most_advanced_answering_member_serves_and_it_is_said() {
        let mut sick = member(1, 30, false, false, "3.5.16");
        sick.healthy = false;
        let o = observed(vec![
            member(0, 10, false, false, "3.5.16"),
            sick,
            MemberView {
                status: None,
                ..member(2, 0, false, false, "3.5.16")
            },
        ]);
        let s = choose_source(&desired(), &o).unwrap();
        assert_eq!((s.member.as_str(), s.quorum), ("demo-1", false));
    }

    #[test]
    fn learners_of_3_4_never_serve_a_snapshot() {
        let o = observed(vec![member(0, 10, true, true, "3.4.23")]);
        assert!(choose_source(&desired(), &o).is_err());
        let o = observed(vec![member(0, 10, false, true, "3.5.16")]);
        assert_eq!(choose_source(&desired(), &o).unwrap().member, "demo-0");
    }

    #[test]
    fn an_unreachable_cluster_names_the_reason() {
        let o = Observed {
            etcd: EtcdView::Unreachable {
                errors: vec!["connection refused".into()],
            },
            ..Default::default()
        };
        let e = choose_source(&desired(), &o).unwrap_err();
        assert!(
            e.contains("ns/demo") && e.contains("connection refused"),
            "{e}"
        );
    }

    #[test]
    fn a_member_whose_stream_failed_is_passed_over_and_then_there_is_none() {
        let o = observed(vec![
            member(0, 10, true, false, "3.5.16"),
            member(1, 12, true, false, "3.5.16"),
            member(2, 11, true, false, "3.5.16"),
        ]);
        let d = desired();
        let pick = |lost: &[u32]| choose_source_except(&d, &o, lost).map(|s| s.member);
        assert_eq!(pick(&[]).unwrap(), "demo-1");
        assert_eq!(pick(&[1]).unwrap(), "demo-2");
        // Still taken with quorum: the members passed over are judged healthy as observed.
        assert!(choose_source_except(&d, &o, &[1, 2]).unwrap().quorum);
        let e = pick(&[0, 1, 2]).unwrap_err();
        assert!(e.contains("no other member of ns/demo"), "{e}");
    }

    /// Issue 43 R10: a try whose snapshot will count as holding every acknowledged write proves
    /// it on its source (a linearizable read) whatever the observation said: the retry after a
    /// broken stream comes from an observation that may be minutes old, and a member cut off
    /// from its peers since would pass a serializable read. Without a quorum (or for one named
    /// member) the read is serializable and the record says what the snapshot holds.
    #[test]
    fn a_snapshot_counted_complete_is_proven_on_its_source_first() {
        let o = observed(vec![
            member(0, 10, true, false, "3.5.16"),
            member(1, 12, true, false, "3.5.16"),
            member(2, 11, true, false, "3.5.16"),
        ]);
        let d = desired();
        for lost in [&[][..], &[1], &[1, 2]] {
            let s = choose_source_except(&d, &o, lost).unwrap();
            assert!(s.quorum && proven_by_a_linearizable_read(&s), "{lost:?}");
        }
        let sick = observed(vec![
            member(0, 10, false, false, "3.5.16"),
            member(1, 30, false, false, "3.5.16"),
            member(2, 11, true, false, "3.5.16"),
        ]);
        let s = choose_source(&d, &sick).unwrap();
        assert!(!s.quorum && !proven_by_a_linearizable_read(&s));
    }

    #[test]
    fn only_a_source_that_failed_on_the_way_is_tried_again_elsewhere() {
        use crate::archive::store::StoreError;
        let store = || {
            BackupError::Store(StoreError::NoSuchBucket {
                bucket: "b".into(),
                endpoint: "e".into(),
            })
        };
        let lost = BackupError::SourceLost {
            ordinal: 2,
            cause: Box::new(store()),
        };
        assert_eq!(lost_source(&lost), Some(2));
        // Its message and exit code are its cause's; waiting may help.
        assert_eq!(lost.to_string(), store().to_string());
        assert_eq!(lost.exit_code(), store().exit_code());
        assert!(lost.is_transient());
        for other in [
            store(),
            BackupError::Corrupt("x".into()),
            BackupError::Key("x".into()),
            BackupError::NoSource("x".into()),
        ] {
            assert_eq!(lost_source(&other), None, "{other}");
        }
    }

    #[test]
    fn a_backup_tries_another_member_only_while_one_can_serve_and_at_most_three() {
        let d = desired();
        let o = observed(
            (0..5)
                .map(|i| member(i, 10, true, false, "3.5.16"))
                .collect(),
        );
        let lost_at = |ordinal| BackupError::SourceLost {
            ordinal,
            cause: Box::new(BackupError::Corrupt("cut".into())),
        };
        assert_eq!(try_again(&lost_at(0), None, &[], &d, &o), Some(0));
        assert_eq!(try_again(&lost_at(1), None, &[0], &d, &o), Some(1));
        // The third member's failure ends it, though two more could serve.
        assert_eq!(try_again(&lost_at(2), None, &[0, 1], &d, &o), None);
        // Never for a backup of one named member, nor for a failure another member would share.
        assert_eq!(try_again(&lost_at(0), Some(0), &[], &d, &o), None);
        assert_eq!(
            try_again(&BackupError::Corrupt("x".into()), None, &[], &d, &o),
            None
        );
        // None left to serve: the failure stands (one member, or the rest lost).
        let one = observed(vec![member(0, 10, true, false, "3.5.16")]);
        assert_eq!(try_again(&lost_at(0), None, &[], &d, &one), None);
        let two = observed(
            (0..2)
                .map(|i| member(i, 10, true, false, "3.5.16"))
                .collect(),
        );
        assert_eq!(try_again(&lost_at(1), None, &[0], &d, &two), None);
    }
}
