#!/usr/bin/env bash
# Runs the built test binaries (unit + live + e2e) in parallel lanes against the running testbed,
# called by tests/run-all.sh after `cargo test --no-run --features live,e2e`.
#   tests/lanes.sh LOG [ARGS...]   ARGS go to every test binary (e.g. a test-name filter)
#   KE_TEST_LANES=N   lanes for the files that share the testbed safely (default 2; 1 = one file
#                     after another, as `cargo test` runs them)
#   KE_TEST_SKIP="a b"  test files not to run (run-all.sh runs the packaging files before the testbed)
# Every e2e test works in namespaces of its own, so files run side by side; each file runs two
# tests at a time (--test-threads=2), or THREADS below. Files that install a cluster-wide operator
# or own the operator's namespace (EXCLUSIVE below) run alone, after the lanes: an operator
# watching every namespace would act on the other lanes' clusters. Within the lanes the longest files start first
# (their durations on the last full run, WEIGHT below), so the lanes end close together.
# Each file's output goes to target/test-logs/NAME.log, every test's line with its seconds
# (libtest's --report-time: `test NAME ... ok <12.345s>`); LOG gets them all, in a fixed order, for
# run-all.sh's digest of failures. At the end the slowest tests and the machine's CPU over the
# lanes (target/test-logs/cpu.log: busy % and CPU pressure every 30 s) say where the time went and
# whether another lane could have had the CPU. Exit code: 0 if every file passed, else 1.
set -euo pipefail
cd "$(dirname "$0")/.."
LOG=$1
shift
LANES=${KE_TEST_LANES:-2}
EXCLUSIVE=" e2e_operator e2e_defrag e2e_helm "
# seconds on the last full run (2026-12-07 18:52 on this machine; e2e_tls: its tests' seconds
# with its THREADS); a new file without a line starts early: 600
declare -A WEIGHT=(
  [e2e_faults]=1700 [e2e_backup]=1090 [e2e_tls]=800 [e2e_upgrade]=610 [e2e]=540 [e2e_storage]=410
  [e2e_adopt]=270 [e2e_auth]=185 [e2e_monitoring]=155 [e2e_tenancy]=150 [e2e_drill]=100 [etcd_live]=100 [e2e_status]=85
  [e2e_lease]=70 [e2e_netpol]=60 [e2e_ownership]=40 [e2e_security]=40 [e2e_namespaced]=40 [e2e_fairness]=30
  [kubectl_etcd]=22 [s3_live]=21 [e2e_controller]=21 [e2e_privilege]=13 [e2e_support]=12 [generated]=1
  [docs]=1 [output]=1 [structure]=1 [kubectl-etcd]=1
)
# Tests at a time for the files whose long tests mostly wait on the clock (5-minute certificates
# renewed and expired, the kubelet's sync of a Secret): more of them side by side cost little CPU.
# e2e_tls, 13 tests (2026-12-07): with 4 at a time 13 of 13 passed in 660 s beside other
# engineers' builds (load 20-28); from those tests' seconds, 2 at a time take 1147 s, 3 take 801.
# Beside four fault-matrix rows and eight compilers (load 35-88) three of its certificate-deadline
# tests failed (the fault rows too): 3, not 4, keeps headroom for a slower CI machine.
declare -A THREADS=([e2e_tls]=3)
OUT=target/test-logs
rm -rf "$OUT"
mkdir -p "$OUT"

# name -> executable, from cargo's own account of what it built (nothing is rebuilt here)
declare -A EXE=()
while read -r name exe; do
  case " ${KE_TEST_SKIP:-} " in *" $name "*) continue ;; esac
  EXE[$name]=$exe
done < <(cargo test --no-run --features live,e2e --message-format=json 2>/dev/null |
  jq -r 'select(.reason == "compiler-artifact" and .profile.test and .executable != null)
         | "\(.target.name) \(.executable)"')
[ "${#EXE[@]}" -gt 0 ] || { echo "[lanes] cargo reported no test binaries" >&2; exit 1; }

shared=() exclusive=()
for name in "${!EXE[@]}"; do
  case "$EXCLUSIVE" in *" $name "*) exclusive+=("$name") ;; *) shared+=("$name") ;; esac
done
# longest first
mapfile -t shared < <(for n in "${shared[@]}"; do echo "${WEIGHT[$n]:-600} $n"; done | sort -rn | cut -d' ' -f2)
[ "${#exclusive[@]}" = 0 ] || mapfile -t exclusive < <(printf '%s\n' "${exclusive[@]}" | sort)

