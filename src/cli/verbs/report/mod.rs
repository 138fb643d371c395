//! `kubectl etcd report NAME | --operator`: a support bundle, one tar.gz to hand to whoever helps.
//!
//! Reads only: the objects of the cluster (Secrets by name and keys only), the events that
//! concern them, the engine's observation and next step (the dry-run pass `status` runs), the
//! members' alarms, the operator's logs and, with `--logs`, the members' logs. Reads run side by
//! side; a read that fails (RBAC, a member that does not answer) is listed in the archive's
//! `REPORT.md` and `index.json`, never fatal. Only a cluster that does not exist, an unreachable
//! API server and a file that cannot be written end the verb.
//!
//! What may hold a secret is taken out before anything is archived (`redact`, `secret_summary`),
//! pure functions tested below with the archive they end up in.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams, LogParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::api::{EtcdBackup, EtcdCluster};
use crate::cli::flags::{Global, parse_duration};
use crate::cli::{Session, output};
use crate::engine::{self, Context, Dial, Mode};
use crate::error::Error;
use crate::model::EtcdView;
use crate::objects::{self, install};

mod bundle;

pub use bundle::*;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The cluster (not with --operator).
    #[arg(required_unless_present = "operator")]
    pub name: Option<String>,
    /// The archive to write (default: etcd-report-NAMESPACE-NAME-TIME.tar.gz here). `-o` stays
    /// the output format: `-o json` prints the archive's index instead of its path.
    #[arg(short = 'f', long)]
    pub file: Option<PathBuf>,
    /// Also the members' etcd logs (the operator's are always in).
    #[arg(long)]
    pub logs: bool,
    /// How far back the logs go.
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    pub since: Duration,
    /// Only the operator: its Deployments, pods, logs, Leases and events.
    #[arg(long, conflicts_with = "name")]
    pub operator: bool,
}

/// What replaces a value that may be secret.
const REDACTED: &str = "(redacted)";
/// The container of the operator's pods (`objects::install`).
const OPERATOR_CONTAINER: &str = "operator";

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let started = Instant::now();
    let s = Session::connect(g).await?;
    let now = jiff::Timestamp::now();
    let stamp = now.strftime("%Y%m%dT%H%M%SZ").to_string();
    let (subject, bundle) = match &a.name {
        Some(name) => {
            s.ensure_crd().await?;
            let progress = output::Progress::new(&format!("{}/{name}", s.namespace));
            progress.step("collecting");
            let b = cluster_bundle(&s, name, &a).await?;
            progress.finish("collected");
            (format!("{}-{name}", s.namespace), b)
        }
        None => (
            "operator".to_string(),
            operator_bundle(&s.client, a.since, true).await?,
        ),
    };
    let file = a
        .file
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("etcd-report-{subject}-{stamp}.tar.gz")));
    let meta = Meta {
        subject: match &a.name {
            Some(n) => format!("EtcdCluster {}/{n}", s.namespace),
            None => "the kubectl-etcd operator".into(),
        },
        created: now.to_string(),
        since: humantime::format_duration(a.since).to_string(),
        seconds: started.elapsed().as_secs_f64(),
    };
    let archive = gzip(&bundle.tar(&top_dir(&file), &meta, now.as_second())).await?;
    std::fs::write(&file, archive).map_err(|e| {
        Error::Io(std::io::Error::new(
            e.kind(),
            format!("cannot write {}: {e}", file.display()),
        ))
    })?;
    if !bundle.failed.is_empty() {
        output::progress_line(&format!(
            "{} reads failed (listed in REPORT.md); the rest is in the archive",
            bundle.failed.len()
        ));
    }
    match g.output {
        output::Format::Table => output::print_raw(&file.display().to_string()),
        other => {
            let mut doc = bundle.index(&meta);
            doc["file"] = json!(file.display().to_string());
            output::print_value(other, &doc)
        }
    }
}

/// The archive's name without `.tar.gz`: the directory its files are under.
fn top_dir(file: &std::path::Path) -> String {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let stem = name
        .strip_suffix(".tar.gz")
        .or_else(|| name.strip_suffix(".tgz"))
        .unwrap_or(&name);
    if stem.is_empty() {
        "etcd-report".into()
    } else {
        stem.into()
    }
}

