"""The component's entry module: componentize-py exports its `WitWorld`."""

from capstan_plugin.component import export
from ha_replicas import HaReplicas

WitWorld = export(HaReplicas)
