//! The reconcile engine: one pass = validate → observe → plan → act (at most one change) → status.
//!
//! Both drivers call `reconcile_once`: the CLI verbs in a loop until converged, `operate` per
//! watch event. Nothing here parses flags, prints, or knows about leader election.

mod act;
pub mod backups;
mod finalizer;
mod observe;
pub mod pki;
pub mod policy;
mod recover;
#[cfg(test)]
pub(crate) mod scripted;

use std::time::Duration;

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};

use crate::api::{EtcdCluster, EtcdClusterStatus, Phase, condition, reason};
use crate::error::Error;
use crate::model::{self, Desired, Observed};
use crate::objects;
use crate::plan::{self, Step};

pub use act::{Defragmentation, Object, planned_objects, step_objects};
pub use observe::observe;
pub use policy::{Next, Pace};

pub use crate::keys::ANNOTATION_DELETE_DATA;

pub use crate::reach::{CONNECT_TIMEOUT, Dial, Reach};

/// What a pass needs: a way to reach the cluster's members (`Reach`: the client, how to dial),
/// and what this driver may do beyond that.
#[derive(Clone)]
pub struct Context {
    pub reach: Reach,
    /// Put the finalizer on clusters. Only a long-running operator does: a finalizer that no
    /// process is there to release would block the deletion of the cluster (and its namespace).
    /// The CLI still releases a finalizer it finds on a cluster being deleted.
    pub add_finalizer: bool,
    /// What backups may use beyond a cluster's credentials Secret: anything for a person's CLI,
    /// the operator's flags for the operator (`archive::store::Access`).
    pub store_access: crate::archive::store::Access,
    /// Who takes the backups this driver takes (recorded in their status): the CLI's identity,
    /// or the operator's.
    pub identity: String,
    /// The scheduled backups this driver takes beside its passes; `None`: it takes none (the
    /// CLI, which exits once its verb converged and would abandon them).
    pub scheduled: Option<std::sync::Arc<backups::Runner>>,
    /// Which `spec.etcd.options` and images this driver writes into member templates and
    /// restore pods: any for a person's CLI; for the operator, the tuning flags and
    /// `--allow-etcd-option`'s, the default image prefixes and `--allow-image-prefix`'s
    /// (`model::keep_leave`).
    pub leave: crate::model::Leave,
    /// The operator's pods, when this driver is an operator in a pod (`operate`, from the
    /// Deployment's downward API): the NetworkPolicies it writes admit them. `None`: keep whom
    /// a policy admits already (`model::keep_operator`).
    pub operator: Option<crate::model::OperatorPods>,
    /// Dial `spec.adopt.endpoints` outside the cluster's namespace (`--allow-foreign-adopt-endpoints`,
    /// off by default): an EtcdCluster otherwise adopts only members of its own namespace
    /// (`model::refusal`), whoever may write it.
    pub allow_foreign_adopt_endpoints: bool,
    /// Let mode certManager name a ClusterIssuer (`--allow-cluster-issuer`, off by default):
    /// its CA signs for every namespace, so clusters sharing it accept each other's
    /// certificates (`model::pki::keep_issuer`).
    pub allow_cluster_issuer: bool,
}

impl Context {
    pub fn new(client: Client, dial: Dial) -> Context {
        Context {
            reach: Reach::new(client, dial),
            add_finalizer: false,
            store_access: crate::archive::store::Access::ANY,
            identity: crate::lease::cli_identity(),
            scheduled: None,
            leave: crate::model::Leave::ANY,
            operator: None,
            allow_foreign_adopt_endpoints: false,
            allow_cluster_issuer: false,
        }
    }

    /// A backup to `to` for `trigger`, taken by this driver within what it may use.
    pub fn backup_request(
        &self,
        to: crate::archive::Destination,
        trigger: &'static str,
    ) -> crate::backup::take::Request {
        let mut req = crate::backup::take::Request::new(to, trigger, self.identity.clone());
        req.access = self.store_access.clone();
        req
    }
}

/// A context reaches members as its `Reach` does (`ctx.client`, `ctx.connect(…)`).
impl std::ops::Deref for Context {
    type Target = Reach;
    fn deref(&self) -> &Reach {
        &self.reach
    }
}

