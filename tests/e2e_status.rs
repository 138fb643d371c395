//! One writer per status, read from the API server's own record (`metadata.managedFields`): a
//! cluster is created and scaled by the CLI, backed up by the CLI, given a schedule by a user, and
//! run by the operator (in this process) until a scheduled backup succeeded. Every field of
//! `EtcdCluster.status` is then the engine's (one server-side apply), its spec the CLI's and the
//! user's, and every `EtcdBackup.status` the backup taker's. A second writer of a status, or an
//! engine that writes spec, shows up as a managedFields entry and fails the test.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use futures::FutureExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kubectl_etcd::api::{EtcdBackup, EtcdCluster};
use kubectl_etcd::backup::label::{TRIGGER_CLI, TRIGGER_SCHEDULE};
use kubectl_etcd::engine::Dial;
use kubectl_etcd::keys::{MANAGER_BACKUP, MANAGER_CLI, MANAGER_ENGINE};
use kubectl_etcd::operate::OperateOptions;

/// The field manager this test writes spec as, standing for a person with kubectl.
const USER: &str = "e2e-user";

/// Whether a managedFields entry owns anything under `top` (`f:status`, `f:spec`).
fn touches(e: &ManagedFieldsEntry, top: &str) -> bool {
    e.fields_v1
        .as_ref()
        .is_some_and(|f| f.0.get(format!("f:{top}")).is_some())
}

