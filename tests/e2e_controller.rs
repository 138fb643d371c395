//! The operator in this process (`operate::run_until`) against the testbed's API server: it
//! leads, bootstraps and scales a cluster, reports Events and metrics, lets go on shutdown, and
//! a standby takes over. Clusters and Leases live in the test's own namespace, so it never
//! contends with a real operator or other tests.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{Ns, client, engine_client, eventually_async as eventually};
use futures::FutureExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use kubectl_etcd::api::{EtcdCluster, reason};
use kubectl_etcd::engine::Dial;
use kubectl_etcd::lease;
use kubectl_etcd::operate::{
    ACTION, MetricsAuth, OperateOptions, RENEW_EVERY, REPORTER, run_until,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

async fn get(addr: SocketAddr, path: &str) -> String {
    try_get(addr, path)
        .await
        .unwrap_or_else(|e| panic!("GET {path} from {addr}: {e}"))
}

/// `get`, with a failed connection or read as an error: a poll waiting for readiness counts it as
/// "not yet" (a server still starting on a loaded machine may reset a connection).
async fn try_get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
    let mut conn = tokio::net::TcpStream::connect(addr).await?;
    conn.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .await?;
    let mut out = String::new();
    conn.read_to_string(&mut out).await?;
    Ok(out)
}

#[tokio::test(flavor = "multi_thread")]
// Runs with --features e2e (tests/run-all.sh), against $KUBECONFIG.
async fn the_leader_bootstraps_a_cluster_reports_it_and_lets_go_on_shutdown() {
    let client = engine_client().await;
    let pid = std::process::id();
    let ns_guard = Ns::new("operate");
    let ns = ns_guard.0.clone();
    let clusters: Api<EtcdCluster> = Api::namespaced(client.clone(), &ns);
    let identity = format!("operator/test-{pid}");
    // Distinct port ranges per test: the tests of one run share a pid.
    let addr: SocketAddr = format!("127.0.0.1:{}", 20000 + pid % 5000).parse().unwrap();
    let op = common::InProcessOperator::start(OperateOptions {
        identity: identity.clone(),
        lease_namespace: ns.clone(),
        // Read below without a token (the guard of /metrics is e2e_namespaced's).
        metrics_auth: MetricsAuth::Off,
        ..OperateOptions::new(client.clone(), Some(ns.clone()), addr, Dial::PortForward)
    });

    let outcome = std::panic::AssertUnwindSafe(async {
        let cluster: EtcdCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "etcd.kubectl-etcd.io/v1alpha1", "kind": "EtcdCluster",
            "metadata": { "name": "demo" }, "spec": { "replicas": 1, "version": "3.5.16" },
        }))
        .unwrap();
        clusters
            .create(&PostParams::default(), &cluster)
            .await
            .unwrap();
        let sts: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
        eventually("the StatefulSet", 60, || async {
            sts.get_opt(&kubectl_etcd::objects::statefulset_name("demo"))
                .await
                .unwrap()
        })
        .await;
        let events: Api<K8sEvent> = Api::namespaced(client.clone(), &ns);
        let ev = eventually("a Bootstrapping event", 30, || async {
            events
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .find(|e| e.reason.as_deref() == Some(reason::BOOTSTRAPPING))
        })
        .await;
        assert_eq!(ev.type_.as_deref(), Some("Normal"));
        assert_eq!(ev.reporting_controller.as_deref(), Some(REPORTER));
        assert_eq!(ev.action.as_deref(), Some(ACTION));
        assert_eq!(
            ev.regarding.as_ref().and_then(|r| r.name.as_deref()),
            Some("demo")
        );

        assert_eq!(
            lease::recorded_holder(client.clone(), &ns, &lease::leader_lease(Some(&ns)))
                .await
                .unwrap()
                .as_deref(),
            Some(identity.as_str())
        );
        // ... and only those: a CLI on a cluster outside its watched namespace does not defer.
        let elsewhere = lease::Lock::new(
            client.clone(),
            &ns,
            &lease::cluster_lease("elsewhere", "demo"),
            "cli/test/1",
            Duration::from_secs(20),
        );
        assert_eq!(
            elsewhere.try_acquire_or_renew().await.unwrap(),
            lease::Acquired::Held
        );
        elsewhere.release().await;
        let text = get(addr, "/metrics").await;
        assert!(text.contains("\nkubectl_etcd_leader 1\n"), "{text}");
        assert!(
            !text.contains("kubectl_etcd_reconciles_total{result=\"acted\"} 0\n"),
            "{text}"
        );
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
        assert!(get(addr, "/healthz").await.starts_with("HTTP/1.1 200"));

        // The controller keeps requeueing until the member runs; then a scale-up (learner
        // add, join, promote: several NotYet/Wait passes) converges through watch + requeue.
        let running = |replicas: i32| {
            let clusters = clusters.clone();
            move || {
                let clusters = clusters.clone();
                async move {
                    let c = clusters.get("demo").await.unwrap();
                    let s = c.status.unwrap_or_default();
                    (s.phase == Some(kubectl_etcd::api::Phase::Running)
                        && s.ready_replicas == replicas)
                        .then_some(())
                }
            }
        };
        eventually("demo to run with 1 member", 120, running(1)).await;
        // The leader holds the Lease of each cluster it acts on (so CLIs defer to it there).
        let cluster_lease = lease::cluster_lease(&ns, "demo");
        assert_eq!(
            lease::recorded_holder(client.clone(), &ns, &cluster_lease)
                .await
                .unwrap()
                .as_deref(),
            Some(identity.as_str())
        );
        clusters
            .patch(
                "demo",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(serde_json::json!({"spec": {"replicas": 3}})),
            )
            .await
            .unwrap();
        eventually("demo to run with 3 members", 240, running(3)).await;
        let text = get(addr, "/metrics").await;
        assert!(
            text.contains("\nkubectl_etcd_clusters{phase=\"Running\"} 1\n"),
            "{text}"
        );
        let reasons: Vec<String> = events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|e| e.reason)
            .collect();
        for r in [reason::ADDING_LEARNER, reason::PROMOTING_LEARNER] {
            assert!(
                reasons.iter().any(|x| x == r),
                "no {r} event in {reasons:?}"
            );
        }

        common::delete_and_wait_gone(&clusters, "demo").await;
        assert_eq!(
            lease::recorded_holder(client.clone(), &ns, &lease::cluster_lease(&ns, "demo"))
                .await
                .unwrap(),
            None,
            "a deleted cluster's lease is let go"
        );
    })
    .catch_unwind()
    .await;

    let stopped = op.stop().await;
    let holder = lease::recorded_holder(client.clone(), &ns, &lease::leader_lease(Some(&ns))).await;
    if outcome.is_err() {
        // Leave nothing behind that a finalizer would block.
        if let Ok(Some(c)) = clusters.get_opt("demo").await {
            let _ = clusters
                .patch(
                    &c.name_any(),
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
                )
                .await;
        }
    }
    drop(ns_guard);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    stopped
        .expect("the operator stops within 30 s of a shutdown")
        .unwrap();
    assert_eq!(holder.unwrap(), None, "the lease was released on shutdown");
}

