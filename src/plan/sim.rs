//! A simulated world (StatefulSet controller, kubelet, etcd membership and its join rules)
//! driven by the planner, with invariants checked after every change:
//! - scaling 1→3→5→3→1 with a crash injected inside every step;
//! - drains: each member's node cordoned, then its pod evicted as the disruption budget allows,
//!   with a crash inside every step: leadership always left first, no election;
//! - faults: a member's volume wiped (any ordinal), the member config deleted with every pod
//!   restarted, the cluster deleted and created again on its volumes, the StatefulSet scaled down
//!   by hand, a bad template then its revert, quorum loss; each also with a crash inside every step.
//!
//! What the world models, because the planner's safety rests on it:
//! - pods need the member config (`envFrom`, not optional) and a pullable image to run;
//! - etcd's start: a member with data starts as the member the data belongs to; a member without
//!   data joins only under its own name in the config's list, and only when that list has as many
//!   entries as the cluster has members ("couldn't find local name" / "member count is unequal"
//!   otherwise, which become the pod's termination message);
//! - writes are acknowledged while a quorum of voters runs; elections pick a running voter with
//!   the longest log.
//!
//! - versions: each template runs the etcd version it was made for; the cluster version is the
//!   lowest minor of the members and never goes down except through the downgrade API; a member
//!   below it does not start ("cluster cannot be downgraded"), as etcd refuses;
//! - upgrades (through `upgrade::settle`/`record`, as the engine drives them) with a crash inside
//!   every step, and a member that never comes back after its restart.
//!
//! Invariants: at most one learner and one membership change per pass; removed members never
//! come back; **no voter ever starts on an empty volume**; **no acknowledged entry is lost** while
//! a quorum of voters keeps its data (the leader's log always holds every acknowledged entry);
//! a restart never takes a serving voter down below quorum.

use std::collections::{BTreeMap, BTreeSet};

use super::tests::desired;
use super::{DowngradeStep, Restart, Step, plan, quorum, upgrade};
use crate::model::{
    ClusterView, Desired, EtcdView, MemberStatusView, MemberView, Observed, PodView, Storage,
    StorageClassView, Version, VolumeView, WorkloadView,
};
use crate::objects::{self, config_key};

/// `3.<minor>.0`: a cluster version, or a downgrade's target, as etcd reports them.
fn minor_version(minor: u32) -> Version {
    Version {
        major: 3,
        minor,
        patch: 0,
    }
}

/// Seconds of pod age one tick stands for.
const TICK_SECONDS: u64 = 30;

#[derive(Clone, Debug)]
struct SimMember {
    id: u64,
    ordinal: u32,
    learner: bool,
    started: bool,
    /// Entries in its log (kept on its volume).
    raft_index: u64,
    /// Its peer URL in the membership (moved by member updates while TLS is switched).
    peer_url: String,
}

#[derive(Clone, Debug, Default)]
struct SimPod {
    /// Template hash it was created from (its revision).
    template: String,
    ticks: u64,
    restarts: i32,
    last_exit: Option<String>,
    /// etcd runs in it.
    up: bool,
}

/// One sub-action of a step; a crash may fall between two of them.
type SubAction = Box<dyn FnOnce(&mut World)>;

/// The world as the planner cannot see it directly.
#[derive(Clone, Debug, Default)]
pub(crate) struct World {
    sts: Option<(u32, String)>,
    supporting: bool,
    config: Option<BTreeMap<String, String>>,
    pods: BTreeMap<u32, SimPod>,
    /// Volume ordinal → id of the member whose data it holds (0: empty).
    volumes: BTreeMap<u32, u64>,
    members: Vec<SimMember>,
    leader: Option<u64>,
    next_id: u64,
    removed: BTreeSet<u64>,
    /// Highest raft index; grows with every membership change and every tick with a quorum.
    index: u64,
    /// Entries acknowledged to clients.
    acked: u64,
    /// Membership changes done by the last pass.
    changes_this_pass: usize,
    /// Template hashes whose image does not exist.
    bad_templates: BTreeSet<String>,
    /// Membership last written to status (what survives the loss of every object but volumes).
    known: BTreeSet<u32>,
    /// The etcd version each template (hash) runs.
    versions: BTreeMap<String, Version>,
    /// The cluster version's minor: the lowest minor of the members, raised by the leader,
    /// lowered only by an enabled downgrade.
    cluster_minor: Option<u32>,
    /// The minor of an enabled downgrade.
    downgrade: Option<u32>,
    /// The `n`-th member restarted (1-based) never runs again (its node is gone).
    dies_on_restart: Option<usize>,
    restarts_seen: usize,
    dead: BTreeSet<u32>,
    /// Seconds since the simulation began (`Observed.now`).
    clock: u64,
    /// Ordinal → ticks its etcd container stays down before the kubelet restarts it in the
    /// same pod (`kill 1` in the container, an OOM kill).
    container_down: BTreeMap<u32, u64>,
    /// What status records of members looking lost (`plan::lost_since` of the last pass).
    lost_since: BTreeMap<u32, jiff::Timestamp>,
    /// A database that reached its quota (`plan::nospace`).
    full: Option<SimFull>,
    /// The StatefulSet's claim template (immutable: only a re-created StatefulSet changes it).
    sts_storage: Option<Storage>,
    /// The storage each volume was made with (its class as admission sets it: the default
    /// class, `standard`, when the template names none).
    volume_storage: BTreeMap<u32, Storage>,
    /// The StorageClass allows volume expansion.
    expandable: bool,
    /// The StatefulSet was deleted orphaning its pods: they keep running until a new one
    /// adopts them.
    orphaned: bool,
    /// Every tick after bootstrap must keep a quorum of voters running (storage changes).
    keeps_quorum: bool,
    /// The StatefulSet's template hash annotation (pod and claim template).
    sts_annotation: String,
    /// The StatefulSet controller takes in an applied StatefulSet only two ticks later (a
    /// loaded controller-manager): until then its status names the older revision.
    controller_lag: bool,
    /// The revision the controller's status names, and the ticks until it takes in the last
    /// applied one.
    seen_revision: String,
    unseen_ticks: u64,
    /// Ordinals whose pods are about to be evicted (their node cordoned for a drain).
    cordoned: BTreeSet<u32>,
    /// Leaders lost to a stopped pod (each costs an election) since the world was made.
    elections: usize,
    /// The spec each template (revision) was made from: where its members listen, its TLS.
    templates: BTreeMap<String, Desired>,
    /// Members the leader counts as disconnected though they run (etcd's stale peer count:
    /// `crate::etcd::PeerView`); a new leader's count is fresh.
    stale: BTreeSet<u64>,
    /// A promoted learner lands in the leader's count as disconnected (a send to the replaced
    /// pod's old address failed after its streams connected).
    stale_on_promote: bool,
}

/// `scheme:port` of each peer listener of `d`'s template (`ETCD_LISTEN_PEER_URLS`).
fn peer_listeners(d: &Desired) -> Vec<String> {
    let t = objects::pod_template(d);
    let env = t.spec.unwrap_or_default().containers[0]
        .env
        .clone()
        .unwrap_or_default();
    env.iter()
        .find(|e| e.name == "ETCD_LISTEN_PEER_URLS")
        .and_then(|e| e.value.clone())
        .unwrap_or_default()
        .split(',')
        .map(scheme_port)
        .collect()
}

/// `https://host:2380` → `https:2380`.
fn scheme_port(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    format!("{scheme}:{}", rest.rsplit(':').next().unwrap_or_default())
}

/// The revision a StatefulSet gives the pods of `d`'s template (its pod template alone).
fn revision(d: &Desired) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(&objects::pod_template(d))
        .unwrap_or_default()
        .hash(&mut h);
    format!("{:016x}", h.finish())
}

/// The class admission gives a claim whose template names none.
const DEFAULT_CLASS: &str = "standard";

/// `s` as a volume made from it has it: its class set by admission.
fn as_made(s: &Storage) -> Storage {
    match s {
        Storage::Volume { size, class } => Storage::Volume {
            size: size.clone(),
            class: Some(class.clone().unwrap_or_else(|| DEFAULT_CLASS.into())),
        },
        Storage::Ephemeral => Storage::Ephemeral,
    }
}

/// A database at its quota: etcd refuses writes while the alarm is raised.
#[derive(Clone, Debug, Default)]
struct SimFull {
    alarm: bool,
    /// Bytes of live data (what compaction keeps).
    live: i64,
    /// Ordinal → (db file size, bytes in use).
    db: BTreeMap<u32, (i64, i64)>,
    revision: i64,
    /// The member defragmenting now (until the next tick: etcd finishes it even when the
    /// engine that asked stops).
    defragmenting: Option<u32>,
}

impl World {
    fn bootstrapped(&self) -> bool {
        self.config.as_ref().is_some_and(objects::is_bootstrapped)
    }

    fn up_voters(&self) -> usize {
        self.members
            .iter()
            .filter(|m| !m.learner && self.is_up(m))
            .count()
    }

    /// etcd's leader's check before it removes voter `id`: without it, a quorum of the voters
    /// must be peers it counts as connected (itself included); one it counts as disconnected
    /// may always go. "unhealthy cluster": the pass changes nothing.
    fn refuses_removal(&self, id: u64) -> bool {
        let counted = |m: &SimMember| {
            Some(m.id) == self.leader || (self.is_up(m) && !self.stale.contains(&m.id))
        };
        let voters: Vec<&SimMember> = self.members.iter().filter(|m| !m.learner).collect();
        let active = voters.iter().filter(|m| counted(m)).count();
        voters.iter().any(|m| m.id == id && counted(m))
            && active.saturating_sub(1) < 1 + (voters.len() - 1) / 2
    }

    fn voters(&self) -> usize {
        self.members.iter().filter(|m| !m.learner).count()
    }

