"""A command answers from what the views will hold: its events folded through the one fold."""

from __future__ import annotations

from pathlib import Path

import msgspec
from chronograph.application import Memory
from chronograph.eventstore import clock
from freezegun import freeze_time


def entity(name: str, *observations: str) -> dict[str, object]:
    return {"name": name, "entityType": "person", "observations": list(observations)}


def test_an_answer_shows_the_versions_and_time_the_store_then_holds(tmp_path: Path) -> None:
    with Memory(tmp_path / "store") as memory, freeze_time("2026-03-01T10:00:00Z"):
        memory.write("create_entities", {"entities": [entity("Ada", "math")]}, actor="t")
        written = memory.write("add_observations", {"observations": [
            {"entityName": "Ada", "contents": ["tea"]}, {"entityName": "Ada", "contents": ["tea", "chess"]},
        ]}, actor="t")
        answered = [r.added_observations for r in written.output.results]  # type: ignore[attr-defined]
        [stored] = memory.read("open_nodes", {"names": ["Ada"], "includeMetadata": True}).entities  # type: ignore[attr-defined]
    assert answered == [["tea"], ["chess"]]  # the second item saw the first
    assert (stored.observations, stored.version) == (["math", "tea", "chess"], 3)
    assert stored.updated_at == clock.isoformat(clock.parse_iso("2026-03-01T10:00:00Z"))


def test_the_answer_of_a_write_is_what_a_read_then_returns(tmp_path: Path) -> None:
    with Memory(tmp_path / "store") as memory:
        memory.write("create_entities", {"entities": [entity("Ada", "a"), entity("Bob")]}, actor="t")
        updated = memory.write("update_entities", {"entities": [
            {"name": "Ada", "observations": ["x", "x", "y"]}, {"name": "Ada", "entityType": "countess"},
        ]}, actor="t").output
        read = memory.read("open_nodes", {"names": ["Ada"]})
    assert msgspec.to_builtins(updated.entities) == msgspec.to_builtins(read.entities)  # type: ignore[attr-defined]


def test_a_name_deleted_and_created_again_in_one_call_is_a_new_entity(tmp_path: Path) -> None:
    with Memory(tmp_path / "store") as memory:
        memory.write("create_entities", {"entities": [entity("Ada", "old")]}, actor="t")
        memory.write("delete_entities", {"entityNames": ["Ada"]}, actor="t")
        created = memory.write("create_entities", {"entities": [entity("Ada", "new"), entity("Ada", "dup")]},
                               actor="t").output
        history = memory.read("get_entity_history", {"name": "Ada"})
    assert [e.observations for e in created.entities] == [["new"]]  # type: ignore[attr-defined]
    assert [v.version for v in history.versions] == [1, 2, 1]  # type: ignore[attr-defined]
