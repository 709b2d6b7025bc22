"""The JSON schemas tools publish: generated from the argument and output Structs, kept small.

Every tool description and schema is read by the model in every conversation, so the
schemas say what they must and no more: references inlined (clients differ in how
they follow them); no titles, no `$schema`, no length limits (the server checks them
and says so when one is passed), no descriptions of the objects a field already
describes, unions of plain types written as a list of types. The fields every tool
shares are explained once, in the server's instructions.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["json_schema"]

SHARED = frozenset({"workspace", "requestId", "expectedVersion", "asOf", "cursor", "validAt", "validFrom", "validUntil",
                    "includeProvenance"})
"""Fields many tools take, explained once in the server's instructions: published by type alone."""

DROPPED = frozenset({"title", "maxLength", "minLength", "maxItems", "minimum", "maximum"})
"""Keywords that cost every conversation bytes and tell the model nothing it needs."""


def json_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON schema of `struct`: inlined (no $ref), compact."""
    document = msgspec.json.schema(struct)
    definitions = document.pop("$defs", {})
    # A surface whose instructions do not explain the shared fields (the workspace server's)
    # sets `schema_explains_shared` on its arguments: their descriptions stay.
    explained = not getattr(struct, "schema_explains_shared", False)

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(v) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = dict(definitions[node["$ref"].rsplit("/", 1)[1]])
            target.pop("description", None)  # a class's docstring: the field's own description says it
            return inline({**target, **{k: v for k, v in node.items() if k != "$ref"}})
        out = {
            key: inline(value)
            for key, value in node.items()
            if key not in DROPPED and not (key == "required" and not value) and not (key == "default" and value is None)
        }
        for name, field in out.get("properties", {}).items() if out.get("type") == "object" else ():
            if name in SHARED:
                field.pop("default", None)
                if explained:
                    field.pop("description", None)
        return _plain_union(out)

    root = inline(document)
    root.pop("description", None)  # the tool's own description says it
    properties = root.get("properties", {})
    for shared in ("workspace", "requestId"):  # the tool's own fields first, as officially
        if shared in properties:
            properties[shared] = properties.pop(shared)
    return root


def _plain_union(node: dict[str, Any]) -> dict[str, Any]:
    """`anyOf` of bare types (`[{"type": "string"}, {"type": "null"}]`) as `"type": [...]`."""
    options = node.get("anyOf")
    if not options or not all(isinstance(o, dict) and set(o) <= {"type", "minimum"} for o in options):
        return node
    types = [o["type"] for o in options]
    if not all(isinstance(t, str) for t in types):
        return node
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    return {**rest, "type": types}
