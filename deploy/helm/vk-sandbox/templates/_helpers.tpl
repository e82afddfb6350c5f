{{/* Chart name, truncated to 63 characters. */}}
{{- define "vk-sandbox.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: release-chart, unless overridden; truncated to 63 characters. */}}
{{- define "vk-sandbox.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "vk-sandbox.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels: name and instance only (a DaemonSet selector is immutable). */}}
{{- define "vk-sandbox.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vk-sandbox.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "vk-sandbox.labels" -}}
helm.sh/chart: {{ include "vk-sandbox.chart" . }}
{{ include "vk-sandbox.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: vk-sandbox
{{- end -}}

{{- define "vk-sandbox.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "vk-sandbox.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "vk-sandbox.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the sandboxd token, and whether the chart creates it. */}}
{{- define "vk-sandbox.tokenSecretName" -}}
{{- default (printf "%s-sandboxd-token" (include "vk-sandbox.fullname" .)) .Values.sandboxd.token.existingSecret -}}
{{- end -}}

{{- define "vk-sandbox.sandboxdUrl" -}}
{{- default (printf "http://127.0.0.1:%v" .Values.sandboxd.port) .Values.sandboxd.url -}}
{{- end -}}

{{/* --node-labels as k=v,k=v in a stable order. */}}
{{- define "vk-sandbox.nodeLabels" -}}
{{- $pairs := list -}}
{{- range $k, $v := .Values.node.labels -}}
{{- $pairs = append $pairs (printf "%s=%s" $k $v) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{/* Whole seconds of a Go duration made of s/m/h parts (e.g. 10s, 1m30s); used for grace periods. */}}
{{- define "vk-sandbox.durationSeconds" -}}
{{- $total := 0 -}}
{{- range $part := regexFindAll "[0-9]+[hms]" (toString .) -1 -}}
{{- $n := atoi (trimSuffix "h" (trimSuffix "m" (trimSuffix "s" $part))) -}}
{{- if hasSuffix "h" $part -}}{{- $total = add $total (mul $n 3600) -}}
{{- else if hasSuffix "m" $part -}}{{- $total = add $total (mul $n 60) -}}
{{- else -}}{{- $total = add $total $n -}}{{- end -}}
{{- end -}}
{{- $total -}}
{{- end -}}
