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

#[cfg(test)]
mod tests {
    use crate::model::tests::{cluster, mode, plain_peers, spec, tls};
    use crate::model::*;

    #[test]
    fn a_new_cluster_with_client_tls_but_plain_peers_is_refused_unless_asked_for() {
        let validated = |t: crate::api::TlsSpec, st: Option<crate::api::EtcdClusterStatus>| {
            let mut s = spec(3, "3.6.15");
            s.tls = Some(t);
            let mut c = cluster(s);
            c.status = st;
            validate(&c)
        };
        // New: refused, naming the field, the risk and the three ways out.
        let e = validated(tls(Some("srv"), Some("cli"), None), None).unwrap_err();
        assert_eq!(e.field, "spec.tls.peerSecret");
        for said in [
            "raft in the clear",
            "peerSecret",
            "mode: managed",
            "plainPeers: true",
        ] {
            assert!(e.message.contains(said), "{said}: {}", e.message);
        }
        // Asked for: taken, client TLS only.
        let d = validated(plain_peers(tls(Some("srv"), Some("cli"), None)), None).unwrap();
        assert_eq!(
            (d.tls.client_scheme(), d.tls.peer_secret.clone()),
            ("https", None)
        );
        // A cluster that ran before the field existed keeps running.
        let ran = crate::api::EtcdClusterStatus {
            cluster_id: Some("1a2b".into()),
            ..Default::default()
        };
        assert!(validated(tls(Some("srv"), Some("cli"), None), Some(ran)).is_ok());
        // Contradictions and misplaced opt-ins.
        let e = validated(plain_peers(tls(Some("srv"), Some("cli"), Some("p"))), None).unwrap_err();
        assert_eq!(e.field, "spec.tls.plainPeers");
        for m in ["managed", "none"] {
            let t = plain_peers(crate::api::TlsSpec {
                mode: Some(m.into()),
                ..Default::default()
            });
            assert_eq!(
                validated(t, None).unwrap_err().field,
                "spec.tls.plainPeers",
                "{m}"
            );
        }
        // Peer TLS alone (clients plain) is no secret kept from the peers: taken as before.
        assert!(validated(tls(None, None, Some("p")), None).is_ok());
    }

    #[test]
    fn tls_needs_server_and_client_secrets_together_and_secret_names() {
        let mut s = spec(3, "3.6.15");
        s.tls = Some(tls(Some("srv"), Some("cli"), Some("peer")));
        let d = validate(&cluster(s.clone())).unwrap();
        assert_eq!(
            d.tls.client,
            Some(ClientTls {
                server_secret: "srv".into(),
                client_secret: "cli".into()
            })
        );
        assert_eq!(d.tls.peer_secret.as_deref(), Some("peer"));
        assert_eq!(
            (d.tls.client_scheme(), d.tls.peer_scheme()),
            ("https", "https")
        );
        s.tls = Some(tls(None, None, Some("peer")));
        let d = validate(&cluster(s.clone())).unwrap();
        assert_eq!(
            (d.tls.client_scheme(), d.tls.peer_scheme()),
            ("http", "https")
        );
        s.tls = Some(mode(Some("none"), None));
        assert_eq!(validate(&cluster(s.clone())).unwrap().tls, Tls::default());
        for (t, field) in [
            (tls(Some("srv"), None, None), "spec.tls.clientSecret"),
            (tls(None, Some("cli"), None), "spec.tls.serverSecret"),
            (tls(Some("Srv"), Some("cli"), None), "spec.tls.serverSecret"),
            (
                tls(Some("srv"), Some("cli-"), None),
                "spec.tls.clientSecret",
            ),
            (tls(None, None, Some("")), "spec.tls.peerSecret"),
        ] {
            s.tls = Some(t.clone());
            let e = validate(&cluster(s.clone())).unwrap_err();
            assert_eq!(e.field, field, "{t:?}: {e:?}");
        }
    }

