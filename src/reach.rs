//! Reaching a cluster's members: dialing one (straight to its pod, or through a port-forward),
//! with the client TLS of `spec.tls` and the `spec.auth` user's token, both read from their
//! Secrets at each connection. Below both the engine (observe, act) and `backup` (snapshots):
//! it knows `model` (what to dial), `objects` (names, ports, Secret keys) and `etcd` (the
//! client), and nothing of the engine.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};

use crate::etcd::{EtcdClient, EtcdError};
use crate::model::Desired;
use crate::objects;

/// How long dialing one member may take before the pass counts it as not answering: the
/// port-forward's stream and the TLS handshake (managed TLS is the default) both count. On a
/// loaded testbed (load average ~60, debug build) the port-forward alone took 2.4 s and the
/// handshake 0.6 s more, so 3 s lost members that answered.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How the engine reaches etcd members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dial {
    /// Through the Kubernetes API (a port-forward per connection): the CLI outside the cluster.
    PortForward,
    /// Straight to the pod IP: `operate` inside the cluster.
    Direct,
}

/// A Kubernetes client and how to dial members through it.
#[derive(Clone)]
pub struct Reach {
    pub client: Client,
    pub dial: Dial,
    pub connect_timeout: Duration,
    /// `Some`: each Secret is read once and kept for the life of this value (a one-pass verb
    /// such as `status`, which dials every member at once); `None`: read at each connection.
    secrets: Option<SecretMemo>,
}

/// Secrets as first read, by name: one read shared by every member dialed at the same time.
type SecretMemo = std::sync::Arc<
    std::sync::Mutex<
        std::collections::BTreeMap<String, std::sync::Arc<tokio::sync::OnceCell<SecretRead>>>,
    >,
>;
type SecretRead = Result<k8s_openapi::api::core::v1::Secret, String>;

impl Reach {
    pub fn new(client: Client, dial: Dial) -> Reach {
        Reach {
            client,
            dial,
            connect_timeout: CONNECT_TIMEOUT,
            secrets: None,
        }
    }

    /// This reach, reading each Secret once (for a verb that runs one pass and exits: a
    /// renewed certificate or password is used by the next command).
    pub fn reading_secrets_once(mut self) -> Reach {
        self.secrets = Some(SecretMemo::default());
        self
    }

    /// A client for the member at `ordinal`, authenticated as the `spec.auth` user while etcd's
    /// authentication is on (a learner, which issues no token, gets one from another member).
    pub async fn connect(
        &self,
        d: &Desired,
        ordinal: u32,
        pod_ip: Option<&str>,
    ) -> Result<EtcdClient, EtcdError> {
        let mut client = crate::phase::timed(
            crate::phase!("dial", member = ordinal),
            self.dial_member(d, ordinal, pod_ip),
        )
        .await?;
        if let Some(secret) = &d.auth_secret {
            let (user, password) = self.user_credentials(d, secret, ordinal).await?;
            if client.authenticate(&user, &password).await? == crate::etcd::Auth::Learner
                && let Some(token) = self.token_from_another(d, ordinal, &user, &password).await
            {
                client.use_token(token);
            }
        }
        Ok(client)
    }

    /// Member `ordinal`'s versions (`/version`), when it is dialed through a port-forward:
    /// asked beside [`connect`](Self::connect), on a port-forward of its own. `None`: dialed
    /// directly, where the client's own call costs one round trip.
    pub async fn versions_beside(
        &self,
        d: &Desired,
        ordinal: u32,
    ) -> Option<Result<crate::etcd::Versions, EtcdError>> {
        // While TLS is switched the scheme is found by dialing (`dial_member`): the client's
        // own call asks then.
        if self.dial != Dial::PortForward || d.tls_switch.is_some() {
            return None;
        }
        let asked = async {
            let tls = self.client_tls(d, ordinal).await?;
            let pods: Api<Pod> = Api::namespaced(self.client.clone(), &d.namespace);
            EtcdClient::versions_port_forward(
                pods,
                &objects::pod_name(&d.name, ordinal),
                objects::CLIENT_PORT,
                tls,
                crate::etcd::DEFAULT_RPC_TIMEOUT,
            )
            .await
        };
        Some(asked.await)
    }

