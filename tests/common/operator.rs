//! `kubectl etcd operate --watch-namespace NS` as a child process of a test: its own identity,
//! leader Lease (in the operator's namespace) and cluster Lease (in the cluster's, where the CLI
//! looks, so a verb defers to it), its log in a temporary file. Dropping it SIGKILLs it, takes
//! the operator's finalizer off the test's cluster (so that the namespace can go without it) and
//! deletes its Leases (nobody else would).

use std::path::PathBuf;
use std::process::{Child, Stdio};

use super::*;

pub struct LocalOperator {
    ns: String,
    /// The cluster it acts on (its finalizer and Lease are cleared on drop).
    cluster: String,
    /// Flags beside `--watch-namespace` and `--identity` (`--dial`, `--metrics-addr`, …).
    args: Vec<String>,
    /// Environment besides this process's (e.g. the downward API's `POD_NS`).
    env: Vec<(String, String)>,
    child: Option<Child>,
    log: PathBuf,
}

impl LocalOperator {
    /// Starts it on `ns` with `args`; the cluster it acts on is `demo`.
    pub fn start(ns: &str, args: &[impl AsRef<str>]) -> Result<LocalOperator, String> {
        LocalOperator::start_with(ns, "demo", args, &[])
    }

    /// `start`, acting on `cluster`, with `env` set.
    pub fn start_with(
        ns: &str,
        cluster: &str,
        args: &[impl AsRef<str>],
        env: &[(&str, &str)],
    ) -> Result<LocalOperator, String> {
        // The engine Leases live there; without it an operator cannot lead.
        let _ = kubectl(&["create", "namespace", OP_NS]);
        let mut op = LocalOperator {
            ns: ns.into(),
            cluster: cluster.into(),
            args: args.iter().map(|a| a.as_ref().to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            child: None,
            log: std::env::temp_dir().join(format!("{ns}-operator.log")),
        };
        op.spawn()?;
        Ok(op)
    }

    pub fn identity(&self) -> String {
        format!("operator/e2e-{}", self.ns)
    }

    /// Starts it (again, after `kill`), appending to the same log.
    pub fn spawn(&mut self) -> Result<(), String> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        // Given without its `operator/` prefix, as a user may: `operate` puts it there, and
        // the CLI verbs these tests run beside it then wait on its status (they would wait
        // for it to let go, never, if it did not).
        let identity = self.identity();
        let given = identity.trim_start_matches("operator/");
        let mut args = vec![
            "etcd",
            "operate",
            "--watch-namespace",
            &self.ns,
            "--identity",
            given,
            // The tests' tools image (`KE_OPERATOR_IMAGE`, testbed.local/…) runs their restore
            // and recovery pods.
            "--allow-image-prefix",
            "testbed.local/",
        ];
        args.extend(self.args.iter().map(String::as_str));
        let child = kubectl_cmd(&args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("operate: {e}"))?;
        self.child = Some(child);
        Ok(())
    }

    /// SIGKILL (`Child::kill`; kubectl execs the plugin, so this is the operator itself).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Whether it holds the engine Lease of its cluster (in the cluster's namespace).
    pub fn holds_the_cluster(&self) -> bool {
        kubectl(&[
            "-n",
            &self.ns,
            "get",
            "lease",
            &self.cluster_lease(),
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ])
        .stdout
            == self.identity()
    }

    fn cluster_lease(&self) -> String {
        kubectl_etcd::lease::cluster_lease(&self.ns, &self.cluster)
    }

    /// The last `n` lines of its log, for a failure message.
    pub fn log_tail(&self, n: usize) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        format!(
            "operator log:\n{}",
            lines[lines.len().saturating_sub(n)..].join("\n")
        )
    }
}

