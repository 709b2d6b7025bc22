"""Reads too large for one reply are refused with a way to page, not sent to break the client."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from chronograph.server.app import GRAPH_URI, create_server
from chronograph.server.config import DEFAULT_MAX_REPLY, Settings
from chronograph.tools.serve import add_arguments
from mcp import Client
from support.mcp import ToolFailed, call, entity, relation

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
