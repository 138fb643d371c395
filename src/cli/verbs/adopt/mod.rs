//! `kubectl etcd adopt NAME --from statefulset/S | --endpoints URLS`: survey a running etcd
//! cluster, refuse what cannot be taken over safely, print the plan, then write the intent
//! (`spec.adopt` of a new EtcdCluster) and drive the engine's adoption rules (`plan::adopt`)
//! until the cluster is the EtcdCluster's. Run again after a crash, it resumes; `--abort` puts
//! the old cluster back while no old member was retired.

mod certs;
mod survey;
mod tls;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch};

use crate::api::{AdoptSpec, EtcdCluster, EtcdClusterSpec, KIND, StorageSpec};
use crate::cli::flags::{DomainFlag, Global, SecurityFlags, WaitFlags};
use crate::cli::{Session, drive, output, usage};
use crate::engine::{self, Context, Dial, Mode};
use crate::error::Error;
use crate::model::{self, ClusterView, Desired, EtcdView, fmt_id};
use crate::objects;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Name of the EtcdCluster that takes the cluster over (not the old StatefulSet's name).
    pub name: String,
    /// The old members' StatefulSet: `statefulset/S` (or `S`).
    #[arg(long, conflicts_with = "endpoints")]
    pub from: Option<String>,
    /// The old members' client URLs, comma-separated, when they are not one StatefulSet's
    /// (nothing but etcd membership is changed for them).
    #[arg(long, value_delimiter = ',')]
    pub endpoints: Vec<String>,
    /// Secret (tls.crt, tls.key, ca.crt) with the client certificate the old members want.
    #[arg(long)]
    pub tls_secret: Option<String>,
    /// The new members' TLS (spec.tls) and the etcd root user (spec.auth, when etcd's
    /// authentication is on). With peer TLS on the old cluster, --tls-peer-secret is a peer
    /// certificate signed by the old cluster's CA for *.NAME.NAMESPACE.svc.cluster.local.
    #[command(flatten)]
    pub security: SecurityFlags,
    /// Point the old client Service at the new members before the last old member goes, so
    /// clients need no change. Without a value: the Service that selects the old pods (a
    /// ClusterIP one first).
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "SERVICE")]
    pub take_over_service: Option<String>,
    /// Put the old cluster back: remove the new members one at a time and delete the
    /// EtcdCluster (possible while no old member was retired).
    #[arg(long)]
    pub abort: bool,
    /// Adopt after the survey (without it: survey and plan only, nothing changed).
    #[arg(long)]
    pub yes: bool,
    /// Volume size per new member (default 1Gi).
    #[arg(long, value_parser = crate::model::Quantity::parse)]
    pub storage: Option<crate::model::Quantity>,
    /// StorageClass of the new members' volumes.
    #[arg(long)]
    pub storage_class: Option<String>,
    /// Image repository of the new members (tag v<version of the old members>).
    #[arg(long)]
    pub image_repository: Option<String>,
    /// --quota-backend-bytes of the new members (default etcd's 2 GiB): above the old
    /// members' database, which the new members receive whole.
    #[arg(long, value_name = "BYTES")]
    pub quota_backend_bytes: Option<i64>,
    #[command(flatten)]
    pub domain: DomainFlag,
    #[command(flatten)]
    pub wait: WaitFlags,
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    model::validate_name(&a.name).map_err(|e| usage(&a.name, e))?;
    a.domain.spec(&a.name)?;
    let s = Session::connect(g).await?;
    s.ensure_crd_current().await?;
    let existing = s
        .clusters()
        .get_opt(&a.name)
        .await
        .map_err(|e| Error::kube("get", KIND, &s.namespace, &a.name, e))?;
    match existing {
        Some(c) if c.spec.adopt.is_some() && a.abort => abort(&s, g, &a, c).await,
        Some(c) if c.spec.adopt.is_some() => {
            let phase = c
                .status
                .as_ref()
                .and_then(|st| st.adoption.as_ref())
                .map_or("not started", |st| st.phase.as_str())
                .to_string();
            output::progress_line(&format!(
                "resuming the adoption recorded in EtcdCluster {}/{} ({phase})",
                s.namespace, a.name
            ));
            if a.wait.dry_run {
                return drive::dry_run(&s, g, &c, &[]).await;
            }
            drive::drive(&s, g, c, &a.wait).await
        }
        Some(_) => Err(Error::AlreadyExists {
            namespace: s.namespace.clone(),
            name: a.name.clone(),
        }),
        None if a.abort => Err(Error::NotFound {
            namespace: s.namespace.clone(),
            name: a.name.clone(),
        }),
        None => adopt(&s, g, &a).await,
    }
}

