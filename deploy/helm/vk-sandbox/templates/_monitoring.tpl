{{/*
Monitoring: which Prometheus Operator kinds are rendered. Each needs its switch on AND the
cluster serving the kind (`.Capabilities`), so enabling one before the operator's CRDs exist
renders nothing instead of failing the install; NOTES.txt says what was skipped. `helm template`
knows no CRD unless given `--api-versions monitoring.coreos.com/v1/<Kind>`.
*/}}
{{- define "vk-sandbox.monitoring.serviceMonitor" -}}
{{- if and .Values.metrics.serviceMonitor.enabled (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor") -}}
true
{{- end -}}
{{- end -}}

{{- define "vk-sandbox.monitoring.podMonitor" -}}
{{- if and .Values.metrics.podMonitor.enabled (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/PodMonitor") -}}
true
{{- end -}}
{{- end -}}

{{- define "vk-sandbox.monitoring.prometheusRule" -}}
{{- if and .Values.metrics.prometheusRule.enabled (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/PrometheusRule") -}}
true
{{- end -}}
{{- end -}}

{{/*
The relabelings every scrape of the daemon gets: `node` is the host node the daemon's Pod runs on,
`job` is "vk-sandbox". The alerting rules, the dashboard and the runbooks read both.
*/}}
{{- define "vk-sandbox.monitoring.relabelings" -}}
- action: replace
  sourceLabels: [__meta_kubernetes_pod_node_name]
  targetLabel: node
- action: replace
  targetLabel: job
  replacement: vk-sandbox
{{- end -}}
