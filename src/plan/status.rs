//! Status derivation: desired, observed and the chosen step in, the status to write out.
//!
//! Pure: `now` is passed in. Condition transition times only move when a condition's status flips.
//!
//! In three parts: the member list as observed (`membership`), what the step and the observation
//! say the cluster is doing (`Activity`), and the conditions and phase that report it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::Step;
use crate::api::{EtcdClusterStatus, MemberStatus, Phase, Reason, condition};
use crate::model::{ClusterView, Desired, EtcdView, MemberView, Observed, fmt_id};
use crate::objects;

fn cond(
    prev: &[Condition],
    type_: &str,
    on: bool,
    reason: Reason,
    message: String,
    generation: i64,
    now: jiff::Timestamp,
) -> Condition {
    let status = if on { "True" } else { "False" };
    let last = prev
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .map(|c| c.last_transition_time.clone())
        .unwrap_or(Time(now));
    Condition {
        type_: type_.to_string(),
        status: status.into(),
        reason: reason.as_str().into(),
        message,
        observed_generation: Some(generation),
        last_transition_time: last,
    }
}

/// Builds the status the engine writes after a pass that chose `step`.
pub fn derive_status(
    d: &Desired,
    o: &Observed,
    step: &Step,
    prev: Option<&EtcdClusterStatus>,
    now: jiff::Timestamp,
) -> EtcdClusterStatus {
    let prev_conds: &[Condition] = prev.map_or(&[], |p| &p.conditions);
    let mut st = EtcdClusterStatus {
        selector: Some(objects::selector_string(&d.name)),
        observed_generation: Some(d.generation),
        message: Some(step.to_string()),
        ..Default::default()
    };
    let votes = membership(&mut st, d, o, prev);
    let version_change = super::upgrade::condition(d, o, step);
    let doing = Activity::of(d, o, step, votes, version_change.as_ref());
    let c = Conditions {
        prev: prev_conds,
        generation: d.generation,
        now,
        reason: step.reason(),
        message: step.to_string(),
    };
    st.conditions = vec![
        c.ready(&doing, votes),
        c.activity(
            condition::SCALING,
            doing.scaling,
            format!("{} voting members as desired", votes.voters),
        ),
        match version_change {
            Some((on, reason, message)) => c.set(condition::UPGRADING, on, reason, message),
            None => c.activity(
                condition::UPGRADING,
                doing.upgrading,
                "every member runs the current template".into(),
            ),
        },
        c.activity(
            condition::RECOVERING,
            doing.recovering,
            "nothing to recover".into(),
        ),
        c.degraded(step, &doing, votes, &st.members),
        c.spec_refused(d),
        c.maintaining(d, step, &doing),
        c.insecure_transport(d),
        c.volume_too_small(d),
        c.rotating_ca(d, o, step),
        c.switching_tls(d, o, step),
    ];
    // From the backup records this pass observed (`plan::backup`), never carried over.
    let (backup, healthy) = super::backup::status(d, o, prev_conds);
    st.backup = backup;
    st.conditions.extend(healthy);
    st.restored_from = d.restore.as_ref().map(|r| r.url.clone());
    st.volume_capacity = crate::model::smallest_capacity(&o.volumes).map(ToString::to_string);
    st.upgrade = super::upgrade::record(d, o, step, prev.and_then(|p| p.upgrade.as_ref()));
    st.maintenance = super::nospace::record(d, o, step, prev.and_then(|p| p.maintenance.as_ref()));
    // A finished adoption (`adopt::settle` took it out of the spec) keeps its last record.
    st.adoption = super::adopt::record(d, o, step, prev).or_else(|| {
        o.completed
            .adoption
            .as_ref()
            .and(prev.and_then(|p| p.adoption.clone()))
    });
    st.tls = super::pki::status(d, o);
    st.completed = Some(completed(d, o, st.adoption.as_ref())).filter(|c| *c != Default::default());
    st.phase = Some(phase(o, step, &doing));
    st
}

