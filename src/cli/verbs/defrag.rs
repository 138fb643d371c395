//! `kubectl etcd defrag NAME [--compact]`: give the space of deleted and overwritten keys back,
//! one member at a time.
//!
//! The verb records the request (`spec.maintenance.defrag.request`, a fresh nonce) and waits, as
//! every verb does (`drive`): the engine carries it out as `Compact`/`Defragment` steps under the
//! cluster's Lease (`plan::maintenance`), so with an operator holding that Lease the operator
//! does it, else this process runs the passes. The order and gates are those of a restart:
//! learners and followers first, the leader last; a member only while every other voter answers
//! (a defragmenting member answers nobody, so it cannot cost quorum). `--compact` first drops the
//! keyspace history up to the current revision, without which a database full of old revisions
//! has nothing to give back. A full database (NOSPACE) is healed by the engine first, alarm
//! disarmed included.

use kube::api::Patch;
use serde::Serialize;
use serde_json::json;

use crate::api::{DefragRun, EtcdCluster, KIND};
use crate::cli::flags::{Global, WaitFlags};
use crate::cli::{Session, drive, output, usage};
use crate::engine::Context;
use crate::error::Error;
use crate::model::{self, Desired, EtcdView, Observed, fmt_id};
use crate::plan::nospace::defrag_order;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The cluster.
    pub name: String,
    /// First compact the keyspace history up to the current revision (old values of every key
    /// are gone afterwards; watchers from an older revision must re-list).
    #[arg(long)]
    pub compact: bool,
    #[command(flatten)]
    pub wait: WaitFlags,
}

/// What the defragmentation did to one member.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Defragmented {
    pub member: String,
    pub leader: bool,
    pub db_size_before: Option<i64>,
    pub db_size_after: Option<i64>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub cluster: String,
    /// The request's nonce (`spec.maintenance.defrag.request.nonce`).
    pub nonce: String,
    /// The revision compacted to (`--compact`).
    pub compacted_to: Option<i64>,
    pub members: Vec<Defragmented>,
    /// Members whose NOSPACE alarm was raised before and is disarmed now.
    pub disarmed: Vec<String>,
}

/// Pure: what the engine will do for the request, one line each (the `--dry-run` plan).
pub fn plan_lines(d: &Desired, o: &Observed, compact: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let EtcdView::Reached(c) = &o.etcd else {
        return vec![format!(
            "no member of {}/{} answers: the engine waits until members answer, then defragments",
            d.namespace, d.name
        )];
    };
    if !o.nospace.is_empty() {
        lines.push(
            "first heal NOSPACE (compact, defragment every member, disarm the alarm)".to_string(),
        );
    }
    if compact {
        lines.push(
            "compact the keyspace history up to the current revision (via the leader)".into(),
        );
    }
    for m in defrag_order(c).into_iter().filter(|m| m.status.is_some()) {
        lines.push(format!(
            "defragment {}{} (only while every other voter answers)",
            crate::plan::member_name(d, m),
            if c.leader == Some(m.id) {
                " (leader, last)"
            } else {
                ""
            }
        ));
    }
    if let Some(silent) = c.voters().find(|m| m.status.is_none()) {
        lines.push(format!(
            "(voter {} does not answer now: the engine waits for it before each member)",
            crate::plan::member_name(d, silent)
        ));
    }
    lines
}

/// The spec patch that records a request with `nonce`.
pub fn request_patch(nonce: &str, compact: bool) -> serde_json::Value {
    json!({"spec": {"maintenance": {"defrag": {"request": {"nonce": nonce, "compact": compact}}}}})
}

/// Pure: the report of run `run` of cluster `after`, with the sizes and alarms seen before.
fn report(cluster: String, before: &Observed, after: &EtcdCluster, run: &DefragRun) -> Report {
    let members = after
        .status
        .as_ref()
        .map(|s| s.members.clone())
        .unwrap_or_default();
    let before_size = |name: &str| -> Option<i64> {
        let EtcdView::Reached(c) = &before.etcd else {
            return None;
        };
        c.members
            .iter()
            .find(|m| m.name == name)
            .and_then(|m| m.status.as_ref())
            .map(|s| s.db_size)
    };
    let alarmed_name = |id: u64| match &before.etcd {
        EtcdView::Reached(c) => c
            .members
            .iter()
            .find(|m| m.id == id)
            .map(|m| m.name.clone())
            .unwrap_or_else(|| fmt_id(id)),
        _ => fmt_id(id),
    };
    Report {
        cluster,
        nonce: run.nonce.clone(),
        compacted_to: run.compacted_to,
        members: run
            .defragmented
            .iter()
            .map(|name| {
                let now = members.iter().find(|m| &m.name == name);
                Defragmented {
                    member: name.clone(),
                    leader: now.is_some_and(|m| m.leader),
                    db_size_before: before_size(name),
                    db_size_after: now.and_then(|m| m.db_size),
                }
            })
            .collect(),
        // Converged means no alarm is raised (the engine heals NOSPACE before anything else).
        disarmed: before.nospace.iter().map(|id| alarmed_name(*id)).collect(),
    }
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    model::validate_name(&a.name).map_err(|e| usage(&a.name, e))?;
    let s = Session::connect(g).await?;
    s.ensure_crd_current().await?;
    let nonce = crate::model::recovery::restore_nonce(jiff::Timestamp::now());
    request(&s, g.output, a, &nonce).await
}

