//! The engine's backups: the entry point through which the drivers take one (`take`), and the
//! backup steps `act` carries out. Every one of them runs the one recipe, `backup::take`.

use kube::api::{Api, Patch, PatchParams};

use super::Context;
use crate::api::{EtcdBackup, EtcdCluster};
use crate::backup::take::{self, Of, Request};
use crate::error::Error;
use crate::model::{self, Desired, Observed, Version};

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
    let d = model::validate(cluster).map_err(|source| Error::InvalidSpec {
        namespace: d_namespace(cluster),
        name: cluster.metadata.name.clone().unwrap_or_default(),
        source,
    })?;
    // Dials with what the members run (a refused spec change, e.g. of spec.tls, aside).
    let (d, observed) = super::observe(ctx, &d, cluster.status.as_ref()).await?;
    let record = take::take(
        &ctx.reach,
        Of {
            desired: &d,
            observed: &observed,
        },
        req,
        progress,
    )
    .await?;
    let taker = crate::backup::scheduled::Taker {
        reach: &ctx.reach,
        access: &ctx.store_access,
        identity: &ctx.identity,
    };
    crate::backup::scheduled::note_success(&taker, cluster, &record).await?;
    Ok(record)
}

fn d_namespace(cluster: &EtcdCluster) -> String {
    cluster
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into())
}

/// `Step::PreUpgradeSnapshot`: a verified snapshot to `destination` (with the cluster's backup
/// plan's credentials, compression and SSE), recorded for version `to` in the annotation
/// `kubectl etcd upgrade` writes, which the next pass reads. Not verified: it fails, and the next
/// pass asks again (no snapshot, no upgrade).
pub(super) async fn pre_upgrade_snapshot(
    ctx: &Context,
    (d, o): (&Desired, &Observed),
    to: Version,
    req: Request,
) -> Result<String, Error> {
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
    let Some(url) = st.url.filter(|_| st.verified) else {
        return Err(Error::Held {
            namespace: d.namespace.clone(),
            name: d.name.clone(),
            message: format!(
                "the pre-upgrade snapshot {} was not verified ({}); no member moves to {to}",
                record.metadata.name.as_deref().unwrap_or_default(),
                st.message.as_deref().unwrap_or("no message")
            ),
        });
    };
    let patch = serde_json::json!({
        "metadata": {"annotations": {crate::api::ANNOTATION_PRE_UPGRADE_BACKUP: format!("{to} {url}")}}
    });
    let api: Api<EtcdCluster> = Api::namespaced(ctx.client.clone(), &d.namespace);
    api.patch(&d.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| Error::kube("annotate", crate::api::KIND, &d.namespace, &d.name, e))?;
    Ok(url)
}

/// The request of a pre-upgrade snapshot to `destination`, with the cluster's backup settings.
pub(super) async fn pre_upgrade_request(
    ctx: &Context,
    d: &Desired,
    destination: &str,
) -> Result<Request, Error> {
    use crate::archive::Destination;
    use crate::archive::store::Location;
    use crate::error::BackupError;
    let api: Api<EtcdCluster> = Api::namespaced(ctx.client.clone(), &d.namespace);
    let cluster = api
        .get(&d.name)
        .await
        .map_err(|e| Error::kube("get", crate::api::KIND, &d.namespace, &d.name, e))?;
    let spec = cluster.spec.backup.clone().unwrap_or_default();
    let to = Destination {
        location: Location::parse(destination).map_err(BackupError::from)?,
        compression: spec
            .compression
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(BackupError::Usage)?
            .unwrap_or_default(),
        credentials_secret: spec.credentials_secret.clone(),
        sse: crate::backup::sse_of(&spec)?,
    };
    Ok(ctx.backup_request(to, crate::backup::label::TRIGGER_UPGRADE))
}
