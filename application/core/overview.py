"""Overviews of the memory: a workspace's summary and the list of workspaces."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from chronograph.application.engine.access import readable
from chronograph.application.engine.arguments import Args, AsOf, D, ReadArgs
from chronograph.application.engine.outputs import AS_OF_POSITION, Out
from chronograph.application.engine.registry import CORE
from chronograph.application.engine.service import Memory
from chronograph.projections import ENTITY, RELATION, Graph
from msgspec import UNSET, Meta, UnsetType

__all__ = ["GetGraphSummary", "ListWorkspaces", "SummaryOut", "WorkspacesOut", "workspaces_out"]


class GetGraphSummary(ReadArgs, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=100_000), D(description="At most this many index entries")] = 1000
    offset: Annotated[int, Meta(ge=0), D(description="Skip this many index entries first")] = 0
    as_of: AsOf | UnsetType = UNSET


class IndexEntryOut(Out, kw_only=True):
    name: str
    entity_type: str


class SummaryOut(Out, kw_only=True):
    workspace: str
    entities: int
    relations: int
    entity_types: Annotated[dict[str, int], D(description="Entities per type")]
    relation_types: Annotated[dict[str, int], D(description="Relations per type")]
    index: Annotated[list[IndexEntryOut], D(description="Names and types, oldest first")]
    next_offset: int | UnsetType = UNSET
    store_bytes: Annotated[int, D(description="What the whole store takes on disk now")]
    as_of: Annotated[int, AS_OF_POSITION] | UnsetType = UNSET


@CORE.query("get_graph_summary", "Graph Summary",
            "Counts per type and a names-and-types index, cheaper than read_graph")
def get_graph_summary(memory: Memory, args: GetGraphSummary) -> SummaryOut:
    """Counts, counts per type, and a page of the names-and-types index."""
    with memory.timeline.at("get_graph_summary", args.as_of) as moment:
        graph = moment.graph
        totals = graph.workspace(args.workspace)
        index = [
            IndexEntryOut(name=e.name, entity_type=e.entity_type)
            for e in graph.entities(args.workspace, args.offset, args.limit)
        ]
        entities = 0 if totals is None else totals.entities
        more = args.offset + len(index) < entities
        return SummaryOut(
            workspace=args.workspace,
            entities=entities,
            relations=0 if totals is None else totals.relations,
            entity_types=graph.type_counts(args.workspace, ENTITY),
            relation_types=graph.type_counts(args.workspace, RELATION),
            index=index,
            next_offset=args.offset + len(index) if more else UNSET,
            store_bytes=memory.store_bytes(),
            as_of=moment.answered,
        )


class ListWorkspaces(Args, kw_only=True):
    pass


class WorkspaceOut(Out, kw_only=True):
    name: str
    entities: int
    relations: int
    has_context: bool


class WorkspacesOut(Out, kw_only=True):
    workspaces: list[WorkspaceOut]


def workspaces_out(graph: Graph, shown: Callable[[str], bool] = lambda _: True) -> WorkspacesOut:
    """Every workspace ever written to that is `shown`, with its counts."""
    return WorkspacesOut(workspaces=[
        WorkspaceOut(name=w.name, entities=w.entities, relations=w.relations,
                     has_context=graph.context(w.name) is not None)
        for w in graph.workspaces() if shown(w.name)
    ])


@CORE.query("list_workspaces", "List Workspaces", "The workspaces of this memory, with their counts")
def list_workspaces(memory: Memory, args: ListWorkspaces) -> WorkspacesOut:
    """Every workspace ever written to, with its counts."""
    with memory.timeline.at("list_workspaces") as moment:
        return workspaces_out(moment.graph, shown=readable)
