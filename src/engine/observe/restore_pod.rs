//! The restore pod: its state, why its download keeps failing, where its time went.

use super::*;

/// The status of every container of `p`, init containers first.
fn containers(p: &Pod) -> impl Iterator<Item = &k8s_openapi::api::core::v1::ContainerStatus> {
    p.status.iter().flat_map(|s| {
        s.init_container_statuses
            .iter()
            .flatten()
            .chain(s.container_statuses.iter().flatten())
    })
}

/// Running until the pod has ended; a failure carries the failing container's last words.
/// Seconds the restore pod's download runs before its log is read for failed attempts.
const FETCH_LOG_AFTER_SECONDS: u64 = 10;

/// Why the restore pod's download keeps failing, while it tries again (its last log line says
/// so): the store unreachable from the pod, refused credentials, a missing bucket. `None` when
/// its fetch runs without a failure said, or its log may not be read.
pub(super) async fn fetch_retrying(
    api: &Api<Pod>,
    p: &Pod,
    now: jiff::Timestamp,
) -> Option<String> {
    let fetching = containers(p).find(|c| c.name == crate::objects::restore::FETCH_CONTAINER)?;
    let started = fetching
        .state
        .as_ref()?
        .running
        .as_ref()?
        .started_at
        .as_ref()?;
    if now.as_second() - started.0.as_second() < FETCH_LOG_AFTER_SECONDS as i64 {
        return None;
    }
    let params = kube::api::LogParams {
        container: Some(crate::objects::restore::FETCH_CONTAINER.into()),
        tail_lines: Some(1),
        ..Default::default()
    };
    match api.logs(p.metadata.name.as_deref()?, &params).await {
        Ok(log) => failed_attempt(&log),
        Err(e) => {
            tracing::debug!(error = %e, "the restore pod's log was not read");
            None
        }
    }
}

/// The error of a log line that says an attempt of the fetch failed (text or JSON format).
fn failed_attempt(log: &str) -> Option<String> {
    let line = log.lines().rev().find(|l| !l.trim().is_empty())?.trim();
    if !line.contains(crate::archive::fetch::ATTEMPT_FAILED) {
        return None;
    }
    let error = match serde_json::from_str::<serde_json::Value>(line) {
        Ok(v) => v["fields"]["error"].as_str().map(String::from),
        Err(_) => line.split_once(" error=").map(|(_, e)| e.to_string()),
    }?;
    Some(match error.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &error[..i]),
        None => error,
    })
}

pub(super) fn restore_pod_view(p: &Pod) -> RestorePodView {
    let status = p.status.as_ref();
    match status.and_then(|s| s.phase.as_deref()) {
        Some("Succeeded") => RestorePodView::Succeeded,
        Some("Failed") => {
            let why = containers(p)
                .filter_map(|c| {
                    let t = c.state.as_ref()?.terminated.as_ref()?;
                    (t.exit_code != 0).then(|| {
                        format!(
                            "{} exited {}: {}",
                            c.name,
                            t.exit_code,
                            t.message.as_deref().unwrap_or("").trim()
                        )
                    })
                })
                .next()
                .unwrap_or_else(|| "the pod failed".into());
            RestorePodView::Failed(why)
        }
        _ => containers(p)
            .find_map(|c| {
                let w = c.state.as_ref()?.waiting.as_ref()?;
                let reason = w.reason.as_deref()?;
                crate::model::STUCK_REASONS.contains(&reason).then(|| {
                    let message = w.message.as_deref().unwrap_or("").trim();
                    if message.is_empty() {
                        format!("{}: {reason}", c.name)
                    } else {
                        format!("{}: {reason}: {message}", c.name)
                    }
                })
            })
            .map_or(RestorePodView::Running, RestorePodView::Stuck),
    }
}

