use super::*;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::EnvVar;

use crate::model::{ClientTls, Desired, Storage, Tls};

fn desired() -> Desired {
    crate::fixtures::cluster("demo").desired()
}

#[test]
fn ordinals_are_parsed_from_names_and_urls() {
    assert_eq!(ordinal_of_pod("demo", "demo-12"), Some(12));
    assert_eq!(ordinal_of_pod("demo", "demo-x"), None);
    assert_eq!(ordinal_of_pod("demo", "demox-1"), None);
    assert_eq!(ordinal_of_pod("demo", "demo-2-1"), None);
    assert_eq!(ordinal_of_volume("demo", "data-demo-4"), Some(4));
    let mut d = desired();
    let url = peer_url(&d, 10);
    assert_eq!(url, "http://demo-10.demo.ns.svc.cluster.local:2380");
    assert_eq!(ordinal_of_peer_url("demo", "ns", &url), Some(10));
    d.tls.peer_secret = Some("peer".into());
    let url = peer_url(&d, 10);
    assert_eq!(url, "https://demo-10.demo.ns.svc.cluster.local:2380");
    assert_eq!(ordinal_of_peer_url("demo", "ns", &url), Some(10));
    assert_eq!(ordinal_of_peer_url("demo", "other", &url), None);
    assert_eq!(
        ordinal_of_peer_url("demo", "ns", "http://10.0.0.1:2380"),
        None
    );
}

#[test]
fn a_members_pod_ip_url_brackets_an_ipv6_address() {
    let mut d = desired();
    assert_eq!(
        pod_ip_client_url(&d, "10.244.0.5"),
        "http://10.244.0.5:2379"
    );
    assert_eq!(
        pod_ip_client_url(&d, "fd00:10:244::5"),
        "http://[fd00:10:244::5]:2379"
    );
    d.tls.client = Some(crate::model::ClientTls {
        server_secret: "s".into(),
        client_secret: "c".into(),
    });
    let url = pod_ip_client_url(&d, "fd00:10:244::5");
    assert_eq!(url, "https://[fd00:10:244::5]:2379");
    // What the dialer connects to parses as a socket address.
    let addr = url.split_once("://").unwrap().1;
    assert!(addr.parse::<std::net::SocketAddr>().is_ok(), "{addr}");
}

#[test]
fn a_cluster_domain_ends_every_member_name_url_and_certificate_name() {
    let mut d = desired();
    assert_eq!(
        template_domain(&pod_template(&d)).as_deref(),
        Some("cluster.local")
    );
    d.cluster_domain = "k8s.example.com".into();
    let url = peer_url(&d, 2);
    assert_eq!(url, "http://demo-2.demo.ns.svc.k8s.example.com:2380");
    assert_eq!(
        client_url(&d, 2),
        "http://demo-2.demo.ns.svc.k8s.example.com:2379"
    );
    // Members are found by their URLs whatever the domain.
    assert_eq!(ordinal_of_peer_url("demo", "ns", &url), Some(2));
    assert_eq!(
        ordinal_of_peer_url("demo", "ns", "http://demo-2.demo.ns.svc.:2380"),
        None
    );
    assert_eq!(
        ordinal_of_peer_url("demo", "ns", "http://other-2.demo.ns.svc.x:2380"),
        None
    );
    let t = pod_template(&d);
    assert_eq!(template_domain(&t).as_deref(), Some("k8s.example.com"));
    let env = t.spec.unwrap().containers[0].env.clone().unwrap();
    let var = |n: &str| {
        env.iter()
            .find(|e| e.name == n)
            .unwrap()
            .value
            .clone()
            .unwrap()
    };
    assert_eq!(
        var("ETCD_ADVERTISE_CLIENT_URLS"),
        "http://$(POD_NAME).demo.$(POD_NS).svc.k8s.example.com:2379"
    );
    assert!(
        var("ETCD_INITIAL_ADVERTISE_PEER_URLS").ends_with(".svc.k8s.example.com:2380"),
        "{}",
        var("ETCD_INITIAL_ADVERTISE_PEER_URLS")
    );
    let names = crate::pki::member_names("demo", "ns", &d.cluster_domain);
    assert!(
        names.contains(&"*.demo.ns.svc.k8s.example.com".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"demo-client.ns.svc.k8s.example.com".to_string()),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.contains("cluster.local")),
        "{names:?}"
    );
    // The seed's restore names the same URL.
    let (cmd, _) = restore::restore_command(&d, "t");
    assert!(
        cmd.contains(&"demo-0=http://demo-0.demo.ns.svc.k8s.example.com:2380".to_string()),
        "{cmd:?}"
    );
}

