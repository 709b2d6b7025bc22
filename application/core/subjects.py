"""What each event of the log is about: the workspace of its stream and a readable subject,
an entity or project named as it was called at that event (the audit, recall, the CLI).

A stream's workspace, and what a relation, context, entry, lock or token stream is about,
never change, so they come from its first event. An entity's or a project's name does: a
subject is the name the thing bore at the event (a rename says both names), read from the
nearer of what is known: back to the change that gave the name, or forward to the live
version the views name (short for the newest events, which an audit shows first) or to a
rename (which says the name before it). What a read learns is kept (the spans of versions
that bore each name), so one `Subjects` reads each event of a stream about once (a read
forward that ends at a restore reads one again): naming the events of a page costs at most
the events of their streams, in whatever order it is asked (oldest first, nothing more).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from chronograph.eventstore import ContentErased, ContextUpdated, EntityCreated, Envelope, LogReader, RelationCreated
from chronograph.eventstore.events import EntityRenamed
from chronograph.eventstore.teamevents import (
    ConflictDetected,
    EntryAdded,
    FileCheckedOut,
    OrganizationCreated,
    ProjectCreated,
    ProjectUpdated,
    SessionStarted,
    TagAttached,
    TagCreated,
)
from chronograph.eventstore.tokenevents import TokenIssued, TokenRevoked
from chronograph.projections import Graph

__all__ = ["Current", "Subjects", "live_names"]


@dataclass(slots=True)
class _Span:
    """Versions `low` to `high` of a stream bore `name`; `named`: whether the event at `low` gave
    it (None: not read, as the live version the views say)."""

    low: int
    high: int
    name: str
    named: bool | None


@dataclass(frozen=True, slots=True)
class _Stream:
    workspace: str
    subject: str
    """What its first event says it is about (what every event of an unnamed stream is about)."""
    kind: str
    """entity, project, or "" (a stream whose subject never changes)"""


Current = Callable[[str], "tuple[str, int] | None"]
"""An entity stream's live name and version, if it is live (from the views of the same snapshot)."""


def live_names(graph: Graph) -> Current:
    """`Current` from the live views `graph` (those of the snapshot the log is read in)."""
    def current(stream: str) -> tuple[str, int] | None:
        record = graph.entity_by_stream(stream)
        return None if record is None else (record.name, record.version)
    return current


