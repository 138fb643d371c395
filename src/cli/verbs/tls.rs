//! `kubectl etcd tls NAME --on|--off [--dry-run]`: switch TLS on (managed TLS: client
//! certificates and mutual peer TLS) or off (plain http) for a running cluster, with no
//! acknowledged write lost and never below quorum.
//!
//! The verb writes `spec.tls.mode` (`managed` or `none`) and waits, as every verb does (`drive`):
//! the engine carries the switch out (`plan::tls_switch`): the members restart one at a time to
//! listen on both schemes, each moves its peer URL to the switch port, they restart again to
//! serve the new scheme only, each moves its peer URL back, and they restart on the final
//! template. Bring-your-own Secrets: set `spec.tls.serverSecret`, `clientSecret` and
//! `peerSecret` with `kubectl edit` and run `kubectl etcd reconcile NAME`; the same path runs.

use kube::api::Patch;
use serde_json::json;

use crate::api::KIND;
use crate::cli::flags::{Global, WaitFlags};
use crate::cli::{Session, drive, output, usage};
use crate::error::Error;
use crate::model::{self, InvalidSpec};

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("way").required(true).args(["on", "off"])))]
pub struct Args {
    /// Cluster name.
    pub name: String,
    /// Switch TLS on: managed TLS (the engine's own CA), clients need a certificate.
    #[arg(long)]
    pub on: bool,
    /// Switch TLS off: plain http for clients and peers (anyone who reaches the pods reads and
    /// writes every key).
    #[arg(long)]
    pub off: bool,
    #[command(flatten)]
    pub wait: WaitFlags,
}

/// The spec patch that asks for TLS on (`managed`) or off (`none`): the mode alone, the Secrets
/// of mode `secrets` removed (and, switching off, the managed CA's settings).
pub fn request_patch(on: bool) -> serde_json::Value {
    if on {
        json!({"spec": {"tls": {"mode": "managed", "serverSecret": null, "clientSecret": null, "peerSecret": null, "issuerRef": null}}})
    } else {
        json!({"spec": {"tls": {"mode": "none", "serverSecret": null, "clientSecret": null, "peerSecret": null, "caGeneration": null, "certificateLifetime": null, "issuerRef": null}}})
    }
}

/// The steps the engine takes, one line each (the `--dry-run` plan).
pub fn plan_lines(namespace: &str, name: &str, on: bool) -> Vec<String> {
    let (mode, from, to) = if on {
        ("managed", "http", "https")
    } else {
        ("none", "https", "http")
    };
    let port = crate::objects::SWITCH_PEER_PORT;
    let mut lines = vec![format!(
        "write spec.tls.mode: {mode} into EtcdCluster {namespace}/{name}; the engine then:"
    )];
    if on {
        lines.push(format!(
            "  issues a CA and the server, peer and client certificates (Secrets {name}-tls-*)"
        ));
    }
    lines.extend([
        format!(
            "  restarts the members one at a time (each Ready and caught up first, the leader last) \
             to serve {from} and {to} on the client port and {to} on peer port {port} beside {from} on 2380"
        ),
        format!("  moves each member's peer URL to {to}://…:{port} (etcd member update), one per pass"),
        format!("  restarts the members again, one at a time: {to} only"),
        format!("  moves each member's peer URL back to {to}://…:2380, one per pass"),
        "  restarts the members on the final template, one at a time; status.tls.mode records the new mode"
            .into(),
    ]);
    lines
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let name = a.name;
    model::validate_name(&name).map_err(|e| usage(&name, e))?;
    let s = Session::connect(g).await?;
    s.ensure_crd_current().await?;
    let (mut cluster, before) = s.load_cluster(&name).await?;
    if before.adopt.is_some() {
        return Err(usage(
            &name,
            InvalidSpec {
                field: "spec.adopt",
                message: "the cluster is adopting old members, whose URLs are not the engine's: \
                          switch TLS once the adoption is over"
                    .into(),
            },
        ));
    }
    let tls = cluster.spec.tls.get_or_insert_with(Default::default);
    tls.mode = Some(if a.on { "managed" } else { "none" }.into());
    tls.server_secret = None;
    tls.client_secret = None;
    tls.peer_secret = None;
    // certManager: switched off like any TLS; switched "on" to managed it is refused by
    // validation (a running cluster does not move between managed and certManager).
    tls.issuer_ref = None;
    if a.off {
        tls.ca_generation = None;
        tls.certificate_lifetime = None;
    }
    s.validate(&name, &cluster)?;
    let intent = plan_lines(&s.namespace, &name, a.on);
    if a.wait.dry_run {
        return drive::dry_run(&s, g, &cluster, &intent).await;
    }
    let patched = s
        .clusters()
        .patch(
            &name,
            &super::intent_patch(),
            &Patch::Merge(request_patch(a.on)),
        )
        .await
        .map_err(|e| Error::kube("switch TLS of", KIND, &s.namespace, &name, e))?;
    s.validate(&name, &patched)?;
    output::progress_line(&format!(
        "EtcdCluster {}/{name}: TLS switched {} (spec.tls.mode {})",
        s.namespace,
        if a.on { "on" } else { "off" },
        if a.on { "managed" } else { "none" }
    ));
    drive::drive(&s, g, patched, &a.wait).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switching_off_drops_the_managed_settings_and_any_secret_names() {
        let off = request_patch(false);
        assert_eq!(off["spec"]["tls"]["mode"], "none");
        for key in [
            "serverSecret",
            "peerSecret",
            "caGeneration",
            "certificateLifetime",
            "issuerRef",
        ] {
            assert!(off["spec"]["tls"][key].is_null(), "{key}");
        }
        assert_eq!(request_patch(true)["spec"]["tls"]["mode"], "managed");
    }

    #[test]
    fn the_plan_names_the_cluster_the_switch_port_and_each_restart() {
        let lines = plan_lines("team", "demo", true);
        assert!(lines[0].contains("mode: managed") && lines[0].contains("team/demo"));
        assert!(lines[1].contains("demo-tls-*"), "{}", lines[1]);
        assert!(lines.iter().any(|l| l.contains("https://…:2382")));
        assert_eq!(
            lines.iter().filter(|l| l.contains("one at a time")).count(),
            3
        );
        let off = plan_lines("team", "demo", false);
        assert!(!off.iter().any(|l| l.contains("certificates")));
        assert!(off.iter().any(|l| l.contains("http only")));
    }
}
