"""The SDK's tools, built from the registry: one MCP tool per declared `Tool`, nothing written twice.

Tools are registered as SDK `Tool` objects built from our own Structs rather than from
function signatures, so the published input schemas keep the official property names,
descriptions and required lists, and arguments are parsed by msgspec with our own error
messages (see `chronograph.application.engine.arguments`). The core's errors become tool errors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from chronograph.application import ChronographError, Kind, Tool
from chronograph.server.jsonschema import json_schema
from chronograph.server.results import failure
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool as SdkTool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations

__all__ = ["Handler", "build_tools"]

Handler = Callable[[Tool, dict[str, Any], Context], Awaitable[CallToolResult]]
"""handler(tool, raw arguments, ctx): runs one call."""

_ANNOTATIONS: dict[Kind, ToolAnnotations] = {
    "read": ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
    "write": ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                             open_world_hint=False),
    "delete": ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                              open_world_hint=False),
    "export": ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                              open_world_hint=False),
}


class _RawArguments(FuncMetadata):
    """Hands the raw arguments to the tool, which parses them itself (strictly)."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return {"arguments": dict(arguments_to_validate)}


class _NoArguments(ArgModelBase):
    pass


_BRIEF: dict[Kind, ToolAnnotations] = {  # MCP's defaults: not read-only, destructive, not idempotent, open world
    "read": ToolAnnotations(read_only_hint=True, open_world_hint=False),
    "write": ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    "delete": ToolAnnotations(read_only_hint=False, idempotent_hint=True, open_world_hint=False),
    "export": ToolAnnotations(read_only_hint=False, idempotent_hint=True, open_world_hint=False),
}
"""What a tool changes, said in as few hints as the defaults allow (and always whether it writes)."""


def build_tools(
    tools: Iterable[Tool], handler: Handler, *, writes_files: bool = False, official: Iterable[str] = (),
    output_schemas: bool = False, errors: str = "text",
) -> list[SdkTool]:
    """SDK tools for `tools`, each calling `handler(tool, arguments, ctx)`.

    Without `writes_files` (no export directory), an export only reads: so its annotations
    say. The `official` tools publish the official server's four hints, and with
    `output_schemas` (the official profile) its output schemas too; Chronograph's own
    tools publish the hints that differ from MCP's defaults (and always whether they
    write) and no output schema: answers are JSON objects whose fields say what they
    hold, and a schema costs every conversation its bytes (see docs/decisions.md).
    """
    mirrored = set(official)
    return [_sdk_tool(tool, handler, "read" if tool.kind == "export" and not writes_files else tool.kind,
                      tool.name in mirrored, output_schemas and tool.name in mirrored, errors)
            for tool in tools]


def _sdk_tool(tool: Tool, handler: Handler, kind: Kind, mirrored: bool, schema: bool, errors: str) -> SdkTool:
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
        annotations=(_ANNOTATIONS if mirrored else _BRIEF)[kind],
    )
