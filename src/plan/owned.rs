//! Ownership before every write: the hold while an object at one of the cluster's names is
//! not the cluster's (`objects::ownership` says whose; observe records it in
//! `Observed::not_owned`).
//!
//! Pure: no async, no clock, no client.

use super::*;

/// An object at one of the cluster's names is not the cluster's (`Observed::not_owned`): an
/// apply would take it over and a delete would remove someone else's object, so nothing acts
/// (not a repair, not a recovery, not a backup) until it is gone or the cluster is renamed. The
/// hold names every such object and both ways out.
pub(super) fn objects_not_owned(d: &Desired, o: &Observed) -> Option<Step> {
    if o.not_owned.is_empty() {
        return None;
    }
    let ns = &d.namespace;
    // `kubectl delete etcdcluster` and a create of the same name at once: the garbage collector
    // has not deleted the earlier cluster's objects yet. Not ours either, so waited for.
    if o.not_owned.iter().all(|n| n.earlier) {
        let names: Vec<String> = o
            .not_owned
            .iter()
            .map(|n| format!("{} {}", n.kind, n.name))
            .collect();
        return Some(wait(
            Reason::CleaningUp,
            format!(
                "the objects of an earlier EtcdCluster {ns}/{} are still going: {} (the garbage \
                 collector deletes them; delete them if they were orphaned)",
                d.name,
                names.join(", ")
            ),
        ));
    }
    let named: Vec<String> = o
        .not_owned
        .iter()
        .map(|n| {
            let by = n
                .controller
                .as_ref()
                .map_or_else(String::new, |c| format!(" (controlled by {c})"));
            format!("{} {ns}/{}{by}", n.kind, n.name)
        })
        .collect();
    let (is, it) = match named.len() {
        1 => ("is", "it"),
        _ => ("are", "them"),
    };
    Some(hold(
        Reason::ObjectNotOwned,
        format!(
            "{} {is} not EtcdCluster {ns}/{}'s (no owner reference to it; member claims: not \
             its labels {}), and the engine writes and deletes nothing of another's: delete or \
             rename {it}, or create the EtcdCluster under another name",
            named.join(", "),
            d.name,
            objects::selector_string(&d.name),
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NotOwned;
    use crate::plan::tests::{desired, healthy};

    fn foreign(kind: &str, name: &str) -> NotOwned {
        NotOwned {
            kind: kind.into(),
            name: name.into(),
            controller: None,
            earlier: false,
        }
    }

    fn held(step: &Step) -> &str {
        match step {
            Step::Hold {
                reason: Reason::ObjectNotOwned,
                message,
            } => message,
            other => panic!("expected an ObjectNotOwned hold, got {other:?}"),
        }
    }

    #[test]
    fn a_foreign_network_policy_at_the_clusters_name_holds_and_is_named_with_the_fix() {
        let d = desired(3);
        let mut o = healthy(&d, 3);
        o.not_owned = vec![foreign("NetworkPolicy", "demo")];
        let step = plan(&d, &o);
        let m = held(&step);
        assert!(
            m.starts_with("NetworkPolicy ns/demo is not EtcdCluster ns/demo's"),
            "{m}"
        );
        assert!(
            m.contains("delete or rename it, or create the EtcdCluster under another name"),
            "{m}"
        );
        assert!(!step.is_change());
    }

    #[test]
    fn a_disabled_policy_never_deletes_a_foreign_one_it_holds_instead() {
        // `networkPolicy.enabled: false` with the namespace's own `default-deny` at the name.
        let mut d = desired(3);
        d.network_policy = false;
        let mut o = healthy(&d, 3);
        o.supporting_objects = false;
        assert_eq!(plan(&d, &o), Step::ApplySupportingObjects, "ours would go");
        o.not_owned = vec![foreign("NetworkPolicy", "demo")];
        held(&plan(&d, &o));
    }

    #[test]
    fn a_new_cluster_is_not_bootstrapped_over_a_foreign_service_budget_or_secret() {
        let d = desired(3);
        for (kind, name) in [
            ("Service", "demo"),
            ("Service", "demo-client"),
            ("PodDisruptionBudget", "demo"),
            ("Secret", "demo-tls-ca"),
            ("ConfigMap", "demo-members"),
            ("StatefulSet", "demo"),
        ] {
            let o = Observed {
                not_owned: vec![foreign(kind, name)],
                ..Observed::default()
            };
            let step = plan(&d, &o);
            assert!(
                held(&step).starts_with(&format!("{kind} ns/{name} is not")),
                "{step}"
            );
        }
    }

    #[test]
    fn every_foreign_object_is_named_once_with_its_controller() {
        let d = desired(3);
        let mut o = healthy(&d, 3);
        o.not_owned = vec![
            NotOwned {
                controller: Some("EtcdCluster demo".into()),
                ..foreign("Service", "demo")
            },
            foreign("PersistentVolumeClaim", "data-demo-0"),
        ];
        let step = plan(&d, &o);
        let m = held(&step);
        assert!(
            m.starts_with(
                "Service ns/demo (controlled by EtcdCluster demo), PersistentVolumeClaim \
                 ns/data-demo-0 are not"
            ),
            "{m}"
        );
        assert!(m.contains("delete or rename them"), "{m}");
        assert!(
            m.contains("app.kubernetes.io/managed-by=kubectl-etcd"),
            "{m}"
        );
    }

    #[test]
    fn the_hold_comes_before_repairs_recoveries_and_backups() {
        let d = desired(3);
        // A lost StatefulSet would be applied again, missing Services too: neither happens.
        let mut o = healthy(&d, 3);
        o.statefulset = None;
        o.supporting_objects = false;
        o.not_owned = vec![foreign("StatefulSet", "demo")];
        held(&plan(&d, &o));
        // Quorum lost with a recovery asked: the recovery would delete objects by name.
        let mut o = healthy(&d, 3);
        o.etcd = EtcdView::Unreachable {
            errors: vec!["down".into()],
        };
        o.not_owned = vec![foreign("ConfigMap", "demo-members")];
        held(&plan(&d, &o));
    }

    #[test]
    fn an_earlier_clusters_objects_of_the_same_name_are_waited_for_not_taken_over() {
        let d = desired(3);
        let earlier = |kind: &str, name: &str| NotOwned {
            controller: Some("EtcdCluster demo".into()),
            earlier: true,
            ..foreign(kind, name)
        };
        let o = Observed {
            not_owned: vec![earlier("Service", "demo"), earlier("Secret", "demo-tls-ca")],
            ..Observed::default()
        };
        let step = plan(&d, &o);
        assert!(
            matches!(&step, Step::Wait { reason: Reason::CleaningUp, message }
                if message.contains("Service demo, Secret demo-tls-ca")),
            "{step:?}"
        );
        assert!(!step.is_change());
        // One foreign object among them: a hold, naming it.
        let mut o = o;
        o.not_owned.push(foreign("NetworkPolicy", "demo"));
        let step = plan(&d, &o);
        assert!(held(&step).contains("NetworkPolicy ns/demo"), "{step}");
    }

    #[test]
    fn a_paused_cluster_stays_paused_and_an_owned_world_is_not_held() {
        let mut d = desired(3);
        d.paused = true;
        let o = Observed {
            not_owned: vec![foreign("Service", "demo")],
            ..Observed::default()
        };
        assert_eq!(plan(&d, &o), Step::Paused);
        d.paused = false;
        assert_eq!(plan(&d, &healthy(&d, 3)), Step::Idle);
    }
}
