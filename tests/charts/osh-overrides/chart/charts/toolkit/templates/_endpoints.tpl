{{/*
Endpoint lookups in the style of helm-toolkit: called with a tuple
(type, endpoint class, port name, context).
*/}}
{{- define "toolkit.endpoints.hostname_short" -}}
{{- $type := index . 0 -}}
{{- $context := index . 2 -}}
{{- $entry := index $context.Values.endpoints ($type | replace "-" "_") -}}
{{- $endpoint := index . 1 -}}
{{- $host := index $entry.hosts $endpoint | default (index $entry.hosts "default") -}}
{{- if kindIs "map" $host -}}{{- $host.host -}}{{- else -}}{{- $host -}}{{- end -}}
{{- end -}}

{{- define "toolkit.endpoints.namespace" -}}
{{- $type := index . 0 -}}
{{- $context := index . 1 -}}
{{- $entry := index $context.Values.endpoints ($type | replace "-" "_") -}}
{{- $entry.namespace | default $context.Release.Namespace -}}
{{- end -}}

{{- define "toolkit.endpoints.fqdn" -}}
{{- $type := index . 0 -}}
{{- $endpoint := index . 1 -}}
{{- $context := index . 2 -}}
{{- $host := tuple $type $endpoint $context | include "toolkit.endpoints.hostname_short" -}}
{{- $ns := tuple $type $context | include "toolkit.endpoints.namespace" -}}
{{- printf "%s.%s.svc.%s" $host $ns $context.Values.endpoints.cluster_domain_suffix -}}
{{- end -}}

{{- define "toolkit.endpoints.uri" -}}
{{- $type := index . 0 -}}
{{- $endpoint := index . 1 -}}
{{- $port := index . 2 -}}
{{- $context := index . 3 -}}
{{- $entry := index $context.Values.endpoints ($type | replace "-" "_") -}}
{{- $scheme := dig "scheme" $endpoint (dig "scheme" "default" "http" $entry) $entry -}}
{{- $path := dig "path" $endpoint (dig "path" "default" "" $entry) $entry -}}
{{- $portNumber := dig "port" $port $endpoint "" $entry | default (dig "port" $port "default" 80 $entry) -}}
{{- $fqdn := tuple $type $endpoint $context | include "toolkit.endpoints.fqdn" -}}
{{- printf "%s://%s:%v%s" $scheme $fqdn $portNumber $path -}}
{{- end -}}

{{- define "toolkit.endpoints.auth_url" -}}
{{- $context := index . 1 -}}
{{- $user := index $context.Values.endpoints.identity.auth (index . 0) -}}
{{- $uri := tuple "identity" "internal" "api" $context | include "toolkit.endpoints.uri" -}}
{{- dict "auth_url" $uri "username" $user.username "project_name" $user.project_name "region_name" $user.region_name | toYaml -}}
{{- end -}}
