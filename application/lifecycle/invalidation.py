"""Ending a fact's validity without erasing it: `invalidate_observations`, `invalidate_relations`."""

from __future__ import annotations

from typing import Annotated, Any

from chronograph.application.core.entities import plural
from chronograph.application.core.validtime import ValidTime, moment_of
from chronograph.application.engine.arguments import Args, D, Items, Name, ObservationList, RelationKey, WriteArgs
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import EntityOut, Out, RelationOut, entity_out, relation_out
from chronograph.application.engine.registry import CORE
from chronograph.application.errors import InvalidArgumentsError, NotFoundError
from chronograph.eventstore import ObservationsInvalidated, RelationInvalidated, clock
from msgspec import UNSET, UnsetType

__all__ = ["InvalidateObservations", "InvalidateRelations"]

AT = D(description="When it stopped being true")


class Invalidation(Args, kw_only=True):
    entity_name: Name
    observations: ObservationList
    at: Annotated[ValidTime, AT] | UnsetType = UNSET


class InvalidateObservations(WriteArgs, kw_only=True):
    observations: Items[Invalidation]


class InvalidatedOut(Out, kw_only=True):
    message: str
    entities: list[EntityOut]


def _at(batch: Batch, tool: str, where: str, at: Any) -> int:
    return batch.recorded_at if at is UNSET else moment_of(tool, f"{where}at", at)


@CORE.command("invalidate_observations", "Invalidate Observations",
              "End observations' validity at a time (default now); nothing is erased")
def invalidate_observations(batch: Batch, args: InvalidateObservations) -> InvalidatedOut:
    tool = "invalidate_observations"
    touched: dict[str, None] = {}
    ended: set[tuple[str, str]] = set()  # (entity, observation): one named again is counted once
    for index, item in enumerate(args.observations):
        entity = batch.entity(item.entity_name)
        if entity is None:
            raise NotFoundError(f"Entity with name {item.entity_name} not found; nothing was written")
        at = _at(batch, tool, f"observations[{index}].", item.at)
        observations = tuple(dict.fromkeys(item.observations))  # one named twice is invalidated once
        for observation in observations:
            if observation not in entity.observations:
                raise NotFoundError(f"{item.entity_name!r} has no observation {observation!r}; nothing was written")
            start, end = entity.validity.get(observation, (None, None))
            if end is not None and end <= at:
                raise InvalidArgumentsError(tool, f"observations[{index}].observations: {observation!r} of "
                                            f"{item.entity_name!r} is already invalid since {clock.isoformat(end)}")
            if start is not None and at <= start:
                raise InvalidArgumentsError(tool, f"observations[{index}].at: before the observation's validFrom "
                                            f"{clock.isoformat(start)}")
        batch.emit(entity.stream, ObservationsInvalidated(observations=observations, at=at))
        ended.update((entity.stream, o) for o in observations)
        touched[item.entity_name] = None
    count = len(ended)
    outs = [entity_out(record) for name in touched if (record := batch.entity(name)) is not None]
    return InvalidatedOut(message=f"Invalidated {count} {plural(count, 'observation', 'observations')}",
                          entities=outs)


class RelationInvalidation(RelationKey, kw_only=True):
    at: Annotated[ValidTime, AT] | UnsetType = UNSET


class InvalidateRelations(WriteArgs, kw_only=True):
    relations: Items[RelationInvalidation]


class InvalidatedRelationsOut(Out, kw_only=True):
    message: str
    relations: list[RelationOut]


@CORE.command("invalidate_relations", "Invalidate Relations",
              "End relations' validity at a time (default now); nothing is erased")
def invalidate_relations(batch: Batch, args: InvalidateRelations) -> InvalidatedRelationsOut:
    tool = "invalidate_relations"
    done = []
    for index, item in enumerate(args.relations):
        relation = batch.relation(item.source, item.relation_type, item.target)
        if relation is None:
            raise NotFoundError(f"Relation {item.label} not found; nothing was written")
        at = _at(batch, tool, f"relations[{index}].", item.at)
        if relation.valid_until is not None and relation.valid_until <= at:
            raise InvalidArgumentsError(tool, f"relations[{index}]: {item.label} is already invalid since "
                                        f"{clock.isoformat(relation.valid_until)}")
        if relation.valid_from is not None and at <= relation.valid_from:
            raise InvalidArgumentsError(tool, f"relations[{index}].at: before the relation's validFrom "
                                        f"{clock.isoformat(relation.valid_from)}")
        batch.emit(relation.stream, RelationInvalidated(at=at))
        done.append(item)
    outs = [relation_out(r) for item in done
            if (r := batch.relation(item.source, item.relation_type, item.target)) is not None]
    return InvalidatedRelationsOut(message=f"Invalidated {len(done)} {plural(len(done), 'relation', 'relations')}",
                                   relations=outs)
