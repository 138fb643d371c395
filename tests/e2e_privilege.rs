//! End-to-end: the operator's own least privilege (issue 42). The objects of `kubectl etcd
//! install --operator` for every namespace (the ClusterRole of reads and bindings, the workload
//! ClusterRole, the lease Role, the admission policy), installed under a name of this test's and
//! checked as the operator's ServiceAccount (`kubectl --as`): it may not read or write Secrets,
//! create pods or write Leases in `kube-system`; the admission policy refuses its writes there
//! (even when RBAC would allow them), in a namespace labelled to refuse it, and any Secret, Lease
//! or RoleBinding not of the engine's shapes; the in-cluster operator binds its workload role in a
//! namespace where it serves a cluster, and serves it. The admission policy on EtcdClusters
//! (issue 42 item 6) holds a tenant with namespace `edit` to the operator's etcd option and
//! image prefix allow lists.
//!
//! Shares the testbed: the Deployment runs with `--watch-namespace` limited to this test's
//! namespace (the RBAC and the policy are those of the every-namespace install), so this file runs
//! in the parallel lanes (tests/lanes.sh).
#![cfg(feature = "e2e")]
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use std::time::Duration;

use common::operator::{Installed, operator_image};
use common::*;
use kubectl_etcd::keys::install::{leader_lease, workload_role};
use kubectl_etcd::keys::{LABEL_REFUSE_OPERATOR, install::service_account_user};
use kubectl_etcd::objects::admission::spec::{self, Allowed};
use kubectl_etcd::objects::install;
use serde_json::{Value, json};

/// `kubectl --as USER ARGS…` with `input` on stdin.
fn as_user(user: &str, args: &[&str], input: &str) -> Run {
    let mut all = vec!["--as", user];
    all.extend_from_slice(args);
    kubectl_stdin(&all, input)
}

/// What `kubectl auth can-i` says for `user`.
fn can_i(user: &str, ns: &str, verb: &str, what: &str) -> String {
    kubectl(&["auth", "can-i", "--as", user, "-n", ns, verb, what])
        .stdout
        .trim()
        .to_string()
}

fn secret(ns: &str, name: &str, ty: &str, labelled: bool) -> String {
    let mut s = json!({
        "apiVersion": "v1", "kind": "Secret", "type": ty,
        "metadata": { "name": name, "namespace": ns },
        "data": { "ca.crt": "", "ca.key": "" },
    });
    if labelled {
        s["metadata"]["labels"] = json!({ "app.kubernetes.io/managed-by": "kubectl-etcd" });
    }
    s.to_string()
}

fn lease(ns: &str, name: &str) -> String {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": { "name": name, "namespace": ns },
    })
    .to_string()
}

/// A server-side dry-run create of `object` as `user`: `Ok` admitted, `Err(stderr)` refused.
fn try_create(user: &str, object: &str) -> Result<(), String> {
    let r = as_user(
        user,
        &["create", "--dry-run=server", "-o", "name", "-f", "-"],
        object,
    );
    if r.code == 0 { Ok(()) } else { Err(r.stderr) }
}

