//! A restore drill's throwaway etcd (pure: no client): ONE pod, gone when the drill ends, and a
//! NetworkPolicy that admits nothing to it. Its steps are the restore pod's
//! (`objects::restore`), into an emptyDir instead of a member's claim:
//!
//! 1. init `fetch` (the tools image, `kubectl-etcd snapshot fetch`): download, decrypt,
//!    decompress, check etcd's hash, as every restore does;
//! 2. init `restore` (the cluster's etcd image): `snapshot restore`, without a revision bump, so
//!    the restored revision and `HashKV` are the snapshot's own;
//! 3. init `etcd`, a native sidecar (`restartPolicy: Always`): one member serving on 127.0.0.1
//!    only, with no Service;
//! 4. `read` (the tools image, `kubectl-etcd snapshot drill-read`): the revision, key count and
//!    `HashKV` of that member, written as JSON to its termination message; the pod then ends (a
//!    sidecar stops with the last main container).
//!
//! One pod rather than a StatefulSet, a claim and a Service: nothing of it outlives the pod,
//! nothing is reachable from outside it, and the figures come back in the pod's status.
//! Everything carries `keys::LABEL_DRILL_OF` and the cluster as owner: a drill deletes what an
//! earlier one left (a CLI killed mid-drill), the cluster's deletion deletes the rest, and the
//! pod stops itself after [`DEADLINE_SECONDS`].

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, Pod, PodSpec, Volume};
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicySpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::restore::{
    etcd_container, fetch_container, snapshot_restore, source_volumes, tools_container,
};
use crate::keys::{LABEL_DRILL, LABEL_DRILL_OF};
use crate::model::{Desired, RestoreSource};
use crate::objects;

/// The drill's member: its name and its only addresses (loopback: nothing outside the pod can
/// reach it, whatever the network does).
pub const MEMBER: &str = "drill";
pub const CLIENT_URL: &str = "http://127.0.0.1:2379";
pub const PEER_URL: &str = "http://127.0.0.1:2380";
/// The container that reads the figures (its termination message holds them).
pub const READ_CONTAINER: &str = "read";
/// Where the drill's fetch writes what it read (stored bytes, sha256) for `read`.
pub const FETCHED_FILE: &str = "/var/lib/etcd/restore/fetched.json";
/// How long a drill pod may run before Kubernetes stops it (a drill whose driver is gone).
pub const DEADLINE_SECONDS: i64 = 900;

const SUFFIX: &str = "-drill";

/// Name of the drill pod (and its NetworkPolicy) of the backup record `backup`.
pub fn pod_name(backup: &str) -> String {
    format!("{backup}{SUFFIX}")
}

/// The backup record whose drill pod (or NetworkPolicy) is `pod` (`pod_name`'s inverse).
pub fn backup_of(pod: &str) -> Option<&str> {
    pod.strip_suffix(SUFFIX)
}

/// A drill pod the engine starts (`spec.backup.drill`), labelled as the schedule's: a pass
/// finishes it. A `backup verify` pod is its CLI's to finish.
pub fn scheduled(mut p: Pod) -> Pod {
    p.metadata.labels.get_or_insert_with(BTreeMap::new).insert(
        crate::model::records::label::TRIGGER.into(),
        crate::model::records::label::TRIGGER_SCHEDULE.into(),
    );
    p
}

/// Whether the drill pod labelled `labels` is one the engine started (`scheduled`).
pub fn is_scheduled(labels: &BTreeMap<String, String>) -> bool {
    labels
        .get(crate::model::records::label::TRIGGER)
        .map(String::as_str)
        == Some(crate::model::records::label::TRIGGER_SCHEDULE)
}

/// Selector of every drill object of `cluster`.
pub fn selector(cluster: &str) -> String {
    format!("{LABEL_DRILL_OF}={cluster}")
}

fn labels(d: &Desired, pod: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_DRILL_OF.to_string(), d.name.clone()),
        (LABEL_DRILL.to_string(), pod.to_string()),
        (
            objects::LABEL_MANAGED_BY.to_string(),
            objects::FIELD_MANAGER.to_string(),
        ),
    ])
}

fn meta(d: &Desired, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(d.namespace.clone()),
        labels: Some(labels(d, name)),
        owner_references: (!d.uid.is_empty()).then(|| vec![objects::owner(d)]),
        ..Default::default()
    }
}

/// The NetworkPolicy of the drill pod `pod`: no ingress at all. Egress stays open: the fetch
/// reads the store (the member itself listens on loopback only).
pub fn network_policy(d: &Desired, pod: &str) -> NetworkPolicy {
    NetworkPolicy {
        metadata: meta(d, pod),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(LABEL_DRILL.to_string(), pod.to_string())])),
                ..Default::default()
            }),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(vec![]),
            ..Default::default()
        }),
    }
}

