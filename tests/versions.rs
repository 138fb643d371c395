//! One version everywhere: Cargo.toml's is the binary's, the chart's (version and appVersion), the
//! krew manifest's, the operator image's tag and the default tools image's (release.sh checks the
//! same before it writes anything).
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

use std::process::Command;

const V: &str = env!("CARGO_PKG_VERSION");

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The value of a top-level `key: value` line (quotes dropped).
fn field(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no {key}: line"))
        .trim()
        .trim_matches('"')
        .to_string()
}

#[test]
fn the_binary_reports_the_cargo_version() {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-etcd"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("kubectl-etcd {V}")
    );
}

#[test]
fn the_chart_is_the_cargo_version_and_runs_the_image_of_that_version() {
    let chart = read("charts/kubectl-etcd/Chart.yaml");
    assert_eq!(
        field(&chart, "version"),
        V,
        "charts/kubectl-etcd/Chart.yaml version"
    );
    assert_eq!(
        field(&chart, "appVersion"),
        V,
        "charts/kubectl-etcd/Chart.yaml appVersion"
    );
    // the chart's image: repository + (tag, default appVersion) = the default operator image
    let values = read("charts/kubectl-etcd/values.yaml");
    let repo = values
        .lines()
        .find_map(|l| l.trim().strip_prefix("repository:"))
        .unwrap()
        .trim();
    let tag = values
        .lines()
        .find_map(|l| l.trim().strip_prefix("tag:"))
        .unwrap()
        .trim();
    assert_eq!(tag, "\"\"", "image.tag must default to the appVersion");
    assert_eq!(
        format!("{repo}:{V}"),
        kubectl_etcd::objects::install::DEFAULT_IMAGE
    );
}

#[test]
fn the_operator_and_tools_images_are_tagged_with_the_cargo_version() {
    let want = format!("ghcr.io/kubectl-etcd/kubectl-etcd:{V}");
    assert_eq!(kubectl_etcd::objects::install::DEFAULT_IMAGE, want);
    assert_eq!(kubectl_etcd::model::DEFAULT_TOOLS_IMAGE, want);
    assert!(read("release.sh").contains("IMAGE=ghcr.io/kubectl-etcd/kubectl-etcd:$V"));
}

#[test]
fn the_krew_manifest_is_the_cargo_version() {
    let m = read("plugins/etcd.yaml");
    assert!(
        m.contains(&format!("\n  version: v{V}\n")),
        "plugins/etcd.yaml spec.version"
    );
    let archive = format!("/v{V}/kubectl-etcd_v{V}_linux_amd64.tar.gz");
    assert!(
        m.contains(&archive),
        "plugins/etcd.yaml uri names {archive}"
    );
}

fn release(args: &[&str], out: &std::path::Path) -> std::process::Output {
    Command::new("./release.sh")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("release.sh runs")
}

#[test]
fn the_release_artifacts_carry_the_cargo_version() {
    let tmp = tempfile::tempdir().unwrap();
    let dist = tmp.path().join("dist");
    let o = release(
        &["--binary", env!("CARGO_BIN_EXE_kubectl-etcd"), "--no-image"],
        &dist,
    );
    assert!(
        o.status.success(),
        "release.sh failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let archive = format!("kubectl-etcd_v{V}_linux_amd64.tar.gz");
    let chart = format!("kubectl-etcd-{V}.tgz");
    // checksums of every artifact, and they hold
    let sums = read(dist.join("SHA256SUMS").to_str().unwrap());
    for f in [&archive, &chart, "etcd.yaml"] {
        assert!(
            sums.lines().any(|l| l.ends_with(&format!("  {f}"))),
            "{f} not in SHA256SUMS:\n{sums}"
        );
    }
    let check = Command::new("sha256sum")
        .args(["-c", "SHA256SUMS"])
        .current_dir(&dist)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    // the packaged chart says V, the archived binary says V
    let untar = |a: &str| {
        let x = tmp.path().join(format!("x-{a}"));
        std::fs::create_dir_all(&x).unwrap();
        let t = Command::new("tar")
            .arg("xzf")
            .arg(dist.join(a))
            .arg("-C")
            .arg(&x)
            .status()
            .unwrap();
        assert!(t.success(), "tar xzf {a}");
        x
    };
    let chart_yaml = read(
        untar(&chart)
            .join("kubectl-etcd/Chart.yaml")
            .to_str()
            .unwrap(),
    );
    assert_eq!(field(&chart_yaml, "version"), V);
    assert_eq!(field(&chart_yaml, "appVersion"), V);
    let out = Command::new(untar(&archive).join("kubectl-etcd"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("kubectl-etcd {V}")
    );
    assert!(
        read(dist.join("etcd.yaml").to_str().unwrap()).contains(&format!("\n  version: v{V}\n"))
    );
}

#[test]
fn release_refuses_a_binary_of_another_version_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("kubectl-etcd");
    std::fs::write(&fake, "#!/bin/sh\necho 'kubectl-etcd 9.9.9'\n").unwrap();
    Command::new("chmod")
        .arg("755")
        .arg(&fake)
        .status()
        .unwrap();
    let dist = tmp.path().join("dist");
    let o = release(
        &[
            "--binary",
            fake.to_str().unwrap(),
            "--no-image",
            "--no-chart",
        ],
        &dist,
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("reports version 9.9.9, Cargo.toml says {V}")),
        "{err}"
    );
    assert!(
        !dist.exists(),
        "release.sh wrote {} before refusing",
        dist.display()
    );
}
