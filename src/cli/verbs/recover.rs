//! `kubectl etcd recover NAME`: rebuild a cluster that lost quorum from its best surviving member
//! (or from a backup), the way etcd documents it — a snapshot restored into a new cluster, never
//! `--force-new-cluster`.
//!
//! The engine never does this by itself: it is a human decision. The verb shows what survives and
//! what is at stake, records the decision in status before acting, pauses the cluster (so no engine
//! acts meanwhile), snapshots the survivor to the backup destination, deletes the members and
//! their volumes (the old members can never rejoin: the restored cluster has a new id), and hands
//! the cluster to the engine's restore path.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;

use super::backup::bad_url;
use crate::api::{EtcdBackup, EtcdCluster, backup_phase, condition};
use crate::archive::store::Location;
use crate::backup::open_store;
use crate::backup::{label, take};
use crate::cli::flags::{Global, WaitFlags};
use crate::cli::{Session, drive, output, usage};
use crate::engine::{Context, Dial};
use crate::error::BackupError;
use crate::error::Error;
use crate::model::{self, DEFAULT_TOOLS_IMAGE, Desired};
use crate::objects;

/// Condition reason of a recovery in progress.
pub const REASON_RECOVERING: &str = "RecoveringFromSnapshot";

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
    /// Image holding kubectl-etcd, for the restore pod.
    #[arg(long, env = "KUBECTL_ETCD_TOOLS_IMAGE", default_value = DEFAULT_TOOLS_IMAGE)]
    pub tools_image: String,
    /// Proceed (without it the plan is printed and nothing changes).
    #[arg(long)]
    pub yes: bool,
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
}

async fn survey(ctx: &Context, d: &Desired, cluster: &EtcdCluster) -> Result<Vec<Seen>, Error> {
    let observed = crate::engine::observe(ctx, d).await?;
    // Dial with what the members run (a refused spec change, e.g. of spec.tls, aside).
    let d = &crate::model::keep_immutable(d.clone(), &observed);
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
        let raft_index = match ctx.connect(d, ordinal, ip.as_deref()).await {
            Ok(mut c) => c.status().await.ok().map(|s| s.raft_index),
            Err(_) => None,
        };
        let name = objects::pod_name(&d.name, ordinal);
        out.push(Seen {
            ordinal,
            last_known: recorded
                .iter()
                .find(|m| m.name == name)
                .and_then(|m| m.raft_index),
            name,
            raft_index,
        });
    }
    Ok(out)
}

