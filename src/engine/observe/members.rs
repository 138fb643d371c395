//! Asking every running member about itself, and the cluster they answer as.

use super::nodes::{node_cordoned, node_down, read_nodes};
use super::*;

/// The leader named by the answer with the highest raft term (then the longest log), ignoring
/// answers that name none.
fn leader_by_term<'a>(
    statuses: impl Iterator<Item = &'a crate::etcd::EndpointStatus>,
) -> Option<u64> {
    statuses
        .filter(|s| s.leader_id != 0)
        .max_by_key(|s| (s.raft_term, s.raft_index))
        .map(|s| s.leader_id)
}

/// Asks the members (`observe_etcd`), then marks on each pod the member its etcd answered as,
/// and, for those whose etcd did not answer, why their node cannot run them; for those that
/// answered, whether their node is cordoned (one read per node a member runs on).
pub(super) async fn observe_members(
    ctx: &Context,
    d: &Desired,
    (pods, old_endpoints): (&mut BTreeMap<u32, PodView>, &[String]),
    nodes_of: BTreeMap<u32, String>,
    now: jiff::Timestamp,
) -> (EtcdView, FullDatabase) {
    let mut answered = BTreeMap::new();
    let mut full = FullDatabase::default();
    let etcd = observe_etcd(ctx, d, (pods, old_endpoints), &mut answered, &mut full).await;
    for (ord, id) in answered {
        if let Some(p) = pods.get_mut(&ord) {
            p.answered_as = Some(id);
        }
    }
    let (silent, answering): (BTreeMap<u32, String>, BTreeMap<u32, String>) = nodes_of
        .into_iter()
        .partition(|(ord, _)| pods.get(ord).is_none_or(|p| p.answered_as.is_none()));
    let down = |name: &str, node: Option<&Node>| node_down(name, node, now);
    let (down, cordoned) = futures::join!(
        read_nodes(ctx, &silent, down),
        read_nodes(ctx, &answering, node_cordoned)
    );
    for (ord, reason) in down {
        if let Some(p) = pods.get_mut(&ord) {
            p.node_down = Some(reason);
        }
    }
    for (ord, reason) in cordoned {
        if let Some(p) = pods.get_mut(&ord) {
            p.leaving.get_or_insert(reason);
        }
    }
    (etcd, full)
}

/// The NOSPACE alarms and the current revision (`Observed::nospace`, `revision`): asked of the
/// keyspace only when a member's health read failed for alarms, else the highest revision the
/// members' status answers carried.
#[derive(Default)]
pub(super) struct FullDatabase {
    pub(super) nospace: Vec<u64>,
    pub(super) revision: i64,
}

/// What one running member said about itself.
struct Answer {
    /// `None`: a member the engine did not add (an old member being adopted).
    ordinal: Option<u32>,
    client: Option<EtcdClient>,
    status: Option<crate::etcd::EndpointStatus>,
    /// The cluster version from `/version`; `None` when it did not answer (it is not needed
    /// for health, only to tell a mixed cluster from one whose cluster version moved).
    cluster_version: Option<Version>,
    health: Result<(), String>,
    /// The health read failed only for raised alarms.
    alarmed: bool,
}

impl Answer {
    /// Its linearizable health read passed (raised alarms are checked after that read): a
    /// voter whose applied index the leader confirmed. Learners answer no linearizable read.
    fn read_linearizably(&self) -> bool {
        self.status.as_ref().is_some_and(|s| !s.is_learner) && (self.health.is_ok() || self.alarmed)
    }
}

async fn ask(ctx: &Context, d: &Desired, ordinal: u32, pod: &PodView) -> Answer {
    let (dialed, versions) = tokio::join!(
        ctx.connect(d, ordinal, pod.ip.as_deref()),
        crate::phase::timed(
            crate::phase!("version", member = ordinal),
            ctx.versions_beside(d, ordinal),
        )
    );
    crate::phase::timed(
        crate::phase!("etcd_rpcs", member = ordinal),
        answer(d, Some(ordinal), dialed, versions),
    )
    .await
}

