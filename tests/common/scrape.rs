//! Reading an operator's `/metrics` as Prometheus does (`operate --metrics-auth kubernetes`, the
//! default): with the bearer token of a ServiceAccount bound to the operator's metrics reader
//! ClusterRole (`keys::install::metrics_reader_role`).

use std::io::{Read, Write};
use std::time::Duration;

use super::*;

/// The raw answer (status line, headers, body) of `GET path` from `addr`, with `token` as a
/// bearer token when given.
pub fn http_get(addr: &str, path: &str, token: Option<&str>) -> String {
    let mut s = std::net::TcpStream::connect(addr)
        .unwrap_or_else(|e| panic!("the operator's metrics port {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// `IP:PORT` of the metrics port of the first pod of operator `name` in `ns` (the node reaches
/// pod IPs).
pub fn metrics_addr(ns: &str, name: &str) -> String {
    let ip = ok(kubectl(&[
        "-n",
        ns,
        "get",
        "pods",
        "-l",
        &format!("app.kubernetes.io/name={name}"),
        "-o",
        "jsonpath={.items[0].status.podIP}",
    ]));
    format!(
        "{}:{}",
        ip.stdout.trim(),
        kubectl_etcd::objects::install::METRICS_PORT
    )
}

/// A token of ServiceAccount `sa` of `ns` (made if missing), valid for half an hour.
pub fn token(ns: &str, sa: &str) -> String {
    let _ = kubectl(&["-n", ns, "create", "serviceaccount", sa]);
    let t = ok(kubectl(&[
        "-n",
        ns,
        "create",
        "token",
        sa,
        "--duration",
        "30m",
    ]));
    t.stdout.trim().to_string()
}

/// A ClusterRoleBinding `name` of ServiceAccount `sa` of `ns` to the ClusterRole `role`,
/// labelled `app.kubernetes.io/name=label` (whoever deletes by that label deletes it).
pub fn bind_cluster_role(name: &str, role: &str, ns: &str, sa: &str, label: &str) {
    let binding = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": { "name": name, "labels": { "app.kubernetes.io/name": label } },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
        "subjects": [{ "kind": "ServiceAccount", "name": sa, "namespace": ns }],
    });
    ok(kubectl_stdin(&["apply", "-f", "-"], &binding.to_string()));
}
