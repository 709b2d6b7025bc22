"""Which entity a name meant, and when: the tenures of names, read from the entities' streams.

A name passes between entities: one is renamed away, deleted or merged, another takes it
(created under it, renamed into it, restored). The names index lists every stream that ever
bore a name in the order each *first* bore it, which tells neither who holds it now nor who
held it last: X called Ada, renamed away, a new Y called Ada then renamed away too, X called
Ada again, lists (X, Y). Whoever asks which entity a name meant at a moment, or last, reads
the tenures here (`holder_at`, `last_bearer`, `bearers`); asking the index's order is the bug this
module exists against.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import msgspec
from chronograph.eventstore import (
    EntityCreated,
    EntityDeleted,
    EntityForgotten,
    EntityMerged,
    EntityRenamed,
    Envelope,
    LogReader,
)

__all__ = ["OPEN", "Tenure", "bearers", "holder_at", "last_bearer", "tenures"]

OPEN = 2**63
"""The end of a tenure that has not ended."""

_ENDS = (EntityDeleted, EntityMerged, EntityForgotten)


class Tenure(msgspec.Struct, frozen=True):
    """A stretch of log positions [start, end) in which an entity was live under a name."""

    workspace: str
    name: str
    start: int
    end: int

    def covers(self, workspace: str, name: str, position: int) -> bool:
        """Whether `name` in `workspace` meant this entity at `position`."""
        return self.workspace == workspace and self.name == name and self.start <= position < self.end


def tenures(events: Sequence[Envelope]) -> Iterator[Tenure]:
    """Every stretch of the log in which the entity of `events` (its stream) was live, by name."""
    workspace = name = None
    start = 0
    for envelope in events:
        event = envelope.event
        if isinstance(event, EntityCreated):  # a restore too
            if name is not None and workspace is not None:
                yield Tenure(workspace, name, start, envelope.position)
            workspace, name, start = event.workspace, event.name, envelope.position
        elif isinstance(event, EntityRenamed) and name is not None and workspace is not None:
            yield Tenure(workspace, name, start, envelope.position)
            name, start = event.name, envelope.position
        elif isinstance(event, _ENDS) and name is not None and workspace is not None:
            yield Tenure(workspace, name, start, envelope.position)
            name = None
    if name is not None and workspace is not None:
        yield Tenure(workspace, name, start, OPEN)


def _held(log: LogReader, streams: Sequence[str], workspace: str, name: str,
          end: int | None) -> Iterator[tuple[str, Tenure]]:
    """Each tenure of `name` among `streams`, folded up to position `end` (None: the head)."""
    for stream in streams:
        events = [e for e in log.stream(stream) if end is None or e.position <= end]
        for tenure in tenures(events):
            if tenure.workspace == workspace and tenure.name == name:
                yield stream, tenure


def bearers(log: LogReader, streams: Sequence[str], workspace: str, name: str, end: int) -> tuple[str, ...]:
    """The streams among `streams` (the names index's for `name`, which lists every stream that
    *ever* bore it) that had borne `name` by position `end`, in their order there: whom the name
    had meant by then, without those that took it later."""
    held = {stream for stream, _ in _held(log, streams, workspace, name, end)}
    return tuple(stream for stream in streams if stream in held)


def holder_at(log: LogReader, streams: Sequence[str], workspace: str, name: str, position: int) -> str | None:
    """The stream of the entity `name` meant at `position`, among `streams` (the names index's
    for it), or None if no entity bore it then."""
    return next((stream for stream, tenure in _held(log, streams, workspace, name, position)
                 if tenure.covers(workspace, name, position)), None)


def last_bearer(log: LogReader, streams: Sequence[str], workspace: str, name: str,
                end: int | None = None) -> tuple[str, Tenure] | None:
    """The entity that bears `name` (up to position `end`), or else the one that bore it last:
    its stream, among `streams` (the names index's for the name), and its latest tenure under
    the name (ending at `OPEN` while it bears it still). None: no tenure began by `end`."""
    return max(_held(log, streams, workspace, name, end), key=lambda held: (held[1].end, held[1].start),
               default=None)
