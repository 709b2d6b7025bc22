"""A team export's text (`memory_export`), written an entry at a time into a `Sink`: JSON as
`json.dumps(document, indent=2)` writes it, block YAML, and Markdown. An answer over the reply
limit stops where it passes it, not once the whole text is made.

The document is {"version", "exportedAt", "entries": {plural: [entry, ...]}, "relations": [...]};
here its entries and relations are iterables, each read once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal

from chronograph.application.engine.sink import Sink, json_list

__all__ = ["Entries", "write_document", "yaml"]

Entries = Mapping[str, Iterable[dict[str, Any]]]
"""Each kind's entries, by plural, as plain data."""
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""Keys YAML reads as the same string unquoted, unless they are one of `_YAML_WORDS`."""
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})
_YAML_BREAKS = str.maketrans({"\u2028": "\\L", "\u2029": "\\P", "\x85": "\\N"})
"""Line breaks to YAML that JSON leaves raw in a string: written raw, a reader folds them."""


def write_document(fmt: Literal["json", "yaml", "markdown"], sink: Sink, at: str, entries: Entries,
                   relations: Iterable[dict[str, Any]]) -> None:
    """Write the export document in `fmt` into `sink` (Markdown lists the entries, not the relations).

    Raises:
        Overflow: If `sink` passes its limit.
    """
    {"json": _json, "yaml": _yaml, "markdown": _markdown}[fmt](sink, at, entries, relations)


def _json(out: Sink, at: str, entries: Entries, relations: Iterable[dict[str, Any]]) -> None:
    out('{\n  "version": "1.0",\n  "exportedAt": ' + json.dumps(at, ensure_ascii=False) + ',\n  "entries": {')
    gap = "\n"
    for plural, items in entries.items():
        out(gap + "    " + json.dumps(plural, ensure_ascii=False) + ": ")
        json_list(out, items, "    ")
        gap = ",\n"
    out("}" if gap == "\n" else "\n  }")
    out(',\n  "relations": ')
    json_list(out, relations, "  ")
    out("\n}")


def _yaml(out: Sink, at: str, entries: Entries, relations: Iterable[dict[str, Any]]) -> None:
    out(f'version: "1.0"\nexportedAt: {yaml(at).strip()}\n')
    if not entries:
        out("entries: {}\n")
    else:
        out("entries:\n")
        for plural, items in entries.items():
            _yaml_list(out, plural, items, 2)
    _yaml_list(out, "relations", relations, 0)


def _yaml_list(out: Sink, key: str, items: Iterable[dict[str, Any]], indent: int) -> None:
    """`key: items` as `yaml` writes it, an item at a time."""
    pad = " " * indent
    started = False
    for item in items:
        if not started:
            out(f"{pad}{_yaml_key(key)}:\n")
            started = True
        out(f"{pad}  - {yaml(item, indent + 4).lstrip()}")
    if not started:
        out(f"{pad}{_yaml_key(key)}: []\n")


def _yaml_key(key: str) -> str:
    plain = _PLAIN_KEY.fullmatch(key) and key.lower() not in _YAML_WORDS
    return key if plain else _yaml_string(key)


def _yaml_string(text: str) -> str:
    """A double-quoted YAML string: JSON's, with the line breaks YAML would fold escaped."""
    return json.dumps(text, ensure_ascii=False).translate(_YAML_BREAKS)


def yaml(value: Any, indent: int = 0) -> str:
    """`value` (JSON data) as block YAML; strings are double-quoted, as JSON writes them (with
    the line breaks only YAML knows escaped), which YAML reads alike."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return pad + "{}\n"
        lines = []
        for key, item in value.items():
            name = _yaml_key(str(key))
            if isinstance(item, dict | list) and item:
                lines.append(f"{pad}{name}:\n{yaml(item, indent + 2)}")
            else:
                lines.append(f"{pad}{name}: {yaml(item).strip()}\n")
        return "".join(lines)
    if isinstance(value, list):
        if not value:
            return pad + "[]\n"
        return "".join(f"{pad}- {yaml(item, indent + 2).lstrip()}" for item in value)
    if isinstance(value, str):
        return pad + _yaml_string(value) + "\n"
    if isinstance(value, float) and "e" in (number := json.dumps(value)) and "." not in number:
        return pad + number.replace("e", ".0e") + "\n"  # YAML 1.1 readers take 1e-05 for a string
    return pad + json.dumps(value, ensure_ascii=False) + "\n"


def _markdown(out: Sink, at: str, entries: Entries, relations: Iterable[dict[str, Any]]) -> None:
    """Lines joined by newlines, a heading or an entry at a time."""
    out(f"# Memory export\n\nExported at {at}.\n")
    for plural, items in entries.items():
        out(f"\n## {plural.capitalize()}\n")
        empty = True
        for entry in items:
            empty = False
            out("\n" + "\n".join(_entry_lines(entry)))
        if empty:
            out("\n_None._\n")


def _entry_lines(entry: dict[str, Any]) -> Iterator[str]:
    title = entry.get("name") or entry.get("title")
    yield from (f"### {title}", "", f"- id: `{entry['id']}`", f"- scope: {entry['scopeType']}"
                + (f" `{entry['scopeId']}`" if entry.get("scopeId") else ""))
    for key in ("category", "priority"):
        if entry.get(key) is not None:
            yield f"- {key}: {entry[key]}"
    if entry.get("tags"):
        yield "- tags: " + ", ".join(entry["tags"])
    current = entry["currentVersion"]
    yield f"- version: {current['versionNum']}"
    for key in ("description", "content", "rationale", "constraints", "source", "validUntil"):
        if current.get(key) is not None:
            yield from ("", f"**{key}**: {current[key]}")
    yield ""