    /// The version the pod at `o` runs (its template's).
    fn version_of(&self, o: u32) -> Version {
        self.pods
            .get(&o)
            .and_then(|p| self.versions.get(&p.template))
            .copied()
            .unwrap_or(Version {
                major: 3,
                minor: 5,
                patch: 16,
            })
    }

    /// Its etcd runs and its peers reach it: its pod listens where its peer URL points.
    fn is_up(&self, m: &SimMember) -> bool {
        m.started
            && self.pods.get(&m.ordinal).is_some_and(|p| {
                p.up && self
                    .templates
                    .get(&p.template)
                    .is_none_or(|t| peer_listeners(t).contains(&scheme_port(&m.peer_url)))
            })
    }

    fn alarm(&self) -> bool {
        self.full.as_ref().is_some_and(|f| f.alarm)
    }

    fn has_quorum(&self) -> bool {
        self.voters() > 0 && self.up_voters() >= quorum(self.voters())
    }

    /// What etcd does when the pod of ordinal `o` starts: `Ok(member id)` it runs as, or the
    /// message it exits with (`None`: exit status 0, no message).
    fn start_etcd(&mut self, d: &Desired, o: u32) -> Result<u64, Option<String>> {
        let data = self.volumes.get(&o).copied().unwrap_or(0);
        if let Some(cv) = self.cluster_minor
            && self.version_of(o).minor < cv
            && self.downgrade != Some(self.version_of(o).minor)
        {
            return Err(Some(format!(
                "cluster cannot be downgraded (current version: 3.{cv}.0)"
            )));
        }
        let bootstrapped = self.bootstrapped();
        let member = self.members.iter().find(|m| m.ordinal == o).cloned();
        if data != 0 {
            return match member {
                Some(m) if m.id == data => Ok(m.id),
                // A removed member's data: etcd learns it was removed and stops (status 0).
                _ => Err(None),
            };
        }
        let cfg = self.config.clone().unwrap_or_default();
        let list: Vec<&str> = cfg
            .get(config_key::INITIAL_CLUSTER)
            .map_or(vec![], |l| l.split(',').collect());
        let me = objects::pod_name(&d.name, o);
        let listed = list
            .iter()
            .any(|e| e.split('=').next() == Some(me.as_str()));
        if !listed {
            return Err(Some(format!(
                "couldn't find local name \"{me}\" in the initial cluster configuration"
            )));
        }
        let Some(m) = member else {
            return Err(Some("member count is unequal".into()));
        };
        if !bootstrapped {
            // State "new": the initial members found the cluster together.
            return if m.learner {
                Err(Some("member count is unequal".into()))
            } else {
                Ok(m.id)
            };
        }
        if list.len() != self.members.len() {
            return Err(Some("member count is unequal".into()));
        }
        // etcd's ValidateClusterAndAssignIDs: each existing member's peer URLs must be listed.
        for em in &self.members {
            if !list
                .iter()
                .any(|e| e.split_once('=').map(|(_, url)| url) == Some(em.peer_url.as_str()))
            {
                return Err(Some(format!(
                    "PeerURLs: no match found for existing member ({}, [{}])",
                    em.id, em.peer_url
                )));
            }
        }
        assert!(
            m.learner,
            "{}: voter {me} (member {}) started on an empty volume",
            d.name, m.id
        );
        Ok(m.id)
    }

    /// What the StatefulSet controller, kubelet and etcd do between passes.
    fn tick(&mut self, d: &Desired) {
        self.clock += TICK_SECONDS;
        if let Some(f) = &mut self.full {
            f.defragmenting = None;
        }
        self.unseen_ticks = self.unseen_ticks.saturating_sub(1);
        if self.unseen_ticks == 0 {
            self.seen_revision = self
                .sts
                .as_ref()
                .map(|(_, h)| h.clone())
                .unwrap_or_default();
        }
        let (replicas, template) = self.sts.clone().unwrap_or((0, String::new()));
        if self.sts.is_some() || !self.orphaned {
            self.pods.retain(|o, _| *o < replicas);
        }
        for o in 0..replicas {
            if let std::collections::btree_map::Entry::Vacant(slot) = self.pods.entry(o) {
                slot.insert(SimPod {
                    template: template.clone(),
                    ..Default::default()
                });
                self.volumes.entry(o).or_insert(0);
                if let Some(s) = &self.sts_storage {
                    self.volume_storage.entry(o).or_insert_with(|| as_made(s));
                }
            }
        }
        // Bootstrap: the initial members exist once the config names them and a majority runs.
        if let Some(cfg) = self
            .config
            .as_ref()
            .filter(|_| self.members.is_empty() && !self.bootstrapped())
        {
            let n = cfg[config_key::INITIAL_CLUSTER].split(',').count() as u32;
            if (0..n).filter(|o| self.pods.contains_key(o)).count() >= quorum(n as usize) {
                for o in 0..n {
                    self.next_id += 1;
                    self.members.push(SimMember {
                        id: 1000 + self.next_id,
                        ordinal: o,
                        learner: false,
                        started: false,
                        raft_index: 0,
                        peer_url: objects::peer_url(d, o),
                    });
                }
            }
        }
        for o in self.pods.keys().copied().collect::<Vec<_>>() {
            let pod = self.pods[&o].clone();
            let killed = self.container_down.get(&o).is_some_and(|t| *t > 0);
            if killed {
                *self.container_down.get_mut(&o).unwrap() -= 1;
                if pod.up {
                    let mut pod = pod.clone();
                    pod.up = false;
                    pod.restarts += 1;
                    self.pods.insert(o, pod);
                }
            }
            let pod = self.pods[&o].clone();
            let runnable = self.config.is_some()
                && !self.bad_templates.contains(&pod.template)
                && !self.dead.contains(&o)
                && !killed;
            let mut pod = pod;
            pod.ticks += 1;
            let data = self.volumes.get(&o).copied().unwrap_or(0);
            if pod.up && !self.members.iter().any(|m| m.id == data) {
                // A removed member learns it was removed and stops (status 0: no message).
                pod.up = false;
                pod.restarts += 1;
                pod.last_exit = None;
            } else if !runnable {
                pod.up = false;
            } else if !pod.up {
                match self.start_etcd(d, o) {
                    Ok(id) => {
                        pod.up = true;
                        self.volumes.insert(o, id);
                        if let Some(m) = self.members.iter_mut().find(|m| m.id == id) {
                            m.started = true;
                        }
                    }
                    Err(message) => {
                        pod.restarts += 1;
                        pod.last_exit = message;
                    }
                }
            }
            self.pods.insert(o, pod);
        }
        // Writes are acknowledged while a quorum of voters runs; every running member keeps up.
        if self.has_quorum() {
            self.index += 1;
            self.acked = self.index;
            let up: BTreeSet<u64> = self
                .members
                .iter()
                .filter(|m| self.is_up(m))
                .map(|m| m.id)
                .collect();
            for m in &mut self.members {
                if up.contains(&m.id) {
                    m.raft_index = self.index;
                }
            }
        }
        // The leader raises the cluster version to the lowest minor every member runs (never
        // lowers it: only an enabled downgrade does); a downgrade ends once every member runs
        // its minor.
        if self.has_quorum() {
            let ords: Vec<u32> = self.members.iter().map(|m| m.ordinal).collect();
            let all_up = self.members.iter().all(|m| self.is_up(m));
            let lowest = ords.iter().map(|o| self.version_of(*o).minor).min();
            if let Some(low) = lowest.filter(|_| all_up) {
                if self.downgrade.is_none() {
                    self.cluster_minor = Some(self.cluster_minor.map_or(low, |cv| cv.max(low)));
                } else if self.downgrade == Some(low)
                    && ords.iter().all(|o| self.version_of(*o).minor == low)
                {
                    self.downgrade = None;
                }
            }
        }
        // Elections: a running voter with the longest log, when a quorum runs.
        let leader_ok = self
            .leader
            .and_then(|l| self.members.iter().find(|m| m.id == l))
            .is_some_and(|m| !m.learner && self.is_up(m));
        if !leader_ok {
            if self.leader.is_some() {
                self.elections += 1;
            }
            self.leader = if self.has_quorum() {
                self.members
                    .iter()
                    .filter(|m| !m.learner && self.is_up(m))
                    .max_by_key(|m| (m.raft_index, m.ordinal))
                    .map(|m| m.id)
            } else {
                None
            };
        }
        if let Some(l) = self
            .leader
            .and_then(|l| self.members.iter().find(|m| m.id == l))
        {
            assert!(
                l.raft_index >= self.acked,
                "leader {} holds {} entries of {} acknowledged: acknowledged entries were lost",
                l.id,
                l.raft_index,
                self.acked
            );
        }
        if self.members.iter().any(|m| self.is_up(m)) {
            self.known = self.members.iter().map(|m| m.ordinal).collect();
        }
    }

