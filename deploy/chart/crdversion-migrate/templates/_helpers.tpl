{{/* fit cuts a name to 63 characters, as Helm's own helpers do, keeping
it unique: a long one ends in 8 characters of its whole name's hash. */}}
{{- define "crdversion-migrate.fit" -}}
{{- if gt (len .) 63 -}}
{{- printf "%s-%s" (trunc 54 . | trimSuffix "-") (sha256sum . | trunc 8) -}}
{{- else -}}
{{- . -}}
{{- end -}}
{{- end -}}

{{/* The name of the namespaced objects (ServiceAccount, Job): the
release's own, so two charts that both depend on this one share none. */}}
{{- define "crdversion-migrate.name" -}}
{{- include "crdversion-migrate.fit" (printf "%s-crdversion-migrate" .Release.Name) -}}
{{- end -}}

{{/* The ClusterRole's and its binding's: cluster-wide, so the namespace
is in it too, with a hash of namespace/release (neither holds a "/"):
"a-b" + "c" and "a" + "b-c" read alike, and one release's
before-hook-creation must not delete another's role mid-run. */}}
{{- define "crdversion-migrate.clusterName" -}}
{{- $prefix := printf "%s-%s-crdversion-migrate" .Release.Namespace .Release.Name | trunc 54 | trimSuffix "-" -}}
{{- printf "%s-%s" $prefix (printf "%s/%s" .Release.Namespace .Release.Name | sha256sum | trunc 8) -}}
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

{{/* The image: repository@digest when a digest is given, else the tag
(default the chart's appVersion). */}}
{{- define "crdversion-migrate.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* The named CRDs' plurals by group, as JSON: {"example.com": ["widgets"]}.
A CRD's name is <plural>.<group>. */}}
{{- define "crdversion-migrate.resources" -}}
{{- $byGroup := dict -}}
{{- range .Values.crds -}}
{{- $p := splitn "." 2 . -}}
{{- $_ := set $byGroup $p._1 (append (get $byGroup $p._1 | default (list)) $p._0 | uniq) -}}
{{- end -}}
{{- toJson $byGroup -}}
{{- end -}}

{{/* migrate's --switch-grace, or nothing for the plugin's default: an
integer is seconds (0 included, which `with` would drop), a string a Go
duration. */}}
{{- define "crdversion-migrate.switchGrace" -}}
{{- $g := .Values.switchGrace -}}
{{- if kindIs "string" $g -}}
{{- if $g }}--switch-grace={{ $g }}{{ end -}}
{{- else if or (kindIs "float64" $g) (kindIs "int64" $g) (kindIs "int" $g) -}}
{{- if or (lt (float64 $g) 0.0) (ne (float64 $g) (float64 (int64 $g))) -}}
{{- fail (printf "crdversion-migrate: switchGrace %v: whole seconds, 0 or more, or a duration such as \"90s\"" $g) -}}
{{- end -}}
--switch-grace={{ int64 $g }}s
{{- else if not (kindIs "invalid" $g) -}}
{{- fail (printf "crdversion-migrate: switchGrace %v: seconds or a duration such as \"90s\"" $g) -}}
{{- end -}}
{{- end -}}

{{/* What the schema says too, for a render that skips it
(--skip-schema-validation), and what it cannot say. */}}
{{- define "crdversion-migrate.validate" -}}
{{- if and .Values.crds .Values.all -}}
{{- fail "crdversion-migrate: set crds or all: true, not both (all migrates every pending CRD of groups; crds names them)" -}}
{{- end -}}
{{- if and (not .Values.crds) (not .Values.all) -}}
{{- fail "crdversion-migrate: set crds, the CRDs to migrate by name (or all: true with groups)" -}}
{{- end -}}
{{- if and .Values.all (not .Values.groups) -}}
{{- fail "crdversion-migrate: set groups, the API groups whose CRDs all: true migrates (the role grants their objects only)" -}}
{{- end -}}
{{- range .Values.groups -}}
{{- if or (eq . "*") (not (contains "." .)) -}}
{{- fail (printf "crdversion-migrate: groups may not hold %q: a CRD's group has a dot, and \"*\" would grant every built-in resource" .) -}}
{{- end -}}
{{- end -}}
{{- $groups := .Values.groups -}}
{{- range .Values.crds -}}
{{- $p := splitn "." 2 . -}}
{{- if not (contains "." (default "" $p._1)) -}}
{{- fail (printf "crdversion-migrate: crds holds %q: name a CRD in full, <plural>.<group>, as kubectl get crd shows it" .) -}}
{{- end -}}
{{- if and $groups (not (has $p._1 $groups)) -}}
{{- fail (printf "crdversion-migrate: crds names %s, of group %s, which groups does not list" . $p._1) -}}
{{- end -}}
{{- end -}}
{{- end -}}
