#!/usr/bin/env bash
# THE test command (README, CI via .ci/run; docs/src/ci.md). First the fast lane, which fails early:
# formatting, clippy, unit tests, the freshness of generated files and the docs' links. Then the
# heavy lane: builds (the docs site too), brings up the
# real Kubernetes testbed (version $KUBE_VERSION, default in tests/cluster/env.sh, built from the Go
# module k8s.io/kubernetes) and the S3 server, runs every test (unit + live + e2e) against them, and
# tears down what it started.
#   KEEP_TESTBED=1   leave the testbed (and S3) running afterwards
#   KUBE_VERSION=1.37.2   another Kubernetes version (a running testbed of another version is refused:
#                         tests/cluster/down.sh --clean first)
#   --newest-k8s     the lane of the newest Kubernetes (KUBE_VERSION, default 1.37.2): create, scale
#                    3-5-3, the fault matrix's volume_lost_ordinal_1 row, backup -> restore through
#                    pvc://, an upgrade with the operator, 3.6 -> 3.7 -> 3.6 with a writer (docs/src/ci.md:
#                    "Kubernetes versions")
#   extra args are passed to the test binaries (after --), e.g. tests/run-all.sh backup
# Exit code = the tests' exit code.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --newest-k8s ]; then
  shift
  export KUBE_VERSION=${KUBE_VERSION:-1.37.2} KE_FAULT_ROWS=${KE_FAULT_ROWS:-volume_lost_ordinal_1}
  set -- create_builds_a_healthy_three_member_cluster scaling_3_5_3_keeps_every_key_readable fault_matrix \
    a_backup_to_a_pvc_restores_into_a_new_cluster a_version_applied_with_the_operator_takes_the_pre_upgrade_snapshot \
    three_six_to_three_seven_and_back_to_three_six "$@"
fi
ROOT=$PWD
C=tests/cluster
. "$C/env.sh"
export KUBECONFIG=$TB/admin.kubeconfig

T0=$(date +%s.%N); TP=$T0
phase() { local now; now=$(date +%s.%N); printf '[run-all] phase %-26s %7.1f s\n' "$1" "$(echo "$now - $TP" | bc)" >&2; TP=$now; }

