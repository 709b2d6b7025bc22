"""Reading the graph: read_graph and open_nodes, now or as of a past moment (search: search.py).

They follow the official server: entities in the order they were created, and with an
open, the relations with at least one end among the entities found.
"""

from __future__ import annotations

from typing import Annotated

from chronograph.application.core.provenance import provenance_of
from chronograph.application.core.validtime import VALID_AT, ValidTime, hide_invalid, read_moment, valid_relation
from chronograph.application.engine.arguments import AsOf, D, Items, Name, ReadArgs
from chronograph.application.engine.outputs import (
    Out,
    PageEntityOut,
    RelationOut,
    entity_out,
    relation_out,
)
from chronograph.application.engine.registry import CORE
from chronograph.application.engine.service import Memory
from chronograph.projections import Graph, relations_touching
from msgspec import UNSET, Meta, UnsetType

__all__ = ["GraphPageOut", "OpenNodes", "ReadGraph"]


# --- read_graph ---------------------------------------------------------------------------------


class ReadGraph(ReadArgs, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=100_000), D(
        description="At most this many entities, oldest first, with the relations from them")] | UnsetType = UNSET
    offset: Annotated[int, Meta(ge=0), D(description="Skip this many entities first")] = 0
    summary_mode: Annotated[bool, D(description="Names and types only, for a quick index")] = False
    as_of: AsOf | UnsetType = UNSET
    valid_at: Annotated[ValidTime, VALID_AT] | UnsetType = UNSET


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
    moment = read_moment("read_graph", args.valid_at)
    records = list(graph.entities(ws, args.offset, limit))
    if args.summary_mode:
        entities = [PageEntityOut(name=e.name, entity_type=e.entity_type) for e in records]
    else:
        entities = [entity_out(e, PageEntityOut) for e in records]
        hide_invalid(entities, records, moment)
    if limit is None and args.offset == 0:
        return GraphPageOut(entities=entities, as_of=stamp, relations=[
            relation_out(r) for r in graph.relations(ws) if valid_relation(r, moment)])
    on_page = {e.name for e in records}
    relations = [relation_out(r) for r in relations_touching(graph, ws, on_page)
                 if r.source in on_page and valid_relation(r, moment)]
    totals = graph.workspace(ws)
    total = 0 if totals is None else totals.entities
    more = args.offset + len(records) < total
    return GraphPageOut(
        entities=entities, relations=relations, total_entities=total,
        next_offset=args.offset + len(records) if more else UNSET, as_of=stamp,
    )


# --- open_nodes ---------------------------------------------------------------------------------


class OpenNodes(ReadArgs, kw_only=True):
    names: Annotated[Items[Name], D(description="An array of entity names to retrieve")]
    summary_mode: Annotated[bool, D(description="Names and types only")] = False
    include_provenance: Annotated[bool, D(description="Each observation's recordedAt, actor and call")] = False
    as_of: AsOf | UnsetType = UNSET
    valid_at: Annotated[ValidTime, VALID_AT] | UnsetType = UNSET


@CORE.query("open_nodes", "Open Nodes", "Open specific nodes in the knowledge graph by their names")
def open_nodes(memory: Memory, args: OpenNodes) -> GraphPageOut:
    """The named entities that exist, in creation order, with their relations."""
    with memory.timeline.at("open_nodes", args.as_of) as moment:
        graph, ws = moment.graph, args.workspace
        found = [e for name in dict.fromkeys(args.names) if (e := graph.entity(ws, name)) is not None]
        found.sort(key=lambda entity: entity.seq)
        if args.summary_mode:
            entities = [PageEntityOut(name=e.name, entity_type=e.entity_type) for e in found]
        else:
            entities = [entity_out(e, PageEntityOut) for e in found]
            hide_invalid(entities, found, read_moment("open_nodes", args.valid_at))
            if args.include_provenance:
                for out, record in zip(entities, found, strict=True):
                    out.provenance = provenance_of(moment.log, record, moment.position)
        relations = relations_touching(graph, ws, (e.name for e in found))
        valid = read_moment("open_nodes", args.valid_at)
        return GraphPageOut(entities=entities, relations=[relation_out(r) for r in relations
                                                          if valid_relation(r, valid)],
                            as_of=UNSET if moment.position is None else moment.position)


