#!/usr/bin/env bash
# Benchmark (not a test, not in CI): on the testbed, side by side in one run,
#   - a plain 3-replica etcd StatefulSet (tests/cluster/plain-etcd-sts.yaml, the same image as
#     `create`'s default version) applied with kubectl, until 3 Ready pods, against
#     `kubectl etcd create demo --replicas 3` until it returns (every member Ready behind the
#     client Service, the cluster version risen);
#   - `kubectl etcd status demo` on those 3 members (STATUS_RUNS runs per round);
#   - `kubectl etcd scale 3→5` and `5→3` (SCALE=0 skips them);
#   - with BACKUP=1, tests/bench-backup.sh (SIZE_MB, default 512) after the rounds;
#   - with UPGRADE=1, tests/bench-upgrade.sh (FROM, TO: 3.5.35 -> 3.6.15 by default) after them:
#     a 3-member upgrade with a writer going, seconds per member, failed writes, longest stall;
# then one table of medians and ratios, and where the time of the last round's create and status
# went (the `-v` phases, summed per phase name: see src/phase.rs).
#   tests/cluster/up.sh && cargo build && tests/bench.sh
#   ROUNDS=5 STATUS_RUNS=5 SCALE=0 BACKUP=1 SIZE_MB=256 UPGRADE=1 BIN=path/to/kubectl-etcd tests/bench.sh
# The machine may be shared: the ratios (both sides measured in the same round, one after the
# other) mean more than the seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
export KUBECONFIG=${KUBECONFIG:-/tmp/tb/admin.kubeconfig}
BIN=$(readlink -f "${BIN:-${CARGO_TARGET_DIR:-target}/debug/kubectl-etcd}")
[ -x "$BIN" ] || { echo "no binary at $BIN: cargo build (or set BIN)" >&2; exit 1; }
export PATH=$(dirname "$BIN"):$PATH # `kubectl etcd` is this binary
# CREATE_FLAGS: extra flags of `create`; the default is what a user gets (managed TLS since issue
# 17); CREATE_FLAGS=--insecure compares like with like against the plain-http StatefulSet.
CREATE_FLAGS=${CREATE_FLAGS:-}
ROUNDS=${ROUNDS:-3} STATUS_RUNS=${STATUS_RUNS:-5} SCALE=${SCALE:-1} BACKUP=${BACKUP:-0} UPGRADE=${UPGRADE:-0}
VERSION=${VERSION:-$("$BIN" create --help | sed -n 's/.*\[default: \(3\.[0-9.]*\)\].*/\1/p' | head -n1)}
IMAGE=${IMAGE:-gcr.io/etcd-development/etcd:v$VERSION}
WORK=$(mktemp -d /tmp/bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# phases FILE: the `-v` phase lines of FILE, summed per phase name, longest first ("name ms count").
phases() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | sed -n 's/.*phase ended phase="\([a-z_]*\)" ms=\([0-9.]*\).*/\1 \2/p' \
    | awk '{s[$1]+=$2; n[$1]++} END {for (p in s) printf "%s %.0f %d\n", p, s[p], n[p]}' | sort -k2,2nr
}
kubectl etcd install >/dev/null 2>&1
p_times=() c_times=() s_times=() up_times=() down_times=()
for r in $(seq 1 "$ROUNDS"); do
  # Each measurement runs alone on the node: the plain StatefulSet's namespace is gone before
  # the operator-managed cluster starts.
  pns=bench-plain-$r-$$ ns=bench-$r-$$
  kubectl create namespace "$pns" >/dev/null
  t0=$(now)
  sed -e "s/__NAMESPACE__/$pns/g" -e "s|image: .*etcd:v.*|image: $IMAGE|" tests/cluster/plain-etcd-sts.yaml \
    | kubectl apply -f - >/dev/null
  until [ "$(kubectl -n "$pns" get statefulset etcd -o jsonpath='{.status.readyReplicas}' 2>/dev/null)" = 3 ]; do sleep 0.2; done
  p_times+=("$(secs "$t0" "$(now)")")
  kubectl delete namespace "$pns" --wait=true >/dev/null
  kubectl create namespace "$ns" >/dev/null
  t0=$(now)
  kubectl etcd -n "$ns" create demo --replicas 3 --version "$VERSION" $CREATE_FLAGS --timeout 5m -v >/dev/null 2>"$WORK/create.err" \
    || { cat "$WORK/create.err" >&2; exit 1; }
  c_times+=("$(secs "$t0" "$(now)")")
  # status: the cluster as create left it, STATUS_RUNS times (the first one also warms nothing:
  # every run is a new process with its own connections).
  st=()
  for _ in $(seq 1 "$STATUS_RUNS"); do
    t0=$(now); kubectl etcd -n "$ns" status demo >/dev/null; st+=("$(secs "$t0" "$(now)")")
  done
  s_times+=("$(printf '%s\n' "${st[@]}" | median)")
  kubectl etcd -n "$ns" status demo -v >/dev/null 2>"$WORK/status.err"
  if [ "$SCALE" = 1 ]; then
    t0=$(now); kubectl etcd -n "$ns" scale demo --replicas 5 --timeout 5m >/dev/null 2>&1; up_times+=("$(secs "$t0" "$(now)")")
    t0=$(now); kubectl etcd -n "$ns" scale demo --replicas 3 --timeout 5m >/dev/null 2>&1; down_times+=("$(secs "$t0" "$(now)")")
  fi
  kubectl delete namespace "$ns" --wait=true >/dev/null
  printf 'round %d: plain sts %.1f s, create %.1f s, status %.2f s (median of %d)%s\n' "$r" "${p_times[-1]}" \
    "${c_times[-1]}" "${s_times[-1]}" "$STATUS_RUNS" \
    "$([ "$SCALE" = 1 ] && printf ', scale 3->5 %.1f s, 5->3 %.1f s' "${up_times[-1]}" "${down_times[-1]}")"
