//! The one fixture builder of the unit tests: `cluster("demo").replicas(5).desired()`.
//!
//! Every test that needs a cluster, its spec or its validated `Desired` starts here, so planner,
//! model, objects, act and operate tests describe the same cluster the same way.

use crate::api::{EtcdCluster, EtcdClusterSpec};
use crate::model::{self, Desired};

/// An EtcdCluster under construction: namespace `ns`, uid `1234abcd-ef`, generation 7,
/// 3 replicas of etcd 3.5.16, plain http (`spec.tls.mode: none`: a spec without a mode gets
/// managed TLS at birth, `model::unset_tls_mode`) unless told otherwise.
pub struct ClusterFixture(EtcdCluster);

pub fn cluster(name: &str) -> ClusterFixture {
    let mut c = EtcdCluster::new(
        name,
        EtcdClusterSpec {
            replicas: 3,
            version: "3.5.16".into(),
            tls: Some(crate::api::TlsSpec {
                mode: Some("none".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    c.metadata.namespace = Some("ns".into());
    c.metadata.uid = Some("1234abcd-ef".into());
    c.metadata.generation = Some(7);
    ClusterFixture(c)
}

impl ClusterFixture {
    pub fn replicas(mut self, n: i32) -> Self {
        self.0.spec.replicas = n;
        self
    }
    pub fn version(mut self, v: &str) -> Self {
        self.0.spec.version = v.into();
        self
    }
    /// Any other change to the spec.
    pub fn spec(mut self, f: impl FnOnce(&mut EtcdClusterSpec)) -> Self {
        f(&mut self.0.spec);
        self
    }
    /// Status as a driver reports a converged cluster: every condition at the spec's generation
    /// (Ready, nothing in progress, not degraded).
    pub fn converged(mut self) -> Self {
        use crate::api::condition::*;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
        let g = self.0.metadata.generation;
        let cond = |type_: &str, status: &str| Condition {
            type_: type_.into(),
            status: status.into(),
            reason: "AsDesired".into(),
            message: String::new(),
            observed_generation: g,
            last_transition_time: Time(jiff::Timestamp::UNIX_EPOCH),
        };
        self.0.status = Some(crate::api::EtcdClusterStatus {
            observed_generation: g,
            conditions: vec![
                cond(READY, "True"),
                cond(SCALING, "False"),
                cond(UPGRADING, "False"),
                cond(RECOVERING, "False"),
                cond(DEGRADED, "False"),
                cond(MAINTAINING, "False"),
            ],
            ..Default::default()
        });
        self
    }
    /// `spec.tls.mode: certManager` with the Issuer `etcd-ca` of the cluster's namespace.
    pub fn cert_manager(self) -> Self {
        self.spec(|s| {
            s.tls = Some(crate::api::TlsSpec {
                mode: Some("certManager".into()),
                issuer_ref: Some(crate::api::IssuerRef {
                    name: "etcd-ca".into(),
                    ..Default::default()
                }),
                ..Default::default()
            })
        })
    }
    pub fn build(self) -> EtcdCluster {
        self.0
    }
    /// The validated spec; panics when the fixture is invalid (use `build` + `validate` to test that).
    pub fn desired(self) -> Desired {
        model::validate(&self.0).expect("the fixture is a valid cluster")
    }
}

/// The Rust sources under `src/<dir>` (`""`: all of `src`), as (path relative to `src`, text):
/// for the tests that hold a rule of the layout (who writes a status, who reaches `backup`).
pub fn sources(dir: &str) -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, into: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, into);
            } else if path.extension().is_some_and(|e| e == "rs") {
                into.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&root.join(dir), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let rel = f
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (rel, std::fs::read_to_string(&f).unwrap())
        })
        .collect()
}
