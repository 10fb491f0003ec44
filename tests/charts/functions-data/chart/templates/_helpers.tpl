{{- define "data.name" -}}
{{ .Chart.Name }}-{{ .Values.config.name }}
{{- end -}}