    fn observe(&self, d: &Desired) -> Observed {
        let quorum_up = self.has_quorum();
        let etcd = if self.members.iter().any(|m| self.is_up(m)) {
            EtcdView::Reached(ClusterView {
                cluster_id: 42,
                auth_enabled: false,
                auth: None,
                // Without quorum no voter passes a linearizable read.
                list_unconfirmed: !quorum_up,
                leader: self.leader,
                members: self
                    .members
                    .iter()
                    .map(|m| {
                        let up = self.is_up(m);
                        MemberView {
                            id: m.id,
                            name: if m.started {
                                objects::pod_name(&d.name, m.ordinal)
                            } else {
                                String::new()
                            },
                            ordinal: Some(m.ordinal),
                            peer_url: m.peer_url.clone(),
                            learner: m.learner,
                            started: m.started,
                            status: up.then(|| MemberStatusView {
                                version: Some(self.version_of(m.ordinal)),
                                cluster_version: self.cluster_minor.map(minor_version),
                                storage_version: None,
                                downgrading_to: self.downgrade.map(minor_version),
                                db_size: self
                                    .full
                                    .as_ref()
                                    .and_then(|f| f.db.get(&m.ordinal))
                                    .map_or(1, |db| db.0),
                                db_size_in_use: self
                                    .full
                                    .as_ref()
                                    .and_then(|f| f.db.get(&m.ordinal))
                                    .map_or(1, |db| db.1),
                                raft_index: m.raft_index,
                                raft_term: 2,
                                leader: self.leader.unwrap_or(0),
                            }),
                            healthy: up && quorum_up && !self.alarm(),
                            error: None,
                            identity_mismatch: false,
                            alarmed: up && quorum_up && self.alarm(),
                        }
                    })
                    .collect(),
            })
        } else if self.pods.values().all(|p| !p.up) && self.config.is_none() {
            EtcdView::NotQueried
        } else {
            EtcdView::Unreachable {
                errors: vec!["connection refused".into()],
            }
        };
        Observed {
            statefulset: self.sts.as_ref().map(|(r, h)| WorkloadView {
                replicas: *r,
                template_hash: Some(self.sts_annotation.clone()),
                update_revision: Some(if self.controller_lag {
                    self.seen_revision.clone()
                } else {
                    h.clone()
                }),
                controller_behind: self.controller_lag && self.seen_revision != *h,
                cannot_create: None,
                member_selector: true,
                volume_capacity: None,
                storage: self.sts_storage.clone(),
                tls: self
                    .templates
                    .get(h)
                    .map(|t| objects::template_tls(&objects::pod_template(t))),
                cluster_domain: self
                    .templates
                    .get(h)
                    .and_then(|t| objects::template_domain(&objects::pod_template(t))),
                tls_switch: self
                    .templates
                    .get(h)
                    .and_then(|t| t.tls_switch.as_ref().map(|s| s.marker())),
                terminating: false,
            }),
            storage_class: match &d.storage {
                Storage::Volume { class, .. } => Some(StorageClassView {
                    name: class.clone().unwrap_or_else(|| DEFAULT_CLASS.into()),
                    expandable: self.expandable,
                }),
                Storage::Ephemeral => None,
            },
            supporting_objects: self.supporting,
            clients_fenced: false,
            leader_peers: self.leader.map(|leader| crate::model::LeaderPeers {
                leader,
                connected: self
                    .members
                    .iter()
                    .filter(|m| m.id != leader && self.is_up(m) && !self.stale.contains(&m.id))
                    .map(|m| m.id)
                    .collect(),
            }),
            // The simulated world holds nobody else's objects.
            not_owned: Vec::new(),
            // The simulated clusters run without managed TLS.
            certificates: Vec::new(),
            trust: Default::default(),
            client_cn: None,
            cert_manager: Vec::new(),
            maintenance: None,
            completed: Default::default(),
            nospace: match self.leader {
                Some(l) if self.alarm() => vec![l],
                _ => Vec::new(),
            },
            revision: self.full.as_ref().map_or(0, |f| f.revision),
            restore_pod: None,
            last_version: None,
            upgrade: None,
            config: self.config.clone(),
            pods: self
                .pods
                .iter()
                .map(|(o, p)| {
                    let waiting = if p.up {
                        None
                    } else if self.config.is_none() {
                        Some("CreateContainerConfigError".into())
                    } else if self.bad_templates.contains(&p.template) {
                        Some("ImagePullBackOff".into())
                    } else if p.restarts > 0 {
                        Some("CrashLoopBackOff".into())
                    } else {
                        None
                    };
                    (
                        *o,
                        PodView {
                            name: objects::pod_name(&d.name, *o),
                            // A member its peers cannot reach fails the probe's
                            // linearizable read.
                            ready: p.up
                                && quorum_up
                                && self
                                    .members
                                    .iter()
                                    .find(|m| m.ordinal == *o && m.started)
                                    .is_none_or(|m| self.is_up(m)),
                            running: p.up,
                            revision: Some(p.template.clone()),
                            tls_switch: self
                                .templates
                                .get(&p.template)
                                .and_then(|t| t.tls_switch.as_ref().map(|s| s.marker())),
                            restarts: p.restarts,
                            waiting_reason: waiting,
                            last_exit_message: p.last_exit.clone(),
                            age_seconds: p.ticks * TICK_SECONDS,
                            leaving: self
                                .cordoned
                                .contains(o)
                                .then(|| format!("its node n{o} is cordoned")),
                            ..Default::default()
                        },
                    )
                })
                .collect(),
            volumes: self
                .volumes
                .keys()
                .map(|o| {
                    let (class, size) = match self.volume_storage.get(o) {
                        Some(Storage::Volume { size, class }) => {
                            (class.clone(), Some(size.clone()))
                        }
                        _ => (None, None),
                    };
                    (
                        *o,
                        VolumeView {
                            name: objects::volume_name(&d.name, *o),
                            terminating: false,
                            restore: None,
                            class,
                            capacity: size.clone(),
                            size,
                            grow_asked: None,
                        },
                    )
                })
                .collect(),
            etcd,
            known_members: self.known.clone(),
            now: jiff::Timestamp::from_second(self.clock as i64).unwrap(),
            lost_since: self.lost_since.clone(),
            backups: Default::default(),
            adoption: None,
        }
    }

