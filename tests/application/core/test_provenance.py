"""includeProvenance: each observation says when it was learned, by whom, in which call."""

from __future__ import annotations

from pathlib import Path

from chronograph.application import Memory
from freezegun import freeze_time
from msgspec import UNSET


def test_each_observation_names_the_event_that_put_it_there_now_and_as_of_then(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory, freeze_time("2026-03-01T10:00:00Z") as clock:
        memory.write("create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["math"]}]}, actor="alice")
        clock.move_to("2026-03-02T10:00:00Z")
        memory.write("add_observations", {"observations": [{"entityName": "Ada", "contents": ["tea", "math"]}]},
                     actor="bob")
        then = memory.log.head()
        clock.move_to("2026-03-03T10:00:00Z")
        memory.write("update_entities", {"entities": [{"name": "Ada", "observations": ["tea", "poetry"]}]},
                     actor="carol")
        [ada] = memory.read("open_nodes", {"names": ["Ada"], "includeProvenance": True}).entities
        assert [(p.observation, p.actor, p.recorded_at[:10]) for p in ada.provenance] == [
            ("tea", "bob", "2026-03-02"), ("poetry", "carol", "2026-03-03")]
        [past] = memory.read("open_nodes", {"names": ["Ada"], "includeProvenance": True, "asOf": then}).entities
        assert [(p.observation, p.actor) for p in past.provenance] == [("math", "alice"), ("tea", "bob")]
        audit = memory.read("get_audit_log", {"limit": 10, "includeIds": True}).events
        assert ada.provenance[1].correlation_id == audit[0].correlation_id
        [found] = memory.read("search_nodes", {"query": "poetry", "includeProvenance": True}).entities
        assert found.provenance == ada.provenance
        [plain] = memory.read("open_nodes", {"names": ["Ada"]}).entities
        assert plain.provenance is UNSET


def test_a_restored_entity_s_observations_keep_where_they_were_learned(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory, freeze_time("2026-03-01T10:00:00Z") as clock:
        memory.write("create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["math"]}]}, actor="alice")
        clock.move_to("2026-03-02T10:00:00Z")
        memory.write("delete_entities", {"entityNames": ["Ada"]}, actor="bob")
        memory.write("revert_entity", {"name": "Ada", "toVersion": 1}, actor="carol")
        [ada] = memory.read("open_nodes", {"names": ["Ada"], "includeProvenance": True}).entities
        assert [(p.observation, p.actor, p.recorded_at[:10]) for p in ada.provenance] == [
            ("math", "alice", "2026-03-01")]


def test_an_observation_a_merge_moved_names_where_it_was_recorded_and_the_merge(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory, freeze_time("2026-03-01T10:00:00Z") as clock:
        memory.write("create_entities", {"entities": [
            {"name": "A. Lovelace", "entityType": "person", "observations": ["lives in London"]}]}, actor="alice")
        clock.move_to("2026-03-02T10:00:00Z")
        memory.write("create_entities", {"entities": [
            {"name": "Lovelace", "entityType": "person", "observations": ["poetry"]}]}, actor="bob")
        clock.move_to("2026-03-03T10:00:00Z")
        memory.write("merge_entities", {"target": "Lovelace", "sources": ["A. Lovelace"]}, actor="carol")
        clock.move_to("2026-03-04T10:00:00Z")
        memory.write("create_entities", {"entities": [
            {"name": "Ada Lovelace", "entityType": "person", "observations": ["lives in Paris"]}]}, actor="dan")
        clock.move_to("2026-03-05T10:00:00Z")
        memory.write("merge_entities", {"target": "Ada Lovelace", "sources": ["Lovelace"]}, actor="erin")
        [merge] = memory.read("get_audit_log", {"limit": 1, "includeIds": True}).events
        [ada] = memory.read("open_nodes", {"names": ["Ada Lovelace"], "includeProvenance": True}).entities
        assert [(p.observation, p.actor, p.recorded_at[:10], (p.moved_at or "")[:10]) for p in ada.provenance] == [
            ("lives in Paris", "dan", "2026-03-04", ""), ("poetry", "bob", "2026-03-02", "2026-03-05"),
            ("lives in London", "alice", "2026-03-01", "2026-03-05")]  # a merge of a merge: where it was recorded
        assert ada.provenance[2].moved_by == merge.correlation_id
