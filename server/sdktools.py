"""The SDK's tools, built from the registry: one MCP tool per declared `Tool`, nothing written twice.

Tools are registered as SDK `Tool` objects built from our own Structs rather than from
function signatures, so the published input schemas keep the official property names,
descriptions and required lists, and arguments are parsed by msgspec with our own error
messages (see `chronograph.application.engine.arguments`). The core's errors become tool errors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from chronograph.application import ChronographError, Files, Tool
from chronograph.server.jsonschema import json_schema
from chronograph.server.results import failure
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool as SdkTool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations

__all__ = ["Handler", "build_tools", "hints"]

Handler = Callable[[Tool, dict[str, Any], Context], Awaitable[CallToolResult]]
"""handler(tool, raw arguments, ctx): runs one call."""


class _RawArguments(FuncMetadata):
    """Hands the raw arguments to the tool, which parses them itself (strictly)."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return {"arguments": dict(arguments_to_validate)}


class _NoArguments(ArgModelBase):
    pass


def build_tools(
    tools: Iterable[Tool], handler: Handler, *, files: Iterable[Files] = (), official: Iterable[str] = (),
    output_schemas: bool = False, errors: str = "text",
) -> list[SdkTool]:
    """SDK tools for `tools`, each calling `handler(tool, arguments, ctx)`.

    `files` says where this server lets tools write files; the annotations follow (see
    `hints`). The `official` tools publish all four hints, as the official server
    does, and with `output_schemas` (the official profile) its output schemas too;
    Chronograph's own tools publish the hints that differ from MCP's defaults (and always
    whether they write) and no output schema: answers are JSON objects whose fields say
    what they hold, and a schema costs every conversation its bytes (see docs/decisions.md).
    """
    mirrored, allowed = set(official), frozenset(files)
    return [_sdk_tool(tool, handler, hints(tool, allowed, full=tool.name in mirrored),
                      output_schemas and tool.name in mirrored, errors)
            for tool in tools]


def hints(tool: Tool, files: frozenset[Files], *, full: bool = False) -> ToolAnnotations:
    """What `tool` does, as MCP's hints, from its declaration and the files this server lets it write.

    Read-only: it neither appends events nor may write a file here. Destructive: it may
    delete (kind delete), or replace a file (an export). Idempotent: anything but a plain
    write. Never open-world: a tool touches this memory and the files named, nothing else.
    Unless `full`, only the hints that differ from MCP's defaults (destructive, not
    idempotent, open world) and always readOnlyHint.
    """
    writes_files = tool.files is not None and tool.files in files
    read_only = not tool.writes and not writes_files
    destructive = tool.kind == "delete" or (tool.kind == "export" and writes_files)
    idempotent = tool.kind != "write"
    if full:
        return ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent,
                               open_world_hint=False)
    if read_only:  # the other two hints mean nothing for a tool that changes nothing
        return ToolAnnotations(read_only_hint=True, open_world_hint=False)
    return ToolAnnotations(read_only_hint=False, destructive_hint=None if destructive else False,
                           idempotent_hint=True if idempotent else None, open_world_hint=False)


def _sdk_tool(tool: Tool, handler: Handler, said: ToolAnnotations, schema: bool, errors: str) -> SdkTool:
    async def run(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        try:
            return await handler(tool, arguments, ctx)
        except ChronographError as error:
            # The official server answers with the error's own text ("Entity with name X not
            # found"); raising would have the SDK prefix it with "Error executing tool ...".
            text, structured, meta = failure(error, errors, schema=schema)
            return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured,
                                  is_error=True, _meta=meta)

    run.__name__ = tool.name
    return SdkTool(
        fn=run,
        name=tool.name,
        title=tool.title,
        description=tool.description,
        parameters=json_schema(tool.arguments),
        fn_metadata=_RawArguments(arg_model=_NoArguments, output_schema=json_schema(tool.output) if schema else None),
        is_async=True,
        context_kwarg="ctx",
        annotations=said,
    )
