"""What each event of the log is about: the workspace of its stream and a readable subject,
an entity or project named as it was called at that event (the audit, recall, the CLI).

A stream's workspace, and what a relation, context, entry, lock or token stream is about,
never change, so they come from its first event. An entity's or a project's name does: a
subject is the name the thing bore at the event (a rename says both names), found by walking
its stream back from the event to the change that gave the name. What a walk learns is kept
(the span of versions that bore each name), so one `Subjects` reads no event of a stream
twice: naming the events of a page costs at most the events of their streams, whatever the
order of the page (a scan oldest first reads nothing more than its first events).
"""

from __future__ import annotations

from bisect import bisect_right
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

__all__ = ["Subjects"]


@dataclass(slots=True)
class _Span:
    """Versions `low` to `high` of a stream bore `name` (the event at `low` gave it)."""

    low: int
    high: int
    name: str


@dataclass(frozen=True, slots=True)
class _Stream:
    workspace: str
    subject: str
    """What its first event says it is about (what every event of an unnamed stream is about)."""
    kind: str
    """entity, project, or "" (a stream whose subject never changes)"""


class Subjects:
    """What each event is about, named as its thing was called then; read within one snapshot."""

    def __init__(self, log: LogReader) -> None:
        self._log = log
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
            self._named(envelope, event.name)
            return stream.workspace, f"{event.previous} -> {event.name}"
        name = self._name_at(envelope)
        if name is None:  # erased, or a stream of no name (never written so)
            return stream.workspace, stream.subject
        if stream.kind == "entity":
            return stream.workspace, name
        if isinstance(event, ProjectUpdated) and isinstance(event.name, str) and envelope.version > 1:
            before = self._name_before(envelope)
            if before is not None and before != name:
                return stream.workspace, f"project {before!r} -> {name!r}"
        return stream.workspace, f"project {name!r}"

    def _stream(self, envelope: Envelope) -> _Stream:
        known = self._streams.get(envelope.stream)
        if known is None:
            first = envelope if envelope.version == 1 else next(iter(self._log.stream(envelope.stream, 1, 1)))
            known = self._streams[envelope.stream] = _describe(first)
        return known

    def _named(self, envelope: Envelope, name: str) -> None:
        """Record that the event of `envelope` gave its stream `name`."""
        spans = self._spans.setdefault(envelope.stream, [])
        index = bisect_right(spans, envelope.version, key=lambda span: span.low)
        if index and spans[index - 1].low == envelope.version:
            return
        spans.insert(index, _Span(envelope.version, envelope.version, name))

    def _name_at(self, envelope: Envelope) -> str | None:
        """The name `envelope`'s stream bore at its version (None: erased, or none given)."""
        given = _name_given(envelope.event)
        if given is not None:
            self._named(envelope, given)
            return given
        return self._walk(envelope.stream, envelope.version, known_from=envelope.version - 1)

    def _name_before(self, envelope: Envelope) -> str | None:
        return self._walk(envelope.stream, envelope.version - 1, known_from=envelope.version - 1)

    def _walk(self, stream: str, version: int, *, known_from: int) -> str | None:
        """The name `stream` bore at `version`, whose events above `known_from` give none: from
        the spans known, else read back from `known_from` to the nearest name (or span) found."""
        spans = self._spans.setdefault(stream, [])
        index = bisect_right(spans, version, key=lambda span: span.low) - 1
        below = spans[index] if index >= 0 else None
        if below is not None and below.high >= known_from:
            below.high = max(below.high, version)
            return below.name
        floor = 0 if below is None else below.high
        for envelope in self._log.stream_backward(stream, known_from) if known_from >= 1 else ():
            if envelope.version <= floor:
                assert below is not None
                below.high = version
                return below.name
            name = _name_given(envelope.event)
            if name is not None:
                spans.insert(index + 1, _Span(envelope.version, version, name))
                return name
            if isinstance(envelope.event, ContentErased):
                return None
        return None


def _name_given(event: object) -> str | None:
    """The name an event gives its entity or project, if it gives one."""
    if isinstance(event, EntityCreated | EntityRenamed | ProjectCreated):  # a restore is a creation
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
