//! The tools the project's pods run inside the cluster (`kubectl-etcd snapshot …`, a hidden verb):
//! the restore pod's `fetch` and `discard`, and the pvc:// agent pod's `agent`.
//!
//! `fetch` downloads a stored snapshot with the pod's own credentials (its environment, a mounted
//! key file), verifies it whole (sha256, decryption, decompression, etcd's hash) and writes it
//! where the restore reads it; `discard` removes what was downloaded; `agent` runs one store
//! operation on the claim mounted in the agent pod (`backup::pvc`). Their arguments are built by
//! `objects::restore` and `objects::pvc_agent`. The CLI parses the command line and prints what a
//! tool says; the process's stdin and stdout reach a tool only as the agent's protocol.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::archive::crypt::Key;
use crate::archive::fetch;
use crate::archive::store::{Location, Store};
use crate::backup::pvc::{AgentOp, run_agent};
use crate::error::{BackupError, Error};
use crate::model::records::drill::{DrillFigures, Fetched};
use crate::objects::pvc_agent::{AGENT_IDLE, MOUNT_DIR};

#[derive(Subcommand, Debug)]
pub enum SnapshotOp {
    /// Download URL, verify it (sha256, decompression, etcd's hash) and write it to --to.
    Fetch {
        url: String,
        #[arg(long)]
        to: PathBuf,
        #[arg(long)]
        sha256: Option<String>,
        /// A file holding the key of an encrypted snapshot (the restore pod's mounted Secret).
        #[arg(long)]
        encryption_key_file: Option<PathBuf>,
        /// A directory to remove first (a data dir left by an interrupted restore).
        #[arg(long)]
        clean: Option<PathBuf>,
        /// Write what was read (stored bytes, their sha256) as JSON to this file (a drill's).
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// A restore drill's reading: wait for the restored member at --endpoint, then write its
    /// revision, key count and HashKV as JSON (with --fetched's figures) to --to.
    DrillRead {
        #[arg(long)]
        endpoint: String,
        /// The fetch's --report.
        #[arg(long)]
        fetched: PathBuf,
        /// Where the figures go (the container's termination message).
        #[arg(long, default_value = "/dev/termination-log")]
        to: PathBuf,
    },
    /// Remove a directory of downloaded snapshots.
    Discard { dir: PathBuf },
    /// The pvc:// agent: store operations on the claim mounted in this pod (see backup::pvc).
    Agent {
        /// The location's directory in the mounted claim.
        #[arg(long, default_value = MOUNT_DIR)]
        root: PathBuf,
        #[command(subcommand)]
        op: AgentCmd,
    },
}

/// One operation of the pvc:// agent (`backup::pvc::AgentOp`).
#[derive(Subcommand, Debug)]
pub enum AgentCmd {
    /// Stay up until no operation ran for --idle seconds (the agent pod's main process).
    Hold {
        #[arg(long, default_value_t = AGENT_IDLE.as_secs())]
        idle: u64,
    },
    /// Check that the directory can be created and written.
    Check,
    /// Store framed data from stdin under KEY.
    Put { key: String },
    /// Write KEY to stdout.
    Get {
        key: String,
        /// Skip the first N bytes (a read resumed after its session was cut short).
        #[arg(long, default_value_t = 0)]
        from: u64,
        /// Refuse when KEY's size is not N (it was replaced between two sessions of one read).
        #[arg(long)]
        size: Option<u64>,
    },
    /// List objects under PREFIX (JSON).
    List {
        #[arg(default_value = "")]
        prefix: String,
    },
    /// Size and time of KEY (JSON, null when absent).
    Head { key: String },
    /// Delete KEY.
    Delete { key: String },
}

impl From<AgentCmd> for AgentOp {
    fn from(c: AgentCmd) -> Self {
        match c {
            AgentCmd::Hold { idle } => AgentOp::Hold {
                idle: std::time::Duration::from_secs(idle),
            },
            AgentCmd::Check => AgentOp::Check,
            AgentCmd::Put { key } => AgentOp::Put { key },
            AgentCmd::Get { key, from, size } => AgentOp::Get { key, from, size },
            AgentCmd::List { prefix } => AgentOp::List { prefix },
            AgentCmd::Head { key } => AgentOp::Head { key },
            AgentCmd::Delete { key } => AgentOp::Delete { key },
        }
    }
}

/// Runs one tool; `stdin` and `stdout` are the process's, for the agent's protocol. Returns the
/// line for the pod's log (stderr) saying what was done; the agent has none.
pub async fn run<I, W>(op: SnapshotOp, stdin: I, stdout: &mut W) -> Result<Option<String>, Error>
where
    I: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin,
{
    match op {
        SnapshotOp::Fetch {
            url,
            to,
            sha256,
            encryption_key_file,
            clean,
            report,
        } => {
            let (loc, key) =
                Location::parse_object(&url).map_err(|e| Error::Usage(e.to_string()))?;
            // A pvc:// source is mounted into this container (restore pod) at MOUNT_DIR.
            let loc = loc.pvc_as_file(Path::new(MOUNT_DIR)).unwrap_or(loc);
            let secret = match &encryption_key_file {
                Some(f) => Some(read_key(f).await?),
                None => None,
            };
            let store = Store::open(&loc, None).await.map_err(BackupError::from)?;
            let v = fetch::fetch_to_file_patiently(
                &store,
                &key,
                secret.as_ref(),
                sha256.as_deref(),
                &to,
                clean.as_deref(),
            )
            .await?;
            if let Some(path) = report {
                let fetched = Fetched {
                    stored_bytes: v.stored_bytes,
                    sha256: v.sha256.clone(),
                };
                write_json(&path, &fetched).await?;
            }
            Ok(Some(format!(
                "fetched and verified {url}: {} bytes stored, {} bytes of snapshot, sha256 {}",
                v.stored_bytes, v.snapshot_bytes, v.sha256
            )))
        }
        SnapshotOp::DrillRead {
            endpoint,
            fetched,
            to,
        } => {
            let fetched: Fetched = serde_json::from_slice(&tokio::fs::read(&fetched).await?)
                .map_err(|e| Error::Serialize(Box::new(e)))?;
            let restored = read_restored(&endpoint).await?;
            let figures = DrillFigures { fetched, restored };
            write_json(&to, &figures).await?;
            Ok(Some(format!(
                "the restored member holds revision {} with {} keys, HashKV {} above compaction {}",
                restored.revision, restored.keys, restored.hash_kv, restored.compact_revision
            )))
        }
        SnapshotOp::Agent { root, op } => {
            run_agent(&root, op.into(), stdin, stdout).await?;
            Ok(None)
        }
        SnapshotOp::Discard { dir } => {
            match tokio::fs::remove_dir_all(&dir).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::Io(e)),
            }
            Ok(Some(format!("removed {}", dir.display())))
        }
    }
}

