"""Arguments built from a published JSON schema, as a client that follows the schema builds them.

`example(schema)` fills every documented field (`every=False`: only the required ones),
with values a person would type (`fill` picks them by field name) or else the plainest
value of the field's type; `missing_fields` lists the fields a Struct accepts that its
schema does not publish; `tree` is what a folder holds, to tell whether a call wrote.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi

Fill = Callable[[str, dict[str, Any]], Any]
"""fill(field name, its schema): a value for it, or None for the plainest one of its type."""

PLAIN: dict[str, Any] = {"string": "x", "integer": 1, "number": 0.5, "boolean": True, "null": None}


def example(schema: Any, *, every: bool = True, fill: Fill | None = None, name: str = "") -> Any:
    """A value `schema` accepts: for an object, every property (or only the required ones)."""
    if not isinstance(schema, dict):
        return {}
    if fill is not None and name:
        chosen = fill(name, schema)
        if chosen is not None:
            return chosen
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for union in ("anyOf", "oneOf"):
        if union in schema:
            options = [o for o in schema[union] if o.get("type") != "null"] or schema[union]
            return example(options[0], every=every, fill=fill, name=name)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        wanted = properties if every else {k: properties[k] for k in schema.get("required", [])}
        value = {key: example(sub, every=every, fill=fill, name=key) for key, sub in wanted.items()}
        extra = schema.get("additionalProperties")
        if not properties and isinstance(extra, dict):
            value["key"] = example(extra, every=every, fill=fill)
        return value
    if kind == "array":
        return [example(schema.get("items", {}), every=every, fill=fill, name=name)]
    return PLAIN[kind]


NAMES = ("name", "entityName", "from", "to", "entity_name", "from_entity", "to_entity", "names", "entityNames",
         "query", "search", "target", "newName")
TIMES = ("validAt", "validFrom", "validUntil", "since", "until", "at")


def plausible(project: Path) -> Fill:
    """A `fill` with the values a user would give: one entity, Ada, a person; the project at
    `project`; times as ISO-8601; a new requestId for every call."""
    serial = itertools.count(1)
    words: dict[str, str] = {
        **dict.fromkeys(NAMES, "Ada"), **dict.fromkeys(TIMES, "2026-01-01T00:00:00Z"),
        **dict.fromkeys(("projectPath", "confirmNewProjectRoot", "rootPath"), str(project)),
        **dict.fromkeys(("entityType", "entity_type"), "person"),
        **dict.fromkeys(("relationType", "relation_type", "relationship_type"), "knows"),
        **dict.fromkeys(("workspace", "workspaceName", "database"), "default"),
        **dict.fromkeys(("observations", "contents"), "likes tea"), "outputPath": "graph.md",
    }

    def fill(name: str, schema: dict[str, Any]) -> Any:
        kinds = schema.get("type")
        if name == "asOf":
            return 1
        if name == "requestId":
            return f"request-{next(serial)}"
        if name in words and (kinds == "string" or (isinstance(kinds, list) and "string" in kinds)):
            return words[name]
        return None

    return fill


def missing_fields(struct: type[msgspec.Struct], schema: dict[str, Any]) -> list[str]:
    """The fields `struct` accepts (by wire name, nested ones as `a.b`) that `schema` leaves out."""
    return _missing(mi.type_info(struct), schema, "")


def _missing(info: mi.Type, schema: Any, path: str) -> list[str]:
    if isinstance(info, mi.Metadata):
        return _missing(info.type, schema, path)
    if isinstance(info, mi.UnionType):
        return [field for member in info.types for field in _missing(member, schema, path)]
    if not isinstance(schema, dict):
        return []
    if "anyOf" in schema and isinstance(info, mi.StructType | mi.ListType | mi.DictType):
        return min((_missing(info, option, path) for option in schema["anyOf"]), key=len)
    if isinstance(info, mi.StructType):
        properties = schema.get("properties", {})
        found: list[str] = []
        for field in info.fields:
            if field.encode_name in properties:
                found += _missing(field.type, properties[field.encode_name], f"{path}{field.encode_name}.")
            else:
                found.append(f"{path}{field.encode_name}")
        return found
    if isinstance(info, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
        return _missing(info.item_type, schema.get("items", {}), f"{path}[].")
    if isinstance(info, mi.DictType):
        return _missing(info.value_type, schema.get("additionalProperties", {}), f"{path}{{}}.")
    return []


def tree(root: Path, *, skip: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under `root` but `skip`, with its size and modification time."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if skip not in (p, *p.parents)}
