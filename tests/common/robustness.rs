//! etcd's own robustness checker beside a fault-matrix row: the client of tests/robustness (built
//! by tests/cluster/robustness.sh) runs etcd's key-value and watch traffic against cluster
//! `demo` from this node (members' pod IPs and the client Service's cluster IP, with the
//! cluster's managed client certificate when it has one), records the history, and on stop
//! validates it with etcd's linearizability model (porcupine) and etcd's watch checks. The row's
//! own writer's puts are handed to it with their times and revisions, so the model accounts for
//! every revision; the members' WAL files give the persisted requests the watch checks replay.
//! The WAL files of the members at the start are hard-linked aside (same filesystem as the
//! volumes), so that a member replaced during the row still contributes the history it kept.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

/// A write to the cluster by someone else than the robustness client (the row's writer, a
/// fault filling the database): etcd's model accounts for every revision, so each goes into the
/// history with its times (Unix ns: call before the command started, return after it ended).
pub struct ForeignOp {
    /// One sequential source (its operations never overlap).
    pub stream: String,
    pub call_ns: u128,
    pub return_ns: u128,
    pub what: Foreign,
}

pub enum Foreign {
    /// A put; `revision` 0: not acknowledged (it may or may not have taken effect).
    Put {
        key: String,
        value: String,
        revision: i64,
    },
    /// A compaction at `revision`; `done`: acknowledged.
    Compact { revision: i64, done: bool },
}

impl ForeignOp {
    /// The stop-file line (a long value that repeats a short unit is written as `put-repeat`,
    /// the unit and how many times).
    fn line(&self) -> String {
        let (s, c, r) = (&self.stream, self.call_ns, self.return_ns);
        match &self.what {
            Foreign::Put {
                key,
                value,
                revision,
            } => match repeated_unit(value) {
                Some(unit) => format!(
                    "put-repeat {s} {key} {unit} {} {c} {r} {revision}\n",
                    value.len() / unit.len()
                ),
                None => format!("put {s} {key} {value} {c} {r} {revision}\n"),
            },
            Foreign::Compact { revision, done } => {
                format!("compact {s} {revision} {c} {r} {}\n", u8::from(*done))
            }
        }
    }
}

/// The unit (at most 16 bytes, no whitespace) a long value repeats, if it is one.
fn repeated_unit(value: &str) -> Option<&str> {
    if value.len() <= 64 || !value.is_ascii() {
        return None;
    }
    (1..=16)
        .filter(|u| value.len().is_multiple_of(*u))
        .map(|u| &value[..u])
        .find(|unit| {
            !unit.contains(char::is_whitespace)
                && value
                    .as_bytes()
                    .chunks(unit.len())
                    .all(|c| c == unit.as_bytes())
        })
}

/// A value of about `bytes` bytes, unique to `n`: etcd's checker matches each put with the
/// requests the members persisted by its value, so two puts of one value (a refused one, then
/// one that took effect) would be taken for each other.
pub fn unique_value(n: usize, bytes: usize) -> String {
    let unit = format!("v{n:07x}");
    unit.repeat(bytes.div_ceil(unit.len()))
}

/// Writes made by the faults themselves, by namespace, until the row hands them over.
static RECORDED: std::sync::Mutex<Vec<(String, ForeignOp)>> = std::sync::Mutex::new(Vec::new());

/// Records a write a fault made in namespace `ns` (see `ForeignOp`).
pub fn record(ns: &str, op: ForeignOp) {
    RECORDED.lock().unwrap().push((ns.to_string(), op));
}

/// The writes recorded in `ns`, removed from the record.
pub fn take_recorded(ns: &str) -> Vec<ForeignOp> {
    let mut all = RECORDED.lock().unwrap();
    let (mine, rest) = std::mem::take(&mut *all)
        .into_iter()
        .partition(|(n, _)| n == ns);
    *all = rest;
    mine.into_iter().map(|(_, op)| op).collect()
}

/// `etcdctl put KEY` (the value on stdin) through member `pod`, recorded for etcd's checker.
pub fn recorded_put(ns: &str, pod: &str, key: &str, value: &str) -> Run {
    let call_ns = unix_ns();
    let r = kubectl_stdin(
        &[
            "-n", ns, "exec", "-i", pod, "--", "etcdctl", "put", "-w", "json", key,
        ],
        value,
    );
    let revision = acknowledged_revision(&r);
    record(
        ns,
        ForeignOp {
            stream: format!("put-{key}"),
            call_ns,
            return_ns: unix_ns(),
            what: Foreign::Put {
                key: key.into(),
                value: value.into(),
                revision,
            },
        },
    );
    r
}

