"""The workspace upsert server's surface (`--profile workspace`): `read_graph`,
`upsert_entity`, `upsert_relation`, `get_entity_relations`, keyed by `workspaceName`.

An entity's id is its stream (stable across renames); a relation's id is a digest of its
stream. Metadata travels as the JSON text the workspace server uses, and objects are
accepted too. Every write is the same events our own tools write.

Entities come back in exactly the workspace server's shape (`{workspaceName, name,
entityType, observations, metadata, id}`: clients deserialise them into a fixed class).
Versions are ours alone: an upsert answers the version it left, and takes an optional
`expectedVersion` (described in the schema, since this profile's instructions do not
explain the fields our own tools share) to refuse a write over a change it has not seen.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar

import msgspec
from chronograph.application.core.guards import check_entity, check_relation
from chronograph.application.core.validtime import observations_at, read_moment, relation_span, restated, valid_relation
from chronograph.application.engine.arguments import (
    Args,
    D,
    Name,
    ObservationList,
    TypeName,
    Version,
    Workspace,
    metadata_problem,
)
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.budget import ReplyBudget
from chronograph.application.engine.jsonvalues import same_json
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.engine.registry import Registry
from chronograph.application.engine.service import Memory
from chronograph.application.errors import InvalidArgumentsError, NotFoundError, ReplyTooLargeError
from chronograph.eventstore import EntityCreated, EntityUpdated, RelationCreated, RelationUpdated
from chronograph.eventstore.keys import digest
from chronograph.projections import EntityRecord, RelationRecord, new_entity_stream, relation_stream, unique
from msgspec import UNSET, Meta, UnsetType

__all__ = ["WORKSPACE", "WORKSPACE_TOOLS"]

WORKSPACE = Registry()
"""The workspace server's four tools."""
WORKSPACE_TOOLS = ("read_graph", "upsert_entity", "upsert_relation", "get_entity_relations")

Id = Annotated[str, Meta(min_length=1, max_length=128)]
MetadataText = Annotated[Annotated[str, Meta(max_length=16_384)] | dict[str, Any],
                         D(description="A JSON object, or its JSON text")]


EXPECTED = D(description="Optional: write only if the item is still at this version (the `version` an upsert "
                         "answered; 0: it must not exist yet); otherwise the call fails with code conflict and "
                         "writes nothing. Without it, the last write wins.")


class WorkspaceArgs(Args, kw_only=True):
    workspace_name: Annotated[Workspace, D(description="Partition key: workspaces are isolated")]

    schema_explains_shared: ClassVar[bool] = True
    """The instructions of this profile do not explain the fields Chronograph's tools share
    (expectedVersion): the schema describes them (read by `server/jsonschema.py`)."""

    @property
    def workspace(self) -> str:
        return self.workspace_name


def relation_id(stream: str) -> str:
    """A relation's stable id (its stream is keyed by its names)."""
    return "rel-" + digest(stream.encode("utf-8", "surrogatepass")).hex()


def _metadata(tool: str, value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value) if value.strip() else {}
    except ValueError as error:
        raise InvalidArgumentsError(tool, f"metadata: not JSON text ({error})") from None
    if not isinstance(parsed, dict):
        raise InvalidArgumentsError(tool, "metadata: must be a JSON object")
    problem = metadata_problem(parsed)  # as an object sent as such is checked
    if problem:
        raise InvalidArgumentsError(tool, problem)
    return parsed


def entity_model(entity: EntityRecord, now: int) -> dict[str, Any]:
    """An entity as the workspace server gives it, with its observations true at `now`."""
    return {"workspaceName": entity.workspace, "name": entity.name, "entityType": entity.entity_type,
            "observations": observations_at(entity, now), "metadata": json.dumps(entity.metadata),
            "id": entity.stream}


def relation_model(relation: RelationRecord, ids: dict[str, str]) -> dict[str, Any]:
    return {"id": relation_id(relation.stream), "from": relation.source, "to": relation.target,
            "fromEntityId": ids.get(relation.source), "toEntityId": ids.get(relation.target),
            "relationType": relation.relation_type, "metadata": json.dumps(relation.metadata),
            "version": relation.version}


