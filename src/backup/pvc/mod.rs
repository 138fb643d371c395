//! `pvc://claim/path`: backups kept on a PersistentVolumeClaim, reached from outside the pod world
//! through a short-lived **agent pod**.
//!
//! Only a pod that mounts a claim can read or write it. Opening a pvc:// store starts one pod of
//! the project's tools image (the same `kubectl-etcd` binary) that mounts the claim and idles
//! (`snapshot agent hold`); every store operation is an `exec` of a hidden subcommand of that binary
//! (`snapshot agent put|get|list|head|delete|check`), which runs the local-file store on the
//! mounted directory, so pvc:// objects get exactly the file store's semantics (`.partial` names
//! while writing, fsync, rename, directory listing).
//!
//! Bytes travel over the Kubernetes exec stream (WebSocket, kube's `ws` feature): `get` is the
//! remote command's stdout; `put` writes **frames** (`archive::frame`: length-prefixed, ended by
//! the byte count and sha256) on its stdin, because the v4 exec protocol of older API servers
//! (1.20 here) cannot close stdin without closing the whole session — the receiver must know
//! where the data ends by itself. The receiver writes `<key>.partial`, checks count and sha256,
//! fsyncs and renames; anything else (a cut connection, a mismatch) leaves nothing. Memory stays
//! bounded on both sides: one frame at a time, exec buffers of fixed size.
//!
//! The agent exits by itself after [`AGENT_IDLE`] without an operation (every operation touches
//! a file in the pod's own emptyDir), so a CLI killed mid-way leaves a finished pod, not a running
//! one, and the next opening of that claim deletes it; [`Store::close`] deletes it as soon as the caller is done. A session that breaks is noticed
//! through kube's status channel (whose sender goes with the session): reads then stop instead of
//! waiting for pipes nobody will close.
//!
//! This room talks to Kubernetes (act); the agent pod's builder is `objects::pvc_agent`, the pure
//! frame codec is `archive::frame`. The archive sees the agent only as an `archive::store::Remote`.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams, AttachedProcess, DeleteParams, PostParams};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::archive::frame::frame;
use crate::archive::store::{Location, ObjectInfo, Remote, Store, StoreError, Stored};
use crate::error::{BackupError, Error};
pub use crate::objects::pvc_agent::{AGENT_IDLE, ALIVE_FILE, MOUNT_DIR};
use crate::objects::pvc_agent::{LABEL_AGENT_OF, agent_pod, agent_pod_name, mounted_dir};

mod agent;
pub use agent::{AgentOp, WireObject, WireStored, run_agent};

/// How long a new agent pod may take to start (image present, claim bound and mounted).
const AGENT_START: Duration = Duration::from_secs(180);
/// How long an agent whose data stopped may take to report before its session is cut.
const AGENT_REPORT: Duration = Duration::from_secs(5);
/// Buffer between the exec stream and our readers/writers (each direction).
const EXEC_BUF: usize = 1024 * 1024;
/// Most stderr (error text) kept from a remote command.
const STDERR_LIMIT: u64 = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// The caller's side: a store backend that drives an agent pod
// ---------------------------------------------------------------------------------------------

/// A running agent pod serving one pvc:// location.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

struct AgentInner {
    pods: Api<Pod>,
    namespace: String,
    pod: String,
    location: Location,
    /// The location's directory inside the pod.
    root: String,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("pod", &self.inner.pod)
            .finish()
    }
}

