#!/usr/bin/env bash
# A broken etcd image for the upgrade e2e: the content of gcr.io/etcd-development/etcd:v<from> with an
# `etcd` that exits at start, imported as gcr.io/etcd-development/etcd:v<as> (a version validation
# accepts). Idempotent: skips when the image is already imported.
#
#   broken-etcd-image.sh FROM AS       e.g. broken-etcd-image.sh 3.5.16 3.5.99
set -euo pipefail
from=${1:?usage: broken-etcd-image.sh FROM AS}
as=${2:?usage: broken-etcd-image.sh FROM AS}
CTR="ctr --address /run/containerd/containerd.sock -n k8s.io"
image=gcr.io/etcd-development/etcd:v$as
if $CTR images ls -q 2>/dev/null | grep -Fx "$image" >/dev/null; then exit 0; fi
work=$(mktemp -d /tmp/ke-broken.XXXXXX)
trap 'rm -rf "$work"' EXIT
$CTR images export "$work/from.tar" "gcr.io/etcd-development/etcd:v$from"
c=$(buildah from -q "docker-archive:$work/from.tar")
m=$(buildah mount "$c")
rm -f "$m/usr/local/bin/etcd"
printf '#!/bin/sh\necho "broken etcd image %s: exiting at start" >&2\nexit 1\n' "$as" > "$m/usr/local/bin/etcd"
chmod 755 "$m/usr/local/bin/etcd"
buildah umount "$c" >/dev/null
buildah commit -q --rm "$c" "$image" >/dev/null
buildah push -q "$image" "docker-archive:$work/broken.tar:$image" >/dev/null
$CTR images import "$work/broken.tar" >/dev/null
buildah rmi "$image" >/dev/null 2>&1 || true
