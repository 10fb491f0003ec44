#!/usr/bin/env bash
# The main job end to end, as far as capstan goes today. Run it through
# `cargo xtask demo`, which builds the plugins and the binary first.
#
#   cargo xtask demo [--kubeconfig FILE]
#
# Steps: make a signing key, build and sign the example app bundle (with the
# storage plugin inside), verify it against the trusted key, inspect it,
# render its chart like `helm template`, and run each example plugin in the
# sandbox against the example facts.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
target=${CAPSTAN_TARGET_DIR:-$root/target}
capstan="$target/debug/capstan"
wasm="$target/wasm32-wasip2/release"
work="$root/demo"
kubeconfig=""

while [ $# -gt 0 ]; do
  case "$1" in
    --kubeconfig) kubeconfig="$2"; shift 2 ;;
    *) echo "demo: unknown argument $1" >&2; exit 2 ;;
  esac
done

mkdir -p "$work"
step() { printf '\n\033[1m==> %s\033[0m\n' "$*" >&2; }

step "signing key"
mkdir -p "$work/keys"
if [ ! -f "$work/keys/demo.key" ]; then
  "$capstan" keygen --name demo --out "$work/keys"
fi

step "build and sign the example app bundle"
rm -rf "$work/hello-app"
cp -R "$here/apps/hello" "$work/hello-app"
cp "$wasm/capstan_example_storage.wasm" "$work/hello-app/plugins/storage.wasm"
"$capstan" bundle build "$work/hello-app" --key "$work/keys/demo.key" --out "$work/hello-1.0.0.tgz"

step "verify it against the trusted keys"
"$capstan" bundle verify "$work/hello-1.0.0.tgz" --trust "$work/keys"

step "inspect it"
"$capstan" bundle inspect "$work/hello-1.0.0.tgz"

step "render the app's chart with its static overrides, as helm template would"
"$capstan" template hello "$work/hello-app/charts/hello" -n hello \
  -f "$work/hello-app/overrides/hello.yaml" --set replicaCount=2

step "storage plugin on a simplex system (leader election off, one replica)"
"$capstan" plugin run "$wasm/capstan_example_storage.wasm" \
  --facts "$here/storage/facts/simplex.yaml" --cache "$work/cache"

step "storage plugin on a standard system (two replicas elect a leader)"
"$capstan" plugin run "$wasm/capstan_example_storage.wasm" \
  --facts "$here/storage/facts/standard.yaml" --chart rbd-provisioner --cache "$work/cache"

step "HA replicas plugin on a duplex system (two replicas, anti-affinity)"
"$capstan" plugin run "$wasm/capstan_example_ha_replicas.wasm" \
  --facts "$here/ha-replicas/facts/duplex.yaml" --cache "$work/cache"

if [ -n "$kubeconfig" ]; then
  echo "demo: applying to a cluster is not built yet; the kubeconfig $kubeconfig was not used" >&2
fi
step "done"
