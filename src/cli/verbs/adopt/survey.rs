//! The survey of a running cluster `adopt` takes over, and its refusals: what makes an adoption
//! unsafe, each with its reason. Pure: judged on what an engine pass observed.

use crate::model::{self, ClusterView, EtcdView, MemberView, Observed, fmt_id};

/// What the survey found of one old member.
pub(super) fn member_line(c: &ClusterView, m: &MemberView) -> String {
    let s = m.status.as_ref();
    format!(
        "member {} ({}): etcd {}, {}{}{}, db {}, peer {}",
        if m.name.is_empty() { "?" } else { &m.name },
        fmt_id(m.id),
        s.and_then(|s| s.version)
            .map_or_else(|| "?".to_string(), |v| v.to_string()),
        if m.learner { "learner, " } else { "" },
        if m.healthy { "healthy" } else { "UNHEALTHY" },
        if c.leader == Some(m.id) {
            ", leader"
        } else {
            ""
        },
        s.map_or_else(
            || "?".into(),
            |s| crate::cli::output::human_bytes(s.db_size)
        ),
        m.peer_url,
    )
}

/// The one version every member runs, when they agree.
pub(super) fn common_version(c: &ClusterView) -> Option<model::Version> {
    let mut versions = c.members.iter().filter_map(|m| m.status.as_ref()?.version);
    let first = versions.next()?;
    versions.all(|v| v == first).then_some(first)
}

