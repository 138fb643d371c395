//! The members' nodes: down, cordoned or draining, and which node each member is on.

use super::*;

/// The claim annotation in which the scheduler records the node a volume bound on first use was
/// provisioned for.
const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";

/// Seconds a node may be not Ready before its members count as on a gone node: Kubernetes' own
/// default before it evicts pods from such a node (a reboot takes less).
const NODE_DOWN_AFTER_SECONDS: u64 = 300;

/// The taint that says a node is shut down for good (Kubernetes' non-graceful node shutdown).
const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

/// For each member whose node cannot run it, why (`node_down`), and, for one that runs, why
/// its node is about to stop running it (`node_cordoned`). Nodes that cannot be read (no RBAC
/// for Nodes, as a namespaced CLI user may have) count as up and staying: nothing is concluded
/// from them.
pub(super) async fn read_nodes(
    ctx: &Context,
    nodes_of: &BTreeMap<u32, String>,
    judge: impl Fn(&str, Option<&Node>) -> Option<String>,
) -> Vec<(u32, String)> {
    let api: Api<Node> = Api::all(ctx.client.clone());
    let names: BTreeSet<&String> = nodes_of.values().collect();
    let read = join_all(names.into_iter().map(|n| {
        let api = api.clone();
        async move { (n, api.get_opt(n).await) }
    }))
    .await;
    let mut found = BTreeMap::new();
    for (name, node) in read {
        match node {
            Ok(node) => {
                if let Some(why) = judge(name, node.as_ref()) {
                    found.insert(name.clone(), why);
                }
            }
            Err(e) => tracing::debug!(node = %name, error = %e, "node not read"),
        }
    }
    nodes_of
        .iter()
        .filter_map(|(ord, n)| Some((*ord, found.get(n)?.clone())))
        .collect()
}

/// Why a running member's node `name` is about to stop running it: cordoned
/// (`spec.unschedulable`, what `kubectl drain` sets before it evicts).
pub(super) fn node_cordoned(name: &str, node: Option<&Node>) -> Option<String> {
    node?
        .spec
        .as_ref()?
        .unschedulable
        .filter(|u| *u)
        .map(|_| format!("its node {name} is cordoned (unschedulable: a drain evicts it next)"))
}

/// Why a running pod is about to go, from the pod itself: deleted, or marked by an eviction or
/// a preemption (`DisruptionTarget`).
pub(super) fn pod_leaving(p: &Pod) -> Option<String> {
    if p.metadata.deletion_timestamp.is_some() {
        return Some("it is being deleted".into());
    }
    let c = p
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "DisruptionTarget" && c.status == "True")?;
    Some(format!(
        "it is marked for disruption ({})",
        c.reason.as_deref().unwrap_or("DisruptionTarget")
    ))
}

/// Why node `name` (`None`: it no longer exists) cannot run a member, if it cannot: deleted,
/// tainted out-of-service, or not Ready for [`NODE_DOWN_AFTER_SECONDS`] or longer.
pub(super) fn node_down(name: &str, node: Option<&Node>, now: jiff::Timestamp) -> Option<String> {
    let Some(node) = node else {
        return Some(format!("its node {name} no longer exists"));
    };
    let spec = node.spec.as_ref();
    if spec
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key == OUT_OF_SERVICE))
    {
        return Some(format!(
            "its node {name} is tainted {OUT_OF_SERVICE} (shut down)"
        ));
    }
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))?;
    if ready.status == "True" {
        return None;
    }
    let since = ready.last_transition_time.as_ref()?.0;
    let for_seconds = (now.as_second() - since.as_second()).max(0) as u64;
    (for_seconds >= NODE_DOWN_AFTER_SECONDS).then(|| {
        format!(
            "its node {name} has not been Ready for {for_seconds}s (Ready={})",
            ready.status
        )
    })
}

