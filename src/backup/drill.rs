//! Restore drills: a backup restored into a throwaway one-member etcd (`objects::drill`: one
//! pod, a NetworkPolicy admitting nothing), its figures compared with the record and the live
//! cluster (`model::records::drill::verdict`, pure), the result written on the record
//! (`status.drill`), and everything deleted. The live cluster is only read (its `HashKV` and
//! key count at the restored revision).
//!
//! Cleaning up: what an earlier drill of the cluster left (its driver killed mid-drill) is
//! deleted before a drill starts; this drill's pod and policy are deleted on every way out; the
//! cluster owns both (its deletion deletes them) and the pod stops itself after
//! `objects::drill::DEADLINE_SECONDS`.

use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams};

use super::take;
use crate::api::{DrillStatus, EtcdBackup};
use crate::archive::store::{Access, Location};
use crate::error::{BackupError, Error};
use crate::etcd::HashAt;
use crate::model::records::drill::{
    DrillFigures, Live, Read, Recorded, Restored, Verdict, verdict,
};
use crate::model::{Desired, Observed, RestoreSource};
use crate::objects::drill as pod;
use crate::reach::Reach;

/// Drills `record` of the cluster `d` (observed as `o`) with the tools image `tools_image`:
/// returns the record as written (its `status.drill` set) and the verdict. An `Err` is a drill
/// that could not run (the API refused a pod, the store cannot be reached): nothing is
/// written on the record then.
pub async fn run(
    reach: &Reach,
    (d, o): (&Desired, &Observed),
    record: &EtcdBackup,
    tools_image: &str,
) -> Result<(EtcdBackup, Verdict), Error> {
    let started = Instant::now();
    let (url, source) = source(d, record, tools_image)?;
    let read = head(reach, d, record, &url, tools_image).await?;
    clean_up(&reach.client, d).await?;
    let pod_name = pod::pod_name(&record.name_any());
    let ran = in_pod(&reach.client, d, &source, &pod_name).await;
    clean_up(&reach.client, d).await?;
    let ran = ran?;
    let read = as_read(Some(read), &ran);
    conclude(reach, (d, o), record, (read, ran), started.elapsed()).await
}

/// `Step::Drill(Start)`: the drill pod of `record` and its NetworkPolicy, labelled as the
/// engine's (`objects::drill::scheduled`); returns once both exist, and the pod runs beside the
/// passes. A record whose object is not in the store is refused before anything is created.
pub async fn start(
    reach: &Reach,
    d: &Desired,
    record: &EtcdBackup,
    tools_image: &str,
) -> Result<(), Error> {
    let (url, source) = source(d, record, tools_image)?;
    head(reach, d, record, &url, tools_image).await?;
    let name = pod::pod_name(&record.name_any());
    create(&reach.client, d, &source, &name, true).await
}

/// `Step::Drill(Finish)`: the drill pod `pod_name` of `record` ended `ended` after `took`: the
/// verdict is written on the record, then the pod and its NetworkPolicy are deleted.
pub async fn finish(
    reach: &Reach,
    (d, o): (&Desired, &Observed),
    record: &EtcdBackup,
    (pod_name, ended, took): (&str, Result<DrillFigures, String>, Duration),
    tools_image: &str,
) -> Result<(EtcdBackup, Verdict), Error> {
    let (url, _) = source(d, record, tools_image)?;
    // The stamp stored with the object; a failed drill's size as the store says it.
    let stored = head(reach, d, record, &url, tools_image).await.ok();
    let read = as_read(stored, &ended);
    let done = conclude(reach, (d, o), record, (read, ended), took).await?;
    delete(
        &reach.client,
        d,
        &[pod_name.to_string()],
        &[pod_name.to_string()],
    )
    .await?;
    Ok(done)
}

/// Where `record`'s object is and how the drill pod reads it.
fn source(
    d: &Desired,
    record: &EtcdBackup,
    tools_image: &str,
) -> Result<(String, RestoreSource), Error> {
    let st = record.status.clone().unwrap_or_default();
    let url = st.url.clone().ok_or_else(|| {
        BackupError::Usage(format!(
            "EtcdBackup {}/{} names no stored object (phase {}): there is nothing to drill",
            d.namespace,
            record.name_any(),
            st.phase.as_deref().unwrap_or("unknown")
        ))
    })?;
    let source = RestoreSource {
        url: url.clone(),
        // Read to its end in any case: the verdict compares the sha256 with the record.
        sha256: None,
        credentials_secret: record.spec.credentials_secret.clone(),
        tools_image: tools_image.into(),
        nonce: None,
        encryption: record.spec.encryption.as_ref().map(|e| e.key_secret()),
    };
    Ok((url, source))
}

