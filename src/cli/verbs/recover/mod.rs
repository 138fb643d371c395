//! `kubectl etcd recover NAME`: rebuild a cluster that lost quorum from its best surviving member
//! (or from a backup), the way etcd documents it — a snapshot restored into a new cluster, never
//! `--force-new-cluster`.
//!
//! The engine never decides this by itself: it is a human decision. The verb shows what survives
//! and what is at stake, pre-flights the in-cluster restore (refusing, with nothing changed, while
//! a healthy quorum answers unless `--force`), and with `--yes` records the decision in
//! `spec.recovery` (a fresh nonce). The engine carries it out under the cluster's Lease as Steps
//! of its passes (`plan::recover`): clients fenced off, the survivor's snapshot taken, read back
//! and verified (and the survivor checked not to have moved), the lost cluster's members and
//! volumes deleted (they can never rejoin: the restored cluster has a new id), the seed restored
//! and the others added as learners. Like every verb it then waits (`drive`): with an operator
//! holding the Lease the operator does all of it while the verb watches its status; without one
//! the verb runs the passes itself under the Lease. A driver that stops at any point is followed
//! by one that resumes from what it observes.
//!
//! Stopped before anything was deleted (a quorum came back, the snapshot failed or was rejected),
//! the verb withdraws `spec.recovery` and the engine lets clients back: the cluster is as it was.

use jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch};
use serde_json::json;

use super::backup::bad_url;
use crate::api::{EtcdBackup, EtcdCluster, RecoverySpec, backup_phase};
use crate::archive::store::Location;
use crate::cli::flags::{Global, WaitFlags};
use crate::cli::{Session, drive, output, usage};
use crate::engine::Context;
use crate::error::Error;
use crate::model::{self, DEFAULT_TOOLS_IMAGE, Desired};
use crate::objects;
use crate::plan::recover::{Progress, Quorum, progress, refuse_while_quorum};

mod decide;
pub use decide::{PodCredentials, Preflight, preflight};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The cluster to rebuild.
    pub name: String,
    /// Rebuild from this member (e.g. demo-1) instead of the one with the highest raft index.
    #[arg(long, conflicts_with = "from_backup")]
    pub from_member: Option<String>,
    /// Rebuild from this EtcdBackup record instead of a surviving member.
    #[arg(long)]
    pub from_backup: Option<String>,
    /// Where the survivor's snapshot is stored on the way (default: spec.backup.destination).
    #[arg(long)]
    pub to: Option<String>,
    /// Secret with S3 credentials (default: spec.backup.credentialsSecret, else this machine's chain).
    #[arg(long)]
    pub credentials_secret: Option<String>,
    #[command(flatten)]
    pub copy: super::credentials::CopyLocalCredentials,
    /// Image holding kubectl-etcd, for the restore pod.
    #[arg(long, env = "KUBECTL_ETCD_TOOLS_IMAGE", default_value = DEFAULT_TOOLS_IMAGE)]
    pub tools_image: String,
    /// Proceed (without it the plan is printed and nothing changes).
    #[arg(long)]
    pub yes: bool,
    /// Rebuild even though a healthy quorum answers (it throws away a working cluster's newest
    /// writes and gives it a new cluster id; without quorum loss the engine repairs by itself).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub wait: WaitFlags,
}

/// One member as the recovery sees it.
#[derive(Clone, Debug)]
struct Seen {
    ordinal: u32,
    name: String,
    /// Answered its status (a local read: no quorum needed), with this raft index.
    raft_index: Option<u64>,
    /// The index the last status recorded for it.
    last_known: Option<u64>,
    /// The etcd version it runs, when it answered.
    version: Option<String>,
}

