//! The engine's backups: the entry point through which the drivers take one (`take`), the
//! backup steps `act` carries out, and what the drivers read of backups (records, a stored
//! snapshot verified, a snapshot copied to a claim, the pvc agent's side). Every backup is taken
//! by the one recipe, `backup::take`. The drivers reach `backup` only through here (a test of
//! `cli` checks it): this is the one seam between them.

use std::collections::BTreeSet;
use std::sync::Mutex;

use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use tokio::sync::mpsc::UnboundedSender;

use super::Context;
use super::act::Done;
use crate::api::{EtcdBackup, EtcdCluster};
use crate::archive::Destination;
use crate::archive::fetch::{self, Verified};
use crate::archive::store::{Access, Location, Store};
use crate::backup::label;
use crate::backup::take::{self, Of};
use crate::error::{BackupError, Error};
use crate::model::drill::{DrillPod, DrillPolicy};
use crate::model::fair::{Bounds, Fair, Turn};
use crate::model::records::select;
use crate::model::{self, BackupPlan, BackupsView, Desired, Observed, Version};
use crate::plan::drill::DrillStep;

/// What a driver asks of a backup (`Context::backup_request` makes one), and the member a
/// backup would be taken from.
pub use crate::backup::take::{Request, Source};

/// Takes a backup of `cluster` as `req` says, now: validates the cluster, observes it, and runs
/// the recipe (`backup::take::take`), reporting stored bytes to `progress`. What the `backup`
/// verb and `recover`'s safety snapshot call; the schedules and the pre-upgrade snapshot are
/// steps of a pass.
pub async fn take(
    ctx: &Context,
    cluster: &EtcdCluster,
    req: &Request,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<EtcdBackup, Error> {
    let (d, observed) = validated_and_observed(ctx, cluster).await?;
    take::take(
        &ctx.reach,
        Of {
            desired: &d,
            observed: &observed,
        },
        req,
        progress,
    )
    .await
}

/// The cluster's spec validated, and the cluster observed with what its members run (a refused
/// spec change, e.g. of spec.tls, aside): what a backup or a drill dials with.
async fn validated_and_observed(
    ctx: &Context,
    cluster: &EtcdCluster,
) -> Result<(Desired, Observed), Error> {
    let d = model::validate(cluster).map_err(|source| Error::InvalidSpec {
        namespace: d_namespace(cluster),
        name: cluster.metadata.name.clone().unwrap_or_default(),
        source,
    })?;
    super::observe(ctx, &d, cluster.status.as_ref()).await
}

fn d_namespace(cluster: &EtcdCluster) -> String {
    cluster
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into())
}

/// What taking `req` of the cluster `d` now would do, without taking it: the store answers
/// (opened, probed with the request's credentials and SSE, closed) and the member it would be
/// taken from (observed now). The `backup --dry-run` of a driver.
pub async fn would_take(ctx: &Context, d: &Desired, req: &Request) -> Result<Source, Error> {
    take::encryption_key(&ctx.reach, &d.namespace, req).await?;
    take::open(&ctx.reach, &d.namespace, req)
        .await?
        .close()
        .await;
    let (d, observed) = super::observe(ctx, d, None).await?;
    Ok(take::choose_source(&d, &observed).map_err(BackupError::NoSource)?)
}

/// A restore drill of `record`, a backup of `cluster` (`backup::drill`): restored into a
/// throwaway one-member etcd with the tools image `tools_image`, compared with the record and
/// the live cluster, the result written on the record. Returns the record as written and the
/// verdict. The live cluster is only read.
pub async fn drill(
    ctx: &Context,
    cluster: &EtcdCluster,
    record: &EtcdBackup,
    tools_image: &str,
) -> Result<(EtcdBackup, crate::model::records::drill::Verdict), Error> {
    let (d, observed) = validated_and_observed(ctx, cluster).await?;
    crate::backup::drill::run(&ctx.reach, (&d, &observed), record, tools_image).await
}

