{{/*
Per-node DaemonSet overrides in the style of helm-toolkit's
daemonset_overrides_root: for each label or host override, a context
whose .Values.conf is the root conf overridden by the node's. The
contexts are kept by name in the map .Values.__daemonset_nodes. omit
makes a shallow copy of .Values that still holds that map, and storing
the node's context back into it makes the map contain itself (through
nodeData.Values.__daemonset_nodes): Go builds the cycle, and the
templates read through it but never print it.
Called with a tuple (daemonset name, template name, configmap template, context).
*/}}
{{- define "toolkit.utils.daemonset_overrides" -}}
{{- $daemonset := index . 0 -}}
{{- $template := index . 1 -}}
{{- $configmap := index . 2 -}}
{{- $context := index . 3 -}}
{{- $rootName := printf "%s_%s" $context.Chart.Name $daemonset -}}
{{- $_ := set $context.Values "__daemonset_nodes" dict -}}
{{- $_ := set $context.Values "__daemonset_order" list -}}
{{- $overrides := dig "overrides" $rootName dict $context.Values.conf -}}
{{- range $kind := list "labels" "hosts" -}}
{{- range $node := index $overrides $kind | default list -}}
{{- $name := printf "%s-%s" $daemonset ($node.name | default (sha256sum (toJson $node.label) | trunc 8)) -}}
{{- $current := dict "name" $name -}}
{{- $conf := mergeOverwrite (deepCopy (omit $context.Values.conf "overrides")) (deepCopy $node.conf) -}}
{{- $values := mergeOverwrite (omit $context.Values "conf") (dict "conf" $conf) -}}
{{- $_ := set $current "nodeData" (dict "Values" $values) -}}
{{- if $node.name -}}
{{- $_ := set $current "matchExpressions" (list (dict "key" "kubernetes.io/hostname" "operator" "In" "values" (list $node.name))) -}}
{{- else -}}
{{- $_ := set $current "matchExpressions" (list (dict "key" $node.label.key "operator" "In" "values" $node.label.values)) -}}
{{- end -}}
{{- $_ := set $context.Values.__daemonset_nodes $name $current -}}
{{- $_ := set $context.Values "__daemonset_order" (append $context.Values.__daemonset_order $name) -}}
{{- end -}}
{{- end -}}
{{- range $name := $context.Values.__daemonset_order -}}
{{- $current := index $context.Values.__daemonset_nodes $name -}}
{{- $withContext := mergeOverwrite (omit $context "Values") $current.nodeData -}}
{{- $_ := set $current "nodeData" $withContext -}}
{{- $_ := set $withContext "__name" $current.name }}
---
{{ include $configmap (tuple $current.name $withContext) }}
---
{{ include $template (tuple $current.name $current.matchExpressions $withContext) }}
{{- end -}}
{{- end -}}
