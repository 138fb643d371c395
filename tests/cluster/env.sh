# Shared settings for the testbed scripts (sourced, not run).
# Everything the testbed builds once is cached under $KE_CACHE (outside the repo);
# everything a running testbed needs lives under $TB (wiped by `down.sh --clean`).
KE_CACHE=${KE_CACHE:-/var/cache/kubectl-etcd}
TB=${TB:-/tmp/tb}
K8S_VERSION=1.20.2
K8S_BIN=$KE_CACHE/k8s-$K8S_VERSION/bin
ETCD_BIN_DIR=$KE_CACHE/etcd
NODE_IP=10.250.0.1
NODE_NAME=$(hostname)
export KUBECONFIG_ADMIN=$TB/admin.kubeconfig
log() { printf '[testbed %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
