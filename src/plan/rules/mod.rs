//! The planner's rules, in the order `RULES` tries them: each looks at desired and observed state
//! and names the step it calls for, or nothing.
//!
//! Pure: no async, no clock, no client. Here: pausing, fenced clients and the helpers the rules
//! share; each part of the rules in a file of its own.

mod lost;
mod membership;
mod restore;
mod rollout;
mod unanswered;
mod workload;

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::model::{RestoreMark, RestorePodView, fmt_id};

pub use lost::*;
pub(in crate::plan) use membership::*;
pub(in crate::plan) use restore::*;
pub(in crate::plan) use rollout::*;
pub(in crate::plan) use unanswered::*;
pub(in crate::plan) use workload::*;

/// Paused: nothing acts, a recovery neither. Clients fenced off by a recovery stay so; the hold
/// names the ways out.
pub(super) fn paused(d: &Desired, o: &Observed) -> Option<Step> {
    if d.paused && o.clients_fenced {
        let ways_out = if o.statefulset.is_none() && o.volumes.is_empty() {
            // Unpaused without spec.recovery, the engine would bootstrap an empty cluster.
            "the old members are deleted: unpause it for the recovery (spec.recovery) to go on"
                .to_string()
        } else {
            format!(
                "unpause it for the recovery to go on, or withdraw spec.recovery too to let \
                 clients back to the members as they are (`kubectl etcd recover {}` decides again)",
                d.name
            )
        };
        return Some(hold(
            Reason::ClientsFenced,
            format!(
                "paused with clients fenced off (Service {} selects no member) by `kubectl etcd \
                 recover`; {ways_out}",
                objects::client_service_name(&d.name),
            ),
        ));
    }
    d.paused.then_some(Step::Paused)
}

/// Clients fenced off with no recovery under way (one restored its seed, or was withdrawn): the
/// Services are applied again, which puts the client Service's selector back whole. First of
/// the acting rules after the recovery's: a restore that waits long must not keep clients off
/// a cluster that serves.
pub(super) fn fenced_clients(d: &Desired, o: &Observed) -> Option<Step> {
    (o.clients_fenced && !super::recover::under_way(d, o)).then_some(Step::ApplySupportingObjects)
}

/// ` (demo-0, demo-1: its etcd was OOMKilled …; demo-2: …)` for the pods in trouble
/// (`PodView::trouble`, pods of one trouble named together), else empty.
pub(super) fn pod_trouble(o: &Observed) -> String {
    let mut troubles: Vec<(String, Vec<&str>)> = Vec::new();
    for p in o.pods.values() {
        let Some(t) = p.trouble() else { continue };
        match troubles.iter_mut().find(|(seen, _)| *seen == t) {
            Some((_, names)) => names.push(&p.name),
            None => troubles.push((t, vec![&p.name])),
        }
    }
    if troubles.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = troubles
        .iter()
        .map(|(t, names)| format!("{}: {t}", names.join(", ")))
        .collect();
    format!(" ({})", parts.join("; "))
}

/// Leadership off `from` before a step takes it down: to the lowest healthy voter whose pod
/// stays (`drain`); never to one about to be evicted, which would cost the election the move
/// avoids: then the step waits for the drain to pass.
pub(super) fn move_leader_off(
    d: &Desired,
    o: &Observed,
    c: &ClusterView,
    from: &MemberView,
) -> Step {
    let candidates = || {
        c.voters()
            .filter(|m| m.id != from.id && (m.healthy || m.alarmed))
    };
    if let Some(m) = candidates().find(|m| super::drain::leaving(o, m))
        && candidates().all(|m| super::drain::leaving(o, m))
    {
        return wait(
            Reason::MovingLeader,
            format!(
                "moving leadership off {} waits: {} (and any other voter that could take it) is \
                 about to go ({}); once the drain is over, or the node uncordoned, it goes on",
                member_name(d, from),
                member_name(d, m),
                m.ordinal
                    .and_then(|k| o.pods.get(&k))
                    .and_then(|p| p.leaving.as_deref())
                    .unwrap_or("leaving")
            ),
        );
    }
    match candidates()
        .filter(|m| !super::drain::leaving(o, m))
        .min_by_key(|m| m.ordinal)
    {
        Some(to) => Step::MoveLeader {
            from: member_name(d, from),
            to_id: to.id,
            to: member_name(d, to),
        },
        None => hold(
            Reason::QuorumAtRisk,
            format!(
                "no healthy voter can take over leadership from {}",
                member_name(d, from)
            ),
        ),
    }
}

/// The member's name as the engine knows it (etcd reports none before a member first starts).
pub fn member_name(d: &Desired, m: &MemberView) -> String {
    match m.ordinal {
        Some(o) => objects::pod_name(&d.name, o),
        None if !m.name.is_empty() => m.name.clone(),
        None => fmt_id(m.id),
    }
}