#[test]
fn the_auth_user_reaches_etcdctl_from_its_secret_and_only_with_spec_auth() {
    let env = |d: &Desired| -> Vec<EnvVar> {
        pod_template(d).spec.unwrap().containers[0]
            .env
            .clone()
            .unwrap_or_default()
    };
    let mut d = desired();
    assert!(!env(&d).iter().any(|e| e.name.starts_with("ETCDCTL_USER")));
    d.auth_secret = Some("etcd-root".into());
    let from = |name: &str| {
        env(&d)
            .into_iter()
            .find(|e| e.name == name)
            .and_then(|e| e.value_from?.secret_key_ref)
            .map(|r| (r.name, r.key))
    };
    assert_eq!(
        from("ETCDCTL_USER"),
        Some(("etcd-root".into(), "username".into()))
    );
    assert_eq!(
        from("ETCDCTL_PASSWORD"),
        Some(("etcd-root".into(), "password".into()))
    );
    // A new user Secret is a new template: it rolls out like any template change.
    assert_ne!(template_hash(&d), template_hash(&desired()));
}

#[test]
fn user_credentials_need_a_username_and_a_password() {
    use k8s_openapi::ByteString;
    let secret = |pairs: &[(&str, &str)]| k8s_openapi::api::core::v1::Secret {
        data: Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        ),
        ..Default::default()
    };
    assert_eq!(
        user_credentials(&secret(&[("username", "root"), ("password", "pw")])),
        Ok(("root".into(), "pw".into()))
    );
    for bad in [
        secret(&[("username", "root")]),
        secret(&[("username", "root"), ("password", "")]),
        secret(&[("user", "root"), ("password", "pw")]),
    ] {
        let e = user_credentials(&bad).unwrap_err();
        assert!(e.contains("username") && e.contains("password"), "{e}");
    }
}

#[test]
fn bootstrap_config_lists_every_initial_member_and_a_unique_token() {
    let c = bootstrap_config(&desired(), 3);
    assert_eq!(
        c[config_key::INITIAL_CLUSTER],
        "demo-0=http://demo-0.demo.ns.svc.cluster.local:2380,demo-1=http://demo-1.demo.ns.svc.cluster.local:2380,demo-2=http://demo-2.demo.ns.svc.cluster.local:2380"
    );
    assert_eq!(c[config_key::INITIAL_TOKEN], "demo-1234abcd");
    assert_eq!(c[config_key::INITIAL_CLUSTER_STATE], "new");
    assert!(!is_bootstrapped(&c));
}

#[test]
fn services_always_name_their_port_protocol() {
    for s in [peer_service(&desired()), client_service(&desired())] {
        for p in s.spec.unwrap().ports.unwrap() {
            assert_eq!(p.protocol.as_deref(), Some("TCP"));
        }
    }
    assert_eq!(
        peer_service(&desired())
            .spec
            .unwrap()
            .publish_not_ready_addresses,
        Some(true)
    );
}

#[test]
fn the_fenced_client_service_selects_no_member_and_the_plain_one_lifts_the_fence() {
    let d = desired();
    let fenced = fenced_client_service(&d);
    assert!(is_fenced(&fenced) && !is_fenced(&client_service(&d)));
    let member = statefulset(&d, 3).spec.unwrap().template.metadata.unwrap();
    let pod_labels = member.labels.unwrap();
    let sel = fenced.spec.unwrap().selector.unwrap();
    assert!(
        !sel.iter().all(|(k, v)| pod_labels.get(k) == Some(v)),
        "a member pod matches the fence: {sel:?}"
    );
    assert_eq!(fenced.metadata.name, client_service(&d).metadata.name);
}

#[test]
fn spreading_reaches_the_template_selecting_the_members_and_a_silent_spec_keeps_its_hash() {
    let d = crate::fixtures::cluster("demo")
        .spec(crate::model::new_cluster_defaults)
        .desired();
    let spec = pod_template(&d).spec.unwrap();
    let cs = spec.topology_spread_constraints.unwrap();
    assert_eq!(cs.len(), 2);
    for c in &cs {
        assert_eq!(c.when_unsatisfiable, "ScheduleAnyway", "a preference only");
        assert_eq!(
            c.label_selector.as_ref().unwrap().match_labels.as_ref(),
            Some(&selector_labels("demo"))
        );
    }
    let args = spec.containers[0].command.clone().unwrap();
    assert!(args.contains(&"--auto-compaction-retention=1h".to_string()));
    // A cluster whose spec predates the defaults keeps the template it was created with
    // (the hash every such StatefulSet carries): its members are not restarted because a
    // default appeared. Change this value only for a change meant to roll every cluster.
    let silent = desired();
    assert!(
        pod_template(&silent)
            .spec
            .unwrap()
            .topology_spread_constraints
            .is_none()
    );
    // Changed on purpose by the restricted pod standard (issue 17 item 3): every member is
    // restarted once, one at a time, into a non-root pod (its volume taken over by fsGroup);
    // and by the 2 s readiness period (issue 21 item 2) and the preStop sleep (item 4), in the
    // same unreleased roll.
    assert_eq!(template_hash(&silent), "434e9f29b0d7f735");
}

