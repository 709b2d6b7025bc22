"""The audit log: the log filtered and paged, each event with its workspace and subject."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated, Any, Literal

from chronograph.application.core.history import Limit, cursor_of
from chronograph.application.core.subjects import Subjects, live_names
from chronograph.application.engine.access import administers_all, readable
from chronograph.application.engine.arguments import D, Name, ReadArgs
from chronograph.application.engine.outputs import Out, stamp
from chronograph.application.engine.registry import CORE
from chronograph.application.engine.service import Memory
from chronograph.application.errors import InvalidArgumentsError
from chronograph.eventstore import CATALOGUE, Envelope, LogReader, clock
from chronograph.eventstore.events import event_type
from chronograph.eventstore.tokenevents import TokenIssued, TokenRevoked
from chronograph.projections import changes_of
from msgspec import UNSET, Meta, UnsetType

__all__ = ["AuditEventOut", "GetAuditLog", "event_out"]

Text = Annotated[str, Meta(max_length=4096)]
EVENT_TYPES = tuple(event_type(cls) for cls in CATALOGUE)


class GetAuditLog(ReadArgs, kw_only=True):
    all_workspaces: Annotated[bool, D(description="Every workspace")] = False
    entity_name: Annotated[Name, D(description="Only this entity")] | UnsetType = UNSET
    actor: Annotated[Text, D(description="Only this actor")] | UnsetType = UNSET
    principal: Annotated[Text, D(description="Only this principal")] | UnsetType = UNSET
    event_types: Annotated[list[Annotated[str, Meta(max_length=64)]], Meta(max_length=32), D(
        description="Only these event types")] | UnsetType = UNSET
    since: Annotated[str, D(description="ISO-8601, inclusive")] | UnsetType = UNSET
    until: Annotated[str, D(description="ISO-8601, inclusive")] | UnsetType = UNSET
    after_position: Annotated[int, Meta(ge=0), D(description="After this log position")] | UnsetType = UNSET
    order: Literal["newest", "oldest"] = "newest"
    limit: Annotated[int, Limit, D(description="Events per page")] = 50
    cursor: Annotated[str, Meta(max_length=64), D(description="The nextCursor of the previous page")] | UnsetType = (
        UNSET
    )
    include_ids: Annotated[bool, D(description="Stream and call ids too")] | UnsetType = UNSET

    def touches(self) -> tuple[str, ...]:
        """Its workspace; with allWorkspaces, every workspace the caller may read."""
        return () if self.all_workspaces else (self.workspace,)


class AuditEventOut(Out, kw_only=True):
    """A `ChangeOut` whose stream and call ids are there only when asked for."""

    position: Annotated[int, D(description="Position of the change in the log")]
    stream: Annotated[str, D(description="The stable id of the entity, relation or context changed")] | (
        UnsetType) = UNSET
    version: int
    recorded_at: str
    actor: Annotated[str, D(description="Who made the change (MCP client or --actor)")]
    principal: Annotated[str, D(description="Who was authenticated (local, or a token's name)")]
    correlation_id: Annotated[str, D(description="Shared by every change of one tool call")] | UnsetType = UNSET
    type: str
    workspace: str
    subject: Annotated[str, D(description="The entity name, the relation, or the context it changed")]
    data: dict[str, Any]


class AuditOut(Out, kw_only=True):
    events: list[AuditEventOut]
    next_cursor: Annotated[str, D(description="Pass as cursor for the next page")] | UnsetType = UNSET


def event_out(envelope: Envelope, workspace: str, subject: str, *, ids: bool = True) -> AuditEventOut:
    """One event as the audit log shows it; without `ids`, leaving out the stream and call ids
    (internal: an agent pays for their tokens and has no tool that takes them)."""
    data = changes_of(envelope)
    data.pop("digest", None)  # a token's: no reader needs it (nothing of a secret leaves the log)
    out = AuditEventOut(**stamp(envelope), principal=envelope.principal, type=envelope.type, workspace=workspace,
                        subject=subject, data=data)
    if not ids:
        out.stream = out.correlation_id = UNSET
    return out


@CORE.query("get_audit_log", "Audit Log",
            "The change log, newest first: who changed what, when; filter by entity, actor, principal, type or time")
def get_audit_log(memory: Memory, args: GetAuditLog) -> AuditOut:
    """Events matching the filters, paged, in `order`."""
    with memory.timeline.at("get_audit_log") as moment:
        log = moment.log
        low, high = 1, log.head()
        if args.since is not UNSET:
            low = max(low, log.position_at(_moment("since", args.since) - 1) + 1)
        if args.until is not UNSET:
            high = min(high, log.position_at(_moment("until", args.until)))
        if args.after_position is not UNSET:
            low = max(low, args.after_position + 1)
        cursor = cursor_of("get_audit_log", args.cursor, none=None)
        newest = args.order == "newest"
        if cursor is not None:
            if newest:
                high = min(high, cursor - 1)
            else:
                low = max(low, cursor + 1)

        subjects = Subjects(log, live_names(moment.live))
        types = None if args.event_types is UNSET else set(args.event_types)
        for index, name in enumerate([] if args.event_types is UNSET else args.event_types):
            if name not in EVENT_TYPES:
                raise InvalidArgumentsError("get_audit_log", f"eventTypes[{index}]: {name!r} is not an event type; "
                                            f"the types are: {', '.join(EVENT_TYPES)}")
        candidates: Iterable[Envelope]
        if args.entity_name is not UNSET:
            streams = moment.live.name_streams(args.workspace, args.entity_name)
            found = [e for s in streams for e in log.stream(s) if low <= e.position <= high]
            candidates = sorted(found, key=lambda e: e.position, reverse=newest)
        else:
            candidates = _scan(log, low, high, newest)

        events: list[AuditEventOut] = []
        more = False
        for envelope in candidates:
            if types is not None and envelope.type not in types:
                continue
            if args.actor is not UNSET and envelope.actor != args.actor:
                continue
            if args.principal is not UNSET and envelope.principal != args.principal:
                continue
            workspace = subjects.workspace(envelope)
            if not (readable(workspace) if args.all_workspaces else workspace == args.workspace):
                continue
            if isinstance(envelope.event, TokenIssued | TokenRevoked) and not administers_all():
                continue  # the team memory's workspace holds them, but they say who may do what everywhere
            if len(events) == args.limit:
                more = True
                break
            events.append(event_out(envelope, *subjects.of(envelope), ids=args.include_ids is True))
    return AuditOut(events=events, next_cursor=str(events[-1].position) if more else UNSET)


def _moment(field: str, text: str) -> int:
    try:
        return clock.parse_iso(text)
    except ValueError as error:
        raise InvalidArgumentsError("get_audit_log", f"{field}: {error}") from None


def _scan(log: LogReader, low: int, high: int, newest: bool) -> Iterator[Envelope]:
    if low > high:
        return
    batches = log.batches_backward(high, low) if newest else log.batches(low, high, batch_size=256)
    for batch in batches:
        yield from batch
