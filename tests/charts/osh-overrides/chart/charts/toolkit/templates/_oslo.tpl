{{/*
An INI rendering of a nested map, in the style of helm-toolkit's toOslo:
sections in key order, a list value repeated once per item (MultiStringOpt),
a map value with a "type: multistring" marker expanded the same way.
*/}}
{{- define "toolkit.utils.to_oslo_conf" -}}
{{- range $section, $values := . -}}
{{- if kindIs "map" $values }}
[{{ $section }}]
{{- range $key, $value := $values -}}
{{- if kindIs "slice" $value }}
{{- range $item := $value }}
{{ $key }} = {{ $item }}
{{- end }}
{{- else if and (kindIs "map" $value) (eq (default "" $value.type) "multistring") }}
{{- range $item := $value.values }}
{{ $key }} = {{ $item }}
{{- end }}
{{- else if kindIs "map" $value }}
{{ $key }} = {{ include "toolkit.utils.joinmap" (tuple $value ",") }}
{{- else }}
{{ $key }} = {{ $value }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "toolkit.utils.joinmap" -}}
{{- $map := index . 0 -}}
{{- $sep := index . 1 -}}
{{- $parts := list -}}
{{- range $k, $v := $map -}}
{{- $parts = append $parts (printf "%s:%v" $k $v) -}}
{{- end -}}
{{- join $sep $parts -}}
{{- end -}}
