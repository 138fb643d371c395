#!/usr/bin/env bash
# Builds the release artifacts of kubectl-etcd into dist/ (or --out DIR), all of the version in
# Cargo.toml:
#   kubectl-etcd_v<V>_linux_amd64.tar.gz   the binary, LICENSE, README.md, docs/src/ (the pages README
#                                          links to) and completions/ (+ .sha256)
#   etcd.yaml                              the krew plugin manifest (plugins/etcd.yaml with the
#                                          archive's uri and sha256 filled in)
#   kubectl-etcd-<V>.tgz                   the Helm chart package (+ .sha256)
#   kubectl-etcd_v<V>_image.tar            the operator image ghcr.io/kubectl-etcd/kubectl-etcd:<V>
#                                          (docker-archive, built with buildah from the same binary;
#                                          + .sha256)
#   SHA256SUMS                             every artifact's sha256
#
#   ./release.sh                         cargo build --release, then everything
#   ./release.sh --binary PATH           package PATH instead of building (it must report version <V>)
#   ./release.sh --no-image --no-chart   the archive and the krew manifest only
#   --out DIR                            where to write (default dist/, wiped first)
#   --url-base URL                       where the archive will be downloaded from (krew's uri)
#
# Version agreement: the binary's --version, Chart.yaml version/appVersion, the image tag, the
# default tools/operator image (src/model.rs) and plugins/etcd.yaml all say <V>; a mismatch stops the
# script before anything is written (tests/versions.rs checks the checked-in files).
# helm is tests/cluster/helm.sh's (built from its Go module); the image needs buildah.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
bin="" out=$ROOT/dist image=1 chart=1
url_base=https://github.com/kubectl-etcd/kubectl-etcd/releases/download
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) bin=$(readlink -f "$2"); shift ;;
    --out) out=$2; shift ;;
    --url-base) url_base=$2; shift ;;
    --no-image) image=0 ;;
    --no-chart) chart=0 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "release.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