/// The object as the drill read it: what the pod's fetch read when it restored (the store's
/// stamp beside it), else what the store says (`stored`).
fn as_read(stored: Option<Read>, ran: &Result<DrillFigures, String>) -> Option<Read> {
    match ran {
        Ok(f) => Some(Read {
            size: f.fetched.stored_bytes,
            sha256: Some(f.fetched.sha256.clone()),
            stamp: stored.and_then(|r| r.stamp),
        }),
        Err(_) => stored,
    }
}

/// The verdict of a drill that ran (`read`, and its pod's outcome), compared with the record and
/// the live cluster, written on the record (`status.drill`).
async fn conclude(
    reach: &Reach,
    (d, o): (&Desired, &Observed),
    record: &EtcdBackup,
    (read, ran): (Option<Read>, Result<DrillFigures, String>),
    took: Duration,
) -> Result<(EtcdBackup, Verdict), Error> {
    let name = record.name_any();
    let restored = ran.map(|f| f.restored);
    let live = match &restored {
        Ok(r) => live_at(reach, d, o, r.revision).await,
        Err(_) => Live::Unknown("nothing restored".into()),
    };
    let figures = restored.as_ref().ok().copied();
    let v = verdict(&Recorded::of(record), read.as_ref(), restored, &live);
    let url = record
        .status
        .as_ref()
        .and_then(|s| s.url.clone())
        .unwrap_or_default();
    let drill = status(&url, read.as_ref(), figures.as_ref(), &live, &v, took);
    let mut st = record.status.clone().unwrap_or_default();
    st.drill = Some(drill);
    take::write_status(reach, record, &st).await?;
    let mut written = record.clone();
    written.status = Some(st);
    tracing::info!(cluster = %d.name, namespace = %d.namespace, backup = %name, outcome = v.outcome(), "restore drill: {}", v.message().unwrap_or_default());
    Ok((written, v))
}

/// The stored object's size and stamp, as the store says (missing: a usage of a record whose
/// object is gone, said as such).
async fn head(
    reach: &Reach,
    d: &Desired,
    record: &EtcdBackup,
    url: &str,
    tools_image: &str,
) -> Result<Read, Error> {
    let (loc, key) = Location::parse_object(url).map_err(BackupError::from)?;
    let store = super::open_store(
        &reach.client,
        &d.namespace,
        &loc,
        record.spec.credentials_secret.as_deref(),
        tools_image,
        &Access::ANY,
    )
    .await?;
    let info = store.head(&key).await;
    store.close().await;
    let info = info.map_err(BackupError::from)?.ok_or_else(|| {
        BackupError::Corrupt(format!(
            "{url}, the object of EtcdBackup {}/{}, is not in the store (deleted or moved)",
            d.namespace,
            record.name_any()
        ))
    })?;
    Ok(Read {
        size: info.size,
        sha256: None,
        stamp: info.stamp,
    })
}

/// Creates the drill pod `name` restoring `r` and its NetworkPolicy (the policy first: the pod
/// is never reachable); `scheduled`: labelled as the engine's.
async fn create(
    client: &kube::Client,
    d: &Desired,
    r: &RestoreSource,
    name: &str,
    scheduled: bool,
) -> Result<(), Error> {
    let pp = PostParams::default();
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), &d.namespace);
    policies
        .create(&pp, &pod::network_policy(d, name))
        .await
        .map_err(|e| Error::kube("create", "NetworkPolicy", &d.namespace, name, e))?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &d.namespace);
    let mut p = pod::pod(d, r, name);
    if scheduled {
        p = pod::scheduled(p);
    }
    pods.create(&pp, &p)
        .await
        .map_err(|e| Error::kube("create", "Pod", &d.namespace, name, e))?;
    Ok(())
}

