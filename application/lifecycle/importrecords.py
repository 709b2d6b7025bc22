"""Reading a memory file as a stream of records, and what an import found wrong with them.

`records` yields a JSONL file's lines one at a time (decoded as they are read, never the
whole file); a legacy JSON document (one JSON value, which cannot be read in parts) is parsed
whole and yields its items the same way. `Problems` counts what was wrong by kind, keeping the
first few lines of each, so a file full of bad lines costs a count, not a list.
"""

from __future__ import annotations

import json
import re
from codecs import BOM_UTF8
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

__all__ = ["FIRST", "NOT_JSON", "NOT_UTF8", "Problem", "Problems", "Section", "lines_of", "records"]

NOT_JSON = "not JSON"
NOT_UTF8 = "not UTF-8 text"
FIRST = 5
"""Problems a kind keeps (the first lines a report names for a kind met on many lines)."""
_SCAN = 1 << 20
"""Bytes read at a time while looking at a file's shape."""
_EVERY = 10_000
"""Lines between two reports of progress."""

_decode = msgspec.json.Decoder().decode
"""JSON to Python values in C: the same values as `json.loads` where both read a line (msgspec
refuses what only `json` reads, which then reads it)."""

Record = int | str | tuple[int, Any]
"""What `records` yields: a count of the file's own lines, the name of a workspace section that
starts, or (line number, the record or its `Problem`)."""


@dataclass(frozen=True)
class Problem:
    """A line of the file that cannot be imported: where, what kind of problem (the same words
    for every line with it, so a report can count them) and, for this line, the detail."""

    line: int
    kind: str
    detail: str = ""
    section: int = 0
    """The workspace section whose check found it (0: the file's own plan), for ordering"""

    def __str__(self) -> str:
        return self.said(f"line {self.line}")

    def said(self, where: str) -> str:
        """The problem, naming its place as `where` (a source's record, for another server's memory)."""
        return f"{where}: {self.kind}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class Section:
    """The part of a file for one workspace (the import's own, or one an export names)."""

    number: int
    workspace: str
    named: bool = False
    """Whether the file names it (an export of every workspace)"""
    entities: int = 0
    """Distinct entity names it holds"""
    relations: int = 0
    """Distinct relations it holds (after the check of their ends)"""
    repeated: int = 0
    """Its relation lines that passed the check and repeat an earlier one (one relation is written)"""
    context: dict[str, Any] | None = None

    @property
    def empty(self) -> bool:
        """Whether it holds nothing to import."""
        return not self.entities and not self.relations and not self.context


class Problems:
    """Problems by kind: how many, and the first `FIRST` (by section, then line) of each."""

    def __init__(self) -> None:
        self.count = 0
        self._kinds: dict[str, tuple[int, list[Problem]]] = {}

    def __bool__(self) -> bool:
        return self.count > 0

    def __len__(self) -> int:
        return self.count

    def add(self, problem: Problem) -> None:
        """Count `problem`."""
        self.count += 1
        count, first = self._kinds.get(problem.kind, (0, []))
        if len(first) < FIRST or (problem.section, problem.line) < (first[-1].section, first[-1].line):
            first = sorted([*first, problem], key=lambda p: (p.section, p.line))[:FIRST]
        self._kinds[problem.kind] = (count + 1, first)

    def count_of(self, kind: str) -> int:
        """How many problems of `kind` there were."""
        return self._kinds.get(kind, (0, []))[0]

    def kinds(self) -> list[tuple[str, int, list[Problem]]]:
        """(kind, count, first problems) in the order of each kind's first line."""
        ordered = sorted(self._kinds.items(), key=lambda item: (item[1][1][0].section, item[1][1][0].line))
        return [(kind, count, first) for kind, (count, first) in ordered]


_BREAKS = re.compile(r"\r\n?|\n")
"""What ends a line of a JSONL file: JSON text holds neither raw, but it may hold U+2028, U+2029,
U+0085 and the other breaks `str.splitlines` knows inside a string."""
_BYTE_BREAKS = re.compile(rb"\r\n?|\n")
"""The same in bytes (no UTF-8 character holds a CR's or an LF's byte): a file's lines are found
before they are decoded, each on its own."""


def lines_of(text: str) -> list[str]:
    """`text`'s lines, split at newlines and carriage returns only (one ending the text ends its
    last line, as `str.splitlines` has it)."""
    return _BREAKS.split(text.removesuffix("\n").removesuffix("\r")) if text else [""]


