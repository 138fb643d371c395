#![cfg(feature = "live")]
//! The etcd wrapper against real etcd servers (3.4, 3.5, 3.6, 3.7) on loopback.
//!
//! Binaries come from `$KE_ETCD_BIN_DIR/v<version>/etcd` (default
//! `/var/cache/kubectl-etcd/etcd`, filled by `tests/cluster/etcd-bins.sh`); `VERSIONS` there names
//! the exact patch release of each minor. Every test starts its own cluster on its own ports
//! (below 32768, distinct per test so tests run in parallel) in a temporary directory and kills
//! exactly the processes it started when it ends.
//!
//! Run: `cargo test --features live --test etcd_live`
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use kubectl_etcd::etcd::{DowngradeAction, EtcdClient, EtcdError, Member};
use kubectl_etcd::model::fmt_id;

const DIAL_TIMEOUT: Duration = Duration::from_secs(2);
const RPC_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a cluster may take to elect a leader, a learner to catch up, a removed member to stop.
const SETTLE: Duration = Duration::from_secs(40);
const POLL: Duration = Duration::from_millis(100);
const BIN_SCRIPT: &str = "tests/cluster/etcd-bins.sh";

// ---------------------------------------------------------------------------------------------
// etcd binaries

fn bin_dir() -> PathBuf {
    std::env::var_os("KE_ETCD_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/kubectl-etcd/etcd"))
}

/// The exact version of `minor` ("3.5") listed in the binary dir, and its etcd binary.
/// Panics (the test fails, it is not skipped) when the binaries are missing.
fn etcd_binary(minor: &str) -> (String, PathBuf) {
    etcd_binary_in(&bin_dir(), minor)
}

fn etcd_binary_in(dir: &Path, minor: &str) -> (String, PathBuf) {
    let versions = std::fs::read_to_string(dir.join("VERSIONS")).unwrap_or_else(|e| {
        panic!(
            "no etcd binaries: cannot read {}/VERSIONS ({e}); run {BIN_SCRIPT} (or set KE_ETCD_BIN_DIR)",
            dir.display()
        )
    });
    let version = versions
        .lines()
        .map(str::trim)
        .find(|v| {
            v.strip_prefix(minor)
                .is_some_and(|rest| rest.starts_with('.'))
        })
        .unwrap_or_else(|| {
            panic!(
                "no etcd {minor}.x in {}/VERSIONS; run {BIN_SCRIPT}",
                dir.display()
            )
        })
        .to_owned();
    let bin = dir.join(format!("v{version}")).join("etcd");
    assert!(
        bin.is_file(),
        "{} is missing; run {BIN_SCRIPT}",
        bin.display()
    );
    (version, bin)
}

/// The etcd binary of exactly `version` ("3.6.16"), which VERSIONS must list.
fn etcd_binary_exact(version: &str) -> PathBuf {
    let dir = bin_dir();
    let listed = std::fs::read_to_string(dir.join("VERSIONS")).unwrap_or_default();
    assert!(
        listed.lines().any(|v| v.trim() == version),
        "etcd {version} is not in {}/VERSIONS; run {BIN_SCRIPT}",
        dir.display()
    );
    let bin = dir.join(format!("v{version}")).join("etcd");
    assert!(
        bin.is_file(),
        "{} is missing; run {BIN_SCRIPT}",
        bin.display()
    );
    bin
}

// ---------------------------------------------------------------------------------------------
// a cluster of etcd processes on loopback

struct Node {
    name: String,
    client_url: String,
    peer_url: String,
    /// The peer URL the others dial, when not `peer_url` (a proxy in front of it).
    advertised_peer_url: Option<String>,
    child: Option<Child>,
}

impl Node {
    fn advertised(&self) -> &str {
        self.advertised_peer_url
            .as_deref()
            .unwrap_or(&self.peer_url)
    }
}

struct Cluster {
    bin: PathBuf,
    version: String,
    dir: tempfile::TempDir,
    base_port: u16,
    nodes: Vec<Node>,
}

impl Cluster {
    /// Starts `size` members named m0.. with client port `base_port + 2i` and peer port
    /// `base_port + 2i + 1`, and waits until every member is healthy.
    async fn start(minor: &str, base_port: u16, size: usize) -> Cluster {
        let (version, bin) = etcd_binary(minor);
        Self::start_on(version, bin, base_port, size).await
    }

    /// [`Cluster::start`] on exactly `version` ("3.6.16").
    async fn start_version(version: &str, base_port: u16, size: usize) -> Cluster {
        let bin = etcd_binary_exact(version);
        Self::start_on(version.to_owned(), bin, base_port, size).await
    }

    async fn start_on(version: String, bin: PathBuf, base_port: u16, size: usize) -> Cluster {
        let mut cluster = Cluster {
            bin,
            version,
            dir: tempfile::tempdir().expect("a temporary directory"),
            base_port,
            nodes: Vec::new(),
        };
        for i in 0..size {
            let node = cluster.node(i);
            cluster.nodes.push(node);
        }
        let initial = cluster.initial_cluster(size);
        for i in 0..size {
            cluster.spawn(i, &initial, "new");
        }
        for i in 0..size {
            cluster.wait_healthy(i).await;
        }
        cluster
    }

    fn node(&self, i: usize) -> Node {
        let client = self.base_port + 2 * i as u16;
        Node {
            name: format!("m{i}"),
            client_url: format!("http://127.0.0.1:{client}"),
            peer_url: format!("http://127.0.0.1:{}", client + 1),
            advertised_peer_url: None,
            child: None,
        }
    }

    /// `--initial-cluster` for the first `n` nodes.
    fn initial_cluster(&self, n: usize) -> String {
        self.nodes[..n]
            .iter()
            .map(|n| format!("{}={}", n.name, n.advertised()))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn log_path(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("{}.log", self.nodes[i].name))
    }

    fn spawn(&mut self, i: usize, initial_cluster: &str, state: &str) {
        let bin = self.bin.clone();
        self.spawn_with(&bin, i, initial_cluster, state);
    }

    /// Stops node `i` gracefully (SIGTERM, as the kubelet stops a deleted pod and etcd's guides
    /// stop a member) and starts it again on its data dir with the etcd binary `bin` (a rolling
    /// upgrade or downgrade of one member), then waits until it is healthy. Graceful matters: a
    /// member reports the storage version a downgrade wrote before its backend commits it, and
    /// a SIGKILL within that commit interval left a 3.7 db that 3.6.16 refused ("version
    /// \"3.7.0\" is not supported"; seen once in five runs).
    async fn restart_on(&mut self, bin: &Path, i: usize) {
        if let Some(child) = &self.nodes[i].child {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
        }
        assert!(
            self.wait_exit(i, SETTLE).await.is_some(),
            "m{i} did not stop on SIGTERM"
        );
        self.kill(i);
        let initial = self.initial_cluster(self.nodes.len());
        self.spawn_with(bin, i, &initial, "existing");
        self.wait_healthy(i).await;
    }

    fn spawn_with(&mut self, bin: &Path, i: usize, initial_cluster: &str, state: &str) {
        let node = &self.nodes[i];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path(i))
            .expect("an etcd log file");
        let child = Command::new(bin)
            .arg("--name")
            .arg(&node.name)
            .arg("--data-dir")
            .arg(self.dir.path().join(&node.name))
            .arg("--listen-client-urls")
            .arg(&node.client_url)
            .arg("--advertise-client-urls")
            .arg(&node.client_url)
            .arg("--listen-peer-urls")
            .arg(&node.peer_url)
            .arg("--initial-advertise-peer-urls")
            .arg(node.advertised())
            .arg("--initial-cluster")
            .arg(initial_cluster)
            .arg("--initial-cluster-state")
            .arg(state)
            .arg("--initial-cluster-token")
            .arg(format!("live-{}", self.base_port))
            .env_clear()
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("a log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        self.nodes[i].child = Some(child);
    }

    /// Adds node `i` (a new name and ports) to the nodes known to the test, not to etcd.
    fn plan_node(&mut self) -> usize {
        let i = self.nodes.len();
        let node = self.node(i);
        self.nodes.push(node);
        i
    }

