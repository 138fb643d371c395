#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kube-proxy from Debian's
# kubernetes 1.20 source package (with the reflect2 fix) into $K8S_BIN. Skips when the binaries are cached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
bins="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy"
ok=1; for b in $bins; do [ -x "$K8S_BIN/$b" ] || ok=0; done
if [ $ok = 1 ]; then log "kubernetes binaries cached in $K8S_BIN"; exit 0; fi
t0=$(date +%s)
src=$KE_CACHE/src; mkdir -p "$src"; cd "$src"
tree=$(ls -d kubernetes-1.20*/ 2>/dev/null | head -n1 || true)
if [ -z "$tree" ]; then
  log "apt-get source kubernetes"
  apt-get source -qq kubernetes >/dev/null
  tree=$(ls -d kubernetes-1.20*/ | head -n1)
fi
cd "$src/$tree"
# Gotcha: Go 1.19 vs the vendored reflect2 1.0.1 -> SIGSEGV in json-iterator. Use Debian's 1.0.2 sources.
V=vendor/github.com/modern-go/reflect2; D=/usr/share/gocode/src/github.com/modern-go/reflect2
rm -f $V/*.go $V/*.s; cp $D/*.go $D/*.s $V/
export GOPATH=$PWD/.go CGO_ENABLED=0 HOME=$src/home GOFLAGS=-mod=vendor
mkdir -p "$HOME"
log "building kubernetes $K8S_VERSION (cold: ~10 min on 2 cores)"
make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubelet cmd/kube-proxy" >"$src/build.log" 2>&1 \
  || { tail -n 40 "$src/build.log" >&2; die "kubernetes build failed (log: $src/build.log)"; }
mkdir -p "$K8S_BIN"
for b in $bins; do cp "_output/local/bin/linux/amd64/$b" "$K8S_BIN/$b.tmp" && mv "$K8S_BIN/$b.tmp" "$K8S_BIN/$b"; done
# The Go cache and the tree are 2+ GB; the binaries are all we keep.
cd "$src" && rm -rf "$src/$tree" "$src/home"
log "kubernetes binaries built in $(( $(date +%s) - t0 )) s"
