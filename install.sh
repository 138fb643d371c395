#!/usr/bin/env bash
# Installs kubectl-etcd: builds the release binary, puts it and its shell completions on PATH.
#
#   ./install.sh                 build + install the plugin (kubectl etcd …) and completions
#   ./install.sh --apply         … and apply the CRD and the operator to the current kubectl context
#   ./install.sh --demo [--yes]  … and create a 3-member demo cluster; when no Kubernetes context is
#                                reachable, offer (with --yes: just do) bringing up the project's own
#                                single-node Kubernetes (tests/cluster/up.sh; Debian bookworm, root)
#
#   PREFIX=/usr/local (bin/ and share/ under it). Idempotent; downloads nothing beyond cargo's own
#   crates — except --demo on a machine without a cluster, which installs Debian packages and builds
#   Kubernetes (KUBE_VERSION, default 1.34.4) from the Go module k8s.io/kubernetes (cached in
#   /var/cache/kubectl-etcd); its kubectl is installed into $PREFIX/bin when the machine has none.
set -euo pipefail
cd "$(dirname "$0")"
PREFIX=${PREFIX:-/usr/local}
apply=0 demo=0 yes=0 image=""
for a in "$@"; do
  case "$a" in
    --apply) apply=1 ;;
    --demo) demo=1 ;;
    --yes|-y) yes=1 ;;
    --image=*) image=${a#--image=} ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $a (see --help)" >&2; exit 2 ;;
  esac
done
say() { printf '[install] %s\n' "$*" >&2; }

cluster_reachable() { kubectl --request-timeout=5s get --raw /readyz >/dev/null 2>&1; }

use_testbed=0
if [ $demo = 1 ] && ! cluster_reachable; then
  if [ -s /tmp/tb/admin.kubeconfig ] && KUBECONFIG=/tmp/tb/admin.kubeconfig cluster_reachable; then
    export KUBECONFIG=/tmp/tb/admin.kubeconfig
  else
    if [ $yes != 1 ]; then
      if [ -t 0 ]; then
        read -r -p "No Kubernetes cluster is reachable. Bring up the single-node testbed (root, Debian bookworm; ~20 min the first time)? [y/N] " ans
        case "$ans" in y|Y|yes) ;; *) say "no cluster; rerun with --yes or point KUBECONFIG at a cluster"; exit 5 ;; esac
      else
        say "no Kubernetes cluster is reachable; rerun with --yes to bring up the single-node testbed"; exit 5
      fi
    fi
    use_testbed=1
  fi
fi

go_pid=""
if [ $use_testbed = 1 ]; then
  tests/cluster/deps.sh        # Debian packages, protoc among them
  # Kubernetes and etcd (Go, cached in /var/cache/kubectl-etcd) build beside the release build
  mkdir -p target
  say "building Kubernetes and etcd in the background (log: target/install-go-builds.log)"
  # only the default etcd version (the tests build the others): one etcd build instead of four
  default_etcd=$(sed -n 's/^pub const DEFAULT_VERSION: &str = "\(.*\)";/\1/p' src/model/version.rs)
  ( tests/cluster/build-k8s.sh && { [ ! -x tests/cluster/etcd-bins.sh ] || ETCD_ONLY=$default_etcd tests/cluster/etcd-bins.sh; } ) \
    >target/install-go-builds.log 2>&1 &
  go_pid=$!
elif ! command -v protoc >/dev/null || [ ! -e /usr/include/google/protobuf/descriptor.proto ]; then
  say "protoc is needed to build (etcd's gRPC API): apt-get install protobuf-compiler libprotobuf-dev"; exit 1
fi

# CARGO_TARGET_DIR is honoured (CI keeps the release build in a cache outside its fresh clone)
target_dir=${CARGO_TARGET_DIR:-target}
say "building the release binary (cargo build --release, into $target_dir)"
cargo build --release --locked --bin kubectl-etcd 2>&1 | tail -n 3 >&2
install -D -m 0755 "$target_dir/release/kubectl-etcd" "$PREFIX/bin/kubectl-etcd"
install -D -m 0644 completions/kubectl-etcd.bash "$PREFIX/share/bash-completion/completions/kubectl-etcd"
install -D -m 0644 completions/_kubectl-etcd "$PREFIX/share/zsh/site-functions/_kubectl-etcd"
install -D -m 0644 completions/kubectl-etcd.fish "$PREFIX/share/fish/vendor_completions.d/kubectl-etcd.fish"
install -D -m 0755 completions/kubectl_complete-etcd "$PREFIX/bin/kubectl_complete-etcd"   # kubectl etcd <TAB>
say "installed $PREFIX/bin/kubectl-etcd ($("$PREFIX/bin/kubectl-etcd" --version)) and completions"
export PATH=$PREFIX/bin:$PATH

if [ $use_testbed = 1 ]; then
  if ! wait "$go_pid"; then
    tail -n 30 target/install-go-builds.log >&2; say "the Kubernetes/etcd build failed (target/install-go-builds.log)"; exit 1
  fi
  say "bringing up the single-node Kubernetes testbed"
  # Nothing answers: whatever /tmp/tb holds is left over from an earlier boot or session (stale PIDs,
  # mounts, old objects in the control-plane etcd). Start from a clean testbed, as the test command
  # does; containerd's images and the caches in /var/cache/kubectl-etcd are kept.
  tests/cluster/down.sh --clean
  # up.sh builds every etcd version the tests use unless told otherwise: the demo needs one
  ETCD_ONLY=$default_etcd tests/cluster/up.sh
  export KUBECONFIG=/tmp/tb/admin.kubeconfig
  k8s_bin=$(. tests/cluster/env.sh && echo "$K8S_BIN")
  if ! command -v kubectl >/dev/null && [ -x "$k8s_bin/kubectl" ]; then
    install -D -m 0755 "$k8s_bin/kubectl" "$PREFIX/bin/kubectl"
    say "installed $PREFIX/bin/kubectl (the testbed's, $("$PREFIX/bin/kubectl" version --client 2>/dev/null | head -n1))"
  fi
  say "testbed up: export KUBECONFIG=/tmp/tb/admin.kubeconfig (tear down: tests/cluster/down.sh --clean --net)"
fi

if [ $apply = 1 ]; then
  kubectl etcd install --operator ${image:+--image "$image"}
elif [ $demo = 1 ]; then
  kubectl etcd install
fi

if [ $demo = 1 ]; then
  if kubectl etcd status demo >/dev/null 2>&1; then
    say "EtcdCluster demo exists already"
  else
    kubectl etcd create demo --replicas 3 --timeout 5m >/dev/null
  fi
  kubectl etcd status demo
fi