/// Whether a pass may change anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Act,
    /// Observe and plan only: nothing is written, not even status.
    DryRun,
}

/// What one pass saw, decided and did.
#[derive(Clone, Debug)]
pub struct Pass {
    pub desired: Desired,
    pub observed: Observed,
    pub step: Step,
    pub status: EtcdClusterStatus,
    pub outcome: Outcome,
    /// The member this pass defragmented, measured.
    pub defragmented: Option<act::Defragmentation>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The step's change was made.
    Acted,
    /// Nothing to change (wait, hold, idle, paused, or dry run).
    Unchanged,
    /// etcd answered "not yet" to the step's change; it is retried next pass.
    NotYet(String),
    /// The cluster was being deleted and its finalizer has been released.
    Released,
}

impl Pass {
    /// Converged: nothing left to do and a healthy majority.
    pub fn converged(&self) -> bool {
        self.step == Step::Idle
    }
}

fn cluster_api(client: &Client, ns: &str) -> Api<EtcdCluster> {
    Api::namespaced(client.clone(), ns)
}

/// One reconcile pass over `cluster`. See the module doc.
pub async fn reconcile_once(
    ctx: &Context,
    cluster: &EtcdCluster,
    mode: Mode,
) -> Result<Pass, Error> {
    let ns = namespace_of(cluster);
    let name = cluster.name_any();
    let api = cluster_api(&ctx.client, &ns);
    // Deletion first: a cluster being deleted is released whatever its spec says (an invalid
    // spec must never keep a finalizer, and with it the namespace, alive).
    if cluster.metadata.deletion_timestamp.is_some() {
        return deleting(ctx, cluster, mode).await;
    }
    let desired = match model::validate(cluster) {
        Ok(d) => d,
        Err(source) => {
            if mode == Mode::Act {
                report_invalid(&api, cluster, &source.to_string()).await?;
            }
            return Err(Error::InvalidSpec {
                namespace: ns,
                name,
                source,
            });
        }
    };
    if mode == Mode::Act && ctx.add_finalizer {
        // When another writer changed the finalizers since this read, nothing is added and the
        // pass goes on: the finalizer guards only deletion, and that change wakes the next pass.
        finalizer::add(&api, cluster).await?;
    }

    // A finished adoption no longer acts: settled before anything is observed.
    let done = cluster.status.as_ref().and_then(|s| s.completed.clone());
    let desired = plan::adopt::settle(desired, &done.unwrap_or_default());
    // The driver's leave for a cert-manager ClusterIssuer (`--allow-cluster-issuer`).
    let desired = model::pki::keep_issuer(desired, ctx.allow_cluster_issuer);
    let (desired, mut observed) = observed(ctx, &desired, cluster).await?;
    let (desired, mut step) = planned(ctx, desired, &mut observed).await;
    let mut outcome = Outcome::Unchanged;
    let mut defragmented = None;
    if mode == Mode::Act && step.is_change() {
        if let Some(why) = deleted_since(&api, cluster).await? {
            return Ok(not_made(cluster, desired, observed, &step, why));
        }
        tracing::info!(cluster = %name, namespace = %ns, step = %step, "acting");
        let acting = act::act(ctx, &desired, &observed, &step);
        let done = match crate::phase::timed(crate::phase!("act", step = %step), acting).await {
            Ok(done) => done,
            Err(e) => {
                failed(&api, cluster, (&desired, &observed), &step, &e).await;
                return Err(e);
            }
        };
        (step, outcome, defragmented) = acted(cluster, step, done);
    }
    let status = plan::derive_status(
        &desired,
        &observed,
        &step,
        cluster.status.as_ref(),
        jiff::Timestamp::now(),
    );
    if mode == Mode::Act && cluster.status.as_ref() != Some(&status) {
        let writing = write_status(&api, cluster, &status);
        crate::phase::timed(crate::phase!("write_status"), writing).await?;
    }
    Ok(Pass {
        desired,
        observed,
        step,
        status,
        outcome,
        defragmented,
    })
}

