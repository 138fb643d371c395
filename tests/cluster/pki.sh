#!/usr/bin/env bash
# PKI for the testbed: one CA, the apiserver/kubelet/client certs, the service-account key pair and the
# kubeconfigs ($TB/admin.kubeconfig etc.). Skips everything already present (delete $TB/pki to redo).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
P=$TB/pki
mkdir -p "$P"
cd "$P"
umask 077

if [ ! -s ca.crt ] || [ ! -s ca.key ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
    -subj "/CN=kubectl-etcd-testbed-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
fi

# cert NAME CN [O] [SANs]
cert() {
  local name=$1 cn=$2 o=${3:-} sans=${4:-}
  [ -s "$name.crt" ] && [ -s "$name.key" ] && return 0
  local subj="/CN=$cn"; [ -n "$o" ] && subj="/O=$o$subj"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=serverAuth,clientAuth"
    [ -n "$sans" ] && echo "subjectAltName=$sans"
  } > "$name.ext"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "$subj" 2>/dev/null
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
    -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

cert apiserver kube-apiserver "" \
  "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,DNS:$NODE_NAME,IP:127.0.0.1,IP:10.96.0.1,IP:$NODE_IP"
cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
cert admin admin system:masters
cert controller-manager system:kube-controller-manager
cert scheduler system:kube-scheduler
cert kube-proxy system:kube-proxy
cert kubelet "system:node:$NODE_NAME" system:nodes
cert kubelet-serving "$NODE_NAME" "" "DNS:$NODE_NAME,DNS:localhost,IP:$NODE_IP,IP:127.0.0.1"

if [ ! -s sa.key ] || [ ! -s sa.pub ]; then
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
fi

# kubeconfig FILE CERTNAME USER — embedded certs, so the file can be copied around.
kubeconfig() {
  local file=$1 name=$2 user=$3
  [ -s "$file" ] && return 0
  cat > "$file.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster:
    server: https://$NODE_IP:6443
    certificate-authority-data: $(base64 -w0 < "$P/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 < "$P/$name.crt")
    client-key-data: $(base64 -w0 < "$P/$name.key")
contexts:
- name: testbed
  context: {cluster: testbed, user: $user, namespace: default}
current-context: testbed
EOF
  mv "$file.tmp" "$file"
}
kubeconfig "$TB/admin.kubeconfig" admin admin
kubeconfig "$TB/controller-manager.kubeconfig" controller-manager system:kube-controller-manager
kubeconfig "$TB/scheduler.kubeconfig" scheduler system:kube-scheduler
kubeconfig "$TB/kube-proxy.kubeconfig" kube-proxy system:kube-proxy
kubeconfig "$TB/kubelet.kubeconfig" kubelet "system:node:$NODE_NAME"
chmod 644 "$TB/admin.kubeconfig"   # readable by non-root test users on this VM (it is a throwaway testbed)
log "PKI and kubeconfigs ready in $P and $TB"
