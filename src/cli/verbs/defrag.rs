//! `kubectl etcd defrag NAME [--compact]`: give the space of deleted and overwritten keys back,
//! one member at a time, and end a NOSPACE alarm once every member is below its quota again.
//!
//! A member answers nobody while it defragments, so the order and gates are those of a restart:
//! learners and followers first, the leader last; a member only while every other voter
//! answers (its defragmentation cannot cost quorum). `--compact` first drops the keyspace history
//! up to the current revision (what etcd's own auto-compaction does), without which a database
//! full of old revisions has nothing to give back. The order is decided by `order`, pure.

use std::time::Duration;

use serde::Serialize;

use crate::cli::flags::Global;
use crate::cli::{Session, output, usage};
use crate::engine::{Context, Dial};
use crate::error::Error;
use crate::model::{self, ClusterView, DEFAULT_QUOTA_BYTES, Desired, EtcdView, Observed, fmt_id};

/// Longest a member's defragmentation may take (etcd's own default for etcdctl is none).
const DEFRAG_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The cluster.
    pub name: String,
    /// First compact the keyspace history up to the current revision (old values of every key
    /// are gone afterwards; watchers from an older revision must re-list).
    #[arg(long)]
    pub compact: bool,
    /// Print the order and the gates; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// One member to defragment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub ordinal: u32,
    pub name: String,
    pub id: u64,
    pub leader: bool,
}

/// The members in defragmentation order (learners, then followers by ordinal, the leader last),
/// or why none may be defragmented now.
pub fn order(d: &Desired, o: &Observed) -> Result<Vec<Target>, String> {
    let EtcdView::Reached(c) = &o.etcd else {
        return Err(format!(
            "no member of {}/{} answers; nothing to defragment",
            d.namespace, d.name
        ));
    };
    if let Some(silent) = silent_voter(c, None) {
        return Err(format!(
            "voter {silent} does not answer: defragmenting another member now could cost quorum; \
             wait until every member answers (kubectl etcd status {})",
            d.name
        ));
    }
    let mut targets: Vec<Target> = c
        .members
        .iter()
        .filter(|m| m.status.is_some())
        .filter_map(|m| {
            Some(Target {
                ordinal: m.ordinal?,
                name: crate::objects::pod_name(&d.name, m.ordinal?),
                id: m.id,
                leader: c.leader == Some(m.id),
            })
        })
        .collect();
    let learner = |t: &Target| c.members.iter().any(|m| m.id == t.id && m.learner);
    targets.sort_by_key(|t| (t.leader, !learner(t), t.ordinal));
    Ok(targets)
}

/// A voter other than `except` that does not answer.
fn silent_voter(c: &ClusterView, except: Option<u64>) -> Option<String> {
    c.voters()
        .find(|m| m.status.is_none() && Some(m.id) != except)
        .map(|m| {
            if m.name.is_empty() {
                fmt_id(m.id)
            } else {
                m.name.clone()
            }
        })
}

/// Whether the NOSPACE alarm may be disarmed: only when every member is below the quota again
/// (else etcd raises it again at the next write, and writes stay refused). Below 90 % of it,
/// so that the next write does not raise it at once.
pub fn may_disarm(d: &Desired, done: &[Defragmented]) -> Result<(), String> {
    let quota = d
        .quota_backend_bytes
        .filter(|q| *q > 0)
        .unwrap_or(DEFAULT_QUOTA_BYTES);
    match done.iter().find(|m| m.db_size_after >= quota / 10 * 9) {
        None => Ok(()),
        Some(full) => Err(format!(
            "{} still holds {} of its {} quota after defragmentation, so the NOSPACE alarm stays: \
             delete keys and run `kubectl etcd defrag {} --compact` (compaction frees the old \
             revisions), or raise spec.etcd.quotaBackendBytes",
            full.member,
            output::human_bytes(full.db_size_after),
            output::human_bytes(quota),
            d.name
        )),
    }
}