/// Opens `pvc://claim/path` in namespace `ns`: the claim must exist; an agent pod of `image`
/// mounts it. A missing claim is a usage error and creates nothing.
pub async fn open(
    client: &kube::Client,
    ns: &str,
    loc: &Location,
    image: &str,
) -> Result<Store, Error> {
    let Location::Pvc { claim, .. } = loc else {
        return Ok(Store::open(loc, None).await.map_err(BackupError::from)?);
    };
    let kube_err = |verb: &'static str, kind: &'static str, name: &str, e: kube::Error| {
        Error::kube(verb, kind, ns, name, e)
    };
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let pvc = claims
        .get_opt(claim)
        .await
        .map_err(|e| kube_err("get", "PersistentVolumeClaim", claim, e))?;
    let Some(pvc) = pvc else {
        return Err(Error::Usage(format!(
            "{loc}: PersistentVolumeClaim {ns}/{claim} does not exist; create it first (any ReadWriteOnce claim with room for the backups) or fix the claim name"
        )));
    };
    if pvc.metadata.deletion_timestamp.is_some() {
        return Err(Error::Usage(format!(
            "{loc}: PersistentVolumeClaim {ns}/{claim} is being deleted; use another claim"
        )));
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    remove_finished_agents(&pods, claim).await;
    let suffix = format!(
        "{:06x}",
        (jiff::Timestamp::now().as_nanosecond() as u64 ^ u64::from(std::process::id())) & 0xff_ffff
    );
    let name = agent_pod_name(claim, &suffix);
    pods.create(&PostParams::default(), &agent_pod(&name, ns, claim, image))
        .await
        .map_err(|e| kube_err("create", "Pod", &name, e))?;
    let agent = Agent {
        inner: Arc::new(AgentInner {
            pods: pods.clone(),
            namespace: ns.into(),
            pod: name.clone(),
            location: loc.clone(),
            root: mounted_dir(loc)
                .unwrap_or_else(|| PathBuf::from(MOUNT_DIR))
                .display()
                .to_string(),
        }),
    };
    let running = tokio::time::timeout(
        AGENT_START,
        kube::runtime::wait::await_condition(
            pods.clone(),
            &name,
            kube::runtime::conditions::is_pod_running(),
        ),
    )
    .await;
    let failed = match running {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(format!("watching it failed: {e}")),
        Err(_) => Some(format!(
            "it did not start within {}s{}",
            AGENT_START.as_secs(),
            pending_reason(&pods, &name).await
        )),
    };
    if let Some(why) = failed {
        agent.close().await;
        return Err(BackupError::from(StoreError::Other {
            what: format!("cannot reach {loc} through pod {ns}/{name} (image {image})"),
            detail: format!(
                "{why}; check that the claim is bound and not mounted on another node, and that the image is pullable (--tools-image / KUBECTL_ETCD_TOOLS_IMAGE)"
            ),
            transient: false,
            source: None,
        })
        .into());
    }
    Ok(Store::remote(loc, Arc::new(agent)))
}

/// Deletes the finished agent pods of `claim` (left by commands that were killed: their agents
/// exited when idle). Best effort: a leftover is only clutter.
async fn remove_finished_agents(pods: &Api<Pod>, claim: &str) {
    let lp = kube::api::ListParams::default().labels(&format!("{LABEL_AGENT_OF}={claim}"));
    let Ok(list) = pods.list(&lp).await else {
        return;
    };
    for pod in list.items {
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded" | "Failed"))
            && let Some(name) = pod.metadata.name.as_deref()
        {
            let _ = pods.delete(name, &DeleteParams::default()).await;
        }
    }
}

/// Why a pod is not running yet, from its status (": reason: message"), or "".
async fn pending_reason(pods: &Api<Pod>, name: &str) -> String {
    let Ok(pod) = pods.get(name).await else {
        return String::new();
    };
    let st = pod.status.unwrap_or_default();
    let cond = st
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.status != "True" && c.message.is_some())
        .map(|c| {
            format!(
                "{}: {}",
                c.reason.unwrap_or_default(),
                c.message.unwrap_or_default()
            )
        });
    let waiting = st
        .container_statuses
        .unwrap_or_default()
        .into_iter()
        .find_map(|c| c.state.and_then(|s| s.waiting))
        .map(|w| {
            format!(
                "{}: {}",
                w.reason.unwrap_or_default(),
                w.message.unwrap_or_default()
            )
        });
    match cond.or(waiting) {
        Some(r) => format!(" ({r})"),
        None => String::new(),
    }
}

