//! `spec.tls`: the mode (managed, certManager, secrets, none), the Secrets, the server names,
//! and the mode a spec without one gets.

use super::{InvalidSpec, invalid, is_dns_subdomain, validate_secret_name};
use crate::api::EtcdCluster;
use crate::model::desired::{ClientTls, Tls, TlsOrigin};

/// `spec.tls.serverNames`: DNS names (a leading `*.` allowed) or IP addresses, each once, and
/// only where the engine or cert-manager issues the server certificate.
pub(super) fn validate_server_names(
    spec: Option<&crate::api::TlsSpec>,
    tls: &TlsChoice,
) -> Result<Vec<String>, InvalidSpec> {
    let field = "spec.tls.serverNames";
    let names = spec.map(|t| t.server_names.clone()).unwrap_or_default();
    if names.is_empty() {
        return Ok(names);
    }
    if tls.pki.is_none() && tls.cert_manager.is_none() {
        return Err(invalid(
            field,
            "the server certificate is issued only in modes managed and certManager; in mode \
             secrets put the names into your own certificate"
                .to_string(),
        ));
    }
    let mut seen: Vec<&String> = Vec::new();
    for n in &names {
        let dns = n.strip_prefix("*.").unwrap_or(n);
        if n.parse::<std::net::IpAddr>().is_err() && !is_dns_subdomain(dns) {
            return Err(invalid(
                field,
                format!(
                    "{n:?} is neither a DNS name nor an IP address; use e.g. etcd.example.com, *.example.com or 203.0.113.10"
                ),
            ));
        }
        if seen.contains(&n) {
            return Err(invalid(field, format!("{n:?} is named twice")));
        }
        seen.push(n);
    }
    Ok(names)
}

/// The TLS mode `spec.tls` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsMode {
    Managed,
    CertManager,
    Secrets,
    None,
}

/// What `validate_tls_mode` makes of `spec.tls`.
#[derive(Debug)]
pub(in crate::model) struct TlsChoice {
    /// The Secrets the members run with.
    pub tls: Tls,
    /// Mode managed: the engine's CA and what it issues.
    pub pki: Option<crate::model::pki::ManagedPki>,
    /// Mode certManager: the issuer.
    pub cert_manager: Option<crate::model::pki::CertManagerTls>,
    /// Plain http asked for explicitly.
    pub insecure_asked: bool,
    pub origin: TlsOrigin,
}

/// `spec.tls` of `cluster` (named `name`), the default of a spec naming no mode decided from its
/// status (`unset_tls_mode`), and no move between managed and certManager (`issuer_kept`).
pub(super) fn tls_of(name: &str, cluster: &EtcdCluster) -> Result<TlsChoice, InvalidSpec> {
    let status = cluster.status.as_ref();
    let unset = unset_tls_mode(status, cluster.spec.adopt.is_some());
    let tls = validate_tls_mode(name, cluster.spec.tls.as_ref(), unset)?;
    issuer_kept(status, &tls)?;
    Ok(tls)
}

/// managed and certManager run the same Secrets, each signed by a CA the members loaded at
/// start: a running cluster moved from one to the other would have its certificates rewritten
/// by another CA, which the members do not trust, and lose quorum. Refused once the cluster
/// recorded its mode (`status.tls.mode`).
fn issuer_kept(
    status: Option<&crate::api::EtcdClusterStatus>,
    tls: &TlsChoice,
) -> Result<(), InvalidSpec> {
    let recorded = status.and_then(|s| s.tls.as_ref()).map(|t| t.mode.as_str());
    let (from, to) = match recorded {
        Some("managed") if tls.cert_manager.is_some() => ("managed", "certManager"),
        Some("certManager") if tls.pki.is_some() => ("certManager", "managed"),
        _ => return Ok(()),
    };
    Err(invalid(
        "spec.tls.mode",
        format!(
            "the cluster runs TLS mode {from}; moving it to {to} would rewrite every certificate \
             from a CA the members do not trust: set mode: {from} again (a new cluster restored \
             from a backup can use {to})"
        ),
    ))
}

