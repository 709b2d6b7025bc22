"""What an import checks in each record of a memory file: the tools' own parsers, a batch at a time.

A record is checked as `create_entities` or `create_relations` would parse it (with the fork's
createdAt/version moved into metadata), a batch in one call, and a record alone only when its
batch fails, so that each problem says which line and why; a problem's kind leaves out the
item's indexes, so that a file bad on many lines reports one line per kind.

Two things differ from a tool call. What names something (an entity's name, a relation's ends
and type) keeps the tools' limits, since every tool must be able to name what is stored; what is
only held (an entity's type, its observations: how long each is and how many there are) is
taken whatever its size, as the official server and the store take it (`ImportedEntities`,
`ImportedObservations`: the writer writes them with the same Structs, an entity's observations a
tool call's worth at a time). And a field the format does not name (`"id"`...) is ignored, as
the official server's reader ignores it, and counted (`unknown_fields`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from operator import itemgetter
from typing import Annotated, Any, cast

from chronograph.application.core.entities import AddObservations, CreateEntities, NewEntity, ObservationAddition
from chronograph.application.core.relations import CreateRelations
from chronograph.application.core.validtime import span_of
from chronograph.application.engine.arguments import Items, parse
from chronograph.application.errors import InvalidArgumentsError
from chronograph.application.lifecycle.importindex import Noted
from chronograph.application.lifecycle.importrecords import Problem, Section
from msgspec import UNSET, Meta

__all__ = ["ENTITY_FIELDS", "FORK_FIELDS", "RELATION_FIELDS", "ImportedEntities", "ImportedObservations", "checked",
           "entity_body", "entity_entry", "in_section", "as_noted", "invalid", "parsed_relation", "relation_body",
           "unknown_fields", "untimely_entity", "untimely_relation"]

FORK_FIELDS = {"createdAt": "importedCreatedAt", "version": "importedVersion", "updatedAt": "importedUpdatedAt"}
ENTITY_FIELDS = frozenset({"type", "name", "entityType", "observations", "metadata", "validity", *FORK_FIELDS})
"""The fields of an entity line an import reads (the official format's, an export's, the fork's);
any other is ignored."""
RELATION_FIELDS = frozenset({"type", "from", "to", "relationType", "confidence", "metadata", "validFrom",
                             "validUntil", *FORK_FIELDS})
"""The fields of a relation line an import reads (the fork's are dropped); any other is ignored."""
_SECOND = itemgetter(1)
_ENTITY_BODY = ENTITY_FIELDS - {"type"}
_RELATION_BODY = RELATION_FIELDS - {"type", *FORK_FIELDS}

Held = Annotated[str, Meta(min_length=1)]
"""An entity's type as an import takes it: not blank, of any length the store holds."""


class ImportedEntity(NewEntity, kw_only=True):
    """An entity of a file: its name as a tool takes it, its type and observations as the store
    holds them (any length, any number)."""

    entity_type: Held
    observations: list[str]


class ImportedEntities(CreateEntities, kw_only=True):
    """create_entities' arguments as an import checks and writes them."""

    entities: Items[ImportedEntity]  # type: ignore[assignment]  # msgspec parses the looser items; they are NewEntity's


class ImportedAddition(ObservationAddition, kw_only=True):
    """add_observations' item as an import writes it: observations of any length (the writer
    gives at most a tool call's number of them at a time)."""

    contents: list[str]


class ImportedObservations(AddObservations, kw_only=True):
    """add_observations' arguments as an import writes them."""

    observations: Items[ImportedAddition]  # type: ignore[assignment]  # as `ImportedEntities.entities`


def unknown_fields(records: list[tuple[int, dict[str, Any]]], bodies: list[dict[str, Any] | None],
                   known: frozenset[str]) -> list[str]:
    """The fields of `records` an import does not read, one name per record that has it.

    `bodies` are the records as the tool takes them: when each is its record less `type` (the
    usual line), nothing was left out, which is counted in C; a batch that has a line with
    another difference (an unknown field, or `validity` and the fork's fields, which the body
    moves) is looked at line by line."""
    whole = cast("list[dict[str, Any]]", bodies)  # when None is not in it
    if None not in bodies and sum(map(len, map(_SECOND, records))) == sum(map(len, whole)) + len(records):
        return []
    return [field for _, record in records if not record.keys() <= known for field in record.keys() - known]


def checked(pending: list[tuple[int, dict[str, Any]]], bodies: list[dict[str, Any] | None], key: str,
            into: type[Any], one: Callable[[int, dict[str, Any]], Any]) -> list[Any]:
    """Records checked by the tool's own parser, all in one call when every one passes (each
    checked alone only when one does not, which says which and why): the parsed items, or what
    `one` says of each. `bodies` are the records as the tool takes them (`entity_body`...)."""
    if pending and all(body is not None for body in bodies):
        try:
            return list(getattr(parse("import", {key: bodies}, into), key))
        except InvalidArgumentsError:
            pass
    return [one(number, record) for number, record in pending]


def entity_body(record: dict[str, Any]) -> dict[str, Any] | None:
    """The entity as create_entities parses it, or None when its valid times are malformed."""
    body = {k: v for k, v in record.items() if k in _ENTITY_BODY}
    spans = body.pop("validity", None)
    if spans is not None and not (isinstance(spans, dict) and all(
            isinstance(s, dict) and set(s) <= {"validFrom", "validUntil"} for s in spans.values())):
        return None
    extra = {FORK_FIELDS[k]: body.pop(k) for k in list(body) if k in FORK_FIELDS}
    if extra:
        body["metadata"] = {**(body.get("metadata") or {}), **extra}
    return body


def relation_body(record: dict[str, Any]) -> dict[str, Any]:
    """The relation as create_relations parses it (the fields it does not read left out)."""
    return {k: v for k, v in record.items() if k in _RELATION_BODY}


def parsed_relation(number: int, record: dict[str, Any]) -> Any:
    """One relation parsed, or its problem."""
    try:
        [relation] = parse("import", {"relations": [relation_body(record)]}, CreateRelations).relations
    except InvalidArgumentsError as error:
        return invalid(number, "relation", error.problem.removeprefix("relations[0]"))
    return relation


def untimely_entity(number: int, record: dict[str, Any]) -> Problem | None:
    """What the write would refuse in an entity record's `validity` (each span as add_observations
    takes it: moments, the end after the start), as the record's problem; None if nothing. The
    survey asks it, so that a bad valid time stops nothing halfway (and `--strict` refuses first)."""
    for span in (record.get("validity") or {}).values():
        try:
            [item] = parse("import", {"observations": [{"entityName": "-", "contents": [], **span}]},
                           AddObservations).observations
            span_of("import", "validity.", item.valid_from, item.valid_until)
        except InvalidArgumentsError as error:
            return invalid(number, "entity", "." + error.problem.removeprefix("observations[0]."))
    return None


def untimely_relation(number: int, relation: Any) -> Problem | None:
    """What the write would refuse in a parsed relation's validFrom / validUntil, as its problem."""
    try:
        span_of("import", "", relation.valid_from, relation.valid_until)
    except InvalidArgumentsError as error:
        return invalid(number, "relation", error.problem)
    return None


def as_noted(number: int, relation: Any) -> Noted:
    """A parsed relation as the index notes it."""
    extra = {"confidence": relation.confidence, "metadata": relation.metadata,
             "validFrom": relation.valid_from, "validUntil": relation.valid_until}
    kept = {k: v for k, v in extra.items() if v is not UNSET and v is not None}
    return (relation.source, relation.target, relation.relation_type), number, kept


def entity_entry(number: int, record: dict[str, Any], *, checked: bool = False) -> dict[str, Any] | Problem:
    """The entity a record holds, as create_entities takes it (with its `validity`), or its problem.

    `checked`: the record passed before, so the tool's parser, which the write runs, need not run twice.
    """
    body = entity_body(record)
    if body is None:
        return Problem(number, "validity: expected {observation: {validFrom, validUntil}}")
    spans = record.get("validity")
    if checked:
        name, kind, observations, metadata = body["name"], body["entityType"], body["observations"], body.get(
            "metadata")
    else:
        try:
            [item] = parse("import", {"entities": [body]}, ImportedEntities).entities
        except InvalidArgumentsError as error:
            return invalid(number, "entity", error.problem.removeprefix("entities[0]"))
        name, kind, observations, metadata = item.name, item.entity_type, item.observations, item.metadata
    entry: dict[str, Any] = {"name": name, "entityType": kind, "observations": list(observations)}
    if metadata:
        entry["metadata"] = metadata
    if spans:
        entry["validity"] = {o: s for o, s in spans.items() if o in observations}
    return entry


def in_section(section: Section, problem: Problem) -> Problem:
    """A section's problem, said by the plan of the whole file (the file's own section's as it is)."""
    if not section.named:
        return problem
    return Problem(problem.line, f"workspace {section.workspace!r}: {problem.kind}", problem.detail,
                   section.number)


def invalid(number: int, what: str, problem: str) -> Problem:
    """A record the tool's own parser refused: the kind is its message with the item's indexes
    left out (`observations[3]` and `observations[0]` are one kind), the detail the message."""
    text = problem.lstrip(".: ")
    kind = re.sub(r"\[\d+\]", "[]", text)
    return Problem(number, f"{what}{' ' if problem.startswith('.') else ': '}{kind}", text if kind != text else "")
