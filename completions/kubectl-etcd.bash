_kubectl__etcd() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="kubectl__etcd"
                ;;
            kubectl__etcd,adopt)
                cmd="kubectl__etcd__subcmd__adopt"
                ;;
            kubectl__etcd,backup)
                cmd="kubectl__etcd__subcmd__backup"
                ;;
            kubectl__etcd,certificate)
                cmd="kubectl__etcd__subcmd__certificate"
                ;;
            kubectl__etcd,completions)
                cmd="kubectl__etcd__subcmd__completions"
                ;;
            kubectl__etcd,crd)
                cmd="kubectl__etcd__subcmd__crd"
                ;;
            kubectl__etcd,create)
                cmd="kubectl__etcd__subcmd__create"
                ;;
            kubectl__etcd,defrag)
                cmd="kubectl__etcd__subcmd__defrag"
                ;;
            kubectl__etcd,delete)
                cmd="kubectl__etcd__subcmd__delete"
                ;;
            kubectl__etcd,help)
                cmd="kubectl__etcd__subcmd__help"
                ;;
            kubectl__etcd,hibernate)
                cmd="kubectl__etcd__subcmd__hibernate"
                ;;
            kubectl__etcd,install)
                cmd="kubectl__etcd__subcmd__install"
                ;;
            kubectl__etcd,logs)
                cmd="kubectl__etcd__subcmd__logs"
                ;;
            kubectl__etcd,manifests)
                cmd="kubectl__etcd__subcmd__manifests"
                ;;
            kubectl__etcd,operate)
                cmd="kubectl__etcd__subcmd__operate"
                ;;
            kubectl__etcd,reconcile)
                cmd="kubectl__etcd__subcmd__reconcile"
                ;;
            kubectl__etcd,recover)
                cmd="kubectl__etcd__subcmd__recover"
                ;;
            kubectl__etcd,report)
                cmd="kubectl__etcd__subcmd__report"
                ;;
            kubectl__etcd,restore)
                cmd="kubectl__etcd__subcmd__restore"
                ;;
            kubectl__etcd,rotate-ca)
                cmd="kubectl__etcd__subcmd__rotate__subcmd__ca"
                ;;
            kubectl__etcd,scale)
                cmd="kubectl__etcd__subcmd__scale"
                ;;
            kubectl__etcd,snapshot)
                cmd="kubectl__etcd__subcmd__snapshot"
                ;;
            kubectl__etcd,status)
                cmd="kubectl__etcd__subcmd__status"
                ;;
            kubectl__etcd,tls)
                cmd="kubectl__etcd__subcmd__tls"
                ;;
            kubectl__etcd,upgrade)
                cmd="kubectl__etcd__subcmd__upgrade"
                ;;
            kubectl__etcd,wake)
                cmd="kubectl__etcd__subcmd__wake"
                ;;
            kubectl__etcd__subcmd__backup,help)
                cmd="kubectl__etcd__subcmd__backup__subcmd__help"
                ;;
            kubectl__etcd__subcmd__backup,list)
                cmd="kubectl__etcd__subcmd__backup__subcmd__list"
                ;;
            kubectl__etcd__subcmd__backup,verify)
                cmd="kubectl__etcd__subcmd__backup__subcmd__verify"
                ;;
            kubectl__etcd__subcmd__backup__subcmd__help,help)
                cmd="kubectl__etcd__subcmd__backup__subcmd__help__subcmd__help"
                ;;
            kubectl__etcd__subcmd__backup__subcmd__help,list)
                cmd="kubectl__etcd__subcmd__backup__subcmd__help__subcmd__list"
                ;;
            kubectl__etcd__subcmd__backup__subcmd__help,verify)
                cmd="kubectl__etcd__subcmd__backup__subcmd__help__subcmd__verify"
                ;;
            kubectl__etcd__subcmd__help,adopt)
                cmd="kubectl__etcd__subcmd__help__subcmd__adopt"
                ;;
            kubectl__etcd__subcmd__help,backup)
                cmd="kubectl__etcd__subcmd__help__subcmd__backup"
                ;;
            kubectl__etcd__subcmd__help,certificate)
                cmd="kubectl__etcd__subcmd__help__subcmd__certificate"
                ;;
            kubectl__etcd__subcmd__help,completions)
                cmd="kubectl__etcd__subcmd__help__subcmd__completions"
                ;;
            kubectl__etcd__subcmd__help,crd)
                cmd="kubectl__etcd__subcmd__help__subcmd__crd"
                ;;
            kubectl__etcd__subcmd__help,create)
                cmd="kubectl__etcd__subcmd__help__subcmd__create"
                ;;
            kubectl__etcd__subcmd__help,defrag)
                cmd="kubectl__etcd__subcmd__help__subcmd__defrag"
                ;;
            kubectl__etcd__subcmd__help,delete)
                cmd="kubectl__etcd__subcmd__help__subcmd__delete"
                ;;
            kubectl__etcd__subcmd__help,help)
                cmd="kubectl__etcd__subcmd__help__subcmd__help"
                ;;
            kubectl__etcd__subcmd__help,hibernate)
                cmd="kubectl__etcd__subcmd__help__subcmd__hibernate"
                ;;
            kubectl__etcd__subcmd__help,install)
                cmd="kubectl__etcd__subcmd__help__subcmd__install"
                ;;
            kubectl__etcd__subcmd__help,logs)
                cmd="kubectl__etcd__subcmd__help__subcmd__logs"
                ;;
            kubectl__etcd__subcmd__help,manifests)
                cmd="kubectl__etcd__subcmd__help__subcmd__manifests"
                ;;
            kubectl__etcd__subcmd__help,operate)
                cmd="kubectl__etcd__subcmd__help__subcmd__operate"
                ;;
            kubectl__etcd__subcmd__help,reconcile)
                cmd="kubectl__etcd__subcmd__help__subcmd__reconcile"
                ;;
            kubectl__etcd__subcmd__help,recover)
                cmd="kubectl__etcd__subcmd__help__subcmd__recover"
                ;;
            kubectl__etcd__subcmd__help,report)
                cmd="kubectl__etcd__subcmd__help__subcmd__report"
                ;;
            kubectl__etcd__subcmd__help,restore)
                cmd="kubectl__etcd__subcmd__help__subcmd__restore"
                ;;
            kubectl__etcd__subcmd__help,rotate-ca)
                cmd="kubectl__etcd__subcmd__help__subcmd__rotate__subcmd__ca"
                ;;
            kubectl__etcd__subcmd__help,scale)
                cmd="kubectl__etcd__subcmd__help__subcmd__scale"
                ;;
            kubectl__etcd__subcmd__help,snapshot)
                cmd="kubectl__etcd__subcmd__help__subcmd__snapshot"
                ;;
            kubectl__etcd__subcmd__help,status)
                cmd="kubectl__etcd__subcmd__help__subcmd__status"
                ;;
            kubectl__etcd__subcmd__help,tls)
                cmd="kubectl__etcd__subcmd__help__subcmd__tls"
                ;;
            kubectl__etcd__subcmd__help,upgrade)
                cmd="kubectl__etcd__subcmd__help__subcmd__upgrade"
                ;;
            kubectl__etcd__subcmd__help,wake)
                cmd="kubectl__etcd__subcmd__help__subcmd__wake"
                ;;
            kubectl__etcd__subcmd__help__subcmd__backup,list)
                cmd="kubectl__etcd__subcmd__help__subcmd__backup__subcmd__list"
                ;;
            kubectl__etcd__subcmd__help__subcmd__backup,verify)
                cmd="kubectl__etcd__subcmd__help__subcmd__backup__subcmd__verify"
                ;;
            kubectl__etcd__subcmd__help__subcmd__snapshot,agent)
                cmd="kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent"
                ;;
            kubectl__etcd__subcmd__help__subcmd__snapshot,discard)
                cmd="kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__discard"
                ;;
            kubectl__etcd__subcmd__help__subcmd__snapshot,drill-read)
                cmd="kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__drill__subcmd__read"
                ;;
            kubectl__etcd__subcmd__help__subcmd__snapshot,fetch)
                cmd="kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__fetch"
                ;;
            kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent,check)
                cmd="kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__check"
                ;;
            kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent,delete)
                cmd="kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__delete"
                ;;
            kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent,get)
                cmd="kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__get"
                ;;
            kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent,head)
                cmd="kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__head"
                ;;
            kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent,hold)
                cmd="kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__hold"
                ;;
            kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent,list)
                cmd="kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__list"
                ;;
            kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent,put)
                cmd="kubectl__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__put"
                ;;
            kubectl__etcd__subcmd__snapshot,agent)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent"
                ;;
            kubectl__etcd__subcmd__snapshot,discard)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__discard"
                ;;
            kubectl__etcd__subcmd__snapshot,drill-read)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__drill__subcmd__read"
                ;;
            kubectl__etcd__subcmd__snapshot,fetch)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__fetch"
                ;;
            kubectl__etcd__subcmd__snapshot,help)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__help"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent,check)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__check"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent,delete)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__delete"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent,get)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__get"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent,head)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__head"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent,help)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent,hold)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__hold"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent,list)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__list"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent,put)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__put"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help,check)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__check"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help,delete)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__delete"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help,get)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__get"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help,head)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__head"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help,help)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__help"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help,hold)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__hold"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help,list)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__list"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help,put)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__put"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__help,agent)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__help,discard)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__discard"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__help,drill-read)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__drill__subcmd__read"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__help,fetch)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__fetch"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__help,help)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__help"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent,check)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__check"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent,delete)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__delete"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent,get)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__get"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent,head)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__head"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent,hold)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__hold"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent,list)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__list"
                ;;
            kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent,put)
                cmd="kubectl__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__put"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        kubectl__etcd)
            opts="-n -o -v -h -V --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help --version create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__adopt)
            opts="-n -o -v -h --from --endpoints --tls-secret --tls --insecure --certificate-lifetime --tls-issuer --tls-issuer-kind --tls-server-secret --tls-client-secret --tls-peer-secret --plain-peers --auth-secret --etcd-auth --take-over-service --abort --yes --storage --storage-class --image-repository --quota-backend-bytes --cluster-domain --no-wait --timeout --dry-run --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --endpoints)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls)
                    COMPREPLY=($(compgen -W "managed cert-manager secrets none" -- "${cur}"))
                    return 0
                    ;;
                --certificate-lifetime)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-issuer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-issuer-kind)
                    COMPREPLY=($(compgen -W "Issuer ClusterIssuer" -- "${cur}"))
                    return 0
                    ;;
                --tls-server-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-client-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-peer-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --auth-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-auth)
                    COMPREPLY=($(compgen -W "on off" -- "${cur}"))
                    return 0
                    ;;
                --take-over-service)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --storage)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --storage-class)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-repository)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --quota-backend-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-domain)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__backup)
            opts="-n -o -v -h --to --compression --credentials-secret --sse --sse-kms-key-id --encryption-key-secret --dry-run --tools-image --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help list verify help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --compression)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --credentials-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sse)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sse-kms-key-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --encryption-key-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tools-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__backup__subcmd__help)
            opts="list verify help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__backup__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__backup__subcmd__help__subcmd__list)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__backup__subcmd__help__subcmd__verify)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__backup__subcmd__list)
            opts="-n -o -v -h --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__backup__subcmd__verify)
            opts="-n -o -v -h --latest-of --tools-image --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --latest-of)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tools-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__certificate)
            opts="-n -o -v -h --user --out --lifetime --prefix --read-write --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --lifetime)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__completions)
            opts="-n -o -v -h --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help bash zsh fish kubectl"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__crd)
            opts="-n -o -v -h --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__create)
            opts="-n -o -v -h --replicas --version --storage --storage-class --ephemeral --image-repository --image-pull-secret --etcd-option --allow-etcd-option --priority-class --cluster-domain --service-type --tls --insecure --certificate-lifetime --tls-issuer --tls-issuer-kind --tls-server-secret --tls-client-secret --tls-peer-secret --plain-peers --auth-secret --etcd-auth --no-wait --timeout --dry-run --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --replicas)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --version)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --storage)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --storage-class)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-repository)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-pull-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-option)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allow-etcd-option)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --priority-class)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-domain)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --service-type)
                    COMPREPLY=($(compgen -W "ClusterIP NodePort LoadBalancer" -- "${cur}"))
                    return 0
                    ;;
                --tls)
                    COMPREPLY=($(compgen -W "managed cert-manager secrets none" -- "${cur}"))
                    return 0
                    ;;
                --certificate-lifetime)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-issuer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-issuer-kind)
                    COMPREPLY=($(compgen -W "Issuer ClusterIssuer" -- "${cur}"))
                    return 0
                    ;;
                --tls-server-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-client-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-peer-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --auth-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-auth)
                    COMPREPLY=($(compgen -W "on off" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__defrag)
            opts="-n -o -v -h --compact --no-wait --timeout --dry-run --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__delete)
            opts="-n -o -v -h --delete-data --yes --no-wait --timeout --dry-run --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help)
            opts="create scale upgrade adopt backup restore certificate rotate-ca tls recover defrag hibernate wake snapshot status logs report reconcile delete operate install crd manifests completions help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__adopt)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__backup)
            opts="list verify"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__backup__subcmd__list)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__backup__subcmd__verify)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__certificate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__completions)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__crd)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__create)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__defrag)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__delete)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__hibernate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__install)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__logs)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__manifests)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__operate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__reconcile)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__recover)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__report)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__restore)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__rotate__subcmd__ca)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__scale)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__snapshot)
            opts="fetch drill-read discard agent"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__snapshot__subcmd__agent)
            opts="hold check put get list head delete"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__check)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__delete)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__get)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__head)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__hold)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__list)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__snapshot__subcmd__agent__subcmd__put)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__snapshot__subcmd__discard)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__snapshot__subcmd__drill__subcmd__read)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__snapshot__subcmd__fetch)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__status)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__tls)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__upgrade)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__help__subcmd__wake)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__hibernate)
            opts="-n -o -v -h --to --no-snapshot --yes --no-wait --timeout --dry-run --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__install)
            opts="-n -o -v -h --operator --image --image-pull-secret --watch-namespace --operator-namespace --monitoring --allow-etcd-option --allow-image-prefix --print --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-pull-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --watch-namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --operator-namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allow-etcd-option)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allow-image-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__logs)
            opts="-f -n -o -v -h --follow --since --member --raw --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --since)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --member)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__manifests)
            opts="-n -o -v -h --image --image-pull-secret --watch-namespace --operator-namespace --monitoring --prometheus-rules --allow-etcd-option --allow-image-prefix --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-pull-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --watch-namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --operator-namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allow-etcd-option)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allow-image-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__operate)
            opts="-n -o -v -h --watch-namespace --metrics-addr --metrics-auth --identity --allow-ambient-credentials --s3-endpoint-allow --allow-etcd-option --allow-image-prefix --max-backups-per-namespace --max-backups --max-passes-per-namespace --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --watch-namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-addr)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-auth)
                    COMPREPLY=($(compgen -W "kubernetes none" -- "${cur}"))
                    return 0
                    ;;
                --identity)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --s3-endpoint-allow)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allow-etcd-option)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --allow-image-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-backups-per-namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-backups)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-passes-per-namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__reconcile)
            opts="-n -o -v -h --no-wait --timeout --dry-run --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__recover)
            opts="-n -o -v -h --from-member --from-backup --to --credentials-secret --copy-local-credentials --tools-image --yes --force --no-wait --timeout --dry-run --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from-member)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --from-backup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --credentials-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tools-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__report)
            opts="-f -n -o -v -h --file --logs --since --operator --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -f)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --since)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__restore)
            opts="-n -o -v -h --from --from-backup --latest-of --replicas --version --storage --storage-class --sha256 --credentials-secret --copy-local-credentials --encryption-key-secret --tools-image --image-repository --image-pull-secret --cluster-domain --service-type --tls --insecure --certificate-lifetime --tls-issuer --tls-issuer-kind --tls-server-secret --tls-client-secret --tls-peer-secret --plain-peers --auth-secret --etcd-auth --no-wait --timeout --dry-run --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --from-backup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --latest-of)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --replicas)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --version)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --storage)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --storage-class)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sha256)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --credentials-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --encryption-key-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tools-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-repository)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --image-pull-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-domain)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --service-type)
                    COMPREPLY=($(compgen -W "ClusterIP NodePort LoadBalancer" -- "${cur}"))
                    return 0
                    ;;
                --tls)
                    COMPREPLY=($(compgen -W "managed cert-manager secrets none" -- "${cur}"))
                    return 0
                    ;;
                --certificate-lifetime)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-issuer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-issuer-kind)
                    COMPREPLY=($(compgen -W "Issuer ClusterIssuer" -- "${cur}"))
                    return 0
                    ;;
                --tls-server-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-client-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-peer-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --auth-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-auth)
                    COMPREPLY=($(compgen -W "on off" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__rotate__subcmd__ca)
            opts="-n -o -v -h --no-wait --timeout --dry-run --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__scale)
            opts="-n -o -v -h --replicas --storage --storage-class --no-wait --timeout --dry-run --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --replicas)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --storage)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --storage-class)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot)
            opts="-n -o -v -h --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help fetch drill-read discard agent help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent)
            opts="-n -o -v -h --root --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help hold check put get list head delete help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__check)
            opts="-n -o -v -h --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__delete)
            opts="-n -o -v -h --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__get)
            opts="-n -o -v -h --from --size --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__head)
            opts="-n -o -v -h --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__help)
            opts="hold check put get list head delete help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__check)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__delete)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__get)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__head)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__hold)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__list)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__help__subcmd__put)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__hold)
            opts="-n -o -v -h --idle --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --idle)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__list)
            opts="-n -o -v -h --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__agent__subcmd__put)
            opts="-n -o -v -h --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__discard)
            opts="-n -o -v -h --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__drill__subcmd__read)
            opts="-n -o -v -h --endpoint --fetched --to --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fetched)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__fetch)
            opts="-n -o -v -h --to --sha256 --encryption-key-file --clean --report --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sha256)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --encryption-key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --clean)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__help)
            opts="fetch drill-read discard agent help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__help__subcmd__agent)
            opts="hold check put get list head delete"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__check)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__delete)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__get)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__head)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__hold)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__list)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__help__subcmd__agent__subcmd__put)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__help__subcmd__discard)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__help__subcmd__drill__subcmd__read)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__help__subcmd__fetch)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__snapshot__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__status)
            opts="-A -n -o -v -h --all-namespaces --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__tls)
            opts="-n -o -v -h --on --off --no-wait --timeout --dry-run --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__upgrade)
            opts="-n -o -v -h --version --to --skip-backup --yes --no-wait --timeout --dry-run --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --version)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        kubectl__subcmd__etcd__subcmd__wake)
            opts="-n -o -v -h --no-wait --timeout --dry-run --namespace --context --kubeconfig --output --verbose --log-format --dial --allow-foreign-adopt-endpoints --allow-cluster-issuer --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --namespace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kubeconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "table json yaml" -- "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --dial)
                    COMPREPLY=($(compgen -W "direct port-forward" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _kubectl__etcd -o nosort -o bashdefault -o default kubectl-etcd
else
    complete -F _kubectl__etcd -o bashdefault -o default kubectl-etcd
fi