/// Records request `nonce` and waits for the engine to carry it out; prints the report.
async fn request(s: &Session, format: output::Format, a: Args, nonce: &str) -> Result<(), Error> {
    let name = a.name.clone();
    let (cluster, d) = s.load_cluster(&name).await?;
    // Read-only: the order to show, and the sizes and alarms to report against.
    let ctx = Context::new(s.client.clone(), s.dial);
    let (d, before) = crate::engine::observe(&ctx, &d, cluster.status.as_ref()).await?;
    if a.wait.dry_run {
        output::progress_line(&format!(
            "dry run: nothing changed; the request (spec.maintenance.defrag.request of \
             EtcdCluster {}/{name}) would have the engine:",
            s.namespace
        ));
        let lines = plan_lines(&d, &before, a.compact);
        return output::print_raw(&format!("{}\n", lines.join("\n")));
    }
    let patched = s
        .clusters()
        .patch(
            &name,
            &super::intent_patch(),
            &Patch::Merge(request_patch(nonce, a.compact)),
        )
        .await
        .map_err(|e| Error::kube("request a defragmentation of", KIND, &s.namespace, &name, e))?;
    s.validate(&name, &patched)?;
    output::progress_line(&format!(
        "EtcdCluster {}/{name}: defragmentation requested (nonce {nonce}{})",
        s.namespace,
        if a.compact { ", compact first" } else { "" }
    ));
    if a.wait.no_wait {
        return output::print_cluster(format, &patched);
    }
    drive::converge(s, &name, a.wait.timeout).await?;
    let after = s.get_cluster(&name).await?;
    let run = after
        .status
        .as_ref()
        .and_then(|st| st.maintenance.as_ref())
        .and_then(|m| m.defrag.clone())
        .filter(|r| r.nonce == nonce && r.done)
        .ok_or_else(|| Error::Held {
            namespace: s.namespace.clone(),
            name: name.clone(),
            message: format!(
                "the cluster converged, but its status does not record defragmentation {nonce} \
                 as done (another request replaced it?); see `kubectl etcd status {name}`"
            ),
        })?;
    let r = report(format!("{}/{name}", s.namespace), &before, &after, &run);
    print_report(format, &r)
}

