#!/usr/bin/env bash
# Benchmark (not a test, not in CI): fair sharing (issue 42 item 5). One tenant floods the
# operator with every-minute backup schedules; how long does another tenant's cluster wait, and
# how much memory does the operator take? On the testbed, with S3 (tests/cluster/s3.sh up):
# namespace A gets CLUSTERS (default 20) EtcdClusters of 1 ephemeral member, each with
# `spec.backup.schedule: "* * * * *"` (runOnCreate, keepLast 1) to s3://$KE_S3_BUCKET/bench/…;
# namespace B is empty. A local `operate --watch-namespace A,B --dial direct` (pod IPs are
# reachable from the testbed's node; OPERATE_ARGS adds flags, e.g. --max-backups 1) forms A's
# clusters; then, ROUNDS (default 3) times, as the minute turns (A's CLUSTERS backups all due),
# the script creates cluster `lone` in B, times it until Running (every pass of its bootstrap
# goes through the operator beside A's backups), and deletes it. It prints those latencies, A's
# scheduled backups (succeeded, and the most seen running at once), the most backups seen
# waiting (`kubectl_etcd_queued{work="backup"}`) and the operator's RSS (VmRSS now, VmHWM the
# peak since it started, from /proc). Everything it made (namespaces, S3 objects) is deleted.
#   BIN=path/to/kubectl-etcd CLUSTERS=8 ROUNDS=2 OPERATE_ARGS="--max-backups 2" tests/bench-fairness.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/cluster/env.sh
export KUBECONFIG=$TB/admin.kubeconfig
. "$TB/s3.env"
BIN=$(readlink -f "${BIN:-${CARGO_TARGET_DIR:-target}/debug/kubectl-etcd}")
CLUSTERS=${CLUSTERS:-20} ROUNDS=${ROUNDS:-3}
VERSION=${VERSION:-$("$BIN" create --help | sed -n 's/.*\[default: \(3\.[0-9.]*\)\].*/\1/p' | head -n1)}
PY=$KE_CACHE/s3-venv/bin/python
[ -x "$PY" ] || die "needs $PY (tests/cluster/s3.sh up)"
a=bench-fair-a-$$ b=bench-fair-b-$$ prefix=bench/fair-$$
WORK=$(mktemp -d /tmp/bench-fairness.XXXXXX)
op="" port=$((20000 + $$ % 20000))
start_operator() {
  # shellcheck disable=SC2086 # OPERATE_ARGS is a list of flags
  "$BIN" operate --watch-namespace "$a,$b" --dial direct --metrics-addr "127.0.0.1:$port" \
    --identity "bench-fairness-$$" --metrics-auth none --s3-endpoint-allow "$KE_S3_POD_ENDPOINT" ${OPERATE_ARGS:-} \
    2>"$WORK/operate.err" &
  op=$!
}
cleanup() {
  # The clusters' finalizer needs an operator: delete them with one running.
  [ -n "$op" ] || start_operator
  kubectl delete namespace "$a" "$b" --timeout=5m >/dev/null 2>&1 || true
  kill "$op" 2>/dev/null && wait "$op" 2>/dev/null
  AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL "$PY" - "$KE_S3_BUCKET" "$prefix/" <<'PY' || echo "could not delete s3://$KE_S3_BUCKET/$prefix/: delete it by hand" >&2
import sys, boto3
from botocore.config import Config
s3 = boto3.client("s3", config=Config(s3={"addressing_style": "path"}))
b, p = sys.argv[1], sys.argv[2]
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=b, Prefix=p):
    for o in page.get("Contents", []):
        s3.delete_object(Bucket=b, Key=o["Key"])
PY
  [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT
"$BIN" install >/dev/null 2>&1
kubectl create namespace kubectl-etcd-system >/dev/null 2>&1 || true # the leader Leases
kubectl create namespace "$a" >/dev/null
kubectl create namespace "$b" >/dev/null
kubectl -n "$a" create secret generic s3-creds --from-literal=AWS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" \
  --from-literal=AWS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
  --from-literal=AWS_ENDPOINT_URL="$KE_S3_POD_ENDPOINT" >/dev/null
cluster() { # cluster NS NAME [BACKUP]: one ephemeral member
  cat <<YAML
apiVersion: etcd.kubectl-etcd.io/v1alpha1
kind: EtcdCluster
metadata: {name: $2, namespace: $1}
spec:
  replicas: 1
  version: "$VERSION"
  storage: {ephemeral: true}
  resources: {requests: {cpu: 10m, memory: 32Mi}}
${3:-}
---
YAML
}
backup="  backup: {destination: s3://$KE_S3_BUCKET/$prefix, credentialsSecret: s3-creds, schedule: '* * * * *', runOnCreate: true, retention: {keepLast: 1}}"
for i in $(seq 1 "$CLUSTERS"); do cluster "$a" "c$i" "$backup"; done >"$WORK/flood.yaml"
[ "$CLUSTERS" = 0 ] || kubectl apply -f "$WORK/flood.yaml" >/dev/null # CLUSTERS=0: the baseline, B alone
running() { kubectl -n "$1" get etcdcluster -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running$' || true; }
metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v m="$1" 'index($1, m) == 1 {s+=$2} END {printf "%d", s}'; }
backups() { # A's scheduled backups running now
  kubectl -n "$a" get etcdbackup -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running$' || true
}
most_running=0 most_queued=0
watch_a() {
  local r q
  r=$(backups); q=$(metric 'kubectl_etcd_queued{namespace="'"$a"'",work="backup"}')
  [ "$r" -gt "$most_running" ] && most_running=$r
  [ "$q" -gt "$most_queued" ] && most_queued=$q
  return 0
}
t0=$(date +%s)
start_operator
until [ "$(running "$a")" = "$CLUSTERS" ]; do
  kill -0 "$op" 2>/dev/null || { tail -20 "$WORK/operate.err" >&2; exit 1; }
  sleep 2
done
echo "$CLUSTERS clusters of $a Running $(($(date +%s) - t0)) s after start"
latencies=()
for round in $(seq 1 "$ROUNDS"); do
  # The minute turns: A's every-minute backups are all due now.
  sleep $((60 - $(date +%s) % 60 + 1))
  t=$(date +%s.%N)
  cluster "$b" lone | kubectl apply -f - >/dev/null
  until [ "$(running "$b")" = 1 ]; do
    watch_a
    sleep 1
  done
  latencies+=("$(printf '%.0f' "$(echo "$(date +%s.%N) - $t" | bc)")")
  kubectl -n "$b" delete etcdcluster lone --timeout=2m >/dev/null
  watch_a
done
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$op/status"); hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$op/status")
printf '%s %s: B'"'"'s cluster Running %s s after its creation at the minute, beside %d due backups of A; A: %s scheduled backups succeeded, at most %d running and %d waiting at once seen; RSS %.1f MiB (peak %.1f MiB); load %s\n' \
  "$BIN" "${OPERATE_ARGS:-(default bounds)}" "$(IFS=/; echo "${latencies[*]}")" "$CLUSTERS" "$(grep -c 'scheduled backup succeeded' "$WORK/operate.err" || true)" \
  "$most_running" "$most_queued" "$(echo "$rss / 1024" | bc -l)" "$(echo "$hwm / 1024" | bc -l)" "$(cut -d' ' -f1 /proc/loadavg)"