#[test]
fn the_operator_may_not_touch_kube_system_and_its_admission_policy_admits_only_the_engines_writes()
{
    install_crd();
    let op = Ns::new("priv-op");
    let tenant = Ns::new("priv-t");
    let refused = Ns::new("priv-no");
    let name = format!("ke-{}", op.0);
    let user = service_account_user(&op.0, &name);
    let _installed = Installed::named(&op.0);
    // The every-namespace install, under this test's name, its operator watching the tenant's
    // namespace only.
    let items: Vec<Value> = install::manifests(&operator_image(), &op.0)
        .into_iter()
        .filter(|o| o["kind"] != "Namespace")
        .map(|mut o| {
            if o["kind"] == "Deployment" {
                o["spec"]["template"]["spec"]["containers"][0]["args"] =
                    json!(["operate", "--watch-namespace", tenant.0]);
            }
            // The policy on EtcdClusters holds the tenant's namespace alone, like the operator
            // (every namespace's would hold the other tests' clusters on the shared testbed).
            if o["kind"] == "ValidatingAdmissionPolicyBinding"
                && o["metadata"]["name"] == spec::policy_name(install::NAME)
            {
                o["spec"]["matchResources"] = json!({ "namespaceSelector": { "matchLabels": {
                    "kubernetes.io/metadata.name": tenant.0 } } });
            }
            o
        })
        .collect();
    let text = serde_json::to_string(&json!({"apiVersion": "v1", "kind": "List", "items": items}))
        .unwrap()
        .replace(install::NAME, &name);
    ok(kubectl_stdin(&["apply", "-f", "-"], &text));

    // RBAC: nothing of Secrets, pods or Leases in kube-system (nor in the tenant's namespace
    // before the operator serves a cluster there).
    for ns in ["kube-system", tenant.0.as_str()] {
        for (verb, what) in [
            ("create", "secrets"),
            ("get", "secrets"),
            ("create", "pods"),
            ("update", "leases"),
        ] {
            assert_eq!(
                can_i(&user, ns, verb, what),
                "no",
                "the operator may {verb} {what} in {ns}"
            );
        }
    }
    assert_eq!(
        can_i(
            &user,
            "kube-system",
            "list",
            "etcdclusters.etcd.kubectl-etcd.io"
        ),
        "yes"
    );

    // The operator in a pod serves a cluster in a namespace it was never granted: it binds its
    // workload role there first.
    ok(kubectl(&[
        "-n",
        &op.0,
        "rollout",
        "status",
        &format!("deployment/{name}"),
        "--timeout=180s",
    ]));
    ok(kubectl_stdin(
        &["apply", "-f", "-"],
        &format!(
            "apiVersion: etcd.kubectl-etcd.io/v1alpha1\nkind: EtcdCluster\nmetadata:\n  name: demo\n  namespace: {}\nspec:\n  replicas: 1\n  version: \"3.5.16\"\n",
            tenant.0
        ),
    ));
    eventually(
        "the in-cluster operator to bring up demo in a new namespace",
        Duration::from_secs(240),
        || status_ready(&tenant.0, 1),
    );
    let binding = json(&ok(kubectl(&[
        "-n",
        &tenant.0,
        "get",
        "rolebinding",
        &name,
        "-o",
        "json",
    ])));
    assert_eq!(binding["roleRef"]["name"], workload_role(&name));
    assert_eq!(binding["subjects"][0]["namespace"], op.0);
    // Its leader Lease is in its own namespace, named after the install.
    let holder = ok(kubectl(&[
        "-n",
        &op.0,
        "get",
        "lease",
        &leader_lease(&name),
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ]));
    assert!(
        holder.stdout.starts_with(&format!("operator/{name}-")),
        "{}",
        holder.stdout
    );
    for (verb, what, want) in [
        ("create", "secrets", "yes"),
        ("update", "leases", "yes"),
        ("create", "pods", "yes"),
    ] {
        assert_eq!(can_i(&user, &tenant.0, verb, what), want, "{verb} {what}");
        assert_eq!(
            can_i(&user, "kube-system", verb, what),
            "no",
            "{verb} {what} in kube-system"
        );
    }

    // Admission: an engine-shaped Secret and a cluster's Lease in the tenant's namespace are
    // admitted; a Secret or Lease of another name or shape is refused, naming the rule.
    try_create(&user, &secret(&tenant.0, "other-tls-ca", "Opaque", true))
        .expect("an engine-shaped Secret in the tenant's namespace");
    try_create(
        &user,
        &lease(&tenant.0, &format!("etcdcluster.{}.other", tenant.0)),
    )
    .expect("a cluster's Lease beside it");
    for (what, object) in [
        (
            "a Secret of another name",
            secret(&tenant.0, "app-credentials", "Opaque", true),
        ),
        (
            "a Secret without the engine's label",
            secret(&tenant.0, "other-tls-ca", "Opaque", false),
        ),
        (
            "a CA Secret of the wrong type",
            secret(&tenant.0, "other-tls-ca", "example.com/other", true),
        ),
    ] {
        let err = try_create(&user, &object).expect_err(what);
        assert!(
            err.contains("writes only the Secrets of managed TLS")
                && err.contains(&format!("admission policy {name}")),
            "{what}: {err}"
        );
    }
    let err = try_create(&user, &lease(&tenant.0, "someone-elses")).expect_err("a foreign Lease");
    assert!(err.contains("writes only its own Leases"), "{err}");

    // kube-system: even with RBAC granting it (a binding of its workload role there, made by an
    // admin for this test), the policy refuses the operator's Secret, and its own binding there.
    ok(kubectl(&[
        "-n",
        "kube-system",
        "create",
        "rolebinding",
        &name,
        "--clusterrole",
        &workload_role(&name),
        "--serviceaccount",
        &format!("{}:{name}", op.0),
    ]));
    eventually(
        "RBAC to grant the test's binding in kube-system",
        Duration::from_secs(30),
        || (can_i(&user, "kube-system", "create", "secrets") == "yes").then_some(()),
    );
    let err = try_create(
        &user,
        &secret("kube-system", "other-tls-ca", "Opaque", true),
    )
    .expect_err("a Secret in kube-system");
    assert!(
        err.contains("writes nothing in kube-system, kube-public, kube-node-lease"),
        "{err}"
    );
    ok(kubectl(&[
        "-n",
        "kube-system",
        "delete",
        "rolebinding",
        &name,
    ]));
    let own_binding = |ns: &str| {
        install::workload_binding(ns, &op.0, install::NAME)
            .to_string()
            .replace(install::NAME, &name)
    };
    let err = try_create(&user, &own_binding("kube-system")).expect_err("binding in kube-system");
    assert!(err.contains("writes nothing in kube-system"), "{err}");
    let err = try_create(&user, &own_binding(&op.0)).expect_err("binding in its own namespace");
    assert!(err.contains("writes only its RoleBinding"), "{err}");

    // A namespace labelled to refuse the operator: not even its own binding.
    try_create(&user, &own_binding(&refused.0)).expect("its binding elsewhere");
    ok(kubectl(&[
        "label",
        "namespace",
        &refused.0,
        &format!("{LABEL_REFUSE_OPERATOR}=true"),
    ]));
    let err = try_create(&user, &own_binding(&refused.0)).expect_err("a refusing namespace");
    assert!(
        err.contains(&format!("labelled {LABEL_REFUSE_OPERATOR}=true")),
        "{err}"
    );
    // The cluster it served is still served (the policy did not stop the engine's own writes).
    assert!(status_ready(&tenant.0, 1).is_some());
}