/// `status.completed` after a pass: every done-mark kept, and each request of the spec this pass
/// saw carried out to the end marked (`plan::rule_audit` walks every rule past them).
fn completed(
    d: &Desired,
    o: &Observed,
    adoption: Option<&crate::api::AdoptionStatus>,
) -> crate::api::CompletedRequests {
    crate::api::CompletedRequests {
        recovery: super::recover::completed_mark(d, o),
        adoption: super::adopt::completed_mark(d, o, adoption),
        restore: super::rules::restore_completed_mark(d, o),
    }
}

/// Voting members and how many of them are healthy (both 0 when etcd was not reached).
#[derive(Clone, Copy, Default)]
struct Votes {
    voters: usize,
    healthy: usize,
    /// Fewer than a quorum are healthy as seen from here, yet a quorum is proven
    /// (`quorum_proof`): the driver is cut off from members the cluster still counts.
    proven: bool,
}

/// Fills the member list, the cluster's id and versions and the replica counts: from etcd when
/// it answered, else kept from the last status with nobody healthy.
fn membership(
    st: &mut EtcdClusterStatus,
    d: &Desired,
    o: &Observed,
    prev: Option<&EtcdClusterStatus>,
) -> Votes {
    if let Some(c) = super::adopt::reached_as_surveyed(d, o) {
        let lost_since = super::lost_since(o);
        let mut members: Vec<MemberStatus> = c
            .members
            .iter()
            .map(|m| member_status(d, o, c, m, &lost_since))
            .collect();
        members.sort_by_key(|m| objects::ordinal_of_pod(&d.name, &m.name).unwrap_or(u32::MAX));
        let votes = Votes {
            voters: c.voters().count(),
            healthy: c.voters().filter(|m| m.healthy).count(),
            proven: super::quorum_proof(d, o).is_some(),
        };
        st.cluster_id = Some(fmt_id(c.cluster_id));
        st.version = c.versions().min().map(|v| v.to_string());
        // Read from the members (`/version`); kept from the last status while none says.
        st.cluster_version = c
            .cluster_version()
            .map(|v| v.to_string())
            .or_else(|| prev.and_then(|p| p.cluster_version.clone()));
        st.replicas = members.len() as i32;
        st.ready_replicas = votes.healthy as i32;
        st.members = members;
        votes
    } else {
        if let Some(p) = prev {
            // Nobody answered: keep the last member list so users still see who should be
            // there, but mark nobody healthy.
            st.members = p
                .members
                .iter()
                .cloned()
                .map(|mut m| {
                    m.healthy = false;
                    m
                })
                .collect();
            st.replicas = p.replicas;
            st.cluster_id = p.cluster_id.clone();
            st.version = p.version.clone();
            st.cluster_version = p.cluster_version.clone();
        }
        Votes::default()
    }
}

/// One member as the status lists it.
fn member_status(
    d: &Desired,
    o: &Observed,
    c: &ClusterView,
    m: &MemberView,
    lost_since: &BTreeMap<u32, jiff::Timestamp>,
) -> MemberStatus {
    MemberStatus {
        name: super::member_name(d, m),
        id: fmt_id(m.id),
        foreign: m.ordinal.is_none(),
        peer_url: m.peer_url.clone(),
        learner: m.learner,
        leader: c.leader == Some(m.id),
        version: m
            .status
            .as_ref()
            .and_then(|s| s.version)
            .map(|v| v.to_string()),
        healthy: m.healthy,
        // Rounded down to MiB, and no raft index: status changes only when something a
        // reader acts on changes, not with every write to etcd.
        db_size: m.status.as_ref().map(|s| s.db_size >> 20 << 20),
        raft_index: None,
        // A member whose pod does not run says why the pod does not (its etcd was killed for
        // memory, its image cannot be pulled) rather than that nobody answered; so does one
        // whose etcd started again moments ago after such an end (a member killed as it starts
        // runs for a few seconds between two kills, not yet answering).
        error: m
            .ordinal
            .and_then(|k| o.pods.get(&k))
            .filter(|p| !m.healthy && (!p.running || restarted_lately(p)))
            .and_then(|p| Some(format!("pod {}: {}", p.name, p.trouble()?)))
            .or_else(|| m.error.clone()),
        lost_since: m.ordinal.and_then(|k| lost_since.get(&k)).map(|t| Time(*t)),
    }
}

