//! Engine leases against the testbed's API server: contenders take turns, exactly one wins a
//! race, expiry is judged on the observer's own clock, a missing namespace says so, and during
//! the move of the cluster Leases an older driver at the old place is waited for.
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

/// The move of the cluster Leases into the clusters' namespaces, with both places on the
/// testbed: an older driver holding the old place keeps a new one off (and the new place's
/// Lease is given back), a new holder takes both places so older drivers defer to it, and
/// release and removal clear both.
#[tokio::test]
async fn a_new_driver_takes_both_places_and_waits_for_an_older_one_holding_the_old_place() {
    use kubectl_etcd::lease;
    let client = client().await;
    let cluster_ns = Ns::new("lease-new");
    let old_ns = Ns::new("lease-old");
    let name = lease::cluster_lease(&cluster_ns.0, "demo");
    let short = Duration::from_secs(2);
    // A driver of an older version: the cluster's Lease at the old place only.
    let older = Lock::new(client.clone(), &old_ns.0, &name, "cli/older/1", short);
    let newer = Lock::for_cluster(
        client.clone(),
        &cluster_ns.0,
        "demo",
        &old_ns.0,
        "operator/newer",
        short,
    );

    assert_eq!(older.try_acquire_or_renew().await.unwrap(), Acquired::Held);
    assert_eq!(
        newer.try_acquire_or_renew().await.unwrap(),
        Acquired::HeldBy {
            holder: "cli/older/1".into()
        },
        "a live old-place Lease of another driver counts as held"
    );
    assert_eq!(
        recorded_holder(client.clone(), &cluster_ns.0, &name)
            .await
            .unwrap(),
        None,
        "the new place's Lease is given back while it waits"
    );

    older.release().await;
    assert_eq!(newer.try_acquire_or_renew().await.unwrap(), Acquired::Held);
    assert_eq!(
        recorded_holder(client.clone(), &cluster_ns.0, &name)
            .await
            .unwrap()
            .as_deref(),
        Some("operator/newer")
    );
    assert_eq!(
        recorded_holder(client.clone(), &old_ns.0, &name)
            .await
            .unwrap()
            .as_deref(),
        Some("operator/newer"),
        "the old place is taken too"
    );
    assert_eq!(
        older.try_acquire_or_renew().await.unwrap(),
        Acquired::HeldBy {
            holder: "operator/newer".into()
        },
        "so an older driver defers to the new one"
    );
    // Renewed in the background past its duration, in both places.
    let renewal = newer.keep_renewed(Duration::from_millis(500));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(renewal.lost(), None);
    assert!(matches!(
        older.try_acquire_or_renew().await.unwrap(),
        Acquired::HeldBy { .. }
    ));
    drop(renewal);
    newer.release().await;
    assert_eq!(
        recorded_holder(client.clone(), &cluster_ns.0, &name)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        recorded_holder(client.clone(), &old_ns.0, &name)
            .await
            .unwrap(),
        None
    );
    assert_eq!(newer.try_acquire_or_renew().await.unwrap(), Acquired::Held);
    newer.remove().await;
    let leases = |ns: &str| {
        kube::Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(client.clone(), ns)
    };
    assert!(
        leases(&cluster_ns.0)
            .get_opt(&name)
            .await
            .unwrap()
            .is_none()
    );
    assert!(leases(&old_ns.0).get_opt(&name).await.unwrap().is_none());

    // Without an old namespace there is nobody older to wait for.
    let alone = Lock::for_cluster(
        client.clone(),
        &cluster_ns.0,
        "demo",
        "ke-no-such-namespace",
        "cli/h/3",
        short,
    );
    assert_eq!(alone.try_acquire_or_renew().await.unwrap(), Acquired::Held);
    alone.remove().await;
}

/// `kubectl etcd` of this version on a cluster whose Lease an older CLI holds at the old place
/// (kubectl-etcd-system, the only place it looks): it waits, says for whom, changes nothing,
/// and goes ahead once the older one lets go.
#[tokio::test(flavor = "multi_thread")]
async fn the_cli_waits_while_an_older_driver_holds_the_old_place_lease() {
    use kubectl_etcd::lease;
    let client = client().await;
    install_crd();
    // The old place; other tests make it too, and it stays (older binaries may use it).
    let _ = kubectl(&["create", "namespace", lease::NAMESPACE]);
    let ns = Ns::new("lease-cli");
    let name = lease::cluster_lease(&ns.0, "demo");
    let older = Lock::new(
        client.clone(),
        lease::NAMESPACE,
        &name,
        "cli/older-version/1",
        Duration::from_secs(15),
    );
    assert_eq!(older.try_acquire_or_renew().await.unwrap(), Acquired::Held);
    let renewal = older.keep_renewed(Duration::from_secs(3));

    let cli_ns = ns.0.clone();
    let r = tokio::task::spawn_blocking(move || {
        etcd(
            &cli_ns,
            &["create", "demo", "--replicas", "1", "--timeout", "20s"],
        )
    })
    .await
    .unwrap();
    assert_eq!(r.code, 4, "a timeout while waiting: {}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "waiting: cli/older-version/1 is acting on {}/demo",
            ns.0
        )),
        "{}",
        r.stderr
    );
    let sts = kubectl(&["-n", &ns.0, "get", "statefulsets", "-o", "name"]);
    assert_eq!(sts.stdout.trim(), "", "nothing acted on");
    assert_eq!(
        recorded_holder(client.clone(), &ns.0, &name).await.unwrap(),
        None,
        "the new place is not kept while waiting"
    );

    drop(renewal);
    older.release().await;
    let cli_ns = ns.0.clone();
    let r = tokio::task::spawn_blocking(move || {
        etcd(
            &cli_ns,
            &["scale", "demo", "--replicas", "1", "--timeout", "4m"],
        )
    })
    .await
    .unwrap();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        recorded_holder(client.clone(), lease::NAMESPACE, &name)
            .await
            .unwrap(),
        None,
        "the CLI released the old place too"
    );
    older.remove().await;
}
