//! Managed TLS (`spec.tls.mode: managed`) as the planner sees it: what the spec asks for, what
//! the certificate Secrets hold, and when a certificate is due (pure functions of `now` and its
//! validity). Pure: no client, no clock, no crypto (`crate::pki` builds the certificates).

use serde::Serialize;

/// A leaf's lifetime when `spec.tls.certificateLifetime` names none (90 days, as ACME CAs and
/// cert-manager's default issue).
pub const DEFAULT_LEAF_LIFETIME_SECONDS: u64 = 90 * 24 * 3600;
/// The shortest leaf lifetime the spec may ask for: renewal comes at two thirds of it, and the
/// kubelet takes up to about a minute and a half to bring a renewed Secret into the pods
/// (measured in tests/e2e_tls.rs), which must happen well before the old certificate expires.
pub const MIN_LEAF_LIFETIME_SECONDS: u64 = 300;
/// The CA's lifetime (10 years): it is not renewed by the engine (a new CA needs a rotation,
/// `kubectl etcd rotate-ca`, not built yet); status shows its expiry.
pub const CA_LIFETIME_SECONDS: u64 = 10 * 365 * 24 * 3600;
/// Certificates start this long before they are issued, for clocks a little behind.
pub const BACKDATE_SECONDS: i64 = 60;

/// How long the kubelet may take to bring a changed Secret into running pods (its sync period
/// plus its cache's): the old CA leaves the trust bundle only this long after the last
/// certificate the new CA issued, so that no member still serves an old-CA certificate from its
/// files to clients that trust the new CA alone.
pub const SECRET_PROPAGATION_SECONDS: i64 = 120;

/// What `validate` makes of `spec.tls` in managed mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ManagedPki {
    /// Lifetime of the server, peer and client certificates the engine issues.
    pub leaf_lifetime_seconds: u64,
    /// `spec.tls.caGeneration` (0 without): a value above the CA Secret's asks for a rotation.
    pub ca_generation: u64,
    /// The CAs the members are to trust, as their pod template records it (`plan::pki::settle`
    /// fills it from the CA Secret once a rotation began; `None` before any: templates of
    /// clusters that never rotated stay as they were).
    pub trust: Option<String>,
}

impl Default for ManagedPki {
    fn default() -> Self {
        ManagedPki {
            leaf_lifetime_seconds: DEFAULT_LEAF_LIFETIME_SECONDS,
            ca_generation: 0,
            trust: None,
        }
    }
}

/// What `validate` makes of `spec.tls` in mode `certManager`: the issuer cert-manager signs the
/// cluster's server, peer and client certificates with (`objects::certs::cert_manager_certificate`
/// writes the `Certificate` objects; the members mount the Secrets cert-manager writes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CertManagerTls {
    pub issuer_name: String,
    /// `Issuer` or `ClusterIssuer`.
    pub issuer_kind: String,
    pub issuer_group: String,
    /// `spec.tls.certificateLifetime`; `None`: cert-manager's default (90 days).
    pub lifetime_seconds: Option<u64>,
    /// The driver may have a ClusterIssuer sign (`--allow-cluster-issuer`, `keep_issuer`): not
    /// from the spec; `false` until `observe` says.
    pub cluster_issuer_allowed: bool,
}

impl CertManagerTls {
    /// A cert-manager ClusterIssuer: one CA for every namespace that names it, so each cluster
    /// it signs for accepts every other's certificates (with etcd's authentication off, as
    /// root).
    pub fn is_cluster_issuer(&self) -> bool {
        self.issuer_kind == "ClusterIssuer" && self.issuer_group == "cert-manager.io"
    }

    /// Why this driver does not write Certificates for this issuer, when it does not.
    pub fn refusal(&self, namespace: &str, cluster: &str) -> Option<String> {
        (self.is_cluster_issuer() && !self.cluster_issuer_allowed).then(|| {
            format!(
                "spec.tls.issuerRef of {namespace}/{cluster} names ClusterIssuer {}: its CA signs \
                 for every namespace, so every cluster it signs for would accept this one's \
                 certificates and this one theirs; name an Issuer of namespace {namespace} \
                 (kind: Issuer), or, where the clusters sharing it trust each other, give \
                 --allow-cluster-issuer to the operator (`kubectl etcd operate`, or \
                 KUBECTL_ETCD_ALLOW_CLUSTER_ISSUER=true in its Deployment) and to the CLI",
                self.issuer_name
            )
        })
    }
}

