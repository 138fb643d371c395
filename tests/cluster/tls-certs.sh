#!/usr/bin/env bash
# Test certificates for an etcd cluster with TLS (openssl, from Debian): a CA and, signed by it,
# the members' serving certificate, their peer certificate and a client certificate.
#
#   tls-certs.sh DIR CLUSTER NAMESPACE
#   TLS_CERT_DAYS=10 tls-certs.sh …   valid 10 days instead of 30 (tests/e2e_monitoring.rs: the
#                                     certificate-expiry alert fires under 14)
#   TLS_EXTRA_SANS=DNS:etcd,… tls-certs.sh …   more names on the server and peer certificates
# A CA already in DIR (ca.crt and ca.key) signs the leaves instead of a new one: two clusters of
# one CA (tests/e2e_adopt.rs: the old cluster and the EtcdCluster that adopts it).
#
# writes DIR/{ca,server,peer,client}.{crt,key}. Names: every member
# (*.CLUSTER.NAMESPACE.svc.cluster.local), the client Service (CLUSTER-client.NAMESPACE.svc…),
# localhost and 127.0.0.1 (etcd processes on loopback in tests/etcd_live.rs).
set -euo pipefail
dir=${1:?usage: tls-certs.sh DIR CLUSTER NAMESPACE}
cluster=${2:?usage: tls-certs.sh DIR CLUSTER NAMESPACE}
ns=${3:?usage: tls-certs.sh DIR CLUSTER NAMESPACE}
days=${TLS_CERT_DAYS:-30}
mkdir -p "$dir"
cd "$dir"
members="*.$cluster.$ns.svc.cluster.local"
sans="DNS:$members,DNS:$cluster-client.$ns.svc,DNS:$cluster-client.$ns.svc.cluster.local,DNS:localhost,IP:127.0.0.1${TLS_EXTRA_SANS:+,$TLS_EXTRA_SANS}"
[ -f ca.crt ] && [ -f ca.key ] || openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$days" \
  -subj "/CN=kubectl-etcd test CA $cluster.$ns" -keyout ca.key -out ca.crt 2>/dev/null
leaf() { # name cn eku sans
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$2" \
    -keyout "$1.key" -out "$1.csr" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$3"
    if [ -n "$4" ]; then echo "subjectAltName=$4"; fi
  } > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
    -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
leaf server "$cluster server" serverAuth,clientAuth "$sans"
leaf peer "$cluster peer" serverAuth,clientAuth "$sans"
leaf client "root" clientAuth ""
