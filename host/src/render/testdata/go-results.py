#!/usr/bin/env python3
"""Records what the real Helm 4 gives for each case below, into go-results.json.

Run from the repository root with the Helm built from test-support/control-plane/helm:

    CAPSTAN_HELM=/path/to/helm python3 host/src/render/testdata/go-results.py

Each case is a template body rendered as the one template of a chart named
`c` (values below), printed into a ConfigMap through `include ... | toJson`,
with `helm template --kube-version 1.30.0 --namespace apps rel c`. The file
records Helm's text for the body, or its error (the message after the last
`at <...>:`), or, for a case Helm never finishes, how it ended (stack
overflow, out of memory, still running after the timeout) under a 3 GiB
address-space limit. `render::tests::go_results` checks capstan against it.
"""
import json, os, re, subprocess, sys, tempfile

HELM = os.environ.get("CAPSTAN_HELM", "helm")
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "go-results.json")
VALUES = """a:
  b: 1
  c:
    d: x
list: [1, two]
empty: {}
"""
CYCLE = '{{- $m := dict "k" "v" -}}{{- $_ := set $m "self" $m -}}'
VALUES_CYCLE = '{{- $_ := set .Values "self" .Values -}}'
TWO = '{{- $n := dict "k" "w" -}}{{- $_ := set $n "self" $n -}}'
CASES = [
    # maps that contain themselves
    ("cycle_read", CYCLE + '{{ $m.self.self.k }}'),
    ("cycle_keys", CYCLE + '{{ keys $m | sortAlpha }}'),
    ("cycle_shallow", CYCLE + '{{ kindOf $m }} {{ typeOf $m }} {{ empty $m }} {{ len $m }} {{ hasKey $m "self" }}'),
    ("cycle_dig_pick_omit", CYCLE + '{{ dig "self" "self" "k" "d" $m }} {{ pick $m "k" }} {{ omit $m "self" }} {{ get (get $m "self") "k" }} {{ index $m "self" "self" "k" }}'),
    ("cycle_toYaml", CYCLE + '[{{ toYaml $m }}]'),
    ("cycle_toJson", CYCLE + '[{{ toJson $m }}][{{ toPrettyJson $m }}]'),
    ("cycle_mustToYaml", CYCLE + '{{ mustToYaml $m }}'),
    ("cycle_mustToJson", CYCLE + '{{ mustToJson $m }}'),
    ("cycle_toRawJson", CYCLE + '{{ toRawJson $m }}'),
    ("cycle_include", CYCLE + '{{ include "read" $m }}'),
    ("cycle_deepEqual", CYCLE + '{{ deepEqual $m $m.self }} {{ has $m (list 1 $m) }} {{ len (uniq (list $m $m.self)) }}'),
    ("cycle_merge_into_new", CYCLE + '{{ (merge (dict "k" "w") $m).self.k }} {{ (mergeOverwrite (dict "k" "w") $m).k }}'),
    ("cycle_merge_shares", CYCLE + '{{ $n := dict "self" (dict "a" 1) }}[{{ merge $n $m | toYaml }}] {{ $n.self.self.k }}'),
    ("cycle_omit_set", CYCLE + '{{ $c := omit $m "k" }}{{ $_ := set $m "copy" $c }}{{ $m.copy.self.copy.self.k }} {{ keys $c | sortAlpha }}'),
    ("cycle_two_maps", '{{ $a := dict "n" "a" }}{{ $b := dict "n" "b" "a" $a }}{{ $_ := set $a "b" $b }}{{ $a.b.a.b.n }} {{ $b.a.b.a.n }}'),
    ("cycle_unset_breaks", CYCLE + '{{ $_ := unset $m "self" }}{{ toYaml $m }}'),
    ("cycle_values", VALUES_CYCLE + '{{ .Values.self.self.a.b }} [{{ toYaml .Values }}]'),
    ("cycle_values_mustToJson", VALUES_CYCLE + '{{ mustToJson .Values }}'),
    ("cycle_values_YAML", VALUES_CYCLE + '{{ .Values.YAML }}'),
    ("cycle_print", CYCLE + '{{ $m }}'),
    ("cycle_toString", CYCLE + '{{ toString $m }}'),
    ("cycle_deepCopy", CYCLE + '{{ $c := deepCopy $m }}done'),
    ("cycle_merge_two_cycles", CYCLE + TWO + '{{ merge $n $m | len }}'),
    ("cycle_merge_itself", CYCLE + '{{ merge $m $m | len }}'),
    ("cycle_toToml", CYCLE + '{{ toToml $m }}'),
    ("cycle_toYamlPretty", CYCLE + '{{ toYamlPretty $m }}'),
    # the methods of common.Values
    ("values_type", '{{ typeOf .Values }} {{ typeOf .Template }} {{ typeOf .Values.a }} {{ typeOf (.Values.Table "a") }}'),
    ("values_AsMap_type", '{{ typeOf .Values.AsMap }} [{{ .Values.AsMap.YAML }}]'),
    ("values_YAML", '{{ .Values.YAML }}'),
    ("values_AsMap", '{{ .Values.AsMap.a.b }} {{ dig "a" "c" "d" "none" .Values.AsMap }} {{ $_ := set .Values.AsMap "new" 1 }}{{ .Values.new }}'),
    ("values_PathValue", '{{ .Values.PathValue "a.b" }} {{ .Values.PathValue "a.c.d" }} {{ .Values.PathValue "list" }}'),
    ("values_Table", '{{ .Values.Table "a" }} {{ (.Values.Table "a.c").YAML }}{{ (.Values.Table "a").Table "c" }} {{ ((.Values.Table "a").Table "c").PathValue "d" }}'),
    ("values_Table_empty", '{{ (.Values.Table "empty").AsMap }} {{ (.Values.Table "empty").YAML }}'),
    ("values_through_variables", '{{ $v := .Values }}{{ $v.PathValue "a.b" }} {{ $d := dict "v" .Values }}{{ $d.v.Table "a.c" }} {{ .Values.AsMap.a.c.d }}'),
    ("values_Table_missing", '{{ .Values.Table "zz" }}'),
    ("values_Table_not_map", '{{ .Values.Table "a.b" }}'),
    ("values_Table_empty_path", '{{ .Values.Table "" }}'),
    ("values_PathValue_empty", '{{ .Values.PathValue "" }}'),
    ("values_PathValue_table", '{{ .Values.PathValue "a" }}'),
    ("values_PathValue_missing", '{{ .Values.PathValue "a.zz" }}'),
    ("values_PathValue_no_table", '{{ .Values.PathValue "zz.b" }}'),
    ("values_PathValue_number", '{{ .Values.PathValue 5 }}'),
    ("values_PathValue_nil", '{{ .Values.PathValue nil }}'),
    ("values_PathValue_piped_int", '{{ 5 | .Values.PathValue }}'),
    ("values_Table_no_args", '{{ .Values.Table }}'),
    ("values_YAML_args", '{{ .Values.YAML "x" }}'),
    ("values_Encode", '{{ .Values.Encode }}'),
    ("values_Encode_string", '{{ .Values.Encode "x" }}'),
    ("values_Encode_nil", '{{ .Values.Encode nil }}'),
    ("values_YAML_field", '{{ .Values.YAML.x }}'),
    ("template_methods", '{{ .Template.YAML }}{{ .Template.AsMap }} {{ .Template.PathValue "Name" }}'),
    # the other objects
    ("capabilities", '{{ .Capabilities.KubeVersion }} {{ .Capabilities.KubeVersion.Version }} {{ .Capabilities.KubeVersion.GitVersion }} {{ .Capabilities.KubeVersion.Major }} {{ .Capabilities.KubeVersion.Minor }} {{ .Capabilities.APIVersions.Has "apps/v1" }} {{ .Capabilities.APIVersions.Has "x/v1" }}'),
    ("capabilities_types", '{{ typeOf .Capabilities }} {{ typeOf .Release }} {{ typeOf .Chart }} {{ typeOf .Subcharts }} {{ typeOf .Files }}'),
    ("release", '{{ .Release.Name }} {{ .Release.Namespace }} {{ .Release.IsInstall }} {{ .Release.IsUpgrade }} {{ .Release.Revision }} {{ .Release.Service }}'),
    ("files", '[{{ .Files.Get "files/a.txt" }}][{{ .Files.Get "nope" }}][{{ .Files.Lines "files/a.txt" }}][{{ len (.Files.Glob "files/*") }}][{{ (.Files.Glob "files/*").AsConfig }}][{{ (.Files.Glob "files/*").AsSecrets }}]'),
]
HELPERS = '{{- define "read" -}}{{ .self.k }}/{{ .self.self.self.k }}{{- end -}}'
FILES = {"files/a.txt": "one\ntwo\n", "files/b.conf": "x=1\n"}