/// EtcdBackup records of `cluster` in `ns`, newest first (a cluster's records outlive it).
pub async fn records(
    client: &kube::Client,
    ns: &str,
    cluster: &str,
) -> Result<Vec<EtcdBackup>, Error> {
    crate::backup::records(client, ns, cluster).await
}

/// The cluster as its backup records name it (uid, cluster id): which records are its own.
pub fn identity(cluster: &EtcdCluster) -> select::Identity<'_> {
    crate::backup::scheduled::identity(cluster)
}

/// The records of backups of the cluster named `cluster` in `ns` (`records`), and that cluster as
/// it exists now, if it does (its `identity` tells its own backups from a namesake's): what a
/// `--latest-of` choice is made from.
pub async fn records_and_cluster(
    client: &kube::Client,
    ns: &str,
    cluster: &str,
) -> Result<(Vec<EtcdBackup>, Option<EtcdCluster>), Error> {
    let list = records(client, ns, cluster).await?;
    let live = Api::<EtcdCluster>::namespaced(client.clone(), ns)
        .get_opt(cluster)
        .await
        .map_err(|e| Error::kube("get", crate::api::KIND, ns, cluster, e))?;
    Ok((list, live))
}

/// Whether the Secret `secret` of `ns` holds S3 credentials (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`): `Err` says what is missing and how to make it.
pub async fn check_credentials(client: &kube::Client, ns: &str, secret: &str) -> Result<(), Error> {
    crate::backup::secret_credentials(client, ns, secret)
        .await
        .map(|_| ())
}

/// Where a stored snapshot is and how to read it.
#[derive(Clone, Copy, Debug)]
pub struct Stored<'a> {
    pub location: &'a Location,
    pub key: &'a str,
    /// The Secret of its credentials (else the standard AWS chain of this machine).
    pub secret: Option<&'a str>,
    /// Image of the agent pod a pvc:// location is read through.
    pub tools_image: &'a str,
    /// The Secret with the key of an encrypted object (its name ends in `.enc`).
    pub encryption: Option<&'a crate::archive::crypt::KeySecret>,
}

/// Reads the whole stored snapshot on this machine and verifies it (the sha256 of the stored
/// bytes against `expected` when known, decryption, decompression, etcd's own hash); `opened` is
/// called once the store answers (the reading starts). An encrypted one without a key, or with
/// a wrong key, is refused first (a wrong key at its header). Changes nothing.
pub async fn verify(
    client: &kube::Client,
    ns: &str,
    at: Stored<'_>,
    expected: Option<&str>,
    opened: impl FnOnce(),
) -> Result<Verified, Error> {
    let (store, secret) = open_with_key(client, ns, at).await?;
    opened();
    let verified = fetch::verify_into(
        &store,
        at.key,
        secret.as_ref(),
        expected,
        &mut tokio::io::sink(),
    )
    .await;
    store.close().await;
    Ok(verified?)
}

/// Checks the stored snapshot without reading it whole (`fetch::check_object`): it exists, and an
/// encrypted one opens with its key. Returns its stored size. Changes nothing.
pub async fn check(client: &kube::Client, ns: &str, at: Stored<'_>) -> Result<u64, Error> {
    let (store, secret) = open_with_key(client, ns, at).await?;
    let checked = fetch::check_object(&store, at.key, secret.as_ref()).await;
    store.close().await;
    Ok(checked?)
}

/// The store `at` is in, opened for reading, and the key of an encrypted snapshot (read from its
/// Secret first: a missing Secret is refused before the store is reached).
async fn open_with_key(
    client: &kube::Client,
    ns: &str,
    at: Stored<'_>,
) -> Result<(Store, Option<crate::archive::crypt::Key>), Error> {
    let secret = match at.encryption {
        Some(k) => Some(crate::backup::secret_key(client, ns, k).await?),
        None => None,
    };
    let store = crate::backup::open_store(
        client,
        ns,
        at.location,
        at.secret,
        at.tools_image,
        &Access::ANY,
    )
    .await?;
    Ok((store, secret))
}

