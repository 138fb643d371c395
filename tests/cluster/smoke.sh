#!/usr/bin/env bash
# Smoke proof of the testbed (not part of run-all): a plain 3-member etcd StatefulSet in namespace tb-smoke
# (tests/cluster/plain-etcd-sts.yaml) -> 3/3 Ready -> member list + endpoint health --cluster from inside a
# pod -> namespace deleted (PVCs/PVs with it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
export KUBECONFIG=$TB/admin.kubeconfig
NS=${SMOKE_NS:-tb-smoke}
K() { kubectl --request-timeout=30s "$@"; }
T0=$(date +%s.%N); TP=$T0
phase() { local now; now=$(date +%s.%N); printf '[smoke] %-28s %6.1f s\n' "$1" "$(echo "$now - $TP" | bc)" >&2; TP=$now; }
fail() {
  log "smoke FAILED: $*"
  K -n "$NS" get pods,pvc -o wide >&2 || true
  for p in etcd-0 etcd-1 etcd-2; do echo "--- logs $p" >&2; K -n "$NS" logs "$p" --tail=15 >&2 || true; done
  exit 1
}

K get ns "$NS" >/dev/null 2>&1 && { log "deleting leftover namespace $NS"; K delete ns "$NS" --wait=true --timeout=120s >/dev/null; }
K create ns "$NS" >/dev/null
sed "s/__NAMESPACE__/$NS/g" "$here/plain-etcd-sts.yaml" | K apply -f - >/dev/null
phase "apply"

deadline=$(( $(date +%s) + 180 ))
until [ "$(K -n "$NS" get sts etcd -o jsonpath='{.status.readyReplicas}' 2>/dev/null)" = 3 ]; do
  [ "$(date +%s)" -lt $deadline ] || fail "StatefulSet not 3/3 Ready after 180 s"
  sleep 0.5
done
phase "3/3 Ready"

echo "--- etcdctl member list (in etcd-0)"
K -n "$NS" exec etcd-0 -- etcdctl member list -w table || fail "member list"
echo "--- etcdctl endpoint health --cluster (in etcd-1)"
out=$(K -n "$NS" exec etcd-1 -- etcdctl endpoint health --cluster 2>&1) || { echo "$out"; fail "endpoint health"; }
echo "$out"
[ "$(echo "$out" | grep -c 'is healthy')" = 3 ] || fail "expected 3 healthy endpoints"
K -n "$NS" exec etcd-2 -- etcdctl put smoke ok >/dev/null && [ "$(K -n "$NS" exec etcd-0 -- etcdctl get smoke --print-value-only)" = ok ] \
  || fail "put/get across members"
phase "member list + health"

K delete ns "$NS" --wait=true --timeout=180s >/dev/null || fail "namespace delete"
phase "namespace deleted"
printf '[smoke] OK in %.1f s\n' "$(echo "$(date +%s.%N) - $T0" | bc)" >&2
