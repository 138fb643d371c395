//! `kubectl etcd logs NAME [--follow] [--since D] [--member M] [--raw]`: every member's etcd log
//! interleaved by time, each line prefixed with its member.
//!
//! Reads only (pods list, pods/log). The kubelet's timestamp on each line orders the lines of
//! different members (etcd 3.4's plain-text logger has none of its own); etcd's JSON lines are
//! made readable (`time LEVEL msg key=value…`) unless `--raw`. The formatting and the
//! interleaving are pure functions, tested below.

use std::time::Duration;

use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams, LogParams};
use serde_json::Value;

use crate::cli::flags::{Global, parse_duration};
use crate::cli::{Session, output};
use crate::error::Error;
use crate::objects;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The cluster.
    pub name: String,
    /// Keep printing new lines as members write them (lines print as they arrive).
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Only lines newer than this (e.g. 10m, 1h); default: since each member started.
    #[arg(long, value_parser = parse_duration)]
    pub since: Option<Duration>,
    /// Only this member (pod name like demo-1, or its ordinal).
    #[arg(long)]
    pub member: Option<String>,
    /// Print etcd's lines as it wrote them (JSON), still prefixed with the member.
    #[arg(long)]
    pub raw: bool,
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let s = Session::connect(g).await?;
    s.ensure_crd().await?;
    // Only pods and their logs are needed: a user who may not read EtcdClusters still gets them.
    s.get_cluster_if_readable(&a.name).await?;
    let pods = member_pods(&s, &a.name, a.member.as_deref()).await?;
    let api: Api<Pod> = Api::namespaced(s.client.clone(), &s.namespace);
    let params = LogParams {
        container: Some(objects::CONTAINER.into()),
        follow: a.follow,
        since_seconds: a.since.map(|d| d.as_secs().max(1) as i64),
        timestamps: true,
        ..Default::default()
    };
    let width = pods.iter().map(String::len).max().unwrap_or(0);
    let render = |member: &str, line: &str| {
        let (_, text) = split_timestamp(line);
        prefixed(
            member,
            width,
            &if a.raw { text.into() } else { readable(text) },
        )
    };
    if a.follow {
        let mut streams = Vec::new();
        for pod in &pods {
            match api.log_stream(pod, &params).await {
                Ok(r) => {
                    let pod = pod.clone();
                    streams.push(r.lines().map_ok(move |l| (pod.clone(), l)).boxed());
                }
                Err(e) => skip(&s, pod, e)?,
            }
        }
        let mut all = futures::stream::select_all(streams);
        while let Some(next) = all.next().await {
            match next {
                Ok((pod, line)) => {
                    if !output::print_stream_line(&render(&pod, &line))? {
                        return Ok(());
                    }
                }
                Err(e) => output::progress_line(&format!("warning: a log stream broke: {e}")),
            }
        }
        return Ok(());
    }
    let reads = futures::future::join_all(pods.iter().map(|p| api.logs(p, &params))).await;
    let mut logs = Vec::new();
    let mut denied = None;
    for (pod, read) in pods.iter().zip(reads) {
        match read {
            Ok(text) => logs.push((pod.clone(), text)),
            Err(e) => {
                let e = Error::kube("read the log of", "Pod", &s.namespace, pod, e);
                output::progress_line(&format!("warning: {}", e.report()));
                denied.get_or_insert(e);
            }
        }
    }
    if logs.is_empty()
        && let Some(e) = denied
    {
        return Err(e);
    }
    let lines: Vec<String> = interleave(&logs)
        .into_iter()
        .map(|(member, line)| render(member, line))
        .collect();
    if lines.is_empty() {
        return Ok(());
    }
    output::print_raw(&lines.join("\n"))
}

/// A member whose stream could not start is skipped with a warning (a pod still starting);
/// an unreachable API server ends the verb.
fn skip(s: &Session, pod: &str, e: kube::Error) -> Result<(), Error> {
    let e = Error::kube("follow the log of", "Pod", &s.namespace, pod, e);
    if matches!(e, Error::ApiUnreachable(_)) {
        return Err(e);
    }
    output::progress_line(&format!("warning: {}", e.report()));
    Ok(())
}

