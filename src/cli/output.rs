//! Everything the CLI prints. Results go to stdout (tables, JSON or YAML and nothing else);
//! progress goes to stderr (a spinner on a terminal, plain lines otherwise).

use std::io::Write;
use std::time::Duration;

use clap::ValueEnum;
use comfy_table::{Cell, ContentArrangement, Table, presets::UTF8_BORDERS_ONLY};
use serde::Serialize;
use serde_json::json;

use crate::api::{EtcdBackup, EtcdCluster, EtcdClusterStatus, MemberStatus, condition};
use crate::engine::Pass;
use crate::error::Error;
use crate::plan::Step;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Yaml,
}

/// YAML text (serde-saphyr: pure Rust, maintained; serde_yaml is archived upstream).
pub fn yaml<T: Serialize>(v: &T) -> String {
    serde_saphyr::to_string(v).unwrap_or_default()
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
pub fn print_raw(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    match out
        .write_all(text.as_bytes())
        .and_then(|_| {
            if text.ends_with('\n') {
                Ok(())
            } else {
                out.write_all(b"\n")
            }
        })
        .and_then(|_| out.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(Error::Io),
    }
}

/// One line of a stream (`logs --follow`) on stdout; `Ok(false)` once the reader went away
/// (`| head` closed the pipe), so the stream can stop.
pub fn print_stream_line(text: &str) -> Result<bool, Error> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|_| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(Error::Io(e)),
    }
}

pub(crate) fn print_value<T: Serialize>(format: Format, v: &T) -> Result<(), Error> {
    match format {
        Format::Json => {
            print_raw(&serde_json::to_string_pretty(v).map_err(|e| Error::Serialize(Box::new(e)))?)
        }
        Format::Yaml => print_raw(&yaml(v)),
        Format::Table => unreachable!("tables are printed by their own functions"),
    }
}

/// A line for people on stderr.
pub fn progress_line(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// Progress of a waiting verb: an indicatif spinner when stderr is a terminal, plain lines
/// (one per new step) otherwise, so CI logs stay readable.
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    prefix: String,
}

impl Progress {
    pub fn new(prefix: &str) -> Progress {
        let bar = super::stderr_is_tty().then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_style(
                indicatif::ProgressStyle::with_template("{spinner} [{elapsed}] {prefix}: {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            b.set_prefix(prefix.to_string());
            b.enable_steady_tick(Duration::from_millis(120));
            b
        });
        Progress {
            bar,
            prefix: prefix.to_string(),
        }
    }
    pub fn step(&self, msg: &str) {
        match &self.bar {
            Some(b) => {
                b.println(format!("  {msg}"));
                b.set_message(msg.to_string());
            }
            None => progress_line(&format!("{}: {msg}", self.prefix)),
        }
    }
    pub fn note(&self, msg: &str) {
        self.step(msg)
    }
    pub fn finish(&self, msg: &str) {
        match &self.bar {
            Some(b) => b.finish_with_message(msg.to_string()),
            None => progress_line(&format!("{}: {msg}", self.prefix)),
        }
    }
    pub fn abandon(&self) {
        if let Some(b) = &self.bar {
            b.abandon();
        }
    }
}

pub fn human_bytes(n: i64) -> String {
    let n = n as f64;
    for (unit, size) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if n >= size as f64 {
            return format!("{:.1} {unit}", n / size as f64);
        }
    }
    format!("{n} B")
}

/// Each answering member's exact db size and raft index, by name, from a live pass.
fn live_sizes(pass: Option<&Pass>) -> std::collections::BTreeMap<&str, (i64, u64)> {
    let Some(crate::model::EtcdView::Reached(view)) = pass.map(|p| &p.observed.etcd) else {
        return Default::default();
    };
    view.members
        .iter()
        .filter_map(|m| Some((m.name.as_str(), m.status.as_ref()?)))
        .map(|(name, s)| (name, (s.db_size, s.raft_index)))
        .collect()
}

fn quota_of(c: &EtcdCluster) -> i64 {
    c.spec
        .etcd
        .quota_backend_bytes
        .filter(|q| *q > 0)
        .unwrap_or(crate::model::DEFAULT_QUOTA_BYTES)
}