fn print_report(format: output::Format, r: &Report) -> Result<(), Error> {
    let size = |b: Option<i64>| b.map(output::human_bytes).unwrap_or_else(|| "?".into());
    match format {
        output::Format::Table => {
            let mut t = output::table();
            t.set_header(["MEMBER", "BEFORE", "AFTER"]);
            for m in &r.members {
                t.add_row([
                    format!("{}{}", m.member, if m.leader { " (leader)" } else { "" }),
                    size(m.db_size_before),
                    size(m.db_size_after),
                ]);
            }
            output::print_raw(&format!("{t}\n"))
        }
        other => output::print_value(other, r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::scripted::{
        assert_only_the_intent_was_written, assert_the_lease_was_taken_after,
        operator_holds_the_lease, without_an_operator,
    };
    use crate::model::{ClusterView, MemberStatusView, MemberView};
    use std::time::Duration;

    fn args(timeout: Duration) -> Args {
        Args {
            name: "demo".into(),
            compact: true,
            wait: WaitFlags {
                no_wait: false,
                timeout,
                dry_run: false,
            },
        }
    }

    /// Cluster demo as an operator reports it after carrying out request `nonce`: converged at
    /// its generation, the run done.
    fn carried_out(nonce: &str) -> EtcdCluster {
        let mut c = crate::fixtures::cluster("demo").converged().build();
        if let Some(st) = c.status.as_mut() {
            st.maintenance = Some(crate::api::MaintenanceStatus {
                defrag: Some(DefragRun {
                    nonce: nonce.into(),
                    compacted_to: Some(5),
                    defragmented: vec!["demo-1".into(), "demo-2".into(), "demo-0".into()],
                    done: true,
                }),
                ..Default::default()
            });
        }
        c
    }

    #[tokio::test]
    async fn with_an_operator_holding_the_lease_the_verb_records_its_request_and_only_waits() {
        let c = carried_out("t1");
        let d = model::validate(&c).unwrap();
        let (ctx, calls) = operator_holds_the_lease(&d, &c).start();
        let s = Session {
            client: ctx.client.clone(),
            namespace: "ns".into(),
            dial: crate::reach::Dial::PortForward,
            allow_foreign_adopt_endpoints: false,
            allow_cluster_issuer: false,
        };
        request(
            &s,
            output::Format::Json,
            args(Duration::from_secs(20)),
            "t1",
        )
        .await
        .unwrap();
        assert_only_the_intent_was_written(&calls, &request_patch("t1", true));
    }

    #[tokio::test]
    async fn without_an_operator_the_verb_takes_the_lease_before_the_engine_writes_anything() {
        let c = crate::fixtures::cluster("demo").build();
        let d = model::validate(&c).unwrap();
        let (ctx, calls) = without_an_operator(&d, &c).start();
        let s = Session {
            client: ctx.client.clone(),
            namespace: "ns".into(),
            dial: crate::reach::Dial::PortForward,
            allow_foreign_adopt_endpoints: false,
            allow_cluster_issuer: false,
        };
        // No member answers here: the engine waits, and the verb gives up at its timeout.
        let e = request(&s, output::Format::Json, args(Duration::from_secs(3)), "t2")
            .await
            .unwrap_err();
        assert!(matches!(e, Error::Timeout { .. }), "{e:?}");
        let w = assert_the_lease_was_taken_after(&calls, &request_patch("t2", true));
        assert!(
            w[2..].iter().any(|c| c.path.ends_with("/status")),
            "the engine's passes ran (and wrote status) under the Lease: {w:#?}"
        );
    }

    fn desired() -> Desired {
        crate::fixtures::cluster("demo").replicas(3).desired()
    }

    /// Three voters demo-0..2 answering, demo-`leader` leading.
    fn observed(leader: u32) -> Observed {
        let members = (0..3)
            .map(|i| MemberView {
                id: 100 + u64::from(i),
                name: format!("demo-{i}"),
                ordinal: Some(i),
                started: true,
                healthy: true,
                status: Some(MemberStatusView {
                    db_size: 16 << 20,
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect();
        Observed {
            etcd: EtcdView::Reached(ClusterView {
                cluster_id: 1,
                leader: Some(100 + u64::from(leader)),
                members,
                auth_enabled: false,
                auth: None,
                list_unconfirmed: false,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_plan_compacts_then_goes_followers_first_and_the_leader_last() {
        let lines = plan_lines(&desired(), &observed(0), true);
        assert!(lines[0].starts_with("compact"), "{lines:?}");
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(lines[1].starts_with("defragment demo-1"), "{lines:?}");
        assert!(
            lines[3].starts_with("defragment demo-0 (leader, last)"),
            "{lines:?}"
        );
    }

    #[test]
    fn the_plan_names_a_silent_voter_and_a_raised_alarm() {
        let mut o = observed(1);
        o.nospace = vec![100];
        if let EtcdView::Reached(c) = &mut o.etcd {
            c.members[2].status = None;
        }
        let lines = plan_lines(&desired(), &o, false);
        assert!(lines[0].contains("NOSPACE"), "{lines:?}");
        assert!(
            lines.last().unwrap().contains("demo-2 does not answer"),
            "{lines:?}"
        );
        let none = plan_lines(&desired(), &Observed::default(), false);
        assert!(none[0].contains("no member"), "{none:?}");
    }

    #[test]
    fn the_request_is_a_spec_patch_with_the_nonce() {
        let p = request_patch("abc", true);
        assert_eq!(
            p["spec"]["maintenance"]["defrag"]["request"]["nonce"],
            "abc"
        );
        assert_eq!(
            p["spec"]["maintenance"]["defrag"]["request"]["compact"],
            true
        );
        assert!(p.get("status").is_none(), "the verb never writes status");
    }

    #[test]
    fn the_report_takes_sizes_before_from_the_observation_and_after_from_status() {
        let o = {
            let mut o = observed(0);
            o.nospace = vec![101];
            o
        };
        let mut after = crate::fixtures::cluster("demo").replicas(3).build();
        after.status = Some(crate::api::EtcdClusterStatus {
            members: (0..3)
                .map(|i| crate::api::MemberStatus {
                    name: format!("demo-{i}"),
                    leader: i == 0,
                    db_size: Some(1 << 20),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
        let run = DefragRun {
            nonce: "n".into(),
            compacted_to: Some(9),
            defragmented: vec!["demo-1".into(), "demo-2".into(), "demo-0".into()],
            done: true,
        };
        let r = report("ns/demo".into(), &o, &after, &run);
        assert_eq!(r.members.len(), 3);
        assert!(r.members[2].leader && !r.members[0].leader);
        assert_eq!(r.members[0].db_size_before, Some(16 << 20));
        assert_eq!(r.members[0].db_size_after, Some(1 << 20));
        assert_eq!(r.disarmed, ["demo-1"]);
        assert_eq!(r.compacted_to, Some(9));
    }
}
