//! The monitoring manifests (`kubectl etcd manifests --monitoring`, `install --monitoring`): a
//! PodMonitor for the members' metrics listener, one for the operator's `/metrics` (and the
//! ServiceAccount whose token it scrapes with, bound to the operator's metrics reader role), a
//! PrometheusRule with the alerts, and a Grafana dashboard in a ConfigMap. Pure: values out, no
//! client; the output is deterministic (the Helm chart is built from it).
//!
//! Every alert is one row of `ALERTS`: its expression, how long it must hold, what it means and
//! the `kubectl etcd` command to run (the `runbook` annotation; docs/src/monitoring.md's alert table is these
//! rows). The rules' own tests are promtool's (`tests/monitoring/`, `tests/cluster/prometheus.sh`);
//! `tests/e2e_monitoring.rs` runs them in a real Prometheus against a live cluster.
//!
//! Labels: member series carry `namespace`, `name` (the EtcdCluster) and `member` (the pod), as
//! the operator's per-cluster series do, so member and operator alerts group alike.

use serde_json::{Value, json};

use crate::keys::install::{metrics_reader_role, metrics_scraper};
use crate::objects::install;
use crate::objects::{FIELD_MANAGER, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME};

/// The members' plaintext metrics listener (named in `crate::keys`).
pub use crate::keys::MEMBER_METRICS_PORT;
/// The name of the metrics port on member and operator pods (what the PodMonitors scrape).
pub const PORT_NAME: &str = "metrics";
/// The `job` label of member series and of operator series.
pub const MEMBERS_JOB: &str = "kubectl-etcd-members";
pub const OPERATOR_JOB: &str = "kubectl-etcd-operator";
/// Names of the PodMonitors, the PrometheusRule and the dashboard ConfigMap.
pub const MEMBERS_MONITOR: &str = "kubectl-etcd-members";
pub const OPERATOR_MONITOR: &str = "kubectl-etcd-operator";
pub const RULE_NAME: &str = "kubectl-etcd";
pub const DASHBOARD_NAME: &str = "kubectl-etcd-dashboard";
/// Grafana's sidecar loads ConfigMaps carrying this label (kube-prometheus-stack's default).
pub const DASHBOARD_LABEL: &str = "grafana_dashboard";
/// How often the PodMonitors scrape.
pub const SCRAPE_INTERVAL: &str = "30s";

/// One alert: a row of docs/src/monitoring.md's alert table.
#[derive(Clone, Copy, Debug)]
pub struct Alert {
    pub name: &'static str,
    pub expr: &'static str,
    /// How long `expr` must hold (Prometheus duration).
    pub for_: &'static str,
    pub severity: &'static str,
    /// What it means (the `summary`; `{{ $labels.x }}` filled in by Prometheus).
    pub summary: &'static str,
    /// The command to run (the `runbook` annotation).
    pub runbook: &'static str,
}

/// `$labels` of a cluster, for annotations.
macro_rules! ns {
    () => {
        "{{ $labels.namespace }}"
    };
}
macro_rules! name {
    () => {
        "{{ $labels.name }}"
    };
}

