#!/usr/bin/env bash
# Container images for the testbed, built with buildah `from scratch` (no registry anywhere) and imported
# into containerd's k8s.io namespace (containerd must be running: up.sh calls this after starting it).
#
#   images.sh                      pause + one etcd image per version in $KE_CACHE/etcd/VERSIONS
#                                  (fallback: 3.4.23 from /usr/bin); skips images already imported;
#                                  each holds etcd, etcdctl (and etcdutl from 3.5) of its own release
#   images.sh operator BINARY      testbed.local/kubectl-etcd:dev from BINARY (always rebuilt + imported)
#   images.sh build-only           build/refresh the cached archives, import nothing
#
# Image names:
#   testbed.local/pause:3.2                      (containerd sandbox_image, kubelet pod-infra image)
#   gcr.io/etcd-development/etcd:v<version>      (the operator's default etcd image repository)
#   testbed.local/kubectl-etcd:dev               (the operator)
# Archives (docker-archive) are cached in $KE_CACHE/images, keyed by version + a checksum of their inputs,
# so a warm run only imports.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
IMG=$KE_CACHE/images
mkdir -p "$IMG"
PAUSE_IMAGE=testbed.local/pause:3.2
ETCD_REPO=gcr.io/etcd-development/etcd
OPERATOR_IMAGE=${KE_OPERATOR_IMAGE:-testbed.local/kubectl-etcd:dev}
CTR="ctr --address /run/containerd/containerd.sock -n k8s.io"
BUSYBOX_APPLETS="sh ls cat nslookup nc ps env sleep hostname kill sed grep test [ mkdir rm mv echo cut tr awk wc
  head tail date printf true false expr seq tee"

work=$(mktemp -d /tmp/ke-images.XXXXXX)
trap 'rm -rf "$work"' EXIT

