{{- define "compute.agent.configmap" -}}
{{- $name := index . 0 -}}
{{- $ctx := index . 1 -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $name }}-etc
  namespace: {{ $ctx.Release.Namespace }}
  annotations:
    # read through the node context, which holds itself
    nodes: {{ keys $ctx.Values.__daemonset_nodes | sortAlpha | join "," | quote }}
    same-node: {{ eq (index $ctx.Values.__daemonset_nodes $name).nodeData.__name $name | quote }}
    # toYaml of a map that contains itself is "" in Helm (encoding/json
    # finds the cycle and toYaml drops the error)
    values-yaml-bytes: {{ len (toYaml $ctx.Values) | quote }}
    conf-yaml-bytes: {{ len (toYaml $ctx.Values.conf) | quote }}
data:
  compute.conf: |
{{ include "toolkit.utils.to_oslo_conf" $ctx.Values.conf.compute | trim | indent 4 }}
{{- end -}}

{{- define "compute.agent.daemonset" -}}
{{- $name := index . 0 -}}
{{- $match := index . 1 -}}
{{- $ctx := index . 2 -}}
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ $name }}
  namespace: {{ $ctx.Release.Namespace }}
  labels:
    release_group: {{ $ctx.Release.Name }}
    application: compute
    component: agent
spec:
  selector:
    matchLabels:
      application: compute
      component: agent
      instance: {{ $name }}
  template:
    metadata:
      labels:
        application: compute
        component: agent
        instance: {{ $name }}
      annotations:
        configmap-etc-hash: {{ include "toolkit.utils.to_oslo_conf" $ctx.Values.conf.compute | sha256sum }}
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
{{ toYaml $match | indent 18 }}
      nodeSelector:
        {{ $ctx.Values.labels.agent.node_selector_key }}: {{ $ctx.Values.labels.agent.node_selector_value }}
      initContainers:
        - name: init
          image: {{ $ctx.Values.images.tags.entrypoint }}
          env:
{{ tuple "agent" $ctx | include "toolkit.dependencies.for" | indent 12 }}
      containers:
        - name: compute-agent
          image: {{ $ctx.Values.images.tags.compute }}
          imagePullPolicy: {{ $ctx.Values.images.pull_policy }}
          env:
            - name: MY_IP
              value: {{ $ctx.Values.conf.compute.DEFAULT.my_ip | quote }}
            - name: CPU_MODE
              value: {{ $ctx.Values.conf.compute.libvirt.cpu_mode | quote }}
          volumeMounts:
            - name: etc
              mountPath: /etc/compute/compute.conf
              subPath: compute.conf
      volumes:
        - name: etc
          configMap:
            name: {{ $name }}-etc
{{- end -}}

{{- define "compute.read-self" -}}
{{ .self.k }}/{{ .copy.self.self.k }}
{{- end -}}