done
p=$(printf '%s\n' "${p_times[@]}" | median); c=$(printf '%s\n' "${c_times[@]}" | median)
s=$(printf '%s\n' "${s_times[@]}" | median)
backup_rows=""
if [ "$BACKUP" = 1 ]; then
  BIN=$BIN SIZE_MB=${SIZE_MB:-512} ROUNDS=1 tests/bench-backup.sh | tee "$WORK/backup.out"
  backup_rows=$(sed -n -e 's/^| throughput ratio ours\/theirs through the port-forward: \([^|]*\) |.*/| backup to S3 vs etcdctl snapshot save + boto3, through the port-forward (throughput ratio, target >= 2) | | | \1 |/p' \
    -e 's/^| throughput ratio ours\/theirs without the port-forward: \([^|]*\) |.*/| the same from inside the cluster (--dial direct; etcdctl to the pod IP) | | | \1 |/p' "$WORK/backup.out" | tail -n2)
fi
upgrade_rows=""
if [ "$UPGRADE" = 1 ]; then
  BIN=$BIN ROUNDS=1 tests/bench-upgrade.sh | tee "$WORK/upgrade.out"
  upgrade_rows=$(sed -n '/^| upgrade /,$p' "$WORK/upgrade.out")
fi
printf '\n%s, %s, %s, etcd %s, median of %d rounds; load average %s\n\n' "$(date -u +%Y-%m-%dT%H:%MZ)" \
  "$(kubectl version -o json 2>/dev/null | sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/Kubernetes \1/p' | tail -n1)" \
  "$(nproc) cores" "$VERSION" "$ROUNDS" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '| measure | ours (s) | by hand (s) | ratio |\n|---|---|---|---|\n'
printf '| create --replicas 3 %s until it returns / plain StatefulSet until 3 Ready (target <= 0.6) | %.1f | %.1f | %.2f |\n' \
  "${CREATE_FLAGS:-(managed TLS)}" "$c" "$p" "$(echo "$c / $p" | bc -l)"
printf '| status of 3 members (target <= 0.5 s) | %.2f | | |\n' "$s"
if [ "$SCALE" = 1 ]; then
  printf '| scale 3 -> 5 | %.1f | | |\n| scale 5 -> 3 | %.1f | | |\n' \
    "$(printf '%s\n' "${up_times[@]}" | median)" "$(printf '%s\n' "${down_times[@]}" | median)"
fi
[ -n "$backup_rows" ] && printf '%s\n' "$backup_rows"
[ -n "$upgrade_rows" ] && printf '\n%s\n' "$upgrade_rows"
printf '\nwhere the last round'"'"'s create went (ms summed per phase; phases nest, waits are the pauses between passes):\n'
phases "$WORK/create.err" | awk '{printf "  %-14s %7d ms  (%d)\n", $1, $2, $3}'
printf '\nwhere its last status went (ms; members are asked in parallel, so member phases overlap):\n'
phases "$WORK/status.err" | awk '{printf "  %-14s %7d ms  (%d)\n", $1, $2, $3}'