# copy_libs ROOT FILE... — the shared libraries (and the loader) dynamic executables need, at their paths.
copy_libs() {
  local root=$1; shift
  local f lib
  for f in "$@"; do
    # static binaries: ldd says "not a dynamic executable" and fails
    ldd "$f" >/dev/null 2>&1 || continue
    for lib in $(ldd "$f" | awk '$2=="=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
      [ -e "$root$lib" ] && continue
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
  done
}

# commit_archive CONTAINER IMAGE ARCHIVE — commit a buildah working container and write a docker-archive.
commit_archive() {
  local c=$1 image=$2 archive=$3
  buildah commit -q --rm "$c" "$image" >/dev/null
  rm -f "$archive.tmp"
  buildah push -q "$image" "docker-archive:$archive.tmp:$image" >/dev/null
  mv "$archive.tmp" "$archive"
}

# (no grep -q: it exits at the first match, and under pipefail the SIGPIPE of ctr fails the check)
imported() { $CTR images ls -q 2>/dev/null | grep -Fx "$1" >/dev/null; }

# Pinned (containerd's `io.cri-containerd.pinned` label, which the CRI reports as `pinned`): the
# kubelet's image garbage collection passes a pinned image over. imageGCHighThresholdPercent 100
# (up.sh) turns off its periodic run, but under disk pressure the eviction manager still reclaims
# space by deleting unused images: seen in a local CI run when the disk fell under 2 % free, it
# deleted the pause and etcd 3.5.35 images, and every pod made after that failed to start, since an
# imported image cannot be pulled back.
pin() { $CTR images label "$1" io.cri-containerd.pinned=pinned >/dev/null; }

import_archive() {
  local image=$1 archive=$2
  $CTR images import "$archive" >/dev/null
  imported "$image" || die "import of $archive did not produce $image"
  pin "$image"
}

# ---------------------------------------------------------------- pause
build_pause() {
  local archive=$IMG/pause-3.2.tar
  [ -s "$archive" ] && return 0
  log "building $PAUSE_IMAGE"
  cat > "$work/pause.c" <<'C'
/* Minimal pod sandbox process, equivalent to kubernetes' build/pause/linux/pause.c. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
static void sigdown(int signo) { psignal(signo, "Shutting down, got signal"); exit(0); }
static void sigreap(int signo) { (void)signo; while (waitpid(-1, NULL, WNOHANG) > 0) ; }
int main(void) {
  if (getpid() != 1) fprintf(stderr, "Warning: pause should be the first process\n");
  struct sigaction a = {.sa_handler = sigdown};
  if (sigaction(SIGINT, &a, NULL) < 0) return 1;
  if (sigaction(SIGTERM, &a, NULL) < 0) return 2;
  struct sigaction r = {.sa_handler = sigreap, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGCHLD, &r, NULL) < 0) return 3;
  for (;;) pause();
  return 42;
}
C
  gcc -Os -static -o "$work/pause" "$work/pause.c"
  strip "$work/pause"
  local c; c=$(buildah from scratch)
  buildah copy -q "$c" "$work/pause" /pause >/dev/null
  buildah config --entrypoint '["/pause"]' --user 65535:65535 "$c"
  commit_archive "$c" "$PAUSE_IMAGE" "$archive"
}

# ---------------------------------------------------------------- etcd
etcd_versions() {
  if [ -s "$ETCD_BIN_DIR/VERSIONS" ]; then grep -v '^\s*$' "$ETCD_BIN_DIR/VERSIONS" | sed 's/^v//'; else echo 3.4.23; fi
}

# etcd_bin_dir VERSION — where the binaries of VERSION are (the cache, or /usr/bin for Debian's 3.4.23).
etcd_bin_dir() {
  local v=$1
  if [ -x "$ETCD_BIN_DIR/v$v/etcd" ]; then echo "$ETCD_BIN_DIR/v$v"; return; fi
  if [ "$v" = 3.4.23 ] && [ -x /usr/bin/etcd ]; then echo /usr/bin; return; fi
  die "no etcd binaries for $v (expected $ETCD_BIN_DIR/v$v/etcd)"
}

build_etcd() {
  local v=$1 image=$ETCD_REPO:v$1 archive=$IMG/etcd-v$1.tar src bins=() b
  src=$(etcd_bin_dir "$v")
  for b in etcd etcdctl etcdutl; do [ -x "$src/$b" ] && bins+=("$src/$b"); done
  # Each image carries its own release's client tools (etcd-bins.sh builds them per version; the
  # probe and `kubectl exec … etcdctl` use them): refuse a mix.
  local got
  for b in etcdctl etcdutl; do
    [ -x "$src/$b" ] || continue
    got=$("$src/$b" version 2>/dev/null | sed -n '1s/.*version: *//p')
    [ "$got" = "$v" ] || die "$src/$b is $got, not $v: rerun tests/cluster/etcd-bins.sh"
  done
  local sum; sum=$(sha256sum "${bins[@]}" /bin/busybox | sha256sum | cut -c1-16)
  REBUILT=0
  if [ -s "$archive" ] && [ "$(cat "$archive.sum" 2>/dev/null)" = "$sum" ]; then return 0; fi
  log "building $image from $src ($(for b in "${bins[@]}"; do basename "$b"; done | tr '\n' ' '))"
  local root=$work/etcd-$v
  mkdir -p "$root/usr/local/bin" "$root/bin" "$root/etc" "$root/var/lib/etcd" "$root/var/etcd" "$root/tmp"
  chmod 1777 "$root/tmp"
  cp -L "${bins[@]}" "$root/usr/local/bin/"
  copy_libs "$root" "${bins[@]}"
  cp /bin/busybox "$root/bin/busybox"
  local a
  for a in $BUSYBOX_APPLETS; do ln -sf busybox "$root/bin/$a"; done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\nnonroot:x:65532:65532:nonroot:/home/nonroot:/bin/false\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' > "$root/etc/group"
  local c; c=$(buildah from scratch)
  buildah copy -q "$c" "$root/" / >/dev/null
  buildah config --env PATH=/usr/local/bin:/bin --entrypoint '[]' --cmd '["/usr/local/bin/etcd"]' \
    --workingdir /var/lib/etcd --port 2379 --port 2380 --label "org.opencontainers.image.version=v$v" "$c"
  commit_archive "$c" "$image" "$archive"
  echo "$sum" > "$archive.sum"
  REBUILT=1
}

# ---------------------------------------------------------------- operator
build_operator() {
  local bin=$1 archive=$work/operator.tar
  [ -x "$bin" ] || die "operator binary $bin not found or not executable"
  log "building $OPERATOR_IMAGE from $bin ($(du -h "$bin" | cut -f1))"
  local root=$work/operator
  mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp"
  chmod 1777 "$root/tmp"
  cp -L "$bin" "$root/usr/local/bin/kubectl-etcd"
  copy_libs "$root" "$bin"
  [ ! -s /etc/ssl/certs/ca-certificates.crt ] || cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  printf 'root:x:0:0:root:/root:/bin/false\nnonroot:x:65532:65532:nonroot:/tmp:/bin/false\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' > "$root/etc/group"
  local c; c=$(buildah from scratch)
  buildah copy -q "$c" "$root/" / >/dev/null
  buildah config --entrypoint '["/usr/local/bin/kubectl-etcd"]' --cmd '["operate"]' --user 65532:65532 \
    --env HOME=/tmp --env RUST_BACKTRACE=1 "$c"
  commit_archive "$c" "$OPERATOR_IMAGE" "$archive"
  import_archive "$OPERATOR_IMAGE" "$archive"
  buildah rmi -f "$OPERATOR_IMAGE" >/dev/null 2>&1 || true   # keep buildah's storage from piling up
  log "imported $OPERATOR_IMAGE"
}

mode=${1:-all}
case "$mode" in
  operator)
    [ $# -ge 2 ] || die "usage: images.sh operator <path-to-kubectl-etcd-binary>"
    build_operator "$(readlink -f "$2")"
    ;;
  all|build-only)
    build_pause
    want=("$PAUSE_IMAGE=$IMG/pause-3.2.tar")
    for v in $(etcd_versions); do
      build_etcd "$v"
      want+=("$ETCD_REPO:v$v=$IMG/etcd-v$v.tar")
      # a rebuilt archive must replace an older import of the same tag
      if [ "$REBUILT" = 1 ] && [ "$mode" = all ]; then $CTR images rm "$ETCD_REPO:v$v" >/dev/null 2>&1 || true; fi
    done
    if [ "$mode" = all ]; then
      present=0 added=0
      for pair in "${want[@]}"; do
        image=${pair%%=*} archive=${pair#*=}
        if imported "$image"; then pin "$image"; present=$((present + 1)); continue; fi
        import_archive "$image" "$archive"
        log "imported $image"
        added=$((added + 1))
      done
      # one line a run: what a reused testbed lacked (tests/run-all.sh calls this on every testbed)
      log "images: $added imported, $present already present (pause, etcd $(etcd_versions | paste -sd' '))"
    fi
    ;;
  *) die "usage: images.sh [all|build-only|operator <binary>]" ;;
esac
