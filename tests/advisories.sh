#!/usr/bin/env bash
# The advisories check of the supply chain (deny.toml, tests/run-all.sh): `cargo deny check
# advisories`, offline, against tests/advisory-db/, a dated snapshot of the RustSec advisory
# database (its crates/ and rust/ advisories and licence files; the commit and its date in
# SNAPSHOT). The database is a git repository on GitHub, which CI machines cannot reach, and no
# registry they can reach serves it: the snapshot is what they check against, and it is only as
# new as its date says. cargo-deny reads the database from a git checkout (it asks git for the
# commit's date), so the snapshot is committed into one under target/ first.
#   tests/advisories.sh CARGO_DENY   the check (exit code: cargo-deny's)
#   tests/advisories.sh refresh DIR  replace the snapshot from DIR, a clone of
#                                    github.com/rustsec/advisory-db (where GitHub is reachable)
set -euo pipefail
cd "$(dirname "$0")/.."
SNAP=tests/advisory-db
if [ "${1:-}" = refresh ]; then
  src=${2:?usage: tests/advisories.sh refresh DIR (a clone of github.com/rustsec/advisory-db)}
  rm -rf "$SNAP"; mkdir -p "$SNAP"
  cp -r "$src/crates" "$src/rust" "$src/LICENSE.txt" "$src/LICENSES" "$SNAP/"
  git -C "$src" log -1 --format="%H %cI" >"$SNAP/SNAPSHOT"
  echo "tests/advisory-db: RustSec advisory-db $(cat "$SNAP/SNAPSHOT")" >&2
  exit 0
fi
deny=${1:?usage: tests/advisories.sh CARGO_DENY}
read -r commit date <"$SNAP/SNAPSHOT"
# cargo-deny's directory for deny.toml's db-urls entry under its db-path (target/advisory-dbs)
db=target/advisory-dbs/advisory-db-3157b0e258782691
rm -rf "$db"; mkdir -p "$db"
cp -r "$SNAP/." "$db/"
(
  cd "$db"
  git init -q
  git add -A
  GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date \
    git -c user.name=snapshot -c user.email=snapshot@invalid -c commit.gpgsign=false commit -qm "RustSec advisory-db $commit"
)
echo "[advisories] RustSec advisory-db snapshot $commit of $date" >&2
"$deny" --offline check advisories
