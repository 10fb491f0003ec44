#!/usr/bin/env python3
"""The storage example plugin's override computation as a Python function
called inside a running interpreter: what a StarlingX-style in-process
plugin costs, with no sandbox at all.

The same logic as example-plugins/storage/src/lib.rs. The function gets the
facts as Python objects (as StarlingX plugins get theirs from the system
database) and returns a dict. Before timing, its output is checked equal
to fixtures/rbd-provisioner.simplex.json, the output capstan's and
Extism's benches check theirs against.

Prints one line per measurement, `name median_ns=N`, median over repeats
of the time per call measured with timeit:

- `python-call`: the function on parsed facts;
- `python-json`: parsing the facts from JSON text, the call, and the
  result as JSON text (what crossing a process or sandbox boundary adds).

Run by `cargo xtask peers`; alone: `python3 benches/peers/storage_overrides.py`.
"""

import json
import logging
import os
import statistics
import sys
import timeit

RBD_CHART = "rbd-provisioner"
CEPHFS_CHART = "cephfs-provisioner"
LOG = logging.getLogger("storage")


class PluginError(Exception):
    pass


def ceph_backend(facts):
    for kind in ("ceph", "ceph-rook"):
        for backend in facts.get("storageBackends", []):
            if backend["kind"] == kind:
                return backend
    raise PluginError("invalid facts: no ceph storage backend")


def set_path(root, path, value):
    parts = path.split(".")
    node = root
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[parts[-1]] = value


def merge(dst, src):
    for key, value in src.items():
        if isinstance(dst.get(key), dict) and isinstance(value, dict):
            merge(dst[key], value)
        else:
            dst[key] = value


def provisioner_values(facts, ceph):
    simplex = facts["systemMode"] == "simplex" or facts["controllerCount"] < 2
    values = {}
    set_path(values, "provisioner.replicaCount", 1 if simplex else 2)
    set_path(values, "provisioner.leaderElection.enabled", not simplex)
    set_path(values, "provisioner.nodeSelector", {"node-role.kubernetes.io/control-plane": ""})
    set_path(
        values,
        "provisioner.tolerations",
        [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}],
    )
    set_path(values, "csiConfig.monitors", list(ceph.get("monitors", [])))
    set_path(values, "csiConfig.clusterID", ceph["name"])
    return values


def rbd_values(ceph):
    pools = ceph.get("pools", [])
    pool = next((p for p in pools if "rbd" in p), pools[0] if pools else None)
    if pool is None:
        raise PluginError(f"invalid facts: backend {ceph['name']} has no pool")
    replication = ceph.get("replication", 1)
    return {
        "storageClass": {
            "name": "general",
            "isDefault": ceph.get("isDefault", False),
            "pool": pool,
            "replication": replication,
            "chunkSize": 8 if replication < 2 else 64,
            "adminSecretName": "ceph-admin",
            "userSecretName": f"ceph-pool-{pool}",
        }
    }


def cephfs_values(ceph):
    return {
        "storageClass": {
            "name": "cephfs",
            "isDefault": False,
            "fsName": "kube-cephfs",
            "dataPool": "kube-cephfs-data",
            "metadataPool": "kube-cephfs-metadata",
            "replication": ceph.get("replication", 1),
        }
    }


def overrides(app, facts, chart):
    ceph = ceph_backend(facts)
    LOG.info(
        "ceph backend %s with %d monitor(s), replication %d",
        ceph["name"],
        len(ceph.get("monitors", [])),
        ceph.get("replication", 1),
    )
    values = provisioner_values(facts, ceph)
    if chart == RBD_CHART:
        merge(values, rbd_values(ceph))
    elif chart == CEPHFS_CHART:
        merge(values, cephfs_values(ceph))
    else:
        raise PluginError(f"unsupported: chart {chart}")
    return values


def median_ns(stmt, repeats=25):
    timer = timeit.Timer(stmt)
    number, _ = timer.autorange()
    # autorange picks a loop of at least 0.2 s; a tenth of it per repeat
    # keeps the run short and the repeats many.
    number = max(1, number // 10)
    times = timer.repeat(repeat=repeats, number=number)
    return statistics.median(times) / number * 1e9, number


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "fixtures", "simplex.json")) as f:
        facts_text = f.read()
    with open(os.path.join(here, "fixtures", "rbd-provisioner.simplex.json")) as f:
        expected = json.load(f)
    facts = json.loads(facts_text)
    app = {"name": "bench", "version": "1.0.0"}
    got = overrides(app, facts, RBD_CHART)
    if got != expected:
        print(f"python output differs from capstan's: {json.dumps(got, sort_keys=True)}", file=sys.stderr)
        return 1

    def call():
        return overrides(app, facts, RBD_CHART)

    def round_trip():
        return json.dumps(overrides(app, json.loads(facts_text), RBD_CHART))

    version = ".".join(map(str, sys.version_info[:3]))
    for name, stmt in (("python-call", call), ("python-json", round_trip)):
        ns, number = median_ns(stmt)
        print(f"{name} median_ns={ns:.0f} (python {version}, median of 25 repeats of {number} calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
