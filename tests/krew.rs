//! The krew plugin: release.sh's archive and manifest pass krew's own validator
//! (`validate-krew-manifest` from the Go module sigs.k8s.io/krew, which installs the plugin through
//! `kubectl krew` from the manifest's uri: here a local HTTP server, the archive just built), and an
//! offline `kubectl krew install --manifest --archive` gives a working `kubectl etcd`. krew and the
//! validator are built by tests/cluster/helm.sh (cached under /var/cache/kubectl-etcd). The archive
//! holds this build's (debug) binary; release.sh builds the release one.
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod common;

use common::packaging_tool;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn must(what: &str, o: Output) -> String {
    assert!(
        o.status.success(),
        "{what} failed ({})\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A directory whose `kubectl-krew` is krew (kubectl finds plugins on PATH), put before PATH.
fn path_with_krew(dir: &Path) -> String {
    std::os::unix::fs::symlink(packaging_tool("krew"), dir.join("kubectl-krew")).unwrap();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Serves every file of `dir` by name over HTTP on 127.0.0.1 (krew downloads the manifest's uri);
/// returns the base URL. The server thread lives as long as the test process.
fn serve(dir: PathBuf) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut line = String::new();
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            // drain the headers
            let mut h = String::new();
            while reader.read_line(&mut h).is_ok_and(|n| n > 2) {
                h.clear();
            }
            let name = line
                .split_whitespace()
                .nth(1)
                .unwrap_or("/")
                .rsplit('/')
                .next()
                .unwrap_or("");
            match std::fs::read(dir.join(name)) {
                Ok(body) => {
                    let _ = write!(
                        conn,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = conn.write_all(&body);
                }
                Err(_) => {
                    let _ = conn.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                }
            }
        }
    });
    base
}

/// release.sh's archive and krew manifest of this build's binary, into `out`, the manifest's uri
/// under `url_base`.
fn release(out: &Path, url_base: &str) {
    let mut c = Command::new("./release.sh");
    c.args([
        "--binary",
        env!("CARGO_BIN_EXE_kubectl-etcd"),
        "--no-image",
        "--no-chart",
    ])
    .arg("--out")
    .arg(out)
    .args(["--url-base", url_base]);
    must("release.sh --no-image --no-chart", c.output().unwrap());
}

fn archive_name() -> String {
    format!(
        "kubectl-etcd_v{}_linux_amd64.tar.gz",
        env!("CARGO_PKG_VERSION")
    )
}

#[test]
fn the_checked_in_manifest_passes_krews_structural_validation() {
    let o = Command::new(packaging_tool("validate-krew-manifest"))
        .args(["-skip-install", "-manifest", "plugins/etcd.yaml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    must("validate-krew-manifest -skip-install plugins/etcd.yaml", o);
    assert!(err.contains("structural validation OK"), "{err}");
}

#[test]
fn the_release_archive_passes_krews_validator_with_its_install() {
    let tmp = tempfile::tempdir().unwrap();
    let dist = tmp.path().join("dist");
    // the server serves dist/ by file name; the uri is only known once the port is
    std::fs::create_dir_all(&dist).unwrap();
    let base = serve(dist.clone());
    release(&dist, &base);
    let manifest = std::fs::read_to_string(dist.join("etcd.yaml")).unwrap();
    let sums = std::fs::read_to_string(dist.join(format!("{}.sha256", archive_name()))).unwrap();
    let sha = sums.split_whitespace().next().unwrap();
    assert!(
        manifest.contains(&format!("sha256: \"{sha}\"")),
        "{manifest}"
    );
    assert!(manifest.contains(&format!(
        "{base}/v{}/{}",
        env!("CARGO_PKG_VERSION"),
        archive_name()
    )));
    // the archive holds the binary, LICENSE and the completions
    let list = must(
        "tar tzf",
        Command::new("tar")
            .arg("tzf")
            .arg(dist.join(archive_name()))
            .output()
            .unwrap(),
    );
    for f in [
        "./kubectl-etcd",
        "./LICENSE",
        "./completions/kubectl-etcd.bash",
        "./completions/_kubectl-etcd",
        "./completions/kubectl-etcd.fish",
        "./completions/kubectl_complete-etcd",
    ] {
        assert!(
            list.lines().any(|l| l == f),
            "{f} missing from the archive:\n{list}"
        );
    }
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let o = Command::new(packaging_tool("validate-krew-manifest"))
        .arg("-manifest")
        .arg(dist.join("etcd.yaml"))
        .env("PATH", path_with_krew(&bin))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    must("validate-krew-manifest (with its krew install)", o);
    assert!(err.contains("all 1 spec.platforms installed fine"), "{err}");
}

#[test]
fn an_offline_krew_install_gives_a_working_kubectl_etcd() {
    let tmp = tempfile::tempdir().unwrap();
    let dist = tmp.path().join("dist");
    // nothing listens there: krew must not download
    release(&dist, "http://127.0.0.1:9");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let path = path_with_krew(&bin);
    let root = tmp.path().join("krew");
    let o = Command::new("kubectl")
        .arg("krew")
        .arg("install")
        .arg(format!("--manifest={}", dist.join("etcd.yaml").display()))
        .arg(format!("--archive={}", dist.join(archive_name()).display()))
        .env("PATH", &path)
        .env("KREW_ROOT", &root)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    must("kubectl krew install --manifest --archive", o);
    assert!(err.contains("Installed plugin: etcd"), "{err}");
    let want = format!("kubectl-etcd {}", env!("CARGO_PKG_VERSION"));
    // through krew's install root, as kubectl finds the plugin there
    let o = Command::new("kubectl")
        .args(["etcd", "--version"])
        .env("PATH", format!("{}:{path}", root.join("bin").display()))
        .env("KREW_ROOT", &root)
        .output()
        .unwrap();
    let out = must("kubectl etcd --version (krew's install root)", o);
    assert_eq!(out.trim(), want);
    let link = std::fs::read_link(root.join("bin/kubectl-etcd")).expect("krew links its bin/");
    assert!(
        link.starts_with(root.join("store/etcd")),
        "{}",
        link.display()
    );
    // krew's receipt of the install (what `krew upgrade`/`uninstall` go by), and the completions
    // and LICENSE came along
    let receipt = std::fs::read_to_string(root.join("receipts/etcd.yaml")).expect("krew's receipt");
    assert!(
        receipt.contains(&format!("version: v{}", env!("CARGO_PKG_VERSION"))),
        "{receipt}"
    );
    let store = root.join(format!("store/etcd/v{}", env!("CARGO_PKG_VERSION")));
    for f in [
        "LICENSE",
        "completions/kubectl_complete-etcd",
        "completions/kubectl-etcd.bash",
    ] {
        assert!(
            store.join(f).is_file(),
            "{f} not installed under {}",
            store.display()
        );
    }
}
