"""An entity's identity: renaming it, and merging duplicates into one (`rename_entity`,
`merge_entities`).

Both are events on the entities' own streams, so history keeps every name and every
duplicate, and `revert_entity` undoes them. Relations are keyed by the names they join,
so when a name changes each relation touching it is deleted under the old names and
created under the new ones in the same call (its history records both).
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from chronograph.application.core.guards import check_entity
from chronograph.application.core.validtime import additions, relation_span, restated, statement
from chronograph.application.engine.arguments import D, Items, Name, Version, WriteArgs, metadata_problem
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.jsonvalues import same_json
from chronograph.application.engine.outputs import EntitiesOut, entity_out
from chronograph.application.engine.registry import CORE
from chronograph.application.errors import DuplicateError, InvalidArgumentsError, NotFoundError
from chronograph.eventstore import (
    EntityMerged,
    EntityRenamed,
    EntityUpdated,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
)
from chronograph.projections import EntityRecord, RelationRecord, relation_stream
from msgspec import UNSET, UnsetType

__all__ = ["MergeEntities", "MergedOut", "RenameEntity", "created_again", "move_relations", "rename"]


def move_relations(batch: Batch, old: str, new: str, *, drop_loops: bool = False) -> int:
    """Re-key every live relation touching `old` to `new`; return how many moved.

    A relation the new name already has is not duplicated: the one held takes what the moved one
    says that it does not (`_joined`); with `drop_loops` (a merge), a relation that would join `new`
    to itself is dropped rather than moved.
    """
    moved = 0
    for relation in batch.relations_of(old):
        source = new if relation.source == old else relation.source
        target = new if relation.target == old else relation.target
        batch.emit(relation.stream, RelationDeleted())
        if drop_loops and source == target == new:
            continue
        held = batch.relation(source, relation.relation_type, target)
        if held is None:
            batch.emit(relation_stream(batch.workspace, source, relation.relation_type, target),
                       created_again(batch.workspace, relation, source, target))
            moved += 1
        else:
            _joined(batch, held, relation)
    return moved


def _joined(batch: Batch, held: RelationRecord, moved: RelationRecord) -> None:
    """`held` after a relation of the same ends and type (`moved`) joins it. When `moved` was true
    at times `held` does not say (`validtime.restated`: an expired relation does not hide a current
    one), `held` is made again with the span they give, and the confidence and metadata of the one
    whose span that is (`held`'s unless `moved`'s is the span); otherwise `held` stays. Either way
    it takes the other's metadata keys it lacks."""
    span = restated(relation_span(held), (moved.valid_from, moved.valid_until), batch.recorded_at)
    first, other = (moved, held) if span == (moved.valid_from, moved.valid_until) else (held, moved)
    metadata = {**first.metadata, **{k: v for k, v in other.metadata.items() if k not in first.metadata}}
    if span is None:
        if not same_json(metadata, held.metadata):
            batch.emit(held.stream, RelationUpdated(metadata=metadata))
        return
    made = msgspec.structs.replace(first, metadata=metadata, valid_from=span[0], valid_until=span[1],
                                   confidence=other.confidence if first.confidence is None else first.confidence)
    batch.emit(held.stream, RelationDeleted())
    batch.emit(held.stream, created_again(batch.workspace, made, held.source, held.target))


def created_again(workspace: str, relation: RelationRecord, source: str, target: str) -> RelationCreated:
    """`relation` made again between `source` and `target` with all it held: its confidence, its
    metadata and when it was true (its valid time, an invalidation's end included)."""
    return RelationCreated(
        workspace=workspace, source=source, target=target, relation_type=relation.relation_type,
        confidence=relation.confidence, metadata=relation.metadata,
        valid_from=UNSET if relation.valid_from is None else relation.valid_from,
        valid_until=UNSET if relation.valid_until is None else relation.valid_until)


def rename(batch: Batch, entity: EntityRecord, new_name: str) -> None:
    """Give `entity` the free name `new_name`, its relations following."""
    old = entity.name
    batch.emit(entity.stream, EntityRenamed(name=new_name, previous=old))
    move_relations(batch, old, new_name)