async fn survey(
    ctx: &Context,
    d: &Desired,
    cluster: &EtcdCluster,
) -> Result<(Vec<Seen>, Quorum), Error> {
    // Dials with what the members run (a refused spec change, e.g. of spec.tls, aside).
    let (d, observed) = crate::engine::observe(ctx, d, cluster.status.as_ref()).await?;
    let d = &d;
    let quorum = Quorum::of(d, &observed);
    let recorded = cluster
        .status
        .as_ref()
        .map(|s| s.members.clone())
        .unwrap_or_default();
    let mut ordinals: Vec<u32> = observed
        .pods
        .keys()
        .chain(observed.volumes.keys())
        .copied()
        .chain(
            recorded
                .iter()
                .filter_map(|m| objects::ordinal_of_pod(&d.name, &m.name)),
        )
        .collect();
    ordinals.sort_unstable();
    ordinals.dedup();
    let mut out = Vec::new();
    for ordinal in ordinals {
        let ip = observed.pods.get(&ordinal).and_then(|p| p.ip.clone());
        let status = match ctx.connect(d, ordinal, ip.as_deref()).await {
            Ok(mut c) => c.status().await.ok(),
            Err(_) => None,
        };
        let raft_index = status.as_ref().map(|s| s.raft_index);
        let version = status.map(|s| s.version);
        let name = objects::pod_name(&d.name, ordinal);
        out.push(Seen {
            ordinal,
            last_known: recorded
                .iter()
                .find(|m| m.name == name)
                .and_then(|m| m.raft_index),
            name,
            raft_index,
            version,
        });
    }
    Ok((out, quorum))
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    model::validate_name(&a.name).map_err(|e| usage(&a.name, e))?;
    let s = Session::connect(g).await?;
    s.ensure_crd_current().await?;
    recover(&s, g, a).await
}

/// What the recovery rebuilds from.
enum Source {
    /// A surviving member; its snapshot is stored at `destination` on the way.
    Survivor {
        member: Seen,
        destination: Box<Location>,
    },
    /// A succeeded EtcdBackup of the cluster.
    Backup(Box<EtcdBackup>),
}

/// What the verb found and decided before it records anything.
struct Decided {
    source: Source,
    /// The Secret the survivor's snapshot is stored and read back with (flag, else the backup
    /// plan's; none: the driver's own chain).
    secret: Option<String>,
    pod_credentials: PodCredentials,
    /// The plan, one line each (what `--dry-run` and a run without `--yes` print).
    plan: Vec<String>,
}

/// The recovery of `a.name`: decided here, recorded in `spec.recovery` with `--yes`, carried out
/// by the engine (see the module doc).
async fn recover(s: &Session, g: &Global, a: Args) -> Result<(), Error> {
    let (ns, name) = (s.namespace.as_str(), a.name.as_str());
    let who = format!("{ns}/{name}");
    let (cluster, d) = s.load_cluster(name).await?;
    let decided = decide(s, &a, &d, &cluster).await?;
    if a.wait.dry_run || !a.yes {
        if !a.wait.dry_run {
            output::progress_line("nothing changed: review the plan, then rerun with --yes");
        }
        output::print_dry_run(g.output, &decided.plan, &[], None)?;
        return if a.wait.dry_run {
            Ok(())
        } else {
            Err(Error::Usage(format!(
                "recovering {who} rewrites the cluster: pass --yes to proceed (or --dry-run to only look)"
            )))
        };
    }
    if d.paused {
        return Err(Error::Usage(format!(
            "{who} is paused (spec.paused): the engine carries a recovery out only unpaused; nothing changed: unpause it (`kubectl patch etcdcluster {name} -n {ns} --type merge -p '{{\"spec\":{{\"paused\":false}}}}'`) and rerun"
        )));
    }
    let restore_credentials_secret = match &decided.pod_credentials {
        PodCredentials::Secret(n) => Some(n.clone()),
        PodCredentials::NotNeeded => None,
        PodCredentials::FromEnvironment => Some(make_env_secret(s, &d, name).await?),
    };
    let (from_member, from_backup, to) = match &decided.source {
        Source::Survivor {
            member,
            destination,
        } => (
            Some(member.name.clone()),
            None,
            Some(destination.to_string()),
        ),
        Source::Backup(rec) => (None, Some(rec.name_any()), None),
    };
    let intent = RecoverySpec {
        nonce: model::recovery::restore_nonce(Timestamp::now()),
        from_member,
        from_backup,
        to,
        credentials_secret: decided.secret,
        restore_credentials_secret,
        tools_image: Some(a.tools_image.clone()),
        force: a.force,
    };
    record_and_wait(s, g.output, name, intent, &a.wait).await
}

