#!/usr/bin/env bash
# Puts etcd binaries for the live tests and the images at $ETCD_BIN_DIR/v<version>/{etcd,etcdctl[,etcdutl]}
# and lists the versions in $ETCD_BIN_DIR/VERSIONS. Idempotent: a version whose binaries are present is skipped.
#   3.4.23  Debian bookworm etcd-server/etcd-client (installed by deps.sh)
#   3.5.x   Debian trixie etcd-server/etcd-client, downloaded with a private apt config (the system is not upgraded)
#   3.5.30  the same from Debian sid (≥ 3.5.26, etcd's minimum for 3.5 → 3.6)
#   3.6.15  upstream static build from the crates.io crate etcd-bin-vendored-linux-amd64 (etcd only;
#           the 3.5 etcdctl/etcdutl are copied beside it: 3.5's etcdctl talks to 3.6 servers)
# VERSIONS lists the oldest 3.5 first (tests/etcd_live.rs takes the first patch of a minor).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"

V34=3.4.23
V36=3.6.15
# The Debian package versions to fetch (empty: the suite's candidate); overridable because the suites move
# over time. sid is pinned: the 3.4 → 3.5 → 3.6 e2e names 3.5.30.
TRIXIE_ETCD=${TRIXIE_ETCD:-}
SID_ETCD=${SID_ETCD:-3.5.30-2}
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

# --- 3.5: Debian .debs through a private apt config (one per suite) ---------------------------------------
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
# 3.5.16 (trixie): below the 3.5.26 that 3.5 → 3.6 needs (the refused path); 3.5.30 (sid): the 3.5 the
# 3.4 → 3.5 → 3.6 rollout goes through.
V35=$(debian_etcd trixie "$TRIXIE_ETCD" .v35)
V35_NEW=$(debian_etcd sid "$SID_ETCD" .v35new)
case "$V35_NEW" in 3.5.2[6-9]|3.5.[3-9][0-9]) ;; *) die "sid's etcd $V35_NEW is below 3.5.26 (set SID_ETCD)";; esac

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

printf '%s\n' "$V34" "$V35" "$V35_NEW" "$V36" > "$ETCD_BIN_DIR/VERSIONS"
for v in $V34 $V35 $V35_NEW $V36; do
  got=$("$ETCD_BIN_DIR/v$v/etcd" --version | awk '/etcd Version:/{print $3}')
  [ "$got" = "$v" ] || die "$ETCD_BIN_DIR/v$v/etcd reports version '$got'"
  # sed, not head: head would close the pipe early and pipefail would fail on etcdctl's SIGPIPE
  printf 'v%s: etcd %s, %s\n' "$v" "$got" "$("$ETCD_BIN_DIR/v$v/etcdctl" version | sed -n 1p)"
done
log "etcd binaries in $ETCD_BIN_DIR: $(tr '\n' ' ' < "$ETCD_BIN_DIR/VERSIONS")"
