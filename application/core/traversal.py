"""Traversal: the entities reachable from one entity, nearest first, with the paths that reach them."""

from __future__ import annotations

from collections import deque
from typing import Annotated, Literal

from chronograph.application.core.history import Limit
from chronograph.application.core.validtime import hide_invalid, read_moment, valid_relation
from chronograph.application.engine.arguments import D, Items, Name, ReadArgs, TypeName
from chronograph.application.engine.outputs import EntityOut, Out, entity_out
from chronograph.application.engine.registry import CORE
from chronograph.application.engine.service import Memory
from chronograph.application.errors import NotFoundError
from msgspec import UNSET, Meta, UnsetType

__all__ = ["GetRelatedEntities", "RelatedEntitiesOut"]


class GetRelatedEntities(ReadArgs, kw_only=True):
    name: Annotated[Name, D(description="Where to start")]
    max_depth: Annotated[int, Meta(ge=1, le=6), D(description="How many hops at most")] = 2
    direction: Annotated[Literal["out", "in", "both"], D(
        description="Which way to follow relations")] = "both"
    relation_types: Annotated[Items[TypeName], D(description="Follow only these relation types")] | UnsetType = UNSET
    limit: Annotated[int, Limit, D(description="At most this many")] = 20
    include_metadata: bool = False


class RelatedOut(Out, kw_only=True):
    entity: EntityOut
    distance: Annotated[int, D(description="Hops from the start")]
    path: Annotated[list[str], D(description="Names from the start to this entity")]
    relation_path: Annotated[list[str], D(description="Relation types along the path")]
    confidence_path: Annotated[list[float | None], D(description="Confidence of each relation on the path")]


class RelatedEntitiesOut(Out, kw_only=True):
    start: str
    related: list[RelatedOut]


@CORE.query("get_related_entities", "Related Entities",
            "Entities within a few hops of one, nearest first, with the paths that reach them")
def get_related_entities(memory: Memory, args: GetRelatedEntities) -> RelatedEntitiesOut:
    """Breadth-first from `name`: nearest first, each with the path that reached it, over the
    relations true now, each entity with its observations true now.

    Raises:
        NotFoundError: If there is no entity called `name`.
    """
    with memory.timeline.at("get_related_entities") as moment:
        graph, ws = moment.graph, args.workspace
        if graph.entity(ws, args.name) is None:
            raise NotFoundError(f"Entity with name {args.name} not found")
        wanted = None if args.relation_types is UNSET else set(args.relation_types)
        now = read_moment("get_related_entities", UNSET)
        seen = {args.name}
        Step = tuple[str, list[str], list[str], list[float | None]]
        queue: deque[Step] = deque([(args.name, [args.name], [], [])])
        related: list[RelatedOut] = []
        while queue and len(related) < args.limit:
            name, path, kinds, confidences = queue.popleft()
            if len(kinds) == args.max_depth:
                continue
            for relation in graph.relations_of(ws, name, args.direction):
                if (wanted is not None and relation.relation_type not in wanted) or not valid_relation(relation, now):
                    continue
                other = relation.target if relation.source == name else relation.source
                if other in seen:
                    continue
                seen.add(other)
                record = graph.entity(ws, other)
                if record is None:
                    continue
                step = (other, [*path, other], [*kinds, relation.relation_type], [*confidences, relation.confidence])
                shown = entity_out(record, metadata=args.include_metadata)
                hide_invalid([shown], [record], now)
                related.append(RelatedOut(
                    entity=shown, distance=len(step[2]), path=step[1],
                    relation_path=step[2], confidence_path=step[3],
                ))
                if len(related) == args.limit:
                    break
                queue.append(step)
    return RelatedEntitiesOut(start=args.name, related=related)
