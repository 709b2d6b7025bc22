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

from server import more_schemas as m
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
    kind: Literal["read", "write", "delete", "export"]


READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
EXPORT = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
_ANNOTATIONS = {"read": READ, "write": WRITE, "delete": DELETE, "export": EXPORT}

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
    ToolSpec("read_graph", "Read Graph", "Read the entire knowledge graph", s.ReadGraph, s.GraphPageOut, "read"),
    ToolSpec("search_nodes", "Search Nodes", "Search for nodes in the knowledge graph based on a query",
             s.SearchNodes, s.GraphOut, "read"),
    ToolSpec("open_nodes", "Open Nodes", "Open specific nodes in the knowledge graph by their names",
             s.OpenNodes, s.GraphOut, "read"),
]
"""The nine tools of the official memory server, in its order, with its descriptions."""

EXTENDED = [
    ToolSpec("get_entity_history", "Entity History",
             "Every version of an entity: who changed what, when, in which call, and the state after; "
             "deleted and re-created entities included. Use it to see how a memory evolved or to pick a "
             "version to revert to", m.GetEntityHistory, m.HistoryOut, "read"),
    ToolSpec("get_relation_history", "Relation History",
             "Every version of one relation, across deletes and re-creations",
             m.GetRelationHistory, m.HistoryOut, "read"),
    ToolSpec("get_audit_log", "Audit Log",
             "Browse the change log, newest first and paged: filter by workspace, entity, actor, "
             "event type or time to answer who changed what, and when",
             m.GetAuditLog, m.AuditOut, "read"),
    ToolSpec("revert_entity", "Revert Entity",
             "Restore an entity (a deleted one too) to its state at an earlier version. This appends "
             "new events: the revert is itself in the history", m.RevertEntity, s.EntitiesOut, "write"),
    ToolSpec("get_graph_summary", "Graph Summary",
             "Counts of entities and relations, per type, and a names-and-types index: a cheap "
             "overview to take before reading the whole graph", m.GetGraphSummary, m.SummaryOut, "read"),
    ToolSpec("update_context", "Update Context",
             "Record what you are working on in this workspace: activeTask, status, reason, "
             "nextSteps, lastCommit. The fields given are merged into the current context",
             m.UpdateContext, m.ContextOut, "write"),
    ToolSpec("read_context", "Read Context",
             "Read the workspace's working context; start a session with it",
             m.ReadContext, m.ContextOut, "read"),
    ToolSpec("get_related_entities", "Related Entities",
             "Entities reachable from one entity within a few hops, nearest first, with the names, "
             "relation types and confidences along the path", m.GetRelatedEntities, m.RelatedEntitiesOut, "read"),
    ToolSpec("export_graph", "Export Graph",
             "Export the graph (or the graph as of a past moment) as the official memory.jsonl, "
             "JSON, a Markdown document, or a Mermaid or Graphviz DOT drawing",
             m.ExportGraph, m.ExportOut, "export"),
    ToolSpec("list_workspaces", "List Workspaces", "The workspaces of this memory, with their counts",
             m.ListWorkspaces, m.WorkspacesOut, "read"),
    ToolSpec("update_entities", "Update Entities",
             "Change existing entities: replace their type, all their observations and/or their "
             "metadata (version + 1). Use add_observations to add without replacing",
             s.UpdateEntities, s.EntitiesOut, "write"),
    ToolSpec("update_relations", "Update Relations",
             "Change existing relations: replace their confidence and/or metadata (version + 1)",
             s.UpdateRelations, s.RelationsOut, "write"),
]


def build_tools(specs: list[ToolSpec], handler: Handler, *, writes_files: bool = False) -> list[Tool]:
    """SDK tools for `specs`, each calling `handler(name, arguments, ctx)`.

    Without `writes_files` (no export directory), export_graph only reads: so it says.
    """
    return [
        _tool(msgspec.structs.replace(spec, kind="read") if spec.kind == "export" and not writes_files else spec,
              handler)
        for spec in specs
    ]


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