/// Writes the decision into status (condition `Recovering`, message) before anything changes.
async fn record_decision(
    api: &Api<EtcdCluster>,
    name: &str,
    ns: &str,
    message: &str,
) -> Result<(), Error> {
    let fresh = api
        .get_status(name)
        .await
        .map_err(|e| Error::kube("get", crate::api::KIND, ns, name, e))?;
    let mut conds: Vec<Condition> = fresh
        .status
        .map(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.type_ != condition::RECOVERING)
        .collect();
    conds.push(Condition {
        type_: condition::RECOVERING.into(),
        status: "True".into(),
        reason: REASON_RECOVERING.into(),
        message: message.into(),
        observed_generation: fresh.metadata.generation,
        last_transition_time: Time(Timestamp::now()),
    });
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"message": message, "conditions": conds}})),
    )
    .await
    .map_err(|e| Error::kube("record the recovery in", crate::api::KIND, ns, name, e))?;
    Ok(())
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let name = a.name.clone();
    model::validate_name(&name).map_err(|e| usage(&name, e))?;
    let s = Session::connect(g).await?;
    s.ensure_crd().await?;
    let api = s.clusters();
    let cluster = s.get_cluster(&name).await?;
    let d = model::validate(&cluster).map_err(|source| Error::InvalidSpec {
        namespace: s.namespace.clone(),
        name: name.clone(),
        source,
    })?;
    let ctx = Context::new(s.client.clone(), Dial::PortForward);
    let spec_backup = cluster.spec.backup.clone().unwrap_or_default();
    let secret = a
        .credentials_secret
        .clone()
        .or(spec_backup.credentials_secret.clone());

    // What survives, and what a rebuild from it would cost.
    let seen = survey(&ctx, &d, &cluster).await?;
    let answering: Vec<&Seen> = seen.iter().filter(|m| m.raft_index.is_some()).collect();
    let record = match &a.from_backup {
        Some(b) => {
            let api: Api<EtcdBackup> = Api::namespaced(s.client.clone(), &s.namespace);
            let rec = api
                .get_opt(b)
                .await
                .map_err(|e| Error::kube("get", "EtcdBackup", &s.namespace, b, e))?
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "EtcdBackup {}/{b} not found; list backups with `kubectl etcd backup list {name}`",
                        s.namespace
                    ))
                })?;
            if rec.status.as_ref().and_then(|s| s.phase.as_deref()) != Some(backup_phase::SUCCEEDED)
            {
                return Err(Error::Usage(format!(
                    "EtcdBackup {}/{b} did not succeed; pick another with `kubectl etcd backup list {name}`",
                    s.namespace
                )));
            }
            Some(rec)
        }
        None => None,
    };
    let survivor = if record.is_some() {
        None
    } else {
        let pick = match &a.from_member {
            Some(m) => answering.iter().find(|s| &s.name == m).copied().ok_or_else(|| {
                Error::Usage(format!(
                    "member {m} of {}/{name} does not answer (answering: {}); pick another with --from-member, or use --from-backup",
                    s.namespace,
                    answering.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
                ))
            })?,
            None => answering
                .iter()
                .max_by_key(|s| (s.raft_index, std::cmp::Reverse(s.ordinal)))
                .copied()
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "no member of {}/{name} answers: nothing survives to rebuild from; use --from-backup (see `kubectl etcd backup list {name}`)",
                        s.namespace
                    ))
                })?,
        };
        Some(pick.clone())
    };
    let destination = match (
        &record,
        a.to.as_deref()
            .or(Some(spec_backup.destination.as_str()).filter(|d| !d.is_empty())),
    ) {
        (Some(_), _) => None,
        (None, Some(to)) => {
            let loc = Location::parse(to).map_err(bad_url)?;
            if !matches!(loc, Location::S3(_)) {
                return Err(Error::Usage(format!(
                    "{to}: the survivor's snapshot must go where the cluster can read it back; use s3://bucket/prefix"
                )));
            }
            Some(loc)
        }
        (None, None) => {
            return Err(Error::Usage(format!(
                "no place for the survivor's snapshot: pass --to s3://bucket/prefix or set spec.backup.destination of {}/{name}",
                s.namespace
            )));
        }
    };

    let highest = seen
        .iter()
        .filter_map(|m| m.raft_index.max(m.last_known))
        .max()
        .unwrap_or(0);
    let mut plan = vec![format!(
        "members: {}",
        seen.iter()
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
            .join(", ")
    )];
    match (&survivor, &record) {
        (Some(sv), _) => {
            let at = sv.raft_index.unwrap_or(0);
            plan.push(format!(
                "rebuild from {} at raft index {at}: up to {} raft entries newer than that, which only the gone members had, are lost",
                sv.name,
                highest.saturating_sub(at)
            ));
            plan.push(format!(
                "snapshot {} to {}, delete every member and its volume, restore the snapshot into a new cluster {name} (new cluster id: the old members can never rejoin), then add the other {} members as learners",
                sv.name,
                destination.as_ref().map(|l| l.to_string()).unwrap_or_default(),
                d.replicas.saturating_sub(1)
            ));
        }
        (None, Some(rec)) => {
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
                "delete every member and its volume, restore {} into a new cluster {name}, then add the other {} members as learners",
                st.url.unwrap_or_default(),
                d.replicas.saturating_sub(1)
            ));
        }
        (None, None) => unreachable!("a survivor or a backup was chosen above"),
    }
    if a.wait.dry_run || !a.yes {
        if !a.wait.dry_run {
            output::progress_line("nothing changed: review the plan, then rerun with --yes");
        }
        output::print_dry_run(g.output, &plan, &[], None)?;
        return if a.wait.dry_run {
            Ok(())
        } else {
            Err(Error::Usage(format!(
                "recovering {}/{name} rewrites the cluster: pass --yes to proceed (or --dry-run to only look)",
                s.namespace
            )))
        };
    }

    let progress = output::Progress::new(&format!("{}/{name}", s.namespace));
    // 1. The decision, in status, before anything changes; then nobody else acts on the cluster.
    record_decision(&api, &name, &s.namespace, &plan.join("; ")).await?;
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"paused": true}})),
    )
    .await
    .map_err(|e| Error::kube("pause", crate::api::KIND, &s.namespace, &name, e))?;

    // 2. The snapshot it is rebuilt from.
    let (url, sha256, backup_name) = match (&survivor, &record) {
        (Some(sv), _) => {
            let destination = destination
                .clone()
                .unwrap_or_else(|| unreachable!("checked above"));
            let store = open_store(
                &s.client,
                &s.namespace,
                &destination,
                secret.as_deref(),
                &a.tools_image,
            )
            .await?;
            let checked = store.check().await;
            if checked.is_err() {
                store.close().await;
            }
            checked.map_err(BackupError::from)?;
            let req = take::Request {
                destination,
                compression: Default::default(),
                credentials_secret: secret.clone(),
                trigger: label::TRIGGER_CLI,
                taken_by: crate::lease::cli_identity(),
                member: Some(sv.ordinal),
            };
            progress.step(&format!("snapshotting {}", sv.name));
            let taken = async {
                let rec = take::create_record(&ctx, &cluster, &req, Timestamp::now()).await?;
                take::execute(&ctx, &d, &store, &req, rec, &|_| {}).await
            }
            .await;
            store.close().await;
            let rec = taken?;
            let st = rec.status.clone().unwrap_or_default();
            (st.url.unwrap_or_default(), st.sha256, rec.name_any())
        }
        (None, Some(rec)) => {
            let st = rec.status.clone().unwrap_or_default();
            (st.url.unwrap_or_default(), st.sha256, rec.name_any())
        }
        (None, None) => unreachable!("a survivor or a backup was chosen above"),
    };
    progress.note(&format!("recovering from {url}"));

    // 3. The old members go, with their volumes (they can never rejoin).
    let ns = s.namespace.as_str();
    let sts: Api<StatefulSet> = Api::namespaced(s.client.clone(), ns);
    let cms: Api<ConfigMap> = Api::namespaced(s.client.clone(), ns);
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(s.client.clone(), ns);
    let gone = |r: Result<_, kube::Error>, kind: &'static str, obj: &str| match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(st)) if st.code == 404 => Ok(()),
        Err(e) => Err(Error::kube("delete", kind, ns, obj, e)),
    };
    let foreground = DeleteParams::foreground();
    gone(
        sts.delete(&objects::statefulset_name(&name), &foreground)
            .await
            .map(|_| ()),
        "StatefulSet",
        &objects::statefulset_name(&name),
    )?;
    gone(
        cms.delete(&objects::config_name(&name), &DeleteParams::default())
            .await
            .map(|_| ()),
        "ConfigMap",
        &objects::config_name(&name),
    )?;
    let lp = ListParams::default().labels(&objects::selector_string(&name));
    pvcs.delete_collection(&DeleteParams::default(), &lp)
        .await
        .map_err(|e| Error::kube("delete the volumes of", crate::api::KIND, ns, &name, e))?;
    progress.step("waiting for the old members and their volumes to go");
    let deadline = std::time::Instant::now() + a.wait.timeout;
    loop {
        let o = crate::engine::observe(&ctx, &d).await?;
        if o.statefulset.is_none() && o.pods.is_empty() && o.volumes.is_empty() {
            break;
        }
        if std::time::Instant::now() > deadline {
            return Err(Error::Timeout {
                namespace: s.namespace.clone(),
                name: name.clone(),
                seconds: a.wait.timeout.as_secs(),
                last: "waiting for the old members and volumes to be deleted".into(),
            });
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    // 4. The engine restores it as a new cluster, seed first, the others as learners. The restore
    //    pod reads S3 with the named Secret, or one made from this machine's AWS_* variables.
    let secret = match secret {
        Some(s) => Some(s),
        None => match super::restore::env_credentials_secret(ns, &name) {
            Some(mut made) => {
                made.metadata.owner_references = Some(vec![objects::owner(&d)]);
                let secrets: Api<k8s_openapi::api::core::v1::Secret> =
                    Api::namespaced(s.client.clone(), ns);
                match secrets
                    .create(&kube::api::PostParams::default(), &made)
                    .await
                {
                    Ok(_) => {}
                    Err(kube::Error::Api(st)) if st.code == 409 => {}
                    Err(e) => return Err(Error::kube("create", "Secret", ns, &made.name_any(), e)),
                }
                made.metadata.name
            }
            None => None,
        },
    };
    let patched = api
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {
                "paused": false,
                "restore": {
                    "source": url,
                    "sha256": sha256,
                    "credentialsSecret": secret,
                    "backupName": backup_name,
                    "toolsImage": a.tools_image,
                }
            }})),
        )
        .await
        .map_err(|e| Error::kube("restore", crate::api::KIND, ns, &name, e))?;
    progress.finish("old members removed; restoring");
    drive::drive(&s, g, patched, &a.wait).await
}