/// The revision `etcdctl put -w json` reports; 0 when it failed.
pub fn acknowledged_revision(r: &Run) -> i64 {
    if r.code != 0 {
        return 0;
    }
    serde_json::from_str::<serde_json::Value>(&r.stdout)
        .ok()
        .and_then(|v| v["header"]["revision"].as_i64())
        .unwrap_or(0)
}

/// Nanoseconds since the Unix epoch (the robustness client reads the same clock).
pub fn unix_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// What etcd's checker found.
pub struct Verdict {
    /// Operations in the history checked (key-value operations of every client).
    pub operations: u64,
    pub linearizable: bool,
    /// "Success", or the check that failed and why.
    pub linearization: String,
    pub watch: String,
    pub serializable: String,
    /// Anything that kept a check from running.
    pub error: String,
}

impl Verdict {
    /// The checker did not decide: porcupine's search ran out of its 5 minutes (on a busy
    /// 2-core machine, a long history with many writes of unknown outcome, such as a full
    /// database's refused puts), and nothing else failed. Not a wrong outcome: a row reports it
    /// and does not fail on it (speed belongs to the machine); "illegal" and every watch or
    /// serializable failure still fail.
    pub fn undecided(&self) -> bool {
        self.linearization == "Timeout" && self.error.is_empty()
    }

    /// `None` when every check ran and passed; else what failed.
    pub fn problem(&self) -> Option<String> {
        let passed = self.linearizable
            && self.watch == "Success"
            && self.serializable == "Success"
            && self.error.is_empty();
        (!passed).then(|| {
            format!(
                "etcd robustness checker: linearization {}, watch {}, serializable {}{}",
                self.linearization,
                self.watch,
                self.serializable,
                if self.error.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", self.error)
                }
            )
        })
    }
}

pub struct Robustness {
    child: Child,
    /// Rewrites the targets file every few seconds until dropped.
    refresh: Option<(
        std::sync::Arc<std::sync::atomic::AtomicBool>,
        std::thread::JoinHandle<()>,
    )>,
    dir: tempfile::TempDir,
    ns: String,
    /// Directories holding hard links to the WAL files of the members at the start.
    kept: Vec<PathBuf>,
}

/// The client's binary: tests/cluster/robustness.sh builds it once (cached under $KE_CACHE).
fn binary() -> Result<String, String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cluster/robustness.sh");
    let o = Command::new(script)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("{script}: {e}"))?;
    let path = String::from_utf8_lossy(&o.stdout).trim().to_string();
    if o.status.success() && !path.is_empty() {
        Ok(path)
    } else {
        Err(format!(
            "{script} failed (exit {:?}): it builds the robustness client",
            o.status.code()
        ))
    }
}

fn get(ns: &str, args: &[&str]) -> String {
    let mut all = vec!["-n", ns, "get"];
    all.extend_from_slice(args);
    kubectl(&all).stdout.trim().to_string()
}

/// The node directory of member `pod`'s etcd data dir (the volume's host path + `/data`).
fn data_dir(ns: &str, pod: &str) -> Option<PathBuf> {
    let pv = get(
        ns,
        &[
            "pvc",
            &format!("data-{pod}"),
            "-o",
            "jsonpath={.spec.volumeName}",
        ],
    );
    if pv.is_empty() {
        return None;
    }
    let dir = kubectl(&["get", "pv", &pv, "-o", "jsonpath={.spec.hostPath.path}"])
        .stdout
        .trim()
        .to_string();
    (!dir.is_empty()).then(|| Path::new(&dir).join("data"))
}

/// The member pods of cluster `demo` now (`demo-<n>`).
fn member_pods(ns: &str) -> Vec<String> {
    get(
        ns,
        &[
            "pods",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}",
        ],
    )
    .lines()
    .filter(|p| {
        p.strip_prefix("demo-")
            .is_some_and(|n| n.parse::<u32>().is_ok())
    })
    .map(String::from)
    .collect()
}

/// Hard-links the WAL files of `data` under `keep/member/wal` (what etcd's WAL reader opens).
fn keep_wal(data: &Path, keep: &Path) -> Result<(), String> {
    let wal = data.join("member/wal");
    let to = keep.join("member/wal");
    std::fs::create_dir_all(&to).map_err(|e| format!("{}: {e}", to.display()))?;
    let entries = std::fs::read_dir(&wal).map_err(|e| format!("{}: {e}", wal.display()))?;
    for e in entries.flatten() {
        let name = e.file_name();
        if name.to_string_lossy().ends_with(".wal") {
            let _ = std::fs::hard_link(e.path(), to.join(&name));
        }
    }
    Ok(())
}

