"""The fold: how one event changes the graph. One function for every lifecycle.

`apply(state, envelope)` reads and writes through the `State` protocol, which is backed
by LMDB inside the append's transaction (inline), by dictionaries (rebuild and time
travel), or by an overlay of dictionaries on the live views (a command deciding what to
write: it sees its own events exactly as the views will). Handlers change records in
place (a record that must stay as it was is copied first, with `copy_record`) and then
tell the state what kind of change it was. The fold is total: an event on a stream it
does not know is ignored, so any log can be replayed, even one written by a buggy or
foreign writer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

import msgspec
from chronograph.eventstore import (
    ContentErased,
    ContextUpdated,
    EntityCreated,
    EntityDeleted,
    EntityForgotten,
    EntityMerged,
    EntityRenamed,
    EntityRestored,
    EntityUpdated,
    Envelope,
    Event,
    ObservationsAdded,
    ObservationsDeleted,
    ObservationsInvalidated,
    RelationCreated,
    RelationDeleted,
    RelationInvalidated,
    RelationUpdated,
)
from chronograph.projections.records import ContextRecord, EntityRecord, RelationRecord
from msgspec import UNSET, UnsetType

__all__ = ["State", "apply", "apply_all", "unique"]


class State(Protocol):
    """What the fold needs from a view of the graph."""

    from_start: bool
    """Whether the state holds only what this fold made of the log from its start (a rebuild's,
    an as-of fold's): then a creation at its stream's first version looks for no record (`FIRST`).
    Live views are not: a server's cache of a shared log may still hold a relation another server's
    forgetting moved to another stream, whose old id a later creation starts again."""

    def get_entity(self, stream: str) -> EntityRecord | None: ...
    def live_entity(self, workspace: str, name: str) -> EntityRecord | None: ...
    def add_entity(self, entity: EntityRecord) -> None: ...
    def changed_entity(self, entity: EntityRecord, old_type: str) -> None: ...
    def remove_entity(self, entity: EntityRecord) -> None: ...
    def get_relation(self, stream: str) -> RelationRecord | None: ...
    def add_relation(self, relation: RelationRecord) -> None: ...
    def changed_relation(self, relation: RelationRecord) -> None: ...
    def remove_relation(self, relation: RelationRecord) -> None: ...
    def get_context(self, workspace: str) -> ContextRecord | None: ...
    def save_context(self, context: ContextRecord) -> None: ...
    def saw_workspace(self, workspace: str) -> None:
        """Note that `workspace` was written to, though nothing readable of it is left."""
        ...
    def forget_entity(self, stream: str, workspace: str) -> None:
        """Take every trace of the entity of `stream` out: its record, the live relations
        touching its name, its place in the history of every name it bore."""
        ...
    def present(self, entity: EntityRecord) -> set[str]:
        """The entity's observations as a set the fold may add to (a state that folds long
        histories keeps it between events, so adding to a big entity costs what is added)."""
        ...


FIRST = 1
"""The version of a stream's first event. In a fold of the log from its start (`State.from_start`)
a creation at it looks for no record already under its stream: a record's stream is that of the
events folded into it, every stream's versions rise from 1 in log order, and a forgetting moves
what it erased to streams of their own, so before a stream's first event no such fold holds a
record of it. A rebuild of a million entities looked 3M times for records that could not be
there (a random read of the written views each, past its first 400k records)."""


def unique(items: Iterable[str]) -> list[str]:
    """`items` without repeats, first occurrence kept, order kept."""
    return list(dict.fromkeys(items))


def _entity_created(state: State, envelope: Envelope, event: EntityCreated, created_at: int | None = None,
                    validity: dict[str, tuple[int | None, int | None]] | None = None) -> None:
    fresh = envelope.version == FIRST and state.from_start  # see `FIRST`
    stale = None if fresh else state.get_entity(envelope.stream)
    if stale is not None:
        state.remove_entity(stale)
    holder = state.live_entity(event.workspace, event.name)
    if holder is not None:  # a name is unique among live entities: the newest wins
        state.remove_entity(holder)
    at = envelope.recorded_at
    observations = list(event.observations)
    if len(observations) > 1 and len(set(observations)) < len(observations):
        observations = unique(observations)
    state.add_entity(EntityRecord(
        stream=envelope.stream, workspace=event.workspace, name=event.name, entity_type=event.entity_type,
        observations=observations, metadata=event.metadata, version=envelope.version,
        created_at=at if created_at is None else created_at, updated_at=at, seq=envelope.position,
        validity=_spans_of(observations, validity) if validity else {},
    ))


def _entity_restored(state: State, envelope: Envelope, event: EntityRestored) -> None:
    # A creation that keeps the restored state's createdAt (its place in creation order, `seq`,
    # is the restore's, as it always was for an entity that came back), and its valid times.
    _entity_created(state, envelope, event, event.created_at, event.validity)


def _spans_of(observations: list[str], validity: dict[str, tuple[int | None, int | None]]) -> dict[
        str, tuple[int | None, int | None]]:
    """`validity` of those of `observations` it names, as a record keeps it."""
    held = set(observations)
    return {o: (start, end) for o, (start, end) in validity.items() if o in held and (start, end) != (None, None)}


SCAN = 16
"""Up to this many observations, a list scan finds a repeat faster than building a set."""


def _observations_added(state: State, envelope: Envelope, event: ObservationsAdded) -> None:
    entity = state.get_entity(envelope.stream)
    if entity is not None:
        current = entity.observations
        if len(current) <= SCAN:
            for observation in event.observations:
                if observation not in current:
                    current.append(observation)
        else:
            present = state.present(entity)
            for observation in event.observations:
                if observation not in present:
                    present.add(observation)
                    current.append(observation)
        if event.valid_from is not UNSET or event.valid_until is not UNSET:
            # UNSET is "no bound"; 0 is one (1970-01-01T00:00:00Z), which `or None` used to drop
            span = (_bound(event.valid_from), _bound(event.valid_until))
            entity.validity = {**entity.validity, **dict.fromkeys(event.observations, span)}
        elif entity.validity and any(o in entity.validity for o in event.observations):
            # A text held already is stated again (it had stopped being true): without a span now.
            # Never written before 2026-12-06 (every writer left held texts out), so old logs fold
            # as they did: a text new to the entity has no span to drop.
            gone = set(event.observations)
            entity.validity = {o: span for o, span in entity.validity.items() if o not in gone}
        entity.version = envelope.version
        entity.updated_at = envelope.recorded_at
        state.changed_entity(entity, entity.entity_type)


def _bound(moment: int | UnsetType) -> int | None:
    """A valid-time bound as a record keeps it: None where the event gives none (UNSET)."""
    return None if moment is UNSET else moment


def _observations_deleted(state: State, envelope: Envelope, event: ObservationsDeleted) -> None:
    entity = state.get_entity(envelope.stream)
    if entity is not None:
        gone = set(event.observations)
        entity.observations = [o for o in entity.observations if o not in gone]
        if entity.validity:
            entity.validity = {o: span for o, span in entity.validity.items() if o not in gone}
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
        entity.observations = unique(event.observations)
        if entity.validity:
            kept = set(entity.observations)
            entity.validity = {o: span for o, span in entity.validity.items() if o in kept}
    if event.metadata is not UNSET:
        entity.metadata = event.metadata
    if event.validity is not UNSET:  # a revert's: the restored state's valid times, and no other
        entity.validity = _spans_of(entity.observations, event.validity)
    entity.version = envelope.version
    entity.updated_at = envelope.recorded_at
    state.changed_entity(entity, old_type)


def _observations_invalidated(state: State, envelope: Envelope, event: ObservationsInvalidated) -> None:
    entity = state.get_entity(envelope.stream)
    if entity is None:
        return
    present = set(entity.observations)
    entity.validity = {**entity.validity, **{
        o: (entity.validity.get(o, (None, None))[0], event.at) for o in event.observations if o in present}}
    entity.version = envelope.version
    entity.updated_at = envelope.recorded_at
    state.changed_entity(entity, entity.entity_type)


def _entity_deleted(state: State, envelope: Envelope, event: EntityDeleted) -> None:
    entity = state.get_entity(envelope.stream)
    if entity is not None:
        state.remove_entity(entity)


def _entity_renamed(state: State, envelope: Envelope, event: EntityRenamed) -> None:
    entity = state.get_entity(envelope.stream)
    if entity is None:
        return
    holder = state.live_entity(entity.workspace, event.name)
    if holder is not None and holder.stream != entity.stream:  # a name is unique among live entities
        state.remove_entity(holder)
    state.remove_entity(entity)
    state.add_entity(msgspec.structs.replace(
        entity, name=event.name, observations=list(entity.observations), version=envelope.version,
        updated_at=envelope.recorded_at))


def _entity_merged(state: State, envelope: Envelope, event: EntityMerged) -> None:
    entity = state.get_entity(envelope.stream)
    if entity is not None:
        state.remove_entity(entity)


def _relation_created(state: State, envelope: Envelope, event: RelationCreated) -> None:
    fresh = envelope.version == FIRST and state.from_start  # see `FIRST`
    stale = None if fresh else state.get_relation(envelope.stream)
    if stale is not None:
        state.remove_relation(stale)
    at = envelope.recorded_at
    state.add_relation(RelationRecord(
        stream=envelope.stream, workspace=event.workspace, source=event.source, target=event.target,
        relation_type=event.relation_type, confidence=event.confidence, metadata=event.metadata,
        version=envelope.version, created_at=at, updated_at=at, seq=envelope.position,
        valid_from=_bound(event.valid_from), valid_until=_bound(event.valid_until),
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


def _relation_invalidated(state: State, envelope: Envelope, event: RelationInvalidated) -> None:
    relation = state.get_relation(envelope.stream)
    if relation is None:
        return
    relation.valid_until = event.at
    relation.version = envelope.version
    relation.updated_at = envelope.recorded_at
    state.changed_relation(relation)


def _relation_deleted(state: State, envelope: Envelope, event: RelationDeleted) -> None:
    relation = state.get_relation(envelope.stream)
    if relation is not None:
        state.remove_relation(relation)


def _context_updated(state: State, envelope: Envelope, event: ContextUpdated) -> None:
    context = state.get_context(event.workspace) or ContextRecord(event.workspace)
    for field in ContextRecord.FIELDS:
        value = getattr(event, field)
        if value is not UNSET:
            setattr(context, field, value)
    context.version = envelope.version
    context.updated_at = envelope.recorded_at
    state.save_context(context)


def _content_erased(state: State, envelope: Envelope, event: ContentErased) -> None:
    if event.erased in _CREATIONS and event.workspace:  # the workspace was written to all the same
        state.saw_workspace(event.workspace)


_CREATIONS = frozenset({"entity_created", "entity_restored", "relation_created"})


def _entity_forgotten(state: State, envelope: Envelope, event: EntityForgotten) -> None:
    # Where the erasure happened, its hook has emptied the views already, and a fold of the
    # erased log never met the entity; views elsewhere (a server's cache of a shared log)
    # learn of the erasure from this event alone.
    state.forget_entity(envelope.stream, event.workspace)


_HANDLERS: dict[type[Event], Callable[[State, Envelope, Event], None]] = {
    EntityCreated: _entity_created,  # type: ignore[dict-item]
    EntityRestored: _entity_restored,  # type: ignore[dict-item]
    ObservationsAdded: _observations_added,  # type: ignore[dict-item]
    ObservationsDeleted: _observations_deleted,  # type: ignore[dict-item]
    EntityUpdated: _entity_updated,  # type: ignore[dict-item]
    EntityDeleted: _entity_deleted,  # type: ignore[dict-item]
    EntityRenamed: _entity_renamed,  # type: ignore[dict-item]
    EntityMerged: _entity_merged,  # type: ignore[dict-item]
    RelationCreated: _relation_created,  # type: ignore[dict-item]
    RelationUpdated: _relation_updated,  # type: ignore[dict-item]
    RelationDeleted: _relation_deleted,  # type: ignore[dict-item]
    ObservationsInvalidated: _observations_invalidated,  # type: ignore[dict-item]
    RelationInvalidated: _relation_invalidated,  # type: ignore[dict-item]
    ContextUpdated: _context_updated,  # type: ignore[dict-item]
    ContentErased: _content_erased,  # type: ignore[dict-item]
    EntityForgotten: _entity_forgotten,  # type: ignore[dict-item]
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
