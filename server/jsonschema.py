"""The JSON schemas tools publish: generated from the argument and output Structs, kept small.

Every tool description and schema is read by the model in every conversation, so the
schemas say what they must and no more: references inlined (clients differ in how
they follow them); no titles, no `$schema`, no length limits (the server checks them
and says so when one is passed), no descriptions of the objects a field already
describes, no default that goes without saying (none, a flag's false), unions of plain
types written as a list of types. The fields every tool shares are explained once, in the
server's instructions.

The clean-up walks the schema as JSON Schema reads it: a keyword is dropped only where
it is a keyword. Under `properties` the keys are field names (a field may be called
`title` or `minimum`), and `enum`, `const` and `default` hold values, not schemas.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["json_schema"]

SHARED = frozenset({"workspace", "requestId", "expectedVersion", "asOf", "cursor", "validAt", "validFrom", "validUntil",
                    "includeProvenance", "includeMetadata", "summaryMode", "matchesPerEntity",
                    "observationsLimit"})
"""Fields many tools take, explained once in the server's instructions: published by type alone."""

DROPPED = frozenset({"title", "maxLength", "minLength", "maxItems", "minimum", "maximum"})
"""Keywords that cost every conversation bytes and tell the model nothing it needs."""

ONE_SCHEMA = frozenset({"items", "additionalProperties", "propertyNames", "contains", "not", "if", "then", "else",
                        "unevaluatedItems", "unevaluatedProperties"})
"""Keywords whose value is a schema."""
SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
"""Keywords whose value is a list of schemas."""
SCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas"})
"""Keywords whose value maps names (not keywords) to schemas."""


def json_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON schema of `struct`: inlined (no $ref), compact."""
    document = msgspec.json.schema(struct)
    definitions = document.pop("$defs", {})
    # A surface whose instructions do not explain the shared fields (the workspace server's)
    # sets `schema_explains_shared` on its arguments: their descriptions stay.
    explained = not getattr(struct, "schema_explains_shared", False)

    def schema(node: Any) -> Any:
        if not isinstance(node, dict):  # `true`/`false` schemas
            return node
        if "$ref" in node:
            target = dict(definitions[node["$ref"].rsplit("/", 1)[1]])
            target.pop("description", None)  # a class's docstring: the field's own description says it
            return schema({**target, **{k: v for k, v in node.items() if k != "$ref"}})
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in DROPPED or (key == "required" and not value) or (key == "default" and _unsaid(value)):
                continue
            if key in ONE_SCHEMA:
                value = schema(value)
                if key == "propertyNames" and value == {}:  # every name: what it says without it
                    continue
            elif key in SCHEMA_LISTS:
                value = [schema(option) for option in value]
            elif key in SCHEMA_MAPS:
                value = {name: _shared(name, schema(field), explained) if key == "properties" else schema(field)
                         for name, field in value.items()}
            out[key] = value
        return _plain_union(out)

    root = schema(document)
    root.pop("description", None)  # the tool's own description says it
    properties = root.get("properties", {})
    for shared in ("workspace", "requestId"):  # the tool's own fields first, as officially
        if shared in properties:
            properties[shared] = properties.pop(shared)
    return root


def _unsaid(default: Any) -> bool:
    """Whether a default goes without saying: none, or false (a flag is off unless given)."""
    return default is None or default is False


def _shared(name: str, field: Any, explained: bool = True) -> Any:
    """A shared field by type alone (the instructions say what it means and defaults to), its
    description kept where the profile's instructions do not explain it (`explained` False)."""
    if name in SHARED and isinstance(field, dict):
        dropped = ("default", "description") if explained else ("default",)
        return {k: v for k, v in field.items() if k not in dropped}
    return field


def _plain_union(node: dict[str, Any]) -> dict[str, Any]:
    """`anyOf` of bare types (`[{"type": "string"}, {"type": "null"}]`) as `"type": [...]`."""
    options = node.get("anyOf")
    if not options or not all(isinstance(o, dict) and set(o) == {"type"} for o in options):
        return node
    types = [o["type"] for o in options]
    if not all(isinstance(t, str) for t in types):
        return node
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    return {**rest, "type": types}
