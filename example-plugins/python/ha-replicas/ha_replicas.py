"""HA replicas plugin: replica counts, pod anti-affinity and a disruption
budget from the number of controllers.

The Python twin of `example-plugins/ha-replicas` (Rust), checked against
the same vectors (`tests/fixtures/vectors/ha-replicas/`). One replica on a
simplex system, one per controller (at most three) elsewhere, with hard
anti-affinity on `kubernetes.io/hostname` so two replicas never share a
node, and a PodDisruptionBudget once there is more than one replica.
"""

from capstan_plugin import InvalidFacts, NodeRole, Plugin, Unsupported, Values

CHARTS = ["web", "api"]

#: Replicas never exceed this, whatever the controller count.
MAX_REPLICAS = 3


class HaReplicas(Plugin):
    name = "ha-replicas"
    version = "0.1.0"
    charts = CHARTS

    def overrides(self, app, facts, chart):
        if chart not in CHARTS:
            raise Unsupported(f"chart {chart}")
        controllers = sum(1 for _ in facts.nodes_with_role(NodeRole.CONTROLLER))
        if controllers != facts.controller_count:
            raise InvalidFacts(
                f"controller count is {facts.controller_count} "
                f"but {controllers} nodes are controllers"
            )
        replicas = 1 if facts.is_simplex() else max(1, min(controllers, MAX_REPLICAS))
        values = Values().set("replicaCount", replicas)
        if replicas > 1:
            return (
                values.set("affinity", anti_affinity(chart))
                .set("podDisruptionBudget.enabled", True)
                .set("podDisruptionBudget.minAvailable", replicas - 1)
            )
        return values.set("podDisruptionBudget.enabled", False)


def anti_affinity(chart: str) -> dict:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app.kubernetes.io/name": chart}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