/// What the member at `client` (dialed, or the error dialing it) said about itself; `versions`:
/// its `/version`, when already asked beside the dial.
async fn answer(
    d: &Desired,
    ordinal: Option<u32>,
    dialed: Result<EtcdClient, crate::etcd::EtcdError>,
    versions: Option<Result<crate::etcd::Versions, crate::etcd::EtcdError>>,
) -> Answer {
    let mut a = Answer {
        ordinal,
        client: None,
        status: None,
        cluster_version: None,
        health: Err(String::new()),
        alarmed: false,
    };
    let mut client = match dialed {
        Ok(c) => c,
        Err(e) => {
            a.health = Err(crate::error::Error::Etcd {
                namespace: d.namespace.clone(),
                name: d.name.clone(),
                source: e,
            }
            .report());
            return a;
        }
    };
    // The cluster version comes over plain HTTP on a connection of its own: asked beside the
    // gRPC calls rather than after them (one round trip per member instead of two), unless
    // already asked beside the dial.
    let http = client.clone();
    let mut reader = client.clone();
    let versions = async move {
        match versions {
            Some(v) => v,
            None => http.versions().await,
        }
    };
    let (status, versions) = tokio::join!(
        async {
            // Both at once (on one connection). Learners refuse linearizable reads: for a
            // learner the health answer is dropped, answering status is all it can show.
            let (status, health) = tokio::join!(client.status(), reader.health());
            let health = match &status {
                Ok(s) if !s.is_learner => Some(health),
                _ => None,
            };
            (status, health)
        },
        versions
    );
    match status {
        (Ok(s), health) => {
            a.health = match health {
                None => Ok(()),
                Some(health) => {
                    a.alarmed = matches!(health, Err(crate::etcd::EtcdError::Alarms { .. }));
                    health.map_err(|e| chain(&e))
                }
            };
            a.status = Some(s);
            match versions {
                Ok(v) => a.cluster_version = Version::parse(&v.cluster),
                Err(e) => tracing::debug!(error = %e, "no cluster version"),
            }
        }
        (Err(e), _) => a.health = Err(chain(&e)),
    }
    if d.auth_secret.is_none()
        && let Err(e) = &mut a.health
        && crate::plan::upgrade::is_auth_error(e)
    {
        e.push_str(AUTH_HINT);
    }
    a.client = Some(client);
    a
}

/// What to do when etcd refuses the engine for want of a user.
const AUTH_HINT: &str = " (etcd's authentication is on: set spec.auth.userSecret to a Secret \
     with the username and password of an etcd user with the root role)";

/// The error and its causes in one line: the cause says what etcd answered (e.g. "user name
/// is empty" while auth is on, which the upgrade gates read).
pub(in crate::engine) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut next = e.source();
    while let Some(c) = next {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        next = c.source();
    }
    s
}

/// Asks every running member for its status and health, and one voter for the member list.
/// `answered` gets, for each pod whose etcd answered, the member id it answered as; `full` the
/// NOSPACE alarms and the revision when a member's health read failed for alarms.
async fn observe_etcd(
    ctx: &Context,
    d: &Desired,
    (pods, old_endpoints): (&BTreeMap<u32, PodView>, &[String]),
    answered: &mut BTreeMap<u32, u64>,
    full: &mut FullDatabase,
) -> EtcdView {
    let running: Vec<(u32, &PodView)> = pods
        .iter()
        .filter(|(_, p)| p.running && !p.terminating)
        .map(|(o, p)| (*o, p))
        .collect();
    if running.is_empty() && old_endpoints.is_empty() {
        return EtcdView::NotQueried;
    }
    let mut answers: Vec<Answer> = join_all(running.iter().map(|(o, p)| ask(ctx, d, *o, p))).await;
    // The old members of a cluster being adopted, through their client URLs.
    answers.extend(
        join_all(
            old_endpoints.iter().map(|url| async move {
                answer(d, None, ctx.connect_url(d, url).await, None).await
            }),
        )
        .await,
    );
    answered.extend(
        answers
            .iter()
            .filter_map(|a| Some((a.ordinal?, a.status.as_ref()?.member_id))),
    );
    let mut cluster_ids: Vec<u64> = answers
        .iter()
        .filter_map(|a| a.status.as_ref().map(|s| s.cluster_id))
        .collect();
    cluster_ids.sort_unstable();
    cluster_ids.dedup();
    if cluster_ids.len() > 1 {
        return EtcdView::Split { cluster_ids };
    }
    // The leader is the one named by the answer with the highest raft term (a member cut off
    // from the others may still name a leader of an older term).
    let leader = leader_by_term(answers.iter().filter_map(|a| a.status.as_ref()));
    let mut errors: Vec<String> = answers
        .iter()
        .filter_map(|a| a.health.as_ref().err().filter(|e| !e.is_empty()).cloned())
        .collect();
    let listed = crate::phase::timed(
        crate::phase!("member_list"),
        member_list(&answers, leader, &mut errors),
    )
    .await;
    let Some((list, list_unconfirmed)) = listed else {
        if errors.is_empty() {
            errors.push("no member answered".into());
        }
        return EtcdView::Unreachable { errors };
    };
    *full = full_database(&answers, leader).await;
    let members = list
        .members
        .iter()
        .map(|m| cut_off_from_here(member_view(d, m, &answers), pods))
        .collect();
    let auth = if d.etcd_auth {
        let engine = d.engine_user();
        crate::phase::timed(crate::phase!("auth"), auth_view(&answers, leader, &engine)).await
    } else {
        None
    };
    EtcdView::Reached(ClusterView {
        cluster_id: list.cluster_id,
        leader,
        members,
        list_unconfirmed,
        auth_enabled: auth.is_some_and(|a| a.enabled)
            || answers
                .iter()
                .any(|a| a.client.as_ref().is_some_and(|c| c.authenticated())),
        auth,
    })
}

