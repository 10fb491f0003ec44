//! Rendering speed: charts of N templates, each using includes from a
//! `_helpers.tpl` of 30 defines, rendered end to end (dependencies, values,
//! parse, execute, sort). Time should grow linearly with N; the target is a
//! median under 2 ms for N = 100 (issue 14).
//!
//! `render_chart` renders the same loaded chart in every iteration, as the
//! daemon does: its templates are parsed on the first render and the
//! renderer reuses the parsed set after that. `render_chart_first` measures
//! a render that has to parse: it goes round more distinct charts than the
//! renderer keeps parsed.
//!
//! `render_real_world` renders charts shaped like public ones (written for
//! this bench, not copied):
//! - `library-app`: an app chart on a Bitnami-style `common` library
//!   subchart (names, labels, images, `tplvalues.render` through `tpl`,
//!   capabilities, merged affinities), with a Deployment, Service, Ingress,
//!   ConfigMap, Secret, ServiceAccount, PDB, HPA and NetworkPolicy, and a
//!   values file of a few hundred keys;
//! - `aliased-deps`: the same app with four aliased copies of one cache
//!   subchart and a library under each, as charts alias `memcached`;
//! - `deep-includes`: 40 templates each at the end of a 25-deep chain of
//!   `include`s, each level adding labels through `dict`/`merge`;
//! - `large-values`: 3,000 values entries walked with `range`, `toYaml`,
//!   `dig` and `sha256sum` into ConfigMaps.
//!
//! `render_osh_nodes` renders the OpenStack-Helm-style fixture
//! `tests/charts/osh-overrides` (a helm-toolkit-like library with per-node
//! DaemonSet overrides whose contexts contain themselves, issue 27) with
//! host overrides for 50 nodes. In the same run, when a Helm 4 binary is
//! found (`CAPSTAN_HELM`, else `<target dir>/cluster/bin/helm`), it times
//! `helm template` of the same chart and values (20 runs, median, printed
//! after the bench) and, as its floor, `helm template` of a one-template
//! chart: Helm's time includes starting its process, capstan's does not.

/// The binary's allocator, so that the bench measures what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;

use std::sync::Arc;

use capstan::render::chart::{Chart, ChartFile, Dependency};
use capstan::render::{self, Capabilities, ReleaseInfo};
use capstan::values::{Map, Value};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

/// Defines in `_helpers.tpl`.
const DEFINES: usize = 30;
/// Includes per template.
const INCLUDES_PER_TEMPLATE: usize = 10;

fn helpers() -> String {
    let mut out = String::new();
    for i in 0..DEFINES {
        out.push_str(&format!(
            "{{{{- define \"bench.d{i}\" -}}}}\napp.kubernetes.io/part-{i}: {{{{ .Chart.Name }}}}\nhelm.sh/chart: {{{{ printf \"%s-%s\" .Chart.Name .Chart.Version | trunc 63 | trimSuffix \"-\" }}}}\n{{{{- end -}}}}\n"
        ));
    }
    out
}

fn template(t: usize) -> String {
    let mut body = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Release.Name }}}}-{t}\n  labels:\n"
    );
    for k in 0..INCLUDES_PER_TEMPLATE {
        let i = (t + k * 7) % DEFINES;
        body.push_str(&format!(
            "    {{{{- include \"bench.d{i}\" . | nindent 4 }}}}\n"
        ));
    }
    body.push_str("data:\n  {{- range $k, $v := .Values.data }}\n  {{ $k }}: {{ $v | quote }}\n  {{- end }}\n");
    body
}

/// Distinct charts `render_chart_first` goes round (more than the renderer
/// keeps parsed, so that every render parses).
const FIRST_RENDER_CHARTS: usize = 12;

fn chart(n: usize) -> Chart {
    let mut templates = vec![ChartFile {
        name: "templates/_helpers.tpl".into(),
        data: Arc::from(helpers().into_bytes()),
    }];
    for t in 0..n {
        templates.push(ChartFile {
            name: format!("templates/t{t}.yaml"),
            data: Arc::from(template(t).into_bytes()),
        });
    }
    let mut metadata = Map::new();
    metadata.insert("apiVersion".into(), "v2".into());
    metadata.insert("name".into(), "bench".into());
    metadata.insert("version".into(), "1.0.0".into());
    let data: Map = (0..10)
        .map(|i| (format!("key{i}"), Value::String(format!("value{i}"))))
        .collect();
    let mut values = Map::new();
    values.insert("data".into(), Value::Map(data));
    Chart {
        metadata,
        dependencies: Vec::new(),
        values,
        schema: None,
        templates,
        files: Vec::new(),
        subcharts: Vec::new(),
    }
}