/// EtcdCluster `name` in `ns` with one member and `spec` merged into its spec.
fn etcd_cluster(ns: &str, name: &str, spec: &Value) -> String {
    let mut c = json!({
        "apiVersion": "etcd.kubectl-etcd.io/v1alpha1", "kind": "EtcdCluster",
        "metadata": { "name": name, "namespace": ns },
        "spec": { "replicas": 1, "version": "3.6.16" },
    });
    for (k, v) in spec.as_object().unwrap() {
        c["spec"][k] = v.clone();
    }
    c.to_string()
}

#[test]
fn a_tenant_sets_only_the_etcd_options_and_images_the_operator_allows() {
    install_crd();
    let ns = Ns::new("allow");
    let name = format!("ke-{}", ns.0);
    let _installed = Installed::named(&ns.0);
    // The policy of an install watching this namespace, its operator allowing enable-pprof and
    // the images of registry.example (the policy alone: nothing here runs a cluster).
    let allowed = Allowed {
        etcd_options: vec!["enable-pprof".into()],
        image_prefixes: vec!["registry.example/".into()],
    };
    let apply = |allowed: &Allowed| {
        let labels = json!({ "app.kubernetes.io/name": name });
        let items = spec::manifests(&ns.0, &name, &[ns.0.as_str()], allowed, &labels);
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        ok(kubectl_stdin(&["apply", "-f", "-"], &list.to_string()));
    };
    apply(&allowed);
    let tenant = "e2e-allow-tenant";
    edits(tenant, &ns.0);

    let off_list = etcd_cluster(
        &ns.0,
        "v2",
        &json!({"etcd": {"options": {"enable-v2": "true"}}}),
    );
    let err = eventually(
        "the policy to refuse an option off the list",
        Duration::from_secs(60),
        || try_create(tenant, &off_list).err(),
    );
    assert!(
        err.contains("spec.etcd.options sets enable-v2:")
            && err.contains("--allow-etcd-option NAME")
            && err.contains(&spec::policy_name(&name)),
        "{err}"
    );
    for (what, spec, says) in [
        (
            "a foreign repository",
            json!({"imageRepository": "docker.io/attacker/etcd"}),
            "spec.imageRepository docker.io/attacker/etcd is not under an image prefix",
        ),
        (
            "a look-alike of the default repository",
            json!({"imageRepository": "gcr.io/etcd-development/etcd-evil"}),
            "spec.imageRepository gcr.io/etcd-development/etcd-evil is not under",
        ),
        (
            "a foreign tools image",
            json!({"restore": {"source": "s3://b/k.db", "toolsImage": "docker.io/attacker/tools:1"}}),
            "spec.restore.toolsImage docker.io/attacker/tools:1 is not under",
        ),
    ] {
        let err = try_create(tenant, &etcd_cluster(&ns.0, "img", &spec)).expect_err(what);
        assert!(
            err.contains(says) && err.contains("--allow-image-prefix"),
            "{what}: {err}"
        );
    }
    // Within the lists: tuning flags, the allowed flag and images, the default tools image.
    let within = etcd_cluster(
        &ns.0,
        "ok",
        &json!({
            "etcd": {"options": {"heartbeat-interval": "200", "enable-pprof": "true"}},
            "imageRepository": "registry.example/etcd",
            "restore": {"source": "s3://b/k.db", "toolsImage": kubectl_etcd::model::DEFAULT_TOOLS_IMAGE},
        }),
    );
    ok(as_user(tenant, &["create", "-f", "-"], &within));

    // The operator's owner takes enable-pprof off the list: the cluster that has it keeps it
    // through other writes (the engine's too), but may not change it.
    apply(&Allowed::default());
    let patch = |p: &str| {
        as_user(
            tenant,
            &[
                "-n",
                &ns.0,
                "patch",
                "etcdcluster",
                "ok",
                "--type",
                "merge",
                "-p",
                p,
            ],
            "",
        )
    };
    // (A new value each time: one admitted before the policy changed is the object's own.)
    let mut value = 0;
    let err = eventually(
        "the policy to take its new list",
        Duration::from_secs(60),
        || {
            value += 1;
            let r = patch(&format!(
                r#"{{"spec":{{"etcd":{{"options":{{"enable-pprof":"{value}"}}}}}}}}"#
            ));
            (r.code != 0).then_some(r.stderr)
        },
    );
    assert!(
        err.contains("spec.etcd.options sets enable-pprof:"),
        "{err}"
    );
    ok(patch(r#"{"spec":{"replicas":3}}"#));
}