/// The mode a spec that names neither a mode nor Secrets gets, and why (`TlsOrigin`).
///
/// New clusters are secure by default, and old ones must not flip: a switch of TLS on a running
/// cluster is refused (`keep_tls`), so a default that changed what an existing cluster runs
/// would leave it refusing its own spec. So the default is decided once, when the cluster is
/// born, and remembered in `status.tls.mode` (written by every pass, `plan::pki::status`):
///
/// ```text
///   status.tls.mode managed | none   ──▶ that mode (Recorded)
///   no record, status shows members  ──▶ none     (BornBefore: made before the record existed)
///   no record, spec.adopt            ──▶ none     (Adopting: the old members speak what they speak)
///   no record, no sign of a member   ──▶ managed  (Birth; keep_tls follows a StatefulSet that
///                                                  exists all the same: a status lost, e.g. a
///                                                  manifest restored by a backup tool)
/// ```
///
/// A `secrets` record without Secrets in the spec (they were removed) is no birth decision: it
/// reads as `none`, and `keep_tls` refuses the change as it refuses any other.
pub fn unset_tls_mode(
    status: Option<&crate::api::EtcdClusterStatus>,
    adopting: bool,
) -> (TlsMode, TlsOrigin) {
    match status.and_then(|s| s.tls.as_ref()).map(|t| t.mode.as_str()) {
        Some("managed") => return (TlsMode::Managed, TlsOrigin::Recorded),
        Some("none") => return (TlsMode::None, TlsOrigin::Recorded),
        _ => {}
    }
    let ran =
        status.is_some_and(|s| s.cluster_id.is_some() || !s.members.is_empty() || s.tls.is_some());
    if ran {
        (TlsMode::None, TlsOrigin::BornBefore)
    } else if adopting {
        (TlsMode::None, TlsOrigin::Adopting)
    } else {
        (TlsMode::Managed, TlsOrigin::Birth)
    }
}

/// `spec.tls`: the TLS the members run (Secret names), the managed CA's settings in managed mode,
/// whether plain http was asked for explicitly, and where the mode came from. Without a mode,
/// Secrets named mean `secrets`; none named means `unset` (see `unset_tls_mode`; no server-side
/// default, see `TlsSpec::mode`).
pub(super) fn validate_tls_mode(
    name: &str,
    t: Option<&crate::api::TlsSpec>,
    unset: (TlsMode, TlsOrigin),
) -> Result<TlsChoice, InvalidSpec> {
    let empty = crate::api::TlsSpec::default();
    let t = t.unwrap_or(&empty);
    let names_secrets =
        t.server_secret.is_some() || t.client_secret.is_some() || t.peer_secret.is_some();
    let (mode, origin) = match t.mode.as_deref() {
        None if names_secrets => (TlsMode::Secrets, TlsOrigin::Spec),
        None if t.issuer_ref.is_some() => (TlsMode::CertManager, TlsOrigin::Spec),
        None => unset,
        Some("managed") => (TlsMode::Managed, TlsOrigin::Spec),
        Some("certManager") => (TlsMode::CertManager, TlsOrigin::Spec),
        Some("secrets") => (TlsMode::Secrets, TlsOrigin::Spec),
        Some("none") => (TlsMode::None, TlsOrigin::Spec),
        Some(other) => {
            return Err(invalid(
                "spec.tls.mode",
                format!("{other:?} is not a TLS mode; use managed, certManager, secrets or none"),
            ));
        }
    };
    let ca_generation = fields_of_mode(mode, t)?;
    let choice = |tls, pki, cert_manager, insecure_asked| TlsChoice {
        tls,
        pki,
        cert_manager,
        insecure_asked,
        origin,
    };
    match mode {
        TlsMode::Managed | TlsMode::CertManager if names_secrets => Err(invalid(
            "spec.tls.mode",
            format!(
                "{} issues its own certificates: remove serverSecret, clientSecret and peerSecret, or use mode: secrets",
                if mode == TlsMode::Managed {
                    "managed"
                } else {
                    "certManager"
                }
            ),
        )),
        TlsMode::None if names_secrets => Err(invalid(
            "spec.tls.mode",
            "none runs plain http: remove serverSecret, clientSecret and peerSecret, or use mode: secrets",
        )),
        TlsMode::Secrets if !names_secrets => Err(invalid(
            "spec.tls.mode",
            "secrets needs serverSecret and clientSecret (and peerSecret for peer TLS); or use mode: managed",
        )),
        TlsMode::Managed => {
            let leaf_lifetime_seconds = t
                .certificate_lifetime
                .as_deref()
                .map(validate_certificate_lifetime)
                .transpose()?
                .unwrap_or(crate::model::pki::DEFAULT_LEAF_LIFETIME_SECONDS);
            let pki = crate::model::pki::ManagedPki {
                leaf_lifetime_seconds,
                ca_generation,
                trust: None,
            };
            Ok(choice(
                crate::model::pki::managed_tls(name),
                Some(pki),
                None,
                false,
            ))
        }
        TlsMode::CertManager => {
            let issuer = validate_issuer_ref(t)?;
            Ok(choice(
                crate::model::pki::managed_tls(name),
                None,
                Some(issuer),
                false,
            ))
        }
        TlsMode::Secrets => {
            let tls = validate_tls(t)?;
            plain_peers_asked(name, t, &tls, unset.1 == TlsOrigin::Birth)?;
            Ok(choice(tls, None, None, false))
        }
        TlsMode::None => Ok(choice(Tls::default(), None, None, t.mode.is_some())),
    }
}

