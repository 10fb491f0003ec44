#!/usr/bin/env bash
# The main job end to end. Run it through `cargo xtask demo`, which builds
# the plugins and the binary first.
#
#   cargo xtask demo [--cluster double | --cluster local | --kubeconfig FILE]
#
# Steps: make a signing key; build and sign the five-chart example app
# `shop` with the ha-replicas plugin inside; start the daemon on a state
# folder under demo/ (facts: a duplex system, so the plugin asks for two
# replicas with anti-affinity); upload and apply the app through the API;
# set a user override and re-apply; show the layers, the history and what
# landed on the target. The target is the directory demo/applied; with
# `--cluster double` a freshly started API-server test double (kube-double,
# checked against kubectl) on loopback; with `--kubeconfig FILE` the
# cluster of that kubeconfig.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
target=${CAPSTAN_TARGET_DIR:-$root/target}
capstan="$target/debug/capstan"
wasm="$target/wasm32-wasip2/release"
work="$root/demo"
kubeconfig=""
cluster=""

while [ $# -gt 0 ]; do
  case "$1" in
    --kubeconfig) kubeconfig="$2"; shift 2 ;;
    --cluster)
      cluster="$2"; shift 2
      if [ "$cluster" != double ]; then
        echo "demo: --cluster takes 'double' (use --kubeconfig FILE for a real cluster)" >&2
        exit 2
      fi
      ;;
    *) echo "demo: unknown argument $1" >&2; exit 2 ;;
  esac
done

step() { printf '\n\033[1m==> %s\033[0m\n' "$*" >&2; }

rm -rf "$work/state" "$work/applied" "$work/shop-app"
mkdir -p "$work/keys"
export CAPSTAN_STATE="$work/state"
unset CAPSTAN_SERVER CAPSTAN_TOKEN

step "signing key"
if [ ! -f "$work/keys/demo.key" ]; then
  "$capstan" keygen --name demo --out "$work/keys"
fi

step "build and sign the example app bundle (5 charts, the ha-replicas plugin)"
cp -R "$here/apps/shop" "$work/shop-app"
cp "$wasm/capstan_example_ha_replicas.wasm" "$work/shop-app/plugins/ha-replicas.wasm"
"$capstan" bundle build "$work/shop-app" --key "$work/keys/demo.key" --out "$work/shop-1.0.0.tgz"
"$capstan" bundle verify "$work/shop-1.0.0.tgz" --trust "$work/keys"

pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done' EXIT

if [ "$cluster" = double ]; then
  step "start the Kubernetes API-server double (kube-double)"
  kubeconfig="$work/kube-double.kubeconfig"
  rm -f "$kubeconfig"
  "$target/debug/kube-double" --listen 127.0.0.1:0 --kubeconfig-out "$kubeconfig" \
    >"$work/kube-double.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do
    [ -s "$kubeconfig" ] && break
    sleep 0.1
  done
  [ -s "$kubeconfig" ] || { cat "$work/kube-double.log" >&2; exit 1; }
fi

step "start the daemon"
if [ -n "$kubeconfig" ]; then
  target_args=(--kubeconfig "$kubeconfig")
else
  target_args=(--target "dir:$work/applied")
fi
"$capstan" serve --trust "$work/keys" --facts "$here/ha-replicas/facts/duplex.yaml" \
  "${target_args[@]}" 2>"$work/daemon.log" &
daemon=$!
pids=("$daemon" "${pids[@]}")
for _ in $(seq 1 100); do
  [ -S "$work/state/capstan.sock" ] && break
  if ! kill -0 "$daemon" 2>/dev/null; then
    cat "$work/daemon.log" >&2
    exit 1
  fi
  sleep 0.1
done

step "upload and apply"
"$capstan" app upload "$work/shop-1.0.0.tgz"
"$capstan" app apply shop
"$capstan" app show shop

step "a user override: three web replicas, then re-apply"
"$capstan" override set shop web --set replicaCount=3
"$capstan" app diff shop
"$capstan" app apply shop
"$capstan" override list shop

step "history"
"$capstan" app history shop

step "what landed on the target"
if [ -z "$kubeconfig" ]; then
  ls -l "$work/applied/shop"
  grep -A3 '^kind: StatefulSet' "$work/applied/shop/db.yaml" | head -4
  grep 'replicas:' "$work/applied/shop/web.yaml"
elif [ -n "${CAPSTAN_DEMO_KUBECTL:-}" ]; then
  # The real control plane (cargo xtask demo --cluster local): every pod
  # on its node, the database's claim bound.
  k=("$CAPSTAN_DEMO_KUBECTL" --kubeconfig "$CAPSTAN_DEMO_ADMIN_KUBECONFIG")
  "${k[@]}" get deployments,statefulsets,services,pvc -n shop
  "${k[@]}" get pods -A -o wide
  "${k[@]}" wait --for=condition=Ready pod --all -n shop --timeout=60s >/dev/null
  phase=$("${k[@]}" get pvc -n shop -o jsonpath='{.items[*].status.phase}')
  [ "$phase" = Bound ] || { echo "demo: the db claim is $phase, not Bound" >&2; exit 1; }
elif command -v kubectl >/dev/null 2>&1; then
  kubectl --kubeconfig "$kubeconfig" get deployments,statefulsets,services,secrets -n shop
  kubectl --kubeconfig "$kubeconfig" get deployment web -n shop -o jsonpath='{.spec.replicas}{"\n"}'
fi

step "done: the daemon log is in demo/daemon.log"
