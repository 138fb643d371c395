{{/* The operator's name: ServiceAccount, Deployment, roles, bindings. */}}
{{- define "kubectl-etcd.name" -}}
{{- required "name must not be empty" .Values.name -}}
{{- end -}}

{{/* The labels of every object (objects::install::labels). */}}
{{- define "kubectl-etcd.labels" -}}
app.kubernetes.io/managed-by: kubectl-etcd
app.kubernetes.io/name: {{ include "kubectl-etcd.name" . }}
{{- end -}}

{{- define "kubectl-etcd.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* The namespaces watched with rbac.scope=namespace, comma-separated (`operate
--watch-namespace`); empty with rbac.scope=cluster. */}}
{{- define "kubectl-etcd.watchNamespace" -}}
{{- if eq .Values.rbac.scope "namespace" -}}
{{- $list := .Values.rbac.watchNamespace | default .Release.Namespace -}}
{{- if kindIs "slice" $list }}{{ $list | uniq | join "," }}{{ else }}{{ splitList "," $list | uniq | join "," }}{{ end -}}
{{- else if ne .Values.rbac.scope "cluster" -}}
{{- fail (printf "rbac.scope is %q: use cluster (every namespace) or namespace (rbac.watchNamespace, default the release namespace)" .Values.rbac.scope) -}}
{{- end -}}
{{- end -}}

{{- define "kubectl-etcd.subjects" -}}
- kind: ServiceAccount
  name: {{ include "kubectl-etcd.name" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/* A list of etcd flag names or image prefixes as a CEL list literal, for the admission policy
on EtcdClusters (objects::admission::spec): ['a', 'b']. */}}
{{- define "kubectl-etcd.celList" -}}
[{{ range $i, $e := . }}{{ if regexMatch "['\"\\\\, ]" $e }}{{ fail (printf "%q is not an etcd flag name or image prefix (no quotes, backslashes, commas or spaces)" $e) }}{{ end }}{{ if $i }}, {{ end }}'{{ $e }}'{{ end }}]
{{- end -}}
