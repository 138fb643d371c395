//! `kubectl etcd delete NAME [--delete-data --yes]`: delete the EtcdCluster; its objects go with
//! it, its volumes only when asked.

use std::time::{Duration, Instant};

use kube::api::{DeleteParams, Patch};
use serde_json::json;

use crate::api::KIND;
use crate::cli::flags::{Global, WaitFlags};
use crate::cli::{Session, drive, output};
use crate::engine::{self, Context, Mode};
use crate::error::Error;

#[derive(clap::Args, Debug)]
pub struct Args {
    pub name: String,
    /// Also delete the member volumes: all data of the cluster is lost.
    #[arg(long)]
    pub delete_data: bool,
    /// Confirm --delete-data.
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub wait: WaitFlags,
}

/// Pause between looks at a cluster being deleted.
const POLL: Duration = Duration::from_millis(500);

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let Args {
        name,
        delete_data,
        yes,
        wait,
    } = a;
    if delete_data && !yes {
        return Err(Error::Usage(format!(
            "--delete-data deletes every member volume of {name} and all its data; add --yes to confirm"
        )));
    }
    let s = Session::connect(g).await?;
    s.ensure_crd().await?;
    let ns = s.namespace.clone();
    let ephemeral = match s.get_cluster(&name).await {
        Ok(c) => c.spec.storage.ephemeral,
        // The cluster was deleted before with its volumes kept: `--delete-data` deletes them now.
        Err(Error::NotFound { .. }) if delete_data => {
            return delete_left_volumes(g, &s, &name, &wait).await;
        }
        Err(e) => return Err(e),
    };
    if wait.dry_run {
        let lines = [
            format!(
                "delete EtcdCluster {ns}/{name} and its StatefulSet, Services, ConfigMap and disruption budget"
            ),
            if ephemeral {
                "its members keep their data in their pods (ephemeral storage): it goes with them"
                    .into()
            } else if delete_data {
                "delete the member volumes (all data)".into()
            } else {
                "keep the member volumes".into()
            },
        ];
        return output::print_dry_run(g.output, &lines, &[], None);
    }
    request_deletion(&s, &name, delete_data).await?;
    output::progress_line(&format!(
        "deleting EtcdCluster {ns}/{name}{}",
        if ephemeral {
            " (ephemeral storage: its data goes with its pods)"
        } else if delete_data {
            " and its volumes"
        } else {
            " (volumes kept)"
        }
    ));
    if wait.no_wait {
        return Ok(());
    }
    let started = Instant::now();
    let timed_out = |last: &str| Error::Timeout {
        namespace: ns.clone(),
        name: name.clone(),
        seconds: wait.timeout.as_secs(),
        last: last.into(),
    };
    let lock = drive::cluster_lock(&s, &name);
    let gone = until_gone(&s, &name, &lock, started, wait.timeout)
        .await
        .map_err(|e| e.unwrap_or_else(|| timed_out("deleting")));
    match gone {
        // The cluster is gone: so goes its Lease.
        Ok(()) => lock.remove().await,
        Err(_) => lock.release().await,
    }
    gone?;
    // The finalizer deletes the volumes when there was one; a cluster that had none (nobody
    // ran the engine for it) leaves them to us.
    while delete_data && !engine::delete_volumes(&s.client, &ns, &name).await? {
        if started.elapsed() > wait.timeout {
            return Err(timed_out("deleting the volumes"));
        }
        tokio::time::sleep(POLL).await;
    }
    output::progress_line(&format!("deleted EtcdCluster {ns}/{name}"));
    Ok(())
}

/// Deletes the cluster (foreground), marked first for its volumes to go with it when asked.
async fn request_deletion(s: &Session, name: &str, delete_data: bool) -> Result<(), Error> {
    let (api, ns) = (s.clusters(), &s.namespace);
    if delete_data {
        api.patch(
            name,
            &super::intent_patch(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {engine::ANNOTATION_DELETE_DATA: "true"}}}),
            ),
        )
        .await
        .map_err(|e| Error::kube("mark for data deletion", KIND, ns, name, e))?;
    }
    match api.delete(name, &DeleteParams::foreground()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(st)) if st.code == 404 => Err(Error::NotFound {
            namespace: ns.clone(),
            name: name.into(),
        }),
        Err(e) => Err(Error::kube("delete", KIND, ns, name, e)),
    }
}

/// Waits until the cluster is gone, running the engine's release (the finalizer) unless an
/// operator is on it. `Err(None)`: still there after `timeout` from `started`.
async fn until_gone(
    s: &Session,
    name: &str,
    lock: &crate::lease::Lock,
    started: Instant,
    timeout: Duration,
) -> Result<(), Option<Error>> {
    let (api, ns) = (s.clusters(), &s.namespace);
    let ctx = Context::new(s.client.clone(), s.dial);
    loop {
        match api.get_opt(name).await {
            Ok(None) => return Ok(()),
            // Unless an operator is on it, the engine's release runs here (same pass).
            Ok(Some(c))
                if c.metadata.deletion_timestamp.is_some() && drive::may_act(lock).await? =>
            {
                engine::reconcile_once(&ctx, &c, Mode::Act).await?;
            }
            Ok(Some(_)) => {}
            Err(e) => return Err(Some(Error::kube("get", KIND, ns, name, e))),
        }
        if started.elapsed() > timeout {
            return Err(None);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// `delete NAME --delete-data --yes` for a cluster deleted earlier with its volumes kept: deletes
/// the volumes; `NotFound` when there are none either.
async fn delete_left_volumes(
    g: &Global,
    s: &Session,
    name: &str,
    wait: &WaitFlags,
) -> Result<(), Error> {
    let ns = s.namespace.clone();
    let left = engine::member_volumes(&s.client, &ns, name).await?;
    if left.is_empty() {
        return Err(Error::NotFound {
            namespace: ns,
            name: name.into(),
        });
    }
    let what = format!(
        "delete the volumes left by the deleted EtcdCluster {ns}/{name}: {}",
        left.join(", ")
    );
    if wait.dry_run {
        return output::print_dry_run(g.output, &[what], &[], None);
    }
    output::progress_line(&what);
    let started = Instant::now();
    while !engine::delete_volumes(&s.client, &ns, name).await? {
        if wait.no_wait {
            return Ok(());
        }
        if started.elapsed() > wait.timeout {
            return Err(Error::Timeout {
                namespace: ns,
                name: name.into(),
                seconds: wait.timeout.as_secs(),
                last: "deleting the volumes".into(),
            });
        }
        tokio::time::sleep(POLL).await;
    }
    output::progress_line(&format!("deleted the volumes of {ns}/{name}"));
    Ok(())
}