    /// Carries out `step`, stopping after `parts` of its sub-actions (a crash mid-step).
    fn act(&mut self, d: &Desired, step: &Step, parts: usize) {
        // The StatefulSet's revision comes from its pod template alone (not the claim template).
        let hash = revision(d);
        let d_for_disarm = d.clone();
        self.versions.insert(hash.clone(), d.version);
        self.templates.insert(hash.clone(), d.clone());
        let mut actions: Vec<SubAction> = Vec::new();
        match step.clone() {
            Step::Bootstrap { replicas } => {
                let cfg = objects::bootstrap_config(d, replicas);
                actions.push(Box::new(move |w| w.config = Some(cfg)));
                actions.push(Box::new(|w| w.supporting = true));
                let h = hash.clone();
                let storage = (objects::template_hash(d), d.storage.clone());
                actions.push(Box::new(move |w| w.apply_sts(replicas, h, storage)));
            }
            Step::ApplySupportingObjects => actions.push(Box::new(|w| w.supporting = true)),
            Step::WriteConfig { data, .. } => {
                actions.push(Box::new(move |w| w.config = Some(data)))
            }
            Step::UpdateTemplate { replicas } => {
                let storage = (objects::template_hash(d), d.storage.clone());
                actions.push(Box::new(move |w| w.apply_sts(replicas, hash, storage)))
            }
            Step::ResizeStatefulSet { to, .. } => {
                let storage = (objects::template_hash(d), d.storage.clone());
                actions.push(Box::new(move |w| w.apply_sts(to, hash, storage)))
            }
            Step::Hibernate { .. } => {
                let storage = (objects::template_hash(d), d.storage.clone());
                actions.push(Box::new(move |w| w.apply_sts(0, hash, storage)))
            }
            Step::RecreateStatefulSet { replicas, .. } => {
                actions.push(Box::new(|w| {
                    w.sts = None;
                    w.orphaned = true;
                }));
                let storage = (objects::template_hash(d), d.storage.clone());
                actions.push(Box::new(move |w| w.apply_sts(replicas, hash, storage)));
            }
            Step::GrowVolume { ordinal, to, .. } => actions.push(Box::new(move |w| {
                assert!(w.expandable, "grew a volume whose class does not expand");
                assert!(w.pods.contains_key(&ordinal) || w.volumes.contains_key(&ordinal));
                match w.volume_storage.get_mut(&ordinal) {
                    Some(Storage::Volume { size, .. }) => *size = to.as_str().into(),
                    other => panic!("grew volume {ordinal} of {other:?}"),
                }
            })),
            Step::AddLearner {
                ordinal, peer_url, ..
            } => actions.push(Box::new(move |w| {
                assert!(
                    w.members.iter().all(|m| !m.learner),
                    "a second learner was added"
                );
                assert!(
                    w.volumes.get(&ordinal).is_none_or(|data| *data == 0),
                    "learner {ordinal} added while a volume with data exists"
                );
                w.next_id += 1;
                w.index += 1;
                let id = 1000 + w.next_id;
                w.members.push(SimMember {
                    id,
                    ordinal,
                    learner: true,
                    started: false,
                    raft_index: 0,
                    peer_url,
                });
                w.changes_this_pass += 1;
            })),
            Step::PromoteLearner { id, .. } => actions.push(Box::new(move |w| {
                let up = w
                    .members
                    .iter()
                    .find(|m| m.id == id)
                    .is_some_and(|m| w.is_up(m));
                let m = w
                    .members
                    .iter_mut()
                    .find(|m| m.id == id)
                    .expect("promoted member exists");
                assert!(m.learner && up, "promoted a learner that was not running");
                m.learner = false;
                if w.stale_on_promote {
                    w.stale.insert(id);
                }
                w.index += 1;
                w.changes_this_pass += 1;
            })),
            Step::MoveLeader { to_id, .. } => actions.push(Box::new(move |w| {
                w.leader = Some(to_id);
                w.stale.clear();
            })),
            Step::RemoveMember { id, .. } => actions.push(Box::new(move |w| {
                assert_ne!(
                    w.leader,
                    Some(id),
                    "removed the leader without moving leadership first"
                );
                if w.refuses_removal(id) {
                    return;
                }
                let was_voter = w.members.iter().any(|m| m.id == id && !m.learner);
                w.members.retain(|m| m.id != id);
                w.removed.insert(id);
                w.index += 1;
                w.changes_this_pass += 1;
                if was_voter {
                    let (voters, healthy) = (w.voters(), w.up_voters());
                    assert!(
                        healthy >= quorum(voters),
                        "removal left {healthy} healthy of {voters} voters"
                    );
                }
            })),
            Step::DeleteVolume { ordinal, .. } => actions.push(Box::new(move |w| {
                assert!(
                    !w.pods.contains_key(&ordinal),
                    "deleted the volume of a running pod"
                );
                w.volumes.remove(&ordinal);
                w.volume_storage.remove(&ordinal);
            })),
            Step::UpdatePeerUrl { id, to, .. } => actions.push(Box::new(move |w| {
                let m = w.members.iter_mut().find(|m| m.id == id);
                let m = m.unwrap_or_else(|| panic!("updated member {id}, which does not exist"));
                assert_ne!(m.peer_url, to, "an update already done was repeated");
                m.peer_url = to;
                w.index += 1;
                w.changes_this_pass += 1;
            })),
            Step::RestartMember { ordinal, why, .. } => actions.push(Box::new(move |w| {
                let serving = w
                    .members
                    .iter()
                    .find(|m| m.ordinal == ordinal)
                    .filter(|m| !m.learner && w.is_up(m))
                    .is_some();
                if serving {
                    assert_eq!(why, Restart::NewTemplate, "restarted a serving member");
                    // A one-member cluster has no quorum to keep through a restart (it chose
                    // none): its only member restarts on a new template all the same.
                    assert!(
                        w.voters() == 1 || w.up_voters() > quorum(w.voters()),
                        "a restart took a serving voter down below quorum"
                    );
                }
                w.restarts_seen += 1;
                if w.dies_on_restart == Some(w.restarts_seen) {
                    w.dead.insert(ordinal);
                }
                w.pods.remove(&ordinal);
            })),
            Step::WipeMember { ordinal, .. } => actions.push(Box::new(move |w| {
                assert!(
                    w.members.iter().all(|m| m.ordinal != ordinal),
                    "wiped the volume of a member still in the cluster"
                );
                w.volumes.remove(&ordinal);
                w.volume_storage.remove(&ordinal);
                w.pods.remove(&ordinal);
            })),
            // The simulated clusters are not restored from snapshots nor recovered (table tests
            // cover those: `plan::tests`, `plan::recover::tests`).
            Step::RestoreSeed { .. }
            | Step::DeleteRestorePod { .. }
            | Step::FenceClients
            | Step::TakeRecoverySnapshot { .. }
            | Step::VerifyRecoverySnapshot { .. }
            | Step::DeleteLostMembers { .. }
            | Step::MarkRecovered { .. } => {}
            Step::Downgrade { action, target } => actions.push(Box::new(move |w| {
                assert!(w.has_quorum(), "a downgrade enabled without a quorum");
                match action {
                    DowngradeStep::Enable => {
                        w.downgrade = Some(target.minor);
                        w.cluster_minor = Some(target.minor);
                    }
                    DowngradeStep::Cancel => w.downgrade = None,
                }
            })),
            Step::Compact { revision, .. } => actions.push(Box::new(move |w| {
                assert!(w.has_quorum(), "compacted without a quorum");
                let f = w
                    .full
                    .as_mut()
                    .expect("compacted a database that is not full");
                assert!(
                    revision <= f.revision,
                    "compacted past the current revision"
                );
                let live = f.live;
                for db in f.db.values_mut() {
                    db.1 = live;
                }
            })),
            Step::Defragment { ordinal, .. } => {
                actions.push(Box::new(move |w| {
                    let others_up = w
                        .members
                        .iter()
                        .filter(|m| !m.learner && m.ordinal != ordinal)
                        .all(|m| w.is_up(m));
                    assert!(
                        others_up,
                        "defragmented {ordinal} while another voter did not answer"
                    );
                    let f = w.full.as_mut().expect("defragmented without NOSPACE");
                    assert_eq!(f.defragmenting, None, "two members defragmenting at once");
                    f.defragmenting = Some(ordinal);
                }));
                actions.push(Box::new(move |w| {
                    let f = w.full.as_mut().unwrap();
                    if let Some(db) = f.db.get_mut(&ordinal) {
                        db.0 = db.1;
                    }
                }));
            }
            Step::DisarmNospace { .. } => actions.push(Box::new(move |w| {
                let quota = super::nospace::quota(&d_for_disarm);
                let f = w.full.as_mut().unwrap();
                assert!(
                    f.db.values().all(|db| db.0 < quota / 100 * 90),
                    "disarmed with a member still full: {:?} of {quota}",
                    f.db
                );
                f.alarm = false;
            })),
            // The simulated world has no etcd authentication (`plan::auth` has its own tests).
            Step::Auth { .. }
            | Step::Wait { .. }
            | Step::RollBack { .. }
            | Step::PreUpgradeSnapshot { .. }
            | Step::RaiseQuota { .. }
            | Step::TakeScheduledBackup { .. }
            | Step::PruneBackups { .. }
            | Step::CheckBackup { .. }
            | Step::AbandonBackup { .. }
            | Step::Drill { .. }
            // No simulated cluster is adopted.
            | Step::ResizeOldStatefulSet { .. }
            | Step::TakeOverService { .. }
            | Step::HibernateSnapshot { .. }
            | Step::Hibernated
            | Step::IssueCertificate { .. }
            | Step::RequestCertificate { .. }
            | Step::Paused
            | Step::Idle => {}
            Step::Hold { message, .. } => {
                panic!("the planner held in a simulation it must repair: {message}")
            }
        }
        for a in actions.into_iter().take(parts) {
            a(self);
        }
    }

    /// The engine's server-side apply of the whole StatefulSet: the API server refuses a changed
    /// claim template on an existing one.
    fn apply_sts(&mut self, replicas: u32, hash: String, (annotation, storage): (String, Storage)) {
        self.sts_annotation = annotation;
        if self.sts.is_some() {
            assert_eq!(
                self.sts_storage.as_ref(),
                Some(&storage),
                "applied a changed claim template to an existing StatefulSet (the API server refuses it)"
            );
        }
        if self.controller_lag && self.sts.as_ref().is_none_or(|(_, h)| *h != hash) {
            self.unseen_ticks = 2;
        }
        self.sts = Some((replicas, hash));
        self.sts_storage = Some(storage);
        self.orphaned = false;
    }

    fn check_invariants(&self) {
        if self.keeps_quorum && self.bootstrapped() && !self.members.is_empty() {
            assert!(
                self.has_quorum(),
                "below quorum: {} of {} voters run",
                self.up_voters(),
                self.voters()
            );
        }
        assert!(
            self.members.iter().filter(|m| m.learner).count() <= 1,
            "more than one learner: {:?}",
            self.members
        );
        assert!(
            self.changes_this_pass <= 1,
            "{} membership changes in one pass",
            self.changes_this_pass
        );
        for m in &self.members {
            assert!(
                !self.removed.contains(&m.id),
                "removed member {} came back",
                m.id
            );
        }
        for (o, id) in &self.volumes {
            let running_as = self
                .members
                .iter()
                .find(|m| m.ordinal == *o && self.is_up(m));
            assert!(
                *id == 0 || running_as.is_none_or(|m| m.id == *id),
                "member at {o} runs on the data of member {id}"
            );
        }
    }
}

/// Runs passes until Idle. In every pass whose step has sub-actions, the `crash_at`-th pass
/// (counting from 0) only carries out `crash_parts` of them.
fn converge(w: &mut World, d: &Desired, crash_at: Option<(usize, usize)>, max: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    for pass in 0..max {
        w.tick(d);
        w.check_invariants();
        let o = w.observe(d);
        let step = plan(d, &o);
        w.lost_since = super::lost_since(&o);
        if step == Step::Idle {
            check_converged(w, d);
            return steps;
        }
        w.changes_this_pass = 0;
        let parts = match crash_at {
            Some((p, k)) if p == pass => k,
            _ => usize::MAX,
        };
        w.act(d, &step, parts);
        w.check_invariants();
        steps.push(step);
    }
    panic!(
        "no convergence to {} members after {max} passes; last steps: {:#?}\nworld: {w:#?}",
        d.replicas,
        &steps[steps.len().saturating_sub(6)..]
    );
}

fn check_converged(w: &World, d: &Desired) {
    let n = d.replicas;
    assert_eq!(w.sts.as_ref().map(|s| s.0), Some(n));
    assert_eq!(w.members.len() as u32, n, "members: {:?}", w.members);
    assert!(
        w.members
            .iter()
            .all(|m| !m.learner && m.started && w.is_up(m))
    );
    let ords: BTreeSet<u32> = w.members.iter().map(|m| m.ordinal).collect();
    assert_eq!(ords, (0..n).collect());
    assert_eq!(
        w.volumes.keys().copied().collect::<BTreeSet<_>>(),
        (0..n).collect(),
        "leftover volumes"
    );
    assert!(
        w.members.iter().all(|m| m.raft_index >= w.acked),
        "a member misses acknowledged entries"
    );
    for (o, s) in &w.volume_storage {
        assert_eq!(
            *s,
            as_made(&d.storage),
            "volume {o} has another storage than the spec"
        );
    }
}

const PATH: [u32; 5] = [1, 3, 5, 3, 1];

#[test]
fn scaling_1_3_5_3_1_converges_without_crashes() {
    let mut w = World::default();
    for n in PATH {
        converge(&mut w, &desired(n), None, 60);
    }
}

#[test]
fn scaling_survives_a_crash_inside_every_step() {
    // For every leg and every pass of it, crash once after 0, 1 or 2 sub-actions.
    for leg in 0..PATH.len() {
        let clean_passes = {
            let mut w = World::default();
            for n in &PATH[..leg] {
                converge(&mut w, &desired(*n), None, 60);
            }
            converge(&mut w, &desired(PATH[leg]), None, 60).len()
        };
        for pass in 0..clean_passes {
            for parts in 0..3 {
                let mut w = World::default();
                for n in &PATH[..leg] {
                    converge(&mut w, &desired(*n), None, 60);
                }
                converge(&mut w, &desired(PATH[leg]), Some((pass, parts)), 80);
            }
        }
    }
}

