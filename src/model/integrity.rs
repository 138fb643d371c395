//! etcd's own integrity checks (`spec.integrity`), typed: validated once here, and rendered as
//! the flags of the version a member runs (`flags`), so that an upgrade from 3.5 to 3.6 moves
//! from the `--experimental-*` names to `--feature-gates` with the template, member by member.
//!
//! | check | 3.4 | 3.5 | 3.6, 3.7 |
//! |---|---|---|---|
//! | initial | `--experimental-initial-corrupt-check` | same | gate `InitialCorruptCheck` |
//! | periodic | `--experimental-corrupt-check-time` | same | `--corrupt-check-time` |
//! | compaction hash | — | `--experimental-compact-hash-check-enabled` (3.5.5+), `…-time` | gate `CompactHashCheck`, `--compact-hash-check-time` |
//! | stop serving on defrag | — | `--experimental-stop-grpc-service-on-defrag` (3.5.14+) | gate `StopGRPCServiceOnDefrag` |
//!
//! A check the version does not have is left out (the spec keeps it, and it starts with the
//! upgrade that brings it). Pure.

use std::collections::BTreeMap;

use super::{InvalidSpec, Version, invalid};
use crate::api::IntegritySpec;

/// What `create` and `restore` write into a new cluster's spec (`new_cluster_defaults`): every
/// check on, the full comparison every 10 minutes (it reads each member's whole database: about
/// 1 s of one core per GiB), the compaction-hash check at etcd's period (1 minute; it compares
/// hashes etcd computes at each compaction anyway).
pub const DEFAULT_CORRUPT_CHECK_PERIOD: &str = "10m";

/// The checks a cluster runs, validated.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Integrity {
    /// Each member compares its data with its peers' before it serves.
    pub initial: bool,
    /// How often the leader compares every member's hash of the keyspace (None: never).
    pub corrupt_check_period: Option<String>,
    /// The leader compares its followers' hashes of each compacted revision.
    pub compact_hash: bool,
    /// The compaction-hash check's period (None: etcd's, 1 minute).
    pub compact_hash_period: Option<String>,
    /// A defragmenting member stops serving, so clients go to another.
    pub stop_serving_on_defrag: bool,
}

/// The flags of `spec.etcd.options` that `spec.integrity` sets, by any version's name: both
/// at once would give etcd two values.
const TYPED: [&str; 8] = [
    "experimental-initial-corrupt-check",
    "experimental-corrupt-check-time",
    "corrupt-check-time",
    "experimental-compact-hash-check-enabled",
    "experimental-compact-hash-check-time",
    "compact-hash-check-time",
    "experimental-stop-grpc-service-on-defrag",
    "feature-gates",
];

/// Whether `spec.etcd.options` sets any check itself (a spec written before the block, or by
/// hand): `create` then adds no block, which would be refused beside them.
pub fn set_by_options(options: &BTreeMap<String, String>) -> bool {
    TYPED.iter().any(|n| options.contains_key(*n))
}

/// The block with every check on, as a new cluster gets it.
pub fn new_cluster_default() -> IntegritySpec {
    IntegritySpec {
        initial_check: true,
        corrupt_check_period: Some(DEFAULT_CORRUPT_CHECK_PERIOD.into()),
        compact_hash_check: true,
        compact_hash_check_period: None,
        stop_serving_on_defrag: true,
    }
}

/// `spec.integrity` checked against itself and `spec.etcd.options`; None without the block.
pub fn validate(
    spec: Option<&IntegritySpec>,
    options: &BTreeMap<String, String>,
) -> Result<Option<Integrity>, InvalidSpec> {
    let Some(s) = spec else {
        return Ok(None);
    };
    if let Some(name) = TYPED.iter().find(|n| options.contains_key(**n)) {
        return Err(invalid(
            "spec.etcd.options",
            format!(
                "{name} is set by spec.integrity (rendered for each etcd version); remove it \
                 from spec.etcd.options, or remove spec.integrity to pass etcd's flags yourself"
            ),
        ));
    }
    let period = |field: &'static str, p: &Option<String>| -> Result<Option<String>, InvalidSpec> {
        match p.as_deref() {
            None => Ok(None),
            Some(p) => match duration_seconds(p) {
                Some(0) => Ok(None),
                Some(_) => Ok(Some(p.to_string())),
                None => Err(invalid(
                    field,
                    format!(
                        "{p:?} is not a duration; use a whole number of seconds, minutes or hours, \
                         e.g. \"10m\" (\"0s\" turns the check off)"
                    ),
                )),
            },
        }
    };
    Ok(Some(Integrity {
        initial: s.initial_check,
        corrupt_check_period: period("spec.integrity.corruptCheckPeriod", &s.corrupt_check_period)?,
        compact_hash: s.compact_hash_check,
        compact_hash_period: period(
            "spec.integrity.compactHashCheckPeriod",
            &s.compact_hash_check_period,
        )?,
        stop_serving_on_defrag: s.stop_serving_on_defrag,
    }))
}

