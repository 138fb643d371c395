#!/usr/bin/env bash
# Backup/restore benchmark on the testbed (not part of CI, not in .ci/run): a database of >= 1 GiB
# (quota raised to 8 GiB), then side by side in one run
#   A. kubectl-etcd backup --to s3://… (streamed: etcd → hash check → compression → sha256 → multipart upload),
#      with --compression none (the same bytes as B) and zstd (the default)
#   B. etcdctl snapshot save to a file, then that file uploaded with boto3 (what the others do)
# with wall time, MiB/s, peak RSS and CPU seconds of each process and the CPU seconds of the whole
# machine meanwhile (etcd, the API server and kubelet carrying the port-forward, the S3 server), then
# the restore of A (zstd) into 3 Ready members. Both sides reach etcd through a port-forward of the
# API server (the CLI's own; `kubectl port-forward` for etcdctl) and S3 on the same loopback
# endpoint; then both again without the port-forward, as from inside the cluster (ours with
# `--dial direct`, etcdctl to the pod IP: the node routes pod IPs). The restore pods reach S3 on
# the node IP.
#   cargo build --release --bins && tests/bench-backup.sh
#   SIZE_MB=1100 ROUNDS=1 KEEP=1 BIN=path/to/kubectl-etcd tests/bench-backup.sh
# KEEP=1 keeps the filled cluster (namespace bench-backup) for the next run, which reuses it.
# DATA=random (the default): values from /dev/urandom, which no compression shrinks (the worst
# case for ours); DATA=objects: values of Kubernetes-like objects (tests/bench-objects.py: JSON
# Pods with their own uids, hashes and IPs, one Secret in eight with random key bytes; zstd -3
# makes them 3.2× smaller), in namespace bench-backup-objects.
# Otherwise the namespace, the S3 objects under the bench prefix and the local files are deleted.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/cluster/env.sh
export KUBECONFIG=$TB/admin.kubeconfig
. "$TB/s3.env"
S3_LOCAL=$AWS_ENDPOINT_URL # the S3 server itself, for both sides of the comparison
BIN=$(readlink -f "${BIN:-${CARGO_TARGET_DIR:-target}/release/kubectl-etcd}")
[ -x "$BIN" ] || die "no release binary at $BIN: run cargo build --release --bins (or set BIN)"
export PATH=$(dirname "$BIN"):$PATH # `kubectl etcd` is this binary too
export KUBECTL_ETCD_TOOLS_IMAGE=${KE_OPERATOR_IMAGE:-testbed.local/kubectl-etcd:dev}
ETCDCTL=$ETCD_BIN_DIR/v3.5.16/etcdctl
PY=$KE_CACHE/s3-venv/bin/python
[ -x "$ETCDCTL" ] && [ -x "$PY" ] || die "needs $ETCDCTL and $PY (tests/cluster/up.sh, tests/cluster/s3.sh up)"
SIZE_MB=${SIZE_MB:-1100}
ROUNDS=${ROUNDS:-1}
KEEP=${KEEP:-0}
DATA=${DATA:-random}
case $DATA in
  random) NS=bench-backup ;;
  objects) NS=bench-backup-objects ;;
  *) die "DATA is random or objects, not $DATA" ;;
