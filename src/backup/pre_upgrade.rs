//! The pre-upgrade snapshot of a `spec.version` change that came without one (a plain `kubectl
//! apply` with the operator): the planner asks for it (`Step::PreUpgradeSnapshot`), and whoever
//! drives the pass (operate, the CLI's drive loop) takes it here, since backups sit above the
//! engine. Verified, or it fails and the next pass asks again: no snapshot, no upgrade.

use kube::Api;

use super::{label, take};
use crate::archive::store::Location;
use crate::engine::{Context, Dial, Pass};
use crate::error::{BackupError, Error};
use crate::model::{Desired, Version};
use crate::plan::Step;

/// Takes the snapshot when `pass` asked for one. `Ok(Some(url))` once taken and recorded.
pub async fn take_if_asked(ctx: &Context, pass: &Pass) -> Result<Option<String>, Error> {
    let Step::PreUpgradeSnapshot { to, destination } = &pass.step else {
        return Ok(None);
    };
    snapshot(ctx, &pass.desired, *to, destination)
        .await
        .map(Some)
}

/// Takes a verified snapshot to `destination` and records it in the annotation `kubectl etcd
/// upgrade` writes, for version `to`.
async fn snapshot(
    ctx: &Context,
    d: &Desired,
    to: Version,
    destination: &str,
) -> Result<String, Error> {
    let api: Api<crate::api::EtcdCluster> = Api::namespaced(ctx.client.clone(), &d.namespace);
    let cluster = api
        .get(&d.name)
        .await
        .map_err(|e| Error::kube("get", crate::api::KIND, &d.namespace, &d.name, e))?;
    let spec = cluster.spec.backup.clone().unwrap_or_default();
    let loc = Location::parse(destination).map_err(BackupError::from)?;
    let compression = spec
        .compression
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(BackupError::Usage)?
        .unwrap_or_default();
    let store = super::open_store(
        &ctx.client,
        &d.namespace,
        &loc,
        spec.credentials_secret.as_deref(),
        // pvc:// is refused for pre-upgrade snapshots (model::validate_backup, `upgrade --to`): no agent pod.
        crate::model::DEFAULT_TOOLS_IMAGE,
        &ctx.store_access,
    )
    .await?
    .with_sse(super::sse_of(&spec)?)
    .map_err(BackupError::from)?;
    let req = take::Request {
        destination: loc,
        compression,
        credentials_secret: spec.credentials_secret.clone(),
        trigger: label::TRIGGER_UPGRADE,
        taken_by: match ctx.dial {
            Dial::Direct => "operator".into(),
            Dial::PortForward => crate::lease::cli_identity(),
        },
        member: None,
    };
    let record = take::create_record(ctx, &cluster, &req, jiff::Timestamp::now()).await?;
    let record = take::execute(ctx, d, &store, &req, record, &|_| {}).await?;
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
    api.patch(
        &d.name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await
    .map_err(|e| Error::kube("annotate", crate::api::KIND, &d.namespace, &d.name, e))?;
    super::scheduled::note_success(ctx, &cluster, &record).await?;
    Ok(url)
}