/// The member's raft role, and `(foreign)` for a member the engine did not create (added by
/// hand or left from an adoption): the engine holds its changes until it is removed.
fn role(m: &MemberStatus) -> String {
    let r = if m.learner {
        "learner"
    } else if m.leader {
        "leader"
    } else {
        "follower"
    };
    if m.foreign {
        format!("{r} (foreign)")
    } else {
        r.to_string()
    }
}

pub(crate) fn table() -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t
}

fn ready_of(c: &EtcdCluster) -> String {
    c.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|k| k.type_ == condition::READY))
        .map_or("Unknown".into(), |k| k.status.clone())
}

/// The machine-readable status document (`-o json|yaml`).
fn status_doc(c: &EtcdCluster, pass: Option<&Pass>) -> serde_json::Value {
    let status = pass.map(|p| &p.status).or(c.status.as_ref());
    json!({
        "name": c.metadata.name,
        "namespace": c.metadata.namespace,
        "spec": c.spec,
        "status": status,
        "nextStep": pass.map(|p| &p.step),
        "nextStepText": pass.map(|p| p.step.to_string()),
    })
}

/// A cluster after a verb finished (as stored).
pub fn print_cluster(format: Format, c: &EtcdCluster) -> Result<(), Error> {
    match format {
        Format::Table => print_status(format, c, None),
        _ => print_value(format, &status_doc(c, None)),
    }
}

pub fn print_pass(format: Format, p: &Pass) -> Result<(), Error> {
    let doc = json!({"name": p.desired.name, "namespace": p.desired.namespace, "status": p.status, "nextStep": p.step});
    match format {
        Format::Table => print_raw(&format!(
            "{}/{}: {}",
            p.desired.namespace, p.desired.name, p.step
        )),
        _ => print_value(format, &doc),
    }
}

/// `status NAME`: the summary, then a row per member. `pass` is the live observation.
pub fn print_status(format: Format, c: &EtcdCluster, pass: Option<&Pass>) -> Result<(), Error> {
    if format != Format::Table {
        return print_value(format, &status_doc(c, pass));
    }
    print_raw(&status_table(c, pass))
}

