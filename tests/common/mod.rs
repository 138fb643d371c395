//! Harness of the end-to-end tests: the real binary through kubectl's plugin discovery, against
//! the testbed (tests/cluster/up.sh), one namespace per test, deleted afterwards.
//!
//! The tests find the cluster through `KE_E2E_KUBECONFIG` (tests/run-all.sh sets it to
//! /tmp/tb/admin.kubeconfig). Without it they fail: they never skip.
#![allow(dead_code)] // each test binary uses a different part of the harness

pub mod operator;
pub mod proxy;
pub mod robustness;
pub mod scrape;
pub mod writer;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn kubeconfig() -> String {
    std::env::var("KE_E2E_KUBECONFIG").expect(
        "KE_E2E_KUBECONFIG is not set: start the testbed with tests/cluster/up.sh and run the e2e tests through tests/run-all.sh (or export KE_E2E_KUBECONFIG=/tmp/tb/admin.kubeconfig)",
    )
}

/// PATH with the freshly built plugin first, so `kubectl etcd` finds it.
/// `KE_PLUGIN_DIR` points at another build of the plugin (e.g. an installed release binary).
fn path() -> String {
    let dir = match std::env::var("KE_PLUGIN_DIR") {
        Ok(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_kubectl-etcd"))
            .parent()
            .unwrap()
            .to_path_buf(),
    };
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `kubectl ARGS` against the testbed. The tests' restores and recoveries from S3 copy the S3
/// keys of this process into the cluster's namespace, as a user passing
/// `--copy-local-credentials` asks (never the default: `e2e_tenancy` checks the refusal).
pub fn kubectl_cmd(args: &[&str]) -> Command {
    let mut c = Command::new("kubectl");
    c.args(args)
        .env("KUBECONFIG", kubeconfig())
        .env("PATH", path())
        .env("KUBECTL_ETCD_COPY_LOCAL_CREDENTIALS", "true")
        .env_remove("KUBECTL_ETCD_NAMESPACE");
    c
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

fn finish(args: &[&str], o: Output) -> Run {
    let r = Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    };
    eprintln!(
        "$ kubectl {} → {}\n{}",
        args.join(" "),
        r.code,
        r.stderr
            .lines()
            .rev()
            .take(12)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    );
    r
}

pub fn kubectl(args: &[&str]) -> Run {
    finish(
        args,
        kubectl_cmd(args)
            .stdin(Stdio::null())
            .output()
            .expect("kubectl runs"),
    )
}

/// Runs a prepared kubectl command (extra environment, say) like `kubectl`.
pub fn run_cmd(args: &[&str], mut c: Command) -> Run {
    finish(args, c.stdin(Stdio::null()).output().expect("kubectl runs"))
}

pub fn kubectl_stdin(args: &[&str], input: &str) -> Run {
    use std::io::Write;
    let mut child = kubectl_cmd(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    finish(args, child.wait_with_output().unwrap())
}

/// `kubectl etcd -n NS ARGS…` through kubectl's plugin discovery.
pub fn etcd(ns: &str, args: &[&str]) -> Run {
    let mut all = vec!["etcd", "-n", ns];
    all.extend_from_slice(args);
    kubectl(&all)
}

pub fn ok(r: Run) -> Run {
    assert_eq!(
        r.code, 0,
        "command failed\nstdout: {}\nstderr: {}",
        r.stdout, r.stderr
    );
    r
}

pub fn json(r: &Run) -> serde_json::Value {
    serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", r.stdout))
}

/// A namespace of one test, deleted (without waiting) when dropped.
pub struct Ns(pub String);

impl Ns {
    pub fn new(test: &str) -> Ns {
        let suffix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            % 100_000;
        let name = format!("e2e-{test}-{suffix}");
        ok(kubectl(&["create", "namespace", &name]));
        Ns(name)
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        if std::env::var_os("KE_E2E_KEEP").is_none() {
            let _ = kubectl_cmd(&["delete", "namespace", &self.0, "--wait=false"]).output();
            // An operator the test started (dropped before the namespace) put its finalizer on
            // the clusters and is gone: release it, or the namespace stays Terminating for good.
            release_finalizers(&self.0);
        }
    }
}

/// Releases the finalizers of every EtcdCluster in `ns` (an operator that would release them is
/// gone).
fn release_finalizers(ns: &str) {
    let names = kubectl_cmd(&["-n", ns, "get", "etcdclusters", "-o", "name"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    for name in names.lines().filter(|l| !l.is_empty()) {
        let _ = kubectl_cmd(&[
            "-n",
            ns,
            "patch",
            name,
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ])
        .output();
    }
}

/// Applies the etcd StatefulSet manifest tests/cluster/`file` in `ns` (its `__NAMESPACE__`),
/// running `image`, and waits until its StatefulSet `etcd` is rolled out.
pub fn apply_manifest(ns: &str, file: &str, image: &str) {
    let path = format!("{}/tests/cluster/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("__NAMESPACE__", ns)
        .replace("__IMAGE__", image)
        .replace("gcr.io/etcd-development/etcd:v3.4.23", image);
    ok(kubectl_stdin(&["apply", "-f", "-"], &text));
    ok(kubectl(&[
        "-n",
        ns,
        "rollout",
        "status",
        "statefulset/etcd",
        "--timeout=180s",
    ]));
}

/// Makes sure the CRD is installed (idempotent server-side apply).
pub fn install_crd() {
    ok(kubectl(&["etcd", "install"]));
}

/// A loopback port free now, for a local operator's `--metrics-addr` that the test reads: a fixed
/// port is taken whenever another file holding it runs in the other lane (`tests/lanes.sh`), and
/// that operator exits at start. An operator whose metrics nobody reads listens on port 0.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Polls `f` until it returns Some, or panics after `timeout` naming `what`.
pub fn eventually<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// `eventually` for async checks: polls `f` every half second until it returns Some, or panics
/// after `secs` seconds naming `what`.
pub async fn eventually_async<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    secs: u64,
    mut f: impl FnMut() -> F,
) -> T {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < until, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The exit code of `script` run by `sh -c` inside `pod`, read from a line the script itself
/// prints: `kubectl exec` can exit 0 when its stream ends early without the command's status
/// (kubernetes/kubectl#1208, #1726), so a command that must fail is never judged by kubectl's
/// own code. An exec cut short that way is run again (at most three times).
pub fn sh_exit(ns: &str, pod: &str, script: &str) -> (i32, Run) {
    const MARK: &str = "__sh_exit=";
    let wrapped = format!("{script}\necho \"{MARK}$?\"");
    for attempt in 1..=3 {
        let r = kubectl(&["-n", ns, "exec", pod, "--", "sh", "-c", &wrapped]);
        let code = r
            .stdout
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix(MARK))
            .and_then(|c| c.parse::<i32>().ok());
        match code {
            Some(code) => return (code, r),
            None if attempt < 3 => {
                eprintln!("{ns}/{pod}: the exec ended without the script's exit code; again");
                std::thread::sleep(Duration::from_secs(2));
            }
            None => panic!(
                "{ns}/{pod}: three execs of {script:?} ended without its exit code: {} {}",
                r.stdout, r.stderr
            ),
        }
    }
    unreachable!()
}

/// `etcdctl` inside a member pod (the image's own client).
pub fn etcdctl(ns: &str, pod: &str, args: &[&str]) -> Run {
    let mut all = vec!["-n", ns, "exec", pod, "--", "etcdctl"];
    all.extend_from_slice(args);
    kubectl(&all)
}

/// Member names from `etcdctl member list -w json` inside `pod`, with their learner flag.
pub fn members(ns: &str, pod: &str) -> Vec<(String, bool)> {
    let r = ok(etcdctl(ns, pod, &["member", "list", "-w", "json"]));
    let v = json(&r);
    v["members"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap_or("").to_string(),
                m["isLearner"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

/// The EtcdCluster as `kubectl get -o json` shows it.
pub fn cluster_json(ns: &str, name: &str) -> serde_json::Value {
    json(&ok(kubectl(&[
        "-n",
        ns,
        "get",
        "etcdcluster",
        name,
        "-o",
        "json",
    ])))
}

/// The namespace `kubectl etcd install` puts the operator in.
pub const OP_NS: &str = "kubectl-etcd-system";

/// The installed operator's Deployment, deleted when the guard drops: later test binaries run the
/// engine from the CLI. So is its admission policy on EtcdClusters (cluster-wide, with the
/// default image prefixes), which would refuse later files' clusters that name testbed images.
pub struct Operator;
impl Drop for Operator {
    fn drop(&mut self) {
        let _ = kubectl_cmd(&[
            "-n",
            OP_NS,
            "delete",
            "deployment",
            "kubectl-etcd-operator",
            "--wait=true",
            "--timeout=60s",
        ])
        .output();
        let policy = kubectl_etcd::objects::admission::spec::policy_name(
            kubectl_etcd::objects::install::NAME,
        );
        for kind in [
            "validatingadmissionpolicybinding",
            "validatingadmissionpolicy",
        ] {
            let _ = kubectl_cmd(&["delete", kind, &policy, "--ignore-not-found"]).output();
        }
        // Clusters of a namespace going away (its guard dropped first, while the operator ran
        // and could still put its finalizer back) keep a finalizer nobody will release now:
        // release it, or the namespace stays Terminating for good.
        let going = kubectl_cmd(&[
            "get",
            "namespaces",
            "-o",
            "jsonpath={range .items[?(@.status.phase==\"Terminating\")]}{.metadata.name}{\"\\n\"}{end}",
        ])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
        for ns in going.lines().filter(|l| !l.is_empty()) {
            release_finalizers(ns);
        }
    }
}

/// A field of pod `pod` in `ns`, by its JSONPath (e.g. `{.metadata.uid}`).
pub fn pod_field(ns: &str, pod: &str, path: &str) -> String {
    ok(kubectl(&[
        "-n",
        ns,
        "get",
        "pod",
        pod,
        "-o",
        &format!("jsonpath={path}"),
    ]))
    .stdout
}

/// The uid of pod `pod` in `ns` (a new one after any restart by deletion).
pub fn pod_uid(ns: &str, pod: &str) -> String {
    pod_field(ns, pod, "{.metadata.uid}")
}

/// `kubectl patch etcdcluster demo --type merge -p PATCH` in `ns`: a spec change as a user
/// makes it.
pub fn patch_demo(ns: &str, patch: &str) -> Run {
    kubectl(&[
        "-n",
        ns,
        "patch",
        "etcdcluster",
        "demo",
        "--type",
        "merge",
        "-p",
        patch,
    ])
}

/// The cluster `demo` of `ns` converged on `voters` ready voters at its current generation.
pub fn status_ready(ns: &str, voters: usize) -> Option<serde_json::Value> {
    let c = cluster_json(ns, "demo");
    let st = &c["status"];
    let current = st["observedGeneration"] == c["metadata"]["generation"];
    (current && st["phase"] == "Running" && ready_members(st) == (voters, voters, voters))
        .then(|| c.clone())
}

pub fn ready_members(status: &serde_json::Value) -> (usize, usize, usize) {
    let members = status["members"].as_array().cloned().unwrap_or_default();
    let voters = members
        .iter()
        .filter(|m| !m["learner"].as_bool().unwrap_or(false))
        .count();
    let healthy = members
        .iter()
        .filter(|m| {
            m["healthy"].as_bool().unwrap_or(false) && !m["learner"].as_bool().unwrap_or(false)
        })
        .count();
    (members.len(), voters, healthy)
}

/// A kubeconfig file for `server` with a bearer `token` (TLS unverified), in a temporary dir
/// that lives as long as the returned guard.
pub fn token_kubeconfig(server: &str, token: &str, namespace: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: x, cluster: {{server: '{server}', insecure-skip-tls-verify: true}}}}]\nusers: [{{name: x, user: {{token: '{token}'}}}}]\ncontexts: [{{name: x, context: {{cluster: x, user: x, namespace: {namespace}}}}}]\ncurrent-context: x\n"
        ),
    )
    .unwrap();
    let path = path.to_str().unwrap().to_string();
    (dir, path)
}

/// A kube client for the testbed (`KE_E2E_KUBECONFIG`), for tests that drive the library itself.
/// For a test that runs the engine in its own process: the engine's log in the test's output
/// (`RUST_LOG`, default `kubectl_etcd=info`), a client for the testbed, and the CRDs applied.
pub async fn engine_client() -> kube::Client {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "kubectl_etcd=info".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
    let client = client().await;
    kubectl_etcd::engine::apply_crd(&client).await.unwrap();
    client
}

pub async fn client() -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig()).expect("KE_E2E_KUBECONFIG reads");
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("KE_E2E_KUBECONFIG is a usable kubeconfig");
    kube::Client::try_from(config).expect("a client for the testbed")
}

/// Whether the testbed's API server enforces the CRD's CEL rules (`x-kubernetes-validations` with
/// the quantity library: Kubernetes 1.29+). Older servers drop the rules and the engine's own
/// checks (`SpecRefused`) are what refuses a change.
pub fn cel_admission() -> bool {
    let v = json(&ok(kubectl(&["version", "-o", "json"])));
    let minor: u32 = v["serverVersion"]["minor"]
        .as_str()
        .unwrap_or_default()
        .trim_end_matches('+')
        .parse()
        .unwrap_or(0);
    v["serverVersion"]["major"] == "1" && minor >= 29
}

/// Count and digest of every key and value under `k/` (inside the member pod).
pub fn keyspace_digest(ns: &str, pod: &str) -> (usize, String) {
    let count = ok(kubectl(&[
        "-n",
        ns,
        "exec",
        pod,
        "--",
        "sh",
        "-c",
        "etcdctl get --prefix k/ --keys-only | grep -c .",
    ]))
    .stdout
    .trim()
    .parse()
    .unwrap();
    let digest = ok(kubectl(&[
        "-n",
        ns,
        "exec",
        pod,
        "--",
        "sh",
        "-c",
        "etcdctl get --prefix k/ | sha256sum",
    ]))
    .stdout;
    (count, digest.split_whitespace().next().unwrap_or("").into())
}

/// Overwrites key `big` of cluster `demo` (through demo-0) with 512 KiB values `times` times,
/// then compacts the history: the database file keeps its size, most of it free pages a
/// defragmentation gives back. Err names the command that failed (the fault matrix's rows
/// report it; other tests unwrap).
pub fn fragment(ns: &str, times: u32) -> Result<(), String> {
    let failed = |what: &str, r: &Run| Err(format!("{what}: {} {}", r.code, r.stderr.trim()));
    for i in 0..times {
        let value = robustness::unique_value(i as usize, 512 << 10);
        let r = robustness::recorded_put(ns, "demo-0", "big", &value);
        if r.code != 0 {
            return failed("etcdctl put big", &r);
        }
    }
    let st = etcdctl(ns, "demo-0", &["endpoint", "status", "-w", "json"]);
    let Some(rev) = serde_json::from_str::<serde_json::Value>(&st.stdout)
        .ok()
        .and_then(|v| v[0]["Status"]["header"]["revision"].as_i64())
    else {
        return failed("etcdctl endpoint status", &st);
    };
    let call_ns = robustness::unix_ns();
    let r = etcdctl(ns, "demo-0", &["compact", &rev.to_string()]);
    robustness::record(
        ns,
        robustness::ForeignOp {
            stream: "compact".into(),
            call_ns,
            return_ns: robustness::unix_ns(),
            what: robustness::Foreign::Compact {
                revision: rev,
                done: r.code == 0,
            },
        },
    );
    if r.code != 0 {
        return failed("etcdctl compact", &r);
    }
    Ok(())
}

/// A packaging tool built from its Go module by tests/cluster/helm.sh (helm, krew,
/// validate-krew-manifest; cached under /var/cache/kubectl-etcd/tools): its path.
pub fn packaging_tool(name: &str) -> PathBuf {
    let out = Command::new("tests/cluster/helm.sh")
        .arg(name)
        .output()
        .expect("tests/cluster/helm.sh runs");
    assert!(
        out.status.success(),
        "tests/cluster/helm.sh {name} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or_default(),
    )
}

/// S3 as both this machine and the cluster's pods reach it (the node IP), and its bucket.
pub fn s3() -> (String, String) {
    let endpoint = std::env::var("KE_S3_POD_ENDPOINT").expect(
        "KE_S3_POD_ENDPOINT is not set: start S3 with tests/cluster/s3.sh up and source /tmp/tb/s3.env (tests/run-all.sh does)",
    );
    let bucket = std::env::var("KE_S3_BUCKET").expect("KE_S3_BUCKET is not set (/tmp/tb/s3.env)");
    (endpoint, bucket)
}

/// The Secret `name` in `ns`, with this machine's S3 credentials and `endpoint`.
pub fn s3_secret(ns: &str, name: &str, endpoint: &str) {
    s3_secret_with(ns, name, endpoint, &[]);
}

/// `s3_secret` with more `kubectl create secret generic` arguments (`--from-file=K=PATH`…).
pub fn s3_secret_with(ns: &str, name: &str, endpoint: &str, more: &[&str]) {
    let id = format!(
        "--from-literal=AWS_ACCESS_KEY_ID={}",
        std::env::var("AWS_ACCESS_KEY_ID").unwrap()
    );
    let key = format!(
        "--from-literal=AWS_SECRET_ACCESS_KEY={}",
        std::env::var("AWS_SECRET_ACCESS_KEY").unwrap()
    );
    let endpoint = format!("--from-literal=AWS_ENDPOINT_URL={endpoint}");
    let args = [
        &[
            "-n", ns, "create", "secret", "generic", name, &id, &key, &endpoint,
        ],
        more,
    ]
    .concat();
    ok(kubectl(&args));
}

/// Certificates for cluster `name` in `ns` (tests/cluster/tls-certs.sh; valid `days` days, else
/// the script's default), as the three Secrets `<name>-server`, `<name>-client` and
/// `<name>-peer` (keys tls.crt, tls.key, ca.crt); the directory keeps the files.
pub fn tls_secrets(ns: &str, name: &str, days: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cluster/tls-certs.sh"
    ));
    c.args([dir.path().to_str().unwrap(), name, ns]);
    if let Some(days) = days {
        c.env("TLS_CERT_DAYS", days);
    }
    ok(run_cmd(&["tls-certs.sh"], c));
    for kind in ["server", "client", "peer"] {
        let f = |n: &str| dir.path().join(n).display().to_string();
        ok(kubectl(&[
            "-n",
            ns,
            "create",
            "secret",
            "generic",
            &format!("{name}-{kind}"),
            &format!("--from-file=tls.crt={}", f(&format!("{kind}.crt"))),
            &format!("--from-file=tls.key={}", f(&format!("{kind}.key"))),
            &format!("--from-file=ca.crt={}", f("ca.crt")),
        ]));
    }
    dir
}

