"""A basic-memory folder of Markdown notes as records of the import (`--from basic-memory`).

basic-memory (the `basic-memory` package) keeps each entity as a Markdown note: front matter
(`title`, `type`, `permalink`, `tags`), then list items it reads as observations,
`- [category] content #tag (context)`, and as relations, `- relation_type [[Target]] (context)`
(`basic_memory/markdown/plugins.py`). A note becomes an entity named by its title (the file's
stem without one), typed by its `type` (`note` without one), its observations the observation
lines as written (category, tags and context kept in the text), its metadata the note's
permalink, tags and file; a relation's target is a note's title or permalink. A target no note
of the folder names is reported by the import as a relation whose end exists nowhere, as the
official file's would be. A wiki link anywhere else in a note (`see [[Target]]`) is a
`links_to` relation, as basic-memory reads it. Prose, headings and tasks (`- [ ]`, `- [x]`) are
not imported, nor is anything in a fenced code block or inline code.

The folder is read twice, a note at a time: once for the titles and permalinks (the names
relations point at), then for the records.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chronograph.application.lifecycle.importrecords import lines_of
from chronograph.application.lifecycle.sources import Placed, Source, SourceError, provenance, register

__all__ = ["BASIC_MEMORY"]

_ITEM = re.compile(r"^\s*[-*]\s+(.+?)\s*$")
_OBSERVATION = re.compile(r"^\[([^\[\]()]+)\]\s+\S")
_TASK = re.compile(r"^\[[ xX/>?-]\]")
_LOOKED_AT = 20
"""Notes looked at to recognise a basic-memory folder"""
_LINK = re.compile(r"\[\[([^\[\]]+)\]\]")
_CODE = re.compile(r"`[^`]*`")
_RELATION = re.compile(r'^("[^"]+"|\'[^\']+\'|[^\s\[\]]+)\s+\[\[([^\]]+)\]\](?:\s*\((.*)\))?$')


def _notes(path: Path) -> Iterator[Path]:
    """The folder's notes, in a stable order (hidden folders, such as `.basic-memory`, left out)."""
    for note in sorted(path.rglob("*.md")):
        if note.is_file() and not any(part.startswith(".") for part in note.relative_to(path).parts):
            yield note


def _recognises(path: Path) -> bool:
    """A folder whose notes carry basic-memory's front matter (a `permalink`), not any folder with
    a README: the first notes are looked at."""
    if not path.is_dir() or (path / ".mcp").is_dir():
        return False
    for note in itertools.islice(_notes(path), _LOOKED_AT):
        with note.open("rb") as file:
            head = file.read(4096).decode("utf-8", errors="replace")
        if head.startswith("---") and re.search(r"^permalink\s*:", head, re.MULTILINE):
            return True
    return False


def front_matter(note: Path, text: str) -> tuple[dict[str, Any], list[str]]:
    """A note's front matter (the flat YAML basic-memory writes: scalars, and lists inline or
    as `- item` lines) and its body's lines.

    Raises:
        SourceError: If the front matter is never closed.
    """
    lines = lines_of(text)  # an observation may hold U+2028 and the like: only newlines end a line
    if not lines or lines[0].strip() != "---":
        return {}, lines
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() in ("---", "..."))
    except StopIteration:
        raise SourceError(f"{note}: its front matter (from the first '---') is never closed; a damaged note, "
                          "nothing was written") from None
    fields: dict[str, Any] = {}
    key = None
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = re.match(r"^\s+-\s+(.*)$", line) or re.match(r"^-\s+(.*)$", line)
        if item and key is not None:
            if not isinstance(fields.get(key), list):
                fields[key] = []
            fields[key].append(_scalar(item.group(1)))
            continue
        pair = re.match(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$", line)
        if pair is None:
            continue
        key, value = pair.group(1), pair.group(2).strip()
        if value.startswith("[") and value.endswith("]"):
            fields[key] = [_scalar(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            fields[key] = _scalar(value) if value else []
    return fields, lines[end + 1:]


def _scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _read_note(note: Path) -> tuple[dict[str, Any], list[str], int]:
    """A note's front matter, its body's lines and the number of the body's first line."""
    try:
        text = note.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SourceError(f"{note} is not UTF-8 text; a damaged note, nothing was written") from None
    fields, body = front_matter(note, text)
    return fields, body, len(lines_of(text)) - len(body) + 1


def _title(note: Path, fields: dict[str, Any]) -> str:
    title = fields.get("title")
    return title.strip() if isinstance(title, str) and title.strip() else note.stem


def read(path: Path, workspace: str) -> Iterator[Placed]:
    """The records of the basic-memory folder at `path`, each placed by its note (a relation by
    its line there).

    Raises:
        SourceError: If a note cannot be read as basic-memory's Markdown (nothing is written).
    """
    names: dict[str, str] = {}
    """a title or permalink -> the title of its note"""
    for note in _notes(path):
        fields, _, _ = _read_note(note)
        title = _title(note, fields)
        names.setdefault(title, title)
        permalink = fields.get("permalink")
        if isinstance(permalink, str) and permalink:
            names.setdefault(permalink, title)
    origin = provenance(BASIC_MEMORY, path)
    for note in _notes(path):
        fields, body, first = _read_note(note)
        title = _title(note, fields)
        where = f"note {note.relative_to(path).as_posix()}"
        kind = fields.get("type")
        metadata: dict[str, Any] = {"importedFrom": origin, "file": note.relative_to(path).as_posix()}
        for key in ("permalink", "tags"):
            if fields.get(key):
                metadata[key] = fields[key]
        observations: list[str] = []
        relations: list[Placed] = []
        fenced = False
        for number, line in enumerate(body, start=first):
            if line.lstrip().startswith(("```", "~~~")):
                fenced = not fenced
                continue
            if fenced:
                continue
            item = _ITEM.match(line)
            content = item.group(1) if item is not None else ""
            relation = _RELATION.match(content) if item is not None else None
            if relation is not None:
                target = relation.group(2).strip()
                relations.append((f"{where} line {number}", {
                    "type": "relation", "from": title, "to": names.get(target, target),
                    "relationType": relation.group(1).strip("\"'")}))
                continue
            for link in _LINK.findall(_CODE.sub("", line)):
                relations.append((f"{where} line {number}", {
                    "type": "relation", "from": title, "to": names.get(link.strip(), link.strip()),
                    "relationType": "links_to"}))
            if item is not None and not _TASK.match(content) and _OBSERVATION.match(content) and (
                    content not in observations):
                observations.append(content)
        yield where, {"type": "entity", "name": title,
                      "entityType": kind if isinstance(kind, str) and kind else "note",
                      "observations": observations, "metadata": metadata}
        yield from relations


BASIC_MEMORY = register(Source("basic-memory", "a basic-memory folder of Markdown notes", _recognises, read))
