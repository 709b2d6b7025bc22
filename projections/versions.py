"""Version history: every version of an entity or relation, read from its own stream.

A stream is the history, so nothing is stored twice: each version is the event that
made it (who, when, which call, what changed) and the state folding it produced.
Deleted things keep their streams, so their history stays readable.
"""

from __future__ import annotations

from typing import Any

import msgspec

from chronograph.eventstore import Envelope, LogReader
from chronograph.projections.dictstate import DictState
from chronograph.projections.fold import apply
from chronograph.projections.records import EntityRecord, RelationRecord, copy_record

__all__ = ["Version", "stream_history"]

_to_builtins = msgspec.to_builtins


class Version(msgspec.Struct, frozen=True):
    """One version of an entity or relation."""

    stream: str
    version: int
    position: int
    event_type: str
    recorded_at: int
    actor: str
    correlation_id: str
    changes: dict[str, Any]
    """The event's own fields: exactly what this version changed."""
    state: EntityRecord | RelationRecord | None
    """The state after this version; None once deleted."""


def stream_history(
    reader: LogReader, stream: str, *, from_version: int = 1, to_position: int | None = None
) -> list[Version]:
    """Every version of `stream` (up to `to_position`), oldest first.

    Versions before `from_version` are folded but not returned, so each state is whole.
    """
    state = DictState()
    versions = []
    for envelope in reader.stream(stream):
        if to_position is not None and envelope.position > to_position:
            break
        apply(state, envelope)
        if envelope.version >= from_version:
            versions.append(_version(envelope, state))
    return versions


def _version(envelope: Envelope, state: DictState) -> Version:
    changes = _to_builtins(envelope.event)
    changes.pop("type", None)
    after: EntityRecord | RelationRecord | None = None
    entity = state.entities.get(envelope.stream)
    if entity is not None:
        after = copy_record(entity)
    else:
        relation = state.relations.get(envelope.stream)
        after = None if relation is None else copy_record(relation)
    return Version(
        stream=envelope.stream,
        version=envelope.version,
        position=envelope.position,
        event_type=envelope.type,
        recorded_at=envelope.recorded_at,
        actor=envelope.actor,
        correlation_id=envelope.correlation_id,
        changes=changes,
        state=after,
    )
