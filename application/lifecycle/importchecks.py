"""What an import checks in each record of a memory file: the tools' own parsers, a batch at a time.

A record is checked as `create_entities` or `create_relations` would parse it (with the fork's
createdAt/version moved into metadata), a batch in one call, and a record alone only when its
batch fails, so that each problem says which line and why; a problem's kind leaves out the
item's indexes, so that a file bad on many lines reports one line per kind.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from chronograph.application.core.entities import AddObservations, CreateEntities
from chronograph.application.core.relations import CreateRelations
from chronograph.application.core.validtime import span_of
from chronograph.application.engine.arguments import parse
from chronograph.application.errors import InvalidArgumentsError
from chronograph.application.lifecycle.importindex import Noted
from chronograph.application.lifecycle.importrecords import Problem, Section
from msgspec import UNSET

__all__ = ["FORK_FIELDS", "checked", "entity_body", "entity_entry", "in_section", "as_noted", "invalid",
           "parsed_relation", "relation_body", "untimely_entity", "untimely_relation"]

FORK_FIELDS = {"createdAt": "importedCreatedAt", "version": "importedVersion", "updatedAt": "importedUpdatedAt"}


def checked(pending: list[tuple[int, dict[str, Any]]], key: str, into: type[Any],
             body_of: Callable[[dict[str, Any]], dict[str, Any] | None],
             one: Callable[[int, dict[str, Any]], Any]) -> list[Any]:
    """Records checked by the tool's own parser, all in one call when every one passes (each
    checked alone only when one does not, which says which and why): the parsed items, or what
    `one` says of each."""
    bodies = [body_of(record) for _, record in pending]
    if pending and all(body is not None for body in bodies):
        try:
            return list(getattr(parse("import", {key: bodies}, into), key))
        except InvalidArgumentsError:
            pass
    return [one(number, record) for number, record in pending]


def entity_body(record: dict[str, Any]) -> dict[str, Any] | None:
    """The entity as create_entities parses it, or None when its valid times are malformed."""
    body = {k: v for k, v in record.items() if k != "type"}
    spans = body.pop("validity", None)
    if spans is not None and not (isinstance(spans, dict) and all(
            isinstance(s, dict) and set(s) <= {"validFrom", "validUntil"} for s in spans.values())):
        return None
    extra = {FORK_FIELDS[k]: body.pop(k) for k in list(body) if k in FORK_FIELDS}
    if extra:
        body["metadata"] = {**(body.get("metadata") or {}), **extra}
    return body


def relation_body(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "type" and k not in FORK_FIELDS}


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
            [item] = parse("import", {"entities": [body]}, CreateEntities).entities
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
