"""Importing a memory file of the official server (or the itseasy21 fork): checked, then written.

Everything becomes ordinary events under one correlation id. Importing the same file
again changes nothing: existing entities only gain observations they lack, existing
relations are skipped. The fork's createdAt/version are kept in each entity's metadata
(importedCreatedAt, importedVersion). Bad lines are reported with their line numbers,
relations whose ends exist nowhere are reported, not dropped in silence, and an entity
whose type differs from the stored one is reported as a conflict (the stored type is
kept, the observations are merged).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronograph.application.core.context import UpdateContext
from chronograph.application.core.entities import CreateEntities
from chronograph.application.core.relations import CreateRelations
from chronograph.application.engine.arguments import Limits, parse
from chronograph.application.engine.service import Memory
from chronograph.application.errors import InvalidArgumentsError
from msgspec import UNSET

__all__ = ["ACTOR", "NOT_JSON", "ImportReport", "Plan", "Problem", "check", "import_plan", "read_file"]

ACTOR = "import"
NOT_JSON = "not JSON"
FORK_FIELDS = {"createdAt": "importedCreatedAt", "version": "importedVersion", "updatedAt": "importedUpdatedAt"}
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Problem:
    """A line of the file that cannot be imported: where, what kind of problem (the same words
    for every line with it, so a report can count them) and, for this line, the detail."""

    line: int
    kind: str
    detail: str = ""

    def __str__(self) -> str:
        return f"line {self.line}: {self.kind}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class Plan:
    """What a file holds, checked line by line."""

    entities: dict[str, dict[str, Any]] = field(default_factory=dict)
    lines_of: dict[str, int] = field(default_factory=dict)
    """entity name -> the line it first came from"""
    relations: dict[tuple[str, str, str], int] = field(default_factory=dict)
    """(from, to, relationType) -> the line it came from"""
    relation_fields: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    """(from, to, relationType) -> its confidence and metadata, when the file gives them"""
    context: dict[str, Any] | None = None
    """The workspace's context, when the file carries one (our exports do)"""
    sections: dict[str, Plan] = field(default_factory=dict)
    """workspace -> what the file holds for it, when the file names workspaces (an export of
    them all); this plan then holds what came before the first section"""
    problems: list[Problem] = field(default_factory=list)
    lines: int = 0
    """Its lines that are not blank (its records, for a JSON document)"""

    @property
    def empty(self) -> bool:
        """Whether the file holds nothing to import."""
        return not self.entities and not self.relations and not self.context and all(
            section.empty for section in self.sections.values())

    @property
    def foreign(self) -> bool:
        """Whether the file is no memory file at all: most of its lines are not JSON (notes, a
        picture, a CSV). Importing the few lines that happen to be is never what was meant."""
        return sum(problem.kind == NOT_JSON for problem in self.problems) * 2 > self.lines


@dataclass
class ImportReport:
    """What an import did."""

    created: int = 0
    related: int = 0
    observations: int = 0
    skipped: int = 0
    conflicts: list[str] = field(default_factory=list)
    context: bool = False
    """Whether the file's context was merged into the workspace's"""
    """Entities whose type in the file differs from the stored one (kept), with what was merged."""


def read_file(path: Path) -> Plan:
    """Parse an official JSONL file, a legacy JSON graph, or a fork file into a `Plan`.

    Raises:
        OSError: If the file cannot be read.
    """
    text = path.read_bytes().decode("utf-8", errors="replace")
    plan = Plan()
    stripped = text.strip()
    if stripped.startswith("{") and "\n{" not in stripped:
        try:
            document = json.loads(stripped)
        except ValueError:
            document = None
        if isinstance(document, dict) and isinstance(document.get("workspaces"), dict):
            for name, part in document["workspaces"].items():
                section = plan.sections[str(name)] = Plan()
                if isinstance(part, dict):
                    records = [{"type": "entity", **e} for e in part.get("entities", []) if isinstance(e, dict)]
                    records += [{"type": "relation", **r} for r in part.get("relations", []) if isinstance(r, dict)]
                    if isinstance(part.get("context"), dict):
                        records.append({"type": "context", **part["context"]})
                    section.lines = len(records)
                    for number, record in enumerate(records, start=1):
                        _take(section, number, record)
                    plan.problems += section.problems
                    section.problems = []
            return plan
        if isinstance(document, dict) and ("entities" in document or "relations" in document):
            records = [{"type": "entity", **e} for e in document.get("entities", []) if isinstance(e, dict)]
            records += [{"type": "relation", **r} for r in document.get("relations", []) if isinstance(r, dict)]
            if isinstance(document.get("context"), dict):
                records.append({"type": "context", **document["context"]})
            plan.lines = len(records)
            for number, record in enumerate(records, start=1):
                _take(plan, number, record)
            return plan
    current = plan
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        plan.lines += 1
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            plan.problems.append(Problem(number, NOT_JSON, error.msg))
            continue
        except RecursionError:
            plan.problems.append(Problem(number, "nested too deep"))
            continue
        if isinstance(record, dict) and record.get("type") == "workspace" and isinstance(record.get("name"), str):
            current = plan.sections.setdefault(record["name"], Plan())
            continue
        _take(current, number, record)
        if current is not plan:
            plan.problems += current.problems
            current.problems = []
    return plan


