//! Issue 19 item 4: the monitoring objects proven by a real Prometheus. Prometheus (built from
//! its Go module at an exact version by tests/cluster/prometheus.sh, cached) runs on this
//! machine, the testbed's node, with a scrape configuration generated from the objects the
//! PodMonitors select (`monitoring::scrape_labels`: their selector, port, path, `honorLabels` and
//! relabelings applied to the pods; prometheus-operator itself is not run) and the rules of
//! `rule_groups(Some("5s"))` (every `for` shortened). It scrapes a 3-member cluster with client
//! and peer TLS (the members' plaintext metrics listener needs no certificate) and the operator,
//! `kubectl etcd operate` as a child process whose target is labelled as the PodMonitor labels
//! the operator Deployment's pods. It shows, through Prometheus' HTTP API:
//! - every query of the dashboard returns data for the live cluster;
//! - EtcdQuorumAtRisk fires while one member is held down (its etcd stopped with SIGSTOP: the pod
//!   stays, nothing answers, as on a hung node) and clears once it runs again;
//! - EtcdBackupOverdue fires for a suspended schedule;
//! - the certificate gauge is the Secret's notAfter (openssl's reading) and
//!   EtcdCertificateExpiringSoon fires for certificates 10 days from it;
//! - scrapes write nothing to the API server (the unit test `the_server_holds_no_client` holds
//!   the reason: `/metrics` renders memory).
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::operator::LocalOperator;
use common::*;
use kubectl_etcd::objects::install;
use kubectl_etcd::objects::monitoring::{self, ScrapedPod};
use serde_json::{Value, json};

const CLUSTER: &str = "demo";
/// Days the test certificates are valid: under the alert's 14.
const CERT_DAYS: &str = "10";

/// The prometheus binary tests/cluster/prometheus.sh built (or builds, cold ≈ 10 min).
fn prometheus_bin() -> PathBuf {
    let out = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cluster/prometheus.sh"
    ))
    .output()
    .expect("tests/cluster/prometheus.sh runs");
    assert!(
        out.status.success(),
        "tests/cluster/prometheus.sh failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    PathBuf::from(dir).join("prometheus")
}

/// Percent-encoding of a query parameter (everything but RFC 3986's unreserved characters).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `GET path` from `addr` (HTTP/1.0: one response, no chunking): the body of a 200.
fn get(addr: &str, path: &str) -> Result<String, String> {
    get_with(addr, path, None)
}

