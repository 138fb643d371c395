#!/usr/bin/env bash
# Adoption benchmark on the testbed (not part of CI, not in .ci/run): a plain 3-member etcd
# StatefulSet (tests/cluster/plain-etcd-sts.yaml, etcd 3.6.16, quota raised to 4 GiB, 4Gi volumes)
# filled with SIZE_MB values of 1 MiB from /dev/urandom, a writer putting a key every 100 ms through
# the old client Service `etcd`, then
#   kubectl etcd adopt big --from statefulset/etcd --take-over-service --yes --storage 4Gi
# timed from start to its return (3 new voters, the old members removed, the old StatefulSet at 0).
# Printed: the seconds, the db size, the writer's acknowledged and failed writes, acknowledged
# writes lost (must be 0), and the longest write stall: the longest time between two acknowledged
# writes while the adoption ran (the writer's clock is /proc/uptime in its pod, 10 ms steps).
#   cargo build --bin kubectl-etcd && tests/bench-adopt.sh
#   SIZE_MB=1100 BIN=path/to/kubectl-etcd KEEP=1 tests/bench-adopt.sh
# Disk: the old and the new members each hold the database (about 7 GiB for 1.1 GiB of data at the
# peak); the namespace (and with it the volumes) is deleted at the end unless KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/cluster/env.sh
export KUBECONFIG=$TB/admin.kubeconfig
BIN=$(readlink -f "${BIN:-${CARGO_TARGET_DIR:-target}/debug/kubectl-etcd}")
[ -x "$BIN" ] || die "no binary at $BIN: run cargo build --bin kubectl-etcd (or set BIN)"
export PATH=$(dirname "$BIN"):$PATH # `kubectl etcd` is this binary too
IMAGE=gcr.io/etcd-development/etcd:v3.6.16
ETCDCTL=$ETCD_BIN_DIR/v3.6.16/etcdctl
[ -x "$ETCDCTL" ] || die "needs $ETCDCTL (tests/cluster/etcd-bins.sh)"
SIZE_MB=${SIZE_MB:-1100}
KEEP=${KEEP:-0}
NS=${NS:-bench-adopt}
WORK=$(mktemp -d /tmp/bench-adopt.XXXXXX)
# shellcheck disable=SC2329 # run by the EXIT trap
cleanup() {
  if [ -n "${PF:-}" ]; then kill "$PF" 2>/dev/null || true; fi
  rm -rf "$WORK"
  if [ "$KEEP" != 1 ]; then kubectl delete ns "$NS" --wait=false >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

free_gib() { df -BG --output=avail / | tail -n1 | tr -dc 0-9; }
[ "$(free_gib)" -gt $((24 + 7 * SIZE_MB / 1024)) ] \
  || die "only $(free_gib) GiB free on /: the run needs about $((7 * SIZE_MB / 1024)) GiB and 20 must stay free"

kubectl etcd install >/dev/null
kubectl delete ns "$NS" --wait=true >/dev/null 2>&1 || true
kubectl create ns "$NS" >/dev/null
sed -e "s/__NAMESPACE__/$NS/g" -e "s|gcr.io/etcd-development/etcd:v3.4.23|$IMAGE|" \
  -e 's|requests: {storage: 1Gi}|requests: {storage: 4Gi}|' \
  -e 's|^\(  *\)- --initial-cluster-state=new$|&\n\1- --quota-backend-bytes=4294967296|' \
  tests/cluster/plain-etcd-sts.yaml | kubectl apply -f - >/dev/null
kubectl -n "$NS" rollout status statefulset/etcd --timeout=300s >/dev/null

kubectl -n "$NS" port-forward pod/etcd-0 :2379 >"$WORK/pf.out" 2>&1 & PF=$!
PORT=
for _ in $(seq 50); do
  PORT=$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) .*/\1/p' "$WORK/pf.out" | head -n1)
  [ -n "$PORT" ] && "$ETCDCTL" --endpoints 127.0.0.1:$PORT endpoint health >/dev/null 2>&1 && break
  sleep 0.2
done
[ -n "$PORT" ] || die "port-forward to $NS/etcd-0 does not answer: $(cat "$WORK/pf.out")"
# Never write into anything but the bench cluster.
"$ETCDCTL" --endpoints 127.0.0.1:$PORT member list | grep -q ", etcd-0, http://etcd-0.etcd.$NS.svc" \
  || die "127.0.0.1:$PORT does not answer as $NS/etcd-0"
log "filling $NS/etcd with $SIZE_MB incompressible 1 MiB values…"
t0=$(date +%s)
for i in $(seq 0 $((SIZE_MB - 1))); do
  head -c 1048576 /dev/urandom | "$ETCDCTL" --endpoints 127.0.0.1:$PORT put "k$i" >/dev/null
