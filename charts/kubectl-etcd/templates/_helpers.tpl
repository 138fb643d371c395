{{/* The operator's name: ServiceAccount, Deployment, roles, bindings. */}}
{{- define "kubectl-etcd.name" -}}
{{- required "name must not be empty" .Values.name -}}
{{- end -}}

{{/* The labels of every object (objects::install::labels). */}}
{{- define "kubectl-etcd.labels" -}}
app.kubernetes.io/managed-by: kubectl-etcd
app.kubernetes.io/name: {{ include "kubectl-etcd.name" . }}
{{- end -}}

{{/* Where the engine Leases live (objects::install::NAMESPACE; the CLI looks there). */}}
{{- define "kubectl-etcd.leaseNamespace" -}}
kubectl-etcd-system
{{- end -}}

{{- define "kubectl-etcd.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* The namespace watched with rbac.scope=namespace; empty with rbac.scope=cluster. */}}
{{- define "kubectl-etcd.watchNamespace" -}}
{{- if eq .Values.rbac.scope "namespace" -}}
{{- .Values.rbac.watchNamespace | default .Release.Namespace -}}
{{- else if ne .Values.rbac.scope "cluster" -}}
{{- fail (printf "rbac.scope is %q: use cluster (every namespace) or namespace (rbac.watchNamespace, default the release namespace)" .Values.rbac.scope) -}}
{{- end -}}
{{- end -}}

{{- define "kubectl-etcd.subjects" -}}
- kind: ServiceAccount
  name: {{ include "kubectl-etcd.name" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}
