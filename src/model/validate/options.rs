//! `spec.etcd.options`: the flags the engine owns, the tuning a driver lets through, and the
//! peer trust flags of the managed modes.

use std::collections::BTreeMap;

use super::{InvalidSpec, TlsChoice, invalid};
use crate::model::desired::Desired;

/// etcd flags the engine sets itself (as `ETCD_*` variables of the member template or keys of
/// the member config): `spec.etcd.options` may not set them, nor the ones the typed tuning
/// fields own. `objects` tests that every variable of the template is in this list.
pub const ENGINE_FLAGS: &[&str] = &[
    "listen-metrics-urls",
    "name",
    "data-dir",
    "wal-dir",
    "listen-client-urls",
    "advertise-client-urls",
    "listen-peer-urls",
    "initial-advertise-peer-urls",
    "initial-cluster",
    "initial-cluster-state",
    "initial-cluster-token",
    "cert-file",
    "key-file",
    "trusted-ca-file",
    "client-cert-auth",
    "peer-cert-file",
    "peer-key-file",
    "peer-trusted-ca-file",
    "peer-client-cert-auth",
    "peer-skip-client-san-verification",
    "experimental-peer-skip-client-san-verification",
    "auto-tls",
    "peer-auto-tls",
    "discovery",
    "discovery-srv",
    "discovery-token",
    "discovery-endpoints",
    "force-new-cluster",
    "config-file",
    "quota-backend-bytes",
    "auto-compaction-mode",
    "auto-compaction-retention",
];

/// Which typed field owns a flag `spec.etcd.options` may not set.
pub(super) fn typed_field_of(flag: &str) -> Option<&'static str> {
    match flag {
        "quota-backend-bytes" => Some("spec.etcd.quotaBackendBytes"),
        "listen-metrics-urls" => Some("spec.metrics"),
        "auto-compaction-mode" => Some("spec.etcd.autoCompactionMode"),
        "auto-compaction-retention" => Some("spec.etcd.autoCompactionRetention"),
        "cert-file"
        | "key-file"
        | "trusted-ca-file"
        | "client-cert-auth"
        | "peer-cert-file"
        | "peer-key-file"
        | "peer-trusted-ca-file"
        | "peer-client-cert-auth"
        | "auto-tls"
        | "peer-auto-tls"
        | "peer-skip-client-san-verification"
        | "experimental-peer-skip-client-san-verification" => Some("spec.tls"),
        _ => None,
    }
}

/// The etcd flags `spec.etcd.options` may set without the operator's leave: tuning of timing,
/// sizes, compaction, corruption checks and logging, none of which opens a listener, weakens
/// TLS or durability, or turns on an old API. Anything else (`enable-pprof`, `enable-v2`,
/// `unsafe-no-fsync`, `listen-client-http-urls`, `cipher-suites`, `tls-min-version`,
/// `feature-gates`, …) needs `--allow-etcd-option NAME` on the operator (and the CLI) that runs
/// the cluster (`keep_options`).
pub const TUNING_OPTIONS: &[&str] = &[
    "heartbeat-interval",
    "election-timeout",
    "snapshot-count",
    "snapshot-catchup-entries",
    "experimental-snapshot-catchup-entries",
    "max-snapshots",
    "max-wals",
    "max-txn-ops",
    "max-request-bytes",
    "max-concurrent-streams",
    "max-learners",
    "experimental-max-learners",
    "grpc-keepalive-min-time",
    "grpc-keepalive-interval",
    "grpc-keepalive-timeout",
    "backend-batch-interval",
    "backend-batch-limit",
    "backend-bbolt-freelist-type",
    "experimental-backend-bbolt-freelist-type",
    "compaction-batch-limit",
    "experimental-compaction-batch-limit",
    "compaction-sleep-interval",
    "experimental-compaction-sleep-interval",
    "corrupt-check-time",
    "experimental-corrupt-check-time",
    "experimental-initial-corrupt-check",
    "compact-hash-check-time",
    "experimental-compact-hash-check-time",
    "experimental-compact-hash-check-enabled",
    "watch-progress-notify-interval",
    "experimental-watch-progress-notify-interval",
    "warning-apply-duration",
    "experimental-warning-apply-duration",
    "warning-unary-request-duration",
    "experimental-warning-unary-request-duration",
    "bootstrap-defrag-threshold-megabytes",
    "experimental-bootstrap-defrag-threshold-megabytes",
    "downgrade-check-time",
    "experimental-downgrade-check-time",
    "pre-vote",
    "log-level",
];

/// Which `spec.etcd.options` a driver lets through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionLeave {
    /// Any well-formed flag: the CLI's passes, which write the StatefulSet with their user's own
    /// rights (who could write any flag into it directly).
    Any,
    /// The tuning flags and these (`--allow-etcd-option`): the operator, whose rights are not
    /// the spec writer's.
    Tuning(Vec<String>),
}

