"""What a running server holds: its settings, the open memory, its subscribers; and how a
tool call runs on it.

Free of the MCP SDK at import (the SDK's types are imported where a call through the SDK
needs them), so that the stdio front (`server/front.py`) can serve a session before the
SDK is loaded.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from chronograph.application import PROFILES, Memory, Tool
from chronograph.application.engine.exportdir import ExportDir
from chronograph.application.engine.principal import LOCAL_PRINCIPAL, Principal
from chronograph.application.engine.registry import TEAM
from chronograph.application.surfaces.projectfiles import ProjectFiles
from chronograph.application.team.scopes import session_active
from chronograph.projections import paused_gc
from chronograph.server.authentication import PRINCIPAL_KEY
from chronograph.server.config import Settings
from chronograph.server.results import Reply, reply, result

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context
    from mcp_types import CallToolResult

__all__ = ["GRAPH_URI", "GRAPH_WORKSPACE", "EmbeddingProgress", "Runtime"]

GRAPH_URI = "memory://knowledge-graph"
GRAPH_WORKSPACE = "default"
"""The workspace the knowledge-graph resource shows (what its subscribers must be granted to read)."""


LOCAL = "local"
"""The one connection of a stdio (or in-process) server."""

MAX_CONNECTIONS = 10_000
"""Connections whose team session is remembered at once (HTTP)."""

READERS = 4
"""Reads that run at once over HTTP (threads): enough that a long one leaves others room, few
enough that they and the event loop share the interpreter without a convoy."""


T = TypeVar("T")


class Runtime:
    """What a running server holds: its settings, the open memory, the subscribers."""

    def __init__(self, settings: Settings, *, offload: bool = False) -> None:
        self.settings = settings
        self.offload = offload
        """Run calls in worker threads (HTTP) instead of on the event loop: writes one at a time,
        reads up to `READERS` at once, each session's calls in turn."""
        self._one_at_a_time = threading.Lock()
        self._limits: Any = None
        """(reads, writes): the capacity limiters of the worker threads (made in the event loop)."""
        self._turns: dict[str, list[Any]] = {}
        """session -> [its lock, calls waiting or running]: a session's calls run one after another."""
        self._memory: Memory | None = None
        self.closing: list[Callable[[], None]] = []
        """Work whenever a user of the store closes (saving when tokens were last used): an HTTP
        server's last close may never come (uvicorn ends the process with the signal it caught,
        once the app's lifespan, one user, has closed)."""
        self._users = 0
        self._subscribers: dict[int, Any] = {}
        self._sessions: dict[str, str] = {}
        self._began: dict[str, int] = {}
        """connection -> the log's head when it first called (where its session began)"""
        """connection -> the team session it started: its writes are recorded as actor/session"""
        self.principal: Principal = LOCAL_PRINCIPAL
        """Whom a call that carries no principal is made for: the local user of a stdio server
        (and of an HTTP one before any authenticator puts a principal in its requests)."""
        self.exact = settings.profile in PROFILES and PROFILES[settings.profile].exact
        self.compact = settings.profile in PROFILES and PROFILES[settings.profile].compact
        """Whether answers print their text compact (see `Profile.compact`)."""
        """Whether answers keep the reference server's shape (what we add rides in `_meta`)."""

    @classmethod
    def over(cls, memory: Memory, settings: Settings) -> Runtime:
        """A runtime over a memory opened by someone else, who closes it (a command that answers a
        few requests in its own process, as priming the kept answers does)."""
        runtime = cls(settings)
        runtime._memory = memory
        runtime._users = 1  # the owner's: a session's `close` never closes it
        return runtime

    @property
    def memory(self) -> Memory:
        """The open memory (between `open` and the matching `close`)."""
        if self._memory is None:
            raise RuntimeError("the store is not open")
        return self._memory

    def open(self) -> Memory:
        """Open the store, or count one more user of the open one."""
        if self._memory is None:
            settings = self.settings
            exports = None
            if settings.export_dir is not None:
                exports = ExportDir(settings.export_dir, max_export=settings.export_max, budget=settings.export_budget)
            self._memory = Memory(
                settings.store, sync=settings.sync, export_dir=exports, max_size=settings.max_size,
                cache=settings.cache, progress=StartProgress(),
                embeddings=settings.embeddings, embeddings_model=settings.embeddings_model,
                term_weights=settings.term_weights,
                embeddings_key=settings.embeddings_key, project_files=settings.project_files,
            )
            self._memory.reply_limit = settings.max_reply
            if settings.project_files and settings.profile in ("n2n", "full"):
                files = ProjectFiles(always=settings.mirror_projects)
                files.install(self._memory)
            if self._memory.semantic is not None and not self._memory.log.readonly:
                self._memory.semantic.start(EmbeddingProgress())
            self._memory.keep_images()
            self._memory.follow()  # a database store: other servers' writes reach the views
            self._began[LOCAL] = self._memory.log.head()
        self._users += 1
        return self._memory

    @property
    def open_users(self) -> int:
        """Users of the open store (0: closed)."""
        return self._users

    def shutdown(self) -> None:
        """Close the store whoever still uses it (a server asked to stop, mid-session or not)."""
        if self._memory is not None:
            self._users = 1
        self.close()

    def interrupt(self) -> None:
        """Cut short the calls waiting for the right to write (see `Memory.interrupt`): the server
        is asked to stop, and waits for its calls in flight before it closes the store."""
        if self._memory is not None:
            self._memory.interrupt()

    def close(self) -> None:
        """One user fewer; the last one closes the store."""
        self._users -= 1
        if self._memory is not None:
            for work in self.closing:
                work()
        if self._users == 0 and self._memory is not None:
            self._memory.close()
            self._memory = None

    def principal_of(self, request: Any) -> Principal:
        """Whom the call of `request` (an HTTP request, or None over stdio) is made for: the
        principal its authentication put in the ASGI scope, else `self.principal`."""
        scope = getattr(request, "scope", None)
        found = scope.get(PRINCIPAL_KEY) if isinstance(scope, dict) else None
        return found if isinstance(found, Principal) else self.principal

    def actor(self, client: str | None) -> str:
        """Who a call's events are recorded as: --actor, else the client's own name."""
        return self.settings.actor or client or "unknown-client"

    def connection(self, ctx: Context) -> str | None:
        """What identifies the client of a call across calls: the process over stdio (one client
        per server), the Mcp-Session-Id over HTTP (None without one: stateless HTTP has no
        connection to remember a session for)."""
        if not self.offload:
            return LOCAL
        request = ctx.request_context.request
        headers = getattr(request, "headers", None)
        return None if headers is None else headers.get("mcp-session-id")

    def began(self, connection: str | None) -> int:
        """The log's head when `connection` began its session (its first call; the open of a
        stdio server): what it wrote is after it, what others wrote before it is news to it."""
        if connection is None:
            return self.memory.log.head()
        if connection not in self._began:
            if len(self._began) >= MAX_CONNECTIONS:  # forget the oldest
                del self._began[next(iter(self._began))]
            self._began[connection] = self.memory.log.head()
        return self._began[connection]

    def _in_session(self, actor: str, connection: str | None) -> str:
        """`actor`, with the team session the connection started (memory_session start), while it
        is active: once anyone has ended it (another connection, another process) or a reset
        emptied the team memory, the connection's writes are its own again."""
        session = self._sessions.get(connection) if connection is not None else None
        if session is None:
            return actor
        if not session_active(self.memory, session):
            self._sessions.pop(str(connection), None)
            return actor
        return f"{actor}/{session}"

    def _follow_session(self, tool: Tool, arguments: dict[str, Any], output: Any, connection: str | None) -> None:
        if tool.name != "memory_session" or connection is None:
            return
        action = arguments.get("action")
        if action == "start":
            if len(self._sessions) >= MAX_CONNECTIONS:  # forget the oldest
                del self._sessions[next(iter(self._sessions))]
            self._sessions[connection] = output.reply["session"]["id"]
        elif action == "end" and self._sessions.get(connection) == arguments.get("id"):
            del self._sessions[connection]

    async def call(self, tool: Tool, arguments: dict[str, Any], ctx: Context, *,
                   principal: Principal = LOCAL_PRINCIPAL) -> CallToolResult:
        """Run `tool` for `principal` and turn its output into a tool result.

        With `offload` (HTTP, where many clients share the event loop), the work runs in a
        worker thread, so that a long history or a whole-graph read never holds up the event
        loop, the health probes or another client: writes one at a time, reads beside each
        other and the writer (see `Memory.alongside`), up to `READERS` at once, taken in the
        order they came; a session's own calls run one after another, so that one client
        sending many at once takes no more than its turn.
        """
        import anyio  # noqa: PLC0415 (loaded with the SDK)

        params = ctx.session.client_params
        actor = self.actor(params.client_info.name if params is not None else None)
        if self.offload:
            if self._limits is None:
                self._limits = (anyio.CapacityLimiter(READERS), anyio.CapacityLimiter(1))
            connection = self.connection(ctx)
            turn = self._turn(connection)
            try:
                async with turn[0]:
                    work = self._serialised if tool.writes else self._read
                    outcome, changed = await anyio.to_thread.run_sync(
                        work, tool, arguments, actor, connection, principal, limiter=self._limits[bool(tool.writes)])
            finally:
                turn[1] -= 1
                if not turn[1] and connection is not None:
                    self._turns.pop(connection, None)
        else:
            outcome, changed = self.run(tool, arguments, actor, self.connection(ctx), principal=principal)
        if GRAPH_WORKSPACE in changed:
            await self.notify(ctx)
        return result(*outcome)

    def _turn(self, connection: str | None) -> list[Any]:
        """The lock a call of `connection` takes its turn with (a fresh one without a session)."""
        import anyio  # noqa: PLC0415

        turn = self._turns.get(connection) if connection is not None else None
        if turn is None:
            turn = [anyio.Lock(), 0]
            if connection is not None:
                self._turns[connection] = turn
        turn[1] += 1
        return turn

    def serialised(self, work: Callable[..., T], *args: Any) -> T:
        """Run `work(*args)` in turn with the writes (in a worker thread, as they are)."""
        with self._one_at_a_time:
            return work(*args)

    def _serialised(self, tool: Tool, arguments: dict[str, Any], actor: str, connection: str | None,
                    principal: Principal) -> tuple[Reply, tuple[str, ...]]:
        with self._one_at_a_time:
            return self.run(tool, arguments, actor, connection, principal=principal)

    def _read(self, tool: Tool, arguments: dict[str, Any], actor: str, connection: str | None,
              principal: Principal) -> tuple[Reply, tuple[str, ...]]:
        return self.run(tool, arguments, actor, connection, principal=principal)

    def run(self, tool: Tool, arguments: dict[str, Any], actor: str, connection: str | None = None, *,
            principal: Principal = LOCAL_PRINCIPAL) -> tuple[Reply, tuple[str, ...]]:
        """Run `tool` for `principal`: its reply (text, structured content, `_meta`) and the
        workspaces it changed (none: it changed nothing).

        A write of a `connection` that started a team session is recorded as the actor's
        within that session (``claude-code/sess_…``).

        Raises:
            ForbiddenError: If `principal` lacks a grant the call needs (nothing is read or written).
            ChronographError: If the call is refused (nothing is written).
        """
        if connection is not None:
            self.began(connection)
        if tool.writes:
            written = self.memory.write(tool, arguments, actor=self._in_session(actor, connection),
                                        principal=principal,
                                        writer=self.memory.writer_for(actor, connection) if tool.name in TEAM else None)
            self._follow_session(tool, arguments, written.output, connection)
            return (reply(written.output, tool=tool.name, exact=self.exact, compact=self.compact),
                    written.workspaces if written.changed else ())
        with paused_gc():
            return reply(self.memory.read(tool, arguments, principal=principal), tool=tool.name,
                         limit=self.settings.max_reply, exact=self.exact, compact=self.compact), ()

    async def notify(self, ctx: Context) -> None:
        """Tell subscribers the knowledge graph changed (both protocol generations): the caller,
        who wrote there, and each subscriber granted to read it (no other learns of the write)."""
        await ctx.notify_resource_updated(GRAPH_URI)
        for key, (session, principal) in list(self._subscribers.items()):
            if not principal.may(GRAPH_WORKSPACE, "read"):  # refused at subscribe time: never kept
                continue
            try:
                await session.send_resource_updated(GRAPH_URI)
            except Exception:  # a client that went away stops being a subscriber
                self._subscribers.pop(key, None)

    def subscribe(self, session: Any, uri: str, principal: Principal = LOCAL_PRINCIPAL) -> None:
        """Remember a handshake-era `resources/subscribe` to the graph by `principal`.

        Raises:
            ForbiddenError: If `principal` may not read what the resource shows.
        """
        if uri == GRAPH_URI:
            principal.check(GRAPH_WORKSPACE, "read", tool="resources/subscribe")
            self._subscribers[id(session._connection)] = (session, principal)  # noqa: SLF001 (the connection is the identity)

    def unsubscribe(self, session: Any, uri: str) -> None:
        """Forget a subscription."""
        if uri == GRAPH_URI:
            self._subscribers.pop(id(session._connection), None)  # noqa: SLF001


