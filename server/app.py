"""The MCP server: a profile's tools, the knowledge-graph resource and its update notifications.

Nothing happens at import time: `create_server` builds a server whose store opens in
its lifespan (or earlier, through `Runtime.open`, so that a CLI can report a locked or
damaged store in one line before any transport starts).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from chronograph.application import ChronographError, Files, ReplyTooLargeError, profile
from chronograph.application.profiles import OFFICIAL_TOOLS
from chronograph.application.surfaces.kuzu import databases
from chronograph.application.surfaces.n2n import N2N
from chronograph.projections import paused_gc
from chronograph.server.config import Settings
from chronograph.server.results import check_text_size, pretty
from chronograph.server.runtime import GRAPH_URI, EmbeddingProgress, Runtime
from chronograph.server.sdktools import build_tools
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.resources.templates import ResourceSecurity

import chronograph

__all__ = ["GRAPH_URI", "EmbeddingProgress", "Runtime", "create_server", "writable"]

WORKSPACES_URI = "memory://workspaces"


def writable(settings: Settings) -> tuple[Files, ...]:
    """Where this server's tools may write files: the export directory when there is one; a
    project root always (adopting a root writes its `.mcp` marker even where
    `project_files` keeps n2n's export from writing)."""
    return ("project", "export-dir") if settings.export_dir is not None else ("project",)


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
        tools=build_tools(surface.tools, runtime.call, files=writable(settings), official=OFFICIAL_TOOLS,
                          output_schemas=surface.name == "official", errors=surface.errors),
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

    if surface.name in ("kuzu", "full"):
        @server.resource(
            "kuzu://databases/list", name="databases", title="Databases",
            description="Lists all available Kuzu databases in the workspace with metadata",
            mime_type="application/json",
        )
        async def database_list() -> str:
            return pretty(databases(runtime.memory))

    if surface.name in ("n2n", "full"):
        @server.resource("mcp://memory/graph", name="project-graph", title="Project Graph",
                         description="Needs a project: read mcp://memory/graph?path=<absolute project root>",
                         mime_type="application/json")
        async def project_graph_help() -> str:
            return pretty({"status": "error", "code": "invalid", "message": (
                "This resource needs a project: read mcp://memory/graph?path=<absolute project root> "
                "(the project must have been set up through a tool: resources cannot confirm a new root)")})

        @server.resource("mcp://memory/graph?path={+path}", name="project-graph-by-path",
                         title="Project Graph", mime_type="application/json",
                         description="The complete graph and active context of an established project",
                         security=ResourceSecurity(reject_absolute_paths=False))
        async def project_graph(path: str) -> str:
            try:
                answer = runtime.memory.read(N2N["n2n_read_graph"], {"projectPath": path})
            except ChronographError as error:
                raise ResourceError(str(error)) from None
            return pretty(answer.reply)  # type: ignore[attr-defined]

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