/// etcd's own alerts (after the etcd mixin), on the members' metrics, then ours on the operator's.
pub const ALERTS: &[Alert] = &[
    Alert {
        name: "EtcdNoLeader",
        expr: r#"etcd_server_has_leader{job="kubectl-etcd-members"} == 0"#,
        for_: "1m",
        severity: "critical",
        summary: concat!(
            "member {{ $labels.member }} of ",
            ns!(),
            "/",
            name!(),
            " has no leader"
        ),
        runbook: concat!("kubectl etcd -n ", ns!(), " status ", name!()),
    },
    Alert {
        name: "EtcdInsufficientMembers",
        expr: r#"sum by (namespace, name) (up{job="kubectl-etcd-members"} == bool 1) < ((count by (namespace, name) (up{job="kubectl-etcd-members"}) + 1) / 2)"#,
        for_: "3m",
        severity: "critical",
        summary: concat!(
            "fewer than a quorum of the members of ",
            ns!(),
            "/",
            name!(),
            " serve metrics"
        ),
        runbook: concat!("kubectl etcd -n ", ns!(), " status ", name!()),
    },
    Alert {
        name: "EtcdHighNumberOfLeaderChanges",
        expr: r#"max by (namespace, name) (increase(etcd_server_leader_changes_seen_total{job="kubectl-etcd-members"}[15m])) >= 4"#,
        for_: "5m",
        severity: "warning",
        summary: concat!(
            ns!(),
            "/",
            name!(),
            " changed leaders 4 times or more in 15 minutes (slow disks or network)"
        ),
        runbook: concat!("kubectl etcd -n ", ns!(), " logs ", name!(), " --since 15m"),
    },
    Alert {
        name: "EtcdHighFsyncDurations",
        expr: r#"histogram_quantile(0.99, sum by (namespace, name, member, le) (rate(etcd_disk_wal_fsync_duration_seconds_bucket{job="kubectl-etcd-members"}[5m]))) > 0.5"#,
        for_: "10m",
        severity: "warning",
        summary: concat!(
            "99th percentile WAL fsync of {{ $labels.member }} (",
            ns!(),
            "/",
            name!(),
            ") is above 0.5 s"
        ),
        runbook: concat!("kubectl etcd -n ", ns!(), " report ", name!(), " --logs"),
    },
    Alert {
        name: "EtcdHighCommitDurations",
        expr: r#"histogram_quantile(0.99, sum by (namespace, name, member, le) (rate(etcd_disk_backend_commit_duration_seconds_bucket{job="kubectl-etcd-members"}[5m]))) > 0.25"#,
        for_: "10m",
        severity: "warning",
        summary: concat!(
            "99th percentile backend commit of {{ $labels.member }} (",
            ns!(),
            "/",
            name!(),
            ") is above 0.25 s"
        ),
        runbook: concat!("kubectl etcd -n ", ns!(), " report ", name!(), " --logs"),
    },
    Alert {
        name: "EtcdDatabaseNearQuota",
        expr: r#"(last_over_time(etcd_mvcc_db_total_size_in_bytes{job="kubectl-etcd-members"}[5m]) / last_over_time(etcd_server_quota_backend_bytes{job="kubectl-etcd-members"}[5m])) * 100 > 80"#,
        for_: "10m",
        severity: "warning",
        summary: concat!(
            "the database of {{ $labels.member }} (",
            ns!(),
            "/",
            name!(),
            ") is above 80 % of its quota"
        ),
        runbook: concat!(
            "kubectl etcd -n ",
            ns!(),
            " defrag ",
            name!(),
            " --compact (or raise spec.etcd.quotaBackendBytes)"
        ),
    },
    Alert {
        name: "EtcdQuorumAtRisk",
        expr: "kubectl_etcd_healthy_voters < kubectl_etcd_voters and kubectl_etcd_healthy_voters == floor(kubectl_etcd_voters / 2) + 1",
        for_: "2m",
        severity: "warning",
        summary: concat!(
            ns!(),
            "/",
            name!(),
            ": {{ $value }} voters healthy, a quorum exactly: one more failure stops writes"
        ),
        runbook: concat!("kubectl etcd -n ", ns!(), " status ", name!()),
    },
    Alert {
        name: "EtcdQuorumLost",
        expr: "kubectl_etcd_healthy_voters < floor(kubectl_etcd_voters / 2) + 1",
        for_: "2m",
        severity: "critical",
        summary: concat!(
            ns!(),
            "/",
            name!(),
            ": only {{ $value }} voters healthy, fewer than a quorum; the engine does not act"
        ),
        runbook: concat!(
            "kubectl etcd -n ",
            ns!(),
            " recover ",
            name!(),
            " --dry-run"
        ),
    },
    Alert {
        name: "EtcdMemberReplacementSlow",
        expr: r#"max by (namespace, name) (kubectl_etcd_learners) > 0 or max by (namespace, name) (kubectl_etcd_condition{reason="ReplacingMember"}) == 1"#,
        for_: "15m",
        severity: "warning",
        summary: concat!(
            "a member of ",
            ns!(),
            "/",
            name!(),
            " has been joining or replaced for 15 minutes"
        ),
        runbook: concat!(
            "kubectl etcd -n ",
            ns!(),
            " status ",
            name!(),
            " (then logs ",
            name!(),
            " --member M)"
        ),
    },
    Alert {
        name: "EtcdBackupOverdue",
        expr: "time() - kubectl_etcd_last_successful_backup_timestamp_seconds > 2 * kubectl_etcd_backup_interval_seconds",
        for_: "5m",
        severity: "warning",
        summary: concat!(
            "the newest backup of ",
            ns!(),
            "/",
            name!(),
            " is older than twice its schedule's interval (suspended?)"
        ),
        runbook: concat!("kubectl etcd -n ", ns!(), " backup list ", name!()),
    },
    Alert {
        name: "EtcdBackupFailing",
        expr: "kubectl_etcd_backup_failing == 1",
        for_: "5m",
        severity: "warning",
        summary: concat!("the newest backup of ", ns!(), "/", name!(), " failed"),
        runbook: concat!("kubectl etcd -n ", ns!(), " backup list ", name!()),
    },
    Alert {
        name: "EtcdUpgradeRolledBack",
        expr: r#"kubectl_etcd_upgrade_state{state="rolled_back"} == 1"#,
        for_: "1m",
        severity: "warning",
        summary: concat!(
            "an upgrade of ",
            ns!(),
            "/",
            name!(),
            " failed and every member runs the old version again"
        ),
        runbook: concat!("kubectl etcd -n ", ns!(), " logs ", name!(), " --since 1h"),
    },
    Alert {
        name: "EtcdUpgradeBlocked",
        expr: r#"kubectl_etcd_upgrade_state{state="blocked"} == 1"#,
        for_: "5m",
        severity: "warning",
        summary: concat!(
            "spec.version of ",
            ns!(),
            "/",
            name!(),
            " cannot be reached from what the members run"
        ),
        runbook: concat!(
            "kubectl etcd -n ",
            ns!(),
            " upgrade ",
            name!(),
            " --version V --dry-run"
        ),
    },
    Alert {
        name: "EtcdSpecRefused",
        expr: r#"kubectl_etcd_condition{type="SpecRefused"} == 1 or kubectl_etcd_condition{type="Degraded",reason="InvalidSpec"} == 1"#,
        for_: "5m",
        severity: "warning",
        summary: concat!(
            "a spec change of ",
            ns!(),
            "/",
            name!(),
            " is refused ({{ $labels.reason }}); the status message names the field"
        ),
        runbook: concat!("kubectl etcd -n ", ns!(), " status ", name!()),
    },
    Alert {
        name: "EtcdCertificateExpiringSoon",
        expr: "kubectl_etcd_certificate_expiration_timestamp_seconds - time() < 14 * 86400",
        for_: "1h",
        severity: "warning",
        summary: concat!(
            "{{ $labels.key }} of Secret {{ $labels.secret }} (",
            ns!(),
            "/",
            name!(),
            ") expires in less than 14 days: renew the Secret (etcd reads a renewed certificate at each new connection)"
        ),
        runbook: concat!("kubectl etcd -n ", ns!(), " status ", name!()),
    },
    Alert {
        name: "KubectlEtcdOperatorDown",
        expr: r#"absent(up{job="kubectl-etcd-operator"} == 1)"#,
        for_: "10m",
        severity: "warning",
        summary: "no kubectl-etcd operator serves metrics: nobody repairs clusters or takes scheduled backups",
        runbook: "kubectl etcd report --operator",
    },
];

