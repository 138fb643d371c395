#!/usr/bin/env bash
# Puts etcd binaries for the live tests and the images at $ETCD_BIN_DIR/v<version>/{etcd,etcdctl[,etcdutl]}
# and lists the versions in $ETCD_BIN_DIR/VERSIONS. Idempotent: a version whose binaries are present (and
# whose etcdctl/etcdutl are of the same release) is skipped.
#   3.4.23          Debian bookworm etcd-server/etcd-client (installed by deps.sh)
#   3.5.16          Debian trixie etcd-server/etcd-client, downloaded with a private apt config (the system
#                   is not upgraded): below the 3.5.26 that 3.5 → 3.6 needs (the refused path); its
#                   etcdctl/etcdutl are not served as Go modules
#   3.5.35          \
#   3.6.15, 3.6.16   } built from the Go modules go.etcd.io/etcd/{server,etcdctl,etcdutl}/v3 at exactly that
#   3.7.3           /  version (tests/cluster/etcd: each binary is the main package at the root of its
#                      module, as upstream builds it; the server module's is etcd), CGO_ENABLED=0, -trimpath:
#                      each version with its own etcdctl and etcdutl
# VERSIONS lists the oldest patch of a minor first (tests/etcd_live.rs takes the first patch of a minor).
# Go builds run under nice; the module and build caches live in $KE_CACHE/go (shared with build-k8s.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"

V34=3.4.23
# The versions built from Go modules (overridable: ETCD_GO_VERSIONS="3.5.35 3.6.16 3.7.3").
GO_VERSIONS=${ETCD_GO_VERSIONS:-3.5.35 3.6.15 3.6.16 3.7.3}
# ETCD_ONLY="3.7.3": only these versions, built from Go modules; no 3.4 or trixie 3.5, no check of the
# upgrade path. install.sh's demo needs the default version alone (one build instead of four on a
# fresh machine). VERSIONS then lists these and whatever versions are already in place.
ONLY=${ETCD_ONLY:-}
[ -z "$ONLY" ] || GO_VERSIONS=$ONLY
# The Debian package version of the old 3.5 (empty: trixie's candidate, which must be a 3.5 below 3.5.26).
TRIXIE_ETCD=${TRIXIE_ETCD:-}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

mkdir -p "$ETCD_BIN_DIR"

have() { [ -x "$ETCD_BIN_DIR/v$1/etcd" ] && [ -x "$ETCD_BIN_DIR/v$1/etcdctl" ]; }
# tool_version BINARY — "3.6.16" from `etcdctl version` / `etcdutl version` (sed, not head: head would
# close the pipe early and pipefail would fail on the tool's SIGPIPE)
tool_version() { "$1" version 2>/dev/null | sed -n '1s/.*version: *//p'; }
etcd_version() { "$1" --version 2>/dev/null | awk '/etcd Version:/{print $3}'; }

# --- 3.4: the system's bookworm packages ---------------------------------------------------------------
if [ -z "$ONLY" ] && ! have "$V34"; then
  [ -x /usr/bin/etcd ] && [ -x /usr/bin/etcdctl ] || die "/usr/bin/etcd missing: run tests/cluster/deps.sh first"
  /usr/bin/etcd --version | grep "etcd Version: $V34" >/dev/null || die "/usr/bin/etcd is not $V34"
  mkdir -p "$ETCD_BIN_DIR/v$V34"
  install -m 0755 /usr/bin/etcd /usr/bin/etcdctl "$ETCD_BIN_DIR/v$V34/"
  log "etcd $V34 from bookworm"
fi

