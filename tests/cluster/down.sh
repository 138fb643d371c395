#!/usr/bin/env bash
# Stops the testbed started by up.sh — by recorded PID only (never by name: other etcd/cargo processes run
# on this machine). Pods first (ctr tasks kill/delete), then the node and control plane, then unmounts what
# kubelet mounted under /var/lib/kubelet.
#   --clean  also wipe the testbed state: $TB (PKI, etcd data, logs, ...), /var/lib/kubelet, /tmp/hostpath_pv,
#            the pod containers in containerd (the images and the $KE_CACHE caches are kept)
#   --net    also undo net.sh (guard chain, kube-proxy/CNI iptables chains, bridges k8sdummy + cni0, route)
# Safe to run repeatedly; up.sh works again afterwards.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"; . "$here/lib.sh"
clean=0 net=0
for a in "$@"; do
  case "$a" in
    --clean) clean=1 ;;
    --net) net=1 ;;
    *) die "usage: down.sh [--clean] [--net]" ;;
  esac
done
CTR="ctr --address /run/containerd/containerd.sock -n k8s.io"

# kubelet first, so it does not restart what we stop next
stop kubelet 20

if alive containerd; then
  tasks=$($CTR tasks ls -q 2>/dev/null || true)
  for t in $tasks; do $CTR tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true; done
  for t in $tasks; do
    for i in 1 2 3 4 5 6 7 8 9 10; do
      $CTR tasks delete "$t" >/dev/null 2>&1 && break
      $CTR tasks ls -q 2>/dev/null | grep -Fx "$t" >/dev/null || break
      sleep 0.3
    done
  done
  if [ -n "$tasks" ]; then log "killed $(echo $tasks | wc -w) pod task(s)"; fi
  if [ $clean = 1 ]; then
    # forget the pod containers too (their sandboxes refer to the state wiped below); images stay
    for c in $($CTR containers ls -q 2>/dev/null || true); do $CTR containers rm "$c" >/dev/null 2>&1 || true; done
  fi
fi

stop kube-proxy
"$here/netpol.sh" down   # the NetworkPolicy enforcer and its chains
stop dns-feeder 5
stop pv-fsgroup 5
stop dnsmasq 5
stop kube-scheduler
stop kube-controller-manager
stop kube-apiserver 30
stop containerd 20
stop etcd 20

# what kubelet/containerd mounted (deepest first): secret tmpfs, the /var/lib/kubelet self bind mount,
# pod network namespaces
umount_under() {
  local prefix=$1 m
  awk -v p="$prefix" '$2 == p || index($2, p "/") == 1 {print $2}' /proc/mounts | sort -r | uniq |
    while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "WARNING: cannot unmount $m"; done
}
umount_under /var/lib/kubelet
umount_under /var/lib/kubelet   # the self bind mount can hide a second layer
# A pod network namespace mounted from another mount namespace (a sandbox that shares /run with the
# host, a container started with the host's /run) is locked here: neither umount nor rm can free it.
# It is harmless (CNI names each sandbox afresh), so it is left with a note, never a failure.
if [ $clean = 1 ]; then
  left=0
  for ns in /run/netns/cni-*; do
    [ -e "$ns" ] || continue
    umount "$ns" 2>/dev/null || umount -l "$ns" 2>/dev/null || true
    rm -f "$ns" 2>/dev/null || left=$((left + 1))
  done
  if [ $left -gt 0 ]; then log "note: $left pod network namespace(s) under /run/netns are mounted from another mount namespace; left in place"; fi
fi

if [ $clean = 1 ]; then
  if [ -x "$here/s3.sh" ] && alive s3; then "$here/s3.sh" down || true; fi
  if [ -x "$here/cert-manager.sh" ] && alive cert-manager; then "$here/cert-manager.sh" down || true; fi
  for d in "$TB" /var/lib/kubelet /tmp/hostpath_pv; do
    # what is left is what another mount namespace holds mounted (see /run/netns above)
    rm -rf "$d" 2>/dev/null || log "note: $d is not entirely removed (mounts held by another mount namespace)"
  done
  log "wiped $TB, /var/lib/kubelet, /tmp/hostpath_pv (kept: $KE_CACHE, containerd images)"
fi

if [ $net = 1 ]; then
  # kube-proxy's own chains (KUBE-*) in nat/filter/mangle
  for table in nat filter mangle; do
    iptables -t "$table" -S 2>/dev/null | awk '$1=="-A" && ($0 ~ / -j (KUBE-|CNI-|KE-GUARD)/ || $2 ~ /^(KUBE-|CNI-)/) {print}' |
      { grep -v '^-A \(KUBE-\|CNI-\)' || true; } |
      while read -r rule; do
        # delete jumps from the built-in chains into our chains
        eval "iptables -t $table ${rule/-A/-D}" 2>/dev/null || true
      done
    for chain in $(iptables -t "$table" -S 2>/dev/null | awk '$1=="-N" && ($2 ~ /^(KUBE-|CNI-)/ || $2 == "KE-GUARD") {print $2}'); do
      iptables -t "$table" -F "$chain" 2>/dev/null || true
    done
    for chain in $(iptables -t "$table" -S 2>/dev/null | awk '$1=="-N" && ($2 ~ /^(KUBE-|CNI-)/ || $2 == "KE-GUARD") {print $2}'); do
      iptables -t "$table" -X "$chain" 2>/dev/null || true
    done
  done
  ip route del 10.96.0.0/16 dev k8sdummy 2>/dev/null || true
  for br in cni0 k8sdummy; do ip link del "$br" 2>/dev/null || true; done
  log "host network changes undone (bridges k8sdummy/cni0, route, guard + KUBE-/CNI- iptables chains)"
fi
log "testbed down"