/// The driver's leave for ClusterIssuers (`--allow-cluster-issuer`), applied to the spec by
/// `observe` as `keep_options` applies the option allow list. Pure.
pub fn keep_issuer(mut d: super::Desired, allowed: bool) -> super::Desired {
    if let Some(cm) = d.cert_manager.as_mut() {
        cm.cluster_issuer_allowed = allowed;
    }
    d
}

/// cert-manager refuses a certificate duration under an hour.
pub const MIN_CERT_MANAGER_LIFETIME_SECONDS: u64 = 3600;

/// The CAs of managed TLS as observed, by fingerprint (`crate::pki::fingerprint`): the one that
/// signs, the one being retired, and what each leaf's `ca.crt` holds and which CA signed it.
/// Everything a rotation's progress is derived from (nothing is kept in memory).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustView {
    /// The rotation generation the CA Secret answers (its annotation; 0 without).
    pub generation: u64,
    /// The CA that signs (the CA Secret's `ca.crt`).
    pub signing: Option<String>,
    /// The CA being retired: still trusted until every leaf is the new CA's and members
    /// restarted (the CA Secret's `retiring-ca.crt`).
    pub retiring: Option<String>,
    /// Each leaf's `ca.crt`, by role.
    pub leaves: Vec<LeafTrust>,
}

/// One leaf Secret as a rotation sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeafTrust {
    pub role: CertRole,
    /// Fingerprints of the CAs its `ca.crt` holds, in order.
    pub trusts: Vec<String>,
}

impl TrustView {
    /// The CAs every `ca.crt` is to hold: the retiring one (while it is) and the signing one.
    pub fn wanted(&self) -> Vec<String> {
        self.retiring.iter().chain(&self.signing).cloned().collect()
    }

    /// Whether the leaf of `role` holds exactly the wanted CAs (a leaf not observed does: its
    /// Secret is written with them when it is issued).
    pub fn leaf_trusts_wanted(&self, role: CertRole) -> bool {
        let mut want = self.wanted();
        want.sort();
        self.leaves.iter().filter(|l| l.role == role).all(|l| {
            let mut has = l.trusts.clone();
            has.sort();
            has.dedup();
            has == want
        })
    }

    /// The value the pod template records for the wanted CAs: changes (and so restarts the
    /// members one at a time) whenever the set of trusted CAs does.
    pub fn template_value(&self) -> String {
        let mut want = self.wanted();
        want.sort();
        want.join(",")
    }
}

/// The certificates of a cluster's TLS, one Secret each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CertRole {
    /// The per-cluster CA (managed mode only; its Secret also holds the key).
    Ca,
    /// The members' serving certificate (client port).
    Server,
    /// The members' peer certificate (server and client of raft traffic).
    Peer,
    /// The certificate the engine, the probe and backups present.
    Client,
}

impl CertRole {
    /// The leaves, in the order the engine issues them.
    pub const LEAVES: [CertRole; 3] = [CertRole::Server, CertRole::Peer, CertRole::Client];

    pub fn as_str(self) -> &'static str {
        match self {
            CertRole::Ca => "ca",
            CertRole::Server => "server",
            CertRole::Peer => "peer",
            CertRole::Client => "client",
        }
    }
}

/// The CN of the members' certificate of `role` (server or peer) of `cluster`, in modes managed
/// and certManager: "demo peer". etcd's `--peer-cert-allowed-cn` admits only the peer one on the
/// peer port, so no other certificate of the cluster's CA (the engine's, an application's from
/// `kubectl etcd certificate`) speaks raft.
pub fn member_common_name(cluster: &str, role: CertRole) -> String {
    format!("{cluster} {}", role.as_str())
}

/// The Secret of one certificate of a cluster with managed TLS: `demo-tls-ca`, `demo-tls-server`,
/// `demo-tls-peer`, `demo-tls-client` (the CA's holds its key too).
pub fn tls_secret_name(cluster: &str, role: CertRole) -> String {
    format!("{cluster}-tls-{}", role.as_str())
}

/// The TLS of a cluster with managed TLS: client and peer TLS with the engine's own Secrets.
pub fn managed_tls(cluster: &str) -> super::Tls {
    super::Tls {
        client: Some(super::ClientTls {
            server_secret: tls_secret_name(cluster, CertRole::Server),
            client_secret: tls_secret_name(cluster, CertRole::Client),
        }),
        peer_secret: Some(tls_secret_name(cluster, CertRole::Peer)),
    }
}

