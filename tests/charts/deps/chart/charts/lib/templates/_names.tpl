{{- define "lib.name" -}}
{{ .Release.Name }}-{{ .Chart.Name }}-lib
{{- end -}}
