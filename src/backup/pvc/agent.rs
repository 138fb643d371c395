//! The pvc:// agent's side: what `snapshot agent put|get|list|head|delete|check|hold` does in the
//! agent pod, on the local-file store of the mounted claim (see the parent module for the
//! protocol).

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::archive::frame::unframe;
use crate::archive::store::{Location, ObjectInfo, Store, StoreError};
use crate::error::BackupError;
use crate::objects::pvc_agent::ALIVE_FILE;

/// One object as the agent reports it (JSON on stdout).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WireObject {
    pub key: String,
    pub size: u64,
    #[serde(default)]
    pub last_modified: Option<i64>,
}

impl From<&ObjectInfo> for WireObject {
    fn from(o: &ObjectInfo) -> Self {
        WireObject {
            key: o.key.clone(),
            size: o.size,
            last_modified: o.last_modified.map(|t| t.as_second()),
        }
    }
}

impl From<WireObject> for ObjectInfo {
    fn from(o: WireObject) -> Self {
        ObjectInfo {
            key: o.key,
            size: o.size,
            last_modified: o
                .last_modified
                .and_then(|s| jiff::Timestamp::from_second(s).ok()),
            stamp: None,
        }
    }
}

/// What `put` answers on stdout.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WireStored {
    pub key: String,
    pub bytes: u64,
    pub sha256: String,
}

/// One operation of the agent, on the file store at `root` (inside the mounted claim).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentOp {
    /// Idle until no operation touched the alive file for `idle`.
    Hold {
        idle: Duration,
    },
    Check,
    /// Read framed data on stdin, store it under `key`; print a [`WireStored`].
    Put {
        key: String,
    },
    /// Write the object to stdout from byte `from`; refused when `size` is given and the object's
    /// differs (it changed between two sessions of one read).
    Get {
        key: String,
        from: u64,
        size: Option<u64>,
    },
    /// Print the objects under `prefix` ([`WireObject`]s).
    List {
        prefix: String,
    },
    /// Print the object's [`WireObject`] or `null`.
    Head {
        key: String,
    },
    Delete {
        key: String,
    },
}