/// Everything about one cluster. Errors: only the cluster not existing and an unreachable API.
async fn cluster_bundle(s: &Session, name: &str, a: &Args) -> Result<Bundle, Error> {
    let ns = s.namespace.as_str();
    let mut b = Bundle::default();
    let cluster = s.get_cluster_if_readable(name).await?;
    match &cluster {
        Some(c) => b.yaml("cluster.yaml", "the EtcdCluster", c),
        None => b.failed.push(Failed {
            what: format!("get EtcdCluster {ns}/{name}"),
            error: "forbidden: without it, no engine pass, members or alarms".into(),
        }),
    }
    let client = &s.client;
    let (objects, engine, operator) = tokio::join!(
        cluster_objects(client, ns, name, cluster.as_ref()),
        engine_view(client, s.dial, cluster.as_ref()),
        operator_bundle(client, a.since, false),
    );
    let (objects, pods) = objects?;
    b.merge(objects);
    b.merge(engine);
    b.merge(operator?);
    if a.logs {
        b.merge(logs(client, ns, &pods, objects::CONTAINER, "logs", a.since).await);
    }
    Ok(b)
}

/// The EtcdBackups, workload, Services, ConfigMap, PDB, claims, Secrets (names and keys),
/// events and the cluster's Lease; also the member pods (name, restarts) for the logs.
async fn cluster_objects(
    client: &Client,
    ns: &str,
    name: &str,
    cluster: Option<&EtcdCluster>,
) -> Result<(Bundle, Vec<(String, i32)>), Error> {
    let selector = ListParams::default().labels(&objects::selector_string(name));
    let backups: Api<EtcdBackup> = Api::namespaced(client.clone(), ns);
    let sts: Api<StatefulSet> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let config: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), ns);
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    // The cluster's Lease lives beside it (`lease` module doc).
    let leases: Api<Lease> = Api::namespaced(client.clone(), ns);
    let lease = crate::lease::cluster_lease(ns, name);
    let every = ListParams::default();
    let (sts_name, config_name, pdb_name) = (
        objects::statefulset_name(name),
        objects::config_name(name),
        objects::pdb_name(name),
    );
    let (backups_r, sts_r, pods_r, pvcs_r, services_r, config_r, pdb_r, events_r, lease_r) = tokio::join!(
        backups.list(&every),
        sts.get_opt(&sts_name),
        pods.list(&selector),
        pvcs.list(&every),
        services.list(&selector),
        config.get_opt(&config_name),
        pdbs.get_opt(&pdb_name),
        events.list(&every),
        leases.get_opt(&lease),
    );
    let mut c = Collected::new(name, cluster);
    let fail = |verb, kind, what: &str, e| Error::kube(verb, kind, ns, what, e);
    let mine = backups_r.map(|l| {
        l.items
            .iter()
            .filter(|k| k.spec.cluster == name)
            .map(to_value)
            .collect()
    });
    let backups = mine.map_err(|e| fail("list", "EtcdBackup", "*", e));
    c.keep_list("backups.yaml", "the cluster's EtcdBackups", backups)?;
    let v = got(sts_r, ns, "StatefulSet", &sts_name);
    c.keep_one("statefulset.yaml", "the member StatefulSet", v)?;
    let member_pods = match &pods_r {
        Ok(l) => l
            .items
            .iter()
            .map(|p| (p.name_any(), restarts(p)))
            .collect(),
        Err(_) => Vec::new(),
    };
    let pods = pods_r.map(|l| l.items.iter().map(to_value).collect());
    c.keep_list(
        "pods.yaml",
        "the member pods",
        pods.map_err(|e| fail("list", "Pod", name, e)),
    )?;
    let mine = pvcs_r.map(|l| {
        l.items
            .iter()
            .filter(|p| objects::ordinal_of_volume(name, &p.name_any()).is_some())
            .map(to_value)
            .collect()
    });
    let claims = mine.map_err(|e| fail("list", "PersistentVolumeClaim", "*", e));
    c.keep_list("pvcs.yaml", "the member volume claims", claims)?;
    let services = services_r
        .map(|l| l.items.iter().map(to_value).collect())
        .map_err(|e| fail("list", "Service", name, e));
    c.keep_list("services.yaml", "the Services", services)?;
    let v = got(config_r, ns, "ConfigMap", &config_name);
    c.keep_one("configmap.yaml", "the member-config ConfigMap", v)?;
    let v = got(pdb_r, ns, "PodDisruptionBudget", &pdb_name);
    c.keep_one("pdb.yaml", "the PodDisruptionBudget", v)?;
    let Collected {
        mut b, held, names, ..
    } = c;
    match lease_r {
        Ok(Some(l)) => b.yaml(
            "lease.yaml",
            "the cluster's Lease (which driver may act)",
            &to_value(&l),
        ),
        Ok(None) => b.notes.push(format!(
            "no Lease {ns}/{lease}: no driver has acted on this cluster under a Lease"
        )),
        Err(e) => b.fail(Error::kube("get", "Lease", ns, &lease, e))?,
    }
    match events_r {
        Ok(l) => events_about(&mut b, name, &names, &l.items),
        Err(e) => b.fail(fail("list", "Event", "*", e))?,
    }
    b.merge(secrets(client, ns, &secret_names(&held)).await?);
    Ok((b, member_pods))
}