    async fn client(&self, i: usize) -> EtcdClient {
        let url = self.nodes[i].client_url.clone();
        retry(&format!("connect to {url}"), || {
            let url = url.clone();
            async move { EtcdClient::connect(&url, DIAL_TIMEOUT).await }
        })
        .await
        .with_rpc_timeout(RPC_TIMEOUT)
    }

    async fn wait_healthy(&self, i: usize) {
        let client = self.client(i).await;
        retry(&format!("health of {}", self.nodes[i].name), || {
            let mut c = client.clone();
            async move { c.health().await }
        })
        .await;
    }

    /// Waits for node `i`'s process to exit by itself; returns how, or None if it still runs.
    async fn wait_exit(&mut self, i: usize, within: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + within;
        let child = self.nodes[i].child.as_mut().expect("a started node");
        loop {
            if let Some(status) = child.try_wait().expect("the etcd process state") {
                return Some(status);
            }
            if Instant::now() > end {
                return None;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.nodes[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn log_tail(&self, i: usize) -> String {
        let text = std::fs::read_to_string(self.log_path(i)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
        if std::thread::panicking() {
            for i in 0..self.nodes.len() {
                eprintln!(
                    "--- last lines of {} ({} {}):\n{}",
                    self.nodes[i].name,
                    self.version,
                    self.nodes[i].client_url,
                    self.log_tail(i)
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// helpers

/// The error with every source below it, for failure messages.
fn report(error: &EtcdError) -> String {
    let mut text = error.to_string();
    let mut next = std::error::Error::source(error);
    while let Some(e) = next {
        text.push_str(": ");
        text.push_str(&e.to_string());
        next = e.source();
    }
    text
}

/// Retries `call` while it fails transiently, for at most [`SETTLE`]; panics on anything else.
async fn retry<T, F, Fut>(what: &str, mut call: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, EtcdError>>,
{
    let end = Instant::now() + SETTLE;
    loop {
        match call().await {
            Ok(value) => return value,
            Err(e) if e.is_transient() && Instant::now() < end => tokio::time::sleep(POLL).await,
            Err(e) => panic!("{what}: {} (transient: {})", report(&e), e.is_transient()),
        }
    }
}

/// Polls `check` until it returns true, for at most [`SETTLE`].
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let end = Instant::now() + SETTLE;
    while !check().await {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        tokio::time::sleep(POLL).await;
    }
}

fn names(members: &[Member]) -> Vec<String> {
    let mut names: Vec<String> = members.iter().map(|m| m.name.clone()).collect();
    names.sort();
    names
}

/// Every member's status agrees on one cluster, one leader among them, and the version.
async fn assert_one_leader(cluster: &Cluster, nodes: &[usize]) -> u64 {
    let mut statuses = Vec::new();
    for &i in nodes {
        let c = cluster.client(i).await;
        statuses.push(
            retry("status", || {
                let mut c = c.clone();
                async move { c.status().await }
            })
            .await,
        );
    }
    let cluster_id = statuses[0].cluster_id;
    let leader = statuses[0].leader_id;
    assert_ne!(cluster_id, 0);
    assert_ne!(leader, 0, "no leader");
    for s in &statuses {
        assert_eq!(s.cluster_id, cluster_id, "one cluster id");
        assert_eq!(s.leader_id, leader, "one leader");
        assert_eq!(s.version, cluster.version, "server version");
        assert!(!s.is_learner);
        assert!(s.db_size > 0 && s.db_size_in_use > 0 && s.db_size_in_use <= s.db_size);
        assert!(s.raft_term > 0 && s.raft_index > 0);
        assert!(s.errors.is_empty(), "{:?}", s.errors);
    }
    let leaders: Vec<_> = statuses.iter().filter(|s| s.is_leader()).collect();
    assert_eq!(leaders.len(), 1, "exactly one member says it leads");
    leader
}

/// Which of `nodes` currently leads, by asking each.
async fn leader_index(cluster: &Cluster, nodes: &[usize]) -> usize {
    for &i in nodes {
        let mut c = cluster.client(i).await;
        if let Ok(s) = c.status().await
            && s.is_leader()
        {
            return i;
        }
    }
    panic!("none of {nodes:?} leads");
}

async fn member_id(cluster: &Cluster, i: usize) -> u64 {
    let mut c = cluster.client(i).await;
    c.status()
        .await
        .map_err(|e| report(&e))
        .expect("status")
        .member_id
}

// ---------------------------------------------------------------------------------------------
// scenarios

/// Start 3 → status, health, put/get → add a learner → start it → promote once caught up →
/// remove it → it stops and cannot come back.
async fn learner_lifecycle(minor: &str, base_port: u16) {
    let mut cluster = Cluster::start(minor, base_port, 3).await;
    let voters = [0, 1, 2];
    assert_one_leader(&cluster, &voters).await;

    let mut c0 = cluster.client(0).await;
    let mut c1 = cluster.client(1).await;
    let list = c0.member_list().await.map_err(|e| report(&e)).unwrap();
    assert_eq!(names(&list.members), ["m0", "m1", "m2"]);
    assert!(list.members.iter().all(|m| m.started() && !m.is_learner));
    assert_eq!(
        list.members
            .iter()
            .find(|m| m.name == "m1")
            .unwrap()
            .client_urls,
        [cluster.nodes[1].client_url.clone()]
    );
    let status = c0.status().await.unwrap();
    assert_eq!(list.cluster_id, status.cluster_id);

    c0.put("/live/greeting", "hello")
        .await
        .map_err(|e| report(&e))
        .unwrap();
    assert_eq!(
        c1.get("/live/greeting").await.unwrap().as_deref(),
        Some("hello")
    );
    assert_eq!(c1.get("/live/absent").await.unwrap(), None);

    // add m3 as a learner; right after start etcd may answer "unhealthy cluster" for a while
    let new = cluster.plan_node();
    let peer_url = cluster.nodes[new].peer_url.clone();
    let learner = retry("add learner", || {
        let mut c = c0.clone();
        let peer_url = peer_url.clone();
        async move { c.add_learner(&peer_url).await }
    })
    .await;
    assert!(learner.is_learner && !learner.started());
    assert_eq!(learner.peer_urls, vec![peer_url.clone()]);
    // The member that answered the add applied it; another one may apply it a moment later
    // (its member list is its own state), so it is asked until it has (seen once: 3 on 3.7).
    let mut list = c1.member_list().await.unwrap();
    for _ in 0..50 {
        if list.members.len() == 4 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        list = c1.member_list().await.unwrap();
    }
    assert_eq!(list.members.len(), 4);
    let listed = list
        .members
        .iter()
        .find(|m| m.id == learner.id)
        .expect("the learner is listed");
    assert!(listed.is_learner && !listed.started());

    let initial = cluster.initial_cluster(new + 1);
    cluster.spawn(new, &initial, "existing");
    let mut c3 = cluster.client(new).await;
    eventually("the learner reports itself as a learner", || {
        let mut c = c3.clone();
        async move {
            c.status()
                .await
                .is_ok_and(|s| s.is_learner && s.leader_id != 0)
        }
    })
    .await;

    retry(&format!("promote {}", fmt_id(learner.id)), || {
        let mut c = c0.clone();
        async move { c.promote(learner.id).await }
    })
    .await;
    // each member answers the member list from its own applied state, which may lag a moment
    for i in [0, 1, 2, new] {
        let c = cluster.client(i).await;
        eventually("every member lists m3 as a started voter", || {
            let mut c = c.clone();
            async move {
                c.member_list().await.is_ok_and(|list| {
                    names(&list.members) == ["m0", "m1", "m2", "m3"]
                        && list.members.iter().all(|m| m.started() && !m.is_learner)
                })
            }
        })
        .await;
    }
    cluster.wait_healthy(new).await;
    assert_eq!(
        c3.get("/live/greeting").await.unwrap().as_deref(),
        Some("hello")
    );
    assert_one_leader(&cluster, &[0, 1, 2, new]).await;

    // remove it again
    retry(&format!("remove {}", fmt_id(learner.id)), || {
        let mut c = c1.clone();
        async move { c.remove(learner.id).await }
    })
    .await;
    let list = c1.member_list().await.unwrap();
    assert_eq!(names(&list.members), ["m0", "m1", "m2"]);
    assert!(
        cluster.wait_exit(new, SETTLE).await.is_some(),
        "a removed member stops by itself"
    );
    assert!(
        c3.status().await.is_err(),
        "a removed member no longer serves"
    );

    // restarted on its data dir it stops again by itself (etcd sees it was removed and exits,
    // with status 0 in 3.4–3.7) rather than rejoin
    cluster.spawn(new, &initial, "existing");
    assert!(
        cluster.wait_exit(new, SETTLE).await.is_some(),
        "a removed member restarted on its data dir must stop by itself"
    );
    let list = c0.member_list().await.unwrap();
    assert_eq!(names(&list.members), ["m0", "m1", "m2"]);
    c0.put("/live/after", "removal")
        .await
        .map_err(|e| report(&e))
        .unwrap();
    for i in voters {
        cluster.wait_healthy(i).await;
    }
}

/// Start 3 → move-leader is refused by a follower → moved by the leader → the old leader,
/// now a follower, is removed → the remaining two serve.
async fn leadership_moves_then_old_leader_is_removed(minor: &str, base_port: u16) {
    let mut cluster = Cluster::start(minor, base_port, 3).await;
    let all = [0, 1, 2];
    let leader_id = assert_one_leader(&cluster, &all).await;
    let old = leader_index(&cluster, &all).await;
    assert_eq!(member_id(&cluster, old).await, leader_id);
    let follower = all.iter().copied().find(|&i| i != old).unwrap();
    let target = all
        .iter()
        .copied()
        .find(|&i| i != old && i != follower)
        .unwrap();
    let target_id = member_id(&cluster, target).await;
    let follower_id = member_id(&cluster, follower).await;

    // The leader's own count of connected peers (its `/metrics`), which etcd checks before a
    // removal: both followers, once their streams are up.
    eventually("the leader counts both followers as connected", || {
        let cluster = &cluster;
        async move {
            let view = cluster.client(old).await.peer_view().await;
            view.is_ok_and(|v| {
                v.member_id == leader_id
                    && v.counts_connected(follower_id)
                    && v.counts_connected(target_id)
            })
        }
    })
    .await;

    let mut from_follower = cluster.client(follower).await;
    let refused = from_follower
        .move_leader(target_id)
        .await
        .expect_err("a follower cannot move leadership");
    assert!(
        refused.is_transient(),
        "not leader is a wait: {}",
        report(&refused)
    );
    assert!(
        report(&refused).contains("not leader"),
        "{}",
        report(&refused)
    );

    let mut from_leader = cluster.client(old).await;
    from_leader
        .move_leader(target_id)
        .await
        .map_err(|e| report(&e))
        .expect("move leader");
    eventually("everyone follows the new leader", || {
        let cluster = &cluster;
        async move {
            for i in all {
                let mut c = cluster.client(i).await;
                if !c.status().await.is_ok_and(|s| s.leader_id == target_id) {
                    return false;
                }
            }
            true
        }
    })
    .await;
    assert_eq!(assert_one_leader(&cluster, &all).await, target_id);

    let old_id = member_id(&cluster, old).await;
    let mut c = cluster.client(target).await;
    retry("remove the old leader", || {
        let mut c = c.clone();
        async move { c.remove(old_id).await }
    })
    .await;
    let list = c.member_list().await.unwrap();
    assert_eq!(list.members.len(), 2);
    assert!(list.members.iter().all(|m| m.id != old_id));
    assert!(
        cluster.wait_exit(old, SETTLE).await.is_some(),
        "a removed member stops by itself"
    );
    cluster.kill(old);

    let rest: Vec<usize> = all.iter().copied().filter(|&i| i != old).collect();
    for &i in &rest {
        cluster.wait_healthy(i).await;
    }
    // The new leader's count: the follower connected, the removed member not.
    let view = c.peer_view().await.map_err(|e| report(&e)).unwrap();
    assert_eq!(view.member_id, target_id);
    assert!(view.counts_connected(follower_id), "{view:?}");
    assert!(!view.counts_connected(old_id), "{view:?}");
    c.put("/live/k", "v").await.map_err(|e| report(&e)).unwrap();
    let mut other = cluster.client(follower).await;
    assert_eq!(other.get("/live/k").await.unwrap().as_deref(), Some("v"));
    assert_one_leader(&cluster, &rest).await;
}

/// The engine's member list for a formed cluster (`objects::join_list`): every member's peer URL,
/// only the nodes in `may_join` under their own name, the others as `<name>.started`.
fn join_list(cluster: &Cluster, nodes: &[usize], may_join: &[usize]) -> String {
    nodes
        .iter()
        .map(|i| {
            let n = &cluster.nodes[*i];
            if may_join.contains(i) {
                format!("{}={}", n.name, n.peer_url)
            } else {
                format!("{}.started={}", n.name, n.peer_url)
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The member config of a formed cluster makes it impossible for a member to start on an empty
/// data directory as a voter, and lets exactly the learner the engine added join: the learner
/// joins under its own name; a voter whose data is wiped exits before contacting anyone
/// ("couldn't find local name", the sign observe reads from the termination message); after
/// it is removed and re-added as a learner it joins on that same directory, catches up, is
/// promoted, and serves the data written before.
async fn a_wiped_member_cannot_rejoin_as_a_voter_and_is_replaced(minor: &str, base_port: u16) {
    let mut cluster = Cluster::start(minor, base_port, 3).await;
    let mut c0 = cluster.client(0).await;
    retry("put", || {
        let mut c = c0.clone();
        async move { c.put("/live/before", "wipe").await }
    })
    .await;

    // a learner joins under its own name while the started members are listed by alias
    let new = cluster.plan_node();
    let peer = cluster.nodes[new].peer_url.clone();
    let learner = retry("add learner", || {
        let mut c = c0.clone();
        let peer = peer.clone();
        async move { c.add_learner(&peer).await }
    })
    .await;
    let list = join_list(&cluster, &[0, 1, 2, new], &[new]);
    cluster.spawn(new, &list, "existing");
    let c3 = cluster.client(new).await;
    eventually("the learner joined", || {
        let mut c = c3.clone();
        async move {
            c.status()
                .await
                .is_ok_and(|s| s.is_learner && s.leader_id != 0)
        }
    })
    .await;
    retry("promote", || {
        let mut c = c0.clone();
        async move { c.promote(learner.id).await }
    })
    .await;

    // m1 loses its data: with every member started the list names nobody, and it exits
    let wiped = member_id(&cluster, 1).await;
    cluster.kill(1);
    std::fs::remove_dir_all(cluster.dir.path().join(&cluster.nodes[1].name)).unwrap();
    let list = join_list(&cluster, &[0, 1, 2, new], &[]);
    cluster.spawn(1, &list, "existing");
    assert!(
        cluster.wait_exit(1, SETTLE).await.is_some(),
        "a member without data must not start as a voter"
    );
    let log = std::fs::read_to_string(cluster.log_path(1)).unwrap();
    assert!(
        log.contains("couldn't find local name"),
        "the exit names the reason observe looks for:\n{}",
        cluster.log_tail(1)
    );
    let members = c0.member_list().await.unwrap().members;
    assert!(
        members.iter().any(|m| m.id == wiped && !m.is_learner),
        "m1 is still a voter in the list (the engine replaces it)"
    );
    // m1 may have led: the others elect a new leader first.
    retry("put while m1 is down", || {
        let mut c = c0.clone();
        async move { c.put("/live/while-down", "3 of 4").await }
    })
    .await;

    // replacement: remove, re-add as a learner at the same URL, start on the same directory
    retry("remove the wiped member", || {
        let mut c = c0.clone();
        async move { c.remove(wiped).await }
    })
    .await;
    let peer = cluster.nodes[1].peer_url.clone();
    let again = retry("re-add as learner", || {
        let mut c = c0.clone();
        let peer = peer.clone();
        async move { c.add_learner(&peer).await }
    })
    .await;
    assert_ne!(again.id, wiped);
    let list = join_list(&cluster, &[0, 1, 2, new], &[1]);
    cluster.spawn(1, &list, "existing");
    retry("promote the replacement", || {
        let mut c = c0.clone();
        async move { c.promote(again.id).await }
    })
    .await;
    cluster.wait_healthy(1).await;
    let mut c1 = cluster.client(1).await;
    assert_eq!(
        c1.get("/live/before").await.unwrap().as_deref(),
        Some("wipe")
    );
    assert_eq!(
        c1.get("/live/while-down").await.unwrap().as_deref(),
        Some("3 of 4")
    );
    assert_one_leader(&cluster, &[0, 1, 2, new]).await;
}

// ---------------------------------------------------------------------------------------------
// tests: ports 2xyyy, x = etcd minor (8 for 3.7: the TLS tests hold 27yyy), distinct per test

#[tokio::test]
async fn a_wiped_member_cannot_rejoin_as_a_voter_and_is_replaced_on_3_4() {
    a_wiped_member_cannot_rejoin_as_a_voter_and_is_replaced("3.4", 24400).await;
}

#[tokio::test]
async fn a_wiped_member_cannot_rejoin_as_a_voter_and_is_replaced_on_3_5() {
    a_wiped_member_cannot_rejoin_as_a_voter_and_is_replaced("3.5", 25400).await;
}

#[tokio::test]
async fn a_wiped_member_cannot_rejoin_as_a_voter_and_is_replaced_on_3_6() {
    a_wiped_member_cannot_rejoin_as_a_voter_and_is_replaced("3.6", 26400).await;
}

#[tokio::test]
async fn a_wiped_member_cannot_rejoin_as_a_voter_and_is_replaced_on_3_7() {
    a_wiped_member_cannot_rejoin_as_a_voter_and_is_replaced("3.7", 28400).await;
}

#[tokio::test]
async fn learner_is_added_caught_up_promoted_and_removed_on_3_4() {
    learner_lifecycle("3.4", 24100).await;
}

#[tokio::test]
async fn learner_is_added_caught_up_promoted_and_removed_on_3_5() {
    learner_lifecycle("3.5", 25100).await;
}

#[tokio::test]
async fn learner_is_added_caught_up_promoted_and_removed_on_3_6() {
    learner_lifecycle("3.6", 26100).await;
}

/// Connections a [`HoldingProxy`] holds, each with the first bytes its client sent.
type Held = std::sync::Arc<std::sync::Mutex<Vec<(Vec<u8>, tokio::net::TcpStream)>>>;

/// A TCP proxy in front of a member's peer port that holds, unanswered, every connection made
/// while it does not forward (as a replaced pod's old address holds a dial), then forwards.
/// Held connections stay open until `drop_held` closes those whose request starts with a method.
struct HoldingProxy {
    forwarding: std::sync::Arc<std::sync::atomic::AtomicBool>,
    held: Held,
    task: tokio::task::JoinHandle<()>,
}

impl HoldingProxy {
    async fn start(listen: u16, upstream: u16) -> HoldingProxy {
        use std::sync::atomic::Ordering::SeqCst;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", listen))
            .await
            .expect("the proxy's port");
        let forwarding: std::sync::Arc<std::sync::atomic::AtomicBool> = Default::default();
        let held: Held = Default::default();
        let proxy = (forwarding.clone(), held.clone());
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                if forwarding.load(SeqCst) {
                    tokio::spawn(async move {
                        if let Ok(mut up) =
                            tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                        {
                            let _ = tokio::io::copy_bidirectional(&mut conn, &mut up).await;
                        }
                    });
                    continue;
                }
                let held = held.clone();
                tokio::spawn(async move {
                    let mut first = vec![0u8; 8];
                    let n = conn.peek(&mut first).await.unwrap_or(0);
                    first.truncate(n);
                    held.lock().unwrap().push((first, conn));
                });
            }
        });
        HoldingProxy {
            forwarding: proxy.0,
            held: proxy.1,
            task,
        }
    }

    fn forward(&self) {
        self.forwarding
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn held(&self, method: &str) -> usize {
        let held = self.held.lock().unwrap();
        held.iter()
            .filter(|(first, _)| first.starts_with(method.as_bytes()))
            .count()
    }

    /// Closes the held connections whose request starts with `method`.
    fn drop_held(&self, method: &str) -> usize {
        let mut held = self.held.lock().unwrap();
        let before = held.len();
        held.retain(|(first, _)| !first.starts_with(method.as_bytes()));
        before - held.len()
    }
}

impl Drop for HoldingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// etcd's leader counts a member as disconnected for good when a send to its old address fails
/// after its streams connected (met on the testbed mid storage swap: every removal was refused
/// "unhealthy cluster" for minutes). The new member's address is a proxy that first holds every
/// connection (the old address), then forwards. Its `/metrics` show the stale count, a removal
/// of the other voter is refused however long it is asked, and once leadership moves to the
/// miscounted member (whose own count is fresh) the same removal goes through: what the engine
/// does (`plan::past_a_stale_peer_count`).
async fn a_stale_peer_count_refuses_removals_until_leadership_moves(minor: &str, base_port: u16) {
    let mut cluster = Cluster::start(minor, base_port, 2).await;
    let leader = leader_index(&cluster, &[0, 1]).await;
    let other = 1 - leader;
    let leader_id = member_id(&cluster, leader).await;
    let other_id = member_id(&cluster, other).await;
    let new = cluster.plan_node();
    let proxy_port = base_port + 50;
    let proxy = HoldingProxy::start(proxy_port, base_port + 2 * new as u16 + 1).await;
    let proxied = format!("http://127.0.0.1:{proxy_port}");
    cluster.nodes[new].advertised_peer_url = Some(proxied.clone());
    let from_leader = cluster.client(leader).await;
    let added = retry("add learner", || {
        let mut c = from_leader.clone();
        let url = proxied.clone();
        async move { c.add_learner(&url).await }
    })
    .await;
    let new_id = added.id;
    // Before the learner runs, the leader sends it entries over its pipeline (POST), which the
    // old address holds.
    eventually("the leader's pipeline sends are held", || async {
        proxy.held("POST") > 0
    })
    .await;
    proxy.forward();
    let initial = cluster.initial_cluster(3);
    cluster.spawn(new, &initial, "existing");
    // The leader's stream reader had dialled the old address too: closed, it dials again, now
    // forwarded, and the leader counts the new member as connected.
    proxy.drop_held("GET");
    eventually("the leader counts the new member as connected", || async {
        from_leader
            .peer_view()
            .await
            .is_ok_and(|v| v.member_id == leader_id && v.counts_connected(new_id))
    })
    .await;
    retry("promote the learner", || {
        let mut c = from_leader.clone();
        async move { c.promote(new_id).await }
    })
    .await;
    // The held sends fail now, after the streams connected: the count goes stale.
    assert!(proxy.drop_held("POST") > 0);
    eventually(
        "the leader counts the new member as disconnected",
        || async {
            from_leader
                .peer_view()
                .await
                .is_ok_and(|v| !v.counts_connected(new_id) && v.counts_connected(other_id))
        },
    )
    .await;
    cluster.wait_healthy(new).await;
    // Refused however long it is asked (etcd counts only peers connected for 5 s: 8 s pass).
    for _ in 0..4 {
        let mut c = from_leader.clone();
        let refused = c
            .remove(other_id)
            .await
            .expect_err("the leader removes a voter on a stale count");
        assert!(
            report(&refused).contains("unhealthy cluster") && refused.is_transient(),
            "{}",
            report(&refused)
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let view = from_leader.peer_view().await.unwrap();
    assert!(!view.counts_connected(new_id), "mended by itself: {view:?}");

    let mut c = from_leader.clone();
    c.move_leader(new_id)
        .await
        .map_err(|e| report(&e))
        .expect("move leadership to the miscounted member");
    let from_new = cluster.client(new).await;
    retry("remove the other voter, asked of the new leader", || {
        let mut c = from_new.clone();
        async move { c.remove(other_id).await }
    })
    .await;
    let list = from_new.clone().member_list().await.unwrap();
    assert_eq!(list.members.len(), 2);
    assert!(list.members.iter().all(|m| m.id != other_id));
    cluster.kill(other);
    for i in [leader, new] {
        cluster.wait_healthy(i).await;
    }
}

#[tokio::test]
async fn a_stale_peer_count_refuses_removals_until_leadership_moves_on_3_4() {
    a_stale_peer_count_refuses_removals_until_leadership_moves("3.4", 24300).await;
}

#[tokio::test]
async fn a_stale_peer_count_refuses_removals_until_leadership_moves_on_3_5() {
    a_stale_peer_count_refuses_removals_until_leadership_moves("3.5", 25300).await;
}

#[tokio::test]
async fn a_stale_peer_count_refuses_removals_until_leadership_moves_on_3_6() {
    a_stale_peer_count_refuses_removals_until_leadership_moves("3.6", 26300).await;
}

#[tokio::test]
async fn a_stale_peer_count_refuses_removals_until_leadership_moves_on_3_7() {
    a_stale_peer_count_refuses_removals_until_leadership_moves("3.7", 28300).await;
}

#[tokio::test]
async fn learner_is_added_caught_up_promoted_and_removed_on_3_7() {
    learner_lifecycle("3.7", 28100).await;
}

#[tokio::test]
async fn leadership_moves_then_the_old_leader_is_removed_on_3_4() {
    leadership_moves_then_old_leader_is_removed("3.4", 24200).await;
}

#[tokio::test]
async fn leadership_moves_then_the_old_leader_is_removed_on_3_5() {
    leadership_moves_then_old_leader_is_removed("3.5", 25200).await;
}

#[tokio::test]
async fn leadership_moves_then_the_old_leader_is_removed_on_3_6() {
    leadership_moves_then_old_leader_is_removed("3.6", 26200).await;
}

#[tokio::test]
async fn leadership_moves_then_the_old_leader_is_removed_on_3_7() {
    leadership_moves_then_old_leader_is_removed("3.7", 28200).await;
}

#[tokio::test]
async fn an_unreachable_member_fails_fast_and_transiently() {
    // nothing listens on this port (below the ephemeral range, unused by the tests above)
    let started = Instant::now();
    let error = EtcdClient::connect("http://127.0.0.1:23999", DIAL_TIMEOUT)
        .await
        .expect_err("nobody listens");
    assert!(started.elapsed() < DIAL_TIMEOUT + Duration::from_secs(1));
    assert!(error.is_transient(), "{}", report(&error));
    assert_eq!(error.endpoint(), "http://127.0.0.1:23999");
}

#[test]
fn missing_binaries_fail_the_test_naming_the_script_that_fetches_them() {
    let missing = std::panic::catch_unwind(|| etcd_binary_in(Path::new("/nonexistent"), "3.5"))
        .expect_err("no binaries there");
    let message = missing
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains(BIN_SCRIPT), "{message}");
}

// ---------------------------------------------------------------------------------------------
// the port-forward dial, through kube's real Portforwarder, against a fake API server that serves
// only `pods/<pod>/portforward` (websocket, v4.channel.k8s.io) and pipes it to an etcd on loopback

mod fake_api {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::{SinkExt, StreamExt};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::Notify;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
    use tokio_tungstenite::tungstenite::http;

    pub struct FakeApi {
        pub url: String,
        /// How many port-forwards were opened.
        pub forwards: Arc<AtomicUsize>,
        /// Drops every open port-forward, as an API server restart or a pod deletion would.
        pub sever: Arc<Notify>,
        task: tokio::task::JoinHandle<()>,
    }

    impl Drop for FakeApi {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    /// Serves port-forwards to `pod` in namespace `default` by connecting to `target`.
    pub async fn start(pod: &'static str, target: String) -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback listener");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let forwards = Arc::new(AtomicUsize::new(0));
        let sever = Arc::new(Notify::new());
        let (f, s) = (forwards.clone(), sever.clone());
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(serve(tcp, pod, target.clone(), f.clone(), s.clone()));
            }
        });
        FakeApi {
            url,
            forwards,
            sever,
            task,
        }
    }

    fn status(code: u16, message: &str) -> ErrorResponse {
        let body = format!(
            r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"{message}","reason":"NotFound","code":{code}}}"#
        );
        http::Response::builder()
            .status(code)
            .header("content-type", "application/json")
            .body(Some(body))
            .unwrap()
    }

    async fn serve(
        tcp: TcpStream,
        pod: &str,
        target: String,
        forwards: Arc<AtomicUsize>,
        sever: Arc<Notify>,
    ) {
        let mut port = 0u16;
        let path = format!("/api/v1/namespaces/default/pods/{pod}/portforward");
        // The signature is tungstenite's (`Callback`), large error variant and all.
        #[allow(clippy::result_large_err)]
        let callback = |req: &Request, mut resp: Response| -> Result<Response, ErrorResponse> {
            if req.uri().path() != path {
                return Err(status(404, &format!("{} not found", req.uri().path())));
            }
            port = req
                .uri()
                .query()
                .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("ports=")))
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| status(400, "one port expected"))?;
            resp.headers_mut().insert(
                http::header::SEC_WEBSOCKET_PROTOCOL,
                http::HeaderValue::from_static("v4.channel.k8s.io"),
            );
            Ok(resp)
        };
        let Ok(ws) = tokio_tungstenite::accept_hdr_async(tcp, callback).await else {
            return;
        };
        forwards.fetch_add(1, Ordering::SeqCst);
        let (mut to_client, mut from_client) = ws.split();
        let etcd = TcpStream::connect(&target)
            .await
            .expect("the etcd behind the fake");
        let (mut etcd_rx, mut etcd_tx) = etcd.into_split();
        // the API server first names the port on the data (0) and error (1) channels
        let [lo, hi] = port.to_le_bytes();
        for channel in [0u8, 1] {
            let _ = to_client.send(Message::binary(vec![channel, lo, hi])).await;
        }
        let up = async {
            while let Some(Ok(msg)) = from_client.next().await {
                if msg.is_close() {
                    break;
                }
                // data for the pod arrives on channel 0
                if let Message::Binary(b) = msg
                    && b.first() == Some(&0)
                    && etcd_tx.write_all(&b[1..]).await.is_err()
                {
                    break;
                }
            }
        };
        let down = async {
            let mut buf = vec![0u8; 64 * 1024];
            while let Ok(n @ 1..) = etcd_rx.read(&mut buf).await {
                let mut frame = Vec::with_capacity(n + 1);
                frame.push(0);
                frame.extend_from_slice(&buf[..n]);
                if to_client.send(Message::binary(frame)).await.is_err() {
                    break;
                }
            }
        };
        tokio::select! {
            () = up => {}
            () = down => {}
            () = sever.notified() => {}
        }
    }
}

fn pods_via(api: &fake_api::FakeApi) -> kube::Api<k8s_openapi::api::core::v1::Pod> {
    let config = kube::Config::new(api.url.parse().expect("a URL"));
    let client = kube::Client::try_from(config).expect("a kube client");
    kube::Api::namespaced(client, "default")
}

#[tokio::test]
async fn a_member_is_reached_through_a_port_forward_that_reopens_after_a_drop() {
    use std::sync::atomic::Ordering;
    let cluster = Cluster::start("3.5", 25300, 1).await;
    let target = cluster.nodes[0]
        .client_url
        .trim_start_matches("http://")
        .to_owned();
    let api = fake_api::start("etcd-0", target).await;

    let mut c = EtcdClient::connect_port_forward(pods_via(&api), "etcd-0", 2379, DIAL_TIMEOUT)
        .await
        .map_err(|e| report(&e))
        .expect("a port-forwarded client");
    assert_eq!(c.endpoint(), "pod/default/etcd-0:2379");
    let status = c.status().await.map_err(|e| report(&e)).unwrap();
    assert_eq!(status.version, cluster.version);
    assert!(status.is_leader());
    assert_eq!(c.member_list().await.unwrap().members.len(), 1);
    c.put("/pf/k", "v").await.unwrap();
    assert_eq!(c.get("/pf/k").await.unwrap().as_deref(), Some("v"));
    c.health().await.map_err(|e| report(&e)).unwrap();
    assert_eq!(
        api.forwards.load(Ordering::SeqCst),
        1,
        "one connection, one forward"
    );

    // the forward dies; the channel opens a new one for later calls
    api.sever.notify_waiters();
    let fresh = c.clone();
    retry("status after the forward was dropped", || {
        let mut c = fresh.clone();
        async move { c.status().await }
    })
    .await;
    assert_eq!(
        api.forwards.load(Ordering::SeqCst),
        2,
        "a new forward after the drop"
    );
}

/// Issue 43 R10: what the backup taker proves its source with. A member cut off from its peers
/// (here: the other two are gone) answers the serializable keyspace count with what it had, and
/// fails the linearizable one; a member of a quorum answers both, the linearizable one at the
/// revision of every write acknowledged before it.
#[tokio::test]
async fn a_member_cut_off_from_its_quorum_fails_the_linearizable_keyspace_read() {
    let mut cluster = Cluster::start("3.5", 27600, 3).await;
    let mut c0 = cluster.client(0).await;
    let mut c1 = cluster.client(1).await;
    c1.put("/proof/k", "v")
        .await
        .map_err(|e| report(&e))
        .unwrap();
    let written = c1.keyspace().await.unwrap().revision;
    let proven = retry("a linearizable keyspace read on m0", || {
        let mut c = c0.clone();
        async move { c.keyspace_linearizable().await }
    })
    .await;
    assert!(
        proven.revision >= written,
        "{} < {written}",
        proven.revision
    );
    assert!(proven.keys >= 1);

    cluster.kill(1);
    cluster.kill(2);
    let alone = c0.keyspace().await.map_err(|e| report(&e)).unwrap();
    assert!(alone.revision >= written);
    let refused = c0
        .keyspace_linearizable()
        .await
        .expect_err("a member without a quorum passed a linearizable read");
    assert!(
        report(&refused).contains("keyspace"),
        "{}",
        report(&refused)
    );
}

#[tokio::test]
async fn a_port_forward_to_a_missing_pod_fails_for_good() {
    let api = fake_api::start("etcd-0", "127.0.0.1:1".into()).await;
    let started = Instant::now();
    let error = EtcdClient::connect_port_forward(pods_via(&api), "etcd-9", 2379, DIAL_TIMEOUT)
        .await
        .expect_err("no such pod");
    assert!(started.elapsed() < DIAL_TIMEOUT);
    assert!(report(&error).contains("etcd-9"), "{}", report(&error));
    assert!(!error.is_transient(), "{}", report(&error));
}

/// `/version` gives the server and cluster version of every minor (the cluster version moves
/// from empty/3.0.0 to the minor once the leader decided it).
async fn versions_are_read_from_the_member(minor: &str, base_port: u16) {
    let cluster = Cluster::start(minor, base_port, 1).await;
    let client = cluster.client(0).await;
    let want = format!("{minor}.0");
    eventually("the cluster version is decided", || {
        let client = client.clone();
        let want = want.clone();
        async move { client.versions().await.is_ok_and(|v| v.cluster == want) }
    })
    .await;
    let v = client.versions().await.map_err(|e| report(&e)).unwrap();
    assert!(v.server.starts_with(&format!("{minor}.")), "{v:?}");
}

#[tokio::test]
async fn versions_are_read_from_the_member_on_3_4() {
    versions_are_read_from_the_member("3.4", 24500).await;
}

#[tokio::test]
async fn versions_are_read_from_the_member_on_3_5() {
    versions_are_read_from_the_member("3.5", 25500).await;
}

#[tokio::test]
async fn versions_are_read_from_the_member_on_3_6() {
    versions_are_read_from_the_member("3.6", 26600).await;
}

#[tokio::test]
async fn versions_are_read_from_the_member_on_3_7() {
    versions_are_read_from_the_member("3.7", 28600).await;
}

/// etcd's downgrade API on `minor` (3.6, 3.7): validate refuses two minors down, enable lowers
/// the cluster version one minor and shows in status, cancel ends it.
async fn the_downgrade_api_lowers_the_cluster_version(minor: &str, base_port: u16) {
    let m: u32 = minor.strip_prefix("3.").unwrap().parse().unwrap();
    let (cur, one_down, two_down) = (
        format!("3.{m}.0"),
        format!("3.{}", m - 1),
        format!("3.{}", m - 2),
    );
    let down0 = format!("{one_down}.0");
    let cluster = Cluster::start(minor, base_port, 1).await;
    let mut client = cluster.client(0).await;
    eventually(&format!("the cluster version is {cur}"), || {
        let client = client.clone();
        let cur = cur.clone();
        async move { client.versions().await.is_ok_and(|v| v.cluster == cur) }
    })
    .await;
    let refused = client
        .downgrade(DowngradeAction::Validate, &two_down)
        .await
        .expect_err("two minors down");
    assert!(!refused.is_transient(), "{}", report(&refused));
    let cv = client
        .downgrade(DowngradeAction::Validate, &one_down)
        .await
        .map_err(|e| report(&e))
        .unwrap();
    assert_eq!(cv, minor, "the cluster version, major.minor");
    client
        .downgrade(DowngradeAction::Enable, &one_down)
        .await
        .map_err(|e| report(&e))
        .unwrap();
    eventually(&format!("the cluster version is {down0}"), || {
        let client = client.clone();
        let down0 = down0.clone();
        async move { client.versions().await.is_ok_and(|v| v.cluster == down0) }
    })
    .await;
    let st = client.status().await.map_err(|e| report(&e)).unwrap();
    assert_eq!(st.downgrade_target, down0, "{st:?}");
    eventually("the storage version follows", || {
        let mut client = client.clone();
        let down0 = down0.clone();
        async move {
            client
                .status()
                .await
                .is_ok_and(|s| s.storage_version == down0)
        }
    })
    .await;
    client
        .downgrade(DowngradeAction::Cancel, &one_down)
        .await
        .map_err(|e| report(&e))
        .unwrap();
    let st = client.status().await.map_err(|e| report(&e)).unwrap();
    assert_eq!(st.downgrade_target, "", "{st:?}");
}

#[tokio::test]
async fn the_downgrade_api_lowers_the_cluster_version_on_3_6() {
    the_downgrade_api_lowers_the_cluster_version("3.6", 26500).await;
}

#[tokio::test]
async fn the_downgrade_api_lowers_the_cluster_version_on_3_7() {
    the_downgrade_api_lowers_the_cluster_version("3.7", 28500).await;
}

/// What every member of `nodes` answers: (server version, cluster version, storage version,
/// downgrade target).
async fn member_versions(
    cluster: &Cluster,
    nodes: &[usize],
) -> Vec<(String, String, String, String)> {
    let mut out = Vec::new();
    for &i in nodes {
        let mut c = cluster.client(i).await;
        let (Ok(v), Ok(s)) = (c.versions().await, c.status().await) else {
            out.push(Default::default());
            continue;
        };
        out.push((v.server, v.cluster, s.storage_version, s.downgrade_target));
    }
    out
}

/// Waits until every member of `nodes` answers `want` for (server, cluster, storage version,
/// downgrade target).
async fn all_answer(cluster: &Cluster, nodes: &[usize], want: (&str, &str, &str, &str)) {
    let want = (
        want.0.to_owned(),
        want.1.to_owned(),
        want.2.to_owned(),
        want.3.to_owned(),
    );
    let end = Instant::now() + SETTLE;
    loop {
        let got = member_versions(cluster, nodes).await;
        if got.iter().all(|g| *g == want) {
            return;
        }
        assert!(
            Instant::now() < end,
            "waiting for {want:?}, members answer {got:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Puts `n` keys `/live/<tag>/<i>` through node `i`.
async fn put_keys(cluster: &Cluster, i: usize, tag: &str, n: usize) {
    let c = cluster.client(i).await;
    for k in 0..n {
        let key = format!("/live/{tag}/{k}");
        retry(&format!("put {key}"), || {
            let mut c = c.clone();
            let key = key.clone();
            async move { c.put(&key, "v").await }
        })
        .await;
    }
}

/// Every key of `tags` (n each) reads back through every node.
async fn keys_read_back(cluster: &Cluster, nodes: &[usize], tags: &[&str], n: usize) {
    for &i in nodes {
        let c = cluster.client(i).await;
        for tag in tags {
            for k in 0..n {
                let key = format!("/live/{tag}/{k}");
                let got = retry(&format!("get {key}"), || {
                    let mut c = c.clone();
                    let key = key.clone();
                    async move { c.get(&key).await }
                })
                .await;
                assert_eq!(got.as_deref(), Some("v"), "{key} through m{i}");
            }
        }
    }
}

/// The nodes in the order the engine restarts them: followers, the leader last.
async fn leader_last(cluster: &Cluster, nodes: &[usize]) -> Vec<usize> {
    let leader = leader_index(cluster, nodes).await;
    let mut order: Vec<usize> = nodes.iter().copied().filter(|&i| i != leader).collect();
    order.push(leader);
    order
}

/// etcd's 3.6 → 3.7 upgrade guide and 3.7 → 3.6 downgrade guide, member by member as the
/// engine does them (followers first, the leader last), on a 3-member cluster of 3.6.16 (above
/// the 3.6.11 minimum): each member restarted on 3.7.3 on its data dir; the cluster version
/// moves to 3.7.0 once every member runs 3.7; then downgrade validate/enable 3.6 lowers cluster
/// and storage versions, each member goes back to 3.6.16, and etcd ends the downgrade by itself.
/// Keys written on each version read back on every member at the end.
#[tokio::test]
async fn a_3_6_cluster_rolls_to_3_7_and_back_to_3_6_through_the_downgrade_api() {
    let (v36, v37) = ("3.6.16", "3.7.3");
    let bin37 = etcd_binary_exact(v37);
    let bin36 = etcd_binary_exact(v36);
    let mut cluster = Cluster::start_version(v36, 28700, 3).await;
    let nodes = [0, 1, 2];
    all_answer(&cluster, &nodes, (v36, "3.6.0", "3.6.0", "")).await;
    put_keys(&cluster, 0, "on36", 20).await;

    let order = leader_last(&cluster, &nodes).await;
    for (n, &i) in order.iter().enumerate() {
        cluster.restart_on(&bin37, i).await;
        if n + 1 < order.len() {
            // Mixed: the cluster keeps speaking 3.6 (a rollback to 3.6 is putting the binary back).
            let v = cluster.client(i).await.versions().await.unwrap();
            assert_eq!((v.server.as_str(), v.cluster.as_str()), (v37, "3.6.0"));
            put_keys(&cluster, i, &format!("mixed{n}"), 5).await;
        }
    }
    all_answer(&cluster, &nodes, (v37, "3.7.0", "3.7.0", "")).await;
    put_keys(&cluster, 1, "on37", 20).await;

    let mut c = cluster.client(leader_index(&cluster, &nodes).await).await;
    let refused = c
        .downgrade(DowngradeAction::Validate, "3.5")
        .await
        .expect_err("3.7 → 3.5 skips a minor");
    assert!(!refused.is_transient(), "{}", report(&refused));
    let cv = c
        .downgrade(DowngradeAction::Validate, "3.6")
        .await
        .map_err(|e| report(&e))
        .unwrap();
    assert_eq!(cv, "3.7");
    c.downgrade(DowngradeAction::Enable, "3.6")
        .await
        .map_err(|e| report(&e))
        .unwrap();
    // Before any member moves: the cluster speaks 3.6 and every db file is 3.6 again.
    all_answer(&cluster, &nodes, (v37, "3.6.0", "3.6.0", "3.6.0")).await;

    let order = leader_last(&cluster, &nodes).await;
    for (n, &i) in order.iter().enumerate() {
        cluster.restart_on(&bin36, i).await;
        put_keys(&cluster, i, &format!("down{n}"), 5).await;
    }
    // Every member on 3.6: etcd ends the downgrade by itself.
    all_answer(&cluster, &nodes, (v36, "3.6.0", "3.6.0", "")).await;
    keys_read_back(&cluster, &nodes, &["on36", "on37"], 20).await;
    keys_read_back(
        &cluster,
        &nodes,
        &["mixed0", "mixed1", "down0", "down1", "down2"],
        5,
    )
    .await;
}

/// Why the engine refuses 3.5 → 3.7 (one minor at a time): etcd 3.7.3 started on the data dir of
/// a 3.5 member does not run (seen: it panics applying the 3.5 WAL, "unmarshal should never
/// fail (proto: cannot parse invalid wire-format data)").
#[tokio::test]
async fn etcd_3_7_refuses_the_data_of_a_3_5_cluster() {
    let bin37 = etcd_binary_exact("3.7.3");
    let mut cluster = Cluster::start("3.5", 28800, 1).await;
    put_keys(&cluster, 0, "on35", 3).await;
    cluster.kill(0);
    let initial = cluster.initial_cluster(1);
    cluster.spawn_with(&bin37, 0, &initial, "existing");
    let exited = cluster.wait_exit(0, SETTLE).await;
    let log = cluster.log_tail(0);
    assert!(
        exited.is_some_and(|s| !s.success()),
        "3.7 must not run a 3.5 member: {exited:?}\n{log}"
    );
}

// ---------------------------------------------------------------------------------------------
// TLS

/// An etcd process serving clients and peers over TLS with client-certificate authentication;
/// killed on drop.
struct TlsMember {
    child: Child,
    client_url: String,
    certs: tempfile::TempDir,
    log: PathBuf,
}

impl Drop for TlsMember {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- etcd log:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
        }
    }
}

/// `tests/cluster/tls-certs.sh` into a fresh directory.
fn certificates(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let st = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cluster/tls-certs.sh"
    ))
    .args([dir.path().to_str().unwrap(), name, "ns"])
    .status()
    .expect("openssl certificates (tests/cluster/tls-certs.sh)");
    assert!(st.success(), "tls-certs.sh failed");
    dir
}

fn start_tls_member(minor: &str, port: u16) -> TlsMember {
    let (_, bin) = etcd_binary(minor);
    let certs = certificates("live");
    let f = |n: &str| certs.path().join(n).to_str().unwrap().to_owned();
    let client_url = format!("https://127.0.0.1:{port}");
    let peer_url = format!("https://127.0.0.1:{}", port + 1);
    let log = certs.path().join("etcd.log");
    let out = std::fs::File::create(&log).unwrap();
    let child = Command::new(bin)
        .args(["--name", "m0", "--data-dir"])
        .arg(certs.path().join("data"))
        .args(["--listen-client-urls", &client_url])
        .args(["--advertise-client-urls", &client_url])
        .args(["--listen-peer-urls", &peer_url])
        .args(["--initial-advertise-peer-urls", &peer_url])
        .args(["--initial-cluster", &format!("m0={peer_url}")])
        .args([
            "--cert-file",
            &f("server.crt"),
            "--key-file",
            &f("server.key"),
        ])
        .args(["--trusted-ca-file", &f("ca.crt"), "--client-cert-auth"])
        .args([
            "--peer-cert-file",
            &f("peer.crt"),
            "--peer-key-file",
            &f("peer.key"),
        ])
        .args([
            "--peer-trusted-ca-file",
            &f("ca.crt"),
            "--peer-client-cert-auth",
        ])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    TlsMember {
        child,
        client_url,
        certs,
        log,
    }
}

fn tls_dial(dir: &Path, server_name: &str) -> kubectl_etcd::etcd::TlsDial {
    let read = |n: &str| std::fs::read(dir.join(n)).unwrap();
    kubectl_etcd::etcd::TlsDial::new(
        &read("ca.crt"),
        &read("client.crt"),
        &read("client.key"),
        server_name,
    )
    .unwrap()
}

/// The engine's dial with a client certificate: member list, status and `/version` (HTTP/1 over
/// TLS) work; a client certificate of another CA, and a server name the member's certificate
/// does not carry, are refused and say so.
async fn a_tls_member_is_dialed_with_a_client_certificate(minor: &str, port: u16) {
    let m = start_tls_member(minor, port);
    let dial = tls_dial(m.certs.path(), "localhost");
    let url = m.client_url.clone();
    eventually("the TLS member answers", || {
        let (url, dial) = (url.clone(), dial.clone());
        async move {
            match EtcdClient::connect_tls(&url, DIAL_TIMEOUT, Some(dial)).await {
                Ok(mut c) => c.member_list().await.is_ok(),
                Err(_) => false,
            }
        }
    })
    .await;
    let mut c = EtcdClient::connect_tls(&m.client_url, DIAL_TIMEOUT, Some(dial.clone()))
        .await
        .map_err(|e| report(&e))
        .unwrap()
        .with_rpc_timeout(RPC_TIMEOUT);
    let list = c.member_list().await.map_err(|e| report(&e)).unwrap();
    assert_eq!(list.members.len(), 1);
    assert!(
        list.members[0].peer_urls[0].starts_with("https://"),
        "{:?}",
        list.members
    );
    c.status().await.map_err(|e| report(&e)).unwrap();
    let v = c.versions().await.map_err(|e| report(&e)).unwrap();
    assert!(v.server.starts_with(&format!("{minor}.")), "{v:?}");

    // Another CA's client certificate: the member refuses it.
    let other = certificates("other");
    let foreign = tls_dial(other.path(), "localhost");
    let refused = match EtcdClient::connect_tls(&m.client_url, DIAL_TIMEOUT, Some(foreign)).await {
        Err(e) => report(&e),
        Ok(mut c) => match c.member_list().await {
            Err(e) => report(&e),
            Ok(_) => panic!("a client certificate of another CA was accepted"),
        },
    };
    assert!(refused.contains(&m.client_url), "{refused}");
    // A name the member's certificate does not carry: we refuse the member.
    let wrong = tls_dial(m.certs.path(), "demo-0.elsewhere.svc.cluster.local");
    let e = EtcdClient::connect_tls(&m.client_url, DIAL_TIMEOUT, Some(wrong))
        .await
        .expect_err("a certificate for other names");
    let text = report(&e);
    assert!(text.contains("TLS") && text.contains("handshake"), "{text}");
    assert!(!e.is_transient(), "{text}");
    // Plain http to a TLS member fails too (nothing is sent in the clear).
    let plain = EtcdClient::connect(&m.client_url.replace("https", "http"), DIAL_TIMEOUT).await;
    assert!(
        match plain {
            Err(_) => true,
            Ok(mut c) => c.member_list().await.is_err(),
        },
        "plain http was served"
    );
}

#[tokio::test]
async fn a_tls_member_is_dialed_with_a_client_certificate_on_3_4() {
    a_tls_member_is_dialed_with_a_client_certificate("3.4", 27100).await;
}

#[tokio::test]
async fn a_tls_member_is_dialed_with_a_client_certificate_on_3_6() {
    a_tls_member_is_dialed_with_a_client_certificate("3.6", 27200).await;
}

#[tokio::test]
async fn a_tls_member_is_dialed_with_a_client_certificate_on_3_7() {
    a_tls_member_is_dialed_with_a_client_certificate("3.7", 28900).await;
}

#[test]
fn tls_material_that_is_not_pem_is_refused_with_the_key_named() {
    let certs = certificates("pem");
    let read = |n: &str| std::fs::read(certs.path().join(n)).unwrap();
    let e =
        kubectl_etcd::etcd::TlsDial::new(b"junk", &read("client.crt"), &read("client.key"), "x")
            .unwrap_err();
    assert!(e.to_string().contains("ca.crt"), "{e}");
    let e = kubectl_etcd::etcd::TlsDial::new(&read("ca.crt"), b"", &read("client.key"), "x")
        .unwrap_err();
    assert!(e.to_string().contains("tls.crt"), "{e}");
    let e = kubectl_etcd::etcd::TlsDial::new(&read("ca.crt"), &read("client.crt"), b"nope", "x")
        .unwrap_err();
    assert!(e.to_string().contains("tls.key"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// restore

/// The engine's restore command (`objects::restore::restore_command`, what the seed's restore
/// pod runs) with each version's own tool on a snapshot that version's etcd streamed:
/// `etcdutl` from 3.5 on (`etcdctl`, API v3, on 3.4), the revision bumped where the version has
/// `--bump-revision` (3.5.10+, 3.6, 3.7), every key in the restored db.
#[tokio::test]
async fn the_restore_command_restores_a_snapshot_with_each_versions_own_tool() {
    use kubectl_etcd::objects::restore::{BUMP_REVISION, SNAPSHOT_FILE, restore_command};
    use tokio::io::AsyncReadExt;
    let listed = std::fs::read_to_string(bin_dir().join("VERSIONS")).unwrap_or_default();
    let versions: Vec<&str> = listed
        .lines()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect();
    assert!(
        versions.iter().any(|v| v.starts_with("3.7.")),
        "{versions:?}"
    );
    for (n, version) in versions.iter().enumerate() {
        let cluster = Cluster::start_version(version, 29100 + 10 * n as u16, 1).await;
        put_keys(&cluster, 0, "restore", 10).await;
        let mut c = cluster.client(0).await;
        let mut stream = c.snapshot(Duration::from_secs(10)).await.unwrap();
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).await.unwrap();
        let work = tempfile::tempdir().unwrap();
        let snapshot = work.path().join("snapshot.db");
        std::fs::write(&snapshot, &bytes).unwrap();
        let data = work.path().join("data");

        let doc = serde_json::json!({
            "apiVersion": "etcd.kubectl-etcd.io/v1alpha1", "kind": "EtcdCluster",
            "metadata": {"name": "demo", "namespace": "ns"},
            "spec": {"replicas": 1, "version": version},
        });
        let d = kubectl_etcd::model::validate(&serde_json::from_value(doc).unwrap()).unwrap();
        let (cmd, env) = restore_command(&d, "tok");
        let local = |a: &String| {
            if a == SNAPSHOT_FILE {
                snapshot.to_str().unwrap().to_owned()
            } else if *a == kubectl_etcd::objects::data_dir() {
                data.to_str().unwrap().to_owned()
            } else {
                a.clone()
            }
        };
        let tool = Path::new(&cmd[0]).file_name().unwrap();
        let bin = bin_dir().join(format!("v{version}")).join(tool);
        let out = Command::new(&bin)
            .args(cmd[1..].iter().map(local))
            .envs(
                env.iter()
                    .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default())),
            )
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{version}: {} {:?}: {}",
            bin.display(),
            &cmd[1..],
            String::from_utf8_lossy(&out.stderr)
        );
        // The restored member's db, read by the same tool.
        let status = Command::new(&bin)
            .args(["snapshot", "status", "-w", "json"])
            .arg(data.join("member/snap/db"))
            .envs(
                env.iter()
                    .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default())),
            )
            .output()
            .unwrap();
        let st: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap_or_else(|e| {
            panic!(
                "{version}: {e}: {}",
                String::from_utf8_lossy(&status.stderr)
            )
        });
        assert!(st["totalKey"].as_u64().unwrap() >= 10, "{version}: {st}");
        let bumped = cmd.iter().any(|a| a == "--bump-revision");
        assert_eq!(
            bumped,
            !version.starts_with("3.4."),
            "{version}: --bump-revision where the version has it"
        );
        if bumped {
            assert!(
                st["revision"].as_u64().unwrap() > BUMP_REVISION,
                "{version}: {st}"
            );
        }
    }
}
