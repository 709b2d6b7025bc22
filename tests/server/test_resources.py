"""Resources: only what can be read is listed, and a read that fails is an error with the code
the session's protocol asks for (-32002 up to 2025-11-25, -32602 from 2026-07-28)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chronograph.application import PROFILES
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from chronograph.server.resources import RESOURCE_NOT_FOUND
from mcp import Client, MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from support.mcp import call

pytestmark = pytest.mark.anyio

MODES = [("legacy", RESOURCE_NOT_FOUND), ("auto", INVALID_PARAMS)]
"""(client mode, the not-found code its protocol asks for): the initialize handshake negotiates
2025-11-25, `auto` the stateless 2026-07-28."""


def server(tmp_path: Path, profile: str = "full", **settings: object) -> object:
    return create_server(Settings(store=tmp_path / "store", embeddings="off", profile=profile, **settings))  # type: ignore[arg-type]


async def refusal(client: Client, uri: str) -> MCPError:
    with pytest.raises(MCPError) as raised:
        await client.read_resource(uri)
    assert raised.value.data["uri"] == uri
    return raised.value


@pytest.mark.parametrize("name", PROFILES)
async def test_every_listed_resource_of_every_profile_reads_as_a_success(tmp_path: Path, name: str) -> None:
    async with Client(server(tmp_path, name), mode="legacy") as client:
        if "create_entities" in PROFILES[name].tools:
            await call(client, "create_entities",
                       {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]})
        listed = (await client.list_resources()).resources
        assert listed
        for resource in listed:
            body = json.loads((await client.read_resource(resource.uri)).contents[0].text)  # type: ignore[union-attr]
            assert not (isinstance(body, dict) and ({"error", "code"} & set(body) or body.get("status") == "error")), (
                resource.uri, body)


@pytest.mark.parametrize(("mode", "code"), MODES)
async def test_an_unknown_resource_is_not_found_with_the_code_of_the_session_s_protocol(
    tmp_path: Path, mode: str, code: int
) -> None:
    async with Client(server(tmp_path), mode=mode) as client:  # type: ignore[arg-type]
        missing = await refusal(client, "memory://nope")
    assert (missing.code, missing.data["code"]) == (code, "not_found")
    assert "memory://nope" in missing.message


@pytest.mark.parametrize(("mode", "code"), MODES)
async def test_the_project_graph_of_a_path_that_does_not_exist_is_not_found(
    tmp_path: Path, mode: str, code: int
) -> None:
    async with Client(server(tmp_path, "n2n"), mode=mode) as client:  # type: ignore[arg-type]
        missing = await refusal(client, f"mcp://memory/graph?path={tmp_path / 'nowhere'}")
    assert (missing.code, missing.data["code"]) == (code, "not_found")
    assert "does not exist" in missing.message


async def test_the_project_graph_of_a_project_never_set_up_is_not_found_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    async with Client(server(tmp_path, "n2n"), mode="legacy") as client:
        missing = await refusal(client, f"mcp://memory/graph?path={tmp_path / 'repo'}")
    assert missing.code == RESOURCE_NOT_FOUND and "confirmNewProjectRoot" in missing.message
    assert "resources cannot confirm" in missing.message and "call the same tool" not in missing.message
    assert not (tmp_path / "repo" / ".mcp").exists()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_relative_project_path_is_invalid_params_in_every_protocol(tmp_path: Path, mode: str) -> None:
    async with Client(server(tmp_path, "n2n"), mode=mode) as client:  # type: ignore[arg-type]
        wrong = await refusal(client, "mcp://memory/graph?path=relative/root")
    assert (wrong.code, wrong.data["code"]) == (INVALID_PARAMS, "invalid")
    assert "not absolute" in wrong.message


async def test_the_project_graph_without_a_path_is_not_listed_and_says_how_to_read_it(tmp_path: Path) -> None:
    async with Client(server(tmp_path, "n2n"), mode="legacy") as client:
        assert "mcp://memory/graph" not in [str(r.uri) for r in (await client.list_resources()).resources]
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["mcp://memory/graph?path={+path}"]
        bare = await refusal(client, "mcp://memory/graph")
    assert bare.code == RESOURCE_NOT_FOUND and "mcp://memory/graph?path=<absolute project root>" in bare.message


async def test_a_graph_too_big_to_send_is_an_internal_error_with_code_limit(tmp_path: Path) -> None:
    async with Client(server(tmp_path, "chronograph", max_reply=2000), mode="legacy") as client:
        await call(client, "create_entities", {"entities": [
            {"name": f"E{i}", "entityType": "thing", "observations": ["x" * 100]} for i in range(40)]})
        big = await refusal(client, "memory://knowledge-graph")
    assert (big.code, big.data["code"]) == (INTERNAL_ERROR, "limit")
    assert "read_graph tool instead" in big.message
