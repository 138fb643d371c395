//! Helpers of the cluster-backed unit tests (`--features e2e`, against $KUBECONFIG).

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ObjectMeta, PostParams};

/// Creates namespace `name` for one test; the returned Api deletes it afterwards.
pub async fn create_namespace(client: &kube::Client, name: &str) -> Api<Namespace> {
    let nss: Api<Namespace> = Api::all(client.clone());
    let body = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    nss.create(&PostParams::default(), &body).await.unwrap();
    nss
}