    /// A client for the member at `ordinal`. While TLS is switched on or off a member serves the
    /// old scheme, both, or the new one, whichever template its pod started from
    /// (`plan::tls_switch`): https is tried first, then http. In that order whichever way the
    /// switch goes: a TLS handshake against a plain listener fails at once, while a plain
    /// HTTP/2 connection to a TLS listener opens and fails only at its first call.
    async fn dial_member(
        &self,
        d: &Desired,
        ordinal: u32,
        pod_ip: Option<&str>,
    ) -> Result<EtcdClient, EtcdError> {
        let Some(s) = &d.tls_switch else {
            return self.dial_scheme(d, ordinal, pod_ip).await;
        };
        let with = |tls: crate::model::Tls| Desired {
            tls,
            tls_switch: None,
            ..d.clone()
        };
        match self
            .dial_scheme(&with(s.secrets.clone()), ordinal, pod_ip)
            .await
        {
            Ok(c) => Ok(c),
            Err(e) => self
                .dial_scheme(&with(Default::default()), ordinal, pod_ip)
                .await
                .map_err(|_| e),
        }
    }

    /// A client for the member at `ordinal`, with the client scheme of `d.tls`.
    async fn dial_scheme(
        &self,
        d: &Desired,
        ordinal: u32,
        pod_ip: Option<&str>,
    ) -> Result<EtcdClient, EtcdError> {
        let tls = self.client_tls(d, ordinal).await?;
        let client = match (self.dial, pod_ip) {
            (Dial::Direct, Some(ip)) => {
                EtcdClient::connect_tls(
                    &objects::pod_ip_client_url(d, ip),
                    self.connect_timeout,
                    tls,
                )
                .await?
            }
            (Dial::Direct, None) => {
                EtcdClient::connect_tls(&objects::client_url(d, ordinal), self.connect_timeout, tls)
                    .await?
            }
            (Dial::PortForward, _) => {
                let pods: Api<Pod> = Api::namespaced(self.client.clone(), &d.namespace);
                EtcdClient::connect_port_forward_tls(
                    pods,
                    &objects::pod_name(&d.name, ordinal),
                    objects::CLIENT_PORT,
                    self.connect_timeout,
                    tls,
                )
                .await?
            }
        };
        Ok(client.with_rpc_timeout(crate::etcd::DEFAULT_RPC_TIMEOUT))
    }

    /// A token issued by the first other member that authenticates the user (etcd shares
    /// tokens through raft, so the learner at `ordinal` knows it).
    async fn token_from_another(
        &self,
        d: &Desired,
        ordinal: u32,
        user: &str,
        password: &str,
    ) -> Option<http::HeaderValue> {
        for other in (0..d.replicas.max(ordinal + 1)).filter(|o| *o != ordinal) {
            let Ok(mut c) = self.dial_member(d, other, None).await else {
                continue;
            };
            if let Ok(crate::etcd::Auth::Authenticated) = c.authenticate(user, password).await {
                return c.token();
            }
        }
        None
    }

    /// The Secret `name` of the cluster's namespace that spec `field` names, read now; the error
    /// names both.
    async fn named_secret(
        &self,
        d: &Desired,
        name: &str,
        field: &str,
    ) -> Result<k8s_openapi::api::core::v1::Secret, String> {
        let read = async {
            let secrets: Api<k8s_openapi::api::core::v1::Secret> =
                Api::namespaced(self.client.clone(), &d.namespace);
            let span = crate::phase!("read_secret", secret = name);
            crate::phase::timed(span, secrets.get_opt(name))
                .await
                .map_err(|e| format!("reading Secret {}/{name}: {e}", d.namespace))?
                .ok_or_else(|| format!("Secret {}/{name} ({field}) does not exist", d.namespace))
        };
        let Some(memo) = &self.secrets else {
            return read.await;
        };
        let cell = memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(format!("{}/{name}", d.namespace))
            .or_default()
            .clone();
        cell.get_or_init(|| read).await.clone()
    }

