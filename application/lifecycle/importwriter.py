"""The writing pass of an import: what the survey checked, written a batch per transaction.

Entities are written a batch at a time in file order (new ones created, stored ones given the
observations they lack, observations with a valid time added with it; a name met again in a
later batch is merged into the entity the earlier batch created), then each workspace's
relations from the import's index, a batch at a time in line order. What the store keeps
instead of the file's (a type, metadata, a relation's confidence) is counted as a conflict.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chronograph.application.core.context import UpdateContext
from chronograph.application.core.validtime import span_of
from chronograph.application.engine.arguments import Args, Limits, parse
from chronograph.application.engine.service import Memory
from chronograph.application.errors import NotFoundError, SourceChangedError
from chronograph.application.lifecycle.importchecks import (
    FORK_FIELDS,
    ImportedEntities,
    ImportedObservations,
    entity_entry,
    in_section,
)
from chronograph.application.lifecycle.importrecords import Problem, Section
from chronograph.eventstore.lmdb import resident
from chronograph.projections import RelationRecord
from msgspec import UNSET

if TYPE_CHECKING:
    from chronograph.application.lifecycle.importing import FileImport

__all__ = ["KEPT_CONFLICTS", "MAPPED", "ImportReport", "Writer", "context_changes"]

IMPORTED = frozenset(FORK_FIELDS.values())
"""The metadata keys an import fills from a file's createdAt, version and updatedAt."""

MAPPED = 320 << 20
"""The store pages an import keeps resident before it gives them back (see `resident`): a thread
looks every 5 ms (`resident.bounded`), so the import's peak is about this plus its own ~100 MB.
Every time they are given back, the pages it reads most (the trees' upper levels) are read
again: a million entities' import peaked at 487 MB for 23% more CPU at 192 MB, at 484 MB for
12% more at 320 (700 MB when they were given back only between batches)."""
ITEMS = ("entities", "observations", "relations")
"""The lists of the tool calls a batch makes, whose items the survey checked."""
CHECKED_AS: dict[str, type[Args]] = {"create_entities": ImportedEntities, "add_observations": ImportedObservations}
"""The tools whose items an import writes as the store holds them, not as a tool call carries them
(an entity's type and observations of any length: see `importchecks`)."""
KEPT_CONFLICTS = 100
"""Conflicts an import keeps the words of (it counts them all)."""


@dataclass
class ImportReport:
    """What an import did in one workspace."""

    created: int = 0
    related: int = 0
    observations: int = 0
    """Observations written (new ones, or ones an entity lacked)"""
    skipped: int = 0
    unwritten: int = 0
    """The file's observations not written: repeated in the file, or held by their entity already"""
    repeated: int = 0
    """Relation lines that repeat an earlier line's relation (it is written once)"""
    conflicts: list[str] = field(default_factory=list)
    """The first `KEPT_CONFLICTS` conflicts: entities whose type in the file differs from the
    stored one (kept), with what was merged; metadata or confidence the store keeps instead."""
    conflicted: int = 0
    """How many conflicts there were"""
    retyped: int = 0
    """Of them, later lines that gave an entity of the file another type (the first line's is kept):
    conflicts within the file, not entities the store held"""
    merged: int = 0
    """Of them, entities the store held under another type that were given new observations (so
    not skipped)"""
    context: bool = False
    """Whether the file's context was merged into the workspace's"""

    def conflict(self, text: str) -> None:
        """Count a conflict, keeping its words while there are few."""
        self.conflicted += 1
        if len(self.conflicts) < KEPT_CONFLICTS:
            self.conflicts.append(text)


