//! The leader: finding a client to it (or to the adopted cluster's old leader), asking it for
//! its peers, and sending it membership changes and etcd's downgrade calls.

use super::Done;
use crate::engine::Context;
use crate::error::Error;
use crate::etcd::{EtcdClient, EtcdError};
use crate::model::{Desired, EtcdView, Observed};

/// The peers the leader counts as connected (`Observed::leader_peers`); `None` when no leader is
/// known or its `/metrics` cannot be read (the removal is then asked as it is, and etcd checks).
pub(in crate::engine) async fn leader_peers(
    ctx: &Context,
    d: &Desired,
    o: &Observed,
) -> Option<crate::model::LeaderPeers> {
    let EtcdView::Reached(c) = &o.etcd else {
        return None;
    };
    let leader = c.leader_member()?;
    let ordinal = leader.ordinal?;
    let ip = o.pods.get(&ordinal).and_then(|p| p.ip.as_deref());
    let read = async {
        let client = ctx.connect(d, ordinal, ip).await?;
        client.peer_view().await
    };
    match read.await {
        Ok(view) if view.member_id == leader.id => {
            let connected: std::collections::BTreeSet<u64> = view
                .active
                .into_iter()
                .filter_map(|(id, active)| active.then_some(id))
                .collect();
            tracing::debug!(cluster = %d.name, namespace = %d.namespace, leader = %leader.name, connected = ?connected, "the leader's peer count");
            Some(crate::model::LeaderPeers {
                leader: leader.id,
                connected,
            })
        }
        Ok(_) => None,
        Err(e) => {
            tracing::debug!(cluster = %d.name, namespace = %d.namespace, error = %e, "the leader's peer count was not read");
            None
        }
    }
}

/// A client to the current leader (membership changes and leader moves go there), or failing
/// that to any healthy voter.
pub(super) async fn leader_client(
    ctx: &Context,
    d: &Desired,
    o: &Observed,
) -> Result<EtcdClient, String> {
    let EtcdView::Reached(c) = &o.etcd else {
        return Err(format!("no member of {}/{} answered", d.namespace, d.name));
    };
    let mut candidates: Vec<u32> = c
        .leader_member()
        .and_then(|m| m.ordinal)
        .into_iter()
        .collect();
    candidates.extend(c.voters().filter(|m| m.healthy).filter_map(|m| m.ordinal));
    let mut last = None;
    // While an old cluster is adopted and its member leads, the change goes to it.
    let old_leads = c.leader_member().is_some_and(|m| m.ordinal.is_none());
    if !old_leads {
        for ord in candidates {
            let ip = o.pods.get(&ord).and_then(|p| p.ip.as_deref());
            match ctx.connect(d, ord, ip).await {
                Ok(client) => return Ok(client),
                Err(e) => last = Some(e.to_string()),
            }
        }
    }
    if let Some(a) = &d.adopt {
        match old_leader_client(ctx, d, &a.endpoints, c.leader).await {
            Ok(client) => return Ok(client),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        format!(
            "no healthy voter of {}/{} to send the change to",
            d.namespace, d.name
        )
    }))
}

/// A client to the old member that leads (`leader`), found among the adopted cluster's
/// `endpoints` by asking each who it is.
async fn old_leader_client(
    ctx: &Context,
    d: &Desired,
    endpoints: &[String],
    leader: Option<u64>,
) -> Result<EtcdClient, String> {
    let mut last = String::from("no old member answered");
    for url in endpoints {
        match ctx.connect_url(d, url).await {
            Ok(mut c) => match c.status().await {
                Ok(s) if Some(s.member_id) == leader => return Ok(c),
                Ok(_) => last = format!("no old member at {} leads", endpoints.join(", ")),
                Err(e) => last = e.to_string(),
            },
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

/// What a step asks of the leader (membership and etcd's downgrade API).
pub(super) enum LeaderCall<'a> {
    AddLearner(&'a str),
    Promote(u64),
    MoveLeader(u64),
    Remove(u64),
    UpdatePeerUrl(u64, &'a str),
    Downgrade(crate::plan::DowngradeStep, crate::model::Version),
}

/// Sends `call` to the leader: not yet while no leader answers or on a transient error.
pub(super) async fn on_leader(
    ctx: &Context,
    d: &Desired,
    o: &Observed,
    call: LeaderCall<'_>,
) -> Result<Done, Error> {
    use crate::etcd::DowngradeAction as A;
    let mut c = match leader_client(ctx, d, o).await {
        Ok(c) => c,
        Err(why) => return Ok(Done::NotYet(why)),
    };
    let r = match call {
        LeaderCall::AddLearner(peer_url) => c.add_learner(peer_url).await.map(|_| ()),
        LeaderCall::Promote(id) => c.promote(id).await,
        LeaderCall::MoveLeader(id) => c.move_leader(id).await,
        LeaderCall::Remove(id) => c.remove(id).await,
        LeaderCall::UpdatePeerUrl(id, url) => c.update_peer_url(id, url).await,
        LeaderCall::Downgrade(action, target) => {
            let minor = format!("{}.{}", target.major, target.minor);
            match action {
                crate::plan::DowngradeStep::Enable => {
                    match c.downgrade(A::Validate, &minor).await {
                        Ok(_) => c.downgrade(A::Enable, &minor).await.map(|_| ()),
                        Err(e) => Err(e),
                    }
                }
                crate::plan::DowngradeStep::Cancel => {
                    c.downgrade(A::Cancel, &minor).await.map(|_| ())
                }
            }
        }
    };
    let etcd = |source: EtcdError| Error::Etcd {
        namespace: d.namespace.clone(),
        name: d.name.clone(),
        source,
    };
    match r {
        Ok(()) => Ok(Done::Changed),
        Err(e) if e.is_transient() => Ok(Done::NotYet(etcd(e).report())),
        Err(e) => Err(etcd(e)),
    }
}
