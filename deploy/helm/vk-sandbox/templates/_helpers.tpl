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

{{/* Never the namespace's "default" account by accident: an existing account is named. */}}
{{- define "vk-sandbox.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "vk-sandbox.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false (the existing account the daemon runs as)" .Values.serviceAccount.name -}}
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

{{/*
Where the sandboxd root token comes from: "hostFile", "secret" or "none" (sandboxd.token.source;
empty chooses "secret" when a Secret is named or a value given, "none" for allowOpen, else
"hostFile"). Contradictory settings fail the render, so no setting is silently ignored.
*/}}
{{- define "vk-sandbox.tokenSource" -}}
{{- $token := .Values.sandboxd.token -}}
{{- $source := $token.source | default (ternary "secret" (ternary "none" "hostFile" $token.allowOpen) (or (not (empty $token.existingSecret)) (not (empty $token.value)))) -}}
{{- if and $token.existingSecret $token.value -}}
{{- fail "sandboxd.token: set existingSecret or value, not both (the value would be ignored)" -}}
{{- end -}}
{{- if and (ne $source "secret") (or $token.existingSecret $token.value) -}}
{{- fail (printf "sandboxd.token: existingSecret and value are for source \"secret\", not %q" $source) -}}
{{- end -}}
{{- if and $token.allowOpen (ne $source "none") -}}
{{- fail (printf "sandboxd.token: allowOpen means source \"none\", not %q" $source) -}}
{{- end -}}
{{- if and (eq $source "secret") (not $token.existingSecret) (not $token.value) -}}
{{- fail "sandboxd.token: source \"secret\" needs existingSecret (a Secret holding the sandboxd root token) or value" -}}
{{- end -}}
{{- if and (eq $source "hostFile") (not .Values.prepareState.enabled) -}}
{{- fail "sandboxd.token: source \"hostFile\" needs prepareState.enabled (its init container copies the host's token file)" -}}
{{- end -}}
{{- $source -}}
{{- end -}}

{{/*
--node-name-map as host=node,host=node in a stable order; two hosts never share a name, and no
name is a listed host's own (that is the host kubelet's Node, and the policy would open it).
*/}}
{{- define "vk-sandbox.nodeNameMap" -}}
{{- $pairs := list -}}
{{- $seen := dict -}}
{{- $names := .Values.node.names | default dict -}}
{{- range $host, $node := $names -}}
{{- if hasKey $seen $node -}}
{{- fail (printf "node.names: hosts %s and %s both map to %s" (get $seen $node) $host $node) -}}
{{- end -}}
{{- if hasKey $names $node -}}
{{- fail (printf "node.names: host %s maps to %s, but %s is a host's name: a virtual node must not take a host's own Node" $host $node $node) -}}
{{- end -}}
{{- $_ := set $seen $node $host -}}
{{- $pairs = append $pairs (printf "%s=%s" $host $node) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{/*
Whole seconds, rounded up, of a duration in the daemon's own grammar (Go's time.ParseDuration):
an optional sign, then "0" or terms of a decimal number (1, 1.5, .5, 1.) and a unit (ns, us, µs,
μs, ms, s, m, h), e.g. 500ms, 1.5s, 1m30s, 2h45m0.5s. Used for terminationGracePeriodSeconds,
which must cover the daemon's shutdown bound; anything else, or a length of 0 or less, fails.
Sums in nanoseconds, where every term of a sane duration is an exact float64.
*/}}
{{- define "vk-sandbox.durationCeilSeconds" -}}
{{- $text := toString . -}}
{{- if not (regexMatch "^[+-]?(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$" $text) -}}
{{- fail (printf "shutdownTimeout %q is not a duration (want e.g. 10s, 1m30s, 500ms, 1.5s)" $text) -}}
{{- end -}}
{{- $nanosPerUnit := dict "ns" 1.0 "us" 1000.0 "µs" 1000.0 "μs" 1000.0 "ms" 1000000.0 "s" 1000000000.0 "m" 60000000000.0 "h" 3600000000000.0 -}}
{{- $total := 0.0 -}}
{{- range $term := regexFindAll "([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)" $text -1 -}}
{{- $number := regexFind "^([0-9]+(\\.[0-9]*)?|\\.[0-9]+)" $term -}}
{{- $unit := trimPrefix $number $term -}}
{{- $total = addf $total (mulf (float64 $number) (get $nanosPerUnit $unit)) -}}
{{- end -}}
{{- if or (hasPrefix "-" $text) (le $total 0.0) -}}
{{- fail (printf "shutdownTimeout %q must be greater than 0" $text) -}}
{{- end -}}
{{- ceil (divf $total 1000000000.0) | int -}}
{{- end -}}

{{/* The extraEnv entries that point the daemon at the apiserver (KUBERNETES_SERVICE_HOST/PORT), as YAML. */}}
{{- define "vk-sandbox.apiserverEnv" -}}
{{- $entries := list -}}
{{- range .Values.extraEnv -}}
{{- if has .name (list "KUBERNETES_SERVICE_HOST" "KUBERNETES_SERVICE_PORT") -}}
{{- $entries = append $entries . -}}
{{- end -}}
{{- end -}}
{{- if $entries -}}
{{- toYaml $entries -}}
{{- end -}}
{{- end -}}