/// `--abort`: the intent says abort; the engine removes the new members; then the EtcdCluster
/// (and its emptied StatefulSet, Services and config) is deleted.
async fn abort(s: &Session, g: &Global, a: &Args, c: EtcdCluster) -> Result<(), Error> {
    let name = &a.name;
    if a.wait.dry_run {
        let mut c = c;
        if let Some(adopt) = c.spec.adopt.as_mut() {
            adopt.abort = true;
        }
        return drive::dry_run(
            s,
            g,
            &c,
            &[format!(
                "set spec.adopt.abort of EtcdCluster {}/{name}: the new members are removed one \
                 at a time, then the EtcdCluster is deleted",
                s.namespace
            )],
        )
        .await;
    }
    s.clusters()
        .patch(
            name,
            &super::intent_patch(),
            &Patch::Merge(serde_json::json!({ "spec": { "adopt": { "abort": true } } })),
        )
        .await
        .map_err(|e| Error::kube("abort the adoption of", KIND, &s.namespace, name, e))?;
    output::progress_line(&format!(
        "EtcdCluster {}/{name}: aborting the adoption (the new members are removed one at a time)",
        s.namespace
    ));
    drive::converge(s, name, a.wait.timeout).await?;
    // Foreground: the EtcdCluster goes once its StatefulSet, Services and config are gone, so
    // that an adoption started again right after finds none of them.
    match s.clusters().delete(name, &DeleteParams::foreground()).await {
        Ok(_) => {}
        Err(kube::Error::Api(st)) if st.code == 404 => {}
        Err(e) => return Err(Error::kube("delete", KIND, &s.namespace, name, e)),
    }
    let started = std::time::Instant::now();
    while s
        .clusters()
        .get_opt(name)
        .await
        .map_err(|e| Error::kube("get", KIND, &s.namespace, name, e))?
        .is_some()
    {
        if started.elapsed() > a.wait.timeout {
            return Err(Error::Timeout {
                namespace: s.namespace.clone(),
                name: name.clone(),
                seconds: a.wait.timeout.as_secs(),
                last: "deleting the EtcdCluster after the abort".into(),
            });
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    output::progress_line(&format!(
        "aborted: the old cluster runs as before; EtcdCluster {}/{name} is deleted",
        s.namespace
    ));
    Ok(())
}

/// The old cluster as first seen: where its members are, who they are, what they run.
struct FirstContact {
    /// The old StatefulSet and its pods' labels.
    statefulset: Option<(String, BTreeMap<String, String>)>,
    endpoints: Vec<String>,
    cluster_id: u64,
    /// The version the first member that answered runs.
    version: Option<String>,
    /// Reasons to refuse found before any pass (names, members outside the StatefulSet).
    refusals: Vec<String>,
}

/// A `Desired` to dial the old members with before the EtcdCluster exists.
fn probe(s: &Session, a: &Args) -> Desired {
    let mut d = Desired::named(&a.name, &s.namespace);
    d.cluster_domain = a.domain.domain();
    d.auth_secret = a.security.auth_secret.clone();
    d.adopt = Some(model::Adoption {
        statefulset: None,
        endpoints: Vec::new(),
        cluster_id: 0,
        tls_secret: a.tls_secret.clone(),
        take_over_service: None,
        abort: false,
    });
    d
}

/// The old StatefulSet `S` of `--from statefulset/S`: its name, its pods' labels, and a client
/// URL of each of its pods (through the port named `client`, else 2379).
async fn old_statefulset(
    s: &Session,
    a: &Args,
    from: &str,
) -> Result<(String, BTreeMap<String, String>, Vec<String>), Error> {
    let name = from
        .strip_prefix("statefulset/")
        .or_else(|| from.strip_prefix("statefulsets/"))
        .or_else(|| from.strip_prefix("sts/"))
        .unwrap_or(from)
        .to_string();
    let api: Api<StatefulSet> = Api::namespaced(s.client.clone(), &s.namespace);
    let sts = api
        .get_opt(&name)
        .await
        .map_err(|e| Error::kube("get", "StatefulSet", &s.namespace, &name, e))?
        .ok_or_else(|| {
            Error::Usage(format!(
                "StatefulSet {}/{name} (--from) does not exist; list them with `kubectl -n {} get statefulsets`",
                s.namespace, s.namespace
            ))
        })?;
    let spec = sts.spec.unwrap_or_default();
    let labels = spec
        .template
        .metadata
        .and_then(|m| m.labels)
        .unwrap_or_default();
    let port = spec
        .template
        .spec
        .iter()
        .flat_map(|p| &p.containers)
        .flat_map(|c| c.ports.iter().flatten())
        .find(|p| p.name.as_deref() == Some("client"))
        .map_or(objects::CLIENT_PORT as i32, |p| p.container_port);
    let scheme = if a.tls_secret.is_some() {
        "https"
    } else {
        "http"
    };
    // A pod's stable name under its StatefulSet's Service: what members advertise, and what
    // their serving certificates cover (the first label names the pod to port-forward to).
    let domain = match spec.service_name.as_deref().filter(|s| !s.is_empty()) {
        Some(svc) => format!(".{svc}.{}.svc.{}", s.namespace, a.domain.domain()),
        None => String::new(),
    };
    let urls = (0..spec.replicas.unwrap_or(0).max(0))
        .map(|k| format!("{scheme}://{name}-{k}{domain}:{port}"))
        .collect();
    Ok((name, labels, urls))
}

/// Dials the old members until one answers with the member list.
async fn first_contact(s: &Session, a: &Args, ctx: &Context) -> Result<FirstContact, Error> {
    let d = probe(s, a);
    let (statefulset, tries) = match &a.from {
        Some(from) => {
            let (name, labels, urls) = old_statefulset(s, a, from).await?;
            (Some((name, labels)), urls)
        }
        None if a.endpoints.is_empty() => {
            return Err(Error::Usage(format!(
                "EtcdCluster {}: name the cluster to adopt with --from statefulset/S or --endpoints URLS",
                a.name
            )));
        }
        None => (None, a.endpoints.clone()),
    };
    let mut errors = Vec::new();
    for url in &tries {
        let mut c = match ctx.connect_url(&d, url).await {
            Ok(c) => c,
            Err(e) => {
                errors.push(format!("{url}: {e}"));
                continue;
            }
        };
        let list = match c.member_list().await {
            Ok(l) => l,
            Err(e) => {
                errors.push(format!("{url}: {e}"));
                continue;
            }
        };
        let version = c.status().await.ok().map(|s| s.version);
        let mut refusals = Vec::new();
        let mut endpoints = Vec::new();
        for m in &list.members {
            let Some(url) = m.client_urls.first() else {
                refusals.push(format!(
                    "member {} was added but never started",
                    fmt_id(m.id)
                ));
                continue;
            };
            endpoints.push(url.clone());
            if let Some((sts, _)) = &statefulset {
                let of_sts = |n: &str| {
                    n.strip_prefix(sts.as_str())
                        .and_then(|r| r.strip_prefix('-'))
                        .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
                };
                if !of_sts(&m.name) {
                    refusals.push(format!(
                        "member {} ({url}) is not a pod of StatefulSet {sts} by its name: adopt \
                         it with --endpoints instead",
                        m.name
                    ));
                }
            }
            if ctx.dial == Dial::PortForward && crate::reach::pod_of_url(url).is_none() {
                refusals.push(format!(
                    "member {} advertises {url}, which names no pod to reach it through",
                    m.name
                ));
            }
        }
        if a.endpoints.is_empty() {
            endpoints.sort();
        } else {
            endpoints = a.endpoints.clone();
        }
        if !s.allow_foreign_adopt_endpoints {
            // What the engine would refuse from the URL alone (its pass checks the Services
            // and pod IPs too), said before anything is written.
            refusals.extend(model::foreign_endpoints(
                &endpoints,
                &s.namespace,
                &a.domain.domain(),
            ));
        }
        return Ok(FirstContact {
            statefulset,
            endpoints,
            cluster_id: list.cluster_id,
            version,
            refusals,
        });
    }
    Err(Error::AdoptRefused {
        namespace: s.namespace.clone(),
        name: a.name.clone(),
        what: tries.join(", "),
        reasons: vec![format!("no member answered: {}", errors.join("; "))],
    })
}

/// Objects of the new EtcdCluster that must not exist yet, and old pods its selector would
/// count as its own.
async fn name_conflicts(
    s: &Session,
    a: &Args,
    old: Option<&(String, BTreeMap<String, String>)>,
) -> Result<Vec<String>, Error> {
    let ns = &s.namespace;
    let name = &a.name;
    let mut why = Vec::new();
    if let Some((sts, labels)) = old {
        if sts == name {
            why.push(format!(
                "the EtcdCluster would take the old StatefulSet's name {sts}: pick another name"
            ));
        }
        let ours = objects::selector_labels(name);
        if ours.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            why.push(format!(
                "the old pods carry the labels the new members are selected by ({}): pick \
                 another name",
                objects::selector_string(name)
            ));
        }
    }
    let sts_api: Api<StatefulSet> = Api::namespaced(s.client.clone(), ns);
    let svc_api: Api<Service> = Api::namespaced(s.client.clone(), ns);
    let cm_api: Api<ConfigMap> = Api::namespaced(s.client.clone(), ns);
    let taken = |kind: &str, n: &str| format!("{kind} {ns}/{n} exists already: pick another name");
    let sts_name = objects::statefulset_name(name);
    if sts_api
        .get_opt(&sts_name)
        .await
        .map_err(|e| Error::kube("get", "StatefulSet", ns, &sts_name, e))?
        .is_some()
        && old.is_none_or(|(o, _)| *o != sts_name)
    {
        why.push(taken("StatefulSet", &sts_name));
    }
    for svc in [
        objects::peer_service_name(name),
        objects::client_service_name(name),
    ] {
        if svc_api
            .get_opt(&svc)
            .await
            .map_err(|e| Error::kube("get", "Service", ns, &svc, e))?
            .is_some()
        {
            why.push(taken("Service", &svc));
        }
    }
    let cm = objects::config_name(name);
    if cm_api
        .get_opt(&cm)
        .await
        .map_err(|e| Error::kube("get", "ConfigMap", ns, &cm, e))?
        .is_some()
    {
        why.push(taken("ConfigMap", &cm));
    }
    Ok(why)
}

/// The Service `--take-over-service` names, or (without a value) the one selecting the old
/// pods, a ClusterIP one before a headless one.
async fn service_to_take_over(
    s: &Session,
    a: &Args,
    old: Option<&(String, BTreeMap<String, String>)>,
) -> Result<Result<Option<String>, String>, Error> {
    let Some(wanted) = &a.take_over_service else {
        return Ok(Ok(None));
    };
    let ns = &s.namespace;
    let api: Api<Service> = Api::namespaced(s.client.clone(), ns);
    if !wanted.is_empty() {
        let found = api
            .get_opt(wanted)
            .await
            .map_err(|e| Error::kube("get", "Service", ns, wanted, e))?;
        return Ok(match found {
            Some(_) => Ok(Some(wanted.clone())),
            None => Err(format!(
                "Service {ns}/{wanted} (--take-over-service) does not exist"
            )),
        });
    }
    let Some((sts, labels)) = old else {
        return Ok(Err(
            "--take-over-service without a name needs --from statefulset/S (or name the Service)"
                .into(),
        ));
    };
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|e| Error::kube("list", "Service", ns, "", e))?;
    let mut selecting: Vec<(bool, String)> = list
        .items
        .into_iter()
        .filter_map(|svc| {
            let name = svc.metadata.name?;
            let spec = svc.spec?;
            let sel = spec.selector.filter(|s| !s.is_empty())?;
            let headless = spec.cluster_ip.as_deref() == Some("None");
            sel.iter()
                .all(|(k, v)| labels.get(k) == Some(v))
                .then_some((headless, name))
        })
        .collect();
    selecting.sort();
    Ok(match selecting.first() {
        Some((_, n)) => Ok(Some(n.clone())),
        None => Err(format!(
            "no Service of {ns} selects the pods of StatefulSet {sts} (--take-over-service)"
        )),
    })
}

