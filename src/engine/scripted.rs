//! `reconcile_once` against a scripted API server (tower-test, as kube's own tests do): the
//! decisions of observe/act/status that need no real cluster — deletion of an invalid spec, an
//! act error that still writes status, a steady state that writes nothing. Every request the
//! engine makes is recorded; a request the script does not know is answered 404 (reads) or 500
//! (writes), so an unexpected write shows up in the record and in the outcome.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};

use super::{Context, Dial, Mode, Outcome, reconcile_once};
use crate::api::{EtcdCluster, FINALIZER};
use crate::fixtures::cluster;
use crate::model::Desired;
use crate::objects::{self, access, config_key};

/// One request the engine made.
#[derive(Clone, Debug)]
pub(crate) struct Call {
    pub(crate) method: Method,
    pub(crate) path: String,
    /// The query string (`fieldManager=…&force=true`), empty when there is none.
    pub(crate) query: String,
    /// The body's content type (`application/apply-patch+yaml` for a server-side apply).
    pub(crate) content_type: String,
    pub(crate) body: Value,
}

impl Call {
    pub(crate) fn is_write(&self) -> bool {
        self.method != Method::GET
    }
}

/// Answers by method and path; records every call. Also used by the CLI's scripted tests (a
/// verb's Lease and writes).
pub(crate) struct Server {
    answers: BTreeMap<(Method, String), (StatusCode, Value)>,
    calls: Arc<Mutex<Vec<Call>>>,
    /// Unscripted writes succeed (the body echoed, deletes a Success status) instead of failing.
    permissive: bool,
}

impl Server {
    pub(crate) fn new() -> Server {
        Server {
            answers: BTreeMap::new(),
            calls: Arc::new(Mutex::new(Vec::new())),
            permissive: false,
        }
    }

    pub(crate) fn permissive(mut self) -> Server {
        self.permissive = true;
        self
    }

    pub(crate) fn on(
        mut self,
        method: Method,
        path: &str,
        status: StatusCode,
        body: Value,
    ) -> Server {
        self.answers
            .insert((method, path.to_string()), (status, body));
        self
    }

    /// The cluster as the status write reads it first (`apply::status_over`: a compare-and-swap
    /// on its status), and the status write answered with `c`.
    pub(crate) fn status_write_over(self, read: &EtcdCluster, c: &EtcdCluster) -> Server {
        self.on(
            Method::GET,
            CLUSTER_PATH,
            StatusCode::OK,
            serde_json::to_value(read).unwrap(),
        )
        .on(
            Method::PATCH,
            &format!("{CLUSTER_PATH}/status"),
            StatusCode::OK,
            serde_json::to_value(c).unwrap(),
        )
    }