#[test]
fn template_hash_changes_with_the_template_only() {
    let a = desired();
    let mut b = desired();
    assert_eq!(template_hash(&a), template_hash(&b));
    b.replicas = 5;
    assert_eq!(
        template_hash(&a),
        template_hash(&b),
        "replicas are not part of the template"
    );
    b.image = "other/etcd:v3.5.16".into();
    assert_ne!(template_hash(&a), template_hash(&b));
}

#[test]
fn statefulset_uses_on_delete_parallel_and_owner_reference() {
    let s = statefulset(&desired(), 4);
    let spec = s.spec.as_ref().unwrap();
    assert_eq!(spec.replicas, Some(4));
    assert_eq!(spec.pod_management_policy.as_deref(), Some("Parallel"));
    assert_eq!(
        spec.update_strategy.as_ref().unwrap().type_.as_deref(),
        Some("OnDelete")
    );
    assert_eq!(s.metadata.owner_references.unwrap()[0].kind, "EtcdCluster");
    assert_eq!(spec.volume_claim_templates.as_ref().unwrap().len(), 1);
    let mut e = desired();
    e.storage = Storage::Ephemeral;
    let s = statefulset(&e, 1);
    assert!(s.spec.as_ref().unwrap().volume_claim_templates.is_none());
    assert!(
        s.spec.unwrap().template.spec.unwrap().volumes.unwrap()[0]
            .empty_dir
            .is_some()
    );
}

#[test]
fn pod_metadata_options_and_priority_reach_the_template_and_the_selector_stays() {
    let plain = pod_template(&desired());
    let plain_meta = plain.metadata.clone().unwrap();
    assert!(plain_meta.annotations.is_none(), "no empty annotations");
    assert!(plain.spec.as_ref().unwrap().priority_class_name.is_none());
    let d = crate::fixtures::cluster("demo")
        .spec(|s| {
            s.priority_class_name = Some("system-cluster-critical".into());
            s.pod_metadata = Some(crate::api::PodMetadata {
                labels: [("team".to_string(), "db".to_string())].into(),
                annotations: [("example.com/scrape".to_string(), "true".to_string())].into(),
            });
            s.etcd.options = [
                ("heartbeat-interval".to_string(), "250".to_string()),
                ("election-timeout".to_string(), "2500".to_string()),
            ]
            .into();
        })
        .desired();
    let t = pod_template(&d);
    let meta = t.metadata.unwrap();
    let labels = meta.labels.unwrap();
    assert_eq!(labels["team"], "db");
    for (k, v) in selector_labels("demo") {
        assert_eq!(labels[&k], v, "the selector label {k} is kept");
    }
    for k in super::labels("demo")
        .keys()
        .map(String::as_str)
        .chain([LABEL_REVISION, LABEL_FENCED])
    {
        assert!(
            crate::keys::ENGINE_POD_LABELS.contains(&k),
            "{k} is the engine's but spec.podMetadata may set it"
        );
    }
    for k in labels
        .keys()
        .filter(|k| !plain_meta.labels.as_ref().unwrap().contains_key(*k))
    {
        assert_eq!(k, "team");
    }
    assert_eq!(meta.annotations.unwrap()["example.com/scrape"], "true");
    let spec = t.spec.unwrap();
    assert_eq!(
        spec.priority_class_name.as_deref(),
        Some("system-cluster-critical")
    );
    let args = spec.containers[0].command.clone().unwrap();
    assert_eq!(
        &args[args.len() - 2..],
        ["--election-timeout=2500", "--heartbeat-interval=250"],
        "options come last, sorted: {args:?}"
    );
}

#[test]
fn image_pull_secrets_reach_member_and_restore_pods_and_a_silent_spec_names_none() {
    let plain = desired();
    assert!(
        pod_template(&plain)
            .spec
            .unwrap()
            .image_pull_secrets
            .is_none()
    );
    let d = crate::fixtures::cluster("demo")
        .spec(|s| {
            s.image_pull_secrets = Some(
                ["regcred", "mirror"]
                    .map(|name| k8s_openapi::api::core::v1::LocalObjectReference {
                        name: name.into(),
                    })
                    .to_vec(),
            );
            s.restore = Some(crate::api::RestoreSpec {
                source: "s3://b/ns-demo-20261201T000000Z-r5.db.zst".into(),
                ..Default::default()
            });
        })
        .desired();
    let names = |refs: Option<Vec<k8s_openapi::api::core::v1::LocalObjectReference>>| {
        refs.unwrap_or_default()
            .into_iter()
            .map(|r| r.name)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(pod_template(&d).spec.unwrap().image_pull_secrets),
        ["regcred", "mirror"]
    );
    let restore = crate::objects::restore::restore_pod(&d, d.restore.as_ref().unwrap(), "tok");
    assert_eq!(
        names(restore.spec.unwrap().image_pull_secrets),
        ["regcred", "mirror"]
    );
}

