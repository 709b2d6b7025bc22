"""revert_entity: a deleted entity comes back with the relations its deletion removed, and a
revert to the state the entity already has writes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chronograph.application import ChronographError, Memory


def write(memory: Memory, tool: str, **arguments: Any) -> Any:
    return memory.write(tool, arguments, actor="test").output


def triples(memory: Memory) -> list[tuple[str, str, str]]:
    return sorted((r.source, r.relation_type, r.target) for r in memory.read("read_graph", {}).relations)


def seed(memory: Memory) -> None:
    write(memory, "create_entities", entities=[{"name": n, "entityType": "person", "observations": []}
                                               for n in ("Ada", "Bob", "Cy")])
    write(memory, "create_relations", relations=[
        {"from": "Ada", "to": "Bob", "relationType": "knows", "confidence": 0.8, "metadata": {"since": 1843}},
        {"from": "Cy", "to": "Ada", "relationType": "admires"},
        {"from": "Ada", "to": "Ada", "relationType": "is"}])


def test_restoring_a_deleted_entity_restores_the_relations_its_deletion_removed(memory: Memory) -> None:
    seed(memory)
    before = triples(memory)
    write(memory, "delete_entities", entityNames=["Ada"])
    assert triples(memory) == []
    out = write(memory, "revert_entity", name="Ada", toVersion=1)
    assert out.relations_restored == 3 and triples(memory) == before
    knows = next(r for r in memory.read("read_graph", {}).relations if r.relation_type == "knows")
    assert (knows.confidence, knows.metadata) == (0.8, {"since": 1843})


def test_a_relation_whose_other_end_is_gone_is_not_restored(memory: Memory) -> None:
    seed(memory)
    write(memory, "delete_entities", entityNames=["Ada"])
    write(memory, "delete_entities", entityNames=["Bob"])
    write(memory, "revert_entity", name="Ada", toVersion=1)
    assert triples(memory) == [("Ada", "is", "Ada"), ("Cy", "admires", "Ada")]


def test_two_entities_deleted_together_get_their_shared_relation_back_with_the_second(memory: Memory) -> None:
    seed(memory)
    write(memory, "delete_entities", entityNames=["Ada", "Bob"])
    write(memory, "revert_entity", name="Ada", toVersion=1)
    assert ("Ada", "knows", "Bob") not in triples(memory)
    write(memory, "revert_entity", name="Bob", toVersion=1)
    assert ("Ada", "knows", "Bob") in triples(memory)


def test_reverting_to_the_current_state_writes_nothing_and_says_so(memory: Memory) -> None:
    seed(memory)
    write(memory, "add_observations", observations=[{"entityName": "Bob", "contents": ["x"]}])
    write(memory, "delete_observations", deletions=[{"entityName": "Bob", "observations": ["x"]}])
    head = memory.log.head()
    out = write(memory, "revert_entity", name="Bob", toVersion=1)
    assert memory.log.head() == head and "nothing was written" in out.message
    assert out.entities[0].version == 3


def test_restoring_a_deleted_entity_is_recorded_as_a_restore_and_keeps_its_created_at(tmp_path: Path) -> None:
    from freezegun import freeze_time

    with Memory(tmp_path / "store", sync=False) as memory, freeze_time("2026-03-01T10:00:00Z") as clock:
        seed(memory)
        write(memory, "add_observations", observations=[{"entityName": "Ada", "contents": ["math"]}])
        clock.tick(3600)
        write(memory, "delete_entities", entityNames=["Ada"])
        clock.tick(3600)
        write(memory, "revert_entity", name="Ada", toVersion=2)
        [ada] = memory.read("open_nodes", {"names": ["Ada"], "includeMetadata": True}).entities
        assert (ada.created_at, ada.updated_at) == ("2026-03-01T10:00:00.000000Z", "2026-03-01T12:00:00.000000Z")
        audit = memory.read("get_audit_log", {"entityName": "Ada", "limit": 1}).events
        history = memory.read("get_entity_history", {"name": "Ada", "order": "newest", "limit": 1}).versions
    second = memory_position_of_version(tmp_path / "store", "Ada", 2)
    assert [(e.type, e.data["revertedTo"], e.data["restores"]) for e in audit] == [("entity_restored", 2, second)]
    assert history[0].event_type == "entity_restored" and history[0].state["createdAt"] == ada.created_at


def memory_position_of_version(store: Path, name: str, version: int) -> int:
    with Memory(store) as memory:
        versions = memory.read("get_entity_history", {"name": name}).versions
    return next(v.position for v in versions if v.version == version)


def test_an_entity_restored_then_rebuilt_reads_the_same(memory: Memory) -> None:
    seed(memory)
    write(memory, "delete_entities", entityNames=["Ada"])
    write(memory, "revert_entity", name="Ada", toVersion=1)
    before = memory.read("read_graph", {})
    memory.views.rebuild()
    assert memory.read("read_graph", {}) == before
    assert memory.read("search_nodes", {"query": "Ada"}).entities[0].name == "Ada"


def test_a_revert_by_name_reverts_the_entity_that_bears_the_name_now(memory: Memory) -> None:
    write(memory, "create_entities", entities=[{"name": "Ada", "entityType": "person", "observations": ["first"]}])
    write(memory, "rename_entity", name="Ada", newName="Ada (old)")
    write(memory, "create_entities", entities=[{"name": "Ada", "entityType": "robot", "observations": ["robot"]}])
    write(memory, "rename_entity", name="Ada", newName="Robo")
    write(memory, "rename_entity", name="Ada (old)", newName="Ada")
    write(memory, "add_observations", observations=[{"entityName": "Ada", "contents": ["later"]}])
    with pytest.raises(ChronographError) as refused:  # checked against Ada (version 4), not Robo (2)
        write(memory, "revert_entity", name="Ada", toVersion=1, expectedVersion=2)
    assert refused.value.code == "conflict"
    out = write(memory, "revert_entity", name="Ada", toVersion=1, expectedVersion=4)
    assert out.message == "Restored 'Ada' to version 1"
    found = {e.name: e.observations for e in memory.read("read_graph", {}).entities}
    assert found == {"Ada": ["first"], "Robo": ["robot"]}


def test_a_revert_of_a_name_no_entity_bears_reverts_the_one_that_bore_it_last(memory: Memory) -> None:
    write(memory, "create_entities", entities=[{"name": "Ada", "entityType": "person", "observations": []}])
    write(memory, "rename_entity", name="Ada", newName="Ada (old)")
    write(memory, "create_entities", entities=[{"name": "Ada", "entityType": "robot", "observations": []}])
    write(memory, "rename_entity", name="Ada", newName="Robo")
    write(memory, "rename_entity", name="Ada (old)", newName="Ada")
    write(memory, "delete_entities", entityNames=["Ada"])
    assert write(memory, "revert_entity", name="Ada", toVersion=3).message == "Restored 'Ada' to version 3"
    assert {e.name: e.entity_type for e in memory.read("read_graph", {}).entities} == {
        "Robo": "robot", "Ada": "person"}
