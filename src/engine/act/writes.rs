//! The objects a step writes: the one table from steps to Kubernetes objects (pure), which
//! `act` applies and `--dry-run` prints.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::model::{Desired, RestoreMark};
use crate::objects;
use crate::plan::Step;

/// One Kubernetes object a step writes, typed, so that its kind and apiVersion come from its
/// type (or, for the disruption budget, from the version the server serves), never from a string
/// typed by hand.
// At most five per pass, built and dropped at once: their size costs nothing measurable.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Object {
    ConfigMap(ConfigMap),
    Service(Service),
    DisruptionBudget(PodDisruptionBudget),
    NetworkPolicy(NetworkPolicy),
    StatefulSet(StatefulSet),
    /// The seed's volume of a restored cluster (as the claim template would make it).
    Volume(PersistentVolumeClaim),
    /// The one-shot restore pod.
    Pod(Pod),
    /// Mode certManager: a leaf's cert-manager Certificate.
    Certificate(objects::cert_manager::Certificate),
}

impl Object {
    /// The API group and resource the object is written to, from its type.
    pub fn resource(&self) -> (String, String) {
        use crate::objects::access::resource_of;
        match self {
            Object::ConfigMap(_) => resource_of::<ConfigMap>(),
            Object::Service(_) => resource_of::<Service>(),
            Object::DisruptionBudget(_) => resource_of::<PodDisruptionBudget>(),
            Object::NetworkPolicy(_) => resource_of::<NetworkPolicy>(),
            Object::StatefulSet(_) => resource_of::<StatefulSet>(),
            Object::Volume(_) => resource_of::<PersistentVolumeClaim>(),
            Object::Pod(_) => resource_of::<Pod>(),
            Object::Certificate(_) => resource_of::<objects::cert_manager::Certificate>(),
        }
    }

    /// The object as the API server would receive it (apiVersion and kind included).
    pub fn to_json(&self) -> serde_json::Value {
        let v = match self {
            Object::ConfigMap(o) => serde_json::to_value(o),
            Object::Service(o) => serde_json::to_value(o),
            Object::DisruptionBudget(o) => serde_json::to_value(o),
            Object::NetworkPolicy(o) => serde_json::to_value(o),
            Object::StatefulSet(o) => serde_json::to_value(o),
            Object::Volume(o) => serde_json::to_value(o),
            Object::Pod(o) => serde_json::to_value(o),
            Object::Certificate(o) => serde_json::to_value(o),
        };
        // Serializing typed Kubernetes objects cannot fail (string keys only).
        v.unwrap_or_default()
    }
}

/// The objects `step` writes, in the order they are written: the one table from steps to
/// objects, which `act` applies and `--dry-run` prints. Pure.
pub fn step_objects(d: &Desired, step: &Step) -> Vec<Object> {
    // `spec.networkPolicy.enabled: false`: `act` deletes the policy instead.
    let policy =
        || Some(Object::NetworkPolicy(objects::network_policy(d))).filter(|_| d.network_policy);
    let supporting = || {
        [
            Object::Service(objects::peer_service(d)),
            Object::Service(objects::client_service(d)),
            Object::DisruptionBudget(objects::pdb(d)),
        ]
        .into_iter()
        .chain(policy())
        .collect::<Vec<_>>()
    };
    let config = |data| Object::ConfigMap(objects::config_map(d, data));
    let sts = |replicas| Object::StatefulSet(objects::statefulset(d, replicas));
    match step {
        Step::Bootstrap { replicas } => {
            // A restored seed's claim says `Restored` before anything else is written: from then
            // on the restore never runs again (see `plan::restore_seed`).
            let mut out: Vec<Object> = seed_claim(d, RestoreMark::Restored)
                .filter(|_| d.restore.is_some())
                .into_iter()
                .collect();
            out.push(config(objects::bootstrap_config(d, *replicas)));
            out.extend(supporting());
            out.push(sts(*replicas));
            out
        }
        Step::ApplySupportingObjects => supporting(),
        // `spec.recovery`: the client Service selecting no member (`plan::recover`).
        Step::FenceClients => vec![Object::Service(objects::fenced_client_service(d))],
        Step::WriteConfig { data, .. } => vec![config(data.clone())],
        // The peer Service and the NetworkPolicy carry the template's metrics port: a template
        // that gains or drops the listener (`spec.metrics`) brings them along.
        Step::UpdateTemplate { replicas } => [Object::Service(objects::peer_service(d))]
            .into_iter()
            .chain(policy())
            .chain([sts(*replicas)])
            .collect(),
        Step::ResizeStatefulSet { to, .. } => vec![sts(*to)],
        // Applied after the old StatefulSet is gone (`recreate_statefulset`).
        Step::RecreateStatefulSet { replicas, .. } => vec![sts(*replicas)],
        Step::Hibernate { .. } => vec![sts(0)],
        Step::RestoreSeed { .. } => restore_objects(d),
        Step::RequestCertificate { role, .. } => d
            .cert_manager
            .iter()
            .map(|cm| Object::Certificate(objects::cert_manager::certificate(d, cm, *role)))
            .collect(),
        Step::AddLearner { .. }
        | Step::PromoteLearner { .. }
        | Step::MoveLeader { .. }
        | Step::RemoveMember { .. }
        | Step::UpdatePeerUrl { .. }
        | Step::DeleteVolume { .. }
        | Step::RestartMember { .. }
        | Step::WipeMember { .. }
        | Step::DeleteRestorePod { .. }
        | Step::TakeRecoverySnapshot { .. }
        | Step::VerifyRecoverySnapshot { .. }
        | Step::DeleteLostMembers { .. }
        | Step::MarkRecovered { .. }
        | Step::RollBack { .. }
        | Step::Downgrade { .. }
        | Step::PreUpgradeSnapshot { .. }
        | Step::Compact { .. }
        | Step::Defragment { .. }
        | Step::DisarmNospace { .. }
        | Step::RaiseQuota { .. }
        | Step::Auth { .. }
        | Step::TakeScheduledBackup { .. }
        | Step::PruneBackups { .. }
        | Step::CheckBackup { .. }
        | Step::AbandonBackup { .. }
        | Step::Drill { .. }
        // Patches of the old cluster's objects, not objects of the engine's.
        | Step::ResizeOldStatefulSet { .. }
        | Step::TakeOverService { .. }
        | Step::GrowVolume { .. }
        | Step::HibernateSnapshot { .. }
        | Step::Hibernated
        // A new key is drawn when acting: no Secret to print beforehand.
        | Step::IssueCertificate { .. }
        | Step::Wait { .. }
        | Step::Hold { .. }
        | Step::Paused
        | Step::Idle => vec![],
    }
}