/// The object a get by name read, for the archive.
fn got<K: serde::Serialize>(
    read: kube::Result<Option<K>>,
    ns: &str,
    kind: &'static str,
    name: &str,
) -> Result<Option<Value>, Error> {
    read.map(|o| o.as_ref().map(to_value))
        .map_err(|e| Error::kube("get", kind, ns, name, e))
}

/// The bundle of a cluster's objects as it is filled, and what it holds so far: the objects (for
/// the Secrets they name) and their names (for the events that concern them).
struct Collected {
    b: Bundle,
    held: Vec<Value>,
    names: BTreeSet<String>,
}

impl Collected {
    fn new(name: &str, cluster: Option<&EtcdCluster>) -> Self {
        Collected {
            b: Bundle::default(),
            held: cluster.map(to_value).into_iter().collect(),
            names: BTreeSet::from([name.to_string()]),
        }
    }

    fn keep(&mut self, path: &str, what: &str, items: Vec<Value>) {
        for v in &items {
            if let Some(n) = v["metadata"]["name"].as_str() {
                self.names.insert(n.to_string());
            }
        }
        self.held.extend(items.iter().cloned());
        self.b.yaml(path, what, &items);
    }

    /// A list read: archived when it worked, listed as failed when not.
    fn keep_list(
        &mut self,
        path: &str,
        what: &str,
        read: Result<Vec<Value>, Error>,
    ) -> Result<(), Error> {
        match read {
            Ok(items) => self.keep(path, what, items),
            Err(e) => self.b.fail(e)?,
        }
        Ok(())
    }

    /// At most one object, by name: archived as a list of it (empty when absent or unreadable).
    fn keep_one(
        &mut self,
        path: &str,
        what: &str,
        read: Result<Option<Value>, Error>,
    ) -> Result<(), Error> {
        let items = match read {
            Ok(v) => v.into_iter().collect(),
            Err(e) => {
                self.b.fail(e)?;
                Vec::new()
            }
        };
        self.keep(path, what, items);
        Ok(())
    }
}

/// The namespace's events about the archived objects and the cluster's pods and claims, oldest first.
fn events_about(b: &mut Bundle, name: &str, names: &BTreeSet<String>, events: &[Event]) {
    let mut mine: Vec<&Event> = events
        .iter()
        .filter(|e| {
            let n = e.involved_object.name.as_deref().unwrap_or_default();
            names.contains(n)
                || objects::ordinal_of_pod(name, n).is_some()
                || objects::ordinal_of_volume(name, n).is_some()
        })
        .collect();
    mine.sort_by_key(|e| event_time(e));
    b.yaml(
        "events.yaml",
        "the namespace's events about these objects",
        &mine.iter().map(|e| to_value(*e)).collect::<Vec<_>>(),
    );
}

/// Container restarts of a pod (its previous logs are worth reading when there were some).
fn restarts(p: &Pod) -> i32 {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map_or(0, |c| c.iter().map(|c| c.restart_count).sum())
}

fn event_time(e: &Event) -> Option<jiff::Timestamp> {
    e.last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| e.event_time.as_ref().map(|t| t.0))
        .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// The Secrets the archived objects name: their names, types and keys, never their values.
async fn secrets(client: &Client, ns: &str, names: &BTreeSet<String>) -> Result<Bundle, Error> {
    let api: Api<Secret> = Api::namespaced(client.clone(), ns);
    let reads = futures::future::join_all(names.iter().map(|n| api.get_opt(n))).await;
    let mut b = Bundle::default();
    let mut found = Vec::new();
    for (n, r) in names.iter().zip(reads) {
        match r {
            Ok(Some(s)) => found.push(secret_summary(&s)),
            Ok(None) => found.push(json!({ "name": n, "missing": true })),
            Err(e) => b.fail(Error::kube("get", "Secret", ns, n, e))?,
        }
    }
    b.yaml(
        "secrets.yaml",
        "the Secrets the objects name: names, types and keys only",
        &found,
    );
    Ok(b)
}