/// What survives, what a rebuild from it would cost, and whether the restore can do its part:
/// everything refused here is refused before anything changes (a dry run shows it too).
async fn decide(
    s: &Session,
    a: &Args,
    d: &Desired,
    cluster: &EtcdCluster,
) -> Result<Decided, Error> {
    let who = format!("{}/{}", s.namespace, a.name);
    let ctx = Context::new(s.client.clone(), s.dial);
    let (seen, quorum) = survey(&ctx, d, cluster).await?;
    // First: with a quorum there is nothing to recover, whatever the source would be.
    refuse_while_quorum(&who, &quorum, a.force).map_err(Error::Usage)?;
    let secret = a.credentials_secret.clone().or_else(|| {
        d.backup
            .as_ref()
            .and_then(|p| p.to.credentials_secret.clone())
    });
    let source = match &a.from_backup {
        Some(b) => Source::Backup(Box::new(backup_record(s, &a.name, b).await?)),
        None => Source::Survivor {
            member: pick_survivor(&who, a, &seen)?,
            destination: Box::new(destination(&who, a, d)?),
        },
    };
    let pod_credentials = check_restore(s, a, d, &source, secret.as_deref()).await?;
    let plan = describe(d, &seen, &source, &pod_credentials);
    Ok(Decided {
        source,
        secret,
        pod_credentials,
        plan,
    })
}

/// The succeeded EtcdBackup `b` of cluster `name`.
async fn backup_record(s: &Session, name: &str, b: &str) -> Result<EtcdBackup, Error> {
    let ns = s.namespace.as_str();
    let api: Api<EtcdBackup> = Api::namespaced(s.client.clone(), ns);
    let list_hint = format!("`kubectl etcd backup list {name}`");
    let rec = api
        .get_opt(b)
        .await
        .map_err(|e| Error::kube("get", "EtcdBackup", ns, b, e))?
        .ok_or_else(|| {
            Error::Usage(format!(
                "EtcdBackup {ns}/{b} not found; list backups with {list_hint}"
            ))
        })?;
    if rec.status.as_ref().and_then(|s| s.phase.as_deref()) != Some(backup_phase::SUCCEEDED) {
        return Err(Error::Usage(format!(
            "EtcdBackup {ns}/{b} did not succeed; pick another with {list_hint}"
        )));
    }
    if rec
        .labels()
        .get(crate::model::records::label::CLUSTER)
        .map(String::as_str)
        != Some(name)
    {
        return Err(Error::Usage(format!(
            "EtcdBackup {ns}/{b} is not a backup of {name}: pick one of {list_hint}, or restore it into a new cluster with `kubectl etcd restore NEW --from-backup {b}`"
        )));
    }
    Ok(rec)
}

/// The member to rebuild from: `--from-member`, else the answering one with the highest raft
/// index (the lowest ordinal of equals).
fn pick_survivor(who: &str, a: &Args, seen: &[Seen]) -> Result<Seen, Error> {
    let answering: Vec<&Seen> = seen.iter().filter(|m| m.raft_index.is_some()).collect();
    let pick = match &a.from_member {
        Some(m) => answering.iter().find(|s| &s.name == m).ok_or_else(|| {
            Error::Usage(format!(
                "member {m} of {who} does not answer (answering: {}); pick another with --from-member, or use --from-backup",
                answering.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
            ))
        })?,
        None => answering
            .iter()
            .max_by_key(|s| (s.raft_index, std::cmp::Reverse(s.ordinal)))
            .ok_or_else(|| {
                Error::Usage(format!(
                    "no member of {who} answers: nothing survives to rebuild from; use --from-backup (see `kubectl etcd backup list {}`)",
                    a.name
                ))
            })?,
    };
    Ok((*pick).clone())
}

