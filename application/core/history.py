"""History: every version of an entity or relation, read from its own stream, and reverting to one.

Both read the log itself, so they cover deleted things and every change ever made.
"""

from __future__ import annotations

import bisect
from typing import Annotated, Any, Literal

import msgspec
from chronograph.application.core.tenures import bearers
from chronograph.application.engine.arguments import (
    INT64,
    AsOf,
    D,
    Name,
    ReadArgs,
    RelationKey,
    Workspace,
)
from chronograph.application.engine.outputs import AS_OF_POSITION, ChangeOut, Out, entity_out, relation_out, stamp
from chronograph.application.engine.registry import CORE
from chronograph.application.engine.service import Memory
from chronograph.application.errors import InvalidArgumentsError, NotFoundError
from chronograph.projections import EntityRecord, relation_stream, stream_history, versions_of
from chronograph.projections import Version as StreamVersion
from msgspec import UNSET, Meta, UnsetType

__all__ = ["GetEntityHistory", "GetRelationHistory", "HistoryOut", "cursor_of"]

Limit = Meta(ge=1, le=1000)
Cursor = Annotated[str, Meta(max_length=64), D(description="The nextCursor of the previous page")]


def cursor_of(tool: str, cursor: Any, none: int | None = 0) -> Any:
    """The position or offset a cursor this tool returned stands for (`none` when not given).

    Raises:
        InvalidArgumentsError: If `cursor` is not one of ours.
    """
    if cursor is UNSET:
        return none
    text = str(cursor)
    if not (text.isascii() and text.isdigit()) or int(text) > INT64[1]:  # "²".isdigit(), and int() refuses it
        raise InvalidArgumentsError(tool, f"cursor: {cursor!r} is not a cursor this tool returned")
    return int(text)


class VersionOut(ChangeOut, kw_only=True):
    event_type: str
    changes: Annotated[dict[str, Any], D(description="What this version changed")]
    state: Annotated[dict[str, Any] | None, D(description="The state after this version; null once deleted")]


class HistoryOut(Out, kw_only=True):
    versions: list[VersionOut]
    next_cursor: Annotated[str, D(description="Pass as cursor for the next page")] | UnsetType = UNSET
    as_of: Annotated[int, AS_OF_POSITION] | UnsetType = UNSET


def version_out(version: StreamVersion) -> VersionOut:
    """One version as the history tools answer it."""
    state: dict[str, Any] | None = None  # whole, timestamps too: when is what history is asked for
    if isinstance(version.state, EntityRecord):
        state = msgspec.to_builtins(entity_out(version.state, metadata=True))
    elif version.state is not None:
        state = msgspec.to_builtins(relation_out(version.state, metadata=True))
    return VersionOut(**stamp(version.envelope), event_type=version.event_type, changes=version.changes, state=state)


class GetEntityHistory(ReadArgs, kw_only=True):
    name: Annotated[Name, D(description="Its name, even if deleted")]
    limit: Annotated[int, Limit, D(description="Versions per page")] = 100
    cursor: Cursor | UnsetType = UNSET
    order: Literal["oldest", "newest"] = "oldest"
    as_of: AsOf | UnsetType = UNSET


@CORE.query("get_entity_history", "Entity History",
            "Every version of an entity (deleted ones too): who changed what, when, and the state after")
def get_entity_history(memory: Memory, args: GetEntityHistory) -> HistoryOut:
    """Every version of every entity ever called `name`, oldest first, paged.

    Raises:
        NotFoundError: If no entity was ever called `name` in the workspace.
    """
    with memory.timeline.at("get_entity_history", args.as_of) as moment:
        streams = moment.live.name_streams(args.workspace, args.name)  # every one that ever bore it, up to now
        last = moment.position
        if last is not None:  # as of then: not those that took the name since
            streams = bearers(moment.log, streams, args.workspace, args.name, last)
        if not streams:
            when = "ever existed" if last is None else f"had existed by position {last}"
            raise NotFoundError(f"No entity named {args.name!r} {when} in workspace {args.workspace!r}")
        every = sorted(  # (position, stream, version) of every version, read from the index alone
            (position, stream, version)
            for stream in streams
            for version, position in enumerate(moment.log.positions(stream), start=1)
            if last is None or position <= last
        )
        newest = args.order == "newest"
        if newest:
            every.reverse()
        start = _start(every, args.cursor, newest)
        page = every[start : start + args.limit]
        wanted: dict[str, list[int]] = {}
        for _, stream, version in page:
            wanted.setdefault(stream, []).append(version)
        found = {(v.stream, v.version): v for stream, numbers in wanted.items()
                 for v in versions_of(moment.log, stream, numbers)}
    more = start + args.limit < len(every)
    return HistoryOut(
        versions=[version_out(found[(stream, version)]) for _, stream, version in page],
        next_cursor=f"{AFTER}{page[-1][0]}" if more else UNSET,
        as_of=moment.answered,
    )


AFTER = "p"
"""What begins a history's cursor: the position of the last version a page showed follows it. A page
goes on past that version by position, as the audit log's does, so a write between two pages (a
newer version, newest first) repeats none; a cursor of digits alone is an offset into the versions
(what the tool answered before 2026-12-07), still taken."""


def _start(every: list[tuple[int, str, int]], cursor: Any, newest: bool) -> int:
    """Where in `every` (each version's position first, in the order asked) the page of `cursor` begins.

    Raises:
        InvalidArgumentsError: If `cursor` is not one this tool returned.
    """
    text = "" if cursor is UNSET else str(cursor)
    if not text.startswith(AFTER):
        return int(cursor_of("get_entity_history", cursor))
    digits = text[len(AFTER):]
    well_formed = digits.isascii() and digits.isdigit()
    position = cursor_of("get_entity_history", digits if well_formed else cursor)  # (one refused is named whole)
    if newest:  # the first version before it (positions descending)
        return bisect.bisect_right(every, -position, key=lambda item: -item[0])
    return bisect.bisect_right(every, position, key=lambda item: item[0])  # the first after it


class GetRelationHistory(RelationKey, kw_only=True):
    workspace: Workspace = "default"


@CORE.query("get_relation_history", "Relation History",
            "Every version of one relation, deleted ones too")
def get_relation_history(memory: Memory, args: GetRelationHistory) -> HistoryOut:
    """Every version of the relation (from, relationType, to), across deletes and re-creations.

    Raises:
        NotFoundError: If that relation never existed.
    """
    with memory.timeline.at("get_relation_history") as moment:
        stream = relation_stream(args.workspace, args.source, args.relation_type, args.target)
        versions = stream_history(moment.log, stream)
    if not versions:
        raise NotFoundError(f"No relation {args.label} ever existed in workspace {args.workspace!r}")
    return HistoryOut(versions=[version_out(v) for v in versions])