/// The tables of `status NAME`: the summary, a row per member, the conditions.
pub(crate) fn status_table(c: &EtcdCluster, pass: Option<&Pass>) -> String {
    let st = pass
        .map(|p| p.status.clone())
        .or_else(|| c.status.clone())
        .unwrap_or_default();
    let mut out = summary_table(c, &st, pass).to_string();
    out.push('\n');
    if !st.members.is_empty() {
        out.push_str(&members_table(c, &st.members, pass).to_string());
        out.push('\n');
    }
    if let Some(line) = backup_line(&st, jiff::Timestamp::now()) {
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(line) = drill_line(&st, jiff::Timestamp::now()) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&clients_line(c, &st));
    out.push('\n');
    if let Some(line) = tls_line(&st) {
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(conds) = (!st.conditions.is_empty()).then_some(&st.conditions) {
        let mut t = table();
        t.set_header(vec!["CONDITION", "STATUS", "REASON", "MESSAGE"]);
        for k in conds {
            t.add_row(vec![&k.type_, &k.status, &k.reason, &k.message]);
        }
        out.push_str(&t.to_string());
    }
    out
}

/// The one-row summary of `status NAME`.
fn summary_table(c: &EtcdCluster, st: &EtcdClusterStatus, pass: Option<&Pass>) -> Table {
    let mut summary = table();
    summary.set_header(vec![
        "NAMESPACE",
        "NAME",
        "PHASE",
        "READY",
        "VOTERS",
        "DESIRED",
        "VERSION",
        "CLUSTER ID",
        "NEXT STEP",
    ]);
    let voters = st.members.iter().filter(|m| !m.learner).count();
    summary.add_row(vec![
        Cell::new(c.metadata.namespace.clone().unwrap_or_default()),
        Cell::new(c.metadata.name.clone().unwrap_or_default()),
        Cell::new(
            st.phase
                .map(|p| p.to_string())
                .unwrap_or_else(|| "-".into()),
        ),
        Cell::new(format!("{}/{}", st.ready_replicas, voters)),
        Cell::new(voters),
        Cell::new(c.spec.replicas),
        Cell::new(st.version.clone().unwrap_or_else(|| c.spec.version.clone())),
        Cell::new(st.cluster_id.clone().unwrap_or_else(|| "-".into())),
        Cell::new(
            pass.map(|p| p.step.to_string())
                .or(st.message.clone())
                .unwrap_or_default(),
        ),
    ]);
    summary
}

/// A row per member: role, version, health, database size against the quota, raft index.
fn members_table(c: &EtcdCluster, list: &[MemberStatus], pass: Option<&Pass>) -> Table {
    let quota = quota_of(c);
    let mut members = table();
    members.set_header(vec![
        "MEMBER",
        "ID",
        "ROLE",
        "VERSION",
        "HEALTH",
        "DB SIZE / QUOTA",
        "RAFT INDEX",
    ]);
    let live = live_sizes(pass);
    for m in list {
        // Status keeps the db size at MiB precision (so growth does not rewrite it every
        // pass) and no raft index; the live observation of this command has both exactly.
        let (db_size, raft_index) = match live.get(m.name.as_str()) {
            Some(&(d, r)) => (Some(d), Some(r)),
            None => (m.db_size, m.raft_index),
        };
        members.add_row(vec![
            Cell::new(&m.name),
            Cell::new(&m.id),
            Cell::new(role(m)),
            Cell::new(m.version.clone().unwrap_or_else(|| "-".into())),
            Cell::new(if m.healthy {
                "healthy".to_string()
            } else {
                format!(
                    "unhealthy{}",
                    m.error
                        .as_ref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                )
            }),
            Cell::new(
                db_size
                    .map(|d| {
                        format!(
                            "{} / {} ({:.1}%)",
                            human_bytes(d),
                            human_bytes(quota),
                            d as f64 * 100.0 / quota as f64
                        )
                    })
                    .unwrap_or_else(|| "-".into()),
            ),
            Cell::new(
                raft_index
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| "-".into()),
            ),
        ]);
    }
    members
}

/// `status` without a name: one row per cluster.
pub fn print_status_list(
    format: Format,
    rows: &[(EtcdCluster, Option<Pass>)],
    all: bool,
) -> Result<(), Error> {
    if format != Format::Table {
        let docs: Vec<serde_json::Value> = rows
            .iter()
            .map(|(c, p)| status_doc(c, p.as_ref()))
            .collect();
        return print_value(format, &json!({ "clusters": docs }));
    }
    if rows.is_empty() {
        progress_line("no EtcdClusters found; create one with `kubectl etcd create NAME`");
        return Ok(());
    }
    let mut t = table();
    let mut header = vec!["NAME", "PHASE", "READY", "DESIRED", "VERSION", "NEXT STEP"];
    if all {
        header.insert(0, "NAMESPACE");
    }
    t.set_header(header);
    for (c, p) in rows {
        let st = p
            .as_ref()
            .map(|p| p.status.clone())
            .or_else(|| c.status.clone())
            .unwrap_or_default();
        let voters = st.members.iter().filter(|m| !m.learner).count();
        let mut row = vec![
            c.metadata.name.clone().unwrap_or_default(),
            st.phase
                .map(|p| p.to_string())
                .unwrap_or_else(|| "-".into()),
            format!("{}/{} ({})", st.ready_replicas, voters, ready_of(c)),
            c.spec.replicas.to_string(),
            st.version.clone().unwrap_or_else(|| c.spec.version.clone()),
            p.as_ref()
                .map(|p| p.step.to_string())
                .unwrap_or_else(|| "unreachable".into()),
        ];
        if all {
            row.insert(0, c.metadata.namespace.clone().unwrap_or_default());
        }
        t.add_row(row);
    }
    print_raw(&t.to_string())
}

/// `--dry-run`: the intent, the next step, and the objects it would write.
pub fn print_dry_run(
    format: Format,
    lines: &[String],
    objects: &[serde_json::Value],
    step: Option<&Step>,
) -> Result<(), Error> {
    match format {
        Format::Table => {
            let mut out = String::from("dry run: nothing was changed\n");
            for l in lines {
                out.push_str(&format!("  - {l}\n"));
            }
            for o in objects {
                out.push_str("---\n");
                out.push_str(&yaml(o));
            }
            print_raw(&out)
        }
        _ => print_value(
            format,
            &json!({"dryRun": true, "steps": lines, "nextStep": step, "objects": objects}),
        ),
    }
}

