#!/usr/bin/env bash
# Benchmark (not a test, not in CI): `kubectl etcd upgrade` of a 3-member cluster with a writer
# going, on the testbed. Per round: `create demo --replicas 3 --version FROM`, a writer pod that
# puts a key through the client Service every 100 ms (as tests/e2e_upgrade.rs does), then
# `upgrade demo --version TO --skip-backup --yes -v`; it prints the whole upgrade, seconds per
# member (from its pod's recreation to the next member's, or to the end), failed writes, the
# longest stall (the longest time without an acknowledged write) and where the upgrade's time
# went (the `-v` phases, summed per phase name).
#   BIN=path/to/kubectl-etcd FROM=3.6.15 TO=3.6.16 ROUNDS=3 tests/bench-upgrade.sh
# BIN may list several binaries (BIN="old new"): each round runs them one after the other, so
# that their ratios come from the same minutes of a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export KUBECONFIG=${KUBECONFIG:-/tmp/tb/admin.kubeconfig}
BINS=${BIN:-${CARGO_TARGET_DIR:-target}/debug/kubectl-etcd}
FROM=${FROM:-3.5.35} TO=${TO:-3.6.15} ROUNDS=${ROUNDS:-1}
WORK=$(mktemp -d /tmp/bench-upgrade.XXXXXX)
current="" # the namespace of the run under way: deleted if the script is stopped
cleanup() {
  if [ -n "$current" ]; then
    "$bin" -n "$current" delete demo --delete-data --yes >/dev/null 2>&1 || true
    kubectl delete namespace "$current" --wait=false >/dev/null 2>&1 || true
  fi
  [ "${KEEP:-0}" = 1 ] && echo "logs in $WORK" >&2 || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
up() { cut -d' ' -f1 /proc/uptime; }
phases() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | sed -n 's/.*phase ended phase="\([a-z_]*\)" ms=\([0-9.]*\).*/\1 \2/p' \
    | awk '{s[$1]+=$2; n[$1]++} END {for (p in s) printf "%s %.0f %d\n", p, s[p], n[p]}' | sort -k2,2nr
}
# writer NS: the writer pod of tests/common/writer.rs ("ack|fail i uptime" per write).
writer() {
  kubectl -n "$1" run writer --image="gcr.io/etcd-development/etcd:v$FROM" --restart=Never --command -- sh -c \
    'i=0; while true; do if etcdctl --endpoints=http://demo-client:2379 --command-timeout=5s put w/$i v$i >/dev/null 2>&1; then r=ack; else r=fail; fi; read t _ < /proc/uptime; echo $r $i $t; i=$((i+1)); sleep 0.1; done' >/dev/null
  until [ "$(kubectl -n "$1" logs writer 2>/dev/null | grep -c '^ack')" -gt 5 ]; do sleep 0.5; done
}
# one BIN NS: create, writer, timed upgrade; prints one result line.
one() {
  local ns=$2 t0 t1 s0
  bin=$1 current=$ns
  kubectl create namespace "$ns" >/dev/null
  # plain http: the writer pod speaks it (create's default is managed TLS since issue 17)
  "$bin" -n "$ns" create demo --replicas 3 --version "$FROM" --insecure --timeout 5m >/dev/null 2>&1
  writer "$ns"
  sleep 2
  s0=$(date -u +%s); t0=$(up)
  "$bin" -n "$ns" upgrade demo --version "$TO" --skip-backup --yes --timeout 10m -v >/dev/null 2>"$WORK/$ns.err" \
    || { tail -20 "$WORK/$ns.err" >&2; echo "upgrade failed in $ns" >&2; }
  t1=$(up)
  sleep 1
  kubectl -n "$ns" logs writer >"$WORK/$ns.writer"
  # pods recreated by the upgrade, by creation time
  local starts
  starts=$(for p in demo-0 demo-1 demo-2; do
    echo "$(date -u -d "$(kubectl -n "$ns" get pod "$p" -o jsonpath='{.metadata.creationTimestamp}')" +%s) $p"; done | sort -n)
  local per
  per=$(echo "$starts" | awk -v s0="$s0" -v end="$(date -u +%s)" -v total="$(echo "$t1 - $t0" | bc)" '
    {t[NR]=$1; p[NR]=$2} END {e=s0+total; for (i=1;i<=NR;i++) {n=(i<NR)?t[i+1]:e; printf "%s %d s%s", p[i], n-t[i], (i<NR)?", ":""}}')
  local wr
  wr=$(awk -v a="$t0" -v b="$t1" '$3>=a && $3<=b {if ($1=="ack") {if ($3-last>st) st=$3-last; last=$3} else f++}
    BEGIN {last=a} END {if (b-last>st) st=b-last; printf "%d failed writes, longest stall %.1f s", f, st}' "$WORK/$ns.writer")
  local line
  line=$(printf '%s: %s -> %s in %.1f s; per member: %s; writer: %s; load %s' "$bin" "$FROM" "$TO" \
    "$(echo "$t1 - $t0" | bc)" "$per" "$wr" "$(cut -d' ' -f1 /proc/loadavg)")
  echo "$line"; echo "$line" >>"$WORK/results"
  phases "$WORK/$ns.err" | awk '{printf "    %-16s %7d ms  (%d)\n", $1, $2, $3}' | head -12
  kubectl delete namespace "$ns" --wait=false >/dev/null
  current=""
}
touch "$WORK/results"
for r in $(seq 1 "$ROUNDS"); do
  i=0
  for bin in $BINS; do
    i=$((i + 1))
    one "$(readlink -f "$bin")" "bench-up-$r-$i-$$"
  done
done
# The table: one row per run (for tests/bench.sh, which keeps the rows).
printf '\n| upgrade %s -> %s, 3 members, writer going (targets: <= 8 s per member, 0 failed writes, stall <= 1 s) | whole (s) | per member (s) | failed writes | longest stall (s) |\n|---|---|---|---|---|\n' "$FROM" "$TO"
sed -n 's/^\(.*\): [0-9.]* -> [0-9.]* in \([0-9.]*\) s; per member: \(.*\); writer: \([0-9]*\) failed writes, longest stall \([0-9.]*\) s; load \(.*\)/| \1 (load \6) | \2 | \3 | \4 | \5 |/p' \
  "$WORK/results" | sed 's/demo-[0-9] //g; s/ s, /\//g; s/ s |/ |/'
