#!/usr/bin/env bash
# Regenerates the certificates of the survey's unit tests (certs.rs): two CAs and leaves signed
# by them, valid 100 years. Run in this directory; the keys of the CAs and of the old members are dropped.
set -euo pipefail
ca() { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500 \
  -subj "/CN=$1" -keyout "$1.key" -out "$1.pem" 2>/dev/null; }
leaf() { # name ca eku sans
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$1" \
    -keyout "$1.key" -out "$1.csr" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=%s\nsubjectAltName=%s\n' "$3" "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 36500 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
ca old-ca
ca other-ca
both=serverAuth,clientAuth
leaf old-peer old-ca $both "DNS:*.etcd.ns.svc.cluster.local"
leaf old-server old-ca $both "DNS:*.etcd.ns.svc.cluster.local,DNS:etcd,DNS:etcd.ns.svc"
leaf old-client old-ca clientAuth "DNS:root"
leaf good-peer old-ca $both "DNS:*.main.ns.svc.cluster.local"
leaf good-server old-ca $both "DNS:*.main.ns.svc.cluster.local,DNS:etcd,DNS:etcd.ns.svc"
leaf other-ca-peer other-ca $both "DNS:*.main.ns.svc.cluster.local"
leaf wrong-names-peer old-ca $both "DNS:*.etcd.ns.svc.cluster.local"
leaf server-only-peer old-ca serverAuth "DNS:*.main.ns.svc.cluster.local"
rm -f ./*.srl other-ca.key old-ca.key old-peer.key old-server.key old-client.key good-server.key