/// Names of the member pods (by ordinal), or of the one `member` names (`demo-1` or `1`).
async fn member_pods(s: &Session, name: &str, member: Option<&str>) -> Result<Vec<String>, Error> {
    let api: Api<Pod> = Api::namespaced(s.client.clone(), &s.namespace);
    let list = api
        .list(&ListParams::default().labels(&objects::selector_string(name)))
        .await
        .map_err(|e| Error::kube("list", "Pod", &s.namespace, name, e))?;
    let mut pods: Vec<(u32, String)> = list
        .items
        .iter()
        .filter_map(|p| objects::ordinal_of_pod(name, &p.name_any()).map(|o| (o, p.name_any())))
        .collect();
    pods.sort();
    let pods: Vec<String> = pods.into_iter().map(|(_, p)| p).collect();
    let Some(m) = member else {
        if pods.is_empty() {
            return Err(Error::NoPods {
                namespace: s.namespace.clone(),
                name: name.into(),
            });
        }
        return Ok(pods);
    };
    let wanted = match m.parse::<u32>() {
        Ok(o) => objects::pod_name(name, o),
        Err(_) => m.to_string(),
    };
    if pods.contains(&wanted) {
        Ok(vec![wanted])
    } else {
        Err(Error::Usage(format!(
            "EtcdCluster {}/{name} has no member pod {wanted} (members: {}); see `kubectl etcd status {name}`",
            s.namespace,
            if pods.is_empty() {
                "none".into()
            } else {
                pods.join(", ")
            }
        )))
    }
}

/// The kubelet's RFC 3339 timestamp (`logs?timestamps=true`) and the rest of the line.
pub fn split_timestamp(line: &str) -> (Option<jiff::Timestamp>, &str) {
    match line.split_once(' ') {
        Some((ts, rest)) => match ts.parse::<jiff::Timestamp>() {
            Ok(t) => (Some(t), rest),
            Err(_) => (None, line),
        },
        None => match line.parse::<jiff::Timestamp>() {
            Ok(t) => (Some(t), ""),
            Err(_) => (None, line),
        },
    }
}

/// The lines of every member's log (as the kubelet gives them, with timestamps) in one order by
/// time; a member's own lines keep their order, and a line without a timestamp stays after the
/// one before it.
pub fn interleave(logs: &[(String, String)]) -> Vec<(&str, &str)> {
    let mut all: Vec<(jiff::Timestamp, usize, usize, &str, &str)> = Vec::new();
    for (m, (member, text)) in logs.iter().enumerate() {
        let mut last = jiff::Timestamp::MIN;
        for (i, line) in text.lines().filter(|l| !l.is_empty()).enumerate() {
            if let (Some(t), _) = split_timestamp(line) {
                last = last.max(t);
            }
            all.push((last, m, i, member, line));
        }
    }
    all.sort_by_key(|(t, m, i, _, _)| (*t, *m, *i));
    all.into_iter().map(|(_, _, _, m, l)| (m, l)).collect()
}

/// `demo-0 | text`, the member name padded to `width` so the texts line up.
pub fn prefixed(member: &str, width: usize, text: &str) -> String {
    format!("{member:<width$} | {text}")
}

/// etcd's JSON log line (zap: `level`, `ts`, `caller`, `msg`, fields) as
/// `ts LEVEL msg key=value…`, fields in etcd's order, `caller` left out; any other line as is.
pub fn readable(line: &str) -> String {
    let Ok(Fields(fields)) = serde_json::from_str::<Fields>(line) else {
        return line.to_string();
    };
    let text = |k: &str| match fields.iter().find(|(name, _)| name == k).map(|(_, v)| v) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    };
    let mut out = vec![
        text("ts"),
        format!("{:<5}", text("level").to_uppercase()),
        text("msg"),
    ];
    out.retain(|s| !s.trim().is_empty());
    for (k, v) in &fields {
        if matches!(k.as_str(), "ts" | "level" | "msg" | "caller") {
            continue;
        }
        out.push(format!("{k}={}", field_value(v)));
    }
    out.join(" ")
}