impl Drop for LocalOperator {
    fn drop(&mut self) {
        self.kill();
        let _ = kubectl(&[
            "-n",
            &self.ns,
            "patch",
            "etcdcluster",
            &self.cluster,
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ]);
        // The leader Lease lives in the operator's namespace, the cluster's in the cluster's own
        // and, while Leases move there, in the operator's too (`kubectl_etcd::lease`): left in
        // either place, a verb would defer to the killed operator until it expired.
        let _ = kubectl(&[
            "-n",
            OP_NS,
            "delete",
            "lease",
            "--ignore-not-found",
            &kubectl_etcd::lease::leader_lease(Some(&self.ns)),
            &self.cluster_lease(),
        ]);
        let _ = kubectl(&[
            "-n",
            &self.ns,
            "delete",
            "lease",
            "--ignore-not-found",
            &self.cluster_lease(),
        ]);
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The image of the in-cluster operator (`tests/cluster/images.sh operator` builds it).
pub fn operator_image() -> String {
    std::env::var("KE_OPERATOR_IMAGE").expect("KE_OPERATOR_IMAGE is not set: tests/run-all.sh builds testbed.local/kubectl-etcd:dev with tests/cluster/images.sh operator")
}

/// An operator installed in the cluster by a test under a name of its own (`ke-<namespace>`, the
/// chart's `name`), so that other operators on the testbed are untouched. Dropping it deletes its
/// Deployment first (also after a failed assertion: one still running when the namespaces go
/// would put its finalizer back on their clusters, and then be gone), then what it has outside
/// its namespace: cluster-scoped objects and a grant in kube-system. The namespaces go with
/// their `Ns`, dropped after it.
pub struct Installed {
    pub name: String,
    pub namespace: String,
    /// helm, when the chart installed it (release `ke`, uninstalled first on drop).
    pub helm: Option<PathBuf>,
}

/// The release name of a chart a test installs.
pub const RELEASE: &str = "ke";

/// `helm ARGS…` (`bin`: `packaging_tool("helm")`) against the testbed.
pub fn helm(bin: &PathBuf, args: &[&str]) -> Run {
    let mut c = std::process::Command::new(bin);
    c.args(args).env("KUBECONFIG", kubeconfig());
    let mut shown = vec!["(helm)"];
    shown.extend_from_slice(args);
    run_cmd(&shown, c)
}

impl Installed {
    /// The guard alone, for a test that applies the objects itself.
    pub fn named(namespace: &str) -> Installed {
        Installed {
            name: format!("ke-{namespace}"),
            namespace: namespace.to_string(),
            helm: None,
        }
    }

    /// The same operator as `watching`, installed by the Helm chart (charts/kubectl-etcd,
    /// `rbac.scope=namespace`, `rbac.watchNamespace`) as release `ke` of `namespace`.
    pub fn by_helm(namespace: &str, watched: &[String]) -> Installed {
        let image = operator_image();
        let (repo, tag) = image
            .rsplit_once(':')
            .expect("KE_OPERATOR_IMAGE is REPOSITORY:TAG");
        let mut installed = Installed::named(namespace);
        let bin = packaging_tool("helm");
        let chart = format!("{}/charts/kubectl-etcd", env!("CARGO_MANIFEST_DIR"));
        let values = [
            "rbac.scope=namespace".to_string(),
            format!("rbac.watchNamespace={}", watched.join("\\,")),
            format!("name={}", installed.name),
            format!("image.repository={repo}"),
            format!("image.tag={tag}"),
        ];
        let mut args = vec!["install", RELEASE, &chart, "-n", namespace];
        for v in &values {
            args.extend(["--set", v.as_str()]);
        }
        args.extend(["--wait", "--timeout", "180s"]);
        installed.helm = Some(bin.clone());
        ok(helm(&bin, &args));
        installed
    }

    /// What `install --operator --watch-namespace W…` writes (a Role in each watched namespace,
    /// its admission policies), installed into `namespace` and rolled out.
    pub fn watching(namespace: &str, watched: &[String]) -> Installed {
        let installed = Installed::named(namespace);
        let items: Vec<serde_json::Value> = kubectl_etcd::objects::install::manifests_watching(
            &operator_image(),
            namespace,
            watched,
            &[],
        )
        .into_iter()
        .filter(|o| o["kind"] != "Namespace")
        .collect();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
        let text = serde_json::to_string(&list)
            .unwrap()
            .replace(kubectl_etcd::objects::install::NAME, &installed.name);
        ok(kubectl_stdin(&["apply", "-f", "-"], &text));
        ok(kubectl(&[
            "-n",
            namespace,
            "rollout",
            "status",
            &format!("deployment/{}", installed.name),
            "--timeout=180s",
        ]));
        installed
    }

    /// `system:serviceaccount:NS:NAME`, the operator's identity for `--as`.
    pub fn user(&self) -> String {
        kubectl_etcd::keys::install::service_account_user(&self.namespace, &self.name)
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let n = &self.name;
        if let Some(bin) = &self.helm {
            let _ = helm(
                bin,
                &[
                    "uninstall",
                    RELEASE,
                    "-n",
                    &self.namespace,
                    "--ignore-not-found",
                    "--wait",
                ],
            );
        }
        let _ = kubectl(&[
            "-n",
            &self.namespace,
            "delete",
            "deployment",
            "--ignore-not-found",
            n,
            "--wait=true",
            "--timeout=60s",
        ]);
        let _ = kubectl(&[
            "-n",
            "kube-system",
            "delete",
            "rolebinding",
            "--ignore-not-found",
            n,
        ]);
        let _ = kubectl(&[
            "delete",
            "clusterrole,clusterrolebinding,validatingadmissionpolicy,validatingadmissionpolicybinding",
            "--ignore-not-found",
            "-l",
            &format!("app.kubernetes.io/name={n}"),
        ]);
    }
}
