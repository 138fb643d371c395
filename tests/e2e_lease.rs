//! Engine leases against the testbed's API server: contenders take turns, exactly one wins a
//! race, expiry is judged on the observer's own clock, a missing namespace says so, the old place
//! of the cluster Leases is no longer consulted, and a forged duration is believed only up to the
//! cap.
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::time::Duration;

use common::*;
use kubectl_etcd::lease::{Acquired, Lock, recorded_holder};

const NAME: &str = "etcdcluster.test.demo";

#[tokio::test]
async fn contenders_take_turns_and_exactly_one_wins_a_race() {
    let client = client().await;
    let ns = Ns::new("lease");
    let short = Duration::from_secs(2);
    let lock = |who: &str| Lock::new(client.clone(), &ns.0, NAME, who, short);
    let (a, b) = (lock("operator/a"), lock("cli/host/1"));
    let holder = || recorded_holder(client.clone(), &ns.0, NAME);

    assert_eq!(holder().await.unwrap(), None, "no lease yet");
    assert_eq!(
        a.try_acquire_or_renew().await.unwrap(),
        Acquired::Held,
        "created"
    );
    assert_eq!(
        b.try_acquire_or_renew().await.unwrap(),
        Acquired::HeldBy {
            holder: "operator/a".into()
        }
    );
    assert_eq!(holder().await.unwrap().as_deref(), Some("operator/a"));
    assert_eq!(
        a.try_acquire_or_renew().await.unwrap(),
        Acquired::Held,
        "renewed"
    );
    a.release().await;
    assert_eq!(holder().await.unwrap(), None, "released");
    b.release().await; // not ours: a no-op
    assert_eq!(
        b.try_acquire_or_renew().await.unwrap(),
        Acquired::Held,
        "a released lease is free at once"
    );

    // b stops renewing. a first sees b's record now, so for a it lives a whole duration from
    // now, whatever b's renewTime says; after that it is free to take.
    assert_eq!(
        a.try_acquire_or_renew().await.unwrap(),
        Acquired::HeldBy {
            holder: "cli/host/1".into()
        }
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    // A race for the expired lease: a takes it over, b renews its own; one write wins.
    let (x, y) = tokio::join!(a.try_acquire_or_renew(), b.try_acquire_or_renew());
    let held = [x.unwrap(), y.unwrap()]
        .iter()
        .filter(|r| **r == Acquired::Held)
        .count();
    assert_eq!(held, 1, "exactly one contender wins");
    let winner = if holder().await.unwrap().as_deref() == Some("operator/a") {
        &a
    } else {
        &b
    };
    let loser = if std::ptr::eq(winner, &a) { &b } else { &a };

    // Renewed in the background past its duration: the loser keeps seeing it held.
    let renewal = winner.keep_renewed(Duration::from_millis(500));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        loser.try_acquire_or_renew().await.unwrap(),
        Acquired::HeldBy {
            holder: winner.identity().into()
        },
        "kept past its duration"
    );
    assert_eq!(renewal.lost(), None);
    drop(renewal);
    loser.remove().await; // not ours: kept
    assert_eq!(holder().await.unwrap().as_deref(), Some(winner.identity()));
    winner.remove().await;
    assert!(
        kube::Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(client.clone(), &ns.0)
            .get_opt(NAME)
            .await
            .unwrap()
            .is_none(),
        "removed by its holder"
    );

    assert_eq!(
        recorded_holder(client.clone(), "ke-no-such-namespace", NAME)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        Lock::new(
            client.clone(),
            "ke-no-such-namespace",
            NAME,
            "cli/h/2",
            short
        )
        .try_acquire_or_renew()
        .await
        .unwrap(),
        Acquired::NoNamespace
    );
}