/// The engine's dry-run pass (observe + plan, as `status`): the member list with each member's
/// status, the next step, the status it would write; then the alarms etcd holds.
async fn engine_view(client: &Client, dial: Dial, cluster: Option<&EtcdCluster>) -> Bundle {
    let mut b = Bundle::default();
    let Some(cluster) = cluster else {
        return b;
    };
    let ctx = Context::new(client.clone(), dial);
    let pass = match engine::reconcile_once(&ctx, cluster, Mode::DryRun).await {
        Ok(p) => p,
        Err(e) => {
            b.failed.push(Failed {
                what: "the engine's observation (dry-run pass)".into(),
                error: e.report(),
            });
            return b;
        }
    };
    b.text(
        "status.txt",
        "what `kubectl etcd status` prints",
        output::status_table(cluster, Some(&pass)),
    );
    b.text(
        "next-step.txt",
        "the engine's next step (dry run)",
        format!("{}\n", pass.step),
    );
    b.yaml(
        "members.yaml",
        "the member list, each member's status and health",
        &pass.observed.etcd,
    );
    b.json(
        "engine.json",
        "the engine's pass: desired, observed, next step, status",
        &json!({
            "nextStep": pass.step,
            "nextStepText": pass.step.to_string(),
            "status": pass.status,
            "desired": pass.desired,
            "observed": pass.observed,
        }),
    );
    match &pass.observed.etcd {
        EtcdView::Reached(c) => {
            // Alarms are cluster-wide: one member that answers is enough.
            let answering = c
                .leader_member()
                .into_iter()
                .chain(c.members.iter())
                .filter(|m| m.status.is_some())
                .find_map(|m| m.ordinal);
            let alarms = match answering {
                Some(o) => match ctx.connect(&pass.desired, o, None).await {
                    Ok(mut client) => client.alarms().await,
                    Err(e) => Err(e),
                },
                None => {
                    b.notes.push("no member answered: no alarm list".into());
                    return b;
                }
            };
            match alarms {
                Ok(list) => {
                    let doc: Vec<Value> = list
                        .iter()
                        .map(|(id, alarm)| {
                            let member = c.members.iter().find(|m| m.id == *id);
                            json!({
                                "memberId": format!("{id:x}"),
                                "member": member.map(|m| m.name.clone()),
                                "alarm": alarm,
                            })
                        })
                        .collect();
                    b.yaml("alarms.yaml", "the alarms etcd holds", &doc);
                }
                Err(e) => b.failed.push(Failed {
                    what: "etcd's alarm list".into(),
                    error: e.to_string(),
                }),
            }
        }
        other => b.failed.push(Failed {
            what: "the member list (etcd)".into(),
            error: match other {
                EtcdView::NotQueried => "no member pod runs".into(),
                EtcdView::Unreachable { errors } => {
                    format!("no member answered: {}", errors.join("; "))
                }
                EtcdView::Split { cluster_ids } => format!(
                    "members answer with different cluster ids {cluster_ids:?} (see members.yaml)"
                ),
                EtcdView::Reached(_) => unreachable!(),
            },
        }),
    }
    b
}

/// The operator: its pods (found by the label `install` gives them, in every namespace when
/// that may be listed, else in its install namespace) and their logs; with `all`, also its
/// Deployments, the engine Leases and the events of its namespace.
async fn operator_bundle(client: &Client, since: Duration, all: bool) -> Result<Bundle, Error> {
    let mut b = Bundle::default();
    let selector =
        ListParams::default().labels(&format!("{}={}", objects::LABEL_NAME, install::NAME));
    let Some(pods) = operator_pods(client, &selector, &mut b).await? else {
        return Ok(b);
    };
    if pods.is_empty() {
        b.notes.push(format!(
            "no operator pod (label {}={}): the CLI alone drives the clusters",
            objects::LABEL_NAME,
            install::NAME
        ));
    }
    b.yaml(
        "operator/pods.yaml",
        "the operator's pods",
        &pods.iter().map(to_value).collect::<Vec<_>>(),
    );
    let mut namespaces: BTreeSet<String> = pods.iter().filter_map(|p| p.namespace()).collect();
    namespaces.insert(install::NAMESPACE.into());
    for ns in &namespaces {
        let here: Vec<(String, i32)> = pods
            .iter()
            .filter(|p| p.namespace().as_deref() == Some(ns))
            .map(|p| (p.name_any(), restarts(p)))
            .collect();
        b.merge(
            logs(
                client,
                ns,
                &here,
                OPERATOR_CONTAINER,
                "operator/logs",
                since,
            )
            .await,
        );
    }
    if all {
        operator_objects(client, &namespaces, &selector, &mut b).await?;
    }
    Ok(b)
}