    #[test]
    fn tls_modes_managed_secrets_and_none_and_a_new_cluster_without_one_is_managed() {
        let with = |t: Option<crate::api::TlsSpec>| {
            let mut s = spec(3, "3.6.15");
            s.tls = t;
            validate(&cluster(s))
        };
        // A new cluster (no status) without a mode is born with managed TLS.
        for t in [None, Some(mode(None, None))] {
            let d = with(t.clone()).unwrap();
            assert_eq!(
                (
                    d.tls.clone(),
                    d.pki.is_some(),
                    d.insecure_asked,
                    d.tls_origin
                ),
                (
                    crate::objects::managed_tls("demo"),
                    true,
                    false,
                    TlsOrigin::Birth
                ),
                "{t:?}"
            );
        }
        // ... with the lifetime it names.
        let d = with(Some(mode(None, Some("1h")))).unwrap();
        assert_eq!(d.pki.unwrap().leaf_lifetime_seconds, 3600);
        let d = with(Some(tls(Some("srv"), Some("cli"), Some("peer")))).unwrap();
        assert_eq!((d.tls.client_scheme(), d.pki.clone()), ("https", None));
        assert_eq!(d.tls_origin, TlsOrigin::Spec);
        // Managed: client and peer TLS with the engine's own Secrets.
        let d = with(Some(mode(Some("managed"), None))).unwrap();
        assert_eq!(d.tls, crate::objects::managed_tls("demo"));
        assert_eq!(
            d.tls.client.as_ref().unwrap().server_secret,
            "demo-tls-server"
        );
        assert_eq!(d.tls.peer_secret.as_deref(), Some("demo-tls-peer"));
        assert_eq!(
            d.pki.unwrap().leaf_lifetime_seconds,
            crate::model::pki::DEFAULT_LEAF_LIFETIME_SECONDS
        );
        let d = with(Some(mode(Some("managed"), Some("5m")))).unwrap();
        assert_eq!(d.pki.unwrap().leaf_lifetime_seconds, 300);
        // None asked for: plain http, said explicitly.
        let d = with(Some(mode(Some("none"), None))).unwrap();
        assert_eq!((d.tls.client_scheme(), d.insecure_asked), ("http", true));
        let secrets = tls(Some("srv"), Some("cli"), Some("p"));
        for (t, field, says) in [
            (
                crate::api::TlsSpec {
                    mode: Some("managed".into()),
                    ..secrets.clone()
                },
                "spec.tls.mode",
                "remove serverSecret",
            ),
            (
                crate::api::TlsSpec {
                    mode: Some("none".into()),
                    ..secrets.clone()
                },
                "spec.tls.mode",
                "plain http",
            ),
            (
                mode(Some("secrets"), None),
                "spec.tls.mode",
                "needs serverSecret",
            ),
            (
                mode(Some("auto"), None),
                "spec.tls.mode",
                "managed, certManager, secrets or none",
            ),
            (
                mode(Some("managed"), Some("4m")),
                "spec.tls.certificateLifetime",
                "shorter than 5m",
            ),
            (
                mode(Some("managed"), Some("soon")),
                "spec.tls.certificateLifetime",
                "not a duration",
            ),
            (
                crate::api::TlsSpec {
                    certificate_lifetime: Some("1h".into()),
                    ..secrets.clone()
                },
                "spec.tls.certificateLifetime",
                "only to modes managed and certManager",
            ),
        ] {
            let e = with(Some(t.clone())).unwrap_err();
            assert_eq!(e.field, field, "{t:?}: {e:?}");
            assert!(e.message.contains(says), "{t:?}: {e:?}");
        }
    }

