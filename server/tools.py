"""The MCP tools: thin adapters from a tool call to one `Memory` method and back.

Tools are registered as SDK `Tool` objects built from our own schemas (see
`server.schemas`) rather than from function signatures, so the published input
schemas keep the official property names, descriptions and required lists, and the
arguments are parsed by msgspec with our own error messages (see `server.arguments`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

import msgspec
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, ToolAnnotations

from server import schemas as s

__all__ = ["EXTENDED", "OFFICIAL", "ToolSpec", "build_tools"]

Handler = Callable[[str, dict[str, Any], Context], Awaitable[CallToolResult]]


class _RawArguments(FuncMetadata):
    """Hands the raw arguments to the tool, which parses them itself (strictly)."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return {"arguments": dict(arguments_to_validate)}


class _NoArguments(ArgModelBase):
    pass


class ToolSpec(msgspec.Struct, frozen=True):
    """How one tool presents itself."""

    name: str
    title: str
    description: str
    arguments: type[msgspec.Struct]
    output: type[msgspec.Struct]
    kind: Literal["read", "write", "delete"]


READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
_ANNOTATIONS = {"read": READ, "write": WRITE, "delete": DELETE}

OFFICIAL = [
    ToolSpec("create_entities", "Create Entities", "Create multiple new entities in the knowledge graph",
             s.CreateEntities, s.EntitiesOut, "write"),
    ToolSpec("create_relations", "Create Relations",
             "Create multiple new relations between entities in the knowledge graph. "
             "Relations should be in active voice",
             s.CreateRelations, s.RelationsOut, "write"),
    ToolSpec("add_observations", "Add Observations",
             "Add new observations to existing entities in the knowledge graph",
             s.AddObservations, s.AddObservationsOut, "write"),
    ToolSpec("delete_entities", "Delete Entities",
             "Delete multiple entities and their associated relations from the knowledge graph",
             s.DeleteEntities, s.DeletedOut, "delete"),
    ToolSpec("delete_observations", "Delete Observations",
             "Delete specific observations from entities in the knowledge graph",
             s.DeleteObservations, s.DeletedOut, "delete"),
    ToolSpec("delete_relations", "Delete Relations", "Delete multiple relations from the knowledge graph",
             s.DeleteRelations, s.DeletedOut, "delete"),
    ToolSpec("read_graph", "Read Graph", "Read the entire knowledge graph", s.ReadGraph, s.GraphOut, "read"),
    ToolSpec("search_nodes", "Search Nodes", "Search for nodes in the knowledge graph based on a query",
             s.SearchNodes, s.GraphOut, "read"),
    ToolSpec("open_nodes", "Open Nodes", "Open specific nodes in the knowledge graph by their names",
             s.OpenNodes, s.GraphOut, "read"),
]
"""The nine tools of the official memory server, in its order, with its descriptions."""

EXTENDED = [
    ToolSpec("update_entities", "Update Entities",
             "Change existing entities: replace their type, all their observations and/or their "
             "metadata (version + 1). Use add_observations to add without replacing",
             s.UpdateEntities, s.EntitiesOut, "write"),
    ToolSpec("update_relations", "Update Relations",
             "Change existing relations: replace their confidence and/or metadata (version + 1)",
             s.UpdateRelations, s.RelationsOut, "write"),
]


def build_tools(specs: list[ToolSpec], handler: Handler) -> list[Tool]:
    """SDK tools for `specs`, each calling `handler(name, arguments, ctx)`."""
    return [_tool(spec, handler) for spec in specs]


def _tool(spec: ToolSpec, handler: Handler) -> Tool:
    async def run(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        return await handler(spec.name, arguments, ctx)

    run.__name__ = spec.name
    return Tool(
        fn=run,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        parameters=s.json_schema(spec.arguments),
        fn_metadata=_RawArguments(arg_model=_NoArguments, output_schema=s.json_schema(spec.output)),
        is_async=True,
        context_kwarg="ctx",
        annotations=_ANNOTATIONS[spec.kind],
    )