class ReadGraphArgs(WorkspaceArgs, kw_only=True):
    pass


@WORKSPACE.query("read_graph", "Read Graph", "Returns all entities and relations for a workspace")
def read_graph(memory: Memory, args: ReadGraphArgs) -> ObjectOut:
    """The whole workspace (the workspace server has no paging). Refused as soon as what it has
    built is over the reply limit, not once all of it is built."""
    budget = ReplyBudget("read_graph", memory.limit_for(read_graph), summary=False)
    with memory.timeline.at("read_graph") as moment:
        graph = moment.graph
        entities = []
        for entity in graph.entities(args.workspace_name):
            entities.append(entity)
            if budget.add(entity):
                raise _too_large(budget)
        ids = {e.name: e.stream for e in entities}
        relations, now = [], read_moment("read_graph", UNSET)
        for relation in graph.relations(args.workspace_name):
            if not valid_relation(relation, now):
                continue
            relations.append(relation_model(relation, ids))
            if budget.add_relation(relation):
                raise _too_large(budget)
    return object_out(workspaceName=args.workspace_name, entities=[entity_model(e, now) for e in entities],
                      relations=relations)


def _too_large(budget: ReplyBudget) -> ReplyTooLargeError:
    assert budget.limit is not None
    return ReplyTooLargeError("read_graph", budget.spent, budget.limit, (
        "This profile's read_graph has no paging: read the workspace a page at a time with a server of "
        "the default profile (read_graph with limit and offset), or start this one with a larger --max-reply."),
        at_least=True)


class UpsertEntity(WorkspaceArgs, kw_only=True):
    name: Name
    entity_type: TypeName
    observations: ObservationList | UnsetType = UNSET
    metadata: MetadataText | UnsetType = UNSET
    expected_version: Annotated[Version, EXPECTED] | UnsetType = UNSET


@WORKSPACE.command("upsert_entity", "Upsert Entity", "Creates or updates an entity by name within a workspace: "
                   "the type, observations and metadata given replace the stored ones")
def upsert_entity(batch: Batch, args: UpsertEntity) -> ObjectOut:
    metadata = UNSET if args.metadata is UNSET else _metadata("upsert_entity", args.metadata)
    observations = UNSET if args.observations is UNSET else tuple(unique(args.observations))
    entity = batch.entity(args.name)
    check_entity(batch, args.name, args.expected_version, entity)
    if entity is None:
        stream = new_entity_stream()
        batch.emit(stream, EntityCreated(
            workspace=batch.workspace, name=args.name, entity_type=args.entity_type,
            observations=() if observations is UNSET else observations,
            metadata={} if metadata is UNSET else metadata), new=True)
        created = True
    else:
        stream, created = entity.stream, False
        change = EntityUpdated(
            entity_type=args.entity_type if args.entity_type != entity.entity_type else UNSET,
            observations=observations if observations is not UNSET and list(observations) != entity.observations
            else UNSET,
            metadata=metadata if metadata is not UNSET and not same_json(metadata, entity.metadata) else UNSET)
        if (change.entity_type, change.observations, change.metadata) != (UNSET, UNSET, UNSET):
            batch.emit(stream, change)
    current = batch.entity(args.name)
    assert current is not None
    return object_out(success=True, id=stream, workspace=batch.workspace, name=args.name, created=created,
                      version=current.version)


class UpsertRelation(WorkspaceArgs, kw_only=True):
    relation_type: TypeName
    from_entity_id: Id | UnsetType = UNSET
    to_entity_id: Id | UnsetType = UNSET
    source: Name | UnsetType = msgspec.field(default=UNSET, name="from")
    target: Name | UnsetType = msgspec.field(default=UNSET, name="to")
    metadata: MetadataText | UnsetType = UNSET
    expected_version: Annotated[Version, EXPECTED] | UnsetType = UNSET


