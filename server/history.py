"""History and audit: every version of an entity or relation, and the log filtered and paged.

Both read the log itself, so they cover deleted things and every change ever made.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgspec
from msgspec import UNSET

from eventstore import ContextUpdated, EntityCreated, Envelope, Reader, RelationCreated, clock
from projections import EntityRecord, Version, relation_stream, stream_history
from server import more_schemas as m
from server.errors import InvalidArgumentsError, NotFoundError
from server.outputs import entity_out, relation_out
from server.timeline import Moment

__all__ = ["Subjects", "audit_log", "entity_history", "event_out", "relation_history"]


def entity_history(moment: Moment, args: m.GetEntityHistory) -> m.HistoryOut:
    """Every version of every entity ever called `name`, oldest first, paged.

    Raises:
        NotFoundError: If no entity was ever called `name` in the workspace.
    """
    streams = moment.live.name_streams(args.workspace, args.name)
    if not streams:
        raise NotFoundError(f"No entity named {args.name!r} ever existed in workspace {args.workspace!r}")
    versions = sorted(
        (v for stream in streams for v in stream_history(moment.log, stream, to_position=moment.position)),
        key=lambda version: version.position,
    )
    start = _cursor("get_entity_history", args.cursor)
    page = versions[start : start + args.limit]
    more = start + args.limit < len(versions)
    return m.HistoryOut(
        versions=[_version_out(v) for v in page],
        next_cursor=str(start + args.limit) if more else UNSET,
    )


def relation_history(moment: Moment, args: m.GetRelationHistory) -> m.HistoryOut:
    """Every version of the relation (from, relationType, to), across deletes and re-creations.

    Raises:
        NotFoundError: If that relation never existed.
    """
    stream = relation_stream(args.workspace, args.source, args.relation_type, args.target)
    versions = stream_history(moment.log, stream)
    if not versions:
        raise NotFoundError(
            f"No relation {args.source} -[{args.relation_type}]-> {args.target} ever existed "
            f"in workspace {args.workspace!r}"
        )
    return m.HistoryOut(versions=[_version_out(v) for v in versions])


def _version_out(version: Version) -> m.VersionOut:
    state: dict[str, Any] | None = None
    if isinstance(version.state, EntityRecord):
        state = msgspec.to_builtins(entity_out(version.state))
    elif version.state is not None:
        state = msgspec.to_builtins(relation_out(version.state))
    return m.VersionOut(
        stream=version.stream,
        version=version.version,
        position=version.position,
        event_type=version.event_type,
        recorded_at=clock.isoformat(version.recorded_at),
        actor=version.actor,
        correlation_id=version.correlation_id,
        changes=version.changes,
        state=state,
    )


# --- the audit log ----------------------------------------------------------------------------


class Subjects:
    """What each stream is about (workspace and a readable subject), from its first event."""

    def __init__(self, log: Reader) -> None:
        self._log = log
        self._known: dict[str, tuple[str, str]] = {}

    def of(self, envelope: Envelope) -> tuple[str, str]:
        known = self._known.get(envelope.stream)
        if known is None:
            first = envelope if envelope.version == 1 else next(iter(self._log.stream(envelope.stream, 1, 1)))
            known = self._known[envelope.stream] = _describe(first)
        return known


def _describe(first: Envelope) -> tuple[str, str]:
    event = first.event
    if isinstance(event, EntityCreated):
        return event.workspace, event.name
    if isinstance(event, RelationCreated):
        return event.workspace, f"{event.source} -[{event.relation_type}]-> {event.target}"
    if isinstance(event, ContextUpdated):
        return event.workspace, "context"
    return "", first.stream


def audit_log(moment: Moment, args: m.GetAuditLog, since: int | None, until: int | None) -> m.AuditOut:
    """Events matching the filters between positions `since` and `until`, paged, in `order`."""
    log = moment.log
    low, high = 1, log.head()
    if since is not None:
        low = max(low, since)
    if until is not None:
        high = min(high, until)
    if args.after_position is not UNSET:
        low = max(low, args.after_position + 1)
    cursor = _cursor("get_audit_log", args.cursor, none=None)
    newest = args.order == "newest"
    if cursor is not None:
        if newest:
            high = min(high, cursor - 1)
        else:
            low = max(low, cursor + 1)

    subjects = Subjects(log)
    types = None if args.event_types is UNSET else set(args.event_types)
    candidates: Iterable[Envelope]
    if args.entity_name is not UNSET:
        streams = moment.live.name_streams(args.workspace, args.entity_name)
        found = [e for s in streams for e in log.stream(s) if low <= e.position <= high]
        candidates = sorted(found, key=lambda e: e.position, reverse=newest)
    else:
        candidates = _scan(log, low, high, newest)

    events: list[m.AuditEventOut] = []
    more = False
    for envelope in candidates:
        if types is not None and envelope.type not in types:
            continue
        if args.actor is not UNSET and envelope.actor != args.actor:
            continue
        workspace, subject = subjects.of(envelope)
        if not args.all_workspaces and workspace != args.workspace:
            continue
        if len(events) == args.limit:
            more = True
            break
        events.append(event_out(envelope, workspace, subject))
    return m.AuditOut(events=events, next_cursor=str(events[-1].position) if more else UNSET)


def _scan(log: Reader, low: int, high: int, newest: bool) -> Iterator[Envelope]:
    if low > high:
        return
    batches = log.batches_backward(high, low) if newest else log.batches(low, high, batch_size=256)
    for batch in batches:
        yield from batch


def event_out(envelope: Envelope, workspace: str, subject: str) -> m.AuditEventOut:
    data = msgspec.to_builtins(envelope.event)
    data.pop("type", None)
    return m.AuditEventOut(
        position=envelope.position,
        stream=envelope.stream,
        version=envelope.version,
        type=envelope.type,
        recorded_at=clock.isoformat(envelope.recorded_at),
        actor=envelope.actor,
        correlation_id=envelope.correlation_id,
        workspace=workspace,
        subject=subject,
        data=data,
    )


def _cursor(tool: str, cursor: Any, none: int | None = 0) -> Any:
    if cursor is UNSET:
        return none
    if not str(cursor).isdigit():
        raise InvalidArgumentsError(tool, f"cursor: {cursor!r} is not a cursor this tool returned")
    return int(cursor)