/// Where the survivor's snapshot goes: `--to`, else spec.backup's destination; s3:// only (the
/// restore pod reads it back from there).
fn destination(who: &str, a: &Args, d: &Desired) -> Result<Location, Error> {
    let spec = d.backup.as_ref().map(|p| p.to.location.to_string());
    let Some(to) = a.to.as_deref().or(spec.as_deref()) else {
        return Err(Error::Usage(format!(
            "no place for the survivor's snapshot: pass --to s3://bucket/prefix or set spec.backup.destination of {who}"
        )));
    };
    let loc = Location::parse(to).map_err(bad_url)?;
    if !matches!(loc, Location::S3(_)) {
        return Err(Error::Usage(format!(
            "{to}: the survivor's snapshot must go where the cluster can read it back; use s3://bucket/prefix"
        )));
    }
    Ok(loc)
}

/// Whether the restore pod can do its part (`preflight`) and the snapshot's etcd version may be
/// restored into the cluster's: how the pod reads the snapshot.
async fn check_restore(
    s: &Session,
    a: &Args,
    d: &Desired,
    source: &Source,
    secret: Option<&str>,
) -> Result<PodCredentials, Error> {
    let (ns, name) = (s.namespace.as_str(), a.name.as_str());
    let who = format!("{ns}/{name}");
    let (location, version) = match source {
        Source::Backup(rec) => {
            let st = rec.status.clone().unwrap_or_default();
            let url = st.url.unwrap_or_default();
            (
                Location::parse_object(&url).map_err(bad_url)?.0,
                st.etcd_version,
            )
        }
        Source::Survivor {
            member,
            destination,
        } => ((**destination).clone(), member.version.clone()),
    };
    let secret_check = match secret {
        // An API server that does not answer is said as such, not blamed on the Secret.
        Some(n) => Some((
            n,
            match crate::engine::backups::check_credentials(&s.client, ns, n).await {
                Err(e @ Error::ApiUnreachable(_)) => return Err(e),
                r => r.map_err(|e| e.to_string()),
            },
        )),
        None => None,
    };
    let pod_credentials = preflight(
        &who,
        &Preflight {
            source: &location,
            secret: secret_check,
            env_credentials: super::credentials::local_keys_set(),
            copy_local: a.copy.copy_local_credentials,
            tools_image: &a.tools_image,
            ephemeral: matches!(d.storage, model::Storage::Ephemeral),
        },
    )
    .map_err(Error::Usage)?;
    crate::plan::upgrade::restore_version(version.as_deref(), &d.version.to_string())
        .map_err(|e| Error::Usage(format!("{who} (spec.version {}): {e}", d.version)))?;
    Ok(pod_credentials)
}

