"""A command's unit of work: what it has read, what it has decided, in one write transaction.

Items of one call may touch the same entity (two add_observations items for "Ada");
the batch keeps a working copy per name and relation, so each item sees the ones
before it, and collects every event per stream with the version the stream was read
at. `writes()` hands them to one append, guarded by those versions.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from eventstore import NO_STREAM, Event, StreamWrite, Transaction
from projections import LmdbState, relation_stream
from projections.working import Entity, Relation
from server.errors import ConflictError
from server.outputs import entity_out, relation_out

__all__ = ["Batch"]


class Batch:
    """Reads through the live views, records decided events, never writes by itself."""

    def __init__(self, tx: Transaction, state: LmdbState, workspace: str) -> None:
        self.tx = tx
        self.state = state
        self.workspace = workspace
        self._entities: dict[str, Entity | None] = {}
        self._relations: dict[str, Relation | None] = {}
        self._events: dict[str, tuple[int | str, list[Event]]] = {}

    # --- reading, as this batch has changed things so far ------------------------------------

    def entity(self, name: str) -> Entity | None:
        """The live entity called `name` as the batch sees it, or None."""
        if name not in self._entities:
            self._entities[name] = self.state.live_entity(self.workspace, name)
        return self._entities[name]

    def relation(self, source: str, relation_type: str, target: str) -> Relation | None:
        """The live relation with this identity as the batch sees it, or None."""
        stream = relation_stream(self.workspace, source, relation_type, target)
        if stream not in self._relations:
            self._relations[stream] = self.state.get_relation(stream)
        return self._relations[stream]

    def relations_of(self, name: str) -> list[Relation]:
        """The live relations touching `name`, as the batch sees them."""
        found = []
        for record in self.state.relations_of(self.workspace, name):
            relation = self.relation(record.source, record.relation_type, record.target)
            if relation is not None:
                found.append(relation)
        return found

    # --- deciding ------------------------------------------------------------------------------

    def check(self, what: str, expected: int | Any, current: Entity | Relation | None) -> None:
        """Raise ConflictError unless `current` is at `expected` (UNSET: no check; 0: absent)."""
        if expected is UNSET:
            return
        version = 0 if current is None else current.version
        if version != expected:
            state = None
            if isinstance(current, Entity):
                state = entity_out(current.record())
            elif isinstance(current, Relation):
                state = relation_out(current.record())
            raise ConflictError(what, expected, version, state)

    def emit(self, stream: str, event: Event, *, new: bool = False) -> int:
        """Record `event` for `stream`; return the version it will have."""
        if stream not in self._events:
            expected: int | str = NO_STREAM if new else self.tx.stream_version(stream)
            self._events[stream] = (expected, [])
        expected, events = self._events[stream]
        events.append(event)
        base = 0 if expected == NO_STREAM else int(expected)
        return base + len(events)

    def track_entity(self, name: str, entity: Entity | None) -> None:
        """Make later items see `entity` (None: deleted) under `name`."""
        self._entities[name] = entity

    def track_relation(self, relation: Relation, *, alive: bool) -> None:
        """Make later items see `relation` (or its absence)."""
        self._relations[relation.stream] = relation if alive else None

    def writes(self) -> list[StreamWrite]:
        """Every decided event, one write per stream, guarded by the version it was read at."""
        return [StreamWrite(stream, events, expected) for stream, (expected, events) in self._events.items()]