/// A JSON object's fields in the order of the text (serde_json's own map sorts them).
struct Fields(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for Fields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Fields;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Fields, A::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = m.next_entry::<String, Value>()? {
                    fields.push(entry);
                }
                Ok(Fields(fields))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// A field's value: a bare word when it is one, else quoted (strings) or compact JSON.
fn field_value(v: &Value) -> String {
    match v {
        Value::String(s)
            if !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c == '"' || c == '=') =>
        {
            s.clone()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: &str = r#"{"level":"info","ts":"2026-05-01T10:00:00.123456Z","caller":"etcdserver/server.go:2100","msg":"published local member to cluster through raft","local-member-id":"8e9e05c52164694d","local-member-attributes":{"name":"demo-0","client-urls":["http://demo-0:2379"]},"request-path":"/0/members/8e9e05c52164694d/attributes","cluster-id":"cdf818194e3a8c32","publish-timeout":"7s"}"#;

    #[test]
    fn an_etcd_json_line_reads_as_time_level_message_and_fields() {
        assert_eq!(
            readable(JSON),
            "2026-05-01T10:00:00.123456Z INFO  published local member to cluster through raft \
             local-member-id=8e9e05c52164694d \
             local-member-attributes={\"client-urls\":[\"http://demo-0:2379\"],\"name\":\"demo-0\"} \
             request-path=/0/members/8e9e05c52164694d/attributes cluster-id=cdf818194e3a8c32 publish-timeout=7s"
        );
    }

    #[test]
    fn field_values_with_spaces_are_quoted_and_numbers_stay_bare() {
        let line = r#"{"level":"warn","ts":"t","msg":"slow","took":"1.2s","detail":"took too long","n":3,"ok":false,"empty":""}"#;
        assert_eq!(
            readable(line),
            r#"t WARN  slow took=1.2s detail="took too long" n=3 ok=false empty="""#
        );
    }

    #[test]
    fn lines_that_are_not_json_objects_stay_as_they_are() {
        let plain = "2026-05-01 10:00:00.123456 I | etcdmain: etcd Version: 3.4.23";
        assert_eq!(readable(plain), plain);
        assert_eq!(readable("[1,2]"), "[1,2]");
        assert_eq!(readable(""), "");
    }

    #[test]
    fn the_kubelet_timestamp_is_split_off() {
        let (t, rest) = split_timestamp("2026-05-01T10:00:00.5Z {\"msg\":\"x\"}");
        assert_eq!(t.unwrap().to_string(), "2026-05-01T10:00:00.5Z");
        assert_eq!(rest, "{\"msg\":\"x\"}");
        let (t, rest) = split_timestamp("no timestamp here");
        assert!(t.is_none());
        assert_eq!(rest, "no timestamp here");
    }

    #[test]
    fn members_interleave_by_time_and_keep_their_own_order() {
        // RFC 3339 with trimmed fractions (as the kubelet writes them) does not sort as text:
        // "10:00:01Z" comes before "10:00:01.5Z" in time but after it as a string.
        let logs = vec![
            (
                "demo-0".to_string(),
                "2026-05-01T10:00:00.9Z a1\n2026-05-01T10:00:01.5Z a2\ncontinued a2\n2026-05-01T10:00:03Z a3\n"
                    .to_string(),
            ),
            (
                "demo-1".to_string(),
                "2026-05-01T10:00:01Z b1\n2026-05-01T10:00:02Z b2\n".to_string(),
            ),
            ("demo-2".to_string(), String::new()),
        ];
        let order: Vec<(&str, &str)> = interleave(&logs)
            .into_iter()
            .map(|(m, l)| (m, split_timestamp(l).1))
            .collect();
        assert_eq!(
            order,
            [
                ("demo-0", "a1"),
                ("demo-1", "b1"),
                ("demo-0", "a2"),
                ("demo-0", "continued a2"),
                ("demo-1", "b2"),
                ("demo-0", "a3"),
            ]
        );
    }

    #[test]
    fn equal_times_keep_member_order() {
        let logs = vec![
            ("demo-1".to_string(), "2026-05-01T10:00:00Z x\n".to_string()),
            ("demo-0".to_string(), "2026-05-01T10:00:00Z y\n".to_string()),
        ];
        let members: Vec<&str> = interleave(&logs).into_iter().map(|(m, _)| m).collect();
        assert_eq!(members, ["demo-1", "demo-0"]);
    }

    #[test]
    fn every_line_carries_its_member_padded() {
        assert_eq!(prefixed("demo-1", 7, "x"), "demo-1  | x");
        assert_eq!(prefixed("demo-10", 7, "x"), "demo-10 | x");
    }
}
