"""Write commands: validate against the live views, decide the events, say what the output is.

Each command runs inside one write transaction (see `server.memory`). It only reads
through its `Batch` and records events there; it returns a function that builds the
tool's output once the events are appended and folded, so the output shows the
versions and timestamps that were really stored. Anything it raises leaves the store
untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from msgspec import UNSET

from eventstore import (
    ContextUpdated,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    ObservationsAdded,
    ObservationsDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
)
from projections import EntityRecord, context_stream, new_entity_stream, relation_stream, stream_history, unique
from projections.working import Entity, Relation
from server import more_schemas as m
from server import schemas as s
from server.batch import Batch
from server.errors import ConflictError, InvalidArgumentsError, NotFoundError
from server.insights import context_out
from server.outputs import entity_out, relation_out

__all__ = ["COMMANDS", "Command", "Finish"]

Finish = Callable[[], s.Out]
"""Builds the output after the append, from what was stored."""


def _entity_label(name: str) -> str:
    return f"entity {name!r}"


def _relation_label(source: str, relation_type: str, target: str) -> str:
    return f"relation {source!r} -[{relation_type}]-> {target!r}"


def create_entities(batch: Batch, args: s.CreateEntities) -> Finish:
    """New names are created (once, even if repeated in the call); existing ones skipped."""
    created: list[str] = []
    for item in args.entities:
        current = batch.entity(item.name)
        batch.check(_entity_label(item.name), item.expected_version, current)
        if current is not None:
            continue
        stream = new_entity_stream()
        metadata = {} if item.metadata is UNSET else item.metadata
        event = EntityCreated(
            workspace=batch.workspace, name=item.name, entity_type=item.entity_type,
            observations=unique(item.observations), metadata=metadata,
        )
        version = batch.emit(stream, event, new=True)
        batch.track_entity(item.name, Entity(
            stream, batch.workspace, item.name, item.entity_type,
            dict.fromkeys(event.observations), metadata, version, 0, 0, 0,
        ))
        created.append(item.name)

    def finish() -> s.Out:
        return s.EntitiesOut(entities=[_stored_entity(batch, name) for name in created])

    return finish


def create_relations(batch: Batch, args: s.CreateRelations) -> Finish:
    """New relations between existing entities; existing triples skipped, missing ends refused."""
    missing = [
        name
        for item in args.relations
        for name in (item.source, item.target)
        if batch.entity(name) is None
    ]
    if missing:
        names = ", ".join(repr(name) for name in unique(missing))
        raise NotFoundError(
            f"Cannot create relations: no entity named {names} in workspace "
            f"{batch.workspace!r}. Create the entities first; nothing was written."
        )
    created: list[tuple[str, str, str]] = []
    for item in args.relations:
        identity = (item.source, item.relation_type, item.target)
        current = batch.relation(*identity)
        batch.check(_relation_label(*identity), item.expected_version, current)
        if current is not None:
            continue
        stream = relation_stream(batch.workspace, *identity)
        confidence = None if item.confidence is UNSET else item.confidence
        metadata = {} if item.metadata is UNSET else item.metadata
        version = batch.emit(stream, RelationCreated(
            workspace=batch.workspace, source=item.source, target=item.target,
            relation_type=item.relation_type, confidence=confidence, metadata=metadata,
        ))
        batch.track_relation(Relation(
            stream, batch.workspace, item.source, item.target, item.relation_type,
            confidence, metadata, version, 0, 0, 0,
        ), alive=True)
        created.append(identity)

    def finish() -> s.Out:
        return s.RelationsOut(relations=[_stored_relation(batch, *identity) for identity in created])

    return finish


def add_observations(batch: Batch, args: s.AddObservations) -> Finish:
    """New observations for existing entities; a missing entity fails the whole call."""
    results = []
    for item in args.observations:
        entity = batch.entity(item.entity_name)
        if entity is None:
            raise NotFoundError(f"Entity with name {item.entity_name} not found")
        batch.check(_entity_label(item.entity_name), item.expected_version, entity)
        new = [c for c in unique(item.contents) if c not in entity.observations]
        if new:
            entity.version = batch.emit(entity.stream, ObservationsAdded(observations=tuple(new)))
            entity.observations.update(dict.fromkeys(new))
        results.append(s.AddedOut(entity_name=item.entity_name, added_observations=new))

    def finish() -> s.Out:
        return s.AddObservationsOut(results=results)

    return finish


def delete_entities(batch: Batch, args: s.DeleteEntities) -> Finish:
    """Entities and every relation touching them; names that do not exist are reported."""
    expected = {} if args.expected_versions is UNSET else args.expected_versions
    unknown = set(expected) - set(args.entity_names)
    if unknown:
        raise InvalidArgumentsError(
            "delete_entities",
            f"expectedVersions names {sorted(unknown)!r}, which are not in entityNames",
        )
    deleted, relations, not_found = 0, 0, []
    for name in unique(args.entity_names):
        entity = batch.entity(name)
        batch.check(_entity_label(name), expected.get(name, UNSET), entity)
        if entity is None:
            not_found.append(name)
            continue
        for relation in batch.relations_of(name):
            batch.emit(relation.stream, RelationDeleted())
            batch.track_relation(relation, alive=False)
            relations += 1
        batch.emit(entity.stream, EntityDeleted())
        batch.track_entity(name, None)
        deleted += 1
    message = f"Deleted {deleted} {_plural(deleted, 'entity', 'entities')}"
    message += f" and {relations} {_plural(relations, 'relation', 'relations')} touching them"
    message += _missing(not_found)

    def finish() -> s.Out:
        return s.DeletedOut(
            success=True, message=message, deleted=deleted, not_found=not_found,
            relations_deleted=relations,
        )

    return finish


def delete_observations(batch: Batch, args: s.DeleteObservations) -> Finish:
    """Observations that exist are removed; missing entities and observations are reported."""
    deleted, not_found = 0, []
    for item in args.deletions:
        entity = batch.entity(item.entity_name)
        batch.check(_entity_label(item.entity_name), item.expected_version, entity)
        if entity is None:
            not_found.append(item.entity_name)
            continue
        wanted = unique(item.observations)
        present = [o for o in wanted if o in entity.observations]
        not_found.extend(f"{item.entity_name}: {o}" for o in wanted if o not in entity.observations)
        if present:
            entity.version = batch.emit(entity.stream, ObservationsDeleted(observations=tuple(present)))
            for observation in present:
                del entity.observations[observation]
            deleted += len(present)
    message = f"Deleted {deleted} {_plural(deleted, 'observation', 'observations')}" + _missing(not_found)

    def finish() -> s.Out:
        return s.DeletedOut(success=True, message=message, deleted=deleted, not_found=not_found)

    return finish


def delete_relations(batch: Batch, args: s.DeleteRelations) -> Finish:
    """Relations that exist are removed; the others are reported."""
    deleted, not_found = 0, []
    for item in args.relations:
        identity = (item.source, item.relation_type, item.target)
        relation = batch.relation(*identity)
        batch.check(_relation_label(*identity), item.expected_version, relation)
        if relation is None:
            not_found.append(f"{item.source} -[{item.relation_type}]-> {item.target}")
            continue
        batch.emit(relation.stream, RelationDeleted())
        batch.track_relation(relation, alive=False)
        deleted += 1
    message = f"Deleted {deleted} {_plural(deleted, 'relation', 'relations')}" + _missing(not_found)

    def finish() -> s.Out:
        return s.DeletedOut(success=True, message=message, deleted=deleted, not_found=not_found)

    return finish


def update_entities(batch: Batch, args: s.UpdateEntities) -> Finish:
    """Replace the type, observations and/or metadata of existing entities (version + 1)."""
    updated: list[str] = []
    for index, item in enumerate(args.entities):
        if item.entity_type is UNSET and item.observations is UNSET and item.metadata is UNSET:
            raise InvalidArgumentsError(
                "update_entities", f"entities[{index}]: nothing to update: give entityType, "
                "observations or metadata"
            )
        entity = batch.entity(item.name)
        if entity is None:
            raise NotFoundError(f"Entity with name {item.name} not found; nothing was written")
        batch.check(_entity_label(item.name), item.expected_version, entity)
        observations = UNSET if item.observations is UNSET else unique(item.observations)
        entity.version = batch.emit(entity.stream, EntityUpdated(
            entity_type=item.entity_type, observations=observations, metadata=item.metadata,
        ))
        if observations is not UNSET:
            entity.observations = dict.fromkeys(observations)
        if item.entity_type is not UNSET:
            entity.entity_type = item.entity_type
        if item.name not in updated:
            updated.append(item.name)

    def finish() -> s.Out:
        return s.EntitiesOut(entities=[_stored_entity(batch, name) for name in updated])

    return finish


def update_relations(batch: Batch, args: s.UpdateRelations) -> Finish:
    """Replace the confidence and/or metadata of existing relations (version + 1)."""
    updated: list[tuple[str, str, str]] = []
    for index, item in enumerate(args.relations):
        if item.confidence is UNSET and item.metadata is UNSET:
            raise InvalidArgumentsError(
                "update_relations", f"relations[{index}]: nothing to update: give confidence or metadata"
            )
        identity = (item.source, item.relation_type, item.target)
        relation = batch.relation(*identity)
        if relation is None:
            raise NotFoundError(
                f"Relation {item.source} -[{item.relation_type}]-> {item.target} not found; "
                "nothing was written"
            )
        batch.check(_relation_label(*identity), item.expected_version, relation)
        relation.version = batch.emit(relation.stream, RelationUpdated(
            confidence=item.confidence, metadata=item.metadata,
        ))
        if identity not in updated:
            updated.append(identity)

    def finish() -> s.Out:
        return s.RelationsOut(relations=[_stored_relation(batch, *identity) for identity in updated])

    return finish


def revert_entity(batch: Batch, args: m.RevertEntity) -> Finish:
    """Restore the state an entity had at `toVersion` by appending events (deleted ones too)."""
    streams = batch.state.name_streams(batch.workspace, args.name)
    if not streams:
        raise NotFoundError(f"Entity with name {args.name} not found")
    stream = streams[-1]  # the newest incarnation: the live one, if any is
    versions = {v.version: v for v in stream_history(batch.tx, stream)}
    target = versions.get(args.to_version)
    if target is None:
        raise InvalidArgumentsError(
            "revert_entity", f"toVersion: {args.name!r} has versions 1 to {max(versions)}"
        )
    if not isinstance(target.state, EntityRecord):
        raise InvalidArgumentsError(
            "revert_entity", f"toVersion: version {args.to_version} of {args.name!r} is its deletion; "
            "choose a version at which it existed"
        )
    live = batch.entity(args.name)
    batch.check(_entity_label(args.name), args.expected_version, live)
    state = target.state
    if live is not None:
        batch.emit(stream, EntityUpdated(
            entity_type=state.entity_type, observations=state.observations, metadata=state.metadata,
            reverted_to=args.to_version,
        ))
    else:
        batch.emit(stream, EntityCreated(
            workspace=batch.workspace, name=args.name, entity_type=state.entity_type,
            observations=state.observations, metadata=state.metadata, reverted_to=args.to_version,
        ))

    def finish() -> s.Out:
        return s.EntitiesOut(entities=[_stored_entity(batch, args.name)])

    return finish


def update_context(batch: Batch, args: m.UpdateContext) -> Finish:
    """Merge the given fields into the workspace's context (updatedAt set by the server)."""
    changes = {
        field: getattr(args, field)
        for field in ("active_task", "status", "reason", "next_steps", "last_commit")
        if getattr(args, field) is not UNSET
    }
    if not changes:
        raise InvalidArgumentsError(
            "update_context", "nothing to update: give activeTask, status, reason, nextSteps or lastCommit"
        )
    if isinstance(changes.get("next_steps"), list):
        changes["next_steps"] = tuple(changes["next_steps"])
    current = batch.state.context(batch.workspace)
    version = 0 if current is None else current.version
    if args.expected_version is not UNSET and args.expected_version != version:
        raise ConflictError(f"the context of workspace {batch.workspace!r}", args.expected_version, version,
                            context_out(batch.workspace, current))
    batch.emit(context_stream(batch.workspace), ContextUpdated(workspace=batch.workspace, **changes))

    def finish() -> s.Out:
        return context_out(batch.workspace, batch.state.context(batch.workspace))

    return finish


