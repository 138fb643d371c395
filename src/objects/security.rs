//! The Pod Security Standard `restricted`, as every pod the project creates wears it (pure: no
//! client). Members, restore pods and pvc agents run as [`UID`]:[`GID`] with the volume's group
//! set to [`GID`] (`fsGroup`), seccomp `RuntimeDefault`, every capability dropped, no privilege
//! escalation, a read-only root filesystem and no service-account token (none of them calls the
//! Kubernetes API). The operator's Deployment (`install`) wears the same.
//!
//! Data written by root (members before this standard, pvc:// backups written by a root agent) is
//! taken over through `fsGroup`: before the first container of a pod with the new context starts,
//! the kubelet gives the volume's files the group [`GID`] with group read and write (and the
//! set-group-id bit on directories, so what etcd writes next inherits the group).
//! `OnRootMismatch` does that walk once, while the volume's root lacks the group. Volume types
//! that ignore `fsGroup` (hostPath) need the same done by whoever provisions them (the testbed:
//! `tests/cluster/pv-fsgroup.sh`).

use k8s_openapi::api::core::v1::{
    Capabilities, PodSecurityContext, SeccompProfile, SecurityContext,
};

/// The user every container runs as: `nonroot` of distroless images (and of the project's own).
pub const UID: i64 = 65532;
/// The group every container runs as, and the group of every volume (`fsGroup`).
pub const GID: i64 = 65532;

/// The pod-level half of the standard: a fixed non-root user and group, the volumes' group, and
/// seccomp `RuntimeDefault`.
pub fn pod_context() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(UID),
        run_as_group: Some(GID),
        fs_group: Some(GID),
        fs_group_change_policy: Some("OnRootMismatch".into()),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The container-level half: no capabilities, no privilege escalation, the image read-only
/// (every process the project starts writes only into its volumes).
pub fn container_context() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            add: None,
        }),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        ..Default::default()
    }
}