def _live(batch: Batch, name: str) -> EntityRecord:
    entity = batch.entity(name)
    if entity is None:
        raise NotFoundError(f"Entity with name {name} not found; nothing was written")
    return entity


class RenameEntity(WriteArgs, kw_only=True):
    name: Annotated[Name, D(description="The entity's current name")]
    new_name: Annotated[Name, D(description="The name it takes (must be free)")]
    expected_version: Version | UnsetType = UNSET


@CORE.command("rename_entity", "Rename Entity",
              "Rename an entity; its relations follow, its history stays reachable by the old name")
def rename_entity(batch: Batch, args: RenameEntity) -> EntitiesOut:
    """Rename one entity (version + 1), moving its relations to the new name."""
    check_entity(batch, args.name, args.expected_version, batch.entity(args.name))
    entity = _live(batch, args.name)
    if args.new_name == args.name:
        raise InvalidArgumentsError("rename_entity", "newName is the entity's name already")
    if batch.exists(args.new_name):
        raise DuplicateError(f"An entity named {args.new_name} exists already in workspace {batch.workspace!r}; "
                             "merge the two with merge_entities instead; nothing was written")
    rename(batch, entity, args.new_name)
    renamed = batch.entity(args.new_name)
    assert renamed is not None
    return EntitiesOut(entities=[entity_out(renamed)])


class MergeEntities(WriteArgs, kw_only=True):
    target: Annotated[Name, D(description="The entity that stays")]
    sources: Annotated[Items[Name], D(description="The duplicates (they leave the graph)")]
    expected_version: Version | UnsetType = UNSET


class MergedOut(EntitiesOut, kw_only=True):
    metadata_conflicts: Annotated[list[str], D(
        description="Metadata keys a source gave another value: the target's was kept")] | UnsetType = UNSET


@CORE.command("merge_entities", "Merge Entities",
              "Merge duplicates into the target: observations, relations and metadata keys it lacks move there; "
              "histories stay (revert_entity undoes it)")
def merge_entities(batch: Batch, args: MergeEntities) -> MergedOut:
    """Move each source's observations, relations and metadata onto the target, then retire the source.

    Raises:
        InvalidArgumentsError: If the sources are none, repeated or the target, or the metadata
            joined would be past its limit.
        NotFoundError: If the target or a source is not live.
    """
    check_entity(batch, args.target, args.expected_version, batch.entity(args.target))
    target = _live(batch, args.target)
    if not args.sources:
        raise InvalidArgumentsError("merge_entities", "sources: name at least one duplicate to merge")
    if args.target in args.sources:
        raise InvalidArgumentsError("merge_entities", f"sources: {args.target!r} cannot be merged into itself")
    if len(set(args.sources)) < len(args.sources):
        raise InvalidArgumentsError("merge_entities", "sources: a name is given twice")
    sources = [_live(batch, name) for name in args.sources]
    conflicts: dict[str, None] = {}
    for source in sources:
        held, now = set(target.observations), batch.recorded_at
        stated = [(o, span) for o in source.observations
                  if (span := statement(target, held, o, source.validity.get(o, (None, None)), now)) is not None]
        for added in additions(stated, moved_from=source.stream):  # with when each was true, and where from
            batch.emit(target.stream, added)
        metadata = {**target.metadata, **{k: v for k, v in source.metadata.items() if k not in target.metadata}}
        conflicts.update((k, None) for k, v in source.metadata.items() if k in target.metadata and
                         not same_json(target.metadata[k], v))
        if not same_json(metadata, target.metadata):
            if (problem := metadata_problem(metadata)) is not None:
                raise InvalidArgumentsError("merge_entities", f"sources: {source.name!r}'s metadata joined to "
                                            f"{args.target!r}'s {problem}; nothing was written")
            batch.emit(target.stream, EntityUpdated(metadata=metadata))
        move_relations(batch, source.name, args.target, drop_loops=True)
        batch.emit(source.stream, EntityMerged(into=args.target))
        target = _live(batch, args.target)
    return MergedOut(entities=[entity_out(target)], metadata_conflicts=list(conflicts) or UNSET)