/// The managed client certificate's files and flags, when cluster `demo` has TLS.
fn tls_args(ns: &str, dir: &Path, cmd: &mut Command) -> Result<(), String> {
    if write_tls_files(ns, dir)? {
        for (key, flag) in TLS_FILES {
            cmd.arg(flag).arg(dir.join(key));
        }
        cmd.arg("--server-name")
            .arg(format!("demo-client.{ns}.svc"));
    }
    Ok(())
}

/// The client Secret's keys, and the client's flag for each file.
const TLS_FILES: [(&str, &str); 3] = [
    ("ca.crt", "--cacert"),
    ("tls.crt", "--cert"),
    ("tls.key", "--key"),
];

/// Writes the client Secret's files into `dir` (each atomically: the client reads them at every
/// new connection, so a cluster made again under a new CA is dialed with its new certificate);
/// `false` when the cluster has no client Secret (no TLS).
fn write_tls_files(ns: &str, dir: &Path) -> Result<bool, String> {
    let secret = kubectl(&["-n", ns, "get", "secret", "demo-tls-client", "-o", "json"]);
    if secret.code != 0 {
        return Ok(false);
    }
    let s: k8s_openapi::api::core::v1::Secret =
        serde_json::from_str(&secret.stdout).map_err(|e| format!("secret demo-tls-client: {e}"))?;
    let data = s.data.unwrap_or_default();
    for (key, _) in TLS_FILES {
        let pem = data
            .get(key)
            .map(|b| b.0.clone())
            .filter(|pem| !pem.is_empty())
            .ok_or_else(|| format!("secret demo-tls-client has no {key}"))?;
        let file = dir.join(key);
        if std::fs::read(&file).is_ok_and(|now| now == pem) {
            continue;
        }
        let tmp = dir.join(format!(".{key}.new"));
        std::fs::write(&tmp, pem).map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, &file).map_err(|e| e.to_string())?;
    }
    Ok(true)
}

/// Hard-links the WAL files of the members now beside their volumes (see the module doc).
fn keep_members_wal(ns: &str) -> Vec<PathBuf> {
    let mut kept = Vec::new();
    for pod in member_pods(ns) {
        let Some(data) = data_dir(ns, &pod) else {
            continue;
        };
        let Some(parent) = data.parent().and_then(Path::parent) else {
            continue;
        };
        let keep = parent.join(format!(".ke-wal-{ns}")).join(&pod);
        if keep_wal(&data, &keep).is_ok() {
            kept.push(keep);
        }
    }
    kept
}

/// Where the client's endpoints are now: `member-<i>` (pod `demo-<i>`'s IP) and `cluster` (the
/// client Service's cluster IP), one `NAME HOST:PORT` a line; pods and Services that come back
/// come back at new addresses.
fn targets(ns: &str) -> String {
    let mut out = String::new();
    let pods = get(
        ns,
        &[
            "pods",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.status.podIP}{\"\\n\"}{end}",
        ],
    );
    for line in pods.lines() {
        if let [name, ip] = line.split_whitespace().collect::<Vec<_>>()[..]
            && let Some(i) = name.strip_prefix("demo-")
            && i.parse::<u32>().is_ok()
        {
            out.push_str(&format!("member-{i} {ip}:2379\n"));
        }
    }
    let service = get(
        ns,
        &["svc", "demo-client", "-o", "jsonpath={.spec.clusterIP}"],
    );
    if !service.is_empty() {
        out.push_str(&format!("cluster {service}:2379\n"));
    }
    out
}

/// Writes `targets(ns)` to `file` (atomically), when it found the Service.
fn write_targets(ns: &str, file: &Path) {
    let t = targets(ns);
    if t.contains("cluster ") {
        let tmp = file.with_extension("tmp");
        if std::fs::write(&tmp, t).is_ok() {
            let _ = std::fs::rename(&tmp, file);
        }
    }
}