/// The output of a finished remote command.
struct Finished {
    stdout: Vec<u8>,
}

impl Agent {
    /// Deletes the agent pod (best effort: an agent left behind exits after [`AGENT_IDLE`]).
    pub async fn close(&self) {
        let dp = DeleteParams {
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        if let Err(e) = self.inner.pods.delete(&self.inner.pod, &dp).await {
            tracing::warn!(
                namespace = %self.inner.namespace,
                pod = %self.inner.pod,
                error = %e,
                "could not delete the pvc agent pod; it exits by itself when idle"
            );
        }
    }

    fn url(&self, key: &str) -> String {
        self.inner.location.object_url(key)
    }

    async fn start(&self, op: &[&str], stdin: bool) -> Result<AttachedProcess, StoreError> {
        let mut cmd: Vec<String> = vec![
            "/usr/local/bin/kubectl-etcd".into(),
            "snapshot".into(),
            "agent".into(),
            "--root".into(),
            self.inner.root.clone(),
        ];
        cmd.extend(op.iter().map(|s| s.to_string()));
        let ap = AttachParams::default()
            .container("agent")
            .stdin(stdin)
            .stdout(true)
            .stderr(true)
            .max_stdin_buf_size(EXEC_BUF)
            .max_stdout_buf_size(EXEC_BUF);
        self.inner
            .pods
            .exec(&self.inner.pod, cmd, &ap)
            .await
            .map_err(|e| StoreError::Other {
                what: format!(
                    "cannot run {} in pod {}/{}",
                    op.first().copied().unwrap_or(""),
                    self.inner.namespace,
                    self.inner.pod
                ),
                detail: e.to_string(),
                transient: true,
                source: Some(Box::new(e)),
            })
    }

    /// The remote command's verdict: Ok, or its error text (stderr) with pod paths shown as URLs.
    fn verdict(
        &self,
        what: &str,
        status: Option<Status>,
        stderr: Vec<u8>,
    ) -> Result<(), StoreError> {
        let ok = status
            .as_ref()
            .is_some_and(|s| s.status.as_deref() == Some("Success"));
        if ok {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&stderr);
        let text = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.trim_start_matches("error: "))
            .collect::<Vec<_>>()
            .join("; ");
        let pvc_url = self.inner.location.to_string();
        let text = text
            .replace(&format!("file://{}", self.inner.root), &pvc_url)
            .replace(&self.inner.root, &pvc_url);
        let detail = if text.is_empty() {
            status
                .and_then(|s| s.message)
                .unwrap_or_else(|| "the connection to the agent pod broke".into())
        } else {
            text
        };
        Err(StoreError::Other {
            what: what.into(),
            detail,
            transient: false,
            source: None,
        })
    }

    /// Runs an operation without input and returns its stdout.
    async fn run(&self, what: &str, op: &[&str]) -> Result<Finished, StoreError> {
        let mut ap = self.start(op, false).await?;
        let status = ap.take_status();
        let out = tokio::spawn(read_all(ap.stdout(), u64::MAX));
        let err = tokio::spawn(read_all(ap.stderr(), STDERR_LIMIT));
        let status = async {
            match status {
                Some(s) => s.await,
                None => None,
            }
        };
        let (status, stdout, stderr) = finish(status, out, err).await;
        drop(ap);
        self.verdict(what, status, stderr)?;
        Ok(Finished { stdout })
    }

    pub async fn check(&self) -> Result<(), StoreError> {
        self.run(
            &format!("cannot write to {}", self.inner.location),
            &["check"],
        )
        .await
        .map(|_| ())
    }

