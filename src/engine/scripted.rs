//! `reconcile_once` against a scripted API server (tower-test, as kube's own tests do): the
//! decisions of observe/act/status that need no real cluster — deletion of an invalid spec, an
//! act error that still writes status, a steady state that writes nothing. Every request the
//! engine makes is recorded; a request the script does not know is answered 404 (reads) or 500
//! (writes), so an unexpected write shows up in the record and in the outcome.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::api::ApiResource;
use kube::client::Body;
use serde_json::{Value, json};

use super::{Context, Dial, Mode, Outcome, reconcile_once};
use crate::api::{EtcdCluster, FINALIZER};
use crate::fixtures::cluster;
use crate::model::Desired;
use crate::objects::{self, config_key};

/// One request the engine made.
#[derive(Clone, Debug)]
struct Call {
    method: Method,
    path: String,
    body: Value,
}

impl Call {
    fn is_write(&self) -> bool {
        self.method != Method::GET
    }
}

/// Answers by method and path; records every call.
struct Server {
    answers: BTreeMap<(Method, String), (StatusCode, Value)>,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl Server {
    fn new() -> Server {
        Server {
            answers: BTreeMap::new(),
            calls: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn on(mut self, method: Method, path: &str, status: StatusCode, body: Value) -> Server {
        self.answers
            .insert((method, path.to_string()), (status, body));
        self
    }

    /// Starts serving; returns the engine context and the record of calls.
    fn start(self) -> (Context, Arc<Mutex<Vec<Call>>>) {
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let calls = self.calls.clone();
        tokio::spawn(async move {
            while let Some((request, respond)) = handle.next_request().await {
                let (parts, body) = request.into_parts();
                let bytes = body.collect_bytes().await.unwrap_or_default();
                let call = Call {
                    method: parts.method.clone(),
                    path: parts.uri.path().to_string(),
                    body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                };
                let (status, body) = self
                    .answers
                    .get(&(call.method.clone(), call.path.clone()))
                    .cloned()
                    .unwrap_or_else(|| {
                        if call.is_write() {
                            failure(StatusCode::INTERNAL_SERVER_ERROR, "not scripted")
                        } else {
                            failure(StatusCode::NOT_FOUND, "not found")
                        }
                    });
                self.calls.lock().unwrap().push(call);
                let response = Response::builder()
                    .status(status)
                    .header("content-type", "application/json")
                    .body(Body::from(serde_json::to_vec(&body).unwrap()))
                    .unwrap();
                respond.send_response(response);
            }
        });
        let ctx = Context {
            client: Client::new(service, "ns"),
            dial: Dial::PortForward,
            pdb: ApiResource {
                group: "policy".into(),
                version: "v1beta1".into(),
                api_version: "policy/v1beta1".into(),
                kind: "PodDisruptionBudget".into(),
                plural: "poddisruptionbudgets".into(),
            },
            connect_timeout: std::time::Duration::from_millis(200),
            add_finalizer: false,
        };
        (ctx, calls)
    }
}

fn failure(code: StatusCode, message: &str) -> (StatusCode, Value) {
    // kube's `get_opt` reads a missing object from the reason, as the API server words it.
    let reason = if code == StatusCode::NOT_FOUND {
        "NotFound"
    } else {
        "InternalError"
    };
    (
        code,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code.as_u16()
        }),
    )
}

const CLUSTER_PATH: &str = "/apis/etcd.kubectl-etcd.io/v1alpha1/namespaces/ns/etcdclusters/demo";

/// A formed 3-member cluster's Kubernetes objects (no pods running: etcd is not asked, so the
/// pass needs no member connection).
fn formed_objects(d: &Desired) -> Server {
    let mut sts = objects::statefulset(d, 3);
    sts.status = Some(k8s_openapi::api::apps::v1::StatefulSetStatus {
        replicas: 3,
        update_revision: Some("rev1".into()),
        ..Default::default()
    });
    let mut config = objects::bootstrap_config(d, 3);
    config.insert(
        config_key::INITIAL_CLUSTER_STATE.into(),
        objects::STATE_EXISTING.into(),
    );
    config.insert(
        config_key::INITIAL_CLUSTER.into(),
        objects::join_list(d, 0..3, |_| false),
    );
    let mut pdb = serde_json::to_value(objects::pdb(d)).unwrap();
    pdb["apiVersion"] = "policy/v1beta1".into();
    pdb["kind"] = "PodDisruptionBudget".into();
    let empty = |kind: &str| json!({"apiVersion": "v1", "kind": kind, "metadata": {}, "items": []});
    Server::new()
        .on(
            Method::GET,
            "/apis/apps/v1/namespaces/ns/statefulsets/demo",
            StatusCode::OK,
            serde_json::to_value(&sts).unwrap(),
        )
        .on(
            Method::GET,
            "/api/v1/namespaces/ns/services/demo",
            StatusCode::OK,
            serde_json::to_value(objects::peer_service(d)).unwrap(),
        )
        .on(
            Method::GET,
            "/api/v1/namespaces/ns/services/demo-client",
            StatusCode::OK,
            serde_json::to_value(objects::client_service(d)).unwrap(),
        )
        .on(
            Method::GET,
            "/apis/policy/v1beta1/namespaces/ns/poddisruptionbudgets/demo",
            StatusCode::OK,
            pdb,
        )
        .on(
            Method::GET,
            "/api/v1/namespaces/ns/configmaps/demo-members",
            StatusCode::OK,
            serde_json::to_value(objects::config_map(d, config)).unwrap(),
        )
        .on(
            Method::GET,
            "/api/v1/namespaces/ns/pods",
            StatusCode::OK,
            empty("PodList"),
        )
        .on(
            Method::GET,
            "/api/v1/namespaces/ns/persistentvolumeclaims",
            StatusCode::OK,
            empty("PersistentVolumeClaimList"),
        )
}

fn demo() -> EtcdCluster {
    cluster("demo").build()
}

#[tokio::test]
async fn a_cluster_being_deleted_is_released_whatever_its_spec_says() {
    let mut c = cluster("demo").version("3.9.0").build();
    c.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::now(),
    ));
    c.metadata.finalizers = Some(vec![FINALIZER.into()]);
    assert!(crate::model::validate(&c).is_err(), "the spec is invalid");
    let (ctx, calls) = Server::new()
        .on(Method::PATCH, CLUSTER_PATH, StatusCode::OK, {
            let mut released = serde_json::to_value(&c).unwrap();
            released["metadata"]["finalizers"] = json!([]);
            released
        })
        .start();
    let pass = reconcile_once(&ctx, &c, Mode::Act)
        .await
        .expect("deletion is not refused for an invalid spec");
    assert_eq!(pass.outcome, Outcome::Released);
    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(calls[0].method, Method::PATCH);
    assert_eq!(calls[0].path, CLUSTER_PATH);
    assert_eq!(calls[0].body["metadata"]["finalizers"], json!([]));
}

