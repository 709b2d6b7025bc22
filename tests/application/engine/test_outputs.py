"""What an answer's entities and relations carry: what an agent acts on, and the rest when asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import Memory
from freezegun import freeze_time

STAMP = "2026-03-01T10:00:00.000000Z"
ENTITY = {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"], "version": 1}
RELATION = {"from": "Ada", "to": "Engine", "relationType": "programmed", "version": 1}
STAMPS = {"createdAt": STAMP, "updatedAt": STAMP}

READS: list[tuple[str, dict[str, Any]]] = [
    ("read_graph", {}), ("read_graph", {"limit": 1}), ("open_nodes", {"names": ["Ada"]}),
    ("search_nodes", {"query": "first program"}), ("search_nodes", {"query": "first program", "mode": "ranked"}),
]


def seeded(store: Path) -> Memory:
    memory = Memory(store, sync=False)
    with freeze_time(STAMP):
        memory.write("create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]},
            {"name": "Engine", "entityType": "machine", "observations": []}]}, actor="t")
        memory.write("create_relations", {"relations": [
            {"from": "Ada", "to": "Engine", "relationType": "programmed"}]}, actor="t")
    return memory


def plain(output: Any) -> Any:
    return msgspec.to_builtins(output)


def first_entity(answer: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """The answer's first entity without the matched observations a ranked search adds (which
    it must add, and only it)."""
    entity = dict(answer["entities"][0])
    matched = entity.pop("matchedObservations", None)
    assert (matched is not None) == (arguments.get("mode") == "ranked")
    return entity


@pytest.mark.parametrize(("tool", "arguments"), READS)
def test_a_read_answers_each_entity_and_relation_with_its_version_and_no_timestamps(
    tmp_path: Path, tool: str, arguments: dict[str, Any]
) -> None:
    with seeded(tmp_path / "store") as memory:
        answer = plain(memory.read(tool, arguments))
    assert first_entity(answer, arguments) == ENTITY
    assert answer["relations"] == [RELATION]


@pytest.mark.parametrize(("tool", "arguments"), READS)
def test_include_metadata_adds_each_one_s_created_and_updated_times(
    tmp_path: Path, tool: str, arguments: dict[str, Any]
) -> None:
    with seeded(tmp_path / "store") as memory:
        answer = plain(memory.read(tool, {**arguments, "includeMetadata": True}))
    assert first_entity(answer, arguments) == {**ENTITY, **STAMPS}
    assert answer["relations"] == [{**RELATION, **STAMPS}]


def test_related_entities_carry_their_version_and_their_times_only_when_asked(tmp_path: Path) -> None:
    with seeded(tmp_path / "store") as memory:
        [brief] = plain(memory.read("get_related_entities", {"name": "Engine"}))["related"]
        [whole] = plain(memory.read("get_related_entities", {"name": "Engine", "includeMetadata": True}))["related"]
    assert brief["entity"] == ENTITY
    assert whole["entity"] == {**ENTITY, **STAMPS}


def test_writes_answer_what_they_wrote_with_its_version_and_no_timestamps(tmp_path: Path) -> None:
    with seeded(tmp_path / "store") as memory:
        created = plain(memory.write("create_entities", {"entities": [
            {"name": "Bob", "entityType": "cat", "observations": ["purrs"]}]}, actor="t").output)
        updated = plain(memory.write("update_relations", {"relations": [
            {"from": "Ada", "to": "Engine", "relationType": "programmed", "confidence": 0.5}]}, actor="t").output)
        renamed = plain(memory.write("rename_entity", {"name": "Bob", "newName": "Rob"}, actor="t").output)
    assert created == {"entities": [{"name": "Bob", "entityType": "cat", "observations": ["purrs"], "version": 1}]}
    assert updated == {"relations": [{**RELATION, "confidence": 0.5, "version": 2}]}
    assert renamed == {"entities": [{"name": "Rob", "entityType": "cat", "observations": ["purrs"], "version": 2}]}


def test_a_deletion_says_what_was_not_found_only_when_something_was_not(tmp_path: Path) -> None:
    with seeded(tmp_path / "store") as memory:
        clean = plain(memory.write("delete_relations", {"relations": [
            {"from": "Ada", "to": "Engine", "relationType": "programmed"}]}, actor="t").output)
        partly = plain(memory.write("delete_entities", {"entityNames": ["Engine", "Nobody"]}, actor="t").output)
    assert clean == {"success": True, "message": "Deleted 1 relation.", "deleted": 1}
    assert partly["notFound"] == ["Nobody"]


def test_history_and_exports_keep_every_timestamp(tmp_path: Path) -> None:
    with seeded(tmp_path / "store") as memory:
        [version] = memory.read("get_entity_history", {"name": "Ada"}).versions  # type: ignore[attr-defined]
        exported = msgspec.json.decode(memory.read("export_graph", {"format": "json"}).content)  # type: ignore[attr-defined]
    assert version.state == {**ENTITY, **STAMPS}
    assert exported["entities"][0] == {**ENTITY, **STAMPS}