fn labels() -> Value {
    json!({ LABEL_NAME: install::NAME, LABEL_MANAGED_BY: FIELD_MANAGER })
}

fn meta(name: &str, namespace: &str) -> Value {
    json!({ "name": name, "namespace": namespace, "labels": labels() })
}

/// The relabelings that give member series their `namespace`, `name`, `member` and `job`
/// labels (prometheus-operator adds `namespace` and `pod` itself; ours are spelled out so that an
/// equivalent scrape configuration is built from them: see `scrape_labels`).
fn member_relabelings() -> Value {
    json!([
        { "sourceLabels": ["__meta_kubernetes_namespace"], "targetLabel": "namespace" },
        { "sourceLabels": [meta_label(LABEL_INSTANCE)], "targetLabel": "name" },
        { "sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "member" },
        { "targetLabel": "job", "replacement": MEMBERS_JOB },
    ])
}

fn operator_relabelings() -> Value {
    json!([
        { "sourceLabels": ["__meta_kubernetes_namespace"], "targetLabel": "namespace" },
        { "sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "pod" },
        { "targetLabel": "job", "replacement": OPERATOR_JOB },
    ])
}

/// `__meta_kubernetes_pod_label_app_kubernetes_io_instance` for `app.kubernetes.io/instance`.
fn meta_label(label: &str) -> String {
    let clean: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("__meta_kubernetes_pod_label_{clean}")
}

/// The PodMonitor of every member of every EtcdCluster (any namespace): the pods the engine
/// labels, their `metrics` port. Pods of a cluster without a metrics listener have no such port
/// and are not scraped.
pub fn members_monitor(namespace: &str) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
        "metadata": meta(MEMBERS_MONITOR, namespace),
        "spec": {
            "namespaceSelector": { "any": true },
            "selector": { "matchLabels": { LABEL_NAME: "etcd", LABEL_MANAGED_BY: FIELD_MANAGER } },
            "podMetricsEndpoints": [{
                "port": PORT_NAME, "path": "/metrics", "scheme": "http", "interval": SCRAPE_INTERVAL,
                "relabelings": member_relabelings(),
            }],
        },
    })
}