/// The fields of `spec.tls` that belong to one mode, refused in another; the CA generation of
/// mode managed.
fn fields_of_mode(mode: TlsMode, t: &crate::api::TlsSpec) -> Result<u64, InvalidSpec> {
    if mode != TlsMode::Managed && t.ca_generation.is_some() {
        return Err(invalid(
            "spec.tls.caGeneration",
            "rotates the CA of mode managed (the engine has none otherwise); remove it or set mode: managed",
        ));
    }
    if !matches!(mode, TlsMode::Managed | TlsMode::CertManager) && t.certificate_lifetime.is_some()
    {
        return Err(invalid(
            "spec.tls.certificateLifetime",
            "applies only to modes managed and certManager (nobody issues a certificate otherwise); remove it or set one of them",
        ));
    }
    if mode != TlsMode::CertManager && t.issuer_ref.is_some() {
        return Err(invalid(
            "spec.tls.issuerRef",
            "names the cert-manager issuer of mode certManager; remove it or set mode: certManager",
        ));
    }
    if t.plain_peers && mode != TlsMode::Secrets {
        return Err(invalid(
            "spec.tls.plainPeers",
            "applies only to mode secrets without peerSecret (managed and certManager run peer TLS, none runs no TLS at all); remove it",
        ));
    }
    match t.ca_generation {
        Some(g) if g < 0 => Err(invalid(
            "spec.tls.caGeneration",
            format!("{g} is negative; `kubectl etcd rotate-ca` raises it by one"),
        )),
        g => Ok(g.unwrap_or_default() as u64),
    }
}

/// `spec.tls.issuerRef` and `certificateLifetime` of mode certManager.
fn validate_issuer_ref(
    t: &crate::api::TlsSpec,
) -> Result<crate::model::pki::CertManagerTls, InvalidSpec> {
    let Some(r) = &t.issuer_ref else {
        return Err(invalid(
            "spec.tls.issuerRef",
            "is missing: mode certManager needs the cert-manager issuer that signs the cluster's certificates, e.g. issuerRef: {name: etcd-ca} (a CA Issuer in the cluster's namespace) or {name: etcd-ca, kind: ClusterIssuer}",
        ));
    };
    if !is_dns_subdomain(&r.name) {
        return Err(invalid(
            "spec.tls.issuerRef.name",
            format!(
                "{:?} is not an object name; use the name of a cert-manager Issuer or ClusterIssuer",
                r.name
            ),
        ));
    }
    let kind = r.kind.clone().unwrap_or_else(|| "Issuer".into());
    let group = r.group.clone().unwrap_or_else(|| "cert-manager.io".into());
    if group == "cert-manager.io" && !matches!(kind.as_str(), "Issuer" | "ClusterIssuer") {
        return Err(invalid(
            "spec.tls.issuerRef.kind",
            format!("{kind:?} is not a cert-manager issuer kind; use Issuer or ClusterIssuer"),
        ));
    }
    if !is_dns_subdomain(&group) {
        return Err(invalid(
            "spec.tls.issuerRef.group",
            format!("{group:?} is not an API group; leave it out for cert-manager.io"),
        ));
    }
    let lifetime_seconds = t
        .certificate_lifetime
        .as_deref()
        .map(validate_certificate_lifetime)
        .transpose()?;
    if let Some(s) =
        lifetime_seconds.filter(|s| *s < crate::model::pki::MIN_CERT_MANAGER_LIFETIME_SECONDS)
    {
        return Err(invalid(
            "spec.tls.certificateLifetime",
            format!("{s}s is shorter than cert-manager accepts; use at least 1h"),
        ));
    }
    Ok(crate::model::pki::CertManagerTls {
        issuer_name: r.name.clone(),
        issuer_kind: kind,
        issuer_group: group,
        lifetime_seconds,
        cluster_issuer_allowed: false,
    })
}

