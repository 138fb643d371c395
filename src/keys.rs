//! Every label and annotation key the project puts on Kubernetes objects, the field managers it
//! writes them as, and the fixed names and ports that rooms below `objects` need too (the
//! members' ports, the default cluster domain, the Services' and the install's names, the
//! engine's etcd user), named once.
//!
//! Pure data, below `model` (which refuses a spec that sets the engine's pod labels) and `objects`
//! (which builds the objects carrying them); `objects`, `engine` and `api` re-export what they
//! used to declare, so the values live here only. (The labels of EtcdBackup records stay with
//! them in `model::records::label`.)

/// Kubernetes' recommended labels: the member selector (`NAME`, `INSTANCE`) and who manages them.
pub const LABEL_NAME: &str = "app.kubernetes.io/name";
pub const LABEL_INSTANCE: &str = "app.kubernetes.io/instance";
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Label a StatefulSet puts on its pods naming their revision.
pub const LABEL_REVISION: &str = "controller-revision-hash";
/// Label a StatefulSet puts on its pods naming the pod (a Service may select one member by it).
pub const LABEL_POD_NAME: &str = "statefulset.kubernetes.io/pod-name";
/// In the client Service's selector while `kubectl etcd recover` fences clients off (no pod
/// carries it, so the Service has no endpoints); the engine's next apply of the Service, once the
/// cluster is unpaused, takes it out again (`objects::fenced_client_service`).
pub const LABEL_FENCED: &str = "etcd.kubectl-etcd.io/fenced-by";
/// Kubernetes' well-known labels of a node's zone and name: what members spread over.
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// Label on the restore pod (not the member selector: the pod is no member).
pub const LABEL_RESTORE_OF: &str = "etcd.kubectl-etcd.io/restore-of";
/// Label on a restore drill's pod and NetworkPolicy: the cluster whose backup it drills (what a
/// later drill deletes leftovers by).
pub const LABEL_DRILL_OF: &str = "etcd.kubectl-etcd.io/drill-of";
/// Label naming one drill's pod (what its NetworkPolicy selects).
pub const LABEL_DRILL: &str = "etcd.kubectl-etcd.io/drill";
/// Label naming the claim a pvc agent pod serves.
pub const LABEL_AGENT_OF: &str = "etcd.kubectl-etcd.io/pvc-agent";

/// The label Kubernetes puts on every Namespace with its own name (what a NetworkPolicy selects a
/// namespace by).
pub const LABEL_NAMESPACE_NAME: &str = "kubernetes.io/metadata.name";
/// A namespace labelled `etcd.kubectl-etcd.io/refuse-operator=true` is refused to the operator by
/// its admission policy (`objects::admission`): it writes nothing there.
pub const LABEL_REFUSE_OPERATOR: &str = "etcd.kubectl-etcd.io/refuse-operator";

/// Pod labels the engine sets (its selector, the StatefulSet's own, `recover`'s fence):
/// `spec.podMetadata` may not.
pub const ENGINE_POD_LABELS: &[&str] = &[
    LABEL_NAME,
    LABEL_INSTANCE,
    LABEL_MANAGED_BY,
    LABEL_REVISION,
    LABEL_POD_NAME,
    LABEL_FENCED,
];

