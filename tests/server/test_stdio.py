"""The server as Claude Desktop runs it: a subprocess speaking MCP over stdio."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from support.mcp import ToolFailed, call, entity, names

pytestmark = [pytest.mark.anyio, pytest.mark.wire]
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def server(store: Path, *extra: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "chronograph", "--store", str(store), *extra],
        env=env or ENV, cwd=str(ROOT),
    )


async def test_a_stdio_server_serves_and_keeps_what_it_was_told(tmp_path: Path) -> None:
    store = tmp_path / "store"
    async with Client(server(store)) as c:
        await call(c, "create_entities", {"entities": [entity("Ada", "person", "durable")]})
    async with Client(server(store)) as c:  # a new process reads what the first one wrote
        graph = await call(c, "read_graph")
    assert names(graph) == ["Ada"] and graph["entities"][0]["observations"] == ["durable"]


async def test_the_store_location_comes_from_the_environment_when_no_flag_is_given(tmp_path: Path) -> None:
    store = tmp_path / "from-env"
    params = StdioServerParameters(command=sys.executable, args=["-m", "chronograph"],
                                   env={**ENV, "CHRONOGRAPH_STORE": str(store)}, cwd=str(ROOT))
    async with Client(params) as c:
        await call(c, "create_entities", {"entities": [entity("Ada")]})
    assert (store / "data.mdb").exists()


async def test_two_server_processes_on_one_store_lose_no_write(tmp_path: Path) -> None:
    store = tmp_path / "store"
    async with Client(server(store)):  # create the store (and its views) once
        pass

    async def writer(prefix: str) -> None:
        async with Client(server(store)) as c:
            for i in range(500):
                await call(c, "create_entities", {"entities": [entity(f"{prefix}{i}")]})

    async with anyio.create_task_group() as group:
        group.start_soon(writer, "left-")
        group.start_soon(writer, "right-")
    async with Client(server(store)) as c:
        graph = await call(c, "read_graph")
    assert len(graph["entities"]) == 1000
    assert len(set(names(graph))) == 1000


async def test_a_race_on_a_stale_expected_version_has_exactly_one_winner(tmp_path: Path) -> None:
    store = tmp_path / "store"
    async with Client(server(store)) as a, Client(server(store)) as b:
        await call(a, "create_entities", {"entities": [entity("Ada")]})
        for round_ in range(10):
            [ada] = (await call(a, "open_nodes", {"names": ["Ada"]}))["entities"]
            outcomes: list[str] = []

            async def attempt(
                client: Client, label: str, version: int = ada["version"], round_: int = round_,
                outcomes: list[str] = outcomes,
            ) -> None:
                try:
                    await call(client, "add_observations", {"observations": [
                        {"entityName": "Ada", "contents": [f"{label}{round_}"], "expectedVersion": version}]})
                    outcomes.append("won")
                except ToolFailed as failed:
                    assert f"is at version {version + 1}" in str(failed)
                    outcomes.append("conflict")

            async with anyio.create_task_group() as group:
                group.start_soon(attempt, a, "a")
                group.start_soon(attempt, b, "b")
            assert sorted(outcomes) == ["conflict", "won"]


def test_a_store_path_that_is_a_file_is_one_clear_line_and_exit_code_2(tmp_path: Path) -> None:
    path = tmp_path / "memory.jsonl"
    path.write_text("")
    done = subprocess.run([sys.executable, "-m", "chronograph", "--store", str(path)], env=ENV, cwd=ROOT,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == f"chronograph: {path} is a file; a store is a directory"


async def test_a_stdio_server_searches_by_meaning_and_forgives_typos_with_the_bundled_model(tmp_path: Path) -> None:
    store = tmp_path / "store"
    people = [entity("Bob", "person", "Software engineer at a startup"),
              entity("Carol", "person", "Grows tomatoes in her garden"),
              entity("Dan", "person", "Plays the violin in an orchestra")]
    async with Client(server(store, "--embeddings", "local")) as c:
        await call(c, "create_entities", {"entities": people})
        assert (await call(c, "search_nodes", {"query": "programmer"}))["entities"] == []  # no such word
        meaning = await call(c, "search_nodes", {"query": "programmer", "mode": "semantic", "limit": 1})
        assert names(meaning) == ["Bob"] and meaning["embeddedThrough"] == meaning["head"]
        assert names(await call(c, "search_nodes", {"query": "violn", "mode": "fuzzy"})) == ["Dan"]
        similar = await call(c, "semantic_search", {"query": "gardening", "limit": 1})
        assert [e["name"] for e in similar["entities"]] == ["Carol"]
    async with Client(server(store, "--embeddings", "off")) as c:
        with pytest.raises(ToolFailed, match="--embeddings"):
            await call(c, "search_nodes", {"query": "programmer", "mode": "hybrid"})
        assert names(await call(c, "search_nodes", {"query": "violin", "mode": "ranked"})) == ["Dan"]
