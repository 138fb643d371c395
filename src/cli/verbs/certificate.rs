//! `kubectl etcd certificate NAME --user U [--out DIR]`: a client certificate for an
//! application, issued from the cluster's own CA (`spec.tls.mode: managed`). The key is made
//! here and never leaves this machine; the files are written 0600 (the directory 0700 when this
//! makes it), their paths printed. etcd takes the certificate's CN (`--user`) as the user once
//! its authentication is on.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::flags::{Global, parse_duration};
use crate::cli::output::{self, Format};
use crate::cli::{Session, usage};
use crate::error::Error;
use crate::model::{self, InvalidSpec, pki::CertRole};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Cluster name (its spec.tls.mode is managed).
    pub name: String,
    /// The user the certificate names (its CN): letters, digits, '-', '_', '.' and '@'.
    #[arg(long)]
    pub user: String,
    /// Directory the files go to (made 0700 when missing): ca.crt, USER.crt, USER.key.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// How long the certificate is valid (e.g. 720h; default 90 days).
    #[arg(long, default_value = "2160h", value_parser = parse_duration)]
    pub lifetime: std::time::Duration,
}

/// What `certificate` wrote (stdout: the paths; `-o json|yaml`: this).
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
struct Written {
    user: String,
    ca: PathBuf,
    certificate: PathBuf,
    key: PathBuf,
    not_after: String,
}

fn user_ok(u: &str) -> bool {
    !u.is_empty()
        && u.len() <= 128
        && !u.starts_with('.')
        && u.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'@'))
}

/// Writes `data` to a new file `path` readable by its owner only (an existing one is replaced
/// only for `ca.crt`, which is public).
fn write_private(path: &Path, data: &str, replace: bool) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).mode(0o600);
    if replace {
        o.create(true).truncate(true);
    } else {
        o.create_new(true);
    }
    let mut f = o.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Error::Usage(format!(
                "{} exists already; remove it or give another --out",
                path.display()
            ))
        } else {
            Error::Io(std::io::Error::new(
                e.kind(),
                format!("writing {}: {e}", path.display()),
            ))
        }
    })?;
    f.write_all(data.as_bytes()).map_err(Error::Io)
}

pub async fn run(g: &Global, a: Args) -> Result<(), Error> {
    let name = a.name;
    model::validate_name(&name).map_err(|e| usage(&name, e))?;
    if !user_ok(&a.user) {
        return Err(usage(
            &name,
            InvalidSpec {
                field: "--user",
                message: format!(
                    "{:?} is not a user name here; use letters, digits, '-', '_', '.' and '@' (at most 128)",
                    a.user
                ),
            },
        ));
    }
    let s = Session::connect(g).await?;
    let cluster = s.get_cluster(&name).await?;
    let d = model::validate(&cluster).map_err(|source| Error::InvalidSpec {
        namespace: s.namespace.clone(),
        name: name.clone(),
        source,
    })?;
    issues_from_its_own_ca(&name, &d)?;
    let fail = |why: String| Error::Certificate {
        namespace: s.namespace.clone(),
        name: name.clone(),
        role: CertRole::Client.as_str(),
        why,
    };
    let ca = crate::engine::pki::read_ca(&s.client, &s.namespace, &name)
        .await
        .map_err(fail)?;
    // During a CA rotation the bundle of both CAs: the members serve certificates of either.
    let ca_pem = ca.bundle();
    let now = jiff::Timestamp::now().as_second();
    let issued = crate::pki::leaf_params(
        CertRole::Client,
        &name,
        &s.namespace,
        &d.cluster_domain,
        &a.user,
        now,
        a.lifetime.as_secs(),
    )
    .and_then(|p| crate::pki::sign(&p, &name, &s.namespace, &ca.key_pem))
    .map_err(|e| fail(e.to_string()))?;
    let (_, not_after) = crate::pki::pem_validity(issued.cert_pem.as_bytes()).map_err(fail)?;
    if !a.out.exists() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&a.out)
            .map_err(Error::Io)?;
    }
    let written = Written {
        ca: a.out.join("ca.crt"),
        certificate: a.out.join(format!("{}.crt", a.user)),
        key: a.out.join(format!("{}.key", a.user)),
        user: a.user,
        not_after: jiff::Timestamp::from_second(not_after)
            .map(|t| t.to_string())
            .unwrap_or_default(),
    };
    // The key first: nothing is written when it exists already.
    write_private(&written.key, &issued.key_pem, false)?;
    write_private(&written.certificate, &issued.cert_pem, true)?;
    write_private(&written.ca, &ca_pem, true)?;
    output::progress_line(&format!(
        "issued a client certificate for user {} from the CA of EtcdCluster {}/{name}, valid until {}",
        written.user, s.namespace, written.not_after
    ));
    match g.output {
        Format::Table => output::print_raw(&format!(
            "{}\n{}\n{}",
            written.ca.display(),
            written.certificate.display(),
            written.key.display()
        )),
        f => output::print_value(f, &written),
    }
}

/// `certificate` issues from the cluster's own CA: mode managed alone.
fn issues_from_its_own_ca(name: &str, d: &model::Desired) -> Result<(), Error> {
    if let Some(cm) = &d.cert_manager {
        return Err(usage(
            name,
            InvalidSpec {
                field: "spec.tls.mode",
                message: format!(
                    "is certManager: client certificates come from cert-manager; write a \
                     Certificate with issuerRef {} {}, `usages: [client auth]` and the user \
                     as commonName, and use its Secret",
                    cm.issuer_kind, cm.issuer_name
                ),
            },
        ));
    }
    if d.pki.is_none() {
        return Err(usage(
            name,
            InvalidSpec {
                field: "spec.tls.mode",
                message: "is not managed: the cluster has no CA of its own to issue from (with \
                          mode secrets, issue client certificates from the CA of your Secrets)"
                    .into(),
            },
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn user_names_are_file_and_cn_safe() {
        for ok in ["app", "team-a.reader", "svc_1", "alice@example.org"] {
            assert!(super::user_ok(ok), "{ok}");
        }
        for bad in ["", "../x", "a/b", ".hidden", "a b", "ü"] {
            assert!(!super::user_ok(bad), "{bad}");
        }
    }
}
