use super::*;
use crate::api::{EtcdCluster, EtcdClusterSpec};

pub(super) fn cluster(spec: EtcdClusterSpec) -> EtcdCluster {
    crate::fixtures::cluster("demo").spec(|s| *s = spec).build()
}
pub(super) fn spec(replicas: i32, version: &str) -> EtcdClusterSpec {
    crate::fixtures::cluster("demo")
        .replicas(replicas)
        .version(version)
        .build()
        .spec
}

#[test]
fn a_new_cluster_gets_compaction_and_spreading_unless_its_spec_says_otherwise() {
    let mut s = spec(3, "3.5.16");
    new_cluster_defaults(&mut s);
    let d = validate(&cluster(s)).unwrap();
    assert!(
        d.etcd_flags
            .iter()
            .any(|f| f == "--auto-compaction-mode=periodic")
            && d.etcd_flags
                .iter()
                .any(|f| f == "--auto-compaction-retention=1h"),
        "{:?}",
        d.etcd_flags
    );
    let keys: Vec<_> = d
        .topology_spread
        .iter()
        .flatten()
        .map(|c| (c.topology_key.as_str(), c.when_unsatisfiable.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            ("topology.kubernetes.io/zone", "ScheduleAnyway"),
            ("kubernetes.io/hostname", "ScheduleAnyway")
        ]
    );
    // What the user chose stays: revision compaction, and no spreading at all.
    let mut s = spec(3, "3.5.16");
    s.etcd.auto_compaction_mode = Some("revision".into());
    s.etcd.auto_compaction_retention = Some("1000".into());
    s.topology_spread_constraints = Some(vec![]);
    new_cluster_defaults(&mut s);
    assert_eq!(s.etcd.auto_compaction_retention.as_deref(), Some("1000"));
    assert_eq!(s.etcd.auto_compaction_mode.as_deref(), Some("revision"));
    assert_eq!(s.topology_spread_constraints, Some(vec![]));
    // A spec that says nothing (a cluster created before the defaults) gets neither.
    let d = validate(&cluster(spec(3, "3.5.16"))).unwrap();
    assert!(d.topology_spread.is_none());
    assert!(!d.etcd_flags.iter().any(|f| f.contains("compaction")));
}

#[test]
fn a_new_cluster_gets_a_quota_its_volume_holds_twice_over_beside_the_wal() {
    const MIB: i64 = 1 << 20;
    // 1 GiB: (1024 - 384) / 2 MiB; 4.4 GiB is what etcd's default 2 GiB needs.
    assert_eq!(quota_fitting(1 << 30), 320 * MIB);
    assert_eq!(volume_fitting(2 << 30), 4480 * MIB);
    assert_eq!(quota_fitting(volume_fitting(2 << 30)), 2 << 30);
    assert_eq!(
        quota_fitting(100 * MIB),
        0,
        "a volume smaller than the WAL's room"
    );
    let quota_of = |size: Option<&str>, quota: Option<i64>, ephemeral: bool| {
        let mut s = spec(3, "3.6.15");
        s.storage.size = size.map(str::to_string);
        s.storage.ephemeral = ephemeral;
        s.etcd.quota_backend_bytes = quota;
        new_cluster_defaults(&mut s);
        let d = validate(&cluster(s.clone())).unwrap();
        let flag = d
            .etcd_flags
            .iter()
            .find_map(|f| f.strip_prefix("--quota-backend-bytes="))
            .map(|q| q.parse::<i64>().unwrap());
        assert_eq!(
            flag, s.etcd.quota_backend_bytes,
            "the spec's quota is the flag"
        );
        flag
    };
    // The default volume and a small one: the quota they hold.
    assert_eq!(quota_of(None, None, false), Some(320 * MIB));
    assert_eq!(quota_of(Some("2Gi"), None, false), Some(832 * MIB));
    // A volume that holds etcd's default: none written (etcd's own default).
    assert_eq!(quota_of(Some("8Gi"), None, false), None);
    assert_eq!(quota_of(Some("4480Mi"), None, false), None);
    // The user's quota stays, fitting or not (the status says when it does not); no volume,
    // no quota.
    assert_eq!(quota_of(None, Some(64 * MIB), false), Some(64 * MIB));
    assert_eq!(quota_of(None, Some(4 << 30), false), Some(4 << 30));
    assert_eq!(quota_of(None, None, true), None);
    // A spec that says nothing (a cluster created before the default) keeps etcd's.
    let d = validate(&cluster(spec(3, "3.6.15"))).unwrap();
    assert!(!d.etcd_flags.iter().any(|f| f.contains("quota")));
}

