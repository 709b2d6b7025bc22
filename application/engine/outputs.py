"""What tools answer: the official entity and relation shapes, plus what Chronograph adds.

Field order is the official server's (name, entityType, observations first), so the
JSON text of an answer reads as the official one does. An entity or relation carries
what an agent acts on: its content, what its writer set (metadata, confidence, valid
times) and its `version` (for `expectedVersion`). Its timestamps (createdAt, updatedAt)
cost every read their tokens and are opt-in (`includeMetadata`); a profile that keeps
the official shape (`official_shape`) leaves the version out too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, TypeVar

import msgspec
from chronograph.application.engine.arguments import D
from chronograph.eventstore import Envelope
from chronograph.eventstore.clock import isoformat
from chronograph.projections import EntityRecord, RelationRecord
from msgspec import UNSET, UnsetType

__all__ = [
    "ChangeOut",
    "DeletedOut",
    "EntitiesOut",
    "EntityOut",
    "MatchedOut",
    "ObjectOut",
    "ObservationProvenanceOut",
    "Out",
    "PageEntityOut",
    "PageRelationOut",
    "RelationOut",
    "RelationsOut",
    "entity_out",
    "keep_observations",
    "object_out",
    "official_shape",
    "page_relations",
    "relation_out",
    "stamp",
]

ENTITY_NAME = D(description="The name of the entity")
ENTITY_TYPE = D(description="The type of the entity")
OBSERVATIONS = D(description="An array of observation contents associated with the entity")
FROM = D(description="The name of the entity where the relation starts")
TO = D(description="The name of the entity where the relation ends")
RELATION_TYPE = D(description="The type of the relation")
AS_OF_POSITION = D(description="The log position answered from (with asOf)")


class Out(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """Base of tool outputs."""


class ObjectOut(Out, kw_only=True):
    """An answer that is one JSON object shaped as another server shapes it (the profiles
    that mirror Agent Memory, Kuzu, n2n and the workspace server): printed as that object."""

    reply: dict[str, Any]


def object_out(**fields: Any) -> ObjectOut:
    """The answer made of `fields` (None values left out)."""
    return ObjectOut(reply={key: value for key, value in fields.items() if value is not None})


class EntityOut(Out, kw_only=True):
    name: Annotated[str, ENTITY_NAME]
    entity_type: Annotated[str, ENTITY_TYPE]
    observations: Annotated[list[str], OBSERVATIONS]
    metadata: dict[str, Any] | UnsetType = UNSET
    version: int | UnsetType = UNSET
    created_at: str | UnsetType = UNSET
    updated_at: str | UnsetType = UNSET
    validity: Annotated[dict[str, dict[str, str]], D(
        description="When observations were true (validFrom/validUntil), for those that say")] | UnsetType = UNSET


class RelationOut(Out, kw_only=True):
    source: Annotated[str, FROM] = msgspec.field(name="from")
    target: Annotated[str, TO] = msgspec.field(name="to")
    relation_type: Annotated[str, RELATION_TYPE]
    confidence: float | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET
    version: int | UnsetType = UNSET
    created_at: str | UnsetType = UNSET
    updated_at: str | UnsetType = UNSET
    valid_from: Annotated[str, D(description="When it started being true")] | UnsetType = UNSET
    valid_until: Annotated[str, D(description="When it stopped being true")] | UnsetType = UNSET


class ObservationProvenanceOut(Out, kw_only=True):
    """Where one observation came from: the event that put it there."""

    observation: str
    recorded_at: Annotated[str, D(description="When the memory learned it")]
    actor: Annotated[str, D(description="Who wrote it (MCP client or --actor)")]
    correlation_id: Annotated[str, D(description="The call that wrote it (see get_audit_log)")]
    position: Annotated[int, D(description="Its event's position in the log")]
    moved_at: Annotated[str, D(description="When a merge moved it here from the entity that recorded it")] | (
        UnsetType) = UNSET
    moved_by: Annotated[str, D(description="That merge's call (see get_audit_log)")] | UnsetType = UNSET


class MatchedOut(Out, kw_only=True):
    """One observation of an entity that matched a search, and how well (0 to 1)."""

    text: str
    score: float


class PageEntityOut(Out, kw_only=True):
    """An entity of read_graph: in summaryMode, its name and type only."""

    name: Annotated[str, ENTITY_NAME]
    entity_type: Annotated[str, ENTITY_TYPE]
    observations: Annotated[list[str], OBSERVATIONS] | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET
    version: int | UnsetType = UNSET
    created_at: str | UnsetType = UNSET
    updated_at: str | UnsetType = UNSET
    validity: Annotated[dict[str, dict[str, str]], D(
        description="When observations were true (validFrom/validUntil), for those that say")] | UnsetType = UNSET
    provenance: Annotated[list[ObservationProvenanceOut], D(
        description="Each observation's recordedAt, actor and call (with includeProvenance)")] | UnsetType = UNSET
    matched_observations: Annotated[list[MatchedOut], D(
        description="The observations that matched a ranked search, best first")] | UnsetType = UNSET


class PageRelationOut(Out, kw_only=True):
    """A relation of a graph answer (read_graph, open_nodes, search_nodes): in summaryMode, its
    ends and type only."""

    source: Annotated[str, FROM] = msgspec.field(name="from")
    target: Annotated[str, TO] = msgspec.field(name="to")
    relation_type: Annotated[str, RELATION_TYPE]
    confidence: float | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET
    version: int | UnsetType = UNSET
    created_at: str | UnsetType = UNSET
    updated_at: str | UnsetType = UNSET
    valid_from: Annotated[str, D(description="When it started being true")] | UnsetType = UNSET
    valid_until: Annotated[str, D(description="When it stopped being true")] | UnsetType = UNSET


class EntitiesOut(Out, kw_only=True):
    entities: list[EntityOut]


class RelationsOut(Out, kw_only=True):
    relations: list[RelationOut]


class DeletedOut(Out, kw_only=True):
    success: bool
    message: str
    deleted: int | UnsetType = UNSET
    not_found: Annotated[list[str], D(description="What was asked for but not there (when any)")] | UnsetType = UNSET
    relations_deleted: int | UnsetType = UNSET


Shape = TypeVar("Shape", EntityOut, PageEntityOut)
RelationShape = TypeVar("RelationShape", RelationOut, PageRelationOut)


def entity_out(record: EntityRecord, shape: type[Shape] = EntityOut, *,  # type: ignore[assignment]
               metadata: bool = False) -> Shape:
    """The official entity shape, plus what its writer set (metadata, observation spans) and
    its version; with `metadata` (includeMetadata), its createdAt and updatedAt too.

    `shape` is `PageEntityOut` for a read_graph page, whose schema lets summaryMode leave
    the observations out.
    """
    return shape(
        name=record.name,
        entity_type=record.entity_type,
        observations=record.observations,
        metadata=record.metadata or UNSET,
        version=record.version,
        created_at=isoformat(record.created_at) if metadata else UNSET,
        updated_at=isoformat(record.updated_at) if metadata else UNSET,
        validity=spans_out(record.validity),
    )


def keep_observations(out: EntityOut | PageEntityOut, kept: list[str]) -> None:
    """Answer only the observations `kept` of an entity's output: its `validity` then names
    those alone (an ended observation, or one a cap left out, is not hinted at by its span)."""
    out.observations = kept
    if out.validity is not UNSET:
        held = set(kept)
        out.validity = {text: span for text, span in out.validity.items() if text in held} or UNSET


def relation_out(record: RelationRecord, shape: type[RelationShape] = RelationOut, *,  # type: ignore[assignment]
                 metadata: bool = False) -> RelationShape:
    """The official relation shape, plus what its writer set (confidence, metadata, valid
    times) and its version; with `metadata` (includeMetadata), its createdAt and updatedAt too.

    `shape` is `PageRelationOut` in a graph answer, whose schema lets summaryMode leave all
    but the ends and the type out.
    """
    return shape(
        source=record.source,
        target=record.target,
        relation_type=record.relation_type,
        confidence=UNSET if record.confidence is None else record.confidence,
        metadata=record.metadata or UNSET,
        version=record.version,
        created_at=isoformat(record.created_at) if metadata else UNSET,
        updated_at=isoformat(record.updated_at) if metadata else UNSET,
        valid_from=UNSET if record.valid_from is None else isoformat(record.valid_from),
        valid_until=UNSET if record.valid_until is None else isoformat(record.valid_until),
    )


def page_relations(records: Iterable[RelationRecord], summary: bool, metadata: bool = False) -> list[PageRelationOut]:
    """Relations as a graph answer lists them: whole (with their timestamps if `metadata`), or
    in summaryMode their ends and type only."""
    if summary:
        return [PageRelationOut(source=r.source, target=r.target, relation_type=r.relation_type) for r in records]
    return [relation_out(r, PageRelationOut, metadata=metadata) for r in records]


Answer = TypeVar("Answer", bound=msgspec.Struct)


def official_shape(output: Answer) -> Answer:
    """`output` with its entities and relations in the official server's shape: what the
    default profile adds unasked (each one's `version`) left out, in place. An item that
    carries its timestamps was asked for with includeMetadata and keeps its version."""
    for field in ("entities", "relations"):
        for item in getattr(output, field, ()):
            if isinstance(item, (EntityOut, PageEntityOut, RelationOut, PageRelationOut)) and item.created_at is UNSET:
                item.version = UNSET
    return output


def spans_out(validity: dict[str, tuple[int | None, int | None]]) -> dict[str, dict[str, str]] | UnsetType:
    """An entity's observation spans as the tools show them (UNSET when none has one)."""
    if not validity:
        return UNSET
    return {o: {k: isoformat(v) for k, v in (("validFrom", start), ("validUntil", end)) if v is not None}
            for o, (start, end) in validity.items()}


class ChangeOut(Out, kw_only=True):
    """One event as history and audit show it: where it is in the log, who wrote it, when."""

    position: Annotated[int, D(description="Position of the change in the log")]
    stream: Annotated[str, D(description="The stable id of the entity, relation or context changed")]
    version: int
    recorded_at: str
    actor: Annotated[str, D(description="Who made the change (MCP client or --actor)")]
    correlation_id: Annotated[str, D(description="Shared by every change of one tool call")]


def stamp(envelope: Envelope) -> dict[str, Any]:
    """The `ChangeOut` fields of `envelope`."""
    return {
        "position": envelope.position, "stream": envelope.stream, "version": envelope.version,
        "recorded_at": isoformat(envelope.recorded_at), "actor": envelope.actor,
        "correlation_id": envelope.correlation_id,
    }
