//! The operator's pods as a cluster's NetworkPolicy admits them to the client port
//! (`objects::network_policy`). Pure.
//!
//! Where the operator runs is no field of the spec: an operator in a pod knows its namespace and
//! name label (the Deployment passes them, `objects::install`), and says so through its
//! `engine::Context`; the CLI does not know, and keeps whom the cluster's policy admits already.
//! So an operator installed into another namespace (or under another name) is admitted by the
//! policies it writes, and a `kubectl etcd` command never takes that back.

use serde::Serialize;

use crate::keys::install;

/// The operator's pods: their namespace and their `app.kubernetes.io/name`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OperatorPods {
    pub namespace: String,
    pub name: String,
}

impl Default for OperatorPods {
    /// The default install's: `kubectl etcd install --operator`, the Helm chart's defaults.
    fn default() -> OperatorPods {
        OperatorPods {
            namespace: install::NAMESPACE.into(),
            name: install::NAME.into(),
        }
    }
}

impl std::fmt::Display for OperatorPods {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pods {} of namespace {}", self.name, self.namespace)
    }
}

/// The operator the policy of `d` admits: the driver's own pods (`driver`: an operator in a pod),
/// else those the cluster's policy admits already (`admitted`), else the default install's.
pub fn keep_operator(
    mut d: super::Desired,
    driver: Option<&OperatorPods>,
    admitted: Option<OperatorPods>,
) -> super::Desired {
    d.operator = driver.cloned().or(admitted).unwrap_or_default();
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods(namespace: &str, name: &str) -> OperatorPods {
        OperatorPods {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    #[test]
    fn an_operator_in_a_pod_admits_itself_whatever_the_policy_admitted() {
        let d = crate::fixtures::cluster("demo").desired();
        let ops = pods("ops", "etcd-op");
        let d = keep_operator(d, Some(&ops), Some(OperatorPods::default()));
        assert_eq!(d.operator, ops);
    }

    #[test]
    fn a_cli_pass_keeps_whom_the_policy_admits_and_a_new_policy_admits_the_default_install() {
        let d = crate::fixtures::cluster("demo").desired();
        let ops = pods("ops", "etcd-op");
        assert_eq!(
            keep_operator(d.clone(), None, Some(ops.clone())).operator,
            ops
        );
        assert_eq!(
            keep_operator(d, None, None).operator,
            pods("kubectl-etcd-system", "kubectl-etcd-operator")
        );
    }
}