/// The cluster and its backup records. The records (with the cluster's creation time, and this
/// process's running backups) are read beside the rest: they depend on no field `observe`
/// settles.
async fn observed(
    ctx: &Context,
    desired: &Desired,
    cluster: &EtcdCluster,
) -> Result<(Desired, Observed), Error> {
    let ((desired, mut observed), backups) = tokio::try_join!(
        crate::phase::timed(
            crate::phase!("observe"),
            observe::observe(ctx, desired, cluster.status.as_ref()),
        ),
        crate::phase::timed(
            crate::phase!("read_backups"),
            backups::observe(ctx, desired, cluster),
        ),
    )?;
    observed.backups = backups;
    Ok((desired, observed))
}

/// The spec as what is under way settles it, and the plan's step; a removal is planned again
/// once the leader's count of connected peers, which etcd checks before it removes a voter, is
/// read (`plan::needs_leader_peers`).
async fn planned(ctx: &Context, desired: Desired, observed: &mut Observed) -> (Desired, Step) {
    let desired = plan::settle(desired, observed);
    let step = plan::plan(&desired, observed);
    if !plan::needs_leader_peers(&step) {
        return (desired, step);
    }
    let reading = act::leader_peers(ctx, &desired, observed);
    observed.leader_peers = crate::phase::timed(crate::phase!("leader_peers"), reading).await;
    let removal = step;
    let step = plan::plan(&desired, observed);
    if let Step::MoveLeader { from, to, .. } = &step {
        tracing::info!(cluster = %desired.name, namespace = %desired.namespace, "etcd's leader {from} counts {to} as disconnected though {to} answers, so it would refuse to {removal}: leadership moves to {to} first");
    }
    (desired, step)
}

/// The pass over a cluster being deleted: its finalizer released (when acting), and the status
/// `status` shows of it (never written: the object is on its way out once the finalizer goes).
async fn deleting(ctx: &Context, cluster: &EtcdCluster, mode: Mode) -> Result<Pass, Error> {
    let ns = namespace_of(cluster);
    let name = cluster.name_any();
    let released = match mode {
        Mode::Act => release(ctx, cluster).await?,
        Mode::DryRun => finalizer::Patched::Done,
    };
    let desired = model::validate(cluster).unwrap_or_else(|_| Desired::named(&name, &ns));
    let mut status = cluster.status.clone().unwrap_or_default();
    status.phase = Some(Phase::Deleting);
    Ok(Pass {
        desired,
        observed: Observed::default(),
        step: Step::Idle,
        status,
        outcome: match (mode, released) {
            (Mode::DryRun, _) => Outcome::Unchanged,
            (Mode::Act, finalizer::Patched::Done) => Outcome::Released,
            (Mode::Act, finalizer::Patched::Changed) => {
                Outcome::NotYet("the finalizers changed since this pass read them".into())
            }
        },
        defragmented: None,
    })
}

/// Why nothing may be made for `cluster` any more, read afresh just before a change: it was
/// deleted (or is being deleted, or was made again under its name) since the pass was given it.
/// A pass started before a deletion (by its last trigger, e.g. the annotation `delete
/// --delete-data` writes just before it deletes) would otherwise act on what it observed while
/// the garbage collector deleted the cluster's objects: it would make them again, and a
/// StatefulSet made again makes volumes after the release deleted them, owned by nothing.
async fn deleted_since(
    api: &Api<EtcdCluster>,
    cluster: &EtcdCluster,
) -> Result<Option<String>, Error> {
    let name = cluster.name_any();
    let now = api
        .get_opt(&name)
        .await
        .map_err(|e| Error::kube("get", "EtcdCluster", &namespace_of(cluster), &name, e))?;
    Ok(match now {
        None => Some("the cluster was deleted".into()),
        Some(c) if c.metadata.uid != cluster.metadata.uid => {
            Some("the cluster was deleted and made again".into())
        }
        Some(c) if c.metadata.deletion_timestamp.is_some() => {
            Some("the cluster is being deleted".into())
        }
        Some(_) => None,
    })
}

