//! The writer of the end-to-end tests where data is at stake: a pod that puts keys through the
//! cluster `demo`'s client Service throughout a change, and the check that every acknowledged
//! key is still there afterwards; the quorum sampler that watches the status meanwhile.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::*;

/// A pod that puts `w/<i>` through the client Service about twice a second (each put is a new
/// etcdctl process, ~65 ms of CPU: at 10 puts/s a writer took a third of the 2-core testbed) and
/// prints `ack <i> <t>` or `fail <i> <t>` per write, `t` the host's uptime in seconds (`/proc/uptime` is not namespaced,
/// so the test reads the same clock). Over https with the cluster's managed client certificate
/// (`demo-tls-client`, mounted where it exists: the kubelet brings renewals in), else plain http.
pub fn start_writer(ns: &str) {
    const IMAGE: &str = "gcr.io/etcd-development/etcd:v3.5.16";
    let script = "if [ -f /tls/tls.crt ]; then set -- --endpoints=https://demo-client:2379 --cacert=/tls/ca.crt --cert=/tls/tls.crt --key=/tls/tls.key; else set -- --endpoints=http://demo-client:2379; fi; \
        i=0; while true; do if etcdctl \"$@\" --command-timeout=5s put w/$i v$i >/dev/null 2>&1; then r=ack; else r=fail; fi; read t _ < /proc/uptime; echo $r $i $t; i=$((i+1)); sleep 0.4; done";
    let overrides = serde_json::json!({"spec": {
        "volumes": [{"name": "tls", "secret": {"secretName": "demo-tls-client", "optional": true}}],
        "containers": [{
            "name": "writer",
            "image": IMAGE,
            "command": ["sh", "-c", script],
            "volumeMounts": [{"name": "tls", "mountPath": "/tls", "readOnly": true}],
        }],
    }});
    ok(kubectl(&[
        "-n",
        ns,
        "run",
        "writer",
        &format!("--image={IMAGE}"),
        "--restart=Never",
        &format!("--overrides={overrides}"),
    ]));
    eventually(
        "the writer acknowledges writes",
        Duration::from_secs(60),
        || (writer_log(ns).acked.len() > 5).then_some(()),
    );
}

/// `start_writer` for a cluster `demo` with TLS: the pod mounts the client Secret `secret` (as
/// the kubelet keeps it current) and each put is a new etcdctl, so a new TLS connection that
/// checks the member's certificate against the Secret's `ca.crt` and presents its certificate.
pub fn start_tls_writer(ns: &str, secret: &str) {
    start_tls_writer_of(ns, "demo", secret);
}

/// `start_tls_writer` for the cluster `cluster`.
pub fn start_tls_writer_of(ns: &str, cluster: &str, secret: &str) {
    let put = format!(
        "etcdctl --endpoints=https://{cluster}-client:2379 --cacert=/tls/ca.crt \
         --cert=/tls/tls.crt --key=/tls/tls.key --dial-timeout=3s --command-timeout=5s"
    );
    let script = format!(
        "i=0; while true; do if {put} put w/$i v$i >/dev/null 2>&1; then r=ack; else r=fail; \
         fi; read t _ < /proc/uptime; echo $r $i $t; i=$((i+1)); sleep 0.4; done"
    );
    let pod = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "writer"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{
                "name": "writer",
                "image": "gcr.io/etcd-development/etcd:v3.5.16",
                "command": ["sh", "-c", script],
                "volumeMounts": [{"name": "tls", "mountPath": "/tls", "readOnly": true}],
            }],
            "volumes": [{"name": "tls", "secret": {"secretName": secret}}],
        },
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("writer.json");
    std::fs::write(&file, pod.to_string()).unwrap();
    ok(kubectl(&["-n", ns, "apply", "-f", file.to_str().unwrap()]));
    eventually(
        "the writer acknowledges writes",
        Duration::from_secs(90),
        || (writer_log(ns).acked.len() > 5).then_some(()),
    );
}

/// `start_writer` for a cluster `demo` whose TLS is switched on or off meanwhile: each put tries
/// https with the managed client certificate (`demo-tls-client`, mounted when it exists), then
/// plain http, so the writer follows whatever the member behind the client Service serves.
/// Either way a key is acknowledged only when etcd acknowledged its put.
pub fn start_switching_writer(ns: &str) {
    let put = "etcdctl --dial-timeout=3s --command-timeout=5s";
    let script = format!(
        "i=0; while true; do r=fail; \
         if [ -f /tls/tls.crt ] && {put} --endpoints=https://demo-client:2379 --cacert=/tls/ca.crt --cert=/tls/tls.crt --key=/tls/tls.key put w/$i v$i >/dev/null 2>&1; then r=ack; \
         elif {put} --endpoints=http://demo-client:2379 put w/$i v$i >/dev/null 2>&1; then r=ack; fi; \
         read t _ < /proc/uptime; echo $r $i $t; i=$((i+1)); sleep 0.4; done"
    );
    let pod = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "writer"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{
                "name": "writer",
                "image": "gcr.io/etcd-development/etcd:v3.5.16",
                "command": ["sh", "-c", script],
                "volumeMounts": [{"name": "tls", "mountPath": "/tls", "readOnly": true}],
            }],
            "volumes": [{"name": "tls", "secret": {"secretName": "demo-tls-client", "optional": true}}],
        },
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("writer.json");
    std::fs::write(&file, pod.to_string()).unwrap();
    ok(kubectl(&["-n", ns, "apply", "-f", file.to_str().unwrap()]));
    eventually(
        "the writer acknowledges writes",
        Duration::from_secs(90),
        || (writer_log(ns).acked.len() > 5).then_some(()),
    );
}

