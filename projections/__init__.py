"""Views folded from the event log: entities, relations, context, history, search.

One fold (`projections.fold.apply`) serves three lifecycles: inline inside the append's
write transaction (`Views`), rebuild into a fresh generation (`rebuild`), and time
travel in memory (`graph_as_of`, `entity_as_of`).
"""

from projections.asof import entity_as_of, fold_streams, graph_as_of, position_of, relation_as_of
from projections.catchup import Progress
from projections.errors import ProjectionError, RebuildError, ViewsUnavailableError
from projections.fold import State, apply, apply_all, unique
from projections.graph import Direction, Graph, LmdbGraph, relations_touching
from projections.history import Version, stream_history
from projections.keys import ENTITY, RELATION
from projections.lmdbstate import LmdbState
from projections.memory import MemoryState, fold_log, paused_gc
from projections.memorygraph import MemoryGraph
from projections.rebuild import RebuildReport, rebuild
from projections.records import (
    ContextRecord,
    EntityRecord,
    EntityView,
    NameRecord,
    RelationRecord,
    RelationView,
    TypeCount,
    WorkspaceRecord,
)
from projections.search import SearchIndex, WorkspaceIndex, matches
from projections.streams import context_stream, new_entity_stream, relation_stream
from projections.verify import verify
from projections.views import Views

__all__ = [
    "ENTITY",
    "RELATION",
    "ContextRecord",
    "Direction",
    "EntityRecord",
    "EntityView",
    "Graph",
    "LmdbGraph",
    "LmdbState",
    "MemoryGraph",
    "MemoryState",
    "NameRecord",
    "Progress",
    "ProjectionError",
    "RebuildError",
    "RebuildReport",
    "RelationRecord",
    "RelationView",
    "SearchIndex",
    "State",
    "TypeCount",
    "Version",
    "Views",
    "ViewsUnavailableError",
    "WorkspaceIndex",
    "WorkspaceRecord",
    "apply",
    "apply_all",
    "context_stream",
    "entity_as_of",
    "fold_log",
    "paused_gc",
    "fold_streams",
    "graph_as_of",
    "matches",
    "new_entity_stream",
    "position_of",
    "rebuild",
    "relation_as_of",
    "relation_stream",
    "relations_touching",
    "stream_history",
    "unique",
    "verify",
]
