"""suggest_cleanup: likely duplicates, repeated observations and stale facts; never a write."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from chronograph.application import Memory

sys.path.insert(0, str(Path(__file__).parents[3] / "bench"))

from bench_suggestions import fill, scores  # noqa: E402
from suggestion_set import labelled_set  # noqa: E402


def entity(name: str, kind: str = "person", *observations: str) -> dict:  # type: ignore[type-arg]
    return {"name": name, "entityType": kind, "observations": list(observations)}


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    with Memory(tmp_path / "store") as memory:
        yield memory


def suggestions(memory: Memory, **arguments: object) -> dict:  # type: ignore[type-arg]
    import msgspec

    return msgspec.to_builtins(memory.read("suggest_cleanup", arguments))  # type: ignore[no-any-return]


@pytest.mark.parametrize("seed", [7, 11, 23])
def test_merges_are_right_nine_times_in_ten_on_the_labelled_set(memory: Memory, seed: int) -> None:
    labelled = labelled_set(seed)
    fill(memory, labelled)
    from chronograph.application.core.suggestions import suggest

    with memory.timeline.at("test") as moment:
        found = scores(suggest(moment.graph, "default", limit=1000), labelled)
    assert found["merges"]["precision"] >= 0.9 and found["merges"]["recall"] >= 0.8
    assert found["possiblyStale"]["precision"] >= 0.9 and found["possiblyStale"]["recall"] >= 0.8
    assert found["duplicateObservations"]["precision"] >= 0.9


def test_the_issues_examples_are_suggested_with_their_evidence(memory: Memory) -> None:
    memory.write("create_entities", {"entities": [
        entity("Ada Lovelace", "person", "wrote the first program", "lives in Paris", "moved to Berlin"),
        entity("A. Lovelace", "person", "wrote the first program"),
        entity("Ada", "person", "likes poetry")]}, actor="t")
    found = suggestions(memory)
    pairs = {frozenset(m["entities"]): m for m in found["merges"]}
    assert frozenset(("Ada Lovelace", "A. Lovelace")) in pairs
    assert frozenset(("Ada Lovelace", "Ada")) in pairs
    assert "1 shared observation" in pairs[frozenset(("Ada Lovelace", "A. Lovelace"))]["evidence"]
    assert [(s["older"], s["newer"]) for s in found["possiblyStale"]] == [("lives in Paris", "moved to Berlin")]


def test_people_who_share_a_surname_or_whose_first_names_differ_by_a_letter_are_not_merged(memory: Memory) -> None:
    memory.write("create_entities", {"entities": [
        entity("Marie Curie"), entity("Pierre Curie"), entity("Robert Brown"), entity("Roberta Brown"),
        entity("Release 4.1", "release"), entity("Release 4.2", "release"), entity("Colleague A"),
        entity("Colleague B")]}, actor="t")
    assert suggestions(memory)["merges"] == []


def test_a_short_name_that_fits_several_entities_is_not_suggested(memory: Memory) -> None:
    memory.write("create_entities", {"entities": [
        entity("Ada Lovelace"), entity("Ada Yonath"), entity("Ada")]}, actor="t")
    assert suggestions(memory)["merges"] == []
    assert len(suggestions(memory, threshold=0.3)["merges"]) == 2


def test_one_name_for_two_kinds_of_thing_is_not_merged(memory: Memory) -> None:
    memory.write("create_entities", {"entities": [entity("Java", "language"), entity("Java (island)", "island")]},
                 actor="t")
    assert suggestions(memory)["merges"] == []


def test_repeated_observations_are_found_but_numbers_that_differ_are_not(memory: Memory) -> None:
    memory.write("create_entities", {"entities": [
        entity("Dana", "person", "Prefers dark mode", "prefers dark mode.", "meets at 10", "meets at 11")]},
        actor="t")
    found = suggestions(memory)["duplicateObservations"]
    assert [d["observations"] for d in found] == [["Prefers dark mode", "prefers dark mode."]]


def test_a_value_that_holds_many_values_is_stale_only_when_the_newer_says_it_replaced_it(memory: Memory) -> None:
    memory.write("create_entities", {"entities": [
        entity("Eli", "person", "uses vim", "uses git"), entity("Fay", "person", "uses vim", "switched to emacs")]},
        actor="t")
    assert [(s["entity"], s["older"]) for s in suggestions(memory)["possiblyStale"]] == [("Fay", "uses vim")]


def test_an_invalidated_observation_is_no_longer_suggested_as_stale(memory: Memory) -> None:
    memory.write("create_entities", {"entities": [entity("Gus", "person", "lives in Rome", "lives in Oslo")]},
                 actor="t")
    assert suggestions(memory)["possiblyStale"]
    memory.write("invalidate_observations", {"observations": [
        {"entityName": "Gus", "observations": ["lives in Rome"]}]}, actor="t")
    assert suggestions(memory)["possiblyStale"] == []


def test_suggesting_writes_nothing(memory: Memory) -> None:
    fill(memory, labelled_set())
    head = memory.log.head()
    suggestions(memory, threshold=0.0, limit=1000)
    assert memory.log.head() == head


def test_a_stale_fact_is_the_one_recorded_first_whatever_a_merge_or_a_restatement_did_to_the_order(
        memory: Memory) -> None:
    memory.write("create_entities", {"entities": [entity("A. Lovelace", "person", "lives in London")]}, actor="t")
    memory.write("create_entities", {"entities": [entity("Ada Lovelace", "person", "lives in Paris")]}, actor="t")
    memory.write("merge_entities", {"target": "Ada Lovelace", "sources": ["A. Lovelace"]}, actor="t")
    stale = [(s["older"], s["newer"]) for s in suggestions(memory)["possiblyStale"]]
    assert stale == [("lives in London", "lives in Paris")]  # moved last, recorded first
    memory.write("invalidate_observations", {"observations": [
        {"entityName": "Ada Lovelace", "observations": ["lives in London"], "at": "2020-01-01T00:00:00Z"}]}, actor="t")
    memory.write("add_observations", {"observations": [
        {"entityName": "Ada Lovelace", "contents": ["lives in London"]}]}, actor="t")  # she moved back
    stale = [(s["older"], s["newer"]) for s in suggestions(memory)["possiblyStale"]]
    assert stale == [("lives in Paris", "lives in London")]