/// Seconds since the host booted, the writer's clock.
pub fn uptime() -> f64 {
    std::fs::read_to_string("/proc/uptime")
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// What the writer saw: acknowledged keys, and every write's outcome with its time.
pub struct WriterLog {
    pub acked: BTreeSet<String>,
    pub writes: Vec<(bool, f64)>,
}

impl WriterLog {
    /// (failed writes, longest time without an acknowledged write) within `from..to`.
    pub fn during(&self, from: f64, to: f64) -> (usize, f64) {
        let mut failed = 0;
        let (mut last_ack, mut stall) = (from, 0f64);
        for (acked, t) in self.writes.iter().filter(|(_, t)| *t >= from && *t <= to) {
            if *acked {
                stall = stall.max(t - last_ack);
                last_ack = *t;
            } else {
                failed += 1;
            }
        }
        (failed, stall.max(to - last_ack))
    }
}

pub fn writer_log(ns: &str) -> WriterLog {
    let r = kubectl(&["-n", ns, "logs", "writer"]);
    let mut log = WriterLog {
        acked: BTreeSet::new(),
        writes: Vec::new(),
    };
    for line in r.stdout.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [kind, i, t] = f[..] else { continue };
        let Ok(t) = t.parse::<f64>() else { continue };
        if kind == "ack" {
            log.acked.insert(format!("w/{i}"));
        }
        log.writes.push((kind == "ack", t));
    }
    log
}

/// Every acknowledged key is still there (read through member `demo-0`).
pub fn assert_no_acknowledged_write_lost(ns: &str) -> usize {
    let _ = kubectl(&["-n", ns, "delete", "pod", "writer", "--wait=false"]);
    std::thread::sleep(Duration::from_secs(1));
    let log = writer_log(ns);
    let keys: BTreeSet<String> = ok(etcdctl(
        ns,
        "demo-0",
        &["get", "--prefix", "w/", "--keys-only"],
    ))
    .stdout
    .lines()
    .filter(|l| !l.is_empty())
    .map(String::from)
    .collect();
    let lost: Vec<&String> = log.acked.difference(&keys).collect();
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    let failed = log.writes.iter().filter(|(a, _)| !a).count();
    eprintln!(
        "writer: {} acknowledged, {failed} failed, none lost",
        log.acked.len()
    );
    log.acked.len()
}

/// The testbed's second StorageClass (tests/cluster/up.sh makes it too; applied by the tests
/// that move members to it, for a testbed brought up before it existed). Like `standard`: no
/// volume expansion.
pub const CLASS_B: &str = "apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard-b
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
";

/// Samples the status of cluster `demo` every second until stopped: the healthy voters of each
/// sample against the quorum of that sample's voters.
pub struct QuorumSampler {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<(usize, Vec<String>)>,
}

impl QuorumSampler {
    pub fn start(ns: &str) -> QuorumSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, ns) = (stop.clone(), ns.to_string());
        let handle = std::thread::spawn(move || {
            let (mut samples, mut bad) = (0usize, Vec::new());
            while !flag.load(Ordering::Relaxed) {
                // A failed read (the API server busy) is no sample, not a failure.
                let r = kubectl(&["-n", &ns, "get", "etcdcluster", "demo", "-o", "json"]);
                let c: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_default();
                let members = c["status"]["members"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let voters: Vec<&serde_json::Value> =
                    members.iter().filter(|m| m["learner"] != true).collect();
                let healthy = voters.iter().filter(|m| m["healthy"] == true).count();
                if r.code == 0 && !voters.is_empty() {
                    samples += 1;
                    if healthy < voters.len() / 2 + 1 {
                        bad.push(format!(
                            "{healthy} of {} voters healthy: {members:?}",
                            voters.len()
                        ));
                    }
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            (samples, bad)
        });
        QuorumSampler { stop, handle }
    }

    /// The number of samples, or the samples below quorum.
    pub fn stop(self) -> Result<usize, Vec<String>> {
        self.stop.store(true, Ordering::Relaxed);
        let (samples, bad) = self.handle.join().expect("the quorum sampler panicked");
        if bad.is_empty() {
            Ok(samples)
        } else {
            Err(bad)
        }
    }
}
