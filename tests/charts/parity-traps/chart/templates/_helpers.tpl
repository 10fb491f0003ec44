{{- define "traps.greet" -}}
hello {{ . }}
{{- end -}}