/// Backups as a table (name, phase, size, revision, age, verified, where) or as the records.
pub fn print_backups(format: Format, list: &[EtcdBackup]) -> Result<(), Error> {
    if format != Format::Table {
        return if list.len() == 1 {
            print_value(format, &list[0])
        } else {
            print_value(format, &list)
        };
    }
    let now = jiff::Timestamp::now();
    let mut t = table();
    t.set_header(vec![
        "NAME", "PHASE", "SIZE", "REVISION", "KEYS", "AGE", "VERIFIED", "URL",
    ]);
    for b in list {
        let st = b.status.clone().unwrap_or_default();
        let age = b
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| human_age(now.as_second() - t.0.as_second()))
            .unwrap_or_default();
        t.add_row(vec![
            Cell::new(b.metadata.name.clone().unwrap_or_default()),
            Cell::new(st.phase.unwrap_or_default()),
            Cell::new(st.size.map(human_bytes).unwrap_or_default()),
            Cell::new(st.revision.map(|r| r.to_string()).unwrap_or_default()),
            Cell::new(st.keys.map(|r| r.to_string()).unwrap_or_default()),
            Cell::new(age),
            Cell::new(if st.verified { "yes" } else { "no" }),
            Cell::new(st.url.or(st.message).unwrap_or_default()),
        ]);
    }
    print_raw(&t.to_string())
}

/// "TLS managed: ca until 2036-…; server until 2027-… (renews 2026-…); …", "TLS none: …".
fn tls_line(st: &crate::api::EtcdClusterStatus) -> Option<String> {
    let t = st.tls.as_ref()?;
    if t.mode == "none" {
        return Some("TLS none: plain http for clients and peers".into());
    }
    let certs: Vec<String> = t
        .certificates
        .iter()
        .map(|c| {
            let mut s = format!("{} until {}", c.role, c.not_after.as_deref().unwrap_or("-"));
            if let Some(r) = &c.renew_at {
                s.push_str(&format!(" (renews {r})"));
            }
            if let Some(p) = &c.problem {
                s.push_str(&format!(" [{} {p}]", c.secret));
            }
            s
        })
        .collect();
    Some(format!("TLS {}: {}", t.mode, certs.join("; ")))
}

/// Where clients connect: "clients: https://demo-client.team.svc:2379 (Service demo-client,
/// ClusterIP)", and for a node port or a load balancer where to read its address.
fn clients_line(c: &EtcdCluster, st: &crate::api::EtcdClusterStatus) -> String {
    let name = c.metadata.name.clone().unwrap_or_default();
    let ns = c.metadata.namespace.clone().unwrap_or_default();
    let mode = st
        .tls
        .as_ref()
        .map(|t| t.mode.as_str())
        .or_else(|| c.spec.tls.as_ref().and_then(|t| t.mode.as_deref()));
    let scheme = if mode == Some("none") {
        "http"
    } else {
        "https"
    };
    let service = crate::objects::client_service_name(&name);
    let port = crate::objects::CLIENT_PORT;
    let kind = c
        .spec
        .client_service
        .as_ref()
        .and_then(|s| s.type_)
        .unwrap_or(crate::api::ClientServiceType::ClusterIp);
    let outside = match kind {
        crate::api::ClientServiceType::ClusterIp => String::new(),
        other => format!(
            "; from outside the cluster: `kubectl -n {ns} get service {service}` shows the {}",
            if other == crate::api::ClientServiceType::NodePort {
                "node port (on every node's address)"
            } else {
                "load balancer's address"
            }
        ),
    };
    format!(
        "clients: {scheme}://{service}.{ns}.svc:{port} (Service {service}, {}{outside})",
        kind.as_str()
    )
}

