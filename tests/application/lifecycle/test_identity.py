"""Renaming an entity and merging duplicates: relations follow, history keeps every name,
revert undoes both, and a rebuild from the log agrees with the live views."""

from __future__ import annotations

from typing import Any

import pytest
from chronograph.application import ChronographError, Memory
from chronograph.projections import verify


def write(memory: Memory, tool: str, **arguments: Any) -> Any:
    return memory.write(tool, arguments, actor="test").output


def read(memory: Memory, tool: str, **arguments: Any) -> Any:
    return memory.read(tool, arguments)


def refused(memory: Memory, tool: str, **arguments: Any) -> ChronographError:
    head = memory.log.head()
    with pytest.raises(ChronographError) as caught:
        memory.write(tool, arguments, actor="test")
    assert memory.log.head() == head
    return caught.value


def graph(memory: Memory) -> tuple[list[tuple[str, list[str]]], list[tuple[str, str, str]]]:
    whole = read(memory, "read_graph")
    return ([(e.name, e.observations) for e in whole.entities],
            sorted((r.source, r.relation_type, r.target) for r in whole.relations))


def seed(memory: Memory) -> None:
    write(memory, "create_entities", entities=[
        {"name": "Ada", "entityType": "person", "observations": ["math"]},
        {"name": "A. Lovelace", "entityType": "person", "observations": ["math", "poetry"]},
        {"name": "Babbage", "entityType": "person", "observations": []}])
    write(memory, "create_relations", relations=[
        {"from": "Ada", "to": "Babbage", "relationType": "knows"},
        {"from": "Babbage", "to": "A. Lovelace", "relationType": "admires"},
        {"from": "A. Lovelace", "to": "Ada", "relationType": "same_as"}])


def test_a_rename_moves_the_relations_and_the_old_name_still_reaches_the_history(memory: Memory) -> None:
    seed(memory)
    renamed = write(memory, "rename_entity", name="Babbage", newName="Charles Babbage").entities[0]
    assert (renamed.name, renamed.version) == ("Charles Babbage", 2)
    _, relations = graph(memory)
    assert ("Ada", "knows", "Charles Babbage") in relations
    assert ("Charles Babbage", "admires", "A. Lovelace") in relations
    assert not [r for r in relations if "Babbage" in (r[0], r[2])]
    history = read(memory, "get_entity_history", name="Babbage").versions
    assert [v.event_type for v in history] == ["entity_created", "entity_renamed"]
    assert history[-1].changes == {"name": "Charles Babbage", "previous": "Babbage"}
    assert history[-1].state is not None and history[-1].state["name"] == "Charles Babbage"
    write(memory, "create_entities", entities=[{"name": "Babbage", "entityType": "cat", "observations": []}])


def test_a_rename_to_a_taken_name_or_its_own_is_refused(memory: Memory) -> None:
    seed(memory)
    assert refused(memory, "rename_entity", name="Ada", newName="Babbage").code == "duplicate"
    assert refused(memory, "rename_entity", name="Ada", newName="Ada").code == "invalid"
    assert refused(memory, "rename_entity", name="Nobody", newName="X").code == "not_found"


def test_revert_undoes_a_rename_and_the_relations_come_back(memory: Memory) -> None:
    seed(memory)
    before = graph(memory)
    write(memory, "rename_entity", name="Babbage", newName="Charles")
    write(memory, "revert_entity", name="Charles", toVersion=1)
    after = graph(memory)
    assert sorted(after[0]) == sorted(before[0]) and after[1] == before[1]


def test_a_merge_moves_observations_and_relations_onto_the_survivor(memory: Memory) -> None:
    seed(memory)
    [ada] = write(memory, "merge_entities", target="Ada", sources=["A. Lovelace"]).entities
    assert ada.observations == ["math", "poetry"]
    entities, relations = graph(memory)
    assert [name for name, _ in entities] == ["Ada", "Babbage"]
    assert relations == [("Ada", "knows", "Babbage"), ("Babbage", "admires", "Ada")]  # the same_as loop is dropped
    history = read(memory, "get_entity_history", name="A. Lovelace").versions
    assert history[-1].event_type == "entity_merged"


def test_a_merge_into_itself_or_of_a_missing_entity_writes_nothing(memory: Memory) -> None:
    seed(memory)
    assert "into itself" in str(refused(memory, "merge_entities", target="Ada", sources=["Ada"]))
    assert refused(memory, "merge_entities", target="Ada", sources=["Babbage", "Nobody"]).code == "not_found"
    assert refused(memory, "merge_entities", target="Ada", sources=[]).code == "invalid"