/// "90s", "10m", "1h" as seconds (one unit, as etcd's Go durations write them most simply).
fn duration_seconds(p: &str) -> Option<u64> {
    let (n, unit) = p.split_at(p.len().checked_sub(1)?);
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return None,
    };
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse::<u64>().ok()?.checked_mul(scale)
}

/// The etcd flags of `i` for a member running `v`.
pub fn flags(i: &Integrity, v: Version) -> Vec<String> {
    let at_least = |minor: u32, patch: u32| (v.major, v.minor, v.patch) >= (3, minor, patch);
    let mut out = Vec::new();
    if at_least(6, 0) {
        let gates: Vec<&str> = [
            (i.compact_hash, "CompactHashCheck=true"),
            (i.initial, "InitialCorruptCheck=true"),
            (i.stop_serving_on_defrag, "StopGRPCServiceOnDefrag=true"),
        ]
        .into_iter()
        .filter_map(|(on, gate)| on.then_some(gate))
        .collect();
        if !gates.is_empty() {
            out.push(format!("--feature-gates={}", gates.join(",")));
        }
        if let Some(p) = &i.corrupt_check_period {
            out.push(format!("--corrupt-check-time={p}"));
        }
        if let Some(p) = i.compact_hash_period.as_ref().filter(|_| i.compact_hash) {
            out.push(format!("--compact-hash-check-time={p}"));
        }
        return out;
    }
    if i.initial {
        out.push("--experimental-initial-corrupt-check=true".into());
    }
    if let Some(p) = &i.corrupt_check_period {
        out.push(format!("--experimental-corrupt-check-time={p}"));
    }
    if i.compact_hash && at_least(5, 5) {
        out.push("--experimental-compact-hash-check-enabled=true".into());
        if let Some(p) = &i.compact_hash_period {
            out.push(format!("--experimental-compact-hash-check-time={p}"));
        }
    }
    if i.stop_serving_on_defrag && at_least(5, 14) {
        out.push("--experimental-stop-grpc-service-on-defrag=true".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    fn all_on() -> Integrity {
        validate(Some(&new_cluster_default()), &BTreeMap::new())
            .unwrap()
            .unwrap()
    }

    #[test]
    fn the_new_cluster_default_renders_each_versions_own_names() {
        let i = all_on();
        assert_eq!(
            flags(&i, v("3.4.23")),
            [
                "--experimental-initial-corrupt-check=true",
                "--experimental-corrupt-check-time=10m"
            ]
        );
        assert_eq!(
            flags(&i, v("3.5.16")),
            [
                "--experimental-initial-corrupt-check=true",
                "--experimental-corrupt-check-time=10m",
                "--experimental-compact-hash-check-enabled=true",
                "--experimental-stop-grpc-service-on-defrag=true"
            ]
        );
        for newer in ["3.6.0", "3.6.16", "3.7.3"] {
            assert_eq!(
                flags(&i, v(newer)),
                [
                    "--feature-gates=CompactHashCheck=true,InitialCorruptCheck=true,StopGRPCServiceOnDefrag=true",
                    "--corrupt-check-time=10m"
                ],
                "{newer}"
            );
        }
    }

    #[test]
    fn checks_a_35_patch_does_not_have_are_left_out() {
        let i = all_on();
        let at = |s: &str| flags(&i, v(s)).join(" ");
        assert!(!at("3.5.4").contains("compact-hash"));
        assert!(at("3.5.5").contains("compact-hash-check-enabled"));
        assert!(!at("3.5.13").contains("stop-grpc"));
        assert!(at("3.5.14").contains("stop-grpc"));
        assert!(!at("3.4.23").contains("compact-hash") && !at("3.4.23").contains("stop-grpc"));
    }

    #[test]
    fn periods_render_only_with_their_check_and_zero_turns_a_check_off() {
        let mut s = new_cluster_default();
        s.compact_hash_check_period = Some("30s".into());
        s.corrupt_check_period = Some("0s".into());
        let i = validate(Some(&s), &BTreeMap::new()).unwrap().unwrap();
        assert_eq!(i.corrupt_check_period, None);
        let f = flags(&i, v("3.6.16"));
        assert!(
            f.contains(&"--compact-hash-check-time=30s".to_string()),
            "{f:?}"
        );
        assert!(
            !f.iter().any(|x| x.starts_with("--corrupt-check-time")),
            "{f:?}"
        );
        assert!(
            flags(&i, v("3.5.16")).contains(&"--experimental-compact-hash-check-time=30s".into())
        );
        s.compact_hash_check = false;
        let i = validate(Some(&s), &BTreeMap::new()).unwrap().unwrap();
        assert!(!flags(&i, v("3.6.16")).join(" ").contains("compact-hash"));
        assert!(!flags(&i, v("3.5.16")).join(" ").contains("compact-hash"));
    }

    #[test]
    fn an_empty_block_renders_nothing_and_no_block_is_none() {
        let i = validate(Some(&IntegritySpec::default()), &BTreeMap::new())
            .unwrap()
            .unwrap();
        for s in ["3.4.23", "3.5.16", "3.7.3"] {
            assert!(flags(&i, v(s)).is_empty(), "{s}");
        }
        assert_eq!(validate(None, &BTreeMap::new()).unwrap(), None);
    }

    #[test]
    fn a_bad_period_is_refused_naming_the_field_and_the_form() {
        for bad in ["10", "m", "1.5h", "-1m", "10d", "", "1h30m"] {
            let mut s = new_cluster_default();
            s.corrupt_check_period = Some(bad.into());
            let e = validate(Some(&s), &BTreeMap::new()).unwrap_err();
            assert_eq!(e.field, "spec.integrity.corruptCheckPeriod", "{bad}");
            assert!(e.message.contains("\"10m\""), "{}", e.message);
        }
        let mut s = new_cluster_default();
        s.compact_hash_check_period = Some("soon".into());
        let e = validate(Some(&s), &BTreeMap::new()).unwrap_err();
        assert_eq!(e.field, "spec.integrity.compactHashCheckPeriod");
        assert_eq!(duration_seconds("99999999999999999999h"), None);
        assert_eq!(duration_seconds("90s"), Some(90));
        assert_eq!(duration_seconds("2h"), Some(7200));
    }

    #[test]
    fn the_same_check_in_the_options_and_the_block_is_refused_but_alone_each_is_fine() {
        for name in TYPED {
            let options = BTreeMap::from([(name.to_string(), "true".to_string())]);
            let e = validate(Some(&new_cluster_default()), &options).unwrap_err();
            assert_eq!(e.field, "spec.etcd.options");
            assert!(
                e.message.contains(name) && e.message.contains("spec.integrity"),
                "{}",
                e.message
            );
            assert_eq!(validate(None, &options).unwrap(), None);
        }
    }

    #[test]
    fn a_new_cluster_gets_every_check_unless_its_options_set_them_and_an_old_one_none() {
        let fixture = |options: &[(&str, &str)]| {
            let mut c = crate::fixtures::cluster("demo").version("3.7.3").build();
            for (k, v) in options {
                c.spec.etcd.options.insert(k.to_string(), v.to_string());
            }
            c
        };
        let mut c = fixture(&[]);
        crate::model::new_cluster_defaults(&mut c.spec);
        assert_eq!(c.spec.integrity, Some(new_cluster_default()));
        let d = crate::model::validate(&c).unwrap();
        assert_eq!(d.integrity, Some(all_on()));
        // Checks set by hand in the options: no block beside them (it would be refused).
        let mut c = fixture(&[("corrupt-check-time", "5m")]);
        crate::model::new_cluster_defaults(&mut c.spec);
        assert_eq!(c.spec.integrity, None);
        assert_eq!(crate::model::validate(&c).unwrap().integrity, None);
        // A cluster created before the block: none, so its template does not roll.
        assert_eq!(
            crate::model::validate(&fixture(&[])).unwrap().integrity,
            None
        );
        // Both: refused by validation, naming the option.
        let mut c = fixture(&[("feature-gates", "AllAlpha=true")]);
        c.spec.integrity = Some(new_cluster_default());
        let e = crate::model::validate(&c).unwrap_err();
        assert_eq!(e.field, "spec.etcd.options");
        assert!(e.message.contains("feature-gates"), "{}", e.message);
    }
}
