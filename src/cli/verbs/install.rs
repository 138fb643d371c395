//! `kubectl etcd install [--operator]`: apply the CRD (and the operator's manifests).

use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::Scope;
use kube::{Client, ResourceExt};

use crate::cli::flags::Global;
use crate::cli::{Session, output};
use crate::engine;
use crate::error::Error;
use crate::objects::install::DEFAULT_IMAGE;
use crate::objects::{self, install};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Also install the operator: namespace, service account, RBAC, Deployment.
    #[arg(long)]
    pub operator: bool,
    /// Operator image.
    #[arg(long, default_value = DEFAULT_IMAGE)]
    pub image: String,
    /// Secret (type kubernetes.io/dockerconfigjson, in the operator's namespace) the kubelet
    /// pulls the operator's image with, for a registry that wants credentials (repeatable). It
    /// goes into the Deployment's pod; the operator's ServiceAccount may carry more.
    /// Example: --image-pull-secret regcred
    #[arg(long = "image-pull-secret", value_name = "SECRET", value_parser = crate::cli::flags::parse_secret_name, requires = "operator")]
    pub image_pull_secrets: Vec<String>,
    /// With --operator: the operator watches only these namespaces (comma-separated or
    /// repeated), with a Role and RoleBinding in each instead of a ClusterRole over every
    /// namespace; only the read of Nodes and StorageClasses stays cluster-wide (a Role cannot
    /// grant cluster-scoped objects). Default: every namespace.
    /// Example: kubectl etcd install --operator --watch-namespace team-a,team-b
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "NAMESPACE",
        requires = "operator"
    )]
    pub watch_namespace: Vec<String>,
    /// With --operator or --monitoring: the operator's namespace: its ServiceAccount, Deployment and binding go there (created,
    /// labelled to warn and audit against the `restricted` Pod Security Standard), and the
    /// NetworkPolicies it writes admit its pods from there. The engine Leases stay in
    /// kubectl-etcd-system, which is created too.
    /// Example: --operator-namespace platform-etcd
    #[arg(long, default_value = install::NAMESPACE, value_name = "NAMESPACE", value_parser = crate::cli::flags::parse_namespace)]
    pub operator_namespace: String,
    /// Also the monitoring objects: PodMonitors of the members and the operator, the
    /// PrometheusRule with the alerts, the Grafana dashboard ConfigMap (needs
    /// prometheus-operator's CRDs in the cluster).
    #[arg(long)]
    pub monitoring: bool,
    #[command(flatten)]
    pub allow: crate::cli::flags::AllowArgs,
    /// Print the manifests instead of applying them.
    #[arg(long)]
    pub print: bool,
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let ns = &a.operator_namespace;
    let mut manifests = if a.operator {
        install::manifests_allowing(
            &a.image,
            ns,
            &a.watch_namespace,
            &a.image_pull_secrets,
            &a.allow.allowed(),
        )
    } else {
        vec![]
    };
    if a.monitoring {
        if !a.operator {
            manifests.push(install::namespace_object(ns));
        }
        manifests.extend(objects::monitoring::manifests(ns, objects::install::NAME));
    }
    if a.print {
        let crds: Vec<serde_json::Value> = crate::api::crds()
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()
            .map_err(|e| Error::Serialize(Box::new(e)))?;
        let text: Vec<String> = crds.iter().chain(&manifests).map(output::yaml).collect();
        return output::print_raw(&text.join("---\n"));
    }
    let s = Session::connect(g).await?;
    // Before anything is written: a Secret the kubelet would not pull with is refused; one that
    // does not exist yet is named once the namespace is there to make it in.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(s.client.clone(), ns);
    let mut missing = Vec::new();
    for secret in &a.image_pull_secrets {
        match crate::cli::pull_secret(&secrets, ns, secret).await? {
            crate::cli::PullSecret::Usable => {}
            crate::cli::PullSecret::Missing(m) => missing.push(m),
            crate::cli::PullSecret::WrongType(m) => {
                return Err(Error::Usage(format!("--image-pull-secret {secret}: {m}")));
            }
        }
    }
    engine::apply_crd(&s.client).await?;
    for crd in crate::api::crds() {
        output::progress_line(&format!(
            "applied CustomResourceDefinition {}",
            crd.name_any()
        ));
    }
    for doc in &manifests {
        apply_dynamic(&s.client, doc).await?;
    }
    for m in missing {
        output::progress_line(&format!(
            "warning: the operator's image cannot be pulled with it until it exists: {m}"
        ));
    }
    Ok(())
}

/// Server-side apply of one manifest given as JSON (install manifests).
async fn apply_dynamic(client: &Client, doc: &serde_json::Value) -> Result<(), Error> {
    let obj: DynamicObject =
        serde_json::from_value(doc.clone()).map_err(|e| Error::Serialize(Box::new(e)))?;
    let tm = obj.types.clone().unwrap_or_default();
    let gvk =
        GroupVersionKind::try_from(&tm).map_err(|e| Error::Usage(format!("bad manifest: {e}")))?;
    let (ar, caps) = match kube::discovery::pinned_kind(client, &gvk).await {
        Ok(found) => found,
        // PodMonitor and PrometheusRule are prometheus-operator's kinds.
        Err(_) if gvk.group == "monitoring.coreos.com" => {
            return Err(Error::Usage(format!(
                "the cluster does not serve {} ({}/{}): install prometheus-operator (or kube-prometheus-stack) first, or print the objects with `kubectl etcd manifests --monitoring` and apply what your Prometheus understands",
                gvk.kind, gvk.group, gvk.version
            )));
        }
        Err(e) => return Err(Error::kube("discover", "APIResource", "", &gvk.kind, e)),
    };
    let name = obj.name_any();
    let api: Api<DynamicObject> = match (caps.scope, obj.metadata.namespace.as_deref()) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &ar),
        _ => Api::all_with(client.clone(), &ar),
    };
    api.patch(
        &name,
        &PatchParams::apply(objects::FIELD_MANAGER).force(),
        &Patch::Apply(&obj),
    )
    .await
    .map_err(|e| {
        Error::kube(
            "apply",
            "manifest",
            obj.metadata.namespace.as_deref().unwrap_or(""),
            &name,
            e,
        )
    })?;
    output::progress_line(&format!("applied {} {}", gvk.kind, name));
    Ok(())
}