/// Runs the drill pod to its end: `Ok(Ok(figures))` when it restored and read, `Ok(Err(why))`
/// when the backup did not restore (a container failed: its last words).
async fn in_pod(
    client: &kube::Client,
    d: &Desired,
    r: &RestoreSource,
    name: &str,
) -> Result<Result<DrillFigures, String>, Error> {
    create(client, d, r, name, false).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &d.namespace);
    let deadline = Instant::now() + Duration::from_secs(pod::DEADLINE_SECONDS.unsigned_abs() + 30);
    loop {
        let p = pods
            .get(name)
            .await
            .map_err(|e| Error::kube("get", "Pod", &d.namespace, name, e))?;
        if let Some(done) = finished(&p) {
            return Ok(done);
        }
        if Instant::now() > deadline {
            return Ok(Err(format!(
                "the drill pod {}/{name} did not finish within {} s",
                d.namespace,
                pod::DEADLINE_SECONDS
            )));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The drill pod's outcome once it ended (pure): the figures of its `read` container, or the
/// last words of the container that failed.
pub fn finished(p: &Pod) -> Option<Result<DrillFigures, String>> {
    let st = p.status.as_ref()?;
    let phase = st.phase.as_deref()?;
    let terminated = |c: &k8s_openapi::api::core::v1::ContainerStatus| {
        c.state
            .as_ref()?
            .terminated
            .clone()
            .map(|t| (c.name.clone(), t))
    };
    match phase {
        "Succeeded" => {
            let read = st
                .container_statuses
                .iter()
                .flatten()
                .filter_map(terminated)
                .find(|(n, _)| n == pod::READ_CONTAINER)?;
            let message = read.1.message.unwrap_or_default();
            Some(
                serde_json::from_str(message.trim())
                    .map_err(|e| format!("the drill's figures cannot be read ({e}): {message}")),
            )
        }
        "Failed" => {
            let failed = st
                .init_container_statuses
                .iter()
                .flatten()
                .chain(st.container_statuses.iter().flatten())
                .filter_map(terminated)
                .find(|(_, t)| t.exit_code != 0);
            Some(Err(match failed {
                Some((c, t)) => format!(
                    "its {c} step failed: {}",
                    last_words(t.message.as_deref().unwrap_or(""))
                ),
                None => st
                    .message
                    .clone()
                    .unwrap_or_else(|| "the drill pod failed".into()),
            }))
        }
        _ => None,
    }
}

/// The last non-empty line of a container's message (its error, without the log before it).
fn last_words(message: &str) -> String {
    message
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no message)")
        .trim()
        .to_string()
}

/// Deletes every drill pod and policy of the cluster `d` (this drill's, or an earlier one's).
async fn clean_up(client: &kube::Client, d: &Desired) -> Result<(), Error> {
    let lp = ListParams::default().labels(&pod::selector(&d.name));
    let dp = DeleteParams::background();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &d.namespace);
    pods.delete_collection(&dp, &lp)
        .await
        .map_err(|e| Error::kube("delete", "Pod", &d.namespace, &pod::selector(&d.name), e))?;
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), &d.namespace);
    policies.delete_collection(&dp, &lp).await.map_err(|e| {
        Error::kube(
            "delete",
            "NetworkPolicy",
            &d.namespace,
            &pod::selector(&d.name),
            e,
        )
    })?;
    // Gone before a new drill creates one of the same name.
    for _ in 0..60 {
        let left = pods
            .list(&lp)
            .await
            .map_err(|e| Error::kube("list", "Pod", &d.namespace, &pod::selector(&d.name), e))?;
        if left.items.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Ok(())
}

/// `Step::Drill(Sweep)` and a finished drill: deletes the drill pods `pods` and NetworkPolicies
/// `policies` of the cluster `d` by name (one gone already is no error).
pub async fn delete(
    client: &kube::Client,
    d: &Desired,
    pods: &[String],
    policies: &[String],
) -> Result<(), Error> {
    let dp = DeleteParams::background();
    let pod_api: Api<Pod> = Api::namespaced(client.clone(), &d.namespace);
    for p in pods {
        if let Err(e) = pod_api.delete(p, &dp).await
            && !matches!(&e, kube::Error::Api(s) if s.code == 404)
        {
            return Err(Error::kube("delete", "Pod", &d.namespace, p, e));
        }
    }
    let policy_api: Api<NetworkPolicy> = Api::namespaced(client.clone(), &d.namespace);
    for p in policies {
        if let Err(e) = policy_api.delete(p, &dp).await
            && !matches!(&e, kube::Error::Api(s) if s.code == 404)
        {
            return Err(Error::kube("delete", "NetworkPolicy", &d.namespace, p, e));
        }
    }
    Ok(())
}

