"""JSON values compared as JSON: numbers by value, `true` never `1`; and every write that asks
whether metadata changed asks it so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import PROFILES, Memory
from chronograph.application.engine.jsonvalues import same_json
from chronograph.application.graphdiff import diff


@pytest.mark.parametrize(("a", "b", "same"), [
    (1, 1.0, True), (1, True, False), (0, False, False), (True, True, True), (None, None, True), (None, 0, False),
    ("1", 1, False), ({"a": [1, {"b": 2.0}]}, {"a": [1.0, {"b": 2}]}, True), ({"a": 1}, {"a": True}, False),
    ([0], [False], False), ({"a": 1}, {"a": 1, "b": 1}, False), ([1, 2], [2, 1], False), ("x", "x", True)])
def test_json_values_are_the_same_as_json_says_and_true_is_never_1(a: Any, b: Any, same: bool) -> None:
    assert same_json(a, b) is same and same_json(b, a) is same


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as opened:
        yield opened


def test_metadata_changed_from_1_to_true_is_a_change_to_every_write_that_asks(memory: Memory) -> None:
    workspace = PROFILES["workspace"].tools
    upsert = {"workspaceName": "w", "name": "Ada", "entityType": "person"}
    first = memory.write(workspace["upsert_entity"], {**upsert, "metadata": '{"p": 1}'}, actor="t").output.reply  # type: ignore[attr-defined]
    before = memory.log.head()
    again = memory.write(workspace["upsert_entity"], {**upsert, "metadata": '{"p": true}'}, actor="t").output.reply  # type: ignore[attr-defined]
    assert again["version"] == first["version"] + 1
    [ada] = memory.read("open_nodes", {"workspace": "w", "names": ["Ada"], "includeMetadata": True}).entities  # type: ignore[attr-defined]
    assert msgspec.json.encode(ada.metadata) == b'{"p":true}'
    assert [c["detail"] for c in diff(memory, "w", before, memory.log.head())] == ["metadata"]
    reverted = memory.write("revert_entity", {"workspace": "w", "name": "Ada", "toVersion": 1}, actor="t").output
    assert msgspec.json.encode(reverted.entities[0].metadata) == b'{"p":1}'  # type: ignore[attr-defined]  # not "already"

    memory.write("create_entities", {"entities": [
        {"name": "T", "entityType": "t", "observations": [], "metadata": {"p": 1, "q": 1}},
        {"name": "S", "entityType": "t", "observations": [], "metadata": {"p": True, "q": 1.0}}]}, actor="t")
    merged = memory.write("merge_entities", {"target": "T", "sources": ["S"]}, actor="t").output
    assert merged.metadata_conflicts == ["p"]  # type: ignore[attr-defined]  # (1 and 1.0 agree)

    added = memory.write("memory_tool", {"action": "add", "scopeType": "global", "name": "lint",
                                         "parameters": {"strict": 1}}, actor="t").output.reply  # type: ignore[attr-defined]
    changed = memory.write("memory_tool", {"action": "update", "id": added["tool"]["id"],
                                           "parameters": {"strict": True}}, actor="t").output.reply  # type: ignore[attr-defined]
    assert "unchanged" not in changed
    assert msgspec.json.encode(changed["tool"]["currentVersion"]["parameters"]) == b'{"strict":true}'