/// The member list, and whether it is unconfirmed. It is asked of a member whose linearizable
/// read passed just before (its health check: etcd's ReadIndex made it apply everything the
/// leader had committed, membership changes included, so its list is as current as a
/// linearizable one; etcd 3.5.13+'s `linearizable` member list does the same inside the server,
/// which the client library does not expose), the leader first; only when none passed, any
/// voter, then anyone, and the list is marked unconfirmed. `None` when nobody gave one (`errors`
/// says why).
async fn member_list(
    answers: &[Answer],
    leader: Option<u64>,
    errors: &mut Vec<String>,
) -> Option<(crate::etcd::MemberList, bool)> {
    let mut order: Vec<&Answer> = answers.iter().filter(|a| a.status.is_some()).collect();
    order.sort_by_key(|a| {
        let s = a.status.as_ref().unwrap();
        (
            !a.read_linearizably(),
            Some(s.member_id) != leader,
            s.is_learner,
            a.ordinal,
        )
    });
    for a in order {
        let mut c = a.client.clone().expect("answered members have a client");
        match c.member_list().await {
            Ok(l) => return Some((l, !a.read_linearizably())),
            Err(e) => errors.push(e.to_string()),
        }
    }
    None
}

/// The NOSPACE alarms and the current revision. Alarms are the cluster's (every member reports
/// them): asked of the leader, or else of a member that answers, once per pass and only while
/// one is raised. The revision comes with them, else from the status answers' headers (a
/// requested compaction's target).
/// etcd's authentication, its root user and the cluster's own (`engine`, `spec.tls.etcdAuth`), asked of a voter whose
/// linearizable read passed, the leader first: a lagging member could still show a root user
/// or an enabled authentication that is gone, or the other way round. `None` when none answered.
async fn auth_view(
    answers: &[Answer],
    leader: Option<u64>,
    engine: &str,
) -> Option<crate::etcd::AuthView> {
    let mut askable: Vec<&Answer> = answers.iter().filter(|a| a.read_linearizably()).collect();
    askable.sort_by_key(|a| a.status.as_ref().map(|s| s.member_id) != leader);
    for a in askable {
        let mut c = a.client.clone()?;
        match c.auth_view(engine).await {
            Ok(v) => return Some(v),
            Err(e) => tracing::debug!(member = a.ordinal, error = %e, "authentication not read"),
        }
    }
    None
}

async fn full_database(answers: &[Answer], leader: Option<u64>) -> FullDatabase {
    let mut full = FullDatabase::default();
    if answers.iter().any(|a| a.alarmed) {
        let mut askable: Vec<&Answer> = answers.iter().filter(|a| a.status.is_some()).collect();
        askable.sort_by_key(|a| a.status.as_ref().map(|s| s.member_id) != leader);
        for a in askable {
            let mut c = a.client.clone().expect("answered members have a client");
            match (c.alarms().await, c.keyspace().await) {
                (Ok(alarms), Ok(k)) => {
                    full.nospace = alarms
                        .into_iter()
                        .filter(|(_, alarm)| alarm == "NOSPACE")
                        .map(|(m, _)| m)
                        .collect();
                    full.revision = k.revision;
                    break;
                }
                (Err(e), _) | (_, Err(e)) => {
                    tracing::debug!(member = a.ordinal, error = %e, "alarms not read");
                }
            }
        }
    }
    if full.revision <= 0 {
        full.revision = answers
            .iter()
            .filter_map(|a| a.status.as_ref().map(|s| s.revision))
            .max()
            .unwrap_or(0);
    }
    full
}