fn options(client: &kube::Client, ns: &str, who: &str, port: u16) -> OperateOptions {
    OperateOptions {
        identity: lease::operator_identity(who),
        lease_namespace: ns.into(),
        metrics_auth: MetricsAuth::Off,
        ..OperateOptions::new(
            client.clone(),
            Some(ns.into()),
            SocketAddr::from(([127, 0, 0, 1], port)),
            Dial::PortForward,
        )
    }
}

#[tokio::test(flavor = "multi_thread")]
// Runs with --features e2e (tests/run-all.sh), against $KUBECONFIG.
async fn a_standby_takes_over_from_a_stopped_leader_and_a_leader_that_loses_the_lease_exits() {
    use k8s_openapi::api::coordination::v1::Lease;
    let client = client().await;
    kubectl_etcd::engine::apply_crd(&client).await.unwrap();
    let pid = std::process::id();
    let ns_guard = Ns::new("failover");
    let ns = ns_guard.0.clone();
    let port = (25000 + pid % 5000) as u16;
    let spawn = |who: &str, port: u16, token: CancellationToken| {
        let opts = options(&client, &ns, who, port);
        tokio::spawn(async move { run_until(opts, token).await })
    };
    let holder = || async {
        lease::recorded_holder(client.clone(), &ns, &lease::leader_lease(Some(&ns)))
            .await
            .unwrap()
    };

    let outcome = std::panic::AssertUnwindSafe(async {
        let (stop_a, stop_b) = (CancellationToken::new(), CancellationToken::new());
        let a = spawn("a", port, stop_a.clone());
        eventually("a to lead", 30, || async {
            (holder().await.as_deref() == Some("operator/a")).then_some(())
        })
        .await;
        let b = spawn("b", port + 1, stop_b.clone());
        let b_addr = SocketAddr::from(([127, 0, 0, 1], port + 1));
        eventually("b to stand by, ready", 30, || async {
            try_get(b_addr, "/readyz")
                .await
                .ok()?
                .starts_with("HTTP/1.1 200")
                .then_some(())
        })
        .await;
        assert!(
            get(b_addr, "/metrics")
                .await
                .contains("\nkubectl_etcd_leader 0\n")
        );

        stop_a.cancel();
        a.await.unwrap().expect("a stops cleanly on shutdown");
        eventually("b to take over", 10, || async {
            (holder().await.as_deref() == Some("operator/b")).then_some(())
        })
        .await;
        eventually("b to report leading", 5, || async {
            get(b_addr, "/metrics")
                .await
                .contains("\nkubectl_etcd_leader 1\n")
                .then_some(())
        })
        .await;

        // Someone else takes the Lease (as after a partition): b must stop within a renew period.
        let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
        let mut l = leases.get(&lease::leader_lease(Some(&ns))).await.unwrap();
        let spec = l.spec.as_mut().unwrap();
        spec.holder_identity = Some("cli/thief/1".into());
        spec.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            jiff::Timestamp::now(),
        ));
        leases
            .replace(&lease::leader_lease(Some(&ns)), &PostParams::default(), &l)
            .await
            .unwrap();
        let err = tokio::time::timeout(RENEW_EVERY * 2, b)
            .await
            .expect("b exits")
            .unwrap()
            .unwrap_err();
        assert!(
            err.report()
                .contains("lost the engine lease to cli/thief/1"),
            "{}",
            err.report()
        );
        assert_eq!(
            holder().await.as_deref(),
            Some("cli/thief/1"),
            "a leader that lost the lease does not release it"
        );
    })
    .catch_unwind()
    .await;
    drop(ns_guard);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}
