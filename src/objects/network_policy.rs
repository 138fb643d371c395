//! The cluster's NetworkPolicy (`spec.networkPolicy`, on unless `enabled: false`): who may open
//! connections to its members. Pure.
//!
//! - peers (2380): only the cluster's own members (its selector, in its namespace);
//! - clients (2379): any pod of the cluster's namespace (applications, restore and pvc agent
//!   pods, a CLI run in a pod there), the operator's pods (in `kubectl-etcd-system` by default;
//!   wherever the operator that writes the policy runs, `model::OperatorPods`), and every pod of
//!   the namespaces the cluster's owner lists (`spec.networkPolicy.clientNamespaces`), matched
//!   by `kubernetes.io/metadata.name`, the label only the API server sets: no pod or namespace
//!   can admit itself by a label it writes;
//! - the metrics listener (`spec.metrics`): from anywhere (plain `/metrics` and `/health`, no key
//!   data; Prometheus scrapes it from its own namespace);
//! - while `spec.adopt` is set, both ports from anywhere: the old members (which may run outside
//!   the namespace, or outside Kubernetes) and their clients must reach the new members.
//!
//! `kubectl etcd` on a workstation reaches members by port-forward (the kubelet enters the pod's
//! network namespace; no policy applies), and the kubelet's probes come from the node, which
//! network plugins admit.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::names::{CLIENT_PORT, LABEL_NAME, PEER_PORT, member_labels, network_policy_name};
use super::services::meta;
use crate::keys::LABEL_NAMESPACE_NAME;
use crate::model::{Desired, OperatorPods};

fn tcp(port: u16) -> NetworkPolicyPort {
    NetworkPolicyPort {
        port: Some(IntOrString::Int(port as i32)),
        protocol: Some("TCP".into()),
        ..Default::default()
    }
}

fn select(labels: BTreeMap<String, String>) -> Option<LabelSelector> {
    Some(LabelSelector {
        match_labels: Some(labels),
        ..Default::default()
    })
}

fn one(key: &str, value: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(key.to_string(), value.to_string())])
}

/// Pods of this namespace matching `pods` (a peer without a namespace selector).
fn here(pods: BTreeMap<String, String>) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        pod_selector: select(pods),
        ..Default::default()
    }
}

fn rule(port: u16, from: Option<Vec<NetworkPolicyPeer>>) -> NetworkPolicyIngressRule {
    NetworkPolicyIngressRule {
        ports: Some(vec![tcp(port)]),
        from,
    }
}

/// The peer ports: 2380, and the switch port while TLS is switched (`plan::tls_switch`; the
/// template's change applies the policy beside it).
fn peer_rule(d: &Desired, from: Option<Vec<NetworkPolicyPeer>>) -> NetworkPolicyIngressRule {
    let mut r = rule(PEER_PORT, from);
    if d.tls_switch.is_some() {
        r.ports
            .get_or_insert_with(Vec::new)
            .push(tcp(super::names::SWITCH_PEER_PORT));
    }
    r
}

