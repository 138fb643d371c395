//! Whose an object is: the facts observe records before the engine writes or deletes anything
//! at one of the cluster's names (`model::NotOwned`, held by `plan::objects_not_owned`).
//!
//! Pure: no client. An object the engine applies by name is the cluster's when it carries the
//! cluster's controller owner reference (this EtcdCluster, by uid: an owner reference left by an
//! earlier EtcdCluster of the same name is not this one's). The member pods and claims are the
//! StatefulSet's, not the EtcdCluster's: theirs are `member_labels`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::names::member_labels;
use crate::api::EtcdCluster;
use crate::model::{Desired, NotOwned};

/// Whether `meta` carries this cluster's controller owner reference (kind EtcdCluster, its
/// name and uid). A cluster not created yet (no uid) owns nothing.
pub fn owned_by(d: &Desired, meta: &ObjectMeta) -> bool {
    let kind = <EtcdCluster as kube::Resource>::kind(&());
    !d.uid.is_empty()
        && meta.owner_references.iter().flatten().any(|r| {
            r.controller == Some(true) && r.kind == kind && r.name == d.name && r.uid == d.uid
        })
}

/// Whether `labels` carry every one of the cluster's member labels (`member_labels`): a member
/// pod or claim of this cluster.
pub fn labelled_for(cluster: &str, labels: Option<&BTreeMap<String, String>>) -> bool {
    let labels = labels.cloned().unwrap_or_default();
    member_labels(cluster)
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
}

/// The object's controller, as `Kind name` (none: no controller owner reference).
fn controller(meta: &ObjectMeta) -> Option<String> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| format!("{} {}", r.kind, r.name))
}

/// `Some` when the object found at one of the cluster's names (`kind`, `meta`) is not the
/// cluster's by owner reference: the engine must neither apply over it nor delete it.
pub fn not_owned_by_reference(d: &Desired, kind: &str, meta: &ObjectMeta) -> Option<NotOwned> {
    (!owned_by(d, meta)).then(|| not_owned(d, kind, meta))
}

/// `Some` when the member claim (or pod) found at one of the cluster's names does not carry its
/// member labels.
pub fn not_owned_by_labels(d: &Desired, kind: &str, meta: &ObjectMeta) -> Option<NotOwned> {
    (!labelled_for(&d.name, meta.labels.as_ref())).then(|| not_owned(d, kind, meta))
}

fn not_owned(d: &Desired, kind: &str, meta: &ObjectMeta) -> NotOwned {
    let cluster = <EtcdCluster as kube::Resource>::kind(&());
    NotOwned {
        kind: kind.to_string(),
        name: meta.name.clone().unwrap_or_default(),
        controller: controller(meta),
        earlier: meta.owner_references.iter().flatten().any(|r| {
            r.controller == Some(true) && r.kind == cluster && r.name == d.name && r.uid != d.uid
        }),
    }
}

/// Whether a Service selects exactly the cluster's members (`member_labels`; a Service fenced by
/// `recover` is recovery's to put back and counts as selecting them). One made before the
/// members were selected by `member_labels` does not, and is applied again.
pub fn service_selects_members(cluster: &str, svc: &Service) -> bool {
    let Some(sel) = svc.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
        return false;
    };
    let mut sel = sel.clone();
    sel.remove(crate::keys::LABEL_FENCED);
    sel == member_labels(cluster)
}

/// Whether the disruption budget counts exactly the cluster's members.
pub fn budget_selects_members(cluster: &str, pdb: &PodDisruptionBudget) -> bool {
    pdb.spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .is_some_and(|s| {
            s.match_expressions.is_none()
                && s.match_labels.as_ref() == Some(&member_labels(cluster))
        })
}