#[test]
fn a_restore_gets_volumes_whose_quota_holds_its_database_or_is_refused_with_the_size_that_does() {
    const MIB: u64 = 1 << 20;
    // Small databases (or none known): the default size.
    assert_eq!(restore_storage(None, 0), Ok(None));
    assert_eq!(
        restore_storage(None, 100 * MIB),
        Ok(None),
        "320 MiB holds 100 twice"
    );
    // Bigger: the smallest whole GiB whose quota is twice the database, etcd's default at most.
    assert_eq!(restore_storage(None, 300 * MIB), Ok(Some("2Gi".into())));
    assert_eq!(restore_storage(None, 1300 * MIB), Ok(Some("5Gi".into())));
    assert_eq!(restore_storage(None, 5000 * MIB), Ok(Some("5Gi".into())));
    // Given: kept while the quota it gets is below 90 % full, else refused with a size.
    assert_eq!(
        restore_storage(Some(&"1Gi".into()), 280 * MIB),
        Ok(Some("1Gi".into()))
    );
    let err = restore_storage(Some(&"1Gi".into()), 300 * MIB).unwrap_err();
    assert!(
        err.contains("(300 MiB) would fill 93% of the quota volumes of 1Gi hold (320 MiB")
            && err.ends_with("give --storage 2Gi or more"),
        "{err}"
    );
    assert_eq!(
        restore_storage(Some(&"8Gi".into()), 1300 * MIB),
        Ok(Some("8Gi".into()))
    );
    assert!(
        restore_storage(Some(&"2Gi".into()), 1300 * MIB)
            .unwrap_err()
            .contains("--storage 5Gi")
    );
    // Too small for any database.
    let err = restore_storage(Some(&"256Mi".into()), 0).unwrap_err();
    assert!(
        err.contains("too small") && err.contains("--storage 512Mi"),
        "{err}"
    );
    assert_eq!(check_new_volume(&"512Mi".into()), Ok(()));
    assert_eq!(
        quota_fitting(Quantity::from(MIN_NEW_VOLUME).signed_bytes()),
        64 << 20
    );
    assert_eq!(
        Quantity::from(MIN_NEW_VOLUME).signed_bytes(),
        MIN_NEW_VOLUME_BYTES
    );
    assert_eq!(
        Quantity::from(DEFAULT_STORAGE_SIZE).signed_bytes(),
        DEFAULT_STORAGE_BYTES
    );
    assert!(check_new_volume(&"500M".into()).is_err());
    // Past 90 % of etcd's default quota, a bigger volume gets no bigger quota: not refused here.
    assert_eq!(
        restore_storage(Some(&"8Gi".into()), 1900 * MIB),
        Ok(Some("8Gi".into()))
    );
    // Every size picked holds its database below half its quota, or at etcd's default.
    for mib in [1, 50, 159, 161, 500, 700, 1023, 1024, 1500, 1900] {
        let db = mib * MIB;
        let size = restore_storage(None, db)
            .unwrap()
            .unwrap_or(DEFAULT_STORAGE_SIZE.into());
        let quota = new_cluster_quota(size.signed_bytes());
        assert!(
            db as i64 <= quota / 2 || quota == DEFAULT_QUOTA_BYTES,
            "{mib} MiB: {size} holds {quota}"
        );
        assert_eq!(
            restore_storage(Some(&size), db),
            Ok(Some(size.clone())),
            "{mib} MiB"
        );
    }
}

#[test]
fn a_spread_constraint_the_api_server_would_refuse_is_refused_by_name() {
    for (skew, key, when, says) in [
        (0, "kubernetes.io/hostname", "ScheduleAnyway", "maxSkew"),
        (1, "not a key", "ScheduleAnyway", "topologyKey"),
        (
            1,
            "kubernetes.io/hostname",
            "Sometimes",
            "whenUnsatisfiable",
        ),
    ] {
        let mut s = spec(3, "3.5.16");
        s.topology_spread_constraints =
            Some(vec![k8s_openapi::api::core::v1::TopologySpreadConstraint {
                max_skew: skew,
                topology_key: key.into(),
                when_unsatisfiable: when.into(),
                ..Default::default()
            }]);
        let e = validate(&cluster(s)).unwrap_err();
        assert_eq!(e.field, "spec.topologySpreadConstraints");
        assert!(e.message.contains(says), "{e:?}");
    }
}

#[test]
fn versions_parse_with_or_without_v() {
    assert_eq!(
        Version::parse("3.5.16"),
        Some(Version {
            major: 3,
            minor: 5,
            patch: 16
        })
    );
    assert_eq!(Version::parse("v3.4.23").unwrap().to_string(), "3.4.23");
    for bad in [
        "", "3", "3.5", "3.5.x", "3.5.16.1", "3..1", "-3.5.1", "3.5.1-rc",
    ] {
        assert_eq!(Version::parse(bad), None, "{bad}");
    }
}

#[test]
fn schedules_refuse_pvc_and_file_destinations_and_restores_read_pvc_but_not_files() {
    let with_backup = |dest: &str| {
        let mut s = spec(3, "3.5.16");
        s.backup = Some(crate::api::BackupSpec {
            destination: dest.into(),
            ..Default::default()
        });
        validate(&cluster(s))
    };
    assert!(with_backup("s3://b/p").is_ok());
    let e = with_backup("pvc://backups/etcd").unwrap_err();
    assert_eq!(e.field, "spec.backup.destination");
    assert!(
        e.message.contains("kubectl etcd backup NAME --to pvc://"),
        "{e}"
    );
    assert!(with_backup("file:///var/backups").is_err());

    let with_restore = |source: &str| {
        let mut s = spec(3, "3.5.16");
        s.restore = Some(crate::api::RestoreSpec {
            source: source.into(),
            ..Default::default()
        });
        validate(&cluster(s))
    };
    let d = with_restore("pvc://backups/etcd/x.db.zst").unwrap();
    assert_eq!(d.restore.unwrap().url, "pvc://backups/etcd/x.db.zst");
    let e = with_restore("file:///var/backups/x.db.zst").unwrap_err();
    assert!(e.message.contains("restore --from file://"), "{e}");
}

#[test]
fn ids_are_formatted_like_etcdctl() {
    assert_eq!(fmt_id(0x8e9e05c52164694d), "8e9e05c52164694d");
    assert_eq!(fmt_id(0x2a), "000000000000002a");
}

pub(super) fn tls(
    server: Option<&str>,
    client: Option<&str>,
    peer: Option<&str>,
) -> crate::api::TlsSpec {
    crate::api::TlsSpec {
        server_secret: server.map(Into::into),
        client_secret: client.map(Into::into),
        peer_secret: peer.map(Into::into),
        ..Default::default()
    }
}

pub(super) fn plain_peers(t: crate::api::TlsSpec) -> crate::api::TlsSpec {
    crate::api::TlsSpec {
        plain_peers: true,
        ..t
    }
}

pub(super) fn mode(m: Option<&str>, lifetime: Option<&str>) -> crate::api::TlsSpec {
    crate::api::TlsSpec {
        mode: m.map(Into::into),
        certificate_lifetime: lifetime.map(Into::into),
        ..Default::default()
    }
}