def _take(plan: Plan, number: int, record: Any) -> None:
    if not isinstance(record, dict) or record.get("type") not in ("entity", "relation", "context"):
        plan.problems.append(Problem(number, 'not an entity or relation (needs "type": "entity" or "relation")'))
        return
    body = {k: v for k, v in record.items() if k != "type"}
    if record["type"] == "context":
        try:
            parse("import", body, UpdateContext)
        except InvalidArgumentsError as error:
            plan.problems.append(_invalid(number, "context", error.problem))
            return
        plan.context = body
        return
    if record["type"] == "entity":
        spans = body.pop("validity", None)
        if spans is not None and not (isinstance(spans, dict) and all(
                isinstance(s, dict) and set(s) <= {"validFrom", "validUntil"} for s in spans.values())):
            plan.problems.append(Problem(number, "validity: expected {observation: {validFrom, validUntil}}"))
            return
        extra = {FORK_FIELDS[k]: body.pop(k) for k in list(body) if k in FORK_FIELDS}
        if extra:
            body["metadata"] = {**(body.get("metadata") or {}), **extra}
        try:
            [item] = parse("import", {"entities": [body]}, CreateEntities).entities
        except InvalidArgumentsError as error:
            plan.problems.append(_invalid(number, "entity", error.problem.removeprefix("entities[0]")))
            return
        known = plan.entities.get(item.name)
        if known is None:
            entry: dict[str, Any] = {
                "name": item.name, "entityType": item.entity_type, "observations": list(item.observations),
            }
            if item.metadata:
                entry["metadata"] = item.metadata
            if spans:
                entry["validity"] = {o: s for o, s in spans.items() if o in item.observations}
            plan.entities[item.name] = entry
            plan.lines_of[item.name] = number
        else:  # the same name twice in one file: one entity, every observation
            known["observations"] += [o for o in item.observations if o not in known["observations"]]
    else:
        body = {k: v for k, v in body.items() if k not in FORK_FIELDS}
        try:
            [relation] = parse("import", {"relations": [body]}, CreateRelations).relations
        except InvalidArgumentsError as error:
            plan.problems.append(_invalid(number, "relation", error.problem.removeprefix("relations[0]")))
            return
        key = (relation.source, relation.target, relation.relation_type)
        plan.relations.setdefault(key, number)
        extra = {"confidence": relation.confidence, "metadata": relation.metadata,
                 "validFrom": relation.valid_from, "validUntil": relation.valid_until}
        kept = {k: v for k, v in extra.items() if v is not UNSET and v is not None}
        if kept:
            plan.relation_fields.setdefault(key, kept)


def check(plan: Plan, stored: dict[str, str]) -> None:
    """Report the relations whose ends are neither in the file nor in the store (`stored`:
    name -> type of the workspace's entities the plan names) and drop them."""
    for (source, target, kind), number in list(plan.relations.items()):
        missing = [n for n in (source, target) if n not in plan.entities and n not in stored]
        if missing:
            names = " and ".join(repr(n) for n in missing)
            plan.problems.append(Problem(number, "a relation whose end is in neither the file nor the store",
                                         f"{source} -[{kind}]-> {target}: no entity {names}"))
            del plan.relations[(source, target, kind)]
    plan.problems.sort(key=lambda problem: problem.line)


def _invalid(number: int, what: str, problem: str) -> Problem:
    """A record the tool's own parser refused: the kind is its message with the item's indexes
    left out (`observations[3]` and `observations[0]` are one kind), the detail the message."""
    text = problem.lstrip(".: ")
    kind = re.sub(r"\[\d+\]", "[]", text)
    return Problem(number, f"{what}{' ' if problem.startswith('.') else ': '}{kind}", text if kind != text else "")


def stored_types(memory: Memory, plan: Plan, workspace: str) -> dict[str, str]:
    """name -> type of the entities of `workspace` the plan names (as entities or relation ends)."""
    names = set(plan.entities) | {name for relation in plan.relations for name in relation[:2]}
    with memory.views.read() as graph:
        return {name: entity.entity_type for name in names if (entity := graph.entity(workspace, name)) is not None}