/// "last backup NAME 3m ago, 1.2 MiB at URL; next backup in 57s" (None without backups or schedule).
fn backup_line(st: &crate::api::EtcdClusterStatus, now: jiff::Timestamp) -> Option<String> {
    let b = st.backup.as_ref()?;
    let mut parts = Vec::new();
    match (&b.last_successful, &b.last_successful_time) {
        (Some(name), Some(t)) => parts.push(format!(
            "last backup {name} {} ago, {} at {}",
            human_age(now.as_second() - t.0.as_second()),
            human_bytes(b.last_successful_size.unwrap_or(0)),
            b.last_successful_url.as_deref().unwrap_or("-")
        )),
        _ => parts.push("last backup: none yet".into()),
    }
    if let (Some(name), Some(t)) = (&b.last_failed, &b.last_failed_time)
        && b.last_successful_time.as_ref().is_none_or(|ok| t.0 > ok.0)
    {
        parts.push(format!(
            "last failed {name} {} ago",
            human_age(now.as_second() - t.0.as_second())
        ));
    }
    match &b.next_scheduled_time {
        Some(t) => parts.push(format!(
            "next backup in {}",
            human_age(t.0.as_second() - now.as_second())
        )),
        None => parts.push("next backup: not scheduled".into()),
    }
    Some(parts.join("; "))
}

/// "last drill of NAME Passed 3h ago; next drill in 21h" (None without a drill or drills on).
fn drill_line(st: &crate::api::EtcdClusterStatus, now: jiff::Timestamp) -> Option<String> {
    let b = st.backup.as_ref()?;
    let mut parts = Vec::new();
    match &b.last_drill {
        Some(l) => {
            let ago = l
                .time
                .as_ref()
                .map_or(0, |t| now.as_second() - t.0.as_second());
            let mut line = format!(
                "last drill of {} {} {} ago",
                l.backup,
                l.outcome,
                human_age(ago)
            );
            if let Some(why) = &l.message {
                line.push_str(&format!(" ({why})"));
            }
            parts.push(line);
        }
        None if b.next_drill_time.is_some() => parts.push("last drill: none yet".into()),
        None => return None,
    }
    match &b.next_drill_time {
        Some(t) if t.0 > now => parts.push(format!(
            "next drill in {}",
            human_age(t.0.as_second() - now.as_second())
        )),
        Some(_) => parts.push("next drill: due (once a backup not drilled yet exists)".into()),
        None => parts.push("no scheduled drills (spec.backup.drill)".into()),
    }
    Some(parts.join("; "))
}

