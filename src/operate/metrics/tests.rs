//! Unit tests of the metrics: what each family reports, and the HTTP server.

use std::sync::Arc;
use std::time::Duration;

use hyper::header::CONTENT_TYPE;
use hyper::{Method, StatusCode};

use super::backup::{last_duration, schedule_interval};
use super::certs;
use super::server::{bind, guarded, refuse, respond, serve};
use super::*;
use crate::api::BackupStatus;
use crate::engine::Pass;
use crate::error::Error;
use crate::model::EtcdView;
use crate::plan::Step;

fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix} in\n{text}"))
}

fn demo() -> ClusterLabels {
    ClusterLabels {
        namespace: "ns".into(),
        name: "demo".into(),
    }
}

#[test]
fn a_fresh_operator_reports_every_series_at_zero() {
    let text = Metrics::default().render();
    for r in ["acted", "unchanged", "not_yet", "error"] {
        assert_eq!(
            line(
                &text,
                &format!("kubectl_etcd_reconciles_total{{result=\"{r}\"}}")
            )
            .rsplit(' ')
            .next(),
            Some("0")
        );
    }
    assert_eq!(
        line(&text, "kubectl_etcd_clusters{phase=\"Running\"}"),
        "kubectl_etcd_clusters{phase=\"Running\"} 0"
    );
    assert_eq!(line(&text, "kubectl_etcd_leader "), "kubectl_etcd_leader 0");
    assert_eq!(
        line(&text, "kubectl_etcd_reconcile_duration_seconds_count"),
        "kubectl_etcd_reconcile_duration_seconds_count 0"
    );
    assert!(text.contains("# TYPE kubectl_etcd_reconcile_duration_seconds histogram"));
}

#[test]
fn passes_count_by_result_and_fill_cumulative_buckets() {
    let m = Metrics::default();
    m.pass(PassResult::Acted, Duration::from_millis(80));
    m.pass(PassResult::Error, Duration::from_secs(3));
    m.failed(&demo(), &Error::Conflict("x".into()));
    m.pass(PassResult::Unchanged, Duration::from_secs(60));
    let text = m.render();
    assert_eq!(
        line(&text, "kubectl_etcd_reconciles_total{result=\"acted\"}"),
        "kubectl_etcd_reconciles_total{result=\"acted\"} 1"
    );
    assert_eq!(
        line(
            &text,
            "kubectl_etcd_reconcile_errors_total{reason=\"conflict\"}"
        ),
        "kubectl_etcd_reconcile_errors_total{reason=\"conflict\"} 1"
    );
    assert_eq!(
        line(
            &text,
            "kubectl_etcd_reconcile_errors_total{reason=\"etcd\"}"
        ),
        "kubectl_etcd_reconcile_errors_total{reason=\"etcd\"} 0",
        "every reason from the start"
    );
    let bucket = |le: &str| {
        line(
            &text,
            &format!("kubectl_etcd_reconcile_duration_seconds_bucket{{le=\"{le}\"}}"),
        )
        .rsplit(' ')
        .next()
        .unwrap()
        .to_string()
    };
    assert_eq!(bucket("0.05"), "0");
    assert_eq!(bucket("0.1"), "1");
    assert_eq!(bucket("5"), "2");
    assert_eq!(bucket("+Inf"), "3");
    assert_eq!(
        line(&text, "kubectl_etcd_reconcile_duration_seconds_sum"),
        "kubectl_etcd_reconcile_duration_seconds_sum 63.08"
    );
}

#[test]
fn clusters_are_counted_by_their_last_phase() {
    let m = Metrics::default();
    let c = |ns: &str, name: &str| ClusterLabels {
        namespace: ns.into(),
        name: name.into(),
    };
    m.phase(&c("a", "one"), Some(Phase::Running));
    m.phase(&c("a", "two"), Some(Phase::Scaling));
    m.phase(&c("a", "two"), Some(Phase::Running));
    m.phase(&c("b", "three"), Some(Phase::Degraded));
    m.phase(&c("b", "four"), None);
    m.forget(&c("b", "three"));
    m.set_leader(true);
    let text = m.render();
    assert_eq!(
        line(&text, "kubectl_etcd_clusters{phase=\"Running\"}"),
        "kubectl_etcd_clusters{phase=\"Running\"} 2"
    );
    assert_eq!(
        line(&text, "kubectl_etcd_clusters{phase=\"Degraded\"}"),
        "kubectl_etcd_clusters{phase=\"Degraded\"} 0"
    );
    assert_eq!(line(&text, "kubectl_etcd_leader "), "kubectl_etcd_leader 1");
}

