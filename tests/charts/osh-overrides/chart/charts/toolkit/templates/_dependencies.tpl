{{/*
Init-container dependencies in the style of helm-toolkit's
kubernetes_entrypoint: .Values.dependencies.static.<component>, plus the
dynamic ones that are switched on.
*/}}
{{- define "toolkit.dependencies.for" -}}
{{- $component := index . 0 -}}
{{- $context := index . 1 -}}
{{- $deps := index $context.Values.dependencies.static $component | default dict -}}
{{- $deps = deepCopy $deps -}}
{{- range $name, $dyn := $context.Values.dependencies.dynamic -}}
{{- if $dyn.enabled -}}
{{- $deps = mergeOverwrite $deps (omit $dyn "enabled") -}}
{{- end -}}
{{- end -}}
{{- $services := list -}}
{{- range $svc := $deps.services | default list -}}
{{- $ns := tuple $svc.endpoint $context | include "toolkit.endpoints.namespace" -}}
{{- $services = append $services (printf "%s:%s" $ns (tuple $svc.service "internal" $context | include "toolkit.endpoints.hostname_short")) -}}
{{- end }}
- name: DEPENDENCY_SERVICE
  value: {{ join "," $services | quote }}
- name: DEPENDENCY_JOBS
  value: {{ join "," ($deps.jobs | default list) | quote }}
- name: DEPENDENCY_POD_JSON
  value: {{ toJson ($deps.pod | default list) | quote }}
{{- end -}}
