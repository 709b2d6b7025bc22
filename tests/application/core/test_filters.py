"""search_nodes' filters: relationTypes counts only the relations true at the answer's valid
time, and metadata compares as JSON (`1` is not `true`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as opened:
        yield opened


def found(memory: Memory, **arguments: Any) -> tuple[list[str], list[tuple[str, str]]]:
    out = msgspec.to_builtins(memory.read("search_nodes", arguments))
    return [e["name"] for e in out["entities"]], [(r["from"], r["to"]) for r in out["relations"]]


@pytest.mark.parametrize("mode", ["substring", "ranked", "fuzzy"])
def test_relation_types_keeps_an_entity_only_for_a_relation_true_at_the_answer_s_valid_time(
        memory: Memory, mode: str) -> None:
    memory.write("create_entities", {"entities": [
        {"name": "Ada", "entityType": "person", "observations": ["engineer"]},
        {"name": "Bob", "entityType": "person", "observations": ["engineer"]},
        {"name": "Acme", "entityType": "company", "observations": []}]}, actor="t")
    memory.write("create_relations", {"relations": [
        {"from": "Ada", "to": "Acme", "relationType": "works_at", "validFrom": "2001-01-01T00:00:00Z"},
        {"from": "Bob", "to": "Acme", "relationType": "works_at", "validFrom": "2099-01-01T00:00:00Z"}]}, actor="t")
    memory.write("invalidate_relations", {"relations": [{"from": "Ada", "to": "Acme", "relationType": "works_at"}]},
                 actor="t")
    asked = {"query": "engineer", "mode": mode, "relationTypes": ["works_at"]}
    assert found(memory, **asked) == ([], [])
    assert found(memory, **asked, validAt="2010-01-01T00:00:00Z") == (["Ada"], [("Ada", "Acme")])
    assert found(memory, **asked, validAt="2100-01-01T00:00:00Z") == (["Bob"], [("Bob", "Acme")])


def test_a_metadata_filter_tells_true_from_1_and_false_from_0(memory: Memory) -> None:
    memory.write("create_entities", {"entities": [
        {"name": "A", "entityType": "task", "observations": ["todo"], "metadata": {"priority": 1, "done": False}},
        {"name": "B", "entityType": "task", "observations": ["todo"], "metadata": {"priority": True, "done": 0}},
        {"name": "C", "entityType": "task", "observations": ["todo"], "metadata": {"priority": 1.0, "done": None}}]},
        actor="t")
    for metadata, names in (({"priority": 1}, ["A", "C"]), ({"priority": True}, ["B"]), ({"done": False}, ["A"]),
                            ({"done": 0}, ["B"]), ({"done": None}, ["C"])):
        for mode in ("substring", "ranked"):
            assert found(memory, query="todo", mode=mode, metadata=metadata)[0] == names, (metadata, mode)