#[test]
fn managed_tls_asked_for_a_running_plain_cluster_starts_a_switch_that_issues_certificates() {
    let have = WorkloadView {
        tls: Some(Tls::default()),
        ..Default::default()
    };
    let mut s = spec(3, "3.6.15");
    s.tls = Some(mode(Some("managed"), None));
    let d = keep_immutable(validate(&cluster(s)).unwrap(), Some(&have));
    assert!(d.refused.is_empty(), "{:?}", d.refused);
    assert_eq!(d.tls, crate::objects::managed_tls("demo"));
    assert!(d.pki.is_some() && d.tls_switch.as_ref().is_some_and(|s| s.on));
    // A managed cluster whose spec names Secrets of the same kind keeps them: no CA work then.
    let managed = WorkloadView {
        tls: Some(crate::objects::managed_tls("demo")),
        ..Default::default()
    };
    let mut s = spec(3, "3.6.15");
    s.tls = Some(tls(Some("a"), Some("b"), Some("c")));
    let d = keep_immutable(validate(&cluster(s)).unwrap(), Some(&managed));
    assert!(d.refused.is_empty());
    assert_eq!(d.pki, None);
}

#[test]
fn switching_tls_on_an_existing_cluster_is_refused_but_new_secrets_are_taken() {
    let on = |t: crate::api::TlsSpec| {
        let mut s = spec(3, "3.6.15");
        s.tls = Some(t);
        validate(&cluster(s)).unwrap()
    };
    let running = on(plain_peers(tls(Some("srv"), Some("cli"), None)));
    let have = Observed {
        statefulset: Some(WorkloadView {
            tls: Some(running.tls.clone()),
            ..Default::default()
        }),
        ..Default::default()
    };
    // Off: refused, the members keep client TLS.
    let d = keep_immutable(
        validate(&cluster(spec(3, "3.6.15"))).unwrap(),
        have.statefulset.as_ref(),
    );
    assert_eq!(d.tls, running.tls);
    assert_eq!(d.refused.len(), 1);
    assert_eq!(d.refused[0].field, "spec.tls");
    assert!(
        d.refused[0].message.contains(
            "cannot change from client TLS (server Secret srv, client Secret cli) to no TLS"
        ),
        "{}",
        d.refused[0].message
    );
    // Peer TLS added: refused too.
    let d = keep_immutable(
        on(tls(Some("srv"), Some("cli"), Some("peer"))),
        have.statefulset.as_ref(),
    );
    assert_eq!(d.tls, running.tls);
    assert_eq!(d.refused.len(), 1);
    // Another server certificate: taken.
    let d = keep_immutable(
        on(plain_peers(tls(Some("srv2"), Some("cli"), None))),
        have.statefulset.as_ref(),
    );
    assert!(d.refused.is_empty());
    assert_eq!(d.tls.client.unwrap().server_secret, "srv2");
    // Nothing observed yet: whatever the spec says.
    let d = keep_immutable(on(tls(None, None, Some("p"))), None);
    assert!(d.refused.is_empty());
}

