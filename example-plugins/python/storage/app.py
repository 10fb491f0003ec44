"""The component's entry module: componentize-py exports its `WitWorld`."""

from capstan_plugin.component import export
from storage import Storage

WitWorld = export(Storage)
