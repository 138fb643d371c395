#!/usr/bin/env bash
# Puts prometheus and promtool at $KE_CACHE/prometheus-<version>/bin and prints that directory on stdout.
# Built from the Go module github.com/prometheus/prometheus at exactly PROMETHEUS_VERSION (a module
# version: v0.316.0 is Prometheus 3.16.0), with `go install pkg@version`, so the module's own go.mod
# pins every dependency (it has no replace or exclude directive). Only the two cmd packages,
# -trimpath, CGO_ENABLED=0, no web UI assets (they are embedded only with the builtinassets tag) and
# no service discovery but file and http (remove_all_sd: the tests write static scrape configs).
# Idempotent: binaries that report the wanted version are reused, so a rerun takes a second.
# Go builds run under nice; the module and build caches live in $KE_CACHE/go (shared with etcd-bins.sh).
#   tests/cluster/prometheus.sh                     # -> /var/cache/kubectl-etcd/prometheus-v0.316.0/bin
#   PROMETHEUS_VERSION=v0.315.1 tests/cluster/prometheus.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"

MODV=${PROMETHEUS_VERSION:-v0.316.0}
case "$MODV" in v0.[0-9]*.[0-9]*) ;; *) die "PROMETHEUS_VERSION is '$MODV'; it takes a Go module version such as v0.316.0";; esac
# v0.316.0 -> 3.16.0 (the Go module's minor encodes Prometheus' major and minor since 3.0)
minor=${MODV#v0.}; patch=${minor#*.}; minor=${minor%%.*}
REL=$((minor / 100)).$((minor % 100)).$patch
out=$KE_CACHE/prometheus-$MODV/bin

built() {
  [ -x "$out/prometheus" ] && [ -x "$out/promtool" ] || return 1
  "$out/prometheus" --version 2>&1 | grep -q "version $REL " && "$out/promtool" --version 2>&1 | grep -q "version $REL "
}

if ! built; then
  if [ -x /usr/local/go/bin/go ]; then PATH=/usr/local/go/bin:$PATH; fi
  command -v go >/dev/null || die "no go command (Go 1.26.7+ at /usr/local/go): needed to build Prometheus"
  export GOMODCACHE=$KE_CACHE/go/mod GOCACHE=$KE_CACHE/go/cache GOFLAGS=-modcacherw CGO_ENABLED=0 \
    GOTOOLCHAIN=local GOPATH=$KE_CACHE/go/path
  mkdir -p "$GOMODCACHE" "$GOCACHE" "$GOPATH"
  work=$KE_CACHE/prometheus-build/$MODV
  rm -rf "$work"; mkdir -p "$work/bin"
  log "building prometheus and promtool $REL from the Go module github.com/prometheus/prometheus@$MODV (cold ≈ 10 min on 2 cores)"
  t0=$SECONDS
  pv=github.com/prometheus/common/version
  (cd "$work" && GOBIN=$work/bin nice -n 10 go install -trimpath -tags remove_all_sd \
    -ldflags "-s -w -X $pv.Version=$REL -X $pv.Branch=module -X $pv.Revision=$MODV" \
    "github.com/prometheus/prometheus/cmd/prometheus@$MODV" "github.com/prometheus/prometheus/cmd/promtool@$MODV") \
    >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log" >&2; die "go install of prometheus $MODV failed (log: $work/build.log)"; }
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  install -m 0755 "$work/bin/prometheus" "$work/bin/promtool" "$out.tmp/"
  rm -rf "$out"; mv "$out.tmp" "$out"
  built || die "prometheus built from $MODV does not report version $REL"
  log "prometheus and promtool $REL built in $((SECONDS - t0)) s"
fi
echo "$out"