impl OptionLeave {
    /// Whether option `name` may be set.
    pub fn allows(&self, name: &str) -> bool {
        match self {
            OptionLeave::Any => true,
            OptionLeave::Tuning(extra) => {
                TUNING_OPTIONS.contains(&name) || extra.iter().any(|a| a == name)
            }
        }
    }
}

/// The error of option `name` off the allow list: the flag, and both ways out.
fn not_allowed(name: &str, what: &str) -> InvalidSpec {
    invalid(
        "spec.etcd.options",
        format!(
            "{name:?} is not a tuning flag this operator allows{what}; remove it, or give \
             `--allow-etcd-option {name}` to the operator (`kubectl etcd operate`) and to \
             `kubectl etcd create` (tuning flags such as heartbeat-interval, election-timeout and \
             snapshot-count need no leave)"
        ),
    )
}

/// The spec's options the driver may not set: an error naming the first, for verbs that refuse
/// before they write (`kubectl etcd create`).
pub fn check_options(d: &Desired, leave: &OptionLeave) -> Result<(), InvalidSpec> {
    match d.etcd_options.keys().find(|k| !leave.allows(k)) {
        Some(k) => Err(not_allowed(k, "")),
        None => Ok(()),
    }
}

/// The options off the allow list, as a pass applies them: a member template that runs one
/// already keeps it (the cluster is not changed behind its owner's back), any other is left out
/// of the template; either way the cluster's `SpecRefused` condition names it. `running`: the
/// etcd command of the StatefulSet's template (`None`: no StatefulSet yet). Pure.
pub fn keep_options(mut d: Desired, running: Option<&[String]>, leave: &OptionLeave) -> Desired {
    let refused: Vec<(String, String)> = d
        .etcd_options
        .iter()
        .filter(|(k, _)| !leave.allows(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in refused {
        let flag = format!("--{k}={v}");
        if running.is_some_and(|r| r.contains(&flag)) {
            d.refused.push(not_allowed(
                &k,
                " (the running members keep it until it is removed)",
            ));
        } else {
            d.etcd_flags.retain(|f| f != &flag);
            d.etcd_options.remove(&k);
            d.refused
                .push(not_allowed(&k, " (left out of the members)"));
        }
    }
    d
}

/// The flags of peer trust the engine sets in modes managed and certManager, where it knows the
/// peer certificate's CN (`objects::allowed_peer_cn`): `peer-cert-allowed-cn`, and
/// `peer-cert-allowed-hostname`, which etcd refuses beside it. Mode secrets leaves both to the
/// spec (the engine does not know the CN of the user's certificates).
pub const PEER_TRUST_FLAGS: [&str; 2] = ["peer-cert-allowed-cn", "peer-cert-allowed-hostname"];

pub(super) fn engine_peer_trust(
    options: &BTreeMap<String, String>,
    tls: &TlsChoice,
) -> Result<(), InvalidSpec> {
    let issued = tls.pki.is_some() || tls.cert_manager.is_some();
    match PEER_TRUST_FLAGS.iter().find(|f| options.contains_key(**f)) {
        Some(f) if issued => Err(invalid(
            "spec.etcd.options",
            format!(
                "{f:?} cannot be set here: with the certificates the engine has issued, the peer port admits only the cluster's peer certificate already; remove it (or use spec.tls.mode: secrets to choose)"
            ),
        )),
        _ => Ok(()),
    }
}

/// `spec.etcd.options` as flags, sorted by name (a stable template).
pub(super) fn validate_options(
    options: &BTreeMap<String, String>,
) -> Result<Vec<String>, InvalidSpec> {
    const FIELD: &str = "spec.etcd.options";
    let mut flags = Vec::with_capacity(options.len());
    for (k, v) in options {
        let bare = k.trim_start_matches('-');
        if bare != k {
            return Err(invalid(
                FIELD,
                format!("{k:?}: name the flag without its dashes, e.g. {bare:?}"),
            ));
        }
        let well_formed = k.starts_with(|c: char| c.is_ascii_lowercase())
            && k.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if !well_formed {
            return Err(invalid(
                FIELD,
                format!(
                    "{k:?} is not an etcd flag name; use its long name without dashes, e.g. \"heartbeat-interval\""
                ),
            ));
        }
        if ENGINE_FLAGS.contains(&k.as_str()) {
            let why = match typed_field_of(k) {
                Some(f) => format!("set {f} instead"),
                None => "the engine sets it for every member; remove it".to_string(),
            };
            return Err(invalid(FIELD, format!("{k:?} cannot be set here: {why}")));
        }
        if v.is_empty() || v.contains(['\n', '\r', '\0']) {
            return Err(invalid(
                FIELD,
                format!(
                    "{k}: {v:?} is not a flag value; give one line, e.g. \"true\" for a switch"
                ),
            ));
        }
        flags.push(format!("--{k}={v}"));
    }
    Ok(flags)
}
