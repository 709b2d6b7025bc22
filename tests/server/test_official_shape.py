"""The official profile answers byte for byte as the official memory server does.

`official_replies.json` holds what @modelcontextprotocol/server-memory@2026.8.31 answered to
a sequence of calls (each call's text block, and its structured content as compact JSON in
the server's key order), recorded from the real server. The first test replays the calls on
the official profile and compares the bytes, without node; the second runs the real server
(with npx, when node is present) and checks that it still answers what was recorded and that
the official profile answers the same.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.anyio

RECORDED = json.loads((Path(__file__).parent / "official_replies.json").read_text(encoding="utf-8"))
PACKAGE = RECORDED["package"]


def compact(structured: Any) -> str:
    """Structured content as compact JSON, keys in the order the server sent them."""
    return json.dumps(structured, ensure_ascii=False, separators=(",", ":"))


async def replies(client: Client) -> list[dict[str, Any]]:
    """The text block and structured content of each recorded call, as `client`'s server answers."""
    answered = []
    for step in RECORDED["calls"]:
        result = await client.call_tool(step["tool"], step["arguments"])
        assert not result.is_error, (step, result.content)
        answered.append({"tool": step["tool"], "arguments": step["arguments"],
                         "text": result.content[0].text,  # type: ignore[union-attr]
                         "structured": compact(result.structured_content)})
    return answered


async def test_the_official_profile_answers_the_official_server_s_bytes(tmp_path: Path) -> None:
    async with Client(create_server(Settings(store=tmp_path / "store", profile="official"))) as client:
        ours = await replies(client)
    assert ours == RECORDED["calls"]


@pytest.mark.xdist_group("npx")  # one npx at a time: two fetching one package into its cache collide
async def test_the_official_profile_answers_as_the_running_official_server_does(tmp_path: Path) -> None:
    if shutil.which("node") is None or shutil.which("npx") is None:
        pytest.skip("no node: the recorded replies are checked without it")
    official = StdioServerParameters(command="npx", args=["-y", PACKAGE],
                                     env={**os.environ, "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")})
    try:
        async with Client(official, read_timeout_seconds=120) as client:
            theirs = await replies(client)
    except Exception as error:  # npx could not fetch the package (no registry here)
        pytest.skip(f"the official server did not start: {error!r}")
    async with Client(create_server(Settings(store=tmp_path / "store", profile="official"))) as client:
        ours = await replies(client)
    assert theirs == RECORDED["calls"]
    assert ours == theirs


async def official_client(tmp_path: Path) -> Client:
    return Client(create_server(Settings(store=tmp_path / "store", embeddings="off", profile="official")))


async def test_the_official_profile_gives_versions_and_times_when_include_metadata_asks(tmp_path: Path) -> None:
    async with await official_client(tmp_path) as client:
        await client.call_tool("create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": []}]})
        await client.call_tool("create_relations", {"relations": [{"from": "Ada", "to": "Ada", "relationType": "is"}]})
        plain = (await client.call_tool("read_graph", {})).structured_content
        asked = (await client.call_tool("read_graph", {"includeMetadata": True})).structured_content
    assert plain == {"entities": [{"name": "Ada", "entityType": "person", "observations": []}],
                     "relations": [{"from": "Ada", "to": "Ada", "relationType": "is"}]}
    assert asked is not None
    for item in (*asked["entities"], *asked["relations"]):
        assert item["version"] == 1 and item["createdAt"] == item["updatedAt"]


async def test_an_official_deletion_sets_what_it_did_not_find_aside_in_meta(tmp_path: Path) -> None:
    async with await official_client(tmp_path) as client:
        await client.call_tool("create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": []}]})
        result = await client.call_tool("delete_entities", {"entityNames": ["Ada", "Nobody"]})
        clean = await client.call_tool("delete_entities", {"entityNames": []})
    assert result.structured_content == {"success": True, "message": "Entities deleted successfully"}
    assert result.meta is not None and result.meta["chronograph/notFound"] == ["Nobody"]
    assert "chronograph/notFound" not in (clean.meta or {})


async def test_the_official_profile_s_graph_resource_reads_as_the_official_server_s(tmp_path: Path) -> None:
    async with await official_client(tmp_path) as client:
        await client.call_tool("create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["o"]}]})
        resource = await client.read_resource("memory://knowledge-graph")
        graph = (await client.call_tool("read_graph", {})).content[0].text  # type: ignore[union-attr]
    assert resource.contents[0].text == graph  # type: ignore[union-attr]
    assert "version" not in graph