/// Copies the snapshot `at` (a directory of this machine) into the claim `claim` of `ns`, under
/// the same key, through an agent pod: the copy's sha256 must be `sha256` (the verified one).
pub async fn copy_to_claim(
    client: &kube::Client,
    ns: &str,
    at: Stored<'_>,
    claim: &str,
    sha256: &str,
) -> Result<(), Error> {
    let local = Store::open(at.location, None)
        .await
        .map_err(BackupError::from)?;
    let staged = Location::Pvc {
        claim: claim.into(),
        path: String::new(),
    };
    let target = crate::backup::pvc::open(client, ns, &staged, at.tools_image).await?;
    let put = async {
        let (body, _) = local.get(at.key).await?;
        target.put(at.key, body, |_| {}).await
    }
    .await;
    target.close().await;
    let stored = put.map_err(BackupError::from)?;
    if stored.sha256_hex != sha256 {
        return Err(BackupError::Corrupt(format!(
            "{}: changed while it was copied (sha256 {} after, {sha256} before)",
            at.location.object_url(at.key),
            stored.sha256_hex,
        ))
        .into());
    }
    Ok(())
}

/// `Step::PreUpgradeSnapshot`: a verified snapshot to `destination` (with the cluster's backup
/// plan's credentials, compression and SSE; taken in the pass: nothing moves until it exists), recorded for version `to` in the annotation
/// `kubectl etcd upgrade` writes, which the next pass reads. Not verified: it fails, and the next
/// pass asks again (no snapshot, no upgrade).
pub(super) async fn pre_upgrade_snapshot(
    ctx: &Context,
    (d, o): (&Desired, &Observed),
    to: Version,
    destination: &str,
) -> Result<String, Error> {
    let req = pre_upgrade_request(d, destination)?;
    let what = format!("pre-upgrade snapshot; no member moves to {to}");
    let url = snapshot_before(ctx, (d, o), req, &what).await?;
    record_in(
        ctx,
        d,
        crate::api::ANNOTATION_PRE_UPGRADE_BACKUP,
        format!("{to} {url}"),
    )
    .await?;
    Ok(url)
}

/// `Step::HibernateSnapshot`: the same, before the members stop for `spec.hibernate`, recorded
/// for this generation in the annotation `kubectl etcd hibernate` writes. Not verified: it
/// fails, and no member stops (the next pass asks again).
pub(super) async fn hibernate_snapshot(
    ctx: &Context,
    (d, o): (&Desired, &Observed),
    destination: &str,
) -> Result<String, Error> {
    let mut req = pre_upgrade_request(d, destination)?;
    req.trigger = label::TRIGGER_HIBERNATE;
    let what = "snapshot before hibernating; no member stops";
    let url = snapshot_before(ctx, (d, o), req, what).await?;
    let value = format!("{} {url}", d.generation);
    record_in(ctx, d, crate::api::ANNOTATION_HIBERNATE_SNAPSHOT, value).await?;
    Ok(url)
}

/// Takes the snapshot `req` asks for, in the pass, and returns its URL; fails (`Held`, naming
/// `what` was held back) unless it was stored and verified.
async fn snapshot_before(
    ctx: &Context,
    (d, o): (&Desired, &Observed),
    mut req: Request,
    what: &str,
) -> Result<String, Error> {
    req.taken_by = ctx.identity.clone();
    req.access = ctx.store_access.clone();
    let record = take::take(
        &ctx.reach,
        Of {
            desired: d,
            observed: o,
        },
        &req,
        &|_| {},
    )
    .await?;
    let st = record.status.clone().unwrap_or_default();
    st.url.filter(|_| st.verified).ok_or_else(|| {
        let (kind, held) = what.split_once("; ").unwrap_or((what, ""));
        Error::Held {
            namespace: d.namespace.clone(),
            name: d.name.clone(),
            message: format!(
                "the {kind} {} was not verified ({}); {held}",
                record.metadata.name.as_deref().unwrap_or_default(),
                st.message.as_deref().unwrap_or("no message")
            ),
        }
    })
}

