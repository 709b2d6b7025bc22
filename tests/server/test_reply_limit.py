"""Reads too large for one reply are refused with a way to page, not sent to break the client."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest
from chronograph.server.app import GRAPH_URI, create_server
from chronograph.server.config import DEFAULT_MAX_REPLY, Settings
from chronograph.tools.serve import add_arguments
from mcp import Client
from support.mcp import ToolFailed, call, entity, relation
from support.reads import count_entities_read

pytestmark = pytest.mark.anyio

LIMIT = 40_000
PAD = "an observation long enough to make the graph big " * 3


async def fill(client: Client, count: int) -> None:
    entities = [entity(f"E{i:04d}", "thing", f"{PAD} {i}") for i in range(count)]
    for start in range(0, count, 100):
        await call(client, "create_entities", {"entities": entities[start : start + 100]})
    await call(client, "create_relations", {"relations": [relation(f"E{i:04d}", "next", f"E{i + 1:04d}")
                                                          for i in range(count - 1)]})


async def test_a_read_graph_over_the_limit_says_which_page_size_fits(tmp_path: Path) -> None:
    async with Client(create_server(Settings(store=tmp_path / "store", max_reply=LIMIT))) as client:
        await fill(client, 300)
        with pytest.raises(ToolFailed, match=r"over the 39 KiB one reply may carry") as refused:
            await call(client, "read_graph")
        page = int(re.search(r"limit (\d+) and offset 0", str(refused.value)).group(1))  # type: ignore[union-attr]
        assert 0 < page < 300

        seen, relations, offset = [], 0, 0
        while True:
            answer = await client.call_tool("read_graph", {"limit": page, "offset": offset})
            assert not answer.is_error
            assert len(answer.model_dump_json(by_alias=True, exclude_none=True)) <= LIMIT
            graph = answer.structured_content
            assert graph is not None
            seen += [e["name"] for e in graph["entities"]]
            relations += len(graph["relations"])
            if "nextOffset" not in graph:
                break
            offset = graph["nextOffset"]
        assert seen == [f"E{i:04d}" for i in range(300)] and relations == 299


async def test_an_open_nodes_over_the_limit_says_how_many_names_fit_not_to_page_read_graph(tmp_path: Path) -> None:
    async with Client(create_server(Settings(store=tmp_path / "store", max_reply=LIMIT))) as client:
        await fill(client, 300)
        names = [f"E{i:04d}" for i in range(300)]
        with pytest.raises(ToolFailed, match=r"Open fewer names at a time \(about (\d+) of these fit\)") as refused:
            await call(client, "open_nodes", {"names": names})
        assert "read_graph" not in str(refused.value)
        fit = int(re.search(r"about (\d+) of these", str(refused.value)).group(1))  # type: ignore[union-attr]
        opened = await call(client, "open_nodes", {"names": names[:fit]})
        assert 0 < fit < 300 and len(opened["entities"]) == fit


async def test_small_reads_and_writes_are_unaffected_by_the_limit(tmp_path: Path) -> None:
    async with Client(create_server(Settings(store=tmp_path / "store", max_reply=LIMIT))) as client:
        await fill(client, 300)
        found = await call(client, "search_nodes", {"query": "E0042"})
        assert [e["name"] for e in found["entities"]] == ["E0042"]
        opened = await call(client, "open_nodes", {"names": ["E0001", "E0002"]})
        assert len(opened["entities"]) == 2 and len(opened["relations"]) == 3
        await call(client, "delete_entities", {"entityNames": [f"E{i:04d}" for i in range(300)]})


async def test_the_graph_resource_over_the_limit_points_to_paged_reads(tmp_path: Path) -> None:
    async with Client(create_server(Settings(store=tmp_path / "store", max_reply=LIMIT))) as client:
        await fill(client, 300)
        with pytest.raises(Exception, match="read_graph tool instead, a page at a time"):
            await client.read_resource(GRAPH_URI)


async def test_no_limit_answers_whatever_the_size(tmp_path: Path) -> None:
    async with Client(create_server(Settings(store=tmp_path / "store", max_reply=None))) as client:
        await fill(client, 300)
        assert len((await call(client, "read_graph"))["entities"]) == 300


def test_serve_takes_the_limit_as_a_size_and_zero_as_none() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args([]).max_reply == DEFAULT_MAX_REPLY < 10 << 20
    assert parser.parse_args(["--max-reply", "2M"]).max_reply == 2 << 20
    assert parser.parse_args(["--max-reply", "0"]).max_reply is None
    with pytest.raises(SystemExit):
        parser.parse_args(["--max-reply", "1K"])


@pytest.fixture
def entities_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many entity records the views have yielded, counted as they come."""
    return count_entities_read(monkeypatch)


WHOLE = [("chronograph", "export_graph", {"format": fmt}) for fmt in ("jsonl", "json", "markdown", "mermaid", "dot")]


@pytest.mark.parametrize(("profile", "tool", "arguments"), [
    *WHOLE,
    ("workspace", "read_graph", {"workspaceName": "default"}),
])
async def test_a_whole_workspace_answer_is_refused_once_it_passes_the_limit_not_once_it_is_built(
        tmp_path: Path, entities_read: list[int], profile: str, tool: str, arguments: dict[str, Any]) -> None:
    store = tmp_path / "store"
    async with Client(create_server(Settings(store=store, max_reply=None))) as client:
        await fill(client, 300)
    limit = 4_000 if arguments.get("format") in ("mermaid", "dot") else LIMIT  # those leave observations out
    async with Client(create_server(Settings(store=store, max_reply=limit, profile=profile))) as client:
        entities_read[0] = 0
        answer = await client.call_tool(tool, arguments)
    assert answer.is_error
    assert re.search(r"would be at least .* over the .* one reply may carry", answer.content[0].text)  # type: ignore[union-attr]
    assert 0 < entities_read[0] < 300 // 2