#[test]
fn storage_may_grow_and_move_but_never_shrink() {
    let have = Observed {
        statefulset: Some(WorkloadView {
            storage: Some(Storage::Volume {
                size: "1Gi".into(),
                class: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let kept = |s: &crate::api::EtcdClusterSpec| {
        keep_immutable(
            validate(&cluster(s.clone())).unwrap(),
            have.statefulset.as_ref(),
        )
    };
    let mut s = spec(3, "3.5.16");
    s.storage.size = Some("1024Mi".into());
    assert!(
        kept(&s).refused.is_empty(),
        "the same size written differently"
    );
    s.storage.size = Some("2Gi".into());
    s.storage.storage_class_name = Some("fast".into());
    let d = kept(&s);
    assert!(d.refused.is_empty(), "{:?}", d.refused);
    assert_eq!(
        d.storage,
        Storage::Volume {
            size: "2Gi".into(),
            class: Some("fast".into())
        }
    );
    // Shrinking: refused, naming the way; the class change still applies.
    s.storage.size = Some("512Mi".into());
    let d = kept(&s);
    assert_eq!(d.refused.len(), 1);
    assert_eq!(d.refused[0].field, "spec.storage.size");
    assert!(
        d.refused[0].message.contains("shrink from 1Gi to 512Mi")
            && d.refused[0].message.contains("kubectl etcd backup"),
        "{}",
        d.refused[0]
    );
    assert_eq!(
        d.storage,
        Storage::Volume {
            size: "1Gi".into(),
            class: Some("fast".into())
        }
    );
    assert_eq!(d.replicas, 3, "the rest of the spec applies");
    s.storage.size = None;
    s.storage.storage_class_name = None;
    s.storage.ephemeral = true;
    let d = kept(&s);
    assert_eq!(d.refused[0].field, "spec.storage.ephemeral");
    assert!(matches!(d.storage, Storage::Volume { .. }));
}

#[test]
fn the_hibernate_snapshot_counts_only_for_the_generation_it_was_written_for() {
    let mut c = cluster(spec(3, "3.5.16"));
    c.spec.hibernate = true;
    c.metadata.generation = Some(4);
    let annotate = |c: &mut crate::api::EtcdCluster, v: &str| {
        c.metadata.annotations = Some(
            [(
                crate::api::ANNOTATION_HIBERNATE_SNAPSHOT.to_string(),
                v.to_string(),
            )]
            .into(),
        );
    };
    annotate(&mut c, "4 s3://b/demo.db");
    let d = validate(&c).unwrap();
    assert!(d.hibernate);
    assert_eq!(d.hibernate_snapshot.as_deref(), Some("s3://b/demo.db"));
    // An earlier hibernation's record does not stand in for this one.
    annotate(&mut c, "2 skipped");
    assert_eq!(validate(&c).unwrap().hibernate_snapshot, None);
    annotate(&mut c, "garbage");
    assert_eq!(validate(&c).unwrap().hibernate_snapshot, None);
}

#[test]
fn versions_compare_numerically_not_as_strings() {
    assert!(Version::parse("3.5.10").unwrap() > Version::parse("3.5.9").unwrap());
}

#[test]
fn a_valid_spec_is_defaulted() {
    let d = validate(&cluster(spec(3, "3.5.16"))).unwrap();
    assert_eq!(d.replicas, 3);
    assert_eq!(d.image, "gcr.io/etcd-development/etcd:v3.5.16");
    assert_eq!(
        d.storage,
        Storage::Volume {
            size: "1Gi".into(),
            class: None
        }
    );
    assert_eq!(d.namespace, "ns");
    assert!(d.etcd_flags.is_empty());
}

#[test]
fn replicas_out_of_range_are_rejected_with_the_fix() {
    for r in [0, -1, 10] {
        let e = validate(&cluster(spec(r, "3.5.16"))).unwrap_err();
        assert_eq!(e.field, "spec.replicas");
        assert!(e.message.contains("1 to 9"), "{e}");
    }
}

#[test]
fn etcd_3_5_0_to_3_5_2_are_refused_as_unfit_for_production() {
    for v in ["3.5.0", "3.5.1", "3.5.2"] {
        let e = validate(&cluster(spec(3, v))).unwrap_err();
        assert_eq!(e.field, "spec.version", "{v}");
        assert!(e.message.contains("use 3.5.3 or later"), "{e}");
    }
    assert!(validate(&cluster(spec(3, "3.5.3"))).is_ok());
}

#[test]
fn malformed_and_unsupported_versions_are_rejected() {
    for v in ["latest", "3.5", "2.3.8", "3.3.27", "3.9.0", "4.0.0"] {
        let e = validate(&cluster(spec(3, v))).unwrap_err();
        assert_eq!(e.field, "spec.version", "{v}");
    }
}

#[test]
fn only_end_of_support_minors_are_warned_about_and_the_default_is_not_one() {
    let w = support_warning(Version::parse("3.4.23").unwrap()).unwrap();
    assert!(
        w.contains("etcd 3.4.23 is past etcd's end of support"),
        "{w}"
    );
    assert!(
        w.contains(DEFAULT_VERSION),
        "the warning names what to run: {w}"
    );
    for v in ["3.5.16", "3.5.30", "3.6.15", DEFAULT_VERSION] {
        assert_eq!(support_warning(Version::parse(v).unwrap()), None, "{v}");
    }
    let d = Version::parse(DEFAULT_VERSION).unwrap();
    assert!(
        d.minor + 1 >= MAX_MINOR && d.minor <= MAX_MINOR,
        "the default is of the newest minor the engine runs, or the one before while the newest is not yet proven on the whole suite"
    );
}

#[test]
fn bad_names_are_rejected() {
    for n in ["", "Demo", "1demo", "demo-", "a_b", &"x".repeat(41)] {
        assert!(validate_name(n).is_err(), "{n}");
    }
    assert!(validate_name("demo-2").is_ok());
}

#[test]
fn storage_size_must_be_a_positive_quantity() {
    let mut s = spec(3, "3.5.16");
    s.storage.size = Some("lots".into());
    let e = validate(&cluster(s.clone())).unwrap_err();
    assert_eq!(e.field, "spec.storage.size");
    assert!(
        e.message.contains("\"lots\" is not a size") && e.message.contains("e.g. 1Gi"),
        "{e}"
    );
    s.storage.size = Some("0Gi".into());
    let e = validate(&cluster(s.clone())).unwrap_err();
    assert_eq!(e.field, "spec.storage.size");
    assert!(e.message.contains("give a positive size"), "{e}");
    s.storage.size = Some("16Ei".into());
    let e = validate(&cluster(s.clone())).unwrap_err();
    assert_eq!(e.field, "spec.storage.size");
    assert!(
        e.message.contains("larger than the largest size (16 EiB)"),
        "{e}"
    );
    // Read once here: the size keeps its text and knows its bytes.
    s.storage.size = Some("1.5Gi".into());
    let Storage::Volume { size, .. } = validate(&cluster(s.clone())).unwrap().storage else {
        panic!("a volume was asked for");
    };
    assert_eq!((size.as_str(), size.bytes()), ("1.5Gi", 3 << 29));
    s.storage.size = Some("512Mi".into());
    s.storage.storage_class_name = Some("fast".into());
    assert_eq!(
        validate(&cluster(s.clone())).unwrap().storage,
        Storage::Volume {
            size: "512Mi".into(),
            class: Some("fast".into())
        }
    );
    s.storage.ephemeral = true;
    assert_eq!(validate(&cluster(s)).unwrap().storage, Storage::Ephemeral);
}

#[test]
fn tuning_becomes_flags_and_bad_retention_is_rejected() {
    let mut s = spec(3, "3.5.16");
    s.etcd.quota_backend_bytes = Some(4 << 30);
    s.etcd.auto_compaction_mode = Some("revision".into());
    s.etcd.auto_compaction_retention = Some("1000".into());
    let d = validate(&cluster(s.clone())).unwrap();
    assert_eq!(
        d.etcd_flags,
        vec![
            "--quota-backend-bytes=4294967296",
            "--auto-compaction-mode=revision",
            "--auto-compaction-retention=1000"
        ]
    );
    s.etcd.auto_compaction_retention = Some("1h".into());
    assert_eq!(
        validate(&cluster(s.clone())).unwrap_err().field,
        "spec.etcd.autoCompactionRetention"
    );
    s.etcd.auto_compaction_mode = Some("periodic".into());
    assert!(validate(&cluster(s.clone())).is_ok());
    s.etcd.auto_compaction_retention = None;
    assert!(validate(&cluster(s)).is_err());
}

#[test]
fn etcd_options_become_flags_and_engine_flags_are_refused_naming_the_way() {
    let with = |k: &str, v: &str| {
        let mut s = spec(3, "3.5.16");
        s.etcd.options = [(k.to_string(), v.to_string())].into();
        validate(&cluster(s))
    };
    assert_eq!(
        with("snapshot-count", "50000").unwrap().etcd_flags,
        vec!["--snapshot-count=50000"]
    );
    let refused = |k: &str, v: &str, says: &str| {
        let e = with(k, v).unwrap_err();
        assert_eq!(e.field, "spec.etcd.options");
        assert!(e.message.contains(says), "{k}={v}: {}", e.message);
    };
    refused("--heartbeat-interval", "250", "\"heartbeat-interval\"");
    refused("Heartbeat_Interval", "250", "not an etcd flag name");
    refused("initial-cluster", "a=b", "the engine sets it");
    refused("data-dir", "/tmp", "the engine sets it");
    refused("quota-backend-bytes", "1", "spec.etcd.quotaBackendBytes");
    refused("cert-file", "/x", "spec.tls");
    refused("enable-pprof", "", "not a flag value");
    refused("log-level", "info\n--force-new-cluster", "not a flag value");
}

#[test]
fn pod_metadata_is_checked_and_the_engine_labels_are_its_own() {
    let with = |labels: &[(&str, &str)], annotations: &[(&str, &str)]| {
        let mut s = spec(3, "3.5.16");
        let m = |kv: &[(&str, &str)]| {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        s.pod_metadata = Some(crate::api::PodMetadata {
            labels: m(labels),
            annotations: m(annotations),
        });
        validate(&cluster(s))
    };
    let d = with(
        &[("team", "db"), ("example.com/tier", "")],
        &[("sidecar.istio.io/inject", "false")],
    )
    .unwrap();
    assert_eq!(d.pod_labels["team"], "db");
    assert_eq!(d.pod_annotations["sidecar.istio.io/inject"], "false");
    for (labels, says) in [
        (
            &[("app.kubernetes.io/instance", "other")][..],
            "set by the engine",
        ),
        (&[("bad key", "x")][..], "not a label key"),
        (&[("team", "has space")][..], "not a label value"),
        (&[("Example.com/x", "y")][..], "not a label key"),
    ] {
        let e = with(labels, &[]).unwrap_err();
        assert_eq!(e.field, "spec.podMetadata.labels");
        assert!(e.message.contains(says), "{labels:?}: {}", e.message);
    }
    let e = with(&[], &[("/x", "y")]).unwrap_err();
    assert_eq!(e.field, "spec.podMetadata.annotations");
    let mut s = spec(3, "3.5.16");
    s.priority_class_name = Some("High_Priority".into());
    assert_eq!(
        validate(&cluster(s)).unwrap_err().field,
        "spec.priorityClassName"
    );
    let pulls = |names: &[&str]| {
        let mut s = spec(3, "3.5.16");
        s.image_pull_secrets = Some(
            names
                .iter()
                .map(|n| k8s_openapi::api::core::v1::LocalObjectReference { name: (*n).into() })
                .collect(),
        );
        validate(&cluster(s))
    };
    assert_eq!(pulls(&["regcred"]).unwrap().image_pull_secrets, ["regcred"]);
    for bad in [&["Reg_Cred"][..], &["a", "a"], &[""]] {
        let e = pulls(bad).unwrap_err();
        assert_eq!(e.field, "spec.imagePullSecrets", "{bad:?}");
    }
}

#[test]
fn client_namespaces_are_namespace_names_each_once_sorted() {
    let listed = |names: &[&str]| {
        let mut s = spec(3, "3.5.16");
        s.network_policy = Some(crate::api::NetworkPolicySpec {
            enabled: None,
            client_namespaces: names.iter().map(|n| (*n).to_string()).collect(),
        });
        validate(&cluster(s))
    };
    assert!(listed(&[]).unwrap().client_namespaces.is_empty());
    assert_eq!(
        listed(&["web", "billing"]).unwrap().client_namespaces,
        ["billing", "web"]
    );
    let e = listed(&["billing", "billing"]).unwrap_err();
    assert_eq!(e.field, "spec.networkPolicy.clientNamespaces");
    assert!(e.message.contains("\"billing\" is listed twice"), "{e:?}");
    let too_long = "a".repeat(64);
    for bad in [
        "*",
        "",
        "Billing",
        "team.a",
        "-web",
        "web-",
        too_long.as_str(),
    ] {
        let e = listed(&[bad]).unwrap_err();
        assert_eq!(e.field, "spec.networkPolicy.clientNamespaces", "{bad:?}");
        assert!(
            e.message.contains("is not a namespace name"),
            "{bad:?}: {e:?}"
        );
    }
}

#[test]
fn the_exit_reason_is_the_line_that_says_why_not_the_usage_after_it() {
    let pod = |msg: &str| PodView {
        last_exit_message: Some(msg.into()),
        ..Default::default()
    };
    assert_eq!(
        pod(
            "flag provided but not defined: -x\nUsage:\n  etcd [flags]\n    Start an etcd server.\n"
        )
        .exit_reason()
        .as_deref(),
        Some("flag provided but not defined: -x")
    );
    let fatal = r#"{"level":"info","msg":"starting"}
{"level":"fatal","msg":"failed to start etcd","error":"listen tcp: address in use"}"#;
    assert!(pod(fatal).exit_reason().unwrap().contains("address in use"));
    assert_eq!(
        pod("one\ntwo\n\n").exit_reason().as_deref(),
        Some("two"),
        "no sign: the last line"
    );
    assert_eq!(
        pod(&"é".repeat(300)).exit_reason().unwrap().chars().count(),
        201
    );
    assert_eq!(PodView::default().exit_reason(), None);
}

#[test]
fn a_pods_trouble_names_a_kill_for_memory_with_its_limit_and_says_what_to_raise() {
    let oom = PodView {
        name: "demo-1".into(),
        restarts: 4,
        waiting_reason: Some("CrashLoopBackOff".into()),
        last_exit_reason: Some("OOMKilled".into()),
        last_exit_message: Some("{\"level\":\"info\",\"msg\":\"opened backend db\"}".into()),
        memory_limit: Some("24Mi".into()),
        ..Default::default()
    };
    let t = oom.trouble().unwrap();
    assert!(
        t.contains("OOMKilled at its memory limit 24Mi")
            && t.contains("raise spec.resources.limits.memory"),
        "{t}"
    );
    // Between two kills it runs for a moment, not ready: still the same trouble (the status
    // it goes into does not flip with every restart).
    let between = PodView {
        running: true,
        waiting_reason: None,
        ..oom.clone()
    };
    assert_eq!(between.trouble(), Some(t));
    // Ready again: nothing to say, whatever happened before.
    assert_eq!(
        PodView {
            ready: true,
            ..between
        }
        .trouble(),
        None
    );
    let image = PodView {
        waiting_reason: Some("ImagePullBackOff".into()),
        ..Default::default()
    };
    assert_eq!(
        image.trouble().as_deref(),
        Some(
            "its container cannot start: ImagePullBackOff (the kubelet cannot pull its image: \
             check spec.imageRepository and spec.version, and for a registry that wants \
             credentials spec.imagePullSecrets)"
        )
    );
    let flag = PodView {
        restarts: 2,
        waiting_reason: Some("CrashLoopBackOff".into()),
        last_exit_reason: Some("Error".into()),
        last_exit_message: Some("flag provided but not defined: -x\nUsage:\n".into()),
        ..Default::default()
    };
    assert_eq!(
        flag.trouble().as_deref(),
        Some("its etcd exits: flag provided but not defined: -x")
    );
    let lost = PodView {
        restarts: 1,
        last_exit_message: Some("panic: cannot use none as id".into()),
        ..Default::default()
    };
    assert_eq!(
        lost.trouble().as_deref(),
        Some("its write-ahead log is damaged (no member id left in it)")
    );
    // A full volume and an unwritable one: what to change (etcd 3.6's words).
    let ended = |msg: &str| PodView {
        restarts: 3,
        waiting_reason: Some("CrashLoopBackOff".into()),
        last_exit_message: Some(msg.into()),
        ..Default::default()
    };
    let full = ended(
        r#"{"level":"fatal","msg":"failed to create WAL","error":"write /var/lib/etcd/member/wal/0.tmp: no space left on device"}"#,
    );
    assert!(full.trouble().unwrap().contains("grow spec.storage.size"));
    let denied = ended(
        r#"{"level":"fatal","msg":"cannot access data directory","error":"open /var/lib/etcd/.touch: permission denied"}"#,
    );
    assert!(denied.trouble().unwrap().contains("fsGroup"));
    // A pod starting for the first time, or pulling its image: nothing yet.
    assert_eq!(PodView::default().trouble(), None);
    assert_eq!(
        PodView {
            waiting_reason: Some("ContainerCreating".into()),
            ..Default::default()
        }
        .trouble(),
        None
    );
}

/// etcd's last words on a data directory whose files had their first 4 KiB overwritten (the
/// tails of real runs, as the kubelet keeps them in the termination message).
#[test]
fn a_data_directory_overwritten_by_garbage_is_a_sign_of_data_loss_on_every_version() {
    let pod = |msg: &str| PodView {
        last_exit_message: Some(msg.into()),
        ..Default::default()
    };
    let wal_3_6 = r#"{"level":"info","ts":"2026-12-05T07:23:35.109038Z","caller":"membership/cluster.go:297","msg":"recovered/added member from store","cluster-id":"0","local-member-id":"0","recovered-remote-peer-id":"bdae9bbc11dd390d"}
{"level":"info","ts":"2026-12-05T07:23:35.109061Z","caller":"etcdserver/server.go:312","msg":"bootstrap successfully"}
panic: cannot use none as id

goroutine 1 [running]:
go.etcd.io/raft/v3.newRaft(0x3a5c0b48f540)"#;
    let wal_3_7 = r#"{"level":"info","ts":"2026-12-05T07:23:35.135973Z","caller":"etcdserver/bootstrap.go:615","msg":"restarting local member","cluster-id":"0","local-member-id":"0","commit-index":0}
panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0xc71510]"#;
    let wal_3_4 = "2026-12-05 07:23:54.539506 I | embed: initial cluster = 
                   2026-12-05 07:23:54.540444 C | etcdmain: wal: max entry size limit exceeded
";
    let db = r#"{"level":"panic","ts":"2026-12-05T07:24:03.425277Z","caller":"backend/backend.go:205","msg":"failed to open database","path":"/var/lib/etcd/data/member/snap/db","error":"invalid database"}
panic: failed to open database"#;
    for msg in [wal_3_6, wal_3_7, wal_3_4] {
        assert!(
            pod(msg)
                .data_loss()
                .is_some_and(|w| w.contains("write-ahead log is damaged")),
            "{msg}"
        );
        assert!(!pod(msg).proven_empty(), "{msg}");
    }
    assert_eq!(pod(db).data_loss(), Some("its database file is damaged"));
    // Not damage: a torn last record etcd repaired and started past, a database it may not
    // open, a member id that merely begins with 0.
    for msg in [
        r#"{"level":"info","msg":"repaired WAL","error":"unexpected EOF: [wal] max entry size limit exceeded"}"#,
        r#"{"level":"panic","msg":"failed to open database","error":"open /var/lib/etcd/data/member/snap/db: permission denied"}"#,
        r#"{"level":"info","msg":"restarting local member","local-member-id":"0aa8a8a62741ab48"}"#,
    ] {
        assert_eq!(pod(msg).data_loss(), None, "{msg}");
    }
}

fn with_options(options: &[(&str, &str)]) -> Desired {
    let mut s = spec(3, "3.6.15");
    s.etcd.options = options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    validate(&cluster(s)).unwrap()
}

#[test]
fn only_tuning_options_pass_the_operators_allow_list() {
    let operator = OptionLeave::Tuning(Vec::new());
    let leave_for_pprof = OptionLeave::Tuning(vec!["enable-pprof".into()]);
    // (option, leave, allowed)
    let table: &[(&str, &OptionLeave, bool)] = &[
        ("heartbeat-interval", &operator, true),
        ("election-timeout", &operator, true),
        ("snapshot-count", &operator, true),
        ("experimental-compact-hash-check-enabled", &operator, true),
        ("log-level", &operator, true),
        ("enable-pprof", &operator, false),
        ("enable-v2", &operator, false),
        ("unsafe-no-fsync", &operator, false),
        ("listen-client-http-urls", &operator, false),
        ("cipher-suites", &operator, false),
        ("tls-min-version", &operator, false),
        ("feature-gates", &operator, false),
        ("strict-reconfig-check", &operator, false),
        ("enable-pprof", &leave_for_pprof, true),
        ("enable-v2", &leave_for_pprof, false),
        ("unsafe-no-fsync", &OptionLeave::Any, true),
    ];
    for (option, leave, allowed) in table {
        let d = with_options(&[(option, "true")]);
        let checked = check_options(&d, leave);
        assert_eq!(checked.is_ok(), *allowed, "{option} under {leave:?}");
        if let Err(e) = checked {
            assert_eq!(e.field, "spec.etcd.options");
            assert!(
                e.message.contains(&format!("{option:?}"))
                    && e.message.contains(&format!("--allow-etcd-option {option}")),
                "the message names the flag and the fix: {}",
                e.message
            );
        }
    }
}

#[test]
fn an_option_off_the_list_is_left_out_of_new_templates_and_kept_where_members_run_it() {
    let operator = OptionLeave::Tuning(Vec::new());
    let spec_flags = ["--heartbeat-interval=250", "--unsafe-no-fsync=true"];
    let running_with = |flags: &[&str]| -> Vec<String> {
        std::iter::once("etcd")
            .chain(flags.iter().copied())
            .map(String::from)
            .collect()
    };
    // (what the StatefulSet runs, flags the pass writes, refused message says)
    type Row<'a> = (Option<Vec<String>>, &'a [&'a str], &'a str);
    let table: &[Row] = &[
        // No StatefulSet yet: the cluster starts without it.
        (None, &spec_flags[..1], "left out of the members"),
        // Running it already (an older operator, or `create --allow-etcd-option`): kept.
        (
            Some(running_with(&spec_flags)),
            &spec_flags,
            "the running members keep it",
        ),
        // Members run without it, or with another value: not added behind the owner's back.
        (
            Some(running_with(&spec_flags[..1])),
            &spec_flags[..1],
            "left out",
        ),
        (
            Some(running_with(&[
                "--heartbeat-interval=250",
                "--unsafe-no-fsync=false",
            ])),
            &spec_flags[..1],
            "left out",
        ),
    ];
    for (running, flags, says) in table {
        let d = with_options(&[("heartbeat-interval", "250"), ("unsafe-no-fsync", "true")]);
        let d = keep_options(d, running.as_deref(), &operator);
        assert_eq!(d.etcd_flags, *flags, "{running:?}");
        assert_eq!(d.refused.len(), 1, "{running:?}");
        assert_eq!(d.refused[0].field, "spec.etcd.options");
        assert!(
            d.refused[0].message.contains("\"unsafe-no-fsync\"")
                && d.refused[0].message.contains(says),
            "{running:?}: {}",
            d.refused[0].message
        );
    }
    // Allowed options, or a CLI's pass: nothing refused, nothing left out.
    for leave in [
        OptionLeave::Any,
        OptionLeave::Tuning(vec!["unsafe-no-fsync".into()]),
    ] {
        let d = keep_options(
            with_options(&[("heartbeat-interval", "250"), ("unsafe-no-fsync", "true")]),
            None,
            &leave,
        );
        assert!(d.refused.is_empty(), "{leave:?}");
        assert_eq!(d.etcd_flags, spec_flags);
    }
}

#[test]
fn the_cluster_domain_is_a_dns_domain_and_cluster_local_by_default() {
    for (given, want) in [
        (None, "cluster.local"),
        (Some(""), "cluster.local"),
        (Some("cluster.local"), "cluster.local"),
        (Some("k8s.example.com."), "k8s.example.com"),
        (Some("corp"), "corp"),
    ] {
        assert_eq!(validate_cluster_domain(given).unwrap(), want, "{given:?}");
    }
    for bad in [
        "Cluster.Local",
        "a..b",
        "-a.b",
        "a-.b",
        "a_b.c",
        ".",
        &"x".repeat(64),
    ] {
        let e = validate_cluster_domain(Some(bad)).unwrap_err();
        assert_eq!(e.field, "spec.clusterDomain", "{bad:?}");
        assert!(e.message.contains("is not a DNS domain"), "{}", e.message);
    }
    let mut s = spec(3, "3.6.15");
    assert_eq!(
        validate(&cluster(s.clone())).unwrap().cluster_domain,
        "cluster.local"
    );
    s.cluster_domain = Some("k8s.example.com".into());
    assert_eq!(
        validate(&cluster(s.clone())).unwrap().cluster_domain,
        "k8s.example.com"
    );
    s.cluster_domain = Some("bad_domain".into());
    assert_eq!(
        validate(&cluster(s)).unwrap_err().field,
        "spec.clusterDomain"
    );
}

#[test]
fn a_cluster_domain_changed_on_an_existing_cluster_is_refused_and_the_members_keep_theirs() {
    let mut s = spec(3, "3.6.15");
    s.cluster_domain = Some("k8s.example.com".into());
    let have = WorkloadView {
        cluster_domain: Some("cluster.local".into()),
        ..Default::default()
    };
    let d = keep_immutable(validate(&cluster(s.clone())).unwrap(), Some(&have));
    assert_eq!(d.cluster_domain, "cluster.local");
    assert_eq!(d.refused.len(), 1, "{:?}", d.refused);
    assert_eq!(d.refused[0].field, "spec.clusterDomain");
    assert!(
        d.refused[0]
            .message
            .contains("cannot change from cluster.local to k8s.example.com"),
        "{}",
        d.refused[0].message
    );
    // The same domain, or a StatefulSet that does not say (none yet): nothing refused.
    let same = WorkloadView {
        cluster_domain: Some("k8s.example.com".into()),
        ..Default::default()
    };
    for w in [Some(&same), Some(&WorkloadView::default()), None] {
        let d = keep_immutable(validate(&cluster(s.clone())).unwrap(), w);
        assert!(d.refused.is_empty(), "{:?}", d.refused);
        assert_eq!(d.cluster_domain, "k8s.example.com");
    }
}

#[test]
fn a_client_service_spec_is_checked_and_hashed_and_none_stays_none() {
    use crate::api::{ClientServiceSpec, ClientServiceType};
    let with = |c: ClientServiceSpec| {
        let mut s = spec(3, "3.5.16");
        s.client_service = Some(c);
        validate(&cluster(s))
    };
    assert_eq!(
        validate(&cluster(spec(3, "3.5.16")))
            .unwrap()
            .client_service,
        ClientService::default()
    );
    let lb = ClientServiceSpec {
        type_: Some(ClientServiceType::LoadBalancer),
        labels: [("team".to_string(), "db".to_string())].into(),
        annotations: [("example.com/internal".to_string(), "true".to_string())].into(),
        load_balancer_source_ranges: vec!["10.0.0.0/8".into(), "fd00::/8".into()],
    };
    let d = with(lb.clone()).unwrap();
    assert_eq!(d.client_service.type_, Some("LoadBalancer"));
    assert!(d.client_service.exposed());
    assert_eq!(
        d.client_service.source_ranges,
        lb.load_balancer_source_ranges
    );
    let hash = d.client_service.hash.clone().unwrap();
    // Any change gives another hash; the same spec the same one.
    assert_eq!(
        with(lb.clone()).unwrap().client_service.hash,
        Some(hash.clone())
    );
    let mut other = lb.clone();
    other.annotations.clear();
    assert_ne!(with(other).unwrap().client_service.hash, Some(hash));
    let cluster_ip = with(ClientServiceSpec::default()).unwrap().client_service;
    let ranges = |t, range: &str| ClientServiceSpec {
        type_: Some(t),
        load_balancer_source_ranges: vec![range.to_string()],
        ..Default::default()
    };
    assert!(!cluster_ip.exposed() && cluster_ip.hash.is_some());

    for (c, field, says) in [
        (
            ClientServiceSpec {
                labels: [("app.kubernetes.io/name".to_string(), "x".to_string())].into(),
                ..Default::default()
            },
            "spec.clientService.labels",
            "set by the engine",
        ),
        (
            ClientServiceSpec {
                annotations: [("/x".to_string(), "y".to_string())].into(),
                ..Default::default()
            },
            "spec.clientService.annotations",
            "not an annotation key",
        ),
        (
            ranges(ClientServiceType::NodePort, "10.0.0.0/8"),
            "spec.clientService.loadBalancerSourceRanges",
            "a load balancer only",
        ),
        (
            ranges(ClientServiceType::LoadBalancer, "10.0.0.0/33"),
            "spec.clientService.loadBalancerSourceRanges",
            "is not a CIDR",
        ),
        (
            ranges(ClientServiceType::LoadBalancer, "10.0.0.1"),
            "spec.clientService.loadBalancerSourceRanges",
            "is not a CIDR",
        ),
    ] {
        let e = with(c).unwrap_err();
        assert_eq!(e.field, field);
        assert!(e.message.contains(says), "{}", e.message);
    }
}

#[test]
fn server_names_are_checked_and_only_where_the_engine_or_cert_manager_issues() {
    let with = |mode: &str, names: &[&str]| {
        let mut s = spec(3, "3.5.16");
        s.tls = Some(crate::api::TlsSpec {
            mode: Some(mode.into()),
            server_names: names.iter().map(|n| n.to_string()).collect(),
            ..Default::default()
        });
        validate(&cluster(s))
    };
    let d = with(
        "managed",
        &["etcd.example.com", "*.lb.example.com", "203.0.113.10"],
    )
    .unwrap();
    assert_eq!(d.server_names.len(), 3);
    let hash = d.server_names_hash();
    assert!(hash.is_some());
    assert_ne!(
        with("managed", &["etcd.example.com"])
            .unwrap()
            .server_names_hash(),
        hash
    );
    assert_eq!(with("managed", &[]).unwrap().server_names_hash(), None);
    for (mode, names, says) in [
        (
            "none",
            &["etcd.example.com"][..],
            "only in modes managed and certManager",
        ),
        (
            "managed",
            &["Etcd_Example"][..],
            "neither a DNS name nor an IP address",
        ),
        (
            "managed",
            &["a.example.com", "a.example.com"][..],
            "named twice",
        ),
    ] {
        let e = with(mode, names).unwrap_err();
        assert_eq!(e.field, "spec.tls.serverNames", "{e:?}");
        assert!(e.message.contains(says), "{}", e.message);
    }
}

#[test]
fn create_turns_etcd_auth_on_for_managed_and_cert_manager_clusters_from_3_5() {
    let tls = |mode: &str| crate::api::TlsSpec {
        mode: Some(mode.into()),
        ..Default::default()
    };
    let v = |s: &str| Version::parse(s).unwrap();
    for mode in ["managed", "certManager"] {
        assert!(etcd_auth_by_default(Some(&tls(mode)), v("3.5.0")), "{mode}");
        assert!(etcd_auth_by_default(Some(&tls(mode)), v("3.7.3")), "{mode}");
        // 3.4: etcd cannot upgrade it to 3.5 with authentication on.
        assert!(
            !etcd_auth_by_default(Some(&tls(mode)), v("3.4.23")),
            "{mode}"
        );
    }
    for mode in ["secrets", "none"] {
        assert!(
            !etcd_auth_by_default(Some(&tls(mode)), v("3.6.15")),
            "{mode}"
        );
    }
    assert!(!etcd_auth_by_default(None, v("3.6.15")));
}