/// The seed's claim (as the StatefulSet's claim template makes it; none for ephemeral storage) and
/// the restore pod that fills it.
fn restore_objects(d: &Desired) -> Vec<Object> {
    let Some(r) = &d.restore else { return vec![] };
    let token = objects::bootstrap_config(d, 1)
        .remove(objects::config_key::INITIAL_TOKEN)
        .unwrap_or_default();
    seed_claim(d, RestoreMark::Restoring)
        .into_iter()
        .chain([Object::Pod(crate::objects::restore::restore_pod(
            d, r, &token,
        ))])
        .collect()
}

/// The seed's claim as the StatefulSet's claim template makes it, marked `mark` (none for
/// ephemeral storage).
fn seed_claim(d: &Desired, mark: RestoreMark) -> Option<Object> {
    objects::statefulset(d, 1)
        .spec
        .and_then(|s| s.volume_claim_templates)
        .and_then(|mut t| t.pop())
        .map(|mut claim| {
            claim.metadata.name = Some(objects::volume_name(&d.name, 0));
            claim.metadata.namespace = Some(d.namespace.clone());
            claim
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(
                    objects::ANNOTATION_RESTORE.to_string(),
                    mark.as_str().to_string(),
                );
            Object::Volume(claim)
        })
}

/// The objects a step would write, as JSON, for `--dry-run`.
pub fn planned_objects(d: &Desired, step: &Step) -> Vec<serde_json::Value> {
    step_objects(d, step).iter().map(Object::to_json).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(objs: &[Object]) -> Vec<(String, String, String)> {
        objs.iter()
            .map(Object::to_json)
            .map(|v| {
                let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
                (
                    s("apiVersion"),
                    s("kind"),
                    v["metadata"]["name"].as_str().unwrap_or_default().into(),
                )
            })
            .collect()
    }

    #[test]
    fn a_bootstrap_writes_config_services_budget_policy_and_statefulset_in_that_order() {
        let d = crate::fixtures::cluster("demo").desired();
        let objs = step_objects(&d, &Step::Bootstrap { replicas: 3 });
        let t = |a: &str, k: &str, n: &str| (a.to_string(), k.to_string(), n.to_string());
        assert_eq!(
            kinds(&objs),
            [
                t("v1", "ConfigMap", "demo-members"),
                t("v1", "Service", "demo"),
                t("v1", "Service", "demo-client"),
                t("policy/v1", "PodDisruptionBudget", "demo"),
                t("networking.k8s.io/v1", "NetworkPolicy", "demo"),
                t("apps/v1", "StatefulSet", "demo"),
            ]
        );
        let budget = objs[3].to_json();
        assert_eq!(budget["spec"]["maxUnavailable"], 1);
        assert_eq!(
            budget["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"],
            "demo"
        );
        assert_eq!(
            budget["metadata"]["ownerReferences"][0]["kind"],
            "EtcdCluster"
        );
    }

    #[test]
    fn a_restore_marks_the_seed_claim_restoring_and_its_bootstrap_marks_it_restored_first() {
        let mut c = crate::fixtures::cluster("demo").build();
        c.spec.restore = Some(crate::api::RestoreSpec {
            source: "s3://b/p/ns-demo-20261201T000000Z-r5.db.zst".into(),
            ..Default::default()
        });
        let d = crate::model::validate(&c).unwrap();
        let mark = |o: &Object| {
            let v = o.to_json();
            (
                v["kind"].as_str().unwrap_or_default().to_string(),
                v["metadata"]["annotations"][objects::ANNOTATION_RESTORE]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        };
        let restore = step_objects(
            &d,
            &Step::RestoreSeed {
                url: "s3://b/p".into(),
            },
        );
        assert_eq!(
            mark(&restore[0]),
            ("PersistentVolumeClaim".into(), "restoring".into())
        );
        let boot = step_objects(&d, &Step::Bootstrap { replicas: 1 });
        assert_eq!(
            mark(&boot[0]),
            ("PersistentVolumeClaim".into(), "restored".into()),
            "the mark is written before the member config"
        );
        assert_eq!(boot[0].to_json()["metadata"]["name"], "data-demo-0");
        // A cluster not restored writes no claim of its own.
        let plain = crate::fixtures::cluster("demo").desired();
        let boot = step_objects(&plain, &Step::Bootstrap { replicas: 3 });
        assert_eq!(mark(&boot[0]).0, "ConfigMap");
    }

    #[test]
    fn the_operator_role_may_observe_and_apply_every_kind_act_writes() {
        let mut c = crate::fixtures::cluster("demo").build();
        c.spec.restore = Some(crate::api::RestoreSpec {
            source: "s3://b/p/ns-demo-20261201T000000Z-r5.db.zst".into(),
            ..Default::default()
        });
        let d = crate::model::validate(&c).unwrap();
        let mut objs = step_objects(&d, &Step::Bootstrap { replicas: 3 });
        objs.extend(step_objects(
            &d,
            &Step::RestoreSeed {
                url: "s3://b/p".into(),
            },
        ));
        let cm = crate::fixtures::cluster("demo").cert_manager().desired();
        objs.extend(step_objects(
            &cm,
            &Step::RequestCertificate {
                role: crate::model::pki::CertRole::Peer,
                certificate: "demo-tls-peer".into(),
                issuer: "Issuer etcd-ca".into(),
            },
        ));
        // Adding a kind to `Object` fails to compile here until it is counted (and so checked).
        let variant = |o: &Object| match o {
            Object::ConfigMap(_) => 0,
            Object::Service(_) => 1,
            Object::DisruptionBudget(_) => 2,
            Object::StatefulSet(_) => 3,
            Object::Volume(_) => 4,
            Object::Pod(_) => 5,
            Object::NetworkPolicy(_) => 6,
            Object::Certificate(_) => 7,
        };
        let seen: std::collections::BTreeSet<i32> = objs.iter().map(variant).collect();
        assert_eq!(
            seen.len(),
            8,
            "every kind of Object is written by some step"
        );
        let table = crate::objects::access::watched_namespaces();
        for o in &objs {
            let (group, resource) = o.resource();
            assert_eq!(
                o.to_json()["apiVersion"]
                    .as_str()
                    .unwrap()
                    .rsplit_once('/')
                    .map_or("", |(g, _)| g),
                group,
                "{resource}"
            );
            for verb in ["get", "list", "watch", "patch", "delete"] {
                assert!(
                    table.iter().any(|a| a.grants(&group, &resource, verb)),
                    "the operator's role lacks {verb} on {resource}"
                );
            }
        }
    }

    #[test]
    fn only_object_steps_have_objects() {
        let d = crate::fixtures::cluster("demo").desired();
        assert_eq!(
            kinds(&step_objects(
                &d,
                &Step::ResizeStatefulSet { from: 3, to: 4 }
            ))
            .len(),
            1
        );
        assert_eq!(step_objects(&d, &Step::ApplySupportingObjects).len(), 4);
        let mut off = d.clone();
        off.network_policy = false;
        assert_eq!(step_objects(&off, &Step::ApplySupportingObjects).len(), 3);
        for step in [
            Step::Idle,
            Step::Paused,
            Step::RemoveMember {
                id: 1,
                name: "demo-2".into(),
            },
        ] {
            assert!(step_objects(&d, &step).is_empty(), "{step}");
        }
    }
}
