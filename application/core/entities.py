"""Entity commands: create, add observations, update, delete (entities and observations)."""

from __future__ import annotations

from typing import Annotated

from chronograph.application.core.guards import check_entity
from chronograph.application.core.validtime import additions, span_of, statement
from chronograph.application.engine.arguments import (
    Args,
    D,
    Items,
    Metadata,
    Name,
    ObservationList,
    TypeName,
    Version,
    WriteArgs,
)
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import (
    ENTITY_NAME,
    ENTITY_TYPE,
    OBSERVATIONS,
    DeletedOut,
    EntitiesOut,
    Out,
    entity_out,
)
from chronograph.application.engine.registry import CORE
from chronograph.application.errors import InvalidArgumentsError, NotFoundError
from chronograph.eventstore import (
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    ObservationsDeleted,
    RelationDeleted,
)
from chronograph.projections import EntityRecord, new_entity_stream, unique
from msgspec import UNSET, Meta, UnsetType

__all__ = [
    "AddObservations",
    "AddObservationsOut",
    "CreateEntities",
    "DeleteEntities",
    "DeleteObservations",
    "UpdateEntities",
    "entity_label",
    "plural",
    "missing",
]

METADATA = D(description="Free-form JSON object stored with the item")


def entity_label(name: str) -> str:
    """How messages name an entity."""
    return f"entity {name!r}"


def plural(count: int, one: str, many: str) -> str:
    """`one` or `many`, as `count` wants."""
    return one if count == 1 else many


def missing(not_found: list[str]) -> str:
    """The end of a deletion message: "." or "; not found: ..."."""
    if not not_found:
        return "."
    shown = ", ".join(repr(item) for item in not_found[:20])
    more = f" and {len(not_found) - 20} more" if len(not_found) > 20 else ""
    return f"; not found: {shown}{more}."


class NewEntity(Args, kw_only=True):
    name: Annotated[Name, ENTITY_NAME]
    entity_type: Annotated[TypeName, ENTITY_TYPE]
    observations: Annotated[ObservationList, OBSERVATIONS]
    metadata: Annotated[Metadata, METADATA] | UnsetType = UNSET
    expected_version: Version | UnsetType = UNSET


class CreateEntities(WriteArgs, kw_only=True):
    entities: Items[NewEntity]


@CORE.command("create_entities", "Create Entities", "Create multiple new entities in the knowledge graph")
def create_entities(batch: Batch, args: CreateEntities) -> EntitiesOut:
    """New names are created (once, even if repeated in the call); existing ones skipped."""
    created: list[str] = []
    for item in args.entities:
        current = batch.entity(item.name)
        check_entity(batch, item.name, item.expected_version, current)
        if current is not None:
            continue
        batch.emit(new_entity_stream(), EntityCreated(
            workspace=batch.workspace, name=item.name, entity_type=item.entity_type,
            observations=tuple(unique(item.observations)), metadata={} if item.metadata is UNSET else item.metadata,
        ), new=True)
        created.append(item.name)
    return EntitiesOut(entities=[entity_out(_live(batch, name)) for name in created])


class ObservationAddition(Args, kw_only=True):
    entity_name: Annotated[Name, D(description="The name of the entity to add the observations to")]
    contents: Annotated[ObservationList, D(description="An array of observation contents to add")]
    expected_version: Version | UnsetType = UNSET
    valid_from: Annotated[str, Meta(max_length=64), D(description="When they became true")] | UnsetType = UNSET
    valid_until: Annotated[str, Meta(max_length=64), D(description="When they stopped")] | UnsetType = UNSET


class AddObservations(WriteArgs, kw_only=True):
    observations: Items[ObservationAddition]


class AddedOut(Out, kw_only=True):
    entity_name: str
    added_observations: list[str]


class AddObservationsOut(Out, kw_only=True):
    results: list[AddedOut]


@CORE.command("add_observations", "Add Observations",
              "Add new observations to existing entities in the knowledge graph")
def add_observations(batch: Batch, args: AddObservations) -> AddObservationsOut:
    """New observations for existing entities (and held ones stated again, see `validtime.restated`);
    a missing entity fails the whole call."""
    results = []
    for index, item in enumerate(args.observations):
        start, end = span_of("add_observations", f"observations[{index}].", item.valid_from, item.valid_until)
        entity = batch.entity(item.entity_name)
        check_entity(batch, item.entity_name, item.expected_version, entity)
        if entity is None:
            raise NotFoundError(f"Entity with name {item.entity_name} not found")
        held, span = set(entity.observations), (None if start is UNSET else start, None if end is UNSET else end)
        stated = [(c, s) for c in unique(item.contents)
                  if (s := statement(entity, held, c, span, batch.recorded_at)) is not None]
        for event in additions(stated):
            batch.emit(entity.stream, event)
        results.append(AddedOut(entity_name=item.entity_name, added_observations=[c for c, _ in stated]))
    return AddObservationsOut(results=results)


