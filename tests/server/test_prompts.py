"""The `recall` and `remember` prompts, over stdio as a client spawns the server."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from support.mcp import call, entity

pytestmark = [pytest.mark.anyio, pytest.mark.wire]
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def server(store: Path, profile: str, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "chronograph", "--store", str(store), "--profile", profile, "--embeddings", "off", *extra],
        env=ENV, cwd=str(ROOT))


async def prompt(client: Client, name: str, arguments: dict[str, str] | None = None) -> str:
    result = await client.get_prompt(name, arguments or {})
    assert len(result.messages) == 1 and result.messages[0].role == "user"
    return result.messages[0].content.text  # type: ignore[union-attr]


@pytest.mark.parametrize("profile", ["chronograph", "n2n", "kuzu"])
async def test_recall_and_remember_are_listed_and_got_on_the_profiles_that_offer_them(
        tmp_path: Path, profile: str) -> None:
    async with Client(server(tmp_path / "store", profile)) as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(listed) == {"recall", "remember"}
        assert {a.name for a in listed["recall"].arguments or []} == {"query", "project", "budget"}
        assert "nothing yet" in await prompt(client, "recall")
        assert "Nothing was saved in this session yet" in await prompt(client, "remember")


@pytest.mark.parametrize("profile", ["official", "agent-memory", "workspace"])
async def test_the_profiles_of_other_servers_keep_their_capabilities_unless_asked(tmp_path: Path, profile: str) -> None:
    async with Client(create_server(Settings(store=tmp_path / "a", profile=profile, embeddings="off"))) as client:
        assert (await client.list_prompts()).prompts == []
    asked = Settings(store=tmp_path / "b", profile=profile, embeddings="off", prompts=True)
    async with Client(create_server(asked)) as client:
        assert {p.name for p in (await client.list_prompts()).prompts} == {"recall", "remember"}


async def test_a_recall_for_a_project_names_its_hot_context_and_its_entities(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    project = {"projectPath": str(repo)}
    store = tmp_path / "store"
    async with Client(server(store, "n2n")) as client:
        await call(client, "n2n_read_graph", {**project, "confirmNewProjectRoot": str(repo)})
        await call(client, "n2n_add_entities", {**project, "entities": [
            {"name": "MemoryService", "entityType": "CLASS", "observations": ["Coordinates graph reads"]}]})
        await call(client, "n2n_update_context", {**project, "activeTask": "Refactor MCP error handling",
                                                  "nextSteps": ["Run tests"]})
        await call(client, "n2n_add_entities", {**project, "entities": [
            {"name": "ErrorMapper", "entityType": "CLASS", "observations": ["maps errors"]}]})
    async with Client(server(store, "n2n")) as client:
        text = await prompt(client, "recall", {"project": str(repo)})
        assert "Refactor MCP error handling" in text and "Run tests" in text
        assert "MemoryService" in text and "ErrorMapper" in text and "project n2n:repo:" in text
        elsewhere = await prompt(client, "recall", {"project": str(tmp_path)})  # no project there
        assert "MemoryService" not in elsewhere


async def test_remember_lists_what_this_session_wrote_and_recall_what_others_did_since(tmp_path: Path) -> None:
    store = tmp_path / "store"
    async with Client(server(store, "chronograph")) as client:
        await call(client, "create_entities", {"entities": [entity("Ada", "person", "math")]})
        text = await prompt(client, "remember")
        assert "- Ada: entity created" in text and "add_observations" in text
    async with Client(server(store, "chronograph", "--actor", "alice")) as other:
        await call(other, "add_observations", {"observations": [{"entityName": "Ada", "contents": ["poetry"]}]})
    async with Client(server(store, "chronograph")) as client:
        assert "Nothing was saved in this session yet" in await prompt(client, "remember")
        text = await prompt(client, "recall", {"query": "Ada", "budget": "300"})
        assert "## Changed since your last session" in text and "alice: observations added: Ada" in text


async def test_a_budget_that_is_not_a_number_leaves_the_default(tmp_path: Path) -> None:
    async with Client(create_server(Settings(store=tmp_path / "store", embeddings="off"))) as client:
        for budget in ("x", "", "-5", "1e3", "9" * 5000):
            result = await client.get_prompt("recall", {"budget": budget})
            assert "nothing yet" in result.messages[0].content.text  # type: ignore[union-attr]


@pytest.mark.parametrize(("name", "arguments", "said"), [
    ("nope", {}, "no prompt named 'nope'; the prompts are: recall, remember"),
    ("recall", {"bogus": "1"}, "takes no argument 'bogus'; it takes: query, project, budget"),
    ("remember", {"query": "x"}, "takes no argument 'query'"),
    ("recall", {"project": "/a\0b"}, "the prompt 'recall': project: holds a NUL character"),
])
async def test_a_prompt_or_argument_that_does_not_exist_is_invalid_params_saying_what_there_is(
        tmp_path: Path, name: str, arguments: dict[str, str], said: str) -> None:
    """The SDK answered each with code 0 and a bare 'Error rendering prompt', logging a traceback."""
    async with Client(create_server(Settings(store=tmp_path / "store", embeddings="off"))) as client:
        with pytest.raises(MCPError) as refused:
            await client.get_prompt(name, arguments)
    assert refused.value.error.code == INVALID_PARAMS and said in refused.value.error.message


async def test_an_imported_n2n_project_is_recalled_for_whoever_may_read_it_and_unseen_by_others(
        tmp_path: Path) -> None:
    import json

    from chronograph.application.engine.principal import Principal
    from chronograph.server.app import Runtime
    from chronograph.tools.cli import main as cli

    project = tmp_path / "shop"
    (project / ".mcp").mkdir(parents=True)
    (project / ".mcp" / "memory.json").write_text(json.dumps({"entities": [
        {"name": "Checkout", "entityType": "component", "observations": ["fix billing"]}], "relations": []}))
    assert cli(["import", "--store", str(tmp_path / "store"), str(project)]) == 0
    settings = Settings(store=tmp_path / "store", profile="n2n", embeddings="off")
    runtime = Runtime(settings)
    async with Client(create_server(settings, runtime)) as client:
        assert "Checkout" in await prompt(client, "recall", {"project": str(project)})  # the local user
        runtime.principal = Principal("reader", {"default": "read"})
        shown = await prompt(client, "recall", {"project": str(project)})  # no grant on the project's workspace
        assert "Checkout" not in shown and shown == await prompt(client, "recall", {"project": str(tmp_path)})