    /// Starts serving; returns the engine context and the record of calls.
    pub(crate) fn start(self) -> (Context, Arc<Mutex<Vec<Call>>>) {
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let calls = self.calls.clone();
        tokio::spawn(async move {
            while let Some((request, respond)) = handle.next_request().await {
                let (parts, body) = request.into_parts();
                let bytes = body.collect_bytes().await.unwrap_or_default();
                let call = Call {
                    method: parts.method.clone(),
                    path: parts.uri.path().to_string(),
                    query: parts.uri.query().unwrap_or_default().to_string(),
                    content_type: parts
                        .headers
                        .get(http::header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string(),
                    body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                };
                let (status, body) = self
                    .answers
                    .get(&(call.method.clone(), call.path.clone()))
                    .cloned()
                    .unwrap_or_else(|| {
                        if call.is_write() && self.permissive {
                            (StatusCode::OK, success(&call))
                        } else if call.is_write() {
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
        let mut ctx = Context::new(Client::new(service, "ns"), Dial::PortForward);
        ctx.reach.connect_timeout = std::time::Duration::from_millis(200);
        (ctx, calls)
    }
}

/// What a permissive server answers a write: the object written, or a Success status.
fn success(call: &Call) -> Value {
    if call.method == Method::DELETE || call.body.is_null() {
        json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success" })
    } else {
        call.body.clone()
    }
}

/// The RBAC verb, API group and resource (with subresource) of a request path:
/// `/api/v1/namespaces/ns/pods/p/eviction` → ("create", "", "pods/eviction").
fn rbac_of(call: &Call) -> (&'static str, String, String) {
    let parts: Vec<&str> = call.path.trim_start_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", _version, rest @ ..] => (String::new(), rest),
        ["apis", group, _version, rest @ ..] => ((*group).to_string(), rest),
        _ => panic!("not an API path: {}", call.path),
    };
    let rest = match rest {
        ["namespaces", _ns, rest @ ..] => rest,
        rest => rest,
    };
    let (resource, named) = match rest {
        [resource] => ((*resource).to_string(), false),
        [resource, _name] => ((*resource).to_string(), true),
        [resource, _name, sub] => (format!("{resource}/{sub}"), true),
        _ => panic!("unexpected API path: {}", call.path),
    };
    let verb = match (&call.method, named) {
        (&Method::GET, true) => access::GET,
        (&Method::GET, false) => access::LIST,
        (&Method::POST, _) => access::CREATE,
        (&Method::PATCH, _) => access::PATCH,
        (&Method::PUT, _) => access::UPDATE,
        (&Method::DELETE, true) => access::DELETE,
        (&Method::DELETE, false) => access::DELETECOLLECTION,
        (m, _) => panic!("unexpected method {m} on {}", call.path),
    };
    (verb, group, resource)
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

pub(crate) const CLUSTER_PATH: &str =
    "/apis/etcd.kubectl-etcd.io/v1alpha1/namespaces/ns/etcdclusters/demo";
pub(crate) const BACKUPS_PATH: &str =
    "/apis/etcd.kubectl-etcd.io/v1alpha1/namespaces/ns/etcdbackups";

/// The writes among `calls`, in order.
pub(crate) fn writes(calls: &Mutex<Vec<Call>>) -> Vec<Call> {
    calls
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.is_write())
        .cloned()
        .collect()
}

/// The path of the Leases of namespace `ns`'s clusters (a CLI creates one there).
pub(crate) fn leases_path() -> String {
    "/apis/coordination.k8s.io/v1/namespaces/ns/leases".into()
}

/// The operator's namespace, where a CLI writes nothing (the cluster Leases' old place).
pub(crate) fn old_leases_path() -> String {
    format!(
        "/apis/coordination.k8s.io/v1/namespaces/{}/leases",
        crate::lease::NAMESPACE
    )
}

/// The path of ns/demo's engine Lease.
pub(crate) fn lease_path() -> String {
    format!(
        "{}/{}",
        leases_path(),
        crate::lease::cluster_lease("ns", "demo")
    )
}

/// ns/demo's engine Lease, held by `holder` (e.g. `operator/op-0`).
pub(crate) fn lease_held_by(holder: &str) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": crate::lease::cluster_lease("ns", "demo"),
                     "namespace": "ns", "resourceVersion": "1"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 60}
    })
}

/// ns/demo as `cluster` with an operator (`operator/op-0`) holding its engine Lease: a verb's
/// intent patch is answered with `cluster`, and every pass is left to the operator.
pub(crate) fn operator_holds_the_lease(d: &Desired, cluster: &EtcdCluster) -> Server {
    let cluster = serde_json::to_value(cluster).unwrap();
    formed_objects(d)
        .on(Method::GET, CLUSTER_PATH, StatusCode::OK, cluster.clone())
        .on(Method::PATCH, CLUSTER_PATH, StatusCode::OK, cluster)
        .on(
            Method::GET,
            &lease_path(),
            StatusCode::OK,
            lease_held_by("operator/op-0"),
        )
}

/// ns/demo as `cluster` with no operator: the Lease is free, and a verb's writes (its intent,
/// the Lease, the passes' status and objects) succeed.
pub(crate) fn without_an_operator(d: &Desired, cluster: &EtcdCluster) -> Server {
    let cluster = serde_json::to_value(cluster).unwrap();
    formed_objects(d)
        .on(Method::GET, CLUSTER_PATH, StatusCode::OK, cluster.clone())
        .on(Method::PATCH, CLUSTER_PATH, StatusCode::OK, cluster.clone())
        .on(
            Method::PATCH,
            &format!("{CLUSTER_PATH}/status"),
            StatusCode::OK,
            cluster,
        )
        .permissive()
}

/// Whether `call` names the CLI's field manager (`keys::MANAGER_CLI`).
pub(crate) fn as_the_cli(call: &Call) -> bool {
    let manager = format!("fieldManager={}", crate::keys::MANAGER_CLI);
    call.query.split('&').any(|q| q == manager)
}

/// A verb that deferred to an operator holding the Lease: it asked for the Lease, and its one
/// write is `intent`, a patch of ns/demo's spec as the CLI's field manager.
pub(crate) fn assert_only_the_intent_was_written(calls: &Mutex<Vec<Call>>, intent: &Value) {
    let w = writes(calls);
    assert_eq!(w.len(), 1, "only the intent is written: {w:#?}");
    assert_eq!(
        (&w[0].method, w[0].path.as_str()),
        (&Method::PATCH, CLUSTER_PATH)
    );
    assert_eq!(&w[0].body, intent);
    assert!(as_the_cli(&w[0]), "the intent is the CLI's: {:#?}", w[0]);
    assert!(
        calls.lock().unwrap().iter().any(|c| c.path == lease_path()),
        "the verb asked for the Lease"
    );
}

/// A verb with no operator: it wrote `intent` (as the CLI's field manager), then took the Lease
/// as a `cli/…` holder beside the cluster (and nowhere in the operator's namespace) before the
/// engine wrote anything; returns the writes.
pub(crate) fn assert_the_lease_was_taken_after(
    calls: &Mutex<Vec<Call>>,
    intent: &Value,
) -> Vec<Call> {
    let w = writes(calls);
    assert_eq!(&w[0].body, intent, "{w:#?}");
    assert!(as_the_cli(&w[0]), "the intent is the CLI's: {:#?}", w[0]);
    assert_eq!(
        (&w[1].method, w[1].path.clone()),
        (&Method::POST, leases_path())
    );
    assert!(
        w[1].body["spec"]["holderIdentity"]
            .as_str()
            .is_some_and(|h| h.starts_with("cli/")),
        "{:?}",
        w[1].body
    );
    assert!(
        !w.iter().any(|c| c.path.starts_with(&old_leases_path())),
        "nothing is written at the old place of the cluster Leases: {w:#?}"
    );
    w
}

/// A formed 3-member cluster's Kubernetes objects (no pods running: etcd is not asked, so the
/// pass needs no member connection).
pub(crate) fn formed_objects(d: &Desired) -> Server {
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
    pdb["apiVersion"] = "policy/v1".into();
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
            "/apis/policy/v1/namespaces/ns/poddisruptionbudgets/demo",
            StatusCode::OK,
            pdb,
        )
        .on(
            Method::GET,
            "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies/demo",
            StatusCode::OK,
            serde_json::to_value(objects::network_policy(d)).unwrap(),
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
        .on(
            Method::GET,
            BACKUPS_PATH,
            StatusCode::OK,
            json!({"apiVersion": "etcd.kubectl-etcd.io/v1alpha1", "kind": "EtcdBackupList", "metadata": {}, "items": []}),
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
    assert_eq!(
        calls[0].body,
        json!([
            {"op": "test", "path": "/metadata/finalizers/0", "value": FINALIZER},
            {"op": "remove", "path": "/metadata/finalizers/0"},
        ]),
        "ours is removed where it was read, no list is replaced"
    );
}

#[tokio::test]
async fn a_release_that_finds_the_finalizers_changed_is_tried_again_not_failed() {
    let mut c = demo();
    c.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::now(),
    ));
    c.metadata.finalizers = Some(vec!["other.io/keep".into(), FINALIZER.into()]);
    // What the API server answers a JSON patch whose `test` operation fails.
    let (code, body) = failure(
        StatusCode::UNPROCESSABLE_ENTITY,
        "the server rejected our request due to an error in our request",
    );
    let (ctx, calls) = Server::new()
        .on(Method::PATCH, CLUSTER_PATH, code, body)
        .start();
    let pass = reconcile_once(&ctx, &c, Mode::Act)
        .await
        .expect("a conflict is not an error");
    assert!(
        matches!(pass.outcome, Outcome::NotYet(_)),
        "{:?}",
        pass.outcome
    );
    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(calls[0].body[0]["path"], "/metadata/finalizers/1");
}

#[tokio::test]
async fn a_step_that_fails_still_writes_status_saying_so() {
    let c = demo();
    let d = crate::model::validate(&c).unwrap();
    // The member config is gone and nobody answers: the pass rebuilds it, and the API server
    // refuses the write.
    let (ctx, calls) = formed_without_config(&d)
        .on(
            Method::GET,
            CLUSTER_PATH,
            StatusCode::OK,
            serde_json::to_value(&c).unwrap(),
        )
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
async fn a_pass_given_the_cluster_before_its_deletion_makes_nothing() {
    let c = demo();
    let d = crate::model::validate(&c).unwrap();
    // The pass was given the cluster before `delete` (its trigger: the annotation `delete
    // --delete-data` writes first); meanwhile the garbage collector deleted the member config.
    let mut now = c.clone();
    now.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::UNIX_EPOCH,
    ));
    let (ctx, calls) = formed_without_config(&d)
        .on(
            Method::GET,
            CLUSTER_PATH,
            StatusCode::OK,
            serde_json::to_value(&now).unwrap(),
        )
        .start();
    let pass = reconcile_once(&ctx, &c, Mode::Act).await.unwrap();
    assert!(
        matches!(&pass.outcome, Outcome::NotYet(why) if why.contains("being deleted")),
        "{:?}",
        pass.outcome
    );
    let calls = calls.lock().unwrap().clone();
    assert!(
        calls.iter().all(|c| !c.is_write()),
        "nothing written: {calls:#?}"
    );
    // Deleted and made again under its name: the pass was planned for the old one.
    let mut again = c.clone();
    again.metadata.uid = Some("another-uid".into());
    let (ctx, calls) = formed_without_config(&d)
        .on(
            Method::GET,
            CLUSTER_PATH,
            StatusCode::OK,
            serde_json::to_value(&again).unwrap(),
        )
        .start();
    let pass = reconcile_once(&ctx, &c, Mode::Act).await.unwrap();
    assert!(
        matches!(&pass.outcome, Outcome::NotYet(why) if why.contains("made again")),
        "{:?}",
        pass.outcome
    );
    assert!(calls.lock().unwrap().iter().all(|c| !c.is_write()));
    // Gone: nothing made either.
    let (ctx, _) = formed_without_config(&d).start();
    let pass = reconcile_once(&ctx, &c, Mode::Act).await.unwrap();
    assert!(
        matches!(&pass.outcome, Outcome::NotYet(why) if why.contains("was deleted")),
        "{:?}",
        pass.outcome
    );
}