/// How long `drill-read` waits for the restored member to answer (it starts once its data
/// dir is restored: a large one takes a while to open).
const DRILL_READY: std::time::Duration = std::time::Duration::from_secs(300);

/// The restored member's revision, key count and HashKV, once it answers.
async fn read_restored(endpoint: &str) -> Result<crate::model::records::drill::Restored, Error> {
    use crate::etcd::{EtcdClient, HashAt};
    let started = std::time::Instant::now();
    let gone = |e: crate::etcd::EtcdError| Error::Etcd {
        namespace: String::new(),
        name: "(the drill's member)".into(),
        source: e,
    };
    let mut client = loop {
        match EtcdClient::connect(endpoint, std::time::Duration::from_secs(5)).await {
            Ok(mut c) => match c.keyspace().await {
                Ok(_) => break c,
                Err(e) if started.elapsed() > DRILL_READY => return Err(gone(e)),
                Err(_) => {}
            },
            Err(e) if started.elapsed() > DRILL_READY => return Err(gone(e)),
            Err(_) => {}
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };
    let now = client.keyspace().await.map_err(gone)?;
    match client.hash_at(now.revision).await.map_err(gone)? {
        HashAt::Hash {
            hash_kv,
            compact_revision,
            keys,
        } => Ok(crate::model::records::drill::Restored {
            revision: now.revision,
            keys,
            hash_kv,
            compact_revision,
        }),
        other => Err(Error::Usage(format!(
            "the drill's member cannot hash its own revision {}: {other:?}",
            now.revision
        ))),
    }
}

async fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), Error> {
    let bytes = serde_json::to_vec(value).map_err(|e| Error::Serialize(Box::new(e)))?;
    tokio::fs::write(path, bytes).await?;
    Ok(())
}

