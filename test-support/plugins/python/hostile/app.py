"""The component's entry module: componentize-py exports its `WitWorld`."""

from capstan_plugin.component import export
from hostile import Hostile

WitWorld = export(Hostile)
