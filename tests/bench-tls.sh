#!/usr/bin/env bash
# Benchmark (not a test, not in CI): what managed TLS (the default) costs against plain http
# (`--insecure`) on the testbed. Each round creates a 3-member cluster both ways, one after the
# other, in namespaces of their own, and measures
#   - create: `kubectl etcd create demo --replicas 3` until it returns (every member Ready behind
#     the client Service; managed TLS first issues its CA and three certificates);
#   - write, new client per put: PUTS sequential `etcdctl put` from inside demo-0 to the client
#     Service, each a new process (TCP connect, TLS handshake with client certificate under
#     TLS, one put): what a short-lived client pays;
#   a put on a connection already open adds only the record encryption (AES-GCM), which this
#   script does not measure apart.
# then the medians of each side.
#   tests/cluster/up.sh && cargo build && tests/bench-tls.sh
#   ROUNDS=3 PUTS=100 BIN=path/to/kubectl-etcd tests/bench-tls.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export KUBECONFIG=${KUBECONFIG:-/tmp/tb/admin.kubeconfig}
BIN=$(readlink -f "${BIN:-${CARGO_TARGET_DIR:-target}/debug/kubectl-etcd}")
[ -x "$BIN" ] || { echo "no binary at $BIN: cargo build (or set BIN)" >&2; exit 1; }
export PATH=$(dirname "$BIN"):$PATH # `kubectl etcd` is this binary
ROUNDS=${ROUNDS:-3} PUTS=${PUTS:-100}
now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A create put
for r in $(seq 1 "$ROUNDS"); do
  for side in plain tls; do
    ns=bench-tls-$side-$r-$$
    flags=(); [ "$side" = plain ] && flags=(--insecure)
    kubectl create namespace "$ns" >/dev/null
    t0=$(now)
    kubectl etcd -n "$ns" create demo --replicas 3 "${flags[@]}" --timeout 5m >/dev/null 2>&1
    c=$(secs "$t0" "$(now)")
    # From inside demo-0 to the client Service: the pod's ETCDCTL_* variables carry the client
    # certificate under TLS; the endpoint is the Service in both cases.
    scheme=http; [ "$side" = tls ] && scheme=https
    t0=$(now)
    kubectl -n "$ns" exec demo-0 -- sh -c "i=0; while [ \$i -lt $PUTS ]; do ETCDCTL_ENDPOINTS=$scheme://demo-client:2379 etcdctl put k/\$i v >/dev/null || exit 1; i=\$((i+1)); done"
    p=$(echo "($(now) - $t0) * 1000 / $PUTS" | bc -l)
    create[$side]+="$c "; put[$side]+="$p "
    printf 'round %d %s: create %.1f s, put (new client each) %.1f ms\n' "$r" "$side" "$c" "$p"
    kubectl delete namespace "$ns" --wait=false >/dev/null
  done
done
printf '\n%s, %s cores, load average %s, %s rounds, %s puts per round\n\n' "$(date -u +%Y-%m-%dT%H:%MZ)" \
  "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$ROUNDS" "$PUTS"
printf '| measure (median) | plain http | managed TLS |\n|---|---|---|\n'
printf '| create, 3 members (s) | %.1f | %.1f |\n' \
  "$(tr ' ' '\n' <<<"${create[plain]}" | grep . | median)" "$(tr ' ' '\n' <<<"${create[tls]}" | grep . | median)"
printf '| put, new client each (ms) | %.1f | %.1f |\n' \
  "$(tr ' ' '\n' <<<"${put[plain]}" | grep . | median)" "$(tr ' ' '\n' <<<"${put[tls]}" | grep . | median)"