#[test]
fn readiness_excludes_learners_on_every_version() {
    let probe = |v: &str| {
        let d = crate::fixtures::cluster("demo").version(v).desired();
        pod_template(&d).spec.unwrap().containers[0]
            .readiness_probe
            .clone()
            .unwrap()
    };
    // /health and /readyz pass for learners; a linearizable gRPC read does not.
    for v in ["3.4.23", "3.5.16", "3.6.15", "3.7.3"] {
        let p = probe(v);
        assert!(p.http_get.is_none(), "{v}");
        let cmd = p.exec.unwrap().command.unwrap();
        assert_eq!(cmd[0], "etcdctl");
        assert!(cmd.contains(&"--consistency=l".to_string()), "{cmd:?}");
    }
}

#[test]
fn a_member_is_ready_within_seconds_of_serving_and_unready_within_ten_of_failing() {
    let d = crate::fixtures::cluster("demo").desired();
    let p = pod_template(&d).spec.unwrap().containers[0]
        .readiness_probe
        .clone()
        .unwrap();
    let period = p.period_seconds.unwrap();
    // Ready before etcd's leader raises a new cluster's version (every 4 s), which `create`
    // waits for: the probe never makes `create` slower than etcd itself.
    assert!(period < 4, "{p:?}");
    assert_eq!(p.initial_delay_seconds.unwrap_or(0), 0);
    assert!(period * p.failure_threshold.unwrap() <= 10, "{p:?}");
}

#[test]
fn a_stopping_member_serves_until_kube_proxy_stopped_sending_it_clients() {
    let d = crate::fixtures::cluster("demo").desired();
    let spec = pod_template(&d).spec.unwrap();
    let sleep = spec.containers[0]
        .lifecycle
        .clone()
        .and_then(|l| l.pre_stop)
        .and_then(|h| h.sleep)
        .expect("a preStop sleep (etcd's images have no shell)");
    // Longer than kube-proxy's default minimum sync period (1 s), well inside the grace period
    // it counts in, leaving etcd time to stop.
    assert!(sleep.seconds > 1, "{sleep:?}");
    assert!(
        sleep.seconds + 5 <= spec.termination_grace_period_seconds.unwrap(),
        "{spec:?}"
    );
}

#[test]
fn etcdctl_api_is_set_only_where_etcdctl_knows_it() {
    for (v, set) in [
        ("3.4.23", true),
        ("3.5.35", true),
        ("3.6.16", false),
        ("3.7.3", false),
    ] {
        let d = crate::fixtures::cluster("demo").version(v).desired();
        let env = pod_template(&d).spec.unwrap().containers[0]
            .env
            .clone()
            .unwrap();
        assert_eq!(env.iter().any(|e| e.name == "ETCDCTL_API"), set, "{v}");
    }
}

#[test]
fn etcd_tuning_flags_reach_the_container() {
    let mut d = desired();
    d.etcd_flags = vec!["--quota-backend-bytes=1".into()];
    let t = pod_template(&d);
    let cmd = t.spec.unwrap().containers[0].command.clone().unwrap();
    assert_eq!(cmd, ["etcd", "--quota-backend-bytes=1"]);
}

#[test]
fn members_need_no_shell_in_the_image_only_etcd_variables() {
    let t = pod_template(&desired());
    let spec = t.spec.unwrap();
    assert_eq!(spec.enable_service_links, Some(false));
    let c = &spec.containers[0];
    assert_eq!(c.command.as_ref().unwrap()[0], "etcd");
    let env: BTreeMap<String, String> = c
        .env
        .clone()
        .unwrap()
        .into_iter()
        .filter_map(|e| Some((e.name, e.value?)))
        .collect();
    assert_eq!(env["ETCD_NAME"], "$(POD_NAME)");
    assert_eq!(
        env["ETCD_INITIAL_ADVERTISE_PEER_URLS"],
        "http://$(POD_NAME).demo.$(POD_NS).svc.cluster.local:2380"
    );
    // Every ETCD_* variable is a flag etcd knows (an unknown one stops etcd 3.4).
    let known = KNOWN_ETCD_VARIABLES;
    assert!(
        env.keys()
            .filter(|k| k.starts_with("ETCD_"))
            .all(|k| known.contains(&k.as_str())),
        "{env:?}"
    );
    assert_eq!(
        c.env_from.as_ref().unwrap()[0]
            .config_map_ref
            .as_ref()
            .unwrap()
            .name,
        "demo-members"
    );
}

