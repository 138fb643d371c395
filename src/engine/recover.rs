//! Act for a recovery's steps (`plan::recover`): the survivor's snapshot through the one backup
//! recipe, its read-back, the deletion of the lost cluster's objects, and the marks on the
//! snapshot's record that the next passes read its progress from. One step per call; the fence
//! itself is an object `act` applies (`step_objects`).

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};

use super::Context;
use super::act::Done;
use crate::api::EtcdBackup;
use crate::archive::store::Location;
use crate::backup::label;
use crate::backup::take::{self, Of};
use crate::error::{BackupError, Error};
use crate::keys::ANNOTATION_RECOVERY;
use crate::model::recovery::{RecoverFrom, Recovery};
use crate::model::{Desired, Observed};
use crate::objects;
use crate::plan::Step;
use crate::plan::recover::{Mark, survivor_moved, the_restores_claim};

/// Carries out one of a recovery's steps (the fence aside: `act` applies its object).
pub(super) async fn act(
    ctx: &Context,
    (d, o): (&Desired, &Observed),
    step: &Step,
) -> Result<Done, Error> {
    match step {
        Step::TakeRecoverySnapshot { ordinal, .. } => take_snapshot(ctx, (d, o), *ordinal).await,
        Step::VerifyRecoverySnapshot { record } => verify(ctx, (d, o), record).await,
        Step::DeleteLostMembers { record } => {
            delete_lost(ctx, (d, o), record).await?;
            Ok(Done::Changed)
        }
        Step::MarkRecovered { record } => {
            mark(ctx, d, record, &Mark::Restored).await?;
            Ok(Done::Changed)
        }
        other => Err(Error::Usage(format!(
            "{other} is not a step of a recovery ({}/{})",
            d.namespace, d.name
        ))),
    }
}

fn recovery(d: &Desired) -> Result<&Recovery, Error> {
    d.recovery.as_ref().ok_or_else(|| {
        Error::Usage(format!(
            "EtcdCluster {}/{} has no spec.recovery",
            d.namespace, d.name
        ))
    })
}

/// The members the client Service still sends clients to (empty once the fence holds: a
/// connection opened before stays open, and the survivor's revision, checked against its
/// snapshot by `verify`, catches what it commits).
async fn still_served(ctx: &Context, d: &Desired) -> Result<Vec<String>, Error> {
    let service = objects::client_service_name(&d.name);
    let slices: Api<EndpointSlice> = Api::namespaced(ctx.client.clone(), &d.namespace);
    let lp = ListParams::default().labels(&format!("kubernetes.io/service-name={service}"));
    let listed = slices.list(&lp).await.map_err(|e| {
        Error::kube(
            "list the endpoints of",
            "Service",
            &d.namespace,
            &service,
            e,
        )
    })?;
    Ok(listed
        .items
        .iter()
        .flat_map(|sl| sl.endpoints.iter())
        .map(|e| {
            e.target_ref
                .as_ref()
                .and_then(|t| t.name.clone())
                .unwrap_or_else(|| e.addresses.join(","))
        })
        .collect())
}

/// `Step::TakeRecoverySnapshot`: once the fenced client Service lists no endpoint, the
/// survivor's snapshot through the one recipe, its record labelled with the recovery's nonce
/// (a failure leaves it `Failed`, which the planner counts as an attempt).
async fn take_snapshot(
    ctx: &Context,
    (d, o): (&Desired, &Observed),
    ordinal: u32,
) -> Result<Done, Error> {
    let r = recovery(d)?;
    let RecoverFrom::Member { to, .. } = &r.from else {
        return Err(Error::Usage(format!(
            "spec.recovery of {}/{} rebuilds from a backup: it takes no snapshot",
            d.namespace, d.name
        )));
    };
    let served = still_served(ctx, d).await?;
    if !served.is_empty() {
        return Ok(Done::NotYet(format!(
            "Service {}/{} still sends clients to {} after its selector was fenced off",
            d.namespace,
            objects::client_service_name(&d.name),
            served.join(", ")
        )));
    }
    let mut req = ctx.backup_request((**to).clone(), label::TRIGGER_RECOVER);
    req.member = Some(ordinal);
    req.tools_image = r.tools_image.clone();
    req.labels
        .insert(label::RECOVERY.to_string(), r.nonce.clone());
    let of = Of {
        desired: d,
        observed: o,
    };
    let record = take::take(&ctx.reach, of, &req, &|_| {}).await?;
    tracing::info!(cluster = %d.name, namespace = %d.namespace, backup = %record.name_any(), "recovery snapshot taken");
    Ok(Done::Changed)
}

/// `Step::VerifyRecoverySnapshot`: the survivor (when rebuilding from one) still at its
/// snapshot's revision, and the stored snapshot read back in full and verified (sha256,
/// decompression, etcd's hash); marks the record `verified`, or `rejected` and why.
async fn verify(ctx: &Context, (d, o): (&Desired, &Observed), record: &str) -> Result<Done, Error> {
    let r = recovery(d)?;
    let Some(rec) = o.backups.records.iter().find(|b| b.name_any() == record) else {
        return Ok(Done::NotYet(format!("EtcdBackup {record} is not observed")));
    };
    let verdict = match survivor_still(ctx, (d, o), r, rec).await {
        Err(why) => Mark::Rejected(why),
        Ok(()) => match read_back(ctx, d, r, rec).await {
            Ok(()) => Mark::Verified,
            Err(e) => Mark::Rejected(format!("reading it back failed: {}", e.report())),
        },
    };
    if let Mark::Rejected(why) = &verdict {
        tracing::warn!(cluster = %d.name, namespace = %d.namespace, backup = %record, "recovery snapshot rejected: {why}");
    }
    mark(ctx, d, record, &verdict).await?;
    Ok(Done::Changed)
}

