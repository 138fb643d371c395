//! The member-config ConfigMap: its keys (etcd's own environment variables), the bootstrap list
//! and the join list a member starting without data presents.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;

use super::names::{config_name, peer_url, pod_name};
use super::services::meta;
use crate::model::Desired;

/// Keys of the member-config ConfigMap. They are etcd's own environment variables: the member
/// container takes them with `envFrom` when it starts, so the image needs no shell (etcd's
/// official images since 3.5 are distroless).
pub mod config_key {
    /// Before the bootstrap: the initial members. After it: the current member list (learners
    /// included), which is what a member starting without data must present to join.
    pub const INITIAL_CLUSTER: &str = "ETCD_INITIAL_CLUSTER";
    /// "new" until the initial members have all started, then "existing": from then on a
    /// member without data can only join the cluster as the member it was added as, and never
    /// found a second cluster.
    pub const INITIAL_CLUSTER_STATE: &str = "ETCD_INITIAL_CLUSTER_STATE";
    pub const INITIAL_TOKEN: &str = "ETCD_INITIAL_CLUSTER_TOKEN";
}

pub const STATE_NEW: &str = "new";
pub const STATE_EXISTING: &str = "existing";

/// Whether the member config says the initial members formed the cluster.
pub fn is_bootstrapped(config: &BTreeMap<String, String>) -> bool {
    config
        .get(config_key::INITIAL_CLUSTER_STATE)
        .map(String::as_str)
        == Some(STATE_EXISTING)
}
pub fn initial_cluster(d: &Desired, ordinals: impl IntoIterator<Item = u32>) -> String {
    ordinals
        .into_iter()
        .map(|o| format!("{}={}", pod_name(&d.name, o), peer_url(d, o)))
        .collect::<Vec<_>>()
        .join(",")
}

/// FNV-1a, a stable hash (`model`'s: the lowest room that uses it).
pub use crate::model::fnv1a;

/// How a member that has started before is listed in the member config once the cluster is
/// formed: under a name no pod carries (cluster names never hold a '.'), so the URL list still
/// matches the cluster's (etcd checks count and URLs) while no pod finds its own name there.
pub fn started_member_alias(pod: &str) -> String {
    format!("{pod}.started")
}

/// `ETCD_INITIAL_CLUSTER` of a formed cluster: every current member's peer URL; only the
/// members in `may_join` (added by the engine, never started) under their own name.
///
/// This is what makes it impossible for a member to start on an empty volume as a voter: etcd
/// reads these flags only when its data directory holds no write-ahead log, and then joins as
/// the member listed under its name. A member with data ignores them; a member that lost its
/// data finds no entry under its name and exits with "couldn't find local name" before it
/// contacts anyone; only the learner the engine just added can join, as that learner.
pub fn join_list(
    d: &Desired,
    members: impl IntoIterator<Item = u32>,
    may_join: impl Fn(u32) -> bool,
) -> String {
    join_list_at(
        d,
        members.into_iter().map(|o| (o, peer_url(d, o))),
        may_join,
    )
}

/// `join_list` with each member's peer URL as etcd has it (its member list): etcd refuses a
/// join whose list names any member at another URL, and while TLS is switched some members
/// have moved and some not (`plan::tls_switch`).
pub fn join_list_at(
    d: &Desired,
    members: impl IntoIterator<Item = (u32, String)>,
    may_join: impl Fn(u32) -> bool,
) -> String {
    let mut members: Vec<(u32, String)> = members.into_iter().collect();
    members.sort_unstable();
    members.dedup_by_key(|(o, _)| *o);
    members
        .into_iter()
        .map(|(o, url)| {
            let pod = pod_name(&d.name, o);
            let name = if may_join(o) {
                pod
            } else {
                started_member_alias(&pod)
            };
            format!("{name}={url}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The member config of a formed cluster whose config was lost, rebuilt from what survives
/// (the volumes and the membership last recorded in status) when no member answers: every
/// member keeps its data and starts as itself; nobody may join until etcd answers again.
pub fn repaired_config(
    d: &Desired,
    members: impl IntoIterator<Item = u32>,
) -> BTreeMap<String, String> {
    let mut data = bootstrap_config(d, 0);
    data.insert(
        config_key::INITIAL_CLUSTER.to_string(),
        join_list(d, members, |_| false),
    );
    data.insert(
        config_key::INITIAL_CLUSTER_STATE.to_string(),
        STATE_EXISTING.to_string(),
    );
    data
}

/// The member-config data for a brand-new cluster of `replicas` members.
pub fn bootstrap_config(d: &Desired, replicas: u32) -> BTreeMap<String, String> {
    let token_suffix: String = d.uid.chars().filter(|c| *c != '-').take(8).collect();
    BTreeMap::from([
        (
            config_key::INITIAL_CLUSTER.to_string(),
            initial_cluster(d, 0..replicas),
        ),
        (
            config_key::INITIAL_CLUSTER_STATE.to_string(),
            // A restored seed starts on the data the restore wrote: the cluster exists already.
            if d.restore.is_some() {
                STATE_EXISTING
            } else {
                STATE_NEW
            }
            .to_string(),
        ),
        (
            config_key::INITIAL_TOKEN.to_string(),
            match &d.restore {
                // Every restore (and recovery) is a new cluster: its own token, so its own id.
                // The nonce tells apart two restores of one snapshot into the same cluster (same
                // uid, same URL: `recover --from-backup B` twice).
                Some(r) => {
                    let seed = match &r.nonce {
                        Some(n) => format!("{}#{n}", r.url),
                        None => r.url.clone(),
                    };
                    format!("{}-{}-{:08x}", d.name, token_suffix, fnv1a(&seed) as u32)
                }
                None => format!("{}-{}", d.name, token_suffix),
            },
        ),
    ])
}

pub fn config_map(d: &Desired, data: BTreeMap<String, String>) -> ConfigMap {
    ConfigMap {
        metadata: meta(d, config_name(&d.name)),
        data: Some(data),
        ..Default::default()
    }
}