/// Client TLS without peer TLS (`tls`, from `t`) leaves raft in the clear: refused for a `new`
/// cluster unless `spec.tls.plainPeers` says it is meant (clusters that ran before the field
/// existed keep running); `plainPeers` beside a peer Secret contradicts itself.
fn plain_peers_asked(
    name: &str,
    t: &crate::api::TlsSpec,
    tls: &Tls,
    new: bool,
) -> Result<(), InvalidSpec> {
    match (
        tls.client.is_some(),
        tls.peer_secret.is_some(),
        t.plain_peers,
    ) {
        (_, true, true) => Err(invalid(
            "spec.tls.plainPeers",
            "says raft runs in the clear, but peerSecret gives the members peer TLS: remove one of them",
        )),
        (true, false, false) if new => Err(invalid(
            "spec.tls.peerSecret",
            format!(
                "is missing: client TLS without peer TLS leaves raft in the clear, and any pod that reaches port 2380 reads every write as it is replicated; add peerSecret (a certificate for *.{name}.<namespace>.svc.cluster.local, as server and client; --tls-peer-secret), use mode: managed, or set plainPeers: true (--plain-peers) if that is meant"
            ),
        )),
        _ => Ok(()),
    }
}

fn validate_certificate_lifetime(s: &str) -> Result<u64, InvalidSpec> {
    let min = crate::model::pki::MIN_LEAF_LIFETIME_SECONDS;
    match humantime::parse_duration(s) {
        Ok(d) if d.as_secs() >= min => Ok(d.as_secs()),
        Ok(_) => Err(invalid(
            "spec.tls.certificateLifetime",
            format!(
                "{s:?} is shorter than {}m: renewal comes at two thirds of the lifetime and needs time to reach every member",
                min / 60
            ),
        )),
        Err(e) => Err(invalid(
            "spec.tls.certificateLifetime",
            format!("{s:?} is not a duration ({e}); use e.g. 2160h (90 days)"),
        )),
    }
}

pub(super) fn validate_tls(t: &crate::api::TlsSpec) -> Result<Tls, InvalidSpec> {
    let client = match (&t.server_secret, &t.client_secret) {
        (None, None) => None,
        (Some(server), Some(client)) => Some(ClientTls {
            server_secret: validate_secret_name("spec.tls.serverSecret", server)?,
            client_secret: validate_secret_name("spec.tls.clientSecret", client)?,
        }),
        (Some(_), None) => {
            return Err(invalid(
                "spec.tls.clientSecret",
                "is required with serverSecret: the engine, the readiness probe and backups need a client certificate the members accept",
            ));
        }
        (None, Some(_)) => {
            return Err(invalid(
                "spec.tls.serverSecret",
                "is required with clientSecret: a client certificate is of use only when the members serve TLS",
            ));
        }
    };
    let peer_secret = t
        .peer_secret
        .as_deref()
        .map(|p| validate_secret_name("spec.tls.peerSecret", p))
        .transpose()?;
    Ok(Tls {
        client,
        peer_secret,
    })
}
