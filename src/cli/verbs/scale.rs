//! `kubectl etcd scale NAME --replicas N`: write the new size, then drive the cluster there.

use kube::api::Patch;
use serde_json::json;

use crate::api::KIND;
use crate::cli::flags::{Global, WaitFlags};
use crate::cli::{Session, drive, output, usage};
use crate::error::Error;
use crate::model;

#[derive(clap::Args, Debug)]
pub struct Args {
    pub name: String,
    #[arg(long)]
    pub replicas: i64,
    #[command(flatten)]
    pub wait: WaitFlags,
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let (name, replicas) = (a.name, a.replicas);
    let replicas = model::validate_replicas(replicas).map_err(|e| usage(&name, e))?;
    let s = Session::connect(g).await?;
    s.ensure_crd().await?;
    let api = s.clusters();
    let mut cluster = s.get_cluster(&name).await?;
    let from = cluster.spec.replicas;
    cluster.spec.replicas = replicas as i32;
    model::validate(&cluster).map_err(|source| Error::InvalidSpec {
        namespace: s.namespace.clone(),
        name: name.clone(),
        source,
    })?;
    if a.wait.dry_run {
        return drive::dry_run(
            &s,
            g,
            &cluster,
            &[format!(
                "set spec.replicas of EtcdCluster {}/{name} from {from} to {replicas}",
                s.namespace
            )],
        )
        .await;
    }
    let patched = api
        .patch(
            &name,
            &super::intent_patch(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .map_err(|e| Error::kube("scale", KIND, &s.namespace, &name, e))?;
    output::progress_line(&format!(
        "EtcdCluster {}/{name}: replicas {from} → {replicas}",
        s.namespace
    ));
    drive::drive(&s, g, patched, &a.wait).await
}