/// The EtcdCluster that adopts what `first` found (before the survey: its uid marks it as not
/// created yet).
fn adopting_cluster(
    s: &Session,
    a: &Args,
    first: &FirstContact,
    service: Option<String>,
) -> EtcdCluster {
    let mut cluster = EtcdCluster::new(
        &a.name,
        EtcdClusterSpec {
            replicas: first.endpoints.len() as i32,
            // Refused below if unsupported (the survey says why); validated meanwhile as the
            // default.
            version: first
                .version
                .clone()
                .filter(|v| model::validate_version(v).is_ok())
                .unwrap_or_else(|| model::DEFAULT_VERSION.into()),
            image_repository: a.image_repository.clone(),
            storage: StorageSpec {
                size: a.storage.as_ref().map(ToString::to_string),
                storage_class_name: a.storage_class.clone(),
                ephemeral: false,
            },
            auth: a.security.auth(),
            tls: a.security.spec(None),
            etcd: crate::api::EtcdTuning {
                quota_backend_bytes: a.quota_backend_bytes,
                ..Default::default()
            },
            cluster_domain: a.domain.spec(&a.name).ok().flatten(),
            adopt: Some(AdoptSpec {
                stateful_set: first.statefulset.as_ref().map(|(n, _)| n.clone()),
                endpoints: first.endpoints.clone(),
                cluster_id: fmt_id(first.cluster_id),
                tls_secret: a.tls_secret.clone(),
                take_over_service: service,
                abort: false,
            }),
            ..Default::default()
        },
    );
    model::new_cluster_defaults(&mut cluster.spec);
    cluster.metadata.namespace = Some(s.namespace.clone());
    cluster.metadata.uid = Some("00000000-adopt-survey".into());
    cluster
}