/// Pure: where a finished restore pod's time went, as phases (`restore_pod:start` from its
/// creation to its first container's start: scheduling, image pulls, volume attach; then one per
/// container that ran: `restore_pod:fetch` the download and verification, `restore_pod:restore`
/// `etcdutl snapshot restore`, `restore_pod:finish`), to the second the kubelet records.
pub fn restore_pod_phases(p: &Pod) -> Vec<(String, std::time::Duration)> {
    let between = |from: &jiff::Timestamp, to: &jiff::Timestamp| {
        std::time::Duration::try_from(to.duration_since(*from)).unwrap_or_default()
    };
    let ran: Vec<(&str, jiff::Timestamp, jiff::Timestamp)> = containers(p)
        .filter_map(|c| {
            let t = c.state.as_ref()?.terminated.as_ref()?;
            Some((
                c.name.as_str(),
                t.started_at.as_ref()?.0,
                t.finished_at.as_ref()?.0,
            ))
        })
        .collect();
    let created = p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let first = ran.iter().map(|(_, started, _)| *started).min();
    created
        .zip(first)
        .map(|(c, f)| ("restore_pod:start".to_string(), between(&c, &f)))
        .into_iter()
        .chain(
            ran.iter()
                .map(|(name, from, to)| (format!("restore_pod:{name}"), between(from, to))),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, ContainerStatus};

    use super::*;

    #[test]
    fn a_finished_restore_pods_time_is_its_start_then_each_container_that_ran() {
        use k8s_openapi::api::core::v1::{Pod, PodStatus};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let at = |s: i64| Time(jiff::Timestamp::from_second(1_000_000 + s).unwrap());
        let ran = |name: &str, from: i64, to: i64| ContainerStatus {
            name: name.into(),
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    started_at: Some(at(from)),
                    finished_at: Some(at(to)),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut pod = Pod::default();
        pod.metadata.creation_timestamp = Some(at(0));
        pod.status = Some(PodStatus {
            init_container_statuses: Some(vec![ran("fetch", 4, 14), ran("restore", 15, 18)]),
            container_statuses: Some(vec![ran("finish", 19, 19)]),
            ..Default::default()
        });
        let secs: Vec<(String, u64)> = super::restore_pod_phases(&pod)
            .into_iter()
            .map(|(p, d)| (p, d.as_secs()))
            .collect();
        let want = [
            ("restore_pod:start", 4),
            ("restore_pod:fetch", 10),
            ("restore_pod:restore", 3),
            ("restore_pod:finish", 0),
        ]
        .map(|(p, s)| (p.to_string(), s));
        assert_eq!(secs, want);
        // A container still running (or never started) has no time yet.
        pod.status.as_mut().unwrap().container_statuses = Some(vec![ContainerStatus {
            name: "finish".into(),
            ..Default::default()
        }]);
        assert_eq!(super::restore_pod_phases(&pod).len(), 3);
    }

    #[test]
    fn a_failed_fetch_attempt_is_read_from_the_restore_pods_last_line_in_either_format() {
        let text = "2026-12-05T21:57:52.011174Z  WARN the fetch failed; trying again in 2s \
                    attempt=1 error=cannot reach S3 at http://127.0.0.1:18333 (connection failed) \
                    for bucket etcd-backups: check the endpoint URL, DNS, proxy and network policies\n";
        assert_eq!(
            failed_attempt(text).as_deref(),
            Some(
                "cannot reach S3 at http://127.0.0.1:18333 (connection failed) for bucket \
                 etcd-backups: check the endpoint URL, DNS, proxy and network policies"
            )
        );
        let json = r#"{"timestamp":"2026-12-05T21:57:52Z","level":"WARN","fields":{"message":"the fetch failed; trying again in 4s","attempt":2,"error":"access denied by the store"}}"#;
        assert_eq!(
            failed_attempt(json).as_deref(),
            Some("access denied by the store")
        );
        // A download going on, or nothing logged yet: nothing to say.
        assert_eq!(
            failed_attempt("2026-12-05T21:57:52Z  INFO fetching s3://b/k\n"),
            None
        );
        assert_eq!(failed_attempt(""), None);
    }
}
