//! `spec.adopt` validated (`Adoption`), and what a pass sees of the old cluster's Kubernetes
//! objects (`AdoptionView`). Pure.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use serde::Serialize;

use super::validate::{InvalidSpec, invalid, validate_dns_subdomain, validate_secret_name};

/// The adoption the spec asks for (`spec.adopt`, validated).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Adoption {
    /// The old members' StatefulSet (`None`: the old members run elsewhere; they are removed
    /// from etcd and nothing else is touched).
    pub statefulset: Option<String>,
    /// The old members' client URLs.
    pub endpoints: Vec<String>,
    /// The cluster id the survey found.
    pub cluster_id: u64,
    /// Secret of the client certificate the old members want.
    pub tls_secret: Option<String>,
    /// The old Service re-pointed to the engine's members before the last old member goes.
    pub take_over_service: Option<String>,
    pub abort: bool,
}

impl Adoption {
    /// The ordinal of old member `name` in the old StatefulSet (`<statefulset>-<n>`), parsed
    /// as a number.
    pub fn old_ordinal(&self, name: &str) -> Option<u32> {
        let rest = name
            .strip_prefix(self.statefulset.as_deref()?)?
            .strip_prefix('-')?;
        if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        rest.parse().ok()
    }
}

/// What a pass sees of the old cluster's Kubernetes objects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AdoptionView {
    /// The old StatefulSet's `spec.replicas` (`None`: it does not exist).
    pub old_replicas: Option<u32>,
    /// The Service to take over already selects the engine's members.
    pub service_taken: bool,
    /// The Service to take over exists.
    pub service_found: bool,
    /// Why the old members are not dialed at all (`refusal`, decided before any of them is):
    /// the hold's message, which names the field and the fix.
    pub refused: Option<String>,
}

/// What `refusal` needs to know of the cluster's namespace and of the driver, read before any
/// old member is dialed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Confinement {
    /// The driver dials endpoints outside the namespace too (`--allow-foreign-adopt-endpoints`,
    /// an operator's or a CLI pass's: off by default).
    pub foreign_allowed: bool,
    /// The namespace's Services named by the endpoints' hosts, by name: `true` when it sends
    /// only to pods of the namespace (a selector, not `ExternalName`); absent: not found.
    pub services: BTreeMap<String, bool>,
    /// The IPs of the namespace's pods (host-network pods left out: theirs is the node's).
    pub pod_ips: BTreeSet<IpAddr>,
    /// Other EtcdClusters whose status reports `spec.adopt.clusterId`: `namespace/name`.
    pub claimed_by: Vec<String>,
    /// The engine sends the `spec.auth` user's password to the members it dials.
    pub credentials: bool,
}

/// Where an endpoint's host points, read from the URL alone (`endpoint_host`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Host {
    /// `<svc>.<ns>.svc[.<domain>]` or `<pod>.<svc>.<ns>.svc[.<domain>]` with `<ns>` the
    /// cluster's namespace: the Service `svc` decides where it resolves.
    Service(String),
    /// An IP address: a pod of the namespace, or not.
    Ip(IpAddr),
    /// A Service name of namespace `ns`, not the cluster's.
    OtherNamespace(String),
    /// A name the resolver completes with its own search path (`etcd-0.etcd`): the operator's
    /// namespace when it runs in a pod, so another one than the cluster's, or any namespace
    /// (`etcd-0.etcd.other` under `svc.<domain>`). Refused, not qualified with the cluster's
    /// namespace: the URL is what the old members advertise and what their certificates
    /// cover, so the engine dials it as written or not at all.
    Short,
    /// Any other name (outside the cluster's DNS, or a `.pod` name that encodes any IP).
    External,
}

/// The `ndots` of a pod's resolv.conf in Kubernetes: a name with fewer dots is tried under the
/// search path first.
const NDOTS: usize = 5;

/// The scheme, host and whether the URL is well-formed enough to tell: `None` for a URL with
/// user information (`http://a@b`), no host, or a scheme other than http and https.
fn url_parts(url: &str) -> Option<(&str, String)> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.contains('@') {
        return None;
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split_once(']')?.0,
        None => authority.split(':').next()?,
    };
    (!host.is_empty()).then(|| (scheme, host.trim_end_matches('.').to_ascii_lowercase()))
}