def message(stderr):
    lines = [l for l in stderr.splitlines() if l.strip() and not l.startswith("Use --debug")]
    if not lines:
        return ""
    if len(lines) == 1:
        m = re.search(r".*\bat <[^>]*>: (.*)$", lines[0])
        return m.group(1) if m else lines[0]
    return lines[-1].strip()


def run(body):
    with tempfile.TemporaryDirectory() as d:
        c = os.path.join(d, "c")
        os.makedirs(os.path.join(c, "templates"))
        os.makedirs(os.path.join(c, "files"))
        open(os.path.join(c, "Chart.yaml"), "w").write("apiVersion: v2\nname: c\nversion: 0.1.0\n")
        open(os.path.join(c, "values.yaml"), "w").write(VALUES)
        for name, text in FILES.items():
            open(os.path.join(c, name), "w").write(text)
        open(os.path.join(c, "templates", "_helpers.tpl"), "w").write(HELPERS)
        open(os.path.join(c, "templates", "t.yaml"), "w").write(
            '{{- define "p" }}' + body + '{{ end -}}\n'
            'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n'
            '  out: {{ include "p" . | toJson }}\n')
        cmd = f'ulimit -v 3145728; exec timeout -s KILL 60 "{HELM}" template --kube-version 1.30.0 --namespace apps rel {c}'
        r = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True)
        if r.returncode == 0:
            out = r.stdout.split("  out: ", 1)[1].rstrip("\n")
            return {"output": json.loads(out)}
        err = r.stderr
        if "stack overflow" in err:
            return {"never_ends": "fatal error: stack overflow"}
        if "out of memory" in err:
            return {"never_ends": "fatal error: out of memory"}
        if r.returncode in (-9, 137):
            return {"never_ends": "still running after 60 s"}
        return {"error": message(err)}


def main():
    only = set(sys.argv[1:])
    old = {c["name"]: c for c in json.load(open(OUT))["cases"]} if only and os.path.exists(OUT) else {}
    results = []
    for name, body in CASES:
        if only and name not in only and name in old:
            results.append(old[name])
            continue
        entry = {"name": name, "template": body}
        entry.update(run(body))
        print(name, {k: v for k, v in entry.items() if k != "template"}, file=sys.stderr)
        results.append(entry)
    doc = {"command": "CAPSTAN_HELM=<helm v4.3.2 from test-support/control-plane/helm> python3 host/src/render/testdata/go-results.py",
           "values": VALUES, "helpers": HELPERS, "files": FILES, "cases": results}
    json.dump(doc, open(OUT, "w"), indent=1)
    open(OUT, "a").write("\n")


main()
