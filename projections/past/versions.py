"""Version history: every version of an entity or relation, read from its own stream.

A stream is the history, so nothing is stored twice: each version is the event that
made it (who, when, which call, what changed) and the state folding it produced.
Deleted things keep their streams, so their history stays readable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec
from chronograph.eventstore import Envelope, LogReader
from chronograph.projections.fold import apply
from chronograph.projections.records import EntityRecord, RelationRecord, copy_record
from chronograph.projections.states.dictstate import DictState

__all__ = ["Version", "changes_of", "stream_history", "versions_of"]


def changes_of(envelope: Envelope) -> dict[str, Any]:
    """The event's own fields: exactly what it changed."""
    data: dict[str, Any] = msgspec.to_builtins(envelope.event)
    data.pop("type", None)
    return data


class Version(msgspec.Struct, frozen=True):
    """One version of an entity or relation: the event that made it, and the state after."""

    envelope: Envelope
    state: EntityRecord | RelationRecord | None
    """The state after this version; None once deleted."""

    @property
    def stream(self) -> str:
        return self.envelope.stream

    @property
    def version(self) -> int:
        return self.envelope.version

    @property
    def position(self) -> int:
        return self.envelope.position

    @property
    def event_type(self) -> str:
        return self.envelope.type

    @property
    def recorded_at(self) -> int:
        return self.envelope.recorded_at

    @property
    def actor(self) -> str:
        return self.envelope.actor

    @property
    def correlation_id(self) -> str:
        return self.envelope.correlation_id

    @property
    def changes(self) -> dict[str, Any]:
        """What this version changed."""
        return changes_of(self.envelope)


def stream_history(
    reader: LogReader, stream: str, *, from_version: int = 1, to_position: int | None = None
) -> list[Version]:
    """Every version of `stream` (up to `to_position`), oldest first.

    Versions before `from_version` are folded but not returned, so each state is whole.
    """
    top = len(reader.positions(stream))
    return versions_of(reader, stream, range(from_version, top + 1), to_position=to_position)


def versions_of(
    reader: LogReader, stream: str, wanted: Iterable[int], *, to_position: int | None = None
) -> list[Version]:
    """The versions of `stream` numbered in `wanted` (up to `to_position`), oldest first.

    The stream is folded only up to the highest version wanted, and a state is copied only
    for the versions wanted: a page of a long history costs the events before its end, not
    a copy of the whole state after every version.
    """
    wanted = set(wanted)
    if not wanted:
        return []
    state = DictState()
    versions = []
    for envelope in reader.stream(stream, 1, max(wanted)):
        if to_position is not None and envelope.position > to_position:
            break
        apply(state, envelope)
        if envelope.version in wanted:
            versions.append(Version(envelope, _state(state, envelope.stream)))
    return versions


def _state(state: DictState, stream: str) -> EntityRecord | RelationRecord | None:
    entity = state.entities.get(stream)
    if entity is not None:
        return copy_record(entity)
    relation = state.relations.get(stream)
    return None if relation is None else copy_record(relation)
