"""What `chronograph import` reads: the formats of the other memory servers, told apart by their
path, each read as the one record stream the streaming import takes.

A format is a `Source`: its name (what `--from` takes and the report's first line says), how it
recognises a path, and how it reads one. A graph source yields the official server's JSONL
records (`{"type": "entity"}`, `{"type": "relation"}`, `{"type": "context"}`, and
`{"type": "workspace", "name"}` before the records of a workspace other than the import's),
each with where in the source it is (`memory 12 (id 9f0c…)`, `note people/ada.md`);
`stage` streams them into a JSONL file in a temporary folder, which `FileImport` then checks and
writes as it does the official file: the same rules, the same batches, the same problems (a
record the tools refuse is reported and left out, the rest written, unless `--strict`), a second
import writing nothing. The problems and conflicts it reports name the source's records
(`Staged.where`), not the lines of the staged file, which nobody sees. A team source (Agent
Memory) writes through the team memory's own tools instead (`team` on the `Source`).

Provenance is the same for every format: its events are recorded as the actor
`import:<format>` (`includeProvenance` and `chronograph audit --actor` show it), and each entity a
graph source brings carries `importedFrom` (`<format>:<the source's real path>`) in its metadata.
The formats register themselves (`register`) from their own modules, so that a format read with
another room's reader (n2n's project files) lives beside that reader.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from chronograph.application.errors import InvalidArgumentsError, ScratchError
from chronograph.application.lifecycle.importrecords import records

__all__ = ["OFFICIAL", "SOURCES", "Placed", "Source", "SourceError", "Staged", "choose", "provenance", "register",
           "stage"]

Record = dict[str, Any]
Placed = tuple[str, Record]
"""A record, and where in its source it is (what a problem of it names; "" for a workspace record)"""


class SourceError(InvalidArgumentsError):
    """A path no format reads, or a source its format cannot read (damaged); nothing was written."""

    def __init__(self, message: str) -> None:
        super().__init__("import", message)

    def __str__(self) -> str:
        return self.problem


@dataclass(frozen=True)
class Source:
    """One format `chronograph import` reads."""

    name: str
    """What --from takes, and the report's first line names"""
    title: str
    """What it is, in a few words"""
    recognises: Callable[[Path], bool]
    """Whether a path is this format (looked at cheaply: a name, a header, a few bytes)"""
    read: Callable[[Path, str], Iterator[Placed]] | None = None
    """The records of a source (path, the import's workspace), each with where it is in the source;
    None: the path is read as it is"""
    team: Callable[..., Any] | None = None
    """For a source of the team memory: its import (see `from_agentmemory`)"""

    @property
    def actor(self) -> str:
        """Who its events are recorded as."""
        return "import" if self is OFFICIAL else f"import:{self.name}"


def _official(path: Path) -> bool:
    return path.is_file()


OFFICIAL = Source("official", "the official server's memory file (JSONL, or a JSON document)", _official)
SOURCES: dict[str, Source] = {}
"""Every format by name, in the order a path is tried (the official file last: any file)."""


def register(source: Source) -> Source:
    """Add a format (before the official file, which takes any file)."""
    SOURCES.pop(OFFICIAL.name, None)
    SOURCES[source.name] = source
    SOURCES[OFFICIAL.name] = OFFICIAL
    return source


register(OFFICIAL)


def choose(path: Path, forced: str | None = None) -> Source:
    """The format of `path`: `forced` (--from), else the first that recognises it.

    Raises:
        SourceError: If `forced` names no format, the path does not exist, or no format reads it.
    """
    if forced is not None:
        if forced not in SOURCES:
            raise SourceError(f"--from {forced!r}: no such format (one of {', '.join(SOURCES)})")
        if not path.exists():
            raise SourceError(f"{path} does not exist")
        return SOURCES[forced]
    if not path.exists():
        raise SourceError(f"{path} does not exist")
    for source in SOURCES.values():
        with contextlib.suppress(OSError):
            if source.recognises(path):
                return source
    raise SourceError(f"{path} is no memory this import reads (a folder that is neither an n2n project nor a "
                      f"basic-memory folder of notes, nor a Kuzu database); give --from one of {', '.join(SOURCES)}")


def provenance(source: Source, path: Path) -> str:
    """What an entity's `importedFrom` says: the format and the source's real path."""
    return f"{source.name}:{path.resolve()}"


@dataclass
class Counts:
    """What a workspace of a source holds, by kind."""

    entities: int = 0
    observations: int = 0
    relations: int = 0
    context: int = 0


