#!/usr/bin/env bash
# Backup/restore benchmark on the testbed (not part of CI): a database of >= 1 GiB (quota raised),
# then side by side in one run
#   A. kubectl etcd backup --to s3://… (streamed: etcd → sha256/compression → multipart upload)
#   B. etcdctl snapshot save to a file, then the file uploaded with boto3 (what the others do)
# with wall time, throughput and peak RSS of each, and the restore of A into 3 Ready members.
#   SIZE_MB=1100 tests/bench-backup.sh        (needs the testbed and S3: tests/cluster/up.sh, s3.sh up)
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/cluster/env.sh
export KUBECONFIG=$TB/admin.kubeconfig
. "$TB/s3.env"
export AWS_ENDPOINT_URL=$KE_S3_POD_ENDPOINT
BIN=${BIN:-target/release/kubectl-etcd}
[ -x "$BIN" ] || cargo build --release --bin kubectl-etcd
export PATH=$(dirname "$(readlink -f "$BIN")"):$PATH
export KUBECTL_ETCD_TOOLS_IMAGE=${KE_OPERATOR_IMAGE:-testbed.local/kubectl-etcd:dev}
ETCDCTL=$ETCD_BIN_DIR/v3.5.16/etcdctl
PY=$KE_CACHE/s3-venv/bin/python
SIZE_MB=${SIZE_MB:-1100}
NS=bench-backup
WORK=$(mktemp -d)
trap 'kill ${PF:-0} 2>/dev/null || true; rm -rf "$WORK"; kubectl delete ns $NS --wait=false >/dev/null 2>&1 || true' EXIT

kubectl delete ns $NS --wait=true >/dev/null 2>&1 || true
kubectl create ns $NS >/dev/null
kubectl etcd install >/dev/null 2>&1
cat <<YAML | kubectl apply -f - >/dev/null
apiVersion: etcd.kubectl-etcd.io/v1alpha1
kind: EtcdCluster
metadata: { name: big, namespace: $NS }
spec:
  replicas: 3
  version: 3.5.16
  storage: { size: 8Gi }
  etcd: { quotaBackendBytes: 8589934592 }
YAML
kubectl etcd -n $NS reconcile big --timeout 5m >/dev/null
echo "filling big with ${SIZE_MB} MiB of incompressible 1 MiB values…" >&2
t0=$(date +%s)
kubectl -n $NS exec big-0 -- sh -c "head -c 1048576 /dev/urandom > /tmp/v; i=0; while [ \$i -lt $SIZE_MB ]; do head -c 1048000 /dev/urandom > /tmp/v; etcdctl put k\$i < /tmp/v > /dev/null || exit 1; i=\$((i+1)); done"
echo "filled in $(( $(date +%s) - t0 )) s" >&2
DB=$(kubectl -n $NS exec big-0 -- etcdctl endpoint status -w json | $PY -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["dbSize"])')
echo "db size: $DB bytes" >&2

measure() { # measure NAME CMD… → "NAME seconds peakRSS_KiB"
  local name=$1; shift
  local s; s=$(date +%s.%N)
  /usr/bin/time -f '%M' -o "$WORK/rss" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" || { cat "$WORK/$name.err" >&2; exit 1; }
  printf '%s %.2f %s\n' "$name" "$(echo "$(date +%s.%N) - $s" | bc)" "$(tail -n1 "$WORK/rss")"
}

# A: streamed, uncompressed (same bytes as B) and zstd
A=$(measure stream-none kubectl etcd -n $NS backup big --to "s3://$KE_S3_BUCKET/bench" --compression none)
Z=$(measure stream-zstd kubectl etcd -n $NS backup big --to "s3://$KE_S3_BUCKET/bench" --compression zstd)
# B: etcdctl snapshot save (through a port-forward) + boto3 upload of the file
kubectl -n $NS port-forward pod/big-0 23790:2379 >/dev/null 2>&1 & PF=$!
sleep 2
S=$(measure etcdctl-save "$ETCDCTL" --endpoints 127.0.0.1:23790 snapshot save "$WORK/snap.db")
U=$(measure boto3-upload "$PY" -c "import sys,boto3; from botocore.config import Config; boto3.client('s3', endpoint_url=sys.argv[1], config=Config(s3={'addressing_style':'path'})).upload_file(sys.argv[2], sys.argv[3], 'bench/etcdctl-snap.db')" "$AWS_ENDPOINT_URL" "$WORK/snap.db" "$KE_S3_BUCKET")
R=$(measure restore kubectl etcd -n $NS restore big2 --latest-of big --replicas 3 --timeout 15m)

read -r _ a_s a_rss <<<"$A"; read -r _ z_s z_rss <<<"$Z"; read -r _ s_s s_rss <<<"$S"; read -r _ u_s u_rss <<<"$U"; read -r _ r_s _ <<<"$R"
b_s=$(echo "$s_s + $u_s" | bc)
mib=$(echo "scale=1; $DB / 1048576" | bc)
printf '\n| measure (db %s MiB) | seconds | MiB/s | peak RSS MiB |\n|---|---|---|---|\n' "$mib"
printf '| kubectl etcd backup → S3, none | %s | %.0f | %.0f |\n' "$a_s" "$(echo "$mib / $a_s" | bc -l)" "$(echo "$a_rss / 1024" | bc -l)"
printf '| kubectl etcd backup → S3, zstd | %s | %.0f | %.0f |\n' "$z_s" "$(echo "$mib / $z_s" | bc -l)" "$(echo "$z_rss / 1024" | bc -l)"
printf '| etcdctl snapshot save + boto3 upload | %s (%s + %s) | %.0f | %.0f / %.0f |\n' "$b_s" "$s_s" "$u_s" "$(echo "$mib / $b_s" | bc -l)" "$(echo "$s_rss / 1024" | bc -l)" "$(echo "$u_rss / 1024" | bc -l)"
printf '| speed-up (streamed, none) | %.2fx | | |\n' "$(echo "$b_s / $a_s" | bc -l)"
printf '| restore of the zstd backup to 3 Ready members | %s | | |\n' "$r_s"