/// Why the cluster a pass observed cannot be adopted safely (empty: it can). `cluster_id`: the
/// id the first member that answered gave; `auth`: an `--auth-secret` was given.
pub(super) fn refusals(o: &Observed, cluster_id: u64, auth: bool) -> Vec<String> {
    let c = match &o.etcd {
        EtcdView::Reached(c) => c,
        EtcdView::Split { cluster_ids } => {
            let ids: Vec<String> = cluster_ids.iter().map(|i| fmt_id(*i)).collect();
            return vec![format!(
                "the members answer with different cluster ids ({}): they are not one cluster",
                ids.join(", ")
            )];
        }
        EtcdView::Unreachable { errors } => {
            return vec![format!("no member answered: {}", errors.join("; "))];
        }
        EtcdView::NotQueried => return vec!["no member was asked".into()],
    };
    let mut why = Vec::new();
    if c.cluster_id != cluster_id {
        why.push(format!(
            "the member list says cluster {}, the first member answered as cluster {}",
            fmt_id(c.cluster_id),
            fmt_id(cluster_id)
        ));
    }
    if let Some(m) = c.members.iter().find(|m| m.ordinal.is_some()) {
        why.push(format!(
            "member {} is named like a member of the EtcdCluster to create; pick another name",
            m.name
        ));
    }
    for m in &c.members {
        let name = if m.name.is_empty() {
            fmt_id(m.id)
        } else {
            m.name.clone()
        };
        if m.learner {
            why.push(format!(
                "{name} is a learner: promote or remove it first (the adoption adds its own)"
            ));
        } else if !m.started {
            why.push(format!("{name} was added but never started"));
        } else if !m.healthy {
            let err = m.error.clone().unwrap_or_else(|| "no answer".into());
            let hint = if !auth && crate::plan::upgrade::is_auth_error(&err) {
                " (etcd's authentication is on: pass --auth-secret with a root user's Secret)"
            } else {
                ""
            };
            why.push(format!("{name} is not healthy: {err}{hint}"));
        }
    }
    if c.leader.is_none() {
        why.push("the cluster has no leader".into());
    }
    match common_version(c) {
        None if c.members.iter().all(|m| m.status.is_some()) => why.push(format!(
            "the members run different versions ({}): finish that upgrade first",
            c.members
                .iter()
                .filter_map(|m| m.status.as_ref()?.version.map(|v| v.to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        None => {}
        Some(v) => {
            if let Err(e) = model::validate_version(&v.to_string()) {
                why.push(format!(
                    "etcd {v} is outside the supported range: {}",
                    e.message
                ));
            }
        }
    }
    if c.members.len() > crate::api::MAX_REPLICAS as usize {
        why.push(format!(
            "{} members: more than the {} an EtcdCluster may have",
            c.members.len(),
            crate::api::MAX_REPLICAS
        ));
    }
    why
}

/// Whether the new members can hold the old members' database: each receives it whole (a
/// snapshot from the leader), so the largest member's file must stay below the new members'
/// quota (else they raise NOSPACE at once and the cluster takes no writes) and fit their volume.
pub(super) fn capacity_refusals(c: &ClusterView, d: &model::Desired) -> Vec<String> {
    let Some((name, db)) = c
        .members
        .iter()
        .filter_map(|m| Some((m.name.as_str(), m.status.as_ref()?.db_size)))
        .max_by_key(|(_, db)| *db)
    else {
        return Vec::new();
    };
    let human = crate::cli::output::human_bytes;
    let mut why = Vec::new();
    let quota = d
        .quota_backend_bytes
        .filter(|q| *q > 0)
        .unwrap_or(model::DEFAULT_QUOTA_BYTES);
    if db >= quota {
        // Volumes whose own quota holds it (a new cluster's quota follows its volume).
        let bigger = model::restore_storage(None, u64::try_from(db).unwrap_or(0))
            .ok()
            .flatten()
            .filter(|size| model::new_cluster_quota(size.signed_bytes()) > db.saturating_mul(2))
            .map(|size| format!("--storage {size} (volumes whose quota holds it twice over) or "))
            .unwrap_or_default();
        why.push(format!(
            "{name}'s database is {}, not below the new members' quota of {}: pass \
             {bigger}--quota-backend-bytes above it (the old members' own quota), or compact \
             and defragment the old cluster first",
            human(db),
            human(quota)
        ));
    }
    if let model::Storage::Volume { size, .. } = &d.storage
        && db >= size.signed_bytes()
    {
        why.push(format!(
            "{name}'s database is {}, not smaller than the new members' volumes of {size}: \
             pass --storage with room for it",
            human(db)
        ));
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{MemberStatusView, MemberView};

    fn member(id: u64, name: &str, version: &str) -> MemberView {
        MemberView {
            id,
            name: name.into(),
            ordinal: None,
            peer_url: format!("http://{name}.etcd.ns.svc.cluster.local:2380"),
            learner: false,
            started: true,
            status: Some(MemberStatusView {
                version: model::Version::parse(version),
                db_size: 1 << 20,
                raft_index: 10,
                leader: 1,
                ..Default::default()
            }),
            healthy: true,
            ..Default::default()
        }
    }

    fn old_cluster(members: Vec<MemberView>) -> Observed {
        Observed {
            etcd: EtcdView::Reached(ClusterView {
                cluster_id: 7,
                leader: Some(1),
                members,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn three() -> Vec<MemberView> {
        vec![
            member(1, "etcd-0", "3.6.16"),
            member(2, "etcd-1", "3.6.16"),
            member(3, "etcd-2", "3.6.16"),
        ]
    }

    #[test]
    fn a_healthy_cluster_of_one_supported_version_is_adoptable() {
        assert_eq!(
            refusals(&old_cluster(three()), 7, false),
            Vec::<String>::new()
        );
        assert_eq!(
            common_version(match &old_cluster(three()).etcd {
                EtcdView::Reached(c) => c,
                _ => unreachable!(),
            }),
            model::Version::parse("3.6.16")
        );
    }

    fn reached(o: &Observed) -> &ClusterView {
        match &o.etcd {
            EtcdView::Reached(c) => c,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_database_the_new_members_cannot_hold_is_refused_naming_the_flag() {
        let mut m = three();
        m[1].status.as_mut().unwrap().db_size = 3 << 30;
        let o = old_cluster(m);
        let default = crate::fixtures::cluster("demo")
            .spec(|s| s.storage.size = Some("8Gi".into()))
            .desired();
        let why = capacity_refusals(reached(&o), &default);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].contains("etcd-1's database is 3.0 GiB"), "{why:?}");
        assert!(why[0].contains("--quota-backend-bytes"), "{why:?}");
        assert!(
            !why[0].contains("--storage"),
            "no volume gets a quota above 2 GiB: {why:?}"
        );
        // A database of 400 MiB on the default volumes (their quota 320 MiB): a size that holds it.
        let mut m = three();
        m[1].status.as_mut().unwrap().db_size = 400 << 20;
        let o400 = old_cluster(m);
        let mut spec = crate::fixtures::cluster("demo").build().spec;
        crate::model::new_cluster_defaults(&mut spec);
        let new = crate::fixtures::cluster("demo")
            .spec(|s| *s = spec)
            .desired();
        let why = capacity_refusals(reached(&o400), &new);
        assert!(
            why.len() == 1 && why[0].contains("quota of 320.0 MiB: pass --storage 2Gi"),
            "{why:?}"
        );
        let raised = crate::fixtures::cluster("demo")
            .spec(|s| {
                s.storage.size = Some("2Gi".into());
                s.etcd.quota_backend_bytes = Some(4 << 30);
            })
            .desired();
        let why = capacity_refusals(reached(&o), &raised);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(
            why[0].contains("volumes of 2Gi") && why[0].contains("--storage"),
            "{why:?}"
        );
        let fits = crate::fixtures::cluster("demo")
            .spec(|s| {
                s.storage.size = Some("8Gi".into());
                s.etcd.quota_backend_bytes = Some(4 << 30);
            })
            .desired();
        assert_eq!(capacity_refusals(reached(&o), &fits), Vec::<String>::new());
        // small databases (every other test) pass with the defaults
        let small = old_cluster(three());
        let d = crate::fixtures::cluster("demo").desired();
        assert_eq!(capacity_refusals(reached(&small), &d), Vec::<String>::new());
    }

    #[test]
    fn an_unhealthy_member_is_refused_with_its_error() {
        let mut m = three();
        m[2].healthy = false;
        m[2].error = Some("context deadline exceeded".into());
        let why = refusals(&old_cluster(m), 7, false);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].contains("etcd-2 is not healthy: context deadline exceeded"));
    }

    #[test]
    fn an_auth_refusal_names_the_auth_secret_flag() {
        let mut m = three();
        m[0].healthy = false;
        m[0].error = Some("etcdserver: user name is empty".into());
        let why = refusals(&old_cluster(m.clone()), 7, false);
        assert!(why[0].contains("--auth-secret"), "{why:?}");
        // With the flag given the hint would mislead.
        let why = refusals(&old_cluster(m), 7, true);
        assert!(!why[0].contains("--auth-secret"), "{why:?}");
    }

    #[test]
    fn a_version_outside_the_supported_range_is_refused() {
        let m = vec![member(1, "etcd-0", "3.3.27"), member(2, "etcd-1", "3.3.27")];
        let why = refusals(&old_cluster(m), 7, false);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].contains("etcd 3.3.27 is outside the supported range"));
        let m = vec![member(1, "etcd-0", "3.5.1")];
        assert!(refusals(&old_cluster(m), 7, false)[0].contains("unfit for production"));
    }

    #[test]
    fn mixed_versions_are_refused() {
        let mut m = three();
        m[1].status.as_mut().unwrap().version = model::Version::parse("3.5.21");
        let why = refusals(&old_cluster(m), 7, false);
        assert!(
            why[0].contains("different versions (3.6.16, 3.5.21, 3.6.16)"),
            "{why:?}"
        );
    }

    #[test]
    fn learners_are_refused() {
        let mut m = three();
        m.push(MemberView {
            learner: true,
            ..member(4, "etcd-3", "3.6.16")
        });
        let why = refusals(&old_cluster(m), 7, false);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].contains("etcd-3 is a learner"));
    }

    #[test]
    fn mismatched_cluster_ids_are_refused() {
        let split = Observed {
            etcd: EtcdView::Split {
                cluster_ids: vec![7, 9],
            },
            ..Default::default()
        };
        let why = refusals(&split, 7, false);
        assert!(why[0].contains("different cluster ids (0000000000000007, 0000000000000009)"));
        // The member list from another cluster than the first answer.
        let why = refusals(&old_cluster(three()), 9, false);
        assert!(why[0].contains("cluster 0000000000000007"), "{why:?}");
    }

    #[test]
    fn no_answer_and_no_leader_are_refused_and_peer_tls_is_left_to_the_tls_checks() {
        let none = Observed {
            etcd: EtcdView::Unreachable {
                errors: vec!["connection refused".into()],
            },
            ..Default::default()
        };
        assert!(refusals(&none, 7, false)[0].contains("connection refused"));
        let mut o = old_cluster(three());
        if let EtcdView::Reached(c) = &mut o.etcd {
            c.leader = None;
            c.members[0].peer_url = "https://etcd-0.etcd:2380".into();
        }
        let why = refusals(&o, 7, false);
        assert_eq!(why, vec!["the cluster has no leader".to_string()]);
    }
}