/// Records `value` in the cluster's annotation `key` (what the next pass reads).
async fn record_in(ctx: &Context, d: &Desired, key: &str, value: String) -> Result<(), Error> {
    let patch = serde_json::json!({"metadata": {"annotations": {key: value}}});
    let api: Api<EtcdCluster> = Api::namespaced(ctx.client.clone(), &d.namespace);
    let pp = PatchParams {
        field_manager: Some(crate::keys::MANAGER_ENGINE.into()),
        ..PatchParams::default()
    };
    api.patch(&d.name, &pp, &Patch::Merge(&patch))
        .await
        .map_err(|e| Error::kube("annotate", crate::api::KIND, &d.namespace, &d.name, e))?;
    Ok(())
}

/// The request of a pre-upgrade snapshot to `destination`, with the cluster's backup plan
/// (credentials, compression, SSE).
pub(super) fn pre_upgrade_request(d: &Desired, destination: &str) -> Result<Request, Error> {
    let location = Location::parse(destination).map_err(BackupError::from)?;
    let to = match &d.backup {
        Some(plan) => Destination {
            location,
            ..plan.to.clone()
        },
        None => Destination::at(location),
    };
    Ok(Request::new(to, label::TRIGGER_UPGRADE, String::new()))
}

/// The scheduled backups this process takes beside the passes: which records it is taking now
/// (`Observed::backups.taking`), the slots they take (`model::fair`: per namespace, in all, and
/// the namespaces' turns), and whom to tell when one ends (the operator starts a pass of that
/// cluster, which sees the record's outcome at once, and of the clusters whose turn comes).
#[derive(Debug)]
pub struct Runner {
    taking: Mutex<BTreeSet<(String, String)>>,
    slots: Mutex<Fair<String>>,
    ended: Option<UnboundedSender<(String, String)>>,
}

/// How long a due backup keeps its place in line without its cluster asking again (its passes
/// ask every 30 s while it waits, and at once when its turn comes): a cluster deleted
/// or no longer due leaves the line then.
const IN_LINE_FOR: std::time::Duration = std::time::Duration::from_secs(120);
// A waiting cluster looks again every `Pace::OPERATOR.holding` (`Pace::after`): it must keep
// its place with a look or two to spare.
const _: () = assert!(IN_LINE_FOR.as_secs() > 2 * super::Pace::OPERATOR.holding.as_secs());

impl Runner {
    /// `ended` receives `(namespace, cluster)` when a backup of that cluster ends, and when a
    /// waiting cluster's turn comes; `bounds`: the backups taken at once per namespace and in all.
    pub fn new(ended: Option<UnboundedSender<(String, String)>>, bounds: Bounds) -> Runner {
        Runner {
            taking: Mutex::new(BTreeSet::new()),
            slots: Mutex::new(Fair::new(bounds, Some(IN_LINE_FOR))),
            ended,
        }
    }

    /// Due backups waiting for a slot, by namespace (every namespace with one running or
    /// waiting).
    pub fn waiting_by_namespace(&self) -> std::collections::BTreeMap<String, usize> {
        self.slots().waiting_by_namespace()
    }

