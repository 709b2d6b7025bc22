"""The states the fold changes, and the graph read from them.

`graph` is the `Graph` a tool reads (`LmdbGraph`: the live views in one transaction);
`lmdbstate` writes the live views inside the append's transaction; `dictstate` folds
into dictionaries (rebuilds, time travel) and `dictgraph` reads them as a `Graph`;
`overlay` lets a command see its own events before they are appended.
"""

from chronograph.projections.states.dictgraph import DictGraph
from chronograph.projections.states.dictstate import DictState, fold_log, paused_gc
from chronograph.projections.states.graph import Direction, Graph, LmdbGraph
from chronograph.projections.states.lmdbstate import LmdbState
from chronograph.projections.states.overlay import Overlay

__all__ = ["DictGraph", "DictState", "Direction", "Graph", "LmdbGraph", "LmdbState", "Overlay", "fold_log", "paused_gc"]
