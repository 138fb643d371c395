#!/usr/bin/env bash
# Brings up a real single-node Kubernetes testbed on this VM, version $KUBE_VERSION (default in env.sh;
# e.g. KUBE_VERSION=1.37.2 tests/cluster/up.sh; see /work/shared/testbed/RECIPE.md for the facts that still hold from 1.20): control-plane etcd, kube-apiserver, kube-controller-manager (hostpath
# provisioner + pv-fsgroup.sh), kube-scheduler, containerd, kubelet, kube-proxy, dnsmasq + dns-feeder.sh, the images, and a
# default StorageClass `standard` (and `standard-b`), and kube-router's NetworkPolicy controller (netpol.sh;
# KE_NETPOL=0: none, policies then enforce nothing). Returns at once if the testbed is already up and healthy.
# Afterwards: export KUBECONFIG=/tmp/tb/admin.kubeconfig
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"; . "$here/lib.sh"
[ "$(id -u)" = 0 ] || die "the testbed needs root"
P=$TB/pki
KC=$TB/admin.kubeconfig
K() { kubectl --kubeconfig "$KC" --request-timeout=5s "$@"; }

T0=$(date +%s.%N); TP=$T0
phase() { local now; now=$(date +%s.%N); printf '[testbed] phase %-22s %6.1f s\n' "$1" "$(echo "$now - $TP" | bc)" >&2; TP=$now; }
done_msg() {
  printf '[testbed] %s in %.1f s\n' "$1" "$(echo "$(date +%s.%N) - $T0" | bc)" >&2
  echo "export KUBECONFIG=$KC"
}

node_ready() {
  [ "$(K get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
# the NetworkPolicy enforcer (netpol.sh; idempotent): started on a reused testbed too
netpol_up() {
  if [ "${KE_NETPOL:-1}" = 0 ]; then log "KE_NETPOL=0: no NetworkPolicy enforcer"; return 0; fi
  "$here/netpol.sh" up
}
dns_ok() { [ "$(dig +short +time=1 +tries=1 @"$NODE_IP" kubernetes.default.svc.cluster.local A 2>/dev/null)" = 10.96.0.1 ]; }

# ---------------------------------------------------------------- already up?
COMPONENTS="etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy dnsmasq dns-feeder pv-fsgroup"
all_alive() { local c; for c in $COMPONENTS; do alive "$c" || return 1; done; }
if [ -s "$KC" ] && all_alive && K get --raw /readyz >/dev/null 2>&1 && node_ready && dns_ok; then
  running=$(K get --raw /version 2>/dev/null | jq -r .gitVersion)
  case "$running" in
    v"$K8S_VERSION"|v"$K8S_VERSION"[+-]*|*really"$K8S_VERSION") ;;
    *) die "a testbed of Kubernetes $running is running, $K8S_VERSION was asked for: tests/cluster/down.sh --clean first" ;;
  esac
  log "testbed already up and healthy (Kubernetes $running): reusing"
  netpol_up
  done_msg "reusing"
  exit 0
fi

# ---------------------------------------------------------------- prerequisites
"$here/deps.sh"; phase deps
"$here/build-k8s.sh"; phase build-k8s
"$here/build-runtime.sh"; phase build-runtime
. "$KE_CACHE/runtime-$K8S_VERSION.env"   # CONTAINERD_BIN, CONTAINERD_MAJOR, CNI_BIN_DIR, RUNC for this version
if [ -x "$here/etcd-bins.sh" ]; then "$here/etcd-bins.sh"; phase etcd-bins; fi
"$here/net.sh"; phase net
"$here/pki.sh"; phase pki
for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
  [ -x "$K8S_BIN/$b" ] || die "$K8S_BIN/$b missing"
done
mkdir -p "$LOGS" "$PIDS" "$TB/etcd-data" "$TB/cni/net.d" "$TB/cni/ipam" "$TB/dns/hosts" /var/lib/kubelet
chmod 700 "$TB/etcd-data"

# ---------------------------------------------------------------- configs
if [ "$CONTAINERD_MAJOR" -ge 2 ]; then
# its own root: containerd 2 migrates the metadata it finds, which 1.6 then could not read
cat > "$TB/containerd.toml" <<EOF
version = 3
root = "/var/lib/containerd-2"
state = "/run/containerd-2"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "testbed.local/pause:3.2"
[plugins."io.containerd.cri.v1.runtime"]
  # no CAP_SYS_RESOURCE on this VM: runc must not set oom_score_adj below the parent's
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$RUNC"
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["$CNI_BIN_DIR"]
    conf_dir = "$TB/cni/net.d"
