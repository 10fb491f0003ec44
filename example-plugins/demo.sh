#!/usr/bin/env bash
# The main job end to end, as far as capstan goes today. Run it through
# `cargo xtask demo`, which builds the plugins and the binary first.
#
#   cargo xtask demo [--kubeconfig FILE]
#
# Steps: run each example plugin in the sandbox against the example facts.
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
