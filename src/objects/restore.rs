//! The one-shot pod that restores the seed member's volume from a backup (pure: no client). The
//! snapshot's fetch and verification are `archive::fetch`'s.
//!
//! The restore pod works with etcd images that ship no shell (3.5+ official images are distroless):
//! an init container of the project's own image (`kubectl-etcd snapshot fetch`) downloads (or, for
//! a pvc:// source, reads from the claim mounted read-only) and verifies the snapshot into the
//! seed's volume, a second init container of the cluster's own etcd
//! image runs `etcdutl snapshot restore` (3.4: `etcdctl snapshot restore`) of exactly the target
//! version, and a last container of the project's image removes the downloaded file.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, EnvFromSource, EnvVar, Pod, PodSpec, SecretEnvSource, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::model::{Desired, RestoreSource, Version};
use crate::objects;

/// Where the restore pod puts the downloaded snapshot, inside the seed's volume.
/// The restore pod's container that downloads and verifies the snapshot.
pub const FETCH_CONTAINER: &str = "fetch";
pub const SNAPSHOT_DIR: &str = "/var/lib/etcd/restore";
pub const SNAPSHOT_FILE: &str = "/var/lib/etcd/restore/snapshot.db";
/// Revisions a restored cluster jumps ahead by (etcd#16028): watchers relist instead of seeing
/// revisions go backwards. Far more than any cluster writes between a backup and a restore.
pub const BUMP_REVISION: u64 = 1_000_000_000;
/// Volume of the restore pod holding a pvc:// source's claim (read-only).
pub const SOURCE_VOLUME: &str = "source";
/// Volume of the restore pod holding an encrypted snapshot's key (its Secret, one key, read-only,
/// mounted into the fetch container only).
pub const KEY_VOLUME: &str = "backup-key";
/// Where the fetch container finds that key.
pub const KEY_DIR: &str = "/var/run/kubectl-etcd/backup-key";
pub const KEY_FILE: &str = "key";
/// The credentials Secret's `AWS_CA_BUNDLE`, mounted as a file (when the Secret has the key):
/// a bundle may be far larger than a variable may be (128 KiB: a whole system bundle is ~200 KiB,
/// and `exec` then fails with "argument list too long").
pub const CA_VOLUME: &str = "s3-ca";
pub const CA_DIR: &str = "/var/run/kubectl-etcd/s3-ca";
pub const CA_FILE: &str = "ca.pem";
pub use crate::keys::LABEL_RESTORE_OF;

/// Name of the seed's restore pod.
pub fn pod_name(cluster: &str) -> String {
    format!("{cluster}-restore")
}

/// The command that restores the snapshot into the seed's data dir, for the target version:
/// `etcdutl` from 3.5 on, `etcdctl` (API v3) on 3.4; `--bump-revision`/`--mark-compacted` where
/// the version has them (3.4.27+, 3.5.10+, 3.6); without the tool's second hash check.
pub fn restore_command(d: &Desired, token: &str) -> (Vec<String>, Vec<EnvVar>) {
    let v = d.version;
    let seed = objects::pod_name(&d.name, 0);
    let peer = objects::peer_url(d, 0);
    let (mut cmd, env) = snapshot_restore(v, &seed, &peer, token);
    if supports_bump_revision(v) {
        cmd.extend([
            "--bump-revision".into(),
            BUMP_REVISION.to_string(),
            "--mark-compacted".into(),
        ]);
    }
    (cmd, env)
}