/// A survey and plan of adopting the running cluster, then (with `--yes`) the adoption.
async fn adopt(s: &Session, g: &Global, a: &Args) -> Result<(), Error> {
    let ctx = s.context();
    let first = first_contact(s, a, &ctx).await?;
    let what = match &first.statefulset {
        Some((sts, _)) => format!("StatefulSet {}/{sts}", s.namespace),
        None => first.endpoints.join(", "),
    };
    let mut refusals = first.refusals.clone();
    refusals.extend(name_conflicts(s, a, first.statefulset.as_ref()).await?);
    let service = match service_to_take_over(s, a, first.statefulset.as_ref()).await? {
        Ok(svc) => svc,
        Err(why) => {
            refusals.push(why);
            None
        }
    };
    let mut cluster = adopting_cluster(s, a, &first, service);
    let desired = s.validate(&a.name, &cluster)?;
    // The survey is the engine's own observation of the old members (a dry-run pass).
    let pass = engine::reconcile_once(&ctx, &cluster, Mode::DryRun).await?;
    refusals.extend(survey::refusals(
        &pass.observed,
        first.cluster_id,
        a.security.auth_secret.is_some(),
    ));
    let c = match &pass.observed.etcd {
        EtcdView::Reached(c) => Some(c),
        _ => None,
    };
    if let Some(c) = c {
        refusals.extend(survey::capacity_refusals(c, &desired));
        let service = cluster
            .spec
            .adopt
            .as_ref()
            .and_then(|a| a.take_over_service.clone());
        refusals.extend(tls::tls_refusals(s, a, c, &first.endpoints, service.as_deref()).await?);
    }
    let version = c.and_then(survey::common_version);
    for line in c.map(|c| survey_lines(c, &what)).unwrap_or_default() {
        output::progress_line(&line);
    }
    if !refusals.is_empty() {
        return Err(Error::AdoptRefused {
            namespace: s.namespace.clone(),
            name: a.name.clone(),
            what,
            reasons: refusals,
        });
    }
    if let Some(v) = version {
        cluster.spec.version = v.to_string();
    }
    let d = s.validate(&a.name, &cluster)?;
    let mut lines = plan_lines(&d, c, &what);
    lines.push(format!("next engine step: {}", pass.step));
    if a.wait.dry_run || !a.yes {
        if !a.wait.dry_run {
            output::progress_line("nothing changed: review the plan, then rerun with --yes");
        }
        output::print_dry_run(g.output, &lines, &[], Some(&pass.step))?;
        return if a.wait.dry_run {
            Ok(())
        } else {
            Err(Error::Usage(format!(
                "adopting {what} moves its members into EtcdCluster {}/{}: pass --yes to proceed \
                 (or --dry-run to only look)",
                s.namespace, a.name
            )))
        };
    }
    cluster.metadata.uid = None;
    let created = match s.clusters().create(&super::intent_post(), &cluster).await {
        Ok(c) => c,
        Err(kube::Error::Api(st)) if st.code == 409 => {
            return Err(Error::AlreadyExists {
                namespace: s.namespace.clone(),
                name: a.name.clone(),
            });
        }
        Err(e) => return Err(Error::kube("create", KIND, &s.namespace, &a.name, e)),
    };
    output::progress_line(&format!(
        "created EtcdCluster {}/{} to adopt {what}; rerun this command to resume if it stops",
        s.namespace, a.name
    ));
    drive::drive(s, g, created, &a.wait).await
}

