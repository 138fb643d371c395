#!/usr/bin/env bash
# The testbed's hostPath volumes, given what the kubelet gives any other volume mounted by a pod with
# `fsGroup: 65532` (the group of every pod the project creates: src/objects/security.rs GID).
#
# The testbed's provisioner (kube-controller-manager --enable-hostpath-provisioner) makes each PV a
# directory /tmp/hostpath_pv/<uuid>, root-owned with mode 0750, and the kubelet ignores fsGroup for
# hostPath volumes: a non-root member could not write its data dir. A CSI driver's (or a local PV's)
# volume gets from the kubelet, before the pod's first container starts: every file the group
# $GID with group read and write, every directory also group search and the set-group-id bit. This
# loop does the same to every hostPath PV a few times a second (a new PV is fixed long before a pod
# using it is scheduled; files a root member of an older operator wrote are taken over as the
# kubelet's fsGroup walk takes them over). Nothing else on the machine is touched.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
GID=65532
PV_DIR=${PV_DIR:-/tmp/hostpath_pv}
while :; do
  if [ -d "$PV_DIR" ]; then
    # (-mindepth 1: the PV directories and what is in them; a file gone meanwhile is no error)
    find "$PV_DIR" -mindepth 1 ! -group "$GID" -exec chgrp -h "$GID" {} + 2>/dev/null
    find "$PV_DIR" -mindepth 1 -type d ! -perm -2070 -exec chmod g+rwxs {} + 2>/dev/null
    find "$PV_DIR" -mindepth 1 -type f ! -perm -0060 -exec chmod g+rw {} + 2>/dev/null
  fi
  sleep 0.3
done