def import_plan(
    memory: Memory, plan: Plan, workspace: str, stored: dict[str, str], progress: Progress | None = None
) -> ImportReport:
    """Write a checked plan into `workspace`, in batches of one transaction each.

    A crash mid-import leaves whole batches; importing again completes it.

    Raises:
        ChronographError: If the store refuses a batch (the batches before it stay).
    """
    correlation = os.urandom(16).hex()
    report = ImportReport()
    step = Limits.ITEMS

    def write(tool: str, arguments: dict[str, Any]) -> Any:
        return memory.write(tool, {**arguments, "workspace": workspace}, actor=ACTOR,
                            correlation_id=correlation).output

    spanned = _spanned(plan)  # observations with a valid time go in after, with it
    new = [_without(entry) for name, entry in plan.entities.items() if name not in stored]
    for start in range(0, len(new), step):
        report.created += len(write("create_entities", {"entities": new[start : start + step]}).entities)
        if progress is not None:
            progress("entities", min(start + step, len(new)), len(new))
    report.observations = sum(len(entry["observations"]) for entry in new)
    existing = sorted(name for name in plan.entities if name in stored)
    merges = [{"entityName": name, "contents": _without(plan.entities[name])["observations"]} for name in existing]
    added_to: dict[str, int] = {}
    for start in range(0, len(merges), step):
        for result in write("add_observations", {"observations": merges[start : start + step]}).results:
            added_to[result.entity_name] = len(result.added_observations)
        if progress is not None:
            progress("observations", min(start + step, len(merges)), len(merges))
    report.observations += sum(added_to.values())
    for start in range(0, len(spanned), step):
        for result in write("add_observations", {"observations": spanned[start : start + step]}).results:
            report.observations += len(result.added_observations)
    for name in existing:
        theirs = plan.entities[name]["entityType"]
        if theirs != stored[name]:
            report.conflicts.append(
                f"line {plan.lines_of[name]}: {name!r} is a {theirs!r} in the file and a {stored[name]!r} in the "
                f"store; kept {stored[name]!r}, merged {added_to.get(name, 0)} new observation(s)"
            )
    _report_kept(memory, plan, workspace, stored, report)
    relations = [{"from": s, "to": t, "relationType": k, **plan.relation_fields.get((s, t, k), {})}
                 for s, t, k in plan.relations]
    for start in range(0, len(relations), step):
        report.related += len(write("create_relations", {"relations": relations[start : start + step]}).relations)
        if progress is not None:
            progress("relations", min(start + step, len(relations)), len(relations))
    report.skipped = (len(plan.entities) - report.created - len(report.conflicts)) + (
        len(plan.relations) - report.related
    )
    if plan.context:
        write("update_context", plan.context)
        report.context = True
    return report


def _without(entry: dict[str, Any]) -> dict[str, Any]:
    """The entity as create_entities takes it, without the observations that carry a valid time."""
    spans = entry.get("validity") or {}
    shown = {k: v for k, v in entry.items() if k != "validity"}
    shown["observations"] = [o for o in entry["observations"] if o not in spans]
    return shown


def _spanned(plan: Plan) -> list[dict[str, Any]]:
    """add_observations items for the observations with a valid time, one per entity and span."""
    items: dict[tuple[str, str | None, str | None], list[str]] = {}
    for name, entry in plan.entities.items():
        for observation, span in (entry.get("validity") or {}).items():
            items.setdefault((name, span.get("validFrom"), span.get("validUntil")), []).append(observation)
    return [{"entityName": name, "contents": contents,
             **({"validFrom": start} if start else {}), **({"validUntil": end} if end else {})}
            for (name, start, end), contents in items.items()]


def _report_kept(memory: Memory, plan: Plan, workspace: str, stored: dict[str, str], report: ImportReport) -> None:
    """Say where the store keeps what it has instead of the file's metadata or confidence."""
    with memory.views.read() as graph:
        for name in sorted(n for n in plan.entities if n in stored):
            theirs = plan.entities[name].get("metadata")
            entity = graph.entity(workspace, name)
            if theirs and entity is not None and entity.metadata != theirs:
                report.conflicts.append(f"line {plan.lines_of[name]}: {name!r} has other metadata in the store; "
                                        "kept the store's (update_entities replaces it)")
        for key, fields in plan.relation_fields.items():
            relation = graph.relation(workspace, key[0], key[2], key[1])
            if relation is not None and any(getattr(relation, k) != v for k, v in fields.items()):
                report.conflicts.append(f"line {plan.relations[key]}: relation {key[0]} -[{key[2]}]-> {key[1]} "
                                        "exists with another confidence or metadata; kept the store's")