/// On a Service `kubectl etcd adopt --take-over-service` pointed at the engine's members: its
/// selector before (JSON).
pub const ANNOTATION_ADOPTED_SELECTOR: &str = "etcd.kubectl-etcd.io/adopted-selector";
/// On the StatefulSet: the hash of the pod template the engine applied.
pub const ANNOTATION_TEMPLATE_HASH: &str = "etcd.kubectl-etcd.io/template-hash";
/// On the managed CA's Secret: the `spec.tls.caGeneration` it answers (a rotation began for it).
pub const ANNOTATION_CA_GENERATION: &str = "etcd.kubectl-etcd.io/ca-generation";
/// On the member pod template once a CA rotation began: the CAs the members are to trust (by
/// fingerprint), so that a change of them restarts the members one at a time.
pub const ANNOTATION_TRUSTED_CA: &str = "etcd.kubectl-etcd.io/trusted-ca";
/// On the member pod template while TLS is switched on or off: the way and stage
/// (`model::TlsSwitch::marker`); the pods carry it too, so observe knows where each one listens.
pub const ANNOTATION_TLS_SWITCH: &str = "etcd.kubectl-etcd.io/tls-switch";
/// On the seed's claim of a restored cluster: `restoring`, then `restored` (`model::RestoreMark`).
pub const ANNOTATION_RESTORE: &str = "etcd.kubectl-etcd.io/restore";
/// On a member's claim: when the engine asked it to grow (RFC 3339; `Step::GrowVolume`), from
/// which the wait for its capacity is bounded (`plan::storage::EXPANSION_PATIENCE`).
pub const ANNOTATION_GROW_ASKED: &str = "etcd.kubectl-etcd.io/grow-asked";
/// Annotation the `delete --delete-data` verb sets: the finalizer then deletes member volumes too.
pub const ANNOTATION_DELETE_DATA: &str = "etcd.kubectl-etcd.io/delete-data";
/// Annotation `kubectl etcd upgrade` writes with `spec.version`: the URL of the pre-upgrade
/// snapshot, or `skipped` (`--skip-backup`). The engine copies it into `status.upgrade`.
pub const ANNOTATION_PRE_UPGRADE_BACKUP: &str = "etcd.kubectl-etcd.io/pre-upgrade-backup";
/// Annotation written with `spec.hibernate: true` (by `kubectl etcd hibernate`, or by the engine
/// once it took the snapshot): `<generation> <url>` of the verified snapshot taken before the
/// members stopped, or `<generation> skipped` (`--no-snapshot`).
pub const ANNOTATION_HIBERNATE_SNAPSHOT: &str = "etcd.kubectl-etcd.io/hibernate-snapshot";
/// On the EtcdBackup a recovery rebuilds from: how far the engine carried that recovery out,
/// `<nonce> <mark>` (`plan::recover::Mark`), written by act before or after each step it marks.
/// On the client Service when `spec.clientService` is set: the hash of what it asked for, so a
/// change (or its removal) is applied on the next pass and an unchanged one never rewrites it.
pub const ANNOTATION_CLIENT_SERVICE: &str = "etcd.kubectl-etcd.io/client-service";
/// On a managed server certificate's Secret issued with `spec.tls.serverNames`: the hash of
/// those names, so a change of them issues the certificate again.
pub const ANNOTATION_SERVER_NAMES: &str = "etcd.kubectl-etcd.io/server-names";
pub const ANNOTATION_RECOVERY: &str = "etcd.kubectl-etcd.io/recovery";

/// Field managers (`metadata.managedFields`): one per writer, so the API server records who wrote
/// each field, and a test can tell that each status has one writer (tests/e2e_status.rs).
/// The engine: every object it owns and `EtcdCluster.status` (server-side apply), and the
/// cluster's finalizer.
pub const MANAGER_ENGINE: &str = "kubectl-etcd";
/// Whoever takes a backup (the `backup` verb, a schedule, an upgrade): `EtcdBackup.status`.
pub const MANAGER_BACKUP: &str = "kubectl-etcd-backup";
/// The CLI's verbs: `EtcdCluster.spec` and the annotations that carry a verb's request.
pub const MANAGER_CLI: &str = "kubectl-etcd-cli";

/// The cluster DNS domain of a spec without `clusterDomain` (the kubelet's default).
pub const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";
pub const CLIENT_PORT: u16 = 2379;
pub const PEER_PORT: u16 = 2380;
/// The second peer port members listen on while TLS is switched on or off (`plan::tls_switch`):
/// etcd binds one listener per peer URL, so the old and the new scheme cannot share 2380 (the
/// client port can: etcd serves http and https on one listener).
pub const SWITCH_PEER_PORT: u16 = 2382;
/// The members' plaintext metrics listener (`--listen-metrics-urls`): `/metrics` and `/health`.
pub const MEMBER_METRICS_PORT: u16 = 2381;

/// The CN of the engine's client certificate of clusters made before it was per cluster (and
/// etcd's user that every authenticated cluster keeps, the role `root`'s first holder).
pub const LEGACY_ENGINE_USER: &str = "root";

/// How every cluster's own etcd user begins (`engine_user`).
pub const ENGINE_USER_PREFIX: &str = "kubectl-etcd:";

/// The longest CN the engine writes: X.509's upper bound, which cert-manager enforces.
pub const MAX_COMMON_NAME_BYTES: usize = 64;

