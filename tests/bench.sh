#!/usr/bin/env bash
# Benchmark (not a test): on the testbed, seconds from `kubectl etcd create --replicas 3` to Ready,
# the same for a plain 3-replica etcd StatefulSet applied with kubectl, their ratio, and the
# seconds of `kubectl etcd scale 3→5` and `5→3`. Rerunnable; ROUNDS=N repeats and reports medians.
#   tests/cluster/up.sh && cargo build && tests/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export KUBECONFIG=${KUBECONFIG:-/tmp/tb/admin.kubeconfig}
export PATH=$PWD/target/debug:$PATH
ROUNDS=${ROUNDS:-3}
now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
kubectl etcd install >/dev/null 2>&1
c_times=() p_times=() up_times=() down_times=()
for r in $(seq 1 "$ROUNDS"); do
  # Each measurement runs alone on the node: the plain StatefulSet's namespace is gone before
  # the operator-managed cluster starts.
  pns=bench-plain-$r-$$ ns=bench-$r-$$
  kubectl create namespace "$pns" >/dev/null
  # plain StatefulSet: apply, then wait for 3 Ready pods
  t0=$(now)
  sed "s/__NAMESPACE__/$pns/g" tests/cluster/plain-etcd-sts.yaml | kubectl apply -f - >/dev/null
  until [ "$(kubectl -n "$pns" get statefulset etcd -o jsonpath='{.status.readyReplicas}' 2>/dev/null)" = 3 ]; do sleep 0.2; done
  p_times+=("$(secs "$t0" "$(now)")")
  kubectl delete namespace "$pns" --wait=true >/dev/null
  kubectl create namespace "$ns" >/dev/null
  # kubectl etcd create: returns when the engine reports converged with 3 healthy voters
  t0=$(now)
  kubectl etcd -n "$ns" create demo --replicas 3 --timeout 5m >/dev/null 2>&1
  c_times+=("$(secs "$t0" "$(now)")")
  t0=$(now); kubectl etcd -n "$ns" scale demo --replicas 5 --timeout 5m >/dev/null 2>&1; up_times+=("$(secs "$t0" "$(now)")")
  t0=$(now); kubectl etcd -n "$ns" scale demo --replicas 3 --timeout 5m >/dev/null 2>&1; down_times+=("$(secs "$t0" "$(now)")")
  kubectl delete namespace "$ns" --wait=true >/dev/null
  printf 'round %d: plain sts %.1f s, create %.1f s, scale 3->5 %.1f s, 5->3 %.1f s\n' "$r" "${p_times[-1]}" "${c_times[-1]}" "${up_times[-1]}" "${down_times[-1]}"
done
p=$(printf '%s\n' "${p_times[@]}" | median); c=$(printf '%s\n' "${c_times[@]}" | median)
u=$(printf '%s\n' "${up_times[@]}" | median); d=$(printf '%s\n' "${down_times[@]}" | median)
printf '\nmedian of %d rounds\n' "$ROUNDS"
printf '  plain 3-replica StatefulSet to 3 Ready   %6.1f s\n' "$p"
printf '  kubectl etcd create --replicas 3 to Ready %6.1f s\n' "$c"
printf '  ratio create / plain                      %6.2f (target <= 1.25)\n' "$(echo "$c / $p" | bc -l)"
printf '  kubectl etcd scale 3 -> 5                 %6.1f s\n' "$u"
printf '  kubectl etcd scale 5 -> 3                 %6.1f s\n' "$d"
