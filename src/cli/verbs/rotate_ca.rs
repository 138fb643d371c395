//! `kubectl etcd rotate-ca NAME [--dry-run]`: a new CA for a cluster with managed TLS, with no
//! moment at which members or clients stop trusting each other.
//!
//! The verb raises `spec.tls.caGeneration` by one and waits, as every verb does (`drive`): the
//! engine carries the rotation out (`plan::pki`): a new CA beside the old one in every trust
//! bundle, the members restarted one at a time (etcd reads CA files only at start), every
//! certificate issued again from the new CA, then the old CA dropped and the members restarted
//! once more. The CLI's own client reads the client Secret at each pass, so it keeps working
//! throughout; applications holding a certificate from `kubectl etcd certificate` need one from
//! the new CA (issued at any time once the rotation began) before it ends.

use kube::api::Patch;
use serde::Serialize;
use serde_json::json;

use crate::api::KIND;
use crate::cli::flags::{Global, WaitFlags};
use crate::cli::{Session, drive, output, usage};
use crate::engine::Context;
use crate::error::Error;
use crate::model::{self, InvalidSpec};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Cluster name (its spec.tls.mode is managed).
    pub name: String,
    #[command(flatten)]
    pub wait: WaitFlags,
}

/// What `rotate-ca` reports once the rotation is done.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Rotated {
    pub cluster: String,
    /// `spec.tls.caGeneration` now.
    pub generation: u64,
    /// Fingerprint (`pki::fingerprint`) of the CA before and after.
    pub old_ca: Option<String>,
    pub new_ca: Option<String>,
}

/// The spec patch that asks for rotation `generation`.
pub fn request_patch(generation: u64) -> serde_json::Value {
    json!({"spec": {"tls": {"caGeneration": generation}}})
}

/// The steps the engine takes, one line each (the `--dry-run` plan).
pub fn plan_lines(namespace: &str, name: &str, generation: u64) -> Vec<String> {
    vec![
        format!(
            "write spec.tls.caGeneration: {generation} into EtcdCluster {namespace}/{name}; the engine then:"
        ),
        "  creates a new CA; the old one stays trusted beside it (Secret {name}-tls-ca)"
            .replace("{name}", name),
        "  writes old + new into the ca.crt of the server, peer and client Secrets".into(),
        "  restarts the members one at a time (each Ready and caught up first, the leader last): \
         etcd reads CA files only at start"
            .into(),
        "  issues the server, peer and client certificates again from the new CA (etcd reads them \
         at each handshake: no restart)"
            .into(),
        "  drops the old CA and restarts the members once more, one at a time: it is no longer \
         trusted"
            .into(),
    ]
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let name = a.name;
    model::validate_name(&name).map_err(|e| usage(&name, e))?;
    let s = Session::connect(g).await?;
    s.ensure_crd_current().await?;
    let (cluster, d) = s.load_cluster(&name).await?;
    let Some(pki) = d.pki.as_ref() else {
        return Err(usage(
            &name,
            InvalidSpec {
                field: "spec.tls.mode",
                message: "is not managed: the cluster has no CA of its own to rotate (with mode \
                          secrets, replace the Secrets' CA yourself)"
                    .into(),
            },
        ));
    };
    let ctx = Context::new(s.client.clone(), s.dial);
    let (_, before, _) = crate::engine::pki::observe(&ctx, &d, &mut Vec::new()).await?;
    // Above both the spec's and what the CA Secret answers (a Secret written by a newer spec).
    let generation = pki.ca_generation.max(before.generation) + 1;
    if before.retiring.is_some() {
        output::progress_line(&format!(
            "EtcdCluster {}/{name}: a CA rotation is under way; this one follows it",
            s.namespace
        ));
    }
    if a.wait.dry_run {
        let mut wanted = cluster.clone();
        if let Some(t) = wanted.spec.tls.as_mut() {
            t.ca_generation = Some(generation as i64);
        }
        return drive::dry_run(&s, g, &wanted, &plan_lines(&s.namespace, &name, generation)).await;
    }
    let patched = s
        .clusters()
        .patch(
            &name,
            &super::intent_patch(),
            &Patch::Merge(request_patch(generation)),
        )
        .await
        .map_err(|e| Error::kube("request a CA rotation of", KIND, &s.namespace, &name, e))?;
    s.validate(&name, &patched)?;
    output::progress_line(&format!(
        "EtcdCluster {}/{name}: CA rotation requested (spec.tls.caGeneration {generation})",
        s.namespace
    ));
    if a.wait.no_wait {
        return output::print_cluster(g.output, &patched);
    }
    drive::converge(&s, &name, a.wait.timeout).await?;
    let (_, d) = s.load_cluster(&name).await?;
    let (_, after, _) = crate::engine::pki::observe(&ctx, &d, &mut Vec::new()).await?;
    let r = Rotated {
        cluster: format!("{}/{name}", s.namespace),
        generation,
        old_ca: before.signing,
        new_ca: after.signing,
    };
    match g.output {
        output::Format::Table => output::print_raw(&format!(
            "{}: CA rotated ({} → {}), generation {}\n",
            r.cluster,
            r.old_ca.as_deref().unwrap_or("?"),
            r.new_ca.as_deref().unwrap_or("?"),
            r.generation
        )),
        f => output::print_value(f, &r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_the_generation_alone() {
        assert_eq!(
            request_patch(3),
            json!({"spec": {"tls": {"caGeneration": 3}}})
        );
    }

    #[test]
    fn the_plan_names_the_cluster_and_each_stage() {
        let lines = plan_lines("team", "demo", 2);
        assert!(lines[0].contains("caGeneration: 2") && lines[0].contains("team/demo"));
        assert!(lines[1].contains("demo-tls-ca"), "{}", lines[1]);
        assert!(lines.iter().any(|l| l.contains("one at a time")));
        assert!(lines.last().unwrap().contains("no longer trusted"));
    }
}
