"""Guarded writes: a write with the version its caller read fails as a conflict when the entity
was renamed (deleted, merged) meanwhile, and says what became of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.application.errors import ChronographError, ConflictError

RELATION = {"from": "Ada", "relationType": "knows", "to": "Bob"}
GUARDED: dict[str, dict[str, Any]] = {  # each guarded tool, with the version of Ada (1) or Ada knows Bob (1)
    "create_entities": {"entities": [{"name": "Ada", "entityType": "t", "observations": [], "expectedVersion": 1}]},
    "add_observations": {"observations": [{"entityName": "Ada", "contents": ["x"], "expectedVersion": 1}]},
    "delete_entities": {"entityNames": ["Ada"], "expectedVersions": {"Ada": 1}},
    "delete_observations": {"deletions": [{"entityName": "Ada", "observations": ["a"], "expectedVersion": 1}]},
    "update_entities": {"entities": [{"name": "Ada", "entityType": "u", "expectedVersion": 1}]},
    "rename_entity": {"name": "Ada", "newName": "Zed", "expectedVersion": 1},
    "merge_entities": {"target": "Ada", "sources": ["Cy"], "expectedVersion": 1},
    "revert_entity": {"name": "Ada", "toVersion": 1, "expectedVersion": 1},
    "create_relations": {"relations": [{**RELATION, "expectedVersion": 1}]},
    "delete_relations": {"relations": [{**RELATION, "expectedVersion": 1}]},
    "update_relations": {"relations": [{**RELATION, "confidence": 0.5, "expectedVersion": 1}]},
}


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as opened:
        opened.write("create_entities", {"entities": [{"name": n, "entityType": "t", "observations": ["a"]}
                                                      for n in ("Ada", "Bob", "Cy")]}, actor="reader")
        opened.write("create_relations", {"relations": [RELATION]}, actor="reader")
        yield opened


def refused(memory: Memory, tool: str, arguments: dict[str, Any]) -> ChronographError:
    head = memory.log.head()
    with pytest.raises(ChronographError) as failed:
        memory.write(tool, arguments, actor="reader")
    assert memory.log.head() == head  # nothing was written
    return failed.value


@pytest.mark.parametrize("tool", list(GUARDED))
def test_a_guarded_write_that_loses_a_race_to_a_rename_is_a_conflict_that_names_it_now(
        memory: Memory, tool: str) -> None:
    memory.read("open_nodes", {"names": ["Ada"]})  # the reader sees Ada at version 1 ...
    memory.write("rename_entity", {"name": "Ada", "newName": "Augusta"}, actor="other")  # ... another renames her
    error = refused(memory, tool, GUARDED[tool])
    assert isinstance(error, ConflictError) and error.code == "conflict"
    if "relations" in GUARDED[tool]:
        assert "its end 'Ada' was renamed since; it is 'Augusta' -[knows]-> 'Bob' now, at version 1" in str(error)
        assert error.state.source == "Augusta"
    else:
        assert "it was renamed since: it is 'Augusta' now, at version 2" in str(error)
        assert (error.current, error.state.name) == (2, "Augusta")


@pytest.mark.parametrize(("change", "told"), [
    ({"entityNames": ["Ada"]}, "it was deleted since"),
    ({"target": "Cy", "sources": ["Ada"]}, "it was merged into 'Cy' since"),
])
def test_a_guarded_write_to_an_entity_deleted_or_merged_since_is_a_conflict_that_says_so(
        memory: Memory, change: dict[str, Any], told: str) -> None:
    memory.write("delete_entities" if "entityNames" in change else "merge_entities", change, actor="other")
    error = refused(memory, "add_observations", GUARDED["add_observations"])
    assert error.code == "conflict" and told in str(error) and error.state is None


def test_an_entity_renamed_then_deleted_is_told_as_both(memory: Memory) -> None:
    memory.write("rename_entity", {"name": "Ada", "newName": "Augusta"}, actor="other")
    memory.write("rename_entity", {"name": "Augusta", "newName": "Augusta L"}, actor="other")
    memory.write("delete_entities", {"entityNames": ["Augusta L"]}, actor="other")
    error = refused(memory, "update_entities", GUARDED["update_entities"])
    assert "it was renamed 'Augusta L', then deleted since" in str(error)


def test_an_unguarded_write_to_a_renamed_entity_is_still_not_found(memory: Memory) -> None:
    memory.write("rename_entity", {"name": "Ada", "newName": "Augusta"}, actor="other")
    error = refused(memory, "add_observations", {"observations": [{"entityName": "Ada", "contents": ["x"]}]})
    assert error.code == "not_found"


def test_a_guard_of_absence_holds_for_a_name_renamed_away(memory: Memory) -> None:
    memory.write("rename_entity", {"name": "Ada", "newName": "Augusta"}, actor="other")
    memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "t", "observations": [],
                                                   "expectedVersion": 0}]}, actor="reader")
    assert {e.name for e in memory.read("read_graph", {}).entities} == {"Ada", "Augusta", "Bob", "Cy"}