#[test]
fn a_spec_reversed_mid_scale_converges_back() {
    for from in [3u32, 5] {
        let to = if from == 3 { 5 } else { 3 };
        let clean = {
            let mut w = World::default();
            converge(&mut w, &desired(from), None, 60);
            converge(&mut w, &desired(to), None, 60).len()
        };
        for stop in 1..clean {
            let mut w = World::default();
            converge(&mut w, &desired(from), None, 60);
            // Run `stop` passes towards `to`, then the user changes their mind.
            let d = desired(to);
            for _ in 0..stop {
                w.tick(&d);
                let s = plan(&d, &w.observe(&d));
                w.changes_this_pass = 0;
                w.act(&d, &s, usize::MAX);
                w.check_invariants();
            }
            converge(&mut w, &desired(from), None, 80);
        }
    }
}

#[test]
fn every_scale_up_adds_exactly_one_learner_at_a_time_and_promotes_it() {
    let mut w = World::default();
    converge(&mut w, &desired(3), None, 60);
    let steps = converge(&mut w, &desired(5), None, 60);
    let membership: Vec<&Step> = steps.iter().filter(|s| s.is_membership_change()).collect();
    assert_eq!(membership.len(), 4, "{membership:#?}");
    assert!(matches!(membership[0], Step::AddLearner { ordinal: 3, .. }));
    assert!(matches!(membership[1], Step::PromoteLearner { .. }));
    assert!(matches!(membership[2], Step::AddLearner { ordinal: 4, .. }));
    assert!(matches!(membership[3], Step::PromoteLearner { .. }));
}