/// Whether a pod's etcd runs again since less than [`RESTARTED_LATELY_SECONDS`] after an end:
/// its last end still explains why it does not answer yet.
fn restarted_lately(p: &crate::model::PodView) -> bool {
    p.restarts > 0
        && p.running_seconds
            .is_some_and(|s| s < RESTARTED_LATELY_SECONDS)
}

/// How long after a restart a member that does not answer is still said to be restarting
/// after its last end (etcd answers within seconds of a start when it can).
const RESTARTED_LATELY_SECONDS: u64 = 120;

/// What the step and the observation say the cluster is doing: one flag per condition (and the
/// phase), each true while the step works towards it.
struct Activity {
    converged: bool,
    ready: bool,
    scaling: bool,
    upgrading: bool,
    recovering: bool,
    maintaining: bool,
    unreachable: bool,
    degraded: bool,
    bootstrapping: bool,
}

impl Activity {
    fn of(
        d: &Desired,
        o: &Observed,
        step: &Step,
        votes: Votes,
        version_change: Option<&(bool, Reason, String)>,
    ) -> Self {
        let Votes {
            voters,
            healthy,
            proven,
        } = votes;
        let held = matches!(step, Step::Hold { .. });
        let unreachable = waits_for(step, &[Reason::EtcdUnreachable]);
        Activity {
            converged: matches!(step, Step::Idle),
            ready: voters > 0 && (healthy >= super::quorum(voters) || proven) && !held,
            scaling: is_scaling(d, step, voters),
            upgrading: version_change.is_some_and(|c| c.0) || rolls_a_template(step),
            recovering: is_recovering(o, step),
            maintaining: is_maintaining(o, step),
            unreachable,
            degraded: held || (voters > 0 && healthy < voters) || unreachable,
            bootstrapping: is_bootstrapping(step),
        }
    }
}

/// A wait counts as part of what it waits for: its typed reason says which.
fn waits_for(step: &Step, reasons: &[Reason]) -> bool {
    matches!(step, Step::Wait { reason, .. } if reasons.contains(reason))
}

/// Members joining or leaving, or a voter count other than the desired one (unless held or paused).
fn is_scaling(d: &Desired, step: &Step, voters: usize) -> bool {
    matches!(
        step,
        Step::AddLearner { .. }
            | Step::PromoteLearner { .. }
            | Step::RemoveMember { .. }
            | Step::ResizeStatefulSet { .. }
            | Step::DeleteVolume { .. }
            | Step::MoveLeader { .. }
            | Step::WriteConfig {
                why: super::ConfigChange::Joins,
                ..
            }
            | Step::RecreateStatefulSet { .. }
            | Step::GrowVolume { .. }
            | Step::HibernateSnapshot { .. }
            | Step::Hibernate { .. }
    ) || waits_for(
        step,
        &[
            Reason::AddingLearner,
            Reason::PromotingLearner,
            // etcd said not yet to a removal or a leadership move (`engine::acted`).
            Reason::RemovingMember,
            Reason::MovingLeader,
            Reason::ResizingWorkload,
            Reason::CleaningUp,
            Reason::ResizingStorage,
            Reason::Hibernating,
        ],
    ) || (voters > 0
        && voters != d.replicas as usize
        && !matches!(step, Step::Hold { .. } | Step::Paused))
}

/// A new template being applied or rolled through the members.
fn rolls_a_template(step: &Step) -> bool {
    matches!(
        step,
        Step::UpdateTemplate { .. }
            | Step::RestartMember {
                why: super::Restart::NewTemplate,
                ..
            }
    ) || waits_for(step, &[Reason::RollingMembers])
}