def test_revert_undoes_a_merge(memory: Memory) -> None:
    seed(memory)
    entities_before, relations_before = graph(memory)
    write(memory, "merge_entities", target="Ada", sources=["A. Lovelace"])
    write(memory, "revert_entity", name="Ada", toVersion=1)
    write(memory, "revert_entity", name="A. Lovelace", toVersion=1)
    entities, relations = graph(memory)
    assert sorted(entities) == sorted(entities_before)
    assert relations == relations_before  # the loop the merge dropped too, and no copy left on Ada
    assert verify(memory.views) == []


def test_a_rebuild_from_the_log_agrees_with_the_live_views(memory: Memory) -> None:
    seed(memory)
    write(memory, "rename_entity", name="Babbage", newName="Charles")
    write(memory, "merge_entities", target="Ada", sources=["A. Lovelace"])
    write(memory, "revert_entity", name="Charles", toVersion=1)
    live = graph(memory)
    memory.views.rebuild()
    assert graph(memory) == live
    found = read(memory, "search_nodes", query="poetry")
    assert [e.name for e in found.entities] == ["Ada"]


SPAN = {"validFrom": "2020-01-01T00:00:00Z", "validUntil": "2021-01-01T00:00:00Z"}


def seen(memory: Memory, valid_at: str) -> tuple[dict[str, list[str]], list[tuple[str, str, str]]]:
    graph = read(memory, "read_graph", validAt=valid_at)
    return ({e.name: e.observations for e in graph.entities},
            sorted((r.source, r.relation_type, r.target) for r in graph.relations))


def timed(memory: Memory) -> None:
    write(memory, "create_entities", entities=[{"name": n, "entityType": "t", "observations": []}
                                               for n in ("Alice", "Acme", "A. Smith")])
    write(memory, "add_observations", observations=[{"entityName": "Alice", "contents": ["lives in Paris"], **SPAN},
                                                    {"entityName": "Alice", "contents": ["likes tea"]}])
    write(memory, "create_relations", relations=[{"from": "Alice", "to": "Acme", "relationType": "works_at", **SPAN}])


@pytest.mark.parametrize("change", ["rename", "merge", "delete and revert"])
def test_what_moves_with_an_entity_keeps_when_it_was_true(memory: Memory, change: str) -> None:
    timed(memory)
    name = {"rename": "Alicia", "merge": "A. Smith", "delete and revert": "Alice"}[change]
    if change == "rename":
        write(memory, "rename_entity", name="Alice", newName="Alicia")
    elif change == "merge":
        write(memory, "merge_entities", target="A. Smith", sources=["Alice"])
    else:
        write(memory, "delete_entities", entityNames=["Alice"])
        write(memory, "revert_entity", name="Alice", toVersion=3)
    then, now = seen(memory, "2020-06-01T00:00:00Z"), seen(memory, "2022-06-01T00:00:00Z")
    assert then[0][name] == ["lives in Paris", "likes tea"] and then[1] == [(name, "works_at", "Acme")]
    assert now[0][name] == ["likes tea"] and now[1] == []
    assert verify(memory.views) == []  # a fold of the log from the start agrees


def test_a_revert_to_before_an_invalidation_makes_the_fact_true_again(memory: Memory) -> None:
    timed(memory)
    write(memory, "invalidate_observations", observations=[
        {"entityName": "Alice", "observations": ["likes tea"], "at": "2024-01-01T00:00:00Z"}])
    assert seen(memory, "2026-01-01T00:00:00Z")[0]["Alice"] == []
    assert "Restored" in write(memory, "revert_entity", name="Alice", toVersion=3).message
    assert seen(memory, "2026-01-01T00:00:00Z")[0]["Alice"] == ["likes tea"]
    assert seen(memory, "2020-06-01T00:00:00Z")[0]["Alice"] == ["lives in Paris", "likes tea"]
    assert verify(memory.views) == []


def test_a_merge_keeps_the_source_s_current_relation_where_the_target_s_copy_has_expired(memory: Memory) -> None:
    write(memory, "create_entities", entities=[{"name": n, "entityType": "t", "observations": []}
                                               for n in ("T", "S", "X", "Y")])
    write(memory, "create_relations", relations=[
        {"from": "T", "to": "X", "relationType": "works_at", "confidence": 0.3, "validFrom": "2018-01-01",
         "validUntil": "2019-01-01"},
        {"from": "S", "to": "X", "relationType": "works_at", "confidence": 0.95, "metadata": {"source": "HR"},
         "validFrom": "2023-01-01"},
        {"from": "T", "to": "Y", "relationType": "knows", "validFrom": "2020-01-01", "validUntil": "2022-01-01"},
        {"from": "S", "to": "Y", "relationType": "knows", "metadata": {"via": "club"}, "validFrom": "2021-01-01",
         "validUntil": "2023-01-01"}])
    before = memory.log.head()
    write(memory, "merge_entities", target="T", sources=["S"])

    def held(**at: Any) -> list[tuple[str, str, float | None, dict[str, Any]]]:
        whole = read(memory, "read_graph", includeMetadata=True, **at)
        return sorted((r.relation_type, r.target, r.confidence or None, r.metadata or {}) for r in whole.relations)

    assert held() == [("works_at", "X", 0.95, {"source": "HR"})]
    assert held(validAt="2021-06-01T00:00:00Z") == [("knows", "Y", None, {"via": "club"})]  # spans that meet: both
    assert held(validAt="2020-06-01T00:00:00Z") == [("knows", "Y", None, {"via": "club"})]
    assert held(asOf=before, validAt="2018-06-01T00:00:00Z") == [("works_at", "X", 0.3, {})]  # what it knew then
    assert verify(memory.views) == []


