//! A simulated world (StatefulSet controller, kubelet, etcd membership) driven by the planner
//! through 1→3, 3→5, 5→3, 3→1, with a crash injected inside every step, and invariants checked
//! after every change.

use std::collections::{BTreeMap, BTreeSet};

use super::tests::desired;
use super::{Step, plan, quorum};
use crate::model::{
    ClusterView, Desired, EtcdView, MemberStatusView, MemberView, Observed, PodView, VolumeView,
    WorkloadView,
};
use crate::objects::{self, config_key};

#[derive(Clone, Debug)]
struct SimMember {
    id: u64,
    ordinal: u32,
    learner: bool,
    started: bool,
    raft_index: u64,
}

/// One sub-action of a step; a crash may fall between two of them.
type SubAction = Box<dyn FnOnce(&mut World)>;

/// The world as the planner cannot see it directly.
#[derive(Clone, Debug, Default)]
pub(crate) struct World {
    sts: Option<(u32, String)>,
    supporting: bool,
    config: Option<BTreeMap<String, String>>,
    pods: BTreeSet<u32>,
    /// Volume ordinal → id of the member whose data it holds (0: empty).
    volumes: BTreeMap<u32, u64>,
    members: Vec<SimMember>,
    leader: Option<u64>,
    next_id: u64,
    removed: BTreeSet<u64>,
    /// Highest raft index (grows with every membership change).
    index: u64,
    /// Membership changes done by the last pass.
    changes_this_pass: usize,
}

impl World {
    fn bootstrapped(&self) -> bool {
        self.config.as_ref().is_some_and(objects::is_bootstrapped)
    }

    /// What the StatefulSet controller, kubelet and etcd do between passes.
    fn tick(&mut self, d: &Desired) {
        let replicas = self.sts.as_ref().map_or(0, |s| s.0);
        self.pods.retain(|o| *o < replicas);
        for o in 0..replicas {
            if self.pods.insert(o) {
                self.volumes.entry(o).or_insert(0);
            }
        }
        // Bootstrap: the initial members form the cluster once a majority runs.
        if let Some(cfg) = self
            .config
            .as_ref()
            .filter(|_| self.members.is_empty() && !self.bootstrapped())
        {
            {
                let n = cfg[config_key::INITIAL_CLUSTER].split(',').count() as u32;
                if (0..n).filter(|o| self.pods.contains(o)).count() >= quorum(n as usize) {
                    for o in 0..n {
                        self.next_id += 1;
                        self.members.push(SimMember {
                            id: 1000 + self.next_id,
                            ordinal: o,
                            learner: false,
                            started: false,
                            raft_index: 0,
                        });
                    }
                    // The highest ordinal leads, so scaling down must move leadership first.
                    self.leader = self.members.last().map(|m| m.id);
                }
            }
        }
        // Members start from their pods: with their own data, by joining (state "existing", listed), or at bootstrap.
        let bootstrapped = self.bootstrapped();
        for o in self.pods.clone() {
            let data = self.volumes.get(&o).copied().unwrap_or(0);
            let Some(m) = self.members.iter_mut().find(|m| m.ordinal == o) else {
                continue;
            };
            if data != 0 {
                assert_eq!(
                    data, m.id,
                    "{}: member {} started on the data of member {data}",
                    d.name, m.id
                );
                m.started = true;
            } else {
                // With state "existing" a member without data joins only when the member list
                // it is given names it (exactly what etcd checks).
                let join = bootstrapped
                    && self.config.as_ref().is_some_and(|c| {
                        c[config_key::INITIAL_CLUSTER]
                            .split(',')
                            .any(|e| e.starts_with(&format!("{}=", objects::pod_name(&d.name, o))))
                    });
                if join || (!bootstrapped && !m.learner) {
                    m.started = true;
                    self.volumes.insert(o, m.id);
                }
            }
        }
        for m in &mut self.members {
            if m.started {
                m.raft_index = self.index;
            }
        }
        if self
            .leader
            .is_none_or(|l| !self.members.iter().any(|m| m.id == l))
        {
            self.leader = self
                .members
                .iter()
                .find(|m| !m.learner && m.started)
                .map(|m| m.id);
        }
    }

