"""Every refused call carries a machine-readable code, in the shape its profile's clients expect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from chronograph.server.results import ERROR_META
from mcp import Client

pytestmark = pytest.mark.anyio
MISSING = {"observations": [{"entityName": "Nobody", "contents": ["x"]}]}


async def test_our_profile_puts_the_code_in_the_structured_content_and_keeps_the_official_text(
    client: Client,
) -> None:
    result = await client.call_tool("add_observations", MISSING)
    assert result.is_error and result.content[0].text == "Entity with name Nobody not found"  # type: ignore[union-attr]
    assert result.structured_content == {"code": "not_found", "message": "Entity with name Nobody not found"}
    assert result.meta is not None and result.meta[ERROR_META]["code"] == "not_found"


async def test_a_tool_with_an_output_schema_carries_the_code_in_meta_only(tmp_path: Path) -> None:
    async with Client(create_server(Settings(store=tmp_path / "s", embeddings="off", profile="official"))) as c:
        result = await c.call_tool("add_observations", MISSING)
    assert result.is_error and result.structured_content is None  # it would fail the schema's validation
    assert result.meta is not None and result.meta[ERROR_META] == {
        "code": "not_found", "message": "Entity with name Nobody not found"}


@pytest.mark.parametrize(("arguments", "code"), [
    ({"entities": [{"name": "", "entityType": "t", "observations": []}]}, "invalid"),
    ({"entities": [{"name": "A", "entityType": "t", "observations": [], "expectedVersion": 3}]}, "conflict"),
])
async def test_each_kind_of_refusal_has_its_code(client: Client, arguments: dict, code: str) -> None:  # type: ignore[type-arg]
    result = await client.call_tool("create_entities", arguments)
    assert result.is_error and result.structured_content is not None
    assert result.structured_content["code"] == code


async def test_the_agent_memory_profile_answers_its_json_object_as_text_and_structure(tmp_path: Path) -> None:
    settings = Settings(store=tmp_path / "s", embeddings="off", profile="agent-memory")
    async with Client(create_server(settings)) as c:
        result = await c.call_tool("memory_tool", {"action": "get", "id": "tool_x"})
    assert json.loads(result.content[0].text) == result.structured_content == {  # type: ignore[union-attr]
        "error": "Tool 'tool_x' not found", "code": "not_found"}


@pytest.mark.parametrize(("profile", "structured"), [("chronograph", True), ("official", False),
                                                      ("agent-memory", True)])
async def test_a_tool_no_profile_serves_is_refused_with_its_code_and_the_way_out(
        tmp_path: Path, profile: str, structured: bool) -> None:
    async with Client(create_server(Settings(store=tmp_path / "s", embeddings="off", profile=profile))) as c:
        served = len((await c.list_tools()).tools)
        result = await c.call_tool("no_such_tool", {})
    assert result.is_error and result.meta is not None
    assert result.meta[ERROR_META] == {"code": "not_found", "message": (
        f"Unknown tool: no_such_tool. This server ({profile} profile) serves {served} tools; tools/list names them")}
    assert (result.structured_content is not None) == structured
    assert "Unknown tool: no_such_tool" in result.content[0].text  # type: ignore[union-attr]
