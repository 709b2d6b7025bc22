"""Read queries over a `Graph`: the live views or the graph as of a past moment.

They follow the official server: entities in the order they were created, and with a
search or an open, the relations with at least one end among the entities found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from projections import EntityRecord, Graph, matches, relations_touching
from server.outputs import entity_out, relation_out
from server.schemas import GraphOut

__all__ = ["Search", "graph_out", "open_nodes", "read_graph", "search_nodes"]

Search = Callable[[str, str], list[EntityRecord]]
"""search(workspace, query) -> matching entities, oldest first."""


def graph_out(graph: Graph, workspace: str, entities: Iterable[EntityRecord]) -> GraphOut:
    """`entities` and the relations touching them."""
    found = list(entities)
    relations = relations_touching(graph, workspace, (e.name for e in found))
    return GraphOut(
        entities=[entity_out(e) for e in found],
        relations=[relation_out(r) for r in relations],
    )


def read_graph(graph: Graph, workspace: str) -> GraphOut:
    """Every entity and relation of the workspace."""
    return GraphOut(
        entities=[entity_out(e) for e in graph.entities(workspace)],
        relations=[relation_out(r) for r in graph.relations(workspace)],
    )


def search_nodes(graph: Graph, workspace: str, query: str, search: Search | None = None) -> GraphOut:
    """Entities whose name, type or an observation contains `query` (any case), with their
    relations. `search` answers from an index; without one, every entity is checked."""
    if search is not None:
        found = search(workspace, query)
    else:
        found = [e for e in graph.entities(workspace) if matches(e, query)]
    return graph_out(graph, workspace, found)


def open_nodes(graph: Graph, workspace: str, names: Iterable[str]) -> GraphOut:
    """The named entities that exist, in creation order, with their relations."""
    found = [e for name in dict.fromkeys(names) if (e := graph.entity(workspace, name)) is not None]
    found.sort(key=lambda entity: entity.seq)
    return graph_out(graph, workspace, found)
