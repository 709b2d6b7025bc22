"""Reading the graph: read_graph and open_nodes, now or as of a past moment (search: search.py).

They follow the official server: entities in the order they were created, and with an
open, the relations with at least one end among the entities found.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

import msgspec
from chronograph.application.core.provenance import provenance_of
from chronograph.application.core.tenures import OPEN, last_bearer
from chronograph.application.core.validtime import VALID_AT, ValidTime, hide_invalid, read_moment, valid_relation
from chronograph.application.engine.arguments import AsOf, D, Items, Name, ReadArgs
from chronograph.application.engine.budget import ReplyBudget
from chronograph.application.engine.outputs import (
    Out,
    PageEntityOut,
    PageRelationOut,
    entity_out,
    page_relations,
)
from chronograph.application.engine.registry import CORE
from chronograph.application.engine.service import Memory
from chronograph.application.engine.timeline import Moment
from chronograph.eventstore import EntityMerged, EntityRenamed, clock
from chronograph.projections import ENTITY, RELATION, Graph, relations_touching
from msgspec import UNSET, Meta, UnsetType

__all__ = ["INDEX_FOR_REFUSAL", "GoneOut", "GraphPageOut", "OpenNodes", "ReadGraph", "refuse_early"]

READ_GRAPH_HINT = ("Page through it: read_graph with limit {fit} and offset {offset}, then each answer's "
                   "nextOffset; or summaryMode true for names and types only.")
READ_GRAPH_ALONE = ("Not even the entity at offset {offset} fits on its own: read_graph with summaryMode true gives "
                    "names and types only, and search_nodes with its name as the query and observationsLimit some "
                    "of its observations.")
INDEX_FOR_REFUSAL = 2000
"""Entities from which read_graph indexes a workspace that has no word index yet, to tell a reply
is over the limit without building it."""


# --- read_graph ---------------------------------------------------------------------------------


class ReadGraph(ReadArgs, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=100_000), D(
        description="At most this many entities, oldest first, with the relations from them")] | UnsetType = UNSET
    offset: Annotated[int, Meta(ge=0), D(description="Skip this many entities first")] = 0
    summary_mode: Annotated[bool, D(description="Names and types only, for a quick index")] = False
    include_metadata: bool = False
    as_of: AsOf | UnsetType = UNSET
    valid_at: Annotated[ValidTime, VALID_AT] | UnsetType = UNSET


class GoneOut(Out, kw_only=True):
    """A name asked for that names no entity now (or at asOf) but has history: what ended it."""

    name: str
    event: Annotated[str, D(description="What ended it: entity_deleted, entity_merged or entity_renamed")]
    position: Annotated[int, D(description="The log position of that event")]
    recorded_at: str
    into: Annotated[str, D(description="The entity it became: its new name, or the one it was merged into")] | (
        UnsetType) = UNSET
    hint: str


class GraphPageOut(Out, kw_only=True):
    entities: list[PageEntityOut]
    relations: list[PageRelationOut]
    total_entities: int | UnsetType = UNSET
    total_relations: int | UnsetType = UNSET
    entity_types: Annotated[dict[str, int], D(description="Entities per type (summaryMode)")] | UnsetType = UNSET
    relation_types: Annotated[dict[str, int], D(description="Relations per type (summaryMode)")] | UnsetType = UNSET
    next_offset: int | UnsetType = UNSET
    as_of: int | UnsetType = UNSET
    gone: Annotated[list[GoneOut], D(description="Names asked for that have history but no entity")] | (
        UnsetType) = UNSET

    ASIDE: ClassVar[tuple[str, ...]] = ("gone",)
    """Fields a profile that keeps the reference server's shape moves to the result's `_meta`."""


@CORE.query("read_graph", "Read Graph", "Read the entire knowledge graph")
def read_graph(memory: Memory, args: ReadGraph) -> GraphPageOut:
    """The workspace's entities (a page of them, with limit/offset) and their relations.

    A page lists the relations whose `from` entity is on it, so paging through the
    whole graph lists every relation once. summaryMode answers names, types and counts:
    each entity's name and type, each relation's ends and type, the workspace's totals
    and counts per type.
    """
    limit = memory.limit_for(read_graph)
    # The word indexes' lock before the snapshot, when the page may be refused early (see SearchIndex)
    with memory.views.search.holding(limit is not None) as done, memory.timeline.at("read_graph", args.as_of) as moment:
        if limit is not None and not moment.is_past:
            refuse_early(memory, moment, args, limit)
        done()  # the page is built without the word indexes: others may use them meanwhile
        return page(moment.graph, args, moment.position)


def refuse_early(memory: Memory, moment: Moment, args: ReadGraph, limit: int, tool: str = "read_graph",
                 hint: str = READ_GRAPH_HINT, alone: str = READ_GRAPH_ALONE) -> None:
    """Refuse a page whose reply will be over `limit` bytes before building it: the word index
    knows what each entity's answer must carry (see `ReplyBudget`). `tool` is the tool refusing
    (one whose answer carries at least the entities of this page), `hint` how to page it ({fit}:
    the page size that fits; {offset}: the page's), `alone` what to do when not one entity fits.

    Raises:
        ReplyTooLargeError: If even that lower bound is over the limit.
    """
    views, ws = memory.views, args.workspace
    totals = moment.graph.workspace(ws)
    if totals is None:
        return
    budget = ReplyBudget(tool, limit, summary=args.summary_mode)
    wanted = None if args.limit is UNSET else args.limit
    # A large workspace gets its word index now if it has none (kept for every later search and
    # refusal); a small one's answer is cheap enough to build and measure whole.
    snapshot = moment.snapshot
    with views.search.at(snapshot.log, snapshot.graph, ws, build=totals.entities >= INDEX_FOR_REFUSAL) as index:
        if index is None:
            return
        selection = index.everything()
        bound = budget.selection(selection, offset=args.offset, limit=wanted)
        if bound <= limit:
            return
        fits = budget.fitting(selection, offset=args.offset, limit=wanted)
        count = max(0, min(selection.count, selection.count if wanted is None else args.offset + wanted)
                    - args.offset)

    def sample(size: int) -> tuple[GraphPageOut, int]:
        few = msgspec.structs.replace(args, limit=size)
        answer = page(moment.graph, few, moment.position)
        return answer, len(answer.entities)

    raise budget.refuse(bound, count, sample, hint.format(fit="{fit}", offset=args.offset), fits=fits,
                        alone=alone.format(offset=args.offset))


def page(graph: Graph, args: ReadGraph, as_of: int | None = None) -> GraphPageOut:
    """A page of `graph` as read_graph answers it."""
    ws = args.workspace
    stamp = UNSET if as_of is None else as_of
    limit = None if args.limit is UNSET else args.limit
    moment = read_moment("read_graph", args.valid_at)
    records = list(graph.entities(ws, args.offset, limit))
    summary = args.summary_mode
    if summary:
        entities = [PageEntityOut(name=e.name, entity_type=e.entity_type) for e in records]
    else:
        entities = [entity_out(e, PageEntityOut, metadata=args.include_metadata) for e in records]
        hide_invalid(entities, records, moment)
    totals = graph.workspace(ws)
    total = 0 if totals is None else totals.entities
    paged = limit is not None or args.offset > 0
    if paged:
        on_page = {e.name for e in records}
        relations = page_relations((r for r in relations_touching(graph, ws, on_page)
                                    if r.source in on_page and valid_relation(r, moment)), summary,
                                   args.include_metadata)
    else:
        relations = page_relations((r for r in graph.relations(ws) if valid_relation(r, moment)), summary,
                                   args.include_metadata)
    answer = GraphPageOut(entities=entities, relations=relations, as_of=stamp)
    if paged:
        answer.total_entities = total
        if args.offset + len(records) < total:
            answer.next_offset = args.offset + len(records)
    if summary:
        answer.total_entities = total
        answer.total_relations = 0 if totals is None else totals.relations
        answer.entity_types = graph.type_counts(ws, ENTITY)
        answer.relation_types = graph.type_counts(ws, RELATION)
    return answer


# --- open_nodes ---------------------------------------------------------------------------------


class OpenNodes(ReadArgs, kw_only=True):
    names: Annotated[Items[Name], D(description="An array of entity names to retrieve")]
    summary_mode: Annotated[bool, D(description="Names and types only")] = False
    include_provenance: Annotated[bool, D(description="Each observation's recordedAt, actor and call")] = False
    include_metadata: bool = False
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
            entities = [entity_out(e, PageEntityOut, metadata=args.include_metadata) for e in found]
            hide_invalid(entities, found, read_moment("open_nodes", args.valid_at))
            if args.include_provenance:
                for out, record in zip(entities, found, strict=True):
                    out.provenance = provenance_of(moment.log, record, moment.position, out.observations)
        relations = relations_touching(graph, ws, (e.name for e in found))
        valid = read_moment("open_nodes", args.valid_at)
        gone = _gone(moment, ws, [n for n in dict.fromkeys(args.names) if n not in {e.name for e in found}])
        return GraphPageOut(entities=entities, relations=page_relations(
                                (r for r in relations if valid_relation(r, valid)), args.summary_mode,
                                args.include_metadata),
                            as_of=UNSET if moment.position is None else moment.position, gone=gone or UNSET)


def _gone(moment: Moment, ws: str, names: list[str]) -> list[GoneOut]:
    """For each name that answered nothing but has history (up to the moment read), the event
    that ended its last tenure: so an agent learns the entity was deleted, merged or renamed,
    and how to reach it, rather than that it never was."""
    end = moment.position if moment.position is not None else moment.log.head()
    gone = []
    for name in names:
        # the tenure that ended last, whichever entity bore it (the index lists the streams by
        # when each first bore the name)
        last = last_bearer(moment.log, moment.live.name_streams(ws, name), ws, name, end)
        if last is None or last[1].end == OPEN:
            continue
        envelope = moment.log.get(last[1].end)
        if envelope is None or envelope.type not in _HINTS:
            continue
        event = envelope.event
        into: str | UnsetType = UNSET
        if isinstance(event, EntityRenamed):
            into = event.name
        elif isinstance(event, EntityMerged):
            into = event.into
        gone.append(GoneOut(name=name, event=envelope.type, position=envelope.position,
                            recorded_at=clock.isoformat(envelope.recorded_at), into=into, hint=_HINTS[envelope.type]))
    return gone


_HINTS = {
    "entity_deleted": "get_entity_history shows its versions; revert_entity brings it back",
    "entity_merged": "open the entity it was merged into; revert_entity undoes the merge",
    "entity_renamed": "open it by its new name (into); its history stays reachable by this one",
}


