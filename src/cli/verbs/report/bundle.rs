//! The archive itself: what may hold a secret taken out (`redact`, `secret_summary`), the
//! bundle's files, failures and index, and the tar.gz they are packed into.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use serde::Serialize;
use serde_json::{Value, json};

use super::REDACTED;
use crate::cli::output;
use crate::error::Error;

/// An object as JSON with what may hold a secret taken out (`redact`).
pub(super) fn to_value<T: Serialize>(v: &T) -> Value {
    let mut v = serde_json::to_value(v).unwrap_or(Value::Null);
    redact(&mut v);
    v
}

/// Takes out what may hold a secret, wherever it sits in an object: env values (names and
/// `valueFrom` references stay), the last-applied-configuration annotation (a copy of what
/// someone applied, maybe with such values), and managedFields (noise).
pub fn redact(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("managedFields");
            if let Some(Value::Array(env)) = m.get_mut("env") {
                for e in env {
                    if let Some(value) = e.get_mut("value") {
                        *value = json!(REDACTED);
                    }
                }
            }
            if let Some(Value::Object(a)) = m.get_mut("annotations")
                && let Some(value) = a.get_mut("kubectl.kubernetes.io/last-applied-configuration")
            {
                *value = json!(REDACTED);
            }
            m.values_mut().for_each(redact);
        }
        Value::Array(a) => a.iter_mut().for_each(redact),
        _ => {}
    }
}

/// A Secret as the archive shows it: name, type and keys.
pub fn secret_summary(s: &Secret) -> Value {
    let mut keys: BTreeSet<&str> = BTreeSet::new();
    keys.extend(s.data.iter().flatten().map(|(k, _)| k.as_str()));
    keys.extend(s.string_data.iter().flatten().map(|(k, _)| k.as_str()));
    json!({ "name": s.name_any(), "type": s.type_, "keys": keys })
}

