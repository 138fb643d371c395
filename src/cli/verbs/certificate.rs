//! `kubectl etcd certificate NAME --user U [--prefix P]... [--read-write] [--out DIR]`: a client
//! certificate for an application, issued from the cluster's own CA (`spec.tls.mode: managed`),
//! and the etcd role U it gets. etcd takes the certificate's CN (U) as its user, so the cluster
//! must run etcd's authentication (`spec.tls.etcdAuth`); the role U reads every key, or only
//! the prefixes given, and writes only with `--read-write` under prefixes given. The role and
//! user are made (or the role's permissions replaced) through the engine's own connection before
//! any file is written. The key is made here and never leaves this machine; the files are
//! written 0600 (the directory 0700 when this makes it), their paths printed.

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
    /// A key prefix the user's role reaches (repeatable, e.g. --prefix /app/). None: every key,
    /// read-only.
    #[arg(long = "prefix", value_name = "PREFIX")]
    pub prefixes: Vec<String>,
    /// The role writes (puts, deletes, transactions) under the --prefix keys too; without it
    /// the role only reads.
    #[arg(long)]
    pub read_write: bool,
}

/// The etcd role a certificate's user gets: what it reaches, and whether it writes there.
#[derive(Serialize, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct Role {
    /// Key prefixes; empty: every key.
    prefixes: Vec<String>,
    read_write: bool,
    #[serde(skip)]
    grants: Vec<crate::etcd::Grant>,
}

/// The role `--prefix` and `--read-write` ask for user `user`, or why not: root and the
/// cluster's own user are the engine's, and a writer of every key could overwrite what every other application keeps.
fn role_of(user: &str, prefixes: &[String], read_write: bool) -> Result<Role, InvalidSpec> {
    // The engine's users: `root`, and each cluster's own (`keys::engine_user`), whose
    // certificate would be the engine's.
    if user == crate::etcd::ROOT || user.starts_with(crate::keys::ENGINE_USER_PREFIX) {
        return Err(InvalidSpec {
            field: "--user",
            message: format!(
                "{user} is the engine's own etcd user, whose role reaches everything, members \
                 and authentication included; give the application a name of its own (not \
                 {} and not starting with {})",
                crate::etcd::ROOT,
                crate::keys::ENGINE_USER_PREFIX
            ),
        });
    }
    if let Some(bad) = prefixes.iter().find(|p| p.is_empty()) {
        return Err(InvalidSpec {
            field: "--prefix",
            message: format!(
                "{bad:?} is empty; name the keys, e.g. --prefix /{user}/ (without --prefix the \
                 role reads every key)"
            ),
        });
    }
    if read_write && prefixes.is_empty() {
        return Err(InvalidSpec {
            field: "--read-write",
            message: format!(
                "without --prefix would let {user} write every key, what other applications \
                 keep included; name the keys it writes, e.g. --prefix /{user}/ --read-write"
            ),
        });
    }
    let mut prefixes = prefixes.to_vec();
    prefixes.sort();
    prefixes.dedup();
    let grants = if prefixes.is_empty() {
        vec![crate::etcd::Grant::prefix(b"", false)]
    } else {
        prefixes
            .iter()
            .map(|p| crate::etcd::Grant::prefix(p.as_bytes(), read_write))
            .collect()
    };
    Ok(Role {
        prefixes,
        read_write,
        grants,
    })
}

/// What `certificate` wrote (stdout: the paths; `-o json|yaml`: this).
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
struct Written {
    user: String,
    role: Role,
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
    let role = role_of(&a.user, &a.prefixes, a.read_write).map_err(|e| usage(&name, e))?;
    let s = Session::connect(g).await?;
    let (_, d) = s.load_cluster(&name).await?;
    issues_from_its_own_ca(&name, &d)?;
    authenticates_by_certificate(&d)?;
    let key_path = a.out.join(format!("{}.key", a.user));
    if key_path.exists() {
        return Err(Error::Usage(format!(
            "{} exists already; remove it or give another --out",
            key_path.display()
        )));
    }
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
    // The role and the user before any file: a certificate whose user has no role is refused
    // by etcd anyway, and a failure here leaves nothing behind.
    grant(&s, &d, &a.user, &role).await?;
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
        key: key_path,
        user: a.user,
        role,
        not_after: jiff::Timestamp::from_second(not_after)
            .map(|t| t.to_string())
            .unwrap_or_default(),
    };
    // The key first: nothing is written when it exists already.
    write_private(&written.key, &issued.key_pem, false)?;
    write_private(&written.certificate, &issued.cert_pem, true)?;
    write_private(&written.ca, &ca_pem, true)?;
    output::progress_line(&format!(
        "issued a client certificate for user {} from the CA of EtcdCluster {}/{name}, valid until {}; its etcd role {} {}",
        written.user,
        s.namespace,
        written.not_after,
        written.user,
        role_sentence(&written.role)
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

fn role_sentence(r: &Role) -> String {
    if r.prefixes.is_empty() {
        return "reads every key".into();
    }
    let verb = if r.read_write {
        "reads and writes"
    } else {
        "reads"
    };
    format!("{verb} the keys under {}", r.prefixes.join(", "))
}

/// A certificate names a user only while etcd's authentication is on: without it every
/// certificate of the cluster's CA reads and writes every key.
fn authenticates_by_certificate(d: &model::Desired) -> Result<(), Error> {
    if d.etcd_auth {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "EtcdCluster {ns}/{name} runs without etcd's authentication (spec.tls.etcdAuth is off), \
         so every certificate of its CA is root on every key and a role would mean nothing; turn \
         it on with `kubectl -n {ns} patch etcdcluster {name} --type merge -p \
         '{{\"spec\":{{\"tls\":{{\"etcdAuth\":true}}}}}}'` (the engine makes the user root and \
         enables it), then issue the certificate; nothing was changed",
        ns = d.namespace,
        name = d.name
    )))
}

