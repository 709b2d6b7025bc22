"""The fold: how one event changes the graph. One function for all three lifecycles.

`apply(state, envelope)` reads and writes through the `State` protocol, which is backed
by LMDB inside the append's transaction (inline), or by dictionaries (rebuild and
time travel). The fold is total: an event on a stream it does not know is ignored, so a
log is always replayable, even one written by a buggy or foreign writer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from msgspec import UNSET
from msgspec.structs import replace

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
from projections.records import ContextRecord, EntityRecord, RelationRecord

__all__ = ["State", "apply", "apply_all", "unique"]


class State(Protocol):
    """What the fold needs from a view: look things up by stream, save, remove."""

    def get_entity(self, stream: str) -> EntityRecord | None: ...
    def live_entity(self, workspace: str, name: str) -> EntityRecord | None: ...
    def save_entity(self, record: EntityRecord, previous: EntityRecord | None) -> None: ...
    def remove_entity(self, record: EntityRecord) -> None: ...
    def get_relation(self, stream: str) -> RelationRecord | None: ...
    def save_relation(self, record: RelationRecord, previous: RelationRecord | None) -> None: ...
    def remove_relation(self, record: RelationRecord) -> None: ...
    def context(self, workspace: str) -> ContextRecord | None: ...
    def save_context(self, record: ContextRecord) -> None: ...


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
    state.save_entity(
        EntityRecord(
            stream=envelope.stream,
            workspace=event.workspace,
            name=event.name,
            entity_type=event.entity_type,
            observations=unique(event.observations),
            metadata=event.metadata,
            version=envelope.version,
            created_at=at,
            updated_at=at,
            seq=envelope.position,
        ),
        None,
    )


def _observations_added(state: State, envelope: Envelope, event: ObservationsAdded) -> None:
    record = state.get_entity(envelope.stream)
    if record is not None:
        observations = unique((*record.observations, *event.observations))
        _touch_entity(state, envelope, record, observations=observations)


def _observations_deleted(state: State, envelope: Envelope, event: ObservationsDeleted) -> None:
    record = state.get_entity(envelope.stream)
    if record is not None:
        gone = set(event.observations)
        observations = tuple(o for o in record.observations if o not in gone)
        _touch_entity(state, envelope, record, observations=observations)


def _entity_updated(state: State, envelope: Envelope, event: EntityUpdated) -> None:
    record = state.get_entity(envelope.stream)
    if record is None:
        return
    changes = {}
    if event.entity_type is not UNSET:
        changes["entity_type"] = event.entity_type
    if event.observations is not UNSET:
        changes["observations"] = unique(event.observations)
    if event.metadata is not UNSET:
        changes["metadata"] = event.metadata
    _touch_entity(state, envelope, record, **changes)


def _touch_entity(state: State, envelope: Envelope, record: EntityRecord, **changes: object) -> None:
    updated = replace(record, version=envelope.version, updated_at=envelope.recorded_at, **changes)
    state.save_entity(updated, record)


def _entity_deleted(state: State, envelope: Envelope, event: EntityDeleted) -> None:
    record = state.get_entity(envelope.stream)
    if record is not None:
        state.remove_entity(record)


def _relation_created(state: State, envelope: Envelope, event: RelationCreated) -> None:
    stale = state.get_relation(envelope.stream)
    if stale is not None:
        state.remove_relation(stale)
    at = envelope.recorded_at
    state.save_relation(
        RelationRecord(
            stream=envelope.stream,
            workspace=event.workspace,
            source=event.source,
            target=event.target,
            relation_type=event.relation_type,
            confidence=event.confidence,
            metadata=event.metadata,
            version=envelope.version,
            created_at=at,
            updated_at=at,
            seq=envelope.position,
        ),
        None,
    )


def _relation_updated(state: State, envelope: Envelope, event: RelationUpdated) -> None:
    record = state.get_relation(envelope.stream)
    if record is None:
        return
    changes = {}
    if event.confidence is not UNSET:
        changes["confidence"] = event.confidence
    if event.metadata is not UNSET:
        changes["metadata"] = event.metadata
    updated = replace(record, version=envelope.version, updated_at=envelope.recorded_at, **changes)
    state.save_relation(updated, record)


def _relation_deleted(state: State, envelope: Envelope, event: RelationDeleted) -> None:
    record = state.get_relation(envelope.stream)
    if record is not None:
        state.remove_relation(record)


def _context_updated(state: State, envelope: Envelope, event: ContextUpdated) -> None:
    current = state.context(event.workspace) or ContextRecord(workspace=event.workspace)
    changes = {
        field: value
        for field in ("active_task", "status", "reason", "next_steps", "last_commit")
        if (value := getattr(event, field)) is not UNSET
    }
    state.save_context(
        replace(current, version=envelope.version, updated_at=envelope.recorded_at, **changes)
    )


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
        handler = handlers.get(type(envelope.event))
        if handler is not None:
            handler(state, envelope, envelope.event)