/// What the verb did to one member.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Defragmented {
    pub member: String,
    pub leader: bool,
    pub db_size_before: i64,
    pub db_size_after: i64,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub cluster: String,
    /// The revision compacted to (`--compact`).
    pub compacted_to: Option<i64>,
    pub members: Vec<Defragmented>,
    /// Members whose NOSPACE alarm was disarmed.
    pub disarmed: Vec<String>,
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    model::validate_name(&a.name).map_err(|e| usage(&a.name, e))?;
    let s = Session::connect(g).await?;
    s.ensure_crd().await?;
    let cluster = s.get_cluster(&a.name).await?;
    let name = a.name.clone();
    let held = |message: String| Error::Held {
        namespace: s.namespace.clone(),
        name: name.clone(),
        message,
    };
    let d = model::validate(&cluster).map_err(|source| Error::InvalidSpec {
        namespace: s.namespace.clone(),
        name: name.clone(),
        source,
    })?;
    let ctx = Context::new(s.client.clone(), Dial::PortForward);
    let observed = crate::engine::observe(&ctx, &d).await?;
    let d = model::keep_immutable(d, &observed);
    let targets = order(&d, &observed).map_err(&held)?;
    if a.dry_run {
        let mut lines = Vec::new();
        if a.compact {
            lines.push(
                "compact the keyspace history up to the current revision (via the leader)".into(),
            );
        }
        for t in &targets {
            lines.push(format!(
                "defragment {}{} (only while every other voter answers)",
                t.name,
                if t.leader { " (leader, last)" } else { "" }
            ));
        }
        lines.push("disarm NOSPACE alarms once every member is below its quota".into());
        return output::print_raw(&format!("{}\n", lines.join("\n")));
    }
    let err = |e: crate::etcd::EtcdError| Error::Etcd {
        namespace: s.namespace.clone(),
        name: name.clone(),
        source: e,
    };
    let ip = |o: &Observed, ordinal: u32| o.pods.get(&ordinal).and_then(|p| p.ip.clone());
    let progress = output::Progress::new(&format!("{}/{name}", s.namespace));
    let mut report = Report {
        cluster: format!("{}/{name}", s.namespace),
        compacted_to: None,
        members: Vec::new(),
        disarmed: Vec::new(),
    };
    if a.compact {
        let leader = targets
            .iter()
            .find(|t| t.leader)
            .or(targets.first())
            .ok_or_else(|| held("no member to compact through".into()))?;
        let mut c = ctx
            .connect(&d, leader.ordinal, ip(&observed, leader.ordinal).as_deref())
            .await
            .map_err(err)?;
        let revision = c.keyspace().await.map_err(err)?.revision;
        progress.step(&format!("compacting the history up to revision {revision}"));
        c.compact(revision).await.map_err(err)?;
        report.compacted_to = Some(revision);
    }
    for t in &targets {
        // Gate again for each member: the others must answer now.
        let now = crate::engine::observe(&ctx, &d).await?;
        if let EtcdView::Reached(c) = &now.etcd
            && let Some(silent) = silent_voter(c, Some(t.id))
        {
            progress.abandon();
            return Err(held(format!(
                "stopped before {}: voter {silent} does not answer (defragmenting now could cost quorum); \
                 run `kubectl etcd defrag {name}` again once every member answers",
                t.name
            )));
        }
        let mut c = ctx
            .connect(&d, t.ordinal, ip(&now, t.ordinal).as_deref())
            .await
            .map_err(err)?;
        let before = c.status().await.map_err(err)?.db_size;
        progress.step(&format!(
            "defragmenting {} ({})",
            t.name,
            output::human_bytes(before)
        ));
        c.defragment(DEFRAG_TIMEOUT).await.map_err(err)?;
        let after = c.status().await.map_err(err)?.db_size;
        progress.note(&format!(
            "defragmented {}: {} → {}",
            t.name,
            output::human_bytes(before),
            output::human_bytes(after)
        ));
        report.members.push(Defragmented {
            member: t.name.clone(),
            leader: t.leader,
            db_size_before: before,
            db_size_after: after,
        });
    }
    // NOSPACE: disarmed only when every member is below the quota again (else etcd raises it
    // again at the next write, and writes stay refused).
    if let Some(first) = targets.first() {
        let mut c = ctx
            .connect(&d, first.ordinal, ip(&observed, first.ordinal).as_deref())
            .await
            .map_err(err)?;
        let nospace: Vec<u64> = c
            .alarms()
            .await
            .map_err(err)?
            .into_iter()
            .filter(|(_, a)| a == "NOSPACE")
            .map(|(m, _)| m)
            .collect();
        if !nospace.is_empty() {
            if let Err(why) = may_disarm(&d, &report.members) {
                progress.abandon();
                return Err(held(why));
            }
            for m in nospace {
                c.disarm_nospace(m).await.map_err(err)?;
                report.disarmed.push(fmt_id(m));
            }
            progress.note(&format!(
                "disarmed NOSPACE of {}: writes are accepted again",
                report.disarmed.join(", ")
            ));
        }
    }
    progress.finish(&format!("defragmented {} members", report.members.len()));
    print_report(g.output, &report)
}

