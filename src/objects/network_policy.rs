//! The cluster's NetworkPolicy (`spec.networkPolicy`, on unless `enabled: false`): who may open
//! connections to its members. Pure.
//!
//! - peers (2380): only the cluster's own members (its selector, in its namespace);
//! - clients (2379): any pod of the cluster's namespace (applications, restore and pvc agent
//!   pods, a CLI run in a pod there), the operator's pods in `kubectl-etcd-system`, and pods of
//!   any namespace labelled `etcd.kubectl-etcd.io/client: <cluster>`;
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
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::install;
use super::names::{CLIENT_PORT, LABEL_NAME, PEER_PORT, network_policy_name, selector_labels};
use super::services::meta;
use crate::keys::{LABEL_CLIENT, LABEL_NAMESPACE_NAME};
use crate::model::Desired;

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

/// Who may reach the client port (see the module doc).
pub fn client_peers(d: &Desired) -> Vec<NetworkPolicyPeer> {
    vec![
        // Every pod of the namespace: an empty pod selector.
        NetworkPolicyPeer {
            pod_selector: Some(LabelSelector::default()),
            ..Default::default()
        },
        NetworkPolicyPeer {
            namespace_selector: select(one(LABEL_NAMESPACE_NAME, install::NAMESPACE)),
            pod_selector: select(one(LABEL_NAME, install::NAME)),
            ..Default::default()
        },
        NetworkPolicyPeer {
            namespace_selector: Some(LabelSelector::default()),
            pod_selector: select(one(LABEL_CLIENT, &d.name)),
            ..Default::default()
        },
    ]
}

pub fn network_policy(d: &Desired) -> NetworkPolicy {
    // `from: None` admits every source.
    let (client_from, peer_from) = if d.adopt.is_some() {
        (None, None)
    } else {
        (
            Some(client_peers(d)),
            Some(vec![here(selector_labels(&d.name))]),
        )
    };
    let ingress = [rule(CLIENT_PORT, client_from), rule(PEER_PORT, peer_from)]
        .into_iter()
        .chain(d.metrics_port.map(|p| rule(p, None)))
        .collect();
    NetworkPolicy {
        metadata: meta(d, network_policy_name(&d.name)),
        spec: Some(NetworkPolicySpec {
            pod_selector: select(selector_labels(&d.name)),
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
            json!({"app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": "demo"})
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
                "app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": "demo"}}}]),
            "no namespace selector: this namespace only"
        );
    }

    #[test]
    fn clients_come_from_the_namespace_the_operator_and_labelled_pods() {
        let p = policy(&crate::fixtures::cluster("demo").desired());
        let r = rule_of(&p, CLIENT_PORT);
        assert_eq!(
            r["from"],
            json!([
                {"podSelector": {}},
                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kubectl-etcd-system"}},
                 "podSelector": {"matchLabels": {"app.kubernetes.io/name": "kubectl-etcd-operator"}}},
                {"namespaceSelector": {},
                 "podSelector": {"matchLabels": {"etcd.kubectl-etcd.io/client": "demo"}}},
            ])
        );
    }

    #[test]
    fn the_operator_selector_matches_the_installed_operator_pods() {
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
        d.adopt = Some(crate::model::Adoption {
            statefulset: Some("old".into()),
            endpoints: vec!["http://old-0.old:2379".into()],
            cluster_id: 1,
            tls_secret: None,
            take_over_service: None,
            abort: false,
        });
        let p = policy(&d);
        assert!(rule_of(&p, CLIENT_PORT).get("from").is_none());
        assert!(rule_of(&p, PEER_PORT).get("from").is_none());
    }
}