fn pass_with(leader: u64, healthy: [bool; 3], db: [i64; 3]) -> Pass {
    use crate::model::{ClusterView, MemberStatusView, MemberView, Observed};
    let members = (0..3)
        .map(|i| MemberView {
            id: 100 + i,
            ordinal: Some(i as u32),
            healthy: healthy[i as usize],
            status: Some(MemberStatusView {
                db_size: db[i as usize],
                ..Default::default()
            }),
            ..Default::default()
        })
        .collect();
    Pass {
        desired: crate::fixtures::cluster("demo")
            .spec(|s| s.etcd.quota_backend_bytes = Some(8 << 30))
            .desired(),
        observed: Observed {
            etcd: EtcdView::Reached(ClusterView {
                cluster_id: 1,
                leader: Some(leader),
                members,
                auth_enabled: false,
                auth: None,
                list_unconfirmed: false,
            }),
            ..Default::default()
        },
        step: crate::plan::Step::Idle,
        status: crate::api::EtcdClusterStatus {
            phase: Some(Phase::Running),
            ..Default::default()
        },
        outcome: crate::engine::Outcome::Unchanged,
        defragmented: None,
    }
}

#[test]
fn each_cluster_reports_what_users_alert_on_and_is_forgotten_when_deleted() {
    let m = Metrics::default();
    m.observed(&demo(), &pass_with(100, [true, true, false], [10, 30, 20]));
    m.observed(&demo(), &pass_with(100, [true, true, false], [10, 30, 20]));
    m.observed(&demo(), &pass_with(101, [true, true, true], [10, 40, 20]));
    let text = m.render();
    let of = |metric: &str| {
        line(
            &text,
            &format!("kubectl_etcd_{metric}{{namespace=\"ns\",name=\"demo\"}}"),
        )
        .rsplit(' ')
        .next()
        .unwrap()
        .to_string()
    };
    assert_eq!(of("voters"), "3");
    assert_eq!(of("healthy_voters"), "3");
    assert_eq!(of("learners"), "0");
    assert_eq!(of("db_size_bytes"), "40");
    assert_eq!(of("db_quota_bytes"), (8i64 << 30).to_string());
    assert_eq!(of("leader_changes_total"), "1");
    assert!(
        !text.contains("kubectl_etcd_last_successful_backup_timestamp_seconds{"),
        "no backup yet, no series"
    );
    let finished = jiff::Timestamp::from_second(1_764_547_200).unwrap();
    m.backup(
        &demo(),
        Some(&BackupStatus {
            last_successful_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                finished,
            )),
            ..Default::default()
        }),
        None,
        None,
    );
    let text = m.render();
    assert_eq!(
        line(
            &text,
            "kubectl_etcd_last_successful_backup_timestamp_seconds{namespace=\"ns\",name=\"demo\"}"
        ),
        "kubectl_etcd_last_successful_backup_timestamp_seconds{namespace=\"ns\",name=\"demo\"} 1764547200"
    );
    m.forget(&demo());
    assert!(
        !m.render().contains("name=\"demo\""),
        "label sets stay bounded"
    );
}

#[test]
fn a_defragmentation_counts_its_trigger_the_bytes_won_and_its_pause() {
    let m = Metrics::default();
    let mut pass = pass_with(100, [true, true, true], [10, 10, 10]);
    pass.defragmented = Some(crate::engine::Defragmentation {
        member: "demo-1".into(),
        trigger: "policy",
        before: Some(100 << 20),
        after: Some(40 << 20),
        pause: Duration::from_millis(1500),
    });
    m.observed(&demo(), &pass);
    m.observed(&demo(), &pass_with(100, [true, true, true], [10, 10, 10]));
    let text = m.render();
    assert_eq!(
        line(
            &text,
            "kubectl_etcd_defragmentations_total{namespace=\"ns\",name=\"demo\",trigger=\"policy\"}"
        ),
        "kubectl_etcd_defragmentations_total{namespace=\"ns\",name=\"demo\",trigger=\"policy\"} 1"
    );
    assert_eq!(
        line(
            &text,
            "kubectl_etcd_defrag_reclaimed_bytes_total{namespace=\"ns\",name=\"demo\"}"
        ),
        format!(
            "kubectl_etcd_defrag_reclaimed_bytes_total{{namespace=\"ns\",name=\"demo\"}} {}",
            60 << 20
        )
    );
    assert_eq!(
        line(&text, "kubectl_etcd_defrag_pause_seconds_count "),
        "kubectl_etcd_defrag_pause_seconds_count 1"
    );
    m.forget(&demo());
    assert!(!m.render().contains("name=\"demo\""));
}