/// The operator in this process (`operate::run_until`), until `stop`.
pub struct InProcessOperator {
    token: tokio_util::sync::CancellationToken,
    handle: tokio::task::JoinHandle<Result<(), kubectl_etcd::error::Error>>,
}

impl InProcessOperator {
    pub fn start(opts: kubectl_etcd::operate::OperateOptions) -> InProcessOperator {
        let token = tokio_util::sync::CancellationToken::new();
        let handle = tokio::spawn({
            let token = token.clone();
            async move { kubectl_etcd::operate::run_until(opts, token).await }
        });
        InProcessOperator { token, handle }
    }

    /// Shuts it down; what it returned, or `None` when it did not stop within 30 s.
    // The crate's own `Error`, which src/lib.rs allows to be large for the same reason.
    #[allow(clippy::result_large_err)]
    pub async fn stop(self) -> Option<Result<(), kubectl_etcd::error::Error>> {
        self.token.cancel();
        tokio::time::timeout(Duration::from_secs(30), self.handle)
            .await
            .ok()
            .map(|joined| joined.expect("the operator task"))
    }
}

/// Deletes EtcdCluster `name` and waits (60 s) until its finalizer is released and it is gone.
pub async fn delete_and_wait_gone(
    clusters: &kube::Api<kubectl_etcd::api::EtcdCluster>,
    name: &str,
) {
    clusters
        .delete(name, &kube::api::DeleteParams::default())
        .await
        .unwrap();
    eventually_async("the finalizer to be released", 60, || async {
        clusters
            .get_opt(name)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
}

/// Gives `user` the built-in `edit` role in `ns`, and nothing elsewhere; `edit` writes
/// EtcdClusters through the ClusterRoles the install aggregates into it (applied here as the
/// install would, the operator left out).
pub fn edits(user: &str, ns: &str) {
    let aggregated: Vec<serde_json::Value> =
        kubectl_etcd::objects::install::manifests("unused", OP_NS)
            .into_iter()
            .filter(|o| {
                o["kind"] == "ClusterRole"
                    && !o["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"]
                        .is_null()
            })
            .collect();
    assert!(!aggregated.is_empty(), "the install aggregates into edit");
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": aggregated});
    ok(kubectl_stdin(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        &list.to_string(),
    ));
    ok(kubectl(&[
        "-n",
        ns,
        "create",
        "rolebinding",
        &format!("{user}-edit"),
        "--clusterrole=edit",
        &format!("--user={user}"),
    ]));
    let can = |verb: &str, what: &str, ns: &str| {
        kubectl(&["auth", "can-i", "--as", user, "-n", ns, verb, what])
            .stdout
            .trim()
            == "yes"
    };
    eventually("the tenant's edit role", Duration::from_secs(30), || {
        can("create", "etcdclusters.etcd.kubectl-etcd.io", ns).then_some(())
    });
    assert!(!can("get", "pods", "kube-system"), "{user} is namespaced");
}