    fn observe(&self, d: &Desired) -> Observed {
        let etcd = if self
            .members
            .iter()
            .any(|m| m.started && self.pods.contains(&m.ordinal))
        {
            EtcdView::Reached(ClusterView {
                cluster_id: 42,
                leader: self.leader,
                members: self
                    .members
                    .iter()
                    .map(|m| {
                        let up = m.started && self.pods.contains(&m.ordinal);
                        MemberView {
                            id: m.id,
                            name: if m.started {
                                objects::pod_name(&d.name, m.ordinal)
                            } else {
                                String::new()
                            },
                            ordinal: Some(m.ordinal),
                            peer_url: objects::peer_url(&d.name, &d.namespace, m.ordinal),
                            learner: m.learner,
                            started: m.started,
                            status: up.then(|| MemberStatusView {
                                version: "3.5.16".into(),
                                db_size: 1,
                                raft_index: m.raft_index,
                                raft_term: 2,
                                leader: self.leader.unwrap_or(0),
                            }),
                            healthy: up,
                            error: None,
                            identity_mismatch: false,
                        }
                    })
                    .collect(),
            })
        } else if self.pods.is_empty() {
            EtcdView::NotQueried
        } else {
            EtcdView::Unreachable {
                errors: vec!["connection refused".into()],
            }
        };
        Observed {
            statefulset: self.sts.as_ref().map(|(r, h)| WorkloadView {
                replicas: *r,
                template_hash: Some(h.clone()),
                update_revision: None,
                storage: None,
            }),
            supporting_objects: self.supporting,
            config: self.config.clone(),
            pods: self
                .pods
                .iter()
                .map(|o| {
                    (
                        *o,
                        PodView {
                            name: objects::pod_name(&d.name, *o),
                            ready: true,
                            running: true,
                            ..Default::default()
                        },
                    )
                })
                .collect(),
            volumes: self
                .volumes
                .keys()
                .map(|o| {
                    (
                        *o,
                        VolumeView {
                            name: objects::volume_name(&d.name, *o),
                            terminating: false,
                        },
                    )
                })
                .collect(),
            etcd,
            known_members: Default::default(),
        }
    }

    /// Carries out `step`, stopping after `parts` of its sub-actions (a crash mid-step).
    fn act(&mut self, d: &Desired, step: &Step, parts: usize) {
        let hash = objects::template_hash(d);
        let mut actions: Vec<SubAction> = Vec::new();
        match step.clone() {
            Step::Bootstrap { replicas } => {
                let cfg = objects::bootstrap_config(d, replicas);
                actions.push(Box::new(move |w| w.config = Some(cfg)));
                actions.push(Box::new(|w| w.supporting = true));
                let h = hash.clone();
                actions.push(Box::new(move |w| w.sts = Some((replicas, h))));
            }
            Step::ApplySupportingObjects => actions.push(Box::new(|w| w.supporting = true)),
            Step::WriteConfig { data, .. } => {
                actions.push(Box::new(move |w| w.config = Some(data)))
            }
            Step::UpdateTemplate { replicas } => {
                actions.push(Box::new(move |w| w.sts = Some((replicas, hash))))
            }
            Step::ResizeStatefulSet { to, .. } => {
                actions.push(Box::new(move |w| w.sts = Some((to, hash))))
            }
            Step::AddLearner { ordinal, .. } => actions.push(Box::new(move |w| {
                assert!(
                    w.members.iter().all(|m| !m.learner),
                    "a second learner was added"
                );
                assert!(
                    !w.volumes.contains_key(&ordinal),
                    "learner {ordinal} added while an old volume exists"
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
                });
                w.changes_this_pass += 1;
            })),
            Step::PromoteLearner { id, .. } => actions.push(Box::new(move |w| {
                let m = w
                    .members
                    .iter_mut()
                    .find(|m| m.id == id)
                    .expect("promoted member exists");
                assert!(
                    m.learner && m.started,
                    "promoted a learner that was not running"
                );
                m.learner = false;
                w.index += 1;
                w.changes_this_pass += 1;
            })),
            Step::MoveLeader { to_id, .. } => {
                actions.push(Box::new(move |w| w.leader = Some(to_id)))
            }
            Step::RemoveMember { id, .. } => actions.push(Box::new(move |w| {
                assert_ne!(
                    w.leader,
                    Some(id),
                    "removed the leader without moving leadership first"
                );
                let was_voter = w.members.iter().any(|m| m.id == id && !m.learner);
                w.members.retain(|m| m.id != id);
                w.removed.insert(id);
                w.index += 1;
                w.changes_this_pass += 1;
                if was_voter {
                    let voters = w.members.iter().filter(|m| !m.learner).count();
                    let healthy = w
                        .members
                        .iter()
                        .filter(|m| !m.learner && m.started && w.pods.contains(&m.ordinal))
                        .count();
                    assert!(
                        healthy >= quorum(voters),
                        "removal left {healthy} healthy of {voters} voters"
                    );
                }
            })),
            Step::DeleteVolume { ordinal, .. } => actions.push(Box::new(move |w| {
                assert!(
                    !w.pods.contains(&ordinal),
                    "deleted the volume of a running pod"
                );
                w.volumes.remove(&ordinal);
            })),
            Step::RestartMember { .. } | Step::Wait { .. } | Step::Paused | Step::Idle => {}
            Step::Hold { message, .. } => {
                panic!("the planner held in a healthy simulation: {message}")
            }
        }
        for a in actions.into_iter().take(parts) {
            a(self);
        }
    }

    fn check_invariants(&self) {
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
            assert!(
                *id == 0
                    || !self.removed.contains(id)
                    || !self.pods.contains(o)
                    || !self.members.iter().any(|m| m.ordinal == *o),
                "volume of removed member {id} is used by a new member at {o}"
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
        let step = plan(d, &w.observe(d));
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
    assert!(w.members.iter().all(|m| !m.learner && m.started));
    let ords: BTreeSet<u32> = w.members.iter().map(|m| m.ordinal).collect();
    assert_eq!(ords, (0..n).collect());
    assert_eq!(
        w.volumes.keys().copied().collect::<BTreeSet<_>>(),
        (0..n).collect(),
        "leftover volumes"
    );
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
