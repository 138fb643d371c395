//! An adopted cluster's old objects, and what must be known before its old members are dialed.

use super::*;

/// The old cluster's StatefulSet and the Service to take over, while `spec.adopt` is set, and
/// (`reach_old`: the old members are still to be dialed) whether they may be dialed at all.
pub(super) async fn observe_adoption(
    ctx: &Context,
    d: &Desired,
    a: &model::Adoption,
    reach_old: bool,
) -> Result<model::AdoptionView, Error> {
    let ns = d.namespace.as_str();
    let mut view = model::AdoptionView::default();
    if reach_old {
        let c = confinement(ctx, d, a).await?;
        view.refused = model::refusal(a, ns, &d.cluster_domain, &c);
    }
    if let Some(name) = &a.statefulset {
        let api: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), ns);
        view.old_replicas = get_opt(&api, "StatefulSet", ns, name)
            .await?
            .map(|s| s.spec.and_then(|s| s.replicas).unwrap_or(0).max(0) as u32);
    }
    if let Some(name) = &a.take_over_service {
        let api: Api<Service> = Api::namespaced(ctx.client.clone(), ns);
        let svc = get_opt(&api, "Service", ns, name).await?;
        view.service_found = svc.is_some();
        view.service_taken = svc
            .and_then(|s| s.spec?.selector)
            .is_some_and(|sel| sel == objects::member_labels(&d.name));
    }
    Ok(view)
}

/// What `model::refusal` needs to know of the namespace before an old member is dialed: the
/// Services the endpoints name, the pods' IPs when an endpoint is an IP, and the EtcdClusters
/// that report the cluster id to adopt.
async fn confinement(
    ctx: &Context,
    d: &Desired,
    a: &model::Adoption,
) -> Result<model::Confinement, Error> {
    let ns = d.namespace.as_str();
    let mut c = model::Confinement {
        foreign_allowed: ctx.allow_foreign_adopt_endpoints,
        credentials: d.auth_secret.is_some(),
        ..Default::default()
    };
    let svc_api: Api<Service> = Api::namespaced(ctx.client.clone(), ns);
    for name in model::services_named(a, ns, &d.cluster_domain) {
        if let Some(s) = get_opt(&svc_api, "Service", ns, &name).await? {
            c.services.insert(name, objects::routes_to_own_pods(&s));
        }
    }
    if model::names_an_ip(a) {
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
        let list = pods
            .list(&ListParams::default())
            .await
            .map_err(|e| Error::kube("list", "Pod", ns, &d.name, e))?;
        c.pod_ips = list.items.iter().flat_map(objects::own_pod_ips).collect();
    }
    c.claimed_by = clusters_reporting(ctx, d, a.cluster_id).await?;
    Ok(c)
}

/// The other EtcdClusters (`namespace/name`) whose status reports cluster id `id`: of every
/// namespace, or of the cluster's own where the driver may not list them all (a namespaced
/// operator, a tenant's CLI), where the endpoints are confined to unless the driver allows
/// foreign ones.
async fn clusters_reporting(ctx: &Context, d: &Desired, id: u64) -> Result<Vec<String>, Error> {
    use crate::api::{EtcdCluster, KIND};
    let lp = ListParams::default();
    let ns = d.namespace.as_str();
    let all = match Api::<EtcdCluster>::all(ctx.client.clone()).list(&lp).await {
        Ok(l) => l.items,
        Err(e) => {
            tracing::debug!(cluster = %d.name, namespace = %ns, error = %e,
                "EtcdClusters of other namespaces not listed; the cluster id is checked against this one's");
            Api::<EtcdCluster>::namespaced(ctx.client.clone(), ns)
                .list(&lp)
                .await
                .map_err(|e| Error::kube("list", KIND, ns, &d.name, e))?
                .items
        }
    };
    let id = model::fmt_id(id);
    Ok(all
        .iter()
        .filter(|c| {
            c.status
                .as_ref()
                .and_then(|s| s.cluster_id.as_deref())
                .is_some_and(|i| i.eq_ignore_ascii_case(&id))
        })
        .map(|c| {
            format!(
                "{}/{}",
                c.metadata.namespace.as_deref().unwrap_or_default(),
                c.metadata.name.as_deref().unwrap_or_default()
            )
        })
        .filter(|other| *other != format!("{ns}/{}", d.name))
        .collect())
}