/// `snapshot restore` of [`SNAPSHOT_FILE`] into the data dir as the one member `name` at
/// `peer`, by the tool of version `v`, without the tool's second hash check (the restore
/// pod's and the drill pod's shared part).
pub fn snapshot_restore(
    v: Version,
    name: &str,
    peer: &str,
    token: &str,
) -> (Vec<String>, Vec<EnvVar>) {
    let (tool, env) = if v.minor >= 5 {
        ("/usr/local/bin/etcdutl", vec![])
    } else {
        (
            "/usr/local/bin/etcdctl",
            vec![EnvVar {
                name: "ETCDCTL_API".into(),
                value: Some("3".into()),
                ..Default::default()
            }],
        )
    };
    let cmd: Vec<String> = vec![
        tool.into(),
        "snapshot".into(),
        "restore".into(),
        SNAPSHOT_FILE.into(),
        "--data-dir".into(),
        objects::data_dir(),
        "--name".into(),
        name.into(),
        "--initial-cluster".into(),
        format!("{name}={peer}"),
        "--initial-cluster-token".into(),
        token.into(),
        "--initial-advertise-peer-urls".into(),
        peer.into(),
        // The fetch container wrote only a snapshot whose etcd hash it checked while writing
        // (`archive::fetch`: one without the hash is refused), so the tool's own check would
        // read the whole file again for nothing (0.8 s of 2.2 s for 1.5 GiB, etcdutl 3.7.3 on
        // this machine). The trailing hash is cut off either way.
        "--skip-hash-check".into(),
    ];
    (cmd, env)
}

/// `snapshot restore --bump-revision --mark-compacted` exist from 3.4.27, 3.5.10 and 3.6.0.
pub fn supports_bump_revision(v: Version) -> bool {
    match v.minor {
        4 => v.patch >= 27,
        5 => v.patch >= 10,
        m => m >= 6,
    }
}

/// The one-shot pod that fills the seed's volume from the snapshot (see the module doc).
pub fn restore_pod(d: &Desired, r: &RestoreSource, token: &str) -> Pod {
    // A pvc:// source: its claim, read-only, where `snapshot fetch` looks for it.
    let source_claim = match crate::archive::store::Location::parse(&r.url) {
        Ok(crate::archive::store::Location::Pvc { claim, .. }) => Some(claim),
        _ => None,
    };
    let (command, env) = restore_command(d, token);
    let restore = etcd_container(d, "restore", command, env);
    let mut labels = BTreeMap::new();
    labels.insert(LABEL_RESTORE_OF.to_string(), d.name.clone());
    labels.insert(
        objects::LABEL_MANAGED_BY.to_string(),
        objects::FIELD_MANAGER.to_string(),
    );
    Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(&d.name)),
            namespace: Some(d.namespace.clone()),
            labels: Some(labels),
            owner_references: Some(vec![objects::owner(d)]),
            ..Default::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            enable_service_links: Some(false),
            // Nothing in it calls the Kubernetes API.
            automount_service_account_token: Some(false),
            security_context: Some(super::security::pod_context()),
            init_containers: Some(vec![fetch_container(r, source_claim.is_some()), restore]),
            containers: vec![tools_container(
                r,
                "finish",
                vec!["snapshot".into(), "discard".into(), SNAPSHOT_DIR.into()],
            )],
            volumes: Some(restore_volumes(d, source_claim, r)),
            node_selector: d.node_selector.clone(),
            tolerations: d.tolerations.clone(),
            affinity: d.affinity.clone(),
            image_pull_secrets: super::workload::pull_secret_refs(&d.image_pull_secrets),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The seed's data volume, where every container of the restore pod works.
/// A container `name` of the cluster's etcd image running `command` on the data volume (the
/// restore pod's `restore`, the drill pod's `restore` and `etcd`).
pub(super) fn etcd_container(
    d: &Desired,
    name: &str,
    command: Vec<String>,
    env: Vec<EnvVar>,
) -> Container {
    Container {
        name: name.into(),
        image: Some(d.image.clone()),
        image_pull_policy: Some("IfNotPresent".into()),
        command: Some(command),
        env: Some(env),
        volume_mounts: Some(vec![data_mount()]),
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        security_context: Some(super::security::container_context()),
        ..Default::default()
    }
}

