"""Every integer argument of every tool of every profile, at its edges: a clear error naming
the field, or a correct answer; never an internal error.

The integer fields are read from the tools' published schemas, so a new tool or field is
covered as soon as it exists (the test fails until it has a call that reaches it).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import PROFILES, Memory
from chronograph.application.engine.registry import Tool
from chronograph.application.errors import ChronographError, InvalidArgumentsError
from chronograph.server.jsonschema import json_schema
from mcp import Client

EDGES = (0, -1, 2**63 - 1, 2**63, 2**64, 10**40)
CURSORS = ("0", "9" * 64, str(2**63 - 1), str(2**63), "\u00b2", "\u0661\u0662", "-1", " 1")
"""Cursors are integers in strings: the same edges, and digits that are not ASCII."""

Path_ = tuple[str | int, ...]

BASES: dict[str, dict[str, Any]] = {
    "search_nodes": {"query": "Ada"},
    "semantic_search": {"query": "Ada"},
    "get_entity_history": {"name": "Ada"},
    "get_related_entities": {"name": "Ada"},
    "update_context": {"activeTask": "edges"},
    "update_entities": {"entities": [{"name": "Ada", "observations": ["edge"]}]},
    "update_relations": {"relations": [{"from": "Ada", "to": "Bob", "relationType": "knows", "confidence": 0.5}]},
    "rename_entity": {"name": "Ada", "newName": "Ada Lovelace"},
    "merge_entities": {"source": "Bob", "target": "Ada"},
    "revert_entity": {"name": "Ada", "toVersion": 1},
    "memory_tool": {"action": "list", "scopeType": "global"},
    "memory_guideline": {"action": "list", "scopeType": "global"},
    "memory_knowledge": {"action": "list", "scopeType": "global"},
    "memory_query": {"action": "search", "search": "edges"},
    "memory_file_lock": {"action": "list"},
    "search_entities": {"database": "db", "query": "Ada"},
    "n2n_search": {"query": "Ada"},
}
"""A call that reaches its integer fields, per tool (the rest are built from the schema)."""

FOR_FIELD: dict[tuple[str, str], dict[str, Any]] = {
    ("memory_guideline", "priority"): {"action": "add", "scopeType": "global", "name": "g", "content": "c"},
    ("memory_file_lock", "expires_in"): {"action": "checkout", "file_path": "/srv/a.py", "agent_id": "a"},
    ("memory_conflict", "keepVersion"): {"action": "resolve", "id": "c1"},
}
"""Fields only some actions read."""


def integer_fields(schema: dict[str, Any], path: Path_ = ()) -> Iterator[Path_]:
    """The paths of the integer fields of a (published, inlined) schema."""
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "integer" in kinds:
        yield path
    for option in schema.get("anyOf", []):
        yield from integer_fields(option, path)
    for name, field in schema.get("properties", {}).items():
        yield from integer_fields(field, (*path, name))
    if "items" in schema:
        yield from integer_fields(schema["items"], (*path, 0))


def cursor_fields(schema: dict[str, Any]) -> list[Path_]:
    return [(name,) for name in schema.get("properties", {}) if name == "cursor"]


def filled(schema: dict[str, Any], name: str = "") -> Any:
    """A plausible value for `schema`: its required fields only."""
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return filled(schema["anyOf"][0], name)
    if "object" in kinds:
        return {key: filled(field, key) for key, field in schema.get("properties", {}).items()
                if key in schema.get("required", ())}
    if "array" in kinds:
        return [filled(schema.get("items", {}), name)]
    if "integer" in kinds:
        return 1
    if "boolean" in kinds:
        return False
    return {"to": "Bob", "relationType": "knows", "entityType": "person"}.get(name, "Ada")


def with_value(arguments: dict[str, Any], schema: dict[str, Any], path: Path_, value: Any) -> dict[str, Any]:
    """`arguments` with the field at `path` set to `value` (creating what leads to it)."""
    arguments = copy.deepcopy(arguments)
    node: Any = arguments
    for at, step in enumerate(path):
        schema = schema["items"] if isinstance(step, int) else schema["properties"][step]
        last = at == len(path) - 1
        if isinstance(step, int):
            if not node:
                node.append(filled(schema))
        elif step not in node:
            node[step] = None if last else filled(schema, step)
        if last:
            node[step] = value
        else:
            node = node[step]
    return arguments


def cases() -> Iterator[tuple[str, Tool, Path_]]:
    for profile in PROFILES.values():
        for tool in profile.tools:
            schema = json_schema(tool.arguments)
            for path in dict.fromkeys([*integer_fields(schema), *cursor_fields(schema)]):
                yield profile.name, tool, path


CASES = sorted({(id(tool), path): (name, tool, path) for name, tool, path in cases()}.values(),
               key=lambda case: (case[0], case[1].name, case[2]))
"""One case per tool and field (a tool several profiles present is tried once)."""


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    with Memory(tmp_path_factory.mktemp("edges") / "store", sync=False) as opened:
        opened.write("create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["math"]},
            {"name": "Bob", "entityType": "person", "observations": []}]}, actor="seed")
        opened.write("create_relations", {"relations": [{"from": "Ada", "to": "Bob", "relationType": "knows"}]},
                     actor="seed")
        yield opened


def base(tool: Tool, field: str, project: Path) -> dict[str, Any]:
    schema = json_schema(tool.arguments)
    arguments = {**filled(schema), **BASES.get(tool.name, {}), **FOR_FIELD.get((tool.name, field), {})}
    if "projectPath" in schema.get("properties", {}):
        arguments["projectPath"] = str(project)
    return arguments


@pytest.mark.parametrize(("profile", "tool", "path"), CASES,
                         ids=[f"{p}:{t.name}:{'.'.join(map(str, f))}" for p, t, f in CASES])
def test_every_integer_argument_at_its_edges_is_answered_or_refused_naming_the_field(
        memory: Memory, tmp_path: Path, profile: str, tool: Tool, path: Path_) -> None:
    field = str(path[-1])
    schema = json_schema(tool.arguments)
    arguments = base(tool, field, tmp_path)
    values: tuple[Any, ...] = CURSORS if field == "cursor" else EDGES
    reached = False
    for value in values:
        call = with_value(arguments, schema, path, value)
        try:
            memory.call(tool, call, actor="edges")
            reached = True
        except InvalidArgumentsError as error:
            named = error.problem.startswith(field) or f".{field}:" in error.problem or f"]{field}" in error.problem
            reached = reached or named
            if value in (2**63, 2**64, 10**40) or (isinstance(value, str) and not value.isascii()):
                assert named, f"{profile}:{tool.name} {path}={value!r}: {error.problem}"
        except ChronographError as error:  # a correct answer: a conflict, something not found, ...
            reached = True
            assert str(error)
        except Exception as error:  # noqa: BLE001 (the point: nothing else may escape)
            pytest.fail(f"{profile}:{tool.name} {path}={value!r}: {type(error).__name__}: {error}")
    assert reached, f"{profile}:{tool.name}: no call reached {path}; give it a base in BASES or FOR_FIELD"


def test_a_summary_past_the_last_entity_is_an_empty_page(memory: Memory) -> None:
    summary = memory.read("get_graph_summary", {"offset": 2**63 - 1})
    assert summary.index == [] and summary.entities == 2  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_a_summary_offset_at_the_edge_is_not_an_internal_error_over_mcp(client: Client) -> None:
    result = await client.call_tool("get_graph_summary", {"offset": 2**63 - 1})
    assert not result.is_error and result.structured_content["index"] == []  # type: ignore[index]
    refused = await client.call_tool("get_graph_summary", {"offset": 2**63})
    assert refused.is_error and refused.content[0].text.startswith(  # type: ignore[union-attr]
        "Invalid arguments for tool get_graph_summary: offset:")
