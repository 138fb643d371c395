//! The StatefulSet and the member volumes as the planner reads them: the claims that are the
//! cluster's, the workload's view, the volumes' views and their StorageClass.

use super::*;

/// The storage a StatefulSet's volume claim template asks for (`Ephemeral` without one).
fn workload_storage(s: &StatefulSet) -> Storage {
    let claim = s
        .spec
        .as_ref()
        .and_then(|s| s.volume_claim_templates.as_ref())
        .and_then(|t| {
            t.iter()
                .find(|c| c.metadata.name.as_deref() == Some(objects::DATA_VOLUME))
        });
    match claim.and_then(|c| c.spec.as_ref()) {
        None => Storage::Ephemeral,
        Some(spec) => Storage::Volume {
            size: spec
                .resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get("storage"))
                .and_then(|q| model::Quantity::read(&q.0))
                .unwrap_or_else(model::Quantity::unset),
            class: spec.storage_class_name.clone().filter(|c| !c.is_empty()),
        },
    }
}

/// The namespace's claims at the cluster's volume names: the members' (their labels say so),
/// and the others, not the cluster's (a StatefulSet would start a member on one of them).
pub(super) fn member_claims(
    d: &Desired,
    claims: Vec<PersistentVolumeClaim>,
) -> (Vec<PersistentVolumeClaim>, Vec<model::NotOwned>) {
    let mut foreign = Vec::new();
    let ours = claims
        .into_iter()
        .filter(|c| {
            let at_our_name = c
                .metadata
                .name
                .as_deref()
                .is_some_and(|n| objects::ordinal_of_volume(&d.name, n).is_some());
            if !at_our_name {
                return false;
            }
            let n = objects::not_owned_by_labels(d, "PersistentVolumeClaim", &c.metadata);
            let mine = n.is_none();
            foreign.extend(n);
            mine
        })
        .collect();
    (ours, foreign)
}

/// The StatefulSet as the planner reads it, with the smallest capacity of the member claims.
pub(super) fn workload_view(
    d: &Desired,
    s: &StatefulSet,
    pvcs: &[PersistentVolumeClaim],
) -> WorkloadView {
    WorkloadView {
        replicas: s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0).max(0) as u32,
        template_hash: s
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(objects::ANNOTATION_TEMPLATE_HASH).cloned()),
        update_revision: s.status.as_ref().and_then(|s| s.update_revision.clone()),
        storage: Some(workload_storage(s)),
        tls: s
            .spec
            .as_ref()
            .map(|spec| objects::template_tls(&spec.template)),
        tls_switch: s
            .spec
            .as_ref()
            .and_then(|spec| spec.template.metadata.as_ref()?.annotations.as_ref())
            .and_then(|a| a.get(objects::ANNOTATION_TLS_SWITCH).cloned()),
        cluster_domain: s
            .spec
            .as_ref()
            .and_then(|spec| objects::template_domain(&spec.template)),
        terminating: s.metadata.deletion_timestamp.is_some(),
        controller_behind: controller_behind(s),
        cannot_create: None,
        volume_capacity: model::smallest_capacity(&volume_views(d, pvcs)).cloned(),
        member_selector: s
            .spec
            .as_ref()
            .and_then(|spec| spec.selector.match_labels.as_ref())
            .and_then(|l| l.get(objects::LABEL_MANAGED_BY))
            .is_some_and(|v| v == objects::FIELD_MANAGER),
    }
}