fn human_age(secs: i64) -> String {
    match secs.max(0) {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drill_line_says_the_last_drill_and_the_next() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let now: jiff::Timestamp = "2026-12-02T12:00:00Z".parse().unwrap();
        let mut st = crate::api::EtcdClusterStatus {
            backup: Some(crate::api::BackupStatus::default()),
            ..Default::default()
        };
        assert_eq!(drill_line(&st, now), None, "no drill, none scheduled");
        let b = st.backup.as_mut().unwrap();
        b.next_drill_time = Some(Time("2026-12-02T11:00:00Z".parse().unwrap()));
        assert_eq!(
            drill_line(&st, now).unwrap(),
            "last drill: none yet; next drill: due (once a backup not drilled yet exists)"
        );
        let b = st.backup.as_mut().unwrap();
        b.last_drill = Some(crate::api::LastDrill {
            backup: "demo-1".into(),
            time: Some(Time("2026-12-02T09:00:00Z".parse().unwrap())),
            outcome: "Failed".into(),
            message: Some("its fetch step failed".into()),
            last_passed_time: None,
        });
        b.next_drill_time = Some(Time("2026-12-03T09:00:00Z".parse().unwrap()));
        assert_eq!(
            drill_line(&st, now).unwrap(),
            "last drill of demo-1 Failed 3h ago (its fetch step failed); next drill in 21h"
        );
    }

    #[test]
    fn sizes_are_human() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(20480), "20.0 KiB");
        assert_eq!(human_bytes(2 << 30), "2.0 GiB");
    }

    #[test]
    fn status_table_shows_every_member_with_role_and_quota() {
        let mut c = EtcdCluster::new(
            "demo",
            crate::api::EtcdClusterSpec {
                replicas: 3,
                version: "3.5.16".into(),
                ..Default::default()
            },
        );
        c.metadata.namespace = Some("ns".into());
        let st = crate::api::EtcdClusterStatus {
            members: vec![
                MemberStatus {
                    name: "demo-0".into(),
                    id: "00000000000000aa".into(),
                    leader: true,
                    healthy: true,
                    db_size: Some(1 << 20),
                    raft_index: Some(9),
                    ..Default::default()
                },
                MemberStatus {
                    name: "demo-1".into(),
                    id: "00000000000000bb".into(),
                    learner: true,
                    healthy: false,
                    error: Some("timeout".into()),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        c.status = Some(st);
        let doc = status_doc(&c, None);
        assert_eq!(doc["status"]["members"][0]["name"], "demo-0");
        assert_eq!(role(&c.status.as_ref().unwrap().members[1]), "learner");
        let mut by_hand = c.status.as_ref().unwrap().members[0].clone();
        by_hand.foreign = true;
        assert_eq!(role(&by_hand), "leader (foreign)");
        assert_eq!(quota_of(&c), 2 << 30);
        let table = status_table(&c, None);
        let row = |member: &str| {
            table
                .lines()
                .find(|l| l.contains(member) && l.contains("0000000000"))
                .unwrap_or_else(|| panic!("no row of {member} in\n{table}"))
        };
        let leader = row("demo-0");
        assert!(
            leader.contains("leader") && leader.contains("1.0 MiB / 2.0 GiB (0.0%)"),
            "{leader}"
        );
        let learner = row("demo-1");
        assert!(
            learner.contains("learner") && learner.contains("unhealthy: timeout"),
            "{learner}"
        );
        assert!(
            table.contains(
                "clients: https://demo-client.ns.svc:2379 (Service demo-client, ClusterIP)"
            ),
            "{table}"
        );
        c.spec.client_service = Some(crate::api::ClientServiceSpec {
            type_: Some(crate::api::ClientServiceType::NodePort),
            ..Default::default()
        });
        c.spec.tls = Some(crate::api::TlsSpec {
            mode: Some("none".into()),
            ..Default::default()
        });
        let table = status_table(&c, None);
        assert!(
            table.contains("clients: http://demo-client.ns.svc:2379 (Service demo-client, NodePort; from outside the cluster: `kubectl -n ns get service demo-client` shows the node port"),
            "{table}"
        );
    }
    #[test]
    fn status_table_shows_the_live_db_size_and_raft_index_of_its_own_pass() {
        use crate::model::{ClusterView, EtcdView, MemberStatusView, MemberView, Observed};
        let c = crate::fixtures::cluster("demo").replicas(1).build();
        let status = crate::api::EtcdClusterStatus {
            members: vec![MemberStatus {
                name: "demo-0".into(),
                id: "00000000000000aa".into(),
                healthy: true,
                // Status rounds to whole MiB: a fresh database reads 0 there.
                db_size: Some(0),
                ..Default::default()
            }],
            ..Default::default()
        };
        let view = ClusterView {
            members: vec![MemberView {
                name: "demo-0".into(),
                status: Some(MemberStatusView {
                    db_size: 20 << 10,
                    raft_index: 17,
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        };
        let pass = Pass {
            desired: crate::fixtures::cluster("demo").replicas(1).desired(),
            observed: Observed {
                etcd: EtcdView::Reached(view),
                ..Default::default()
            },
            step: crate::plan::Step::Idle,
            status: status.clone(),
            outcome: crate::engine::Outcome::Unchanged,
            defragmented: None,
        };
        let live = status_table(&c, Some(&pass));
        let row = live.lines().find(|l| l.contains("demo-0 ")).unwrap();
        assert!(
            row.contains("20.0 KiB / 2.0 GiB") && row.contains(" 17 "),
            "{row}"
        );
        // Without a live pass (as stored), the stored values.
        let mut stored = c.clone();
        stored.status = Some(status);
        let table = status_table(&stored, None);
        let row = table.lines().find(|l| l.contains("demo-0 ")).unwrap();
        assert!(
            row.contains("0 B / 2.0 GiB") && row.contains(" - "),
            "{row}"
        );
    }
}
