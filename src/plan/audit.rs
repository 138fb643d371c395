//! The rule audit (issue 43 item 4): once a request of the spec is carried out (recovery,
//! adopt, restore, hibernate/wake, storage move, upgrade, rollback, CA rotation, TLS switch, the
//! engine's move to its own CN), the healthy
//! cluster that results is left alone by every rule of `RULES`, each asked in turn: as it is, with its records deleted (backup records, restore marks, the restore pod),
//! with every pod restarted, and with its spec applied again. A rule that speaks in any of these
//! worlds would act on a finished request a second time, which is the class of fault the
//! done-marks of `status.completed` exist to prevent.

use super::tests::{desired, healthy};
use super::*;
use crate::api::{UpgradeStatus, upgrade_state};
use crate::model::{RestoreMark, UpgradeRecord, Version};

/// A request carried out, the spec still carrying it, and the world it left.
struct Finished {
    what: &'static str,
    d: Desired,
    o: Observed,
}

/// At rest: nothing to do (a hibernated cluster's rest is its own step).
fn at_rest(step: &Step) -> bool {
    matches!(step, Step::Idle | Step::Hibernated)
}

/// The worlds the audit walks for `o`: as the request left it, its records gone, every pod
/// restarted in place, and the spec applied again (a new generation).
fn variants(d: &Desired, o: &Observed) -> Vec<(&'static str, Desired, Observed)> {
    let mut records_gone = o.clone();
    records_gone.backups.records.clear();
    records_gone.restore_pod = None;
    for v in records_gone.volumes.values_mut() {
        v.restore = None;
    }
    let mut restarted = o.clone();
    for p in restarted.pods.values_mut() {
        p.restarts += 1;
        p.age_seconds = 0;
    }
    let mut reapplied = d.clone();
    reapplied.generation += 1;
    vec![
        ("as it finished", d.clone(), o.clone()),
        ("its records deleted", d.clone(), records_gone),
        ("every pod restarted", d.clone(), restarted),
        ("its spec applied again", reapplied, o.clone()),
    ]
}

/// Every rule of `RULES` on every variant of `f`, the spec settled as the engine settles it.
fn audit(f: &Finished) {
    for (variant, d, o) in variants(&f.d, &f.o) {
        let d = settle(d, &o);
        // Each rule in turn, up to the one that says the cluster is at rest (a hibernated
        // cluster's rule decides for the rules after it, which assume it said nothing).
        for (k, rule) in RULES.iter().enumerate() {
            if let Some(step) = rule(&d, &o) {
                assert!(
                    at_rest(&step),
                    "{} ({variant}): rule {k} of RULES acts again: {step:?}",
                    f.what
                );
                break;
            }
        }
        assert!(at_rest(&plan(&d, &o)), "{} ({variant})", f.what);
    }
}

fn recovered(from_backup: Option<&str>) -> Finished {
    let d = recover::tests::recovering(from_backup, true);
    let mut o = healthy(&d, 3);
    o.completed.recovery = Some("n1".into());
    Finished {
        what: if from_backup.is_some() {
            "a recovery from a backup"
        } else {
            "a forced recovery from a survivor"
        },
        d,
        o,
    }
}

fn adopted() -> Finished {
    let d = adopt::tests::adopting(false, true);
    let mut o = healthy(&adopt::settle(d.clone(), &Default::default()), 3);
    o.completed.adoption = Some("0000000000000007".into());
    Finished {
        what: "an adoption",
        d,
        o,
    }
}

fn restored() -> Finished {
    let d = tests::restored(3);
    let mut o = healthy(&d, 3);
    o.volumes.get_mut(&0).unwrap().restore = Some(RestoreMark::Restored);
    o.completed.restore = rules::restore_completed_mark(&d, &o);
    assert!(o.completed.restore.is_some());
    Finished {
        what: "a restore",
        d,
        o,
    }
}

fn hibernated() -> Finished {
    let mut d = desired(3);
    d.hibernate = true;
    d.hibernate_snapshot = Some("s3://b/etcd/demo-hibernate.db.zst".into());
    let mut o = healthy(&d, 3);
    o.statefulset.as_mut().unwrap().replicas = 0;
    o.pods.clear();
    o.etcd = EtcdView::NotQueried;
    Finished {
        what: "a hibernation",
        d,
        o,
    }
}

fn woken() -> Finished {
    let d = desired(3);
    let o = healthy(&d, 3);
    Finished {
        what: "a wake",
        d,
        o,
    }
}

/// Storage grown to 2Gi in place (`class`: `None`), or every member moved to 2Gi of `class`:
/// the claims, the claim template and the spec agree; a grown claim keeps its grow mark.
fn storage_moved(class: Option<&str>) -> Finished {
    let mut d = desired(3);
    d.storage = crate::model::Storage::Volume {
        size: "2Gi".into(),
        class: class.map(str::to_owned),
    };
    let mut o = healthy(&d, 3);
    for v in o.volumes.values_mut() {
        v.class = Some(class.unwrap_or("standard").into());
        if class.is_none() {
            v.grow_asked = Some(o.now - storage::EXPANSION_PATIENCE * 3);
        }
    }
    o.statefulset.as_mut().unwrap().volume_capacity = Some("2Gi".into());
    Finished {
        what: if class.is_some() {
            "a storage move to another class"
        } else {
            "a volume expansion"
        },
        d,
        o,
    }
}

