"""Views folded from the event log: entities, relations, context, history, search.

One fold (`chronograph.projections.fold.apply`) serves every lifecycle: inline inside
the append's write transaction (`Views`), rebuild into the idle slot (`Views.rebuild`),
time travel into dictionaries (`graph_as_of`, `entity_as_of`), and a command's overlay
of what it is about to write (`Overlay`).
"""

from chronograph.projections.errors import ProjectionError, RebuildError, ViewsUnavailableError
from chronograph.projections.fold import State, apply, apply_all, unique
from chronograph.projections.keys import ENTITY, RELATION
from chronograph.projections.live.catchup import Progress
from chronograph.projections.live.rebuild import RebuildReport
from chronograph.projections.live.verify import damaged_event, verify
from chronograph.projections.live.views import Snapshot, Views
from chronograph.projections.past.asof import (
    entity_as_of,
    fold_streams,
    graph_as_of,
    position_of,
    relation_as_of,
    written_position,
)
from chronograph.projections.past.versions import Version, changes_of, stream_history, versions_of
from chronograph.projections.records import (
    ContextRecord,
    EntityRecord,
    NameRecord,
    RelationRecord,
    TypeCount,
    WorkspaceRecord,
    copy_record,
)
from chronograph.projections.search.indexes import SearchIndex
from chronograph.projections.search.terms import matches
from chronograph.projections.search.wordindex import WorkspaceIndex
from chronograph.projections.states.dictgraph import DictGraph
from chronograph.projections.states.dictstate import DictState, fold_log, paused_gc
from chronograph.projections.states.graph import Direction, Graph, LmdbGraph, relations_touching
from chronograph.projections.states.lmdbstate import LmdbState
from chronograph.projections.states.overlay import Overlay
from chronograph.projections.streams import context_stream, new_entity_stream, relation_stream

__all__ = [
    "ENTITY",
    "RELATION",
    "ContextRecord",
    "DictGraph",
    "DictState",
    "Direction",
    "EntityRecord",
    "Graph",
    "LmdbGraph",
    "LmdbState",
    "NameRecord",
    "Overlay",
    "Progress",
    "ProjectionError",
    "RebuildError",
    "RebuildReport",
    "RelationRecord",
    "SearchIndex",
    "Snapshot",
    "State",
    "TypeCount",
    "Version",
    "Views",
    "ViewsUnavailableError",
    "WorkspaceIndex",
    "WorkspaceRecord",
    "apply",
    "apply_all",
    "changes_of",
    "context_stream",
    "copy_record",
    "damaged_event",
    "entity_as_of",
    "fold_log",
    "fold_streams",
    "graph_as_of",
    "matches",
    "new_entity_stream",
    "paused_gc",
    "position_of",
    "relation_as_of",
    "relation_stream",
    "relations_touching",
    "stream_history",
    "unique",
    "verify",
    "versions_of",
    "written_position",
]
