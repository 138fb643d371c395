#!/usr/bin/env bash
# Day-2 benchmark on the testbed (not a test, not part of CI): issue 18's three figures, in one run
#   1. defrag pause per member on a 1 GiB database: a cluster of REPLICAS members (default 3;
#      each holds the database twice, file and WAL: mind the disk) filled with SIZE_MB
#      incompressible 1 MiB values; `kubectl etcd defrag --compact` (the engine's order:
#      followers first, the leader last) with the data live, then again with every key deleted;
#      each member's pause as its etcd logged it ("finished defragmenting directory", took), and
#      the verb's wall time;
#   2. NOSPACE to writable again: the fault row nospace_healed_unattended (a 16 MiB quota filled
#      until etcd refuses writes, then only engine passes), its "writable again" figure;
#   3. storage swap time per member: tests/e2e_storage.rs's class change and 1Gi → 2Gi with a
#      writer running, its BENCH line.
#   tests/bench-day2.sh                 # all three
#   ONLY=defrag SIZE_MB=1024 tests/bench-day2.sh
# Needs the testbed environment of the e2e tests (KE_E2E_KUBECONFIG, PATH with the built plugin,
# CARGO_TARGET_DIR). Deletes its namespace at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export KUBECONFIG=${KUBECONFIG:-/tmp/tb/admin.kubeconfig}
export KE_E2E_KUBECONFIG=${KE_E2E_KUBECONFIG:-$KUBECONFIG}
SIZE_MB=${SIZE_MB:-1024}
REPLICAS=${REPLICAS:-3}
ONLY=${ONLY:-defrag,nospace,swap}
NS=bench-day2-$$
log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
want() { [[ ",$ONLY," == *",$1,"* ]]; }
# shellcheck disable=SC2329 # run by the EXIT trap
cleanup() { kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true; }
trap cleanup EXIT

if want defrag; then
  kubectl etcd install >/dev/null
  kubectl create namespace "$NS" >/dev/null
  cat <<YAML | kubectl apply -f - >/dev/null
apiVersion: etcd.kubectl-etcd.io/v1alpha1
kind: EtcdCluster
metadata: { name: big, namespace: $NS }
spec:
  replicas: $REPLICAS
  version: ${VERSION:-3.5.16}
  storage: { size: 4Gi }
  etcd: { quotaBackendBytes: 4294967296 }
YAML
  kubectl etcd -n "$NS" reconcile big --timeout 5m >/dev/null
  log "filling $NS/big with $SIZE_MB incompressible 1 MiB values…"
  t0=$(date +%s)
  kubectl -n "$NS" exec big-0 -- sh -c "i=0; while [ \$i -lt $SIZE_MB ]; do head -c 1048576 /dev/urandom | etcdctl put k\$i >/dev/null || exit 1; i=\$((i+1)); done"
  log "filled in $(($(date +%s) - t0)) s"
  # Twice: with the 1 GiB live (the defragmentation copies all of it), then with every key
  # deleted and the history compacted (it copies next to nothing and gives the file back).
  for round in live deleted; do
    if [ "$round" = deleted ]; then
      kubectl -n "$NS" exec big-0 -- etcdctl del --prefix k >/dev/null
    fi
    sizes=$(kubectl -n "$NS" exec big-0 -- etcdctl endpoint status --cluster -w json |
      python3 -c 'import json,sys; print(" ".join("%.0f/%.0f" % (m["Status"]["dbSize"] / 1048576, m["Status"]["dbSizeInUse"] / 1048576) for m in json.load(sys.stdin)))')
    log "$round: db files (MiB file/in use) before the defrag: $sizes"
    t0=$(date +%s.%N)
    kubectl etcd -n "$NS" defrag big --compact --timeout 15m >/dev/null
    wall=$(echo "$(date +%s.%N) - $t0" | bc)
    for i in $(seq 0 $((REPLICAS - 1))); do
      took=$(kubectl -n "$NS" logs "big-$i" | grep 'finished defragmenting directory' | tail -1 |
        python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["took"])')
      printf 'BENCH defrag (%s) big-%d, MiB file/in use %s: pause %s\n' "$round" "$i" "$(echo "$sizes" | cut -d' ' -f$((i + 1)))" "$took"
    done
    printf "BENCH defrag --compact (%s) of $REPLICAS member(s): %.1f s wall (the verb, compaction and waits included)\n" "$round" "$wall"
  done
  kubectl delete namespace "$NS" --wait=true >/dev/null
fi

if want nospace; then
  log "NOSPACE: the fault row nospace_healed_unattended…"
  KE_FAULT_ROWS=nospace_healed_unattended cargo test --features live,e2e --test e2e_faults -- --nocapture 2>&1 |
    grep -E 'writable again|\[fault-matrix\]' | sed 's/^/BENCH /' || log "the NOSPACE row failed (its line above says why)"
fi

if want swap; then
  log "storage swap: tests/e2e_storage.rs (3 members to another class, then 1Gi → 2Gi)…"
  cargo test --features live,e2e --test e2e_storage storage_moves -- --nocapture 2>&1 | grep '^BENCH' ||
    log "the storage e2e failed: run it alone to see why"
fi