/// The survivor answers at its snapshot's revision (nothing to check for a backup).
async fn survivor_still(
    ctx: &Context,
    (d, o): (&Desired, &Observed),
    r: &Recovery,
    rec: &EtcdBackup,
) -> Result<(), String> {
    let RecoverFrom::Member {
        ordinal, member, ..
    } = &r.from
    else {
        return Ok(());
    };
    let ip = o.pods.get(ordinal).and_then(|p| p.ip.as_deref());
    let gone =
        |e: crate::etcd::EtcdError| format!("{member} stopped answering after its snapshot: {e}");
    let now = ctx
        .connect(d, *ordinal, ip)
        .await
        .map_err(gone)?
        .keyspace()
        .await
        .map_err(gone)?
        .revision;
    let at = rec.status.as_ref().and_then(|s| s.revision).unwrap_or(-1);
    survivor_moved(member, at, now)
}

/// Reads the record's snapshot back in full and verifies it.
async fn read_back(
    ctx: &Context,
    d: &Desired,
    r: &Recovery,
    rec: &EtcdBackup,
) -> Result<(), Error> {
    let st = rec.status.clone().unwrap_or_default();
    let url = st.url.unwrap_or_default();
    let (loc, key) = Location::parse_object(&url).map_err(BackupError::from)?;
    let secret = match &r.from {
        RecoverFrom::Member { to, .. } => to.credentials_secret.clone(),
        RecoverFrom::Backup { .. } => rec
            .spec
            .credentials_secret
            .clone()
            .or_else(|| r.restore_credentials_secret.clone()),
    };
    // An encrypted snapshot: its key first (a missing one fails before the download).
    let key_secret = rec.spec.encryption.as_ref().map(|e| e.key_secret());
    let decrypt = match &key_secret {
        Some(k) => Some(crate::backup::secret_key(&ctx.client, &d.namespace, k).await?),
        None => None,
    };
    let store = crate::backup::open_store(
        &ctx.client,
        &d.namespace,
        &loc,
        secret.as_deref(),
        &r.tools_image,
        &ctx.store_access,
    )
    .await?;
    let verified = crate::archive::fetch::verify_into(
        &store,
        &key,
        decrypt.as_ref(),
        st.sha256.as_deref(),
        &mut tokio::io::sink(),
    )
    .await;
    store.close().await;
    verified?;
    Ok(())
}

/// `Step::DeleteLostMembers`: marks `record` `deleting` first (from then on the planner only goes
/// forward), then deletes the StatefulSet (its pods first), the member config and every member
/// volume (and a leftover restore pod) — all but what a restore of this recovery made (the
/// seed's claim marked `Restoring`, its pod). The planner waits while they go and asks again for
/// what is left.
async fn delete_lost(
    ctx: &Context,
    (d, o): (&Desired, &Observed),
    record: &str,
) -> Result<(), Error> {
    mark(ctx, d, record, &Mark::Deleting).await?;
    let ns = d.namespace.as_str();
    let gone = |r: Result<(), kube::Error>, kind: &'static str, name: &str| match r {
        Ok(()) => Ok(()),
        Err(kube::Error::Api(st)) if st.code == 404 => Ok(()),
        Err(e) => Err(Error::kube("delete", kind, ns, name, e)),
    };
    let sts: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), ns);
    let name = objects::statefulset_name(&d.name);
    let r = sts.delete(&name, &DeleteParams::foreground()).await;
    gone(r.map(|_| ()), "StatefulSet", &name)?;
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), ns);
    let name = objects::config_name(&d.name);
    let r = cms.delete(&name, &DeleteParams::default()).await;
    gone(r.map(|_| ()), "ConfigMap", &name)?;
    let ours = |ord: u32, v: &crate::model::VolumeView| the_restores_claim(ord, v);
    let restoring = o.volumes.iter().any(|(k, v)| ours(*k, v));
    if !restoring {
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
        let name = objects::restore::pod_name(&d.name);
        let r = pods.delete(&name, &DeleteParams::default()).await;
        gone(r.map(|_| ()), "Pod", &name)?;
    }
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), ns);
    for (_, v) in o.volumes.iter().filter(|(k, v)| !ours(**k, v)) {
        let r = pvcs.delete(&v.name, &DeleteParams::default()).await;
        gone(r.map(|_| ()), "PersistentVolumeClaim", &v.name)?;
    }
    Ok(())
}

/// Writes `mark` of the cluster's recovery on EtcdBackup `record`.
async fn mark(ctx: &Context, d: &Desired, record: &str, mark: &Mark) -> Result<(), Error> {
    let r = recovery(d)?;
    let patch = serde_json::json!({
        "metadata": {"annotations": {ANNOTATION_RECOVERY: mark.value(&r.nonce)}}
    });
    let api: Api<EtcdBackup> = Api::namespaced(ctx.client.clone(), &d.namespace);
    api.patch(record, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| Error::kube("mark", "EtcdBackup", &d.namespace, record, e))?;
    Ok(())
}