/// Names of the Secrets the objects refer to: fields named `…Secret` (`spec.tls.serverSecret`,
/// `spec.backup.credentialsSecret`, …), `secretName` (volumes) and `secretKeyRef`/`secretRef`.
pub fn secret_names(objects: &[Value]) -> BTreeSet<String> {
    pub(super) fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    match v {
                        Value::String(s) if k.ends_with("Secret") || k == "secretName" => {
                            out.insert(s.clone());
                        }
                        Value::Object(r) if k == "secretKeyRef" || k == "secretRef" => {
                            if let Some(Value::String(s)) = r.get("name") {
                                out.insert(s.clone());
                            }
                        }
                        _ => {}
                    }
                    walk(v, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    objects.iter().for_each(|o| walk(o, &mut out));
    out
}

/// A read that failed: what, and why (for REPORT.md and index.json).
#[derive(Debug, Serialize)]
pub(super) struct Failed {
    pub(super) what: String,
    pub(super) error: String,
}

/// One file of the archive.
pub(super) struct File {
    pub(super) path: String,
    pub(super) what: String,
    pub(super) bytes: Vec<u8>,
}

/// When and what the report is of.
pub(super) struct Meta {
    pub(super) subject: String,
    pub(super) created: String,
    pub(super) since: String,
    pub(super) seconds: f64,
}

/// The files collected so far, the reads that failed and notes for people.
#[derive(Default)]
pub(super) struct Bundle {
    pub(super) files: Vec<File>,
    pub(super) failed: Vec<Failed>,
    pub(super) notes: Vec<String>,
}

impl Bundle {
    pub(super) fn text(&mut self, path: &str, what: &str, text: String) {
        self.files.push(File {
            path: path.into(),
            what: what.into(),
            bytes: text.into_bytes(),
        });
    }
    pub(super) fn yaml<T: Serialize>(&mut self, path: &str, what: &str, v: &T) {
        self.text(path, what, output::yaml(v));
    }
    pub(super) fn json<T: Serialize>(&mut self, path: &str, what: &str, v: &T) {
        let text = serde_json::to_string_pretty(v).unwrap_or_default();
        self.text(path, what, text);
    }
    /// Lists a failed read; only an unreachable API server is passed on (nothing more can be read).
    pub(super) fn fail(&mut self, e: Error) -> Result<(), Error> {
        if let Error::ApiUnreachable(_) = e {
            return Err(e);
        }
        // The report's own advice on RBAC denials would repeat itself on every line.
        let line = e.report();
        let line = line.split(" (RBAC denied it").next().unwrap_or_default();
        let (what, error) = match line.split_once(": ") {
            Some((w, r)) => (w.to_string(), r.to_string()),
            None => (line.to_string(), String::new()),
        };
        self.failed.push(Failed {
            what: what.trim_start_matches("failed to ").into(),
            error,
        });
        Ok(())
    }
    pub(super) fn merge(&mut self, other: Bundle) {
        self.files.extend(other.files);
        self.failed.extend(other.failed);
        self.notes.extend(other.notes);
    }

    /// `index.json`: every file (path, bytes, what) and every failed read.
    pub(super) fn index(&self, meta: &Meta) -> Value {
        json!({
            "report": meta.subject,
            "createdAt": meta.created,
            "logsSince": meta.since,
            "collectedInSeconds": (meta.seconds * 10.0).round() / 10.0,
            "kubectlEtcdVersion": env!("CARGO_PKG_VERSION"),
            "files": self.files.iter().map(|f| json!({ "path": f.path, "bytes": f.bytes.len(), "what": f.what })).collect::<Vec<_>>(),
            "failed": self.failed,
            "notes": self.notes,
        })
    }

    /// `REPORT.md`: the same for people.
    pub(super) fn readme(&self, meta: &Meta) -> String {
        let mut s = format!(
            "# kubectl-etcd report: {}\n\nCreated {} by kubectl-etcd {} in {:.1} s; logs of the last {}.\n\
             Secret values are never included: Secrets appear by name, type and keys, env values and\n\
             last-applied annotations as \"{REDACTED}\".\n\n## Files\n\n| file | bytes | what |\n|---|---|---|\n",
            meta.subject,
            meta.created,
            env!("CARGO_PKG_VERSION"),
            meta.seconds,
            meta.since
        );
        for f in &self.files {
            s.push_str(&format!(
                "| {} | {} | {} |\n",
                f.path,
                f.bytes.len(),
                f.what
            ));
        }
        s.push_str("\n## Reads that failed\n\n");
        if self.failed.is_empty() {
            s.push_str("None.\n");
        }
        for f in &self.failed {
            s.push_str(&format!("- {}: {}\n", f.what, f.error));
        }
        if !self.notes.is_empty() {
            s.push_str("\n## Notes\n\n");
            for n in &self.notes {
                s.push_str(&format!("- {n}\n"));
            }
        }
        s
    }

    /// The tar archive: REPORT.md and index.json first, then the files, all under `top/`.
    pub(super) fn tar(&self, top: &str, meta: &Meta, mtime: i64) -> Vec<u8> {
        let index = serde_json::to_string_pretty(&self.index(meta)).unwrap_or_default();
        let readme = self.readme(meta);
        let mut entries: Vec<(String, &[u8])> = vec![
            (format!("{top}/REPORT.md"), readme.as_bytes()),
            (format!("{top}/index.json"), index.as_bytes()),
        ];
        entries.extend(
            self.files
                .iter()
                .map(|f| (format!("{top}/{}", f.path), f.bytes.as_slice())),
        );
        tar(&entries, mtime.max(0) as u64)
    }
}

/// A ustar archive of regular files (mode 0644).
pub(super) fn tar(entries: &[(String, &[u8])], mtime: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for (path, bytes) in entries {
        let mut h = [0u8; 512];
        let (prefix, name) = split_path(path);
        let put = |h: &mut [u8; 512], at: usize, field: &[u8]| {
            h[at..at + field.len()].copy_from_slice(field);
        };
        put(&mut h, 0, name.as_bytes());
        put(&mut h, 100, b"0000644\0");
        put(&mut h, 108, b"0000000\0");
        put(&mut h, 116, b"0000000\0");
        put(&mut h, 124, format!("{:011o}\0", bytes.len()).as_bytes());
        put(&mut h, 136, format!("{mtime:011o}\0").as_bytes());
        put(&mut h, 148, b"        ");
        h[156] = b'0';
        put(&mut h, 257, b"ustar\0");
        put(&mut h, 263, b"00");
        put(&mut h, 345, prefix.as_bytes());
        let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
        put(&mut h, 148, format!("{sum:06o}\0 ").as_bytes());
        out.extend_from_slice(&h);
        out.extend_from_slice(bytes);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

/// ustar's name (100 bytes) and prefix (155 bytes) of a path, split at a `/`; object names are
/// DNS names (≤ 253), so a path that fits neither is cut (never in practice).
pub(super) fn split_path(path: &str) -> (&str, &str) {
    if path.len() <= 100 {
        return ("", path);
    }
    let cut = path
        .char_indices()
        .filter(|(i, c)| *c == '/' && path.len() - i - 1 <= 100 && *i <= 155)
        .map(|(i, _)| i)
        .next();
    match cut {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", &path[path.len() - 100..]),
    }
}

pub(super) async fn gzip(bytes: &[u8]) -> Result<Vec<u8>, Error> {
    use tokio::io::AsyncWriteExt;
    let mut enc = async_compression::tokio::write::GzipEncoder::new(Vec::new());
    enc.write_all(bytes).await?;
    enc.shutdown().await?;
    Ok(enc.into_inner())
}
