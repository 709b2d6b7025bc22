"""What every tool of the team memory (the Agent Memory surface) shares: its registry, its
reply, the state a call works on, ids, scopes and times.

Agent Memory bundles its operations into fifteen tools with an `action` argument. Each
is declared once in `TEAM` as a command whose reading actions are listed in `reads`:
those run as queries (no write transaction). A handler gets a `Batch` (writing actions)
or the `Memory` (reading ones) and turns either into a `Team` with `Team.of`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec
from chronograph.application.engine.arguments import Args, AsOf
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.registry import TEAM
from chronograph.application.errors import InvalidArgumentsError, NotFoundError
from chronograph.eventstore import Event, clock
from chronograph.eventstore.keys import digest
from chronograph.projections import position_of
from chronograph.projections.team.state import TeamState, fold
from msgspec import UNSET, Meta, UnsetType

if TYPE_CHECKING:
    from chronograph.application.engine.service import Memory

__all__ = [
    "TEAM",
    "Page",
    "Scope",
    "Team",
    "TeamArgs",
    "iso",
    "lock_stream",
    "new_id",
    "page",
]


Scope = Literal["global", "org", "project", "session"]
Text = Annotated[str, Meta(max_length=65_536)]
Short = Annotated[str, Meta(min_length=1, max_length=512)]
Limit = Annotated[int, Meta(ge=1, le=1_000)]
Offset = Annotated[int, Meta(ge=0)]


class TeamArgs(Args, kw_only=True):
    """Base of the team tools' arguments (camelCase, unknown fields refused)."""


class Page(TeamArgs, kw_only=True):
    """A list's window."""

    limit: Limit | UnsetType = UNSET
    offset: Offset = 0


def page(items: list[Any], args: Page, default: int = 50) -> tuple[list[Any], dict[str, Any]]:
    """`items` cut to the call's window, and the meta Agent Memory reports with a list."""
    limit = default if args.limit is UNSET else args.limit
    chosen = items[args.offset: args.offset + limit]
    more = args.offset + len(chosen) < len(items)
    return chosen, {"totalCount": len(items), "returnedCount": len(chosen), "truncated": more, "hasMore": more}


def new_id(prefix: str) -> str:
    """A fresh id in Agent Memory's style: ``gl_3f9a1c2b7d4e``."""
    return f"{prefix}_{os.urandom(6).hex()}"


def lock_stream(file_path: str) -> str:
    """The stream of the lock on one file."""
    return "am/lock/" + digest(file_path.encode("utf-8", "surrogatepass")).hex()


def iso(us: int | None) -> str | None:
    """A recorded time as ISO-8601 (None stays None)."""
    return None if us is None else clock.isoformat(us)


def require(tool: str, action: str, **values: Any) -> None:
    """Refuse a call missing an argument its action needs.

    Raises:
        InvalidArgumentsError: Naming the first missing one.
    """
    for name, value in values.items():
        if value is UNSET or value is None:
            raise InvalidArgumentsError(tool, f"{name} is required for action {action!r}")


class Team:
    """The team memory as one call sees it, and (for commands) the batch it decides into."""

    def __init__(self, state: TeamState, now: int, batch: Batch | None = None) -> None:
        self.state = state
        self.now = now
        """The time the call is answered at (µs): the batch's time for a command."""
        self.batch = batch

    @classmethod
    def of(cls, host: Batch | Memory, tool: str, as_of: AsOf | UnsetType = UNSET) -> Team:
        """The team memory for a handler given `host`: current, or as of `as_of` (reads only).

        Raises:
            InvalidArgumentsError: If `as_of` is not a position or an ISO-8601 time.
        """
        if isinstance(host, Batch):
            view = host.teams
            assert view is not None, "a command of the team memory runs in a Memory's batch"
            state = view.current(host.tx)

            def observe(envelope: Any) -> None:
                view.dirty = True
                fold(state, (envelope,))

            host.observers.append(observe)
            return cls(state, host.recorded_at, host)
        with host.views.snapshot() as snapshot:
            log = snapshot.log
            if as_of is UNSET:
                return cls(host.teams.current(log), clock.now_us())
            try:
                position = position_of(log, as_of)
            except ValueError as error:
                raise InvalidArgumentsError(tool, f"asOf: {error}") from None
            envelope = log.get(position) if position else None
            then = envelope.recorded_at if envelope is not None else 0
            return cls(host.teams.at(log, position), then)

    def emit(self, stream: str, event: Event, *, new: bool = False) -> int:
        """Decide `event` (folded into the state at once); return the stream's new version."""
        assert self.batch is not None, "a reading action decided an event"
        return self.batch.emit(stream, event, new=new)

    def first_in_log(self, stream: str) -> Event | None:
        """The first event the log holds on `stream` (None: none). A thing the state does not hold
        may still have its stream there: a reset emptied the state, and a forgotten entry's stream
        holds what erased it. Whatever makes such a thing again continues that stream (`emit`
        without `new`) or takes a fresh id, never expects the stream to be new."""
        assert self.batch is not None, "a reading action asked the log"
        tx = self.batch.tx
        if not tx.stream_version(stream):
            return None
        return next(iter(tx.stream(stream, 1, 1))).event

    @property
    def actor(self) -> str:
        return self.batch.actor if self.batch is not None else "unknown"

    @property
    def writer(self) -> str | None:
        """Which connection the command came through (see `Memory.writer_for`)."""
        return self.batch.writer if self.batch is not None else None

    # --- scopes ---------------------------------------------------------------------------

    def check_scope(self, tool: str, scope_type: str, scope_id: str | None | UnsetType) -> str | None:
        """The scope id, checked: None for global; an org, project or session that exists.

        Raises:
            InvalidArgumentsError: A non-global scope without an id.
            NotFoundError: A scope that does not exist.
        """
        if scope_type == "global":
            return None
        if scope_id is UNSET or scope_id is None or scope_id == "":
            raise InvalidArgumentsError(tool, f"scopeId is required unless scopeType is 'global' (it is "
                                        f"{scope_type!r})")
        state = self.state
        known: dict[str, Any] = state.orgs if scope_type == "org" else (
            state.projects if scope_type == "project" else state.sessions)
        if scope_id not in known:
            raise NotFoundError(f"Scope {scope_type} {scope_id!r} does not exist")
        return scope_id

    def chain(self, scope_type: str, scope_id: str | None, *, inherit: bool = True) -> list[tuple[str, str | None]]:
        """The scope and, with `inherit`, its parents up to global, nearest first."""
        chain: list[tuple[str, str | None]] = [(scope_type, scope_id)]
        if not inherit:
            return chain
        state = self.state
        if scope_type == "session":
            session = state.sessions.get(scope_id or "")
            if session is not None and session.project_id:
                chain.append(("project", session.project_id))
                scope_type, scope_id = "project", session.project_id
        if scope_type == "project":
            project = state.projects.get(scope_id or "")
            if project is not None and project.org_id:
                chain.append(("org", project.org_id))
        if chain[-1][0] != "global":
            chain.append(("global", None))
        return chain


def structs(items: list[msgspec.Struct]) -> list[dict[str, Any]]:
    """Records as JSON objects (camelCase)."""
    return [msgspec.to_builtins(item) for item in items]