/// The live cluster at `revision`: the first member that answers.
async fn live_at(reach: &Reach, d: &Desired, o: &Observed, revision: i64) -> Live {
    let mut last = "no member answered".to_string();
    for (ordinal, p) in &o.pods {
        let Ok(mut c) = reach.connect(d, *ordinal, p.ip.as_deref()).await else {
            continue;
        };
        match c.hash_at(revision).await {
            Ok(HashAt::Hash {
                hash_kv,
                compact_revision,
                keys,
            }) => {
                return Live::Hash {
                    hash_kv,
                    compact_revision,
                    keys,
                };
            }
            Ok(HashAt::Compacted) => {
                let compact_revision = c.hash_at(0).await.ok().map_or(0, |h| match h {
                    HashAt::Hash {
                        compact_revision, ..
                    } => compact_revision,
                    _ => 0,
                });
                return Live::Compacted { compact_revision };
            }
            Ok(HashAt::Future { revision }) => return Live::Behind { revision },
            Err(e) => last = Error::from(BackupError::Etcd(Box::new(e))).report(),
        }
    }
    Live::Unknown(last)
}

/// The record's `status.drill`.
fn status(
    url: &str,
    read: Option<&Read>,
    restored: Option<&Restored>,
    live: &Live,
    v: &Verdict,
    took: Duration,
) -> DrillStatus {
    DrillStatus {
        time: Some(Time(Timestamp::now())),
        outcome: v.outcome().into(),
        objects: vec![url.to_string()],
        size: read.and_then(|r| i64::try_from(r.size).ok()),
        sha256: read.and_then(|r| r.sha256.clone()),
        revision: restored.map(|r| r.revision),
        keys: restored.map(|r| r.keys),
        hash_kv: restored.map(|r| i64::from(r.hash_kv)),
        compact_revision: restored.map(|r| r.compact_revision),
        // Only a compared one: over the same compaction as the restored member's.
        live_hash_kv: match (live, restored) {
            (
                Live::Hash {
                    hash_kv,
                    compact_revision,
                    ..
                },
                Some(r),
            ) if *compact_revision == r.compact_revision => Some(i64::from(*hash_kv)),
            _ => None,
        },
        message: v.message(),
        duration_seconds: Some(took.as_secs_f64()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateTerminated, ContainerStatus, PodStatus,
    };

    fn ended(name: &str, code: i32, message: &str) -> ContainerStatus {
        ContainerStatus {
            name: name.into(),
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: code,
                    message: Some(message.into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pod_in(phase: &str, init: Vec<ContainerStatus>, main: Vec<ContainerStatus>) -> Pod {
        Pod {
            status: Some(PodStatus {
                phase: Some(phase.into()),
                init_container_statuses: Some(init),
                container_statuses: Some(main),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_finished_drill_pod_gives_its_figures_or_the_failed_steps_last_words() {
        assert!(finished(&pod_in("Running", vec![], vec![])).is_none());
        let json = r#"{"fetched":{"storedBytes":10,"sha256":"ab"},"restored":{"revision":5,"keys":2,"hashKv":7,"compactRevision":1}}"#;
        let ok = finished(&pod_in("Succeeded", vec![], vec![ended("read", 0, json)]))
            .unwrap()
            .unwrap();
        assert_eq!(ok.restored.revision, 5);
        assert_eq!(ok.fetched.stored_bytes, 10);
        let failed = finished(&pod_in(
            "Failed",
            vec![ended(
                "fetch",
                10,
                "INFO starting\nerror: the snapshot is unusable: it ended without etcd's hash\n",
            )],
            vec![],
        ))
        .unwrap()
        .unwrap_err();
        assert_eq!(
            failed,
            "its fetch step failed: error: the snapshot is unusable: it ended without etcd's hash"
        );
    }
}