    pub async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        let f = self
            .run(&format!("cannot read {}", self.url(key)), &["head", key])
            .await?;
        let head: Option<WireObject> = parse_answer(&f.stdout, &self.url(key))?;
        Ok(head.map(Into::into))
    }

    pub async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, StoreError> {
        let what = format!("cannot list {}", self.inner.location);
        let f = self.run(&what, &["list", prefix]).await?;
        let list: Vec<WireObject> = parse_answer(&f.stdout, &what)?;
        Ok(list.into_iter().map(Into::into).collect())
    }

    pub async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.run(
            &format!("cannot delete {}", self.url(key)),
            &["delete", key],
        )
        .await
        .map(|_| ())
    }

    /// Streams `body` into `key` (see the module doc for the frames).
    pub async fn put<R>(
        &self,
        key: &str,
        body: R,
        progress: &(dyn Fn(u64) + Send + Sync),
    ) -> Result<Stored, StoreError>
    where
        R: AsyncRead + Unpin + Send,
    {
        let what = format!("cannot store {}", self.url(key));
        let mut ap = self.start(&["put", key], true).await?;
        let status = ap.take_status();
        // Kept open until the verdict: closing stdin ends the whole session on the v4 protocol.
        let mut stdin = ap
            .stdin()
            .ok_or_else(|| StoreError::other(&what, "no stdin"))?;
        let out = tokio::spawn(read_all(ap.stdout(), 64 * 1024));
        let err = tokio::spawn(read_all(ap.stderr(), STDERR_LIMIT));
        let sent = frame(body, &mut stdin, progress).await;
        let status = match (status, &sent) {
            (Some(s), Ok(_)) => s.await,
            // The data stopped (its source failed, or the agent is gone): an agent still waiting
            // for frames that never come gets a moment to report, then the session is cut (it
            // then removes its partial file).
            (Some(s), Err(_)) => {
                let status = tokio::time::timeout(AGENT_REPORT, s).await.ok().flatten();
                if status.is_none() {
                    ap.abort();
                }
                status
            }
            (None, _) => None,
        };
        let (status, stdout, stderr) = finish(async { status }, out, err).await;
        drop(stdin);
        drop(ap);
        let sent = sent.map_err(|e| StoreError::Io {
            what: format!("reading the data to store at {} failed", self.url(key)),
            source: e,
        });
        if status.is_none()
            && let Err(e) = sent
        {
            return Err(e);
        }
        // The agent's verdict first: a broken pipe on our side is usually its failure.
        self.verdict(&what, status, stderr)?;
        let (bytes, sha256_hex) = sent?;
        let stored: WireStored = parse_answer(&stdout, &self.url(key))?;
        if stored.bytes != bytes || !stored.sha256.eq_ignore_ascii_case(&sha256_hex) {
            return Err(StoreError::other(
                what,
                format!(
                    "the agent stored {} bytes with sha256 {}, {bytes} bytes with sha256 {sha256_hex} were sent",
                    stored.bytes, stored.sha256
                ),
            ));
        }
        Ok(Stored {
            key: key.into(),
            bytes,
            sha256_hex,
        })
    }

    /// A reader of `key`: the agent's stdout, which fails at its end unless every byte of the
    /// object came and the agent succeeded.
    ///
    /// An exec session can end successfully with its stdout cut short (kubernetes#124571: the
    /// status frame overtakes the last output frames, and kube stops reading at the status), so
    /// the bytes are counted against the object's size: a session that ended early is followed by
    /// another from the first missing byte (`get --from N --size S`, which the agent refuses if the
    /// object's size changed), as long as each one brings data. A reader never sees a short object
    /// as a whole one.
    pub async fn get(
        &self,
        key: &str,
    ) -> Result<(Box<dyn AsyncRead + Unpin + Send>, Option<u64>), StoreError> {
        let Some(info) = self.head(key).await? else {
            return Err(StoreError::NotFound(self.url(key)));
        };
        let size = info.size;
        let first = self.start_get(key, 0, size).await?;
        let (tx, rx) = tokio::sync::mpsc::channel::<io::Result<Bytes>>(4);
        let agent = self.clone();
        let key = key.to_string();
        tokio::spawn(async move {
            let what = format!("cannot read {}", agent.url(&key));
            let mut session = Some(first);
            let mut got = 0u64;
            loop {
                let ap = match session.take() {
                    Some(ap) => ap,
                    None => match agent.start_get(&key, got, size).await {
                        Ok(ap) => ap,
                        Err(e) => {
                            let _ = tx.send(Err(io::Error::other(e.to_string()))).await;
                            return;
                        }
                    },
                };
                let Some(n) = agent.relay(ap, &what, &tx).await else {
                    return; // failed (the reader was told) or went away
                };
                got += n;
                let short = match resumed(got, size, n) {
                    Resume::Done => return,
                    Resume::From(at) => {
                        tracing::info!(object = %agent.url(&key), at, size, "an exec session ended short (kubernetes#124571): reading on from the first missing byte");
                        continue;
                    }
                    Resume::Fail(why) => why,
                };
                let _ = tx
                    .send(Err(io::Error::other(format!("{what}: {short}"))))
                    .await;
                return;
            }
        });
        let stream = tokio_stream_from(rx);
        Ok((
            Box::new(tokio_util::io::StreamReader::new(stream)),
            Some(size),
        ))
    }

    async fn start_get(
        &self,
        key: &str,
        from: u64,
        size: u64,
    ) -> Result<AttachedProcess, StoreError> {
        let (from, size) = (from.to_string(), size.to_string());
        self.start(&["get", key, "--from", &from, "--size", &size], false)
            .await
    }

    /// Passes one `get` session's stdout to `tx`; the bytes it passed once the agent succeeded,
    /// `None` once it failed (the error was sent) or the reader went away.
    async fn relay(
        &self,
        mut ap: AttachedProcess,
        what: &str,
        tx: &tokio::sync::mpsc::Sender<io::Result<Bytes>>,
    ) -> Option<u64> {
        let status = ap.take_status();
        let Some(mut out) = ap.stdout() else {
            let _ = tx
                .send(Err(io::Error::other(format!("{what}: no stdout"))))
                .await;
            return None;
        };
        let err = tokio::spawn(read_all(ap.stderr(), STDERR_LIMIT));
        let mut status = std::pin::pin!(async move {
            match status {
                Some(s) => s.await,
                None => None,
            }
        });
        // Resolved once the session ended: its stdout is then all buffered, and closed unless
        // the session broke (then nothing closes it: reads stop after a short wait).
        let mut ended: Option<Option<Status>> = None;
        let mut buf = BytesMut::with_capacity(64 * 1024);
        let mut passed = 0u64;
        loop {
            buf.reserve(64 * 1024);
            let read = match ended {
                None => tokio::select! {
                    r = out.read_buf(&mut buf) => Some(r),
                    st = &mut status => { ended = Some(st); continue; }
                },
                Some(_) => tokio::time::timeout(AGENT_REPORT, out.read_buf(&mut buf))
                    .await
                    .ok(),
            };
            match read {
                Some(Ok(0)) | None => break,
                Some(Ok(n)) => {
                    passed += n as u64;
                    if tx.send(Ok(buf.split().freeze())).await.is_err() {
                        return None; // the reader went away
                    }
                }
                Some(Err(e)) => {
                    let _ = tx.send(Err(e)).await;
                    return None;
                }
            }
        }
        let status = match ended {
            Some(st) => st,
            None => status.await,
        };
        let stderr = match tokio::time::timeout(AGENT_REPORT, err).await {
            Ok(Ok(e)) => e,
            _ => Vec::new(),
        };
        drop(ap);
        match self.verdict(what, status, stderr) {
            Ok(()) => Some(passed),
            Err(e) => {
                let _ = tx.send(Err(io::Error::other(e.to_string()))).await;
                None
            }
        }
    }
}

