//! TLS switched on (http → https) or off for a running cluster, one member at a time, never
//! below quorum. Pure: the member list, the pods' template stage, the StatefulSet.
//!
//! etcd serves http and https on one client listener, but binds one listener per peer URL, so a
//! member moves its peer URL (etcd's member update) to a second port, the switch port, and back:
//!
//! ```text
//!   spec.tls asks for the other kind (model::keep_tls starts a TlsSwitch, stage Both)
//!   UpdateTemplate, RestartMember…   stage Both: client port serves http and https; peer port
//!                                    the old scheme, switch port the new; certificates mounted;
//!                                    the old client scheme advertised
//!   UpdatePeerUrl ×n                 old://m:2380 → new://m:2382, one member per pass, each once
//!                                    every pod runs the stage and every voter is healthy
//!   (every member at new://m:2382: stage Moved)
//!   UpdateTemplate, RestartMember…   stage Moved: the new scheme only, on 2379, 2380 and 2382,
//!                                    advertised
//!   UpdatePeerUrl ×n                 new://m:2382 → new://m:2380
//!   (every member at new://m:2380: the switch is over)
//!   UpdateTemplate, RestartMember…   the template of the new TLS, as any cluster's
//! ```
//!
//! The stage is read from the member list each pass (`settle`); while etcd does not answer, from
//! the template's annotation. An update already done is seen in the list and never repeated: a
//! crash anywhere is another observed state. The restarts are the usual rolling restart (each
//! member Ready and caught up first, the leader last); the engine dials each member with the
//! scheme it serves (`reach`: the new one first, then the old).

use crate::api::Reason;
use crate::model::{Desired, MemberView, Observed, SwitchStage};
use crate::objects::{self, PEER_PORT, SWITCH_PEER_PORT};

use super::{Step, reached, wait};

/// The switch's stage as the member list shows it: `Both` while some member still has its old
/// peer URL, `Moved` while some has the switch port, and no switch once every member is back on
/// 2380 with the new scheme. While etcd does not answer, the stage the template has.
pub fn settle(mut d: Desired, o: &Observed) -> Desired {
    let Some(s) = d.tls_switch.clone() else {
        return d;
    };
    let Some(c) = reached(o) else {
        return d;
    };
    let ours: Vec<&MemberView> = c.members.iter().filter(|m| m.ordinal.is_some()).collect();
    if ours.is_empty() {
        return d;
    }
    let at = |m: &MemberView, scheme: &str, port: u16| {
        m.ordinal
            .is_some_and(|k| m.peer_url == objects::peer_url_at(&d, k, scheme, port))
    };
    let stage = if ours
        .iter()
        .any(|m| !at(m, s.to_scheme(), SWITCH_PEER_PORT) && !at(m, s.to_scheme(), PEER_PORT))
    {
        Some(SwitchStage::Both)
    } else if ours.iter().any(|m| at(m, s.to_scheme(), SWITCH_PEER_PORT)) {
        Some(SwitchStage::Moved)
    } else {
        None
    };
    d.tls_switch = stage.map(|stage| crate::model::TlsSwitch { stage, ..s });
    d
}

