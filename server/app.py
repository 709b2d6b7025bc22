"""The MCP server: a profile's tools, its resources (`resources.py`) and the graph's update notifications.

Nothing happens at import time: `create_server` builds a server whose store opens in
its lifespan (or earlier, through `Runtime.open`, so that a CLI can report a locked or
damaged store in one line before any transport starts).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from chronograph.application import Files, Tool, profile
from chronograph.application.errors import ForbiddenError, NotFoundError
from chronograph.application.profiles import OFFICIAL_TOOLS
from chronograph.server.config import Settings
from chronograph.server.prompts import add_prompts
from chronograph.server.resources import add_resources, forbidden
from chronograph.server.results import failure
from chronograph.server.runtime import GRAPH_URI, GRAPH_WORKSPACE, EmbeddingProgress, Runtime
from chronograph.server.sdktools import build_tools
from mcp.server.mcpserver import Context, MCPServer

import chronograph

__all__ = ["GRAPH_URI", "EmbeddingProgress", "Runtime", "create_server", "writable"]


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

    async def call(tool: Tool, arguments: dict[str, Any], ctx: Context) -> types.CallToolResult:
        return await runtime.call(tool, arguments, ctx, principal=runtime.principal_of(ctx.request_context.request))

    tools = build_tools(surface.tools, call, files=writable(settings), official=OFFICIAL_TOOLS,
                        output_schemas=surface.name == "official", errors=surface.errors)
    server = MCPServer(
        "chronograph",
        version=chronograph.__version__,
        instructions=surface.instructions,
        tools=tools,
        lifespan=lifespan,
        log_level=log_level,  # type: ignore[arg-type]
    )

    add_resources(server, runtime, settings)
    add_prompts(server, runtime, settings)

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        try:
            runtime.subscribe(ctx.session, str(params.uri), runtime.principal_of(ctx.request))
        except ForbiddenError as error:
            raise forbidden(error) from None
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        runtime.unsubscribe(ctx.session, str(params.uri))
        return types.EmptyResult()

    # MCPServer has no public hook for the handshake-era subscribe methods yet.
    lowlevel = server._lowlevel_server  # noqa: SLF001
    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    _guard_listening(server, runtime)
    _name_unknown_tools(server, frozenset(tool.name for tool in tools), surface.name, surface.errors,
                        schema=surface.name == "official")
    return server


def _name_unknown_tools(server: MCPServer, names: frozenset[str], profile: str, style: str, *,
                        schema: bool) -> None:
    """Refuse a call of a tool this server does not serve as the profile refuses any call: with the
    code `not_found` in `_meta` (the SDK's own refusal carries only its text), and the way out."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 (the SDK answers an unknown name itself)
    entry = lowlevel.get_request_handler("tools/call")
    if entry is None:
        return
    sdk_call = entry.handler

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        if params.name in names:
            return await sdk_call(ctx, params)
        served = await server.list_tools()
        if any(tool.name == params.name for tool in served):  # added to the server since it was made
            return await sdk_call(ctx, params)
        error = NotFoundError(f"Unknown tool: {params.name}. This server ({profile} profile) serves {len(served)} "
                              "tools; tools/list names them")
        text, structured, meta = failure(error, style, schema=schema)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=structured, is_error=True, _meta=meta)

    lowlevel.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)


def _guard_listening(server: MCPServer, runtime: Runtime) -> None:
    """Refuse a `subscriptions/listen` (protocol 2026-07-28) to the graph's updates by a principal
    that may not read the graph: what it would hear is when that workspace changes."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 (the SDK serves listen itself)
    entry = lowlevel.get_request_handler("subscriptions/listen")
    if entry is None:
        return
    sdk_listen = entry.handler

    async def listen(ctx: Any, params: types.SubscriptionsListenRequestParams) -> Any:
        if GRAPH_URI in (params.notifications.resource_subscriptions or ()):
            try:
                runtime.principal_of(ctx.request).check(GRAPH_WORKSPACE, "read", tool="subscriptions/listen")
            except ForbiddenError as error:
                raise forbidden(error) from None
        return await sdk_listen(ctx, params)

    lowlevel.add_request_handler("subscriptions/listen", types.SubscriptionsListenRequestParams, listen)
