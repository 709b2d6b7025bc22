"""Reading the graph: read_graph, search_nodes and open_nodes, now or as of a past moment.

They follow the official server: entities in the order they were created, and with a
search or an open, the relations with at least one end among the entities found.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

import msgspec
from chronograph.application.arguments import AsOf, D, Items, Name, Query, ReadArgs
from chronograph.application.outputs import (
    GraphOut,
    Out,
    PageEntityOut,
    RelationOut,
    entity_out,
    relation_out,
)
from chronograph.application.registry import CORE
from chronograph.application.service import Memory
from chronograph.application.timeline import Moment
from chronograph.projections import EntityRecord, Graph, WorkspaceIndex, matches, relations_touching
from msgspec import UNSET, Meta, UnsetType

__all__ = ["GraphPageOut", "OpenNodes", "ReadGraph", "SearchNodes", "graph_out"]


def graph_out(graph: Graph, workspace: str, entities: Iterable[EntityRecord], as_of: int | None = None) -> GraphOut:
    """`entities` and the relations touching them."""
    found = list(entities)
    relations = relations_touching(graph, workspace, (e.name for e in found))
    return GraphOut(
        entities=[entity_out(e) for e in found],
        relations=[relation_out(r) for r in relations],
        as_of=UNSET if as_of is None else as_of,
    )


# --- read_graph ---------------------------------------------------------------------------------


class ReadGraph(ReadArgs, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=100_000), D(
        description="At most this many entities, oldest first, with the relations from them")] | UnsetType = UNSET
    offset: Annotated[int, Meta(ge=0), D(description="Skip this many entities first")] = 0
    summary_mode: Annotated[bool, D(description="Names and types only, for a quick index")] = False
    as_of: AsOf | UnsetType = UNSET


class GraphPageOut(Out, kw_only=True):
    entities: list[PageEntityOut]
    relations: list[RelationOut]
    total_entities: int | UnsetType = UNSET
    next_offset: int | UnsetType = UNSET
    as_of: int | UnsetType = UNSET


@CORE.query("read_graph", "Read Graph", "Read the entire knowledge graph")
def read_graph(memory: Memory, args: ReadGraph) -> GraphPageOut:
    """The workspace's entities (a page of them, with limit/offset) and their relations.

    A page lists the relations whose `from` entity is on it, so paging through the
    whole graph lists every relation once. summaryMode leaves out all but names and types.
    """
    with memory.timeline.at("read_graph", args.as_of) as moment:
        return page(moment.graph, args, moment.position)


def page(graph: Graph, args: ReadGraph, as_of: int | None = None) -> GraphPageOut:
    """A page of `graph` as read_graph answers it."""
    ws = args.workspace
    stamp = UNSET if as_of is None else as_of
    limit = None if args.limit is UNSET else args.limit
    records = list(graph.entities(ws, args.offset, limit))
    if args.summary_mode:
        entities = [PageEntityOut(name=e.name, entity_type=e.entity_type) for e in records]
    else:
        entities = [entity_out(e, PageEntityOut) for e in records]
    if limit is None and args.offset == 0:
        return GraphPageOut(entities=entities, relations=[relation_out(r) for r in graph.relations(ws)], as_of=stamp)
    on_page = {e.name for e in records}
    relations = [relation_out(r) for r in relations_touching(graph, ws, on_page) if r.source in on_page]
    totals = graph.workspace(ws)
    total = 0 if totals is None else totals.entities
    more = args.offset + len(records) < total
    return GraphPageOut(
        entities=entities, relations=relations, total_entities=total,
        next_offset=args.offset + len(records) if more else UNSET, as_of=stamp,
    )


# --- search_nodes -------------------------------------------------------------------------------


class SearchNodes(ReadArgs, kw_only=True):
    query: Annotated[
        Query, D(description="The search query to match against entity names, types, and observation content")
    ]
    ranked: Annotated[bool, D(
        description="Best matches for the words first (BM25) instead of substring matches")] = False
    limit: Annotated[int, Meta(ge=1, le=1000), D(description="With ranked: at most this many entities")] = 20
    as_of: AsOf | UnsetType = UNSET


@CORE.query("search_nodes", "Search Nodes", "Search for nodes in the knowledge graph based on a query")
def search_nodes(memory: Memory, args: SearchNodes) -> GraphOut:
    """Entities whose name, type or an observation contains the query (any case), with their
    relations; or, ranked, the best matches for its words."""
    with memory.timeline.at("search_nodes", args.as_of) as moment:
        if args.ranked:
            return _ranked(memory, moment, args)
        if moment.is_past:  # no standing index for the past: every entity is checked
            found = [e for e in moment.graph.entities(args.workspace) if matches(e, args.query)]
        else:
            index = memory.views.search_index(moment.snapshot, args.workspace)
            found = [r for s in index.substring(args.query) if (r := moment.live.entity_by_stream(s)) is not None]
        return graph_out(moment.graph, args.workspace, found, moment.position)


def _ranked(memory: Memory, moment: Moment, args: SearchNodes) -> GraphOut:
    if moment.is_past:  # no standing index for the past: one for this question
        index = WorkspaceIndex(args.workspace)
        for record in moment.graph.entities(args.workspace):
            index.put(record)
    else:
        index = memory.views.search_index(moment.snapshot, args.workspace)
    ranked = index.ranked(args.query, args.limit)
    found = [(r, score) for stream, score in ranked if (r := moment.graph.entity_by_stream(stream))]
    out = graph_out(moment.graph, args.workspace, [r for r, _ in found], moment.position)
    return msgspec.structs.replace(out, scores=[round(score, 6) for _, score in found])


# --- open_nodes ---------------------------------------------------------------------------------


class OpenNodes(ReadArgs, kw_only=True):
    names: Annotated[Items[Name], D(description="An array of entity names to retrieve")]
    as_of: AsOf | UnsetType = UNSET


@CORE.query("open_nodes", "Open Nodes", "Open specific nodes in the knowledge graph by their names")
def open_nodes(memory: Memory, args: OpenNodes) -> GraphOut:
    """The named entities that exist, in creation order, with their relations."""
    with memory.timeline.at("open_nodes", args.as_of) as moment:
        graph, ws = moment.graph, args.workspace
        found = [e for name in dict.fromkeys(args.names) if (e := graph.entity(ws, name)) is not None]
        found.sort(key=lambda entity: entity.seq)
        return graph_out(graph, ws, found, moment.position)