esac
PORT= # the local end of the port-forward to big-0, chosen by kubectl (never a fixed port: 23790 is the testbed's own etcd)
PREFIX=bench-backup-$$
WORK=$(mktemp -d /tmp/bench-backup.XXXXXX)
# shellcheck disable=SC2329 # run by the EXIT trap
cleanup() {
  if [ -n "${PF:-}" ]; then kill "$PF" 2>/dev/null || true; fi
  # the processes' outputs (their -v phase lines and progress) stay for a look afterwards
  rm -rf /tmp/bench-backup-last && mkdir -p /tmp/bench-backup-last
  cp "$WORK"/*.err "$WORK"/*.res /tmp/bench-backup-last/ 2>/dev/null || true
  rm -rf "$WORK"
  s3_rm "$PREFIX/" || log "could not delete s3://$KE_S3_BUCKET/$PREFIX/: delete it by hand"
  # SeaweedFS keeps deleted bytes on disk until a vacuum (gigabytes here); its filer frees the
  # chunks of deleted objects a few seconds after the delete.
  sleep 10
  curl -s -o /dev/null --max-time 300 "http://127.0.0.1:19333/vol/vacuum?garbageThreshold=0.3" || true
  if [ "$KEEP" = 1 ]; then
    "$BIN" -n $NS delete big2 --delete-data --yes >/dev/null 2>&1 || true
  else
    kubectl delete ns $NS --wait=false >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

s3_py() { AWS_ENDPOINT_URL=$S3_LOCAL "$PY" - "$@"; }
s3_rm() { # s3_rm PREFIX: deletes every object under PREFIX
  s3_py "$KE_S3_BUCKET" "$1" <<'PY'
import sys, boto3
from botocore.config import Config
s3 = boto3.client("s3", config=Config(s3={"addressing_style": "path"}))
b, p = sys.argv[1], sys.argv[2]
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=b, Prefix=p):
    for o in page.get("Contents", []):
        s3.delete_object(Bucket=b, Key=o["Key"])
PY
}
db_size() { "$ETCDCTL" --endpoints 127.0.0.1:$PORT endpoint status -w json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["dbSize"])'; }
port_forward() {
  if [ -n "${PF:-}" ]; then kill "$PF" 2>/dev/null || true; fi
  PORT=
  kubectl -n $NS port-forward pod/big-0 :2379 >"$WORK/pf.out" 2>&1 & PF=$!
  for _ in $(seq 50); do
    PORT=$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) .*/\1/p' "$WORK/pf.out" | head -n1)
    [ -n "$PORT" ] && "$ETCDCTL" --endpoints 127.0.0.1:$PORT endpoint health >/dev/null 2>&1 && break
    sleep 0.2
  done
  [ -n "$PORT" ] || die "port-forward to $NS/big-0 does not answer: $(cat "$WORK/pf.out")"
  # Never write into anything but the bench cluster.
  # (the list read whole first: `grep -q` leaving early would fail the pipe under pipefail)
  members=$("$ETCDCTL" --endpoints 127.0.0.1:$PORT member list) || members=
  grep -q ", big-0, http://big-0.big.$NS.svc" <<<"$members" \
    || die "127.0.0.1:$PORT does not answer as $NS/big-0"
}

kubectl etcd install >/dev/null
"$BIN" -n $NS delete big2 --delete-data --yes >/dev/null 2>&1 || true
if ! kubectl get etcdcluster -n $NS big >/dev/null 2>&1; then
  kubectl delete ns $NS --wait=true >/dev/null 2>&1 || true
  kubectl create ns $NS >/dev/null
  cat <<YAML | kubectl apply -f - >/dev/null
apiVersion: etcd.kubectl-etcd.io/v1alpha1
kind: EtcdCluster
metadata: { name: big, namespace: $NS }
spec:
  replicas: 3
  version: 3.5.16
  storage: { size: 8Gi }
  etcd: { quotaBackendBytes: 8589934592 }
  tls: { mode: none } # plain http: etcdctl and the port-forward below speak it
YAML
fi
kubectl etcd -n $NS reconcile big --timeout 5m >/dev/null
port_forward
have=$(db_size)
if [ "$have" -lt $((SIZE_MB * 1048576)) ]; then
  log "filling $NS/big with ${SIZE_MB} 1 MiB values ($DATA; has $have bytes)…"
  t0=$(date +%s)
  for i in $(seq 0 $((SIZE_MB - 1))); do
    case $DATA in
      random) head -c 1048576 /dev/urandom ;;
      objects) "$PY" tests/bench-objects.py "$i" ;;
    esac | "$ETCDCTL" --endpoints 127.0.0.1:$PORT put "k$i" >/dev/null
  done
  log "filled in $(($(date +%s) - t0)) s"
fi
DB=$(db_size)
mib=$(echo "scale=1; $DB / 1048576" | bc)
log "db size: $DB bytes ($mib MiB)"

