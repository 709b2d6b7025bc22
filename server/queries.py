"""Read queries over a `Graph`: the live views or the graph as of a past moment.

They follow the official server: entities in the order they were created, and with a
search or an open, the relations with at least one end among the entities found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from msgspec import UNSET, UnsetType

from projections import EntityView, Graph, matches, relations_touching
from server.outputs import entity_out, relation_out
from server.schemas import GraphOut, GraphPageOut, PageEntityOut, ReadGraph

__all__ = ["Search", "graph_out", "open_nodes", "read_graph", "search_nodes"]

Search = Callable[[str, str], list[EntityView]]
"""search(workspace, query) -> matching entities, oldest first."""


def graph_out(
    graph: Graph, workspace: str, entities: Iterable[EntityView], as_of: int | None = None
) -> GraphOut:
    """`entities` and the relations touching them."""
    found = list(entities)
    relations = relations_touching(graph, workspace, (e.name for e in found))
    return GraphOut(
        entities=[entity_out(e) for e in found],
        relations=[relation_out(r) for r in relations],
        as_of=_or_unset(as_of),
    )


def read_graph(graph: Graph, args: ReadGraph, as_of: int | None = None) -> GraphPageOut:
    """The workspace's entities (a page of them, with limit/offset) and their relations.

    A page lists the relations whose `from` entity is on it, so paging through the
    whole graph lists every relation once. summaryMode leaves out all but names and types.
    """
    ws = args.workspace
    limit = None if args.limit is UNSET else args.limit
    records = list(graph.entities(ws, args.offset, limit))
    if args.summary_mode:
        entities = [PageEntityOut(name=e.name, entity_type=e.entity_type) for e in records]
    else:
        entities = [entity_out(e, PageEntityOut) for e in records]
    if limit is None and args.offset == 0:
        relations = [relation_out(r) for r in graph.relations(ws)]
        return GraphPageOut(entities=entities, relations=relations, as_of=_or_unset(as_of))
    on_page = {e.name for e in records}
    relations = [
        relation_out(r) for r in relations_touching(graph, ws, on_page) if r.source in on_page
    ]
    totals = graph.workspace(ws)
    total = 0 if totals is None else totals.entities
    more = args.offset + len(records) < total
    return GraphPageOut(
        entities=entities, relations=relations, total_entities=total,
        next_offset=args.offset + len(records) if more else UNSET, as_of=_or_unset(as_of),
    )


def _or_unset(value: int | None) -> int | UnsetType:
    return UNSET if value is None else value


def search_nodes(
    graph: Graph, workspace: str, query: str, search: Search | None = None, as_of: int | None = None
) -> GraphOut:
    """Entities whose name, type or an observation contains `query` (any case), with their
    relations. `search` answers from an index; without one, every entity is checked."""
    if search is not None:
        found = search(workspace, query)
    else:
        found = [e for e in graph.entities(workspace) if matches(e, query)]
    return graph_out(graph, workspace, found, as_of)


def open_nodes(graph: Graph, workspace: str, names: Iterable[str], as_of: int | None = None) -> GraphOut:
    """The named entities that exist, in creation order, with their relations."""
    found = [e for name in dict.fromkeys(names) if (e := graph.entity(workspace, name)) is not None]
    found.sort(key=lambda entity: entity.seq)
    return graph_out(graph, workspace, found, as_of)