/// The operator's pods, in every namespace when that may be listed, else in its install
/// namespace; `None` when neither may be.
async fn operator_pods(
    client: &Client,
    selector: &ListParams,
    b: &mut Bundle,
) -> Result<Option<Vec<Pod>>, Error> {
    match Api::<Pod>::all(client.clone()).list(selector).await {
        Ok(l) => Ok(Some(l.items)),
        Err(e) => {
            b.fail(Error::kube("list", "Pod", "*", install::NAME, e))?;
            let home: Api<Pod> = Api::namespaced(client.clone(), install::NAMESPACE);
            match home.list(selector).await {
                Ok(l) => Ok(Some(l.items)),
                Err(e) => {
                    b.fail(Error::kube(
                        "list",
                        "Pod",
                        install::NAMESPACE,
                        install::NAME,
                        e,
                    ))?;
                    Ok(None)
                }
            }
        }
    }
}

/// The operator's Deployments and the events of its objects in `namespaces`, and the engine Leases.
async fn operator_objects(
    client: &Client,
    namespaces: &BTreeSet<String>,
    selector: &ListParams,
    b: &mut Bundle,
) -> Result<(), Error> {
    let mut deployments = Vec::new();
    let mut events = Vec::new();
    for ns in namespaces {
        let d: Api<Deployment> = Api::namespaced(client.clone(), ns);
        match d.list(selector).await {
            Ok(l) => deployments.extend(l.items.iter().map(to_value)),
            Err(e) => b.fail(Error::kube("list", "Deployment", ns, install::NAME, e))?,
        }
        let ev: Api<Event> = Api::namespaced(client.clone(), ns);
        match ev.list(&ListParams::default()).await {
            Ok(l) => events.extend(
                l.items
                    .iter()
                    .filter(|e| {
                        e.involved_object
                            .name
                            .as_deref()
                            .is_some_and(|n| n.starts_with(install::NAME))
                    })
                    .map(to_value),
            ),
            Err(e) => b.fail(Error::kube("list", "Event", ns, "*", e))?,
        }
    }
    b.yaml(
        "operator/deployments.yaml",
        "the operator's Deployments",
        &deployments,
    );
    b.yaml(
        "operator/events.yaml",
        "the events of the operator's objects",
        &events,
    );
    // Its leader Lease is in its own namespace (`keys::install::leader_lease`); one run from a
    // workstation keeps it in `install::NAMESPACE`, which `namespaces` always holds.
    let mut leases = Vec::new();
    for ns in namespaces {
        let api: Api<Lease> = Api::namespaced(client.clone(), ns);
        match api.list(&ListParams::default()).await {
            Ok(l) => leases.extend(l.items.iter().map(to_value)),
            Err(e) => b.fail(Error::kube("list", "Lease", ns, "*", e))?,
        }
    }
    b.yaml(
        "operator/leases.yaml",
        "the Leases of the operator's namespaces (leader election)",
        &leases,
    );
    Ok(())
}

/// Logs of `container` in each pod since `since` (kubelet timestamps on), and those of the
/// previous container when it restarted: `DIR/POD.log`, `DIR/POD.previous.log`.
async fn logs(
    client: &Client,
    ns: &str,
    pods: &[(String, i32)],
    container: &str,
    dir: &str,
    since: Duration,
) -> Bundle {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let params = |previous| LogParams {
        container: Some(container.into()),
        since_seconds: Some(since.as_secs().max(1) as i64),
        timestamps: true,
        previous,
        ..Default::default()
    };
    let wanted: Vec<(&str, bool)> = pods
        .iter()
        .flat_map(|(p, restarts)| {
            let previous = (*restarts > 0).then_some((p.as_str(), true));
            std::iter::once((p.as_str(), false)).chain(previous)
        })
        .collect();
    let each: Vec<LogParams> = wanted
        .iter()
        .map(|(_, previous)| params(*previous))
        .collect();
    let reads = futures::future::join_all(
        wanted
            .iter()
            .zip(&each)
            .map(|((p, _), params)| api.logs(p, params)),
    )
    .await;
    let mut b = Bundle::default();
    for ((pod, previous), r) in wanted.iter().zip(reads) {
        let (path, what) = if *previous {
            (
                format!("{dir}/{pod}.previous.log"),
                format!("log of {pod}'s previous {container} container"),
            )
        } else {
            (
                format!("{dir}/{pod}.log"),
                format!("log of {pod} ({container})"),
            )
        };
        match r {
            Ok(text) => b.text(&path, &what, text),
            Err(e) => b.failed.push(Failed {
                what: format!("read the {what}"),
                error: Error::kube("read the log of", "Pod", ns, pod, e).report(),
            }),
        }
    }
    b
}

#[cfg(test)]
mod tests;