/// The PodMonitor of operator `operator`'s pods (`/metrics` on their `metrics` port), with the
/// bearer token of its scraper (`scraper`): `/metrics` answers only a token whose user may get
/// it (`operate --metrics-auth`). Its per-cluster series carry the cluster's `namespace` and
/// `name` themselves: `honorLabels` keeps them (else Prometheus renames them
/// `exported_namespace` and writes the operator pod's namespace over them, and every alert on
/// them names the wrong cluster).
pub fn operator_monitor(namespace: &str, operator: &str) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
        "metadata": meta(OPERATOR_MONITOR, namespace),
        "spec": {
            "namespaceSelector": { "matchNames": [namespace] },
            "selector": { "matchLabels": { LABEL_NAME: operator } },
            "podMetricsEndpoints": [{
                "port": PORT_NAME, "path": "/metrics", "scheme": "http", "interval": SCRAPE_INTERVAL,
                "honorLabels": true,
                "authorization": {
                    "type": "Bearer",
                    "credentials": { "name": metrics_scraper(operator), "key": SCRAPER_TOKEN_KEY },
                },
                "relabelings": operator_relabelings(),
            }],
        },
    })
}

/// The key of a ServiceAccount token Secret that holds the token.
pub const SCRAPER_TOKEN_KEY: &str = "token";

/// The identity the operator's PodMonitor scrapes with: a ServiceAccount, a long-lived token
/// Secret of it (filled by Kubernetes' token controller; prometheus-operator reads it from the
/// PodMonitor's namespace) and its ClusterRoleBinding to the reader role of operator `operator`
/// (`install::metrics_reader`), all named `keys::install::metrics_scraper`.
pub fn scraper(namespace: &str, operator: &str) -> Vec<Value> {
    let name = metrics_scraper(operator);
    let mut secret = meta(&name, namespace);
    secret["annotations"] = json!({ "kubernetes.io/service-account.name": name });
    vec![
        json!({ "apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(&name, namespace) }),
        json!({ "apiVersion": "v1", "kind": "Secret", "metadata": secret, "type": "kubernetes.io/service-account-token" }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": { "name": name, "labels": labels() },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": metrics_reader_role(operator) },
            "subjects": [{ "kind": "ServiceAccount", "name": name, "namespace": namespace }],
        }),
    ]
}

/// The rule groups (a Prometheus rule file's content; the PrometheusRule's spec). `for_override`
/// replaces every alert's `for` (the e2e test's, to see alerts fire within minutes).
pub fn rule_groups(for_override: Option<&str>) -> Value {
    let rules: Vec<Value> = ALERTS
        .iter()
        .map(|a| {
            json!({
                "alert": a.name,
                "expr": a.expr,
                "for": for_override.unwrap_or(a.for_),
                "labels": { "severity": a.severity },
                "annotations": { "summary": a.summary, "runbook": a.runbook },
            })
        })
        .collect();
    json!({ "groups": [{ "name": "kubectl-etcd", "rules": rules }] })
}

pub fn prometheus_rule(namespace: &str) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": meta(RULE_NAME, namespace),
        "spec": rule_groups(None),
    })
}

/// One panel of the dashboard: a title and its queries (`$namespace` and `$cluster` are the
/// dashboard's variables).
pub struct Panel {
    pub title: &'static str,
    pub unit: &'static str,
    pub queries: &'static [&'static str],
}