/// A member being repaired or replaced, fenced clients, or a cluster coming back on its volumes.
fn is_recovering(o: &Observed, step: &Step) -> bool {
    matches!(
        step,
        Step::ApplySupportingObjects
            | Step::WipeMember { .. }
            | Step::RestartMember {
                why: super::Restart::Rejoin | super::Restart::NewVolume,
                ..
            }
            | Step::WriteConfig {
                why: super::ConfigChange::Repair,
                ..
            }
    ) || waits_for(step, &[Reason::ReplacingMember])
        || matches!(
            step,
            Step::Hold {
                reason: Reason::ClientsFenced,
                ..
            }
        )
        || step.is_recovery()
        || matches!(step, Step::ResizeStatefulSet { from, to } if to > from)
            && !matches!(o.etcd, EtcdView::Reached(_))
            && !o.volumes.is_empty()
}

/// A full database being healed, a quota raised for it rolling out, or one held as full.
fn is_maintaining(o: &Observed, step: &Step) -> bool {
    super::nospace::is_maintenance(step)
        || waits_for(
            step,
            &[
                Reason::Compacting,
                Reason::Defragmenting,
                Reason::DisarmingAlarm,
            ],
        )
        || !o.nospace.is_empty()
}

fn is_bootstrapping(step: &Step) -> bool {
    matches!(
        step,
        Step::Bootstrap { .. }
            | Step::WriteConfig {
                why: super::ConfigChange::Bootstrapped,
                ..
            }
    ) || waits_for(step, &[Reason::Bootstrapping])
}

/// Builds the conditions of one pass: the last ones (for transition times), the generation, the
/// time, and the step's reason and sentence (what a condition says while the step works on it).
struct Conditions<'a> {
    prev: &'a [Condition],
    generation: i64,
    now: jiff::Timestamp,
    reason: Reason,
    message: String,
}