async def test_n2n_pages_are_refused_before_they_are_built_and_point_to_a_page_that_fits(
        tmp_path: Path, entities_read: list[int]) -> None:
    root = tmp_path / "repo"
    (root / ".mcp").mkdir(parents=True)
    (root / ".git").mkdir()
    project = {"projectPath": str(root)}
    async with Client(create_server(Settings(store=tmp_path / "store", profile="n2n", max_reply=None))) as client:
        await call(client, "n2n_add_entities", {**project, "entities": [
            {"name": f"E{i:04d}", "entityType": "thing", "observations": [f"{PAD} {i}"]} for i in range(300)]})
    async with Client(create_server(Settings(store=tmp_path / "store", profile="n2n", max_reply=LIMIT))) as client:
        await call(client, "n2n_search", {**project, "query": "E0001"})  # the word index at hand, as after any search
        entities_read[0] = 0
        refused = await client.call_tool("n2n_read_graph", project)
        assert refused.is_error and entities_read[0] < 300 // 2
        fit = int(re.search(r"n2n_read_graph with limit (\d+)", refused.content[0].text).group(1))  # type: ignore[union-attr]
        assert not (await client.call_tool("n2n_read_graph", {**project, "limit": fit})).is_error
    async with Client(create_server(Settings(store=tmp_path / "store", profile="n2n", max_reply=2_000))) as client:
        entities_read[0] = 0
        refused = await client.call_tool("n2n_get_graph_summary", project)
        assert refused.is_error and entities_read[0] < 300 // 2
        fit = int(re.search(r"n2n_get_graph_summary with limit (\d+)", refused.content[0].text).group(1))  # type: ignore[union-attr]
        assert not (await client.call_tool("n2n_get_graph_summary", {**project, "limit": fit})).is_error


async def test_an_export_too_large_for_a_reply_points_to_a_file_where_the_server_writes_them(tmp_path: Path) -> None:
    store = tmp_path / "store"
    async with Client(create_server(Settings(store=store, max_reply=None))) as client:
        await fill(client, 300)
    async with Client(create_server(Settings(store=store, max_reply=LIMIT, export_dir=tmp_path / "out"))) as client:
        with pytest.raises(ToolFailed, match="Pass outputPath to write it to a file"):
            await call(client, "export_graph", {"format": "jsonl"})
        written = await call(client, "export_graph", {"format": "jsonl", "outputPath": "graph.jsonl"})
    assert written["entities"] == 300 and (tmp_path / "out" / "graph.jsonl").stat().st_size == written["bytes"]


def wire_size(answer: Any) -> int:
    """The bytes the server counts for an answer: its structured content's JSON and its text as a JSON string."""
    return len(json.dumps(answer.structured_content, separators=(",", ":"), ensure_ascii=False).encode()) + len(
        json.dumps(answer.content[0].text, ensure_ascii=False).encode())


@pytest.mark.parametrize(("profile", "tool", "arguments"), [
    ("chronograph", "read_graph", {}),
    ("chronograph", "read_graph", {"summaryMode": True}),
    ("official", "read_graph", {}),
    ("workspace", "read_graph", {"workspaceName": "default"}),
    ("n2n", "n2n_read_graph", {}),
    ("n2n", "n2n_read_graph", {"summaryMode": True}),
    ("n2n", "n2n_get_graph_summary", {}),
    ("full", "n2n_read_graph", {}),
    ("full", "n2n_get_graph_summary", {}),
])
async def test_an_answer_just_under_the_limit_is_answered_and_one_well_over_it_refused(
        tmp_path: Path, profile: str, tool: str, arguments: dict[str, Any]) -> None:
    root = tmp_path / "repo"
    (root / ".mcp").mkdir(parents=True)
    (root / ".git").mkdir()
    if tool.startswith("n2n"):
        arguments = {**arguments, "projectPath": str(root)}
        write = ("n2n_add_entities", {"projectPath": str(root)})
    else:
        write = ("create_entities", {})
    store = tmp_path / "store"
    async with Client(create_server(Settings(store=store, max_reply=None, profile="full"))) as client:
        await call(client, write[0], {**write[1], "entities": [
            {"name": f"E{i:03d}", "entityType": "t", "observations": ["o"]} for i in range(120)]})
    async with Client(create_server(Settings(store=store, max_reply=None, profile=profile))) as client:
        whole = await client.call_tool(tool, arguments)
        assert not whole.is_error and "E119" in whole.content[0].text  # type: ignore[union-attr]
        size = wire_size(whole)
    for limit, refused in ((size * 103 // 100, False), (size // 2, True)):
        async with Client(create_server(Settings(store=store, max_reply=limit, profile=profile))) as client:
            search = ("n2n_search", {"projectPath": str(root), "query": "E001"}) if tool.startswith("n2n") else (
                "search_nodes", {"query": "E001"})
            if profile != "workspace":
                await client.call_tool(*search)  # the word index at hand: the early refusal's bound is used
            answer = await client.call_tool(tool, arguments)
        assert answer.is_error is refused, (limit, size, answer.content[0].text[:200])  # type: ignore[union-attr]