class StartProgress:
    """Says on stderr how far a server that opens a big store has got with its views (a first
    open, or a new cache of a database log: proportional to the events it folds), every
    tenth or so. A terminal's progress bar would not reach an MCP client's log."""

    SMALL = 20_000
    """Events too few to mention."""

    def __init__(self) -> None:
        self._said: dict[str, float] = {}
        self._first: dict[str, int] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        first = self._first.setdefault(stage, done if stage == "catch-up" else 0)  # where a catch-up started
        if total - first < self.SMALL:
            return
        share = done / total
        if share - self._said.get(stage, -1.0) >= 0.1 or done >= total > 0:
            if self._said.get(stage) == 1.0:
                return
            self._said[stage] = share
            print(f"chronograph: {stage}: {done:,} of {total:,} ({share:.0%})", file=sys.stderr)


class EmbeddingProgress:
    """Says on stderr how far the first embedding of a large store has got, every tenth or so."""

    SMALL = 2_000
    """Backlogs (in events) too small to mention."""

    def __init__(self) -> None:
        self._start: int | None = None
        self._said = 0.0

    def __call__(self, checkpoint: int, head: int) -> None:
        if self._start is None:
            self._start = checkpoint
            if head - checkpoint >= self.SMALL:
                print(f"chronograph: embedding the store for semantic search (log position {checkpoint:,} "
                      f"of {head:,}); the other kinds of search work meanwhile", file=sys.stderr)
            else:
                self._start = head  # nothing worth a word
            return
        span = max(1, head - self._start)
        done = (checkpoint - self._start) / span
        if head - self._start >= self.SMALL and (done - self._said >= 0.1 or checkpoint >= head):
            self._said = done
            print(f"chronograph: embedded through log position {checkpoint:,} of {head:,} ({done:.0%})",
                  file=sys.stderr)
        if checkpoint >= head:
            self._start, self._said = None, 0.0