/// The next member update of a switch: the lowest ordinal whose peer URL is not yet where this
/// stage moves it, once every pod runs the stage's template, Ready (each listens on both URLs).
/// Comes after the rolling restart and the health rules: every voter is healthy here.
pub fn move_peer_urls(d: &Desired, o: &Observed) -> Option<Step> {
    let s = d.tls_switch.as_ref()?;
    let c = reached(o)?;
    let sts = o.statefulset.as_ref()?;
    let marker = s.marker();
    let behind = o
        .pods
        .values()
        .find(|p| p.tls_switch.as_deref() != Some(marker.as_str()) || !p.ready || p.terminating)
        .map(|p| format!("pod {}", p.name))
        .or_else(|| (o.pods.len() < sts.replicas as usize).then(|| "every member pod".into()));
    if let Some(who) = behind {
        return Some(wait(
            Reason::SwitchingTls,
            format!(
                "{}: waiting for {who} to run, Ready, the template that {}",
                phase(d).unwrap_or_default(),
                listens(s.stage)
            ),
        ));
    }
    let (scheme, port) = match s.stage {
        SwitchStage::Both => (s.to_scheme(), SWITCH_PEER_PORT),
        SwitchStage::Moved => (s.to_scheme(), PEER_PORT),
    };
    let mut ours: Vec<(u32, &MemberView)> = c
        .members
        .iter()
        .filter_map(|m| Some((m.ordinal?, m)))
        .collect();
    ours.sort_by_key(|(k, _)| *k);
    let (k, m) = ours
        .into_iter()
        .find(|(k, m)| m.peer_url != objects::peer_url_at(d, *k, scheme, port))?;
    Some(Step::UpdatePeerUrl {
        id: m.id,
        name: objects::pod_name(&d.name, k),
        from: m.peer_url.clone(),
        to: objects::peer_url_at(d, k, scheme, port),
    })
}

fn listens(stage: SwitchStage) -> &'static str {
    match stage {
        SwitchStage::Both => "listens on both schemes",
        SwitchStage::Moved => "serves the new scheme only",
    }
}

/// The phase of a switch under way, in words (the `SwitchingTLS` condition); `None`: none.
pub fn phase(d: &Desired) -> Option<String> {
    let s = d.tls_switch.as_ref()?;
    let way = format!(
        "switching TLS {} ({} → {})",
        if s.on { "on" } else { "off" },
        s.from_scheme(),
        s.to_scheme()
    );
    Some(match s.stage {
        SwitchStage::Both => format!(
            "{way}, phase 1 of 3: members listen on both schemes, peer URLs move to port {SWITCH_PEER_PORT}"
        ),
        SwitchStage::Moved => format!(
            "{way}, phase 2 of 3: members serve {} only, peer URLs move back to port {PEER_PORT}",
            s.to_scheme()
        ),
    })
}