@dataclass
class Staged:
    """A graph source streamed into a JSONL file the import reads (`path`), with what it holds."""

    path: Path
    counts: dict[str, Counts] = field(default_factory=dict)
    """Workspace -> what the source holds for it, as read (see `counted`)"""
    read: bool = True
    """Whether `counts` were taken as the source was read (not for the official file, read where it is)"""
    places: Path | None = None
    """Where in the source each record of `path` came from, a line each (JSON strings); None: `path`
    is the source itself, whose lines are its own"""

    def where(self, lines: Collection[int]) -> dict[int, str]:
        """Where in the source the records on `lines` of `path` came from: `line N` of the official
        file, what its format names for another (read from `places`, once, as far as the last)."""
        if self.places is None:
            return {line: f"line {line}" for line in lines}
        wanted, found = set(lines), {}
        last = max(wanted, default=0)
        with self.places.open("rb") as file:
            for number, raw in enumerate(file, start=1):
                if number > last:
                    break
                if number in wanted:
                    found[number] = msgspec.json.decode(raw)
        return {line: found.get(line) or "the source" for line in lines}

    def retold(self, texts: list[str]) -> list[str]:
        """`texts` (an import's conflicts, which name lines of `path`) naming the source's records instead."""
        if self.places is None:
            return texts
        places = self.where({int(m[1] or m[2]) for text in texts for m in _MENTION.finditer(text)})
        return [_MENTION.sub(lambda m: places[int(m[1])] if m[1] else f" in {places[int(m[2])]}", text)
                for text in texts]

    def counted(self, workspace: str) -> dict[str, Counts]:
        """What the source holds per workspace (the official file counted now, in one streamed pass:
        only a plan asks, so that an import of a large file reads it no more than it must)."""
        if not self.read:
            counts = self.counts.setdefault(workspace, Counts())
            for item in records(self.path):
                if isinstance(item, str):
                    counts = self.counts.setdefault(item, Counts())
                elif isinstance(item, tuple) and isinstance(item[1], dict):
                    _count(counts, item[1])
            self.read = True
        return self.counts


_encode = msgspec.json.Encoder().encode
_MENTION = re.compile(r"^line (\d+)(?=: )| on line (\d+)(?=; )")
"""Where an import's conflict names a line: at its start, and where it names the first one ("on line N;")"""


@contextlib.contextmanager
def stage(source: Source, path: Path, workspace: str) -> Iterator[Staged]:
    """The records of `source` at `path` as a JSONL file in a temporary folder, deleted after.

    The official file is read where it is (not copied).

    Raises:
        SourceError: If the source cannot be read as its format (nothing was written).
        ScratchError: If the temporary folder cannot hold the records (nothing was written).
        OSError: If it cannot be read at all.
    """
    if source.read is None:
        yield Staged(path, read=False)
        return
    try:
        made = tempfile.TemporaryDirectory(prefix=f"chronograph-import-{os.getpid()}-")  # see importindex.sweep
    except OSError as error:
        raise ScratchError(_STAGED, error) from None
    with made as folder:
        where_from = Path(folder) / "places.jsonl"
        staged = Staged(Path(folder) / "records.jsonl", places=where_from)
        counts = staged.counts.setdefault(workspace, Counts())
        try:
            with staged.path.open("wb") as out, where_from.open("wb") as places:
                for where, record in _read(source, path, workspace):
                    kind = record.get("type")
                    if kind == "workspace":
                        counts = staged.counts.setdefault(record["name"], Counts())
                    else:
                        _count(counts, record)
                    out.write(_encode(record) + b"\n")
                    places.write(_encode(where) + b"\n")
        except _Unread as unread:
            raise unread.error from None
        except OSError as error:  # writing in the temporary folder, not reading the source
            raise ScratchError(_STAGED, error) from None
        yield staged


_STAGED = "another server's memory as records"


class _Unread(Exception):
    """An error reading the source, carried past the handler of the temporary folder's."""

    def __init__(self, error: OSError) -> None:
        self.error = error


def _read(source: Source, path: Path, workspace: str) -> Iterator[Placed]:
    assert source.read is not None
    try:
        yield from source.read(path, workspace)
    except OSError as error:
        raise _Unread(error) from None


def _count(counts: Counts, record: Record) -> None:
    kind = record.get("type")
    if kind == "entity":
        counts.entities += 1
        observations = record.get("observations")
        counts.observations += len(observations) if isinstance(observations, list) else 0
    elif kind == "relation":
        counts.relations += 1
    elif kind == "context":
        counts.context += 1
