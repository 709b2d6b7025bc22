"""Schemas of the tools beyond the official nine: history, time travel, audit, context,
summaries, traversal and workspaces."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from server.arguments import Name, TypeName, Version
from server.schemas import (
    EXPECTED,
    FROM,
    RELATION_TYPE,
    TO,
    Args,
    AsOf,
    D,
    EntityOut,
    Out,
    ReadArgs,
    WriteArgs,
    items,
)

Limit = Meta(ge=1, le=1000)
Cursor = Annotated[str, Meta(max_length=64), D(description="Where the previous page ended (its nextCursor)")]
Text = Annotated[str, Meta(max_length=4096)]

# --- history -----------------------------------------------------------------------------


class GetEntityHistory(ReadArgs, kw_only=True):
    name: Annotated[Name, D(description="The entity; deleted and re-created ones included")]
    limit: Annotated[int, Limit, D(description="At most this many versions per page")] = 100
    cursor: Cursor | UnsetType = UNSET
    as_of: AsOf | UnsetType = UNSET


class GetRelationHistory(ReadArgs, kw_only=True):
    source: Annotated[Name, FROM] = msgspec.field(name="from")
    target: Annotated[Name, TO] = msgspec.field(name="to")
    relation_type: Annotated[TypeName, RELATION_TYPE]


class VersionOut(Out, kw_only=True):
    stream: Annotated[str, D(description="The stable id of this entity or relation")]
    version: int
    position: Annotated[int, D(description="Position of the change in the log")]
    event_type: str
    recorded_at: str
    actor: Annotated[str, D(description="Who made the change (MCP client or --actor)")]
    correlation_id: Annotated[str, D(description="Shared by every change of one tool call")]
    changes: Annotated[dict[str, Any], D(description="What this version changed")]
    state: Annotated[dict[str, Any] | None, D(description="The state after this version; null once deleted")]


class HistoryOut(Out, kw_only=True):
    versions: list[VersionOut]
    next_cursor: Annotated[str, D(description="Pass as cursor for the next page")] | UnsetType = UNSET


# --- audit -------------------------------------------------------------------------------


class GetAuditLog(ReadArgs, kw_only=True):
    all_workspaces: Annotated[bool, D(
        description="Every workspace's changes, not only this workspace's")] = False
    entity_name: Annotated[Name, D(description="Only changes to this entity (any incarnation)")] | UnsetType = UNSET
    actor: Annotated[Text, D(description="Only changes made by this actor")] | UnsetType = UNSET
    event_types: Annotated[list[Annotated[str, Meta(max_length=64)]], Meta(max_length=32), D(
        description="Only these event types, e.g. entity_created, observations_added, relation_deleted"
    )] | UnsetType = UNSET
    since: Annotated[str, D(description="Only changes at or after this ISO-8601 time")] | UnsetType = UNSET
    until: Annotated[str, D(description="Only changes at or before this ISO-8601 time")] | UnsetType = UNSET
    after_position: Annotated[int, Meta(ge=0), D(
        description="Only changes after this log position")] | UnsetType = UNSET
    order: Annotated[Literal["newest", "oldest"], D(description="Newest first (default) or oldest first")] = "newest"
    limit: Annotated[int, Limit, D(description="At most this many events per page")] = 50
    cursor: Cursor | UnsetType = UNSET


class AuditEventOut(Out, kw_only=True):
    position: int
    stream: str
    version: int
    type: str
    recorded_at: str
    actor: str
    correlation_id: str
    workspace: str
    subject: Annotated[str, D(description="The entity name, the relation, or the context it changed")]
    data: dict[str, Any]


class AuditOut(Out, kw_only=True):
    events: list[AuditEventOut]
    next_cursor: Annotated[str, D(description="Pass as cursor for the next page")] | UnsetType = UNSET


# --- revert ------------------------------------------------------------------------------


class RevertEntity(WriteArgs, kw_only=True):
    name: Annotated[Name, D(description="The entity to restore (a deleted one too)")]
    to_version: Annotated[int, Meta(ge=1), D(description="The version whose state to restore")]
    expected_version: Annotated[Version, EXPECTED] | UnsetType = UNSET


# --- context -----------------------------------------------------------------------------

Status = Literal["IN_PROGRESS", "COMPLETED", "BLOCKED", "PLANNING"]


class UpdateContext(WriteArgs, kw_only=True):
    active_task: Annotated[Text | None, D(description="What the agent is working on")] | UnsetType = UNSET
    status: Annotated[Status | None, D(description="Where the task stands")] | UnsetType = UNSET
    reason: Annotated[Text | None, D(description="Why it stands there")] | UnsetType = UNSET
    next_steps: Annotated[
        Annotated[list[Text], Meta(max_length=100)] | None, D(description="What comes next, in order")
    ] | UnsetType = UNSET
    last_commit: Annotated[Text | None, D(description="The last commit (hash or message)")] | UnsetType = UNSET
    expected_version: Annotated[Version, EXPECTED] | UnsetType = UNSET


class ReadContext(ReadArgs, kw_only=True):
    as_of: AsOf | UnsetType = UNSET


class ContextOut(Out, kw_only=True):
    workspace: str
    active_task: str | None = None
    status: str | None = None
    reason: str | None = None
    next_steps: list[str] | None = None
    last_commit: str | None = None
    version: Annotated[int, D(description="0 when the context was never set")]
    updated_at: Annotated[str, D(description="When it was last updated (set by the server)")] | UnsetType = UNSET


# --- summaries, traversal, workspaces --------------------------------------------------------


class GetGraphSummary(ReadArgs, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=100_000), D(description="At most this many index entries")] = 1000
    offset: Annotated[int, Meta(ge=0), D(description="Skip this many index entries first")] = 0
    as_of: AsOf | UnsetType = UNSET


class IndexEntryOut(Out, kw_only=True):
    name: str
    entity_type: str


class SummaryOut(Out, kw_only=True):
    workspace: str
    entities: int
    relations: int
    entity_types: Annotated[dict[str, int], D(description="Entities per type")]
    relation_types: Annotated[dict[str, int], D(description="Relations per type")]
    index: Annotated[list[IndexEntryOut], D(description="Names and types, oldest first")]
    next_offset: int | UnsetType = UNSET


class GetRelatedEntities(ReadArgs, kw_only=True):
    name: Annotated[Name, D(description="Where to start")]
    max_depth: Annotated[int, Meta(ge=1, le=6), D(description="How many hops at most")] = 2
    direction: Annotated[Literal["out", "in", "both"], D(
        description="Follow relations leaving (out), reaching (in) or touching (both) each entity")] = "both"
    relation_types: Annotated[items(TypeName), D(description="Follow only these relation types")] | UnsetType = UNSET
    limit: Annotated[int, Limit, D(description="At most this many related entities")] = 20


class RelatedOut(Out, kw_only=True):
    entity: EntityOut
    distance: Annotated[int, D(description="Hops from the start")]
    path: Annotated[list[str], D(description="Names from the start to this entity")]
    relation_path: Annotated[list[str], D(description="Relation types along the path")]
    confidence_path: Annotated[list[float | None], D(description="Confidence of each relation on the path")]


class RelatedEntitiesOut(Out, kw_only=True):
    start: str
    related: list[RelatedOut]


class ListWorkspaces(Args, kw_only=True):
    pass


class WorkspaceOut(Out, kw_only=True):
    name: str
    entities: int
    relations: int
    has_context: bool


class WorkspacesOut(Out, kw_only=True):
    workspaces: list[WorkspaceOut]





# --- export ------------------------------------------------------------------------------------


class ExportGraph(ReadArgs, kw_only=True):
    format: Annotated[Literal["jsonl", "json", "markdown", "mermaid", "dot"], D(
        description="jsonl: the official memory.jsonl; json: {entities, relations}; markdown: a "
        "readable document; mermaid / dot: a drawing of the graph")]
    as_of: AsOf | UnsetType = UNSET
    output_path: Annotated[str, Meta(min_length=1, max_length=1024), D(
        description="Write the export to this file inside the server's export directory instead "
        "of returning it (only when the server was started with --export-dir)")] | UnsetType = UNSET


class ExportOut(Out, kw_only=True):
    format: str
    entities: int
    relations: int
    content: Annotated[str, D(description="The export (unless written to outputPath)")] | UnsetType = UNSET
    path: Annotated[str, D(description="Where the export was written")] | UnsetType = UNSET
    bytes: int


__all__ = ["Status", *(
    name for name, value in list(globals().items())
    if isinstance(value, type) and issubclass(value, msgspec.Struct) and value.__module__ == __name__
)]
