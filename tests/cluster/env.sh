# Shared settings for the testbed scripts (sourced, not run).
# Everything the testbed builds once is cached under $KE_CACHE (outside the repo);
# everything a running testbed needs lives under $TB (wiped by `down.sh --clean`).
KE_CACHE=${KE_CACHE:-/var/cache/kubectl-etcd}
TB=${TB:-/tmp/tb}
# The Kubernetes version of the testbed: KUBE_VERSION=1.37.2 tests/cluster/up.sh. Built from the Go
# module k8s.io/kubernetes (build-k8s.sh); 1.33+ (the API level the binary is compiled against).
KUBE_VERSION=${KUBE_VERSION:-1.34.4}
KUBE_VERSION=${KUBE_VERSION#v}
K8S_VERSION=$KUBE_VERSION
K8S_MINOR=${K8S_VERSION#*.}; K8S_MINOR=${K8S_MINOR%%.*}
K8S_BIN=$KE_CACHE/k8s-$K8S_VERSION/bin
ETCD_BIN_DIR=$KE_CACHE/etcd
NODE_IP=10.250.0.1
# A second cluster DNS domain the testbed's DNS serves besides the kubelet's cluster.local, for
# clusters created with --cluster-domain (tests/e2e.rs).
ALT_DOMAIN=${ALT_DOMAIN:-cluster.example}
NODE_NAME=$(hostname)
export KUBECONFIG_ADMIN=$TB/admin.kubeconfig
# The testbed's own kubectl (built with the server, same version) comes first.
case ":$PATH:" in *":$K8S_BIN:"*) ;; *) PATH=$K8S_BIN:$PATH ;; esac
export PATH
log() { printf '[testbed %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