/// Makes etcd role `user` hold exactly `role`'s permissions, and user `user` (its certificate's
/// CN, no password) hold the role, through a member that answers (the engine's connection:
/// its client certificate is etcd's root). Each call is safe to repeat; a run that stopped
/// midway is finished by the next.
async fn grant(s: &Session, d: &model::Desired, user: &str, role: &Role) -> Result<(), Error> {
    let reach = crate::reach::Reach::new(s.client.clone(), s.dial);
    let fail = |source| Error::Etcd {
        namespace: d.namespace.clone(),
        name: d.name.clone(),
        source,
    };
    let mut last = None;
    for ordinal in 0..d.replicas {
        let mut c = match reach.connect(d, ordinal, None).await {
            Ok(c) => c,
            Err(e) => {
                last = Some(e);
                continue;
            }
        };
        // A learner answers no auth call: the next member.
        let current = match c.role(user).await {
            Ok(r) => r,
            Err(e) => {
                last = Some(e);
                continue;
            }
        };
        if current.is_none() {
            c.add_role(user).await.map_err(fail)?;
        }
        let current = current.unwrap_or_default();
        for g in current.iter().filter(|g| !role.grants.contains(g)) {
            c.revoke_permission(user, g).await.map_err(fail)?;
        }
        for g in role.grants.iter().filter(|g| !current.contains(g)) {
            c.grant_permission(user, g).await.map_err(fail)?;
        }
        c.add_user(user).await.map_err(fail)?;
        return c.grant_role(user, user).await.map_err(fail);
    }
    Err(match last {
        Some(e) => fail(e),
        None => Error::NoPods {
            namespace: d.namespace.clone(),
            name: d.name.clone(),
        },
    })
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
    use super::role_of;
    use crate::etcd::Grant;

    fn prefixes(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_role_reads_every_key_by_default_and_writes_only_under_its_prefixes() {
        let r = role_of("app", &[], false).unwrap();
        assert_eq!(r.grants, [Grant::prefix(b"", false)]);
        assert_eq!(
            (r.grants[0].key.as_slice(), r.grants[0].range_end.as_slice()),
            (&[0u8][..], &[0u8][..])
        );
        let r = role_of("app", &prefixes(&["/b/", "/app/", "/b/"]), true).unwrap();
        assert_eq!(r.prefixes, ["/app/", "/b/"], "sorted, once each");
        assert_eq!(
            r.grants,
            [Grant::prefix(b"/app/", true), Grant::prefix(b"/b/", true)]
        );
        assert_eq!(r.grants[0].range_end, b"/app0");
        let r = role_of("app", &prefixes(&["/app/"]), false).unwrap();
        assert!(!r.grants[0].write);
    }

    #[test]
    fn root_a_writer_of_every_key_and_an_empty_prefix_are_refused_naming_the_fix() {
        for engine in ["root", "kubectl-etcd:team:demo", "kubectl-etcd:other:demo"] {
            let e = role_of(engine, &[], false).unwrap_err();
            assert_eq!(e.field, "--user");
            assert!(e.message.contains("a name of its own"), "{}", e.message);
        }
        let e = role_of("app", &[], true).unwrap_err();
        assert_eq!(e.field, "--read-write");
        assert!(
            e.message.contains("--prefix /app/ --read-write"),
            "{}",
            e.message
        );
        let e = role_of("app", &prefixes(&["/ok/", ""]), true).unwrap_err();
        assert_eq!(e.field, "--prefix");
    }

    #[test]
    fn a_cluster_without_etcd_auth_is_refused_naming_the_patch_that_turns_it_on() {
        let mut d = crate::fixtures::cluster("demo").desired();
        let e = super::authenticates_by_certificate(&d).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        let why = e.to_string();
        assert!(
            why.contains("patch etcdcluster demo") && why.contains("etcdAuth"),
            "{why}"
        );
        assert!(why.contains("nothing was changed"), "{why}");
        d.etcd_auth = true;
        assert!(super::authenticates_by_certificate(&d).is_ok());
    }

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