    /// The `spec.auth` user's name and password, read now (a changed password is used from the
    /// next connection on).
    async fn user_credentials(
        &self,
        d: &Desired,
        secret: &str,
        ordinal: u32,
    ) -> Result<(String, String), EtcdError> {
        let fail = |why: String| EtcdError::Authenticate {
            endpoint: objects::client_url(d, ordinal),
            user: String::new(),
            source: crate::etcd::Cause::Credentials(why),
        };
        let found = self
            .named_secret(d, secret, "spec.auth.userSecret")
            .await
            .map_err(fail)?;
        objects::user_credentials(&found)
            .map_err(|missing| fail(format!("Secret {}/{secret} {missing}", d.namespace)))
    }
}

impl Reach {
    /// The TLS to dial member `ordinal` with (`spec.tls` client TLS): the client Secret read
    /// now (a renewed certificate is used from the next connection on).
    async fn client_tls(
        &self,
        d: &Desired,
        ordinal: u32,
    ) -> Result<Option<crate::etcd::TlsDial>, EtcdError> {
        let Some(c) = &d.tls.client else {
            return Ok(None);
        };
        let endpoint = objects::client_url(d, ordinal);
        let fail = |why: String| EtcdError::Connect {
            endpoint: endpoint.clone(),
            source: crate::etcd::Cause::Tls(why),
        };
        let secret = self
            .named_secret(d, &c.client_secret, "spec.tls.clientSecret")
            .await
            .map_err(fail)?;
        let files = objects::tls_files(&secret).map_err(|missing| {
            fail(format!(
                "Secret {}/{} {missing}",
                d.namespace, c.client_secret
            ))
        })?;
        crate::etcd::TlsDial::new(
            &files.ca,
            &files.cert,
            &files.key,
            &objects::member_host(&d.name, &d.namespace, &d.cluster_domain, ordinal),
        )
        .map(Some)
        .map_err(|source| EtcdError::Connect { endpoint, source })
    }
}

/// Where a member outside the engine (an old member being adopted) is dialed: its client URL as
/// it advertises it. Inside the cluster the URL is dialed as is; through the Kubernetes API the
/// pod is the URL's first DNS label (a StatefulSet pod's hostname is its name, which is how a
/// StatefulSet's members advertise themselves: `http://etcd-0.etcd-headless.ns.svc:2379`).
pub fn pod_of_url(url: &str) -> Option<(String, u16)> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next()?;
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (authority, objects::CLIENT_PORT),
    };
    let pod = host.split('.').next()?;
    (!pod.is_empty() && !pod.bytes().all(|b| b.is_ascii_digit())).then(|| (pod.to_string(), port))
}

/// Why `url` is not dialed with the `spec.auth` user's password, when it is not: the password
/// would travel in clear (the engine's check before it dials, `model::refusal`, says the same
/// as a hold; this one holds for every caller, the adopt verb's survey too).
fn plain_credentials(d: &Desired, url: &str) -> Option<String> {
    (d.auth_secret.is_some() && !url.starts_with("https://")).then(|| {
        format!(
            "the spec.auth user's password is not sent to {url}: it is not https; adopt over \
             https (spec.adopt.tlsSecret, --tls-secret), or without spec.auth"
        )
    })
}

