#!/usr/bin/env bash
# Installs the Debian packages the testbed, the build and the tests need. Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
[ "$(id -u)" = 0 ] || die "the testbed needs root (Debian bookworm)"
# Debian's etcd-server/containerd must not start as system services (a system etcd would take 2379).
if [ ! -e /usr/sbin/policy-rc.d ]; then printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; fi
pkgs="make gcc libc6-dev
  etcd-server etcd-client containerd runc containernetworking-plugins iptables conntrack
  buildah busybox-static dnsmasq-base bind9-dnsutils jq curl bc file socat ethtool openssl
  protobuf-compiler libprotobuf-dev iproute2 kmod python3-pip python3-venv rsync ipset"
missing=$(dpkg-query -W -f='${Package} ${Status}\n' $pkgs 2>/dev/null | awk '$4!="installed"{print $1}' || true)
need=0; for p in $pkgs; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null || need=1; done
mkdir -p "$KE_CACHE"
if [ $need = 1 ] || [ ! -e "$KE_CACHE/.apt-updated" ]; then
  log "installing Debian packages"
  apt-get update -qq
  touch "$KE_CACHE/.apt-updated"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
fi
log "Debian packages present"