/// What breaks the `restricted` standard (Kubernetes 1.34, baseline included) in a pod spec, and
/// the project's own rules beyond it (a read-only root filesystem; no service-account token unless
/// `needs_token`): one line per finding, naming the container. Empty: the pod is admitted in a
/// namespace enforcing `restricted`.
pub fn violations(spec: &k8s_openapi::api::core::v1::PodSpec, needs_token: bool) -> Vec<String> {
    let mut out = Vec::new();
    let pod = spec.security_context.clone().unwrap_or_default();
    if spec.host_network == Some(true) || spec.host_pid == Some(true) || spec.host_ipc == Some(true)
    {
        out.push("uses a host namespace".to_string());
    }
    for v in spec.volumes.iter().flatten() {
        let allowed = v.config_map.is_some()
            || v.csi.is_some()
            || v.downward_api.is_some()
            || v.empty_dir.is_some()
            || v.ephemeral.is_some()
            || v.persistent_volume_claim.is_some()
            || v.projected.is_some()
            || v.secret.is_some();
        if !allowed {
            out.push(format!("volume {} is of a type restricted forbids", v.name));
        }
    }
    if pod.run_as_user == Some(0) {
        out.push("the pod runs as uid 0".into());
    }
    if pod.sysctls.as_ref().is_some_and(|s| !s.is_empty()) {
        out.push("the pod sets sysctls".into());
    }
    let pod_seccomp = pod.seccomp_profile.as_ref().map(|p| p.type_.as_str());
    if pod_seccomp == Some("Unconfined") {
        out.push("the pod's seccomp profile is Unconfined".into());
    }
    if !needs_token && spec.automount_service_account_token != Some(false) {
        out.push("the pod mounts a service-account token it does not need".into());
    }
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers);
    for c in containers {
        let sc = c.security_context.clone().unwrap_or_default();
        let mut bad = |what: &str| out.push(format!("container {}: {what}", c.name));
        if sc.privileged == Some(true) {
            bad("privileged");
        }
        if sc.allow_privilege_escalation != Some(false) {
            bad("allowPrivilegeEscalation is not false");
        }
        if sc.run_as_non_root.or(pod.run_as_non_root) != Some(true) {
            bad("runAsNonRoot is not true");
        }
        if sc.run_as_user.or(pod.run_as_user).is_none_or(|u| u == 0) {
            bad("no fixed non-root uid");
        }
        if sc.run_as_group.or(pod.run_as_group).is_none_or(|g| g == 0) {
            bad("no fixed non-root gid");
        }
        let seccomp = sc
            .seccomp_profile
            .as_ref()
            .map(|p| p.type_.as_str())
            .or(pod_seccomp);
        if !matches!(seccomp, Some("RuntimeDefault" | "Localhost")) {
            bad("seccomp profile is not RuntimeDefault or Localhost");
        }
        let caps = sc.capabilities.clone().unwrap_or_default();
        if !caps.drop.iter().flatten().any(|c| c == "ALL") {
            bad("capabilities do not drop ALL");
        }
        if caps.add.iter().flatten().any(|c| c != "NET_BIND_SERVICE") {
            bad("adds a capability other than NET_BIND_SERVICE");
        }
        if sc.read_only_root_filesystem != Some(true) {
            bad("the root filesystem is writable");
        }
        if c.ports
            .iter()
            .flatten()
            .any(|p| p.host_port.is_some_and(|h| h != 0))
        {
            bad("uses a host port");
        }
        if sc.proc_mount.as_deref().is_some_and(|m| m != "Default") {
            bad("procMount is not Default");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects;
    use k8s_openapi::api::core::v1::PodSpec;

    /// Every pod builder of the project, under the variants that change its containers or
    /// volumes: (what, pod spec, whether it needs a service-account token).
    fn every_pod() -> Vec<(String, PodSpec, bool)> {
        let mut out = Vec::new();
        for (what, d) in [
            ("member", crate::fixtures::cluster("demo").desired()),
            (
                "member with defaults",
                crate::fixtures::cluster("demo")
                    .spec(crate::model::new_cluster_defaults)
                    .desired(),
            ),
            (
                "member of 3.4",
                crate::fixtures::cluster("demo").version("3.4.23").desired(),
            ),
            ("member with TLS", {
                let mut d = crate::fixtures::cluster("demo").desired();
                d.tls = crate::model::Tls {
                    client: Some(crate::model::ClientTls {
                        server_secret: "srv".into(),
                        client_secret: "cli".into(),
                    }),
                    peer_secret: Some("peer".into()),
                };
                d
            }),
            ("ephemeral member", {
                let mut d = crate::fixtures::cluster("demo").desired();
                d.storage = crate::model::Storage::Ephemeral;
                d
            }),
        ] {
            out.push((
                what.to_string(),
                objects::pod_template(&d).spec.unwrap(),
                false,
            ));
        }
        for url in [
            "s3://b/p/ns-demo-20261201T000000Z-r5.db.zst",
            "pvc://backups/etcd/ns-demo-20261201T000000Z-r5.db.zst",
        ] {
            for version in ["3.4.23", "3.6.15"] {
                let d = crate::fixtures::cluster("demo").version(version).desired();
                let r = crate::model::RestoreSource {
                    url: url.into(),
                    sha256: None,
                    credentials_secret: Some("creds".into()),
                    tools_image: "example.org/kubectl-etcd:1".into(),
                    nonce: None,
                    // An encrypted snapshot's key Secret is mounted too.
                    encryption: (version == "3.6.15").then(|| crate::archive::crypt::KeySecret {
                        name: "backup-key".into(),
                        key: "key".into(),
                    }),
                };
                out.push((
                    format!("restore pod from {url} ({version})"),
                    objects::restore::restore_pod(&d, &r, "tok").spec.unwrap(),
                    false,
                ));
            }
        }
        out.push((
            "pvc agent".into(),
            objects::pvc_agent::agent_pod("a", "ns", "backups", "img:1")
                .spec
                .unwrap(),
            false,
        ));
        let operator = objects::install::manifests("img:1", objects::install::NAMESPACE)
            .into_iter()
            .find(|o| o["kind"] == "Deployment")
            .unwrap();
        out.push((
            "operator".into(),
            serde_json::from_value(operator["spec"]["template"]["spec"].clone()).unwrap(),
            true,
        ));
        out
    }

    #[test]
    fn every_pod_the_project_creates_passes_the_restricted_standard() {
        let pods = every_pod();
        assert!(pods.len() >= 11);
        for (what, spec, needs_token) in pods {
            assert_eq!(
                violations(&spec, needs_token),
                Vec::<String>::new(),
                "{what}"
            );
        }
    }

    #[test]
    fn every_pod_with_a_volume_gives_it_the_pods_group() {
        for (what, spec, _) in every_pod() {
            let pod = spec.security_context.clone().unwrap();
            assert_eq!(
                (pod.run_as_user, pod.run_as_group),
                (Some(UID), Some(GID)),
                "{what}"
            );
            if spec
                .volumes
                .iter()
                .flatten()
                .any(|v| v.persistent_volume_claim.is_some())
            {
                assert_eq!(pod.fs_group, Some(GID), "{what}");
            }
        }
    }

    #[test]
    fn the_testbed_gives_hostpath_volumes_the_group_the_pods_run_with() {
        let script = include_str!("../../tests/cluster/pv-fsgroup.sh");
        assert!(
            script.contains(&format!("\nGID={GID}\n")),
            "pv-fsgroup.sh and GID differ"
        );
    }

    #[test]
    fn the_checker_finds_what_the_standard_forbids() {
        use k8s_openapi::api::core::v1::{Container, HostPathVolumeSource, Volume};
        let good = PodSpec {
            security_context: Some(pod_context()),
            automount_service_account_token: Some(false),
            containers: vec![Container {
                name: "c".into(),
                security_context: Some(container_context()),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(violations(&good, false).is_empty());
        type Break = fn(&mut PodSpec);
        let broken: [(&str, Break); 9] = [
            ("root", |s| {
                s.security_context.as_mut().unwrap().run_as_user = Some(0)
            }),
            ("no runAsNonRoot", |s| {
                s.security_context.as_mut().unwrap().run_as_non_root = None;
                s.containers[0]
                    .security_context
                    .as_mut()
                    .unwrap()
                    .run_as_non_root = None;
            }),
            ("no seccomp", |s| {
                s.security_context.as_mut().unwrap().seccomp_profile = None
            }),
            ("escalation", |s| {
                s.containers[0]
                    .security_context
                    .as_mut()
                    .unwrap()
                    .allow_privilege_escalation = None
            }),
            ("capabilities", |s| {
                s.containers[0]
                    .security_context
                    .as_mut()
                    .unwrap()
                    .capabilities = None
            }),
            ("added capability", |s| {
                s.containers[0]
                    .security_context
                    .as_mut()
                    .unwrap()
                    .capabilities
                    .as_mut()
                    .unwrap()
                    .add = Some(vec!["CHOWN".into()])
            }),
            ("writable root", |s| {
                s.containers[0]
                    .security_context
                    .as_mut()
                    .unwrap()
                    .read_only_root_filesystem = None
            }),
            ("token", |s| s.automount_service_account_token = None),
            ("hostPath", |s| {
                s.volumes = Some(vec![Volume {
                    name: "h".into(),
                    host_path: Some(HostPathVolumeSource {
                        path: "/".into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }])
            }),
        ];
        for (what, f) in broken {
            let mut s = good.clone();
            f(&mut s);
            assert!(!violations(&s, false).is_empty(), "{what} passed");
        }
    }
}
