# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_kubectl_etcd_global_optspecs
    string join \n n/namespace= context= kubeconfig= o/output= v/verbose log-format= dial= allow-foreign-adopt-endpoints allow-cluster-issuer h/help V/version
end

function __fish_kubectl_etcd_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_kubectl_etcd_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_kubectl_etcd_using_subcommand
    set -l cmd (__fish_kubectl_etcd_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -s h -l help -d 'Print help'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -s V -l version -d 'Print version'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "create" -d 'Create an etcd cluster and wait until it is Ready'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "scale" -d 'Change the number of members, or grow or move the member volumes'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "upgrade" -d 'Move every member to another etcd version, one member at a time'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "adopt" -d 'Take over an etcd cluster that runs outside kubectl-etcd, with no downtime'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "backup" -d 'Take a snapshot now, to S3, a file or a volume (`backup list NAME` lists them)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "restore" -d 'Create a new cluster from a backup (verified before anything is created)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "certificate" -d 'Issue a client certificate for an application from the cluster\'s own CA'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "rotate-ca" -d 'Rotate the CA of a cluster with managed TLS, one member at a time'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "tls" -d 'Switch TLS on or off for a running cluster, one member at a time'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "recover" -d 'Rebuild a cluster that lost quorum from its best surviving member (or a backup)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "defrag" -d 'Give the space of deleted and overwritten keys back, one member at a time'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "hibernate" -d 'Stop every member after a verified snapshot, keeping the volumes'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "wake" -d 'Start the members of a hibernated cluster again (same members, same data)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "snapshot" -d 'Tools the restore pods run inside the cluster'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "status" -d 'Show clusters, their members and the engine\'s next step (observes only)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "logs" -d 'Print every member\'s etcd log, interleaved by time (reads only)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "report" -d 'Write a support bundle (tar.gz) of a cluster or the operator (reads only)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "reconcile" -d 'Run reconcile passes until a cluster converges (after a crash or a manual edit)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "delete" -d 'Delete a cluster (its volumes are kept unless --delete-data --yes)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "operate" -d 'Run the engine as a controller (in-cluster, or from a workstation for debugging)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "install" -d 'Install the CRDs, and with --operator the operator, into the current context'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "crd" -d 'Print the CRDs (EtcdCluster, EtcdBackup) as YAML (crds/crds.yaml is this output)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "manifests" -d 'Print the operator\'s install manifests as YAML (crds/operator.yaml is this output)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "completions" -d 'Print shell completions (the files in completions/ are this output)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l replicas -d 'Voting members (1-9; odd numbers tolerate the most failures)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l version -d 'etcd release (default: the newest patch of the newest minor the project tests; 3.4 is past etcd\'s end of support and warned about)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l storage -d 'Volume size per member (default 1Gi, at least 512Mi). The quota (`--quota-backend-bytes`) is etcd\'s 2 GiB, or less where the volume holds no more: 320 MiB on 1Gi, 832 MiB on 2Gi; 4480Mi holds etcd\'s default' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l storage-class -d 'StorageClass of the member volumes (default: the cluster\'s default class)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l image-repository -d 'Image repository of etcd (tag is v<version>), e.g. a mirror in your own registry' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l image-pull-secret -d 'Secret (type kubernetes.io/dockerconfigjson, the cluster\'s namespace) the kubelet pulls the member and restore pods\' images with, for a registry that wants credentials (repeatable)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l etcd-option -d 'Another etcd server flag, NAME=VALUE without the dashes (repeatable), e.g. `--etcd-option heartbeat-interval=250 --etcd-option election-timeout=2500`' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l allow-etcd-option -d 'Let --etcd-option set this flag though it is no tuning flag (repeatable): the operator needs the same `--allow-etcd-option` (docs/src/security.md), or it leaves the flag out' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l priority-class -d 'PriorityClass of the member pods (e.g. system-cluster-critical)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l cluster-domain -d 'The Kubernetes cluster\'s DNS domain (the kubelet\'s clusterDomain), which the members\' names end in (default cluster.local); fixed once the cluster exists' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l service-type -d 'The client Service\'s type: ClusterIP (the default: clients inside the cluster), NodePort or LoadBalancer (clients outside it; the cluster\'s NetworkPolicy then admits the client port from anywhere). Labels, annotations and source ranges: spec.clientService' -r -f -a "ClusterIP\t''
NodePort\t''
LoadBalancer\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l tls -d 'TLS of client and peer traffic: `managed` (the engine runs a CA of the cluster\'s own and issues and renews every certificate; `kubectl etcd certificate` issues clients theirs), `cert-manager` (cert-manager issues and renews them: --tls-issuer), `secrets` (the --tls-*-secret flags), or `none` (plain http, as --insecure). Default: secrets when a --tls-*-secret flag is given, cert-manager with --tls-issuer, else managed (adopt: plain http, what the old members speak)' -r -f -a "managed\t''
cert-manager\t''
secrets\t''
none\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l certificate-lifetime -d 'With --tls managed or cert-manager: lifetime of the server, peer and client certificates (default 90 days, at least 5m; cert-manager: 1h); each is renewed at two thirds of it' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l tls-issuer -d 'cert-manager issues the certificates (`--tls cert-manager`): the name of a CA Issuer in the cluster\'s namespace (or a ClusterIssuer, --tls-issuer-kind) that signs the server, peer and client certificates alike' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l tls-issuer-kind -d 'The kind of --tls-issuer: Issuer (default) or ClusterIssuer' -r -f -a "Issuer\t''
ClusterIssuer\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l tls-server-secret -d 'Secret with the members\' serving certificate: the client port speaks https and takes only client certificates signed by its ca.crt (needs --tls-client-secret)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l tls-client-secret -d 'Secret with the client certificate the engine, the readiness probe and backups present (needs --tls-server-secret)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l tls-peer-secret -d 'Secret with the members\' peer certificate (mutual TLS between members)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l auth-secret -d 'Secret with the username and password (keys `username`, `password`) of an etcd user with the root role: the engine, the readiness probe and backups authenticate as it once etcd\'s authentication is enabled' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l etcd-auth -d 'etcd\'s authentication by client certificate (`spec.tls.etcdAuth`, modes managed and cert-manager): each certificate\'s CN is its etcd user, the engine\'s own is the cluster\'s (kubectl-etcd:NAMESPACE:NAME, role root), and `kubectl etcd certificate --user U` gives U a role. `create`\'s default: on for etcd 3.5 and later (off for 3.4, which etcd cannot upgrade to 3.5 with it on); `restore` and `adopt`: off' -r -f -a "on\t''
off\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l timeout -d 'Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l ephemeral -d 'Keep data in emptyDir volumes (lost when a pod is deleted): for tests only'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l insecure -d 'Plain http for clients and peers (`spec.tls.mode: none`): anyone who reaches the pods reads and writes every key. Warned about; the `InsecureTransport` condition says so'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l plain-peers -d 'Client TLS without peer TLS: raft between the members in the clear (`spec.tls.plainPeers`); a new cluster with --tls-server-secret and --tls-client-secret but no --tls-peer-secret is refused without it'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l no-wait -d 'Return once the intent is written, without waiting for convergence'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l dry-run -d 'Print the steps the engine would take and the objects it would write; change nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand create" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -l replicas -d 'Voting members (1-9), one member added or removed at a time' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -l storage -d 'Volume size per member, bigger than now (e.g. 2Gi): grown in place where the StorageClass allows expansion, else each member moved to a new volume' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -l storage-class -d 'StorageClass to move the member volumes to, one member at a time' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -l timeout -d 'Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -l no-wait -d 'Return once the intent is written, without waiting for convergence'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -l dry-run -d 'Print the steps the engine would take and the objects it would write; change nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand scale" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -l version -d 'The etcd version to move every member to (e.g. 3.5.16)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -l to -d 'Where the pre-upgrade snapshot goes (default: the cluster\'s spec.backup.destination)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -l timeout -d 'Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -l skip-backup -d 'Upgrade without a pre-upgrade snapshot (recorded in status.upgrade); needs --yes'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -l yes -d 'Confirm --skip-backup'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -l no-wait -d 'Return once the intent is written, without waiting for convergence'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -l dry-run -d 'Print the steps the engine would take and the objects it would write; change nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand upgrade" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l from -d 'The old members\' StatefulSet: `statefulset/S` (or `S`)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l endpoints -d 'The old members\' client URLs, comma-separated, when they are not one StatefulSet\'s (nothing but etcd membership is changed for them)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l tls-secret -d 'Secret (tls.crt, tls.key, ca.crt) with the client certificate the old members want' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l tls -d 'TLS of client and peer traffic: `managed` (the engine runs a CA of the cluster\'s own and issues and renews every certificate; `kubectl etcd certificate` issues clients theirs), `cert-manager` (cert-manager issues and renews them: --tls-issuer), `secrets` (the --tls-*-secret flags), or `none` (plain http, as --insecure). Default: secrets when a --tls-*-secret flag is given, cert-manager with --tls-issuer, else managed (adopt: plain http, what the old members speak)' -r -f -a "managed\t''
cert-manager\t''
secrets\t''
none\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l certificate-lifetime -d 'With --tls managed or cert-manager: lifetime of the server, peer and client certificates (default 90 days, at least 5m; cert-manager: 1h); each is renewed at two thirds of it' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l tls-issuer -d 'cert-manager issues the certificates (`--tls cert-manager`): the name of a CA Issuer in the cluster\'s namespace (or a ClusterIssuer, --tls-issuer-kind) that signs the server, peer and client certificates alike' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l tls-issuer-kind -d 'The kind of --tls-issuer: Issuer (default) or ClusterIssuer' -r -f -a "Issuer\t''
ClusterIssuer\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l tls-server-secret -d 'Secret with the members\' serving certificate: the client port speaks https and takes only client certificates signed by its ca.crt (needs --tls-client-secret)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l tls-client-secret -d 'Secret with the client certificate the engine, the readiness probe and backups present (needs --tls-server-secret)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l tls-peer-secret -d 'Secret with the members\' peer certificate (mutual TLS between members)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l auth-secret -d 'Secret with the username and password (keys `username`, `password`) of an etcd user with the root role: the engine, the readiness probe and backups authenticate as it once etcd\'s authentication is enabled' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l etcd-auth -d 'etcd\'s authentication by client certificate (`spec.tls.etcdAuth`, modes managed and cert-manager): each certificate\'s CN is its etcd user, the engine\'s own is the cluster\'s (kubectl-etcd:NAMESPACE:NAME, role root), and `kubectl etcd certificate --user U` gives U a role. `create`\'s default: on for etcd 3.5 and later (off for 3.4, which etcd cannot upgrade to 3.5 with it on); `restore` and `adopt`: off' -r -f -a "on\t''
off\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l take-over-service -d 'Point the old client Service at the new members before the last old member goes, so clients need no change. Without a value: the Service that selects the old pods (a ClusterIP one first)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l storage -d 'Volume size per new member (default 1Gi)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l storage-class -d 'StorageClass of the new members\' volumes' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l image-repository -d 'Image repository of the new members (tag v<version of the old members>)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l quota-backend-bytes -d '--quota-backend-bytes of the new members (default etcd\'s 2 GiB): above the old members\' database, which the new members receive whole' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l cluster-domain -d 'The Kubernetes cluster\'s DNS domain (the kubelet\'s clusterDomain), which the members\' names end in (default cluster.local); fixed once the cluster exists' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l timeout -d 'Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l insecure -d 'Plain http for clients and peers (`spec.tls.mode: none`): anyone who reaches the pods reads and writes every key. Warned about; the `InsecureTransport` condition says so'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l plain-peers -d 'Client TLS without peer TLS: raft between the members in the clear (`spec.tls.plainPeers`); a new cluster with --tls-server-secret and --tls-client-secret but no --tls-peer-secret is refused without it'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l abort -d 'Put the old cluster back: remove the new members one at a time and delete the EtcdCluster (possible while no old member was retired)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l yes -d 'Adopt after the survey (without it: survey and plan only, nothing changed)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l no-wait -d 'Return once the intent is written, without waiting for convergence'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l dry-run -d 'Print the steps the engine would take and the objects it would write; change nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand adopt" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l to -d 'Destination: s3://bucket/prefix[?endpoint=URL&region=R&pathStyle=true], file:///dir (this machine) or pvc://claim/dir (a PersistentVolumeClaim of the cluster\'s namespace; default: the cluster\'s spec.backup.destination)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l compression -d 'none, gzip or zstd (default: the cluster\'s spec.backup.compression, else zstd)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l credentials-secret -d 'Secret (in the cluster\'s namespace) holding S3 credentials; default: the standard AWS chain of this machine (AWS_ACCESS_KEY_ID…, profile)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l sse -d 'Server-side encryption S3 applies to the object: AES256 or aws:kms (s3:// only; default: the cluster\'s spec.backup.serverSideEncryption when --to is not given)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l sse-kms-key-id -d 'The KMS key (id, ARN or alias) of --sse aws:kms (default: the account\'s aws/s3 key)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l encryption-key-secret -d 'Encrypt the backup on this side (AES-256-GCM, streamed) with the key in this Secret of the cluster\'s namespace (NAME or NAME/KEY, default key `key`; 32 bytes or 64 hex digits, e.g. `kubectl create secret generic backup-key --from-literal=key=$(openssl rand -hex 32)`). The object ends in `.enc`; its record names the Secret. Default: the cluster\'s spec.backup.encryption when --to is not given' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l tools-image -d 'Image holding kubectl-etcd, for the pod that writes to a pvc:// destination' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l dry-run -d 'Show which member would be snapshotted and where it would go; take nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -a "list" -d 'List the backups of a cluster (newest first): size, revision, age, verified'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -a "verify" -d 'Restore drill: restore a backup into a throwaway one-member etcd (one pod, no Service, a NetworkPolicy admitting nothing) and compare its revision, key count and HashKV with the record and the live cluster; the result goes on the record (status.drill) and the pod goes. Exit 13 when the drill fails. The live cluster is only read'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and not __fish_seen_subcommand_from list verify help" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from list" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from list" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from list" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from list" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from list" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from list" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from list" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from list" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from list" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from verify" -l latest-of -d 'Drill the newest good backup of this cluster' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from verify" -l tools-image -d 'Image holding kubectl-etcd, for the drill pod\'s fetch and reading' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from verify" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from verify" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from verify" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from verify" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from verify" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from verify" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from verify" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from verify" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from verify" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from verify" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from help" -f -a "list" -d 'List the backups of a cluster (newest first): size, revision, age, verified'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from help" -f -a "verify" -d 'Restore drill: restore a backup into a throwaway one-member etcd (one pod, no Service, a NetworkPolicy admitting nothing) and compare its revision, key count and HashKV with the record and the live cluster; the result goes on the record (status.drill) and the pod goes. Exit 13 when the drill fails. The live cluster is only read'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand backup; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l from -d 'URL of a snapshot object (s3://bucket/prefix/object.db.zst)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l from-backup -d 'An EtcdBackup record of this namespace (see `kubectl etcd backup list`)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l latest-of -d 'The newest successful backup of this cluster' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l replicas -d 'Voting members of the new cluster (the others join the restored seed as learners)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l version -d 'etcd release of the new cluster (default: the version the backup was taken from; for a URL of unknown origin, the default of `create`)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l storage -d 'Volume size per member (default: 1Gi, or the smallest whole Gi whose quota holds the snapshot\'s database twice over; refused when its quota would be 90 % full at once)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l storage-class -d 'StorageClass of the member volumes' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l sha256 -d 'Expected sha256 of the stored object (default: the one the backup record holds). When known, an s3:// or pvc:// object is verified by the restore pod, not downloaded here' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l credentials-secret -d 'Secret (namespace of the new cluster) with S3 credentials for the in-cluster download' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l encryption-key-secret -d 'Secret (namespace of the new cluster) with the key of an encrypted backup (NAME or NAME/KEY; default: the one its record names). Checked against the backup\'s header before anything is created: a missing or wrong key exits 12' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l tools-image -d 'Image holding kubectl-etcd, for the restore pod\'s download and verification' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l image-repository -d 'Image repository of etcd (tag is v<version>), e.g. a mirror in your own registry' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l image-pull-secret -d 'Secret (type kubernetes.io/dockerconfigjson, the cluster\'s namespace) the kubelet pulls the member and restore pods\' images with, for a registry that wants credentials (repeatable)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l cluster-domain -d 'The Kubernetes cluster\'s DNS domain (the kubelet\'s clusterDomain), which the members\' names end in (default cluster.local); fixed once the cluster exists' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l service-type -d 'The client Service\'s type: ClusterIP (the default: clients inside the cluster), NodePort or LoadBalancer (clients outside it; the cluster\'s NetworkPolicy then admits the client port from anywhere). Labels, annotations and source ranges: spec.clientService' -r -f -a "ClusterIP\t''
NodePort\t''
LoadBalancer\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l tls -d 'TLS of client and peer traffic: `managed` (the engine runs a CA of the cluster\'s own and issues and renews every certificate; `kubectl etcd certificate` issues clients theirs), `cert-manager` (cert-manager issues and renews them: --tls-issuer), `secrets` (the --tls-*-secret flags), or `none` (plain http, as --insecure). Default: secrets when a --tls-*-secret flag is given, cert-manager with --tls-issuer, else managed (adopt: plain http, what the old members speak)' -r -f -a "managed\t''
cert-manager\t''
secrets\t''
none\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l certificate-lifetime -d 'With --tls managed or cert-manager: lifetime of the server, peer and client certificates (default 90 days, at least 5m; cert-manager: 1h); each is renewed at two thirds of it' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l tls-issuer -d 'cert-manager issues the certificates (`--tls cert-manager`): the name of a CA Issuer in the cluster\'s namespace (or a ClusterIssuer, --tls-issuer-kind) that signs the server, peer and client certificates alike' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l tls-issuer-kind -d 'The kind of --tls-issuer: Issuer (default) or ClusterIssuer' -r -f -a "Issuer\t''
ClusterIssuer\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l tls-server-secret -d 'Secret with the members\' serving certificate: the client port speaks https and takes only client certificates signed by its ca.crt (needs --tls-client-secret)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l tls-client-secret -d 'Secret with the client certificate the engine, the readiness probe and backups present (needs --tls-server-secret)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l tls-peer-secret -d 'Secret with the members\' peer certificate (mutual TLS between members)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l auth-secret -d 'Secret with the username and password (keys `username`, `password`) of an etcd user with the root role: the engine, the readiness probe and backups authenticate as it once etcd\'s authentication is enabled' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l etcd-auth -d 'etcd\'s authentication by client certificate (`spec.tls.etcdAuth`, modes managed and cert-manager): each certificate\'s CN is its etcd user, the engine\'s own is the cluster\'s (kubectl-etcd:NAMESPACE:NAME, role root), and `kubectl etcd certificate --user U` gives U a role. `create`\'s default: on for etcd 3.5 and later (off for 3.4, which etcd cannot upgrade to 3.5 with it on); `restore` and `adopt`: off' -r -f -a "on\t''
off\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l timeout -d 'Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l copy-local-credentials -d 'Copy this machine\'s AWS_* variables into a Secret of the cluster\'s namespace (readable by whoever may read Secrets there, deleted with the cluster) for the restore pod\'s download of an s3:// source. Never done without this flag: name a Secret with --credentials-secret'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l insecure -d 'Plain http for clients and peers (`spec.tls.mode: none`): anyone who reaches the pods reads and writes every key. Warned about; the `InsecureTransport` condition says so'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l plain-peers -d 'Client TLS without peer TLS: raft between the members in the clear (`spec.tls.plainPeers`); a new cluster with --tls-server-secret and --tls-client-secret but no --tls-peer-secret is refused without it'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l no-wait -d 'Return once the intent is written, without waiting for convergence'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l dry-run -d 'Print the steps the engine would take and the objects it would write; change nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand restore" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -l user -d 'The user the certificate names (its CN): letters, digits, \'-\', \'_\', \'.\' and \'@\'' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -l out -d 'Directory the files go to (made 0700 when missing): ca.crt, USER.crt, USER.key' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -l lifetime -d 'How long the certificate is valid (e.g. 720h; default 90 days)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -l prefix -d 'A key prefix the user\'s role reaches (repeatable, e.g. --prefix /app/). None: every key, read-only' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -l read-write -d 'The role writes (puts, deletes, transactions) under the --prefix keys too; without it the role only reads'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand certificate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand rotate-ca" -l timeout -d 'Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand rotate-ca" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand rotate-ca" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand rotate-ca" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand rotate-ca" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand rotate-ca" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand rotate-ca" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand rotate-ca" -l no-wait -d 'Return once the intent is written, without waiting for convergence'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand rotate-ca" -l dry-run -d 'Print the steps the engine would take and the objects it would write; change nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand rotate-ca" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand rotate-ca" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand rotate-ca" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand rotate-ca" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -l timeout -d 'Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -l on -d 'Switch TLS on: managed TLS (the engine\'s own CA), clients need a certificate'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -l off -d 'Switch TLS off: plain http for clients and peers (anyone who reaches the pods reads and writes every key)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -l no-wait -d 'Return once the intent is written, without waiting for convergence'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -l dry-run -d 'Print the steps the engine would take and the objects it would write; change nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand tls" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l from-member -d 'Rebuild from this member (e.g. demo-1) instead of the one with the highest raft index' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l from-backup -d 'Rebuild from this EtcdBackup record instead of a surviving member' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l to -d 'Where the survivor\'s snapshot is stored on the way (default: spec.backup.destination)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l credentials-secret -d 'Secret with S3 credentials (default: spec.backup.credentialsSecret, else this machine\'s chain)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l tools-image -d 'Image holding kubectl-etcd, for the restore pod' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l timeout -d 'Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l copy-local-credentials -d 'Copy this machine\'s AWS_* variables into a Secret of the cluster\'s namespace (readable by whoever may read Secrets there, deleted with the cluster) for the restore pod\'s download of an s3:// source. Never done without this flag: name a Secret with --credentials-secret'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l yes -d 'Proceed (without it the plan is printed and nothing changes)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l force -d 'Rebuild even though a healthy quorum answers (it throws away a working cluster\'s newest writes and gives it a new cluster id; without quorum loss the engine repairs by itself)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l no-wait -d 'Return once the intent is written, without waiting for convergence'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l dry-run -d 'Print the steps the engine would take and the objects it would write; change nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand recover" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -l timeout -d 'Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -l compact -d 'First compact the keyspace history up to the current revision (old values of every key are gone afterwards; watchers from an older revision must re-list)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -l no-wait -d 'Return once the intent is written, without waiting for convergence'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -l dry-run -d 'Print the steps the engine would take and the objects it would write; change nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand defrag" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -l to -d 'Where the snapshot taken before the members stop goes (default: the cluster\'s spec.backup.destination); s3:// or file://' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -l timeout -d 'Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -l no-snapshot -d 'Stop the members without a snapshot (the volumes keep the data); needs --yes'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -l yes -d 'Confirm --no-snapshot'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -l no-wait -d 'Return once the intent is written, without waiting for convergence'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -l dry-run -d 'Print the steps the engine would take and the objects it would write; change nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand hibernate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand wake" -l timeout -d 'Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand wake" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand wake" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand wake" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand wake" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand wake" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand wake" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand wake" -l no-wait -d 'Return once the intent is written, without waiting for convergence'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand wake" -l dry-run -d 'Print the steps the engine would take and the objects it would write; change nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand wake" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand wake" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand wake" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand wake" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -s h -l help -d 'Print help'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -f -a "fetch" -d 'Download URL, verify it (sha256, decompression, etcd\'s hash) and write it to --to'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -f -a "drill-read" -d 'A restore drill\'s reading: wait for the restored member at --endpoint, then write its revision, key count and HashKV as JSON (with --fetched\'s figures) to --to'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -f -a "discard" -d 'Remove a directory of downloaded snapshots'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -f -a "agent" -d 'The pvc:// agent: store operations on the claim mounted in this pod (see backup::pvc)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and not __fish_seen_subcommand_from fetch drill-read discard agent help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -l to -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -l sha256 -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -l encryption-key-file -d 'A file holding the key of an encrypted snapshot (the restore pod\'s mounted Secret)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -l clean -d 'A directory to remove first (a data dir left by an interrupted restore)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -l report -d 'Write what was read (stored bytes, their sha256) as JSON to this file (a drill\'s)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from fetch" -s h -l help -d 'Print help'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from drill-read" -l endpoint -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from drill-read" -l fetched -d 'The fetch\'s --report' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from drill-read" -l to -d 'Where the figures go (the container\'s termination message)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from drill-read" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from drill-read" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from drill-read" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from drill-read" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from drill-read" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from drill-read" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from drill-read" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from drill-read" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from drill-read" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from drill-read" -s h -l help -d 'Print help'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from discard" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from discard" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from discard" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from discard" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from discard" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from discard" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from discard" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from discard" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from discard" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from discard" -s h -l help -d 'Print help'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -l root -d 'The location\'s directory in the mounted claim' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -s h -l help -d 'Print help'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -f -a "hold" -d 'Stay up until no operation ran for --idle seconds (the agent pod\'s main process)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -f -a "check" -d 'Check that the directory can be created and written'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -f -a "put" -d 'Store framed data from stdin under KEY'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -f -a "get" -d 'Write KEY to stdout'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -f -a "list" -d 'List objects under PREFIX (JSON)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -f -a "head" -d 'Size and time of KEY (JSON, null when absent)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -f -a "delete" -d 'Delete KEY'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from agent" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from help" -f -a "fetch" -d 'Download URL, verify it (sha256, decompression, etcd\'s hash) and write it to --to'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from help" -f -a "drill-read" -d 'A restore drill\'s reading: wait for the restored member at --endpoint, then write its revision, key count and HashKV as JSON (with --fetched\'s figures) to --to'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from help" -f -a "discard" -d 'Remove a directory of downloaded snapshots'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from help" -f -a "agent" -d 'The pvc:// agent: store operations on the claim mounted in this pod (see backup::pvc)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand snapshot; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand status" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand status" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand status" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand status" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand status" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand status" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand status" -s A -l all-namespaces -d 'All namespaces (only without NAME)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand status" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand status" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand status" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand status" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -l since -d 'Only lines newer than this (e.g. 10m, 1h); default: since each member started' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -l member -d 'Only this member (pod name like demo-1, or its ordinal)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -s f -l follow -d 'Keep printing new lines as members write them (lines print as they arrive)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -l raw -d 'Print etcd\'s lines as it wrote them (JSON), still prefixed with the member'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand logs" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -s f -l file -d 'The archive to write (default: etcd-report-NAMESPACE-NAME-TIME.tar.gz here). `-o` stays the output format: `-o json` prints the archive\'s index instead of its path' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -l since -d 'How far back the logs go' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -l logs -d 'Also the members\' etcd logs (the operator\'s are always in)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -l operator -d 'Only the operator: its Deployments, pods, logs, Leases and events'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand report" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand reconcile" -l timeout -d 'Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand reconcile" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand reconcile" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand reconcile" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand reconcile" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand reconcile" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand reconcile" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand reconcile" -l no-wait -d 'Return once the intent is written, without waiting for convergence'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand reconcile" -l dry-run -d 'Print the steps the engine would take and the objects it would write; change nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand reconcile" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand reconcile" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand reconcile" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand reconcile" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -l timeout -d 'Give up waiting after this long (e.g. 90s, 5m). The cluster keeps converging' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -l delete-data -d 'Also delete the member volumes: all data of the cluster is lost'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -l yes -d 'Confirm --delete-data'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -l no-wait -d 'Return once the intent is written, without waiting for convergence'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -l dry-run -d 'Print the steps the engine would take and the objects it would write; change nothing'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand delete" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l watch-namespace -d 'Watch only these namespaces, comma-separated or repeated (default: all namespaces): one watch per namespace, so the operator needs rights in those alone (`kubectl etcd install --operator --watch-namespace` writes them). -n is ignored here. Example: --watch-namespace team-a,team-b' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l metrics-addr -d 'Address of /metrics, /healthz and /readyz. The default, [::], is every IPv6 and IPv4 address (IPv4 alone on a kernel without IPv6); 0.0.0.0:PORT is IPv4 only' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l metrics-auth -d 'Who may read /metrics. kubernetes: a bearer token the API server accepts (TokenReview) of a user allowed `get` on the non-resource URL /metrics (SubjectAccessReview; the ClusterRole kubectl-etcd-operator-metrics-reader grants it), each verdict cached a minute. none: anyone who reaches the port (only behind another guard: a proxy, a NetworkPolicy). /healthz and /readyz are always open' -r -f -a "kubernetes\t'A bearer token, reviewed by the API server, of a user allowed `get` on `/metrics`'
none\t'Anyone who reaches the port: only behind something else that guards it (a proxy, a NetworkPolicy admitting Prometheus alone). The metrics name every watched cluster'"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l identity -d 'Leader-election identity (default: operator/$POD_NAME or operator/<hostname>); `operator/` is put before one given without it (CLI verbs tell an operator by it)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l s3-endpoint-allow -d 'Custom S3 endpoints backups may use, from a destination\'s `?endpoint=` or a credentials Secret\'s AWS_ENDPOINT_URL: HOST (any port), HOST:PORT, *.DOMAIN, [IPv6]:PORT or an endpoint URL, comma-separated or repeated. AWS endpoints are always allowed; by default nothing else. Example: --s3-endpoint-allow minio.backup.svc,10.0.0.5:9000' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l allow-etcd-option -d 'Let `spec.etcd.options` set this etcd flag (repeatable, or comma-separated) besides the tuning flags every cluster may set (heartbeat-interval, election-timeout, snapshot-count, …; docs/src/security.md). Off the list by default: enable-pprof, enable-v2, unsafe-no-fsync, listen-client-http-urls, cipher-suites, tls-min-version, feature-gates and any other. Example: --allow-etcd-option enable-pprof' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l allow-image-prefix -d 'Let `spec.imageRepository`, `spec.restore.toolsImage` and `spec.recovery.toolsImage` name images under this prefix (repeatable, or comma-separated): the same repository, or below it (`registry.example/` takes everything of that registry). Allowed always: gcr.io/etcd-development/etcd and ghcr.io/kubectl-etcd/kubectl-etcd. A cluster naming another runs the default image instead (condition SpecRefused names the field). Example: --allow-image-prefix registry.example/mirror/' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l max-backups-per-namespace -d 'Scheduled backups taken at once in one namespace; a due backup beyond waits in its namespace\'s line (condition reason BackupQueued), so one tenant\'s schedules cannot starve the others\'' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l max-backups -d 'Scheduled backups taken at once in all namespaces (each holds a stream buffer and a member\'s snapshot in flight): the operator\'s memory stays bounded however many are due. A freed slot goes to the namespaces in turn (round-robin), whichever has most waiting' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l max-passes-per-namespace -d 'Reconcile passes run at once in one namespace; a pass beyond waits for one of them to end (metric kubectl_etcd_queued{work="pass"}), so one tenant\'s many clusters cannot crowd out the others\' (passes of different namespaces never wait for each other)' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l allow-ambient-credentials -d 'Let backups of a cluster without `spec.backup.credentialsSecret` use this process\'s own cloud identity (AWS_* environment, profile, IRSA, ECS, instance metadata). Off by default: every tenant whose cluster the operator watches could otherwise have it read and delete objects with that identity'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand operate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l image -d 'Operator image' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l image-pull-secret -d 'Secret (type kubernetes.io/dockerconfigjson, in the operator\'s namespace) the kubelet pulls the operator\'s image with, for a registry that wants credentials (repeatable). It goes into the Deployment\'s pod; the operator\'s ServiceAccount may carry more. Example: --image-pull-secret regcred' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l watch-namespace -d 'With --operator: the operator watches only these namespaces (comma-separated or repeated), with a Role and RoleBinding in each instead of a ClusterRole over every namespace; only the read of Nodes and StorageClasses stays cluster-wide (a Role cannot grant cluster-scoped objects). Default: every namespace. Example: kubectl etcd install --operator --watch-namespace team-a,team-b' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l operator-namespace -d 'With --operator or --monitoring: the operator\'s namespace: its ServiceAccount, Deployment and binding go there (created, labelled to warn and audit against the `restricted` Pod Security Standard), and the NetworkPolicies it writes admit its pods from there. The engine Leases stay in kubectl-etcd-system, which is created too. Example: --operator-namespace platform-etcd' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l allow-etcd-option -d 'Let `spec.etcd.options` set this etcd flag besides the tuning flags (repeatable, or comma-separated), in the operator\'s passes and at the API server (admission policy). Example: --allow-etcd-option enable-pprof' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l allow-image-prefix -d 'Let `spec.imageRepository` and the tools images name images under this prefix besides gcr.io/etcd-development/etcd and ghcr.io/kubectl-etcd/kubectl-etcd (repeatable, or comma-separated; `registry.example/` takes all of that registry), in the operator\'s passes and at the API server (admission policy). Example: --allow-image-prefix registry.example/mirror/' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l operator -d 'Also install the operator: namespace, service account, RBAC, Deployment'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l monitoring -d 'Also the monitoring objects: PodMonitors of the members and the operator, the PrometheusRule with the alerts, the Grafana dashboard ConfigMap (needs prometheus-operator\'s CRDs in the cluster)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l print -d 'Print the manifests instead of applying them'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand install" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand crd" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand crd" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand crd" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand crd" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand crd" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand crd" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand crd" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand crd" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand crd" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand crd" -s h -l help -d 'Print help'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l image -d 'Operator image' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l image-pull-secret -d 'Secret (type kubernetes.io/dockerconfigjson, in the operator\'s namespace) the kubelet pulls the operator\'s image with, for a registry that wants credentials (repeatable). It goes into the Deployment\'s pod; the operator\'s ServiceAccount may carry more. Example: --image-pull-secret regcred' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l watch-namespace -d 'The operator watches only these namespaces (comma-separated or repeated): a Role and RoleBinding in each instead of the ClusterRole (nodes and storage classes, cluster-scoped, keep a read-only ClusterRole of their own), and `operate --watch-namespace`. Example: --watch-namespace team-a,team-b' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l operator-namespace -d 'The operator\'s namespace: its ServiceAccount, Deployment and binding go there (created, labelled to warn and audit against the `restricted` Pod Security Standard), and the NetworkPolicies it writes admit its pods from there. The engine Leases stay in kubectl-etcd-system, which is created too. Example: --operator-namespace platform-etcd' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l allow-etcd-option -d 'Let `spec.etcd.options` set this etcd flag besides the tuning flags (repeatable, or comma-separated), in the operator\'s passes and at the API server (admission policy). Example: --allow-etcd-option enable-pprof' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l allow-image-prefix -d 'Let `spec.imageRepository` and the tools images name images under this prefix besides gcr.io/etcd-development/etcd and ghcr.io/kubectl-etcd/kubectl-etcd (repeatable, or comma-separated; `registry.example/` takes all of that registry), in the operator\'s passes and at the API server (admission policy). Example: --allow-image-prefix registry.example/mirror/' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l monitoring -d 'Also the monitoring objects: PodMonitors of the members and the operator, the PrometheusRule with the alerts, the Grafana dashboard ConfigMap (prometheus-operator\'s CRDs must exist to apply them)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l prometheus-rules -d 'Print only the alert rules, as a Prometheus rule file (for a Prometheus without prometheus-operator, and `promtool`; tests/monitoring/rules.yaml is this output)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand manifests" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand completions" -s n -l namespace -d 'Namespace of the cluster (default: the kubeconfig context\'s namespace, else "default")' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand completions" -l context -d 'kubeconfig context to use' -r
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand completions" -l kubeconfig -d 'Path of the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand completions" -s o -l output -d 'Output format of results on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand completions" -l log-format -d 'Log format on stderr' -r -f -a "text\t''
json\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand completions" -l dial -d 'How to reach etcd members: port-forward through the API server (the default, and the only way from a workstation), or direct to the pod IPs (a CLI run inside the cluster\'s network: a pod of the cluster\'s namespace, which its NetworkPolicy admits; the bytes of a backup then skip the API server). `operate` in a pod dials direct unless told otherwise' -r -f -a "direct\t''
port-forward\t''"
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand completions" -s v -l verbose -d 'More log output on stderr (-v info, -vv debug)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand completions" -l allow-foreign-adopt-endpoints -d 'Let `spec.adopt.endpoints` name members outside the EtcdCluster\'s namespace (another namespace\'s pods, short or external names, IPs of no pod of the namespace). Off by default: whoever may write an EtcdCluster could otherwise take over any etcd the driver reaches. For the operator: `operate --allow-foreign-adopt-endpoints`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand completions" -l allow-cluster-issuer -d 'Let `spec.tls.issuerRef` name a cert-manager ClusterIssuer. Off by default: its CA signs for every namespace, so every cluster it signs for accepts the others\' certificates. For the operator: `operate --allow-cluster-issuer`'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "create" -d 'Create an etcd cluster and wait until it is Ready'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "scale" -d 'Change the number of members, or grow or move the member volumes'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "upgrade" -d 'Move every member to another etcd version, one member at a time'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "adopt" -d 'Take over an etcd cluster that runs outside kubectl-etcd, with no downtime'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "backup" -d 'Take a snapshot now, to S3, a file or a volume (`backup list NAME` lists them)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "restore" -d 'Create a new cluster from a backup (verified before anything is created)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "certificate" -d 'Issue a client certificate for an application from the cluster\'s own CA'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "rotate-ca" -d 'Rotate the CA of a cluster with managed TLS, one member at a time'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "tls" -d 'Switch TLS on or off for a running cluster, one member at a time'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "recover" -d 'Rebuild a cluster that lost quorum from its best surviving member (or a backup)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "defrag" -d 'Give the space of deleted and overwritten keys back, one member at a time'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "hibernate" -d 'Stop every member after a verified snapshot, keeping the volumes'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "wake" -d 'Start the members of a hibernated cluster again (same members, same data)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "snapshot" -d 'Tools the restore pods run inside the cluster'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "status" -d 'Show clusters, their members and the engine\'s next step (observes only)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "logs" -d 'Print every member\'s etcd log, interleaved by time (reads only)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "report" -d 'Write a support bundle (tar.gz) of a cluster or the operator (reads only)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "reconcile" -d 'Run reconcile passes until a cluster converges (after a crash or a manual edit)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "delete" -d 'Delete a cluster (its volumes are kept unless --delete-data --yes)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "operate" -d 'Run the engine as a controller (in-cluster, or from a workstation for debugging)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "install" -d 'Install the CRDs, and with --operator the operator, into the current context'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "crd" -d 'Print the CRDs (EtcdCluster, EtcdBackup) as YAML (crds/crds.yaml is this output)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "manifests" -d 'Print the operator\'s install manifests as YAML (crds/operator.yaml is this output)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "completions" -d 'Print shell completions (the files in completions/ are this output)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and not __fish_seen_subcommand_from create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and __fish_seen_subcommand_from backup" -f -a "list" -d 'List the backups of a cluster (newest first): size, revision, age, verified'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and __fish_seen_subcommand_from backup" -f -a "verify" -d 'Restore drill: restore a backup into a throwaway one-member etcd (one pod, no Service, a NetworkPolicy admitting nothing) and compare its revision, key count and HashKV with the record and the live cluster; the result goes on the record (status.drill) and the pod goes. Exit 13 when the drill fails. The live cluster is only read'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and __fish_seen_subcommand_from snapshot" -f -a "fetch" -d 'Download URL, verify it (sha256, decompression, etcd\'s hash) and write it to --to'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and __fish_seen_subcommand_from snapshot" -f -a "drill-read" -d 'A restore drill\'s reading: wait for the restored member at --endpoint, then write its revision, key count and HashKV as JSON (with --fetched\'s figures) to --to'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and __fish_seen_subcommand_from snapshot" -f -a "discard" -d 'Remove a directory of downloaded snapshots'
complete -c kubectl-etcd -n "__fish_kubectl_etcd_using_subcommand help; and __fish_seen_subcommand_from snapshot" -f -a "agent" -d 'The pvc:// agent: store operations on the claim mounted in this pod (see backup::pvc)'