/// Where the host of client URL `url` points, for a cluster in namespace `ns` of cluster
/// domain `domain`. `None`: not a URL the engine dials.
pub fn endpoint_host(url: &str, ns: &str, domain: &str) -> Option<Host> {
    let (_, host) = url_parts(url)?;
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(Host::Ip(ip));
    }
    let labels: Vec<&str> = host.split('.').collect();
    let domain: Vec<&str> = domain.trim_end_matches('.').split('.').collect();
    // `<prefix>.<namespace>.svc`, with the cluster domain after it or nothing.
    let before_domain = match labels.len().checked_sub(domain.len()) {
        Some(k) if labels[k..].iter().copied().eq(domain.iter().copied()) => &labels[..k],
        _ => &labels[..],
    };
    let Some((&"svc", rest)) = before_domain.split_last() else {
        // No `.svc`: Kubernetes' resolver (ndots:5) first tries a name of fewer than five
        // dots under its own search path (`etcd.other` as `etcd.other.svc.<domain>`).
        let short = before_domain.len() == labels.len() && labels.len() <= NDOTS;
        return Some(if short { Host::Short } else { Host::External });
    };
    let Some((&namespace, prefix)) = rest.split_last() else {
        return Some(Host::External);
    };
    Some(match prefix {
        [svc] | [_, svc] if namespace == ns => Host::Service((*svc).to_string()),
        [_] | [_, _] => Host::OtherNamespace(namespace.to_string()),
        _ => Host::External,
    })
}

/// The Services the endpoints' hosts name in namespace `ns` (what `observe` reads for
/// `refusal`).
pub fn services_named(a: &Adoption, ns: &str, domain: &str) -> BTreeSet<String> {
    a.endpoints
        .iter()
        .filter_map(|e| match endpoint_host(e, ns, domain)? {
            Host::Service(s) => Some(s),
            _ => None,
        })
        .collect()
}

/// Whether an endpoint's host is an IP (`observe` then reads the namespace's pods).
pub fn names_an_ip(a: &Adoption) -> bool {
    a.endpoints
        .iter()
        .any(|e| matches!(endpoint_host(e, "", ""), Some(Host::Ip(_))))
}

/// Why endpoint `url` of a cluster in namespace `ns` is not dialed, when it is not (`None`:
/// its host is a pod of the namespace).
fn endpoint_refusal(url: &str, ns: &str, domain: &str, c: &Confinement) -> Option<String> {
    let fix = format!(
        "name the old members as <pod>.<service>.{ns}.svc, or by their pod IPs, or let the          driver adopt elsewhere with --allow-foreign-adopt-endpoints"
    );
    let why = match endpoint_host(url, ns, domain) {
        None => "is not a client URL the engine dials (http:// or https://, no user@)".to_string(),
        Some(Host::Service(svc)) => match c.services.get(&svc) {
            Some(true) => return None,
            Some(false) => format!(
                "resolves through Service {ns}/{svc}, which has no selector or is ExternalName, so                  it may point outside the namespace"
            ),
            None => format!("resolves through Service {ns}/{svc}, which does not exist"),
        },
        Some(Host::Ip(ip)) if c.pod_ips.contains(&ip) => return None,
        Some(Host::Ip(_)) => format!("is not the IP of a pod of namespace {ns}"),
        Some(Host::OtherNamespace(other)) => format!("names namespace {other}"),
        Some(Host::Short) => "is not fully qualified: a resolver completes it under its own \
             search path (an operator's namespace, or any other)"
            .to_string(),
        Some(Host::External) => format!("is not a name of namespace {ns}"),
    };
    Some(format!(
        "spec.adopt.endpoints: {url} {why}; an EtcdCluster adopts only members in its own          namespace: {fix}"
    ))
}