#[test]
fn scale_down_removes_members_before_shrinking_and_deletes_their_volumes() {
    let mut w = World::default();
    converge(&mut w, &desired(3), None, 60);
    let steps = converge(&mut w, &desired(1), None, 60);
    let kinds: Vec<&str> = steps
        .iter()
        .filter(|s| s.is_change())
        .map(|s| match s {
            Step::RemoveMember { .. } => "remove",
            Step::ResizeStatefulSet { .. } => "resize",
            Step::DeleteVolume { .. } => "volume",
            Step::MoveLeader { .. } => "leader",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "leader", "remove", "resize", "volume", "remove", "resize", "volume"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// faults

/// A converged world of `n` members.
fn formed(n: u32) -> World {
    let mut w = World::default();
    converge(&mut w, &desired(n), None, 60);
    w
}

/// Applies `fault` to a converged 3-member world and converges to `d`; then again with a crash
/// after 0, 1 or 2 sub-actions of every pass of the repair. Returns the clean run's steps.
fn repaired_after(fault: &dyn Fn(&mut World), d: &Desired) -> Vec<Step> {
    let clean = {
        let mut w = formed(3);
        fault(&mut w);
        converge(&mut w, d, None, 150)
    };
    for pass in 0..clean.len() {
        for parts in 0..3 {
            let mut w = formed(3);
            fault(&mut w);
            converge(&mut w, d, Some((pass, parts)), 200);
        }
    }
    clean
}

fn wipe(w: &mut World, ordinal: u32) {
    w.volumes.insert(ordinal, 0);
    w.pods.remove(&ordinal);
}

#[test]
fn a_member_whose_volume_is_wiped_is_replaced_at_any_ordinal() {
    for ord in 0..3 {
        let d = desired(3);
        let before = formed(3);
        let old = before.members.iter().find(|m| m.ordinal == ord).unwrap().id;
        let steps = repaired_after(&|w| wipe(w, ord), &d);
        let membership: Vec<&Step> = steps.iter().filter(|s| s.is_membership_change()).collect();
        assert!(
            matches!(membership[..], [Step::RemoveMember { id, .. }, Step::AddLearner { ordinal, .. }, Step::PromoteLearner { .. }] if *id == old && *ordinal == ord),
            "ordinal {ord}: {membership:#?}"
        );
        let mut w = formed(3);
        wipe(&mut w, ord);
        converge(&mut w, &d, None, 150);
        let now = w.members.iter().find(|m| m.ordinal == ord).unwrap().id;
        assert_ne!(now, old, "ordinal {ord} came back under its old member id");
    }
}

#[test]
fn a_lost_member_is_replaced_only_after_the_grace_period() {
    let d = desired(3);
    let mut w = formed(3);
    wipe(&mut w, 1);
    let mut waited = 0;
    loop {
        w.tick(&d);
        let o = w.observe(&d);
        let step = plan(&d, &o);
        w.lost_since = super::lost_since(&o);
        if matches!(step, Step::RemoveMember { .. }) {
            let since = o.lost_since[&1];
            assert!(o.now.as_second() - since.as_second() >= d.lost_member_grace_seconds as i64);
            break;
        }
        assert!(
            matches!(&step, Step::Wait { reason, .. } if *reason == crate::api::Reason::ReplacingMember),
            "{step:?}"
        );
        waited += 1;
        assert!(waited < 20, "never replaced");
    }
    assert!(waited as u64 * TICK_SECONDS >= d.lost_member_grace_seconds - TICK_SECONDS);
}

#[test]
fn a_deleted_member_config_with_every_pod_restarted_is_rebuilt_and_keeps_every_member() {
    let d = desired(3);
    let ids: BTreeSet<u64> = formed(3).members.iter().map(|m| m.id).collect();
    let steps = repaired_after(
        &|w| {
            w.config = None;
            w.pods.clear();
        },
        &d,
    );
    assert!(
        !steps.iter().any(|s| s.is_membership_change()),
        "{steps:#?}"
    );
    let mut w = formed(3);
    w.config = None;
    w.pods.clear();
    converge(&mut w, &d, None, 60);
    assert_eq!(w.members.iter().map(|m| m.id).collect::<BTreeSet<_>>(), ids);
}

#[test]
fn a_cluster_deleted_with_its_volumes_kept_comes_back_on_them() {
    // `kubectl etcd delete demo` (volumes kept) then `create demo`: a new EtcdCluster without
    // status; the StatefulSet, Services, budget and config went with the old one.
    let d = desired(3);
    let ids: BTreeSet<u64> = formed(3).members.iter().map(|m| m.id).collect();
    let delete = |w: &mut World| {
        w.sts = None;
        w.config = None;
        w.supporting = false;
        w.pods.clear();
        w.known.clear();
    };
    let steps = repaired_after(&delete, &d);
    assert!(!steps.iter().any(|s| matches!(s, Step::Bootstrap { .. })));
    assert!(
        !steps.iter().any(|s| s.is_membership_change()),
        "{steps:#?}"
    );
    let mut w = formed(3);
    delete(&mut w);
    converge(&mut w, &d, None, 60);
    assert_eq!(w.members.iter().map(|m| m.id).collect::<BTreeSet<_>>(), ids);
}

#[test]
fn a_statefulset_scaled_down_by_hand_is_put_back_first() {
    let d = desired(3);
    let steps = repaired_after(&|w| w.sts.as_mut().unwrap().0 = 1, &d);
    assert!(
        matches!(
            steps.first(),
            Some(Step::ResizeStatefulSet { from: 1, to: 3 })
        ),
        "{steps:#?}"
    );
    assert!(
        !steps.iter().any(|s| s.is_membership_change()),
        "{steps:#?}"
    );
}

#[test]
fn a_bad_template_is_undone_by_reverting_the_spec() {
    let good = desired(3);
    let mut bad = desired(3);
    bad.image = "gcr.io/etcd-development/etcd:v0.0.0-does-not-exist".into();
    let mut w = formed(3);
    w.bad_templates.insert(revision(&bad));
    // The bad template reaches one member and stops there (the others wait for it).
    for _ in 0..15 {
        w.tick(&bad);
        w.check_invariants();
        let step = plan(&bad, &w.observe(&bad));
        w.changes_this_pass = 0;
        w.act(&bad, &step, usize::MAX);
        w.check_invariants();
    }
    let down = w.pods.values().filter(|p| !p.up).count();
    assert_eq!(down, 1, "a bad template took down more than one member");
    // Reverted: the broken pod is restarted although the cluster is not fully healthy.
    let steps = converge(&mut w, &good, None, 40);
    assert!(
        steps.iter().any(|s| matches!(
            s,
            Step::RestartMember {
                why: Restart::NewTemplate,
                ..
            }
        )),
        "{steps:#?}"
    );
}

/// Issue 43 R4, waking after a bad `imageRepository`: every member's pod made at once on a
/// template whose image cannot be pulled, so no member runs and none answers. Setting the spec
/// back must reach those pods (the StatefulSet's OnDelete updates never replace them): each is
/// replaced, one at a time, and the cluster comes back whole on its data.
#[test]
fn every_member_started_on_an_image_that_cannot_be_pulled_comes_back_once_the_spec_is_set_back() {
    let good = desired(3);
    let mut bad = desired(3);
    bad.image_repository = "registry.invalid/etcd".into();
    bad.image = "registry.invalid/etcd:v0.0.0-does-not-exist".into();
    for crash_at in [None, Some((1, 0)), Some((2, 0)), Some((3, 0))] {
        let mut w = formed(3);
        w.bad_templates.insert(revision(&bad));
        let acked = w.acked;
        w.act(&bad, &Step::UpdateTemplate { replicas: 3 }, usize::MAX);
        // Woken (or every pod deleted): the StatefulSet makes them all on the bad template.
        w.pods.clear();
        for _ in 0..4 {
            w.tick(&bad);
        }
        assert!(w.pods.values().all(|p| !p.up), "{w:#?}");
        let steps = converge(&mut w, &good, crash_at, 60);
        let replaced = steps
            .iter()
            .filter(|s| {
                matches!(
                    s,
                    Step::RestartMember {
                        why: Restart::NewTemplate,
                        ..
                    }
                )
            })
            .count();
        assert!(replaced >= 3, "crash {crash_at:?}: {steps:#?}");
        assert!(w.acked >= acked, "crash {crash_at:?}");
        assert!(
            w.pods
                .values()
                .all(|p| p.up && p.template == revision(&good)),
            "crash {crash_at:?}: {w:#?}"
        );
    }
}

#[test]
fn quorum_loss_is_reported_with_the_gone_members_and_never_acted_on() {
    let d = desired(3);
    let mut w = formed(3);
    wipe(&mut w, 0);
    wipe(&mut w, 2);
    for _ in 0..20 {
        w.tick(&d);
        let step = plan(&d, &w.observe(&d));
        let Step::Hold { reason, message } = &step else {
            panic!("{step:?}")
        };
        assert_eq!(*reason, crate::api::Reason::QuorumLost);
        assert!(
            message.contains("demo-0, demo-2")
                && message.contains("kubectl etcd -n ns recover demo"),
            "{message}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// versions

/// The cluster at `replicas` asking for `version`, as `kubectl etcd upgrade` writes it (the
/// pre-upgrade snapshot recorded).
fn on(version: &str, replicas: u32) -> Desired {
    let mut d = crate::fixtures::cluster("demo")
        .replicas(replicas as i32)
        .version(version)
        .desired();
    d.pre_upgrade_backup = Some("s3://b/demo-pre.db".into());
    d
}

/// One pass as the engine makes it: observe, status of the last pass in, settle, plan, record,
/// act (only `parts` sub-actions of the step).
fn version_pass(
    w: &mut World,
    spec: &Desired,
    status: &mut crate::api::EtcdClusterStatus,
    parts: usize,
) -> Step {
    w.tick(spec);
    w.check_invariants();
    let mut o = w.observe(spec);
    (o.last_version, o.upgrade) = upgrade::from_status(Some(status));
    let d = upgrade::settle(spec.clone(), &o);
    let step = plan(&d, &o);
    w.lost_since = super::lost_since(&o);
    // A finished upgrade is never rolled back (whatever a member does afterwards).
    if let Some(u) = status
        .upgrade
        .as_ref()
        .filter(|u| u.state == crate::api::upgrade_state::UPGRADED)
    {
        assert!(
            !matches!(&step, Step::RollBack { to, .. } if to.to_string() == u.to_version),
            "the finished upgrade {} → {} was rolled back: {step:?}",
            u.from_version,
            u.to_version
        );
    }
    status.upgrade = upgrade::record(&d, &o, &step, status.upgrade.as_ref());
    // A converged pass (where `upgrade` returns) never leaves the change it finished in progress.
    if step == Step::Idle
        && let Some(u) = &status.upgrade
    {
        assert!(
            u.state != crate::api::upgrade_state::UPGRADING,
            "converged with status.upgrade {u:?}: {d:?} {o:?}"
        );
    }
    if let EtcdView::Reached(c) = &o.etcd {
        status.version = c.versions().min().map(|v| v.to_string());
    }
    w.changes_this_pass = 0;
    w.act(&d, &step, parts);
    w.check_invariants();
    step
}

/// Passes until Idle (a crash inside pass `crash_at.0` after `crash_at.1` sub-actions).
fn converge_versions(
    w: &mut World,
    spec: &Desired,
    status: &mut crate::api::EtcdClusterStatus,
    crash_at: Option<(usize, usize)>,
    max: usize,
) -> Vec<Step> {
    let mut steps = Vec::new();
    for pass in 0..max {
        let parts = match crash_at {
            Some((p, k)) if p == pass => k,
            _ => usize::MAX,
        };
        let step = version_pass(w, spec, status, parts);
        if step == Step::Idle {
            return steps;
        }
        steps.push(step);
    }
    panic!(
        "no convergence to {} after {max} passes; last steps: {:#?}",
        spec.version,
        &steps[steps.len().saturating_sub(6)..]
    );
}

/// A converged 3-member world on `version`, and its status.
fn formed_on(version: &str) -> (World, crate::api::EtcdClusterStatus) {
    let mut w = World::default();
    let mut st = crate::api::EtcdClusterStatus::default();
    converge_versions(&mut w, &on(version, 3), &mut st, None, 60);
    (w, st)
}

fn all_run(w: &World, version: &str) -> bool {
    w.members
        .iter()
        .all(|m| w.is_up(m) && w.version_of(m.ordinal).to_string() == version)
}

#[test]
fn three_four_to_three_five_to_three_six_survives_a_crash_inside_every_step() {
    for (from, to) in [("3.4.23", "3.5.30"), ("3.5.30", "3.6.15")] {
        let clean = {
            let (mut w, mut st) = formed_on(from);
            let steps = converge_versions(&mut w, &on(to, 3), &mut st, None, 80);
            assert!(all_run(&w, to), "{from} → {to}: {w:#?}");
            let minor = Version::parse(to).unwrap().minor;
            assert_eq!(w.cluster_minor, Some(minor));
            assert_eq!(st.upgrade.as_ref().unwrap().state, "Upgraded");
            steps.len()
        };
        for pass in 0..clean {
            for parts in 0..2 {
                let (mut w, mut st) = formed_on(from);
                converge_versions(&mut w, &on(to, 3), &mut st, Some((pass, parts)), 100);
                assert!(all_run(&w, to), "{from} → {to}, crash in pass {pass}");
                check_converged(&w, &on(to, 3));
            }
        }
    }
}

#[test]
fn three_six_goes_down_to_three_five_through_the_downgrade_api_in_the_simulation() {
    let (mut w, mut st) = formed_on("3.5.30");
    converge_versions(&mut w, &on("3.6.15", 3), &mut st, None, 80);
    let steps = converge_versions(&mut w, &on("3.5.30", 3), &mut st, None, 80);
    assert!(all_run(&w, "3.5.30"), "{w:#?}");
    assert_eq!((w.cluster_minor, w.downgrade), (Some(5), None));
    let first_change = steps
        .iter()
        .find(|s| !matches!(s, Step::UpdateTemplate { .. } | Step::Wait { .. }));
    assert!(
        matches!(
            first_change,
            Some(Step::Downgrade {
                action: DowngradeStep::Enable,
                ..
            })
        ),
        "{steps:#?}"
    );
}

#[test]
fn a_member_that_never_comes_back_from_its_upgrade_is_rolled_back_and_costs_no_quorum() {
    // The first member upgraded, or the last one (the leader), never runs again.
    for nth in [1, 3] {
        let (mut w, mut st) = formed_on("3.4.23");
        w.dies_on_restart = Some(nth);
        let spec = on("3.5.30", 3);
        let mut rolled_back = false;
        for _ in 0..60 {
            let acked = w.acked;
            let step = version_pass(&mut w, &spec, &mut st, usize::MAX);
            rolled_back |= matches!(step, Step::RollBack { .. });
            assert!(w.has_quorum(), "member {nth}: quorum lost: {w:#?}");
            assert!(w.acked > acked, "member {nth}: writes stopped");
            assert!(w.dead.len() <= 1, "more than one member lost: {:?}", w.dead);
        }
        // The cluster version never moved (the lost member last ran 3.4), so putting 3.4.23
        // back was safe and was done.
        assert!(rolled_back, "member {nth}: no rollback: {st:#?}");
        // The lost member's pod never runs again (its node is gone): the rollback has not
        // reached it, and status says so until it does.
        assert_eq!(st.upgrade.as_ref().unwrap().state, "RollingBack");
        assert_eq!(w.cluster_minor, Some(4));
        if nth == 1 {
            // Nobody else had moved: they stay on 3.4.23.
            let alive: Vec<u32> = (0..3).filter(|o| !w.dead.contains(o)).collect();
            for o in alive {
                assert_eq!(w.version_of(o).to_string(), "3.4.23", "demo-{o}");
            }
        }
    }
}

/// Issue 43 R4: `create one --replicas 1`, `upgrade one --version 3.7.93 --skip-backup` (no
/// such image). The only pod never runs the new version, so no member answers; the rollback
/// replaces it on the old template, and status says RolledBack only once it runs there.
#[test]
fn a_one_member_upgrade_to_an_image_that_cannot_be_pulled_is_rolled_back_onto_its_pod() {
    let mut w = World::default();
    let mut st = crate::api::EtcdClusterStatus::default();
    converge_versions(&mut w, &on("3.6.15", 1), &mut st, None, 60);
    let spec = on("3.7.93", 1);
    w.bad_templates.insert(revision(&spec));
    let (mut rolled_back, mut idle) = (false, false);
    for _ in 0..80 {
        let step = version_pass(&mut w, &spec, &mut st, usize::MAX);
        rolled_back |= matches!(step, Step::RollBack { .. });
        let state = st.upgrade.as_ref().map(|u| u.state.clone());
        if state.as_deref() == Some(crate::api::upgrade_state::ROLLED_BACK) {
            assert!(
                all_run(&w, "3.6.15") && w.pods.values().all(|p| p.up),
                "RolledBack reported before the pod runs 3.6.15 again: {w:#?}"
            );
        }
        if step == Step::Idle {
            idle = true;
            break;
        }
    }
    assert!(rolled_back, "{st:#?}");
    assert!(idle, "the rollback never reached the pod: {w:#?}");
    assert!(all_run(&w, "3.6.15"), "{w:#?}");
    assert_eq!(st.upgrade.as_ref().unwrap().state, "RolledBack");
}

#[test]
fn an_upgrade_waits_for_the_statefulset_controller_to_take_in_the_new_template() {
    // CI: the controller-manager under load took in the new template after the next pass had
    // read the StatefulSet; its update revision still named the old template, every pod looked
    // current, and `upgrade` returned with no member upgraded (status.upgrade still Upgrading).
    let (mut w, mut st) = formed_on("3.5.16");
    w.controller_lag = true;
    let steps = converge_versions(&mut w, &on("3.5.30", 3), &mut st, None, 80);
    assert!(all_run(&w, "3.5.30"), "{steps:#?}");
    assert_eq!(st.upgrade.as_ref().unwrap().state, "Upgraded");
    assert!(
        steps
            .iter()
            .any(|s| s.to_string().contains("has not yet taken in")),
        "{steps:#?}"
    );
}

#[test]
fn a_finished_upgrade_is_never_rolled_back_when_a_members_container_restarts() {
    // 3.5.16 → 3.5.30 finishes with a 30 s deadline; then one member's etcd container is
    // killed and stays down for minutes, in its old pod.
    let (mut w, mut st) = formed_on("3.5.16");
    let mut spec = on("3.5.30", 3);
    spec.upgrade_timeout_seconds = TICK_SECONDS;
    converge_versions(&mut w, &spec, &mut st, None, 80);
    assert_eq!(st.upgrade.as_ref().unwrap().state, "Upgraded");
    for ord in 0..3 {
        w.container_down.insert(ord, 8);
        for _ in 0..20 {
            version_pass(&mut w, &spec, &mut st, usize::MAX);
        }
        assert_eq!(st.upgrade.as_ref().unwrap().state, "Upgraded", "demo-{ord}");
        assert!(all_run(&w, "3.5.30"), "demo-{ord}: {w:#?}");
    }
}

#[test]
fn a_template_change_after_a_minor_upgrade_is_never_turned_into_a_downgrade() {
    // 3.5.30 → 3.6.15 finished; spec.imageRepository set to an image that cannot be pulled,
    // then set back.
    let (mut w, mut st) = formed_on("3.5.30");
    let spec = on("3.6.15", 3);
    converge_versions(&mut w, &spec, &mut st, None, 80);
    let mut bad = spec.clone();
    bad.image_repository = "registry.invalid/etcd".into();
    bad.image = "registry.invalid/etcd:v3.6.15".into();
    w.bad_templates.insert(revision(&bad));
    for _ in 0..30 {
        let step = version_pass(&mut w, &bad, &mut st, usize::MAX);
        assert!(
            !matches!(step, Step::RollBack { .. } | Step::Downgrade { .. }),
            "{step:?}"
        );
    }
    assert_eq!(w.downgrade, None);
    assert_eq!(w.cluster_minor, Some(6));
    converge_versions(&mut w, &spec, &mut st, None, 80);
    assert!(all_run(&w, "3.6.15"), "{w:#?}");
}

/// NOSPACE healed by the engine alone (`plan::nospace`, its status record read back as the
/// engine does), with a crash inside every step: every member defragmented while every other
/// voter answers, never two at once, the alarm disarmed only below 90 % of the quota; a
/// database of live data gets its quota raised once, rolled out one member at a time.
#[test]
fn a_full_database_is_healed_one_member_at_a_time_with_a_crash_inside_every_step() {
    const MIB: i64 = 1 << 20;
    let spec = crate::fixtures::cluster("demo")
        .replicas(3)
        .spec(|s| s.etcd.quota_backend_bytes = Some(16 * MIB))
        .desired();
    for (live, raises) in [(2 * MIB, 0), (15 * MIB, 1)] {
        for crash_at in 0..14 {
            for crash_parts in 0..2 {
                let mut w = World::default();
                converge(&mut w, &spec, None, 60);
                w.full = Some(SimFull {
                    alarm: true,
                    live,
                    db: (0..3).map(|o| (o, (16 * MIB, 16 * MIB))).collect(),
                    revision: 500,
                    defragmenting: None,
                });
                let (mut rec, mut d, mut steps) = (None, spec.clone(), Vec::new());
                let mut idle = false;
                for pass in 0..80 {
                    w.tick(&d);
                    w.check_invariants();
                    let mut o = w.observe(&d);
                    o.maintenance = rec.clone();
                    d = super::nospace::settle(spec.clone(), &o);
                    let step = plan(&d, &o);
                    if step == Step::Idle {
                        idle = true;
                        break;
                    }
                    let parts = if pass == crash_at {
                        crash_parts
                    } else {
                        usize::MAX
                    };
                    w.changes_this_pass = 0;
                    w.act(&d, &step, parts);
                    w.check_invariants();
                    // A crashed pass writes no status (and decides again next time).
                    if parts == usize::MAX {
                        rec = super::nospace::record(&d, &o, &step, rec.as_ref());
                        steps.push(step);
                    }
                }
                assert!(idle && !w.alarm(), "not healed: {steps:#?}");
                assert_eq!(
                    steps
                        .iter()
                        .filter(|s| matches!(s, Step::RaiseQuota { .. }))
                        .count(),
                    raises,
                    "{steps:#?}"
                );
                let defrags: Vec<&Step> = steps
                    .iter()
                    .filter(|s| matches!(s, Step::Defragment { .. }))
                    .collect();
                assert!(
                    matches!(defrags.last(), Some(Step::Defragment { id, .. }) if Some(*id) == w.leader)
                        || raises == 1,
                    "the leader is defragmented last: {defrags:#?}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// storage changes and hibernation

/// `desired(3)` whose volumes are `size` of `class`.
fn with_storage(size: &str, class: Option<&str>) -> Desired {
    let mut d = desired(3);
    d.storage = Storage::Volume {
        size: size.into(),
        class: class.map(str::to_owned),
    };
    d
}

/// A converged 3-member world whose class does (or does not) allow expansion, taken to `d`
/// cleanly and then with a crash after 0, 1 or 2 sub-actions of every pass; never below
/// quorum. Returns the clean run's steps.
fn storage_changed(expandable: bool, d: &Desired) -> Vec<Step> {
    let start = || {
        let mut w = formed(3);
        w.expandable = expandable;
        w.keeps_quorum = true;
        w
    };
    let clean = converge(&mut start(), d, None, 200);
    for pass in 0..clean.len() {
        for parts in 0..3 {
            converge(&mut start(), d, Some((pass, parts)), 250);
        }
    }
    clean
}

#[test]
fn moving_to_another_class_swaps_one_member_at_a_time_never_below_quorum() {
    let d = with_storage("1Gi", Some("fast"));
    let ids: BTreeSet<u64> = formed(3).members.iter().map(|m| m.id).collect();
    let steps = storage_changed(true, &d);
    assert!(
        matches!(
            steps[0],
            Step::RecreateStatefulSet {
                path: super::storage::Path::Swap,
                ..
            }
        ),
        "{steps:#?}"
    );
    let membership: Vec<&Step> = steps.iter().filter(|s| s.is_membership_change()).collect();
    // Each member: removed, re-added as a learner, promoted; three times.
    assert_eq!(membership.len(), 9, "{membership:#?}");
    for three in membership.chunks(3) {
        assert!(
            matches!(
                three,
                [
                    Step::RemoveMember { .. },
                    Step::AddLearner { .. },
                    Step::PromoteLearner { .. }
                ]
            ),
            "{three:#?}"
        );
    }
    let mut w = formed(3);
    converge(&mut w, &d, None, 200);
    let now: BTreeSet<u64> = w.members.iter().map(|m| m.id).collect();
    assert!(
        ids.is_disjoint(&now),
        "every member is a new one on a new volume"
    );
}

/// The leader counts each promoted learner as disconnected (etcd's stale peer count, met on the
/// testbed mid-swap): the next removal would be refused forever. Leadership goes to the member
/// it miscounts, and the swap finishes, never below quorum.
#[test]
fn a_swap_whose_leader_miscounts_a_new_member_hands_it_leadership_and_finishes() {
    let d = with_storage("1Gi", Some("fast"));
    let mut w = formed(3);
    w.stale_on_promote = true;
    w.keeps_quorum = true;
    let steps = converge(&mut w, &d, None, 200);
    let moves = steps
        .iter()
        .filter(|s| matches!(s, Step::MoveLeader { .. }))
        .count();
    assert!(moves >= 1, "{steps:#?}");
    assert_eq!(
        steps
            .iter()
            .filter(|s| matches!(s, Step::RemoveMember { .. }))
            .count(),
        3,
        "every removal asked once, none refused: {steps:#?}"
    );
}

#[test]
fn growing_where_the_class_expands_touches_no_member() {
    let d = with_storage("2Gi", None);
    let steps = storage_changed(true, &d);
    assert!(
        matches!(
            steps[0],
            Step::RecreateStatefulSet {
                path: super::storage::Path::Grow,
                ..
            }
        ),
        "{steps:#?}"
    );
    assert!(
        !steps.iter().any(|s| s.is_membership_change()),
        "{steps:#?}"
    );
    assert!(
        !steps
            .iter()
            .any(|s| matches!(s, Step::RestartMember { .. })),
        "{steps:#?}"
    );
    let grown: Vec<u32> = steps
        .iter()
        .filter_map(|s| match s {
            Step::GrowVolume { ordinal, .. } => Some(*ordinal),
            _ => None,
        })
        .collect();
    assert_eq!(grown, [0, 1, 2]);
}

#[test]
fn growing_where_the_class_does_not_expand_swaps_like_a_class_change() {
    let d = with_storage("2Gi", None);
    let steps = storage_changed(false, &d);
    assert!(!steps.iter().any(|s| matches!(s, Step::GrowVolume { .. })));
    let removed = steps
        .iter()
        .filter(|s| matches!(s, Step::RemoveMember { .. }))
        .count();
    assert_eq!(removed, 3, "{steps:#?}");
}

/// Passes until the planner says `Hibernated` (with a crash after `crash` sub-actions of the
/// `at`-th pass).
fn hibernate(w: &mut World, d: &Desired, crash: Option<(usize, usize)>) -> Vec<Step> {
    let mut steps = Vec::new();
    for pass in 0..40 {
        w.tick(d);
        w.check_invariants();
        let o = w.observe(d);
        let step = plan(d, &o);
        w.lost_since = super::lost_since(&o);
        if step == Step::Hibernated {
            return steps;
        }
        w.changes_this_pass = 0;
        let parts = match crash {
            Some((p, k)) if p == pass => k,
            _ => usize::MAX,
        };
        w.act(d, &step, parts);
        w.check_invariants();
        steps.push(step);
    }
    panic!("never hibernated: {steps:#?}");
}

#[test]
fn a_hibernated_cluster_wakes_as_the_same_members_on_their_data() {
    let mut asleep = desired(3);
    asleep.hibernate = true;
    asleep.hibernate_snapshot = Some("s3://b/demo.db".into());
    for crash in [None, Some((0, 0)), Some((1, 0))] {
        let mut w = formed(3);
        let ids: BTreeSet<u64> = w.members.iter().map(|m| m.id).collect();
        let acked = w.acked;
        let steps = hibernate(&mut w, &asleep, crash);
        assert!(
            !steps.iter().any(|s| s.is_membership_change()),
            "{steps:#?}"
        );
        assert!(w.pods.is_empty(), "pods left: {:?}", w.pods);
        assert_eq!(w.volumes.len(), 3, "the volumes stay");
        // Nothing is replaced or repaired while it sleeps, however long.
        for _ in 0..20 {
            w.tick(&asleep);
            assert_eq!(plan(&asleep, &w.observe(&asleep)), Step::Hibernated);
        }
        let steps = converge(&mut w, &desired(3), None, 60);
        assert!(
            !steps.iter().any(|s| s.is_membership_change()),
            "{steps:#?}"
        );
        assert_eq!(w.members.iter().map(|m| m.id).collect::<BTreeSet<_>>(), ids);
        assert!(w.acked >= acked);
    }
}

// ---------------------------------------------------------------------------------------------
// drains

/// The pod at `k` evicted: gone, and its replacement down for a tick while it starts elsewhere.
fn evict(w: &mut World, k: u32) {
    w.pods.remove(&k);
    w.container_down.insert(k, 1);
}

/// Drains the nodes of members 0, 1, 2 in turn, as `kubectl drain` does: cordon (the engine runs
/// its passes meanwhile, crashing after `crash` sub-actions of its `pass`-th), then evict the
/// pod once the disruption budget allows (every voter up), then the pod runs elsewhere.
/// Returns the ordinals whose pod was the leader's when evicted.
fn drain_each_node(w: &mut World, d: &Desired, crash: Option<(usize, usize)>) -> Vec<u32> {
    let mut evicted_leaders = Vec::new();
    for k in 0..3 {
        w.cordoned.insert(k);
        converge(w, d, crash, 40);
        assert_eq!(w.up_voters(), 3, "the budget lets no eviction through");
        let leader = w
            .leader
            .and_then(|l| w.members.iter().find(|m| m.id == l))
            .map(|m| m.ordinal);
        if leader == Some(k) {
            evicted_leaders.push(k);
        }
        evict(w, k);
        w.cordoned.remove(&k);
        converge(w, d, None, 40);
    }
    evicted_leaders
}

#[test]
fn a_drain_of_every_node_in_turn_never_evicts_the_leader_nor_costs_an_election() {
    let d = desired(3);
    let mut w = formed(3);
    w.keeps_quorum = true;
    let before = w.elections;
    assert_eq!(drain_each_node(&mut w, &d, None), Vec::<u32>::new());
    assert_eq!(w.elections, before, "a leader was lost to an eviction");
    for pass in 0..3 {
        for parts in 0..2 {
            let mut w = formed(3);
            w.keeps_quorum = true;
            let before = w.elections;
            assert_eq!(
                drain_each_node(&mut w, &d, Some((pass, parts))),
                Vec::<u32>::new()
            );
            assert_eq!(w.elections, before);
        }
    }
}

#[test]
fn without_the_drain_rule_the_leaders_eviction_would_cost_an_election() {
    // The same drain with nothing marked as leaving: the leader's pod goes with its leadership,
    // which is what the rule spares (the test that the simulation sees the difference).
    let d = desired(3);
    let mut w = formed(3);
    let leader = w
        .leader
        .and_then(|l| w.members.iter().find(|m| m.id == l))
        .map(|m| m.ordinal)
        .unwrap();
    let before = w.elections;
    evict(&mut w, leader);
    converge(&mut w, &d, None, 40);
    assert_eq!(w.elections, before + 1);
}

#[test]
fn a_storage_swap_during_a_drain_never_hands_leadership_to_the_cordoned_member() {
    let d = with_storage("1Gi", Some("fast"));
    let mut w = formed(3);
    w.keeps_quorum = true;
    w.expandable = true;
    w.cordoned.insert(1);
    let steps = converge(&mut w, &d, None, 200);
    for s in &steps {
        if let Step::MoveLeader { to, .. } = s {
            assert_ne!(to, "demo-1", "{steps:#?}");
        }
    }
}

/// Passes as the engine makes them while TLS may be switched: the template's TLS kept or a
/// switch begun (`model::keep_immutable`), its stage settled from the member list
/// (`tls_switch::settle`), then the plan. Until Idle; a crash as in `converge`.
fn switch_converge(
    w: &mut World,
    spec: &Desired,
    crash_at: Option<(usize, usize)>,
    max: usize,
) -> Vec<Step> {
    switch_converge_with(w, spec, crash_at, max, |_, _| {})
}

/// `switch_converge`, with `fault` done to the world before each pass's tick (it sees the
/// steps so far).
fn switch_converge_with(
    w: &mut World,
    spec: &Desired,
    crash_at: Option<(usize, usize)>,
    max: usize,
    mut fault: impl FnMut(&mut World, &[Step]),
) -> Vec<Step> {
    let mut steps = Vec::new();
    for pass in 0..max {
        fault(w, &steps);
        w.tick(spec);
        w.check_invariants();
        let seen = w.observe(spec);
        let d = crate::model::keep_immutable(spec.clone(), seen.statefulset.as_ref());
        let o = w.observe(&d);
        let d = super::tls_switch::settle(d, &o);
        let step = plan(&d, &o);
        w.lost_since = super::lost_since(&o);
        if step == Step::Idle {
            check_converged(w, &d);
            return steps;
        }
        w.changes_this_pass = 0;
        let parts = match crash_at {
            Some((p, k)) if p == pass => k,
            _ => usize::MAX,
        };
        w.act(&d, &step, parts);
        w.check_invariants();
        steps.push(step);
    }
    panic!(
        "no convergence after {max} passes; last steps: {:#?}\nworld: {w:#?}",
        &steps[steps.len().saturating_sub(6)..]
    );
}

/// A formed 3-member world that must keep a quorum of reachable voters at every tick.
fn formed_keeping_quorum() -> World {
    let mut w = formed(3);
    w.keeps_quorum = true;
    w
}

/// Client and peer TLS with the cluster's Secrets (mode `secrets`: no certificate to issue).
fn with_tls(mut d: Desired) -> Desired {
    d.tls = objects::managed_tls(&d.name);
    d
}

/// Every member's peer URL is the one `d`'s own template gives it, and every pod runs it.
fn check_switched(w: &World, d: &Desired) {
    for m in &w.members {
        assert_eq!(m.peer_url, objects::peer_url(d, m.ordinal), "{m:?}");
    }
    assert!(w.pods.values().all(|p| p.template == revision(d)));
    assert!(w.templates[&revision(d)].tls_switch.is_none());
}

#[test]
fn tls_switched_on_and_off_keeps_quorum_with_a_crash_before_every_step() {
    let (plain, on) = (desired(3), with_tls(desired(3)));
    let mut w = formed_keeping_quorum();
    let clean = switch_converge(&mut w, &on, None, 200);
    check_switched(&w, &on);
    let updates = |steps: &[Step]| {
        steps
            .iter()
            .filter(|s| matches!(s, Step::UpdatePeerUrl { .. }))
            .count()
    };
    // Each member moves twice: to the switch port, then back to 2380; three rolling restarts.
    assert_eq!(updates(&clean), 6, "{clean:#?}");
    let restarts = clean
        .iter()
        .filter(|s| matches!(s, Step::RestartMember { .. }))
        .count();
    assert_eq!(restarts, 9, "{clean:#?}");
    let off = switch_converge(&mut w, &plain, None, 200);
    check_switched(&w, &plain);
    assert_eq!(updates(&off), 6, "{off:#?}");
    for pass in 0..clean.len() {
        let mut w = formed_keeping_quorum();
        switch_converge(&mut w, &on, Some((pass, 0)), 250);
        check_switched(&w, &on);
    }
}

/// A member lost in the middle of a switch, at every point where the members' peer URLs differ
/// (some moved, some not): its replacement joins with every member listed at the URL etcd has
/// for it (etcd refuses a join list that names another), and the switch then ends.
#[test]
fn a_member_lost_in_the_middle_of_a_tls_switch_is_replaced_and_the_switch_ends() {
    let on = with_tls(desired(3));
    let updates = |steps: &[Step]| {
        steps
            .iter()
            .filter(|s| matches!(s, Step::UpdatePeerUrl { .. }))
            .count()
    };
    for after in [1, 2, 4, 5] {
        for ord in [0, 2] {
            let mut w = formed_keeping_quorum();
            w.keeps_quorum = false;
            let mut wiped = false;
            let steps = switch_converge_with(&mut w, &on, None, 400, |w, steps| {
                if !wiped && updates(steps) == after {
                    wipe(w, ord);
                    wiped = true;
                }
            });
            assert!(wiped, "after {after} updates: {steps:#?}");
            check_switched(&w, &on);
            assert!(
                steps
                    .iter()
                    .any(|s| matches!(s, Step::AddLearner { ordinal, .. } if *ordinal == ord)),
                "member {ord} lost after {after} updates was never replaced: {steps:#?}"
            );
        }
    }
}
