#!/usr/bin/env bash
# Regenerates link/hot-code.order (not a test, not in CI; needs the testbed, valgrind, python3):
# the functions `kubectl etcd operate` runs, which release builds link next to each other (see
# src/build.rs). The release binary is built with a link map, then run under callgrind on the
# testbed: it forms 12 clusters in a namespace of its own (eleven of 1 member, one of 3) and idles
# 70 s (every converged cluster is looked at again within a minute) while its /metrics, /healthz
# and /readyz are read every 10 s (as Prometheus and the kubelet do), then it is started again
# among the converged clusters and idles 70 s more. Every function any instruction of those runs
# executed is listed, in its address order in the build measured (the linker's own order, which
# keeps related code together). Regenerate after a change of Cargo.lock (tests/generated.rs
# checks it) or of the toolchain (the build warns), and after large changes of the engine.
#   tests/hot-code.sh            # ~10 minutes; writes link/hot-code.order
set -euo pipefail
cd "$(dirname "$0")/.."
export KUBECONFIG=${KUBECONFIG:-/tmp/tb/admin.kubeconfig}
command -v valgrind >/dev/null || { apt-get install -y -qq valgrind >/dev/null; }
WORK=$(mktemp -d /tmp/hot-code.XXXXXX)
ns=hot-code-$$ port=$((20000 + $$ % 20000)) op=""
cleanup() {
  [ -n "$op" ] && kill "$op" 2>/dev/null && wait "$op" 2>/dev/null
  # The clusters' finalizer needs an operator: delete them with one running.
  target/release/kubectl-etcd operate --watch-namespace "$ns" --dial direct \
    --metrics-addr "127.0.0.1:$port" --identity "hot-code-cleanup-$$" 2>/dev/null &
  local cleaner=$!
  kubectl delete namespace "$ns" --timeout=5m >/dev/null 2>&1 || true
  kill "$cleaner" 2>/dev/null; wait "$cleaner" 2>/dev/null
  [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT
say() { printf '[hot-code %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

say "release build with a link map"
cargo rustc -q --release --locked --bin kubectl-etcd -- -C "link-arg=-Wl,-Map=$WORK/map"
bin=$WORK/kubectl-etcd
cp target/release/kubectl-etcd "$bin"
version=$("$bin" create --help | sed -n 's/.*\[default: \(3\.[0-9.]*\)\].*/\1/p' | head -n1)

"$bin" install >/dev/null 2>&1
kubectl create namespace kubectl-etcd-system >/dev/null 2>&1 || true
kubectl create namespace "$ns" >/dev/null
for spec in a:1 b:1 c:1 d:1 e:1 f:1 g:1 h:1 i:1 j:1 k:1 m:3; do
  cat <<YAML
apiVersion: etcd.kubectl-etcd.io/v1alpha1
kind: EtcdCluster
metadata: {name: ${spec%:*}, namespace: $ns}
spec:
  replicas: ${spec#*:}
  version: "$version"
  storage: {ephemeral: true}
  resources: {requests: {cpu: 10m, memory: 32Mi}}
---
YAML
done | kubectl apply -f - >/dev/null
running() { kubectl -n "$ns" get etcdcluster -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running$' || true; }

# run NAME SECONDS: the operator under callgrind until the 12 clusters are Running, then SECONDS
# more, its endpoints read every 10 s.
run() {
  valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no \
    --callgrind-out-file="$WORK/cg.$1" "$bin" operate --watch-namespace "$ns" --dial direct \
    --metrics-addr "127.0.0.1:$port" --identity "hot-code-$$" 2>"$WORK/$1.log" &
  op=$!
  local deadline=$((SECONDS + 600))
  until [ "$(running)" = 12 ]; do
    kill -0 "$op" 2>/dev/null || { tail -20 "$WORK/$1.log" >&2; exit 1; }
    [ "$SECONDS" -lt "$deadline" ] || { say "the clusters did not form in 10 minutes"; exit 1; }
    sleep 5
  done
  say "$1: clusters Running; idle $2 s"
  for _ in $(seq 1 $(($2 / 10))); do
    for path in metrics healthz readyz; do curl -s "http://127.0.0.1:$port/$path" >/dev/null || true; done
    sleep 10
  done
  kill "$op"; wait "$op" 2>/dev/null || true; op=""
}
say "forming 12 clusters under callgrind"
run form 70
say "starting again among them"
run restart 70

say "mapping the executed instructions onto the link map"
python3 - "$WORK/map" "$bin" "$WORK"/cg.form "$WORK"/cg.restart >"$WORK/order" <<'PY'
import bisect, re, sys
mapfile, binary, outs = sys.argv[1], sys.argv[2], sys.argv[3:]
line_re = re.compile(r'^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+(\S.*)$')
sections = []  # [start, size, input section name, first symbol]
in_text = False
for line in open(mapfile):
    m = line_re.match(line)
    if not m:
        continue
    vma, size, rest = int(m.group(1), 16), int(m.group(2), 16), m.group(3).strip()
    if rest.startswith('.'):  # an output section
        in_text = rest.split()[0] == '.text'
    elif in_text and ':(' in rest and rest.endswith(')'):
        sections.append([vma, size, rest[rest.index(':(') + 2:-1], None])
    elif in_text and sections and sections[-1][3] is None:
        sections[-1][3] = rest  # the section's first symbol (demangled by the map: C names only)
sections.sort()
starts = [s[0] for s in sections]
hit = set()
for out in outs:
    ours = False
    for line in open(out, errors='replace'):
        if line.startswith('ob='):
            ours = line[3:].strip() == binary
        elif ours and line.startswith('0x'):
            # Addresses are relative to the binary's load address: the link map's addresses.
            a = int(line.split(None, 1)[0], 16)
            i = bisect.bisect_right(starts, a) - 1
            if i >= 0 and a < sections[i][0] + max(sections[i][1], 1):
                hit.add(i)
seen, size = set(), 0
for i in sorted(hit):
    start, length, name, first = sections[i]
    if name == '.text':  # an object without function sections (assembly): one of its symbols
        symbol = first
    else:
        symbol = re.sub(r'^\.text\.(unlikely\.|hot\.|startup\.|exit\.|split\.)?', '', name)
    if symbol and symbol not in seen:
        seen.add(symbol)
        size += length
        print(symbol)
total = sum(s[1] for s in sections)
print(f'{len(seen)} functions, {size / 2**20:.2f} MiB of {total / 2**20:.2f} MiB of code', file=sys.stderr)
PY
{
  echo "# lld --symbol-ordering-file for release builds (src/build.rs). Generated by tests/hot-code.sh: do not edit."
  echo "# The functions \`operate\` ran while forming clusters, idling (its endpoints read), and starting among converged ones."
  echo "# generated: $(date -u +%Y-%m-%d) from $(git rev-parse --short HEAD)"
  echo "# rustc: $(rustc -V)"
  echo "# Cargo.lock sha256: $(sha256sum Cargo.lock | cut -d' ' -f1)"
  cat "$WORK/order"
} >link/hot-code.order
say "wrote link/hot-code.order ($(grep -vc '^#' link/hot-code.order) functions)"
