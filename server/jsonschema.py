"""The JSON schemas tools publish: generated from the argument and output Structs, kept small.

Every tool description and schema is read by the model in every conversation, so the
schemas say what they must and no more: references inlined (clients differ in how
they follow them), no titles, no descriptions on output fields that name themselves.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["json_schema"]


def json_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON schema of `struct`, inlined (no $ref), without titles, draft-07 marked."""
    document = msgspec.json.schema(struct)
    definitions = document.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(definitions[node["$ref"].rsplit("/", 1)[1]])
            return {k: inline(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    root = inline(document)
    root.pop("description", None)  # the tool's own description says it
    properties = root.get("properties", {})
    for shared in ("workspace", "requestId"):  # the tool's own fields first, as officially
        if shared in properties:
            properties[shared] = properties.pop(shared)
    return {"$schema": "http://json-schema.org/draft-07/schema#", **root}
