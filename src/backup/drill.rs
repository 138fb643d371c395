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
    let name = record.name_any();
    let st = record.status.clone().unwrap_or_default();
    let url = st.url.clone().ok_or_else(|| {
        BackupError::Usage(format!(
            "EtcdBackup {}/{name} names no stored object (phase {}): there is nothing to drill",
            d.namespace,
            st.phase.as_deref().unwrap_or("unknown")
        ))
    })?;
    let read = head(reach, d, record, &url, tools_image).await?;
    let source = RestoreSource {
        url: url.clone(),
        // Read to its end in any case: the verdict compares the sha256 with the record.
        sha256: None,
        credentials_secret: record.spec.credentials_secret.clone(),
        tools_image: tools_image.into(),
        nonce: None,
        encryption: record.spec.encryption.as_ref().map(|e| e.key_secret()),
    };
    clean_up(&reach.client, d).await?;
    let pod_name = pod::pod_name(&name);
    let ran = in_pod(&reach.client, d, &source, &pod_name).await;
    clean_up(&reach.client, d).await?;
    let (read, restored) = match ran? {
        Ok(f) => (
            Read {
                size: f.fetched.stored_bytes,
                sha256: Some(f.fetched.sha256),
                stamp: read.stamp,
            },
            Ok(f.restored),
        ),
        Err(why) => (read, Err(why)),
    };
    let live = match &restored {
        Ok(r) => live_at(reach, d, o, r.revision).await,
        Err(_) => Live::Unknown("nothing restored".into()),
    };
    let figures = restored.as_ref().ok().copied();
    let v = verdict(&Recorded::of(record), Some(&read), restored, &live);
    let drill = status(&url, &read, figures.as_ref(), &live, &v, started);
    let mut st = st;
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

/// Runs the drill pod to its end: `Ok(Ok(figures))` when it restored and read, `Ok(Err(why))`
/// when the backup did not restore (a container failed: its last words).
async fn in_pod(
    client: &kube::Client,
    d: &Desired,
    r: &RestoreSource,
    name: &str,
) -> Result<Result<DrillFigures, String>, Error> {
    let pp = PostParams::default();
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), &d.namespace);
    policies
        .create(&pp, &pod::network_policy(d, name))
        .await
        .map_err(|e| Error::kube("create", "NetworkPolicy", &d.namespace, name, e))?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &d.namespace);
    pods.create(&pp, &pod::pod(d, r, name))
        .await
        .map_err(|e| Error::kube("create", "Pod", &d.namespace, name, e))?;
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
    read: &Read,
    restored: Option<&Restored>,
    live: &Live,
    v: &Verdict,
    started: Instant,
) -> DrillStatus {
    DrillStatus {
        time: Some(Time(Timestamp::now())),
        outcome: v.outcome().into(),
        objects: vec![url.to_string()],
        size: i64::try_from(read.size).ok(),
        sha256: read.sha256.clone(),
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
        duration_seconds: Some(started.elapsed().as_secs_f64()),
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
