"""The tool schemas: msgspec Structs that both parse the arguments and publish the JSON schema.

The nine official tools keep the official property names, descriptions and required
lists; everything Chronograph adds is optional, so a prompt written for the official
server works unchanged.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, UnsetType

from server.arguments import (
    Limits,
    Metadata,
    Name,
    Observation,
    Query,
    RequestId,
    TypeName,
    Version,
    Workspace,
)

__all__ = ["json_schema"]

D = Meta  # descriptions read better as D(description=...)


class Args(msgspec.Struct, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """Base of tool arguments: camelCase on the wire, unknown fields refused."""


WORKSPACE = D(description='Workspace to read or write; workspaces are isolated (default "default")')
REQUEST_ID = D(
    description="Idempotency key: retrying a call with the same requestId returns the first "
    "call's result and writes nothing new"
)
EXPECTED = D(
    description="Optimistic concurrency: fail the whole call, writing nothing, unless this item "
    "is at this version (0: it must not exist)"
)


class WriteArgs(Args, kw_only=True):
    workspace: Annotated[Workspace, WORKSPACE] = "default"
    request_id: Annotated[RequestId, REQUEST_ID] | UnsetType = UNSET


class ReadArgs(Args, kw_only=True):
    workspace: Annotated[Workspace, WORKSPACE] = "default"


ENTITY_NAME = D(description="The name of the entity")
ENTITY_TYPE = D(description="The type of the entity")
OBSERVATIONS = D(description="An array of observation contents associated with the entity")
FROM = D(description="The name of the entity where the relation starts")
TO = D(description="The name of the entity where the relation ends")
RELATION_TYPE = D(description="The type of the relation")
METADATA = D(description="Free-form JSON object stored with the item")
CONFIDENCE = D(ge=0, le=1, description="How sure the relation is, from 0 to 1")
ObservationList = Annotated[list[Observation], Meta(max_length=Limits.OBSERVATIONS)]


def items(kind: type) -> Any:
    """A bounded list of `kind`."""
    return Annotated[list[kind], Meta(max_length=Limits.ITEMS)]  # type: ignore[valid-type]


# --- create / add -------------------------------------------------------------------------


class NewEntity(Args, kw_only=True):
    name: Annotated[Name, ENTITY_NAME]
    entity_type: Annotated[TypeName, ENTITY_TYPE]
    observations: Annotated[ObservationList, OBSERVATIONS]
    metadata: Annotated[Metadata, METADATA] | UnsetType = UNSET
    expected_version: Annotated[Version, EXPECTED] | UnsetType = UNSET


class CreateEntities(WriteArgs, kw_only=True):
    entities: items(NewEntity)


class NewRelation(Args, kw_only=True):
    source: Annotated[Name, FROM] = msgspec.field(name="from")
    target: Annotated[Name, TO] = msgspec.field(name="to")
    relation_type: Annotated[TypeName, RELATION_TYPE]
    confidence: Annotated[float, CONFIDENCE] | UnsetType = UNSET
    metadata: Annotated[Metadata, METADATA] | UnsetType = UNSET
    expected_version: Annotated[Version, EXPECTED] | UnsetType = UNSET


class CreateRelations(WriteArgs, kw_only=True):
    relations: items(NewRelation)


class ObservationAddition(Args, kw_only=True):
    entity_name: Annotated[Name, D(description="The name of the entity to add the observations to")]
    contents: Annotated[ObservationList, D(description="An array of observation contents to add")]
    expected_version: Annotated[Version, EXPECTED] | UnsetType = UNSET


class AddObservations(WriteArgs, kw_only=True):
    observations: items(ObservationAddition)


# --- delete -------------------------------------------------------------------------------


class DeleteEntities(WriteArgs, kw_only=True):
    entity_names: Annotated[items(Name), D(description="An array of entity names to delete")]
    expected_versions: Annotated[
        dict[Name, Version],
        D(description="Optimistic concurrency: entity name -> the version it must be at"),
    ] | UnsetType = UNSET


class ObservationDeletion(Args, kw_only=True):
    entity_name: Annotated[Name, D(description="The name of the entity containing the observations")]
    observations: Annotated[ObservationList, D(description="An array of observations to delete")]
    expected_version: Annotated[Version, EXPECTED] | UnsetType = UNSET


class DeleteObservations(WriteArgs, kw_only=True):
    deletions: items(ObservationDeletion)


class RelationRef(Args, kw_only=True):
    source: Annotated[Name, FROM] = msgspec.field(name="from")
    target: Annotated[Name, TO] = msgspec.field(name="to")
    relation_type: Annotated[TypeName, RELATION_TYPE]
    expected_version: Annotated[Version, EXPECTED] | UnsetType = UNSET


class DeleteRelations(WriteArgs, kw_only=True):
    relations: Annotated[items(RelationRef), D(description="An array of relations to delete")]


# --- update -------------------------------------------------------------------------------


class EntityChange(Args, kw_only=True):
    name: Annotated[Name, D(description="The name of the entity to update")]
    entity_type: Annotated[TypeName, D(description="The new type of the entity")] | UnsetType = UNSET
    observations: Annotated[
        ObservationList, D(description="Replaces all of the entity's observations")
    ] | UnsetType = UNSET
    metadata: Annotated[Metadata, D(description="Replaces the entity's metadata")] | UnsetType = UNSET
    expected_version: Annotated[Version, EXPECTED] | UnsetType = UNSET


class UpdateEntities(WriteArgs, kw_only=True):
    entities: items(EntityChange)


class RelationChange(Args, kw_only=True):
    source: Annotated[Name, FROM] = msgspec.field(name="from")
    target: Annotated[Name, TO] = msgspec.field(name="to")
    relation_type: Annotated[TypeName, RELATION_TYPE]
    confidence: Annotated[float, CONFIDENCE] | UnsetType = UNSET
    metadata: Annotated[Metadata, D(description="Replaces the relation's metadata")] | UnsetType = UNSET
    expected_version: Annotated[Version, EXPECTED] | UnsetType = UNSET


class UpdateRelations(WriteArgs, kw_only=True):
    relations: items(RelationChange)


# --- read ---------------------------------------------------------------------------------


AS_OF = D(
    description="Answer from the state in force then: an ISO-8601 timestamp "
    '(e.g. "2026-11-21T14:00:00Z") or a log position'
)
AsOf = Annotated[str | Annotated[int, Meta(ge=0)], AS_OF]


class ReadGraph(ReadArgs, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=100_000), D(
        description="At most this many entities (oldest first); relations come with the page "
        "holding their `from` entity")] | UnsetType = UNSET
    offset: Annotated[int, Meta(ge=0), D(description="Skip this many entities first")] = 0
    summary_mode: Annotated[bool, D(
        description="Names and types only: entities without observations, for a quick index")] = False
    as_of: AsOf | UnsetType = UNSET


class SearchNodes(ReadArgs, kw_only=True):
    query: Annotated[
        Query, D(description="The search query to match against entity names, types, and observation content")
    ]
    ranked: Annotated[bool, D(
        description="Rank entities by how well their words match the query's words (BM25), best "
        "first, instead of the exact substring match; for long or many-word queries")] = False
    limit: Annotated[int, Meta(ge=1, le=1000), D(description="With ranked: at most this many entities")] = 20
    as_of: AsOf | UnsetType = UNSET


class OpenNodes(ReadArgs, kw_only=True):
    names: Annotated[items(Name), D(description="An array of entity names to retrieve")]
    as_of: AsOf | UnsetType = UNSET


# --- outputs ------------------------------------------------------------------------------


class Out(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """Base of tool outputs."""


class EntityOut(Out, kw_only=True):
    name: Annotated[str, ENTITY_NAME]
    entity_type: Annotated[str, ENTITY_TYPE]
    observations: Annotated[list[str], OBSERVATIONS]
    metadata: Annotated[dict[str, Any], METADATA] | UnsetType = UNSET
    version: Annotated[int, D(description="Version of the entity: +1 on every change")]
    created_at: Annotated[str, D(description="When the entity was created (ISO-8601, UTC)")]
    updated_at: Annotated[str, D(description="When the entity last changed (ISO-8601, UTC)")]


class RelationOut(Out, kw_only=True):
    source: Annotated[str, FROM] = msgspec.field(name="from")
    target: Annotated[str, TO] = msgspec.field(name="to")
    relation_type: Annotated[str, RELATION_TYPE]
    confidence: Annotated[float, D(description="How sure the relation is, from 0 to 1")] | UnsetType = UNSET
    metadata: Annotated[dict[str, Any], METADATA] | UnsetType = UNSET
    version: Annotated[int, D(description="Version of the relation: +1 on every change")]
    created_at: Annotated[str, D(description="When the relation was created (ISO-8601, UTC)")]
    updated_at: Annotated[str, D(description="When the relation last changed (ISO-8601, UTC)")]


class GraphOut(Out, kw_only=True):
    entities: list[EntityOut]
    relations: list[RelationOut]
    scores: Annotated[list[float], D(
        description="With ranked search: each entity's BM25 score, in order")] | UnsetType = UNSET
    as_of: Annotated[int, D(description="The log position answered from (with asOf)")] | UnsetType = UNSET


SUMMARY_ONLY = " (left out in summaryMode)"


class PageEntityOut(Out, kw_only=True):
    """An entity of read_graph: in summaryMode, its name and type only."""

    name: Annotated[str, ENTITY_NAME]
    entity_type: Annotated[str, ENTITY_TYPE]
    observations: Annotated[list[str], OBSERVATIONS] | UnsetType = UNSET  # (none in summaryMode)
    metadata: Annotated[dict[str, Any], METADATA] | UnsetType = UNSET
    version: Annotated[int, D(description="Version of the entity" + SUMMARY_ONLY)] | UnsetType = UNSET
    created_at: Annotated[str, D(description="When the entity was created" + SUMMARY_ONLY)] | UnsetType = UNSET
    updated_at: Annotated[str, D(description="When the entity last changed" + SUMMARY_ONLY)] | UnsetType = UNSET


class GraphPageOut(Out, kw_only=True):
    entities: list[PageEntityOut]
    relations: list[RelationOut]
    total_entities: Annotated[int, D(description="Entities in the workspace (when paginated)")] | UnsetType = UNSET
    next_offset: Annotated[int, D(description="The offset of the next page, if any")] | UnsetType = UNSET
    as_of: Annotated[int, D(description="The log position answered from (with asOf)")] | UnsetType = UNSET


class EntitiesOut(Out, kw_only=True):
    entities: list[EntityOut]


class RelationsOut(Out, kw_only=True):
    relations: list[RelationOut]


class AddedOut(Out, kw_only=True):
    entity_name: str
    added_observations: list[str]


class AddObservationsOut(Out, kw_only=True):
    results: list[AddedOut]


class DeletedOut(Out, kw_only=True):
    success: bool
    message: str
    deleted: Annotated[int, D(description="How many items were removed")]
    not_found: Annotated[list[str], D(description="The requested items that did not exist")]
    relations_deleted: Annotated[
        int, D(description="Relations removed with the deleted entities")
    ] | UnsetType = UNSET


# --- JSON schema ----------------------------------------------------------------------------


def json_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON schema of `struct`, inlined (no $ref), without titles, draft-07 marked."""
    document = msgspec.json.schema(struct)
    definitions = document.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(definitions[node["$ref"].rsplit("/", 1)[1]])
            return {k: inline(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    root = inline(document)
    root.pop("description", None)  # the tool's own description says it
    properties = root.get("properties", {})
    for shared in ("workspace", "requestId"):  # the tool's own fields first, as officially
        if shared in properties:
            properties[shared] = properties.pop(shared)
    return {"$schema": "http://json-schema.org/draft-07/schema#", **root}
