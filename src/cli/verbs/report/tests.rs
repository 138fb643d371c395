use super::*;
use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, PodSpec, SecretKeySelector, SecretVolumeSource, Volume,
};

const SECRET_VALUE: &str = "s3cr3t-password-value";
const ENV_VALUE: &str = "env-value-that-could-be-a-token";

fn secret() -> Secret {
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("demo-auth".into()),
            annotations: Some(BTreeMap::from([(
                "kubectl.kubernetes.io/last-applied-configuration".to_string(),
                format!("{{\"stringData\":{{\"password\":\"{SECRET_VALUE}\"}}}}"),
            )])),
            ..Default::default()
        },
        type_: Some("kubernetes.io/basic-auth".into()),
        data: Some(BTreeMap::from([
            ("username".to_string(), ByteString(b"root".to_vec())),
            (
                "password".to_string(),
                ByteString(SECRET_VALUE.as_bytes().to_vec()),
            ),
        ])),
        ..Default::default()
    }
}

fn pod() -> Pod {
    Pod {
        metadata: kube::api::ObjectMeta {
            name: Some("demo-0".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "etcd".into(),
                env: Some(vec![
                    EnvVar {
                        name: "TOKEN".into(),
                        value: Some(ENV_VALUE.into()),
                        ..Default::default()
                    },
                    EnvVar {
                        name: "PASSWORD".into(),
                        value_from: Some(EnvVarSource {
                            secret_key_ref: Some(SecretKeySelector {
                                name: "demo-auth".into(),
                                key: "password".into(),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }],
            volumes: Some(vec![Volume {
                name: "tls-server".into(),
                secret: Some(SecretVolumeSource {
                    secret_name: Some("demo-server".into()),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The files of an uncompressed ustar archive, as (path, text).
fn untar(mut bytes: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while bytes.len() >= 512 && bytes[0] != 0 {
        let h = &bytes[..512];
        let field = |from: usize, len: usize| {
            String::from_utf8_lossy(&h[from..from + len])
                .trim_end_matches(['\0', ' '])
                .to_string()
        };
        let stored: u32 = u32::from_str_radix(field(148, 8).trim(), 8).unwrap();
        let sum: u32 = h
            .iter()
            .enumerate()
            .map(|(i, b)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    u32::from(*b)
                }
            })
            .sum();
        assert_eq!(stored, sum, "header checksum");
        let size = usize::from_str_radix(&field(124, 12), 8).unwrap();
        let (prefix, name) = (field(345, 155), field(0, 100));
        let path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let text = String::from_utf8_lossy(&bytes[512..512 + size]).to_string();
        out.push((path, text));
        bytes = &bytes[512 + size.div_ceil(512) * 512..];
    }
    out
}

fn meta() -> Meta {
    Meta {
        subject: "EtcdCluster default/demo".into(),
        created: "2026-05-01T10:00:00Z".into(),
        since: "1h".into(),
        seconds: 1.5,
    }
}

#[test]
fn no_secret_or_env_value_reaches_the_archive_but_names_and_keys_do() {
    let pods = vec![to_value(&pod())];
    let names = secret_names(&pods);
    assert_eq!(
        names,
        BTreeSet::from(["demo-auth".to_string(), "demo-server".to_string()])
    );
    let mut b = Bundle::default();
    b.yaml("pods.yaml", "the member pods", &pods);
    b.yaml("secrets.yaml", "Secrets", &[secret_summary(&secret())]);
    let files = untar(&b.tar("report", &meta(), 0));
    let all: String = files.iter().map(|(_, t)| t.as_str()).collect();
    assert!(!all.contains(SECRET_VALUE), "{all}");
    assert!(!all.contains(ENV_VALUE), "{all}");
    // Base64 of the value, as the API returns it, is not there either.
    assert!(!all.contains("czNjcjN0"), "{all}");
    let secrets = &files
        .iter()
        .find(|(p, _)| p == "report/secrets.yaml")
        .unwrap()
        .1;
    for word in [
        "demo-auth",
        "kubernetes.io/basic-auth",
        "username",
        "password",
    ] {
        assert!(secrets.contains(word), "{secrets}");
    }
    let pods = &files
        .iter()
        .find(|(p, _)| p == "report/pods.yaml")
        .unwrap()
        .1;
    assert!(pods.contains("TOKEN") && pods.contains(REDACTED), "{pods}");
    assert!(pods.contains("secretKeyRef"), "references stay: {pods}");
}

#[test]
fn the_archive_starts_with_its_index_listing_every_file_and_failed_read() {
    let mut b = Bundle::default();
    b.text("status.txt", "what status prints", "ok\n".into());
    b.text("logs/demo-0.log", "log of demo-0", "x".repeat(700));
    b.failed.push(Failed {
        what: "get Secret default/demo-auth".into(),
        error: "secrets \"demo-auth\" is forbidden".into(),
    });
    let files = untar(&b.tar("etcd-report-default-demo", &meta(), 1_777_000_000));
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "etcd-report-default-demo/REPORT.md",
            "etcd-report-default-demo/index.json",
            "etcd-report-default-demo/status.txt",
            "etcd-report-default-demo/logs/demo-0.log",
        ]
    );
    assert_eq!(files[3].1.len(), 700);
    let index: Value = serde_json::from_str(&files[1].1).unwrap();
    assert_eq!(index["files"][1]["path"], "logs/demo-0.log");
    assert_eq!(index["files"][1]["bytes"], 700);
    assert_eq!(index["failed"][0]["what"], "get Secret default/demo-auth");
    let readme = &files[0].1;
    assert!(
        readme.contains("| status.txt | 3 | what status prints |"),
        "{readme}"
    );
    assert!(
        readme.contains("- get Secret default/demo-auth: secrets \"demo-auth\" is forbidden"),
        "{readme}"
    );
}

#[test]
fn long_paths_use_the_ustar_prefix() {
    let long = format!(
        "{}/{}/{}.log",
        "r".repeat(60),
        "operator/logs",
        "p".repeat(60)
    );
    let files = untar(&tar(&[(long.clone(), b"x".as_slice())], 0));
    assert_eq!(files[0].0, long);
}

#[test]
fn the_top_directory_is_the_file_name_without_its_extension() {
    assert_eq!(top_dir(std::path::Path::new("/tmp/x/demo.tar.gz")), "demo");
    assert_eq!(top_dir(std::path::Path::new("demo.tgz")), "demo");
    assert_eq!(top_dir(std::path::Path::new("bundle")), "bundle");
}
