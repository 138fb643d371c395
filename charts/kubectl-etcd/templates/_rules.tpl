{{/* Generated from objects::install by tests/chart.rs; do not edit. Regenerate: KE_REGENERATE=1 cargo test --test chart generated */}}
{{- define "kubectl-etcd.rules.every" -}}
- {"apiGroups":["etcd.kubectl-etcd.io"],"resources":["etcdclusters"],"verbs":["get","list","watch","patch","update"]}
- {"apiGroups":["etcd.kubectl-etcd.io"],"resources":["etcdclusters/status"],"verbs":["get","patch","update"]}
- {"apiGroups":["etcd.kubectl-etcd.io"],"resources":["etcdclusters/finalizers"],"verbs":["update"]}
- {"apiGroups":["apps"],"resources":["statefulsets"],"verbs":["list","watch"]}
- {"apiGroups":[""],"resources":["services"],"verbs":["list","watch"]}
- {"apiGroups":[""],"resources":["configmaps"],"verbs":["list","watch"]}
- {"apiGroups":[""],"resources":["pods"],"verbs":["list","watch"]}
- {"apiGroups":[""],"resources":["nodes"],"verbs":["get"]}
- {"apiGroups":["storage.k8s.io"],"resources":["storageclasses"],"verbs":["get","list"]}
- {"apiGroups":["authentication.k8s.io"],"resources":["tokenreviews"],"verbs":["create"]}
- {"apiGroups":["authorization.k8s.io"],"resources":["subjectaccessreviews"],"verbs":["create"]}
- {"apiGroups":["rbac.authorization.k8s.io"],"resources":["rolebindings"],"verbs":["get","create","patch"]}
- {"apiGroups":["rbac.authorization.k8s.io"],"resourceNames":["{{ include "kubectl-etcd.name" . }}-workload"],"resources":["clusterroles"],"verbs":["bind"]}
{{- end -}}
{{- define "kubectl-etcd.rules.workload" -}}
- {"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":[""],"resources":["services"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":["apps"],"resources":["statefulsets"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":["policy"],"resources":["poddisruptionbudgets"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":["networking.k8s.io"],"resources":["networkpolicies"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":[""],"resources":["persistentvolumeclaims"],"verbs":["get","list","watch","create","patch","delete","deletecollection"]}
- {"apiGroups":[""],"resources":["pods"],"verbs":["get","list","watch","create","patch","delete"]}
- {"apiGroups":[""],"resources":["pods/eviction"],"verbs":["create"]}
- {"apiGroups":[""],"resources":["pods/log"],"verbs":["get"]}
- {"apiGroups":["discovery.k8s.io"],"resources":["endpointslices"],"verbs":["list"]}
- {"apiGroups":["etcd.kubectl-etcd.io"],"resources":["etcdbackups"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":["etcd.kubectl-etcd.io"],"resources":["etcdbackups/status"],"verbs":["get","patch","update"]}
- {"apiGroups":[""],"resources":["secrets"],"verbs":["get","create","patch"]}
- {"apiGroups":["cert-manager.io"],"resources":["certificates"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":["events.k8s.io"],"resources":["events"],"verbs":["create","patch"]}
- {"apiGroups":[""],"resources":["events"],"verbs":["create","patch","list"]}
- {"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["get","create","update","patch","delete"]}
{{- end -}}
{{- define "kubectl-etcd.rules.namespaced" -}}
- {"apiGroups":["etcd.kubectl-etcd.io"],"resources":["etcdclusters"],"verbs":["get","list","watch","patch","update"]}
- {"apiGroups":["etcd.kubectl-etcd.io"],"resources":["etcdclusters/status"],"verbs":["get","patch","update"]}
- {"apiGroups":["etcd.kubectl-etcd.io"],"resources":["etcdclusters/finalizers"],"verbs":["update"]}
- {"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":[""],"resources":["services"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":["apps"],"resources":["statefulsets"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":["policy"],"resources":["poddisruptionbudgets"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":["networking.k8s.io"],"resources":["networkpolicies"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":[""],"resources":["persistentvolumeclaims"],"verbs":["get","list","watch","create","patch","delete","deletecollection"]}
- {"apiGroups":[""],"resources":["pods"],"verbs":["get","list","watch","create","patch","delete"]}
- {"apiGroups":[""],"resources":["pods/eviction"],"verbs":["create"]}
- {"apiGroups":[""],"resources":["pods/log"],"verbs":["get"]}
- {"apiGroups":["discovery.k8s.io"],"resources":["endpointslices"],"verbs":["list"]}
- {"apiGroups":["etcd.kubectl-etcd.io"],"resources":["etcdbackups"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":["etcd.kubectl-etcd.io"],"resources":["etcdbackups/status"],"verbs":["get","patch","update"]}
- {"apiGroups":[""],"resources":["secrets"],"verbs":["get","create","patch"]}
- {"apiGroups":["cert-manager.io"],"resources":["certificates"],"verbs":["get","list","watch","create","patch","update","delete"]}
- {"apiGroups":["events.k8s.io"],"resources":["events"],"verbs":["create","patch"]}
- {"apiGroups":[""],"resources":["events"],"verbs":["create","patch","list"]}
- {"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["get","create","update","patch","delete"]}
{{- end -}}
{{- define "kubectl-etcd.rules.nodes" -}}
- {"apiGroups":[""],"resources":["nodes"],"verbs":["get"]}
- {"apiGroups":["storage.k8s.io"],"resources":["storageclasses"],"verbs":["get","list"]}
- {"apiGroups":["authentication.k8s.io"],"resources":["tokenreviews"],"verbs":["create"]}
- {"apiGroups":["authorization.k8s.io"],"resources":["subjectaccessreviews"],"verbs":["create"]}
{{- end -}}
{{- define "kubectl-etcd.rules.lease" -}}
- {"apiGroups":["coordination.k8s.io"],"resourceNames":["{{ include "kubectl-etcd.name" . }}-leader"],"resources":["leases"],"verbs":["get","update"]}
- {"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["create"]}
{{- end -}}
{{- define "kubectl-etcd.rules.view" -}}
- {"apiGroups":["etcd.kubectl-etcd.io"],"resources":["etcdclusters","etcdclusters/status","etcdbackups","etcdbackups/status"],"verbs":["get","list","watch"]}
{{- end -}}
{{- define "kubectl-etcd.rules.edit" -}}
- {"apiGroups":["etcd.kubectl-etcd.io"],"resources":["etcdclusters","etcdbackups"],"verbs":["create","update","patch","delete","deletecollection"]}
{{- end -}}