/// The pass that did not make `step` because of `why` ([`deleted_since`]): a wait, the status
/// unwritten.
fn not_made(
    cluster: &EtcdCluster,
    desired: Desired,
    observed: Observed,
    step: &Step,
    why: String,
) -> Pass {
    tracing::info!(cluster = %cluster.name_any(), namespace = %namespace_of(cluster), step = %step, "not acting: {why}");
    Pass {
        desired,
        observed,
        step: Step::Wait {
            reason: step.reason(),
            message: format!("{step} (not made: {why})"),
        },
        status: cluster.status.clone().unwrap_or_default(),
        outcome: Outcome::NotYet(why),
        defragmented: None,
    }
}

/// The step as carried out: unchanged when the change was made; a wait when etcd said not yet.
fn acted(
    cluster: &EtcdCluster,
    step: Step,
    done: act::Done,
) -> (Step, Outcome, Option<act::Defragmentation>) {
    match done {
        act::Done::Changed => (step, Outcome::Acted, None),
        act::Done::Defragmented(m) => (step, Outcome::Acted, Some(m)),
        act::Done::NotYet(why) => {
            tracing::info!(cluster = %cluster.name_any(), namespace = %namespace_of(cluster), step = %step, "etcd said not yet: {why}");
            let wait = Step::Wait {
                reason: step.reason(),
                message: format!("{step} (etcd: not yet: {why})"),
            };
            (wait, Outcome::NotYet(why), None)
        }
        act::Done::Wait(wait) => {
            let why = wait.to_string();
            (wait, Outcome::NotYet(why), None)
        }
    }
}

/// Status must not freeze on a failing step: says what failed (best effort; the pass fails).
async fn failed(
    api: &Api<EtcdCluster>,
    cluster: &EtcdCluster,
    (desired, observed): (&Desired, &Observed),
    step: &Step,
    e: &Error,
) {
    let (name, ns) = (cluster.name_any(), namespace_of(cluster));
    let mut status = plan::derive_status(
        desired,
        observed,
        step,
        cluster.status.as_ref(),
        jiff::Timestamp::now(),
    );
    status.message = Some(format!("{step} failed: {}", e.report()));
    if cluster.status.as_ref() != Some(&status)
        && let Err(w) = write_status(api, cluster, &status).await
    {
        tracing::warn!(cluster = %name, namespace = %ns, "{}", w.report());
    }
}

/// The cluster's namespace (`default` when the object names none).
fn namespace_of(cluster: &EtcdCluster) -> String {
    cluster.namespace().unwrap_or_else(|| "default".into())
}

/// Writes `status` whole, by server-side apply as the engine, its one writer (callers skip the
/// write when it equals what the cluster shows: a steady state writes nothing), and only over the
/// status this pass read (`apply::status_over`): two drivers' passes (two CLIs, a CLI beside a
/// restarting operator) never write a status derived from a copy older than the other's write,
/// which would take back a done-mark the other recorded. A stale pass writes nothing; the next
/// pass starts from the newer status.
async fn write_status(
    api: &Api<EtcdCluster>,
    cluster: &EtcdCluster,
    status: &EtcdClusterStatus,
) -> Result<(), Error> {
    let (name, ns) = (cluster.name_any(), namespace_of(cluster));
    let written = crate::apply::status_over(
        api,
        cluster,
        |c| c.status.as_ref(),
        crate::keys::MANAGER_ENGINE,
        status,
    )
    .await
    .map_err(|e| Error::kube("update the status of", crate::api::KIND, &ns, &name, e))?;
    if written == crate::apply::Written::Stale {
        tracing::info!(cluster = %name, namespace = %ns, "status not written: another pass wrote it since this one read the cluster; the next pass starts from it");
    }
    Ok(())
}

/// An invalid spec is reported as a condition (and never hot-loops: the operator waits for the
/// next spec change).
async fn report_invalid(
    api: &Api<EtcdCluster>,
    cluster: &EtcdCluster,
    message: &str,
) -> Result<(), Error> {
    let mut status = cluster.status.clone().unwrap_or_default();
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now());
    let generation = cluster.metadata.generation;
    status.phase = Some(Phase::Failed);
    status.message = Some(format!("invalid spec: {message}"));
    status.conditions.retain(|c| c.type_ != condition::DEGRADED);
    status
        .conditions
        .push(k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
            type_: condition::DEGRADED.into(),
            status: "True".into(),
            reason: reason::INVALID_SPEC.into(),
            message: message.into(),
            observed_generation: generation,
            last_transition_time: now,
        });
    status.observed_generation = generation;
    if cluster.status.as_ref().and_then(|s| s.message.as_ref()) != status.message.as_ref() {
        write_status(api, cluster, &status).await?;
    }
    Ok(())
}

