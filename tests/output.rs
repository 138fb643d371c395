//! What the binary writes where nobody watches a terminal: a CI job, a pipe, a pod's log.

use std::process::Command;

/// Log lines on a piped stderr are plain text: no colour codes for a CI log or a log
/// collector to choke on (a pod's stderr is never a terminal either).
#[test]
fn piped_stderr_carries_no_colour_codes() {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-etcd"))
        .args([
            "-vv",
            "status",
            "demo",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        ])
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .output()
        .expect("run kubectl-etcd");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("DEBUG"), "no log line to look at: {err}");
    assert!(!err.contains('\u{1b}'), "colour codes in {err:?}");
    assert_eq!(out.status.code(), Some(5), "{err}");
}
