#!/usr/bin/env bash
# Runs the built test binaries (unit + live + e2e) in parallel lanes against the running testbed,
# called by tests/run-all.sh after `cargo test --no-run --features live,e2e`.
#   tests/lanes.sh LOG [ARGS...]   ARGS go to every test binary (e.g. a test-name filter)
#   KE_TEST_LANES=N   lanes for the files that share the testbed safely (default 2; 1 = one file
#                     after another, as `cargo test` runs them)
#   KE_TEST_SKIP="a b"  test files not to run (run-all.sh runs the packaging files before the testbed)
# Every e2e test works in namespaces of its own, so files run side by side; each file still runs
# two tests at a time (--test-threads=2). Files that install a cluster-wide operator or own the
# operator's namespace (EXCLUSIVE below) run alone, after the lanes: an operator watching every
# namespace would act on the other lanes' clusters. Within the lanes the longest files start first
# (their durations on the last full run, WEIGHT below), so the lanes end close together.
# Each file's output goes to target/test-logs/NAME.log; LOG gets them all, in a fixed order, for
# run-all.sh's digest of failures. Exit code: 0 if every file passed, else 1.
set -euo pipefail
cd "$(dirname "$0")/.."
LOG=$1
shift
LANES=${KE_TEST_LANES:-2}
EXCLUSIVE=" e2e_operator e2e_defrag e2e_helm "
# seconds on the last full run (a new file without a line starts early: 600)
declare -A WEIGHT=(
  [e2e_faults]=1640 [e2e_tls]=1030 [e2e_backup]=1020 [e2e_adopt]=680 [e2e]=660 [e2e_upgrade]=650
  [e2e_auth]=120 [e2e_storage]=440 [e2e_monitoring]=135 [e2e_tenancy]=100 [etcd_live]=98 [e2e_netpol]=80
  [e2e_ownership]=60 [e2e_status]=35 [e2e_security]=33 [e2e_privilege]=30 [e2e_namespaced]=29
  [e2e_lease]=28 [e2e_controller]=23 [s3_live]=25 [kubectl_etcd]=15 [e2e_support]=11 [generated]=1
  [docs]=1 [output]=1 [structure]=1 [kubectl-etcd]=1
)
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
mapfile -t exclusive < <(printf '%s\n' "${exclusive[@]}" | sort)

T0=$(date +%s)
# one file: its binary with the args, from the package root as cargo runs it
run_one() {
  local name=$1; shift
  local t0 rc=0
  t0=$(date +%s)
  echo "[lanes $(date +%H:%M:%S)] start $name" >&2
  "${EXE[$name]}" --test-threads=2 "$@" >"$OUT/$name.log" 2>&1 || rc=$?
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
[ "${#failed[@]}" = 0 ]