impl Robustness {
    /// Starts the client against the (empty) cluster `demo` in `ns` and waits until its traffic
    /// runs. The row's writer must start after this: etcd's model starts at revision 1.
    pub fn start(ns: &str) -> Result<Robustness, String> {
        let bin = binary()?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let members: Vec<String> = (0..3)
            .map(|i| {
                get(
                    ns,
                    &[
                        "pod",
                        &format!("demo-{i}"),
                        "-o",
                        "jsonpath={.status.podIP}",
                    ],
                )
            })
            .filter(|ip| !ip.is_empty())
            .map(|ip| format!("{ip}:2379"))
            .collect();
        let service = get(
            ns,
            &["svc", "demo-client", "-o", "jsonpath={.spec.clusterIP}"],
        );
        if service.is_empty() {
            return Err("the robustness client: service demo-client has no cluster IP".into());
        }
        let mut cmd = Command::new(&bin);
        cmd.arg("--endpoints")
            .arg(members.join(","))
            .arg("--cluster-endpoint")
            .arg(format!("{service}:2379"))
            .arg("--stop-file")
            .arg(dir.path().join("stop"))
            .arg("--ready-file")
            .arg(dir.path().join("ready"))
            .arg("--targets-file")
            .arg(dir.path().join("targets"));
        tls_args(ns, dir.path(), &mut cmd)?;
        let stdout = std::fs::File::create(dir.path().join("out")).map_err(|e| e.to_string())?;
        let stderr = std::fs::File::create(dir.path().join("err")).map_err(|e| e.to_string())?;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("{bin}: {e}"))?;
        let start = Instant::now();
        while !dir.path().join("ready").exists() {
            let exited = child.try_wait().ok().flatten();
            if exited.is_some() || start.elapsed() > Duration::from_secs(150) {
                let _ = child.kill();
                let _ = child.wait();
                let out = std::fs::read_to_string(dir.path().join("out")).unwrap_or_default();
                let err = std::fs::read_to_string(dir.path().join("err")).unwrap_or_default();
                return Err(format!(
                    "the robustness client did not start its traffic: {} {}",
                    out.trim(),
                    err.lines().rev().take(5).collect::<Vec<_>>().join(" / ")
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let kept = keep_members_wal(ns);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (flag, at, n) = (stop.clone(), dir.path().to_path_buf(), ns.to_string());
        let tls = dir.path().join("ca.crt").exists();
        let refresher = std::thread::spawn(move || {
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                write_targets(&n, &at.join("targets"));
                if tls {
                    // A cluster being made again has no Secret for a moment: the files stay.
                    let _ = write_tls_files(&n, &at);
                }
                for _ in 0..10 {
                    if flag.load(std::sync::atomic::Ordering::Relaxed) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        });
        Ok(Robustness {
            child,
            refresh: Some((stop, refresher)),
            dir,
            ns: ns.to_string(),
            kept,
        })
    }

    /// Stops the traffic, hands over the writer's puts and the members' data dirs, and waits for
    /// the verdict.
    pub fn stop(mut self, writer: Vec<ForeignOp>) -> Result<Verdict, String> {
        self.stop_refresh();
        write_targets(&self.ns, &self.dir.path().join("targets"));
        let mut lines = String::new();
        let mut dirs: Vec<PathBuf> = self.kept.clone();
        dirs.extend(
            member_pods(&self.ns)
                .iter()
                .filter_map(|p| data_dir(&self.ns, p)),
        );
        for d in &dirs {
            lines.push_str(&format!("data-dir {}\n", d.display()));
        }
        let mut ops: Vec<ForeignOp> = take_recorded(&self.ns);
        ops.extend(writer);
        ops.sort_by_key(|op| op.call_ns);
        for op in &ops {
            lines.push_str(&op.line());
        }
        let tmp = self.dir.path().join("stop.tmp");
        std::fs::write(&tmp, lines).map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, self.dir.path().join("stop")).map_err(|e| e.to_string())?;
        let start = Instant::now();
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return self.verdict();
            }
            if start.elapsed() > Duration::from_secs(600) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err("the robustness client gave no verdict within 10 min".into());
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn stop_refresh(&mut self) {
        if let Some((flag, handle)) = self.refresh.take() {
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = handle.join();
        }
    }

    fn verdict(&self) -> Result<Verdict, String> {
        let out = std::fs::read_to_string(self.dir.path().join("out")).unwrap_or_default();
        let err = std::fs::read_to_string(self.dir.path().join("err")).unwrap_or_default();
        let line = out.lines().last().unwrap_or("");
        let v: serde_json::Value = serde_json::from_str(line).map_err(|_| {
            let panic = err.lines().find(|l| l.starts_with("panic:")).unwrap_or("");
            format!(
                "the robustness client printed no verdict: {out} {panic} {}",
                err.lines().rev().take(3).collect::<Vec<_>>().join(" / ")
            )
        })?;
        eprintln!("[robustness {}] {line}", self.ns);
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        Ok(Verdict {
            operations: v["operations"].as_u64().unwrap_or(0),
            linearizable: v["linearizable"] == true,
            linearization: s("linearization"),
            watch: s("watch"),
            serializable: s("serializable"),
            error: s("error"),
        })
    }
}

impl Drop for Robustness {
    fn drop(&mut self) {
        self.stop_refresh();
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(keep) = self.kept.first().and_then(|k| k.parent()) {
            let _ = std::fs::remove_dir_all(keep);
        }
    }
}