/// The `ETCD_*` variables the template may set: flags of every etcd from 3.4 to 3.7 (but
/// the experimental name of the peer SAN flag, which only 3.4 and 3.5 get: 3.7 removed it).
const KNOWN_ETCD_VARIABLES: [&str; 17] = [
    "ETCD_PEER_CERT_ALLOWED_CN",
    "ETCD_PEER_SKIP_CLIENT_SAN_VERIFICATION",
    "ETCD_EXPERIMENTAL_PEER_SKIP_CLIENT_SAN_VERIFICATION",
    "ETCD_NAME",
    "ETCD_DATA_DIR",
    "ETCD_LISTEN_CLIENT_URLS",
    "ETCD_ADVERTISE_CLIENT_URLS",
    "ETCD_LISTEN_PEER_URLS",
    "ETCD_INITIAL_ADVERTISE_PEER_URLS",
    "ETCD_CERT_FILE",
    "ETCD_KEY_FILE",
    "ETCD_TRUSTED_CA_FILE",
    "ETCD_CLIENT_CERT_AUTH",
    "ETCD_PEER_CERT_FILE",
    "ETCD_PEER_KEY_FILE",
    "ETCD_PEER_TRUSTED_CA_FILE",
    "ETCD_PEER_CLIENT_CERT_AUTH",
];

fn with_tls(client: bool, peer: bool) -> Desired {
    let mut d = desired();
    d.tls = Tls {
        client: client.then(|| ClientTls {
            server_secret: "srv".into(),
            client_secret: "cli".into(),
        }),
        peer_secret: peer.then(|| "peer".into()),
    };
    d
}

#[test]
fn tls_switches_schemes_mounts_the_secrets_and_reads_back_from_the_template() {
    for (client, peer) in [(false, false), (true, false), (false, true), (true, true)] {
        let d = with_tls(client, peer);
        let t = pod_template(&d);
        assert_eq!(template_tls(&t), d.tls, "{client} {peer}");
        let spec = t.spec.clone().unwrap();
        let c = &spec.containers[0];
        let env: BTreeMap<String, String> = c
            .env
            .clone()
            .unwrap()
            .into_iter()
            .filter_map(|e| Some((e.name, e.value?)))
            .collect();
        let cs = if client { "https" } else { "http" };
        let ps = if peer { "https" } else { "http" };
        assert_eq!(
            env["ETCD_LISTEN_CLIENT_URLS"],
            format!("{cs}://0.0.0.0:2379")
        );
        assert_eq!(
            env["ETCD_ADVERTISE_CLIENT_URLS"],
            format!("{cs}://$(POD_NAME).demo.$(POD_NS).svc.cluster.local:2379")
        );
        assert_eq!(env["ETCD_LISTEN_PEER_URLS"], format!("{ps}://0.0.0.0:2380"));
        assert_eq!(
            env["ETCD_INITIAL_ADVERTISE_PEER_URLS"],
            format!("{ps}://$(POD_NAME).demo.$(POD_NS).svc.cluster.local:2380")
        );
        assert!(
            env.keys()
                .filter(|k| k.starts_with("ETCD_"))
                .all(|k| KNOWN_ETCD_VARIABLES.contains(&k.as_str())),
            "{env:?}"
        );
        // spec.etcd.options cannot set what the template or the member config sets.
        for k in env
            .keys()
            .map(String::as_str)
            .chain([
                config_key::INITIAL_CLUSTER,
                config_key::INITIAL_CLUSTER_STATE,
                config_key::INITIAL_TOKEN,
            ])
            .filter_map(|k| k.strip_prefix("ETCD_"))
        {
            let flag = k.to_lowercase().replace('_', "-");
            assert!(
                crate::model::ENGINE_FLAGS.contains(&flag.as_str()),
                "{flag} is set by the engine but spec.etcd.options may set it"
            );
        }
        assert_eq!(env.contains_key("ETCD_CLIENT_CERT_AUTH"), client);
        assert_eq!(
            env.contains_key("ETCDCTL_CERT"),
            client,
            "the probe's certificate"
        );
        assert_eq!(env.contains_key("ETCD_PEER_CLIENT_CERT_AUTH"), peer);
        // Every file a variable names is in a mounted volume.
        let mounts: Vec<String> = c
            .volume_mounts
            .clone()
            .unwrap()
            .into_iter()
            .map(|m| m.mount_path)
            .collect();
        for (k, v) in &env {
            if k.ends_with("_FILE")
                || ["ETCDCTL_CERT", "ETCDCTL_KEY", "ETCDCTL_CACERT"].contains(&k.as_str())
            {
                assert!(
                    mounts.iter().any(|m| v.starts_with(&format!("{m}/"))),
                    "{k}={v} is not under a mount: {mounts:?}"
                );
            }
        }
        let volumes = spec.volumes.unwrap_or_default();
        assert_eq!(volumes.len(), usize::from(client) * 2 + usize::from(peer));
        // The member config lists the peers under the same scheme.
        let c = bootstrap_config(&d, 3);
        assert!(
            c[config_key::INITIAL_CLUSTER].starts_with(&format!("demo-0={ps}://demo-0.demo.ns")),
            "{c:?}"
        );
    }
    // A template change of TLS changes the hash (a rolling restart for new Secrets).
    assert_ne!(
        template_hash(&with_tls(true, false)),
        template_hash(&with_tls(false, false))
    );
}

