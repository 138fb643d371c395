//! The workload binding: the operator watching every namespace holds no write, no Secret and no
//! pod creation cluster-wide (`objects::access::every_namespace`); before its first pass in a
//! namespace it binds its workload role there (`objects::install::workload_binding`), once per
//! namespace and process. The binding stays while the namespace does (one object; the
//! operator never deletes RoleBindings, and its admission policy refuses it to).
//!
//! An operator whose RBAC grants no RoleBindings (a namespaced install, whose Roles already hold
//! its rights, or an older install) is refused (403): it says so once per namespace and goes on
//! with the rights it has.

use std::collections::HashSet;
use std::sync::Mutex;

use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};

use crate::error::Error;
use crate::model::OperatorPods;
use crate::objects::FIELD_MANAGER;
use crate::objects::install::workload_binding;

pub(super) struct Bindings {
    client: Client,
    /// The operator's install (its namespace and name), when it runs in a pod; `None`: it binds
    /// nothing (run from a workstation, it acts with its user's rights).
    operator: Option<OperatorPods>,
    /// The namespaces bound (or refused) by this process.
    done: Mutex<HashSet<String>>,
}

impl Bindings {
    pub(super) fn new(client: Client, operator: Option<OperatorPods>) -> Bindings {
        Bindings {
            client,
            operator,
            done: Mutex::default(),
        }
    }

    fn first_time(&self, namespace: &str) -> bool {
        !self
            .done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(namespace)
    }

    fn mark(&self, namespace: &str) {
        self.done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(namespace.to_string());
    }

    /// Binds the workload role in `namespace` unless this process did already. An error (other
    /// than a refusal) fails the pass, which is tried again.
    pub(super) async fn ensure(&self, namespace: &str) -> Result<(), Error> {
        let Some(op) = &self.operator else {
            return Ok(());
        };
        if !self.first_time(namespace) {
            return Ok(());
        }
        let object = workload_binding(namespace, &op.namespace, &op.name);
        let api: Api<RoleBinding> = Api::namespaced(self.client.clone(), namespace);
        let pp = PatchParams::apply(FIELD_MANAGER).force();
        match api.patch(&op.name, &pp, &Patch::Apply(&object)).await {
            Ok(_) => {
                tracing::info!(%namespace, binding = %op.name, "bound the operator's workload role in the namespace");
                self.mark(namespace);
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 403 => {
                tracing::info!(%namespace, "not binding the operator's workload role here (its RBAC or admission policy refuses it: {}); acting with the rights it has", s.message);
                self.mark(namespace);
                Ok(())
            }
            Err(e) => Err(Error::kube("apply", "RoleBinding", namespace, &op.name, e)),
        }
    }
}