/// The CN of the engine's client certificate for cluster `cluster` of `namespace`:
/// `kubectl-etcd:<namespace>:<cluster>`. etcd takes it as the user once its authentication is
/// on, and the engine makes that user with the role `root` (`plan::auth`): unique to the
/// cluster, so the engine's certificate of one cluster is no user of another that shares its CA
/// (a cert-manager ClusterIssuer). Neither name can hold a colon, so no two clusters share one;
/// past 64 bytes it is `kubectl-etcd:` and the first 40 hex digits of the SHA-256 of
/// `<namespace>/<cluster>` (one colon: never a short form). etcd 3.4–3.7 take any such name
/// (checked by hand with each: a user with colons, authenticated by certificate).
pub fn engine_user(namespace: &str, cluster: &str) -> String {
    let name = format!("{ENGINE_USER_PREFIX}{namespace}:{cluster}");
    if name.len() <= MAX_COMMON_NAME_BYTES {
        return name;
    }
    let sum = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{namespace}/{cluster}").as_bytes(),
    );
    let hex: String = sum.as_ref()[..20]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{ENGINE_USER_PREFIX}{hex}")
}

/// Headless Service: stable per-member DNS names for peers (publishes not-ready addresses).
pub fn peer_service_name(cluster: &str) -> String {
    cluster.to_string()
}
/// ClusterIP Service for clients.
pub fn client_service_name(cluster: &str) -> String {
    format!("{cluster}-client")
}
/// `demo-3` → 3 for cluster `demo`. Parsed as a number, never compared as a string.
pub fn ordinal_of_pod(cluster: &str, pod: &str) -> Option<u32> {
    let rest = pod.strip_prefix(cluster)?.strip_prefix('-')?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

/// The operator's install (`objects::install`, which re-exports these).
pub mod install {
    /// The operator's namespace unless installed elsewhere (`install --operator-namespace`).
    pub const NAMESPACE: &str = "kubectl-etcd-system";
    /// Name of the Deployment, ServiceAccount, roles and bindings.
    pub const NAME: &str = "kubectl-etcd-operator";

    /// The leader-election Lease of operator install `operator` (its name, the chart's `name`),
    /// in the operator's own namespace: replicas of one install share it, and installs elect
    /// apart.
    pub fn leader_lease(operator: &str) -> String {
        format!("{operator}-leader")
    }

    /// The ClusterRole of what operator install `operator`, watching every namespace, holds in
    /// a namespace where it serves a cluster (`objects::access::workload`), bound there by a
    /// RoleBinding named `operator` that the operator writes (`objects::install::workload_binding`).
    pub fn workload_role(operator: &str) -> String {
        format!("{operator}-workload")
    }

    /// The operator's metrics URL (a non-resource URL to RBAC) and the verb a read of it is
    /// authorized as.
    pub const METRICS_PATH: &str = "/metrics";
    pub const METRICS_VERB: &str = "get";

    /// The ClusterRole that lets a user read operator install `operator`'s `/metrics` (the
    /// non-resource URL, `get`: what `operate::metrics::auth` asks a SubjectAccessReview).
    pub fn metrics_reader_role(operator: &str) -> String {
        format!("{operator}-metrics-reader")
    }

    /// The ServiceAccount (and its token Secret and ClusterRoleBinding to `metrics_reader_role`)
    /// whose token the monitoring pack's PodMonitor scrapes the operator with.
    pub fn metrics_scraper(operator: &str) -> String {
        format!("{operator}-metrics-scraper")
    }

    /// The username of operator install `operator`'s ServiceAccount in `namespace` (what its
    /// admission policy matches).
    pub fn service_account_user(namespace: &str, operator: &str) -> String {
        format!("system:serviceaccount:{namespace}:{operator}")
    }
}

/// What every cluster's engine Lease is named after (`lease::cluster_lease`):
/// `etcdcluster.<namespace>.<name>`.
pub const CLUSTER_LEASE_PREFIX: &str = "etcdcluster.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_user_names_its_cluster_and_fits_a_common_name() {
        assert_eq!(engine_user("team-a", "demo"), "kubectl-etcd:team-a:demo");
        assert_ne!(engine_user("a", "bc"), engine_user("ab", "c"));
        // The longest names Kubernetes allows: hashed, within 64 bytes, still one per cluster.
        let ns = "n".repeat(63);
        let long = engine_user(&ns, &"c".repeat(63));
        assert!(long.len() <= MAX_COMMON_NAME_BYTES, "{long}");
        assert_eq!(long.matches(':').count(), 1, "{long}");
        assert_ne!(long, engine_user(&ns, &"d".repeat(63)));
        assert_ne!(engine_user("team-a", "demo"), LEGACY_ENGINE_USER);
    }
}