fn file(name: &str, text: impl Into<String>) -> ChartFile {
    ChartFile {
        name: name.into(),
        data: Arc::from(text.into().into_bytes()),
    }
}

fn metadata(name: &str, kind: &str) -> Map {
    let mut m = Map::new();
    m.insert("apiVersion".into(), "v2".into());
    m.insert("name".into(), name.into());
    m.insert("version".into(), "2.4.1".into());
    m.insert("appVersion".into(), "1.27.3".into());
    if !kind.is_empty() {
        m.insert("type".into(), kind.into());
    }
    m
}

fn yaml_map(text: &str) -> Map {
    match capstan::values::parse_yaml(text) {
        Ok(Value::Map(m)) => m,
        _ => Map::new(),
    }
}

fn dependency(name: &str, alias: &str, condition: &str) -> Dependency {
    Dependency {
        name: name.into(),
        version: "2.x.x".into(),
        repository: "file://../x".into(),
        condition: condition.into(),
        tags: Vec::new(),
        alias: alias.into(),
        import_values: Vec::new(),
    }
}

/// A Bitnami-style library: names, labels, images, tplvalues, capabilities,
/// affinities; helpers call helpers several levels deep.
const COMMON_HELPERS: &str = r#"
{{- define "common.names.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- define "common.names.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- define "common.names.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- define "common.names.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- define "common.tplvalues.render" -}}
{{- $value := typeIs "string" .value | ternary .value (.value | toYaml) }}
{{- if contains "{{" (toJson .value) }}
  {{- if .scope }}
      {{- tpl (cat "{{- with $.RelativeScope -}}" $value "{{- end }}") (merge (dict "RelativeScope" .scope) .context) }}
  {{- else }}
    {{- tpl $value .context }}
  {{- end }}
{{- else }}
    {{- $value }}
{{- end }}
{{- end -}}
{{- define "common.tplvalues.merge" -}}
{{- $dst := dict -}}
{{- range .values -}}
{{- $dst = include "common.tplvalues.render" (dict "value" . "context" $.context "scope" $.scope) | fromYaml | merge $dst -}}
{{- end -}}
{{ $dst | toYaml }}
{{- end -}}
{{- define "common.labels.standard" -}}
{{- if and (hasKey . "customLabels") (hasKey . "context") -}}
{{- $default := dict "app.kubernetes.io/name" (include "common.names.name" .context) "helm.sh/chart" (include "common.names.chart" .context) "app.kubernetes.io/instance" .context.Release.Name "app.kubernetes.io/managed-by" .context.Release.Service -}}
{{- with .context.Chart.AppVersion -}}
{{- $_ := set $default "app.kubernetes.io/version" . -}}
{{- end -}}
{{ template "common.tplvalues.merge" (dict "values" (list .customLabels $default) "context" .context) }}
{{- else -}}
app.kubernetes.io/name: {{ include "common.names.name" . }}
helm.sh/chart: {{ include "common.names.chart" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}
{{- end -}}
{{- define "common.labels.matchLabels" -}}
{{- if and (hasKey . "customLabels") (hasKey . "context") -}}
{{ merge (pick (include "common.tplvalues.render" (dict "value" .customLabels "context" .context) | fromYaml) "app.kubernetes.io/name" "app.kubernetes.io/instance") (dict "app.kubernetes.io/name" (include "common.names.name" .context) "app.kubernetes.io/instance" .context.Release.Name) | toYaml }}
{{- else -}}
app.kubernetes.io/name: {{ include "common.names.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- end -}}
{{- define "common.images.image" -}}
{{- $registryName := default .imageRoot.registry ((.global).imageRegistry) -}}
{{- $repositoryName := .imageRoot.repository -}}
{{- $separator := ":" -}}
{{- $termination := .imageRoot.tag | toString -}}
{{- if .imageRoot.digest }}
    {{- $separator = "@" -}}
    {{- $termination = .imageRoot.digest | toString -}}
{{- end -}}
{{- if $registryName }}
    {{- printf "%s/%s%s%s" $registryName $repositoryName $separator $termination -}}
{{- else -}}
    {{- printf "%s%s%s"  $repositoryName $separator $termination -}}
{{- end -}}
{{- end -}}
{{- define "common.images.pullSecrets" -}}
{{- $pullSecrets := list }}
{{- range ((.global).imagePullSecrets) -}}
  {{- $pullSecrets = append $pullSecrets (dict "name" .) -}}
{{- end -}}
{{- range .images -}}
  {{- range .pullSecrets -}}
    {{- $pullSecrets = append $pullSecrets (dict "name" .) -}}
  {{- end -}}
{{- end -}}
{{- if (not (empty $pullSecrets)) }}
imagePullSecrets:
{{ toYaml (uniq $pullSecrets) | indent 2 }}
{{- end }}
{{- end -}}
{{- define "common.capabilities.kubeVersion" -}}
{{- default .Capabilities.KubeVersion.Version ((.Values.global).kubeVersion) -}}
{{- end -}}
{{- define "common.capabilities.apiVersions.has" -}}
{{- $providedAPIVersions := default .context.Values.apiVersions ((.context.Values.global).apiVersions) -}}
{{- if or (.context.Capabilities.APIVersions.Has .version) (has .version $providedAPIVersions) -}}
true
{{- end -}}
{{- end -}}
{{- define "common.capabilities.policy.apiVersion" -}}
{{- if semverCompare "<1.21-0" (include "common.capabilities.kubeVersion" .) -}}
{{- print "policy/v1beta1" -}}
{{- else -}}
{{- print "policy/v1" -}}
{{- end -}}
{{- end -}}
{{- define "common.affinities.nodes.soft" -}}
preferredDuringSchedulingIgnoredDuringExecution:
  - preference:
      matchExpressions:
        - key: {{ .key }}
          operator: In
          values:
            {{- range .values }}
            - {{ . | quote }}
            {{- end }}
    weight: 1
{{- end -}}
{{- define "common.affinities.pods.soft" -}}
{{- $component := default "" .component -}}
{{- $customLabels := default (dict) .customLabels -}}
preferredDuringSchedulingIgnoredDuringExecution:
  - podAffinityTerm:
      labelSelector:
        matchLabels: {{- (include "common.labels.matchLabels" ( dict "customLabels" $customLabels "context" .context )) | nindent 10 }}
          {{- if not (empty $component) }}
          app.kubernetes.io/component: {{ $component }}
          {{- end }}
      topologyKey: kubernetes.io/hostname
    weight: 1
{{- end -}}
{{- define "common.secrets.key" -}}
{{- $key := .key -}}
{{- if .existingSecret -}}
  {{- if not (typeIs "string" .existingSecret) -}}
    {{- if .existingSecret.keyMapping -}}
      {{- $key = index .existingSecret.keyMapping $.key -}}
    {{- end -}}
  {{- end }}
{{- end -}}
{{- printf "%s" $key -}}
{{- end -}}
"#;

fn common_chart() -> Chart {
    Chart {
        metadata: metadata("common", "library"),
        dependencies: Vec::new(),
        values: Map::new(),
        schema: None,
        templates: vec![file("templates/_helpers.tpl", COMMON_HELPERS)],
        files: Vec::new(),
        subcharts: Vec::new(),
    }
}

/// The app's templates, each leaning on the library as real charts do.
fn app_templates() -> Vec<ChartFile> {
    let header = |kind: &str, api: &str, suffix: &str| {
        format!(
            "apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {{{{ include \"common.names.fullname\" . }}}}{suffix}\n  namespace: {{{{ include \"common.names.namespace\" . | quote }}}}\n  labels: {{{{- include \"common.labels.standard\" ( dict \"customLabels\" .Values.commonLabels \"context\" $ ) | nindent 4 }}}}\n    app.kubernetes.io/component: app\n  {{{{- if .Values.commonAnnotations }}}}\n  annotations: {{{{- include \"common.tplvalues.render\" ( dict \"value\" .Values.commonAnnotations \"context\" $ ) | nindent 4 }}}}\n  {{{{- end }}}}\n"
        )
    };
    let selector = "  selector:\n    matchLabels: {{- include \"common.labels.matchLabels\" ( dict \"customLabels\" .Values.podLabels \"context\" $ ) | nindent 6 }}\n      app.kubernetes.io/component: app\n";
    let deployment = format!(
        "{}spec:\n  replicas: {{{{ .Values.replicaCount }}}}\n{selector}  template:\n    metadata:\n      labels: {{{{- include \"common.labels.standard\" ( dict \"customLabels\" .Values.podLabels \"context\" $ ) | nindent 8 }}}}\n      annotations:\n        checksum/config: {{{{ include (print $.Template.BasePath \"/configmap.yaml\") . | sha256sum }}}}\n    spec:\n      {{{{- include \"common.images.pullSecrets\" (dict \"images\" (list .Values.image) \"global\" .Values.global) | nindent 6 }}}}\n      serviceAccountName: {{{{ include \"common.names.fullname\" . }}}}\n      affinity:\n        podAntiAffinity: {{{{- include \"common.affinities.pods.soft\" (dict \"component\" \"app\" \"customLabels\" .Values.podLabels \"context\" $) | nindent 10 }}}}\n        nodeAffinity: {{{{- include \"common.affinities.nodes.soft\" (dict \"key\" .Values.nodeAffinityPreset.key \"values\" .Values.nodeAffinityPreset.values) | nindent 10 }}}}\n      containers:\n        - name: app\n          image: {{{{ include \"common.images.image\" (dict \"imageRoot\" .Values.image \"global\" .Values.global) }}}}\n          {{{{- if .Values.args }}}}\n          args: {{{{- include \"common.tplvalues.render\" (dict \"value\" .Values.args \"context\" $) | nindent 12 }}}}\n          {{{{- end }}}}\n          env:\n            {{{{- range $k, $v := .Values.env }}}}\n            - name: {{{{ $k | upper | replace \".\" \"_\" }}}}\n              value: {{{{ tpl (toString $v) $ | quote }}}}\n            {{{{- end }}}}\n            - name: PASSWORD_KEY\n              value: {{{{ include \"common.secrets.key\" (dict \"existingSecret\" .Values.existingSecret \"key\" \"password\") }}}}\n          ports:\n            {{{{- range .Values.ports }}}}\n            - name: {{{{ .name }}}}\n              containerPort: {{{{ .port }}}}\n            {{{{- end }}}}\n          resources: {{{{- toYaml .Values.resources | nindent 12 }}}}\n          {{{{- with .Values.extraVolumeMounts }}}}\n          volumeMounts: {{{{- include \"common.tplvalues.render\" (dict \"value\" . \"context\" $) | nindent 12 }}}}\n          {{{{- end }}}}\n",
        header("Deployment", "apps/v1", "")
    );
    let service = format!(
        "{}spec:\n  type: {{{{ .Values.service.type }}}}\n  ports:\n    {{{{- range .Values.ports }}}}\n    - name: {{{{ .name }}}}\n      port: {{{{ .port }}}}\n      targetPort: {{{{ .name }}}}\n    {{{{- end }}}}\n  selector: {{{{- include \"common.labels.matchLabels\" ( dict \"customLabels\" .Values.podLabels \"context\" $ ) | nindent 4 }}}}\n",
        header("Service", "v1", "")
    );
    let ingress = format!(
        "{{{{- if .Values.ingress.enabled }}}}\n{}spec:\n  rules:\n    {{{{- range .Values.ingress.hosts }}}}\n    - host: {{{{ tpl .name $ }}}}\n      http:\n        paths:\n          {{{{- range .paths }}}}\n          - path: {{{{ . }}}}\n            pathType: Prefix\n            backend:\n              service:\n                name: {{{{ include \"common.names.fullname\" $ }}}}\n                port:\n                  name: http\n          {{{{- end }}}}\n    {{{{- end }}}}\n{{{{- end }}}}\n",
        header("Ingress", "networking.k8s.io/v1", "")
    );
    let configmap = format!(
        "{}data:\n  {{{{- range $k, $v := .Values.config }}}}\n  {{{{ $k }}}}: {{{{ include \"common.tplvalues.render\" (dict \"value\" $v \"context\" $) | quote }}}}\n  {{{{- end }}}}\n",
        header("ConfigMap", "v1", "-config")
    );
    let secret = format!(
        "{}type: Opaque\ndata:\n  password: {{{{ .Values.password | default \"fixed\" | b64enc | quote }}}}\n",
        header("Secret", "v1", "")
    );
    let sa = header("ServiceAccount", "v1", "");
    let pdb = format!(
        "{{{{- $api := include \"common.capabilities.policy.apiVersion\" . }}}}\n{}spec:\n  maxUnavailable: 1\n{selector}",
        header("PodDisruptionBudget", "policy/v1", "")
    );
    let hpa = format!(
        "{}spec:\n  minReplicas: {{{{ .Values.autoscaling.min }}}}\n  maxReplicas: {{{{ .Values.autoscaling.max }}}}\n  metrics:\n    {{{{- if include \"common.capabilities.apiVersions.has\" (dict \"version\" \"autoscaling/v2\" \"context\" $) }}}}\n    - type: Resource\n      resource:\n        name: cpu\n        target:\n          type: Utilization\n          averageUtilization: {{{{ .Values.autoscaling.cpu }}}}\n    {{{{- end }}}}\n",
        header("HorizontalPodAutoscaler", "autoscaling/v2", "")
    );
    let netpol = format!(
        "{}spec:\n  podSelector:\n    matchLabels: {{{{- include \"common.labels.matchLabels\" ( dict \"customLabels\" .Values.podLabels \"context\" $ ) | nindent 6 }}}}\n  ingress:\n    {{{{- range .Values.networkPolicy.allowed }}}}\n    - from:\n        - namespaceSelector:\n            matchLabels:\n              kubernetes.io/metadata.name: {{{{ . }}}}\n    {{{{- end }}}}\n",
        header("NetworkPolicy", "networking.k8s.io/v1", "")
    );
    vec![
        file(
            "templates/_app.tpl",
            "{{- define \"app.unused\" -}}{{ include \"common.names.fullname\" . }}{{- end -}}\n",
        ),
        file("templates/deployment.yaml", deployment),
        file("templates/service.yaml", service),
        file("templates/ingress.yaml", ingress),
        file("templates/configmap.yaml", configmap),
        file("templates/secret.yaml", secret),
        file("templates/serviceaccount.yaml", sa),
        file("templates/pdb.yaml", pdb),
        file("templates/hpa.yaml", hpa),
        file("templates/networkpolicy.yaml", netpol),
    ]
}

/// A values file of a few hundred keys, shaped like a public chart's.
fn app_values() -> Map {
    let mut text = String::from(
        "global:\n  imageRegistry: \"\"\n  imagePullSecrets: [regcred]\nnameOverride: \"\"\nfullnameOverride: \"\"\ncommonLabels:\n  team: platform\n  tier: \"{{ .Release.Namespace }}\"\ncommonAnnotations:\n  owner: \"{{ .Release.Name }}\"\npodLabels:\n  app.kubernetes.io/part-of: shop\nreplicaCount: 2\nimage:\n  registry: docker.io\n  repository: example/app\n  tag: 1.27.3\n  digest: \"\"\n  pullSecrets: [other]\nargs:\n  - --port=8080\n  - --name={{ .Release.Name }}\nexistingSecret:\n  name: creds\n  keyMapping:\n    password: db-password\nnodeAffinityPreset:\n  key: kubernetes.io/arch\n  values: [amd64, arm64]\nservice:\n  type: ClusterIP\ningress:\n  enabled: true\n  hosts:\n",
    );
    for h in 0..8 {
        text.push_str(&format!(
            "    - name: \"h{h}.{{{{ .Release.Namespace }}}}.example.com\"\n      paths: [/, /api, /static]\n"
        ));
    }
    text.push_str("autoscaling:\n  min: 2\n  max: 10\n  cpu: 70\nnetworkPolicy:\n  allowed: [ingress, monitoring, apps]\nresources:\n  requests:\n    cpu: 100m\n    memory: 128Mi\n  limits:\n    cpu: \"1\"\n    memory: 512Mi\nextraVolumeMounts:\n  - name: data\n    mountPath: /data\nports:\n");
    for p in 0..6 {
        text.push_str(&format!("  - name: p{p}\n    port: {}\n", 8080 + p));
    }
    text.push_str("env:\n");
    for e in 0..60 {
        text.push_str(&format!(
            "  app.setting{e}: \"v{e}-{{{{ .Release.Name }}}}\"\n"
        ));
    }
    text.push_str("config:\n");
    for c in 0..120 {
        if c % 4 == 0 {
            text.push_str(&format!("  key{c}: \"{{{{ .Release.Name }}}}-{c}\"\n"));
        } else {
            text.push_str(&format!("  key{c}: plain-value-{c}\n"));
        }
    }
    text.push_str("extra:\n");
    for x in 0..150 {
        text.push_str(&format!(
            "  section{x}:\n    enabled: true\n    size: {x}\n    tags: [a, b, c]\n"
        ));
    }
    yaml_map(&text)
}

fn library_app() -> Chart {
    Chart {
        metadata: metadata("shop", ""),
        dependencies: vec![dependency("common", "", "")],
        values: app_values(),
        schema: None,
        templates: app_templates(),
        files: Vec::new(),
        subcharts: vec![common_chart()],
    }
}

/// `library-app` plus four aliased copies of one cache chart (one copy
/// vendored), each with the library under it.
fn aliased_deps() -> Chart {
    let cache_templates = vec![
        file(
            "templates/statefulset.yaml",
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: {{ include \"common.names.fullname\" . }}\n  labels: {{- include \"common.labels.standard\" (dict \"customLabels\" .Values.commonLabels \"context\" $) | nindent 4 }}\nspec:\n  replicas: {{ .Values.replicaCount }}\n  template:\n    spec:\n      containers:\n        - name: cache\n          image: {{ include \"common.images.image\" (dict \"imageRoot\" .Values.image \"global\" .Values.global) }}\n          args: {{- toYaml .Values.args | nindent 12 }}\n",
        ),
        file(
            "templates/service.yaml",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ include \"common.names.fullname\" . }}\n  labels: {{- include \"common.labels.standard\" (dict \"customLabels\" .Values.commonLabels \"context\" $) | nindent 4 }}\nspec:\n  ports:\n    - port: 11211\n  selector: {{- include \"common.labels.matchLabels\" (dict \"customLabels\" .Values.commonLabels \"context\" $) | nindent 4 }}\n",
        ),
    ];
    let cache = Chart {
        metadata: metadata("cache", ""),
        dependencies: vec![dependency("common", "", "")],
        values: yaml_map(
            "replicaCount: 1\ncommonLabels: {}\nimage:\n  registry: docker.io\n  repository: example/cache\n  tag: 1.6.0\nargs: [-m, \"64\"]\n",
        ),
        schema: None,
        templates: cache_templates,
        files: Vec::new(),
        subcharts: vec![common_chart()],
    };
    let mut chart = library_app();
    for alias in [
        "cachechunks",
        "cachefrontend",
        "cacheindexreads",
        "cacheindexwrites",
    ] {
        chart
            .dependencies
            .push(dependency("cache", alias, &format!("{alias}.enabled")));
        chart.values.insert(
            alias.into(),
            Value::Map(yaml_map("enabled: true\nreplicaCount: 2\n")),
        );
    }
    chart.subcharts.push(cache);
    chart
}

/// Links in each `include` chain of `deep-includes`.
const CHAIN_DEPTH: usize = 25;

fn deep_includes() -> Chart {
    let mut helpers = String::new();
    for d in 0..CHAIN_DEPTH {
        let next = if d + 1 < CHAIN_DEPTH {
            format!(
                "{{{{- include \"deep.l{}\" (dict \"root\" .root \"labels\" (merge (dict \"level{d}\" (printf \"%s-%d\" .root.Release.Name {d})) .labels)) -}}}}",
                d + 1
            )
        } else {
            "{{- toYaml .labels -}}".to_string()
        };
        helpers.push_str(&format!(
            "{{{{- define \"deep.l{d}\" -}}}}\n{next}\n{{{{- end -}}}}\n"
        ));
    }
    let mut templates = vec![file("templates/_chain.tpl", helpers)];
    for t in 0..40 {
        templates.push(file(
            &format!("templates/cm{t}.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Release.Name }}}}-{t}\n  labels: {{{{- include \"deep.l0\" (dict \"root\" $ \"labels\" (dict \"t\" \"{t}\")) | nindent 4 }}}}\n"
            ),
        ));
    }
    Chart {
        metadata: metadata("deep", ""),
        dependencies: Vec::new(),
        values: Map::new(),
        schema: None,
        templates,
        files: Vec::new(),
        subcharts: Vec::new(),
    }
}

/// Entries in `large-values`.
const LARGE_ENTRIES: usize = 3000;

fn large_values() -> Chart {
    let mut text = String::from("services:\n");
    for i in 0..LARGE_ENTRIES {
        text.push_str(&format!(
            "  svc{i:04}:\n    port: {}\n    enabled: {}\n    env: {{LOG: info, ID: \"{i}\"}}\n    hosts: [a{i}.example.com, b{i}.example.com]\n",
            1000 + i,
            i % 3 != 0
        ));
    }
    let templates = vec![
        file(
            "templates/services.yaml",
            "{{- range $name, $svc := .Values.services }}\n{{- if $svc.enabled }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ $.Release.Name }}-{{ $name }}\n  annotations:\n    checksum: {{ toYaml $svc | sha256sum | trunc 16 }}\ndata:\n  port: {{ $svc.port | quote }}\n  log: {{ dig \"env\" \"LOG\" \"warn\" $svc | quote }}\n  hosts: {{ join \",\" $svc.hosts | quote }}\n{{- end }}\n{{- end }}\n",
        ),
        file(
            "templates/all.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-all\ndata:\n  all.yaml: |\n    {{- toYaml .Values.services | nindent 4 }}\n",
        ),
    ];
    Chart {
        metadata: metadata("large", ""),
        dependencies: Vec::new(),
        values: yaml_map(&text),
        schema: None,
        templates,
        files: Vec::new(),
        subcharts: Vec::new(),
    }
}

fn bench_real_world(c: &mut Criterion) {
    let release = ReleaseInfo {
        name: "shop".into(),
        namespace: "apps".into(),
        revision: 1,
        is_upgrade: false,
    };
    let caps = Capabilities::default();
    let mut group = c.benchmark_group("render_real_world");
    let charts = [
        ("library-app", library_app()),
        ("aliased-deps", aliased_deps()),
        ("deep-includes", deep_includes()),
        ("large-values", large_values()),
    ];
    for (name, chart) in &charts {
        group.bench_with_input(BenchmarkId::from_parameter(name), chart, |b, chart| {
            // A chart that no longer renders must fail the bench, not time
            // an error. Checked here, so that only a selected bench renders.
            if let Err(e) = render::render(chart, &Map::new(), &release, &caps) {
                panic!("{name} does not render: {e}");
            }
            b.iter(|| render::render(black_box(chart), &Map::new(), &release, &caps));
        });
    }
    group.finish();
}

fn bench_render(c: &mut Criterion) {
    let release = ReleaseInfo {
        name: "bench".into(),
        namespace: "default".into(),
        revision: 1,
        is_upgrade: false,
    };
    let caps = Capabilities::default();
    let mut group = c.benchmark_group("render_chart");
    for n in [25usize, 50, 100, 200] {
        let chart = chart(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &chart, |b, chart| {
            b.iter(|| render::render(black_box(chart), &Map::new(), &release, &caps));
        });
    }
    group.finish();
    let mut first = c.benchmark_group("render_chart_first");
    let n = 100;
    let charts: Vec<Chart> = (0..FIRST_RENDER_CHARTS)
        .map(|variant| {
            let mut chart = chart(n);
            // A comment makes each chart's templates different bytes.
            let comment = format!("{{{{/* variant {variant} */}}}}");
            chart.templates[1].data = Arc::from(
                [comment.as_bytes(), &chart.templates[1].data]
                    .concat()
                    .into_boxed_slice(),
            );
            chart
        })
        .collect();
    first.bench_with_input(BenchmarkId::from_parameter(n), &charts, |b, charts| {
        let mut next = charts.iter().cycle();
        b.iter(|| {
            let chart = next.next().unwrap_or(&charts[0]);
            render::render(black_box(chart), &Map::new(), &release, &caps)
        });
    });
    first.finish();
}

/// Nodes with a host override in `render_osh_nodes`.
const OSH_NODES: usize = 50;

/// Values giving each of [`OSH_NODES`] nodes its own override, as YAML
/// (Helm reads the same text from a file).
fn osh_node_values() -> String {
    let mut out =
        String::from("conf:\n  overrides:\n    compute_agent:\n      labels: []\n      hosts:\n");
    for i in 0..OSH_NODES {
        out.push_str(&format!(
            "        - name: node-{i}\n          conf:\n            compute:\n              DEFAULT:\n                my_ip: 10.0.{}.{}\n              libvirt:\n                cpu_mode: {}\n",
            i / 250,
            i % 250 + 1,
            if i % 2 == 0 { "host-model" } else { "host-passthrough" }
        ));
    }
    out
}

/// The median of `runs` runs of `helm template` with `args`.
fn helm_median(
    helm: &std::path::Path,
    args: &[&std::ffi::OsStr],
    runs: usize,
) -> Option<std::time::Duration> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = std::time::Instant::now();
        let out = std::process::Command::new(helm)
            .arg("template")
            .args(args)
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "helm template failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return None;
        }
        times.push(started.elapsed());
    }
    times.sort();
    times.get(runs / 2).copied()
}

fn bench_osh_nodes(c: &mut Criterion) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/charts/osh-overrides/chart");
    let chart = render::chart::load_dir(&root).expect("the osh-overrides fixture loads");
    let values_text = osh_node_values();
    let user: Map = match capstan::values::parse_values(&values_text) {
        Ok(m) => m,
        Err(e) => panic!("node values: {e}"),
    };
    let release = ReleaseInfo {
        name: "rel".into(),
        namespace: "apps".into(),
        revision: 1,
        is_upgrade: false,
    };
    let caps = Capabilities::new(Some("1.30.0"), &[]).expect("a kube version");
    match render::render(&chart, &user, &release, &caps) {
        Ok(r) => assert!(
            r.manifests.len() > 2 * OSH_NODES,
            "a DaemonSet and ConfigMap per node"
        ),
        Err(e) => panic!("osh-overrides does not render: {e}"),
    }
    let mut group = c.benchmark_group("render_osh_nodes");
    group.bench_function(BenchmarkId::from_parameter(OSH_NODES), |b| {
        b.iter(|| render::render(black_box(&chart), &user, &release, &caps));
    });
    group.finish();
    let helm = std::env::var_os("CAPSTAN_HELM")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|| {
                    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target")
                });
            Some(target.join("cluster/bin/helm"))
        })
        .filter(|p| p.is_file());
    let Some(helm) = helm else {
        eprintln!(
            "render_osh_nodes: no Helm binary (CAPSTAN_HELM or <target>/cluster/bin/helm): Helm not timed"
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("capstan-bench-osh-{}", std::process::id()));
    let tiny = dir.join("tiny");
    let setup = std::fs::create_dir_all(tiny.join("templates"))
        .and_then(|()| std::fs::write(dir.join("nodes.yaml"), &values_text))
        .and_then(|()| {
            std::fs::write(
                tiny.join("Chart.yaml"),
                "apiVersion: v2\nname: tiny\nversion: 0.1.0\n",
            )
        })
        .and_then(|()| {
            std::fs::write(
                tiny.join("templates/cm.yaml"),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
            )
        });
    if let Err(e) = setup {
        eprintln!("render_osh_nodes: {e}: Helm not timed");
        return;
    }
    let values = dir.join("nodes.yaml");
    let common = ["--kube-version", "1.30.0", "--namespace", "apps", "rel"];
    let mut osh_args: Vec<&std::ffi::OsStr> = common.iter().map(std::ffi::OsStr::new).collect();
    osh_args.extend([
        root.as_os_str(),
        std::ffi::OsStr::new("-f"),
        values.as_os_str(),
    ]);
    let mut tiny_args: Vec<&std::ffi::OsStr> = common.iter().map(std::ffi::OsStr::new).collect();
    tiny_args.push(tiny.as_os_str());
    let runs = 20;
    let osh = helm_median(&helm, &osh_args, runs);
    let floor = helm_median(&helm, &tiny_args, runs);
    eprintln!(
        "render_osh_nodes/{OSH_NODES}: helm template median {:?} over {runs} runs; helm template of a one-template chart {:?} (process start and chart load)",
        osh, floor
    );
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench_render, bench_real_world, bench_osh_nodes);
criterion_main!(benches);