fn member_env(d: &Desired) -> BTreeMap<String, String> {
    pod_template(d).spec.unwrap().containers[0]
        .env
        .clone()
        .unwrap()
        .into_iter()
        .filter_map(|e| Some((e.name, e.value?)))
        .collect()
}

#[test]
fn the_peer_port_admits_only_the_peer_certificate_the_engine_issues() {
    use crate::model::pki::CertRole;
    let managed = |v: &str| {
        crate::fixtures::cluster("demo")
            .version(v)
            .spec(|s| s.tls.as_mut().unwrap().mode = Some("managed".into()))
            .desired()
    };
    for v in ["3.4.23", "3.5.16", "3.6.15", "3.7.3"] {
        let env = member_env(&managed(v));
        // one CN, no list: 3.4 takes a single CN, 3.5+ a comma-separated list
        assert_eq!(
            env.get("ETCD_PEER_CERT_ALLOWED_CN").map(String::as_str),
            Some("demo peer"),
            "{v}"
        );
        assert!(!env.contains_key("ETCD_PEER_CERT_ALLOWED_HOSTNAME"), "{v}");
    }
    // The CN the engine's peer certificate carries (and cert-manager's Certificate asks for).
    let d = managed("3.6.15");
    let p = crate::pki::leaf_params(
        CertRole::Peer,
        "demo",
        "ns",
        "cluster.local",
        "",
        1_700_000_000,
        3600,
    )
    .unwrap();
    let cn = p
        .distinguished_name
        .get(&rcgen::DnType::CommonName)
        .unwrap();
    assert_eq!(
        format!("{cn:?}"),
        format!("{:?}", rcgen::DnValue::from("demo peer"))
    );
    let cm = crate::fixtures::cluster("demo").cert_manager().desired();
    assert_eq!(
        member_env(&cm)
            .get("ETCD_PEER_CERT_ALLOWED_CN")
            .map(String::as_str),
        Some("demo peer")
    );
    assert_eq!(
        super::cert_manager::certificate(&cm, cm.cert_manager.as_ref().unwrap(), CertRole::Peer)
            .spec
            .common_name
            .as_deref(),
        Some("demo peer")
    );
    // Not the client certificates: the engine's CN is a user, not the peer's.
    assert_ne!(allowed_peer_cn(&d), Some(d.client_cn()));
    // Secrets the user brings: their CN is unknown, nothing is set; plain http: no peer TLS.
    assert!(!member_env(&with_tls(true, true)).contains_key("ETCD_PEER_CERT_ALLOWED_CN"));
    assert!(!member_env(&desired()).contains_key("ETCD_PEER_CERT_ALLOWED_CN"));
    // A change of the allowed CN is a template change: existing clusters roll onto it.
    let mut before = managed("3.6.15");
    before.cert_manager = None;
    before.pki = None;
    assert_ne!(template_hash(&before), template_hash(&managed("3.6.15")));
}

#[test]
fn the_in_pod_etcdctl_verifies_the_serving_certificate_at_a_name_it_carries() {
    let managed = crate::fixtures::cluster("demo")
        .spec(|s| s.tls.as_mut().unwrap().mode = Some("managed".into()))
        .desired();
    let cm = crate::fixtures::cluster("demo").cert_manager().desired();
    for d in [&managed, &cm, &with_tls(true, true), &with_tls(true, false)] {
        let env = member_env(d);
        assert!(
            !env.keys().any(|k| k.contains("INSECURE")),
            "the probe skips verification: {env:?}"
        );
        assert!(env.contains_key("ETCDCTL_CACERT"), "{env:?}");
    }
    // The engine's certificates carry the loopback address (no DNS needed to stay Ready) ...
    assert_eq!(
        member_env(&managed)["ETCDCTL_ENDPOINTS"],
        "https://127.0.0.1:2379"
    );
    assert_eq!(
        member_env(&cm)["ETCDCTL_ENDPOINTS"],
        "https://127.0.0.1:2379"
    );
    assert!(
        crate::pki::member_names("demo", "ns", "cluster.local").contains(&"127.0.0.1".to_string())
    );
    // ... the user's carry the member's own name, which the engine verifies as well.
    let own = "$(POD_NAME).demo.$(POD_NS).svc.cluster.local";
    assert_eq!(
        member_env(&with_tls(true, true))["ETCDCTL_ENDPOINTS"],
        format!("https://{own}:2379")
    );
    assert_eq!(
        member_host("demo", "ns", "cluster.local", 0),
        own.replace("$(POD_NAME)", "demo-0")
            .replace("$(POD_NS)", "ns")
    );
    // The kubelet expands it: POD_NAME and POD_NS come first.
    let names: Vec<String> = pod_template(&with_tls(true, true)).spec.unwrap().containers[0]
        .env
        .clone()
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    let at = |n: &str| names.iter().position(|k| k == n).unwrap();
    assert!(at("POD_NAME") < at("ETCDCTL_ENDPOINTS") && at("POD_NS") < at("ETCDCTL_ENDPOINTS"));
}

