"""Relation commands: create, update, delete."""

from __future__ import annotations

from typing import Annotated

import msgspec
from chronograph.application.core.entities import METADATA, missing, plural
from chronograph.application.core.guards import check_relation
from chronograph.application.core.validtime import relation_span, restated, span_of
from chronograph.application.engine.arguments import (
    D,
    Items,
    Metadata,
    OfficialRelationKey,
    RelationKey,
    Version,
    WriteArgs,
)
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import DeletedOut, RelationsOut, relation_out
from chronograph.application.engine.registry import CORE
from chronograph.application.errors import InvalidArgumentsError, NotFoundError
from chronograph.eventstore import RelationCreated, RelationDeleted, RelationUpdated
from chronograph.projections import RelationRecord, relation_stream, unique
from msgspec import UNSET, UnsetType

__all__ = ["CreateRelations", "DeleteRelations", "UpdateRelations", "relation_label"]

CONFIDENCE = msgspec.Meta(ge=0, le=1, description="How sure the relation is, from 0 to 1")


def relation_label(key: RelationKey) -> str:
    """How messages name a relation."""
    return f"relation {key.source!r} -[{key.relation_type}]-> {key.target!r}"


class NewRelation(OfficialRelationKey, kw_only=True):
    confidence: Annotated[float, CONFIDENCE] | UnsetType = UNSET
    metadata: Annotated[Metadata, METADATA] | UnsetType = UNSET
    expected_version: Version | UnsetType = UNSET
    valid_from: Annotated[str, msgspec.Meta(max_length=64), D(description="When it became true")] | UnsetType = UNSET
    valid_until: Annotated[str, msgspec.Meta(max_length=64), D(description="When it stopped")] | UnsetType = UNSET


class CreateRelations(WriteArgs, kw_only=True):
    relations: Items[NewRelation]


@CORE.command("create_relations", "Create Relations",
              "Create multiple new relations between entities in the knowledge graph. "
              "Relations should be in active voice")
def create_relations(batch: Batch, args: CreateRelations) -> RelationsOut:
    """New relations between existing entities; missing ends refused. A triple the memory holds is
    skipped, unless it is no longer (or not yet) true: then it is stated again (`validtime.restated`),
    keeping its confidence and metadata unless the item gives them."""
    ends = dict.fromkeys(name for item in args.relations for name in (item.source, item.target))
    absent = [name for name in ends if not batch.exists(name)]  # each name looked up once, its entity not decoded
    for item in args.relations:  # a guard that an end gone since fails is a conflict, which says what became of it
        if item.source in absent or item.target in absent:
            check_relation(batch, item.source, item.relation_type, item.target, item.expected_version, None)
    if absent:
        names = ", ".join(repr(name) for name in unique(absent))
        raise NotFoundError(
            f"Cannot create relations: no entity named {names} in workspace "
            f"{batch.workspace!r}. Create the entities first; nothing was written."
        )
    created: list[RelationKey] = []
    for index, item in enumerate(args.relations):
        start, end = span_of("create_relations", f"relations[{index}].", item.valid_from, item.valid_until)
        current = batch.relation(item.source, item.relation_type, item.target)
        check_relation(batch, item.source, item.relation_type, item.target, item.expected_version, current)
        if current is None:
            stream = relation_stream(batch.workspace, item.source, item.relation_type, item.target)
            batch.emit(stream, stated(batch, item, None, start, end))
        else:
            span = restated(relation_span(current), (None if start is UNSET else start, None if end is UNSET else end),
                            batch.recorded_at)
            if span is None:
                continue
            batch.emit(current.stream, stated(batch, item, current, UNSET if span[0] is None else span[0],
                                              UNSET if span[1] is None else span[1]))
        created.append(item)
    return RelationsOut(relations=[relation_out(_live(batch, key)) for key in created])


def stated(batch: Batch, item: NewRelation, held: RelationRecord | None, start: int | UnsetType,
           end: int | UnsetType) -> RelationCreated:
    """The event that states `item` true from `start` until `end`: made, or (`held`) made again on
    its stream with the confidence and metadata it held where the item gives none."""
    return RelationCreated(
        workspace=batch.workspace, source=item.source, target=item.target, relation_type=item.relation_type,
        confidence=(None if held is None else held.confidence) if item.confidence is UNSET else item.confidence,
        metadata=({} if held is None else held.metadata) if item.metadata is UNSET else item.metadata,
        valid_from=start, valid_until=end)


class RelationRef(OfficialRelationKey, kw_only=True):
    expected_version: Version | UnsetType = UNSET


class DeleteRelations(WriteArgs, kw_only=True):
    relations: Annotated[Items[RelationRef], D(description="An array of relations to delete")]


@CORE.command("delete_relations", "Delete Relations", "Delete multiple relations from the knowledge graph",
              kind="delete")
def delete_relations(batch: Batch, args: DeleteRelations) -> DeletedOut:
    """Relations that exist are removed; the others are reported."""
    deleted, not_found = 0, []
    for item in args.relations:
        relation = batch.relation(item.source, item.relation_type, item.target)
        check_relation(batch, item.source, item.relation_type, item.target, item.expected_version, relation)
        if relation is None:
            not_found.append(item.label)
            continue
        batch.emit(relation.stream, RelationDeleted())
        deleted += 1
    message = f"Deleted {deleted} {plural(deleted, 'relation', 'relations')}" + missing(not_found)
    return DeletedOut(success=True, message=message, deleted=deleted, not_found=not_found or UNSET)


class RelationChange(RelationKey, kw_only=True):
    confidence: Annotated[float, CONFIDENCE] | UnsetType = UNSET
    metadata: Annotated[Metadata, D(description="Replaces the relation's metadata")] | UnsetType = UNSET
    expected_version: Version | UnsetType = UNSET


class UpdateRelations(WriteArgs, kw_only=True):
    relations: Items[RelationChange]


@CORE.command("update_relations", "Update Relations",
              "Change existing relations: replace their confidence and/or metadata (version + 1)")
def update_relations(batch: Batch, args: UpdateRelations) -> RelationsOut:
    """Replace the confidence and/or metadata of existing relations (version + 1)."""
    updated: dict[str, RelationKey] = {}
    for index, item in enumerate(args.relations):
        if item.confidence is UNSET and item.metadata is UNSET:
            raise InvalidArgumentsError(
                "update_relations", f"relations[{index}]: nothing to update: give confidence or metadata"
            )
        relation = batch.relation(item.source, item.relation_type, item.target)
        check_relation(batch, item.source, item.relation_type, item.target, item.expected_version, relation)
        if relation is None:
            raise NotFoundError(f"Relation {item.label} not found; nothing was written")
        batch.emit(relation.stream, RelationUpdated(confidence=item.confidence, metadata=item.metadata))
        updated.setdefault(relation.stream, item)
    return RelationsOut(relations=[relation_out(_live(batch, key)) for key in updated.values()])


def _live(batch: Batch, key: RelationKey) -> RelationRecord:
    record = batch.relation(key.source, key.relation_type, key.target)
    assert record is not None, f"relation {key.label} was decided but is not in the overlay"
    return record