impl Conditions<'_> {
    fn set(&self, type_: &str, on: bool, reason: Reason, message: String) -> Condition {
        cond(
            self.prev,
            type_,
            on,
            reason,
            message,
            self.generation,
            self.now,
        )
    }

    /// True with the step's reason and sentence while the step works on it; else `AsDesired`
    /// and `quiet`.
    fn activity(&self, type_: &str, on: bool, quiet: String) -> Condition {
        if on {
            self.set(type_, true, self.reason, self.message.clone())
        } else {
            self.set(type_, false, Reason::AsDesired, quiet)
        }
    }

    fn ready(&self, doing: &Activity, votes: Votes) -> Condition {
        let Votes {
            voters,
            healthy,
            proven,
        } = votes;
        if doing.ready {
            let reason = if healthy < voters {
                Reason::QuorumHealthy
            } else {
                Reason::AllMembersHealthy
            };
            let need = super::quorum(voters.max(1));
            let seen = if proven && healthy < need {
                "; the others do not answer from here, yet a member's linearizable read proves the quorum"
            } else {
                ""
            };
            self.set(
                condition::READY,
                true,
                reason,
                format!("{healthy} of {voters} voting members healthy; quorum {need}{seen}"),
            )
        } else {
            self.set(condition::READY, false, self.reason, self.message.clone())
        }
    }

    fn degraded(
        &self,
        step: &Step,
        doing: &Activity,
        votes: Votes,
        members: &[MemberStatus],
    ) -> Condition {
        let Votes {
            voters, healthy, ..
        } = votes;
        let reason = match step {
            Step::Hold { reason, .. } => *reason,
            _ if doing.unreachable => Reason::EtcdUnreachable,
            _ if waits_for(step, &[Reason::QuorumLost]) => Reason::QuorumLost,
            _ if doing.degraded => Reason::MembersUnhealthy,
            _ => Reason::AllMembersHealthy,
        };
        let message = match step {
            Step::Hold { .. } if doing.degraded => self.message.clone(),
            _ => {
                // Who is not healthy, and why, so that the condition alone says what to look at.
                let unhealthy: Vec<String> = members
                    .iter()
                    .filter(|m| !m.healthy && !m.learner)
                    .map(|m| match &m.error {
                        Some(e) => format!("{}: {}", m.name, short(e)),
                        None => m.name.clone(),
                    })
                    .collect();
                if unhealthy.is_empty() || healthy >= voters {
                    format!("{healthy} of {voters} voting members healthy")
                } else {
                    format!(
                        "{healthy} of {voters} voting members healthy; unhealthy: {}",
                        unhealthy.join("; ")
                    )
                }
            }
        };
        self.set(condition::DEGRADED, doing.degraded, reason, message)
    }

    fn spec_refused(&self, d: &Desired) -> Condition {
        if d.refused.is_empty() {
            self.set(
                condition::SPEC_REFUSED,
                false,
                Reason::AsDesired,
                "every spec field is in effect".into(),
            )
        } else {
            self.set(
                condition::SPEC_REFUSED,
                true,
                if d.refused.iter().all(|r| r.field == "spec.etcd.options") {
                    Reason::OptionNotAllowed
                } else if d
                    .refused
                    .iter()
                    .all(|r| crate::model::IMAGE_FIELDS.contains(&r.field))
                {
                    Reason::ImageNotAllowed
                } else {
                    Reason::ImmutableField
                },
                d.refused
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        }
    }

    /// True while clients speak plain http: anyone who reaches the pods reads and writes every
    /// key (and raft runs in the clear too without peer TLS).
    fn insecure_transport(&self, d: &Desired) -> Condition {
        if d.tls.client.is_some() {
            self.set(
                condition::INSECURE_TRANSPORT,
                false,
                Reason::ClientCertificates,
                format!(
                    "clients speak https with client certificates ({})",
                    d.tls.describe()
                ),
            )
        } else {
            self.set(
                condition::INSECURE_TRANSPORT,
                true,
                Reason::PlainHttp,
                format!(
                    "{}: clients speak plain http and any pod that reaches port {} reads and \
                     writes every key; a new cluster made by `kubectl etcd create` (managed TLS \
                     unless --insecure) and the data moved by backup and restore has TLS",
                    d.tls.describe(),
                    objects::CLIENT_PORT
                ),
            )
        }
    }

    /// True while the quota the members run with does not fit their volumes.
    fn volume_too_small(&self, d: &Desired) -> Condition {
        let set = |too_small, reason, message| {
            self.set(condition::VOLUME_TOO_SMALL, too_small, reason, message)
        };
        let crate::model::Storage::Volume { size, .. } = &d.storage else {
            return set(
                false,
                Reason::QuotaFitsVolume,
                "no volumes: the members keep their data in emptyDir".into(),
            );
        };
        let Some(fits) = super::nospace::volume_room(d) else {
            return set(false, Reason::QuotaFitsVolume, format!("volumes of {size}"));
        };
        let quota = super::nospace::quota(d);
        let said = match d.quota_backend_bytes {
            _ if d.quota_raised_from.is_some() => "raised for a full database",
            Some(q) if q > 0 => "spec.etcd.quotaBackendBytes",
            _ => "etcd's default",
        };
        if quota <= fits {
            return set(
                false,
                Reason::QuotaFitsVolume,
                format!(
                    "the quota, {} ({said}), fits volumes of {size} (up to {} does)",
                    super::nospace::mib(quota),
                    super::nospace::mib(fits)
                ),
            );
        }
        set(
            true,
            Reason::QuotaExceedsVolume,
            format!(
                "the quota, {} ({said}), does not fit volumes of {size}: etcd writes its WAL \
                 beside the database and a second copy of it while it defragments or a member \
                 receives a snapshot, so a volume fills before etcd refuses writes, on every \
                 member at once, and etcd stops; set spec.etcd.quotaBackendBytes to at most \
                 {} ({}), or grow spec.storage.size to at least {}Mi",
                super::nospace::mib(quota),
                super::nospace::mib(fits),
                fits,
                crate::model::volume_fitting(quota) >> 20
            ),
        )
    }

    /// True while a CA rotation is under way: the step's sentence while it works on the CAs,
    /// else what is left (members restarting on the trust bundle).
    fn rotating_ca(&self, d: &Desired, o: &Observed, step: &Step) -> Condition {
        if !super::pki::rotating(d, o) {
            return self.set(
                condition::ROTATING_CA,
                false,
                Reason::AsDesired,
                "no CA rotation under way".into(),
            );
        }
        let message = if step.reason() == Reason::RotatingCa {
            self.message.clone()
        } else {
            format!(
                "rotating the CA (signing {}, retiring {}); now: {}",
                o.trust.signing.as_deref().unwrap_or("?"),
                o.trust.retiring.as_deref().unwrap_or("none"),
                self.message
            )
        };
        self.set(condition::ROTATING_CA, true, Reason::RotatingCa, message)
    }

    /// True while TLS is switched on or off (`tls_switch`): the phase, and the step's sentence.
    fn switching_tls(&self, d: &Desired, o: &Observed, step: &Step) -> Condition {
        if !super::tls_switch::switching(d, o) {
            return self.set(
                condition::SWITCHING_TLS,
                false,
                Reason::AsDesired,
                "no TLS switch under way".into(),
            );
        }
        let phase = super::tls_switch::phase(d).unwrap_or_else(|| {
            format!(
                "switching TLS to {}, phase 3 of 3: members restart on the final template",
                d.tls.describe()
            )
        });
        let message = if step.reason() == Reason::SwitchingTls {
            self.message.clone()
        } else {
            format!("{phase}; now: {}", self.message)
        };
        self.set(
            condition::SWITCHING_TLS,
            true,
            Reason::SwitchingTls,
            message,
        )
    }

    /// Reason: the step's while it heals a full database, `QuotaRaised` while a raised quota
    /// rolls out.
    fn maintaining(&self, d: &Desired, step: &Step, doing: &Activity) -> Condition {
        if !doing.maintaining {
            return self.activity(
                condition::MAINTAINING,
                false,
                "no maintenance under way".into(),
            );
        }
        let reason = if !super::nospace::is_maintenance(step) && d.quota_raised_from.is_some() {
            Reason::QuotaRaised
        } else {
            self.reason
        };
        self.set(condition::MAINTAINING, true, reason, self.message.clone())
    }
}