#[tokio::test]
async fn a_step_that_fails_still_writes_status_saying_so() {
    let c = demo();
    let d = crate::model::validate(&c).unwrap();
    // The member config is gone and nobody answers: the pass rebuilds it, and the API server
    // refuses the write.
    let mut server = formed_objects(&d);
    server.answers.remove(&(
        Method::GET,
        "/api/v1/namespaces/ns/configmaps/demo-members".into(),
    ));
    let (ctx, calls) = server
        .on(
            Method::PATCH,
            &format!("{CLUSTER_PATH}/status"),
            StatusCode::OK,
            serde_json::to_value(&c).unwrap(),
        )
        .start();
    let err = reconcile_once(&ctx, &c, Mode::Act)
        .await
        .expect_err("the config write fails");
    assert!(err.report().contains("ConfigMap"), "{}", err.report());
    let calls = calls.lock().unwrap().clone();
    let status = calls
        .iter()
        .find(|c| c.path.ends_with("/status"))
        .unwrap_or_else(|| panic!("no status write: {calls:#?}"));
    let message = status.body["status"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("repair the member config failed"),
        "{message}"
    );
}

#[tokio::test]
async fn a_pass_whose_status_is_unchanged_writes_nothing() {
    let mut c = demo();
    let d = crate::model::validate(&c).unwrap();
    let (ctx, calls) = formed_objects(&d)
        .on(
            Method::PATCH,
            &format!("{CLUSTER_PATH}/status"),
            StatusCode::OK,
            serde_json::to_value(&c).unwrap(),
        )
        .start();
    let first = reconcile_once(&ctx, &c, Mode::Act).await.unwrap();
    assert!(!first.step.is_change(), "{:?}", first.step);
    let writes = |calls: &Arc<Mutex<Vec<Call>>>| {
        calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.is_write())
            .count()
    };
    assert_eq!(writes(&calls), 1, "the first pass writes its status");
    // The next pass sees that status on the cluster: nothing changed, nothing is written.
    c.status = Some(first.status.clone());
    for _ in 0..3 {
        let again = reconcile_once(&ctx, &c, Mode::Act).await.unwrap();
        assert_eq!(again.status, first.status);
    }
    assert_eq!(writes(&calls), 1, "{:#?}", calls.lock().unwrap());
}