pub const PANELS: &[Panel] = &[
    Panel {
        title: "Voters (operator)",
        unit: "short",
        queries: &[
            r#"kubectl_etcd_voters{namespace=~"$namespace", name=~"$cluster"}"#,
            r#"kubectl_etcd_healthy_voters{namespace=~"$namespace", name=~"$cluster"}"#,
            r#"kubectl_etcd_learners{namespace=~"$namespace", name=~"$cluster"}"#,
        ],
    },
    Panel {
        title: "Has leader",
        unit: "short",
        queries: &[
            r#"etcd_server_has_leader{job="kubectl-etcd-members", namespace=~"$namespace", name=~"$cluster"}"#,
        ],
    },
    Panel {
        title: "Leader changes (1h)",
        unit: "short",
        queries: &[
            r#"increase(etcd_server_leader_changes_seen_total{job="kubectl-etcd-members", namespace=~"$namespace", name=~"$cluster"}[1h])"#,
        ],
    },
    Panel {
        title: "Database size per member",
        unit: "bytes",
        queries: &[
            r#"etcd_mvcc_db_total_size_in_bytes{job="kubectl-etcd-members", namespace=~"$namespace", name=~"$cluster"}"#,
            r#"etcd_mvcc_db_total_size_in_use_in_bytes{job="kubectl-etcd-members", namespace=~"$namespace", name=~"$cluster"}"#,
            r#"etcd_server_quota_backend_bytes{job="kubectl-etcd-members", namespace=~"$namespace", name=~"$cluster"}"#,
        ],
    },
    Panel {
        title: "WAL fsync p99",
        unit: "s",
        queries: &[
            r#"histogram_quantile(0.99, sum by (member, le) (rate(etcd_disk_wal_fsync_duration_seconds_bucket{job="kubectl-etcd-members", namespace=~"$namespace", name=~"$cluster"}[5m])))"#,
        ],
    },
    Panel {
        title: "Backend commit p99",
        unit: "s",
        queries: &[
            r#"histogram_quantile(0.99, sum by (member, le) (rate(etcd_disk_backend_commit_duration_seconds_bucket{job="kubectl-etcd-members", namespace=~"$namespace", name=~"$cluster"}[5m])))"#,
        ],
    },
    Panel {
        title: "Peer round trip p99",
        unit: "s",
        queries: &[
            r#"histogram_quantile(0.99, sum by (member, le) (rate(etcd_network_peer_round_trip_time_seconds_bucket{job="kubectl-etcd-members", namespace=~"$namespace", name=~"$cluster"}[5m])))"#,
        ],
    },
    Panel {
        title: "Raft proposals",
        unit: "short",
        queries: &[
            r#"sum by (member) (rate(etcd_server_proposals_committed_total{job="kubectl-etcd-members", namespace=~"$namespace", name=~"$cluster"}[5m]))"#,
            r#"sum by (member) (etcd_server_proposals_pending{job="kubectl-etcd-members", namespace=~"$namespace", name=~"$cluster"})"#,
        ],
    },
    Panel {
        title: "gRPC requests",
        unit: "reqps",
        queries: &[
            r#"sum by (member, grpc_code) (rate(grpc_server_handled_total{job="kubectl-etcd-members", namespace=~"$namespace", name=~"$cluster"}[5m]))"#,
        ],
    },
    Panel {
        title: "Newest backup: age, duration and size",
        unit: "s",
        queries: &[
            r#"time() - kubectl_etcd_last_successful_backup_timestamp_seconds{namespace=~"$namespace", name=~"$cluster"}"#,
            r#"kubectl_etcd_last_successful_backup_duration_seconds{namespace=~"$namespace", name=~"$cluster"}"#,
            r#"kubectl_etcd_last_successful_backup_size_bytes{namespace=~"$namespace", name=~"$cluster"}"#,
        ],
    },
    Panel {
        title: "Certificates: time left (spec.tls)",
        unit: "s",
        queries: &[
            r#"kubectl_etcd_certificate_expiration_timestamp_seconds{namespace=~"$namespace", name=~"$cluster"} - time()"#,
        ],
    },
    Panel {
        title: "Upgrade state",
        unit: "short",
        queries: &[r#"kubectl_etcd_upgrade_state{namespace=~"$namespace", name=~"$cluster"} == 1"#],
    },
    Panel {
        title: "Operator passes",
        unit: "ops",
        queries: &[
            r#"sum by (result) (rate(kubectl_etcd_reconciles_total{job="kubectl-etcd-operator"}[5m]))"#,
            r#"histogram_quantile(0.99, sum by (le) (rate(kubectl_etcd_reconcile_duration_seconds_bucket{job="kubectl-etcd-operator"}[5m])))"#,
        ],
    },
];

/// The Grafana dashboard (JSON model): two variables (namespace, cluster) and `PANELS`, two per
/// row.
pub fn dashboard() -> Value {
    let variable = |name: &str, label: &str, query: &str| {
        json!({
            "name": name, "label": label, "type": "query", "datasource": { "type": "prometheus", "uid": "${datasource}" },
            "query": { "query": query, "refId": name }, "definition": query,
            "includeAll": true, "multi": true, "refresh": 2, "sort": 1,
            "current": { "selected": true, "text": ["All"], "value": ["$__all"] },
        })
    };
    let panels: Vec<Value> = PANELS
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let targets: Vec<Value> = p
                .queries
                .iter()
                .enumerate()
                .map(|(j, q)| {
                    json!({
                        "datasource": { "type": "prometheus", "uid": "${datasource}" },
                        "expr": q, "refId": char::from(b'A' + j as u8).to_string(),
                    })
                })
                .collect();
            json!({
                "id": i + 1, "type": "timeseries", "title": p.title,
                "datasource": { "type": "prometheus", "uid": "${datasource}" },
                "gridPos": { "h": 8, "w": 12, "x": (i % 2) * 12, "y": (i / 2) * 8 },
                "fieldConfig": { "defaults": { "unit": p.unit }, "overrides": [] },
                "targets": targets,
            })
        })
        .collect();
    json!({
        "title": "etcd (kubectl-etcd)", "uid": "kubectl-etcd", "schemaVersion": 39, "version": 1,
        "editable": true, "refresh": "30s", "time": { "from": "now-3h", "to": "now" },
        "tags": ["etcd", "kubectl-etcd"],
        "templating": { "list": [
            { "name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus" },
            variable("namespace", "Namespace", "label_values(kubectl_etcd_voters, namespace)"),
            variable("cluster", "Cluster", "label_values(kubectl_etcd_voters{namespace=~\"$namespace\"}, name)"),
        ] },
        "panels": panels,
    })
}

