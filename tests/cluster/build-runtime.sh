#!/usr/bin/env bash
# The container runtime of the testbed: writes $KE_CACHE/runtime-$K8S_VERSION.env (CONTAINERD_BIN,
# CONTAINERD_MAJOR, CNI_BIN_DIR, RUNC), which up.sh sources.
# Default: Debian bookworm's containerd 1.6.20 + runc 1.1.5 + CNI plugins 1.1.1. kubelet 1.34-1.37 accept it
# (CRI v1; containerd 1.6 lacks the RuntimeConfig call, so the kubelet takes cgroupDriver from its own
# config and logs "CRI implementation should be updated"; support is announced to end with 1.38).
# CONTAINERD_VERSION=2.2.9 (any github.com/containerd/containerd/v2 release the proxy serves; 2.2.9 with
# CNI 1.9.1 ran the 1.37.2 smoke test: 256 s + 20 s to build) builds
# containerd, its runc shim and ctr from the Go module instead, and CNI_VERSION=1.9.1 the CNI plugins
# (github.com/containernetworking/plugins), both cached in $KE_CACHE like the Kubernetes binaries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
CONTAINERD_VERSION=${CONTAINERD_VERSION:-debian}; CONTAINERD_VERSION=${CONTAINERD_VERSION#v}
CNI_VERSION=${CNI_VERSION:-debian}; CNI_VERSION=${CNI_VERSION#v}
goenv() {
  # the machine's Go (1.24+; /usr/local/go), ahead of any older go on PATH
  if [ -x /usr/local/go/bin/go ]; then PATH=/usr/local/go/bin:$PATH; fi
  gov=$(go env GOVERSION 2>/dev/null || true); gomin=${gov#go1.}; gomin=${gomin%%.*}
  [ -n "$gov" ] && [ "${gomin:-0}" -ge 24 ] 2>/dev/null || die "Go 1.24+ is needed to build from Go modules (found: ${gov:-none})"
  export GOMODCACHE=$KE_CACHE/go/mod GOCACHE=$KE_CACHE/go/cache GOPATH=$KE_CACHE/go/path GOFLAGS=-modcacherw \
    CGO_ENABLED=0 GOTOOLCHAIN=local
  mkdir -p "$GOMODCACHE" "$GOCACHE" "$GOPATH"
}
# gobuild DIR MODULE VERSION LDFLAGS TAGS PKG... — a throwaway main module requiring MODULE@VERSION, one go build.
gobuild() {
  local out=$1 mod=$2 ver=$3 ld=$4 tags=$5; shift 5
  local work=$out.mod t0; t0=$(date +%s)
  rm -rf "$work" "$out.tmp"; mkdir -p "$work" "$out.tmp"
  printf 'module kubectl-etcd.local/testbed-runtime\n\ngo 1.24\n\nrequire %s v%s\n' "$mod" "$ver" >"$work/go.mod"
  { echo '//go:build tools'; echo; echo 'package tools'; echo; echo 'import ('; for p in "$@"; do echo "	_ \"$p\""; done; echo ')'; } >"$work/tools.go"
  log "building $mod v$ver"
  (cd "$work" && go mod tidy && go build -trimpath -tags "$tags" -ldflags "$ld" -o "$out.tmp/" "$@") >"$work/build.log" 2>&1 \
    || { tail -n 30 "$work/build.log" >&2; die "build of $mod v$ver failed (log: $work/build.log)"; }
  rm -rf "$out"; mv "$out.tmp" "$out"
  log "$mod v$ver built in $(( $(date +%s) - t0 )) s into $out"
}

if [ "$CONTAINERD_VERSION" = debian ]; then
  CONTAINERD_BIN=/usr/bin/containerd; CONTAINERD_MAJOR=1
else
  d=$KE_CACHE/containerd-$CONTAINERD_VERSION/bin
  if [ ! -x "$d/containerd" ] || [ ! -x "$d/containerd-shim-runc-v2" ] || [ ! -x "$d/ctr" ]; then
    goenv
    m=github.com/containerd/containerd/v2
    gobuild "$d" "$m" "$CONTAINERD_VERSION" "-s -w -X $m/version.Version=v$CONTAINERD_VERSION" "no_btrfs no_devmapper no_zfs" \
      "$m/cmd/containerd" "$m/cmd/containerd-shim-runc-v2" "$m/cmd/ctr"
  fi
  CONTAINERD_BIN=$d/containerd; CONTAINERD_MAJOR=${CONTAINERD_VERSION%%.*}
fi
if [ "$CNI_VERSION" = debian ]; then
  CNI_BIN_DIR=/usr/lib/cni
else
  CNI_BIN_DIR=$KE_CACHE/cni-$CNI_VERSION/bin
  if [ ! -x "$CNI_BIN_DIR/bridge" ]; then
    goenv
    m=github.com/containernetworking/plugins
    gobuild "$CNI_BIN_DIR" "$m" "$CNI_VERSION" "-s -w" "" \
      "$m/plugins/main/bridge" "$m/plugins/main/loopback" "$m/plugins/ipam/host-local" "$m/plugins/meta/portmap"
  fi
fi
RUNC=/usr/bin/runc
cat >"$KE_CACHE/runtime-$K8S_VERSION.env" <<ENV
CONTAINERD_BIN=$CONTAINERD_BIN
CONTAINERD_MAJOR=$CONTAINERD_MAJOR
CNI_BIN_DIR=$CNI_BIN_DIR
RUNC=$RUNC
ENV
# a built containerd: its shim and ctr come first on PATH (Debian's are in /usr/bin already)
[ "$CONTAINERD_VERSION" = debian ] || echo "PATH=$(dirname "$CONTAINERD_BIN"):\$PATH" >>"$KE_CACHE/runtime-$K8S_VERSION.env"
log "runtime: containerd $CONTAINERD_VERSION ($CONTAINERD_BIN), CNI plugins $CNI_VERSION ($CNI_BIN_DIR)"