    fn taking(&self, ns: &str) -> BTreeSet<String> {
        self.lock()
            .iter()
            .filter(|(n, _)| n == ns)
            .map(|(_, r)| r.clone())
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<(String, String)>> {
        self.taking.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Fair<String>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Cluster `name` of `ns` asks for a backup slot.
    fn ask(&self, ns: &str, name: &str) -> Turn {
        self.slots()
            .ask(ns, &name.to_owned(), std::time::Instant::now())
    }

    /// The slot of cluster `name` of `ns` frees: a pass of it, and of the clusters whose turn
    /// comes.
    fn free(&self, ns: &str, name: &str) {
        let next = self
            .slots()
            .done(ns, &name.to_owned(), std::time::Instant::now());
        if let Some(ended) = &self.ended {
            for cluster in std::iter::once((ns.to_owned(), name.to_owned())).chain(next) {
                let _ = ended.send(cluster);
            }
        }
    }
}

/// What the backup rules read beside the cluster (`Observed::backups`): which records this
/// process is taking (read first: a record that ends meanwhile then reads as ended, never as
/// abandoned), the cluster's records, and with a retention policy the names restores pin.
pub(super) async fn observe(
    ctx: &Context,
    d: &Desired,
    cluster: &EtcdCluster,
) -> Result<BackupsView, Error> {
    let taking = ctx
        .scheduled
        .as_ref()
        .map(|r| r.taking(&d.namespace))
        .unwrap_or_default();
    let records = crate::backup::records(&ctx.client, &d.namespace, &d.name).await?;
    let pinned = match d.backup.as_ref().and_then(|p| p.retention.as_ref()) {
        Some(_) => crate::backup::scheduled::restore_names(&ctx.client, &d.namespace).await?,
        None => BTreeSet::new(),
    };
    let (drill_pods, drill_policies) = match ctx.scheduled {
        Some(_) => Box::pin(drill_objects(&ctx.client, d)).await?,
        None => Default::default(),
    };
    Ok(BackupsView {
        drill_pods,
        drill_policies,
        records,
        taking,
        me: ctx.identity.clone(),
        schedules: ctx.scheduled.is_some(),
        pinned,
        created: cluster.metadata.creation_timestamp.as_ref().map(|t| t.0),
    })
}

/// The cluster's backup plan, for a backup step (the planner asks for one only with a plan).
fn plan_of(d: &Desired) -> Result<&BackupPlan, Error> {
    d.backup.as_ref().ok_or_else(|| {
        Error::Usage(format!(
            "EtcdCluster {}/{} has no spec.backup",
            d.namespace, d.name
        ))
    })
}

/// The backup and drill steps (`plan::backup`, `plan::drill`); any other step changes nothing.
pub(super) async fn act(
    ctx: &Context,
    (d, o): (&Desired, &Observed),
    step: &crate::plan::Step,
) -> Result<Done, Error> {
    use crate::plan::Step;
    match step {
        Step::TakeScheduledBackup { .. } => return start_scheduled(ctx, (d, o)).await,
        Step::PruneBackups { delete, foreign } => prune(ctx, d, delete, foreign).await?,
        Step::AbandonBackup { record, .. } => abandon(ctx, (d, o), record).await?,
        Step::CheckBackup { record, key, .. } => check_stored(ctx, (d, o), record, key).await?,
        // Boxed: a drill's finish is a deep future, which would grow every pass's (a worker
        // thread's stack holds it).
        Step::Drill { part } => Box::pin(drill_step(ctx, (d, o), part)).await?,
        _ => {}
    }
    Ok(Done::Changed)
}

/// `Step::TakeScheduledBackup`: takes a slot (else the cluster waits in line, `BackupQueued`),
/// records the backup (`Running`, signed by this process) and starts the rest of the recipe
/// (`take::finish`) beside the passes; returns once the record exists. The passes that follow go
/// on with the cluster's repairs and see the backup through its record.
async fn start_scheduled(ctx: &Context, (d, o): (&Desired, &Observed)) -> Result<Done, Error> {
    let Some(runner) = ctx.scheduled.clone() else {
        return Err(Error::Usage(
            "this driver takes no scheduled backups (only a long-running operator does)".into(),
        ));
    };
    let turn = runner.ask(&d.namespace, &d.name);
    if let Some(wait) = crate::plan::backup::queued(d, &turn) {
        tracing::debug!(cluster = %d.name, namespace = %d.namespace, "{wait}");
        return Ok(Done::Wait(wait));
    }
    let req = ctx.backup_request(plan_of(d)?.to.clone(), label::TRIGGER_SCHEDULE);
    let record = match take::start(&ctx.reach, d, &req, jiff::Timestamp::now()).await {
        Ok(record) => record,
        Err(e) => {
            runner.free(&d.namespace, &d.name);
            return Err(e);
        }
    };
    let key = (d.namespace.clone(), record.name_any());
    runner.lock().insert(key.clone());
    let (reach, d, o) = (ctx.reach.clone(), d.clone(), o.clone());
    tokio::spawn(async move {
        let of = Of {
            desired: &d,
            observed: &o,
        };
        match take::finish(&reach, of, &req, record, &|_| {}).await {
            Ok(r) => {
                tracing::info!(cluster = %d.name, namespace = %d.namespace, backup = %r.name_any(), "scheduled backup succeeded")
            }
            Err(e) => {
                tracing::warn!(cluster = %d.name, namespace = %d.namespace, backup = %key.1, "scheduled backup failed: {}", e.report())
            }
        }
        runner.lock().remove(&key);
        runner.free(&d.namespace, &d.name);
    });
    Ok(Done::Changed)
}

/// `Step::PruneBackups`.
async fn prune(
    ctx: &Context,
    d: &Desired,
    delete: &[(String, Option<String>)],
    foreign: &[String],
) -> Result<(), Error> {
    for why in foreign {
        tracing::warn!(cluster = %d.name, namespace = %d.namespace, "{why}");
    }
    let req = ctx.backup_request(plan_of(d)?.to.clone(), label::TRIGGER_SCHEDULE);
    crate::backup::scheduled::prune(&ctx.reach, d, &req, delete).await
}

/// `Step::CheckBackup`.
async fn check_stored(
    ctx: &Context,
    (d, o): (&Desired, &Observed),
    record: &str,
    key: &str,
) -> Result<(), Error> {
    let Some(found) = o.backups.records.iter().find(|b| b.name_any() == record) else {
        return Ok(());
    };
    let req = ctx.backup_request(plan_of(d)?.to.clone(), label::TRIGGER_SCHEDULE);
    crate::backup::scheduled::check(&ctx.reach, d, &req, found, key, jiff::Timestamp::now()).await
}

/// `Step::AbandonBackup`.
async fn abandon(ctx: &Context, (d, o): (&Desired, &Observed), record: &str) -> Result<(), Error> {
    let Some(found) = o.backups.records.iter().find(|b| b.name_any() == record) else {
        return Ok(());
    };
    let req = ctx.backup_request(plan_of(d)?.to.clone(), label::TRIGGER_SCHEDULE);
    crate::backup::scheduled::abandon(&ctx.reach, d, &req, found, jiff::Timestamp::now()).await
}

/// The restore drills' pods and NetworkPolicies of the cluster `d` (`objects::drill`).
async fn drill_objects(
    client: &kube::Client,
    d: &Desired,
) -> Result<(Vec<DrillPod>, Vec<DrillPolicy>), Error> {
    use crate::objects::drill as pod;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    let lp = kube::api::ListParams::default().labels(&pod::selector(&d.name));
    let created = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        m.creation_timestamp.as_ref().map(|t| t.0)
    };
    let pods = Api::<Pod>::namespaced(client.clone(), &d.namespace)
        .list(&lp)
        .await
        .map_err(|e| Error::kube("list", "Pod", &d.namespace, &pod::selector(&d.name), e))?;
    let policies = Api::<NetworkPolicy>::namespaced(client.clone(), &d.namespace)
        .list(&lp)
        .await
        .map_err(|e| {
            Error::kube(
                "list",
                "NetworkPolicy",
                &d.namespace,
                &pod::selector(&d.name),
                e,
            )
        })?;
    let pods = pods
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| DrillPod {
            name: p.name_any(),
            backup: pod::backup_of(&p.name_any()).unwrap_or_default().into(),
            scheduled: pod::is_scheduled(p.labels()),
            created: created(&p.metadata),
            ended: crate::backup::drill::finished(p),
        })
        .collect();
    let policies = policies
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| DrillPolicy {
            name: p.name_any(),
            created: created(&p.metadata),
        })
        .collect();
    Ok((pods, policies))
}