pub fn dashboard_config_map(namespace: &str) -> Value {
    let mut m = meta(DASHBOARD_NAME, namespace);
    m["labels"][DASHBOARD_LABEL] = json!("1");
    // Serializing a Value cannot fail.
    let text = serde_json::to_string_pretty(&dashboard()).unwrap_or_default();
    json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": m,
        "data": { "kubectl-etcd.json": text },
    })
}

/// Everything `--monitoring` adds for operator `operator` (`install::NAME` unless renamed, the
/// chart's `name`), in `namespace` (the operator's).
pub fn manifests(namespace: &str, operator: &str) -> Vec<Value> {
    let mut out = vec![
        members_monitor(namespace),
        operator_monitor(namespace, operator),
        prometheus_rule(namespace),
        dashboard_config_map(namespace),
    ];
    out.extend(scraper(namespace, operator));
    out
}

/// A pod a PodMonitor would scrape, as `scrape_labels` needs it.
pub struct ScrapedPod<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub labels: &'a std::collections::BTreeMap<String, String>,
}

/// The target labels a PodMonitor's relabelings give `pod` (the copies and fixed values
/// `member_relabelings` and `operator_relabelings` use): how a scrape configuration without
/// prometheus-operator (tests/e2e_monitoring.rs) labels its targets like the PodMonitor would.
/// `None` when the monitor's selector does not select the pod.
pub fn scrape_labels(
    monitor: &Value,
    pod: &ScrapedPod,
) -> Option<std::collections::BTreeMap<String, String>> {
    let spec = &monitor["spec"];
    let selected = spec["selector"]["matchLabels"]
        .as_object()?
        .iter()
        .all(|(k, v)| pod.labels.get(k).map(String::as_str) == v.as_str());
    let ns_ok = spec["namespaceSelector"]["any"] == json!(true)
        || spec["namespaceSelector"]["matchNames"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n == pod.namespace));
    if !selected || !ns_ok {
        return None;
    }
    let meta = |source: &str| -> Option<String> {
        match source {
            "__meta_kubernetes_namespace" => Some(pod.namespace.to_string()),
            "__meta_kubernetes_pod_name" => Some(pod.name.to_string()),
            s => pod
                .labels
                .iter()
                .find(|(k, _)| meta_label(k) == s)
                .map(|(_, v)| v.clone()),
        }
    };
    let mut out = std::collections::BTreeMap::new();
    for r in spec["podMetricsEndpoints"][0]["relabelings"].as_array()? {
        let target = r["targetLabel"].as_str()?.to_string();
        let value = match (r["sourceLabels"].as_array(), r["replacement"].as_str()) {
            (Some(src), _) => src
                .iter()
                .filter_map(|s| s.as_str().and_then(meta))
                .collect::<Vec<_>>()
                .join(";"),
            (None, Some(fixed)) => fixed.to_string(),
            (None, None) => continue,
        };
        out.insert(target, value);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn every_alert_names_a_kubectl_etcd_command_and_a_known_severity() {
        let mut names = std::collections::BTreeSet::new();
        for a in ALERTS {
            assert!(names.insert(a.name), "{} twice", a.name);
            assert!(a.runbook.starts_with("kubectl etcd "), "{}", a.name);
            assert!(["warning", "critical"].contains(&a.severity), "{}", a.name);
            assert!(
                humantime::parse_duration(a.for_).is_ok(),
                "{}: {}",
                a.name,
                a.for_
            );
        }
    }

    #[test]
    fn the_docs_list_every_alert_with_its_command() {
        let page = include_str!("../../docs/src/monitoring.md");
        for a in ALERTS {
            let row = page
                .lines()
                .find(|l| l.starts_with(&format!("| {} |", a.name)))
                .unwrap_or_else(|| {
                    panic!(
                        "docs/src/monitoring.md's alert table has no row for {}",
                        a.name
                    )
                });
            let command = a
                .runbook
                .replace("{{ $labels.namespace }}", "NS")
                .replace("{{ $labels.name }}", "NAME");
            assert!(
                row.contains(&command),
                "docs/src/monitoring.md's row of {} should name `{command}`:\n{row}",
                a.name
            );
        }
    }

    #[test]
    fn the_for_override_reaches_every_rule_and_nothing_else() {
        let g = rule_groups(Some("5s"));
        let rules = g["groups"][0]["rules"].as_array().unwrap();
        assert_eq!(rules.len(), ALERTS.len());
        assert!(rules.iter().all(|r| r["for"] == "5s"));
        assert_eq!(rules[0]["expr"], ALERTS[0].expr);
        assert_eq!(
            rule_groups(None)["groups"][0]["rules"][0]["for"],
            ALERTS[0].for_
        );
    }

    #[test]
    fn the_member_monitor_labels_targets_like_the_operator_series() {
        let labels: BTreeMap<String, String> = crate::objects::selector_labels("demo")
            .into_iter()
            .chain([(LABEL_MANAGED_BY.to_string(), FIELD_MANAGER.to_string())])
            .collect();
        let pod = ScrapedPod {
            namespace: "team",
            name: "demo-1",
            labels: &labels,
        };
        let got = scrape_labels(&members_monitor("kubectl-etcd-system"), &pod).unwrap();
        assert_eq!(
            got,
            BTreeMap::from(
                [
                    ("job", MEMBERS_JOB),
                    ("member", "demo-1"),
                    ("name", "demo"),
                    ("namespace", "team")
                ]
                .map(|(k, v)| (k.to_string(), v.to_string()))
            )
        );
        assert!(
            scrape_labels(
                &operator_monitor("kubectl-etcd-system", install::NAME),
                &pod
            )
            .is_none(),
            "the operator's monitor selects no member"
        );
    }

    #[test]
    fn the_dashboard_has_one_target_per_query_and_the_configmap_its_label() {
        let d = dashboard();
        let panels = d["panels"].as_array().unwrap();
        assert_eq!(panels.len(), PANELS.len());
        let exprs: Vec<&str> = panels
            .iter()
            .flat_map(|p| p["targets"].as_array().unwrap())
            .map(|t| t["expr"].as_str().unwrap())
            .collect();
        let queries: Vec<&str> = PANELS
            .iter()
            .flat_map(|p| p.queries.iter().copied())
            .collect();
        assert_eq!(exprs, queries);
        let cm = dashboard_config_map("kubectl-etcd-system");
        assert_eq!(cm["metadata"]["labels"][DASHBOARD_LABEL], "1");
        let text = cm["data"]["kubectl-etcd.json"].as_str().unwrap();
        assert_eq!(serde_json::from_str::<Value>(text).unwrap(), d);
    }

    fn with_metrics(port: Option<i32>) -> crate::api::EtcdCluster {
        crate::fixtures::cluster("demo")
            .spec(|s| s.metrics = Some(crate::api::MetricsSpec { port }))
            .build()
    }

    #[test]
    fn a_new_cluster_gets_the_listener_and_a_silent_spec_keeps_its_template() {
        let mut spec = crate::fixtures::cluster("demo").build().spec;
        crate::model::new_cluster_defaults(&mut spec);
        assert_eq!(spec.metrics, Some(crate::api::MetricsSpec::default()));
        let silent = crate::fixtures::cluster("demo").desired();
        assert_eq!(silent.metrics_port, None);
        let c = &crate::objects::pod_template(&silent)
            .spec
            .unwrap()
            .containers[0];
        assert!(
            c.env
                .iter()
                .flatten()
                .all(|e| e.name != "ETCD_LISTEN_METRICS_URLS"),
            "an existing cluster's members are not restarted for the listener"
        );
        assert!(
            c.ports
                .iter()
                .flatten()
                .all(|p| p.name.as_deref() != Some(PORT_NAME))
        );
        let on = crate::model::validate(&with_metrics(None)).unwrap();
        assert_ne!(
            crate::objects::template_hash(&on),
            crate::objects::template_hash(&silent),
            "setting spec.metrics is a template change (members restart one at a time)"
        );
    }

    #[test]
    fn the_listener_is_plain_http_on_every_address_and_named_on_pod_and_peer_service() {
        let d = crate::model::validate(&with_metrics(None)).unwrap();
        let c = &crate::objects::pod_template(&d).spec.unwrap().containers[0];
        let env = c
            .env
            .iter()
            .flatten()
            .find(|e| e.name == "ETCD_LISTEN_METRICS_URLS")
            .unwrap();
        assert_eq!(env.value.as_deref(), Some("http://0.0.0.0:2381"));
        let port = c
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(PORT_NAME))
            .unwrap();
        assert_eq!(port.container_port, i32::from(MEMBER_METRICS_PORT));
        let svc = crate::objects::peer_service(&d).spec.unwrap();
        let sp = svc
            .ports
            .unwrap()
            .into_iter()
            .find(|p| p.name.as_deref() == Some(PORT_NAME))
            .unwrap();
        assert_eq!((sp.port, sp.protocol.as_deref()), (2381, Some("TCP")));
        let other = crate::model::validate(&with_metrics(Some(9379))).unwrap();
        assert_eq!(other.metrics_port, Some(9379));
        let silent = crate::fixtures::cluster("demo").desired();
        assert_eq!(
            crate::objects::peer_service(&silent)
                .spec
                .unwrap()
                .ports
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn the_listener_may_not_take_the_client_or_peer_port_nor_be_set_as_an_option() {
        for bad in [2379, 2380, 0, 70000] {
            let e = crate::model::validate(&with_metrics(Some(bad))).unwrap_err();
            assert!(e.to_string().contains("spec.metrics.port"), "{e}");
        }
        let e = crate::model::validate(
            &crate::fixtures::cluster("demo")
                .spec(|s| {
                    s.etcd
                        .options
                        .insert("listen-metrics-urls".into(), "http://0.0.0.0:2381".into());
                })
                .build(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("set spec.metrics instead"), "{e}");
    }

    #[test]
    fn a_template_change_applies_the_peer_service_and_network_policy_with_its_metrics_port() {
        use crate::engine::{Object, step_objects};
        let d = crate::model::validate(&with_metrics(None)).unwrap();
        let objs = step_objects(&d, &crate::plan::Step::UpdateTemplate { replicas: 3 });
        assert!(
            matches!(objs.as_slice(), [Object::Service(s), Object::NetworkPolicy(p), Object::StatefulSet(_)]
            if s.spec.as_ref().unwrap().ports.as_ref().unwrap().len() == 3
                && p.spec.as_ref().unwrap().ingress.as_ref().unwrap().len() == 3)
        );
    }

    #[test]
    fn the_manifests_are_deterministic() {
        assert_eq!(
            manifests("kubectl-etcd-system", install::NAME),
            manifests("kubectl-etcd-system", install::NAME)
        );
        let all = manifests("x", "op");
        let kinds: Vec<&str> = all.iter().map(|m| m["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "PodMonitor",
                "PodMonitor",
                "PrometheusRule",
                "ConfigMap",
                "ServiceAccount",
                "Secret",
                "ClusterRoleBinding"
            ]
        );
    }

    /// `/metrics` answers only a reviewed token (`operate --metrics-auth`): the operator's
    /// PodMonitor sends its scraper's, whose ServiceAccount is bound to the reader role.
    #[test]
    fn the_operator_monitor_scrapes_with_the_token_of_a_service_account_bound_to_the_reader() {
        let all = manifests("mon", "op");
        let monitor = &operator_monitor("mon", "op");
        let auth = &monitor["spec"]["podMetricsEndpoints"][0]["authorization"];
        assert_eq!(auth["type"], "Bearer");
        assert_eq!(auth["credentials"]["key"], "token");
        let by = |kind: &str| all.iter().find(|o| o["kind"] == kind).unwrap();
        let secret = by("Secret");
        assert_eq!(auth["credentials"]["name"], secret["metadata"]["name"]);
        assert_eq!(secret["metadata"]["namespace"], "mon");
        assert_eq!(secret["type"], "kubernetes.io/service-account-token");
        let account = by("ServiceAccount");
        assert_eq!(
            secret["metadata"]["annotations"]["kubernetes.io/service-account.name"],
            account["metadata"]["name"]
        );
        let binding = by("ClusterRoleBinding");
        assert_eq!(binding["roleRef"]["name"], "op-metrics-reader");
        assert_eq!(
            binding["subjects"],
            json!([{ "kind": "ServiceAccount", "name": "op-metrics-scraper", "namespace": "mon" }])
        );
        assert_eq!(monitor["spec"]["selector"]["matchLabels"][LABEL_NAME], "op");
    }
}