fn value(text: &str, series: &str) -> Option<String> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .map(String::from)
}

fn cond(
    type_: &str,
    status: &str,
    reason: &str,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: String::new(),
        observed_generation: None,
        last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ),
    }
}

#[test]
fn conditions_and_the_upgrade_state_keep_one_series_per_type_and_follow_the_reason() {
    let m = Metrics::default();
    let mut p = pass_with(100, [true; 3], [1; 3]);
    p.status.conditions = vec![
        cond("Upgrading", "True", "UpgradingMember"),
        cond("SpecRefused", "False", "AsDesired"),
    ];
    m.observed(&demo(), &p);
    let text = m.render();
    let up = r#"kubectl_etcd_condition{namespace="ns",name="demo",type="Upgrading",reason="UpgradingMember"}"#;
    assert_eq!(value(&text, up).as_deref(), Some("1"));
    let state = |s: &str| {
        format!(r#"kubectl_etcd_upgrade_state{{namespace="ns",name="demo",state="{s}"}}"#)
    };
    assert_eq!(value(&text, &state("upgrading")).as_deref(), Some("1"));
    assert_eq!(value(&text, &state("rolled_back")).as_deref(), Some("0"));
    p.status.conditions = vec![
        cond("Upgrading", "False", "RolledBack"),
        cond("SpecRefused", "True", "ImmutableField"),
    ];
    m.observed(&demo(), &p);
    let text = m.render();
    assert_eq!(value(&text, up), None, "the old reason's series is gone");
    assert_eq!(value(&text, &state("rolled_back")).as_deref(), Some("1"));
    assert_eq!(value(&text, &state("upgrading")).as_deref(), Some("0"));
    assert_eq!(
        value(&text, r#"kubectl_etcd_condition{namespace="ns",name="demo",type="SpecRefused",reason="ImmutableField"}"#).as_deref(),
        Some("1")
    );
    m.forget(&demo());
    assert!(!m.render().contains("name=\"demo\""));
}

#[test]
fn an_invalid_spec_counts_an_error_by_reason_and_sets_degraded_invalid_spec() {
    let m = Metrics::default();
    let e = Error::InvalidSpec {
        namespace: "ns".into(),
        name: "demo".into(),
        source: crate::model::validate(
            &crate::fixtures::cluster("demo")
                .spec(|s| s.replicas = 0)
                .build(),
        )
        .unwrap_err(),
    };
    m.failed(&demo(), &e);
    let text = m.render();
    assert_eq!(
        value(
            &text,
            r#"kubectl_etcd_reconcile_errors_total{reason="invalid_spec"}"#
        )
        .as_deref(),
        Some("1")
    );
    assert_eq!(
        value(&text, r#"kubectl_etcd_condition{namespace="ns",name="demo",type="Degraded",reason="InvalidSpec"}"#).as_deref(),
        Some("1")
    );
    assert_eq!(
        value(&text, r#"kubectl_etcd_clusters{phase="Failed"}"#).as_deref(),
        Some("1")
    );
}

#[test]
fn members_are_reported_by_pod_and_dropped_when_they_leave_the_member_list() {
    let m = Metrics::default();
    let mut p = pass_with(100, [true, false, true], [10, 20, 30]);
    if let EtcdView::Reached(c) = &mut p.observed.etcd {
        c.members[2].status.as_mut().unwrap().db_size_in_use = 7;
        c.members[1].alarmed = true;
    }
    m.observed(&demo(), &p);
    let text = m.render();
    let member = |n: u32| {
        format!(r#"kubectl_etcd_member_healthy{{namespace="ns",name="demo",member="demo-{n}"}}"#)
    };
    assert_eq!(value(&text, &member(0)).as_deref(), Some("1"));
    assert_eq!(value(&text, &member(1)).as_deref(), Some("0"));
    assert_eq!(
        value(
            &text,
            r#"kubectl_etcd_db_size_in_use_bytes{namespace="ns",name="demo"}"#
        )
        .as_deref(),
        Some("7")
    );
    assert_eq!(
        value(&text, r#"kubectl_etcd_alarms{namespace="ns",name="demo"}"#).as_deref(),
        Some("1")
    );
    assert_eq!(
        value(
            &text,
            r#"kubectl_etcd_replicas{namespace="ns",name="demo"}"#
        )
        .as_deref(),
        Some("3")
    );
    if let EtcdView::Reached(c) = &mut p.observed.etcd {
        c.members.pop();
    }
    m.observed(&demo(), &p);
    assert_eq!(value(&m.render(), &member(2)), None);
    p.observed.etcd = EtcdView::NotQueried;
    m.observed(&demo(), &p);
    let text = m.render();
    assert_eq!(
        value(&text, &member(0)).as_deref(),
        Some("0"),
        "nobody answered"
    );
    assert_eq!(
        value(
            &text,
            r#"kubectl_etcd_healthy_voters{namespace="ns",name="demo"}"#
        )
        .as_deref(),
        Some("0")
    );
}

#[test]
fn backups_report_size_interval_and_count_each_new_failure_once() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let m = Metrics::default();
    let at = |s: i64| Some(Time(jiff::Timestamp::from_second(s).unwrap()));
    let mut st = BackupStatus {
        last_successful_time: at(1000),
        last_successful_size: Some(4096),
        last_failed: Some("demo-old".into()),
        last_failed_time: at(900),
        ..Default::default()
    };
    m.backup(
        &demo(),
        Some(&st),
        Some(12.5),
        Some(Duration::from_secs(60)),
    );
    let of = |text: &str, metric: &str| {
        value(
            text,
            &format!(r#"kubectl_etcd_{metric}{{namespace="ns",name="demo"}}"#),
        )
    };
    let text = m.render();
    assert_eq!(
        of(&text, "last_successful_backup_size_bytes").as_deref(),
        Some("4096")
    );
    assert_eq!(of(&text, "backup_interval_seconds").as_deref(), Some("60"));
    assert_eq!(
        of(&text, "last_successful_backup_duration_seconds").as_deref(),
        Some("12.5")
    );
    assert_eq!(
        of(&text, "backup_failing").as_deref(),
        Some("0"),
        "the failure is older than the success"
    );
    assert_eq!(
        of(&text, "backup_failures_total").as_deref(),
        Some("0"),
        "an old failure found at start"
    );
    st.last_failed = Some("demo-new".into());
    st.last_failed_time = at(1100);
    m.backup(&demo(), Some(&st), None, Some(Duration::from_secs(60)));
    m.backup(&demo(), Some(&st), None, None);
    let text = m.render();
    assert_eq!(of(&text, "backup_failing").as_deref(), Some("1"));
    assert_eq!(of(&text, "backup_failures_total").as_deref(), Some("1"));
    assert_eq!(
        of(&text, "backup_interval_seconds"),
        None,
        "no schedule, no interval"
    );
}

fn record(name: &str, start: i64, end: Option<i64>, secs: Option<f64>) -> crate::api::EtcdBackup {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let at = |s: i64| Time(jiff::Timestamp::from_second(s).unwrap());
    let mut b = crate::api::EtcdBackup::new(
        name,
        crate::api::EtcdBackupSpec {
            cluster: "demo".into(),
            destination: "s3://b/p".into(),
            ..Default::default()
        },
    );
    b.status = Some(crate::api::EtcdBackupStatus {
        phase: Some("Succeeded".into()),
        start_time: Some(at(start)),
        completion_time: end.map(at),
        duration_seconds: secs,
        ..Default::default()
    });
    b
}

#[test]
fn the_newest_successful_backup_takes_its_duration_from_its_record() {
    let newest = |name: &str| BackupStatus {
        last_successful: Some(name.into()),
        ..Default::default()
    };
    let records = [
        record("demo-measured", 1000, Some(1003), Some(2.75)),
        record("demo-times-only", 1000, Some(1042), None),
        record("demo-unfinished", 1000, None, None),
        record("demo-clock-skew", 1000, Some(990), None),
    ];
    let of = |name: &str| last_duration(Some(&newest(name)), &records);
    assert_eq!(of("demo-measured"), Some(2.75), "durationSeconds first");
    assert_eq!(of("demo-times-only"), Some(42.0), "else completion - start");
    assert_eq!(of("demo-unfinished"), None);
    assert_eq!(of("demo-clock-skew"), None, "never negative");
    assert_eq!(of("demo-pruned"), None, "the record is gone");
    assert_eq!(last_duration(None, &records), None, "no backup yet");
}

#[test]
fn a_pass_reports_the_backups_it_saw_with_the_schedule_around_its_own_clock() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let m = Metrics::default();
    let mut p = pass_with(100, [true; 3], [1; 3]);
    p.observed.now = jiff::Timestamp::from_second(1_764_547_230).unwrap();
    p.observed.backups.records = vec![record("demo-1", 1000, Some(1007), None)];
    p.status.backup = Some(BackupStatus {
        last_successful: Some("demo-1".into()),
        last_successful_time: Some(Time(jiff::Timestamp::from_second(1007).unwrap())),
        last_successful_size: Some(512),
        ..Default::default()
    });
    p.desired.backup = crate::fixtures::cluster("demo")
        .spec(|s| {
            s.backup = Some(crate::api::BackupSpec {
                destination: "s3://b/p".into(),
                schedule: Some("*/5 * * * *".into()),
                suspend: true,
                ..Default::default()
            })
        })
        .desired()
        .backup;
    m.observed(&demo(), &p);
    let text = m.render();
    let of = |metric: &str| {
        value(
            &text,
            &format!(r#"kubectl_etcd_{metric}{{namespace="ns",name="demo"}}"#),
        )
    };
    assert_eq!(
        of("last_successful_backup_duration_seconds").as_deref(),
        Some("7.0")
    );
    assert_eq!(
        of("last_successful_backup_timestamp_seconds").as_deref(),
        Some("1007")
    );
    assert_eq!(
        of("last_successful_backup_size_bytes").as_deref(),
        Some("512")
    );
    assert_eq!(
        of("backup_interval_seconds").as_deref(),
        Some("300"),
        "a suspended schedule keeps its interval"
    );
    m.forget(&demo());
    assert!(!m.render().contains("name=\"demo\""), "{}", m.render());
}

#[test]
fn actions_count_by_step_kind() {
    let m = Metrics::default();
    m.acted(&demo(), &Step::UpdateTemplate { replicas: 3 });
    m.acted(&demo(), &Step::UpdateTemplate { replicas: 3 });
    m.acted(&demo(), &Step::ApplySupportingObjects);
    let text = m.render();
    let of = |step: &str| {
        value(
            &text,
            &format!(r#"kubectl_etcd_actions_total{{namespace="ns",name="demo",step="{step}"}}"#),
        )
    };
    assert_eq!(of("updateTemplate").as_deref(), Some("2"));
    assert_eq!(of("applySupportingObjects").as_deref(), Some("1"));
    m.forget(&demo());
    assert!(!m.render().contains("step="));
}

#[test]
fn a_schedule_gives_its_interval_suspended_or_not() {
    let now = jiff::Timestamp::from_second(1_764_547_230).unwrap();
    // the plan's schedule, as validate parsed it (suspended or not: the interval is the same)
    let spec = |schedule: &str| crate::archive::schedule::parse(schedule).unwrap();
    assert_eq!(
        schedule_interval(Some(&spec("*/5 * * * *")), now),
        Some(Duration::from_secs(300))
    );
    assert_eq!(
        schedule_interval(Some(&spec("0 3 * * *")), now),
        Some(Duration::from_secs(86400))
    );
    assert_eq!(schedule_interval(None, now), None);
}

#[test]
fn probes_answer_by_path_and_readiness() {
    let m = Metrics::default();
    let status = |method: Method, path: &str| respond(&m, &method, path).status();
    assert_eq!(status(Method::GET, "/healthz"), StatusCode::OK);
    assert_eq!(
        status(Method::GET, "/readyz"),
        StatusCode::SERVICE_UNAVAILABLE
    );
    m.set_ready(true);
    assert_eq!(status(Method::GET, "/readyz"), StatusCode::OK);
    assert_eq!(
        respond(&m, &Method::GET, "/metrics").headers()[CONTENT_TYPE],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    assert_eq!(
        status(Method::POST, "/metrics"),
        StatusCode::METHOD_NOT_ALLOWED
    );
    assert_eq!(status(Method::GET, "/nope"), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_server_speaks_http_over_tcp() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listeners = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    assert_eq!(listeners.len(), 1, "an address is bound as given");
    let addr = listeners[0].local_addr().unwrap();
    let m = Arc::new(Metrics::default());
    let server = tokio::spawn(serve(listeners, Arc::new(Guard::Open), m));
    let get = |request: &'static [u8]| async move {
        let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
        conn.write_all(request).await.unwrap();
        let mut out = String::new();
        conn.read_to_string(&mut out).await.unwrap();
        out
    };
    let out = get(b"GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    let body = out.split("\r\n\r\n").nth(1).unwrap();
    assert!(
        out.contains(&format!("content-length: {}\r\n", body.len())),
        "{out}"
    );
    assert!(body.contains("kubectl_etcd_leader 0"));
    let bad = get(b"NONSENSE\r\n\r\n").await;
    assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
    server.abort();
}

/// The default address, `[::]`, answers on IPv6 and IPv4 alike: the kubelet probes an IPv6-only
/// cluster's pods on their IPv6 address, where a socket bound to `0.0.0.0` is never reached.
#[tokio::test]
async fn the_default_address_answers_on_ipv6_and_ipv4() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listeners = bind("[::]:0".parse().unwrap()).await.unwrap();
    let port = listeners[0].local_addr().unwrap().port();
    let ipv6 = listeners[0].local_addr().unwrap().is_ipv6();
    let server = tokio::spawn(serve(
        listeners,
        Arc::new(Guard::Open),
        Arc::new(Metrics::default()),
    ));
    let get = |host: &'static str| async move {
        let mut conn = tokio::net::TcpStream::connect((host, port)).await.unwrap();
        conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut out = String::new();
        conn.read_to_string(&mut out).await.unwrap();
        out
    };
    assert!(get("127.0.0.1").await.starts_with("HTTP/1.1 200 OK"));
    // A machine without IPv6 binds 0.0.0.0 alone; this one (and every CI machine) has it.
    if ipv6 {
        assert!(get("::1").await.starts_with("HTTP/1.1 200 OK"));
    }
    server.abort();
}

/// A scrape reads memory and writes nothing (the idle test's promise holds while Prometheus
/// scrapes): the server, the guard's rules and every family it renders hold no Kubernetes client
/// (the guard's reviews, cached per token, are review.rs's and create no object), and `/metrics`
/// answers from `render` alone.
#[tokio::test]
async fn the_server_holds_no_client() {
    for (file, text) in [
        ("mod.rs", include_str!("mod.rs")),
        ("server.rs", include_str!("server.rs")),
        ("passes.rs", include_str!("passes.rs")),
        ("cluster.rs", include_str!("cluster.rs")),
        ("backup.rs", include_str!("backup.rs")),
        ("certs.rs", include_str!("certs.rs")),
        ("auth.rs", include_str!("auth.rs")),
    ] {
        for client in ["kube::", "Client", "Api<", "reqwest", "hyper::client"] {
            assert!(
                !text.contains(client),
                "operate/metrics/{file} mentions {client}: a scrape reaches the API server only \
                 through the guard's reviews (review.rs)"
            );
        }
    }
    let m = Metrics::default();
    let body = respond(&m, &Method::GET, "/metrics").into_body();
    let bytes = http_body_util::BodyExt::collect(body)
        .await
        .unwrap()
        .to_bytes();
    assert_eq!(String::from_utf8_lossy(&bytes), m.render());
}

/// Only reads of `/metrics` pass the guard: the kubelet's probes need no token, and other
/// methods are refused (405) before any review.
#[test]
fn only_reads_of_metrics_are_guarded() {
    assert!(guarded(&Method::GET, "/metrics"));
    assert!(guarded(&Method::HEAD, "/metrics"));
    for (method, path) in [
        (Method::GET, "/healthz"),
        (Method::GET, "/readyz"),
        (Method::POST, "/metrics"),
        (Method::GET, "/metrics/x"),
        (Method::GET, "/nope"),
    ] {
        assert!(!guarded(&method, path), "{method} {path}");
    }
}

#[test]
fn a_refusal_answers_its_status_and_a_401_names_the_bearer_scheme() {
    use super::auth::Verdict;
    let r = refuse(&Verdict::Unauthenticated("no Authorization header"), "r");
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        r.headers()[hyper::header::WWW_AUTHENTICATE],
        "Bearer realm=\"kubectl-etcd\""
    );
    let r = refuse(&Verdict::Forbidden { user: "u".into() }, "r");
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(!r.headers().contains_key(hyper::header::WWW_AUTHENTICATE));
    let r = refuse(&Verdict::Unavailable("down".into()), "r");
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
}

/// With the Kubernetes guard, over TCP: no token is 401 before any review, a token the API
/// server cannot review (none listens here) is 503 and not cached, and the probes answer
/// without a token.
#[tokio::test]
async fn a_reviewed_server_refuses_metrics_without_a_token_and_keeps_the_probes_open() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    let guard = Guard::new(auth::MetricsAuth::Kubernetes, &client, None);
    assert_eq!(guard.reader(), "kubectl-etcd-operator-metrics-reader");
    let listeners = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listeners[0].local_addr().unwrap();
    let m = Arc::new(Metrics::default());
    m.set_ready(true);
    let server = tokio::spawn(serve(listeners, Arc::new(guard), m));
    let get = |request: String| async move {
        let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
        conn.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        conn.read_to_string(&mut out).await.unwrap();
        out
    };
    let req = |path: &str, header: &str| format!("GET {path} HTTP/1.1\r\nHost: x\r\n{header}\r\n");
    let out = get(req("/metrics", "")).await;
    assert!(out.starts_with("HTTP/1.1 401"), "{out}");
    assert!(
        out.contains("kubectl-etcd-operator-metrics-reader"),
        "{out}"
    );
    assert!(!out.contains("kubectl_etcd_leader"), "{out}");
    let out = get(req("/metrics", "Authorization: Basic eDp5\r\n")).await;
    assert!(out.starts_with("HTTP/1.1 401"), "{out}");
    for _ in 0..2 {
        let out = get(req("/metrics", "Authorization: Bearer abc\r\n")).await;
        assert!(out.starts_with("HTTP/1.1 503"), "{out}");
        assert!(
            out.contains("tokenreviews and subjectaccessreviews"),
            "{out}"
        );
    }
    assert!(get(req("/healthz", "")).await.starts_with("HTTP/1.1 200"));
    assert!(get(req("/readyz", "")).await.starts_with("HTTP/1.1 200"));
    server.abort();
}

// --- certificates -------------------------------------------------------------------------

/// Made with openssl 3.0 (`req -x509 -days 30`): v3, notAfter 2027-01-01T09:00:28Z (UTCTime).
const CA_2027: &str = "-----BEGIN CERTIFICATE-----\nMIIBeDCCAR+gAwIBAgIUfcWDkxOOqNLdxWvRSF2kscx1Ij8wCgYIKoZIzj0EAwIw\nEjEQMA4GA1UEAwwHdGVzdCBjYTAeFw0yNjEyMDIwOTAwMjhaFw0yNzAxMDEwOTAw\nMjhaMBIxEDAOBgNVBAMMB3Rlc3QgY2EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC\nAARCFT8GT5cxWPblNHtyR0VHwuf6u+pkXpUR78G6PieDNlV7/ZYXzE/TGYQlQe6+\ncPtvrdb4b8XdHdfotp88uBSco1MwUTAdBgNVHQ4EFgQUxPw/JMMS42Nrzj4TsDiY\nKxpVNvwwHwYDVR0jBBgwFoAUxPw/JMMS42Nrzj4TsDiYKxpVNvwwDwYDVR0TAQH/\nBAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiAWzHPHu7zeH1qnx2K9Qo3919MxX7gG\ntTQVpgHCqtwy9wIgEZ04GfckC6kPtRu05o54FBP/xINRx8XJq98DxacPKYc=\n-----END CERTIFICATE-----\n";
/// `req -x509 -days 36500`: notAfter 2126-11-08T09:00:28Z (GeneralizedTime, from 2050 on).
const FAR_2126: &str = "-----BEGIN CERTIFICATE-----\nMIIBczCCARmgAwIBAgIUc3ANQ85ka5z5HZrTpvGcODltwVAwCgYIKoZIzj0EAwIw\nDjEMMAoGA1UEAwwDZmFyMCAXDTI2MTIwMjA5MDAyOFoYDzIxMjYxMTA4MDkwMDI4\nWjAOMQwwCgYDVQQDDANmYXIwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASDsDXd\nKveGloiUR8spoq7fyq8ZZNzDMglRCzcrCT3UBFc5AaTLCN+tQWnHqj/TKa9psJpZ\nUpaDytfP8T7lqOjNo1MwUTAdBgNVHQ4EFgQUYfJHqBu4o09eXgw3BI/UEum9vosw\nHwYDVR0jBBgwFoAUYfJHqBu4o09eXgw3BI/UEum9voswDwYDVR0TAQH/BAUwAwEB\n/zAKBggqhkjOPQQDAgNIADBFAiEAjk5H8uLQSBrqVluK4Gokc2ZvB5E4CcdQ91ww\n/zV+DJACIC6DHvp60Ky/HsyT2RSF/rnMfsp0vfYOIrcuzem/Is2a\n-----END CERTIFICATE-----\n";
/// Signed by CA_2027 with `x509 -req -days 7` and no extensions: a v1 certificate (no version
/// field), notAfter 2026-12-09T09:00:31Z.
const LEAF_V1_2026: &str = "-----BEGIN CERTIFICATE-----\nMIIBGzCBwgIUS/r0J37C39xWPJB7vTMmRYMcMLEwCgYIKoZIzj0EAwIwEjEQMA4G\nA1UEAwwHdGVzdCBjYTAeFw0yNjEyMDIwOTAwMzFaFw0yNjEyMDkwOTAwMzFaMA8x\nDTALBgNVBAMMBGxlYWYwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQvXfsEa9yY\nZAhK2Q5oeZstV2xxobiv1A2UigHPNjZsnjHCGpX8SpWoMyeY5Z1+oiLG5Nyniavo\nKCgtrZS+TBUBMAoGCCqGSM49BAMCA0gAMEUCIQD4k/u1QCdiSWC8xNLfL3oXOYWj\ne6CzDcrpKhAIUurGyQIgO/DeupupWzPkhUs1fotCzUCNoPjIoUaPYuL09Hzrno0=\n-----END CERTIFICATE-----\n";

#[test]
fn a_certificate_gives_its_not_after_in_either_time_form_and_version() {
    assert_eq!(
        certs::earliest_not_after(CA_2027.as_bytes()),
        Ok(1_798_794_028)
    );
    assert_eq!(
        certs::earliest_not_after(FAR_2126.as_bytes()),
        Ok(4_949_802_028)
    );
    assert_eq!(
        certs::earliest_not_after(LEAF_V1_2026.as_bytes()),
        Ok(1_796_806_831)
    );
}

#[test]
fn a_chain_or_bundle_reports_its_first_certificate_to_expire() {
    let chain = format!("{FAR_2126}{LEAF_V1_2026}{CA_2027}");
    assert_eq!(
        certs::earliest_not_after(chain.as_bytes()),
        Ok(1_796_806_831)
    );
}

#[test]
fn what_holds_no_certificate_is_an_error_not_a_series() {
    assert!(certs::earliest_not_after(b"").is_err());
    assert!(
        certs::earliest_not_after(
            b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        )
        .is_err()
    );
    let garbage = "-----BEGIN CERTIFICATE-----\nMAMCAQA=\n-----END CERTIFICATE-----\n";
    assert!(certs::earliest_not_after(garbage.as_bytes()).is_err());
    // cut short anywhere, the DER walk gives up instead of reading past the end
    use rustls::pki_types::pem::PemObject;
    let der = rustls::pki_types::CertificateDer::from_pem_slice(CA_2027.as_bytes())
        .unwrap()
        .to_vec();
    for cut in 0..der.len() {
        let _ = certs::not_after(&der[..cut]);
    }
    assert_eq!(certs::not_after(&der), Some(1_798_794_028));
}

#[test]
fn the_tls_secrets_are_each_read_once() {
    let tls = crate::model::Tls {
        client: Some(crate::model::ClientTls {
            server_secret: "demo-tls".into(),
            client_secret: "demo-client".into(),
        }),
        peer_secret: Some("demo-tls".into()),
    };
    assert_eq!(certs::tls_secrets(&tls), ["demo-tls", "demo-client"]);
    assert!(certs::tls_secrets(&crate::model::Tls::default()).is_empty());
}

#[test]
fn a_cluster_made_with_defaults_has_the_expiry_of_its_managed_certificates_reported() {
    // No spec.tls and no status: born with managed TLS (`model::unset_tls_mode`). Each leaf
    // Secret's `ca.crt` is the CA's certificate, so the CA's expiry is reported with them.
    let d = crate::fixtures::cluster("demo")
        .spec(|s| s.tls = None)
        .desired();
    assert_eq!(
        certs::tls_secrets(&d.tls),
        ["demo-tls-server", "demo-tls-client", "demo-tls-peer"]
    );
    assert_eq!(certs::KEYS, ["tls.crt", "ca.crt"]);
}

#[test]
fn certificates_are_reported_per_secret_and_key_and_dropped_when_gone() {
    let m = Metrics::default();
    let cert = |secret: &str, key: &'static str, not_after| certs::Certificate {
        secret: secret.into(),
        key,
        not_after,
    };
    let series = |secret: &str, key: &str| {
        format!(
            r#"kubectl_etcd_certificate_expiration_timestamp_seconds{{namespace="ns",name="demo",secret="{secret}",key="{key}"}}"#
        )
    };
    m.certificates(
        &demo(),
        &[
            cert("demo-server", "tls.crt", 1_796_806_831),
            cert("demo-server", "ca.crt", 1_798_794_028),
        ],
    );
    let text = m.render();
    assert_eq!(
        value(&text, &series("demo-server", "tls.crt")).as_deref(),
        Some("1796806831")
    );
    assert_eq!(
        value(&text, &series("demo-server", "ca.crt")).as_deref(),
        Some("1798794028")
    );
    m.certificates(&demo(), &[cert("demo-server", "ca.crt", 1_798_794_028)]);
    assert_eq!(
        value(&m.render(), &series("demo-server", "tls.crt")),
        None,
        "a key no longer read"
    );
    m.forget(&demo());
    assert!(!m.render().contains("name=\"demo\""));
}

#[test]
fn the_secrets_are_read_again_only_after_the_refresh_interval() {
    let m = Metrics::default();
    let t0 = std::time::Instant::now();
    assert!(m.certificates_due(&demo(), t0), "first pass");
    assert!(!m.certificates_due(&demo(), t0 + Duration::from_secs(10)));
    assert!(m.certificates_due(&demo(), t0 + certs::REFRESH));
    assert!(!m.certificates_due(&demo(), t0 + certs::REFRESH + Duration::from_secs(1)));
}
