#!/usr/bin/env bash
# The cluster DNS's data source: once a second, Services and Endpoints from the API -> a hosts file in
# dnsmasq's --hostsdir (dnsmasq reloads it by inotify). Records (TTL 1 s, like CoreDNS' kubernetes plugin):
#   ClusterIP service:  <svc>.<ns>.svc.cluster.local           -> clusterIP
#   headless service:   <svc>.<ns>.svc.cluster.local           -> every ready endpoint address
#                       <hostname>.<svc>.<ns>.svc.cluster.local -> that address (StatefulSet pods)
# (with publishNotReadyAddresses: true the endpoints controller lists not-ready pods as ready addresses.)
# Every record also under $ALT_DOMAIN (env.sh) instead of cluster.local: a second cluster domain, for
# clusters whose members are named in it (--cluster-domain). Reverse lookups answer with an address's
# first name in the file, and etcd's peer TLS checks a client certificate's wildcard names against
# that (the reverse lookup of the dialling peer's IP): so the records of namespaces labelled
# testbed.kubectl-etcd.io/dns-domain=alt come first under $ALT_DOMAIN (their PTR answers there, as a
# cluster whose DNS domain it is would), every other address's under cluster.local.
# Not provided: SRV, PTR, pod A records (a-b-c-d.<ns>.pod), ExternalName CNAMEs.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
P=$TB/pki
dir=$TB/dns/hosts
out=$dir/cluster.hosts
mkdir -p "$dir" "$TB/dns/tmp"
chmod 755 "$TB/dns" "$dir"
api="https://$NODE_IP:6443"
c=(curl -sf --max-time 5 --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key")
t=$TB/dns/tmp
while :; do
  if "${c[@]}" "$api/api/v1/services" -o "$t/svc.json" && "${c[@]}" "$api/api/v1/endpoints" -o "$t/ep.json" &&
    "${c[@]}" "$api/api/v1/namespaces?labelSelector=testbed.kubectl-etcd.io%2Fdns-domain%3Dalt" -o "$t/ns.json"; then
    alt_ns=$(jq -r '[.items[].metadata.name] | join(" ")' "$t/ns.json" 2>/dev/null)
    if jq -r -n --slurpfile s "$t/svc.json" --slurpfile e "$t/ep.json" '
        ($s[0].items) as $svcs
        | ([ $svcs[] | select(.spec.clusterIP == "None") | "\(.metadata.namespace)/\(.metadata.name)" ]) as $headless
        | ( $svcs[]
            | select(.spec.clusterIP != null and .spec.clusterIP != "" and .spec.clusterIP != "None")
            | "\(.spec.clusterIP) \(.metadata.name).\(.metadata.namespace).svc.cluster.local" ),
          ( $e[0].items[]
            | select(("\(.metadata.namespace)/\(.metadata.name)") as $k | $headless | index($k))
            | .metadata as $m
            | .subsets[]? | .addresses[]?
            | "\(.ip) \($m.name).\($m.namespace).svc.cluster.local",
              (select(.hostname != null and .hostname != "")
               | "\(.ip) \(.hostname).\($m.name).\($m.namespace).svc.cluster.local") )
      ' 2>/dev/null | sort -u | awk -v alt="$ALT_DOMAIN" -v altns="$alt_ns" '
        BEGIN { n = split(altns, a, " "); for (i = 1; i <= n; i++) isalt[a[i]] = 1 }
        { k = split($2, part, "."); other = $0; sub(/\.svc\.cluster\.local$/, ".svc." alt, other)
          if (part[k - 3] in isalt) first[++f] = other; else last[++l] = other
          mid[++m] = $0 }
        END { for (i = 1; i <= f; i++) print first[i]; for (i = 1; i <= m; i++) print mid[i]
              for (i = 1; i <= l; i++) print last[i] }' > "$t/hosts.new"; then
      if ! cmp -s "$t/hosts.new" "$out"; then
        chmod 644 "$t/hosts.new"
        # same filesystem as $dir? no: write next to it, then rename (atomic for dnsmasq's inotify)
        cp "$t/hosts.new" "$dir/.cluster.hosts.tmp" && mv "$dir/.cluster.hosts.tmp" "$out"
      fi
    fi
  fi
  sleep 1
done
