//! The pods and claims of `pvc://` locations (pure: no client): the agent pod through which the
//! CLI reads and writes a claim (`backup::pvc`), and the claim a `file://` restore stages its
//! snapshot in. The restore pod mounts a pvc:// source where the agent does ([`MOUNT_DIR`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, EnvVar, PersistentVolumeClaim,
    PersistentVolumeClaimVolumeSource, Pod, PodSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::archive::store::Location;
use crate::objects;

/// Where an agent pod (and a restore pod's fetch container) mounts the claim of a pvc:// URL.
pub const MOUNT_DIR: &str = "/var/lib/kubectl-etcd/pvc";
/// The agent's own scratch directory (an emptyDir): the idle clock lives there.
pub const AGENT_RUN_DIR: &str = "/var/run/kubectl-etcd";
/// The file whose modification time says when the agent was last used.
pub const ALIVE_FILE: &str = "/var/run/kubectl-etcd/alive";
/// An agent with no operation for this long exits.
pub const AGENT_IDLE: Duration = Duration::from_secs(300);
pub use crate::keys::LABEL_AGENT_OF;
/// Name of an agent pod for `claim`: recognisable, unique per opening (`suffix`), ≤ 63 chars.
pub fn agent_pod_name(claim: &str, suffix: &str) -> String {
    let head: String = claim.chars().take(40).collect();
    format!("{}-pvc-agent-{suffix}", head.trim_end_matches(['-', '.']))
}

/// The agent pod: the tools image, the claim at [`MOUNT_DIR`], an emptyDir for the idle clock,
/// under the `restricted` standard (`objects::security`: the claim's files get the pod's group).
pub fn agent_pod(name: &str, ns: &str, claim: &str, image: &str) -> Pod {
    let mut labels = BTreeMap::from([(
        objects::LABEL_MANAGED_BY.to_string(),
        objects::FIELD_MANAGER.to_string(),
    )]);
    if claim.len() <= 63 {
        labels.insert(LABEL_AGENT_OF.to_string(), claim.to_string());
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            enable_service_links: Some(false),
            automount_service_account_token: Some(false),
            // The claim's files get the pod's group (`fsGroup`), those a root agent wrote too.
            security_context: Some(objects::security::pod_context()),
            termination_grace_period_seconds: Some(1),
            containers: vec![Container {
                name: "agent".into(),
                image: Some(image.into()),
                image_pull_policy: Some("IfNotPresent".into()),
                command: Some(vec!["/usr/local/bin/kubectl-etcd".into()]),
                args: Some(vec![
                    "snapshot".into(),
                    "agent".into(),
                    "hold".into(),
                    "--idle".into(),
                    AGENT_IDLE.as_secs().to_string(),
                ]),
                env: Some(vec![EnvVar {
                    name: "RUST_BACKTRACE".into(),
                    value: Some("0".into()),
                    ..Default::default()
                }]),
                volume_mounts: Some(vec![
                    VolumeMount {
                        name: "backups".into(),
                        mount_path: MOUNT_DIR.into(),
                        ..Default::default()
                    },
                    VolumeMount {
                        name: "run".into(),
                        mount_path: AGENT_RUN_DIR.into(),
                        ..Default::default()
                    },
                ]),
                security_context: Some(objects::security::container_context()),
                ..Default::default()
            }],
            volumes: Some(vec![
                Volume {
                    name: "backups".into(),
                    persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                        claim_name: claim.into(),
                        read_only: Some(false),
                    }),
                    ..Default::default()
                },
                Volume {
                    name: "run".into(),
                    empty_dir: Some(EmptyDirVolumeSource::default()),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Name of the claim a `file://` restore of cluster `name` stages its snapshot in.
pub fn staging_claim_name(cluster: &str) -> String {
    format!("{cluster}-restore-source")
}

/// Size of a staging claim for a snapshot of `bytes` stored bytes: a quarter more, rounded up
/// to whole MiB, at least 64 MiB (filesystem overhead; small volumes get rounded up anyway).
pub fn staging_size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    let want = bytes.saturating_add(bytes / 4);
    format!("{}Mi", want.div_ceil(MIB).max(64))
}

/// The claim a `file://` restore stages its snapshot in (labelled like the restore pod).
pub fn staging_claim(
    cluster: &str,
    ns: &str,
    bytes: u64,
    class: Option<&str>,
) -> PersistentVolumeClaim {
    use k8s_openapi::api::core::v1::{PersistentVolumeClaimSpec, VolumeResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(staging_claim_name(cluster)),
            namespace: Some(ns.into()),
            labels: Some(BTreeMap::from([
                (
                    objects::LABEL_MANAGED_BY.to_string(),
                    objects::FIELD_MANAGER.to_string(),
                ),
                (
                    objects::restore::LABEL_RESTORE_OF.to_string(),
                    cluster.to_string(),
                ),
            ])),
            ..Default::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            storage_class_name: class.map(str::to_string),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(staging_size(bytes)),
                )])),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The directory inside a pod that mounts the claim at [`MOUNT_DIR`] for `pvc://claim/path`.
pub fn mounted_dir(loc: &Location) -> Option<PathBuf> {
    match loc.pvc_as_file(Path::new(MOUNT_DIR))? {
        Location::File(p) => Some(p),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_pod_mounts_the_claim_and_owns_it_through_its_group() {
        let pod = agent_pod("backups-pvc-agent-abc", "ns", "backups", "img:1");
        let spec = pod.spec.unwrap();
        let c = &spec.containers[0];
        assert_eq!(c.image.as_deref(), Some("img:1"));
        assert_eq!(c.volume_mounts.as_ref().unwrap()[0].mount_path, MOUNT_DIR);
        let pod = spec.security_context.as_ref().unwrap();
        assert_eq!(pod.fs_group, Some(objects::security::GID));
        assert_ne!(pod.run_as_user, Some(0));
        let vols = spec.volumes.unwrap();
        assert_eq!(
            vols[0].persistent_volume_claim.as_ref().unwrap().claim_name,
            "backups"
        );
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        assert!(agent_pod_name(&"c".repeat(253), "abcdef").len() <= 63);
    }

    #[test]
    fn staging_claims_have_room_for_the_snapshot() {
        assert_eq!(staging_size(0), "64Mi");
        assert_eq!(staging_size(100 * 1024 * 1024), "125Mi");
        assert_eq!(staging_size(100 * 1024 * 1024 + 1), "126Mi");
        let loc = Location::parse("pvc://backups/etcd/daily").unwrap();
        assert_eq!(
            mounted_dir(&loc).unwrap(),
            PathBuf::from(MOUNT_DIR).join("etcd/daily")
        );
    }
}
