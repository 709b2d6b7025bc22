"""What an imported file names, kept on disk while the import runs: memory stays flat.

An import reads its file twice (checking, then writing) and needs, across the whole file, to
know each entity name's first line (a name met again is the same entity: its observations are
merged), each relation's first line (a relation met again is one relation) and which relation
ends the file names at all. Held in dictionaries, that grew with the file (5 GB at a million
entities); here it is a SQLite database in a temporary folder, deleted when the import ends, whose
page cache is bounded (SQLite reads its file with `pread`, so nothing grows with the file but
the disk it takes, about the file's own size). The folder is named for its process: one whose
process is gone (killed) is deleted by the next import or forget (`sweep`), since it holds the
names of a file whose entities may since have been forgotten.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from functools import wraps
from inspect import isgeneratorfunction
from pathlib import Path
from typing import Any, TypeVar

from chronograph.application.errors import ScratchError
from chronograph.eventstore.files import sweep_orphans

__all__ = ["FileIndex", "sweep"]

CACHE_KIB = 16 * 1024
"""SQLite's page cache, the most the index keeps in memory."""
Noted = tuple[tuple[str, str, str], int, dict[str, Any]]
"""A relation as the check notes it: (from, to, type), its line, its confidence and metadata."""
_CHUNK = 500
"""Names per `IN (...)` query (SQLite allows 999 parameters by default)."""
_PREFIX = "chronograph-import-"


def sweep() -> int:
    """Delete the index folders of imports whose process is gone (killed before it could);
    return how many."""
    return sweep_orphans(Path(tempfile.gettempdir()), _PREFIX)


F = TypeVar("F", bound=Callable[..., Any])
_WHAT = "the import's index of names"


def _scratch(method: F) -> F:
    """`method`, raising `ScratchError` for what the temporary folder refuses (full, read-only,
    gone: SQLite's "database or disk is full" named no folder, and crashed the command)."""
    if isgeneratorfunction(method):
        @wraps(method)
        def walk(*args: Any, **kwargs: Any) -> Any:
            try:
                yield from method(*args, **kwargs)
            except (sqlite3.OperationalError, OSError) as error:
                raise ScratchError(_WHAT, error) from None

        return walk  # type: ignore[return-value]

    @wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except (sqlite3.OperationalError, OSError) as error:
            raise ScratchError(_WHAT, error) from None

    return run  # type: ignore[return-value]


