#!/usr/bin/env bash
# Builds mdBook (the docs site: docs/book.toml, docs/src/) once, from crates.io at an exact version
# with its own Cargo.lock (`cargo install --locked`; without the `serve`/`watch` features, which a
# build does not use), and caches it under $KE_CACHE/tools/mdbook-<version>/; prints the binary's
# path on stdout. `tests/cluster/mdbook.sh build` also builds the site into target/book.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
MDBOOK_VERSION=${MDBOOK_VERSION:-0.5.4}
dir=$KE_CACHE/tools/mdbook-$MDBOOK_VERSION
bin=$dir/bin/mdbook
if ! { [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -Fq "$MDBOOK_VERSION"; }; then
  log "building mdbook $MDBOOK_VERSION"
  rm -rf "$dir.tmp"
  CARGO_TARGET_DIR=$dir.tmp/target nice -n 10 cargo install -q --locked mdbook --version "$MDBOOK_VERSION" \
    --no-default-features --features search --root "$dir.tmp" >&2 || die "cargo install mdbook $MDBOOK_VERSION failed"
  rm -rf "$dir.tmp/target" "$dir"; mv "$dir.tmp" "$dir"
fi
if [ "${1:-}" = build ]; then
  root=$(cd "$here/../.." && pwd)
  "$bin" build "$root/docs" --dest-dir "$root/target/book" >&2 || die "mdbook build docs failed (docs/book.toml, docs/src/)"
  log "docs site built: $root/target/book/index.html"
fi
echo "$bin"