/// Deletion: owned objects go with the EtcdCluster (owner references); member volumes are kept
/// unless `delete --delete-data` asked for them. Then the finalizer is released.
async fn release(ctx: &Context, cluster: &EtcdCluster) -> Result<finalizer::Patched, Error> {
    let ns = &namespace_of(cluster);
    let name = &cluster.name_any();
    let delete_data = cluster
        .annotations()
        .get(ANNOTATION_DELETE_DATA)
        .is_some_and(|v| v == "true");
    if delete_data {
        delete_volumes(&ctx.client, ns, name).await?;
    }
    finalizer::remove(&cluster_api(&ctx.client, ns), cluster).await
}

/// The names of the member volumes of cluster `namespace/name` (kept by `delete` without
/// `--delete-data`, so they may outlive the EtcdCluster), in ordinal order.
pub async fn member_volumes(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<Vec<String>, Error> {
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
    let lp = ListParams::default().labels(&objects::selector_string(name));
    let mut found: Vec<(u32, String)> = pvcs
        .list(&lp)
        .await
        .map_err(|e| Error::kube("list the volumes of", crate::api::KIND, namespace, name, e))?
        .items
        .into_iter()
        .filter_map(|v| {
            let n = v.metadata.name?;
            Some((objects::ordinal_of_volume(name, &n)?, n))
        })
        .collect();
    found.sort();
    Ok(found.into_iter().map(|(_, n)| n).collect())
}

/// Deletes every member volume of cluster `namespace/name`; true once none is left. The finalizer
/// runs it for `delete --delete-data`, and so does the CLI for a cluster that had no finalizer
/// (nobody ran the engine's release). A volume is the cluster's by its member labels
/// (`objects::member_labels`: managed-by the engine) and its name (`data-NAME-<ordinal>`): the
/// volumes of another etcd of the same instance name stay, and each is deleted by name.
pub async fn delete_volumes(client: &Client, namespace: &str, name: &str) -> Result<bool, Error> {
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
    let left = member_volumes(client, namespace, name).await?;
    for claim in &left {
        match pvcs.delete(claim, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err(Error::kube(
                    "delete",
                    "PersistentVolumeClaim",
                    namespace,
                    claim,
                    e,
                ));
            }
        }
    }
    Ok(left.is_empty())
}

/// Applies the project's CRDs (EtcdCluster, EtcdBackup; server-side, fields owned by the engine)
/// and waits until the API server serves them. The install verb and the cluster-backed tests share it.
pub async fn apply_crd(client: &Client) -> Result<(), Error> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    const KIND: &str = "CustomResourceDefinition";
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crate::api::crds() {
        let name = crd.name_any();
        crds.patch(
            &name,
            &PatchParams::apply(objects::FIELD_MANAGER).force(),
            &Patch::Apply(&crd),
        )
        .await
        .map_err(|e| Error::kube("apply", KIND, "", &name, e))?;
        let established = kube::runtime::wait::await_condition(
            crds.clone(),
            &name,
            kube::runtime::wait::conditions::is_crd_established(),
        );
        match tokio::time::timeout(CRD_ESTABLISHED_WITHIN, established).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                return Err(Error::Usage(format!(
                    "waiting for the CRD {name} to be established failed: {e}"
                )));
            }
            Err(_) => {
                return Err(Error::Usage(format!(
                    "the CRD {name} was applied but did not become Established within {} s",
                    CRD_ESTABLISHED_WITHIN.as_secs()
                )));
            }
        }
    }
    Ok(())
}

/// How long `apply_crd` waits for the API server to serve a freshly applied CRD.
const CRD_ESTABLISHED_WITHIN: Duration = Duration::from_secs(30);