/// A member that did not answer this driver while the kubelet counts its pod Ready (the
/// readiness probe is a linearizable read from inside the pod) is cut off from here, not down:
/// its error says so, so that nobody reads a path this driver lacks as a member gone.
fn cut_off_from_here(mut m: MemberView, pods: &BTreeMap<u32, PodView>) -> MemberView {
    let ready = m
        .ordinal
        .and_then(|k| pods.get(&k))
        .is_some_and(|p| p.ready && p.running && !p.terminating);
    if m.status.is_none() && ready {
        let why = m.error.take().unwrap_or_default();
        m.error = Some(format!(
            "unreachable from here, not down (its pod is Ready: its own linearizable read passes): {why}"
        ));
    }
    m
}

/// One member of the list, joined with what its own etcd answered (versions parsed here, once).
fn member_view(d: &Desired, m: &crate::etcd::Member, answers: &[Answer]) -> MemberView {
    // Two pods answering as one member: the last (highest ordinal) speaks for it.
    let answer = answers
        .iter()
        .rfind(|a| a.status.as_ref().is_some_and(|s| s.member_id == m.id));
    let status = answer.and_then(|a| a.status.as_ref());
    let ordinal = m
        .peer_urls
        .iter()
        .find_map(|u| objects::ordinal_of_peer_url(&d.name, &d.namespace, u));
    let at_ordinal = ordinal.and_then(|o| answers.iter().find(|a| a.ordinal == Some(o)));
    // The pod of this member's ordinal answered, but as another member.
    let imposter = at_ordinal
        .and_then(|a| a.status.as_ref())
        .filter(|s| s.member_id != m.id)
        .map(|s| s.member_id);
    let error = match answer {
        Some(a) => a.health.clone().err(),
        None if imposter.is_some() => Some(format!(
            "its pod answers as member {}",
            crate::model::fmt_id(imposter.unwrap_or_default())
        )),
        None => at_ordinal
            .and_then(|a| a.health.clone().err())
            .or_else(|| Some("no running pod answered for this member".into())),
    };
    MemberView {
        id: m.id,
        name: m.name.clone(),
        ordinal,
        peer_url: m.peer_urls.first().cloned().unwrap_or_default(),
        learner: m.is_learner,
        started: m.started(),
        status: status.map(|s| MemberStatusView {
            version: Version::parse(&s.version),
            cluster_version: answer.and_then(|a| a.cluster_version),
            storage_version: Version::parse(&s.storage_version),
            downgrading_to: Version::parse(&s.downgrade_target),
            db_size: s.db_size,
            db_size_in_use: s.db_size_in_use,
            raft_index: s.raft_index,
            raft_term: s.raft_term,
            leader: s.leader_id,
        }),
        healthy: answer.is_some_and(|a| a.health.is_ok()),
        error: error.filter(|e| !e.is_empty()),
        identity_mismatch: imposter.is_some(),
        alarmed: answer.is_some_and(|a| a.alarmed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leader_is_the_one_named_in_the_highest_term() {
        let answer = |member_id, leader_id, raft_term| crate::etcd::EndpointStatus {
            member_id,
            leader_id,
            raft_term,
            cluster_id: 7,
            version: "3.6.16".into(),
            db_size: 0,
            db_size_in_use: 0,
            raft_index: 10,
            raft_applied_index: 10,
            revision: 3,
            is_learner: false,
            errors: Vec::new(),
            storage_version: String::new(),
            downgrade_target: String::new(),
        };
        // demo-0 was cut off and still names itself, leader of term 2; the others moved on.
        let answers = [
            answer(1, 1, 2),
            answer(2, 3, 5),
            answer(3, 3, 5),
            answer(4, 0, 9),
        ];
        assert_eq!(leader_by_term(answers.iter()), Some(3));
        assert_eq!(leader_by_term([answer(1, 0, 1)].iter()), None);
    }
}