/// Pure: the plan, one line each: what survives, what a rebuild from `source` costs, what the
/// engine will do, how the restore pod reads the snapshot.
fn describe(d: &Desired, seen: &[Seen], source: &Source, creds: &PodCredentials) -> Vec<String> {
    let name = &d.name;
    let highest = seen
        .iter()
        .filter_map(|m| m.raft_index.max(m.last_known))
        .max()
        .unwrap_or(0);
    let members = seen
        .iter()
        .map(|m| match m.raft_index {
            Some(i) => format!("{} answers (raft index {i})", m.name),
            None => format!(
                "{} is gone{}",
                m.name,
                m.last_known
                    .map(|i| format!(" (last seen at raft index {i})"))
                    .unwrap_or_default()
            ),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let fence = format!(
        "fence clients off (Service {} selects no member until the restored cluster serves)",
        objects::client_service_name(name)
    );
    let others = d.replicas.saturating_sub(1);
    let mut plan = vec![format!("members: {members}")];
    match source {
        Source::Survivor {
            member,
            destination,
        } => {
            let at = member.raft_index.unwrap_or(0);
            plan.push(format!(
                "rebuild from {} at raft index {at}: up to {} raft entries newer than that, which only the gone members had, are lost",
                member.name,
                highest.saturating_sub(at)
            ));
            plan.push(format!(
                "{fence}, snapshot {} to {destination} and read it back, delete every member and its volume, restore the snapshot into a new cluster {name} (new cluster id: the old members can never rejoin), then add the other {others} members as learners",
                member.name
            ));
        }
        Source::Backup(rec) => {
            let st = rec.status.clone().unwrap_or_default();
            plan.push(format!(
                "rebuild from backup {} (revision {}, taken {}): every write after it is lost",
                rec.name_any(),
                st.revision.unwrap_or(0),
                st.completion_time
                    .map(|t| t.0.to_string())
                    .unwrap_or_default()
            ));
            plan.push(format!(
                "{fence}, read {} back, delete every member and its volume, restore it into a new cluster {name}, then add the other {others} members as learners",
                st.url.unwrap_or_default()
            ));
        }
    }
    plan.push(match creds {
        PodCredentials::Secret(n) => format!("the restore pod reads the snapshot with Secret {n}"),
        PodCredentials::FromEnvironment => format!(
            "the restore pod reads the snapshot with a Secret {name}-restore-credentials made from this machine's AWS_* variables"
        ),
        PodCredentials::NotNeeded => "the restore pod mounts the claim holding the snapshot".into(),
    });
    plan
}

/// Pure: the spec patch that records recovery `r`. Every field is written, null when absent: a
/// merge patch keeps what it does not name, and nothing of an earlier recovery may carry over.
/// Never status: the engine is its one writer.
pub fn intent_patch(r: &RecoverySpec) -> serde_json::Value {
    json!({"spec": {"recovery": {
        "nonce": r.nonce,
        "fromMember": r.from_member,
        "fromBackup": r.from_backup,
        "to": r.to,
        "credentialsSecret": r.credentials_secret,
        "restoreCredentialsSecret": r.restore_credentials_secret,
        "toolsImage": r.tools_image,
        "force": r.force,
    }}})
}

/// How long a withdrawn recovery's fence may take to be lifted by the passes that follow.
const LIFT_WITHIN: std::time::Duration = std::time::Duration::from_secs(20);

/// Records recovery `intent` and waits while the engine carries it out (this process's passes
/// under the Lease, or an operator's); prints the restored cluster. Stopped, says how it stands.
async fn record_and_wait(
    s: &Session,
    format: output::Format,
    name: &str,
    intent: RecoverySpec,
    wait: &WaitFlags,
) -> Result<(), Error> {
    let ns = s.namespace.as_str();
    let patched = s
        .clusters()
        .patch(
            name,
            &super::intent_patch(),
            &Patch::Merge(intent_patch(&intent)),
        )
        .await
        .map_err(|e| Error::kube("record the recovery of", crate::api::KIND, ns, name, e))?;
    output::progress_line(&format!(
        "EtcdCluster {ns}/{name}: recovery recorded (spec.recovery, nonce {}); the engine carries it out under the cluster's Lease",
        intent.nonce
    ));
    if wait.no_wait {
        return output::print_cluster(format, &patched);
    }
    let waited = drive::converge(s, name, wait.timeout).await;
    let c = s.get_cluster(name).await?;
    let records = crate::engine::backups::records(&s.client, ns, name).await?;
    let recovery = model::validate(&c)
        .ok()
        .and_then(|d| d.recovery)
        .filter(|r| r.nonce == intent.nonce);
    let p = recovery.as_ref().map(|r| progress(r, &records));
    match (waited, p) {
        (Ok(_), Some(Progress::Restored(_))) => output::print_cluster(format, &c),
        (Ok(_), _) => Err(Error::Held {
            namespace: ns.to_string(),
            name: name.to_string(),
            message: format!(
                "the cluster converged, but recovery {} is not recorded as restored (spec.recovery replaced or withdrawn?); see `kubectl etcd status {name}`",
                intent.nonce
            ),
        }),
        (Err(e), p) => Err(stopped(s, name, p, e, wait.timeout.min(LIFT_WITHIN)).await),
    }
}

/// A recovery that stopped: before anything was deleted it is withdrawn (the engine lets clients
/// back); after, it stays for the engine to finish. Says which on stderr; returns `e`.
async fn stopped(
    s: &Session,
    name: &str,
    p: Option<Progress<'_>>,
    e: Error,
    lift_within: std::time::Duration,
) -> Error {
    let ns = s.namespace.as_str();
    let who = format!("{ns}/{name}");
    if let Some(Progress::Deleting(rec) | Progress::Restored(rec)) = p {
        let url = rec
            .status
            .as_ref()
            .and_then(|s| s.url.clone())
            .unwrap_or_default();
        output::progress_line(&format!(
            "recovery of {who} stopped after the old members were deleted: the snapshot is kept as EtcdBackup {} ({url}); spec.recovery stays and the engine goes on from where it is (the operator, or `kubectl etcd reconcile {name}`); see `kubectl etcd status {name}`",
            rec.name_any()
        ));
        return e;
    }
    let withdrawn = s
        .clusters()
        .patch(
            name,
            &super::intent_patch(),
            &Patch::Merge(json!({"spec": {"recovery": null}})),
        )
        .await;
    match withdrawn {
        Ok(_) => {
            // The next pass lifts the fence (`plan::fenced_clients`): the operator's, or ours.
            let _ = drive::converge(s, name, lift_within).await;
            output::progress_line(&format!(
                "recovery of {who} stopped before deleting anything: spec.recovery is withdrawn and the engine lets clients back (every member and volume kept); fix the cause below and rerun `kubectl etcd recover {name} --yes`"
            ));
        }
        Err(w) => output::progress_line(&format!(
            "recovery of {who} stopped before deleting anything, but withdrawing it failed too ({w}): every member and volume is kept; withdraw it with `kubectl patch etcdcluster {name} -n {ns} --type merge -p '{{\"spec\":{{\"recovery\":null}}}}'` (the engine then lets clients back)"
        )),
    }
    e
}

/// The restore pod's S3 Secret from this machine's `AWS_*` variables, owned by the cluster.
async fn make_env_secret(s: &Session, d: &Desired, name: &str) -> Result<String, Error> {
    let ns = s.namespace.as_str();
    let mut made = super::credentials::env_credentials_secret(ns, name).ok_or_else(|| {
        Error::Usage("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are no longer set".into())
    })?;
    super::credentials::warn_of_a_loopback_endpoint();
    made.metadata.owner_references = Some(vec![objects::owner(d)]);
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(s.client.clone(), ns);
    match secrets.create(&super::intent_post(), &made).await {
        Ok(_) => {}
        Err(kube::Error::Api(st)) if st.code == 409 => {}
        Err(e) => return Err(Error::kube("create", "Secret", ns, &made.name_any(), e)),
    }
    Ok(made.name_any())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::scripted::{
        BACKUPS_PATH, CLUSTER_PATH, assert_only_the_intent_was_written,
        assert_the_lease_was_taken_after, operator_holds_the_lease, without_an_operator,
    };
    use crate::plan::recover::Mark;
    use http::{Method, StatusCode};
    use std::time::Duration;

    fn intent(nonce: &str) -> RecoverySpec {
        RecoverySpec {
            nonce: nonce.into(),
            from_member: Some("demo-0".into()),
            to: Some("s3://b/p".into()),
            restore_credentials_secret: Some("s3".into()),
            ..Default::default()
        }
    }

    fn wait(timeout: Duration) -> WaitFlags {
        WaitFlags {
            no_wait: false,
            timeout,
            dry_run: false,
        }
    }

    #[tokio::test]
    async fn with_an_operator_holding_the_lease_recover_records_its_decision_and_only_waits() {
        // The operator carried recovery t1 out: converged at the generation the decision made,
        // its snapshot record marked restored.
        let c = crate::fixtures::cluster("demo")
            .spec(|s| s.recovery = Some(intent("t1")))
            .converged()
            .build();
        let d = model::validate(&c).unwrap();
        let mut rec = EtcdBackup::new(
            "demo-20261201000000",
            crate::api::EtcdBackupSpec {
                cluster: "demo".into(),
                destination: "s3://b/p".into(),
                ..Default::default()
            },
        );
        let mut labels = crate::model::records::label::for_cluster("demo", "recover");
        labels.insert(crate::model::records::label::RECOVERY.into(), "t1".into());
        rec.metadata.labels = Some(labels);
        rec.metadata.annotations = Some(
            [(
                crate::keys::ANNOTATION_RECOVERY.to_string(),
                Mark::Restored.value("t1"),
            )]
            .into(),
        );
        rec.status = Some(crate::api::EtcdBackupStatus {
            phase: Some(backup_phase::SUCCEEDED.into()),
            ..Default::default()
        });
        let (ctx, calls) = operator_holds_the_lease(&d, &c)
            .on(
                Method::GET,
                BACKUPS_PATH,
                StatusCode::OK,
                json!({"apiVersion": "etcd.kubectl-etcd.io/v1alpha1", "kind": "EtcdBackupList",
                       "metadata": {}, "items": [rec]}),
            )
            .start();
        let s = Session {
            client: ctx.client.clone(),
            namespace: "ns".into(),
            dial: crate::reach::Dial::PortForward,
            allow_foreign_adopt_endpoints: false,
            allow_cluster_issuer: false,
        };
        record_and_wait(
            &s,
            output::Format::Json,
            "demo",
            intent("t1"),
            &wait(Duration::from_secs(20)),
        )
        .await
        .unwrap();
        assert_only_the_intent_was_written(&calls, &intent_patch(&intent("t1")));
    }

    #[tokio::test]
    async fn without_an_operator_recover_takes_the_lease_before_the_engine_acts_and_withdraws_when_it_stops()
     {
        let c = crate::fixtures::cluster("demo")
            .spec(|s| s.recovery = Some(intent("t2")))
            .build();
        let d = model::validate(&c).unwrap();
        let (ctx, calls) = without_an_operator(&d, &c).start();
        let s = Session {
            client: ctx.client.clone(),
            namespace: "ns".into(),
            dial: crate::reach::Dial::PortForward,
            allow_foreign_adopt_endpoints: false,
            allow_cluster_issuer: false,
        };
        // No member answers here: the engine fences clients and then cannot go on; the verb
        // gives up at its timeout, before anything was deleted.
        let e = record_and_wait(
            &s,
            output::Format::Json,
            "demo",
            intent("t2"),
            &wait(Duration::from_secs(3)),
        )
        .await
        .unwrap_err();
        assert!(matches!(e, Error::Timeout { .. }), "{e:?}");
        let w = assert_the_lease_was_taken_after(&calls, &intent_patch(&intent("t2")));
        assert!(
            w.iter().any(|c| c.path.ends_with("/services/demo-client")),
            "the engine fenced clients under the Lease: {w:#?}"
        );
        assert!(
            !w.iter().any(|c| c.method == Method::DELETE),
            "nothing was deleted: {w:#?}"
        );
        assert!(
            w.iter().any(|c| c.path == CLUSTER_PATH
                && c.body["spec"]["recovery"].is_null()
                && c.body["spec"].get("recovery").is_some()
                && crate::engine::scripted::as_the_cli(c)),
            "stopped before deleting anything, the decision is withdrawn: {w:#?}"
        );
    }

    #[test]
    fn the_decision_is_spec_recovery_with_every_field_written_never_status() {
        let p = intent_patch(&intent("n1"));
        let r = &p["spec"]["recovery"];
        assert_eq!(r["nonce"], "n1");
        assert_eq!(r["fromMember"], "demo-0");
        assert_eq!(r["force"], false);
        // Absent fields are written null: nothing of an earlier recovery carries over.
        assert!(r.get("fromBackup").is_some_and(serde_json::Value::is_null));
        assert!(p.get("status").is_none() && p.get("metadata").is_none());
        // What the engine reads back is what the verb decided.
        let back: RecoverySpec = serde_json::from_value(r.clone()).unwrap();
        assert_eq!(back, intent("n1"));
    }

    #[test]
    fn recover_takes_force() {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from([
            "kubectl-etcd",
            "recover",
            "demo",
            "--yes",
            "--force",
        ])
        .unwrap();
        match cli.verb {
            crate::cli::Verb::Recover(a) => assert!(a.force && a.yes),
            other => panic!("{other:?}"),
        }
    }
}