EOF
else
cat > "$TB/containerd.toml" <<EOF
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "testbed.local/pause:3.2"
  # no CAP_SYS_RESOURCE on this VM: runc must not set oom_score_adj below the parent's
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$TB/cni/net.d"
EOF
fi
cat > "$TB/cni/net.d/10-tbnet.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "tbnet",
  "plugins": [
    { "type": "bridge", "bridge": "cni0", "isGateway": true, "isDefaultGateway": true,
      "ipMasq": false, "hairpinMode": true,
      "ipam": { "type": "host-local", "dataDir": "$TB/cni/ipam",
                "ranges": [[{ "subnet": "10.244.0.0/24", "gateway": "10.244.0.1" }]] } },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
cat > "$TB/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $P/kubelet-serving.crt
tlsPrivateKeyFile: $P/kubelet-serving.key
cgroupDriver: cgroupfs
failSwapOn: false
clusterDomain: cluster.local
clusterDNS: ["$NODE_IP"]
resolvConf: $TB/kubelet-resolv.conf
evictionHard: {"memory.available": "100Mi", "nodefs.available": "2%", "imagefs.available": "2%", "nodefs.inodesFree": "2%"}
# The etcd and operator images are imported, never pulled: image GC (default at 85% disk use, seen
# on a build-heavy machine) would delete them for good. 100 turns it off.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
EOF
cat >> "$TB/kubelet.yaml" <<EOF
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
# This VM has cgroup v1 (stat -fc %T /sys/fs/cgroup = tmpfs): kubelets from 1.35 on refuse it unless told.
failCgroupV1: false
EOF

# ---------------------------------------------------------------- control plane
start etcd /usr/bin/etcd --name tb --data-dir "$TB/etcd-data" \
  --listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
  --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
  --initial-cluster tb=http://127.0.0.1:23800 --listen-metrics-urls http://127.0.0.1:23810
wait_for etcd 30 curl -sf --max-time 2 http://127.0.0.1:23810/health
phase etcd

start kube-apiserver "$K8S_BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:23790 \
  --bind-address="$NODE_IP" --advertise-address="$NODE_IP" --secure-port=6443 \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-cluster-ip-range=10.96.0.0/16 --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --kubelet-client-certificate="$P/apiserver-kubelet-client.crt" --kubelet-client-key="$P/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP --allow-privileged=true --profiling=false --v=1
wait_for kube-apiserver 90 K get --raw /readyz
phase kube-apiserver

start kube-controller-manager "$K8S_BIN/kube-controller-manager" --kubeconfig="$TB/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$TB/controller-manager.kubeconfig" --authorization-kubeconfig="$TB/controller-manager.kubeconfig" \
  --leader-elect=false --bind-address=127.0.0.1 \
  --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" --use-service-account-credentials=true \
  --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
  --enable-hostpath-provisioner=true --v=1
# hostPath volumes ignore fsGroup: this gives them what the kubelet gives other volumes (see the script)
start pv-fsgroup "$here/pv-fsgroup.sh"
start kube-scheduler "$K8S_BIN/kube-scheduler" --kubeconfig="$TB/scheduler.kubeconfig" \
  --authentication-kubeconfig="$TB/scheduler.kubeconfig" --authorization-kubeconfig="$TB/scheduler.kubeconfig" \
  --leader-elect=false --bind-address=127.0.0.1 --v=1
start containerd "$CONTAINERD_BIN" --config "$TB/containerd.toml"
wait_for kube-controller-manager 60 curl -skf --max-time 2 https://127.0.0.1:10257/healthz
wait_for kube-scheduler 60 curl -skf --max-time 2 https://127.0.0.1:10259/healthz
phase controller+scheduler
wait_for containerd 60 ctr --address /run/containerd/containerd.sock version
phase containerd

# ---------------------------------------------------------------- images, node
"$here/images.sh"
phase images

# the runtime endpoint is in kubelet.yaml; the sandbox image is containerd's business
start kubelet "$K8S_BIN/kubelet" --config="$TB/kubelet.yaml" --kubeconfig="$TB/kubelet.kubeconfig" \
  --node-ip="$NODE_IP" --hostname-override="$NODE_NAME" --v=1
start kube-proxy "$K8S_BIN/kube-proxy" --kubeconfig="$TB/kube-proxy.kubeconfig" --hostname-override="$NODE_NAME" \
  --bind-address="$NODE_IP" --cluster-cidr=10.244.0.0/16 --proxy-mode=iptables \
  --conntrack-max-per-core=0 --metrics-bind-address=127.0.0.1:10249 --healthz-bind-address=127.0.0.1:10256 --v=1
start dns-feeder "$here/dns-feeder.sh"
mkdir -p "$TB/dns/hosts"; chmod 755 "$TB/dns" "$TB/dns/hosts"
start dnsmasq /usr/sbin/dnsmasq --keep-in-foreground --log-facility=- --no-resolv --no-hosts --no-poll \
  --listen-address="$NODE_IP" --bind-interfaces --port=53 --user=nobody --group=nogroup \
  --local=/cluster.local/ --local="/$ALT_DOMAIN/" --domain-needed --bogus-priv --hostsdir="$TB/dns/hosts" --local-ttl=1 --cache-size=0
wait_for kubelet 60 curl -sf --max-time 2 http://127.0.0.1:10248/healthz
phase kubelet
wait_for kube-proxy 60 curl -s --max-time 2 -o /dev/null http://127.0.0.1:10256/healthz

# ---------------------------------------------------------------- cluster objects
K apply -f - >/dev/null <<'EOF'
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
---
# A second class for moving member volumes (tests/e2e_storage.rs). The in-tree hostPath
# provisioner cannot expand a volume, so neither class sets allowVolumeExpansion.
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard-b
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
wait_for kubelet 120 node_ready
phase node-ready
wait_for dnsmasq 60 dns_ok
alive dns-feeder || { logtail dns-feeder; die "dns-feeder died"; }
phase dns
netpol_up
phase netpol
done_msg "testbed up"
