"""Importing a memory file of the official server (or the itseasy21 fork): checked, then written,
a batch at a time.

Everything becomes ordinary events under one correlation id. Importing the same file
again changes nothing: existing entities only gain observations they lack, existing
relations are skipped. The fork's createdAt/version are kept in each entity's metadata
(importedCreatedAt, importedVersion). Bad lines are reported with their line numbers,
relations whose ends exist nowhere are reported, not dropped in silence, and an entity
whose type differs from the stored one is reported as a conflict (the stored type is
kept, the observations are merged).

A JSONL file is streamed, never held: `FileImport.survey` reads it once to check every line and
note, on disk (`importindex`), each name's and each relation's first line; `check_ends` finds the
relations whose ends are neither in the file nor in the store; only then does `write` read it
again and write it in batches of `Limits.ITEMS` (the entities, a batch at a time in file order,
then the relations from the index), so nothing is written before the whole file has been checked
(`--strict` refuses it whole) and the import holds one batch at a time whatever the file's size.
A legacy JSON document (one JSON value) is parsed whole, as it must be, then the same way.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from chronograph.application.core.context import UpdateContext
from chronograph.application.core.entities import CreateEntities
from chronograph.application.core.relations import CreateRelations
from chronograph.application.engine.arguments import Limits, parse
from chronograph.application.engine.service import Memory
from chronograph.application.errors import InvalidArgumentsError
from chronograph.application.lifecycle.importindex import FileIndex, Noted
from chronograph.application.lifecycle.importrecords import NOT_JSON, Problem, Problems, Section, records
from chronograph.eventstore.lmdb import resident
from msgspec import UNSET

__all__ = ["ACTOR", "NOT_JSON", "FileImport", "ImportReport", "Problem", "Problems"]

ACTOR = "import"
FORK_FIELDS = {"createdAt": "importedCreatedAt", "version": "importedVersion", "updatedAt": "importedUpdatedAt"}
Progress = Callable[[str, int, int], None]
T = TypeVar("T")
MAPPED = 192 << 20
"""The store pages an import keeps resident before it gives them back (see `resident`)."""
KEPT_CONFLICTS = 100
"""Conflicts an import keeps the words of (it counts them all)."""


@dataclass
class ImportReport:
    """What an import did in one workspace."""

    created: int = 0
    related: int = 0
    observations: int = 0
    skipped: int = 0
    conflicts: list[str] = field(default_factory=list)
    """The first `KEPT_CONFLICTS` conflicts: entities whose type in the file differs from the
    stored one (kept), with what was merged; metadata or confidence the store keeps instead."""
    conflicted: int = 0
    """How many conflicts there were"""
    context: bool = False
    """Whether the file's context was merged into the workspace's"""

    def conflict(self, text: str) -> None:
        """Count a conflict, keeping its words while there are few."""
        self.conflicted += 1
        if len(self.conflicts) < KEPT_CONFLICTS:
            self.conflicts.append(text)


class FileImport:
    """One import of one file into one store: `survey`, `check_ends`, then `write`.

    `batch` is the most items it holds and writes at once (one write transaction each);
    `held` the most entity entries it ever held at once (for tests of its memory).
    """

    def __init__(self, path: Path, workspace: str, *, batch: int = Limits.ITEMS,
                 progress: Progress | None = None, actor: str = ACTOR) -> None:
        self.path = path
        self.actor = actor
        """Who the events are recorded as (`import`, or `import:<format>` for another server's memory)"""
        self.batch = batch
        self.progress = progress
        self.sections: dict[str, Section] = {"": Section(0, workspace)}
        self.problems = Problems()
        self.lines = 0
        """Its lines that are not blank (its records, for a JSON document)"""
        self.index = FileIndex()
        self.held = 0

    def close(self) -> None:
        """Delete what the import kept on disk."""
        self.index.close()

    def __enter__(self) -> FileImport:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- the checking pass ------------------------------------------------------------------

    def survey(self) -> None:
        """Read the whole file once: check every line, note its names and relations on disk.

        Raises:
            OSError: If the file cannot be read.
        """
        entities: list[tuple[int, dict[str, Any]]] = []
        relations: list[tuple[int, dict[str, Any]]] = []
        current = self.sections[""]

        def flush() -> None:
            names, bad = [], []
            for (number, _), entry in zip(entities, _checked(entities, "entities", CreateEntities, _entity_body,
                                                              entity_entry), strict=True):
                if isinstance(entry, Problem):
                    self.problems.add(entry)
                    bad.append((current.number, number))
                else:
                    names.append((entry["name"] if isinstance(entry, dict) else entry.name, number))
            noted = []
            for (number, _), relation in zip(relations, _checked(relations, "relations", CreateRelations,
                                                                  _relation_body, _relation), strict=True):
                if isinstance(relation, Problem):
                    self.problems.add(relation)
                else:
                    noted.append(_noted(number, relation))
            self.index.add_entities(current.number, names)
            self.index.add_relations(current.number, noted)
            self.index.add_bad(bad)
            entities.clear()
            relations.clear()

        for item in records(self.path, self._progress):
            if isinstance(item, int):  # a line of the top plan, counted
                self.lines += item
                continue
            if isinstance(item, str):  # a workspace section starts
                flush()
                current = self.sections.setdefault(item, Section(len(self.sections), item, named=True))
                continue
            number, record = item
            if isinstance(record, Problem):
                self.problems.add(record)
                continue
            kind = record.get("type") if isinstance(record, dict) else None
            if kind == "entity":
                entities.append((number, record))
            elif kind == "relation":
                relations.append((number, record))
            else:
                problem = self._check(current, number, record)
                if problem is not None:
                    self.problems.add(problem)
            if len(entities) + len(relations) >= min(self.batch, Limits.ITEMS):
                flush()
        flush()
        self.index.finish()
        for section in self.sections.values():
            section.entities = self.index.entities(section.number)
            section.relations = self.index.relations(section.number)

    def _progress(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress("checking", done, total)

    def _check(self, section: Section, number: int, record: Any) -> Problem | None:
        """A record neither an entity nor a relation checked: its problem, or None (a context, kept
        on the section)."""
        if not isinstance(record, dict) or record.get("type") != "context":
            return Problem(number, 'not an entity or relation (needs "type": "entity" or "relation")')
        body = {k: v for k, v in record.items() if k != "type"}
        try:
            parse("import", body, UpdateContext)
        except InvalidArgumentsError as error:
            return _invalid(number, "context", error.problem)
        section.context = body
        return None

    # --- what the survey found --------------------------------------------------------------

    @property
    def foreign(self) -> bool:
        """Whether the file is no memory file at all: most of its lines are not JSON (notes, a
        picture, a CSV). Importing the few lines that happen to be is never what was meant."""
        return self.problems.count_of(NOT_JSON) * 2 > self.lines

    @property
    def empty(self) -> bool:
        """Whether the file holds nothing to import (after `check_ends`)."""
        return all(section.empty for section in self.sections.values())

    def check_ends(self, memory: Memory | None) -> None:
        """Report the relations whose ends are neither in the file nor in `memory`'s store (None:
        nothing is stored) and drop them."""
        for section in self.sections.values():
            dropped = 0
            for unknown in _batches(self.index.unknown_ends(section.number), self.batch):
                names = {name for _, source, target, _ in unknown for name in (source, target)}
                named = self.index.first_lines(section.number, names)
                found: set[str] = set()
                if memory is not None:
                    with memory.views.read() as graph:
                        found = {n for n in names - named.keys() if graph.entity(section.workspace, n) is not None}
                lines = []
                for line, source, target, kind in unknown:
                    missing = [n for n in (source, target) if n not in named and n not in found]
                    if missing:
                        said = " and ".join(repr(n) for n in missing)
                        problem = Problem(line, "a relation whose end is in neither the file nor the store",
                                          f"{source} -[{kind}]-> {target}: no entity {said}")
                        self.problems.add(_in(section, problem) if section.named else problem)
                        lines.append(line)
                self.index.drop_relations(section.number, lines)
                dropped += len(lines)
            self.index.drop_noted()
            section.relations -= dropped

    # --- the writing pass --------------------------------------------------------------------

    def write(self, memory: Memory) -> list[tuple[str, ImportReport]]:
        """Write what the survey checked into `memory`, a batch per transaction; the report of
        each workspace the file holds something for.

        A crash mid-import leaves whole batches; importing again completes it.

        Raises:
            OSError: If the file cannot be read again.
            ChronographError: If the store refuses a batch (the batches before it stay).
        """
        writer = _Writer(self, memory)
        bad = self.index.bad_entities()
        refused = next(bad, None)
        for item in records(self.path, None):
            if isinstance(item, int):
                continue
            if isinstance(item, str):
                writer.flush()
                writer.section = self.sections[item]
                continue
            number, record = item
            if not isinstance(record, dict) or record.get("type") != "entity":
                continue
            if refused == (writer.section.number, number):
                refused = next(bad, None)
                continue
            writer.take(number, record)
        writer.flush()
        reports = []
        for section in self.sections.values():
            if section.empty:
                continue
            writer.section = section
            writer.relations()
            report = writer.report
            report.skipped = (section.entities - report.created - report.conflicted) + (
                section.relations - report.related)
            if section.context and _context_changes(memory, section):
                writer.call("update_context", section.context)
                report.context = True
            reports.append((section.workspace, report))
        return reports


class _Writer:
    """The writing pass: entities a batch at a time in file order, then each section's relations."""

    def __init__(self, job: FileImport, memory: Memory) -> None:
        self.job = job
        self.memory = memory
        self.correlation = os.urandom(16).hex()
        self.section = job.sections[""]
        self.reports = {number: ImportReport() for number in range(len(job.sections))}
        self.entries: dict[str, dict[str, Any]] = {}
        self.lines_of: dict[str, int] = {}
        self.again: list[dict[str, Any]] = []
        """Later lines of names an earlier batch wrote: their observations are merged"""
        self.written = 0
        self.total = sum(section.entities for section in job.sections.values())
        self.empty = memory.log.head() == 0  # nothing stored: no name needs looking up

    @property
    def report(self) -> ImportReport:
        return self.reports[self.section.number]

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        return self.memory.write(tool, {**arguments, "workspace": self.section.workspace}, actor=self.job.actor,
                                 correlation_id=self.correlation).output

    def take(self, number: int, record: dict[str, Any]) -> None:
        entry = entity_entry(number, record, checked=True)
        assert not isinstance(entry, Problem)  # the survey checked it
        name = entry["name"]
        known = self.entries.get(name)
        if known is not None:  # the same name twice in one batch: one entity, every observation
            known["observations"] += [o for o in entry["observations"] if o not in known["observations"]]
        else:
            self.entries[name] = entry
            self.lines_of[name] = number
        self.job.held = max(self.job.held, len(self.entries) + len(self.again))
        if len(self.entries) + len(self.again) >= self.job.batch:
            self.flush()

    def flush(self) -> None:
        """Write the batch held: new entities, merges into stored ones, observations with a valid time."""
        if not self.entries and not self.again:
            return
        section, report, step = self.section, self.report, self.job.batch
        first = self.job.index.first_lines(section.number, self.entries)
        for name in [n for n in self.entries if first.get(n, self.lines_of[n]) != self.lines_of[n]]:
            self.again.append({"entityName": name, "contents": self.entries.pop(name)["observations"]})
        stored = {} if self.empty else self._stored_types()
        new = [_without(entry) for name, entry in self.entries.items() if name not in stored]
        for start in range(0, len(new), step):
            report.created += len(self.call("create_entities", {"entities": new[start : start + step]}).entities)
        report.observations += sum(len(entry["observations"]) for entry in new)
        existing = sorted(name for name in self.entries if name in stored)
        merges = [{"entityName": n, "contents": _without(self.entries[n])["observations"]} for n in existing]
        added_to: dict[str, int] = {}
        for start in range(0, len(merges), step):
            for result in self.call("add_observations", {"observations": merges[start : start + step]}).results:
                added_to[result.entity_name] = len(result.added_observations)
        report.observations += sum(added_to.values())
        for spans in (_spanned(self.entries), self.again):
            for start in range(0, len(spans), step):
                for result in self.call("add_observations", {"observations": spans[start : start + step]}).results:
                    report.observations += len(result.added_observations)
        for name in existing:
            theirs = self.entries[name]["entityType"]
            if theirs != stored[name]:
                report.conflict(
                    f"line {self.lines_of[name]}: {name!r} is a {theirs!r} in the file and a {stored[name]!r} in "
                    f"the store; kept {stored[name]!r}, merged {added_to.get(name, 0)} new observation(s)")
        self._report_kept_metadata(existing)
        resident.release(MAPPED)  # the store's pages batches read leave the import's RSS (see resident)
        self.written += len(self.entries) + len(self.again)
        if self.job.progress is not None:
            self.job.progress("entities", min(self.written, self.total), self.total)
        self.entries, self.lines_of, self.again = {}, {}, []

    def _stored_types(self) -> dict[str, str]:
        """name -> type of the batch's entities the store holds."""
        with self.memory.views.read() as graph:
            return {name: entity.entity_type for name in self.entries
                    if (entity := graph.entity(self.section.workspace, name)) is not None}

    def _report_kept_metadata(self, existing: list[str]) -> None:
        """Say where the store keeps its metadata instead of the file's."""
        with self.memory.views.read() as graph:
            for name in existing:
                theirs = self.entries[name].get("metadata")
                entity = graph.entity(self.section.workspace, name)
                if theirs and entity is not None and entity.metadata != theirs:
                    self.report.conflict(f"line {self.lines_of[name]}: {name!r} has other metadata in the store; "
                                         "kept the store's (update_entities replaces it)")

    def relations(self) -> None:
        """Write the section's relations, a batch at a time in line order."""
        section, report = self.section, self.report
        done = 0
        for rows in self.job.index.relation_batches(section.number, self.job.batch):
            self.job.held = max(self.job.held, len(rows))
            with self.memory.views.read() as graph:
                for line, source, target, kind, fields in rows:
                    if not fields:
                        continue
                    relation = graph.relation(section.workspace, source, kind, target)
                    if relation is not None and any(getattr(relation, k) != v for k, v in fields.items()):
                        report.conflict(f"line {line}: relation {source} -[{kind}]-> {target} exists with another "
                                        "confidence or metadata; kept the store's")
            relations = [{"from": s, "to": t, "relationType": k, **fields} for _, s, t, k, fields in rows]
            report.related += len(self.call("create_relations", {"relations": relations}).relations)
            resident.release(MAPPED)
            done += len(rows)
            if self.job.progress is not None:
                self.job.progress("relations", done, section.relations)


def _checked(pending: list[tuple[int, dict[str, Any]]], key: str, into: type[Any],
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


def _entity_body(record: dict[str, Any]) -> dict[str, Any] | None:
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


def _relation_body(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "type" and k not in FORK_FIELDS}


def _relation(number: int, record: dict[str, Any]) -> Any:
    """One relation parsed, or its problem."""
    try:
        [relation] = parse("import", {"relations": [_relation_body(record)]}, CreateRelations).relations
    except InvalidArgumentsError as error:
        return _invalid(number, "relation", error.problem.removeprefix("relations[0]"))
    return relation


def _noted(number: int, relation: Any) -> Noted:
    """A parsed relation as the index notes it."""
    extra = {"confidence": relation.confidence, "metadata": relation.metadata,
             "validFrom": relation.valid_from, "validUntil": relation.valid_until}
    kept = {k: v for k, v in extra.items() if v is not UNSET and v is not None}
    return (relation.source, relation.target, relation.relation_type), number, kept


def _batches(rows: Iterator[T], size: int) -> Iterator[list[T]]:
    """`rows`, `size` at a time."""
    while chunk := list(itertools.islice(rows, size)):
        yield chunk


def entity_entry(number: int, record: dict[str, Any], *, checked: bool = False) -> dict[str, Any] | Problem:
    """The entity a record holds, as create_entities takes it (with its `validity`), or its problem.

    `checked`: the record passed before, so the tool's parser, which the write runs, need not run twice.
    """
    body = _entity_body(record)
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
            return _invalid(number, "entity", error.problem.removeprefix("entities[0]"))
        name, kind, observations, metadata = item.name, item.entity_type, item.observations, item.metadata
    entry: dict[str, Any] = {"name": name, "entityType": kind, "observations": list(observations)}
    if metadata:
        entry["metadata"] = metadata
    if spans:
        entry["validity"] = {o: s for o, s in spans.items() if o in observations}
    return entry


def _context_changes(memory: Memory, section: Section) -> bool:
    """Whether the file's context changes the workspace's (merging the same fields again writes
    nothing, so that a second import writes no event)."""
    with memory.views.read() as graph:
        current = graph.context(section.workspace)
    if current is None:
        return True
    given = parse("import", dict(section.context or {}), UpdateContext)
    for field_name in current.FIELDS:
        value = getattr(given, field_name)
        if value is not UNSET and (tuple(value) if isinstance(value, list) else value) != getattr(current, field_name):
            return True
    return False


def _in(section: Section, problem: Problem) -> Problem:
    """A section's problem, said by the plan of the whole file."""
    return Problem(problem.line, f"workspace {section.workspace!r}: {problem.kind}", problem.detail,
                   section.number)


def _invalid(number: int, what: str, problem: str) -> Problem:
    """A record the tool's own parser refused: the kind is its message with the item's indexes
    left out (`observations[3]` and `observations[0]` are one kind), the detail the message."""
    text = problem.lstrip(".: ")
    kind = re.sub(r"\[\d+\]", "[]", text)
    return Problem(number, f"{what}{' ' if problem.startswith('.') else ': '}{kind}", text if kind != text else "")


def _without(entry: dict[str, Any]) -> dict[str, Any]:
    """The entity as create_entities takes it, without the observations that carry a valid time."""
    spans = entry.get("validity") or {}
    shown = {k: v for k, v in entry.items() if k != "validity"}
    shown["observations"] = [o for o in entry["observations"] if o not in spans]
    return shown


def _spanned(entries: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """add_observations items for the observations with a valid time, one per entity and span."""
    items: dict[tuple[str, str | None, str | None], list[str]] = {}
    for name, entry in entries.items():
        for observation, span in (entry.get("validity") or {}).items():
            items.setdefault((name, span.get("validFrom"), span.get("validUntil")), []).append(observation)
    return [{"entityName": name, "contents": contents,
             **({"validFrom": start} if start else {}), **({"validUntil": end} if end else {})}
            for (name, start, end), contents in items.items()]

