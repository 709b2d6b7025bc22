"""The explorer's answers, without a browser: what changed between two moments."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from chronograph.application import Memory
from chronograph.application.errors import ReplyTooLargeError
from chronograph.application.explorer import audit, entity_page
from chronograph.application.graphdiff import diff
from freezegun import freeze_time


def test_a_diff_tells_a_changed_entity_from_a_re_created_one(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        def write(tool: str, **arguments: object) -> None:
            memory.write(tool, arguments, actor="t")

        write("create_entities", entities=[{"name": "Ada", "entityType": "person", "observations": []},
                                           {"name": "Bob", "entityType": "cat", "observations": []}])
        before = memory.log.head()
        write("add_observations", observations=[{"entityName": "Ada", "contents": ["math"]}])
        write("delete_entities", entityNames=["Bob"])
        write("create_entities", entities=[{"name": "Bob", "entityType": "cat", "observations": []}])
        changes = diff(memory, "default", before, memory.log.head())
    assert {(c["what"], c.get("detail")) for c in changes} == {("Ada", "+1 observation"), ("Bob", "re-created")}


def test_a_diff_tells_an_entity_or_relation_made_again_at_the_same_recorded_time_from_an_unchanged_one(
        tmp_path: Path) -> None:
    with freeze_time("2026-05-01T10:00:00Z"), Memory(tmp_path / "store", sync=False) as memory:  # a clock held
        def write(tool: str, **arguments: object) -> None:
            memory.write(tool, arguments, actor="t")

        people = [{"name": n, "entityType": "person", "observations": ["x"]} for n in ("Ada", "Bob", "Cy")]
        knows = [{"from": "Ada", "to": "Cy", "relationType": "knows"}]
        write("create_entities", entities=people)
        write("create_relations", relations=knows)
        before = memory.log.head()
        write("delete_entities", entityNames=["Bob"])
        write("create_entities", entities=[people[1]])  # as it was: the same version, time and content
        write("delete_relations", relations=knows)
        write("create_relations", relations=knows)
        changes = diff(memory, "default", before, memory.log.head())
    assert {(c["kind"], c["what"], c.get("detail")) for c in changes} == {
        ("entity", "Bob", "re-created"), ("relation", "Ada -[knows]-> Cy", "version 1 -> 3")}  # before: no Bob


def test_a_diff_says_an_invalidation_is_a_change_of_valid_time_and_counts_facts_true_later(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        def write(tool: str, **arguments: object) -> None:
            memory.write(tool, arguments, actor="t")

        write("create_entities", entities=[{"name": "Ada", "entityType": "person", "observations": ["in Paris"]},
                                           {"name": "Cy", "entityType": "person", "observations": []}])
        write("create_relations", relations=[{"from": "Ada", "to": "Cy", "relationType": "knows"}])
        before = memory.log.head()
        write("invalidate_relations", relations=[{"from": "Ada", "to": "Cy", "relationType": "knows",
                                                  "at": "2024-01-01T00:00:00Z"}])
        write("invalidate_observations", observations=[{"entityName": "Ada", "observations": ["in Paris"],
                                                        "at": "2024-01-01T00:00:00Z"}])
        write("create_relations", relations=[{"from": "Cy", "to": "Ada", "relationType": "will_meet",
                                              "validFrom": "2030-01-01T00:00:00Z"}])
        changes = diff(memory, "default", before, memory.log.head())
    assert sorted((c["change"], c["what"], c.get("detail")) for c in changes) == [
        ("changed", "Ada", "valid time"), ("changed", "Ada -[knows]-> Cy", "valid time"),
        ("created", "Cy -[will_meet]-> Ada", None)]


def test_a_diff_has_the_room_a_whole_graph_answer_has_and_says_how_to_compare_a_bigger_one(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": f"entity {i}", "entityType": "thing", "observations": [f"an observation of about forty bytes {i}"]}
            for i in range(300)]}, actor="t")
        memory.reply_limit = len(msgspec.json.encode(memory.read("read_graph", {}, reply_limit=None))) + 1024
        assert memory.read("read_graph", {})  # the whole graph fits one reply
        assert len(diff(memory, "default", 0, memory.log.head())) == 300  # and so does a diff of it
        memory.reply_limit = 4_000
        with pytest.raises(ReplyTooLargeError, match="The answer of the diff would be at least.*replay --diff"):
            diff(memory, "default", 0, memory.log.head())


def test_the_feed_filtered_by_session_reads_past_the_newest_page(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Old", "entityType": "t", "observations": []}]},
                     actor="claude-code/first")
        for i in range(12):
            memory.write("create_entities", {"entities": [{"name": f"N{i}", "entityType": "t", "observations": []}]},
                         actor="claude-code/second")
        found = audit(memory, "default", session="first", limit=5)["events"]
        newest = audit(memory, "default", session="second", limit=5)["events"]
    assert [e["subject"] for e in found] == ["Old"]
    assert [e["subject"] for e in newest] == [f"N{i}" for i in range(11, 6, -1)]


def test_an_entity_s_page_shows_its_newest_versions_and_says_older_ones_exist(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "t", "observations": []}]},
                     actor="t")
        for i in range(6):
            memory.write("add_observations", {"observations": [{"entityName": "Ada", "contents": [f"fact {i}"]}]},
                         actor="t")
        for other in ("B", "C", "D"):
            memory.write("create_entities", {"entities": [{"name": other, "entityType": "t", "observations": []}]},
                         actor="t")
            memory.write("create_relations", {"relations": [{"from": "Ada", "to": other, "relationType": "knows"}]},
                         actor="t")
        page = entity_page(memory, "default", "Ada", limit=3, relations_limit=2)
        whole = entity_page(memory, "default", "Ada")
    assert [v["version"] for v in page["versions"]] == [5, 6, 7] and page["more"]
    assert page["versions"][0]["diff"]["added"] == ["fact 3"]  # told against version 4, not as a creation
    assert len(page["relations"]) == 2 and page["moreRelations"]
    assert len(whole["versions"]) == 7 and not whole["more"] and not whole["moreRelations"]


def test_a_follow_of_the_feed_reads_a_burst_past_its_limit_over_the_next_follows(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "First", "entityType": "t", "observations": []}]},
                     actor="t")
        after = audit(memory, "default", limit=5)["through"]
        memory.write("create_entities", {"entities": [{"name": f"B{i}", "entityType": "t", "observations": []}
                                                      for i in range(12)]}, actor="t")
        seen: list[str] = []
        for _ in range(4):
            answer = audit(memory, "default", after=after, limit=5)
            seen += [e["subject"] for e in answer["events"]]
            after = answer["through"]
    assert seen == [f"B{i}" for i in range(12)]  # each once, in order, none skipped


def test_a_follow_from_an_empty_log_reads_a_burst_oldest_first_too(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        after = audit(memory, "default", limit=5)["through"]
        memory.write("create_entities", {"entities": [{"name": f"B{i}", "entityType": "t", "observations": []}
                                                      for i in range(7)]}, actor="t")
        answer = audit(memory, "default", after=after, limit=5)
    assert after == 0 and [e["subject"] for e in answer["events"]] == [f"B{i}" for i in range(5)]