/// Runs `op` in the agent pod; `put` reads `input` (the process's stdin), results go to `out`
/// (its stdout).
pub async fn run_agent<I, W>(
    root: &Path,
    op: AgentOp,
    input: I,
    out: &mut W,
) -> Result<(), BackupError>
where
    I: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin,
{
    if let AgentOp::Hold { idle } = op {
        return hold(Path::new(ALIVE_FILE), idle).await;
    }
    let keepalive = tokio::spawn(async {
        loop {
            touch(Path::new(ALIVE_FILE)).await;
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
    });
    let result = agent_op(root, op, input, out).await;
    keepalive.abort();
    result
}

async fn agent_op<I, W>(root: &Path, op: AgentOp, input: I, out: &mut W) -> Result<(), BackupError>
where
    I: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin,
{
    let store = Store::open(&Location::File(root.to_path_buf()), None).await?;
    fn json<T: Serialize>(v: &T) -> Vec<u8> {
        serde_json::to_vec(v).unwrap_or_default()
    }
    let bytes = match op {
        AgentOp::Hold { .. } => Vec::new(),
        AgentOp::Check => {
            store.check().await?;
            b"{}".to_vec()
        }
        AgentOp::Put { key } => {
            let body = unframe(input);
            let s = store.put(&key, body, |_| {}).await?;
            json(&WireStored {
                key: s.key,
                bytes: s.bytes,
                sha256: s.sha256_hex,
            })
        }
        AgentOp::Get { key, from, size } => {
            let (mut body, found) = store.get(&key).await?;
            if let (Some(want), Some(found)) = (size, found)
                && want != found
            {
                return Err(StoreError::other(
                    format!("cannot send {}", store.url(&key)),
                    format!("it has {found} bytes now, {want} when the read began: it was replaced; read it again"),
                )
                .into());
            }
            let io_err = |e| StoreError::Io {
                what: format!("cannot send {}", store.url(&key)),
                source: e,
            };
            tokio::io::copy(&mut (&mut body).take(from), &mut tokio::io::sink())
                .await
                .map_err(io_err)?;
            tokio::io::copy(&mut body, out).await.map_err(io_err)?;
            Vec::new()
        }
        AgentOp::List { prefix } => {
            let list: Vec<WireObject> = store.list(&prefix).await?.iter().map(Into::into).collect();
            json(&list)
        }
        AgentOp::Head { key } => {
            let head: Option<WireObject> = store.head(&key).await?.as_ref().map(Into::into);
            json(&head)
        }
        AgentOp::Delete { key } => {
            store.delete(&key).await?;
            b"{}".to_vec()
        }
    };
    out.write_all(&bytes).await.map_err(|e| StoreError::Io {
        what: "cannot write the answer".into(),
        source: e,
    })?;
    out.flush().await.map_err(|e| StoreError::Io {
        what: "cannot write the answer".into(),
        source: e,
    })?;
    Ok(())
}

/// Marks the agent as used now.
async fn touch(alive: &Path) {
    let _ = tokio::fs::write(alive, b"").await;
}

/// The agent pod's main process: returns once nothing touched `alive` for `idle`.
async fn hold(alive: &Path, idle: Duration) -> Result<(), BackupError> {
    touch(alive).await;
    loop {
        tokio::time::sleep(Duration::from_secs(5).min(idle)).await;
        let age = tokio::fs::metadata(alive)
            .await
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .unwrap_or_default();
        if age >= idle {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::frame::SEND_CHUNK;
    use crate::archive::frame::tests::{data, framed};

    #[tokio::test]
    async fn the_agent_puts_lists_reads_and_deletes_on_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("etcd");
        let d = data(2 * SEND_CHUNK + 5);
        let run = |op: AgentOp, input: Vec<u8>| {
            let root = root.clone();
            async move {
                let mut out = Vec::new();
                run_agent(&root, op, std::io::Cursor::new(input), &mut out)
                    .await
                    .map(|_| out)
            }
        };
        run(AgentOp::Check, vec![]).await.unwrap();
        let put = run(
            AgentOp::Put {
                key: "a/x.db".into(),
            },
            framed(&d).await,
        )
        .await
        .unwrap();
        let stored: WireStored = serde_json::from_slice(&put).unwrap();
        assert_eq!(stored.bytes, d.len() as u64);
        let got = run(
            AgentOp::Get {
                key: "a/x.db".into(),
                from: 0,
                size: None,
            },
            vec![],
        )
        .await
        .unwrap();
        assert_eq!(got, d);
        // A read resumed from byte 70,000: the rest, exactly.
        let rest = run(
            AgentOp::Get {
                key: "a/x.db".into(),
                from: 70_000,
                size: Some(d.len() as u64),
            },
            vec![],
        )
        .await
        .unwrap();
        assert_eq!(rest, d[70_000..]);
        // ... of an object replaced meanwhile (another size): refused, nothing sent.
        let e = run(
            AgentOp::Get {
                key: "a/x.db".into(),
                from: 70_000,
                size: Some(d.len() as u64 + 1),
            },
            vec![],
        )
        .await
        .unwrap_err();
        assert!(e.to_string().contains("was replaced"), "{e}");
        let list: Vec<WireObject> = serde_json::from_slice(
            &run(
                AgentOp::List {
                    prefix: "a/".into(),
                },
                vec![],
            )
            .await
            .unwrap(),
        )
        .unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(
            (list[0].key.as_str(), list[0].size),
            ("a/x.db", d.len() as u64)
        );
        let head: Option<WireObject> = serde_json::from_slice(
            &run(
                AgentOp::Head {
                    key: "a/y.db".into(),
                },
                vec![],
            )
            .await
            .unwrap(),
        )
        .unwrap();
        assert_eq!(head, None);
        run(
            AgentOp::Delete {
                key: "a/x.db".into(),
            },
            vec![],
        )
        .await
        .unwrap();
        assert!(
            run(
                AgentOp::Get {
                    key: "a/x.db".into(),
                    from: 0,
                    size: None,
                },
                vec![]
            )
            .await
            .is_err()
        );
    }

    #[tokio::test]
    async fn an_interrupted_put_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let whole = framed(&data(SEND_CHUNK + 10)).await;
        let mut out = Vec::new();
        let cut = std::io::Cursor::new(whole[..whole.len() - 20].to_vec());
        let put = AgentOp::Put { key: "x.db".into() };
        assert!(run_agent(dir.path(), put, cut, &mut out).await.is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