fn describe(entries: &[ManagedFieldsEntry]) -> String {
    entries
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {}",
                e.manager.as_deref().unwrap_or("?"),
                e.operation.as_deref().unwrap_or("?"),
                e.subresource.as_deref().unwrap_or("-"),
                e.fields_v1
                    .as_ref()
                    .map(|f| f.0.to_string())
                    .unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every entry that owns a field of the status is `manager`'s one apply of the status subresource.
fn assert_one_status_writer(what: &str, entries: &[ManagedFieldsEntry], manager: &str) {
    let writers: Vec<&ManagedFieldsEntry> =
        entries.iter().filter(|e| touches(e, "status")).collect();
    assert!(
        !writers.is_empty(),
        "{what}: nobody owns its status:\n{}",
        describe(entries)
    );
    for e in writers {
        assert_eq!(
            (
                e.manager.as_deref(),
                e.operation.as_deref(),
                e.subresource.as_deref()
            ),
            (Some(manager), Some("Apply"), Some("status")),
            "{what}: a second writer of its status:\n{}",
            describe(entries)
        );
    }
}

/// Runs a blocking CLI call off the runtime's threads (the operator may be running on them).
async fn cli(f: impl FnOnce() -> Run + Send + 'static) -> Run {
    ok(tokio::task::spawn_blocking(f).await.unwrap())
}

#[tokio::test(flavor = "multi_thread")]
// Runs with --features e2e (tests/run-all.sh), against $KUBECONFIG and the testbed's S3.
async fn each_status_has_one_writer_and_the_engine_never_writes_spec() {
    install_crd();
    let client = client().await;
    let ns_guard = Ns::new("status");
    let ns = ns_guard.0.clone();
    let (endpoint, bucket) = s3();
    s3_secret(&ns, "s3-creds", &endpoint);
    let clusters: Api<EtcdCluster> = Api::namespaced(client.clone(), &ns);
    let backups: Api<EtcdBackup> = Api::namespaced(client.clone(), &ns);

    // The CLI: create, scale, one backup (each verb's passes write status as the engine).
    let n = ns.clone();
    cli(move || {
        etcd(
            &n,
            &[
                "create",
                "demo",
                "--replicas",
                "1",
                "--version",
                "3.5.16",
                "--timeout",
                "3m",
            ],
        )
    })
    .await;
    let n = ns.clone();
    cli(move || etcd(&n, &["scale", "demo", "--replicas", "3", "--timeout", "4m"])).await;
    let (n, to) = (ns.clone(), format!("s3://{bucket}/e2e/{ns}/cli"));
    let ep = endpoint.clone();
    // Dialing the members' pod IPs (this node routes them) with their managed TLS, as a CLI in
    // the cluster's network does: no port-forward in its phases.
    let direct = cli(move || {
        let mut c = kubectl_cmd(&[
            "etcd", "-n", &n, "-v", "--dial", "direct", "backup", "demo", "--to", &to,
        ]);
        c.env("AWS_ENDPOINT_URL", ep);
        run_cmd(&["etcd", "backup"], c)
    })
    .await;
    assert!(
        direct.stderr.contains("phase=\"dial\"")
            && !direct.stderr.contains("phase=\"port_forward\""),
        "dialed direct: {}",
        direct.stderr
    );

    // A status written the way it was before it was applied: a merge patch by another manager
    // (kubectl's), with a field the engine does not set. The engine takes it over and drops it.
    let n = ns.clone();
    cli(move || {
        kubectl(&[
            "-n",
            &n,
            "patch",
            "etcdcluster",
            "demo",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"restoredFrom":"s3://stale/legacy.db"}}"#,
        ])
    })
    .await;

    // A user adds a schedule; the operator takes it from there.
    let schedule = serde_json::json!({"spec": {"backup": {
        "destination": format!("s3://{bucket}/e2e/{ns}/scheduled"),
        "credentialsSecret": "s3-creds",
        "schedule": "* * * * *",
        "runOnCreate": true,
    }}});
    let as_user = PatchParams {
        field_manager: Some(USER.into()),
        ..Default::default()
    };
    clusters
        .patch("demo", &as_user, &Patch::Merge(&schedule))
        .await
        .unwrap();
    let pid = std::process::id();
    let opts = OperateOptions {
        identity: format!("operator/e2e-status-{pid}"),
        lease_namespace: ns.clone(),
        store_access: kubectl_etcd::archive::store::Access::ANY,
        ..OperateOptions::new(
            client.clone(),
            Some(ns.clone()),
            SocketAddr::from(([127, 0, 0, 1], (30000 + pid % 5000) as u16)),
            Dial::PortForward,
        )
    };
    let op = InProcessOperator::start(opts);

    let outcome = std::panic::AssertUnwindSafe(async {
        // A scheduled backup succeeded and the engine reported it in the cluster's status.
        eventually_async("a scheduled backup in status.backup", 240, || async {
            let st = clusters.get("demo").await.ok()?.status?;
            let last = st.backup?.last_successful?;
            let record = backups.get(&last).await.ok()?;
            (record.spec.trigger.as_deref() == Some(TRIGGER_SCHEDULE)).then_some(())
        })
        .await;
        // ... and a while longer: every pass of the operator had its chance to write.
        tokio::time::sleep(Duration::from_secs(15)).await;

        let c = clusters.get("demo").await.unwrap();
        let entries = c.metadata.managed_fields.clone().unwrap_or_default();
        assert_one_status_writer("EtcdCluster demo", &entries, MANAGER_ENGINE);
        let spec_writers: std::collections::BTreeSet<&str> = entries
            .iter()
            .filter(|e| touches(e, "spec"))
            .filter_map(|e| e.manager.as_deref())
            .collect();
        assert_eq!(
            spec_writers,
            [MANAGER_CLI, USER].into(),
            "spec is the CLI's and the user's, never the engine's:\n{}",
            describe(&entries)
        );
        // The members merge by id: one entry each, all three there.
        let st = c.status.unwrap();
        assert_eq!(
            st.restored_from, None,
            "the legacy writer's field was dropped"
        );
        let names: std::collections::BTreeSet<&str> =
            st.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names.len(), 3, "{:?}", st.members);
        assert_eq!(st.members.len(), 3, "{:?}", st.members);

        let records = backups.list(&ListParams::default()).await.unwrap().items;
        let triggers: std::collections::BTreeSet<&str> = records
            .iter()
            .filter_map(|b| b.spec.trigger.as_deref())
            .collect();
        assert!(
            triggers.contains(TRIGGER_CLI) && triggers.contains(TRIGGER_SCHEDULE),
            "{triggers:?}"
        );
        for b in &records {
            let what = format!("EtcdBackup {}", b.metadata.name.as_deref().unwrap_or("?"));
            let entries = b.metadata.managed_fields.clone().unwrap_or_default();
            assert_one_status_writer(&what, &entries, MANAGER_BACKUP);
        }

        delete_and_wait_gone(&clusters, "demo").await;
    })
    .catch_unwind()
    .await;

    let stopped = op.stop().await;
    drop(ns_guard);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    stopped
        .expect("the operator stops within 30 s of a shutdown")
        .unwrap();
}

