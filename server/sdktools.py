"""The SDK's tools, built from the registry: one MCP tool per declared `Tool`, nothing written twice.

Tools are registered as SDK `Tool` objects built from our own Structs rather than from
function signatures, so the published input schemas keep the official property names,
descriptions and required lists, and arguments are parsed by msgspec with our own error
messages (see `chronograph.application.arguments`). The core's errors become tool errors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool as SdkTool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, ToolAnnotations

from chronograph.application import ChronographError, Kind, Tool
from chronograph.server.jsonschema import json_schema

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


def build_tools(tools: Iterable[Tool], handler: Handler, *, writes_files: bool = False) -> list[SdkTool]:
    """SDK tools for `tools`, each calling `handler(tool, arguments, ctx)`.

    Without `writes_files` (no export directory), an export only reads: so its annotations say.
    """
    return [_sdk_tool(tool, handler, "read" if tool.kind == "export" and not writes_files else tool.kind)
            for tool in tools]


def _sdk_tool(tool: Tool, handler: Handler, kind: Kind) -> SdkTool:
    async def run(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        try:
            return await handler(tool, arguments, ctx)
        except ChronographError as error:  # the SDK reports a ToolError's text; anything else is a crash
            raise ToolError(str(error)) from error

    run.__name__ = tool.name
    return SdkTool(
        fn=run,
        name=tool.name,
        title=tool.title,
        description=tool.description,
        parameters=json_schema(tool.arguments),
        fn_metadata=_RawArguments(arg_model=_NoArguments, output_schema=json_schema(tool.output)),
        is_async=True,
        context_kwarg="ctx",
        annotations=_ANNOTATIONS[kind],
    )
