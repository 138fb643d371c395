//! What the events say: why the StatefulSet cannot create a missing pod, why a claim stays
//! unbound.

use super::*;

/// The pods of ordinals below the StatefulSet's replicas that do not exist: its controller has
/// not created them yet, or cannot.
pub(super) fn pods_missing(d: &Desired, replicas: u32, pods: &[Pod]) -> Vec<String> {
    let have: std::collections::BTreeSet<u32> = pods
        .iter()
        .filter_map(|p| objects::ordinal_of_pod(&d.name, p.metadata.name.as_deref()?))
        .collect();
    (0..replicas)
        .filter(|k| !have.contains(k))
        .map(|k| objects::pod_name(&d.name, k))
        .collect()
}

/// A failed create within this long is taken to be why a pod is still missing (the
/// StatefulSet controller retries with a backoff of up to about 17 minutes).
const CREATE_FAILURE_SECONDS: i64 = 20 * 60;

/// Why the StatefulSet's controller could not create a member pod or its claim, from its
/// newest `FailedCreate` event (a ResourceQuota, a LimitRange, an admission webhook or policy,
/// a missing PriorityClass or ServiceAccount); `None` when there is none of late or the
/// events may not be read.
pub(super) async fn cannot_create(
    ctx: &Context,
    d: &Desired,
    missing: &[String],
    now: jiff::Timestamp,
) -> Option<String> {
    let api: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(ctx.client.clone(), &d.namespace);
    let lp = ListParams::default().fields(&format!(
        "involvedObject.kind=StatefulSet,involvedObject.name={},reason=FailedCreate",
        objects::statefulset_name(&d.name)
    ));
    let events = match api.list(&lp).await {
        Ok(l) => l.items,
        Err(e) => {
            tracing::debug!(cluster = %d.name, error = %e, "events not read");
            return None;
        }
    };
    newest_create_failure(&events, missing, now)
}

/// A pod the scheduler holds back for its claim, while that claim is Pending: its
/// `unschedulable` says why the claim is not bound, in the provisioner's words, when its events
/// say (only then is anything read).
pub(super) async fn name_unbound_claims(
    ctx: &Context,
    d: &Desired,
    pvcs: &[PersistentVolumeClaim],
    pods: &mut BTreeMap<u32, PodView>,
    now: jiff::Timestamp,
) {
    for (ord, pod) in pods {
        let waits_on_claim = pod
            .unschedulable
            .as_deref()
            .is_some_and(|m| m.contains("PersistentVolumeClaim"));
        let claim = objects::volume_name(&d.name, *ord);
        let pending = pvcs.iter().any(|c| {
            c.metadata.name.as_deref() == Some(claim.as_str())
                && c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending")
        });
        if waits_on_claim
            && pending
            && let Some(why) = claim_trouble(ctx, d, &claim, now).await
        {
            pod.unschedulable = Some(format!("its volume claim {claim} is not bound: {why}"));
        }
    }
}

/// Why the claim `claim` stays unbound, from its newest Warning event of late
/// (`ProvisioningFailed`: a StorageClass that does not exist, a provisioner's refusal, a quota
/// on storage); `None` when there is none or the events may not be read.
async fn claim_trouble(
    ctx: &Context,
    d: &Desired,
    claim: &str,
    now: jiff::Timestamp,
) -> Option<String> {
    let api: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(ctx.client.clone(), &d.namespace);
    let lp = ListParams::default().fields(&format!(
        "involvedObject.kind=PersistentVolumeClaim,involvedObject.name={claim},type=Warning"
    ));
    match api.list(&lp).await {
        Ok(l) => newest_recent(&l.items, |_| true, now),
        Err(e) => {
            tracing::debug!(cluster = %d.name, error = %e, "events not read");
            None
        }
    }
}

/// When an event last happened.
fn event_time(e: &k8s_openapi::api::core::v1::Event) -> Option<jiff::Timestamp> {
    e.last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| e.event_time.as_ref().map(|t| t.0))
        .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// The message of the newest event that `about` picks, when it is recent
/// (`CREATE_FAILURE_SECONDS`).
fn newest_recent(
    events: &[k8s_openapi::api::core::v1::Event],
    about: impl Fn(&k8s_openapi::api::core::v1::Event) -> bool,
    now: jiff::Timestamp,
) -> Option<String> {
    let (at, e) = events
        .iter()
        .filter(|e| about(e))
        .filter_map(|e| Some((event_time(e)?, e)))
        .max_by_key(|(at, _)| *at)?;
    (now.as_second() - at.as_second() <= CREATE_FAILURE_SECONDS)
        .then(|| e.message.clone())
        .flatten()
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
}

/// The message of the newest of these events, when it is recent (`CREATE_FAILURE_SECONDS`) and
/// about a pod still missing (its claim's failure names the pod too): an old refusal of a pod
/// that exists now says nothing.
fn newest_create_failure(
    events: &[k8s_openapi::api::core::v1::Event],
    missing: &[String],
    now: jiff::Timestamp,
) -> Option<String> {
    let about_a_missing_pod = |e: &k8s_openapi::api::core::v1::Event| {
        e.message.as_deref().is_some_and(|m| {
            missing
                .iter()
                .any(|p| m.contains(&format!("Pod {p} ")) || m.contains(&format!("\"{p}\"")))
        })
    };
    newest_recent(events, about_a_missing_pod, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_recent_failed_create_says_why_a_pod_is_missing() {
        let event = |at: i64, message: &str| {
            serde_json::from_value::<k8s_openapi::api::core::v1::Event>(serde_json::json!({
                "metadata": {"name": format!("demo.{at}")},
                "involvedObject": {"kind": "StatefulSet", "name": "demo"},
                "reason": "FailedCreate",
                "message": message,
                "lastTimestamp": jiff::Timestamp::from_second(at).unwrap().to_string(),
            }))
            .unwrap()
        };
        let now = jiff::Timestamp::from_second(10_000).unwrap();
        let quota = "create Pod demo-2 in StatefulSet demo failed error: pods \"demo-2\" is forbidden: \
                     exceeded quota: tight, requested: pods=1, used: pods=2, limited: pods=2";
        let missing = ["demo-2".to_string()];
        let older = "create Pod demo-2 in StatefulSet demo failed error: an older refusal";
        assert_eq!(
            newest_create_failure(&[event(9_000, older), event(9_900, quota)], &missing, now)
                .as_deref(),
            Some(quota)
        );
        // One from long ago, or about a pod that exists now, says nothing.
        assert_eq!(
            newest_create_failure(&[event(1_000, quota)], &missing, now),
            None
        );
        assert_eq!(
            newest_create_failure(&[event(9_900, quota)], &["demo-1".to_string()], now),
            None
        );
        assert_eq!(newest_create_failure(&[], &missing, now), None);
        let d = crate::fixtures::cluster("demo").desired();
        let pod = |name: &str| Pod {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            pods_missing(&d, 3, &[pod("demo-0"), pod("demo-1")]),
            ["demo-2"]
        );
        assert!(pods_missing(&d, 2, &[pod("demo-0"), pod("demo-1")]).is_empty());
    }
}