#[test]
fn spec_options_cannot_open_the_peer_port_of_issued_certificates() {
    let with = |mode: &str, flag: &str| {
        crate::model::validate(
            &crate::fixtures::cluster("demo")
                .spec(|s| {
                    s.tls.as_mut().unwrap().mode = Some(mode.into());
                    if mode == "secrets" {
                        let t = s.tls.as_mut().unwrap();
                        t.server_secret = Some("srv".into());
                        t.client_secret = Some("cli".into());
                        t.peer_secret = Some("peer".into());
                    }
                    s.etcd.options.insert(flag.into(), "x".into());
                })
                .build(),
        )
    };
    for flag in crate::model::PEER_TRUST_FLAGS {
        let e = with("managed", flag).unwrap_err().to_string();
        assert!(e.contains("spec.etcd.options") && e.contains(flag), "{e}");
        assert!(e.contains("peer certificate"), "{e}");
        // The user's own certificates: the user chooses.
        assert!(with("secrets", flag).is_ok(), "{flag}");
    }
}

#[test]
fn a_tls_secret_gives_its_three_files_or_names_the_missing_ones() {
    use k8s_openapi::ByteString;
    let secret = |keys: &[&str]| k8s_openapi::api::core::v1::Secret {
        data: Some(
            keys.iter()
                .map(|k| (k.to_string(), ByteString(b"pem".to_vec())))
                .collect(),
        ),
        ..Default::default()
    };
    let f = tls_files(&secret(&["ca.crt", "tls.crt", "tls.key"])).unwrap();
    assert_eq!(
        (f.ca, f.cert, f.key),
        (b"pem".to_vec(), b"pem".to_vec(), b"pem".to_vec())
    );
    let e = tls_files(&secret(&["tls.crt"])).err().unwrap();
    assert!(e.starts_with("lacks ca.crt, tls.key;"), "{e}");
    let e = tls_files(&k8s_openapi::api::core::v1::Secret::default())
        .err()
        .unwrap();
    assert!(e.starts_with("lacks ca.crt, tls.crt, tls.key;"), "{e}");
}

#[test]
fn the_client_service_takes_its_spec_and_a_cluster_without_one_keeps_its_service() {
    let plain = desired();
    let before = serde_json::to_value(client_service(&plain)).unwrap();
    assert_eq!(before["metadata"].get("annotations"), None, "{before}");
    assert_eq!(before["spec"].get("type"), None, "{before}");
    let svc = |d: &Desired| client_service(d);
    assert!(client_service_current(&plain, &svc(&plain)));

    let mut d = desired();
    d.client_service = crate::model::ClientService {
        type_: Some("LoadBalancer"),
        labels: BTreeMap::from([("team".to_string(), "db".to_string())]),
        annotations: BTreeMap::from([("example.com/internal".to_string(), "true".to_string())]),
        source_ranges: vec!["10.0.0.0/8".into()],
        hash: Some("0123456789abcdef".into()),
    };
    let s = serde_json::to_value(svc(&d)).unwrap();
    assert_eq!(s["spec"]["type"], "LoadBalancer");
    assert_eq!(
        s["spec"]["loadBalancerSourceRanges"],
        serde_json::json!(["10.0.0.0/8"])
    );
    assert_eq!(s["metadata"]["labels"]["team"], "db");
    assert_eq!(
        s["metadata"]["labels"]["app.kubernetes.io/instance"],
        "demo"
    );
    assert_eq!(s["metadata"]["annotations"]["example.com/internal"], "true");
    // What the spec asked for is recognised; a Service of another spec (or none) is applied again.
    assert!(client_service_current(&d, &svc(&d)));
    assert!(!client_service_current(&d, &svc(&plain)));
    assert!(!client_service_current(&plain, &svc(&d)));
    // Recovery's fence keeps the type (clients outside stay cut off the same way).
    let fenced = serde_json::to_value(fenced_client_service(&d)).unwrap();
    assert_eq!(fenced["spec"]["type"], "LoadBalancer");

    // The policy admits the client port from anywhere while the Service is exposed, and still
    // names the operator (whose pods it admits either way).
    let policy = |d: &Desired| serde_json::to_value(network_policy(d)).unwrap().to_string();
    assert!(
        policy(&d).contains("\"cidr\":\"0.0.0.0/0\"") && policy(&d).contains("\"cidr\":\"::/0\"")
    );
    assert!(!policy(&plain).contains("cidr"));
    assert_eq!(
        admitted_operator(&network_policy(&d)),
        Some(d.operator.clone())
    );
}