/// What one certificate Secret holds, as observed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SecretCert {
    Missing,
    /// The Secret exists but holds no usable certificate (why).
    Unreadable(String),
    Valid {
        /// Unix time.
        not_before: i64,
        /// Unix time.
        not_after: i64,
        /// A leaf's `ca.crt` is the CA Secret's certificate (always true for the CA itself and
        /// for bring-your-own Secrets).
        current_ca: bool,
        /// It carries the names the spec asks for (`spec.tls.serverNames`; always true but for
        /// a managed server certificate issued for other names).
        names_current: bool,
    },
}

/// One certificate of the cluster as a pass read it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CertificateView {
    pub role: CertRole,
    pub secret: String,
    pub cert: SecretCert,
}

/// A cert-manager `Certificate` of mode certManager as a pass read it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CertManagerView {
    pub role: CertRole,
    /// Its spec (`None`: the object does not exist).
    pub spec: Option<crate::api::cert_manager::CertificateSpec>,
    /// What cert-manager says of it (`objects::cert_manager::not_ready`).
    pub condition: String,
}

/// When a certificate valid from `not_before` to `not_after` is renewed: at two thirds of its
/// lifetime (cert-manager's default), leaving a third for the renewal to reach every member.
pub fn renew_at(not_before: i64, not_after: i64) -> i64 {
    not_before + (not_after - not_before).max(0) * 2 / 3
}

/// Why the engine issues a certificate now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Issue {
    /// Its Secret does not exist (a new cluster, or deleted).
    Missing,
    /// Its Secret holds no usable certificate.
    Unreadable,
    /// A leaf's CA is not the cluster's CA.
    OtherCa,
    /// Two thirds of its lifetime have passed.
    Renewal,
    /// The server certificate lacks names `spec.tls.serverNames` asks for (or has some it no
    /// longer does).
    Names,
    /// CA rotation (`spec.tls.caGeneration` raised): a new CA, the old one kept as retiring.
    Rotation,
    /// CA rotation: the leaf's `ca.crt` becomes the trust bundle (its certificate and key kept).
    Bundle,
    /// CA rotation done: the retiring CA leaves the CA Secret (and so every trust bundle).
    Retire,
    /// The engine's client certificate moves to the cluster's own CN (`plan::auth`): a
    /// cluster made when every engine's certificate was CN `root`.
    Identity,
}

/// Whether the leaf `cert` is to be issued at `now` (Unix time), and why.
pub fn leaf_due(cert: &SecretCert, now: i64) -> Option<Issue> {
    match cert {
        SecretCert::Missing => Some(Issue::Missing),
        SecretCert::Unreadable(_) => Some(Issue::Unreadable),
        SecretCert::Valid {
            current_ca: false, ..
        } => Some(Issue::OtherCa),
        SecretCert::Valid {
            names_current: false,
            ..
        } => Some(Issue::Names),
        SecretCert::Valid {
            not_before,
            not_after,
            ..
        } => (now >= renew_at(*not_before, *not_after)).then_some(Issue::Renewal),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(not_before: i64, not_after: i64) -> SecretCert {
        SecretCert::Valid {
            not_before,
            not_after,
            current_ca: true,
            names_current: true,
        }
    }

    #[test]
    fn a_leaf_is_renewed_at_two_thirds_of_its_lifetime() {
        assert_eq!(renew_at(0, 900), 600);
        assert_eq!(renew_at(1_000, 1_000 + 90 * 86_400), 1_000 + 60 * 86_400);
        let c = valid(0, 900);
        assert_eq!(leaf_due(&c, 0), None);
        assert_eq!(leaf_due(&c, 599), None);
        assert_eq!(leaf_due(&c, 600), Some(Issue::Renewal));
        assert_eq!(leaf_due(&c, 5_000), Some(Issue::Renewal), "expired");
        // A validity the wrong way round is due at once, not never.
        assert_eq!(leaf_due(&valid(900, 0), 900), Some(Issue::Renewal));
    }

    #[test]
    fn a_server_certificate_of_other_names_is_issued_again_before_its_renewal() {
        let stale = SecretCert::Valid {
            not_before: 0,
            not_after: 900,
            current_ca: true,
            names_current: false,
        };
        assert_eq!(leaf_due(&stale, 0), Some(Issue::Names));
    }

    #[test]
    fn a_missing_unreadable_or_foreign_leaf_is_issued_at_once() {
        assert_eq!(leaf_due(&SecretCert::Missing, 0), Some(Issue::Missing));
        assert_eq!(
            leaf_due(&SecretCert::Unreadable("no tls.crt".into()), 0),
            Some(Issue::Unreadable)
        );
        let foreign = SecretCert::Valid {
            not_before: 0,
            not_after: 900,
            current_ca: false,
            names_current: true,
        };
        assert_eq!(leaf_due(&foreign, 1), Some(Issue::OtherCa));
    }
}