def test_a_merge_keeps_the_source_s_current_observation_where_the_target_s_copy_has_expired(memory: Memory) -> None:
    write(memory, "create_entities", entities=[{"name": n, "entityType": "t", "observations": []} for n in "TS"])
    write(memory, "add_observations", observations=[
        {"entityName": "T", "contents": ["member of club"], "validFrom": "2019-01-01"},
        {"entityName": "T", "contents": ["likes tea"], "validFrom": "2019-01-01"}])
    write(memory, "invalidate_observations", observations=[
        {"entityName": "T", "observations": ["member of club"], "at": "2021-01-01"}])
    write(memory, "add_observations", observations=[
        {"entityName": "S", "contents": ["member of club"], "validFrom": "2023-01-01"},
        {"entityName": "S", "contents": ["likes tea"], "validFrom": "2020-01-01"}])
    before = memory.log.head()
    [t] = write(memory, "merge_entities", target="T", sources=["S"]).entities
    assert t.observations == ["member of club", "likes tea"]
    assert read(memory, "open_nodes", names=["T"], asOf=before).entities[0].observations == ["likes tea"]
    assert read(memory, "open_nodes", names=["T"], validAt="2024-01-01T00:00:00Z").entities[0].observations == [
        "member of club", "likes tea"]
    assert t.validity["likes tea"] == {"validFrom": "2019-01-01T00:00:00.000000Z"}  # within the target's: as it was
    assert verify(memory.views) == []


def test_a_merge_takes_the_metadata_keys_the_target_lacks_and_names_the_conflicts(memory: Memory) -> None:
    write(memory, "create_entities", entities=[
        {"name": "Ada Lovelace", "entityType": "person", "observations": ["math"], "metadata": {"born": "1815"}},
        {"name": "A. Lovelace", "entityType": "person", "observations": ["poetry"],
         "metadata": {"email": "ada@example.org", "born": "1815-12-10"}},
        {"name": "Lovelace", "entityType": "person", "observations": [], "metadata": {"born": "1815"}}])
    merged = write(memory, "merge_entities", target="Ada Lovelace", sources=["A. Lovelace", "Lovelace"])
    assert merged.metadata_conflicts == ["born"]  # "Lovelace" agrees with the target
    [ada] = read(memory, "open_nodes", names=["Ada Lovelace"], includeMetadata=True).entities
    assert ada.metadata == {"born": "1815", "email": "ada@example.org"}
    found = read(memory, "search_nodes", query="", metadata={"email": "ada@example.org"})
    assert [e.name for e in found.entities] == ["Ada Lovelace"]
    write(memory, "revert_entity", name="Ada Lovelace", toVersion=1)
    assert read(memory, "open_nodes", names=["Ada Lovelace"], includeMetadata=True).entities[0].metadata == {
        "born": "1815"}
    assert verify(memory.views) == []


def test_a_merge_whose_joined_metadata_is_past_the_limit_writes_nothing(memory: Memory) -> None:
    half = "x" * 9_000
    write(memory, "create_entities", entities=[
        {"name": "A", "entityType": "t", "observations": [], "metadata": {"a": half}},
        {"name": "B", "entityType": "t", "observations": [], "metadata": {"b": half}}])
    assert "limit" in str(refused(memory, "merge_entities", target="A", sources=["B"]))


def test_a_duplicate_relation_a_merge_drops_gives_the_held_one_the_metadata_keys_it_lacks(memory: Memory) -> None:
    write(memory, "create_entities", entities=[{"name": n, "entityType": "t", "observations": []} for n in "TSZ"])
    write(memory, "create_relations", relations=[
        {"from": "T", "to": "Z", "relationType": "likes", "metadata": {"since": 2019}},
        {"from": "S", "to": "Z", "relationType": "likes", "metadata": {"since": 2020, "source": "HR"}}])
    write(memory, "merge_entities", target="T", sources=["S"])
    [likes] = read(memory, "read_graph", includeMetadata=True).relations
    assert (likes.source, likes.metadata) == ("T", {"since": 2019, "source": "HR"})
    assert verify(memory.views) == []