/// Why each of `endpoints` is refused for a cluster in namespace `ns` from its URL alone (its
/// host is no name or IP of the namespace), before any Service or pod is read: what `kubectl
/// etcd adopt` says before it writes `spec.adopt`.
pub fn foreign_endpoints(endpoints: &[String], ns: &str, domain: &str) -> Vec<String> {
    endpoints
        .iter()
        .filter(|e| {
            !matches!(
                endpoint_host(e, ns, domain),
                Some(Host::Service(_) | Host::Ip(_))
            )
        })
        .filter_map(|e| endpoint_refusal(e, ns, domain, &Confinement::default()))
        .collect()
}

/// Why the adoption of `a` by a cluster in namespace `ns` (cluster domain `domain`) does not
/// dial the old members at all, when it does not: an endpoint outside the namespace (unless the
/// driver allows it), the `spec.auth` password to an `http://` URL, or a cluster id another
/// EtcdCluster already reports. The message names the field and the fix, and never a cluster id
/// a member answered with.
pub fn refusal(a: &Adoption, ns: &str, domain: &str, c: &Confinement) -> Option<String> {
    if !c.foreign_allowed
        && let Some(why) = a
            .endpoints
            .iter()
            .find_map(|e| endpoint_refusal(e, ns, domain, c))
    {
        return Some(why);
    }
    if c.credentials
        && let Some(plain) = a.endpoints.iter().find(|e| !e.starts_with("https://"))
    {
        return Some(format!(
            "spec.adopt.endpoints: {plain} is plain http, and the engine would send the spec.auth              user's password over it in clear: adopt over https (spec.adopt.tlsSecret), or              remove spec.auth"
        ));
    }
    if let Some(other) = c.claimed_by.first() {
        let who = match other.split_once('/') {
            Some((other_ns, name)) if other_ns == ns => format!("EtcdCluster {ns}/{name}"),
            _ => "an EtcdCluster of another namespace".to_string(),
        };
        return Some(format!(
            "spec.adopt.clusterId: {who} already manages cluster {}; a cluster is adopted once:              remove spec.adopt",
            super::fmt_id(a.cluster_id)
        ));
    }
    None
}