class FileIndex:
    """Entity names and relations of one file, by workspace section (0: the import's own).

    Its methods raise `ScratchError` when the temporary folder cannot hold it."""

    @_scratch
    def __init__(self) -> None:
        with suppress(OSError):  # best effort
            sweep()
        self._folder = tempfile.TemporaryDirectory(prefix=f"{_PREFIX}{os.getpid()}-")
        self.db = sqlite3.connect(Path(self._folder.name) / "index.sqlite", isolation_level=None)
        for pragma in ("journal_mode = OFF", "synchronous = OFF", f"cache_size = -{CACHE_KIB}",
                       "temp_store = FILE", "locking_mode = EXCLUSIVE"):
            self.db.execute(f"PRAGMA {pragma}")
        self.db.execute("CREATE TABLE entities (section INTEGER, name TEXT, line INTEGER, "
                        "PRIMARY KEY (section, name)) WITHOUT ROWID")
        self.db.execute("CREATE TABLE relations (section INTEGER, source TEXT, kind TEXT, target TEXT, "
                        "line INTEGER, fields TEXT, PRIMARY KEY (section, source, kind, target)) WITHOUT ROWID")
        self.db.execute("CREATE TABLE dangling (section INTEGER, line INTEGER)")
        self.db.execute("CREATE TABLE bad (section INTEGER, line INTEGER)")  # in file order (rowid)
        self.db.execute("CREATE TABLE refused (section INTEGER, name TEXT, line INTEGER)")
        self.db.execute("BEGIN")

    def close(self) -> None:
        """Delete the index."""
        self.db.close()
        self._folder.cleanup()

    def __enter__(self) -> FileIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- filling it (the checking pass) ---------------------------------------------------

    @_scratch
    def add_entities(self, section: int, names: Iterable[tuple[str, int]]) -> None:
        """Note (name, line) pairs; a name already noted keeps its first line."""
        self.db.executemany("INSERT OR IGNORE INTO entities VALUES (?, ?, ?)",
                            [(section, name, line) for name, line in names])

    @_scratch
    def add_relations(self, section: int, relations: Iterable[Noted]) -> None:
        """Note ((from, to, type), line, fields) triples; a relation already noted keeps its first
        line, and the first fields any of its lines gave."""
        rows = [(section, s, k, t, line, json.dumps(fields) if fields else None)
                for (s, t, k), line, fields in relations]
        self.db.executemany("INSERT OR IGNORE INTO relations VALUES (?, ?, ?, ?, ?, ?)", rows)
        self.db.executemany("UPDATE relations SET fields = ? WHERE section = ? AND source = ? AND kind = ? "
                            "AND target = ? AND fields IS NULL",
                            [(fields, section, s, k, t) for section, s, k, t, _, fields in rows if fields])

    @_scratch
    def add_bad(self, lines: Iterable[tuple[int, int]]) -> None:
        """Note (section, line) of entity records the check refused, in file order."""
        self.db.executemany("INSERT INTO bad VALUES (?, ?)", list(lines))

    @_scratch
    def add_refused(self, section: int, names: Iterable[tuple[str, int]]) -> None:
        """Note (name, line) of entity records the check refused that name an entity."""
        self.db.executemany("INSERT INTO refused VALUES (?, ?, ?)", [(section, name, line) for name, line in names])

    @_scratch
    def finish(self) -> None:
        """End the filling: commit, and index relations by line for the writing pass."""
        self.db.execute("CREATE INDEX relations_by_line ON relations (section, line)")
        self.db.execute("COMMIT")

    # --- reading it -----------------------------------------------------------------------

    @_scratch
    def entities(self, section: int) -> int:
        """How many distinct entity names the section holds."""
        return int(self.db.execute("SELECT count(*) FROM entities WHERE section = ?", (section,)).fetchone()[0])

    @_scratch
    def relations(self, section: int) -> int:
        """How many distinct relations the section holds."""
        return int(self.db.execute("SELECT count(*) FROM relations WHERE section = ?", (section,)).fetchone()[0])

    @_scratch
    def first_lines(self, section: int, names: Iterable[str]) -> dict[str, int]:
        """name -> the line where the section first names it, for those of `names` it names."""
        found: dict[str, int] = {}
        wanted = list(dict.fromkeys(names))
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            found.update(self.db.execute(f"SELECT name, line FROM entities WHERE section = ? AND name IN ({marks})",
                                         (section, *chunk)))
        return found

    @_scratch
    def refused(self, section: int, names: Iterable[str]) -> dict[str, int]:
        """name -> the first line naming it that the check refused, for those of `names` it refused."""
        found: dict[str, int] = {}
        wanted = list(dict.fromkeys(names))
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for name, line in self.db.execute(f"SELECT name, min(line) FROM refused WHERE section = ? AND name IN "
                                              f"({marks}) GROUP BY name", (section, *chunk)):
                found[name] = line
        return found

    @_scratch
    def names(self, section: int, size: int) -> Iterator[list[str]]:
        """The section's entity names, `size` at a time."""
        rows = self.db.execute("SELECT name FROM entities WHERE section = ?", (section,))
        while chunk := rows.fetchmany(size):
            yield [name for (name,) in chunk]

    @_scratch
    def unknown_ends(self, section: int) -> Iterator[tuple[int, str, str, str]]:
        """(line, from, to, type) of the relations one of whose ends the section does not name
        as an entity, in line order (SQLite joins them; none come back when every end is there)."""
        yield from self.db.execute(
            "SELECT line, source, target, kind FROM relations r WHERE section = ?1 AND ("
            "NOT EXISTS (SELECT 1 FROM entities e WHERE e.section = ?1 AND e.name = r.source) OR "
            "NOT EXISTS (SELECT 1 FROM entities e WHERE e.section = ?1 AND e.name = r.target)) ORDER BY line",
            (section,))

    @_scratch
    def drop_relations(self, section: int, lines: Iterable[int]) -> None:
        """Forget the relations first met on `lines` (whose ends are nowhere), once `drop_noted` runs."""
        self.db.executemany("INSERT INTO dangling VALUES (?, ?)", [(section, line) for line in lines])

    @_scratch
    def drop_noted(self) -> None:
        """Forget the relations `drop_relations` noted."""
        self.db.execute("DELETE FROM relations WHERE (section, line) IN (SELECT section, line FROM dangling)")
        self.db.execute("DELETE FROM dangling")

    @_scratch
    def bad_entities(self) -> Iterator[tuple[int, int]]:
        """(section, line) of the entity records the check refused, in file order."""
        yield from self.db.execute("SELECT section, line FROM bad ORDER BY rowid")

    @_scratch
    def relation_batches(self, section: int, size: int) -> Iterator[list[tuple[int, str, str, str, dict[str, Any]]]]:
        """(line, from, to, type, fields) of the section's relations, in line order, `size` at a time."""
        last = -1
        while True:
            rows = self.db.execute("SELECT line, source, target, kind, fields FROM relations WHERE section = ? AND "
                                   "line > ? ORDER BY line LIMIT ?", (section, last, size)).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [(line, s, t, k, json.loads(fields) if fields else {}) for line, s, t, k, fields in rows]
