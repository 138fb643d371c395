#!/usr/bin/env bash
# Builds cargo-deny (the supply-chain check of the fast lane: deny.toml) once, from crates.io at an
# exact version with its own Cargo.lock (`cargo install --locked`), and caches it under
# $KE_CACHE/tools/cargo-deny-<version>/; prints the binary's path on stdout. 0.20.2 needs Rust
# 1.88+. Cold: about 20 min on 2 cores (measured beside other builds); warm: nothing to do.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
DENY_VERSION=${DENY_VERSION:-0.20.2}
dir=$KE_CACHE/tools/cargo-deny-$DENY_VERSION
bin=$dir/bin/cargo-deny
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -Fq "$DENY_VERSION"; then echo "$bin"; exit 0; fi
log "building cargo-deny $DENY_VERSION (cold ≈ 20 min on 2 cores)"
rm -rf "$dir.tmp"
CARGO_TARGET_DIR=$dir.tmp/target nice -n 10 cargo install -q --locked cargo-deny --version "$DENY_VERSION" \
  --root "$dir.tmp" >&2 || die "cargo install cargo-deny $DENY_VERSION failed"
rm -rf "$dir.tmp/target" "$dir"; mv "$dir.tmp" "$dir"
echo "$bin"