class Writer:
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
        self.given = [0] * len(job.sections)
        """Observations of each section's entity lines (what was not written of them: `ImportReport.unwritten`)"""
        self.total = sum(section.entities for section in job.sections.values())
        self.empty = memory.log.head() == 0  # nothing stored: no name needs looking up

    @property
    def report(self) -> ImportReport:
        return self.reports[self.section.number]

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """`tool`'s output for `arguments`; the items of the list a batch writes (entities,
        observations, relations) are what the survey checked with the tools' parsers."""
        items = next((key for key in ITEMS if key in arguments), None)
        return self.memory.write(tool, {**arguments, "workspace": self.section.workspace}, actor=self.job.actor,
                                 correlation_id=self.correlation, checked=items,
                                 checked_as=CHECKED_AS.get(tool)).output

    def take(self, number: int, record: dict[str, Any]) -> None:
        try:
            entry: dict[str, Any] | Problem | None = entity_entry(number, record, checked=True)
        except (KeyError, TypeError, AttributeError):
            entry = None
        if entry is None or isinstance(entry, Problem):  # the survey checked the line: the file changed since
            raise SourceChangedError(self.job.path, self.written > 0)
        name = entry["name"]
        self.given[self.section.number] += len(entry["observations"])
        known = self.entries.get(name)
        if known is not None and known["entityType"] != entry["entityType"]:
            self._retyped(number, name, entry["entityType"], known["entityType"], self.lines_of[name])
        if known is not None:  # the same name twice in one batch: one entity, every observation, with its span
            held = set(known["observations"])
            added = [o for o in entry["observations"] if o not in held]
            known["observations"] += added
            spans = entry.get("validity") or {}
            if any(o in spans for o in added):
                known["validity"] = {**known.get("validity", {}), **{o: spans[o] for o in added if o in spans}}
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
        self.job.unchanged(written=self.written > 0)  # what the batch holds is what the survey checked
        self.memory.catch_up()  # what it looks up is read as other servers left it (see `Memory.catch_up`)
        section, report, step = self.section, self.report, self.job.batch
        first = self.job.index.first_lines(section.number, self.entries)
        later = {n: self.entries.pop(n) for n in [n for n in self.entries
                                                  if first.get(n, self.lines_of[n]) != self.lines_of[n]]}
        self.again += [item for name, entry in later.items() for item in runs(name, entry, 0)]
        if later:  # names an earlier batch wrote: a later line may give them another type
            with self.memory.views.read() as graph:
                for name, entry in later.items():
                    entity = graph.entity(section.workspace, name)
                    if entity is not None and entity.entity_type != entry["entityType"]:
                        self._retyped(self.lines_of[name], name, entry["entityType"], entity.entity_type, first[name])
        stored = {} if self.empty else self._stored_types(self.entries)
        new = [without(entry) for name, entry in self.entries.items() if name not in stored]
        created: set[str] = set()
        for start in range(0, len(new), step):
            made = self.call("create_entities", {"entities": new[start : start + step]}).entities
            created.update(entity.name for entity in made)
            report.observations += sum(len(entity.observations) for entity in made)  # stored once each; the rest: below
        report.created += len(created)
        # Names another process made since the store was read (create_entities skips them): merged as stored ones
        raced = [e["name"] for e in new if e["name"] not in created]
        found = self._stored_types(raced)
        stored |= found
        self._left([name for name in raced if name not in found])  # made and removed again meanwhile
        existing = sorted(name for name in self.entries if name in stored)
        merges = [{"entityName": n, "contents": without(self.entries[n])["observations"]} for n in existing]
        added_to: dict[str, int] = {}
        for start in range(0, len(merges), step):
            for result in self._add_observations(merges[start : start + step]):
                added_to[result.entity_name] = len(result.added_observations)
        report.observations += sum(added_to.values())
        for spans in (spanned(self.entries), self.again):
            for start in range(0, len(spans), step):
                for result in self._add_observations(spans[start : start + step]):
                    report.observations += len(result.added_observations)
        for name in existing:
            theirs = self.entries[name]["entityType"]
            if theirs != stored[name]:
                if added_to.get(name):
                    report.merged += 1
                report.conflict(
                    f"line {self.lines_of[name]}: {name!r} is a {theirs!r} in the file and a {stored[name]!r} in "
                    f"the store; kept {stored[name]!r}, merged {added_to.get(name, 0)} new observation(s)")
        self._report_kept_metadata(existing)
        resident.release(MAPPED)  # the store's pages batches read leave the import's RSS (see resident)
        self.written += len(self.entries) + len(self.again)
        if self.job.progress is not None:
            self.job.progress("entities", min(self.written, self.total), self.total)
        self.entries, self.lines_of, self.again = {}, {}, []

    def _add_observations(self, items: list[dict[str, Any]]) -> list[Any]:
        """add_observations' results for `items`, less the texts their entities hold already. An
        entity another process deleted or forgot since this import met it is a problem of its line,
        and the rest is written (with `strict`, the import stops there)."""
        items = self._lacking(items)
        while items:
            try:
                return list(self.call("add_observations", {"observations": items}).results)
            except NotFoundError:
                self.memory.catch_up()  # the views as the log stands: the refused write's catch-up went with it
                workspace = self.section.workspace
                with self.memory.views.read() as graph:
                    gone = {i["entityName"] for i in items if graph.entity(workspace, i["entityName"]) is None}
                if self.job.strict or not gone:
                    raise  # not an entity gone (or the import is strict): the batch's own refusal
                self._left(sorted(gone))
                items = [i for i in items if i["entityName"] not in gone]
        return []

    def _lacking(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`items` with only the texts their entities lack: one an entity holds, though its valid
        time ended (it was invalidated), is not lacking. add_observations would state such a text
        true again, as an agent saying it again means; a file merged into the memory does not
        undo what the memory was told since (importing an export taken before an invalidation
        brings nothing back)."""
        workspace, kept = self.section.workspace, []
        with self.memory.views.read() as graph:
            for item in items:
                entity = graph.entity(workspace, item["entityName"])
                held = set(entity.observations) if entity is not None else set()
                contents = [text for text in item["contents"] if text not in held]
                if contents:
                    kept.append({**item, "contents": contents})
        return kept

    def _left(self, names: list[str]) -> None:
        """Record `names`, entities that left the store during the import, as problems of their lines
        (with `strict`, the import stops there).

        Raises:
            NotFoundError: With `strict`, if there is one.
        """
        if names and self.job.strict:
            raise NotFoundError(f"{names[0]!r} left the store during the import (another process removed it)")
        for name in sorted(names):
            self._problem(self.lines_of.get(name, 0), "an entity that left the store during the import",
                          f"{name!r}: its observations of this line were not added")

    def _problem(self, line: int, kind: str, detail: str) -> None:
        self.job.problems.add(in_section(self.section, Problem(line, kind, detail)))

    def _retyped(self, line: int, name: str, theirs: str, kept: str, first: int) -> None:
        self.report.conflict(f"line {line}: {name!r} is a {theirs!r} there and a {kept!r} on line {first}; kept "
                             f"{kept!r}, merged its observations")
        self.report.retyped += 1

    def _stored_types(self, names: Iterable[str]) -> dict[str, str]:
        """name -> type of those of `names` the store holds."""
        with self.memory.views.read() as graph:
            return {name: entity.entity_type for name in names
                    if (entity := graph.entity(self.section.workspace, name)) is not None}

    def _report_kept_metadata(self, existing: list[str]) -> None:
        """Say where the store keeps its metadata instead of the file's."""
        with self.memory.views.read() as graph:
            for name in existing:
                theirs = self.entries[name].get("metadata") or {}
                entity = graph.entity(self.section.workspace, name)
                if entity is None:
                    continue
                ours = entity.metadata or {}
                # where the file came from (importedVersion, ...) is no other metadata of an entity that has none
                theirs = {k: v for k, v in theirs.items() if k in ours or k not in IMPORTED}
                if theirs and ours != theirs:
                    self.report.conflict(f"line {self.lines_of[name]}: {name!r} has other metadata in the store; "
                                         "kept the store's (update_entities replaces it)")

    def relations(self) -> None:
        """Write the section's relations, a batch at a time in line order."""
        section, report = self.section, self.report
        done = 0
        for rows in self.job.index.relation_batches(section.number, self.job.batch):
            self.job.held = max(self.job.held, len(rows))
            self.memory.catch_up()
            with self.memory.views.read() as graph:
                for line, source, target, kind, fields in rows:
                    if not fields:
                        continue
                    relation = graph.relation(section.workspace, source, kind, target)
                    if relation is not None and kept_otherwise(relation, fields):
                        report.conflict(f"line {line}: relation {source} -[{kind}]-> {target} exists with another "
                                        "confidence, metadata or valid time; kept the store's")
            report.related += self._create_relations(rows)
            resident.release(MAPPED)
            done += len(rows)
            if self.job.progress is not None:
                self.job.progress("relations", done, section.relations)


    def _create_relations(self, rows: list[Any]) -> int:
        """Write a batch of relations; return how many were new. Their ends were checked before
        the first write: one that another process deleted or forgot since is a problem of its
        line, and the rest of the batch is written (with `strict`, the import stops there)."""
        while rows:
            relations = [{"from": s, "to": t, "relationType": k, **fields} for _, s, t, k, fields in rows]
            try:
                return len(self.call("create_relations", {"relations": relations}).relations)
            except NotFoundError:
                self.memory.catch_up()  # (as in `_add_observations`)
                left = self._ends_kept(rows)
                if self.job.strict or len(left) == len(rows):
                    raise  # not an end gone (or the import is strict): the batch's own refusal
                rows = left
        return 0

    def _ends_kept(self, rows: list[Any]) -> list[Any]:
        """`rows` whose ends the store holds; the others are said as problems of their lines."""
        section, kept = self.section, []
        with self.memory.views.read() as graph:
            for row in rows:
                line, source, target, kind, _ = row
                gone = [n for n in dict.fromkeys((source, target)) if graph.entity(section.workspace, n) is None]
                if not gone:
                    kept.append(row)
                    continue
                said = " and ".join(repr(n) for n in gone)
                self._problem(line, "a relation whose end left the store during the import",
                              f"{source} -[{kind}]-> {target}: no entity {said} any more")
                section.relations -= 1  # not written, and not "already present" either
        return kept


def context_changes(memory: Memory, section: Section) -> bool:
    """Whether the file's context changes the workspace's (merging the same fields again writes
    nothing, so that a second import writes no event)."""
    memory.catch_up()
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


def without(entry: dict[str, Any]) -> dict[str, Any]:
    """The entity as create_entities takes it: its observations before the first that carries a
    valid time, at most as many as one item may hold (`spanned` adds the rest, in order)."""
    shown = {k: v for k, v in entry.items() if k != "validity"}
    shown["observations"] = entry["observations"][: _first_spanned(entry)]
    return shown


def spanned(entries: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """add_observations items for each entity's observations that `without` leaves out, in their order."""
    return [item for name, entry in entries.items() for item in runs(name, entry, _first_spanned(entry))]


def runs(name: str, entry: dict[str, Any], start: int) -> list[dict[str, Any]]:
    """add_observations items for `entry`'s observations from `start` on, in their order: one item
    a run of observations with the same span (or none), of at most `Limits.OBSERVATIONS` (a name
    met on many lines merges into one entity of any size)."""
    spans = entry.get("validity") or {}
    items: list[dict[str, Any]] = []
    run: list[str] = []
    span: tuple[str | None, str | None] = (None, None)
    for observation in entry["observations"][start:]:
        given = spans.get(observation) or {}
        this = (given.get("validFrom"), given.get("validUntil"))
        if run and (this != span or len(run) == Limits.OBSERVATIONS):
            items.append(_item(name, run, span))
            run = []
        span = this
        run.append(observation)
    if run:
        items.append(_item(name, run, span))
    return items


def _first_spanned(entry: dict[str, Any]) -> int:
    spans = entry.get("validity") or {}
    observations = entry["observations"]
    first = next((i for i, o in enumerate(observations) if o in spans), len(observations))
    return min(first, Limits.OBSERVATIONS)


def kept_otherwise(relation: RelationRecord, fields: dict[str, Any]) -> bool:
    """Whether the store's `relation` says another confidence, metadata or valid time than a
    line's `fields` (as the import's index notes them: by their names in the file)."""
    start, end = span_of("import", "", fields.get("validFrom", UNSET), fields.get("validUntil", UNSET))
    stored = {"confidence": relation.confidence, "metadata": relation.metadata, "validFrom": relation.valid_from,
              "validUntil": relation.valid_until}
    given = {**fields, "validFrom": start, "validUntil": end}
    return any(value is not UNSET and stored[key] != value for key, value in given.items() if key in stored)


def _item(name: str, contents: list[str], span: tuple[str | None, str | None]) -> dict[str, Any]:
    start, end = span
    return {"entityName": name, "contents": contents,
            **({"validFrom": start} if start else {}), **({"validUntil": end} if end else {})}