/// What the survey found, for people (stderr).
fn survey_lines(c: &ClusterView, what: &str) -> Vec<String> {
    let db = c
        .members
        .iter()
        .filter_map(|m| m.status.as_ref().map(|s| s.db_size))
        .max()
        .unwrap_or(0);
    let mut lines = vec![format!(
        "survey of {what}: cluster {}, {} members, largest db {}, authentication {}, peer TLS {}",
        fmt_id(c.cluster_id),
        c.members.len(),
        output::human_bytes(db),
        if c.auth_enabled { "on" } else { "off" },
        if c.members.iter().any(|m| m.peer_url.starts_with("https")) {
            "on"
        } else {
            "off"
        },
    )];
    lines.extend(c.members.iter().map(|m| survey::member_line(c, m)));
    lines
}

/// The plan, one sentence a step (stdout, as `--dry-run` prints).
fn plan_lines(d: &Desired, c: Option<&ClusterView>, what: &str) -> Vec<String> {
    let a = d.adopt.as_ref();
    let sts = a.and_then(|a| a.statefulset.clone());
    let mut old: Vec<String> = c
        .map(|c| c.members.iter().map(|m| m.name.clone()).collect())
        .unwrap_or_default();
    old.sort_by_key(|n| std::cmp::Reverse((a.and_then(|a| a.old_ordinal(n)), n.clone())));
    let new: Vec<String> = (0..d.replicas)
        .map(|k| objects::pod_name(&d.name, k))
        .collect();
    let mut lines = vec![
        format!(
            "create EtcdCluster {}/{} with spec.adopt: {} members of etcd {} ({})",
            d.namespace, d.name, d.replicas, d.version, d.image
        ),
        format!(
            "add {} one at a time as learners of the running cluster (initial-cluster-state \
             existing, the old members' peer URLs listed), each promoted once caught up: same \
             cluster id, same revisions",
            new.join(", ")
        ),
        format!(
            "move leadership to {}",
            new.first().cloned().unwrap_or_default()
        ),
    ];
    if let Some(svc) = a.and_then(|a| a.take_over_service.as_ref()) {
        lines.push(format!(
            "point Service {svc} at the new members before the last old member goes (its old \
             selector kept in annotation {})",
            crate::keys::ANNOTATION_ADOPTED_SELECTOR
        ));
    }
    lines.push(match &sts {
        Some(sts) => format!(
            "remove the old members one at a time, the highest ordinal first ({}), each followed \
             by scaling StatefulSet {sts} down by one; it ends at 0 replicas, kept with its \
             volumes (delete them yourself once satisfied)",
            old.join(", ")
        ),
        None => format!(
            "remove the old members one at a time ({}) from etcd; stop their processes ({what}) \
             yourself afterwards",
            old.join(", ")
        ),
    });
    lines.push(
        "a crash of this command at any step resumes when it is run again (or `kubectl etcd \
         operate` carries it on); `--abort` puts the old cluster back while no old member was \
         retired"
            .into(),
    );
    lines
}
