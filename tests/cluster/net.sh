#!/usr/bin/env bash
# Host networking for the testbed (idempotent; run once per boot, up.sh calls it every time):
# - node IP $NODE_IP on a port-less bridge `k8sdummy` (this kernel has no `dummy` link type),
# - the service CIDR routed into that bridge (un-DNATed service traffic dies there, never leaves the VM),
# - forwarding + bridge-netfilter sysctls,
# - guard rules (own chain KE-GUARD in mangle/POSTROUTING) that drop anything from/to the pod or service
#   range or the node IP that would leave via the uplink,
# - kubelet's own resolv.conf (cluster DNS only; the host resolver is outside the VM).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
POD_CIDR=10.244.0.0/16
SVC_CIDR=10.96.0.0/16

if ! ip link show k8sdummy >/dev/null 2>&1; then
  ip link add k8sdummy type bridge
fi
ip link set k8sdummy up
ip addr replace "$NODE_IP/32" dev k8sdummy
ip route replace "$SVC_CIDR" dev k8sdummy

sysctl -q -w net.ipv4.ip_forward=1
if [ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]; then
  sysctl -q -w net.bridge.bridge-nf-call-iptables=1
else
  modprobe br_netfilter 2>/dev/null || true
  sysctl -q -w net.bridge.bridge-nf-call-iptables=1 || log "WARNING: bridge-nf-call-iptables unavailable"
fi

# Uplink(s): every interface carrying a default route (IPv4), eth0 if none is found.
uplinks=$(ip -4 route show default 2>/dev/null | awk '{for(i=1;i<=NF;i++) if($i=="dev") print $(i+1)}' | sort -u)
[ -n "$uplinks" ] || uplinks=eth0

# Rebuild the guard chain from scratch each time (so a changed uplink is picked up) and hook it in once.
iptables -t mangle -N KE-GUARD 2>/dev/null || iptables -t mangle -F KE-GUARD
for up in $uplinks; do
  for net in $POD_CIDR $SVC_CIDR; do
    iptables -t mangle -A KE-GUARD -o "$up" -s "$net" -j DROP
    iptables -t mangle -A KE-GUARD -o "$up" -d "$net" -j DROP
  done
  iptables -t mangle -A KE-GUARD -o "$up" -s "$NODE_IP" -j DROP
  iptables -t mangle -A KE-GUARD -o "$up" -d "$NODE_IP" -j DROP
done
iptables -t mangle -C POSTROUTING -j KE-GUARD 2>/dev/null || iptables -t mangle -I POSTROUTING 1 -j KE-GUARD

mkdir -p "$TB"
echo "nameserver $NODE_IP" > "$TB/kubelet-resolv.conf"
log "network ready: $NODE_IP on k8sdummy, guard on uplink(s): $(echo $uplinks)"