/// What follows a `get` session that succeeded, having brought `last` bytes: `got` of `size`
/// came in all.
#[derive(Debug, PartialEq, Eq)]
enum Resume {
    Done,
    /// Another session, from this byte.
    From(u64),
    Fail(String),
}

fn resumed(got: u64, size: u64, last: u64) -> Resume {
    if got == size {
        Resume::Done
    } else if got > size {
        Resume::Fail(format!(
            "{got} bytes came for an object of {size}: it changed while being read; read it again"
        ))
    } else if last == 0 {
        Resume::Fail(format!(
            "the agent's output stopped at byte {got} of {size}, and a new session brought nothing more; read it again"
        ))
    } else {
        Resume::From(got)
    }
}

impl Remote for Agent {
    fn check(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(Agent::check(self))
    }
    fn put<'a>(
        &'a self,
        key: &'a str,
        body: &'a mut (dyn AsyncRead + Unpin + Send),
        progress: &'a (dyn Fn(u64) + Send + Sync),
    ) -> BoxFuture<'a, Result<Stored, StoreError>> {
        Box::pin(Agent::put(self, key, body, progress))
    }
    fn get<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<(Box<dyn AsyncRead + Unpin + Send>, Option<u64>), StoreError>> {
        Box::pin(Agent::get(self, key))
    }
    fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<ObjectInfo>, StoreError>> {
        Box::pin(Agent::list(self, prefix))
    }
    fn head<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<ObjectInfo>, StoreError>> {
        Box::pin(Agent::head(self, key))
    }
    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(Agent::delete(self, key))
    }
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(Agent::close(self))
    }
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::Receiver<io::Result<Bytes>>,
) -> impl futures::Stream<Item = io::Result<Bytes>> + Unpin + Send {
    Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
}

