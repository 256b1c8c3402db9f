{{/* The name of every object: the release's own, so two charts that both
depend on this one do not share a ClusterRole or a binding. */}}
{{- define "crdversion-migrate.name" -}}
{{- printf "%s-crdversion-migrate" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "crdversion-migrate.labels" -}}
app.kubernetes.io/name: crdversion-migrate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: migrate
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The hook's annotations at a weight: RBAC and the ServiceAccount one
before the Job, all deleted before the next run, and once the Job
succeeded unless kept. */}}
{{- define "crdversion-migrate.hook" -}}
helm.sh/hook: {{ .root.Values.hook.events }}
helm.sh/hook-weight: {{ .weight | quote }}
helm.sh/hook-delete-policy: {{ if .root.Values.hook.keepSucceeded }}before-hook-creation{{ else }}before-hook-creation,hook-succeeded{{ end }}
{{- end -}}

{{- define "crdversion-migrate.validate" -}}
{{- if not .Values.groups -}}
{{- fail "crdversion-migrate: set groups, the API groups of the CRDs to migrate (the role grants their objects only)" -}}
{{- end -}}
{{- if and (not .Values.crds) (not .Values.all) -}}
{{- fail "crdversion-migrate: set crds, the CRDs to migrate by name (or all: true)" -}}
{{- end -}}
{{- range .Values.groups -}}
{{- if eq . "*" -}}
{{- fail "crdversion-migrate: groups may not be \"*\": it would grant every built-in resource" -}}
{{- end -}}
{{- end -}}
{{- end -}}