pub(super) fn data_mount() -> VolumeMount {
    VolumeMount {
        name: objects::DATA_VOLUME.into(),
        mount_path: objects::DATA_DIR.into(),
        ..Default::default()
    }
}

/// A container running `kubectl-etcd ARGS` from the tools image, with the source's credentials.
pub(super) fn tools_container(r: &RestoreSource, name: &str, args: Vec<String>) -> Container {
    let creds = r.credentials_secret.as_ref().map(|s| {
        vec![EnvFromSource {
            secret_ref: Some(SecretEnvSource {
                name: s.clone(),
                optional: Some(false),
            }),
            ..Default::default()
        }]
    });
    let var = |name: &str, value: String| EnvVar {
        name: name.into(),
        value: Some(value),
        ..Default::default()
    };
    // A failure's message is the container's last words: keep them free of backtraces.
    let mut env = vec![var("RUST_BACKTRACE", "0".into())];
    let mut mounts = vec![data_mount()];
    if creds.is_some() {
        // The Secret's AWS_CA_BUNDLE comes as a file, never as the variable envFrom would make
        // of it (an explicit variable wins over envFrom's).
        env.extend([
            var(crate::archive::store::CA_BUNDLE, String::new()),
            var(
                crate::archive::store::CA_FILE_VARIABLE,
                format!("{CA_DIR}/{CA_FILE}"),
            ),
        ]);
        mounts.push(VolumeMount {
            name: CA_VOLUME.into(),
            mount_path: CA_DIR.into(),
            read_only: Some(true),
            ..Default::default()
        });
    }
    Container {
        name: name.into(),
        image: Some(r.tools_image.clone()),
        image_pull_policy: Some("IfNotPresent".into()),
        command: Some(vec!["/usr/local/bin/kubectl-etcd".into()]),
        args: Some(args),
        env_from: creds,
        env: Some(env),
        volume_mounts: Some(mounts),
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        // The seed's volume belongs to the members' group (`fsGroup`), as the pod's user is.
        security_context: Some(super::security::container_context()),
        ..Default::default()
    }
}

/// `snapshot fetch`: download and verify into the data volume (clearing what an interrupted
/// restore left), reading a pvc:// source from its claim mounted read-only.
pub(super) fn fetch_container(r: &RestoreSource, from_claim: bool) -> Container {
    let mut fetch = vec![
        "snapshot".into(),
        "fetch".into(),
        r.url.clone(),
        "--to".into(),
        SNAPSHOT_FILE.into(),
        "--clean".into(),
        objects::data_dir(),
    ];
    if let Some(sum) = &r.sha256 {
        fetch.extend(["--sha256".into(), sum.clone()]);
    }
    if r.encryption.is_some() {
        fetch.extend([
            "--encryption-key-file".into(),
            format!("{KEY_DIR}/{KEY_FILE}"),
        ]);
    }
    let mut fetch_container = tools_container(r, FETCH_CONTAINER, fetch);
    if from_claim {
        fetch_container
            .volume_mounts
            .get_or_insert_with(Vec::new)
            .push(VolumeMount {
                name: SOURCE_VOLUME.into(),
                mount_path: super::pvc_agent::MOUNT_DIR.into(),
                read_only: Some(true),
                ..Default::default()
            });
    }
    if r.encryption.is_some() {
        fetch_container
            .volume_mounts
            .get_or_insert_with(Vec::new)
            .push(VolumeMount {
                name: KEY_VOLUME.into(),
                mount_path: KEY_DIR.into(),
                read_only: Some(true),
                ..Default::default()
            });
    }
    fetch_container
}

