{{- define "mutation.jvmCompat" -}}
{{- if .Values.jvmMemory }}
{{- $_ := set .Values.jvm "heapSize" .Values.jvmMemory -}}
{{- end }}
{{- end }}
