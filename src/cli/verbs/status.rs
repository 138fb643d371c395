//! `kubectl etcd status [NAME | -A]`: observe and plan only; print; exit 7 on trouble.

use kube::api::{Api, ListParams};

use crate::api::{EtcdCluster, KIND};
use crate::cli::flags::Global;
use crate::cli::{Session, output};
use crate::engine::policy::{Trouble, trouble};
use crate::engine::{self, Context, Mode, Pass};
use crate::error::Error;
use crate::objects;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// One cluster; all clusters of the namespace when omitted.
    pub name: Option<String>,
    /// All namespaces (only without NAME).
    #[arg(short = 'A', long, conflicts_with = "name")]
    pub all_namespaces: bool,
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let span = crate::phase!("status", cluster = a.name.as_deref().unwrap_or("*"));
    crate::phase::timed(span, status(g, a)).await
}

async fn status(g: &Global, a: Args) -> Result<(), Error> {
    let s = Session::connect(g).await?;
    let mut ctx = Context::new(s.client.clone(), s.dial);
    ctx.reach = ctx.reach.reading_secrets_once();
    let Some(name) = a.name else {
        s.ensure_crd().await?;
        return list(g, &s, &ctx, a.all_namespaces).await;
    };
    // Both reads at once: a missing CRD is reported as such, before the missing cluster.
    let (crd, cluster) = crate::phase::timed(crate::phase!("get_cluster"), async {
        tokio::join!(s.ensure_crd(), s.get_cluster(&name))
    })
    .await;
    crd?;
    let cluster = cluster?;
    let pass = crate::phase::timed(
        crate::phase!("pass"),
        engine::reconcile_once(&ctx, &cluster, Mode::DryRun),
    )
    .await;
    output::print_status(g.output, &cluster, pass.as_ref().ok())?;
    // Scripts can rely on the exit code: 0 only when etcd answers (once the cluster was formed)
    // and nothing holds.
    let pass = pass?;
    let held = |message| Error::Held {
        namespace: s.namespace.clone(),
        name: name.clone(),
        message,
    };
    match trouble(&pass) {
        None => Ok(()),
        Some(Trouble::Held(message)) => Err(held(message)),
        Some(Trouble::Silent) => Err(held(format!(
            "no member answered (next step: {}); check the member pods: kubectl -n {} get pods -l {}",
            pass.step,
            s.namespace,
            objects::selector_string(&name)
        ))),
    }
}

async fn list(g: &Global, s: &Session, ctx: &Context, all: bool) -> Result<(), Error> {
    let api: Api<EtcdCluster> = if all {
        Api::all(s.client.clone())
    } else {
        s.clusters()
    };
    let list = api.list(&ListParams::default()).await.map_err(|e| {
        let ns = if all { "*" } else { &s.namespace };
        Error::kube("list", KIND, ns, "*", e)
    })?;
    let mut rows: Vec<(EtcdCluster, Option<Pass>)> = Vec::new();
    for c in list.items {
        let pass = engine::reconcile_once(ctx, &c, Mode::DryRun).await.ok();
        rows.push((c, pass));
    }
    output::print_status_list(g.output, &rows, all)
}