def _end(batch: Batch, entity_id: Any, name: Any, which: str) -> EntityRecord:
    if entity_id is not UNSET:
        entity = batch.state.get_entity(entity_id)
        if entity is None or entity.workspace != batch.workspace:
            raise NotFoundError(f"{which} entity '{entity_id}' not found.")
        return entity
    if name is not UNSET:
        entity = batch.entity(name)
        if entity is None:
            raise NotFoundError(f"{which} entity '{name}' not found.")
        return entity
    raise InvalidArgumentsError("upsert_relation", "fromEntityId: Invalid relation payload. Provide "
                                "fromEntityId/toEntityId or from/to names that exist.")


@WORKSPACE.command("upsert_relation", "Upsert Relation", "Creates or updates a relation between two existing "
                   "entities, given by fromEntityId/toEntityId or by from/to names")
def upsert_relation(batch: Batch, args: UpsertRelation) -> ObjectOut:
    if (args.from_entity_id, args.to_entity_id) == (UNSET, UNSET) and args.source is not UNSET and (
            args.target is not UNSET and not (batch.exists(args.source) and batch.exists(args.target))):
        # by names, an end gone since: a guard it fails is a conflict, which says what became of it
        check_relation(batch, args.source, args.relation_type, args.target, args.expected_version, None)
    source = _end(batch, args.from_entity_id, args.source, "Source")
    target = _end(batch, args.to_entity_id, args.target, "Target")
    metadata = UNSET if args.metadata is UNSET else _metadata("upsert_relation", args.metadata)
    relation = batch.relation(source.name, args.relation_type, target.name)
    batch.check(f"relation {source.name!r} -[{args.relation_type}]-> {target.name!r}", args.expected_version,
                relation)
    stream = relation_stream(batch.workspace, source.name, args.relation_type, target.name)
    created = relation is None or restated(relation_span(relation), (None, None), batch.recorded_at) is not None
    if created:  # new, or no longer true: stated true again on its stream, keeping what it held
        batch.emit(stream if relation is None else relation.stream, RelationCreated(
            workspace=batch.workspace, source=source.name, target=target.name, relation_type=args.relation_type,
            confidence=None if relation is None else relation.confidence,
            metadata=({} if relation is None else relation.metadata) if metadata is UNSET else metadata))
    elif relation is not None and metadata is not UNSET and not same_json(metadata, relation.metadata):
        batch.emit(relation.stream, RelationUpdated(metadata=metadata))
    current = batch.relation(source.name, args.relation_type, target.name)
    assert current is not None
    return object_out(success=True, relationId=relation_id(stream), workspace=batch.workspace,
                      fromEntityId=source.stream, toEntityId=target.stream, relationType=args.relation_type,
                      created=created, version=current.version)


class GetEntityRelations(WorkspaceArgs, kw_only=True):
    entity_id: Id | UnsetType = UNSET
    entity_name: Name | UnsetType = UNSET


@WORKSPACE.query("get_entity_relations", "Get Entity Relations", "Lists all relations originating from a given "
                 "entity (entityId preferred, or entityName)")
def get_entity_relations(memory: Memory, args: GetEntityRelations) -> ObjectOut:
    with memory.timeline.at("get_entity_relations") as moment:
        graph, ws = moment.graph, args.workspace_name
        if args.entity_id is not UNSET:
            entity = graph.entity_by_stream(args.entity_id)
            if entity is None or entity.workspace != ws:
                raise NotFoundError(f"Entity '{args.entity_id}' not found in workspace '{ws}'.")
        elif args.entity_name is not UNSET:
            entity = graph.entity(ws, args.entity_name)
            if entity is None:
                raise NotFoundError(f"Entity '{args.entity_name}' not found in workspace '{ws}'.")
        else:
            raise InvalidArgumentsError("get_entity_relations", "entityId: Provide entityId or entityName.")
        out, now = [], read_moment("get_entity_relations", UNSET)
        for relation in graph.relations_of(ws, entity.name, "out"):
            if not valid_relation(relation, now):
                continue
            other = graph.entity(ws, relation.target)
            out.append({"id": relation_id(relation.stream), "relationType": relation.relation_type,
                        "toEntityId": None if other is None else other.stream, "to": relation.target,
                        "metadata": json.dumps(relation.metadata)})
    return object_out(success=True, workspaceName=ws, entityId=entity.stream, relations=out)