/// `kubectl etcd operate` tried from a workstation before any install: the namespace of its
/// Leases does not exist, so it creates it (with its user's rights, here the testbed's admin),
/// labelled as `install` labels it, and leads.
#[tokio::test(flavor = "multi_thread")]
async fn an_operator_started_before_any_install_creates_the_namespace_of_its_leases() {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::{Api, DeleteParams};
    use kubectl_etcd::engine::Dial;
    use kubectl_etcd::lease;
    use kubectl_etcd::operate::{OperateOptions, run_until};

    let client = client().await;
    kubectl_etcd::engine::apply_crd(&client).await.unwrap();
    let watched = Ns::new("first-try");
    let lease_ns = format!("{}-leases", watched.0);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    assert!(namespaces.get_opt(&lease_ns).await.unwrap().is_none());
    let port = (30000 + std::process::id() % 5000) as u16;
    let opts = OperateOptions {
        identity: lease::operator_identity("first-try"),
        lease_namespace: lease_ns.clone(),
        ..OperateOptions::new(
            client.clone(),
            Some(watched.0.clone()),
            std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            Dial::PortForward,
        )
    };
    let token = tokio_util::sync::CancellationToken::new();
    let operator = tokio::spawn(run_until(opts, token.clone()));
    let leader = lease::leader_lease(Some(&watched.0));
    let holder = eventually_async(
        "the operator leads from its new lease namespace",
        60,
        || {
            let (client, ns, name) = (client.clone(), lease_ns.clone(), leader.clone());
            async move { recorded_holder(client, &ns, &name).await.ok().flatten() }
        },
    )
    .await;
    assert_eq!(holder, lease::operator_identity("first-try"));
    let created = namespaces.get(&lease_ns).await.unwrap();
    let labels = created.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("kubectl-etcd"),
        "{labels:?}"
    );
    token.cancel();
    tokio::time::timeout(Duration::from_secs(30), operator)
        .await
        .expect("the operator stops within 30 s of a shutdown")
        .unwrap()
        .unwrap();
    let _ = namespaces.delete(&lease_ns, &DeleteParams::default()).await;
}

/// The cluster Leases' old place (the operator's namespace) is no longer consulted: a record
/// there, live or not, neither keeps a driver off nor is written by it, so nobody needs rights
/// in the operator's namespace for a cluster's Lease.
#[tokio::test]
async fn a_record_at_the_old_place_of_the_cluster_leases_is_not_consulted() {
    use kubectl_etcd::lease;
    let client = client().await;
    let cluster_ns = Ns::new("lease-new");
    let old_ns = Ns::new("lease-old");
    let name = lease::cluster_lease(&cluster_ns.0, "demo");
    let short = Duration::from_secs(2);
    let older = Lock::new(client.clone(), &old_ns.0, &name, "cli/older/1", short);
    assert_eq!(older.try_acquire_or_renew().await.unwrap(), Acquired::Held);
    let renewal = older.keep_renewed(Duration::from_millis(500));
    let newer = Lock::for_cluster(
        client.clone(),
        &cluster_ns.0,
        "demo",
        "operator/newer",
        short,
    );
    assert_eq!(newer.try_acquire_or_renew().await.unwrap(), Acquired::Held);
    assert_eq!(
        recorded_holder(client.clone(), &old_ns.0, &name)
            .await
            .unwrap()
            .as_deref(),
        Some("cli/older/1"),
        "the old place is left as it was"
    );
    drop(renewal);
    newer.remove().await;
    older.remove().await;
}

/// A Lease record written with an absurd `leaseDurationSeconds` (one `kubectl apply` by anyone
/// who may write Leases in the cluster's namespace) holds the cluster no longer than
/// `MAX_BELIEVED_DURATION` after its last change: the CLI waits, says for whom, then acts.
#[tokio::test(flavor = "multi_thread")]
async fn a_forged_lease_duration_holds_the_cli_off_no_longer_than_the_cap() {
    use kubectl_etcd::lease;
    install_crd();
    let client = client().await;
    let ns = Ns::new("lease-forged");
    let name = lease::cluster_lease(&ns.0, "demo");
    let forged = serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": { "name": name, "namespace": ns.0 },
        "spec": { "holderIdentity": "cli/forged/1", "leaseDurationSeconds": 2_000_000_000,
                  "renewTime": "2026-01-01T00:00:00.000000Z" },
    });
    ok(kubectl_stdin(&["apply", "-f", "-"], &forged.to_string()));

    let t0 = std::time::Instant::now();
    let cli_ns = ns.0.clone();
    let r = tokio::task::spawn_blocking(move || {
        etcd(
            &cli_ns,
            &["create", "demo", "--replicas", "1", "--timeout", "4m"],
        )
    })
    .await
    .unwrap();
    let waited = t0.elapsed();
    assert_eq!(r.code, 0, "created and Ready after the wait: {}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("waiting: cli/forged/1 is acting on {}/demo", ns.0)),
        "the CLI said whom it waited for: {}",
        r.stderr
    );
    assert!(
        waited >= lease::MAX_BELIEVED_DURATION,
        "it waited for the cap ({waited:?})"
    );
    assert_ne!(
        recorded_holder(client.clone(), &ns.0, &name)
            .await
            .unwrap()
            .as_deref(),
        Some("cli/forged/1"),
        "the forged holder was taken over"
    );
}