class Subjects:
    """What each event is about, named as its thing was called then; read within one snapshot.

    `current` (the live views' name and version of an entity stream) lets a name be read forward
    from an event to the entity's present, which is short for the newest events.
    """

    def __init__(self, log: LogReader, current: Current | None = None) -> None:
        self._log = log
        self._current = current
        self._streams: dict[str, _Stream] = {}
        self._spans: dict[str, list[_Span]] = {}

    def workspace(self, envelope: Envelope) -> str:
        """The workspace of the stream `envelope` belongs to ("" for the team memory and tokens):
        one read of its first event, once per stream."""
        return self._stream(envelope).workspace

    def of(self, envelope: Envelope) -> tuple[str, str]:
        """(workspace, subject) of `envelope`: an entity or project as it was called at that event
        (a rename as `old -> new`), anything else as its stream's first event says."""
        stream = self._stream(envelope)
        event = envelope.event
        if not stream.kind or isinstance(event, ContentErased):
            return stream.workspace, stream.subject
        if isinstance(event, EntityRenamed):
            self._learn(envelope.stream, envelope.version, envelope.version, event.name, named=True)
            return stream.workspace, f"{event.previous} -> {event.name}"
        name = self._name_at(envelope.stream, envelope.version, envelope)
        if name is None:  # erased, or a stream of no name (never written so)
            return stream.workspace, stream.subject
        if stream.kind == "entity":
            return stream.workspace, name
        if isinstance(event, ProjectUpdated) and isinstance(event.name, str) and envelope.version > 1:
            before = self._name_at(envelope.stream, envelope.version - 1)
            if before is not None and before != name:
                return stream.workspace, f"project {before!r} -> {name!r}"
        return stream.workspace, f"project {name!r}"

    def _stream(self, envelope: Envelope) -> _Stream:
        known = self._streams.get(envelope.stream)
        if known is None:
            first = envelope if envelope.version == 1 else next(iter(self._log.stream(envelope.stream, 1, 1)))
            known = self._streams[envelope.stream] = _describe(first)
            live = self._current(envelope.stream) if self._current is not None and known.kind == "entity" else None
            if live is not None:
                self._learn(envelope.stream, live[1], live[1], live[0], named=None)
        return known

    def _learn(self, stream: str, low: int, high: int, name: str, *, named: bool | None) -> None:
        """Record that versions `low` to `high` of `stream` (none of them known yet, unless as the
        start of a span) bore `name`."""
        spans = self._spans.setdefault(stream, [])
        index = bisect_right(spans, low, key=lambda span: span.low)
        if index and spans[index - 1].high >= low:
            if spans[index - 1].low == low and named is not None:
                spans[index - 1].named = named
            return
        spans.insert(index, _Span(low, high, name, named))

    def _name_at(self, stream: str, version: int, envelope: Envelope | None = None) -> str | None:
        """The name `stream` bore at `version` (None: erased, or none given), `envelope` its event
        if at hand. Read from the nearer known version: back to the change that gave the name, or
        forward to a version known (the live one) when that is closer."""
        spans = self._spans.setdefault(stream, [])
        index = bisect_right(spans, version, key=lambda span: span.low)
        below = spans[index - 1] if index else None
        if below is not None and below.high >= version:
            return below.name
        given = None if envelope is None else _name_given(envelope.event)
        if given is not None:
            self._learn(stream, version, version, given, named=True)
            return given
        above = spans[index] if index < len(spans) else None
        floor = 0 if below is None else below.high
        clear = version  # the versions from `version` to `clear` give no name
        if above is not None and above.low - version < version - floor:
            forward = self._forward(stream, version, envelope is not None, above)
            if isinstance(forward, str):
                return forward
            clear = forward
        start = version - 1 if envelope is not None else version
        if below is not None and start <= floor:
            below.high = clear
            return below.name
        for event in self._log.stream_backward(stream, start) if start >= 1 else ():
            if event.version <= floor:
                assert below is not None
                below.high = clear
                return below.name
            name = _name_given(event.event)
            if name is not None:
                self._learn(stream, event.version, clear, name, named=True)
                return name
            if isinstance(event.event, ContentErased):
                return None
        return None

    def _forward(self, stream: str, version: int, seen: bool, above: _Span) -> str | int:
        """The name at `version` read forward to the known span `above` (or to a rename, which
        says the name before it); else the last version read that gives no name (`seen`: the
        event at `version` gives none, and is not read again)."""
        clear = version
        end = above.low - 1 if above.named is False else above.low  # a name given at `low` may be a rename
        start = version + 1 if seen else version
        for event in self._log.stream(stream, start, end) if start <= end else ():
            if isinstance(event.event, EntityRenamed):
                self._learn(stream, event.version, event.version, event.event.name, named=True)
                if event.version == version:
                    return event.event.name
                self._learn(stream, version, event.version - 1, event.event.previous, named=False)
                return event.event.previous
            given = _name_given(event.event)
            if given is not None and event.version == version:
                self._learn(stream, version, version, given, named=True)
                return given
            if given is not None:
                self._learn(stream, event.version, event.version, given, named=True)
            if given is not None or isinstance(event.event, ContentErased):
                return clear  # a restore, or a project's rename: what came before is read back
            if event.version == above.low:
                above.named = False
            else:
                clear = event.version
        if above.named is not False:  # the name given at `low` was no rename
            return clear
        above.low, above.named = version, False
        return above.name


_NAMING = (EntityCreated, EntityRenamed, ProjectCreated)  # a restore is a creation
"""The events that give their entity or project a name (and a project's update that sets one)."""


def _name_given(event: object) -> str | None:
    """The name an event gives its entity or project, if it gives one."""
    if isinstance(event, _NAMING):
        return event.name
    if isinstance(event, ProjectUpdated) and isinstance(event.name, str):
        return event.name
    return None


def _describe(first: Envelope) -> _Stream:
    event = first.event
    if isinstance(event, EntityCreated):
        return _Stream(event.workspace, event.name, "entity")
    if isinstance(event, RelationCreated):
        return _Stream(event.workspace, f"{event.source} -[{event.relation_type}]-> {event.target}", "")
    if isinstance(event, ContextUpdated):
        return _Stream(event.workspace, "context", "")
    if isinstance(event, ContentErased):
        return _Stream(event.workspace, f"(erased {_ERASED.get(event.erased, 'entity')})", "")
    if isinstance(event, ProjectCreated):
        return _Stream("", f"project {event.name!r}", "project")
    return _Stream("", _team_subject(event) or first.stream, "")


_ERASED = {"relation_created": "relation", "entry_added": "entry", "tag_attached": "entry's tags",
           "entry_relation_created": "entry relation", "conflict_detected": "conflict"}
"""What a stream whose first event was erased was, by the kind of that event (else an entity)."""


def _team_subject(event: object) -> str | None:
    """A readable subject for a team memory stream (Agent Memory's things), from its first event."""
    if isinstance(event, EntryAdded):
        return f"{event.entry_type} {event.name!r}"
    if isinstance(event, FileCheckedOut):
        return f"lock {event.file_path}"
    if isinstance(event, OrganizationCreated):
        return f"organization {event.name!r}"
    if isinstance(event, SessionStarted):
        return f"session {event.session_id}" + (f" of {event.agent_id}" if event.agent_id else "")
    if isinstance(event, TagCreated | TagAttached):
        return f"tag {event.name!r}" if isinstance(event, TagCreated) else f"tags of {event.entry_id}"
    if isinstance(event, ConflictDetected):
        return f"conflict on {event.entry_id}"
    if isinstance(event, TokenIssued | TokenRevoked):
        return f"token {event.name}"
    return None