impl Reach {
    /// A client for a member the engine did not add, at client URL `url` (`spec.adopt.endpoints`),
    /// with the client certificate of `spec.adopt.tlsSecret` and the `spec.auth` user.
    pub async fn connect_url(&self, d: &Desired, url: &str) -> Result<EtcdClient, EtcdError> {
        if let Some(why) = plain_credentials(d, url) {
            return Err(EtcdError::Connect {
                endpoint: url.to_string(),
                source: crate::etcd::Cause::Io(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    why,
                )),
            });
        }
        let tls = self.url_tls(d, url).await?;
        let client = match self.dial {
            Dial::Direct => EtcdClient::connect_tls(url, self.connect_timeout, tls).await?,
            Dial::PortForward => {
                let Some((pod, port)) = pod_of_url(url) else {
                    return Err(EtcdError::Connect {
                        endpoint: url.to_string(),
                        source: crate::etcd::Cause::Io(std::io::Error::new(
                            std::io::ErrorKind::InvalidInput,
                            format!(
                                "{url} names no pod to port-forward to (use a URL whose host \
                                 starts with the pod's name, or run the operator in the cluster)"
                            ),
                        )),
                    });
                };
                let pods: Api<Pod> = Api::namespaced(self.client.clone(), &d.namespace);
                EtcdClient::connect_port_forward_tls(pods, &pod, port, self.connect_timeout, tls)
                    .await?
            }
        };
        let mut client = client.with_rpc_timeout(crate::etcd::DEFAULT_RPC_TIMEOUT);
        if let Some(secret) = &d.auth_secret {
            let (user, password) = self.user_credentials(d, secret, 0).await?;
            client.authenticate(&user, &password).await?;
        }
        Ok(client)
    }

    /// The TLS to dial `url` with: `spec.adopt.tlsSecret`, checked against the URL's host.
    async fn url_tls(
        &self,
        d: &Desired,
        url: &str,
    ) -> Result<Option<crate::etcd::TlsDial>, EtcdError> {
        let Some(secret) = d.adopt.as_ref().and_then(|a| a.tls_secret.as_ref()) else {
            return Ok(None);
        };
        let fail = |why: String| EtcdError::Connect {
            endpoint: url.to_string(),
            source: crate::etcd::Cause::Tls(why),
        };
        let found = self
            .named_secret(d, secret, "spec.adopt.tlsSecret")
            .await
            .map_err(fail)?;
        let files = objects::tls_files(&found)
            .map_err(|missing| fail(format!("Secret {}/{secret} {missing}", d.namespace)))?;
        let host = host_of_url(url);
        crate::etcd::TlsDial::new(&files.ca, &files.cert, &files.key, &host)
            .map(Some)
            .map_err(|source| EtcdError::Connect {
                endpoint: url.to_string(),
                source,
            })
    }
}

/// The host part of `url` (`https://demo-0.demo:2379/x` → `demo-0.demo`); `url` itself when it
/// names no scheme.
pub fn host_of_url(url: &str) -> String {
    url.split_once("://")
        .map_or(url, |(_, r)| r)
        .split(['/', ':'])
        .next()
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_old_members_pod_is_the_first_label_of_its_client_url() {
        use super::pod_of_url;
        assert_eq!(
            pod_of_url("http://etcd-2.etcd-headless.team.svc.cluster.local:2379"),
            Some(("etcd-2".into(), 2379))
        );
        assert_eq!(
            pod_of_url("https://etcd-0.etcd:12379/"),
            Some(("etcd-0".into(), 12379))
        );
        assert_eq!(pod_of_url("http://etcd-1"), Some(("etcd-1".into(), 2379)));
        // An IP names no pod.
        assert_eq!(pod_of_url("http://10.0.0.7:2379"), None);
    }

    #[test]
    fn the_password_goes_only_to_https_urls() {
        use super::plain_credentials;
        let mut d = crate::fixtures::cluster("demo").desired();
        for url in [
            "http://etcd-0.etcd.ns.svc:2379",
            "https://etcd-0.etcd.ns.svc:2379",
        ] {
            assert_eq!(plain_credentials(&d, url), None, "no spec.auth: {url}");
        }
        d.auth_secret = Some("root".into());
        let why = plain_credentials(&d, "http://etcd-0.etcd.ns.svc:2379").unwrap();
        assert!(why.contains("not https"), "{why}");
        assert!(why.contains("spec.adopt.tlsSecret"), "{why}");
        assert_eq!(
            plain_credentials(&d, "https://etcd-0.etcd.ns.svc:2379"),
            None
        );
    }
}