/// Whether the StatefulSet controller has not yet taken in the StatefulSet's latest spec: until
/// it has, its update revision names an older template (a rollout read from it would find
/// nothing to restart).
fn controller_behind(s: &StatefulSet) -> bool {
    let observed = s.status.as_ref().and_then(|st| st.observed_generation);
    match (s.metadata.generation, observed) {
        (Some(generation), Some(observed)) => observed < generation,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

pub(super) fn volume_views(
    d: &Desired,
    pvcs: &[PersistentVolumeClaim],
) -> BTreeMap<u32, VolumeView> {
    pvcs.iter()
        .filter_map(|v| {
            let name = v.metadata.name.clone()?;
            let ord = objects::ordinal_of_volume(&d.name, &name)?;
            Some((
                ord,
                VolumeView {
                    name,
                    terminating: v.metadata.deletion_timestamp.is_some(),
                    restore: v
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(objects::ANNOTATION_RESTORE))
                        .and_then(|m| RestoreMark::parse(m)),
                    class: v.spec.as_ref().and_then(|s| s.storage_class_name.clone()),
                    size: v
                        .spec
                        .as_ref()
                        .and_then(|s| s.resources.as_ref()?.requests.as_ref()?.get("storage"))
                        .and_then(|q| model::Quantity::read(&q.0)),
                    capacity: v
                        .status
                        .as_ref()
                        .and_then(|s| s.capacity.as_ref()?.get("storage"))
                        .and_then(|q| model::Quantity::read(&q.0)),
                    grow_asked: v
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(objects::ANNOTATION_GROW_ASKED))
                        .and_then(|t| t.parse().ok()),
                },
            ))
        })
        .collect()
}

/// The StorageClass new member volumes get: the spec's, else the cluster's default. `None` when
/// it cannot be read (a namespaced user without access to StorageClasses): the planner then
/// takes the path that needs no expansion.
pub(super) async fn storage_class(ctx: &Context, d: &Desired) -> Option<StorageClassView> {
    use k8s_openapi::api::storage::v1::StorageClass;
    const DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
    let api: Api<StorageClass> = Api::all(ctx.client.clone());
    let read = match &d.storage {
        Storage::Volume {
            class: Some(name), ..
        } => api.get_opt(name).await.map(|c| c.into_iter().collect()),
        Storage::Volume { class: None, .. } => api.list(&ListParams::default()).await.map(|l| {
            l.items
                .into_iter()
                .filter(|c| {
                    c.metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(DEFAULT_CLASS))
                        .is_some_and(|v| v == "true")
                })
                .collect()
        }),
        Storage::Ephemeral => return None,
    };
    let classes: Vec<StorageClass> = read
        .map_err(|e| tracing::debug!(error = %e, "storage class not read"))
        .ok()?;
    let class = classes.into_iter().next()?;
    Some(StorageClassView {
        name: class.metadata.name.unwrap_or_default(),
        expandable: class.allow_volume_expansion == Some(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_at_a_members_name_without_its_labels_is_not_the_clusters_and_others_are_ignored() {
        use k8s_openapi::api::core::v1::PersistentVolumeClaim;
        let d = crate::fixtures::cluster("demo").desired();
        let claim = |name: &str, managed_by: Option<&str>| {
            let mut labels = crate::objects::selector_labels("demo");
            if let Some(m) = managed_by {
                labels.insert(crate::keys::LABEL_MANAGED_BY.into(), m.into());
            }
            let mut c = PersistentVolumeClaim::default();
            c.metadata.name = Some(name.into());
            c.metadata.labels = Some(labels);
            c
        };
        let (ours, foreign) = member_claims(
            &d,
            vec![
                claim("data-demo-0", Some("kubectl-etcd")),
                // A plain etcd's claim at a member's name: the StatefulSet would mount it.
                claim("data-demo-1", None),
                // A Helm release `demo` of bitnami/etcd: its claims are named after its set.
                claim("data-demo-etcd-0", Some("Helm")),
                claim("data-other-0", Some("kubectl-etcd")),
            ],
        );
        let names: Vec<_> = ours
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        assert_eq!(names, ["data-demo-0"]);
        assert_eq!(foreign.len(), 1);
        assert_eq!(
            (foreign[0].kind.as_str(), foreign[0].name.as_str()),
            ("PersistentVolumeClaim", "data-demo-1")
        );
    }

    #[test]
    fn a_statefulset_is_behind_until_its_controller_observed_its_generation() {
        use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};
        let sts = |generation: Option<i64>, observed: Option<i64>| StatefulSet {
            metadata: kube::api::ObjectMeta {
                generation,
                ..Default::default()
            },
            status: Some(StatefulSetStatus {
                observed_generation: observed,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(controller_behind(&sts(Some(3), Some(2))));
        assert!(controller_behind(&sts(Some(1), None)));
        assert!(!controller_behind(&sts(Some(3), Some(3))));
        assert!(!controller_behind(&sts(None, None)));
    }
}