/// The node each member's pod runs on, or, for a pod not scheduled yet, the one its volume was
/// provisioned on (the scheduler records it on the claim for volumes bound on first use).
pub(super) fn nodes_of(
    d: &Desired,
    pods: &[Pod],
    pvcs: &[PersistentVolumeClaim],
) -> BTreeMap<u32, String> {
    let on_pods = pods.iter().filter_map(|p| {
        let ord = objects::ordinal_of_pod(&d.name, p.metadata.name.as_deref()?)?;
        Some((ord, p.spec.as_ref()?.node_name.clone()?))
    });
    let on_volumes = pvcs.iter().filter_map(|v| {
        let ord = objects::ordinal_of_volume(&d.name, v.metadata.name.as_deref()?)?;
        let node = v.metadata.annotations.as_ref()?.get(SELECTED_NODE)?;
        Some((ord, node.clone()))
    });
    on_pods
        .chain(on_volumes)
        .fold(BTreeMap::new(), |mut m, (ord, node)| {
            m.entry(ord).or_insert(node);
            m
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_down_when_deleted_shut_down_or_not_ready_for_five_minutes() {
        use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus, Taint};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let now = jiff::Timestamp::from_second(1_000_000).unwrap();
        let node = |ready: &str, since_s: i64, taint: Option<&str>| Node {
            spec: Some(NodeSpec {
                taints: taint.map(|k| {
                    vec![Taint {
                        key: k.into(),
                        effect: "NoExecute".into(),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: ready.into(),
                    last_transition_time: Some(Time(
                        now - jiff::SignedDuration::from_secs(since_s),
                    )),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            node_down("n1", None, now).as_deref(),
            Some("its node n1 no longer exists")
        );
        assert_eq!(node_down("n1", Some(&node("True", 9999, None)), now), None);
        // A reboot is shorter than Kubernetes' own eviction delay.
        assert_eq!(
            node_down("n1", Some(&node("Unknown", 299, None)), now),
            None
        );
        assert_eq!(
            node_down("n1", Some(&node("Unknown", 300, None)), now).as_deref(),
            Some("its node n1 has not been Ready for 300s (Ready=Unknown)")
        );
        let shut = node("False", 1, Some("node.kubernetes.io/out-of-service"));
        assert!(
            node_down("n1", Some(&shut), now)
                .unwrap()
                .contains("out-of-service")
        );
        // Other taints say nothing.
        let cordoned = node("True", 1, Some("node.kubernetes.io/unschedulable"));
        assert_eq!(node_down("n1", Some(&cordoned), now), None);
    }

    #[test]
    fn a_cordoned_node_says_its_member_is_leaving_an_uncordoned_one_says_nothing() {
        use k8s_openapi::api::core::v1::{Node, NodeSpec};
        let node = |unschedulable: Option<bool>| Node {
            spec: Some(NodeSpec {
                unschedulable,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(
            node_cordoned("n1", Some(&node(Some(true))))
                .unwrap()
                .contains("its node n1 is cordoned")
        );
        assert_eq!(node_cordoned("n1", Some(&node(Some(false)))), None);
        assert_eq!(node_cordoned("n1", Some(&node(None))), None);
        // A deleted node is `node_down`'s to judge, not a drain.
        assert_eq!(node_cordoned("n1", None), None);
    }

    #[test]
    fn a_pod_marked_for_eviction_or_being_deleted_is_leaving() {
        use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let pod = |condition: Option<(&str, &str)>, deleted: bool| Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                deletion_timestamp: deleted.then_some(Time(jiff::Timestamp::UNIX_EPOCH)),
                ..Default::default()
            },
            status: Some(PodStatus {
                conditions: condition.map(|(status, reason)| {
                    vec![PodCondition {
                        type_: "DisruptionTarget".into(),
                        status: status.into(),
                        reason: Some(reason.into()),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(pod_leaving(&pod(None, false)), None);
        assert_eq!(
            pod_leaving(&pod(Some(("True", "EvictionByEvictionAPI")), false)).as_deref(),
            Some("it is marked for disruption (EvictionByEvictionAPI)")
        );
        assert_eq!(
            pod_leaving(&pod(Some(("False", "EvictionByEvictionAPI")), false)),
            None
        );
        assert_eq!(
            pod_leaving(&pod(None, true)).as_deref(),
            Some("it is being deleted")
        );
    }
}