#[test]
fn a_pod_or_statefulset_is_told_to_belong_to_its_cluster_by_its_labels() {
    let labels = |p: k8s_openapi::api::core::v1::Pod| p.metadata.labels.unwrap_or_default();
    let d = desired();
    // A member pod: its StatefulSet's template labels.
    let member = pod_template(&d).metadata.unwrap().labels.unwrap();
    assert_eq!(cluster_of(&member), Some("demo"));
    let sts = statefulset(&d, 3).metadata.labels.unwrap();
    assert_eq!(cluster_of(&sts), Some("demo"));
    // A member pod carries the label the watches select by.
    let (key, value) = managed_selector()
        .split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .unwrap();
    assert_eq!(member.get(&key), Some(&value));
    // The restore pod: by its own label, not the members' selector.
    let d = crate::fixtures::cluster("demo")
        .spec(|s| {
            s.restore = Some(crate::api::RestoreSpec {
                source: "s3://b/ns-demo-20261201T000000Z-r5.db.zst".into(),
                ..Default::default()
            });
        })
        .desired();
    let restore = labels(restore::restore_pod(&d, d.restore.as_ref().unwrap(), "tok"));
    assert_eq!(cluster_of(&restore), Some("demo"));
    assert_eq!(restore.get(&key), Some(&value));
    // A drill pod: its end starts a pass, which finishes the drill.
    let drill = labels(drill::pod(
        &d,
        d.restore.as_ref().unwrap(),
        &drill::pod_name("demo-1"),
    ));
    assert_eq!(cluster_of(&drill), Some("demo"));
    // A claim's agent pod belongs to no cluster's pass; nor does a pod of someone else's.
    let agent = labels(pvc_agent::agent_pod(
        "demo-pvc-agent-x",
        "ns",
        "backups",
        "img",
    ));
    assert_eq!(cluster_of(&agent), None);
    let other = BTreeMap::from([(LABEL_INSTANCE.to_string(), "demo".to_string())]);
    assert_eq!(cluster_of(&other), None);
}

#[test]
fn only_a_service_that_selects_pods_confines_its_names_to_the_namespace() {
    use k8s_openapi::api::core::v1::{Service, ServiceSpec};
    let svc = |type_: Option<&str>, selector: Option<&[(&str, &str)]>| Service {
        spec: Some(ServiceSpec {
            type_: type_.map(String::from),
            selector: selector.map(|s| {
                s.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let app: &[(&str, &str)] = &[("app", "etcd")];
    for (s, confined) in [
        (svc(None, Some(app)), true),
        (svc(Some("ClusterIP"), Some(app)), true),
        (svc(Some("NodePort"), Some(app)), true),
        // Hand-written endpoints may name any address.
        (svc(None, None), false),
        (svc(None, Some(&[])), false),
        // A DNS alias of any name.
        (svc(Some("ExternalName"), None), false),
        (svc(Some("ExternalName"), Some(app)), false),
        (Service::default(), false),
    ] {
        assert_eq!(routes_to_own_pods(&s), confined, "{s:?}");
    }
}

#[test]
fn a_pods_own_ips_leave_out_the_nodes_network() {
    use k8s_openapi::api::core::v1::{Pod, PodIP, PodSpec, PodStatus};
    let pod = |host_network: bool| Pod {
        spec: Some(PodSpec {
            host_network: Some(host_network),
            ..Default::default()
        }),
        status: Some(PodStatus {
            pod_ip: Some("10.0.0.7".into()),
            pod_ips: Some(vec![
                PodIP {
                    ip: "10.0.0.7".into(),
                },
                PodIP {
                    ip: "fd00::7".into(),
                },
            ]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let ips: Vec<String> = own_pod_ips(&pod(false))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(ips, ["10.0.0.7", "fd00::7", "10.0.0.7"]);
    assert!(own_pod_ips(&pod(true)).is_empty());
    assert!(own_pod_ips(&Pod::default()).is_empty());
}