# Each test's seconds in its result line: libtest's --report-time, an unstable option that a
# stable test binary accepts with RUSTC_BOOTSTRAP=1 (set for the test binaries alone; asked once,
# and left out where the toolchain refuses it).
TIMES=()
for probe in "${EXE[@]}"; do break; done
if RUSTC_BOOTSTRAP=1 "$probe" -Z unstable-options --report-time --list >/dev/null 2>&1; then
  TIMES=(-Z unstable-options --report-time)
fi
# the machine's CPU every 30 s while the lanes run: busy % of both cores and the CPU pressure
# (the share of time some task waited for a core)
cpu_sampler() {
  local u n s i w x y z b t pb pt
  read -r _ u n s i w x y z _ </proc/stat
  pb=$((u + n + s + x + y + z)) pt=$((u + n + s + i + w + x + y + z))
  while sleep 30; do
    read -r _ u n s i w x y z _ </proc/stat
    b=$((u + n + s + x + y + z)) t=$((b + i + w))
    echo "$(date +%H:%M:%S) busy $((100 * (b - pb) / (t - pt > 0 ? t - pt : 1)))% pressure $(awk '/^some/ {sub("avg60=", "", $3); print $3}' /proc/pressure/cpu 2>/dev/null || echo -)%"
    pb=$b pt=$t
  done >"$OUT/cpu.log"
}
cpu_sampler </dev/null 2>/dev/null &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT

T0=$(date +%s)
# one file: its binary with the args, from the package root as cargo runs it
run_one() {
  local name=$1; shift
  local t0 rc=0
  t0=$(date +%s)
  echo "[lanes $(date +%H:%M:%S)] start $name" >&2
  RUSTC_BOOTSTRAP=1 "${EXE[$name]}" --test-threads="${THREADS[$name]:-2}" "${TIMES[@]}" "$@" >"$OUT/$name.log" 2>&1 || rc=$?
  echo "$rc $(($(date +%s) - t0))" >"$OUT/$name.rc"
  echo "[lanes $(date +%H:%M:%S)] $( [ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)") $name in $(($(date +%s) - t0)) s" >&2
}
# a lane takes the next file of the queue (a counter under a lock) until none is left
QUEUE=$OUT/.next
echo 0 >"$QUEUE"
lane() {
  local i
  while :; do
    i=$(flock "$QUEUE" sh -c 'i=$(cat "$1"); echo $((i + 1)) >"$1"; echo "$i"' _ "$QUEUE")
    [ "$i" -lt "${#shared[@]}" ] || return 0
    run_one "${shared[$i]}" "$@"
  done
}
pids=()
for _ in $(seq "$LANES"); do
  lane "$@" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
for name in "${exclusive[@]}"; do run_one "$name" "$@"; done

failed=() total=0
: >"$LOG"
for name in "${shared[@]}" "${exclusive[@]}"; do
  { echo "     Running $name (${EXE[$name]})"; cat "$OUT/$name.log"; } >>"$LOG"
  read -r rc secs <"$OUT/$name.rc"
  total=$((total + secs))
  [ "$rc" = 0 ] || failed+=("$name")
done
printf '[lanes] %d files in %d s of wall time (%d s one after another would take), %d lanes; failed: %s\n' \
  "${#EXE[@]}" "$(($(date +%s) - T0))" "$total" "$LANES" "${failed[*]:-none}" >&2
grep -h '^test result:' "$LOG" >&2 || true
kill "$sampler" 2>/dev/null || true
# the ten slowest tests, and the CPU over the lanes
for name in "${shared[@]}" "${exclusive[@]}"; do
  sed -n "s/^test \(.*\) \.\.\. \([a-zA-Z]*\) <\([0-9.]*\)s>\$/\3 $name::\1 \2/p" "$OUT/$name.log"
done | sort -rn | awk 'NR <= 10 {printf "[lanes] slow test %6.0f s %s (%s)\n", $1, $2, $3}' >&2 || true
awk '{sub("%", "", $3); sub("%", "", $5); b += $3; p += $5; n++} END {if (n) printf "[lanes] CPU over the lanes: busy %.0f%%, pressure %.0f%% (mean of %d samples, %s)\n", b / n, p / n, n, FILENAME}' "$OUT/cpu.log" >&2 || true
[ "${#failed[@]}" = 0 ]