/// Whether the NetworkPolicy applies to exactly the cluster's members.
pub fn policy_selects_members(cluster: &str, np: &NetworkPolicy) -> bool {
    np.spec
        .as_ref()
        .and_then(|s| s.pod_selector.as_ref())
        .is_some_and(|s| {
            s.match_expressions.is_none()
                && s.match_labels.as_ref() == Some(&member_labels(cluster))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn desired() -> Desired {
        let mut d = crate::fixtures::cluster("demo").desired();
        d.uid = "uid-1".into();
        d
    }

    fn meta_owned_by(kind: &str, name: &str, uid: &str, controller: bool) -> ObjectMeta {
        ObjectMeta {
            name: Some("demo".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "etcd.kubectl-etcd.io/v1alpha1".into(),
                kind: kind.into(),
                name: name.into(),
                uid: uid.into(),
                controller: Some(controller),
                block_owner_deletion: None,
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn an_object_the_engine_built_is_owned_by_its_cluster() {
        let d = desired();
        for meta in [
            super::super::peer_service(&d).metadata,
            super::super::client_service(&d).metadata,
            super::super::pdb(&d).metadata,
            super::super::network_policy(&d).metadata,
            super::super::statefulset(&d, 3).metadata,
        ] {
            assert!(owned_by(&d, &meta), "{:?}", meta.name);
            assert_eq!(not_owned_by_reference(&d, "Service", &meta), None);
        }
    }

    #[test]
    fn an_object_without_an_owner_reference_is_not_owned() {
        let d = desired();
        let meta = ObjectMeta {
            name: Some("demo".into()),
            ..Default::default()
        };
        assert!(!owned_by(&d, &meta));
        assert_eq!(
            not_owned_by_reference(&d, "NetworkPolicy", &meta),
            Some(NotOwned {
                kind: "NetworkPolicy".into(),
                name: "demo".into(),
                controller: None,
                earlier: false,
            })
        );
    }

    #[test]
    fn an_owner_reference_of_an_earlier_cluster_of_the_same_name_is_not_this_ones() {
        let d = desired();
        let meta = meta_owned_by("EtcdCluster", "demo", "uid-0", true);
        assert!(!owned_by(&d, &meta));
        let n = not_owned_by_reference(&d, "Service", &meta).unwrap();
        assert_eq!(n.controller.as_deref(), Some("EtcdCluster demo"));
        assert!(n.earlier);
        // Another cluster's object is no earlier one of this cluster.
        let other = meta_owned_by("EtcdCluster", "other", "uid-0", true);
        assert!(
            !not_owned_by_reference(&d, "Service", &other)
                .unwrap()
                .earlier
        );
    }

    #[test]
    fn another_controllers_object_is_not_owned_even_with_a_second_reference_to_the_cluster() {
        let d = desired();
        assert!(!owned_by(
            &d,
            &meta_owned_by("StatefulSet", "demo", "uid-1", true)
        ));
        // A non-controller reference to the cluster is no claim on the object.
        assert!(!owned_by(
            &d,
            &meta_owned_by("EtcdCluster", "demo", "uid-1", false)
        ));
        assert!(!owned_by(
            &d,
            &meta_owned_by("EtcdCluster", "other", "uid-1", true)
        ));
        assert!(owned_by(
            &d,
            &meta_owned_by("EtcdCluster", "demo", "uid-1", true)
        ));
    }

    #[test]
    fn a_cluster_not_created_yet_owns_nothing() {
        let mut d = desired();
        d.uid = String::new();
        assert!(!owned_by(
            &d,
            &meta_owned_by("EtcdCluster", "demo", "", true)
        ));
    }

    #[test]
    fn a_statefulset_made_before_the_member_selector_keeps_its_own_and_a_new_one_gets_it() {
        let d = desired();
        let view = |member_selector| crate::model::WorkloadView {
            member_selector,
            ..Default::default()
        };
        assert!(crate::model::keep_immutable(d.clone(), Some(&view(false))).legacy_selector);
        assert!(!crate::model::keep_immutable(d.clone(), Some(&view(true))).legacy_selector);
        // None yet (a new cluster, or one whose StatefulSet was deleted): the member labels.
        let mut was = d.clone();
        was.legacy_selector = true;
        assert!(!crate::model::keep_immutable(was, None).legacy_selector);
    }

    #[test]
    fn a_claim_is_the_clusters_by_its_member_labels_managed_by_included() {
        let d = desired();
        let claim = |labels: &[(&str, &str)]| ObjectMeta {
            name: Some("data-demo-0".into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        };
        let ours = claim(&[
            ("app.kubernetes.io/name", "etcd"),
            ("app.kubernetes.io/instance", "demo"),
            ("app.kubernetes.io/managed-by", "kubectl-etcd"),
        ]);
        assert_eq!(
            not_owned_by_labels(&d, "PersistentVolumeClaim", &ours),
            None
        );
        // A Helm release of etcd named like the cluster: same name and instance labels.
        let helm = claim(&[
            ("app.kubernetes.io/name", "etcd"),
            ("app.kubernetes.io/instance", "demo"),
            ("app.kubernetes.io/managed-by", "Helm"),
        ]);
        assert!(not_owned_by_labels(&d, "PersistentVolumeClaim", &helm).is_some());
        let plain = claim(&[
            ("app.kubernetes.io/name", "etcd"),
            ("app.kubernetes.io/instance", "demo"),
        ]);
        assert!(not_owned_by_labels(&d, "PersistentVolumeClaim", &plain).is_some());
        assert!(!labelled_for("other", ours.labels.as_ref()));
    }

    #[test]
    fn the_built_selectors_select_the_members_and_an_old_two_label_one_does_not() {
        let d = desired();
        let peer = super::super::peer_service(&d);
        assert!(service_selects_members("demo", &peer));
        assert!(service_selects_members(
            "demo",
            &super::super::client_service(&d)
        ));
        assert!(service_selects_members(
            "demo",
            &super::super::fenced_client_service(&d)
        ));
        assert!(budget_selects_members("demo", &super::super::pdb(&d)));
        assert!(policy_selects_members(
            "demo",
            &super::super::network_policy(&d)
        ));
        let mut old = peer.clone();
        old.spec.as_mut().unwrap().selector = Some(super::super::selector_labels("demo"));
        assert!(!service_selects_members("demo", &old));
        let mut old = super::super::pdb(&d);
        old.spec
            .as_mut()
            .unwrap()
            .selector
            .as_mut()
            .unwrap()
            .match_labels = Some(super::super::selector_labels("demo"));
        assert!(!budget_selects_members("demo", &old));
        let mut old = super::super::network_policy(&d);
        old.spec.as_mut().unwrap().pod_selector = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                match_labels: Some(super::super::selector_labels("demo")),
                ..Default::default()
            },
        );
        assert!(!policy_selects_members("demo", &old));
    }

    #[test]
    fn every_selector_carries_managed_by_and_an_old_statefulset_keeps_its_own() {
        let d = desired();
        let managed = |m: Option<&BTreeMap<String, String>>| {
            m.and_then(|m| m.get(crate::keys::LABEL_MANAGED_BY))
                .cloned()
        };
        let engine = Some(crate::keys::MANAGER_ENGINE.to_string());
        let np = super::super::network_policy(&d);
        let spec = np.spec.unwrap();
        assert_eq!(
            managed(spec.pod_selector.as_ref().unwrap().match_labels.as_ref()),
            engine
        );
        // The peer port admits the cluster's own members only.
        let peers = spec.ingress.unwrap().into_iter().find_map(|r| {
            r.ports
                .iter()
                .flatten()
                .any(|p| {
                    p.port
                        == Some(
                            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(
                                i32::from(super::super::PEER_PORT),
                            ),
                        )
                })
                .then_some(r.from)
        });
        let from = peers.flatten().unwrap();
        assert_eq!(
            managed(from[0].pod_selector.as_ref().unwrap().match_labels.as_ref()),
            engine
        );
        // A new StatefulSet selects the member labels; one made before keeps its immutable
        // two-label selector (`Desired::legacy_selector`), with the very same pod template.
        let sts = super::super::statefulset(&d, 3).spec.unwrap();
        assert_eq!(sts.selector.match_labels, Some(member_labels("demo")));
        let mut legacy = d.clone();
        legacy.legacy_selector = true;
        let old = super::super::statefulset(&legacy, 3);
        assert_eq!(
            old.spec.as_ref().unwrap().selector.match_labels,
            Some(super::super::selector_labels("demo"))
        );
        assert_eq!(
            super::super::template_hash(&legacy),
            super::super::template_hash(&d),
            "no member restarts for it"
        );
        assert_eq!(old.spec.unwrap().template, sts.template);
        // Its pods carry the member labels, so the new selectors find them without a roll.
        let pod_labels = sts.template.metadata.unwrap().labels;
        assert!(labelled_for("demo", pod_labels.as_ref()));
    }
}
