#!/usr/bin/env bash
# The testbed's NetworkPolicy enforcer: kube-router's network policy controller alone (no routing,
# no service proxy; the `bridge` CNI plugin and kube-proxy keep doing those), built from its Go module
# at an exact version (helm.sh kube-router, cached under $KE_CACHE/tools). TEST-ONLY: security flaws
# are reported for kube-router v2.1.0, the one version the Go module proxy serves here; it guards
# nothing but this throwaway testbed. Why this one and not kube-network-policies or Calico:
# docs/src/network-policy.md ("The testbed's enforcer").
#
#   netpol.sh up      start it (idempotent) and wait until its chains are hooked into FORWARD
#   netpol.sh down    stop it and remove its iptables chains and ipsets (pods are then unfiltered)
#   netpol.sh status  say whether it runs and enforces
#
# Its dataplane is iptables + ipset (the iptables NFQUEUE target, ipset and nft-compat are what this
# kernel has; its nftables `queue` expression is not built). It runs as the testbed's admin, like the
# other components, logs to $TB/logs/kube-router.log and is known by $TB/pids/kube-router.pid.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"; . "$here/lib.sh"
NAME=kube-router
KC=$TB/admin.kubeconfig
SVC_CIDR=10.96.0.0/16

# enforcing — its jump from FORWARD is in place (the controller's first full sync has run).
enforcing() { iptables -w -t filter -S FORWARD 2>/dev/null | grep -q -- '-j KUBE-ROUTER-FORWARD'; }

# cleanup — what the controller leaves behind when stopped: the jumps from the built-in chains, its
# chains (KUBE-ROUTER-*, KUBE-POD-FW-*, KUBE-NWPLCY-*) and its ipsets (KUBE-SRC-*, KUBE-DST-*).
# kube-proxy's KUBE-* chains are not touched. (`kube-router --cleanup-config` of v2.1.0 builds its
# controller without iptables handlers, so it removes nothing: done here instead.)
cleanup() {
  local rule chain set
  iptables -w -t filter -S | awk '$1 == "-A" && ($2 == "INPUT" || $2 == "FORWARD" || $2 == "OUTPUT") && / -j KUBE-ROUTER-/' |
    while read -r rule; do eval "iptables -w -t filter ${rule/-A/-D}" 2>/dev/null || true; done
  local ours='^(KUBE-ROUTER-|KUBE-POD-FW-|KUBE-NWPLCY-)'
  for chain in $(iptables -w -t filter -S | awk -v re="$ours" '$1 == "-N" && $2 ~ re {print $2}'); do
    iptables -w -t filter -F "$chain" 2>/dev/null || true
  done
  for chain in $(iptables -w -t filter -S | awk -v re="$ours" '$1 == "-N" && $2 ~ re {print $2}'); do
    iptables -w -t filter -X "$chain" 2>/dev/null || true
  done
  if command -v ipset >/dev/null; then
    for set in $(ipset list -n 2>/dev/null | grep -E '^(inet6:)?KUBE-(SRC|DST)-' || true); do
      ipset destroy "$set" 2>/dev/null || true
    done
  fi
}

case "${1:-up}" in
  up)
    [ "$(id -u)" = 0 ] || die "netpol.sh needs root (iptables, ipset)"
    [ -s "$KC" ] && kubectl --kubeconfig "$KC" --request-timeout=5s get --raw /readyz >/dev/null 2>&1 ||
      die "no testbed API server answers ($KC): tests/cluster/up.sh first"
    command -v ipset >/dev/null || "$here/deps.sh"
    command -v ipset >/dev/null || die "no ipset command (Debian package ipset): tests/cluster/deps.sh installs it"
    bin=$("$here/helm.sh" kube-router)
    if ! alive "$NAME"; then cleanup; fi   # a previous run's chains would filter with stale sets
    start "$NAME" "$bin" --kubeconfig="$KC" --hostname-override="$NODE_NAME" \
      --run-firewall=true --run-router=false --run-service-proxy=false \
      --service-cluster-ip-range="$SVC_CIDR" --enable-ipv4=true --enable-ipv6=false \
      --health-port=0 --metrics-port=0 --v=1
    wait_for "$NAME" 60 enforcing
    log "NetworkPolicy enforced by kube-router (pid $(pid_of "$NAME"); test-only, see docs/src/network-policy.md)"
    ;;
  down)
    stop "$NAME"
    cleanup
    log "NetworkPolicy no longer enforced (kube-router's chains and ipsets removed)"
    ;;
  status)
    if alive "$NAME" && enforcing; then
      echo "kube-router: running (pid $(pid_of "$NAME")), NetworkPolicy enforced"
    elif alive "$NAME"; then
      echo "kube-router: running (pid $(pid_of "$NAME")), not enforcing yet (no jump to KUBE-ROUTER-FORWARD)"; exit 1
    else
      echo "kube-router: not running (NetworkPolicy not enforced)"; exit 1
    fi
    ;;
  *) die "usage: netpol.sh up|down|status" ;;
esac