/// The end of a remote command: its status and what its output readers collected. A session
/// that ended normally closed its pipes; one that broke did not (kube then drops the status
/// sender: `None`), so the readers get a short wait and are then given up.
async fn finish(
    status: impl std::future::Future<Output = Option<Status>>,
    out: tokio::task::JoinHandle<Vec<u8>>,
    err: tokio::task::JoinHandle<Vec<u8>>,
) -> (Option<Status>, Vec<u8>, Vec<u8>) {
    let status = status.await;
    let collect = |task: tokio::task::JoinHandle<Vec<u8>>| async move {
        let abort = task.abort_handle();
        match tokio::time::timeout(AGENT_REPORT, task).await {
            Ok(Ok(v)) => v,
            _ => {
                abort.abort();
                Vec::new()
            }
        }
    };
    let (stdout, stderr) = tokio::join!(collect(out), collect(err));
    (status, stdout, stderr)
}

async fn read_all<R: AsyncRead + Unpin>(r: Option<R>, limit: u64) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(r) = r {
        let _ = r.take(limit).read_to_end(&mut out).await;
    }
    out
}

fn parse_answer<T: serde::de::DeserializeOwned>(
    stdout: &[u8],
    what: &str,
) -> Result<T, StoreError> {
    serde_json::from_slice(stdout).map_err(|e| {
        StoreError::other(
            format!("unexpected answer about {what} from the pvc agent"),
            format!(
                "{e}: {:?}",
                String::from_utf8_lossy(&stdout[..stdout.len().min(200)])
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_cut_short_resumes_from_its_first_missing_byte_while_sessions_bring_data() {
        assert_eq!(resumed(100, 100, 100), Resume::Done);
        assert_eq!(resumed(0, 0, 0), Resume::Done);
        // kubernetes#124571: a session that succeeded with its output cut short
        assert_eq!(resumed(60, 100, 60), Resume::From(60));
        assert_eq!(resumed(90, 100, 30), Resume::From(90));
        // a session that brought nothing: no endless loop
        assert!(matches!(resumed(90, 100, 0), Resume::Fail(m) if m.contains("byte 90 of 100")));
        // more than the object: it changed
        assert!(matches!(resumed(101, 100, 41), Resume::Fail(m) if m.contains("changed")));
    }
}