started_testbed=0 started_s3=0 started_cm=0
TEST_LOG=$ROOT/target/run-all-tests.log
rm -f "$TEST_LOG"
# The end of a failed run: each failed test's panic message (no backtrace frames) and the fault
# matrix table, so the last lines of a CI log say what failed and why.
digest() {
  [ -s "$TEST_LOG" ] || return 0
  echo "[run-all] what failed (from $TEST_LOG):" >&2
  awk '/^failures:$/ {f=1} /panicked at/ {p=14} p>0 { if ($0 !~ /^ *[0-9]+: |^ +at /) print; p-- } /^---- .* stdout ----$/ {print}' "$TEST_LOG" | tail -n 80 >&2
  grep -h '^| \|^\[fault-matrix\]' "$TEST_LOG" | tail -n 40 >&2 || true
}
cleanup() {
  local rc=$?
  set +e
  if [ "${KEEP_TESTBED:-0}" = 1 ]; then
    log "KEEP_TESTBED=1: leaving the testbed and S3 up (export KUBECONFIG=$TB/admin.kubeconfig; . $TB/s3.env)"
  else
    if [ $started_s3 = 1 ]; then "$C/s3.sh" down; fi
    if [ $started_cm = 1 ]; then "$C/cert-manager.sh" down; fi
    if [ $started_testbed = 1 ]; then "$C/down.sh" --clean --net; else log "leaving the testbed this run reused"; fi
  fi
  if [ "$rc" != 0 ]; then digest; fi
  # each test file's exit code and seconds (tests/lanes.sh), so a CI log's last lines say where
  # the time went
  for f in "$ROOT"/target/test-logs/*.rc; do
    [ -e "$f" ] && printf '%s %s\n' "$(basename "$f" .rc)" "$(cat "$f")"
  done | sort -k3 -rn | awk '{printf "%s %s (exit %s, %s s)", (NR==1 ? "[run-all] files:" : ","), $1, $2, $3} END {if (NR) print ""}' >&2
  printf '[run-all] total %.1f s, exit %d\n' "$(echo "$(date +%s.%N) - $T0" | bc)" "$rc" >&2
  exit $rc
}
trap cleanup EXIT

"$C/deps.sh"
phase deps
# The Go builds (Kubernetes, then the etcd binaries; cached per version in $KE_CACHE, so a no-op when
# warm) run beside the Rust build: rustc spends minutes on one core compiling the main crate, and
# the Go build takes the other. Kubernetes' kubectl, the same version as the server, is the one on
# PATH for the scripts and the tests (env.sh puts $K8S_BIN first).
GO_LOG=$ROOT/target/run-all-go-builds.log
mkdir -p "$ROOT/target"
# helm, krew and krew's validator (tests/cluster/helm.sh; the chart/krew/versions tests) and
# kube-router (the testbed's NetworkPolicy enforcer, tests/cluster/netpol.sh) come last:
# cold they take about 10 min, beside the fast lane and the Rust build instead of after them.
# prometheus and promtool (tests/cluster/prometheus.sh) too: the monitoring rules' tests; and
# cert-manager's controllers (tests/cluster/cert-manager.sh): e2e_tls's certManager mode; the fault
# matrix's robustness client (tests/cluster/robustness.sh: etcd's robustness checker, after etcd
# 3.7.3 whose compiled packages it reuses).
( "$C/build-k8s.sh" && { [ ! -x "$C/etcd-bins.sh" ] || "$C/etcd-bins.sh"; } && "$C/robustness.sh" >/dev/null &&
  "$C/prometheus.sh" >/dev/null &&
  "$C/cert-manager.sh" build >/dev/null &&
  for t in helm krew validate-krew-manifest kube-router; do "$C/helm.sh" "$t" >/dev/null || exit 1; done ) >"$GO_LOG" 2>&1 &
go_pid=$!
# cargo-deny (the supply-chain check, deny.toml) is built once from crates.io and cached; cold it
# takes minutes of rustc, so it builds beside the fast lane too and is checked after the builds.
DENY_LOG=$ROOT/target/run-all-cargo-deny.log
"$C/cargo-deny.sh" >"$ROOT/target/cargo-deny.path" 2>"$DENY_LOG" &
deny_pid=$!
# mdBook (the docs site, docs/book.toml) likewise: built once from crates.io and cached, beside the
# fast lane; the site is built after the Rust builds (its links are checked in the fast lane).
MDBOOK_LOG=$ROOT/target/run-all-mdbook.log
"$C/mdbook.sh" >"$ROOT/target/mdbook.path" 2>"$MDBOOK_LOG" &
mdbook_pid=$!
wait_go() {
  local rc=0
  wait "$go_pid" || rc=$?
  cat "$GO_LOG" >&2
  [ "$rc" = 0 ] || die "the Go builds failed (exit $rc; log $GO_LOG)"
}

# The fast lane, before anything slow: formatting, lints (the [lints] table of Cargo.toml, with
# the gates on function size and complexity whose thresholds are in clippy.toml), unit tests,
# generated files (crds/, completions/), the room order (tests/structure.rs) and the docs' links
# (tests/docs.rs) fail the run within minutes, not half an hour.
FAST0=$(date +%s.%N)
fast() {
  local what=$1; shift
  "$@" || die "the fast lane failed at $what after $(printf '%.1f' "$(echo "$(date +%s.%N) - $FAST0" | bc)") s: $*"
  phase "fast: $what"
}
# Every cargo command below builds with the same features (the test files' `live`, `e2e`; src/
# has no feature gates) and through `cargo test`, so the crate is compiled once for all: another
# feature set, or `cargo build` (dev-dependencies' features unified differently), rebuilt the
# crate and some dependencies again, minutes on 2 cores. `cargo test --no-run` builds
# target/debug/kubectl-etcd too (the integration tests' CARGO_BIN_EXE).
FEATURES=(--features live,e2e)
fast fmt cargo fmt --check
fast clippy cargo clippy --all-targets "${FEATURES[@]}" -- -D warnings
# The lib's live module (objects::install::live, the API server's dry run of the manifests) needs
# the testbed, which is not up yet: it runs with the other test binaries in tests/lanes.sh.
fast "unit tests" cargo test "${FEATURES[@]}" --lib -- --skip objects::install::live::
fast "generated files, structure, docs links" cargo test "${FEATURES[@]}" --test generated --test structure --test docs
printf '[run-all] fast lane passed in %.1f s\n' "$(echo "$(date +%s.%N) - $FAST0" | bc)" >&2

cargo test "${FEATURES[@]}" --no-run
[ -x target/debug/kubectl-etcd ] || die "cargo test --no-run built no target/debug/kubectl-etcd"
phase "cargo test --no-run (test binaries, kubectl-etcd)"
wait_go
phase "waited for the Go builds (kubernetes $K8S_VERSION, etcd, prometheus, cert-manager, helm, krew)"
# Supply chain (deny.toml): licenses, bans (duplicates only warn), sources, and advisories against
# the dated RustSec snapshot in tests/advisory-db (tests/advisories.sh; deny.toml says why).
wait "$deny_pid" || { cat "$DENY_LOG" >&2; die "building cargo-deny failed (log $DENY_LOG)"; }
"$(cat "$ROOT/target/cargo-deny.path")" check licenses bans sources || die "cargo deny check failed (deny.toml)"
tests/advisories.sh "$(cat "$ROOT/target/cargo-deny.path")" ||
  die "cargo deny check advisories failed (against the RustSec snapshot in tests/advisory-db: tests/advisories.sh)"
phase "cargo deny (licenses, bans, sources, advisories)"
wait "$mdbook_pid" || { cat "$MDBOOK_LOG" >&2; die "building mdbook failed (log $MDBOOK_LOG)"; }
"$C/mdbook.sh" build >/dev/null || die "the docs site does not build (docs/book.toml, docs/src/SUMMARY.md)"
phase "docs site (mdbook build docs -> target/book)"

# Packaging, no cluster (charts/, plugins/, release.sh; owner: issue 20): helm lint, helm template
# equal to `kubectl etcd manifests`, krew's validator and an offline krew install, one version
# everywhere. Their binaries are built; they run beside the monitoring rules and the testbed's
# start (20-50 s that waited on each other), and a drifted chart fails the run before the tests.
# The whole test run below skips these three files (they ran here).
PKG_LOG=$ROOT/target/run-all-packaging.log
cargo test "${FEATURES[@]}" --test chart --test krew --test versions >"$PKG_LOG" 2>&1 &
pkg_pid=$!

# --- monitoring rules: promtool (tests/cluster/prometheus.sh, built beside the others) checks the
# alert rules and runs their unit tests (every alert fires, and stays silent where it should).
PROM_BIN=$("$C/prometheus.sh")
"$PROM_BIN/promtool" check rules tests/monitoring/rules.yaml || die "promtool check rules failed"
"$PROM_BIN/promtool" test rules tests/monitoring/rules_test.yaml || die "promtool test rules failed"
phase "monitoring rules"

# the testbed: reuse a healthy one, else start (and later stop) it
if [ -s "$KUBECONFIG" ] && kubectl --request-timeout=5s get --raw /readyz >/dev/null 2>&1; then
  log "a testbed answers already: reusing it"
else
  started_testbed=1
  # nothing answers: whatever $TB holds is left over from an earlier session/boot (stale mounts, old
  # objects in the control-plane etcd). Start from a clean cluster; containerd's images and the
  # $KE_CACHE caches are kept, and down.sh only ever stops processes by recorded PID.
  "$C/down.sh" --clean
fi
"$C/up.sh"
phase "testbed up"
# A reused testbed may lack what this run's tests need: `install.sh --demo` starts one with the
# default etcd image alone (ETCD_ONLY). images.sh imports each missing image (pause and every etcd
# version of $KE_CACHE/etcd/VERSIONS, which the Go builds above completed) and skips the rest, so on
# a testbed up.sh just started it only checks.
"$C/images.sh"
phase "testbed images"
log "kubectl $(command -v kubectl): $(kubectl version 2>/dev/null | tr '\n' ' ')"

"$C/images.sh" operator "$ROOT/target/debug/kubectl-etcd"
phase "operator image"

"$C/s3.sh" status >/dev/null 2>&1 || started_s3=1
"$C/s3.sh" up
. "$TB/s3.env"
phase "s3 up"

# cert-manager's controllers (built beside the Rust build), for spec.tls.mode certManager
"$C/cert-manager.sh" status >/dev/null 2>&1 || started_cm=1
"$C/cert-manager.sh" up
phase "cert-manager up"
pkg_rc=0
wait "$pkg_pid" || pkg_rc=$?
cat "$PKG_LOG" >&2
[ "$pkg_rc" = 0 ] || die "the packaging phase failed (tests/chart.rs, krew.rs, versions.rs; log $PKG_LOG)"
phase "waited for packaging (helm, krew)"

export KE_E2E_KUBECONFIG=$KUBECONFIG
export KE_OPERATOR_IMAGE=testbed.local/kubectl-etcd:dev
export PATH=$ROOT/target/debug:$PATH
rc=0
# every test binary but the packaging ones (they ran above), in parallel lanes (tests/lanes.sh:
# KE_TEST_LANES, default 2; the files installing a cluster-wide operator run alone at the end)
KE_TEST_SKIP="chart krew versions" tests/lanes.sh "$TEST_LOG" "$@" || rc=$?
phase "tests (lanes)"
exit $rc
