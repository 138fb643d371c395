//! A member pod as the planner sees it: its containers' last words and memory limit.

use super::nodes::pod_leaving;
use super::*;

/// etcd's last words in a container's status: those of the container that ended now, or of
/// the one before, but only while no container runs: a running container's `lastState` is
/// older than it (a member once replaced and restarted in place keeps its old "no data"
/// message for as long as it runs).
fn exit_message(c: &k8s_openapi::api::core::v1::ContainerStatus) -> Option<String> {
    let state = c.state.as_ref();
    let terminated = match state.and_then(|s| s.terminated.as_ref()) {
        Some(t) => Some(t),
        None if state.is_some_and(|s| s.running.is_some()) => None,
        None => c.last_state.as_ref().and_then(|s| s.terminated.as_ref()),
    };
    terminated
        .and_then(|t| t.message.clone())
        .filter(|m| !m.trim().is_empty())
}

/// The kubelet's reason for the last end of a container (`OOMKilled`, `Error`, …): of the
/// container that ended now, else of the one before (also while one runs again: a member
/// killed for memory runs a few seconds between kills; `PodView::trouble` reads it only while
/// the pod is not ready).
fn exit_reason(c: &k8s_openapi::api::core::v1::ContainerStatus) -> Option<String> {
    let ended = |s: Option<&k8s_openapi::api::core::v1::ContainerState>| {
        s.and_then(|s| s.terminated.as_ref())
            .and_then(|t| t.reason.clone())
    };
    ended(c.state.as_ref()).or_else(|| ended(c.last_state.as_ref()))
}

/// The memory limit of a pod's etcd container, as written (`512Mi`).
fn memory_limit(p: &Pod) -> Option<String> {
    p.spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == objects::CONTAINER)?
        .resources
        .as_ref()?
        .limits
        .as_ref()?
        .get("memory")
        .map(|q| q.0.clone())
}

/// A member pod as the planner sees it (`answered_as` and `node_down` are filled in once its
/// etcd was asked).
pub(super) fn pod_view(p: &Pod, now: jiff::Timestamp) -> PodView {
    let status = p.status.as_ref();
    let cstatus = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find(|c| c.name == objects::CONTAINER));
    let seconds_since = |t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
        t.map_or(0, |t| (now.as_second() - t.0.as_second()).max(0) as u64)
    };
    PodView {
        name: p.metadata.name.clone().unwrap_or_default(),
        ready: status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True")),
        running: cstatus
            .and_then(|c| c.state.as_ref())
            .is_some_and(|s| s.running.is_some()),
        terminating: p.metadata.deletion_timestamp.is_some(),
        controlled: p
            .metadata
            .owner_references
            .as_ref()
            .is_some_and(|o| o.iter().any(|o| o.controller == Some(true))),
        revision: p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(objects::LABEL_REVISION).cloned()),
        trusted_ca: p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(objects::ANNOTATION_TRUSTED_CA).cloned()),
        tls_switch: p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(objects::ANNOTATION_TLS_SWITCH).cloned()),
        ip: status.and_then(|s| s.pod_ip.clone()),
        restarts: cstatus.map_or(0, |c| c.restart_count),
        waiting_reason: cstatus
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.clone()),
        last_exit_message: cstatus.and_then(exit_message),
        last_exit_reason: cstatus.and_then(exit_reason),
        memory_limit: memory_limit(p),
        unschedulable: status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| {
                c.iter().find(|c| {
                    c.type_ == "PodScheduled"
                        && c.status == "False"
                        && c.reason.as_deref() == Some("Unschedulable")
                })
            })
            .map(|c| c.message.clone().unwrap_or_default().trim().to_string())
            .map(|m| {
                if m.is_empty() {
                    "no node fits it".into()
                } else {
                    m
                }
            }),
        answered_as: None,
        node_down: None,
        leaving: pod_leaving(p),
        overdue_seconds: seconds_since(p.metadata.deletion_timestamp.as_ref()),
        age_seconds: seconds_since(p.metadata.creation_timestamp.as_ref()),
        running_seconds: cstatus
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.running.as_ref())
            .and_then(|r| r.started_at.as_ref())
            .map(|t| seconds_since(Some(t))),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
        ContainerStatus,
    };

    use super::*;

    fn status(state: ContainerState) -> ContainerStatus {
        ContainerStatus {
            name: "etcd".into(),
            state: Some(state),
            last_state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    message: Some("couldn't find local name \"demo-1\"".into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_running_containers_last_state_message_is_older_than_it_and_ignored() {
        let running = status(ContainerState {
            running: Some(ContainerStateRunning::default()),
            ..Default::default()
        });
        assert_eq!(exit_message(&running), None);
        let crash_looping = status(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some("CrashLoopBackOff".into()),
                ..Default::default()
            }),
            ..Default::default()
        });
        assert!(
            exit_message(&crash_looping)
                .unwrap()
                .contains("couldn't find local name")
        );
    }

    #[test]
    fn a_kill_for_memory_is_read_with_the_containers_limit_also_while_it_runs_again() {
        let killed = |state: ContainerState| ContainerStatus {
            name: "etcd".into(),
            state: Some(state),
            last_state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    reason: Some("OOMKilled".into()),
                    exit_code: 137,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let running = killed(ContainerState {
            running: Some(ContainerStateRunning::default()),
            ..Default::default()
        });
        assert_eq!(exit_reason(&running).as_deref(), Some("OOMKilled"));
        let now_ended = ContainerStatus {
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    reason: Some("Error".into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..running.clone()
        };
        assert_eq!(exit_reason(&now_ended).as_deref(), Some("Error"));
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "demo-1"},
            "spec": {"containers": [
                {"name": "other", "resources": {"limits": {"memory": "1Gi"}}},
                {"name": "etcd", "resources": {"limits": {"memory": "48Mi", "cpu": "1"}}}
            ]},
            "status": {"containerStatuses": [serde_json::to_value(&running).unwrap()]}
        }))
        .unwrap();
        assert_eq!(memory_limit(&pod).as_deref(), Some("48Mi"));
        let v = pod_view(&pod, jiff::Timestamp::from_second(1).unwrap());
        assert_eq!(
            (v.last_exit_reason.as_deref(), v.memory_limit.as_deref()),
            (Some("OOMKilled"), Some("48Mi"))
        );
        assert_eq!(v.unschedulable, None);
        let pending: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "demo-2"},
            "status": {"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/1 nodes are available: 1 Insufficient memory."
            }]}
        }))
        .unwrap();
        let v = pod_view(&pending, jiff::Timestamp::from_second(1).unwrap());
        assert_eq!(
            v.unschedulable.as_deref(),
            Some("0/1 nodes are available: 1 Insufficient memory.")
        );
        assert!(v.trouble().unwrap().starts_with(
            "it cannot be scheduled: 0/1 nodes are available: 1 Insufficient memory."
        ));
    }
}