/// The drill pod `pod` restoring `r` with the cluster `d`'s etcd image (see the module doc).
pub fn pod(d: &Desired, r: &RestoreSource, pod: &str) -> Pod {
    let source_claim = match crate::archive::store::Location::parse(&r.url) {
        Ok(crate::archive::store::Location::Pvc { claim, .. }) => Some(claim),
        _ => None,
    };
    let (restore, env) = snapshot_restore(d.version, MEMBER, PEER_URL, MEMBER);
    let mut etcd = etcd_container(d, "etcd", serve_command(), vec![]);
    // A native sidecar: started before `read`, stopped once `read` ends.
    etcd.restart_policy = Some("Always".into());
    let read = tools_container(
        r,
        READ_CONTAINER,
        vec![
            "snapshot".into(),
            "drill-read".into(),
            "--endpoint".into(),
            CLIENT_URL.into(),
            "--fetched".into(),
            FETCHED_FILE.into(),
        ],
    );
    let mut fetch = fetch_container(r, source_claim.is_some());
    if let Some(args) = fetch.args.as_mut() {
        args.extend(["--report".into(), FETCHED_FILE.into()]);
    }
    let data = Volume {
        name: objects::DATA_VOLUME.into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Default::default()
    };
    Pod {
        metadata: meta(d, pod),
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            active_deadline_seconds: Some(DEADLINE_SECONDS),
            enable_service_links: Some(false),
            automount_service_account_token: Some(false),
            security_context: Some(super::security::pod_context()),
            init_containers: Some(vec![
                fetch,
                etcd_container(d, "restore", restore, env),
                etcd,
            ]),
            containers: vec![read],
            volumes: Some(source_volumes(data, source_claim, r)),
            node_selector: d.node_selector.clone(),
            tolerations: d.tolerations.clone(),
            image_pull_secrets: super::workload::pull_secret_refs(&d.image_pull_secrets),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The drill member's command: the restored data dir, loopback only.
fn serve_command() -> Vec<String> {
    [
        "/usr/local/bin/etcd",
        "--name",
        MEMBER,
        "--data-dir",
        &objects::data_dir(),
        "--listen-client-urls",
        CLIENT_URL,
        "--advertise-client-urls",
        CLIENT_URL,
        "--listen-peer-urls",
        PEER_URL,
        "--initial-advertise-peer-urls",
        PEER_URL,
        "--initial-cluster",
        &format!("{MEMBER}={PEER_URL}"),
    ]
    .map(String::from)
    .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired() -> Desired {
        let mut c = crate::api::EtcdCluster::new(
            "demo",
            crate::api::EtcdClusterSpec {
                replicas: 3,
                version: "3.6.5".into(),
                ..Default::default()
            },
        );
        c.metadata.namespace = Some("ns".into());
        c.metadata.uid = Some("u1".into());
        crate::model::validate(&c).unwrap()
    }

    fn source() -> RestoreSource {
        RestoreSource {
            url: "s3://b/p/ns-demo-x.db.zst".into(),
            sha256: None,
            credentials_secret: Some("s3".into()),
            tools_image: "example.org/kubectl-etcd:1".into(),
            nonce: None,
            encryption: None,
        }
    }

    #[test]
    fn the_drill_is_one_pod_restoring_without_a_bump_and_serving_on_loopback_only() {
        let d = desired();
        let p = pod(&d, &source(), "b1-drill");
        let spec = p.spec.clone().unwrap();
        let init = spec.init_containers.unwrap();
        let names: Vec<_> = init.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["fetch", "restore", "etcd"]);
        let restore = init[1].command.clone().unwrap();
        assert!(
            !restore.contains(&"--bump-revision".to_string()),
            "{restore:?}"
        );
        assert!(
            !restore.contains(&"--mark-compacted".to_string()),
            "{restore:?}"
        );
        assert_eq!(init[2].restart_policy.as_deref(), Some("Always"));
        let serve = init[2].command.clone().unwrap().join(" ");
        assert!(!serve.contains("0.0.0.0"), "{serve}");
        assert!(
            serve.contains("--listen-client-urls http://127.0.0.1:2379"),
            "{serve}"
        );
        assert_eq!(spec.containers[0].name, READ_CONTAINER);
        assert_eq!(spec.active_deadline_seconds, Some(DEADLINE_SECONDS));
        let data = &spec.volumes.unwrap()[0];
        assert!(data.empty_dir.is_some() && data.persistent_volume_claim.is_none());
        // Owned and labelled: the cluster's deletion and the next drill clean it up.
        assert_eq!(p.metadata.owner_references.unwrap()[0].uid, "u1");
        assert_eq!(
            p.metadata.labels.unwrap()[LABEL_DRILL_OF],
            "demo".to_string()
        );
        assert!(
            super::super::security::violations(p.spec.as_ref().unwrap(), false).is_empty(),
            "restricted"
        );
    }

    #[test]
    fn the_drill_pod_admits_nothing_in() {
        let np = network_policy(&desired(), "b1-drill");
        let spec = np.spec.unwrap();
        assert_eq!(spec.policy_types.unwrap(), ["Ingress"]);
        assert_eq!(spec.ingress.unwrap().len(), 0);
        assert_eq!(
            spec.pod_selector.unwrap().match_labels.unwrap()[LABEL_DRILL],
            "b1-drill".to_string()
        );
        assert_eq!(
            np.metadata.labels.unwrap()[LABEL_DRILL_OF],
            "demo".to_string()
        );
    }
}
