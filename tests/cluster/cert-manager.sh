#!/usr/bin/env bash
# Real cert-manager (the controllers of v1.21.2) for the tests, as a host process against the
# testbed: Issuers/ClusterIssuers of the CA and SelfSigned kinds, Certificates, CertificateRequests.
# The Go module proxy does not serve cert-manager's controller binary (cmd/controller is a module of its
# own), so tests/cluster/cert-manager/ is a small main of ours that runs the controllers of the root
# module (pinned in its go.mod/go.sum). No webhook (the API server checks the CRD schemas only), no
# ACME/Vault/Venafi, no leader election, no RBAC: it uses the admin kubeconfig.
#   cert-manager.sh build    build (once; reused while main.go/go.mod/go.sum are unchanged) into
#                            $KE_CACHE/tools/cert-manager-v$CERT_MANAGER_VERSION/, print the binary's path
#   cert-manager.sh up       unless already running: build if needed, apply the cert-manager.io CRDs, create
#                            namespace cert-manager (the cluster resource namespace: ClusterIssuers' Secrets),
#                            start the controllers; then wait until their caches have synced
#   cert-manager.sh down     stop them by their recorded PID (the CRDs stay)
#   cert-manager.sh status   exit 0 if running
# Log: $TB/logs/cert-manager.log; PID: $TB/pids/cert-manager.pid (tests/cluster/lib.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"; . "$here/lib.sh"

CERT_MANAGER_VERSION=1.21.2   # the version tests/cluster/cert-manager/go.mod requires
SRC=$here/cert-manager
DIR=$KE_CACHE/tools/cert-manager-v$CERT_MANAGER_VERSION
BIN=$DIR/cert-manager-testbed
NAME=cert-manager
NS=cert-manager
READY=$PIDS/cert-manager.ready
CRDS="certificates certificaterequests issuers clusterissuers"

K() { kubectl --kubeconfig "$KUBECONFIG_ADMIN" --request-timeout=30s "$@"; }

# the sources the binary was built from (recorded beside it: a change rebuilds)
stamp() { (cd "$SRC" && sha256sum main.go go.mod go.sum); }

go_env() {
  if [ -x /usr/local/go/bin/go ]; then PATH=/usr/local/go/bin:$PATH; fi
  command -v go >/dev/null || die "no go command (Go 1.26+ at /usr/local/go): needed to build cert-manager"
  export GOMODCACHE=$KE_CACHE/go/mod GOCACHE=$KE_CACHE/go/cache GOFLAGS="-modcacherw" CGO_ENABLED=0 \
    GOTOOLCHAIN=local GOPATH=$KE_CACHE/go/path
  mkdir -p "$GOMODCACHE" "$GOCACHE" "$GOPATH"
}

# build — into $DIR atomically (an interrupted build leaves no binary behind), with the CRDs of the same
# module version beside it (crds/); prints the binary's path.
build() {
  if [ -x "$BIN" ] && [ "$(cat "$DIR/stamp" 2>/dev/null)" = "$(stamp)" ]; then echo "$BIN"; return 0; fi
  grep -Eq "^(require)?[[:space:]]*github.com/cert-manager/cert-manager v$CERT_MANAGER_VERSION\$" "$SRC/go.mod" ||
    die "$SRC/go.mod does not require github.com/cert-manager/cert-manager v$CERT_MANAGER_VERSION"
  go_env
  log "building cert-manager v$CERT_MANAGER_VERSION controllers from $SRC (cold ≈ minutes on 2 cores)"
  local t0=$SECONDS mod crd
  rm -rf "$DIR.tmp"; mkdir -p "$DIR.tmp/crds"
  (cd "$SRC" && nice -n 10 go build -trimpath -ldflags "-s -w" -o "$DIR.tmp/cert-manager-testbed" .) \
    >"$DIR.tmp/build.log" 2>&1 ||
    { tail -n 30 "$DIR.tmp/build.log" >&2; die "go build in $SRC failed (log: $DIR.tmp/build.log)"; }
  mod=$(cd "$SRC" && go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)
  for crd in $CRDS; do
    # applied as they are: no templating in them
    ! grep -q '{{' "$mod/deploy/crds/cert-manager.io_$crd.yaml" || die "$crd CRD is templated"
    install -m 0644 "$mod/deploy/crds/cert-manager.io_$crd.yaml" "$DIR.tmp/crds/"
  done
  stamp > "$DIR.tmp/stamp"
  rm -rf "$DIR"; mv "$DIR.tmp" "$DIR"
  log "cert-manager built in $((SECONDS - t0)) s ($(du -h "$BIN" | cut -f1))"
  echo "$BIN"
}

# ready — the running process wrote its PID to $READY once its informer caches synced
ready() { [ "$(cat "$READY" 2>/dev/null)" = "$(pid_of "$NAME")" ]; }

case "${1:-}" in
  build) build ;;
  up)
    t0=$SECONDS
    if alive "$NAME"; then
      wait_for "$NAME" 60 ready
      log "$NAME already running (pid $(pid_of "$NAME"))"; exit 0
    fi
    build >/dev/null
    K get --raw /readyz >/dev/null || die "the testbed's API server does not answer (tests/cluster/up.sh)"
    for crd in $CRDS; do
      K apply --server-side --force-conflicts -f "$DIR/crds/cert-manager.io_$crd.yaml" >/dev/null
    done
    for crd in $CRDS; do
      K wait --for condition=Established --timeout=60s "crd/$crd.cert-manager.io" >/dev/null
    done
    K get ns "$NS" >/dev/null 2>&1 || K create ns "$NS" >/dev/null
    rm -f "$READY"
    start "$NAME" "$BIN" --kubeconfig "$KUBECONFIG_ADMIN" --cluster-resource-namespace "$NS" --ready-file "$READY"
    wait_for "$NAME" 60 ready
    log "$NAME up (pid $(pid_of "$NAME")) in $((SECONDS - t0)) s; log: $LOGS/$NAME.log"
    ;;
  down)
    stop "$NAME" 20
    rm -f "$READY"
    log "$NAME down"
    ;;
  status)
    if alive "$NAME"; then echo "$NAME up (pid $(pid_of "$NAME"))"; else echo "$NAME down"; exit 1; fi ;;
  *) die "usage: cert-manager.sh build|up|down|status" ;;
esac