/// Issue 43 R10: a status derived from a stale copy of the cluster is never written over a newer
/// one (two drivers' passes: two CLIs, a CLI beside a restarting operator). The engine writes
/// through `apply::status_over`, a compare-and-swap on the status against the API server: here on
/// a cluster no driver serves, with the engine's field manager.
#[tokio::test(flavor = "multi_thread")]
async fn a_status_is_written_only_over_the_status_it_was_derived_from() {
    use kubectl_etcd::api::EtcdClusterStatus;
    use kubectl_etcd::apply::{Written, status_over};
    install_crd();
    let client = client().await;
    let ns_guard = Ns::new("status-cas");
    let ns = ns_guard.0.clone();
    let clusters: Api<EtcdCluster> = Api::namespaced(client.clone(), &ns);
    let manifest = r#"{"apiVersion":"etcd.kubectl-etcd.io/v1alpha1","kind":"EtcdCluster",
        "metadata":{"name":"cas"},"spec":{"replicas":1,"version":"3.5.16"}}"#;
    ok(kubectl_stdin(&["-n", &ns, "apply", "-f", "-"], manifest));
    let with = |m: &str| EtcdClusterStatus {
        message: Some(m.into()),
        ..Default::default()
    };
    let write = |read: EtcdCluster, m: &'static str| {
        let (clusters, status) = (clusters.clone(), with(m));
        async move {
            status_over(
                &clusters,
                &read,
                |c| c.status.as_ref(),
                MANAGER_ENGINE,
                &status,
            )
            .await
            .unwrap()
        }
    };
    let message = || async {
        let c = clusters.get("cas").await.unwrap();
        c.status.and_then(|s| s.message).unwrap_or_default()
    };

    // Two passes read the cluster; the first writes its status.
    let read = clusters.get("cas").await.unwrap();
    assert_eq!(write(read.clone(), "first pass").await, Written::Applied);
    assert_eq!(message().await, "first pass");
    // The second derived its status from the copy before that write: nothing written.
    assert_eq!(write(read, "stale pass").await, Written::Stale);
    assert_eq!(message().await, "first pass");

    // Spec and metadata changes since the read (a user's edit, the engine's own annotation or
    // finalizer) do not make a pass stale: only the status is compared.
    let read = clusters.get("cas").await.unwrap();
    ok(kubectl(&[
        "-n",
        &ns,
        "annotate",
        "etcdcluster",
        "cas",
        "e2e/touched=yes",
    ]));
    ok(kubectl(&[
        "-n",
        &ns,
        "patch",
        "etcdcluster",
        "cas",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ]));
    assert_eq!(write(read, "next pass").await, Written::Applied);
    assert_eq!(message().await, "next pass");

    // The cluster deleted and made again under the same name: a copy of the old one is stale.
    let old = clusters.get("cas").await.unwrap();
    ok(kubectl(&[
        "-n",
        &ns,
        "delete",
        "etcdcluster",
        "cas",
        "--wait=true",
    ]));
    ok(kubectl_stdin(&["-n", &ns, "apply", "-f", "-"], manifest));
    let mut old_copy = old;
    old_copy.status = None;
    assert_eq!(write(old_copy, "old cluster's pass").await, Written::Stale);
    assert_eq!(message().await, "");

    // Every write went through the engine's field manager alone.
    let c = clusters.get("cas").await.unwrap();
    let fresh = write(c, "engine").await;
    assert_eq!(fresh, Written::Applied);
    let c = clusters.get("cas").await.unwrap();
    assert_one_status_writer(
        "EtcdCluster cas",
        c.metadata.managed_fields.as_deref().unwrap_or_default(),
        MANAGER_ENGINE,
    );
}

/// The check above fails on what it is there to catch (no cluster needed).
#[test]
fn a_second_status_writer_is_caught() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
    let entry = |manager: &str, operation: &str, subresource: Option<&str>| ManagedFieldsEntry {
        manager: Some(manager.into()),
        operation: Some(operation.into()),
        subresource: subresource.map(Into::into),
        fields_v1: Some(FieldsV1(serde_json::json!({"f:status": {"f:phase": {}}}))),
        ..Default::default()
    };
    let engine = entry(MANAGER_ENGINE, "Apply", Some("status"));
    assert_one_status_writer("one writer", std::slice::from_ref(&engine), MANAGER_ENGINE);
    for second in [
        entry("unknown", "Update", Some("status")),
        entry(MANAGER_ENGINE, "Update", Some("status")),
        entry(MANAGER_CLI, "Apply", Some("status")),
    ] {
        let caught = std::panic::catch_unwind(|| {
            assert_one_status_writer(
                "two writers",
                &[engine.clone(), second.clone()],
                MANAGER_ENGINE,
            )
        });
        assert!(caught.is_err(), "{second:?} was not caught");
    }
    assert!(
        std::panic::catch_unwind(|| assert_one_status_writer("none", &[], MANAGER_ENGINE)).is_err()
    );
}