/// `formed_objects` without the member config: a pass rebuilds it (a change).
fn formed_without_config(d: &Desired) -> Server {
    let mut server = formed_objects(d);
    server.answers.remove(&(
        Method::GET,
        "/api/v1/namespaces/ns/configmaps/demo-members".into(),
    ));
    server
}

#[tokio::test]
async fn a_pass_whose_status_is_unchanged_writes_nothing() {
    let mut c = demo();
    let d = crate::model::validate(&c).unwrap();
    let (ctx, calls) = formed_objects(&d).status_write_over(&c, &c).start();
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

/// Issue 43 R10: a pass that read the cluster before another pass wrote its status writes
/// nothing (its status was derived from the older copy and would take back what the other
/// recorded); the next pass starts from the newer status.
#[tokio::test]
async fn a_pass_that_read_a_status_since_rewritten_writes_nothing() {
    let c = demo();
    let d = crate::model::validate(&c).unwrap();
    let mut newer = demo();
    newer.status = Some(crate::api::EtcdClusterStatus {
        message: Some("written by another pass".into()),
        ..Default::default()
    });
    let (ctx, calls) = formed_objects(&d).status_write_over(&newer, &c).start();
    reconcile_once(&ctx, &c, Mode::Act).await.unwrap();
    let calls = calls.lock().unwrap().clone();
    assert!(
        !calls.iter().any(|c| c.is_write()),
        "a stale pass wrote: {calls:#?}"
    );
}

#[tokio::test]
async fn the_engine_applies_the_whole_status_as_its_own_field_manager() {
    let c = demo();
    let d = crate::model::validate(&c).unwrap();
    let (mut ctx, calls) = formed_objects(&d)
        .status_write_over(&c, &c)
        .on(
            Method::PATCH,
            CLUSTER_PATH,
            StatusCode::OK,
            serde_json::to_value(&c).unwrap(),
        )
        .start();
    ctx.add_finalizer = true;
    let pass = reconcile_once(&ctx, &c, Mode::Act).await.unwrap();
    let calls = calls.lock().unwrap().clone();
    let writes: Vec<&Call> = calls.iter().filter(|c| c.is_write()).collect();
    assert_eq!(writes.len(), 2, "the finalizer and the status: {calls:#?}");
    let manager = format!("fieldManager={}", crate::keys::MANAGER_ENGINE);
    for w in &writes {
        assert!(w.query.split('&').any(|q| q == manager), "{w:#?}");
    }
    let status = writes.iter().find(|c| c.path.ends_with("/status")).unwrap();
    assert_eq!(status.content_type, "application/apply-patch+yaml");
    assert!(
        status.query.split('&').any(|q| q == "force=true"),
        "{status:#?}"
    );
    // The whole status, as the pass derived it (nulls left out: the apply owns what it names).
    assert_eq!(status.body["apiVersion"], "etcd.kubectl-etcd.io/v1alpha1");
    assert_eq!(status.body["kind"], "EtcdCluster");
    assert_eq!(
        status.body["status"],
        crate::apply::status_document::<EtcdCluster>(&pass.status).unwrap()["status"]
    );
    assert_eq!(status.body["status"]["message"], pass.step.to_string());
}

/// Every request of the engine — a pass's observation, status and finalizer writes, and every
/// step that needs no etcd member, carried out — is one the operator's RBAC table grants.
#[tokio::test]
async fn every_request_the_engine_makes_is_granted_by_the_operator_role() {
    use crate::model::Observed;
    use crate::plan::{ConfigChange, Restart, Step};

    let mut restored = demo();
    restored.spec.restore = Some(crate::api::RestoreSpec {
        source: "s3://b/p/ns-demo-20261201T000000Z-r5.db.zst".into(),
        ..Default::default()
    });
    let d = crate::model::validate(&restored).unwrap();
    let mut ready = objects::restore::restore_pod(&d, d.restore.as_ref().unwrap(), "t");
    ready.metadata.name = Some("demo-1".into());
    ready.status = Some(k8s_openapi::api::core::v1::PodStatus {
        conditions: Some(vec![k8s_openapi::api::core::v1::PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    let (ctx, calls) = formed_objects(&d)
        .on(
            Method::GET,
            "/api/v1/namespaces/ns/pods/demo-1",
            StatusCode::OK,
            serde_json::to_value(&ready).unwrap(),
        )
        .on(
            Method::GET,
            "/api/v1/namespaces/ns/pods/demo-2",
            StatusCode::OK,
            serde_json::to_value(&ready).unwrap(),
        )
        .on(
            Method::GET,
            CLUSTER_PATH,
            StatusCode::OK,
            serde_json::to_value(demo()).unwrap(),
        )
        .on(
            Method::PATCH,
            &format!("{CLUSTER_PATH}/status"),
            StatusCode::OK,
            serde_json::to_value(demo()).unwrap(),
        )
        .on(
            Method::PATCH,
            CLUSTER_PATH,
            StatusCode::OK,
            serde_json::to_value(demo()).unwrap(),
        )
        .permissive()
        .start();
    // Passes: observe and write status; a deleted cluster's finalizer let go.
    reconcile_once(&ctx, &demo(), Mode::Act).await.unwrap();
    let mut deleted = demo();
    deleted.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now()),
    );
    deleted.metadata.finalizers = Some(vec![FINALIZER.into()]);
    reconcile_once(&ctx, &deleted, Mode::Act).await.unwrap();
    // Steps: every one; those that need etcd wait without a request (no member answers).
    let o = Observed::default();
    let steps = [
        Step::Bootstrap { replicas: 3 },
        Step::ApplySupportingObjects,
        Step::WriteConfig {
            data: objects::bootstrap_config(&d, 3),
            why: ConfigChange::Bootstrapped,
        },
        Step::UpdateTemplate { replicas: 3 },
        Step::ResizeStatefulSet { from: 3, to: 2 },
        Step::RestoreSeed {
            url: "s3://b/p".into(),
        },
        Step::DeleteVolume {
            ordinal: 2,
            claim: objects::volume_name("demo", 2),
        },
        Step::RestartMember {
            ordinal: 1,
            pod: "demo-1".into(),
            why: Restart::NewTemplate,
        },
        Step::WipeMember {
            ordinal: 2,
            claim: Some(objects::volume_name("demo", 2)),
            pod: "demo-2".into(),
            force: false,
        },
        Step::DeleteRestorePod {
            pod: objects::restore::pod_name("demo"),
        },
        Step::AddLearner {
            ordinal: 3,
            name: "demo-3".into(),
            peer_url: objects::peer_url(&d, 3),
        },
        Step::GrowVolume {
            ordinal: 1,
            claim: objects::volume_name("demo", 1),
            from: "1Gi".into(),
            to: "2Gi".into(),
        },
        Step::Hibernate { from: 3 },
        Step::Idle,
    ];
    for step in &steps {
        super::act::act(&ctx, &d, &o, step)
            .await
            .unwrap_or_else(|e| panic!("{step}: {}", e.report()));
    }
    let calls = calls.lock().unwrap().clone();
    let table = access::watched_namespaces();
    let mut seen = std::collections::BTreeSet::new();
    for call in &calls {
        let (verb, group, resource) = rbac_of(call);
        assert!(
            table.iter().any(|a| a.grants(&group, &resource, verb)),
            "the operator's role lacks {verb} on {resource} in group {group:?} ({} {})",
            call.method,
            call.path
        );
        seen.insert((verb, resource));
    }
    // The record holds what the steps are for: applies, deletes, an eviction, status.
    for want in [
        (access::PATCH, "statefulsets"),
        (access::PATCH, "pods"),
        (access::DELETE, "persistentvolumeclaims"),
        (access::PATCH, "persistentvolumeclaims"),
        (access::DELETE, "pods"),
        (access::CREATE, "pods/eviction"),
        (access::PATCH, "etcdclusters/status"),
        (access::PATCH, "etcdclusters"),
        (access::LIST, "pods"),
    ] {
        assert!(
            seen.contains(&(want.0, want.1.to_string())),
            "no {want:?} in {seen:?}"
        );
    }
}