    #[test]
    fn cert_manager_mode_names_a_ca_issuer_and_keeps_to_it() {
        let issuer = |name: &str, kind: Option<&str>| crate::api::IssuerRef {
            name: name.into(),
            kind: kind.map(Into::into),
            group: None,
        };
        let with = |t: crate::api::TlsSpec, status: Option<crate::api::EtcdClusterStatus>| {
            let mut c = cluster({
                let mut s = spec(3, "3.6.15");
                s.tls = Some(t);
                s
            });
            c.status = status;
            validate(&c)
        };
        let cm = |r: Option<crate::api::IssuerRef>, lifetime: Option<&str>| crate::api::TlsSpec {
            mode: Some("certManager".into()),
            issuer_ref: r,
            certificate_lifetime: lifetime.map(Into::into),
            ..Default::default()
        };
        // managed mode's Secret names, cert-manager's issuer, no CA of the engine's
        let d = with(cm(Some(issuer("etcd-ca", None)), None), None).unwrap();
        assert_eq!(d.tls, crate::objects::managed_tls("demo"));
        assert_eq!(d.pki, None);
        let m = d.cert_manager.unwrap();
        assert_eq!(
            (
                m.issuer_name.as_str(),
                m.issuer_kind.as_str(),
                m.issuer_group.as_str()
            ),
            ("etcd-ca", "Issuer", "cert-manager.io")
        );
        assert_eq!(m.lifetime_seconds, None);
        // an issuerRef alone means certManager; a ClusterIssuer and a lifetime are kept
        let alone = crate::api::TlsSpec {
            issuer_ref: Some(issuer("ca", Some("ClusterIssuer"))),
            certificate_lifetime: Some("24h".into()),
            ..Default::default()
        };
        let m = with(alone, None).unwrap().cert_manager.unwrap();
        assert_eq!(
            (m.issuer_kind.as_str(), m.lifetime_seconds),
            ("ClusterIssuer", Some(86_400))
        );
        // refused, naming the field
        let mut secrets = cm(Some(issuer("ca", None)), None);
        secrets.server_secret = Some("srv".into());
        let managed_with_issuer = crate::api::TlsSpec {
            mode: Some("managed".into()),
            issuer_ref: Some(issuer("ca", None)),
            ..Default::default()
        };
        for (t, field, says) in [
            (cm(None, None), "spec.tls.issuerRef", "is missing"),
            (
                cm(Some(issuer("Bad_Name", None)), None),
                "spec.tls.issuerRef.name",
                "not an object name",
            ),
            (
                cm(Some(issuer("ca", Some("Vault"))), None),
                "spec.tls.issuerRef.kind",
                "Issuer or ClusterIssuer",
            ),
            (
                cm(Some(issuer("ca", None)), Some("30m")),
                "spec.tls.certificateLifetime",
                "at least 1h",
            ),
            (
                secrets,
                "spec.tls.mode",
                "certManager issues its own certificates",
            ),
            (
                managed_with_issuer,
                "spec.tls.issuerRef",
                "set mode: certManager",
            ),
        ] {
            let e = with(t.clone(), None).unwrap_err();
            assert_eq!(e.field, field, "{t:?}: {e:?}");
            assert!(e.message.contains(says), "{t:?}: {e:?}");
        }
        // A running cluster does not move between managed and certManager: the members trust the
        // CA they started with.
        let e = with(
            cm(Some(issuer("ca", None)), None),
            Some(recorded("managed")),
        )
        .unwrap_err();
        assert_eq!(e.field, "spec.tls.mode");
        assert!(e.message.contains("runs TLS mode managed"), "{e:?}");
        let back = crate::api::TlsSpec {
            mode: Some("managed".into()),
            ..Default::default()
        };
        let e = with(back, Some(recorded("certManager"))).unwrap_err();
        assert!(e.message.contains("set mode: certManager again"), "{e:?}");
        // ... and one that records certManager keeps it
        assert!(
            with(
                cm(Some(issuer("ca", None)), None),
                Some(recorded("certManager"))
            )
            .is_ok()
        );
    }

    fn status_with(
        f: impl FnOnce(&mut crate::api::EtcdClusterStatus),
    ) -> crate::api::EtcdClusterStatus {
        let mut st = crate::api::EtcdClusterStatus::default();
        f(&mut st);
        st
    }

    fn recorded(mode: &str) -> crate::api::EtcdClusterStatus {
        status_with(|st| {
            st.tls = Some(crate::api::TlsStatus {
                mode: mode.into(),
                certificates: Vec::new(),
            })
        })
    }

    #[test]
    fn a_missing_mode_is_decided_at_birth_and_read_back_from_status_afterwards() {
        use TlsMode::{Managed, None as Plain};
        // Born now: nothing recorded, nothing shows a member ever ran.
        assert_eq!(unset_tls_mode(None, false), (Managed, TlsOrigin::Birth));
        // A status without members (e.g. the invalid spec of a new cluster reported) is no birth.
        let reported = status_with(|st| st.message = Some("spec.replicas: …".into()));
        assert_eq!(
            unset_tls_mode(Some(&reported), false),
            (Managed, TlsOrigin::Birth)
        );
        // Afterwards: what status recorded.
        assert_eq!(
            unset_tls_mode(Some(&recorded("managed")), false),
            (Managed, TlsOrigin::Recorded)
        );
        assert_eq!(
            unset_tls_mode(Some(&recorded("none")), false),
            (Plain, TlsOrigin::Recorded)
        );
        // Born before the record existed: status shows the cluster ran, and it keeps plain http.
        let ran = status_with(|st| st.cluster_id = Some("8e9e05c52164694d".into()));
        assert_eq!(
            unset_tls_mode(Some(&ran), false),
            (Plain, TlsOrigin::BornBefore)
        );
        let members = status_with(|st| st.members = vec![Default::default()]);
        assert_eq!(
            unset_tls_mode(Some(&members), false),
            (Plain, TlsOrigin::BornBefore)
        );
        // A `secrets` record whose Secrets left the spec is no birth decision.
        assert_eq!(
            unset_tls_mode(Some(&recorded("secrets")), false),
            (Plain, TlsOrigin::BornBefore)
        );
        // Adopting: the new members join old ones that speak plain http.
        assert_eq!(unset_tls_mode(None, true), (Plain, TlsOrigin::Adopting));
    }

