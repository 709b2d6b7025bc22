"""The MCP server: a profile's tools, the knowledge-graph resource and its update notifications.

Nothing happens at import time: `create_server` builds a server whose store opens in
its lifespan (or earlier, through `Runtime.open`, so that a CLI can report a locked or
damaged store in one line before any transport starts).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from chronograph.application import Memory, ReplyTooLargeError, Tool, profile
from chronograph.application.exportdir import ExportDir
from chronograph.application.profiles import OFFICIAL_TOOLS
from chronograph.projections import paused_gc
from chronograph.server.config import Settings
from chronograph.server.results import check_text_size, pretty, result
from chronograph.server.sdktools import build_tools
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

import chronograph

__all__ = ["GRAPH_URI", "EmbeddingProgress", "Runtime", "create_server"]

GRAPH_URI = "memory://knowledge-graph"
WORKSPACES_URI = "memory://workspaces"


class Runtime:
    """What a running server holds: its settings, the open memory, the subscribers."""

    def __init__(self, settings: Settings, *, offload: bool = False) -> None:
        self.settings = settings
        self.offload = offload
        """Run calls in a worker thread (HTTP), one at a time, instead of on the event loop."""
        self._one_at_a_time = threading.Lock()
        self._memory: Memory | None = None
        self._users = 0
        self._subscribers: dict[int, Any] = {}

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
                embeddings=settings.embeddings, embeddings_model=settings.embeddings_model,
                embeddings_key=settings.embeddings_key,
            )
            if self._memory.semantic is not None and not self._memory.log.readonly:
                self._memory.semantic.start(EmbeddingProgress())
        self._users += 1
        return self._memory

    def close(self) -> None:
        """One user fewer; the last one closes the store."""
        self._users -= 1
        if self._users == 0 and self._memory is not None:
            self._memory.close()
            self._memory = None

    def actor(self, ctx: Context) -> str:
        """Who a call's events are recorded as: --actor, else the client's own name."""
        if self.settings.actor:
            return self.settings.actor
        params = ctx.session.client_params
        if params is not None and params.client_info.name:
            return params.client_info.name
        return "unknown-client"

    async def call(self, tool: Tool, arguments: dict[str, Any], ctx: Context) -> types.CallToolResult:
        """Run `tool` and turn its output into a tool result.

        With `offload` (HTTP, where many clients share the event loop), the work runs in a
        worker thread, one call at a time, so that a long history or a whole-graph read
        never holds up another client or the health probes.
        """
        actor = self.actor(ctx)
        if self.offload:
            outcome, changed = await anyio.to_thread.run_sync(self._serialised, tool, arguments, actor)
        else:
            outcome, changed = self._run(tool, arguments, actor)
        if changed:
            await self.notify(ctx)
        return outcome

    def _serialised(self, tool: Tool, arguments: dict[str, Any], actor: str) -> tuple[types.CallToolResult, bool]:
        with self._one_at_a_time:
            return self._run(tool, arguments, actor)

    def _run(self, tool: Tool, arguments: dict[str, Any], actor: str) -> tuple[types.CallToolResult, bool]:
        if tool.writes:
            written = self.memory.write(tool, arguments, actor=actor)
            return result(written.output), written.changed
        with paused_gc():
            return result(self.memory.read(tool, arguments), tool=tool.name, limit=self.settings.max_reply), False

    async def notify(self, ctx: Context) -> None:
        """Tell subscribers the knowledge graph changed (both protocol generations)."""
        await ctx.notify_resource_updated(GRAPH_URI)
        for key, session in list(self._subscribers.items()):
            try:
                await session.send_resource_updated(GRAPH_URI)
            except Exception:  # a client that went away stops being a subscriber
                self._subscribers.pop(key, None)

    def subscribe(self, session: Any, uri: str) -> None:
        """Remember a handshake-era `resources/subscribe` to the graph."""
        if uri == GRAPH_URI:
            self._subscribers[id(session._connection)] = session  # noqa: SLF001 (the connection is the identity)

    def unsubscribe(self, session: Any, uri: str) -> None:
        """Forget a subscription."""
        if uri == GRAPH_URI:
            self._subscribers.pop(id(session._connection), None)  # noqa: SLF001


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


def create_server(settings: Settings, runtime: Runtime | None = None, *, log_level: str = "WARNING") -> MCPServer:
    """An MCP server over the store of `settings` (not opened until the server runs).

    Raises:
        KeyError: If `settings.profile` names no profile.
    """
    runtime = runtime or Runtime(settings)
    surface = profile(settings.profile)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[Runtime]:
        runtime.open()
        try:
            yield runtime
        finally:
            runtime.close()

    server = MCPServer(
        "chronograph",
        version=chronograph.__version__,
        instructions=surface.instructions,
        tools=build_tools(surface.tools, runtime.call, writes_files=settings.export_dir is not None,
                          official=OFFICIAL_TOOLS, output_schemas=surface.name == "official"),
        lifespan=lifespan,
        log_level=log_level,  # type: ignore[arg-type]
    )

    @server.resource(
        GRAPH_URI,
        name="knowledge-graph",
        title="Knowledge Graph",
        description="The full knowledge graph with all entities and relations",
        mime_type="application/json",
    )
    async def knowledge_graph() -> str:
        def read() -> str:
            with runtime._one_at_a_time, paused_gc():  # noqa: SLF001 (the runtime's own lock)
                return pretty(runtime.memory.read("read_graph", {}))

        text = await anyio.to_thread.run_sync(read) if runtime.offload else read()
        try:
            return check_text_size(
                f"the {GRAPH_URI} resource", text, settings.max_reply,
                "Read the graph with the read_graph tool instead, a page at a time (limit and offset).",
            )
        except ReplyTooLargeError as error:
            raise ResourceError(str(error)) from None

    @server.resource(
        WORKSPACES_URI,
        name="workspaces",
        title="Workspaces",
        description="The workspaces of this memory, with their counts",
        mime_type="application/json",
    )
    async def workspace_list() -> str:
        return pretty(runtime.memory.read("list_workspaces", {}))

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        runtime.subscribe(ctx.session, str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        runtime.unsubscribe(ctx.session, str(params.uri))
        return types.EmptyResult()

    # MCPServer has no public hook for the handshake-era subscribe methods yet.
    lowlevel = server._lowlevel_server  # noqa: SLF001
    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    return server