/// The key of an encrypted snapshot, from the file the restore pod mounts its Secret as.
async fn read_key(file: &Path) -> Result<Key, BackupError> {
    let bytes = tokio::fs::read(file).await.map_err(|e| {
        BackupError::Key(format!("cannot read the key file {}: {e}", file.display()))
    })?;
    Key::parse(&bytes)
        .map_err(|why| BackupError::Key(format!("the key file {}: {why}", file.display())))
}

#[cfg(test)]
mod tests {
    use super::{AgentCmd, SnapshotOp, run};
    use crate::cli::{Cli, Verb};
    use crate::error::Error;
    use clap::Parser;

    /// The tool a pod's container runs, parsed as this process parses its command line.
    fn tool(args: &[String]) -> SnapshotOp {
        let line = std::iter::once("kubectl-etcd".to_string()).chain(args.iter().cloned());
        match Cli::try_parse_from(line)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .verb
        {
            Verb::Snapshot { op } => op,
            other => panic!("{args:?} is not a snapshot tool: {other:?}"),
        }
    }

    /// The command lines `objects` gives the restore pod and the pvc:// agent pod are this
    /// room's tools, with every argument they pass.
    #[test]
    fn the_pods_command_lines_are_these_tools() {
        let d = crate::fixtures::cluster("demo")
            .spec(|s| {
                s.restore = Some(crate::api::RestoreSpec {
                    source: "pvc://backups/etcd/ns-demo-20261201T000000Z-r5.db.zst.enc".into(),
                    sha256: Some("ab".repeat(32)),
                    encryption: Some(crate::api::BackupEncryption::from_key_secret(
                        &crate::archive::crypt::KeySecret {
                            name: "demo-key".into(),
                            key: "key".into(),
                        },
                    )),
                    ..Default::default()
                });
            })
            .desired();
        let r = d.restore.as_ref().unwrap();
        let pod = crate::objects::restore::restore_pod(&d, r, "tok")
            .spec
            .unwrap();
        let tools: Vec<SnapshotOp> = pod
            .init_containers
            .unwrap()
            .into_iter()
            .chain(pod.containers)
            .filter(|c| c.image.as_deref() == Some(r.tools_image.as_str()))
            .map(|c| tool(&c.args.unwrap()))
            .collect();
        let [fetch, discard] = tools.as_slice() else {
            panic!("a fetch and a discard: {tools:?}")
        };
        let SnapshotOp::Fetch {
            url,
            sha256,
            encryption_key_file,
            clean,
            ..
        } = fetch
        else {
            panic!("{fetch:?}")
        };
        assert_eq!(url, &r.url);
        assert_eq!(sha256.as_deref(), Some("ab".repeat(32).as_str()));
        assert!(
            encryption_key_file.is_some() && clean.is_some(),
            "{fetch:?}"
        );
        assert!(matches!(discard, SnapshotOp::Discard { .. }), "{discard:?}");

        let agent = crate::objects::pvc_agent::agent_pod("a", "ns", "backups", "img");
        let args = agent.spec.unwrap().containers[0].args.clone().unwrap();
        assert!(
            matches!(
                tool(&args),
                SnapshotOp::Agent { op: AgentCmd::Hold { idle }, .. }
                    if idle == crate::objects::pvc_agent::AGENT_IDLE.as_secs()
            ),
            "{args:?}"
        );
    }

    #[tokio::test]
    async fn discard_removes_the_directory_and_a_missing_one_is_no_failure() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("snapshots");
        std::fs::create_dir_all(dir.join("inner")).unwrap();
        std::fs::write(dir.join("inner/a.db"), b"x").unwrap();
        for _ in 0..2 {
            let said = run(
                SnapshotOp::Discard { dir: dir.clone() },
                tokio::io::empty(),
                &mut tokio::io::sink(),
            )
            .await
            .unwrap();
            assert_eq!(said, Some(format!("removed {}", dir.display())));
            assert!(!dir.exists());
        }
    }

    /// A URL the stores do not know is the caller's mistake (a usage error), found before any
    /// download.
    #[tokio::test]
    async fn fetch_refuses_a_url_it_cannot_read_as_a_usage_error() {
        let tmp = tempfile::tempdir().unwrap();
        let e = run(
            SnapshotOp::Fetch {
                url: "ftp://b/etcd/a.db".into(),
                to: tmp.path().join("a.db"),
                sha256: None,
                encryption_key_file: None,
                clean: None,
                report: None,
            },
            tokio::io::empty(),
            &mut tokio::io::sink(),
        )
        .await
        .unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{e:?}");
        assert!(!tmp.path().join("a.db").exists());
    }
}