# CPU seconds the whole machine has been busy (every process: user, nice, system, irq, softirq).
busy() { awk -v hz="$(getconf CLK_TCK)" '/^cpu /{printf "%.2f\n", ($2+$3+$4+$7+$8+$9)/hz}' /proc/stat; }
# measure NAME CMD… (an executable, not a function: /usr/bin/time runs it) → $WORK/NAME.res holds
# "seconds peakRSS_KiB cpu_seconds machine_cpu_seconds"
measure() {
  local name=$1; shift
  local s e rss u sy b0 b1; s=$(date +%s.%N); b0=$(busy)
  echo "$s" > "$WORK/$name.start"
  /usr/bin/time -f '%M %U %S' -o "$WORK/$name.time" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" \
    || { cat "$WORK/$name.err" >&2; die "$name failed"; }
  e=$(date +%s.%N); b1=$(busy)
  read -r rss u sy < <(tail -n1 "$WORK/$name.time")
  printf '%.2f %s %.1f %.1f\n' "$(echo "$e - $s" | bc)" "$rss" "$(echo "$u + $sy" | bc)" "$(echo "$b1 - $b0" | bc)" > "$WORK/$name.res"
  log "$name: $(cat "$WORK/$name.res") (seconds, peak RSS KiB, CPU seconds, machine CPU seconds)"
}
ours=(env AWS_ENDPOINT_URL="$S3_LOCAL" "$BIN" -v -n $NS backup big --to "s3://$KE_S3_BUCKET/$PREFIX/ours" --compression)
theirs_upload=(env AWS_ENDPOINT_URL="$S3_LOCAL" "$PY" -c "import sys,boto3; from botocore.config import Config; boto3.client('s3', config=Config(s3={'addressing_style':'path'})).upload_file(sys.argv[1], sys.argv[2], sys.argv[3])"
  "$WORK/snap.db" "$KE_S3_BUCKET" "$PREFIX/theirs/snap.db")
ours_direct=(env KUBECTL_ETCD_DIAL=direct "${ours[@]}")
POD_IP=$(kubectl -n $NS get pod big-0 -o jsonpath='{.status.podIP}')
row() { # row LABEL SECONDS RSS_KiB CPU MACHINE_CPU
  printf '| %s | %.1f | %.0f | %.0f | %s | %s |\n' "$1" "$2" "$(echo "$mib / $2" | bc -l)" "$(echo "$3 / 1024" | bc -l)" "$4" "$5"
}
ratio() { echo "$1 / $2" | bc -l; }

