//! The verb's own decision before it records one, a pure function of what it found (table-tested
//! below): whether the restore pod can do its part (`preflight`). Whether a quorum forbids the
//! recovery and whether the survivor moved are the planner's (`plan::recover`): the engine asks
//! them again on every pass.

use crate::archive::store::Location;

/// How the restore pod will read the snapshot (settled before anything is deleted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodCredentials {
    /// This Secret of the cluster's namespace (it exists and holds the keys).
    Secret(String),
    /// A Secret made from this machine's `AWS_*` variables (`credentials::env_credentials_secret`).
    FromEnvironment,
    /// Not S3 (a pvc:// claim the pod mounts).
    NotNeeded,
}

/// What the in-cluster restore needs, as found before anything changes.
#[derive(Clone, Debug)]
pub struct Preflight<'a> {
    /// Where the restore pod will read the snapshot.
    pub source: &'a Location,
    /// The Secret named (flag or spec), and whether it exists and holds credentials.
    pub secret: Option<(&'a str, Result<(), String>)>,
    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` are set here.
    pub env_credentials: bool,
    /// `--copy-local-credentials`: copying them into a Secret for the pod was asked for.
    pub copy_local: bool,
    pub tools_image: &'a str,
    /// `spec.storage.ephemeral`: members keep their data on no volume.
    pub ephemeral: bool,
}

/// Pure: can the restore pod do its part? Refused (naming the flag or field that fixes it) when
/// it cannot: otherwise the old members would be deleted for a restore that never finishes.
pub fn preflight(cluster: &str, p: &Preflight) -> Result<PodCredentials, String> {
    if p.ephemeral {
        return Err(format!(
            "{cluster} keeps its data on ephemeral storage (spec.storage.ephemeral): the restore writes the seed's volume, which its members would not use; restore into a new cluster with volumes instead (`kubectl etcd restore NEW --from-backup B`)"
        ));
    }
    if p.tools_image.trim().is_empty() {
        return Err(
            "no tools image for the restore pod: pass --tools-image IMAGE (or set KUBECTL_ETCD_TOOLS_IMAGE)"
                .into(),
        );
    }
    match p.source {
        Location::File(_) => Err(format!(
            "{} is a file on some machine, which the restore pod cannot read: rebuild from a backup on s3:// or pvc://, or from a survivor with --to s3://bucket/prefix",
            p.source
        )),
        Location::Pvc { .. } => Ok(PodCredentials::NotNeeded),
        Location::S3(_) => match &p.secret {
            Some((name, Ok(()))) => Ok(PodCredentials::Secret(name.to_string())),
            Some((_, Err(why))) => Err(format!(
                "{why}; the restore pod needs it to read {}: fix the Secret or pass another with --credentials-secret",
                p.source
            )),
            None if p.copy_local && p.env_credentials => Ok(PodCredentials::FromEnvironment),
            None => {
                let why = if p.copy_local {
                    "--copy-local-credentials copies AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, which are not set here: set them, or name a Secret with --credentials-secret SECRET"
                } else {
                    "pass --credentials-secret SECRET (keys AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), or --copy-local-credentials to copy this machine's AWS_* variables into a Secret of the namespace (readable by whoever may read Secrets there)"
                };
                Err(format!(
                    "the restore pod needs S3 credentials to read {}: {why}",
                    p.source
                ))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DEFAULT_TOOLS_IMAGE;

    fn s3() -> Location {
        Location::parse("s3://backups/etcd").unwrap()
    }

    fn pre<'a>(source: &'a Location) -> Preflight<'a> {
        Preflight {
            source,
            secret: None,
            env_credentials: false,
            copy_local: false,
            tools_image: DEFAULT_TOOLS_IMAGE,
            ephemeral: false,
        }
    }

    #[test]
    fn the_restore_pod_gets_the_named_secret_or_one_from_this_machine_or_the_recovery_is_refused() {
        let loc = s3();
        let named = Preflight {
            secret: Some(("s3-creds", Ok(()))),
            env_credentials: true,
            ..pre(&loc)
        };
        assert_eq!(
            preflight("ns/demo", &named),
            Ok(PodCredentials::Secret("s3-creds".into()))
        );
        let missing = Preflight {
            secret: Some((
                "s3-creds",
                Err("Secret ns/s3-creds does not exist".to_string()),
            )),
            env_credentials: true,
            ..pre(&loc)
        };
        let e = preflight("ns/demo", &missing).unwrap_err();
        assert!(
            e.contains("does not exist") && e.contains("--credentials-secret"),
            "{e}"
        );
        // Keys set here are copied only when asked (issue 42: never silently).
        let env = Preflight {
            env_credentials: true,
            ..pre(&loc)
        };
        let e = preflight("ns/demo", &env).unwrap_err();
        assert!(
            e.contains("--credentials-secret") && e.contains("--copy-local-credentials"),
            "{e}"
        );
        let asked = Preflight {
            copy_local: true,
            ..env
        };
        assert_eq!(
            preflight("ns/demo", &asked),
            Ok(PodCredentials::FromEnvironment)
        );
        let asked_without_keys = Preflight {
            copy_local: true,
            ..pre(&loc)
        };
        let e = preflight("ns/demo", &asked_without_keys).unwrap_err();
        assert!(e.contains("not set here"), "{e}");
        let e = preflight("ns/demo", &pre(&loc)).unwrap_err();
        assert!(e.contains("--credentials-secret"), "{e}");
    }

    #[test]
    fn a_file_backup_an_empty_tools_image_or_ephemeral_storage_is_refused_before_anything_is_deleted()
     {
        let file = Location::parse("file:///var/backups").unwrap();
        let e = preflight("ns/demo", &pre(&file)).unwrap_err();
        assert!(e.contains("cannot read"), "{e}");
        let loc = s3();
        let no_image = Preflight {
            tools_image: " ",
            env_credentials: true,
            ..pre(&loc)
        };
        assert!(
            preflight("ns/demo", &no_image)
                .unwrap_err()
                .contains("--tools-image")
        );
        let ephemeral = Preflight {
            ephemeral: true,
            env_credentials: true,
            ..pre(&loc)
        };
        assert!(
            preflight("ns/demo", &ephemeral)
                .unwrap_err()
                .contains("spec.storage.ephemeral")
        );
        let pvc = Location::parse("pvc://backups/etcd").unwrap();
        assert_eq!(
            preflight("ns/demo", &pre(&pvc)),
            Ok(PodCredentials::NotNeeded)
        );
    }
}
