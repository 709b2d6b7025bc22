"""mem0's exported memories as records of the import (`--from mem0`).

mem0 (the `mem0ai` package) keeps memories as short texts in a vector store, each owned by a
`user_id`, an `agent_id` or a `run_id`; `Memory.get_all` answers `{"results": [{"id", "memory",
"hash", "metadata", "created_at", "updated_at", "user_id", "agent_id", "run_id", ...}]}`
(`mem0/memory/main.py`, `MemoryItem` in `mem0/configs/base.py`), which is what an export of
mem0 is: that document, the bare list, or one memory a line (JSONL). A graph store's
`relations` (`{"source", "relationship", "destination" | "target"}`) come along when present.

Each owner becomes an entity (named by its id, typed `user`, `agent` or `run`, the first of
those the memory names) whose observations are its memories' texts; a relation's ends become
entities of type `mem0 entity` when no owner has their name. Each memory is one record (the
import gathers an owner's records into one entity), so only the owners' names are held; a JSON
document is parsed whole, as it must be, JSONL read a line at a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chronograph.application.lifecycle.sources import Placed, Source, SourceError, provenance, register

__all__ = ["MEM0"]

OWNERS = (("user_id", "user"), ("agent_id", "agent"), ("run_id", "run"))
_PEEK = 1 << 16


def _recognises(path: Path) -> bool:
    if not path.is_file():
        return False
    with path.open("rb") as file:
        head = file.read(_PEEK).decode("utf-8", errors="replace").lstrip()
    if head.startswith("["):
        return '"memory"' in head
    if head.startswith("{"):
        first = head.split("\n", 1)[0]
        return '"results"' in head[:200] or ('"memory"' in first and '"type"' not in first)
    return False


def _memories(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, item) of every memory (`line N` of JSONL, `memory N` of a document), then
    ("relation N", item) of every relation (where "" for a memory: read on first sight)."""
    with path.open("rb") as file:
        head = file.read(_PEEK).decode("utf-8", errors="replace").lstrip()
    lines = head.startswith("{") and '"results"' not in head[:200]
    if lines:
        with path.open("rb") as file:
            for number, raw in enumerate(file, start=1):
                if raw.strip():
                    yield f"line {number}", _json(path, raw, number)
        return
    document = _json(path, path.read_bytes(), 0)
    items = document.get("results") if isinstance(document, dict) else document
    if not isinstance(items, list):
        raise SourceError(f"{path} is not mem0's export: expected {{\"results\": [...]}} or a list of memories")
    for number, item in enumerate(items, start=1):
        yield f"memory {number}", item
    relations = document.get("relations") if isinstance(document, dict) else None
    for number, relation in enumerate(relations if isinstance(relations, list) else [], start=1):
        yield f"relation {number}", relation


def _json(path: Path, raw: bytes, number: int) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as error:
        where = f" line {number}" if number else ""
        raise SourceError(f"{path}{where} is not JSON ({error}); a damaged mem0 export, nothing was written") from None


def _named(where: str, item: dict[str, Any]) -> str:
    """Where a memory is, with its id (what mem0's own tools find it by)."""
    ident = item.get("id")
    return f"{where} (id {str(ident)[:64]})" if isinstance(ident, (str, int)) and str(ident) else where


def read(path: Path, workspace: str) -> Iterator[Placed]:
    """The records of mem0's export at `path` (every memory of an owner gathered in one entity),
    each placed by its memory's number (its line, in JSONL) and id.

    Raises:
        SourceError: If it is not mem0's export (nothing is written).
    """
    origin = {"importedFrom": provenance(MEM0, path)}
    owners: set[str] = set()
    relations: list[tuple[str, dict[str, Any]]] = []
    for where, item in _memories(path):
        if where.startswith("relation "):
            if isinstance(item, dict):
                relations.append((where, item))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("memory"), str):
            raise SourceError(f"{path}: {where} has no \"memory\" text; a damaged mem0 export, nothing was written")
        name, kind = next(((str(item[key]), kind) for key, kind in OWNERS if item.get(key)), ("mem0", "memory"))
        owners.add(name)
        texts = [item["memory"]] if item["memory"].strip() else []
        # one record a memory: the import gathers an owner's records into one entity
        yield _named(where, item), {"type": "entity", "name": name, "entityType": kind, "observations": texts,
                                    "metadata": origin}
    ends: set[str] = set()
    for where, relation in relations:
        target = relation.get("destination", relation.get("target"))
        if not all(isinstance(v, str) and v for v in (relation.get("source"), relation.get("relationship"), target)):
            continue
        for end in (str(relation["source"]), str(target)):
            if end not in owners and end not in ends:
                ends.add(end)
                yield where, {"type": "entity", "name": end, "entityType": "mem0 entity", "observations": [],
                              "metadata": origin}
        yield where, {"type": "relation", "from": relation["source"], "to": target,
                      "relationType": relation["relationship"]}


MEM0 = register(Source("mem0", "mem0's exported memories (JSON)", _recognises, read))
