//! `kubectl etcd reconcile NAME`: no new intent, just drive the cluster until it converges.

use crate::cli::flags::{Global, WaitFlags};
use crate::cli::{Session, drive};
use crate::error::Error;

#[derive(clap::Args, Debug)]
pub struct Args {
    pub name: String,
    #[command(flatten)]
    pub wait: WaitFlags,
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let s = Session::connect(g).await?;
    s.ensure_crd_current().await?;
    let cluster = s.get_cluster(&a.name).await?;
    if a.wait.dry_run {
        return drive::dry_run(&s, g, &cluster, &[]).await;
    }
    drive::drive(&s, g, cluster, &a.wait).await
}
