"""The fold: how one event changes the graph. One function for all three lifecycles.

`apply(state, envelope)` reads and writes through the `State` protocol, which is backed
by LMDB inside the append's transaction (inline), or by dictionaries (rebuild and
time travel). Handlers change working copies in place and then tell the state what
kind of change it was. The fold is total: an event on a stream it does not know is
ignored, so any log can be replayed, even one written by a buggy or foreign writer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from msgspec import UNSET

from eventstore import (
    ContextUpdated,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    Event,
    ObservationsAdded,
    ObservationsDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
)
from projections.working import Context, Entity, Relation

__all__ = ["State", "apply", "apply_all", "unique"]


class State(Protocol):
    """What the fold needs from a view of the graph."""

    def get_entity(self, stream: str) -> Entity | None: ...
    def live_entity(self, workspace: str, name: str) -> Entity | None: ...
    def add_entity(self, entity: Entity) -> None: ...
    def changed_entity(self, entity: Entity, old_type: str) -> None: ...
    def remove_entity(self, entity: Entity) -> None: ...
    def get_relation(self, stream: str) -> Relation | None: ...
    def add_relation(self, relation: Relation) -> None: ...
    def changed_relation(self, relation: Relation) -> None: ...
    def remove_relation(self, relation: Relation) -> None: ...
    def get_context(self, workspace: str) -> Context | None: ...
    def save_context(self, context: Context) -> None: ...


def unique(items: Iterable[str]) -> tuple[str, ...]:
    """`items` without repeats, first occurrence kept, order kept."""
    return tuple(dict.fromkeys(items))


def _entity_created(state: State, envelope: Envelope, event: EntityCreated) -> None:
    stale = state.get_entity(envelope.stream)
    if stale is not None:
        state.remove_entity(stale)
    holder = state.live_entity(event.workspace, event.name)
    if holder is not None:  # a name is unique among live entities: the newest wins
        state.remove_entity(holder)
    at = envelope.recorded_at
    state.add_entity(Entity(
        envelope.stream, event.workspace, event.name, event.entity_type,
        dict.fromkeys(event.observations), event.metadata,
        envelope.version, at, at, envelope.position,
    ))


def _observations_added(state: State, envelope: Envelope, event: ObservationsAdded) -> None:
    entity = state.get_entity(envelope.stream)
    if entity is not None:
        observations = entity.observations
        for observation in event.observations:
            observations[observation] = None
        entity.version = envelope.version
        entity.updated_at = envelope.recorded_at
        state.changed_entity(entity, entity.entity_type)


def _observations_deleted(state: State, envelope: Envelope, event: ObservationsDeleted) -> None:
    entity = state.get_entity(envelope.stream)
    if entity is not None:
        observations = entity.observations
        for observation in event.observations:
            observations.pop(observation, None)
        entity.version = envelope.version
        entity.updated_at = envelope.recorded_at
        state.changed_entity(entity, entity.entity_type)


def _entity_updated(state: State, envelope: Envelope, event: EntityUpdated) -> None:
    entity = state.get_entity(envelope.stream)
    if entity is None:
        return
    old_type = entity.entity_type
    if event.entity_type is not UNSET:
        entity.entity_type = event.entity_type
    if event.observations is not UNSET:
        entity.observations = dict.fromkeys(event.observations)
    if event.metadata is not UNSET:
        entity.metadata = event.metadata
    entity.version = envelope.version
    entity.updated_at = envelope.recorded_at
    state.changed_entity(entity, old_type)


def _entity_deleted(state: State, envelope: Envelope, event: EntityDeleted) -> None:
    entity = state.get_entity(envelope.stream)
    if entity is not None:
        state.remove_entity(entity)


def _relation_created(state: State, envelope: Envelope, event: RelationCreated) -> None:
    stale = state.get_relation(envelope.stream)
    if stale is not None:
        state.remove_relation(stale)
    at = envelope.recorded_at
    state.add_relation(Relation(
        envelope.stream, event.workspace, event.source, event.target, event.relation_type,
        event.confidence, event.metadata, envelope.version, at, at, envelope.position,
    ))


def _relation_updated(state: State, envelope: Envelope, event: RelationUpdated) -> None:
    relation = state.get_relation(envelope.stream)
    if relation is None:
        return
    if event.confidence is not UNSET:
        relation.confidence = event.confidence
    if event.metadata is not UNSET:
        relation.metadata = event.metadata
    relation.version = envelope.version
    relation.updated_at = envelope.recorded_at
    state.changed_relation(relation)


def _relation_deleted(state: State, envelope: Envelope, event: RelationDeleted) -> None:
    relation = state.get_relation(envelope.stream)
    if relation is not None:
        state.remove_relation(relation)


def _context_updated(state: State, envelope: Envelope, event: ContextUpdated) -> None:
    context = state.get_context(event.workspace) or Context(event.workspace)
    for field in Context.FIELDS:
        value = getattr(event, field)
        if value is not UNSET:
            setattr(context, field, value)
    context.version = envelope.version
    context.updated_at = envelope.recorded_at
    state.save_context(context)


_HANDLERS: dict[type[Event], Callable[[State, Envelope, Event], None]] = {
    EntityCreated: _entity_created,  # type: ignore[dict-item]
    ObservationsAdded: _observations_added,  # type: ignore[dict-item]
    ObservationsDeleted: _observations_deleted,  # type: ignore[dict-item]
    EntityUpdated: _entity_updated,  # type: ignore[dict-item]
    EntityDeleted: _entity_deleted,  # type: ignore[dict-item]
    RelationCreated: _relation_created,  # type: ignore[dict-item]
    RelationUpdated: _relation_updated,  # type: ignore[dict-item]
    RelationDeleted: _relation_deleted,  # type: ignore[dict-item]
    ContextUpdated: _context_updated,  # type: ignore[dict-item]
}


def apply(state: State, envelope: Envelope) -> None:
    """Fold one event into `state`; an event type without a handler changes nothing."""
    handler = _HANDLERS.get(type(envelope.event))
    if handler is not None:
        handler(state, envelope, envelope.event)


def apply_all(state: State, envelopes: Iterable[Envelope]) -> None:
    """Fold events into `state` in order."""
    handlers = _HANDLERS
    for envelope in envelopes:
        event = envelope.event
        handler = handlers.get(type(event))
        if handler is not None:
            handler(state, envelope, event)
