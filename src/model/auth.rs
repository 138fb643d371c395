//! etcd's authentication in a spec, validated once: the password user of `spec.auth`, and
//! authentication by client certificate (`spec.tls.etcdAuth`), never both.
//!
//! Pure: no client, no clock.

use super::validate::{InvalidSpec, TlsChoice, invalid, validate_secret_name};
use crate::api::EtcdClusterSpec;

/// What a spec asks of etcd's authentication.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct AuthChoice {
    /// `spec.auth.userSecret`: the Secret of a password user with the role `root`.
    pub user_secret: Option<String>,
    /// `spec.tls.etcdAuth`: the engine turns authentication on, and its client certificate is
    /// etcd's user root.
    pub etcd_auth: bool,
}

/// Checks `spec.auth` and `spec.tls.etcdAuth` of `spec`, whose TLS `validate` made `tls`.
pub(super) fn validate(spec: &EtcdClusterSpec, tls: &TlsChoice) -> Result<AuthChoice, InvalidSpec> {
    let user_secret = spec
        .auth
        .as_ref()
        .map(|a| validate_secret_name("spec.auth.userSecret", &a.user_secret))
        .transpose()?;
    let etcd_auth = spec.tls.as_ref().is_some_and(|t| t.etcd_auth);
    if etcd_auth && tls.pki.is_none() && tls.cert_manager.is_none() {
        return Err(invalid(
            "spec.tls.etcdAuth",
            "needs spec.tls.mode managed or certManager (the engine's client certificate is \
             then etcd's user root); remove etcdAuth, or use spec.auth with a password user for \
             mode secrets",
        ));
    }
    if let (Some(secret), true) = (&user_secret, etcd_auth) {
        // The engine made the certificates' passwordless root, then authenticated as the
        // Secret's password user: the two never converge on one root.
        return Err(invalid(
            "spec.auth",
            format!(
                "spec.auth.userSecret {secret} and spec.tls.etcdAuth: true cannot go together (a \
                 password root and the client certificates' root); remove spec.auth to have \
                 certificates authenticate, or spec.tls.etcdAuth to keep the password user"
            ),
        ));
    }
    Ok(AuthChoice {
        user_secret,
        etcd_auth,
    })
}

#[cfg(test)]
mod tests {
    use crate::api::{AuthSpec, EtcdCluster, EtcdClusterSpec, TlsSpec};
    use crate::model::validate;

    fn cluster(spec: EtcdClusterSpec) -> EtcdCluster {
        crate::fixtures::cluster("demo").spec(|s| *s = spec).build()
    }
    fn spec(replicas: i32, version: &str) -> EtcdClusterSpec {
        crate::fixtures::cluster("demo")
            .replicas(replicas)
            .version(version)
            .build()
            .spec
    }

    #[test]
    fn the_auth_user_secret_is_a_secret_name() {
        let mut s = spec(3, "3.6.15");
        assert_eq!(validate(&cluster(s.clone())).unwrap().auth_secret, None);
        s.auth = Some(AuthSpec {
            user_secret: "etcd-root".into(),
        });
        assert_eq!(
            validate(&cluster(s.clone()))
                .unwrap()
                .auth_secret
                .as_deref(),
            Some("etcd-root")
        );
        for bad in ["", "Root", "root_user", "-root"] {
            s.auth = Some(AuthSpec {
                user_secret: bad.into(),
            });
            let e = validate(&cluster(s.clone())).unwrap_err();
            assert_eq!(e.field, "spec.auth.userSecret", "{bad:?}: {e:?}");
        }
    }

    #[test]
    fn etcd_auth_needs_a_client_certificate_the_engine_names() {
        let tls = |mode: &str| TlsSpec {
            mode: Some(mode.into()),
            etcd_auth: true,
            ..Default::default()
        };
        let mut s = spec(3, "3.6.15");
        s.tls = Some(tls("managed"));
        assert!(validate(&cluster(s.clone())).unwrap().etcd_auth);
        s.tls = Some(tls("none"));
        let e = validate(&cluster(s.clone())).unwrap_err();
        assert_eq!(e.field, "spec.tls.etcdAuth", "{e:?}");
        assert!(e.message.contains("managed or certManager"), "{e}");
        // Absent: off, what a cluster made before the field keeps.
        s.tls = None;
        assert!(!validate(&cluster(s)).unwrap().etcd_auth);
    }

    #[test]
    fn a_password_root_beside_certificate_authentication_is_refused_naming_both_fields() {
        for mode in ["managed", "certManager"] {
            let mut s = spec(3, "3.6.15");
            s.tls = Some(TlsSpec {
                mode: Some(mode.into()),
                etcd_auth: true,
                issuer_ref: (mode == "certManager").then(|| crate::api::IssuerRef {
                    name: "etcd-ca".into(),
                    kind: None,
                    group: None,
                }),
                ..Default::default()
            });
            assert!(validate(&cluster(s.clone())).unwrap().etcd_auth, "{mode}");
            s.auth = Some(AuthSpec {
                user_secret: "etcd-root".into(),
            });
            let e = validate(&cluster(s.clone())).unwrap_err();
            assert_eq!(e.field, "spec.auth", "{mode}: {e:?}");
            for says in [
                "spec.auth.userSecret etcd-root",
                "spec.tls.etcdAuth: true",
                "remove spec.auth",
                "or spec.tls.etcdAuth",
            ] {
                assert!(e.to_string().contains(says), "{mode}: {says:?} in {e}");
            }
            // Either way out is valid.
            s.tls.as_mut().unwrap().etcd_auth = false;
            let d = validate(&cluster(s.clone())).unwrap();
            assert_eq!(
                (d.auth_secret.as_deref(), d.etcd_auth),
                (Some("etcd-root"), false)
            );
            s.tls.as_mut().unwrap().etcd_auth = true;
            s.auth = None;
            let d = validate(&cluster(s)).unwrap();
            assert_eq!((d.auth_secret, d.etcd_auth), (None, true));
        }
    }
}
