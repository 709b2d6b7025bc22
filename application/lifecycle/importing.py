"""Importing a memory file of the official server (or the itseasy21 fork): checked, then written,
a batch at a time.

Everything becomes ordinary events under one correlation id. Importing the same file
again changes nothing: existing entities only gain observations they lack, existing
relations are skipped. The fork's createdAt/version are kept in each entity's metadata
(importedCreatedAt, importedVersion). Bad lines are reported with their line numbers,
relations whose ends exist nowhere are reported, not dropped in silence, and an entity
whose type differs from the stored one is reported as a conflict (the stored type is
kept, the observations are merged).

A JSONL file is streamed, never held: `FileImport.survey` reads it once to check every line (with
the tools' own parsers: `importchecks`) and
note, on disk (`importindex`), each name's and each relation's first line; `check_ends` finds the
relations whose ends are neither in the file nor in the store; only then does `write` read it
again and write it in batches of `Limits.ITEMS` (the entities, a batch at a time in file order,
then the relations from the index: `importwriter`), so nothing is written before the whole file has been checked
(`--strict` refuses it whole) and the import holds one batch at a time whatever the file's size.
A legacy JSON document (one JSON value) is parsed whole, as it must be, then the same way.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from chronograph.application.core.context import UpdateContext
from chronograph.application.core.relations import CreateRelations
from chronograph.application.engine.arguments import Limits, WriteArgs, parse
from chronograph.application.engine.service import Memory
from chronograph.application.errors import (
    ChronographError,
    ImportStoppedError,
    InvalidArgumentsError,
    SourceChangedError,
)
from chronograph.application.lifecycle.importchecks import (
    ENTITY_FIELDS,
    RELATION_FIELDS,
    ImportedEntities,
    as_noted,
    checked,
    entity_body,
    entity_entry,
    in_section,
    invalid,
    parsed_relation,
    relation_body,
    unknown_fields,
    untimely_entity,
    untimely_relation,
)
from chronograph.application.lifecycle.importindex import FileIndex
from chronograph.application.lifecycle.importrecords import NOT_JSON, Problem, Problems, Section, records
from chronograph.application.lifecycle.importwriter import MAPPED, ImportReport, Writer, context_changes
from chronograph.eventstore.lmdb import resident

__all__ = ["ACTOR", "NOT_JSON", "FileImport", "ImportReport", "Problem", "Problems"]

ACTOR = "import"
Progress = Callable[[str, int, int], None]
T = TypeVar("T")


class FileImport:
    """One import of one file into one store: `survey`, `check_ends`, then `write`.

    `batch` is the most items it holds and writes at once (one write transaction each);
    `held` the most entity entries it ever held at once (for tests of its memory).
    """

    def __init__(self, path: Path, workspace: str, *, batch: int = Limits.ITEMS,
                 progress: Progress | None = None, actor: str = ACTOR, strict: bool = False) -> None:
        self.path = path
        self.strict = strict
        """Whether the import stops, rather than skips a relation, when an end it checked leaves the
        store before the relation is written (another process deleted or forgot it)"""
        self.actor = actor
        """Who the events are recorded as (`import`, or `import:<format>` for another server's memory)"""
        self.batch = batch
        self.progress = progress
        self.sections: dict[str, Section] = {"": Section(0, workspace)}
        self.problems = Problems()
        self.lines = 0
        """Its lines that are not blank (its records, for a JSON document)"""
        self.index = FileIndex()
        self.ignored: dict[str, int] = {}
        """Fields the format does not name -> how many lines had it (ignored, as the official server does)"""
        self.held = 0
        self._read_as: tuple[int, ...] | None = None
        """The file's identity when the survey began (device, inode, size, modification time)."""

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
        self._read_as = _identity(self.path)
        entities: list[tuple[int, dict[str, Any]]] = []
        relations: list[tuple[int, dict[str, Any]]] = []
        current = self.sections[""]

        def flush() -> None:
            names, bad, refused = [], [], []
            bodies = [entity_body(record) for _, record in entities]
            links: list[dict[str, Any] | None] = [relation_body(record) for _, record in relations]
            for field in [*unknown_fields(entities, bodies, ENTITY_FIELDS),
                          *unknown_fields(relations, links, RELATION_FIELDS)]:
                self.ignored[field] = self.ignored.get(field, 0) + 1
            for (number, record), entry in zip(entities, checked(entities, bodies, "entities", ImportedEntities,
                                                                   entity_entry), strict=True):
                if not isinstance(entry, Problem) and "validity" in record:
                    entry = untimely_entity(number, record) or entry
                if isinstance(entry, Problem):
                    self.problems.add(entry)
                    bad.append((current.number, number))
                    if isinstance(record.get("name"), str):
                        refused.append((record["name"], number))
                else:
                    names.append((entry["name"] if isinstance(entry, dict) else entry.name, number))
            noted = []
            for (number, _), relation in zip(relations, checked(relations, links, "relations", CreateRelations,
                                                                  parsed_relation), strict=True):
                if not isinstance(relation, Problem):
                    relation = untimely_relation(number, relation) or relation
                if isinstance(relation, Problem):
                    self.problems.add(relation)
                else:
                    noted.append(as_noted(number, relation))
            current.repeated += len(noted)  # less the distinct ones, once the survey has noted them all
            self.index.add_entities(current.number, names)
            self.index.add_relations(current.number, noted)
            self.index.add_bad(bad)
            self.index.add_refused(current.number, refused)
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
            section.repeated -= section.relations

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
            return invalid(number, "context", error.problem)
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
                refused = self.index.refused(section.number, names - named.keys() - found)
                lines = []
                for line, source, target, kind in unknown:
                    missing = [n for n in dict.fromkeys((source, target)) if n not in named and n not in found]
                    if not missing:
                        continue
                    if any(n in refused for n in missing):  # the file has it, on a line the check refused
                        said = " and ".join(f"{n!r} (line {refused[n]})" if n in refused else f"{n!r} (nowhere)"
                                            for n in missing)
                        problem = Problem(line, "a relation whose end the import refused",
                                          f"{source} -[{kind}]-> {target}: entity {said}")
                    else:
                        said = " and ".join(repr(n) for n in missing)
                        problem = Problem(line, "a relation whose end is in neither the file nor the store",
                                          f"{source} -[{kind}]-> {target}: no entity {said}")
                    self.problems.add(in_section(section, problem))
                    lines.append(line)
                self.index.drop_relations(section.number, lines)
                dropped += len(lines)
            self.index.drop_noted()
            section.relations -= dropped

    def present(self, memory: Memory, section: Section) -> tuple[int, int]:
        """How many of the section's entities and relations `memory`'s store holds already (an
        import skips them, adding only the observations they lack)."""
        entities = relations = 0
        for names in self.index.names(section.number, self.batch):
            with memory.views.read() as graph:
                entities += sum(graph.entity(section.workspace, name) is not None for name in names)
        for rows in self.index.relation_batches(section.number, self.batch):
            with memory.views.read() as graph:
                relations += sum(graph.relation(section.workspace, s, k, t) is not None for _, s, t, k, _ in rows)
        return entities, relations

    # --- the writing pass --------------------------------------------------------------------

    def write(self, memory: Memory) -> list[tuple[str, ImportReport]]:
        """Write what the survey checked into `memory`, a batch per transaction; the report of
        each workspace the file holds something for.

        A crash mid-import leaves whole batches; importing again completes it.

        Raises:
            OSError: If the file cannot be read again.
            InvalidArgumentsError: If a workspace the file names is no workspace name (blank, with
                NUL or an unpaired surrogate...); nothing was written.
            ChronographError: If the store refuses a batch (the batches before it stay).
        """
        self.check_workspaces()
        self.unchanged(written=False)
        writer = Writer(self, memory)
        try:
            with resident.bounded(MAPPED):  # a batch's random reads fault in store pages faster than batches end
                return self._write(memory, writer)
        except SourceChangedError:
            raise  # it says what stays
        except ChronographError as error:
            reports = writer.reports.values()
            created, related = sum(r.created for r in reports), sum(r.related for r in reports)
            if not (created or related or any(r.observations or r.context for r in reports)):
                raise
            raise ImportStoppedError(  # its words were the batch's: "nothing was written"
                f"{error} (in the batch it met; the batches before it stay: {created} entities, {related} relations "
                f"and {sum(r.observations for r in reports)} observations of this file are stored). Import the file "
                "again once that is fixed: what the store holds already is skipped", error) from error

    def check_workspaces(self) -> None:
        """Refuse a file naming a workspace no tool takes (before anything, a store included, is made).

        Raises:
            InvalidArgumentsError: Naming it (blank, too long, with NUL or an unpaired surrogate...).
        """
        for section in self.sections.values():
            parse("import", {"workspace": section.workspace}, WriteArgs)

    def unchanged(self, *, written: bool) -> None:
        """Raise SourceChangedError if the file is not the one the survey read (`written`: some of
        it is stored). A file changed and changed back within its clock's step goes unseen.

        Raises:
            OSError: If it cannot be looked at.
        """
        if self._read_as is not None and _identity(self.path) != self._read_as:
            raise SourceChangedError(self.path, written)

    def _write(self, memory: Memory, writer: Writer) -> list[tuple[str, ImportReport]]:
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
        self.unchanged(written=True)  # the entities written are the ones checked
        reports = []
        for section in self.sections.values():
            if section.empty:
                continue
            writer.section = section
            writer.relations()
            report = writer.report
            report.skipped = (section.entities - report.created - report.merged) + (section.relations - report.related)
            report.unwritten, report.repeated = writer.given[section.number] - report.observations, section.repeated
            if section.context and context_changes(memory, section):
                writer.call("update_context", section.context)
                report.context = True
            reports.append((section.workspace, report))
        return reports


def _identity(path: Path) -> tuple[int, ...]:
    found = path.stat()
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns


def _batches(rows: Iterator[T], size: int) -> Iterator[list[T]]:
    """`rows`, `size` at a time."""
    while chunk := list(itertools.islice(rows, size)):
        yield chunk