/// Whether a switch is under way: the spec's switch, or pods still running a switch's template
/// (phase 3: the final rolling restart).
pub fn switching(d: &Desired, o: &Observed) -> bool {
    d.tls_switch.is_some() || o.pods.values().any(|p| p.tls_switch.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::cluster;
    use crate::model::{ClusterView, EtcdView, PodView, TlsSwitch, WorkloadView};

    fn plain() -> Desired {
        cluster("demo")
            .spec(|s| {
                s.tls = Some(crate::api::TlsSpec {
                    mode: Some("none".into()),
                    ..Default::default()
                })
            })
            .desired()
    }
    fn managed() -> Desired {
        cluster("demo")
            .spec(|s| {
                s.tls = Some(crate::api::TlsSpec {
                    mode: Some("managed".into()),
                    ..Default::default()
                })
            })
            .desired()
    }

    /// `wanted` as the engine takes it for a running cluster whose template runs `template`
    /// (its TLS and switch marker).
    fn kept(wanted: Desired, template: &Desired) -> Desired {
        let w = WorkloadView {
            replicas: 3,
            tls: Some(objects::template_tls(&objects::pod_template(template))),
            tls_switch: template.tls_switch.as_ref().map(TlsSwitch::marker),
            ..Default::default()
        };
        crate::model::keep_immutable(wanted, Some(&w))
    }

    /// Three healthy voters with these peer URLs (scheme, port) and pods running `template`.
    fn observed(d: &Desired, urls: [(&str, u16); 3], template: &Desired) -> Observed {
        let marker = template.tls_switch.as_ref().map(TlsSwitch::marker);
        let members = urls
            .iter()
            .enumerate()
            .map(|(k, (scheme, port))| MemberView {
                id: 100 + k as u64,
                name: objects::pod_name("demo", k as u32),
                ordinal: Some(k as u32),
                peer_url: objects::peer_url_at(d, k as u32, scheme, *port),
                started: true,
                healthy: true,
                ..Default::default()
            })
            .collect();
        Observed {
            statefulset: Some(WorkloadView {
                replicas: 3,
                ..Default::default()
            }),
            pods: (0..3)
                .map(|k| {
                    (
                        k,
                        PodView {
                            name: objects::pod_name("demo", k),
                            ready: true,
                            running: true,
                            tls_switch: marker.clone(),
                            ..Default::default()
                        },
                    )
                })
                .collect(),
            etcd: EtcdView::Reached(ClusterView {
                members,
                leader: Some(100),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn stage(d: &Desired) -> Option<(bool, SwitchStage)> {
        d.tls_switch.as_ref().map(|s| (s.on, s.stage))
    }

    #[test]
    fn asking_for_managed_tls_on_a_plain_cluster_starts_a_switch_instead_of_a_refusal() {
        let d = kept(managed(), &plain());
        assert!(d.refused.is_empty(), "{:?}", d.refused);
        assert_eq!(stage(&d), Some((true, SwitchStage::Both)));
        assert_eq!(
            d.tls_switch.as_ref().unwrap().secrets,
            objects::managed_tls("demo")
        );
        assert!(
            d.pki.is_some(),
            "the engine issues the certificates the members will mount"
        );
        // The template of stage Both mounts the certificates and listens on both schemes.
        let t = serde_json::to_string(&objects::pod_template(&d)).unwrap();
        assert!(
            t.contains("http://0.0.0.0:2379,https://0.0.0.0:2379"),
            "{t}"
        );
        assert!(
            t.contains("http://0.0.0.0:2380,https://0.0.0.0:2382"),
            "{t}"
        );
        assert!(
            t.contains("demo-tls-server") && t.contains("on/both"),
            "{t}"
        );
    }

    #[test]
    fn members_move_to_the_switch_port_one_per_pass_once_every_pod_listens_on_both() {
        let d = kept(managed(), &plain());
        // Pods still on the plain template: wait (the rolling restart is the template rules').
        let o = observed(&d, [("http", 2380); 3], &plain());
        let d = settle(d, &o);
        assert!(matches!(
            move_peer_urls(&d, &o),
            Some(Step::Wait {
                reason: Reason::SwitchingTls,
                ..
            })
        ));
        // Every pod on stage Both: member 0 first.
        let o = observed(&d, [("http", 2380); 3], &d);
        match move_peer_urls(&settle(d.clone(), &o), &o) {
            Some(Step::UpdatePeerUrl { id, from, to, .. }) => {
                assert_eq!(id, 100);
                assert!(from.starts_with("http://demo-0.") && from.ends_with(":2380"));
                assert!(to.starts_with("https://demo-0.") && to.ends_with(":2382"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_half_done_switch_resumes_with_the_next_member_and_never_repeats_an_update() {
        let d = kept(managed(), &plain());
        // A crash after member 0's update: the list shows it done, member 1 is next.
        let o = observed(&d, [("https", 2382), ("http", 2380), ("http", 2380)], &d);
        let d = settle(d, &o);
        assert_eq!(stage(&d), Some((true, SwitchStage::Both)));
        match move_peer_urls(&d, &o) {
            Some(Step::UpdatePeerUrl { id, .. }) => assert_eq!(id, 101),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_member_on_the_switch_port_moves_the_template_to_the_new_scheme_only() {
        let d0 = kept(managed(), &plain());
        let o = observed(&d0, [("https", 2382); 3], &d0);
        let d = settle(d0.clone(), &o);
        assert_eq!(stage(&d), Some((true, SwitchStage::Moved)));
        // The template changed (a rolling restart follows), and serves https only.
        assert_ne!(objects::template_hash(&d), objects::template_hash(&d0));
        let t = serde_json::to_string(&objects::pod_template(&d)).unwrap();
        assert!(t.contains("\"https://0.0.0.0:2379\""), "{t}");
        assert!(
            t.contains("https://0.0.0.0:2380,https://0.0.0.0:2382"),
            "{t}"
        );
        // Pods on stage Moved: members move back to 2380, one at a time.
        let o = observed(&d, [("https", 2380), ("https", 2382), ("https", 2382)], &d);
        let d = settle(kept(managed(), &d), &o);
        match move_peer_urls(&d, &o) {
            Some(Step::UpdatePeerUrl { id, to, .. }) => {
                assert_eq!(id, 101);
                assert!(to.ends_with(":2380") && to.starts_with("https://"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn with_every_member_back_on_2380_the_switch_ends_in_the_plain_managed_template() {
        let moved = settle(
            kept(managed(), &plain()),
            &observed(&plain(), [("https", 2382); 3], &plain()),
        );
        let d = kept(managed(), &moved);
        assert_eq!(
            stage(&d),
            Some((true, SwitchStage::Moved)),
            "from the template"
        );
        let o = observed(&d, [("https", 2380); 3], &moved);
        let d = settle(d, &o);
        assert_eq!(d.tls_switch, None);
        assert_eq!(
            objects::template_hash(&d),
            objects::template_hash(&managed())
        );
        assert!(switching(&d, &o), "pods still run the switch's template");
        assert_eq!(move_peer_urls(&d, &o), None);
    }

    #[test]
    fn switching_off_runs_the_same_path_backwards_with_the_old_certificates_mounted() {
        let d = kept(plain(), &managed());
        assert!(d.refused.is_empty(), "{:?}", d.refused);
        assert_eq!(stage(&d), Some((false, SwitchStage::Both)));
        assert_eq!(d.pki, None);
        let t = serde_json::to_string(&objects::pod_template(&d)).unwrap();
        assert!(
            t.contains("https://0.0.0.0:2380,http://0.0.0.0:2382"),
            "{t}"
        );
        assert!(t.contains("demo-tls-peer"), "{t}");
        let o = observed(&d, [("https", 2380); 3], &d);
        match move_peer_urls(&settle(d.clone(), &o), &o) {
            Some(Step::UpdatePeerUrl { to, .. }) => {
                assert!(to.starts_with("http://") && to.ends_with(":2382"))
            }
            other => panic!("{other:?}"),
        }
        let o = observed(&d, [("http", 2382); 3], &d);
        let moved = settle(d, &o);
        let t = serde_json::to_string(&objects::pod_template(&moved)).unwrap();
        assert!(!t.contains("demo-tls-peer") && !t.contains("https"), "{t}");
        // Crash-resume from the template alone (etcd unanswered): stage Moved is kept.
        let again = kept(plain(), &moved);
        assert_eq!(stage(&again), Some((false, SwitchStage::Moved)));
    }

    #[test]
    fn a_switch_under_way_is_not_reversed_by_a_spec_change_it_ends_first() {
        let d = kept(managed(), &plain());
        let back = kept(plain(), &d);
        assert_eq!(back.refused.len(), 1, "{:?}", back.refused);
        assert!(back.refused[0].message.contains("switched on"));
        assert_eq!(stage(&back), Some((true, SwitchStage::Both)));
        assert_eq!(back.tls, objects::managed_tls("demo"));
    }

    #[test]
    fn client_tls_without_peer_tls_is_still_refused_on_a_running_cluster() {
        let client_only = cluster("demo")
            .spec(|s| {
                s.tls = Some(crate::api::TlsSpec {
                    server_secret: Some("srv".into()),
                    client_secret: Some("cli".into()),
                    plain_peers: true,
                    ..Default::default()
                })
            })
            .desired();
        let d = kept(client_only, &plain());
        assert_eq!(d.tls_switch, None);
        assert_eq!(d.refused.len(), 1);
        assert!(
            d.refused[0]
                .message
                .contains("client and peer traffic together")
        );
    }

    #[test]
    fn the_certificates_are_issued_before_any_template_mounts_them() {
        let d = kept(managed(), &plain());
        let o = observed(&d, [("http", 2380); 3], &plain());
        assert!(matches!(
            super::super::plan(&settle(d, &o), &o),
            Step::IssueCertificate {
                role: crate::model::pki::CertRole::Ca,
                ..
            }
        ));
    }
}
