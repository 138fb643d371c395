//! The Helm chart (charts/kubectl-etcd) is the objects of `kubectl etcd manifests`, no more and no
//! less: its RBAC rules and CRDs are generated from the same builders (fresh, like crds/), and
//! `helm template` renders, value set by value set, what `manifests` prints. helm is built from its
//! Go module at an exact version by tests/cluster/helm.sh (cached under /var/cache/kubectl-etcd):
//! the first run builds it (minutes), later runs find it.
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use kubectl_etcd::keys::LABEL_NAME;
use kubectl_etcd::objects::install::{self, NAMESPACE};
use kubectl_etcd::objects::monitoring;
use serde_json::Value;

const CHART: &str = "charts/kubectl-etcd";
const RULES: &str = "charts/kubectl-etcd/templates/_rules.tpl";
const CRDS: &str = "charts/kubectl-etcd/crds/crds.yaml";
const MONITORING: &str = "charts/kubectl-etcd/templates/monitoring.yaml";
const ADMISSION: &str = "charts/kubectl-etcd/templates/admission.yaml";
const REGENERATE: &str = "KE_REGENERATE=1 cargo test --test chart generated";

fn helm() -> &'static PathBuf {
    static HELM: OnceLock<PathBuf> = OnceLock::new();
    HELM.get_or_init(|| common::packaging_tool("helm"))
}

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn run(mut c: Command) -> Out {
    let o = c.output().expect("the command runs");
    Out {
        ok: o.status.success(),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

fn must(what: &str, o: Out) -> String {
    assert!(
        o.ok,
        "{what} failed\nstdout: {}\nstderr: {}",
        o.stdout, o.stderr
    );
    o.stdout
}

/// `helm template` of the chart into `namespace` with `--set` values.
fn template(namespace: &str, set: &[&str]) -> Out {
    let mut c = Command::new(helm());
    c.args(["template", "kubectl-etcd", CHART, "--namespace", namespace]);
    for s in set {
        c.args(["--set", s]);
    }
    run(c)
}

/// `kubectl etcd manifests ARGS…` (the binary of this build).
fn manifests(args: &[&str]) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kubectl-etcd"));
    c.arg("manifests").args(args);
    must("kubectl etcd manifests", run(c))
}

/// The objects of a YAML stream, sorted by kind, namespace and name (empty documents dropped).
fn objects(yaml: &str) -> Vec<Value> {
    let mut all: Vec<Value> =
        serde_saphyr::from_multiple(yaml).unwrap_or_else(|e| panic!("not YAML ({e}):\n{yaml}"));
    all.retain(|o| !o.is_null());
    all.sort_by_key(|o| {
        let m = &o["metadata"];
        format!("{}/{}/{}", o["kind"], m["namespace"], m["name"])
    });
    all
}

/// `manifests`' objects as Helm installs them into the release namespace `NAMESPACE`: that
/// namespace is Helm's (`--create-namespace`), not an object of the release.
fn manifests_objects(args: &[&str]) -> Vec<Value> {
    let mut all = objects(&manifests(args));
    all.retain(|o| !(o["kind"] == "Namespace" && o["metadata"]["name"] == NAMESPACE));
    all
}

fn assert_same(chart: &[Value], want: &[Value], what: &str) {
    let names = |v: &[Value]| -> Vec<String> {
        v.iter()
            .map(|o| {
                format!(
                    "{} {}/{}",
                    o["kind"].as_str().unwrap_or(""),
                    o["metadata"]["namespace"].as_str().unwrap_or(""),
                    o["metadata"]["name"].as_str().unwrap_or("")
                )
            })
            .collect()
    };
    assert_eq!(
        names(chart),
        names(want),
        "{what}: the chart renders other objects than manifests"
    );
    for (c, w) in chart.iter().zip(want) {
        assert_eq!(
            c, w,
            "{what}: the chart's {} {} differs from manifests'\nchart:     {c}\nmanifests: {w}",
            c["kind"], c["metadata"]["name"]
        );
    }
}

// --- generated parts of the chart --------------------------------------------------------------

/// One rule a line, as JSON (which is YAML): a template includes it under `rules:`.
fn rules_block(name: &str, object: &Value) -> String {
    let rules = object["rules"].as_array().expect("a role with rules");
    // The install's name in a rule (`resourceNames`) is the release's.
    let lines: Vec<String> = rules
        .iter()
        .map(|r| format!("- {r}").replace(install::NAME, "{{ include \"kubectl-etcd.name\" . }}"))
        .collect();
    format!(
        "{{{{- define \"kubectl-etcd.rules.{name}\" -}}}}\n{}\n{{{{- end -}}}}\n",
        lines.join("\n")
    )
}

/// templates/_rules.tpl: the RBAC rules of `objects::install` (from `objects::access`'s table).
fn rules_tpl() -> String {
    let cluster = install::manifests_watching("x", NAMESPACE, &[], &[]);
    let scoped = install::manifests_watching("x", NAMESPACE, &["w".to_string()], &[]);
    let find = |all: &[Value], kind: &str, name: &str, ns: Option<&str>| -> Value {
        all.iter()
            .find(|o| {
                o["kind"] == kind
                    && o["metadata"]["name"] == name
                    && ns.is_none_or(|ns| o["metadata"]["namespace"] == ns)
            })
            .unwrap_or_else(|| panic!("no {kind} {name} among the manifests"))
            .clone()
    };
    let n = install::NAME;
    [
        ("every", find(&cluster, "ClusterRole", n, None)),
        (
            "workload",
            find(&cluster, "ClusterRole", &format!("{n}-workload"), None),
        ),
        ("namespaced", find(&scoped, "Role", n, Some("w"))),
        ("nodes", find(&scoped, "ClusterRole", &format!("{n}-nodes"), None)),
        (
            "lease",
            find(
                &cluster,
                "Role",
                &kubectl_etcd::keys::install::leader_lease(n),
                Some(NAMESPACE),
            ),
        ),
        ("view", find(&cluster, "ClusterRole", &format!("{n}-view"), None)),
        ("edit", find(&cluster, "ClusterRole", &format!("{n}-edit"), None)),
    ]
    .iter()
    .fold(
        format!("{{{{/* Generated from objects::install by tests/chart.rs; do not edit. Regenerate: {REGENERATE} */}}}}\n"),
        |acc, (name, o)| acc + &rules_block(name, o),
    )
}

/// templates/admission.yaml: `objects::admission::manifests` and the policy of
/// `objects::admission::spec::manifests` (its parameters and binding are templates/allow.yaml,
/// which depend on values) as JSON documents, with the release
/// namespace and the operator's name put in as template expressions (whole values quoted, and
/// inside the policy's expressions and messages as they are: both are DNS labels).
fn admission_tpl() -> String {
    const NS: &str = "@release-namespace@";
    const NAME: &str = "@operator-name@";
    let labels =
        serde_json::json!({ LABEL_NAME: NAME, "app.kubernetes.io/managed-by": "kubectl-etcd" });
    // The policy's allow lists, from values (as CEL list literals).
    const OPTIONS: &str = "@allow-etcd-options@";
    const PREFIXES: &str = "@allow-image-prefixes@";
    let allowed = kubectl_etcd::objects::admission::spec::Allowed {
        etcd_options: vec![OPTIONS.into()],
        image_prefixes: vec![PREFIXES.into()],
    };
    let mut objects = kubectl_etcd::objects::admission::manifests(NS, NAME, &labels);
    objects.extend(
        kubectl_etcd::objects::admission::spec::manifests(NS, NAME, &[], &allowed, &labels)
            .into_iter()
            .filter(|o| o["kind"] == "ValidatingAdmissionPolicy"),
    );
    let docs: Vec<String> = objects
        .iter()
        .map(|o| {
            serde_json::to_string_pretty(o)
                .unwrap()
                .replace(
                    &format!("\"{NAME}\""),
                    "{{ include \"kubectl-etcd.name\" . | quote }}",
                )
                .replace(
                    &format!("['{OPTIONS}']"),
                    "{{ include \"kubectl-etcd.celList\" .Values.allowEtcdOptions }}",
                )
                .replace(
                    &format!("['{PREFIXES}']"),
                    "{{ include \"kubectl-etcd.celList\" .Values.allowImagePrefixes }}",
                )
                .replace(NS, "{{ .Release.Namespace }}")
                .replace(NAME, "{{ include \"kubectl-etcd.name\" . }}")
        })
        .collect();
    format!(
        "{{{{/* Generated from objects::admission by tests/chart.rs; do not edit. Regenerate: {REGENERATE} */}}}}\n{}\n",
        docs.join("\n---\n")
    )
}

/// templates/monitoring.yaml (`monitoring.enabled`): `objects::monitoring::manifests` as JSON
/// documents (JSON is YAML), with the release namespace and the operator's name (`name`: the
/// objects' label, the operator PodMonitor's selector, its scraper's names and the reader role
/// it is bound to) put in as template expressions (whole values quoted, inside names as they
/// are), and the alerts' own `{{ $labels.x }}` escaped so that Helm prints them as they are.
fn monitoring_tpl() -> String {
    const NS: &str = "@release-namespace@";
    const NAME: &str = "@operator-name@";
    let docs: Vec<String> = monitoring::manifests(NS, NAME)
        .into_iter()
        .map(|mut o| {
            o["metadata"]["labels"][LABEL_NAME] = NAME.into();
            serde_json::to_string_pretty(&o)
                .unwrap()
                .replace("{{", "{{ \"{{\" }}")
                .replace(&format!("\"{NS}\""), "{{ .Release.Namespace | quote }}")
                .replace(
                    &format!("\"{NAME}\""),
                    "{{ include \"kubectl-etcd.name\" . | quote }}",
                )
                .replace(NS, "{{ .Release.Namespace }}")
                .replace(NAME, "{{ include \"kubectl-etcd.name\" . }}")
        })
        .collect();
    format!(
        "{{{{/* Generated from objects::monitoring by tests/chart.rs; do not edit. Regenerate: {REGENERATE} */}}}}\n{{{{- if .Values.monitoring.enabled }}}}\n{}\n{{{{- end }}}}\n",
        docs.join("\n---\n")
    )
}

fn check(path: &str, want: &str) {
    if std::env::var_os("KE_REGENERATE").is_some() {
        std::fs::write(path, want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "{path} is stale or missing; regenerate it with `{REGENERATE}`"
    );
}

#[test]
fn generated_rules_are_fresh() {
    check(RULES, &rules_tpl());
}

#[test]
fn generated_crds_are_fresh() {
    check(CRDS, &kubectl_etcd::cli::crd_yaml());
}

#[test]
fn generated_admission_policy_is_fresh() {
    check(ADMISSION, &admission_tpl());
}

#[test]
fn generated_monitoring_objects_are_fresh() {
    check(MONITORING, &monitoring_tpl());
}

// --- helm -----------------------------------------------------------------------------------------

#[test]
fn helm_lint_passes_for_both_scopes() {
    for set in [
        &[][..],
        &["rbac.scope=namespace"][..],
        &["rbac.scope=namespace", "rbac.watchNamespace=team-a"][..],
        &["monitoring.enabled=true"][..],
    ] {
        let mut c = Command::new(helm());
        c.args(["lint", "--strict", CHART, "--namespace", "ops"]);
        for s in set {
            c.args(["--set", s]);
        }
        let out = must(&format!("helm lint --set {set:?}"), run(c));
        assert!(out.contains("0 chart(s) failed"), "{out}");
    }
}

#[test]
fn helm_template_renders_the_objects_of_manifests() {
    let chart = objects(&must("helm template", template(NAMESPACE, &[])));
    assert_same(&chart, &manifests_objects(&[]), "default values");
}

#[test]
fn helm_template_with_monitoring_renders_the_objects_of_manifests_monitoring() {
    let chart = objects(&must(
        "helm template",
        template(NAMESPACE, &["monitoring.enabled=true"]),
    ));
    assert_same(
        &chart,
        &manifests_objects(&["--monitoring"]),
        "monitoring.enabled=true",
    );
    // the alerts' annotations come through Helm as Prometheus templates, not rendered by Helm
    let rule = chart
        .iter()
        .find(|o| o["kind"] == "PrometheusRule")
        .unwrap();
    assert!(
        rule["spec"]["groups"][0]["rules"][0]["annotations"]["runbook"]
            .as_str()
            .unwrap()
            .contains("{{ $labels.namespace }}"),
        "{rule}"
    );
}

#[test]
fn helm_template_with_monitoring_elsewhere_watches_the_release_and_its_operator() {
    let all = objects(&must(
        "helm template",
        template("ops", &["monitoring.enabled=true", "name=etcd-op"]),
    ));
    let mut want: Vec<Value> = monitoring::manifests("ops", "etcd-op");
    for o in &mut want {
        o["metadata"]["labels"][LABEL_NAME] = "etcd-op".into();
    }
    // The pack's objects: its kinds (the operator's own ServiceAccount and bindings are the
    // install's), the dashboard, and the scraper's objects, by name.
    let kinds = ["PodMonitor", "PrometheusRule"];
    let scraper = kubectl_etcd::keys::install::metrics_scraper("etcd-op");
    let mut have: Vec<Value> = all
        .iter()
        .filter(|o| {
            kinds.contains(&o["kind"].as_str().unwrap_or(""))
                || o["metadata"]["name"] == monitoring::DASHBOARD_NAME
                || o["metadata"]["name"] == scraper.as_str()
        })
        .cloned()
        .collect();
    let key = |o: &Value| format!("{}/{}", o["kind"], o["metadata"]["name"]);
    have.sort_by_key(key);
    want.sort_by_key(key);
    assert_same(&have, &want, "monitoring in ops, operator etcd-op");
    // what the operator's PodMonitor selects is the chart's operator pod
    let deployment = all.iter().find(|o| o["kind"] == "Deployment").unwrap();
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    let monitor = have
        .iter()
        .find(|o| o["metadata"]["name"] == monitoring::OPERATOR_MONITOR)
        .unwrap();
    for (k, v) in monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .unwrap()
    {
        assert_eq!(&pod_labels[k], v, "the operator pod's label {k}");
    }
}

#[test]
fn helm_template_with_watched_namespaces_renders_manifests_watch_namespace() {
    let chart = objects(&must(
        "helm template",
        template(
            NAMESPACE,
            &["rbac.scope=namespace", "rbac.watchNamespace=team-a"],
        ),
    ));
    assert_same(
        &chart,
        &manifests_objects(&["--watch-namespace", "team-a"]),
        "rbac.scope=namespace",
    );
    // the release namespace is the default watched namespace
    let chart = objects(&must(
        "helm template",
        template(NAMESPACE, &["rbac.scope=namespace"]),
    ));
    assert_same(
        &chart,
        &manifests_objects(&["--watch-namespace", NAMESPACE]),
        "rbac.scope=namespace, watchNamespace unset",
    );
    // several namespaces, as a comma-separated string (escaped for --set) or a list
    let want = manifests_objects(&["--watch-namespace", "team-a,team-b"]);
    for several in [
        "rbac.watchNamespace=team-a\\,team-b",
        "rbac.watchNamespace={team-a,team-b}",
    ] {
        let chart = objects(&must(
            "helm template",
            template(NAMESPACE, &["rbac.scope=namespace", several]),
        ));
        assert_same(&chart, &want, several);
    }
}

#[test]
fn helm_template_image_and_name_values_are_manifests_image_and_a_renamed_operator() {
    let image = "registry.example/ops/kubectl-etcd:1.2.3";
    let chart = objects(&must(
        "helm template",
        template(
            NAMESPACE,
            &[
                "image.repository=registry.example/ops/kubectl-etcd",
                "image.tag=1.2.3",
                "name=etcd-op",
            ],
        ),
    ));
    let renamed = manifests(&["--image", image]).replace(install::NAME, "etcd-op");
    let mut want = objects(&renamed);
    want.retain(|o| !(o["kind"] == "Namespace" && o["metadata"]["name"] == NAMESPACE));
    assert_same(&chart, &want, "image and name");
    // pinned by digest: the digest replaces the tag, as `manifests --image repo@digest` writes it
    let digest = "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945";
    let pinned = objects(&must(
        "helm template",
        template(
            NAMESPACE,
            &[
                "image.repository=registry.example/ops/kubectl-etcd",
                "image.tag=1.2.3",
                &format!("image.digest={digest}"),
            ],
        ),
    ));
    let by_digest = format!("registry.example/ops/kubectl-etcd@{digest}");
    let mut want = objects(&manifests(&["--image", &by_digest]));
    want.retain(|o| !(o["kind"] == "Namespace" && o["metadata"]["name"] == NAMESPACE));
    assert_same(&pinned, &want, "image pinned by digest");
}

#[test]
fn helm_template_elsewhere_renders_manifests_operator_namespace() {
    let chart = objects(&must("helm template", template("ops", &[])));
    // No namespace of its own besides the release's (Helm's): the leader Lease is in it.
    assert!(chart.iter().all(|o| o["kind"] != "Namespace"));
    let sa = chart
        .iter()
        .find(|o| o["kind"] == "ServiceAccount")
        .unwrap();
    assert_eq!(sa["metadata"]["namespace"], "ops");
    let lease_role = chart.iter().find(|o| o["kind"] == "Role").unwrap();
    assert_eq!(lease_role["metadata"]["namespace"], "ops");
    let policy = chart
        .iter()
        .find(|o| o["kind"] == "ValidatingAdmissionPolicy")
        .unwrap();
    assert_eq!(
        policy["spec"]["matchConditions"][0]["expression"],
        format!(
            "request.userInfo.username == 'system:serviceaccount:ops:{}'",
            install::NAME
        )
    );
    // manifests into another namespace: the same objects there
    let mut want: Vec<Value> = install::manifests(
        &format!(
            "ghcr.io/kubectl-etcd/kubectl-etcd:{}",
            env!("CARGO_PKG_VERSION")
        ),
        "ops",
    )
    .into_iter()
    .filter(|o| o["kind"] != "Namespace")
    .collect();
    want.sort_by_key(|o| {
        format!(
            "{}/{}/{}",
            o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]
        )
    });
    assert_same(&chart, &want, "release namespace ops");
    // and `kubectl etcd manifests --operator-namespace ops` prints them (besides the namespace)
    let image = format!(
        "ghcr.io/kubectl-etcd/kubectl-etcd:{}",
        env!("CARGO_PKG_VERSION")
    );
    let mut printed = objects(&manifests(&[
        "--image",
        &image,
        "--operator-namespace",
        "ops",
    ]));
    printed.retain(|o| o["kind"] != "Namespace");
    assert_same(&chart, &printed, "manifests --operator-namespace ops");
}

/// `imagePullSecrets` (either way Helm charts write them: `- name: x` or `- x`) renders what
/// `manifests --image-pull-secret` prints.
#[test]
fn helm_template_with_pull_secrets_renders_the_objects_of_manifests() {
    let chart = objects(&must(
        "helm template",
        template(
            NAMESPACE,
            &[
                "imagePullSecrets[0].name=regcred",
                "imagePullSecrets[1]=mirror",
            ],
        ),
    ));
    let want = manifests_objects(&[
        "--image-pull-secret",
        "regcred",
        "--image-pull-secret",
        "mirror",
    ]);
    let pod = |all: &[Value]| {
        all.iter()
            .find(|o| o["kind"] == "Deployment")
            .unwrap()["spec"]["template"]["spec"]["imagePullSecrets"]
            .clone()
    };
    assert_eq!(
        pod(&want),
        serde_json::json!([{ "name": "regcred" }, { "name": "mirror" }])
    );
    assert_same(&chart, &want, "imagePullSecrets");
}

#[test]
fn helm_template_allow_values_are_manifests_allow_flags() {
    let chart = objects(&must(
        "helm template",
        template(
            NAMESPACE,
            &[
                "allowEtcdOptions={enable-pprof,enable-v2}",
                "allowImagePrefixes={registry.example/}",
                "rbac.scope=namespace",
            ],
        ),
    ));
    let want = manifests_objects(&[
        "--allow-etcd-option",
        "enable-pprof,enable-v2",
        "--allow-image-prefix",
        "registry.example/",
        "--watch-namespace",
        NAMESPACE,
    ]);
    let policy = want
        .iter()
        .find(|o| o["kind"] == "ValidatingAdmissionPolicy" && o["spec"]["variables"].is_array())
        .unwrap();
    assert_eq!(
        policy["spec"]["variables"][1]["expression"],
        "['enable-pprof', 'enable-v2']"
    );
    let args = &want.iter().find(|o| o["kind"] == "Deployment").unwrap()["spec"]["template"]["spec"]
        ["containers"][0]["args"];
    assert!(
        args.to_string()
            .contains(r#""--allow-etcd-option","enable-pprof,enable-v2","--allow-image-prefix","registry.example/""#),
        "{args}"
    );
    assert_same(&chart, &want, "allowEtcdOptions, allowImagePrefixes");
}

/// The fair-share values become `operate`'s flags, and change nothing else: unset, the chart is
/// `manifests` (`helm_template_renders_the_objects_of_manifests`).
#[test]
fn helm_template_fair_share_values_are_operate_flags_and_nothing_else() {
    let chart = objects(&must(
        "helm template",
        template(
            NAMESPACE,
            &[
                "fairShare.maxPassesPerNamespace=2",
                "fairShare.maxBackupsPerNamespace=1",
                "fairShare.maxBackups=3",
            ],
        ),
    ));
    let want = manifests_objects(&[]);
    let args = |all: &[Value]| {
        all.iter().find(|o| o["kind"] == "Deployment").unwrap()["spec"]["template"]["spec"]
            ["containers"][0]["args"]
            .clone()
    };
    let flags = [
        "--max-passes-per-namespace",
        "2",
        "--max-backups-per-namespace",
        "1",
        "--max-backups",
        "3",
    ];
    let mut expected = args(&want).as_array().unwrap().clone();
    expected.extend(flags.iter().map(|f| Value::from(*f)));
    assert_eq!(args(&chart), Value::Array(expected));
    let help = must("operate --help", {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kubectl-etcd"));
        c.args(["operate", "--help"]);
        run(c)
    });
    for flag in flags.iter().step_by(2) {
        assert!(help.contains(flag), "operate has no {flag}");
    }
    let strip = |all: &[Value]| -> Vec<Value> {
        all.iter()
            .map(|o| {
                let mut o = o.clone();
                if o["kind"] == "Deployment" {
                    o["spec"]["template"]["spec"]["containers"][0]["args"] = Value::Null;
                }
                o
            })
            .collect()
    };
    assert_same(&strip(&chart), &strip(&want), "fairShare");
}

#[test]
fn helm_template_refuses_an_unknown_scope_with_the_choices() {
    let out = template(NAMESPACE, &["rbac.scope=everywhere"]);
    assert!(!out.ok, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("rbac.scope is \"everywhere\": use cluster"),
        "{}",
        out.stderr
    );
}

#[test]
fn helm_template_includes_the_crds_of_kubectl_etcd_crd() {
    let mut c = Command::new(helm());
    c.args(["show", "crds", CHART]);
    let crds = objects(&must("helm show crds", run(c)));
    assert_eq!(crds, objects(&kubectl_etcd::cli::crd_yaml()));
}
