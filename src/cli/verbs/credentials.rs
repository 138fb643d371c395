//! The restore pod's S3 credentials, of `restore` and `recover`: the Secret it reads them from,
//! named (`--credentials-secret`) or, only when asked (`--copy-local-credentials`), made from this
//! machine's `AWS_*` variables.

use k8s_openapi::api::core::v1::Secret;

use crate::archive::store::Location;

/// `--copy-local-credentials`, of `restore` and `recover`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CopyLocalCredentials {
    /// Copy this machine's AWS_* variables into a Secret of the cluster's namespace (readable by
    /// whoever may read Secrets there, deleted with the cluster) for the restore pod's download
    /// of an s3:// source. Never done without this flag: name a Secret with --credentials-secret.
    #[arg(long, env = "KUBECTL_ETCD_COPY_LOCAL_CREDENTIALS")]
    pub copy_local_credentials: bool,
}

/// Whether the restore pod's S3 credentials are copied from this machine's `AWS_*` variables:
/// only when asked (`--copy-local-credentials`) and never when a Secret is named. Pure.
/// Refused, with both ways out, when keys are set here but nobody asked to copy them (they would
/// otherwise stay in a Secret of the namespace for the cluster's life without the user knowing),
/// and when copying is asked with no keys set. Without keys and without the flag, the pod reads
/// S3 as its own identity allows (IRSA, a public bucket).
pub fn copy_local_credentials(
    source: &Location,
    named_secret: Option<&str>,
    copy: bool,
    keys_here: bool,
) -> Result<bool, String> {
    if !matches!(source, Location::S3(_)) || named_secret.is_some() {
        return Ok(false);
    }
    match (copy, keys_here) {
        (true, true) => Ok(true),
        (true, false) => Err(
            "--copy-local-credentials copies AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, which are not set here: set them, or name a Secret with --credentials-secret SECRET"
                .into(),
        ),
        (false, true) => Err(format!(
            "the restore pod reads {source} with S3 credentials: name a Secret of the namespace with --credentials-secret SECRET (keys AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), or pass --copy-local-credentials to copy this machine's AWS_* variables into one (readable by whoever may read Secrets there); nothing was changed"
        )),
        (false, false) => Ok(false),
    }
}

/// Whether `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` are both set here.
pub(super) fn local_keys_set() -> bool {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.is_empty());
    set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY")
}

/// Makes the Secret the restore pod reads S3 credentials from, out of this machine's AWS_*
/// variables (the chain's other sources cannot be handed on: pass --credentials-secret then).
pub(super) fn env_credentials_secret(ns: &str, name: &str) -> Option<Secret> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let id = var("AWS_ACCESS_KEY_ID")?;
    let key = var("AWS_SECRET_ACCESS_KEY")?;
    let mut data = std::collections::BTreeMap::from([
        ("AWS_ACCESS_KEY_ID".to_string(), id),
        ("AWS_SECRET_ACCESS_KEY".to_string(), key),
    ]);
    for k in ["AWS_SESSION_TOKEN", "AWS_REGION", "AWS_ENDPOINT_URL"] {
        if let Some(v) = var(k) {
            data.insert(k.into(), v);
        }
    }
    // Here a file's path; in the pod, the PEM itself (a bad bundle was refused when the CLI
    // opened the store with it).
    if let Ok(Some(pem)) = crate::archive::store::trust(None) {
        data.insert(
            crate::archive::store::CA_BUNDLE.into(),
            String::from_utf8_lossy(&pem).into_owned(),
        );
    }
    Some(Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{name}-restore-credentials")),
            namespace: Some(ns.into()),
            ..Default::default()
        },
        string_data: Some(data),
        ..Default::default()
    })
}

/// The Secret to make from this machine's `AWS_*` variables when `copy_local_credentials` says
/// so (warning of a loopback endpoint, which the pod would not reach).
pub(super) fn env_secret_for(ns: &str, name: &str, copy: bool) -> Option<Secret> {
    copy.then(|| env_credentials_secret(ns, name))
        .flatten()
        .inspect(|_| warn_of_a_loopback_endpoint())
}

/// Says on stderr when the endpoint handed to the restore pod is this machine's loopback
/// (a port-forwarded or local store): the pod reaches its own, and its download fails.
pub(super) fn warn_of_a_loopback_endpoint() {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    if let Some(line) = loopback_warning(&endpoint) {
        crate::cli::output::progress_line(&line);
    }
}

/// The warning for an endpoint on the loopback (`localhost`, `127.0.0.0/8`, `::1`); `None` for
/// any other.
pub(super) fn loopback_warning(endpoint: &str) -> Option<String> {
    let host = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest)
        .split('/')
        .next()?;
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback.then(|| {
        format!(
            "warning: AWS_ENDPOINT_URL {endpoint} is this machine's loopback: the restore pod reads \
             the snapshot from its own and cannot reach the store; pass --credentials-secret with a \
             Secret whose AWS_ENDPOINT_URL the pods reach"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{copy_local_credentials, loopback_warning};
    use crate::archive::store::Location;

    /// Issue 42 item 6: this machine's keys reach a Secret of the namespace only when asked.
    #[test]
    fn local_keys_are_copied_only_when_asked_and_never_beside_a_named_secret() {
        let s3 = Location::parse("s3://b/etcd").unwrap();
        let pvc = Location::parse("pvc://backups/etcd").unwrap();
        let e = copy_local_credentials(&s3, None, false, true).unwrap_err();
        assert!(
            e.contains("--credentials-secret")
                && e.contains("--copy-local-credentials")
                && e.contains("nothing was changed"),
            "{e}"
        );
        assert_eq!(copy_local_credentials(&s3, None, true, true), Ok(true));
        let e = copy_local_credentials(&s3, None, true, false).unwrap_err();
        assert!(e.contains("not set here"), "{e}");
        // Nothing to copy and nothing asked: the pod reads as its own identity allows.
        assert_eq!(copy_local_credentials(&s3, None, false, false), Ok(false));
        for copy in [false, true] {
            assert_eq!(
                copy_local_credentials(&s3, Some("s3"), copy, true),
                Ok(false)
            );
            assert_eq!(copy_local_credentials(&pvc, None, copy, true), Ok(false));
        }
    }

    #[test]
    fn an_endpoint_on_this_machines_loopback_is_warned_of() {
        for loopback in [
            "http://127.0.0.1:18333",
            "http://localhost:9000/",
            "https://LOCALHOST",
            "http://[::1]:9000",
            "127.0.0.2:9000",
        ] {
            assert!(
                loopback_warning(loopback).is_some_and(|w| w.contains("--credentials-secret")),
                "{loopback}"
            );
        }
        for reachable in [
            "http://10.250.0.1:18333",
            "https://s3.eu-west-1.amazonaws.com",
            "http://minio.storage.svc:9000",
            "http://[fd00::1]:9000",
            "",
        ] {
            assert_eq!(loopback_warning(reachable), None, "{reachable}");
        }
    }
}