/// Who may reach the client port (see the module doc), and anyone at all while the client
/// Service is a node port or a load balancer (`spec.clientService.type`): their traffic arrives
/// from the nodes or from outside (the load balancer's source ranges are its own filter).
pub fn client_peers(d: &Desired) -> Vec<NetworkPolicyPeer> {
    let anywhere = ["0.0.0.0/0", "::/0"].map(|cidr| NetworkPolicyPeer {
        ip_block: Some(IPBlock {
            cidr: cidr.into(),
            except: None,
        }),
        ..Default::default()
    });
    let mut peers = vec![
        // Every pod of the namespace: an empty pod selector.
        NetworkPolicyPeer {
            pod_selector: Some(LabelSelector::default()),
            ..Default::default()
        },
        NetworkPolicyPeer {
            namespace_selector: select(one(LABEL_NAMESPACE_NAME, &d.operator.namespace)),
            pod_selector: select(one(LABEL_NAME, &d.operator.name)),
            ..Default::default()
        },
    ];
    // Every pod of the listed namespaces: by the name label the API server sets on each.
    if !d.client_namespaces.is_empty() {
        peers.push(NetworkPolicyPeer {
            namespace_selector: Some(LabelSelector {
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: LABEL_NAMESPACE_NAME.into(),
                    operator: "In".into(),
                    values: Some(d.client_namespaces.clone()),
                }]),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    if d.client_service.exposed() {
        peers.extend(anywhere);
    }
    peers
}

/// The operator pods `policy` admits to the client port: the peer that selects one namespace by
/// its name and pods by `app.kubernetes.io/name` (`client_peers`). `None` when it admits none
/// that way (an adoption's open policy, a policy edited by hand): the engine applies it again.
pub fn admitted_operator(policy: &NetworkPolicy) -> Option<OperatorPods> {
    let label = |s: &Option<LabelSelector>, key: &str| -> Option<String> {
        s.as_ref()?.match_labels.as_ref()?.get(key).cloned()
    };
    let client = policy.spec.as_ref()?.ingress.as_ref()?.iter().find(|r| {
        r.ports.as_ref().is_some_and(|p| {
            p.iter()
                .any(|p| p.port == Some(IntOrString::Int(i32::from(CLIENT_PORT))))
        })
    })?;
    client.from.as_ref()?.iter().find_map(|peer| {
        Some(OperatorPods {
            namespace: label(&peer.namespace_selector, LABEL_NAMESPACE_NAME)?,
            name: label(&peer.pod_selector, LABEL_NAME)?,
        })
    })
}

/// Whether `policy` admits to the client port exactly whom `d` admits (`client_peers`): a
/// changed `clientNamespaces`, or a policy written before it (the pod-label peer of earlier
/// versions), is applied again. An adoption's open policy is left to `admitted_operator`.
pub fn policy_admits_clients(d: &Desired, policy: &NetworkPolicy) -> bool {
    let client = policy
        .spec
        .as_ref()
        .and_then(|s| s.ingress.as_ref())
        .and_then(|rules| {
            rules.iter().find(|r| {
                r.ports.as_ref().is_some_and(|p| {
                    p.iter()
                        .any(|p| p.port == Some(IntOrString::Int(i32::from(CLIENT_PORT))))
                })
            })
        });
    d.adopt.is_some() || client.is_some_and(|r| r.from.as_ref() == Some(&client_peers(d)))
}

pub fn network_policy(d: &Desired) -> NetworkPolicy {
    // `from: None` admits every source.
    let (client_from, peer_from) = if d.adopt.is_some() {
        (None, None)
    } else {
        (
            Some(client_peers(d)),
            Some(vec![here(member_labels(&d.name))]),
        )
    };
    let ingress = [rule(CLIENT_PORT, client_from), peer_rule(d, peer_from)]
        .into_iter()
        .chain(d.metrics_port.map(|p| rule(p, None)))
        .collect();
    NetworkPolicy {
        metadata: meta(d, network_policy_name(&d.name)),
        spec: Some(NetworkPolicySpec {
            pod_selector: select(member_labels(&d.name)),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(ingress),
            ..Default::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn policy(d: &Desired) -> Value {
        serde_json::to_value(network_policy(d)).unwrap()
    }

    /// `d` adopting a running cluster (`spec.adopt`).
    fn adopting(d: &mut Desired) {
        d.adopt = Some(crate::model::Adoption {
            statefulset: Some("old".into()),
            endpoints: vec!["http://old-0.old:2379".into()],
            cluster_id: 1,
            tls_secret: None,
            take_over_service: None,
            abort: false,
        });
    }

    /// The rule admitting `port`.
    fn rule_of(p: &Value, port: u16) -> Value {
        p["spec"]["ingress"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["ports"][0]["port"] == port)
            .unwrap_or_else(|| panic!("no rule for {port} in {p}"))
            .clone()
    }

    #[test]
    fn the_policy_selects_the_members_and_restricts_ingress_only() {
        let p = policy(&crate::fixtures::cluster("demo").desired());
        assert_eq!(p["metadata"]["name"], "demo");
        assert_eq!(p["metadata"]["namespace"], "ns");
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "EtcdCluster");
        assert_eq!(
            p["spec"]["podSelector"]["matchLabels"],
            json!({"app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": "demo",
                   "app.kubernetes.io/managed-by": "kubectl-etcd"}),
            "the members only: not another etcd of the same instance name"
        );
        assert_eq!(p["spec"]["policyTypes"], json!(["Ingress"]));
        assert_eq!(p["spec"]["ingress"].as_array().unwrap().len(), 2);
        assert!(p["spec"].get("egress").is_none(), "egress stays open");
    }

    #[test]
    fn peers_come_only_from_the_clusters_own_members() {
        let p = policy(&crate::fixtures::cluster("demo").desired());
        let r = rule_of(&p, PEER_PORT);
        assert_eq!(r["ports"][0]["protocol"], "TCP");
        assert_eq!(
            r["from"],
            json!([{"podSelector": {"matchLabels": {
                "app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": "demo",
                "app.kubernetes.io/managed-by": "kubectl-etcd"}}}]),
            "no namespace selector: this namespace only"
        );
    }

    #[test]
    fn clients_come_from_the_namespace_and_the_operator_and_no_pod_label_admits_more() {
        let p = policy(&crate::fixtures::cluster("demo").desired());
        let r = rule_of(&p, CLIENT_PORT);
        assert_eq!(
            r["from"],
            json!([
                {"podSelector": {}},
                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kubectl-etcd-system"}},
                 "podSelector": {"matchLabels": {"app.kubernetes.io/name": "kubectl-etcd-operator"}}},
            ]),
            "no peer with an open namespace selector: a pod label of another namespace admits nothing"
        );
    }

    #[test]
    fn listed_client_namespaces_are_admitted_by_the_name_label_the_api_server_sets() {
        let mut d = crate::fixtures::cluster("demo").desired();
        d.client_namespaces = vec!["billing".into(), "web".into()];
        let p = policy(&d);
        let from = rule_of(&p, CLIENT_PORT)["from"].clone();
        assert_eq!(from.as_array().unwrap().len(), 3, "{from}");
        assert_eq!(
            from[2],
            json!({"namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["billing", "web"]}]}}),
            "every pod of those namespaces, no pod selector"
        );
        assert_eq!(
            rule_of(&p, PEER_PORT)["from"].as_array().unwrap().len(),
            1,
            "peers stay the members only"
        );
        assert_eq!(
            admitted_operator(&network_policy(&d)),
            Some(d.operator.clone()),
            "the operator is still read back"
        );
    }

    #[test]
    fn a_policy_admitting_other_clients_is_not_current() {
        let mut d = crate::fixtures::cluster("demo").desired();
        let before = network_policy(&d);
        assert!(policy_admits_clients(&d, &before));
        d.client_namespaces = vec!["billing".into()];
        assert!(
            !policy_admits_clients(&d, &before),
            "a namespace added: applied again"
        );
        assert!(policy_admits_clients(&d, &network_policy(&d)));
        // A policy of an earlier version, admitting any namespace's pods by their label.
        let mut old = network_policy(&crate::fixtures::cluster("demo").desired());
        let rules = old.spec.as_mut().unwrap().ingress.as_mut().unwrap();
        rules[0].from.as_mut().unwrap().push(NetworkPolicyPeer {
            namespace_selector: Some(LabelSelector::default()),
            pod_selector: select(one("etcd.kubectl-etcd.io/client", "demo")),
            ..Default::default()
        });
        d.client_namespaces.clear();
        assert!(!policy_admits_clients(&d, &old), "the label peer goes");
        adopting(&mut d);
        assert!(policy_admits_clients(&d, &network_policy(&d)));
    }

    #[test]
    fn clients_come_from_the_operator_where_it_runs() {
        let mut d = crate::fixtures::cluster("demo").desired();
        d.operator = OperatorPods {
            namespace: "ops".into(),
            name: "etcd-op".into(),
        };
        let p = policy(&d);
        assert_eq!(
            rule_of(&p, CLIENT_PORT)["from"][1],
            json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ops"}},
                   "podSelector": {"matchLabels": {"app.kubernetes.io/name": "etcd-op"}}})
        );
        assert_eq!(
            admitted_operator(&network_policy(&d)),
            Some(d.operator.clone()),
            "read back as written"
        );
    }

    #[test]
    fn an_open_or_hand_edited_policy_admits_no_operator_so_it_is_applied_again() {
        let mut d = crate::fixtures::cluster("demo").desired();
        assert_eq!(
            admitted_operator(&network_policy(&d)),
            Some(OperatorPods::default())
        );
        let mut edited = network_policy(&d);
        let ingress = edited.spec.as_mut().unwrap().ingress.as_mut().unwrap();
        ingress[0].from.as_mut().unwrap().remove(1);
        assert_eq!(admitted_operator(&edited), None);
        adopting(&mut d);
        assert_eq!(admitted_operator(&network_policy(&d)), None);
    }

    #[test]
    fn the_operator_selector_matches_the_installed_operator_pods() {
        use crate::objects::install;
        let d = crate::fixtures::cluster("demo").desired();
        let operator = &client_peers(&d)[1];
        let all = install::manifests("img", install::NAMESPACE);
        let deploy = all.iter().find(|o| o["kind"] == "Deployment").unwrap();
        let pod_labels = &deploy["spec"]["template"]["metadata"]["labels"];
        for (k, v) in operator
            .pod_selector
            .as_ref()
            .unwrap()
            .match_labels
            .as_ref()
            .unwrap()
        {
            assert_eq!(&pod_labels[k], v, "{k}");
        }
        assert_eq!(deploy["metadata"]["namespace"], install::NAMESPACE);
    }

    #[test]
    fn the_metrics_listener_is_open_to_every_scraper() {
        let mut d = crate::fixtures::cluster("demo").desired();
        d.metrics_port = Some(2381);
        let p = policy(&d);
        assert_eq!(p["spec"]["ingress"].as_array().unwrap().len(), 3);
        assert!(rule_of(&p, 2381).get("from").is_none());
    }

    #[test]
    fn an_adoption_opens_both_ports_to_the_old_members_wherever_they_run() {
        let mut d = crate::fixtures::cluster("demo").desired();
        adopting(&mut d);
        let p = policy(&d);
        assert!(rule_of(&p, CLIENT_PORT).get("from").is_none());
        assert!(rule_of(&p, PEER_PORT).get("from").is_none());
    }
}