/// `Step::Drill`: starts a drill of a record, finishes one whose pod ended (the verdict on its
/// record), or sweeps drill objects no one will finish.
async fn drill_step(
    ctx: &Context,
    (d, o): (&Desired, &Observed),
    part: &DrillStep,
) -> Result<(), Error> {
    let record = |name: &str| o.backups.records.iter().find(|b| b.name_any() == name);
    let tools_image = d
        .backup
        .as_ref()
        .and_then(|b| b.drill.as_ref())
        .map_or(crate::model::DEFAULT_TOOLS_IMAGE, |p| {
            p.tools_image.as_str()
        });
    match part {
        DrillStep::Start { record: name } => {
            let Some(b) = record(name) else {
                return Ok(());
            };
            crate::backup::drill::start(&ctx.reach, d, b, tools_image).await
        }
        DrillStep::Finish { record: name, pod } => {
            let found = o.backups.drill_pods.iter().find(|p| &p.name == pod);
            let (Some(b), Some(p)) = (record(name), found) else {
                return Ok(());
            };
            let Some(ended) = p.ended.clone() else {
                return Ok(());
            };
            let took = p
                .created
                .map_or(0, |c| (o.now.as_second() - c.as_second()).max(0));
            let took = std::time::Duration::from_secs(took.unsigned_abs());
            let (_, v) = crate::backup::drill::finish(
                &ctx.reach,
                (d, o),
                b,
                (pod, ended, took),
                tools_image,
            )
            .await?;
            if !v.passed() {
                tracing::warn!(cluster = %d.name, namespace = %d.namespace, backup = %name, "the restore drill of EtcdBackup {}/{name} failed: {}", d.namespace, v.message().unwrap_or_default());
            }
            Ok(())
        }
        DrillStep::Sweep { pods, policies, .. } => {
            crate::backup::drill::delete(&ctx.client, d, pods, policies).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_backup_slot_starts_a_pass_of_its_cluster_and_of_the_one_whose_turn_comes() {
        let (ended, mut passes) = tokio::sync::mpsc::unbounded_channel();
        let runner = Runner::new(
            Some(ended),
            Bounds {
                per_namespace: 1,
                total: 1,
            },
        );
        assert_eq!(runner.ask("a", "one"), Turn::Go);
        assert!(matches!(runner.ask("a", "two"), Turn::Wait { .. }));
        assert!(matches!(runner.ask("b", "lone"), Turn::Wait { .. }));
        assert_eq!(
            runner.waiting_by_namespace(),
            [("a".to_string(), 1), ("b".to_string(), 1)].into()
        );
        runner.free("a", "one");
        let mut woken = Vec::new();
        while let Ok(p) = passes.try_recv() {
            woken.push(p);
        }
        let pair = |ns: &str, c: &str| (ns.to_string(), c.to_string());
        assert_eq!(
            woken,
            [pair("a", "one"), pair("a", "two")],
            "a's line came first"
        );
        assert_eq!(runner.ask("a", "two"), Turn::Go);
        runner.free("a", "two");
        assert_eq!(passes.try_recv().ok(), Some(pair("a", "two")));
        assert_eq!(passes.try_recv().ok(), Some(pair("b", "lone")), "b's turn");
    }
}
