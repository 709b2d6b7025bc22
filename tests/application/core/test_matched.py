"""Answers that point at the fact: matchedObservations, matchesPerEntity, observationsLimit, and
the second stage that ranks an entity of many observations by its best one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import Memory
from chronograph.application.engine.semantic import Semantic
from support.embedders import Words

DIARY = {"name": "Evan", "entityType": "person", "observations": [
    "Evan on 3 May 2023: The weather was awful all weekend",
    "Evan on 9 May 2023: My phone screen cracked when I dropped it on the stairs",
    "Evan on 12 May 2023: Watched a documentary about whales",
    "Evan on 20 May 2023: Started cello lessons at the community school",
    "Evan on 28 May 2023: My laptop died with a burning smell, the screen went black",
]}


def call(memory: Memory, tool: str, **arguments: Any) -> dict[str, Any]:
    return msgspec.to_builtins(memory.read(tool, arguments))  # type: ignore[no-any-return]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as opened:
        opened.write("create_entities", {"entities": [DIARY, {
            "name": "Maya", "entityType": "person", "observations": ["Maya on 9 May 2023: Loves her cello"]}]},
            actor="t")
        yield opened


@pytest.fixture
def words(memory: Memory) -> Words:
    embedder = Words()
    memory.semantic = Semantic(memory.views, embedder, memory.lock)
    return embedder


def test_a_ranked_search_says_which_observations_matched_best_first(memory: Memory) -> None:
    reply = call(memory, "search_nodes", query="screen", mode="ranked")
    evan = reply["entities"][0]
    assert evan["name"] == "Evan" and len(evan["observations"]) == 5
    matched = evan["matchedObservations"]
    assert {m["text"] for m in matched} == {DIARY["observations"][1], DIARY["observations"][4]}
    assert all(0 < m["score"] <= 1 for m in matched)
    assert [m["score"] for m in matched] == sorted((m["score"] for m in matched), reverse=True)


def test_a_word_matches_its_other_forms_and_near_spellings(memory: Memory) -> None:
    stems = call(memory, "search_nodes", query="cracking phones", mode="fuzzy")
    assert stems["entities"][0]["matchedObservations"][0]["text"] == DIARY["observations"][1]
    typo = call(memory, "search_nodes", query="documentray", mode="fuzzy")
    assert typo["entities"][0]["matchedObservations"][0]["text"] == DIARY["observations"][2]


def test_matches_per_entity_caps_the_matched_observations_and_zero_leaves_them_out(memory: Memory) -> None:
    one = call(memory, "search_nodes", query="Evan screen whales", mode="ranked", matchesPerEntity=1)
    assert len(one["entities"][0]["matchedObservations"]) == 1
    three = call(memory, "search_nodes", query="Evan screen whales", mode="ranked")
    assert len(three["entities"][0]["matchedObservations"]) == 3
    none = call(memory, "search_nodes", query="Evan screen whales", mode="ranked", matchesPerEntity=0)
    assert "matchedObservations" not in none["entities"][0]



def test_an_observation_far_below_the_entitys_best_match_is_not_pointed_at(memory: Memory) -> None:
    reply = call(memory, "search_nodes", query="laptop screen black", mode="ranked", matchesPerEntity=3)
    matched = reply["entities"][0]["matchedObservations"]
    assert [m["text"] for m in matched] == [DIARY["observations"][4]]  # the cracked screen shares one word of three
    kept = call(memory, "search_nodes", query="laptop screen black", mode="ranked", observationsLimit=2)
    assert kept["entities"][0]["observations"] == [DIARY["observations"][1], DIARY["observations"][4]]

def test_observations_limit_keeps_the_best_matching_observations_in_their_own_order(memory: Memory) -> None:
    reply = call(memory, "search_nodes", query="whales cello", mode="ranked", observationsLimit=2)
    evan = next(e for e in reply["entities"] if e["name"] == "Evan")
    assert evan["observations"] == [DIARY["observations"][2], DIARY["observations"][3]]
    first = call(memory, "search_nodes", query="Evan", observationsLimit=1)  # substring: the first ones
    assert first["entities"][0]["observations"] == DIARY["observations"][:1]
    assert "matchedObservations" not in first["entities"][0]


def test_observations_limit_cuts_the_provenance_with_the_observations(memory: Memory) -> None:
    reply = call(memory, "search_nodes", query="whales", mode="ranked", observationsLimit=1, includeProvenance=True)
    evan = reply["entities"][0]
    assert [p["observation"] for p in evan["provenance"]] == evan["observations"] == [DIARY["observations"][2]]


def test_semantic_and_hybrid_answers_point_at_observations_by_their_own_vectors(memory: Memory, words: Words) -> None:
    for mode in ("semantic", "hybrid"):
        reply = call(memory, "search_nodes", query="laptop burning smell", mode=mode)
        evan = next(e for e in reply["entities"] if e["name"] == "Evan")
        assert evan["matchedObservations"][0]["text"] == DIARY["observations"][4], mode


def test_semantic_search_answers_carry_matched_observations(memory: Memory, words: Words) -> None:
    reply = call(memory, "semantic_search", query="laptop burning smell", threshold=0.0)
    evan = next(e for e in reply["entities"] if e["name"] == "Evan")
    assert evan["matchedObservations"][0]["text"] == DIARY["observations"][4]
    assert len(evan["matchedObservations"]) <= 3 and len(evan["observations"]) == 5


def test_an_entity_that_gains_an_observation_embeds_only_the_new_one(memory: Memory, words: Words) -> None:
    assert memory.semantic is not None
    memory.semantic.catch_up()
    before = len(words.texts)
    memory.write("add_observations", {"observations": [
        {"entityName": "Evan", "contents": ["Evan on 2 June 2023: Adopted a beagle puppy"]}]}, actor="t")
    memory.semantic.catch_up()
    assert words.texts[before:] == ["Evan (person). Evan on 2 June 2023: Adopted a beagle puppy"]


def test_an_entity_of_many_observations_is_ranked_by_the_one_that_answers(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    chatter = [f"Maya on {d} May 2023: {t}" for d, t in enumerate([
        "How was your week?", "The weather was awful", "Did you see the game on Sunday?", "Traffic was unbelievable",
        "We should grab coffee soon", "Work gave us free pizza on Friday", "I finally cleaned out the garage",
        "Talk soon, have a great evening!", "Haha, totally.", "My team at work is hiring"], start=1)]
    with Memory(tmp_path / "store", sync=False, embeddings="local") as memory:
        memory.write("create_entities", {"entities": [
            {"name": "session 1", "entityType": "session",
             "observations": [*chatter[:5], "Evan on 5 May 2023: We adopted a beagle puppy from the shelter",
                              *chatter[5:]]},
            {"name": "session 2", "entityType": "session", "observations": [
                "Evan on 20 May 2023: I love animals and nature documentaries", "Maya on 20 May 2023: Me too",
                "Evan on 20 May 2023: My neighbour has two cats"]}]}, actor="t")
        assert memory.semantic is not None
        memory.semantic.catch_up()
        reply = call(memory, "search_nodes", query="What pet did Evan bring home?", mode="semantic")
    assert reply["entities"][0]["name"] == "session 1"
    assert "beagle puppy" in reply["entities"][0]["matchedObservations"][0]["text"]


def test_the_turn_that_answers_is_pointed_at_before_small_talk_the_session_repeats(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    chatter = ["Pretty hectic, work has been crazy lately.", "Not bad, just trying to keep up with everything.",
               "I watched a documentary about whales last night.", "Traffic this morning was unbelievable.",
               "I read somewhere that walking after dinner helps.", "I tried a new running route, got completely lost."]
    observations = [f"Jonas on {day} October 2023: {text}" for text in chatter for day in (3, 17)]
    hike = "Jonas on 8 October 2023: We hiked up Mount Tamsin at dawn, the view from the summit was unreal."
    observations.insert(5, hike)
    with Memory(tmp_path / "store", sync=False, embeddings="local") as memory:
        memory.write("create_entities", {"entities": [
            {"name": "October", "entityType": "session", "observations": observations}]}, actor="t")
        assert memory.semantic is not None
        memory.semantic.catch_up()
        for mode in ("semantic", "hybrid"):
            reply = call(memory, "search_nodes", query="Where did Jonas go on a trek?", mode=mode, matchesPerEntity=1)
            assert reply["entities"][0]["matchedObservations"][0]["text"] == hike, mode