/// The seed's claim, the source's claim (read-only) for a pvc:// source, the key Secret (its one
/// key, owner-readable) of an encrypted snapshot, and the credentials Secret's `AWS_CA_BUNDLE`
/// (optional: most Secrets have none).
fn restore_volumes(d: &Desired, source_claim: Option<String>, r: &RestoreSource) -> Vec<Volume> {
    let data = Volume {
        name: objects::DATA_VOLUME.into(),
        persistent_volume_claim: Some(
            k8s_openapi::api::core::v1::PersistentVolumeClaimVolumeSource {
                claim_name: objects::volume_name(&d.name, 0),
                read_only: Some(false),
            },
        ),
        ..Default::default()
    };
    source_volumes(data, source_claim, r)
}

/// The data volume `data` and what the fetch reads from: a pvc:// source's claim, the key of an
/// encrypted snapshot, the credentials Secret's CA bundle.
pub(super) fn source_volumes(
    data: Volume,
    source_claim: Option<String>,
    r: &RestoreSource,
) -> Vec<Volume> {
    let key = r.encryption.as_ref();
    let ca = r.credentials_secret.as_ref().map(|s| Volume {
        name: CA_VOLUME.into(),
        secret: Some(k8s_openapi::api::core::v1::SecretVolumeSource {
            secret_name: Some(s.clone()),
            items: Some(vec![k8s_openapi::api::core::v1::KeyToPath {
                key: crate::archive::store::CA_BUNDLE.into(),
                path: CA_FILE.into(),
                mode: Some(0o444),
            }]),
            default_mode: Some(0o444),
            optional: Some(true),
        }),
        ..Default::default()
    });
    std::iter::once(data)
        .chain(source_claim.map(|claim| Volume {
            name: SOURCE_VOLUME.into(),
            persistent_volume_claim: Some(
                k8s_openapi::api::core::v1::PersistentVolumeClaimVolumeSource {
                    claim_name: claim,
                    read_only: Some(true),
                },
            ),
            ..Default::default()
        }))
        .chain(key.map(|k| Volume {
            name: KEY_VOLUME.into(),
            secret: Some(k8s_openapi::api::core::v1::SecretVolumeSource {
                secret_name: Some(k.name.clone()),
                items: Some(vec![k8s_openapi::api::core::v1::KeyToPath {
                    key: k.key.clone(),
                    path: KEY_FILE.into(),
                    mode: Some(0o400),
                }]),
                default_mode: Some(0o400),
                optional: Some(false),
            }),
            ..Default::default()
        }))
        .chain(ca)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired(version: &str) -> Desired {
        let mut c = crate::api::EtcdCluster::new(
            "demo",
            crate::api::EtcdClusterSpec {
                replicas: 3,
                version: version.into(),
                restore: Some(crate::api::RestoreSpec {
                    source: "s3://b/p/ns-demo-20261201T000000Z-r5.db.zst".into(),
                    sha256: Some("ab".repeat(32)),
                    credentials_secret: Some("s3-creds".into()),
                    tools_image: Some("example.org/kubectl-etcd:1".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        );
        c.metadata.namespace = Some("ns".into());
        crate::model::validate(&c).unwrap()
    }

    #[test]
    fn revision_bumps_are_used_where_the_version_has_them() {
        let v = |s| Version::parse(s).unwrap();
        assert!(!supports_bump_revision(v("3.4.23")));
        assert!(supports_bump_revision(v("3.4.27")));
        assert!(!supports_bump_revision(v("3.5.9")));
        assert!(supports_bump_revision(v("3.5.16")));
        assert!(supports_bump_revision(v("3.6.0")));
    }

    #[test]
    fn etcd_3_4_restores_with_etcdctl_and_newer_with_etcdutl() {
        let (cmd, env) = restore_command(&desired("3.4.23"), "t");
        assert_eq!(cmd[0], "/usr/local/bin/etcdctl");
        assert_eq!(env[0].name, "ETCDCTL_API");
        assert!(!cmd.contains(&"--bump-revision".to_string()));
        assert!(cmd.contains(&"--skip-hash-check".to_string()));
        let (cmd, env) = restore_command(&desired("3.5.16"), "t");
        assert!(cmd.contains(&"--skip-hash-check".to_string()));
        assert_eq!(cmd[0], "/usr/local/bin/etcdutl");
        assert!(env.is_empty());
        assert!(cmd.contains(&"--mark-compacted".to_string()));
        let i = cmd.iter().position(|a| a == "--initial-cluster").unwrap();
        let d = desired("3.6.15");
        assert_eq!(cmd[i + 1], format!("demo-0={}", objects::peer_url(&d, 0)));
        // A cluster with peer TLS is restored with https peer URLs (the membership keeps them).
        let mut d = desired("3.6.15");
        d.tls.peer_secret = Some("peer".into());
        let (cmd, _) = restore_command(&d, "t");
        let i = cmd.iter().position(|a| a == "--initial-cluster").unwrap();
        assert!(cmd[i + 1].starts_with("demo-0=https://demo-0."), "{cmd:?}");
    }

    #[test]
    fn the_credentials_ca_bundle_comes_as_an_optional_file_never_as_a_variable() {
        let d = desired("3.5.16");
        let spec = restore_pod(&d, d.restore.as_ref().unwrap(), "tok")
            .spec
            .unwrap();
        let ca = spec
            .volumes
            .unwrap()
            .into_iter()
            .find(|v| v.name == CA_VOLUME)
            .unwrap()
            .secret
            .unwrap();
        assert_eq!(ca.secret_name.as_deref(), Some("s3-creds"));
        assert_eq!(
            ca.optional,
            Some(true),
            "most credentials Secrets have no bundle"
        );
        assert_eq!(ca.items.unwrap()[0].key, crate::archive::store::CA_BUNDLE);
        let fetch = &spec.init_containers.unwrap()[0];
        let env = fetch.env.clone().unwrap();
        let value = |name: &str| {
            env.iter()
                .find(|e| e.name == name)
                .and_then(|e| e.value.clone())
        };
        // Explicit variables win over envFrom's: the Secret's bundle never becomes one.
        assert_eq!(value(crate::archive::store::CA_BUNDLE).as_deref(), Some(""));
        assert_eq!(
            value(crate::archive::store::CA_FILE_VARIABLE),
            Some(format!("{CA_DIR}/{CA_FILE}"))
        );
        assert!(
            fetch
                .volume_mounts
                .as_ref()
                .unwrap()
                .iter()
                .any(|m| m.name == CA_VOLUME)
        );
        // Without a credentials Secret (a pvc:// source): nothing of it.
        let mut r = d.restore.clone().unwrap();
        r.credentials_secret = None;
        let spec = restore_pod(&d, &r, "tok").spec.unwrap();
        assert!(spec.volumes.unwrap().iter().all(|v| v.name != CA_VOLUME));
    }

    #[test]
    fn a_pvc_source_is_mounted_read_only_into_the_fetch_container_only() {
        let d = desired("3.5.16");
        let mut r = d.restore.clone().unwrap();
        r.url = "pvc://backups/etcd/ns-demo-20261201T000000Z-r5.db.zst".into();
        let spec = restore_pod(&d, &r, "tok").spec.unwrap();
        let vols = spec.volumes.unwrap();
        let source = vols.iter().find(|v| v.name == SOURCE_VOLUME).unwrap();
        let claim = source.persistent_volume_claim.as_ref().unwrap();
        assert_eq!(
            (claim.claim_name.as_str(), claim.read_only),
            ("backups", Some(true))
        );
        let inits = spec.init_containers.unwrap();
        let mount = inits[0]
            .volume_mounts
            .as_ref()
            .unwrap()
            .iter()
            .find(|m| m.name == SOURCE_VOLUME)
            .unwrap();
        assert_eq!(mount.mount_path, super::super::pvc_agent::MOUNT_DIR);
        assert_eq!(mount.read_only, Some(true));
        let mounts = |c: &Container| c.volume_mounts.clone().unwrap_or_default();
        assert!(mounts(&inits[1]).iter().all(|m| m.name != SOURCE_VOLUME));
        // An S3 source adds no volume but its credentials Secret's optional CA bundle.
        let s3 = restore_pod(&d, d.restore.as_ref().unwrap(), "tok");
        let names: Vec<String> = s3
            .spec
            .unwrap()
            .volumes
            .unwrap()
            .into_iter()
            .map(|v| v.name)
            .collect();
        assert_eq!(names, [objects::DATA_VOLUME, CA_VOLUME]);
    }

    #[test]
    fn an_encrypted_source_mounts_its_key_secret_into_the_fetch_container_only() {
        let d = desired("3.5.16");
        let mut r = d.restore.clone().unwrap();
        r.url.push_str(".enc");
        r.encryption = Some(crate::archive::crypt::KeySecret {
            name: "backup-key".into(),
            key: "k1".into(),
        });
        let spec = restore_pod(&d, &r, "tok").spec.unwrap();
        let vols = spec.volumes.unwrap();
        let key = vols.iter().find(|v| v.name == KEY_VOLUME).unwrap();
        let secret = key.secret.as_ref().unwrap();
        assert_eq!(secret.secret_name.as_deref(), Some("backup-key"));
        let item = &secret.items.as_ref().unwrap()[0];
        assert_eq!((item.key.as_str(), item.path.as_str()), ("k1", KEY_FILE));
        let inits = spec.init_containers.unwrap();
        let args = inits[0].args.clone().unwrap();
        let i = args
            .iter()
            .position(|a| a == "--encryption-key-file")
            .unwrap();
        assert_eq!(args[i + 1], format!("{KEY_DIR}/{KEY_FILE}"));
        let mounts = |c: &Container| c.volume_mounts.clone().unwrap_or_default();
        let m = mounts(&inits[0])
            .into_iter()
            .find(|m| m.name == KEY_VOLUME)
            .unwrap();
        assert_eq!((m.mount_path.as_str(), m.read_only), (KEY_DIR, Some(true)));
        assert!(mounts(&inits[1]).iter().all(|m| m.name != KEY_VOLUME));
        assert!(
            spec.containers
                .iter()
                .all(|c| mounts(c).iter().all(|m| m.name != KEY_VOLUME))
        );
        // Without encryption: no key, no flag.
        let plain = restore_pod(&d, d.restore.as_ref().unwrap(), "tok");
        let args = plain.spec.unwrap().init_containers.unwrap()[0]
            .args
            .clone()
            .unwrap();
        assert!(!args.contains(&"--encryption-key-file".to_string()));
    }

    #[test]
    fn the_restore_pod_fetches_restores_and_discards_on_the_seed_volume() {
        let d = desired("3.5.16");
        let pod = restore_pod(&d, d.restore.as_ref().unwrap(), "tok");
        let spec = pod.spec.unwrap();
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        let inits = spec.init_containers.unwrap();
        assert_eq!(
            inits[0].image.as_deref(),
            Some("example.org/kubectl-etcd:1")
        );
        let args = inits[0].args.clone().unwrap();
        assert!(args.contains(&"--sha256".to_string()));
        assert_eq!(
            inits[0].env_from.as_ref().unwrap()[0]
                .secret_ref
                .as_ref()
                .unwrap()
                .name,
            "s3-creds"
        );
        assert_eq!(inits[1].image.as_deref(), Some(d.image.as_str()));
        assert_eq!(
            spec.volumes.unwrap()[0]
                .persistent_volume_claim
                .as_ref()
                .unwrap()
                .claim_name,
            objects::volume_name("demo", 0)
        );
        // Not a member pod: the member selector must not match it.
        let labels = pod.metadata.labels.unwrap();
        assert!(
            !objects::selector_labels("demo")
                .iter()
                .all(|(k, v)| labels.get(k) == Some(v))
        );
    }
}
