//! `kubectl etcd create NAME`: write a new EtcdCluster, then drive it until it converges.

use kube::api::Api;

use crate::api::{EtcdCluster, EtcdClusterSpec, EtcdTuning, KIND, StorageSpec};
use crate::cli::flags::{
    DomainFlag, Global, ImageFlags, SecurityFlags, ServiceFlag, TlsMode, WaitFlags,
};
use crate::cli::{Session, check_secrets, drive, output, usage};
use crate::error::Error;
use crate::model::{self, DEFAULT_VERSION};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Cluster name (lowercase letters, digits, '-').
    pub name: String,
    /// Voting members (1-9; odd numbers tolerate the most failures).
    #[arg(long, default_value_t = 3)]
    pub replicas: i64,
    /// etcd release (default: the newest patch of the newest minor the project tests; 3.4 is
    /// past etcd's end of support and warned about).
    #[arg(long, default_value = DEFAULT_VERSION)]
    pub version: String,
    /// Volume size per member (default 1Gi, at least 512Mi). The quota (`--quota-backend-bytes`) is etcd's
    /// 2 GiB, or less where the volume holds no more: 320 MiB on 1Gi, 832 MiB on 2Gi; 4480Mi
    /// holds etcd's default.
    #[arg(long, value_parser = crate::model::Quantity::parse)]
    pub storage: Option<crate::model::Quantity>,
    /// StorageClass of the member volumes (default: the cluster's default class).
    #[arg(long)]
    pub storage_class: Option<String>,
    /// Keep data in emptyDir volumes (lost when a pod is deleted): for tests only.
    #[arg(long, conflicts_with_all = ["storage", "storage_class"])]
    pub ephemeral: bool,
    #[command(flatten)]
    pub image: ImageFlags,
    /// Another etcd server flag, NAME=VALUE without the dashes (repeatable), e.g.
    /// `--etcd-option heartbeat-interval=250 --etcd-option election-timeout=2500`.
    #[arg(long = "etcd-option", value_name = "NAME=VALUE")]
    pub etcd_options: Vec<String>,
    /// Let --etcd-option set this flag though it is no tuning flag (repeatable): the operator
    /// needs the same `--allow-etcd-option` (docs/src/security.md), or it leaves the flag out.
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    pub allow_etcd_option: Vec<String>,
    /// PriorityClass of the member pods (e.g. system-cluster-critical).
    #[arg(long)]
    pub priority_class: Option<String>,
    #[command(flatten)]
    pub domain: DomainFlag,
    #[command(flatten)]
    pub service: ServiceFlag,
    #[command(flatten)]
    pub security: SecurityFlags,
    #[command(flatten)]
    pub wait: WaitFlags,
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let span = crate::phase!("create", cluster = %a.name);
    crate::phase::timed(span, create(g, a)).await
}

async fn create(g: &Global, a: Args) -> Result<(), Error> {
    let name = a.name;
    // Validate everything before anything is written.
    model::validate_name(&name).map_err(|e| usage(&name, e))?;
    let replicas = model::validate_replicas(a.replicas).map_err(|e| usage(&name, e))?;
    let version = model::validate_version(&a.version).map_err(|e| usage(&name, e))?;
    if let Some(w) = model::support_warning(version) {
        output::progress_line(&w);
    }
    // Without a TLS flag a new cluster gets managed TLS (the mode is written out, so the spec
    // shows it), and etcd's authentication by certificate from 3.5 on.
    a.security
        .check_auth()
        .map_err(|why| Error::Usage(format!("EtcdCluster {name}: {why}")))?;
    let tls = a.security.new_cluster_spec(version);
    let version = version.to_string();
    if tls.as_ref().and_then(|t| t.mode.as_deref()) == Some(TlsMode::None.as_str()) {
        output::progress_line(&format!(
            "warning: EtcdCluster {name} will serve plain http (--insecure): any pod that reaches \
             its members reads and writes every key; leave out --insecure and --tls none for \
             managed TLS (the default)"
        ));
    }
    let cluster_domain = a.domain.spec(&name)?;
    if let Some(size) = &a.storage {
        model::check_new_volume(size)
            .map_err(|why| Error::Usage(format!("EtcdCluster {name}: {why}")))?;
    }
    let mut options = std::collections::BTreeMap::new();
    for o in &a.etcd_options {
        let Some((k, v)) = o.split_once('=') else {
            return Err(Error::Usage(format!(
                "EtcdCluster {name}: --etcd-option {o:?} has no value; give NAME=VALUE, e.g. heartbeat-interval=250"
            )));
        };
        options.insert(k.to_string(), v.to_string());
    }
    let mut spec = EtcdClusterSpec {
        replicas: replicas as i32,
        version,
        image_pull_secrets: a.image.pull_secrets(),
        image_repository: a.image.image_repository,
        storage: StorageSpec {
            size: a.storage.map(|q| q.to_string()),
            storage_class_name: a.storage_class,
            ephemeral: a.ephemeral,
        },
        tls: tls.clone(),
        auth: a.security.auth(),
        etcd: EtcdTuning {
            options,
            ..Default::default()
        },
        priority_class_name: a.priority_class,
        client_service: a.service.spec(),
        cluster_domain,
        ..Default::default()
    };
    model::new_cluster_defaults(&mut spec);
    let s = Session::connect(g).await?;
    let mut cluster = EtcdCluster::new(&name, spec);
    cluster.metadata.namespace = Some(s.namespace.clone());
    let d = s.validate(&name, &cluster)?;
    model::check_options(&d, &model::OptionLeave::Tuning(a.allow_etcd_option))
        .map_err(|e| usage(&name, e))?;
    check_secrets(&s, &name, &d).await?;
    s.ensure_crd_current().await?;
    let api: Api<EtcdCluster> = s.clusters();
    if a.wait.dry_run {
        if api
            .get_opt(&name)
            .await
            .map_err(|e| Error::kube("get", KIND, &s.namespace, &name, e))?
            .is_some()
        {
            return Err(Error::AlreadyExists {
                namespace: s.namespace,
                name,
            });
        }
        cluster.metadata.uid = Some("00000000-dry-run".into());
        return drive::dry_run_create(
            &s,
            g,
            &cluster,
            &[format!("create EtcdCluster {}/{name}", s.namespace)],
        )
        .await;
    }
    let created = match api.create(&super::intent_post(), &cluster).await {
        Ok(c) => c,
        Err(kube::Error::Api(st)) if st.code == 409 => {
            return Err(Error::AlreadyExists {
                namespace: s.namespace,
                name,
            });
        }
        Err(e) => return Err(Error::kube("create", KIND, &s.namespace, &name, e)),
    };
    output::progress_line(&format!("created EtcdCluster {}/{name}", s.namespace));
    drive::drive(&s, g, created, &a.wait).await
}