say() { printf '[release] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

V=$(sed -n '/^\[package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n1)
[ -n "$V" ] || die "no version in Cargo.toml's [package]"
IMAGE=ghcr.io/kubectl-etcd/kubectl-etcd:$V
ARCHIVE=kubectl-etcd_v${V}_linux_amd64.tar.gz

# --- the checked-in files agree with Cargo.toml ----------------------------------------------------
chart_field() { sed -n "s/^$1: *\"\{0,1\}\([^\"]*\)\"\{0,1\}$/\1/p" charts/kubectl-etcd/Chart.yaml; }
[ "$(chart_field version)" = "$V" ] || die "charts/kubectl-etcd/Chart.yaml version is $(chart_field version), Cargo.toml says $V"
[ "$(chart_field appVersion)" = "$V" ] || die "charts/kubectl-etcd/Chart.yaml appVersion is $(chart_field appVersion), Cargo.toml says $V"
grep -q "^  version: v$V\$" plugins/etcd.yaml || die "plugins/etcd.yaml's spec.version is not v$V"

# --- the binary --------------------------------------------------------------------------------------
if [ -z "$bin" ]; then
  say "cargo build --release (heavy: ~6–16 min cold on 2 cores)"
  cargo build --release --locked --bin kubectl-etcd
  bin=${CARGO_TARGET_DIR:-$ROOT/target}/release/kubectl-etcd
fi
[ -x "$bin" ] || die "$bin is not an executable"
got=$("$bin" --version | awk '{print $NF}')
[ "$got" = "$V" ] || die "$bin reports version $got, Cargo.toml says $V"
tools=$("$bin" backup --help | sed -n 's/.*\[default: \(ghcr\.io[^]]*\)\].*/\1/p' | head -n1)
[ "$tools" = "$IMAGE" ] || die "the binary's default tools image is '$tools', not $IMAGE"

# only an empty directory or an earlier dist (it has SHA256SUMS) is replaced
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ] && [ ! -f "$out/SHA256SUMS" ]; then
  die "$out is not empty and holds no earlier release (no SHA256SUMS): choose another --out"
fi
rm -rf "$out"; mkdir -p "$out"
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT

# --- the archive (krew, install by hand) ------------------------------------------------------------
mkdir -p "$stage/a/completions"
install -m 0755 "$bin" "$stage/a/kubectl-etcd"
install -m 0644 LICENSE README.md "$stage/a/"
mkdir -p "$stage/a/docs/src" && install -m 0644 docs/src/*.md "$stage/a/docs/src/"
install -m 0644 completions/* "$stage/a/completions/"
chmod 0755 "$stage/a/completions/kubectl_complete-etcd"
# reproducible order, owner and times (the mtime of the last commit, else now)
epoch=$(git log -1 --format=%ct 2>/dev/null || date +%s)
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C "$stage/a" -cf - . | gzip -n > "$out/$ARCHIVE"
sha=$(sha256sum "$out/$ARCHIVE" | cut -d' ' -f1)
say "$ARCHIVE ($(du -h "$out/$ARCHIVE" | cut -f1)) sha256 $sha"

# --- the krew manifest --------------------------------------------------------------------------------
sed -e "s|^\( *uri: \).*|\1$url_base/v$V/$ARCHIVE|" -e "s|^\( *sha256: \).*|\1\"$sha\"|" plugins/etcd.yaml > "$out/etcd.yaml"
grep -q "sha256: \"$sha\"" "$out/etcd.yaml" || die "plugins/etcd.yaml has no sha256 line to fill in"

# --- the chart ----------------------------------------------------------------------------------------
if [ $chart = 1 ]; then
  helm=$(tests/cluster/helm.sh helm)
  "$helm" lint --strict charts/kubectl-etcd >/dev/null || die "helm lint charts/kubectl-etcd failed"
  "$helm" package charts/kubectl-etcd --destination "$out" >/dev/null
  [ -s "$out/kubectl-etcd-$V.tgz" ] || die "helm package wrote no kubectl-etcd-$V.tgz"
  say "kubectl-etcd-$V.tgz"
fi

# --- the image ----------------------------------------------------------------------------------------
if [ $image = 1 ]; then
  command -v buildah >/dev/null || die "no buildah (apt-get install buildah), or pass --no-image"
  root=$stage/image
  mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp"
  chmod 1777 "$root/tmp"
  install -m 0755 "$bin" "$root/usr/local/bin/kubectl-etcd"
  # glibc and the loader the binary links (no shell, nothing else)
  for lib in $(ldd "$bin" | awk '$2=="=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
    mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"
  done
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  printf 'root:x:0:0:root:/root:/bin/false\nnonroot:x:65532:65532:nonroot:/tmp:/bin/false\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' > "$root/etc/group"
  c=$(buildah from scratch)
  buildah copy -q "$c" "$root/" / >/dev/null
  buildah config --entrypoint '["/usr/local/bin/kubectl-etcd"]' --cmd '["operate"]' --user 65532:65532 \
    --env HOME=/tmp --label "org.opencontainers.image.version=$V" --label "org.opencontainers.image.licenses=Apache-2.0" "$c"
  buildah commit -q --rm "$c" "$IMAGE" >/dev/null
  buildah push -q "$IMAGE" "docker-archive:$out/kubectl-etcd_v${V}_image.tar:$IMAGE" >/dev/null
  buildah rmi -f "$IMAGE" >/dev/null 2>&1 || true
  say "kubectl-etcd_v${V}_image.tar ($IMAGE)"
fi

(cd "$out" && for f in *; do sha256sum "$f" | tee "$f.sha256"; done) > "$stage/SHA256SUMS"
mv "$stage/SHA256SUMS" "$out/SHA256SUMS"
say "version $V: $(cd "$out" && ls | tr '\n' ' ')"