def records(path: Path, progress: Callable[[int, int], None] | None = None) -> Iterator[Record]:
    """The records of a memory file, in file order (see `Record`).

    Raises:
        OSError: If the file cannot be read.
    """
    document = _document(path)
    if document is not None:
        yield from document
        return
    total = path.stat().st_size
    number = done = 0
    with path.open("rb") as file:
        for raw in file:
            done += len(raw)
            if done == len(raw):  # the first line: without the byte-order mark a Windows editor writes
                raw = raw.removeprefix(BOM_UTF8)
            for piece in _BYTE_BREAKS.split(raw.removesuffix(b"\n").removesuffix(b"\r")) if raw else [b""]:
                number += 1
                if progress is not None and number % _EVERY == 0:
                    progress(done, total)
                try:  # each line alone: read with replacement, two names would become one (M\ufffdller)
                    line = piece.decode("utf-8")
                except UnicodeDecodeError as error:
                    yield 1
                    guess = piece.decode("latin-1").strip()  # JSON in another encoding, or no text at all?
                    yield number, (Problem(number, NOT_UTF8, f"byte 0x{piece[error.start]:02x} at byte "
                                                             f"{error.start + 1} of the line; save the file as UTF-8")
                                   if guess.startswith("{") and guess.endswith("}")
                                   else Problem(number, NOT_JSON, "bytes that are not UTF-8 text"))
                    continue
                if not line.strip():
                    continue
                yield 1
                try:
                    record = _decode(line)
                except (msgspec.DecodeError, RecursionError):  # json says why (and reads NaN, lone surrogates)
                    pass
                else:
                    if isinstance(record, dict) and record.get("type") == "workspace" and isinstance(
                            record.get("name"), str):
                        yield record["name"]
                    else:
                        yield number, record
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as error:
                    yield number, Problem(number, NOT_JSON, error.msg)
                    continue
                except RecursionError:
                    yield number, Problem(number, "nested too deep")
                    continue
                if isinstance(record, dict) and record.get("type") == "workspace" and isinstance(record.get("name"),
                                                                                                  str):
                    yield record["name"]
                    continue
                yield number, record
    if progress is not None:
        progress(total, total)


_OPENINGS = (b"{", b"[")
"""How a first line that only opens a document ends (`{`, or `{"entities": [`)."""
_CONTINUED = (b",", b":")
"""How a first line ends that a document's next line goes on (`{"entities": [{...},`, `{"entities":`)."""


def _next_line(file: BinaryIO) -> bytes:
    """The next line of `file` that is not blank (b"" at the end)."""
    for line in file:
        if line.strip():
            return line
    return b""


def _record(line: bytes) -> bool:
    """Whether `line` holds one whole record of a memory file (an object with its `type`), not a
    part of a document (whose entities and relations carry none)."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and "type" in value


def _first_line_ends(file: BinaryIO) -> bytes:
    """The last byte but blanks of the line `file` is at (read through it, a chunk at a time)."""
    last = b""
    while chunk := file.read(_SCAN):
        cut = chunk.find(b"\n")
        piece = (chunk if cut < 0 else chunk[:cut]).rstrip()
        last = piece[-1:] or last
        if cut >= 0:
            file.seek(cut + 1 - len(chunk), 1)
            break
    return last


def _document(path: Path) -> list[Record] | None:
    """The records of a legacy JSON document (`{entities, relations}`, or an export of every workspace),
    or None when the file is JSONL (or one JSONL line).

    A file whose first line starts a value and a later line starts another is JSONL, unless its
    first line ends as only the start of a document does (`{` or `[`), or as a document's first
    line goes on to the next (`,` or `:`) and the next is not a whole record: a document written
    an object a line (`indent=0`) has lines that start with "{" too. Both are told apart
    streaming through the file, holding a chunk of it or its second line (a damaged JSONL line
    that ends in `{` or `[` is read whole once as a document, which it is not, before the file is
    read as lines)."""
    with path.open("rb") as file:
        start = file.read(_SCAN)
        bom = len(BOM_UTF8) if start.startswith(BOM_UTF8) else 0  # Windows editors write one
        start = start[bom:]
        text = start.decode("utf-8", errors="replace")
        if not text.lstrip().startswith("{"):
            return None
        file.seek(bom + len(start) - len(start.lstrip()))
        end = _first_line_ends(file)
        if end in _CONTINUED and _record(_next_line(file)):
            return None  # a damaged JSONL line ends so too: the line after it says which
        if end not in _OPENINGS and end not in _CONTINUED:
            tail = b"\n"  # the first line's end was just read
            while chunk := file.read(_SCAN):  # a line that starts with "{": JSONL, streamed
                if b"\n{" in tail + chunk:
                    return None
                tail = chunk[-1:]
    try:
        document = json.loads(path.read_bytes()[bom:].decode("utf-8").strip())
    except (ValueError, RecursionError):  # not UTF-8 either: read as lines, each line says what it is
        return None
    if isinstance(document, dict) and isinstance(document.get("workspaces"), dict):
        out: list[Record] = []
        for name, part in document["workspaces"].items():
            out.append(str(name))
            if isinstance(part, dict):
                out += enumerate(_items(part), start=1)
        return out
    if isinstance(document, dict) and ("entities" in document or "relations" in document):
        items = _items(document)
        return [len(items), *enumerate(items, start=1)]
    return None


def _items(part: dict[str, Any]) -> list[dict[str, Any]]:
    records = [{"type": "entity", **e} for e in part.get("entities", []) if isinstance(e, dict)]
    records += [{"type": "relation", **r} for r in part.get("relations", []) if isinstance(r, dict)]
    if isinstance(part.get("context"), dict):
        records.append({"type": "context", **part["context"]})
    return records