    #[test]
    fn an_old_cluster_without_a_mode_keeps_plain_http_and_a_recorded_birth_stays_managed() {
        let with_status = |st: crate::api::EtcdClusterStatus, t: Option<crate::api::TlsSpec>| {
            let mut s = spec(3, "3.6.15");
            s.tls = t;
            let mut c = cluster(s);
            c.status = Some(st);
            validate(&c).unwrap()
        };
        let old = status_with(|st| st.cluster_id = Some("8e9e05c52164694d".into()));
        let d = with_status(old.clone(), None);
        assert_eq!((d.tls.clone(), d.pki.clone()), (Tls::default(), None));
        assert!(!d.insecure_asked, "nobody asked for plain http");
        // Its next pass records `none`, and that holds from then on.
        let d = with_status(recorded("none"), None);
        assert_eq!(
            (d.tls.clone(), d.tls_origin),
            (Tls::default(), TlsOrigin::Recorded)
        );
        let d = with_status(recorded("managed"), None);
        assert_eq!(d.tls, crate::objects::managed_tls("demo"));
        assert!(d.pki.is_some());
        // The spec's own mode wins over any record (a change is then for `keep_tls` to refuse).
        let d = with_status(recorded("none"), Some(mode(Some("managed"), None)));
        assert_eq!((d.tls_origin, d.pki.is_some()), (TlsOrigin::Spec, true));
        // The running plain cluster keeps what it runs, unrefused: no switch.
        let plain = WorkloadView {
            tls: Some(Tls::default()),
            ..Default::default()
        };
        let d = keep_immutable(with_status(old, None), Some(&plain));
        assert!(d.refused.is_empty(), "{:?}", d.refused);
        assert_eq!(d.tls, Tls::default());
        // A certificate lifetime without a mode on an old plain cluster names the fix.
        let e = {
            let mut s = spec(3, "3.6.15");
            s.tls = Some(mode(None, Some("1h")));
            let mut c = cluster(s);
            c.status = Some(recorded("none"));
            validate(&c).unwrap_err()
        };
        assert_eq!(e.field, "spec.tls.certificateLifetime");
    }

    #[test]
    fn a_birth_default_meeting_a_statefulset_follows_it_without_a_refusal() {
        // The status was lost (the manifest restored by a backup tool) but the members run.
        let mut s = spec(3, "3.6.15");
        s.tls = None;
        let born = validate(&cluster(s)).unwrap();
        assert_eq!(born.tls_origin, TlsOrigin::Birth);
        let plain = WorkloadView {
            tls: Some(Tls::default()),
            ..Default::default()
        };
        let d = keep_immutable(born.clone(), Some(&plain));
        assert!(d.refused.is_empty(), "{:?}", d.refused);
        assert_eq!((d.tls, d.pki), (Tls::default(), None));
        let byo = WorkloadView {
            tls: Some(Tls {
                client: Some(ClientTls {
                    server_secret: "srv".into(),
                    client_secret: "cli".into(),
                }),
                peer_secret: None,
            }),
            ..Default::default()
        };
        let d = keep_immutable(born.clone(), Some(&byo));
        assert!(d.refused.is_empty(), "{:?}", d.refused);
        assert_eq!(
            (d.tls.client_scheme(), d.tls.peer_scheme(), d.pki),
            ("https", "http", None)
        );
        // No StatefulSet: born managed.
        let d = keep_immutable(born, None);
        assert_eq!(d.tls, crate::objects::managed_tls("demo"));
        assert!(d.pki.is_some());
    }
}
