#!/usr/bin/env bash
# Builds the Go tools the chart and krew tests and the testbed use, from their Go modules at exact
# versions, and caches the binaries under $KE_CACHE/tools/<tool>-<version>/ (idempotent: a binary that
# reports its version is not rebuilt). Prints the binary's path on stdout (people's messages go to stderr).
#
#   helm.sh [helm]                  helm (helm.sh/helm/v3/cmd/helm at $HELM_VERSION)
#   helm.sh krew                    krew (sigs.k8s.io/krew/cmd/krew at $KREW_VERSION)
#   helm.sh validate-krew-manifest  krew's manifest validator (same module, cmd/validate-krew-manifest)
#   helm.sh kube-router             kube-router (github.com/cloudnativelabs/kube-router/v2 at
#                                   $KUBE_ROUTER_VERSION): the testbed's NetworkPolicy enforcer, netpol.sh
#
# Each is `go install module/cmd/x@version`: the module's own go.mod and go.sum decide every dependency
# (nothing resolved here), CGO_ENABLED=0, -trimpath, under nice. The version variables the projects'
# release builds stamp with -ldflags are stamped the same way, so `helm version` and `krew version` tell
# the truth. Measured cold on 2 cores (shared Go caches warm from build-k8s.sh/etcd-bins.sh): see docs/src/ci.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"

HELM_VERSION=${HELM_VERSION:-3.22.0}
KREW_VERSION=${KREW_VERSION:-0.4.3}
# test-only: security flaws are reported for v2.1.0 (netpol.sh)
KUBE_ROUTER_VERSION=${KUBE_ROUTER_VERSION:-2.1.0}
TOOLS=$KE_CACHE/tools

go_env() {
  if [ -x /usr/local/go/bin/go ]; then PATH=/usr/local/go/bin:$PATH; fi
  command -v go >/dev/null || die "no go command (Go 1.24+ at /usr/local/go): needed to build $1"
  export GOMODCACHE=$KE_CACHE/go/mod GOCACHE=$KE_CACHE/go/cache GOFLAGS="-modcacherw" CGO_ENABLED=0 \
    GOTOOLCHAIN=local GOPATH=$KE_CACHE/go/path
  mkdir -p "$GOMODCACHE" "$GOCACHE" "$GOPATH"
}

# build NAME PACKAGE@VERSION DIR LDFLAGS — go install into DIR (atomically: an interrupted build
# leaves no binary behind); prints the binary's path.
build() {
  local name=$1 pkg=$2 dir=$3 ldflags=$4
  # reused only when built with the same flags (recorded beside it)
  if [ -x "$dir/$name" ] && [ "$(cat "$dir/ldflags" 2>/dev/null)" = "$ldflags" ]; then echo "$dir/$name"; return 0; fi
  go_env "$name"
  log "building $name from $pkg (cold ≈ minutes on 2 cores)"
  local t0=$SECONDS
  rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
  GOBIN=$dir.tmp nice -n 10 go install -trimpath -ldflags "$ldflags" "$pkg" >"$dir.tmp/build.log" 2>&1 ||
    { tail -n 30 "$dir.tmp/build.log" >&2; die "go install $pkg failed (log: $dir.tmp/build.log; is that version served by the Go module proxy?)"; }
  printf '%s' "$ldflags" > "$dir.tmp/ldflags"
  rm -rf "$dir"; mv "$dir.tmp" "$dir"
  log "$name built in $((SECONDS - t0)) s"
  echo "$dir/$name"
}

tool=${1:-helm}
case "$tool" in
  helm)
    # As helm's Makefile: the Kubernetes version `helm template`/`lint` assume is that of the
    # client-go the module requires (v0.37.0 -> 1.37), not the 1.20 compiled in by default.
    go_env helm
    mod=$(go mod download -json "helm.sh/helm/v3@v$HELM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
    [ -s "$mod" ] || die "cannot download helm.sh/helm/v3@v$HELM_VERSION (is it served by the Go module proxy?)"
    cg=$(awk '$1 == "k8s.io/client-go" {print $2}' "$mod")
    kmaj=$(( $(echo "${cg#v}" | cut -d. -f1) + 1 )); kmin=$(echo "$cg" | cut -d. -f2)
    [ -n "$kmin" ] || die "no k8s.io/client-go in helm v$HELM_VERSION's go.mod"
    k8s="-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$kmaj -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kmin"
    k8s="$k8s -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$kmaj -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kmin"
    bin=$(build helm "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION" "$TOOLS/helm-$HELM_VERSION" \
      "-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean $k8s")
    "$bin" version --template '{{.Version}}' | grep -Fx "v$HELM_VERSION" >/dev/null ||
      die "$bin does not report v$HELM_VERSION (remove $TOOLS/helm-$HELM_VERSION and rerun)"
    echo "$bin" ;;
  krew)
    bin=$(build krew "sigs.k8s.io/krew/cmd/krew@v$KREW_VERSION" "$TOOLS/krew-$KREW_VERSION" \
      "-s -w -X sigs.k8s.io/krew/internal/version.gitTag=v$KREW_VERSION")
    echo "$bin" ;;
  validate-krew-manifest)
    build validate-krew-manifest "sigs.k8s.io/krew/cmd/validate-krew-manifest@v$KREW_VERSION" \
      "$TOOLS/validate-krew-manifest-$KREW_VERSION" "-s -w" ;;
  kube-router)
    build kube-router "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@v$KUBE_ROUTER_VERSION" \
      "$TOOLS/kube-router-$KUBE_ROUTER_VERSION" \
      "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=v$KUBE_ROUTER_VERSION" ;;
  *) die "unknown tool '$tool' (helm, krew, validate-krew-manifest, kube-router)" ;;
esac