fn phase(o: &Observed, step: &Step, doing: &Activity) -> Phase {
    match step {
        Step::Paused => Phase::Paused,
        Step::Hibernated => Phase::Hibernated,
        Step::Hold { .. } => Phase::Degraded,
        _ if o.statefulset.is_none() && o.volumes.is_empty()
            || (!doing.ready && doing.bootstrapping) =>
        {
            Phase::Creating
        }
        _ if doing.upgrading => Phase::Upgrading,
        _ if doing.scaling => Phase::Scaling,
        _ if doing.degraded => Phase::Degraded,
        _ if doing.converged || doing.ready => Phase::Running,
        _ => Phase::Creating,
    }
}

/// The hold `status` reports on `generation` (its message; `None`: not held, or the status is
/// of an earlier generation): what a verb waiting on an operator reports after the patience it
/// gives its own holds.
pub fn held(status: &EtcdClusterStatus, generation: Option<i64>) -> Option<&str> {
    if status.observed_generation != generation {
        return None;
    }
    status
        .message
        .as_deref()?
        .strip_prefix(super::step::HOLDING)
}

/// Whether `status` says the engine converged on `generation`: it observed that generation, the
/// cluster is Ready, and nothing is scaling, upgrading, recovering or degraded. What a driver
/// waiting on another driver's status reads (typed conditions, not the message text).
pub fn converged(status: &EtcdClusterStatus, generation: Option<i64>) -> bool {
    let is = |type_: &str, want: &str| {
        status
            .conditions
            .iter()
            .any(|c| c.type_ == type_ && c.status == want && c.observed_generation == generation)
    };
    // A hibernated cluster has arrived where its spec says: no member runs.
    if status.phase == Some(Phase::Hibernated) && status.observed_generation == generation {
        return true;
    }
    status.observed_generation == generation
        && is(condition::READY, "True")
        && [
            condition::SCALING,
            condition::UPGRADING,
            condition::RECOVERING,
            condition::DEGRADED,
            // A requested defragmentation (or a full database) under way is not converged.
            condition::MAINTAINING,
        ]
        .iter()
        .all(|t| is(t, "False"))
        // Nor a CA rotation or a TLS switch (a status written before the condition existed
        // has none).
        && !is(condition::ROTATING_CA, "True")
        && !is(condition::SWITCHING_TLS, "True")
}

/// At most 160 characters of `s` (a member's error in a condition's message).
fn short(s: &str) -> String {
    match s.char_indices().nth(160) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