/// `spec.adopt` → `Adoption`.
pub fn validate_adopt(a: &crate::api::AdoptSpec) -> Result<Adoption, InvalidSpec> {
    let statefulset = a
        .stateful_set
        .as_deref()
        .map(|s| validate_dns_subdomain("spec.adopt.statefulSet", "StatefulSet", s))
        .transpose()?;
    if a.endpoints.is_empty() {
        return Err(invalid(
            "spec.adopt.endpoints",
            "names no old member; `kubectl etcd adopt` writes the client URLs it surveyed",
        ));
    }
    for e in &a.endpoints {
        let ok = (e.starts_with("http://") || e.starts_with("https://"))
            && !e.contains(char::is_whitespace);
        if !ok {
            return Err(invalid(
                "spec.adopt.endpoints",
                format!("{e:?} is not a client URL; use e.g. http://etcd-0.etcd.ns.svc:2379"),
            ));
        }
    }
    let cluster_id = u64::from_str_radix(&a.cluster_id, 16).map_err(|_| {
        invalid(
            "spec.adopt.clusterId",
            format!("{:?} is not a cluster id (16 hex digits)", a.cluster_id),
        )
    })?;
    Ok(Adoption {
        statefulset,
        endpoints: a.endpoints.clone(),
        cluster_id,
        tls_secret: a
            .tls_secret
            .as_deref()
            .map(|s| validate_secret_name("spec.adopt.tlsSecret", s))
            .transpose()?,
        take_over_service: a
            .take_over_service
            .as_deref()
            .map(|s| validate_dns_subdomain("spec.adopt.takeOverService", "Service", s))
            .transpose()?,
        abort: a.abort,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: &str = "s1-tenant";
    const DOMAIN: &str = "cluster.local";

    fn adoption(endpoints: &[&str]) -> Adoption {
        Adoption {
            statefulset: Some("etcd".into()),
            endpoints: endpoints.iter().map(|e| e.to_string()).collect(),
            cluster_id: 0xabc,
            tls_secret: None,
            take_over_service: None,
            abort: false,
        }
    }

    /// The namespace of `NS`: Service `etcd` selects pods, `outside` is ExternalName, one pod
    /// at 10.0.0.7.
    fn namespace() -> Confinement {
        Confinement {
            services: [("etcd".to_string(), true), ("outside".to_string(), false)].into(),
            pod_ips: ["10.0.0.7".parse().unwrap(), "fd00::7".parse().unwrap()].into(),
            ..Default::default()
        }
    }

    #[test]
    fn an_endpoints_host_is_read_from_the_url_alone() {
        let svc = |s: &str| Some(Host::Service(s.into()));
        let other = |s: &str| Some(Host::OtherNamespace(s.into()));
        for (url, want) in [
            (
                "http://etcd-0.etcd.s1-tenant.svc.cluster.local:2379",
                svc("etcd"),
            ),
            ("http://etcd-0.etcd.s1-tenant.svc:2379", svc("etcd")),
            (
                "https://etcd.s1-tenant.svc.cluster.local:2379/",
                svc("etcd"),
            ),
            (
                "http://ETCD-0.Etcd.S1-Tenant.SVC.cluster.local.:2379",
                svc("etcd"),
            ),
            (
                "http://etcd-0.etcd.s1-victim.svc.cluster.local:2379",
                other("s1-victim"),
            ),
            ("http://etcd.s1-victim.svc:2379", other("s1-victim")),
            ("http://etcd-0.etcd:2379", Some(Host::Short)),
            ("http://etcd-0:2379", Some(Host::Short)),
            ("http://etcd-0.etcd.s1-victim:2379", Some(Host::Short)),
            // Another cluster domain is any name on the internet.
            (
                "http://etcd-0.etcd.s1-tenant.svc.evil.example.com:2379",
                Some(Host::External),
            ),
            (
                "http://10-0-0-9.s1-tenant.pod.cluster.local:2379",
                Some(Host::External),
            ),
            (
                "http://a.b.etcd.s1-tenant.svc.cluster.local:2379",
                Some(Host::External),
            ),
            (
                "http://s1-tenant.svc.cluster.local:2379",
                Some(Host::External),
            ),
            (
                "http://10.0.0.7:2379",
                Some(Host::Ip("10.0.0.7".parse().unwrap())),
            ),
            (
                "http://[fd00::7]:2379",
                Some(Host::Ip("fd00::7".parse().unwrap())),
            ),
            // User information hides the host from a reader; not a URL the engine dials.
            ("http://etcd.s1-tenant.svc@10.9.9.9:2379", None),
            ("unix:///run/etcd.sock", None),
            ("http://:2379", None),
        ] {
            assert_eq!(endpoint_host(url, NS, DOMAIN), want, "{url}");
        }
    }

    #[test]
    fn only_members_of_the_clusters_own_namespace_are_dialed() {
        let n = namespace();
        for (url, refused_with) in [
            ("http://etcd-0.etcd.s1-tenant.svc.cluster.local:2379", None),
            ("http://etcd-1.etcd.s1-tenant.svc:2379", None),
            ("http://10.0.0.7:2379", None),
            ("https://[fd00::7]:2379", None),
            (
                "http://etcd-0.etcd.s1-victim.svc.cluster.local:2379",
                Some("names namespace s1-victim"),
            ),
            ("http://etcd-0.etcd:2379", Some("is not fully qualified")),
            (
                "http://10.0.0.8:2379",
                Some("is not the IP of a pod of namespace s1-tenant"),
            ),
            (
                "http://x.outside.s1-tenant.svc:2379",
                Some("Service s1-tenant/outside, which has no selector or is ExternalName"),
            ),
            (
                "http://x.gone.s1-tenant.svc:2379",
                Some("Service s1-tenant/gone, which does not exist"),
            ),
            (
                "http://etcd.example.com:2379",
                Some("is not fully qualified"),
            ),
            (
                "http://a.b.c.d.e.example.com:2379",
                Some("is not a name of namespace s1-tenant"),
            ),
            (
                "http://u@10.0.0.7:2379",
                Some("is not a client URL the engine dials"),
            ),
        ] {
            let got = refusal(&adoption(&[url]), NS, DOMAIN, &n);
            match refused_with {
                None => assert_eq!(got, None, "{url}"),
                Some(why) => {
                    let got = got.unwrap_or_else(|| panic!("{url} is dialed"));
                    assert!(got.contains(why), "{url}: {got}");
                    assert!(got.starts_with("spec.adopt.endpoints: "), "{got}");
                    assert!(got.contains("--allow-foreign-adopt-endpoints"), "{got}");
                    assert!(got.contains("<pod>.<service>.s1-tenant.svc"), "{got}");
                }
            }
        }
    }

    #[test]
    fn the_adopt_verb_refuses_from_the_url_alone_what_no_pass_would_dial() {
        let urls: Vec<String> = [
            "http://etcd-0.etcd.s1-tenant.svc.cluster.local:2379",
            "http://10.9.9.9:2379",
            "http://etcd-1.etcd:2379",
            "http://etcd-2.etcd.s1-victim.svc:2379",
        ]
        .map(String::from)
        .into();
        let why = foreign_endpoints(&urls, NS, DOMAIN);
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(
            why[0].contains("etcd-1.etcd:2379 is not fully qualified"),
            "{why:?}"
        );
        assert!(why[1].contains("names namespace s1-victim"), "{why:?}");
    }

    #[test]
    fn one_foreign_endpoint_refuses_them_all() {
        let a = adoption(&[
            "http://etcd-0.etcd.s1-tenant.svc.cluster.local:2379",
            "http://etcd-1.etcd.s1-victim.svc.cluster.local:2379",
        ]);
        let why = refusal(&a, NS, DOMAIN, &namespace()).unwrap();
        assert!(why.contains("etcd-1.etcd.s1-victim"), "{why}");
    }

    #[test]
    fn the_driver_may_allow_foreign_endpoints() {
        let a = adoption(&[
            "http://etcd-0.etcd.s1-victim.svc.cluster.local:2379",
            "http://etcd-0.etcd:2379",
            "http://192.168.1.5:2379",
        ]);
        let allowed = Confinement {
            foreign_allowed: true,
            ..namespace()
        };
        assert_eq!(refusal(&a, NS, DOMAIN, &allowed), None);
        assert!(refusal(&a, NS, DOMAIN, &namespace()).is_some());
    }

    #[test]
    fn the_password_never_goes_to_a_plain_http_url() {
        for foreign_allowed in [false, true] {
            let c = Confinement {
                credentials: true,
                foreign_allowed,
                ..namespace()
            };
            let plain = adoption(&["http://etcd-0.etcd.s1-tenant.svc:2379"]);
            let why = refusal(&plain, NS, DOMAIN, &c).unwrap();
            assert!(why.contains("plain http"), "{why}");
            assert!(why.contains("spec.auth"), "{why}");
            assert!(why.contains("spec.adopt.tlsSecret"), "{why}");
            let tls = adoption(&["https://etcd-0.etcd.s1-tenant.svc:2379"]);
            assert_eq!(refusal(&tls, NS, DOMAIN, &c), None);
        }
        // Without spec.auth no password is sent: plain http is the old cluster's choice.
        let plain = adoption(&["http://etcd-0.etcd.s1-tenant.svc:2379"]);
        assert_eq!(refusal(&plain, NS, DOMAIN, &namespace()), None);
    }

    #[test]
    fn a_cluster_id_another_etcdcluster_reports_is_not_adopted_again() {
        let a = adoption(&["http://etcd-0.etcd.s1-tenant.svc:2379"]);
        for (claimed_by, names) in [
            ("s1-tenant/demo", "EtcdCluster s1-tenant/demo"),
            ("s1-victim/prod", "an EtcdCluster of another namespace"),
        ] {
            let c = Confinement {
                claimed_by: vec![claimed_by.into()],
                ..namespace()
            };
            let why = refusal(&a, NS, DOMAIN, &c).unwrap();
            assert!(why.starts_with("spec.adopt.clusterId: "), "{why}");
            assert!(why.contains(names), "{why}");
            assert!(
                !why.contains("s1-victim"),
                "another namespace is not named: {why}"
            );
            assert!(why.contains("0000000000000abc"), "{why}");
        }
    }
}
