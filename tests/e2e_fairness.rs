//! Fair sharing (issue 42 item 5) with the operator in this process (`operate::run_until`),
//! watching only the test's own two namespaces: with one backup slot and one pass slot per
//! namespace, several due backups in namespace A never hold back a cluster of namespace B, and
//! A's backups all complete, one at a time.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's.
#![allow(clippy::too_many_lines)]

mod common;

use std::collections::BTreeSet;
use std::net::SocketAddr;

use common::{Ns, engine_client, eventually_async as eventually, s3, s3_secret};
use futures::FutureExt;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use kubectl_etcd::api::{EtcdBackup, EtcdCluster, Phase};
use kubectl_etcd::archive::store::Access;
use kubectl_etcd::engine::Dial;
use kubectl_etcd::model::fair::Bounds;
use kubectl_etcd::operate::{MetricsAuth, OperateOptions};

/// Clusters in namespace A, each with a backup due at once (`runOnCreate`) and every minute.
const FLOOD: usize = 3;

fn cluster(name: &str, backup: Option<serde_json::Value>) -> EtcdCluster {
    let mut spec = serde_json::json!({ "replicas": 1, "version": "3.5.16" });
    if let Some(b) = backup {
        spec["backup"] = b;
    }
    serde_json::from_value(serde_json::json!({
        "apiVersion": "etcd.kubectl-etcd.io/v1alpha1", "kind": "EtcdCluster",
        "metadata": { "name": name }, "spec": spec,
    }))
    .unwrap()
}

fn running(c: &EtcdCluster) -> bool {
    let s = c.status.clone().unwrap_or_default();
    s.phase == Some(Phase::Running) && s.ready_replicas == 1
}

#[tokio::test(flavor = "multi_thread")]
// Runs with --features e2e (tests/run-all.sh), against $KUBECONFIG, with S3 (/tmp/tb/s3.env).
async fn with_one_slot_a_namespaces_due_backups_never_hold_back_another_namespaces_cluster() {
    let client = engine_client().await;
    let (endpoint, bucket) = s3();
    let (a_guard, b_guard) = (Ns::new("fair-a"), Ns::new("fair-b"));
    let (a, b) = (a_guard.0.clone(), b_guard.0.clone());
    s3_secret(&a, "s3-creds", &endpoint);
    let addr = SocketAddr::from(([127, 0, 0, 1], common::free_port()));
    let op = common::InProcessOperator::start(OperateOptions {
        namespaces: vec![a.clone(), b.clone()],
        lease_namespace: a.clone(),
        metrics_auth: MetricsAuth::Off,
        store_access: Access::operator(false, std::slice::from_ref(&endpoint)),
        backup_bounds: Bounds {
            per_namespace: 1,
            total: 1,
        },
        pass_bounds: Bounds {
            per_namespace: 1,
            ..Bounds::PASSES
        },
        ..OperateOptions::new(client.clone(), None, addr, Dial::PortForward)
    });

    let outcome = std::panic::AssertUnwindSafe(async {
        let in_a: Api<EtcdCluster> = Api::namespaced(client.clone(), &a);
        let in_b: Api<EtcdCluster> = Api::namespaced(client.clone(), &b);
        let records: Api<EtcdBackup> = Api::namespaced(client.clone(), &a);
        let backup = serde_json::json!({
            "destination": format!("s3://{bucket}/e2e/{a}/fair"),
            "credentialsSecret": "s3-creds",
            "schedule": "* * * * *",
            "runOnCreate": true,
            "retention": { "keepLast": 1 },
        });
        let flood: Vec<String> = (0..FLOOD).map(|i| format!("flood-{i}")).collect();
        for name in &flood {
            in_a.create(&PostParams::default(), &cluster(name, Some(backup.clone())))
                .await
                .unwrap();
        }
        in_b.create(&PostParams::default(), &cluster("lone", None))
            .await
            .unwrap();

        // B's one cluster converges while A's clusters bootstrap and their backups queue up;
        // meanwhile A never has two backups running at once (the bound is 1), and the ones held
        // back say so in their condition.
        let (most_running, queued_seen) = (
            std::sync::Mutex::new(0usize),
            std::sync::Mutex::new(BTreeSet::new()),
        );
        let watch_a = || async {
            let list = records.list(&Default::default()).await.unwrap().items;
            let now = list
                .iter()
                .filter(|r| r.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
                .count();
            {
                let mut most = most_running.lock().unwrap();
                *most = (*most).max(now);
            }
            for c in in_a.list(&Default::default()).await.unwrap().items {
                let queued = c
                    .status
                    .iter()
                    .flat_map(|s| &s.conditions)
                    .any(|k| k.reason == kubectl_etcd::api::Reason::BackupQueued.as_str());
                if queued {
                    queued_seen.lock().unwrap().insert(c.name_any());
                }
            }
            list
        };
        eventually(
            "B's cluster to run beside A's queued backups",
            300,
            || async {
                watch_a().await;
                running(&in_b.get("lone").await.unwrap()).then_some(())
            },
        )
        .await;
        // Every one of A's clusters gets its scheduled backup, one slot at a time.
        eventually(
            "a successful scheduled backup of each of A's clusters",
            420,
            || async {
                let done: BTreeSet<String> = watch_a()
                    .await
                    .into_iter()
                    .filter(|r| {
                        r.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded")
                    })
                    .map(|r| r.spec.cluster)
                    .collect();
                (done.len() == FLOOD).then_some(done)
            },
        )
        .await;
        let most = *most_running.lock().unwrap();
        assert!(
            most <= 1,
            "{most} backups seen running at once with --max-backups 1"
        );
        eprintln!(
            "clusters of A seen waiting for a backup slot (BackupQueued): {:?}",
            queued_seen.lock().unwrap()
        );
    })
    .catch_unwind()
    .await;
    let stopped = op.stop().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    stopped
        .expect("the operator stops within 30 s of a shutdown")
        .unwrap();
}