done
"$ETCDCTL" --endpoints 127.0.0.1:$PORT put before kept >/dev/null
status() { "$ETCDCTL" --endpoints 127.0.0.1:$PORT endpoint status -w json; }
DB=$(status | sed -n 's/.*"dbSize":\([0-9]*\).*/\1/p')
CLUSTER_ID=$(status | sed -n 's/.*"cluster_id":\([0-9]*\).*/\1/p')
kill "$PF"; PF=
mib=$(echo "scale=1; $DB / 1048576" | bc)
log "filled in $(($(date +%s) - t0)) s: db $DB bytes ($mib MiB), cluster id $CLUSTER_ID; $(free_gib) GiB free"

# The writer: a put every 100 ms through the old client Service, each line "ack|fail I UPTIME".
kubectl -n "$NS" run writer --image=gcr.io/etcd-development/etcd:v3.5.35 --restart=Never --command -- sh -c \
  'i=0; while true; do if etcdctl --endpoints=http://etcd:2379 --command-timeout=5s put w/$i v$i >/dev/null 2>&1; then r=ack; else r=fail; fi; read up _ </proc/uptime; echo $r $i $up; i=$((i+1)); sleep 0.1; done' >/dev/null
for _ in $(seq 90); do
  [ "$(kubectl -n "$NS" logs writer 2>/dev/null | grep -c '^ack' || true)" -gt 5 ] && break
  sleep 1
done
writer_now() { kubectl -n "$NS" exec writer -- cat /proc/uptime | cut -d' ' -f1; }

log "adopting (kubectl etcd adopt big --from statefulset/etcd --take-over-service --yes)…"
w0=$(writer_now); s=$(date +%s.%N)
"$BIN" -n "$NS" adopt big --from statefulset/etcd --take-over-service --yes --storage 4Gi --timeout 40m \
  >"$WORK/adopt.out" 2>"$WORK/adopt.err" || { cat "$WORK/adopt.err" >&2; die "adopt failed"; }
e=$(date +%s.%N); w1=$(writer_now)
secs=$(echo "$e - $s" | bc)
sleep 5 # writes go on after the adoption
kubectl -n "$NS" logs writer >"$WORK/writer.log"
kubectl -n "$NS" delete pod writer --wait=false >/dev/null

ctl() { kubectl -n "$NS" exec big-0 -- etcdctl "$@"; }
ctl get --prefix w/ --keys-only | grep . | sort >"$WORK/have"
grep '^ack ' "$WORK/writer.log" | awk '{print "w/" $2}' | sort >"$WORK/acked"
acked=$(wc -l <"$WORK/acked")
failed=$(grep -c '^fail ' "$WORK/writer.log" || true)
lost=$(comm -23 "$WORK/acked" "$WORK/have" | wc -l)
# The longest time without an acknowledged write while the adoption ran (from its start to its end).
stall=$(awk -v w0="$w0" -v w1="$w1" '
  $1 == "ack" && $3 >= w0 && $3 <= w1 { if (last == "") last = w0; if ($3 - last > max) max = $3 - last; last = $3 }
  END { if (last == "") last = w0; if (w1 - last > max) max = w1 - last; printf "%.2f", max }' "$WORK/writer.log")
after=$(ctl endpoint status -w json | sed -n 's/.*"cluster_id":\([0-9]*\).*/\1/p')
members=$(ctl member list | awk -F', ' '{print $3}' | sort | tr '\n' ' ')
old=$(kubectl -n "$NS" get statefulset etcd -o jsonpath='{.spec.replicas}')
pvcs=$(kubectl -n "$NS" get pvc -o name | grep -c 'data-etcd-' || true)
[ "$after" = "$CLUSTER_ID" ] || die "cluster id changed: $CLUSTER_ID → $after"
[ "$lost" = 0 ] || die "$lost acknowledged writes lost: $(comm -23 "$WORK/acked" "$WORK/have" | head)"
[ "$members" = "big-0 big-1 big-2 " ] || die "members after the adoption: $members"
[ "$old" = 0 ] && [ "$pvcs" = 3 ] || die "old StatefulSet at $old replicas with $pvcs PVCs"
printf '| adopt a 3-member etcd 3.6.16 cluster, db %s MiB: `kubectl etcd adopt … --yes` returns | %.1f s |\n' "$mib" "$secs"
printf '| longest write stall of a writer through the old client Service (100 ms between puts) | %s s |\n' "$stall"
printf '| writer: acknowledged / failed / acknowledged and lost | %s / %s / %s |\n' "$acked" "$failed" "$lost"
printf '| cluster id before / after | %s / %s |\n' "$CLUSTER_ID" "$after"
log "members: $members; old StatefulSet at $old replicas, $pvcs PVCs kept; $(free_gib) GiB free at the end"
