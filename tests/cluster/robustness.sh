#!/usr/bin/env bash
# Builds the fault matrix's robustness client (tests/robustness: etcd's own robustness traffic,
# history and validation from go.etcd.io/etcd/tests/v3 at the version its go.mod requires, with
# porcupine) and caches the binary under $KE_CACHE/tools/robustness-<hash of its sources>/
# (idempotent: sources already built are not rebuilt). Prints the binary's path on stdout
# (people's messages go to stderr). Same Go caches as etcd-bins.sh and helm.sh: after the first
# build a clean clone builds it from the module cache, offline. Cold ≈ 1 min on 2 cores once
# etcd 3.7.3 is built (etcd-bins.sh), which compiles most of what it links.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
src=$(cd "$here/../robustness" && pwd)

hash=$(cd "$src" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-16)
dir=$KE_CACHE/tools/robustness-$hash
if [ -x "$dir/robustness" ]; then echo "$dir/robustness"; exit 0; fi
# the fault matrix's rows start in parallel: one build at a time, the others take its result
mkdir -p "$KE_CACHE/tools"
exec 9>"$KE_CACHE/tools/robustness.lock"
flock 9
if [ -x "$dir/robustness" ]; then echo "$dir/robustness"; exit 0; fi

if [ -x /usr/local/go/bin/go ]; then PATH=/usr/local/go/bin:$PATH; fi
command -v go >/dev/null || die "no go command (Go 1.26 at /usr/local/go): needed to build the robustness client"
# go.sum is committed: nothing is resolved here (-mod=readonly)
export GOMODCACHE=$KE_CACHE/go/mod GOCACHE=$KE_CACHE/go/cache GOFLAGS="-modcacherw -mod=readonly" CGO_ENABLED=0 \
  GOTOOLCHAIN=local GOPATH=$KE_CACHE/go/path
mkdir -p "$GOMODCACHE" "$GOCACHE" "$GOPATH"
log "building the robustness client from $src (go.etcd.io/etcd/tests/v3)"
t0=$SECONDS
rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
(cd "$src" && nice -n 10 go build -trimpath -o "$dir.tmp/robustness" .) >"$dir.tmp/build.log" 2>&1 ||
  { tail -n 30 "$dir.tmp/build.log" >&2; die "go build of tests/robustness failed (log: $dir.tmp/build.log)"; }
rm -rf "$dir"; mv "$dir.tmp" "$dir"
log "robustness client built in $((SECONDS - t0)) s"
echo "$dir/robustness"
