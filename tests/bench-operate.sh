#!/usr/bin/env bash
# Benchmark (not a test, not in CI): `kubectl etcd operate` with many idle clusters (issue 21
# item 7: <= 20 MiB RSS with 20, 0 writes at steady state). On the testbed: CLUSTERS
# (default 20) EtcdClusters of 1 ephemeral member each in one namespace, applied with kubectl
# and formed by a local `operate --watch-namespace NS --dial direct` (pod IPs are reachable
# from the testbed's node); once every one is Running, the operator runs IDLE_SECONDS (default
# 180) more, and the script prints its RSS (VmRSS now, VmHWM the peak since it started, from
# /proc), the passes it made and the objects it wrote meanwhile: EtcdClusters (spec or status),
# StatefulSets, Services, ConfigMaps, Secrets, whose resourceVersion moved.
#   BIN=path/to/kubectl-etcd CLUSTERS=20 IDLE_SECONDS=180 tests/bench-operate.sh
# BIN may list several binaries (BIN="old new"): each gets the same clusters, one after the other
# (the clusters stay; each operator starts from their converged state, then idles).
set -euo pipefail
cd "$(dirname "$0")/.."
export KUBECONFIG=${KUBECONFIG:-/tmp/tb/admin.kubeconfig}
BINS=${BIN:-${CARGO_TARGET_DIR:-target}/debug/kubectl-etcd}
CLUSTERS=${CLUSTERS:-20} IDLE_SECONDS=${IDLE_SECONDS:-180}
first=$(readlink -f "${BINS%% *}")
VERSION=${VERSION:-$("$first" create --help | sed -n 's/.*\[default: \(3\.[0-9.]*\)\].*/\1/p' | head -n1)}
ns=${NS:-bench-operate-$$} # NS=existing: its clusters are reused and kept
WORK=$(mktemp -d /tmp/bench-operate.XXXXXX)
op="" port=$((20000 + $$ % 20000))
cleanup() {
  # The clusters' finalizer needs an operator: delete them with one running.
  if [ -z "${NS:-}" ]; then
    if [ -z "$op" ]; then
      "$(readlink -f "${BINS%% *}")" operate --watch-namespace "$ns" --dial direct \
        --metrics-addr "127.0.0.1:$port" --identity "bench-operate-$$" 2>/dev/null &
      op=$!
    fi
    kubectl delete namespace "$ns" --timeout=5m >/dev/null 2>&1 || true
  fi
  [ -n "$op" ] && kill "$op" 2>/dev/null && wait "$op" 2>/dev/null
  [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT
"$first" install >/dev/null 2>&1
kubectl create namespace kubectl-etcd-system >/dev/null 2>&1 || true # the leader Leases
kubectl create namespace "$ns" >/dev/null 2>&1 || [ -n "${NS:-}" ]
for i in $(seq 1 "$CLUSTERS"); do
  cat <<YAML
apiVersion: etcd.kubectl-etcd.io/v1alpha1
kind: EtcdCluster
metadata: {name: c$i, namespace: $ns}
spec:
  replicas: 1
  version: "$VERSION"
  storage: {ephemeral: true}
  resources: {requests: {cpu: 10m, memory: 32Mi}}
---
YAML
done >"$WORK/clusters.yaml"
kubectl apply -f "$WORK/clusters.yaml" >/dev/null
running() { kubectl -n "$ns" get etcdcluster -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running$' || true; }
# versions: "kind/name resourceVersion" of every object the operator writes in the namespace.
versions() {
  kubectl -n "$ns" get etcdcluster,statefulset,service,configmap,secret \
    -o jsonpath='{range .items[*]}{.kind}/{.metadata.name} {.metadata.resourceVersion}{"\n"}{end}' | sort
}
metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 ~ "^"m {s+=$2} END {printf "%d", s}'; }
for bin in $BINS; do
  bin=$(readlink -f "$bin")
  t0=$(date +%s.%N)
  "$bin" operate --watch-namespace "$ns" --dial direct --metrics-addr "127.0.0.1:$port" \
    --identity "bench-operate-$$" 2>"$WORK/operate.err" &
  op=$!
  until [ "$(running)" = "$CLUSTERS" ]; do
    kill -0 "$op" 2>/dev/null || { tail -20 "$WORK/operate.err" >&2; exit 1; }
    sleep 2
  done
  formed=$(echo "$(date +%s.%N) - $t0" | bc)
  sleep 20 # the passes that follow the last change settle
  versions >"$WORK/before"; p0=$(metric kubectl_etcd_reconciles_total); a0=$(metric kubectl_etcd_actions_total)
  sleep "$IDLE_SECONDS"
  versions >"$WORK/after"; p1=$(metric kubectl_etcd_reconciles_total); a1=$(metric kubectl_etcd_actions_total)
  written=$(comm -13 "$WORK/before" "$WORK/after" | cut -d' ' -f1)
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$op/status"); hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$op/status")
  threads=$(awk '/^Threads/ {print $2}' "/proc/$op/status"); anon=$(awk '/^RssAnon/ {print $2}' "/proc/$op/status")
  printf '%s: %d clusters Running %.0f s after start; idle %d s: RSS %.1f MiB (heap and stacks %.1f MiB, peak %.1f MiB, %d threads), %d passes, %d actions, %d objects written%s; load %s\n' \
    "$bin" "$CLUSTERS" "$formed" "$IDLE_SECONDS" "$(echo "$rss / 1024" | bc -l)" "$(echo "$anon / 1024" | bc -l)" "$(echo "$hwm / 1024" | bc -l)" "$threads" \
    "$((p1 - p0))" "$((a1 - a0))" "$(echo -n "$written" | grep -c . || true)" \
    "$([ -n "$written" ] && echo " ($(echo $written | tr '\n' ' '))")" "$(cut -d' ' -f1 /proc/loadavg)"
  kill "$op"; wait "$op" 2>/dev/null || true; op=""
done