fn print_report(format: output::Format, r: &Report) -> Result<(), Error> {
    match format {
        output::Format::Table => {
            let mut t = output::table();
            t.set_header(["MEMBER", "BEFORE", "AFTER"]);
            for m in &r.members {
                t.add_row([
                    format!("{}{}", m.member, if m.leader { " (leader)" } else { "" }),
                    output::human_bytes(m.db_size_before),
                    output::human_bytes(m.db_size_after),
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
    use crate::model::{MemberStatusView, MemberView};

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
                status: Some(MemberStatusView::default()),
                ..Default::default()
            })
            .collect();
        Observed {
            etcd: EtcdView::Reached(ClusterView {
                cluster_id: 1,
                leader: Some(100 + u64::from(leader)),
                members,
                auth_enabled: false,
                list_unconfirmed: false,
            }),
            ..Default::default()
        }
    }

    fn members(o: &mut Observed) -> &mut Vec<MemberView> {
        match &mut o.etcd {
            EtcdView::Reached(c) => &mut c.members,
            _ => unreachable!(),
        }
    }

    #[test]
    fn learners_and_followers_go_first_by_ordinal_and_the_leader_last() {
        let d = desired();
        let names = |o: &Observed| -> Vec<(String, bool)> {
            order(&d, o)
                .unwrap()
                .into_iter()
                .map(|t| (t.name, t.leader))
                .collect()
        };
        let o = observed(0);
        assert_eq!(
            names(&o),
            [
                ("demo-1".to_string(), false),
                ("demo-2".to_string(), false),
                ("demo-0".to_string(), true)
            ]
        );
        let mut o = observed(1);
        members(&mut o)[2].learner = true;
        assert_eq!(
            names(&o),
            [
                ("demo-2".to_string(), false),
                ("demo-0".to_string(), false),
                ("demo-1".to_string(), true)
            ]
        );
    }

    #[test]
    fn nospace_is_disarmed_only_when_every_member_is_below_the_quota() {
        let mut d = desired();
        d.quota_backend_bytes = Some(16 << 20);
        let m = |name: &str, after: i64| Defragmented {
            member: name.into(),
            leader: false,
            db_size_before: 16 << 20,
            db_size_after: after,
        };
        assert!(may_disarm(&d, &[m("demo-0", 2 << 20), m("demo-1", 9 << 20)]).is_ok());
        let why = may_disarm(&d, &[m("demo-0", 2 << 20), m("demo-1", 15 << 20)]).unwrap_err();
        assert!(
            why.starts_with("demo-1 still holds 15.0 MiB of its 16.0 MiB quota")
                && why.contains("kubectl etcd defrag demo --compact")
                && why.contains("spec.etcd.quotaBackendBytes"),
            "{why}"
        );
        // No quota in the spec: etcd's default, 2 GiB.
        d.quota_backend_bytes = None;
        assert!(may_disarm(&d, &[m("demo-0", 1 << 30)]).is_ok());
        assert!(may_disarm(&d, &[m("demo-0", 2 << 30)]).is_err());
    }

    #[test]
    fn a_silent_voter_stops_the_defragmentation_before_it_starts() {
        let d = desired();
        let mut o = observed(0);
        members(&mut o)[1].status = None;
        let why = order(&d, &o).unwrap_err();
        assert!(why.contains("demo-1 does not answer"), "{why}");
        assert!(why.contains("quorum"), "{why}");
        // A silent learner costs no quorum: the others go ahead without it.
        let mut o = observed(0);
        members(&mut o)[2].learner = true;
        members(&mut o)[2].status = None;
        let t = order(&d, &o).unwrap();
        assert_eq!(t.len(), 2);
        let why = order(&d, &Observed::default()).unwrap_err();
        assert!(why.contains("no member"), "{why}");
    }
}