# --- the old 3.5: Debian trixie .debs through a private apt config ------------------------------------
# debian_etcd SUITE PIN RECORD — fetch etcd-server/etcd-client PIN (empty: the suite's candidate, which
# must be a 3.5) from SUITE, install etcd/etcdctl/etcdutl into $ETCD_BIN_DIR/v<version>, and record the
# version in $ETCD_BIN_DIR/RECORD. A version already fetched is reused (no apt call at all).
debian_etcd() {
  local suite=$1 pin=$2 record=$ETCD_BIN_DIR/$3 v
  v=$(cat "$record" 2>/dev/null || true)
  if [ -n "$v" ] && have "$v" && [ -x "$ETCD_BIN_DIR/v$v/etcdutl" ]; then echo "$v"; return 0; fi
  local apt_dir=$KE_CACHE/apt-$suite
  local opts=(-o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache")
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $suite main" > "$apt_dir/sources.list"
  log "updating the private $suite package lists"
  apt-get -q "${opts[@]}" -o APT::Sandbox::User=root update >/dev/null
  if [ -z "$pin" ]; then
    pin=$(apt-cache "${opts[@]}" policy etcd-server | awk '/Candidate:/{print $2}')
  fi
  case "$pin" in 3.5.*) ;; *) die "$suite's etcd-server is '$pin', not a 3.5 (pin it: see the top of this script)";; esac
  v=${pin%%-*}; v=${v%%+*}
  (cd "$apt_dir/debs" && rm -f ./*.deb &&
    apt-get -q "${opts[@]}" -o APT::Sandbox::User=root download "etcd-server=$pin" "etcd-client=$pin" >/dev/null) ||
    die "cannot download etcd $pin from $suite (it may have moved on: pin another version, see the top of this script)"
  local x; x=$(mktemp -d)
  for d in "$apt_dir"/debs/*.deb; do dpkg-deb -x "$d" "$x"; done
  mkdir -p "$ETCD_BIN_DIR/v$v"
  for b in etcd etcdctl etcdutl; do
    [ -x "$x/usr/bin/$b" ] || die "$b missing from $suite's etcd $pin packages"
    install -m 0755 "$x/usr/bin/$b" "$ETCD_BIN_DIR/v$v/"
  done
  rm -rf "$x"
  echo "$v" > "$record"
  log "etcd $v from $suite ($pin)"
  echo "$v"
}
V35_OLD=
[ -n "$ONLY" ] || V35_OLD=$(debian_etcd trixie "$TRIXIE_ETCD" .v35)
[ -n "$ONLY" ] || case "$V35_OLD" in 3.5.2[6-9]|3.5.[3-9][0-9]) die "trixie's etcd $V35_OLD is not below 3.5.26 (set TRIXIE_ETCD)";; esac

# --- 3.5+, built from Go modules ---------------------------------------------------------------------
# go_built VERSION — etcd, etcdctl and etcdutl of VERSION are in place and all three report VERSION
# (an older cache held a 3.6 etcd with 3.5's client tools beside it: that is rebuilt).
go_built() {
  local v=$1 d=$ETCD_BIN_DIR/v$1 b
  [ -x "$d/etcd" ] && [ "$(etcd_version "$d/etcd")" = "$v" ] || return 1
  for b in etcdctl etcdutl; do
    [ -x "$d/$b" ] && [ "$(tool_version "$d/$b")" = "$v" ] || return 1
  done
}

go_env() {
  # the machine's Go (/usr/local/go) before Debian's golang-go 1.19 (too old for etcd 3.5+)
  if [ -x /usr/local/go/bin/go ]; then PATH=/usr/local/go/bin:$PATH; fi
  command -v go >/dev/null || die "no go command (Go 1.24+ at /usr/local/go): needed to build etcd"
  local gov gomin; gov=$(go env GOVERSION 2>/dev/null || true); gomin=${gov#go1.}; gomin=${gomin%%.*}
  [ -n "$gomin" ] && [ "$gomin" -ge 24 ] 2>/dev/null || die "go is $gov; building etcd needs Go 1.24+ (/usr/local/go)"
  export GOMODCACHE=$KE_CACHE/go/mod GOCACHE=$KE_CACHE/go/cache GOFLAGS="-modcacherw -mod=mod" CGO_ENABLED=0 \
    GOTOOLCHAIN=local GOPATH=$KE_CACHE/go/path
  mkdir -p "$GOMODCACHE" "$GOCACHE" "$GOPATH"
}

# go_etcd VERSION — build the three binaries of VERSION into $ETCD_BIN_DIR/v<VERSION> (atomically: a
# failed or interrupted build leaves no half-filled directory behind).
go_etcd() {
  local v=$1 work=$KE_CACHE/etcd-build/v$1 out=$ETCD_BIN_DIR/v$1
  rm -rf "$work"; mkdir -p "$work"
  cp -r "$here/etcd/." "$work/"
  local m mods=()
  for m in server etcdctl etcdutl; do mods+=("-require=go.etcd.io/etcd/$m/v3@v$v"); done
  (cd "$work" && go mod edit "${mods[@]}" && go mod tidy) >"$work/tidy.log" 2>&1 ||
    { tail -n 30 "$work/tidy.log" >&2; die "go mod tidy for etcd $v failed (is v$v of go.etcd.io/etcd/{server,etcdctl,etcdutl}/v3 served by the Go module proxy?)"; }
  log "building etcd $v from Go modules (etcd, etcdctl, etcdutl; cold ≈ 3 min per version on 2 cores)"
  local t0=$SECONDS
  # one go build of the three (shared compile cache); the server module's main package is named "server"
  (cd "$work" && nice -n 10 go build -trimpath -o "$work/bin/" go.etcd.io/etcd/server/v3 go.etcd.io/etcd/etcdctl/v3 go.etcd.io/etcd/etcdutl/v3) \
    >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log" >&2; die "go build of etcd $v failed (log: $work/build.log)"; }
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  install -m 0755 "$work/bin/server" "$out.tmp/etcd"
  install -m 0755 "$work/bin/etcdctl" "$work/bin/etcdutl" "$out.tmp/"
  rm -rf "$out"; mv "$out.tmp" "$out"
  go_built "$v" || die "etcd $v built from Go modules does not report version $v"
  log "etcd $v built from Go modules in $((SECONDS - t0)) s"
}

go_ready=0
for v in $GO_VERSIONS; do
  go_built "$v" && continue
  [ "$go_ready" = 1 ] || { go_env; go_ready=1; }
  go_etcd "$v"
done

if [ -n "$ONLY" ]; then
  all=$( { printf '%s\n' $ONLY; cat "$ETCD_BIN_DIR/VERSIONS" 2>/dev/null || true; } | sed 's/^v//' | while read -r v; do
    [ -n "$v" ] && have "$v" && echo "$v"; done | sort -t. -k1,1n -k2,2n -k3,3n -u)
else
  all=$(printf '%s\n' "$V34" "$V35_OLD" $GO_VERSIONS | sort -t. -k1,1n -k2,2n -k3,3n -u)
fi
new35=$(printf '%s\n' $all | { grep '^3\.5\.' || true; } | tail -n1)
[ -n "$ONLY" ] || case "$new35" in 3.5.2[6-9]|3.5.[3-9][0-9]) ;; *) die "no 3.5 ≥ 3.5.26 (etcd's minimum for 3.5 → 3.6) among $GO_VERSIONS";; esac
printf '%s\n' $all > "$ETCD_BIN_DIR/VERSIONS"
for v in $all; do
  got=$(etcd_version "$ETCD_BIN_DIR/v$v/etcd")
  [ "$got" = "$v" ] || die "$ETCD_BIN_DIR/v$v/etcd reports version '$got'"
  utl=-; [ ! -x "$ETCD_BIN_DIR/v$v/etcdutl" ] || utl=$(tool_version "$ETCD_BIN_DIR/v$v/etcdutl")
  printf 'v%s: etcd %s, etcdctl %s, etcdutl %s\n' "$v" "$got" "$(tool_version "$ETCD_BIN_DIR/v$v/etcdctl")" "$utl"
done
log "etcd binaries in $ETCD_BIN_DIR: $(tr '\n' ' ' < "$ETCD_BIN_DIR/VERSIONS")"
