"""n2n_search pages through the core's matches: every one can be reached, and totalResults counts
them all (those above minScore of the best, when fuzzy), or says it is a lower bound."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import PROFILES, Memory

N2N = PROFILES["n2n"].tools


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Memory, dict[str, str]]]:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    with Memory(tmp_path / "store", sync=False, project_files=False) as memory:
        yield memory, {"projectPath": str(root), "confirmNewProjectRoot": str(root)}


def call(project: tuple[Memory, dict[str, str]], tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    memory, base = project
    out = memory.call(N2N[tool], {**base, **arguments}, actor="t").output
    reply: dict[str, Any] = msgspec.to_builtins(out)["reply"]
    return reply


def add(project: tuple[Memory, dict[str, str]], names: list[str], observation: str) -> None:
    for start in range(0, len(names), 400):
        call(project, "n2n_add_entities", {"entities": [
            {"name": name, "entityType": "thing", "observations": [observation]} for name in names[start:start + 400]]})


@pytest.mark.parametrize("fuzzy", [True, False])
def test_n2n_search_pages_past_a_thousand_matches_and_counts_them_all(
        project: tuple[Memory, dict[str, str]], fuzzy: bool) -> None:
    add(project, [f"item{i}" for i in range(1200)], "widget")
    seen: list[str] = []
    offset = 0
    while True:
        reply = call(project, "n2n_search", {"query": "widget", "fuzzy": fuzzy, "limit": 250, "offset": offset})
        assert reply["totalResults"] == 1200 and "totalIsLowerBound" not in reply
        seen += [e["name"] for e in reply["entities"]]
        if not reply["isTruncated"]:
            break
        offset += 250
    assert len(seen) == len(set(seen)) == 1200
    assert len(call(project, "n2n_search", {"query": "widget", "fuzzy": fuzzy, "offset": 1100})["entities"]) == 20


def test_n2n_search_counts_the_fuzzy_matches_above_min_score_wherever_the_page_is(
        project: tuple[Memory, dict[str, str]]) -> None:
    add(project, [f"exact{i}" for i in range(5)], "widget")
    add(project, [f"near{i}" for i in range(5)], "widgot")  # one edit away: half the score
    everything = call(project, "n2n_search", {"query": "widget"})
    assert everything["totalResults"] == 10 and len(everything["entities"]) == 10
    pages = [call(project, "n2n_search", {"query": "widget", "minScore": 0.6, "limit": 2, "offset": offset})
             for offset in (0, 2, 4, 6)]
    assert [page["totalResults"] for page in pages] == [5, 5, 5, 5]
    assert [page["isTruncated"] for page in pages] == [True, True, False, False]
    assert [e["name"] for page in pages for e in page["entities"]] == [f"exact{i}" for i in range(5)]
    assert all(e["score"] == 1.0 for page in pages for e in page["entities"])


def test_n2n_search_says_its_total_is_a_lower_bound_when_it_stopped_counting(
        project: tuple[Memory, dict[str, str]]) -> None:
    add(project, [f"exact{i}" for i in range(1100)], "widget")
    add(project, [f"near{i}" for i in range(1100)], "widgot")  # as many: half the score
    reply = call(project, "n2n_search", {"query": "widget", "minScore": 0.6, "limit": 10})
    assert reply["totalResults"] == 1010 and reply["totalIsLowerBound"] is True and reply["isTruncated"] is True
    last = call(project, "n2n_search", {"query": "widget", "minScore": 0.6, "limit": 10, "offset": 1090})
    assert last["totalResults"] == 1100 and "totalIsLowerBound" not in last and last["isTruncated"] is False
