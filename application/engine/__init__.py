"""What runs a tool, whatever the tool: arguments, outputs, the registry, the memory.

`registry` declares tools (`CORE`, `TEAM`); `arguments` and `outputs` are the Structs they
take and answer; `service` (`Memory`) runs one on a store, a command through a `batch`
inside one write transaction; `stores` opens a store, `storelock` guards it, `timeline`
answers `asOf`; `semantic` runs the embedding projector; `exportdir` is where exports go;
`config` says where the store lives.
"""

from chronograph.application.engine.batch import Batch
from chronograph.application.engine.registry import CORE, TEAM, Files, Kind, Registry, Tool
from chronograph.application.engine.service import Memory, Written

__all__ = ["CORE", "TEAM", "Batch", "Files", "Kind", "Memory", "Registry", "Tool", "Written"]