table=""
for r in $(seq 1 "$ROUNDS"); do
  # Alternate the order between rounds: the side that runs first may find colder caches.
  if [ $((r % 2)) = 1 ]; then order="none zstd theirs direct theirs-direct"; else order="theirs-direct direct theirs zstd none"; fi
  for side in $order; do
    case $side in
      none) measure ours-none "${ours[@]}" none; read -r a_s a_rss a_cpu a_m < "$WORK/ours-none.res" ;;
      zstd) measure ours-zstd "${ours[@]}" zstd; read -r z_s z_rss z_cpu z_m < "$WORK/ours-zstd.res" ;;
      direct) measure ours-direct "${ours_direct[@]}" zstd; read -r d_s d_rss d_cpu d_m < "$WORK/ours-direct.res" ;;
      theirs)
        port_forward
        measure etcdctl-save "$ETCDCTL" --endpoints 127.0.0.1:$PORT snapshot save "$WORK/snap.db"
        read -r s_s s_rss s_cpu s_m < "$WORK/etcdctl-save.res"
        measure boto3-upload "${theirs_upload[@]}"
        read -r u_s u_rss u_cpu u_m < "$WORK/boto3-upload.res"
        rm -f "$WORK/snap.db"
        s3_rm "$PREFIX/theirs/"
        ;;
      theirs-direct)
        measure etcdctl-save-direct "$ETCDCTL" --endpoints "$POD_IP:2379" snapshot save "$WORK/snap.db"
        read -r sd_s sd_rss sd_cpu sd_m < "$WORK/etcdctl-save-direct.res"
        measure boto3-upload-direct "${theirs_upload[@]}"
        read -r ud_s ud_rss ud_cpu ud_m < "$WORK/boto3-upload-direct.res"
        rm -f "$WORK/snap.db"
        s3_rm "$PREFIX/theirs/"
        ;;
    esac
    log "round $r: $side done"
  done
  b_s=$(echo "$s_s + $u_s" | bc); b_m=$(echo "$s_m + $u_m" | bc)
  bd_s=$(echo "$sd_s + $ud_s" | bc); bd_m=$(echo "$sd_m + $ud_m" | bc)
  table+=$(printf '\nround %d (order: %s), db %s MiB of %s values\n| side | seconds | MiB/s | peak RSS MiB | CPU s | machine CPU s |\n|---|---|---|---|---|---|\n' "$r" "$order" "$mib" "$DATA")
  table+=$'\n'$(row "kubectl-etcd backup → S3, --compression none" "$a_s" "$a_rss" "$a_cpu" "$a_m")
  table+=$'\n'$(row "kubectl-etcd backup → S3, --compression zstd" "$z_s" "$z_rss" "$z_cpu" "$z_m")
  table+=$'\n'$(row "etcdctl snapshot save (to a file)" "$s_s" "$s_rss" "$s_cpu" "$s_m")
  table+=$'\n'$(row "boto3 upload_file (of that file)" "$u_s" "$u_rss" "$u_cpu" "$u_m")
  table+=$'\n'$(printf '| etcdctl + boto3, together | %.1f | %.0f | | | %s |' "$b_s" "$(echo "$mib / $b_s" | bc -l)" "$b_m")
  table+=$'\n'$(printf '| throughput ratio ours/theirs through the port-forward: none %.2f×, zstd %.2f× | | | | | |' "$(ratio "$b_s" "$a_s")" "$(ratio "$b_s" "$z_s")")
  table+=$'\n'$(row "kubectl-etcd --dial direct backup → S3, --compression zstd" "$d_s" "$d_rss" "$d_cpu" "$d_m")
  table+=$'\n'$(row "etcdctl snapshot save from the pod IP (to a file)" "$sd_s" "$sd_rss" "$sd_cpu" "$sd_m")
  table+=$'\n'$(row "boto3 upload_file (of that file)" "$ud_s" "$ud_rss" "$ud_cpu" "$ud_m")
  table+=$'\n'$(printf '| etcdctl + boto3 from the pod IP, together | %.1f | %.0f | | | %s |' "$bd_s" "$(echo "$mib / $bd_s" | bc -l)" "$bd_m")
  table+=$'\n'$(printf '| throughput ratio ours/theirs without the port-forward: %.2f× | | | | | |' "$(ratio "$bd_s" "$d_s")")
  table+=$'\n'
done

# Restore the newest backup of big (a zstd one) into 3 members; the pods reach S3 on the node IP.
export AWS_ENDPOINT_URL=$KE_S3_POD_ENDPOINT
measure restore "$BIN" -v -n $NS restore big2 --latest-of big --replicas 3 --storage 8Gi --timeout 20m
read -r r_s _ _ < "$WORK/restore.res"
# The CLI returns on etcd's own health answer (3 healthy voters); the pods' readiness probes follow.
ready_pods() { kubectl -n $NS get pods -l app.kubernetes.io/instance=big2 -o jsonpath='{range .items[*]}{.status.containerStatuses[0].ready}{"\n"}{end}' | grep -c true || true; }
for _ in $(seq 600); do [ "$(ready_pods)" -ge 3 ] && break; sleep 0.5; done
[ "$(ready_pods)" -ge 3 ] || die "big2 has $(ready_pods) Ready pods 5 min after the restore returned"
r_ready=$(echo "$(date +%s.%N) - $(cat "$WORK/restore.start")" | bc)
printf '%s\n| restore of the newest zstd backup (%s MiB) into 3 members: the CLI returns (3 healthy voters) | %.1f s |\n| … and 3 pods Ready | %.1f s |\n' "$table" "$mib" "$r_s" "$r_ready"
# Where the time went (the `-v` phase lines, src/phase.rs; ms summed per name; phases nest).
phases() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | sed -n 's/.*phase ended phase="\([a-z_:]*\)" ms=\([0-9.]*\).*/\1 \2/p' |
    awk '{t[$1]+=$2; n[$1]++} END {for (k in t) printf "  %-22s %9.0f ms  (%d)\n", k, t[k], n[k]}' | sort -k2 -nr
}
for f in ours-none ours-zstd ours-direct restore; do
  printf '\nwhere the last %s went:\n' "$f"
  phases "$WORK/$f.err"
done