/// Every member runs `running`, `status.upgrade` says `from → to` ended in `state`.
fn upgraded(want: &str, running: &str, from: &str, to: &str, state: &str) -> Finished {
    let v = |s: &str| Version::parse(s).unwrap();
    let d = crate::fixtures::cluster("demo")
        .replicas(3)
        .version(want)
        .desired();
    let at_rest = crate::fixtures::cluster("demo")
        .replicas(3)
        .version(running)
        .desired();
    let mut o = healthy(&at_rest, 3);
    for m in &mut tests::cluster(&mut o).members {
        m.status.as_mut().unwrap().version = Some(v(running));
    }
    o.last_version = Some(v(running));
    o.upgrade = Some(UpgradeRecord {
        from: v(from),
        to: v(to),
        rolled_back: state != upgrade_state::UPGRADED,
        status: UpgradeStatus {
            from_version: from.into(),
            to_version: to.into(),
            state: state.into(),
            ..Default::default()
        },
    });
    Finished {
        what: if state == upgrade_state::UPGRADED {
            "an upgrade"
        } else {
            "a rollback"
        },
        d,
        o,
    }
}

/// A CA rotation (`spec.tls.caGeneration` raised): run to its end in the rotation's simulated
/// world (new CA alone, every leaf re-issued, members restarted on it).
fn ca_rotated() -> Finished {
    let (d, o) = pki::rotation::rotated();
    Finished {
        what: "a CA rotation",
        d,
        o,
    }
}

/// TLS switched on (`tls.mode: managed` on a plain cluster) once the members moved back to 2380
/// over https: a managed cluster on its first CA; and switched off: a plain cluster.
fn tls_switched(on: bool) -> Finished {
    let (d, o) = if on {
        pki::rotation::managed_at_rest()
    } else {
        let d = crate::fixtures::cluster("demo")
            .replicas(3)
            .spec(|s| {
                s.tls = Some(crate::api::TlsSpec {
                    mode: Some("none".into()),
                    ..Default::default()
                });
            })
            .desired();
        let o = healthy(&d, 3);
        (d, o)
    };
    Finished {
        what: if on {
            "TLS switched on"
        } else {
            "TLS switched off"
        },
        d,
        o,
    }
}

/// The engine's client certificate moved to the cluster's own CN (`plan::auth`): etcd's
/// authentication on, the user root and the cluster's own with the role root, the client Secret
/// issued with the new CN.
fn identity_moved() -> Finished {
    let (mut d, mut o) = pki::rotation::managed_at_rest();
    d.etcd_auth = true;
    o.client_cn = Some(d.engine_user());
    tests::cluster(&mut o).auth = Some(crate::model::AuthView {
        enabled: true,
        root_user: true,
        root_role: true,
        engine_user: true,
        engine_role: true,
    });
    Finished {
        what: "the engine's move to the cluster's own CN",
        d,
        o,
    }
}

#[test]
fn no_rule_acts_again_on_a_finished_request() {
    let finished = [
        recovered(Some("demo-b")),
        recovered(None),
        adopted(),
        restored(),
        hibernated(),
        woken(),
        storage_moved(None),
        storage_moved(Some("fast")),
        upgraded(
            "3.5.30",
            "3.5.30",
            "3.5.16",
            "3.5.30",
            upgrade_state::UPGRADED,
        ),
        upgraded(
            "3.5.99",
            "3.5.16",
            "3.5.16",
            "3.5.99",
            upgrade_state::ROLLED_BACK,
        ),
        ca_rotated(),
        tls_switched(true),
        tls_switched(false),
        identity_moved(),
    ];
    for f in &finished {
        audit(f);
    }
}

/// The audit can fail: the same worlds without their done-marks make a rule act again (what
/// the marks prevent), so a rule that ignores them would be caught.
#[test]
fn without_its_done_mark_a_finished_request_acts_again() {
    for f in [recovered(None), adopted(), restored()] {
        let mut o = f.o.clone();
        o.completed = Default::default();
        o.backups.records.clear();
        // A restore's other record is the seed's claim mark; a whole loss leaves neither.
        if f.what == "a restore" {
            o = Observed {
                known_members: (0..3).collect(),
                ..Default::default()
            };
        }
        // An adoption's old members are gone: unmarked, it waits for them when nobody answers.
        if f.what == "an adoption" {
            o.statefulset.as_mut().unwrap().replicas = 0;
            o.pods.clear();
            o.etcd = EtcdView::NotQueried;
        }
        let d = settle(f.d.clone(), &o);
        let step = plan(&d, &o);
        assert!(!at_rest(&step), "{}: {step:?}", f.what);
    }
    // The move's mark is the client certificate's CN: still root, the certificate is issued
    // again.
    let f = identity_moved();
    let mut o = f.o.clone();
    o.client_cn = Some(crate::keys::LEGACY_ENGINE_USER.into());
    let step = plan(&settle(f.d.clone(), &o), &o);
    assert!(!at_rest(&step), "{}: {step:?}", f.what);
}