/// `get` with `token` as a bearer token.
fn get_with(addr: &str, path: &str, token: Option<&str>) -> Result<String, String> {
    let sock = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let mut conn = TcpStream::connect_timeout(&sock, Duration::from_secs(5))
        .map_err(|e| format!("{addr}: {e}"))?;
    conn.set_read_timeout(Some(Duration::from_secs(15)))
        .map_err(|e| e.to_string())?;
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(conn, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{auth}\r\n").map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    conn.read_to_end(&mut out)
        .map_err(|e| format!("{addr}{path}: {e}"))?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    if head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200") {
        Ok(body.to_string())
    } else {
        Err(format!(
            "{addr}{path}: {}",
            head.lines().next().unwrap_or_default()
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Prometheus

/// A Prometheus process on loopback with its configuration, rules and data in a temporary
/// directory; killed when dropped.
struct Prometheus {
    child: Child,
    addr: String,
    dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(config: &Value) -> Prometheus {
        let bin = prometheus_bin();
        let dir = tempfile::tempdir().unwrap();
        let rules = dir.path().join("rules.yaml");
        // JSON is YAML: both files as Prometheus reads them.
        std::fs::write(&rules, monitoring::rule_groups(Some("5s")).to_string()).unwrap();
        let mut config = config.clone();
        config["rule_files"] = json!([rules.display().to_string()]);
        let file = dir.path().join("prometheus.yml");
        std::fs::write(&file, serde_json::to_string_pretty(&config).unwrap()).unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new(&bin)
            .arg(format!("--config.file={}", file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        let p = Prometheus { child, addr, dir };
        eventually("Prometheus to be ready", Duration::from_secs(60), || {
            get(&p.addr, "/-/ready").ok()
        });
        p
    }

    fn api(&self, path: &str) -> Value {
        let body = get(&self.addr, path).unwrap_or_else(|e| panic!("{e}\n{}", self.log()));
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(v["status"], "success", "{path}: {v}");
        v["data"].clone()
    }

    /// The instant vector of `query` now.
    fn query(&self, query: &str) -> Vec<Value> {
        let data = self.api(&format!("/api/v1/query?query={}", encode(query)));
        data["result"].as_array().cloned().unwrap_or_default()
    }

    /// The alerts `name` of cluster `ns`/demo and their state (pending, firing).
    fn alert(&self, name: &str, ns: &str) -> Vec<String> {
        let data = self.api("/api/v1/alerts");
        data["alerts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter(|a| {
                a["labels"]["alertname"] == name
                    && a["labels"]["namespace"] == ns
                    && a["labels"]["name"] == CLUSTER
            })
            .map(|a| a["state"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    fn firing(&self, name: &str, ns: &str) -> bool {
        self.alert(name, ns).iter().any(|s| s == "firing")
    }

    fn log(&self) -> String {
        let log =
            std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        format!(
            "prometheus log:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// the scrape configuration, from the PodMonitors

/// One scrape job of `monitor`: its endpoint's path, scheme and `honorLabels`, its bearer token
/// when it names one (`token`: the Secret's, as prometheus-operator reads it), and per pod it
/// selects a static target labelled as its relabelings label it.
fn scrape_job(monitor: &Value, targets: &[(ScrapedPod, String)], token: Option<&str>) -> Value {
    let ep = &monitor["spec"]["podMetricsEndpoints"][0];
    let statics: Vec<Value> = targets
        .iter()
        .map(|(pod, address)| {
            let labels = monitoring::scrape_labels(monitor, pod).unwrap_or_else(|| {
                panic!(
                    "{} does not select the pod {}/{}",
                    monitor["metadata"]["name"], pod.namespace, pod.name
                )
            });
            json!({ "targets": [address], "labels": labels })
        })
        .collect();
    let mut job = json!({
        "job_name": monitor["metadata"]["name"],
        "metrics_path": ep["path"],
        "scheme": ep["scheme"],
        "honor_labels": ep["honorLabels"].as_bool().unwrap_or(false),
        "static_configs": statics,
    });
    if ep["authorization"]["type"] == "Bearer" {
        let token = token.expect("the token of the Secret the PodMonitor names");
        job["authorization"] = json!({ "type": "Bearer", "credentials": token });
    }
    job
}

/// The monitoring pack's scraper (`monitoring::scraper`: ServiceAccount, token Secret,
/// ClusterRoleBinding) and the reader role it is bound to (`install::metrics_reader`), under
/// names of this test's own (`ke-<ns>`: cluster-scoped objects shared with no one), deleted by
/// name when dropped.
struct Scraper {
    name: String,
    token: String,
}

impl Scraper {
    fn new(ns: &str) -> Scraper {
        let base = format!("ke-{ns}");
        let mut items = monitoring::scraper(ns, &base);
        items.push(install::metrics_reader(&base));
        let list = json!({ "apiVersion": "v1", "kind": "List", "items": items });
        ok(kubectl_stdin(&["apply", "-f", "-"], &list.to_string()));
        let name = kubectl_etcd::keys::install::metrics_scraper(&base);
        let token = eventually(
            "Kubernetes to fill the scraper's token Secret",
            Duration::from_secs(30),
            || {
                let r = kubectl(&[
                    "-n",
                    ns,
                    "get",
                    "secret",
                    &name,
                    "-o",
                    &format!(
                        "go-template={{{{with .data}}}}{{{{index . \"{}\" | base64decode}}}}{{{{end}}}}",
                        monitoring::SCRAPER_TOKEN_KEY
                    ),
                ]);
                let token = r.stdout.trim().to_string();
                (r.code == 0 && !token.is_empty() && token != "<no value>").then_some(token)
            },
        );
        Scraper { name: base, token }
    }
}

impl Drop for Scraper {
    fn drop(&mut self) {
        let _ = kubectl(&[
            "delete",
            "clusterrolebinding",
            "--ignore-not-found",
            &kubectl_etcd::keys::install::metrics_scraper(&self.name),
        ]);
        let _ = kubectl(&[
            "delete",
            "clusterrole",
            "--ignore-not-found",
            &kubectl_etcd::keys::install::metrics_reader_role(&self.name),
        ]);
    }
}

/// The member pods of `ns` with the address of their `metrics` port (what the PodMonitor's
/// `port` names).
fn member_pods(ns: &str) -> Vec<(String, std::collections::BTreeMap<String, String>, String)> {
    let pods = json(&ok(kubectl(&["-n", ns, "get", "pods", "-o", "json"])));
    pods["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|p| {
            let port = p["spec"]["containers"][0]["ports"]
                .as_array()?
                .iter()
                .find(|port| port["name"] == monitoring::PORT_NAME)?["containerPort"]
                .as_u64()?;
            let labels = serde_json::from_value(p["metadata"]["labels"].clone()).ok()?;
            Some((
                p["metadata"]["name"].as_str()?.to_string(),
                labels,
                format!("{}:{port}", p["status"]["podIP"].as_str()?),
            ))
        })
        .collect()
}

/// The labels of the operator Deployment's pods (`kubectl etcd manifests`): the local operator
/// is labelled as the PodMonitor would label such a pod.
fn operator_pod_labels() -> std::collections::BTreeMap<String, String> {
    let deployment = install::manifests(install::DEFAULT_IMAGE, install::NAMESPACE)
        .into_iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("the operator Deployment");
    serde_json::from_value(deployment["spec"]["template"]["metadata"]["labels"].clone()).unwrap()
}

fn config(ns: &str, operator: &str, token: &str) -> Value {
    let members = member_pods(ns);
    assert_eq!(
        members.len(),
        3,
        "3 member pods with a metrics port: {members:?}"
    );
    let member_targets: Vec<(ScrapedPod, String)> = members
        .iter()
        .map(|(name, labels, address)| {
            (
                ScrapedPod {
                    namespace: ns,
                    name,
                    labels,
                },
                address.clone(),
            )
        })
        .collect();
    let op_labels = operator_pod_labels();
    let operator_target = [(
        ScrapedPod {
            namespace: install::NAMESPACE,
            name: "kubectl-etcd-operator-local",
            labels: &op_labels,
        },
        operator.to_string(),
    )];
    json!({
        "global": { "scrape_interval": "5s", "scrape_timeout": "4s", "evaluation_interval": "5s" },
        "scrape_configs": [
            scrape_job(&monitoring::members_monitor(install::NAMESPACE), &member_targets, None),
            scrape_job(
                &monitoring::operator_monitor(install::NAMESPACE, install::NAME),
                &operator_target,
                Some(token),
            ),
        ],
    })
}

// ---------------------------------------------------------------------------------------------
// the cluster and its operator

/// notAfter of a PEM certificate file as Unix time, as openssl reads it.
fn openssl_not_after(file: &std::path::Path) -> i64 {
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "date -d \"$(openssl x509 -in '{}' -noout -enddate | cut -d= -f2)\" +%s",
            file.display()
        ))
        .output()
        .expect("sh runs");
    String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .expect("openssl's notAfter")
}

/// S3 as the operator reaches it (the node IP) and its bucket (/tmp/tb/s3.env).
fn s3() -> (String, String) {
    let endpoint = std::env::var("KE_S3_POD_ENDPOINT").expect(
        "KE_S3_POD_ENDPOINT is not set: start S3 with tests/cluster/s3.sh up and source /tmp/tb/s3.env (tests/run-all.sh does)",
    );
    let bucket = std::env::var("KE_S3_BUCKET").expect("KE_S3_BUCKET is not set (/tmp/tb/s3.env)");
    (endpoint, bucket)
}

fn s3_secret(ns: &str, endpoint: &str) {
    let var =
        |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} is not set (/tmp/tb/s3.env)"));
    ok(kubectl(&[
        "-n",
        ns,
        "create",
        "secret",
        "generic",
        "s3-creds",
        &format!(
            "--from-literal=AWS_ACCESS_KEY_ID={}",
            var("AWS_ACCESS_KEY_ID")
        ),
        &format!(
            "--from-literal=AWS_SECRET_ACCESS_KEY={}",
            var("AWS_SECRET_ACCESS_KEY")
        ),
        &format!("--from-literal=AWS_ENDPOINT_URL={endpoint}"),
    ]));
}

/// A member's etcd stopped (SIGSTOP to its container's process, as the node sees it): the pod
/// stays and nothing answers. Resumed (SIGCONT) when dropped.
struct HeldDown(i32);

impl HeldDown {
    fn hold(ns: &str, pod: &str) -> HeldDown {
        let id = pod_field(ns, pod, "{.status.containerStatuses[0].containerID}");
        let id = id
            .strip_prefix("containerd://")
            .unwrap_or_else(|| panic!("{pod} has no containerd container: {id:?}"));
        let pid_file =
            format!("/run/containerd/io.containerd.runtime.v2.task/k8s.io/{id}/init.pid");
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap_or_else(|e| panic!("{pid_file}: {e}"))
            .trim()
            .parse()
            .unwrap();
        signal(pid, "STOP");
        HeldDown(pid)
    }
}

fn signal(pid: i32, sig: &str) {
    let st = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(st.success(), "kill -{sig} {pid}");
}

impl Drop for HeldDown {
    fn drop(&mut self) {
        signal(self.0, "CONT");
    }
}

/// The cluster's EtcdCluster, StatefulSet and ConfigMap versions and its Events: what a write
/// to the API server about the cluster changes.
fn api_state(ns: &str) -> Vec<String> {
    [
        "etcdcluster/demo",
        "statefulset/demo",
        "configmap/demo-members",
        "service/demo-client",
    ]
    .iter()
    .map(|o| {
        ok(kubectl(&[
            "-n",
            ns,
            "get",
            o,
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ]))
        .stdout
    })
    .chain([ok(kubectl(&["-n", ns, "get", "events", "-o", "name"]))
        .stdout
        .lines()
        .count()
        .to_string()])
    .collect()
}

fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool, why: impl Fn() -> String) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}\n{}",
            why()
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

#[test]
fn prometheus_scrapes_the_cluster_and_its_operator_and_the_alerts_fire_and_clear() {
    install_crd();
    let ns = Ns::new("monitoring");
    let (endpoint, bucket) = s3();
    let certs = tls_secrets(&ns.0, CLUSTER, Some(CERT_DAYS));
    s3_secret(&ns.0, &endpoint);
    ok(etcd(
        &ns.0,
        &[
            "create",
            CLUSTER,
            "--replicas",
            "3",
            "--tls-server-secret",
            "demo-server",
            "--tls-client-secret",
            "demo-client",
            "--tls-peer-secret",
            "demo-peer",
            "--timeout",
            "6m",
        ],
    ));
    assert_eq!(
        cluster_json(&ns.0, CLUSTER)["spec"]["metrics"],
        json!({}),
        "a new cluster gets the metrics listener"
    );
    // A schedule every minute whose first run is due at once; suspended once it has run.
    ok(kubectl(&[
        "-n",
        &ns.0,
        "patch",
        "etcdcluster",
        CLUSTER,
        "--type",
        "merge",
        "-p",
        &format!(
            r#"{{"spec":{{"backup":{{"destination":"s3://{bucket}/e2e/{}/monitoring","credentialsSecret":"s3-creds","schedule":"* * * * *","runOnCreate":true}}}}}}"#,
            ns.0
        ),
    ]));
    // Dialing members directly (pods are reachable from the node), its metrics on loopback.
    let metrics = format!("127.0.0.1:{}", free_port());
    let op = LocalOperator::start(
        &ns.0,
        &[
            "--metrics-addr",
            &metrics,
            "--dial",
            "direct",
            "--s3-endpoint-allow",
            &endpoint,
        ],
    )
    .unwrap();
    wait_for(
        "the local operator to hold the cluster's Lease",
        Duration::from_secs(90),
        || op.holds_the_cluster(),
        || op.log_tail(15),
    );
    wait_for(
        "the first scheduled backup",
        Duration::from_secs(180),
        || !cluster_json(&ns.0, CLUSTER)["status"]["backup"]["lastSuccessfulTime"].is_null(),
        || op.log_tail(15),
    );
    ok(kubectl(&[
        "-n",
        &ns.0,
        "patch",
        "etcdcluster",
        CLUSTER,
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"backup":{"suspend":true}}}"#,
    ]));

    // /metrics answers the token of the pack's scraper alone (`--metrics-auth kubernetes`).
    let scraper = Scraper::new(&ns.0);
    assert!(
        get(&metrics, "/metrics").is_err_and(|e| e.contains("401")),
        "the operator's /metrics without a token"
    );
    let prom = Prometheus::start(&config(&ns.0, &metrics, &scraper.token));
    let up = |job: &str| {
        prom.query(&format!(r#"up{{job="{job}"}} == 1"#))
            .iter()
            .filter(|s| s["metric"]["namespace"] == ns.0 || job == monitoring::OPERATOR_JOB)
            .count()
    };
    wait_for(
        "Prometheus to scrape the 3 members and the operator",
        Duration::from_secs(60),
        || up(monitoring::MEMBERS_JOB) == 3 && up(monitoring::OPERATOR_JOB) == 1,
        || format!("{:?}\n{}", prom.query("up"), prom.log()),
    );

    // Every query of the dashboard, for this cluster.
    let queries: Vec<String> = monitoring::PANELS
        .iter()
        .flat_map(|p| p.queries.iter())
        .map(|q| q.replace("$namespace", &ns.0).replace("$cluster", CLUSTER))
        .collect();
    let empty = |prom: &Prometheus| -> Vec<String> {
        queries
            .iter()
            .filter(|q| prom.query(q).is_empty())
            .cloned()
            .collect()
    };
    wait_for(
        "every dashboard query to return data",
        Duration::from_secs(120),
        || empty(&prom).is_empty(),
        || format!("no data: {:#?}", empty(&prom)),
    );
    eprintln!("all {} dashboard queries return data", queries.len());

    // The operator's series keep the cluster's namespace (honorLabels) and its certificates'
    // notAfter is openssl's.
    let cert = prom.query(&format!(
        r#"kubectl_etcd_certificate_expiration_timestamp_seconds{{namespace="{}",name="demo",secret="demo-server",key="tls.crt"}}"#,
        ns.0
    ));
    assert_eq!(cert.len(), 1, "{cert:?}");
    assert_eq!(
        cert[0]["value"][1],
        openssl_not_after(&certs.path().join("server.crt")).to_string()
    );
    assert_eq!(cert[0]["metric"]["job"], monitoring::OPERATOR_JOB);

    // Scrapes write nothing: the operator's /metrics and each member's, many times over.
    let quiet = (0..3).any(|_| {
        let before = api_state(&ns.0);
        for _ in 0..50 {
            get_with(&metrics, "/metrics", Some(&scraper.token)).expect("the operator's /metrics");
        }
        for (_, _, address) in member_pods(&ns.0) {
            for _ in 0..10 {
                get(&address, "/metrics").expect("a member's /metrics");
            }
        }
        let after = api_state(&ns.0);
        eprintln!("API state before and after the scrapes: {before:?} {after:?}");
        before == after
    });
    assert!(
        quiet,
        "every burst of scrapes saw the cluster's objects or events change"
    );

    wait_for(
        "EtcdCertificateExpiringSoon to fire",
        Duration::from_secs(60),
        || prom.firing("EtcdCertificateExpiringSoon", &ns.0),
        || prom.log(),
    );

    // One member held down: a quorum exactly.
    assert!(
        !prom.firing("EtcdQuorumAtRisk", &ns.0),
        "QuorumAtRisk fires before any fault"
    );
    let leader = cluster_json(&ns.0, CLUSTER)["status"]["members"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .find(|m| m["leader"] == true)
        .and_then(|m| m["name"].as_str().map(String::from))
        .unwrap_or_default();
    let victim = ["demo-1", "demo-2", "demo-0"]
        .into_iter()
        .find(|p| *p != leader)
        .unwrap();
    let voters = || {
        format!(
            "healthy voters: {:?}\n{}",
            prom.query("kubectl_etcd_healthy_voters"),
            op.log_tail(15)
        )
    };
    let held = HeldDown::hold(&ns.0, victim);
    eprintln!("{victim} held down (the leader is {leader})");
    wait_for(
        "EtcdQuorumAtRisk to fire",
        Duration::from_secs(180),
        || prom.firing("EtcdQuorumAtRisk", &ns.0),
        voters,
    );
    assert!(
        !prom.firing("EtcdQuorumLost", &ns.0),
        "two of three voters are a quorum"
    );
    drop(held);
    wait_for(
        "EtcdQuorumAtRisk to clear",
        Duration::from_secs(180),
        || prom.alert("EtcdQuorumAtRisk", &ns.0).is_empty(),
        voters,
    );

    // The suspended schedule: its newest backup grows older than twice the minute.
    wait_for(
        "EtcdBackupOverdue to fire",
        Duration::from_secs(300),
        || prom.firing("EtcdBackupOverdue", &ns.0),
        || {
            format!(
                "backup age: {:?}\n{}",
                prom.query("time() - kubectl_etcd_last_successful_backup_timestamp_seconds"),
                op.log_tail(15)
            )
        },
    );
    eprintln!(
        "EtcdBackupOverdue fired; the newest backup's age: {:?}",
        prom.query(&format!(
            r#"time() - kubectl_etcd_last_successful_backup_timestamp_seconds{{namespace="{}"}}"#,
            ns.0
        ))
    );
    assert!(
        !prom.firing("EtcdBackupFailing", &ns.0),
        "the backup succeeded"
    );
}