def _stored_entity(batch: Batch, name: str) -> s.EntityOut:
    record = batch.state.entity(batch.workspace, name)
    assert record is not None, f"entity {name!r} was written but is not in the views"
    return entity_out(record)


def _stored_relation(batch: Batch, source: str, relation_type: str, target: str) -> s.RelationOut:
    record = batch.state.relation(batch.workspace, source, relation_type, target)
    assert record is not None, "a relation was written but is not in the views"
    return relation_out(record)


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


def _missing(not_found: list[str]) -> str:
    if not not_found:
        return "."
    shown = ", ".join(repr(item) for item in not_found[:20])
    more = f" and {len(not_found) - 20} more" if len(not_found) > 20 else ""
    return f"; not found: {shown}{more}."


class Command(NamedTuple):
    """A write tool: how its arguments parse, what it decides, what it returns."""

    arguments: type[s.WriteArgs]
    decide: Callable[[Batch, Any], Finish]
    output: type[s.Out]


COMMANDS: dict[str, Command] = {
    "create_entities": Command(s.CreateEntities, create_entities, s.EntitiesOut),
    "create_relations": Command(s.CreateRelations, create_relations, s.RelationsOut),
    "add_observations": Command(s.AddObservations, add_observations, s.AddObservationsOut),
    "delete_entities": Command(s.DeleteEntities, delete_entities, s.DeletedOut),
    "delete_observations": Command(s.DeleteObservations, delete_observations, s.DeletedOut),
    "delete_relations": Command(s.DeleteRelations, delete_relations, s.DeletedOut),
    "update_entities": Command(s.UpdateEntities, update_entities, s.EntitiesOut),
    "update_relations": Command(s.UpdateRelations, update_relations, s.RelationsOut),
    "revert_entity": Command(m.RevertEntity, revert_entity, s.EntitiesOut),
    "update_context": Command(m.UpdateContext, update_context, m.ContextOut),
}
"""Every write tool, by name."""