class DeleteEntities(WriteArgs, kw_only=True):
    entity_names: Annotated[Items[Name], D(description="An array of entity names to delete")]
    expected_versions: Annotated[dict[Name, Version], D(
        description="Entity name -> the version it must be at")] | UnsetType = UNSET


@CORE.command("delete_entities", "Delete Entities",
              "Delete multiple entities and their associated relations from the knowledge graph", kind="delete")
def delete_entities(batch: Batch, args: DeleteEntities) -> DeletedOut:
    """Entities and every relation touching them; names that do not exist are reported."""
    expected = {} if args.expected_versions is UNSET else args.expected_versions
    unknown = set(expected) - set(args.entity_names)
    if unknown:
        raise InvalidArgumentsError(
            "delete_entities", f"expectedVersions names {sorted(unknown)!r}, which are not in entityNames"
        )
    deleted, relations, not_found = 0, 0, []
    for name in unique(args.entity_names):
        entity = batch.entity(name)
        check_entity(batch, name, expected.get(name, UNSET), entity)
        if entity is None:
            not_found.append(name)
            continue
        for relation in batch.relations_of(name):
            batch.emit(relation.stream, RelationDeleted())
            relations += 1
        batch.emit(entity.stream, EntityDeleted())
        deleted += 1
    message = f"Deleted {deleted} {plural(deleted, 'entity', 'entities')}"
    message += f" and {relations} {plural(relations, 'relation', 'relations')} touching them"
    return DeletedOut(success=True, message=message + missing(not_found), deleted=deleted, not_found=not_found or UNSET,
                      relations_deleted=relations)


class ObservationDeletion(Args, kw_only=True):
    entity_name: Annotated[Name, D(description="The name of the entity containing the observations")]
    observations: Annotated[ObservationList, D(description="An array of observations to delete")]
    expected_version: Version | UnsetType = UNSET


class DeleteObservations(WriteArgs, kw_only=True):
    deletions: Items[ObservationDeletion]


@CORE.command("delete_observations", "Delete Observations",
              "Delete specific observations from entities in the knowledge graph", kind="delete")
def delete_observations(batch: Batch, args: DeleteObservations) -> DeletedOut:
    """Observations that exist are removed; missing entities and observations are reported."""
    deleted, not_found = 0, []
    for item in args.deletions:
        entity = batch.entity(item.entity_name)
        check_entity(batch, item.entity_name, item.expected_version, entity)
        if entity is None:
            not_found.append(item.entity_name)
            continue
        wanted = unique(item.observations)
        present = set(entity.observations)
        gone = [o for o in wanted if o in present]
        not_found.extend(f"{item.entity_name}: {o}" for o in wanted if o not in present)
        if gone:
            batch.emit(entity.stream, ObservationsDeleted(observations=tuple(gone)))
            deleted += len(gone)
    message = f"Deleted {deleted} {plural(deleted, 'observation', 'observations')}" + missing(not_found)
    return DeletedOut(success=True, message=message, deleted=deleted, not_found=not_found or UNSET)


class EntityChange(Args, kw_only=True):
    name: Annotated[Name, D(description="The name of the entity to update")]
    entity_type: Annotated[TypeName, D(description="The new type of the entity")] | UnsetType = UNSET
    observations: Annotated[ObservationList, D(description="Replaces all of the entity's observations")] | UnsetType = (
        UNSET
    )
    metadata: Annotated[Metadata, D(description="Replaces the entity's metadata")] | UnsetType = UNSET
    expected_version: Version | UnsetType = UNSET


class UpdateEntities(WriteArgs, kw_only=True):
    entities: Items[EntityChange]


@CORE.command("update_entities", "Update Entities",
              "Replace entities' type, all observations and/or metadata (version + 1); add_observations "
              "adds without replacing")
def update_entities(batch: Batch, args: UpdateEntities) -> EntitiesOut:
    """Replace the type, observations and/or metadata of existing entities (version + 1)."""
    updated: list[str] = []
    for index, item in enumerate(args.entities):
        if item.entity_type is UNSET and item.observations is UNSET and item.metadata is UNSET:
            raise InvalidArgumentsError(
                "update_entities", f"entities[{index}]: nothing to update: give entityType, observations or metadata"
            )
        entity = batch.entity(item.name)
        check_entity(batch, item.name, item.expected_version, entity)
        if entity is None:
            raise NotFoundError(f"Entity with name {item.name} not found; nothing was written")
        observations = UNSET if item.observations is UNSET else tuple(unique(item.observations))
        batch.emit(entity.stream, EntityUpdated(
            entity_type=item.entity_type, observations=observations, metadata=item.metadata,
        ))
        if item.name not in updated:
            updated.append(item.name)
    return EntitiesOut(entities=[entity_out(_live(batch, name)) for name in updated])


def _live(batch: Batch, name: str) -> EntityRecord:
    record = batch.entity(name)
    assert record is not None, f"entity {name!r} was decided but is not in the overlay"
    return record
