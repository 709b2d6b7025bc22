"""search_nodes in its five modes, with filters and pages; semantic_search; bad input."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import InvalidArgumentsError, Memory, UnavailableError
from chronograph.application.engine.semantic import Semantic
from chronograph.projections.search import hubs
from support.embedders import Words

PEOPLE = [
    {"name": "Ada", "entityType": "person", "observations": ["Writes Python every day", "Lives in London"],
     "metadata": {"team": "core"}},
    {"name": "Bob", "entityType": "person", "observations": ["Plays the cello"], "metadata": {"team": "ops"}},
    {"name": "Python", "entityType": "language", "observations": ["Dynamic typing"]},
    {"name": "Cy", "entityType": "person", "observations": ["Keeps bees", "Likes python snakes"]},
]


def call(memory: Memory, tool: str, **arguments: Any) -> dict[str, Any]:
    return msgspec.to_builtins(memory.read(tool, arguments))  # type: ignore[no-any-return]


def names(reply: dict[str, Any]) -> list[str]:
    return [e["name"] for e in reply["entities"]]


@contextmanager
def embedded(tmp_path: Path, entities: list[dict[str, Any]]) -> Iterator[Memory]:
    """A memory of `entities`, embedded by the bundled model."""
    with Memory(tmp_path / "store", sync=False, embeddings="local") as memory:
        memory.write("create_entities", {"entities": entities}, actor="t")
        assert memory.semantic is not None
        memory.semantic.catch_up()
        yield memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as opened:
        opened.write("create_entities", {"entities": PEOPLE}, actor="t")
        opened.write("create_relations", {"relations": [
            {"from": "Ada", "to": "Python", "relationType": "uses"},
            {"from": "Bob", "to": "Ada", "relationType": "knows"}]}, actor="t")
        yield opened


@pytest.fixture
def words(memory: Memory) -> Words:
    embedder = Words()
    memory.semantic = Semantic(memory.views, embedder, memory.lock)
    return embedder


def test_substring_is_the_default_and_answers_oldest_first_without_scores(memory: Memory) -> None:
    reply = call(memory, "search_nodes", query="python")
    assert names(reply) == ["Ada", "Python", "Cy"]
    assert "scores" not in reply and "total" not in reply  # the official shape when not paged
    assert {(r["from"], r["to"]) for r in reply["relations"]} == {("Ada", "Python"), ("Bob", "Ada")}


def test_substring_pages_say_the_total_and_where_the_next_page_starts(memory: Memory) -> None:
    first = call(memory, "search_nodes", query="o", limit=2)
    assert (names(first), first["total"], first["nextOffset"]) == (["Ada", "Bob"], 4, 2)
    second = call(memory, "search_nodes", query="o", limit=2, offset=first["nextOffset"])
    assert (names(second), second["total"], "nextOffset" in second) == (["Python", "Cy"], 4, False)
    past = call(memory, "search_nodes", query="o", offset=99)
    assert (past["entities"], past["relations"], past["total"]) == ([], [], 4)


def test_ranked_and_its_old_alias_answer_best_first_with_scores(memory: Memory) -> None:
    reply = call(memory, "search_nodes", query="python", mode="ranked")
    assert reply == call(memory, "search_nodes", query="python", ranked=True)
    assert names(reply)[0] == "Python"  # the name, type-length normalised, counts most
    assert len(reply["scores"]) == 3 and reply["scores"] == sorted(reply["scores"], reverse=True)


def test_fuzzy_finds_a_misspelt_word(memory: Memory) -> None:
    assert call(memory, "search_nodes", query="Pyhton")["entities"] == []
    reply = call(memory, "search_nodes", query="Pyhton", mode="fuzzy")
    assert set(names(reply)) == {"Ada", "Python", "Cy"}
    assert names(call(memory, "search_nodes", query="chello", mode="fuzzy")) == ["Bob"]


def test_filters_apply_to_every_mode_and_relation_types_narrow_the_relations(memory: Memory) -> None:
    for mode in ("substring", "ranked", "fuzzy"):
        assert names(call(memory, "search_nodes", query="python", mode=mode, entityTypes=["language"])) == ["Python"]
        assert names(call(memory, "search_nodes", query="python", mode=mode, metadata={"team": "core"})) == ["Ada"]
    reply = call(memory, "search_nodes", query="python", relationTypes=["uses"])
    assert names(reply) == ["Ada", "Python"]
    assert [r["relationType"] for r in reply["relations"]] == ["uses"]


def test_summary_mode_answers_names_and_types_in_search_and_open_nodes(memory: Memory) -> None:
    reply = call(memory, "search_nodes", query="bob", summaryMode=True)
    assert reply["entities"] == [{"name": "Bob", "entityType": "person"}]
    opened = call(memory, "open_nodes", names=["Ada", "Bob"], summaryMode=True)
    assert opened["entities"] == [{"name": "Ada", "entityType": "person"}, {"name": "Bob", "entityType": "person"}]


def test_as_of_searches_what_the_memory_held_then(memory: Memory) -> None:
    before = memory.log.head()
    pythonista = {"name": "Pythonista", "entityType": "person", "observations": []}
    memory.write("create_entities", {"entities": [pythonista]}, actor="t")
    for mode in ("substring", "ranked", "fuzzy"):
        assert "Pythonista" not in names(call(memory, "search_nodes", query="pythonista", mode=mode, asOf=before))
    assert "Pythonista" in names(call(memory, "search_nodes", query="pythonista"))


@pytest.mark.parametrize(("arguments", "says"), [
    ({"query": "x", "mode": "fuzzy", "ranked": True}, "give one"),
    ({"query": "  ", "mode": "ranked"}, "needs words"),
    ({"query": "x", "mode": "vector"}, "mode"),
    ({"query": "x", "colour": "red"}, "colour"),
    ({"query": "x", "limit": 0}, "limit"),
    ({"query": "x", "offset": -1}, "offset"),
    ({"query": " ".join(f"w{i}" for i in range(40)), "mode": "fuzzy"}, "at most 32"),
])
def test_bad_arguments_are_refused_with_the_argument_named(
    memory: Memory, arguments: dict[str, Any], says: str
) -> None:
    with pytest.raises(InvalidArgumentsError, match=says):
        memory.read("search_nodes", arguments)


def test_a_two_thousand_character_query_is_answered_in_every_word_mode(memory: Memory) -> None:
    query = ("python " * 300)[:2000]
    assert names(call(memory, "search_nodes", query=query, mode="ranked"))[0] == "Python"
    assert call(memory, "search_nodes", query=query)["entities"] == []  # no text holds it


def test_semantic_modes_say_how_to_turn_them_on_when_off(memory: Memory) -> None:
    for tool, arguments in [("search_nodes", {"query": "x", "mode": "semantic"}),
                            ("search_nodes", {"query": "x", "mode": "hybrid"}),
                            ("semantic_search", {"query": "x"})]:
        with pytest.raises(UnavailableError, match="--embeddings"):
            memory.read(tool, arguments)
    assert names(call(memory, "search_nodes", query="python", mode="fuzzy"))  # the others still answer


def test_a_semantic_answer_sees_the_write_just_made_and_says_how_far_embeddings_reach(
    memory: Memory, words: Words
) -> None:
    memory.write("create_entities", {"entities": [
        {"name": "Hive", "entityType": "place", "observations": ["bees make honey"]}]}, actor="t")
    reply = call(memory, "search_nodes", query="honey bees", mode="semantic")
    assert names(reply)[0] == "Hive"
    assert reply["embeddedThrough"] == reply["head"] == memory.log.head()
    assert reply["scores"][0] > 0.5


def test_stale_and_deleted_entities_never_come_back_from_old_vectors(memory: Memory, words: Words) -> None:
    assert "Bob" in names(call(memory, "search_nodes", query="cello", mode="semantic"))
    memory.write("delete_observations", {"deletions": [{"entityName": "Bob", "observations": ["Plays the cello"]}]},
                 actor="t")
    memory.write("add_observations", {"observations": [{"entityName": "Bob", "contents": ["Sails boats"]}]},
                 actor="t")
    words.down = True  # Bob's new version cannot be embedded (the query's vector is remembered)
    reply = call(memory, "search_nodes", query="cello", mode="semantic")
    assert "Bob" not in names(reply)  # his old vector must not speak for him
    assert reply["embeddedThrough"] < reply["head"]
    words.down = False
    assert "Bob" not in names(call(memory, "search_nodes", query="cello", mode="semantic"))
    assert "Bob" in names(call(memory, "search_nodes", query="sails boats", mode="semantic"))
    memory.write("delete_entities", {"entityNames": ["Cy"]}, actor="t")
    assert "Cy" not in names(call(memory, "search_nodes", query="keeps bees", mode="semantic"))


def test_writes_go_on_while_the_embedder_is_down(memory: Memory, words: Words) -> None:
    words.down = True
    dee = {"name": "Dee", "entityType": "person", "observations": []}
    memory.write("create_entities", {"entities": [dee]}, actor="t")
    assert names(call(memory, "search_nodes", query="dee")) == ["Dee"]
    with pytest.raises(UnavailableError, match="substring, ranked, fuzzy"):
        memory.read("semantic_search", {"query": "who is dee"})


def test_hybrid_fuses_words_and_meaning_and_pages_after_fusion(memory: Memory, words: Words) -> None:
    reply = call(memory, "search_nodes", query="python", mode="hybrid", limit=2)
    assert names(reply)[0] == "Python"
    assert reply["total"] >= 3 and reply["nextOffset"] == 2
    rest = call(memory, "search_nodes", query="python", mode="hybrid", limit=2, offset=2)
    assert not set(names(rest)) & set(names(reply))


def test_semantic_modes_refuse_as_of(memory: Memory, words: Words) -> None:
    with pytest.raises(InvalidArgumentsError, match="asOf"):
        memory.read("search_nodes", {"query": "x", "mode": "semantic", "asOf": 1})


def test_semantic_search_keeps_the_kuzu_shape_and_its_threshold(memory: Memory, words: Words) -> None:
    reply = call(memory, "semantic_search", query="plays the cello", limit=1)
    assert reply["entities"][0]["name"] == "Bob"
    assert set(reply) == {"query", "workspace", "entities", "count", "threshold", "embeddedThrough", "head"}
    assert reply["count"] == 1 and reply["threshold"] == 0.3
    assert call(memory, "semantic_search", query="zzz qqq", threshold=0.99)["entities"] == []
    with pytest.raises(InvalidArgumentsError):
        memory.read("semantic_search", {"query": ""})


def test_a_forgotten_entity_leaves_no_vector_and_semantic_search_goes_on(memory: Memory, words: Words) -> None:
    assert "Bob" in names(call(memory, "search_nodes", query="cello", mode="semantic"))
    stream = memory.read("get_audit_log", {"entityName": "Bob", "includeIds": True}).events[0].stream
    memory.write("forget_entity", {"name": "Bob", "reason": "asked"}, actor="t")
    vectors = memory.views.env.open_db("vectors.v1")
    with memory.views.env.read() as txn:
        assert not [key for key in txn.cursor(db=vectors).iternext(values=False) if key.endswith(stream.encode())]
    assert "Bob" not in names(call(memory, "search_nodes", query="cello", mode="semantic"))
    assert "Cy" in names(call(memory, "search_nodes", query="keeps bees", mode="semantic"))


CHATTER = "Pretty hectic at work lately, so much to do and never any time for anything"
QUESTION = "What has Maya been doing lately, any time for something new?"


@pytest.fixture
def chatty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    """Four turns of the same small talk (D4:2 a note, the others turns), and one of news; ranked
    without the rule of hubs.py (the small talk is crowded, and it would rank the news first),
    so that what these tests see is the near-duplicate rule alone."""
    monkeypatch.setattr(hubs, "WEIGHT", 0.0)
    turns = [{"name": f"D{day}:2", "entityType": "note" if day == 4 else "turn",
              "observations": [f"Maya on {day} May: {CHATTER}"]} for day in range(1, 5)]
    news = {"name": "D3:4", "entityType": "turn",
            "observations": ["Maya on 3 May: Lately I have been doing something new: rock climbing"]}
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.semantic = Semantic(memory.views, Words(), memory.lock)
        memory.write("create_entities", {"entities": [*turns, news]}, actor="t")
        yield memory


def test_a_near_duplicate_of_a_better_hit_ranks_after_what_says_something_new(chatty: Memory) -> None:
    page = call(chatty, "search_nodes", query=QUESTION, mode="semantic", limit=3)
    assert names(page)[:2] == ["D4:2", "D3:4"]  # alone, each chatter turn is nearer than the news
    assert page["scores"] == sorted(page["scores"], reverse=True)
    similar = call(chatty, "semantic_search", query=QUESTION, limit=5, threshold=0.1)
    assert names(similar)[:4] == ["D4:2", "D3:2", "D1:2", "D2:2"]  # semantic_search ranks by similarity alone


def test_an_entity_of_many_observations_is_never_lowered_for_the_one_that_matched(chatty: Memory) -> None:
    diary = {"name": "D5", "entityType": "turn", "observations": [
        f"Maya on 5 May: {CHATTER}", "Maya on 5 May: The garden needs watering, the roses are wilting"]}
    chatty.write("create_entities", {"entities": [diary]}, actor="t")
    assert chatty.semantic is not None
    alone = {e["name"]: e["similarity"] for e in call(chatty, "semantic_search", query=QUESTION, limit=9,
                                                        threshold=0.0)["entities"]}
    page = call(chatty, "search_nodes", query=QUESTION, mode="semantic", limit=9)
    scores = dict(zip(names(page), page["scores"], strict=True))
    assert scores["D5"] == pytest.approx(alone["D5"], abs=1e-4)  # it holds more than the chatter it matched by
    assert scores["D3:2"] < alone["D3:2"] - 0.01  # a turn that only repeats it is lowered


def test_a_hit_the_filters_hide_lowers_no_hit_the_answer_shows(chatty: Memory) -> None:
    page = call(chatty, "search_nodes", query=QUESTION, mode="semantic", limit=3, entityTypes=["turn"])
    assert names(page)[:2] == ["D3:2", "D3:4"]  # the note D3:2 repeats is not on the page


def test_a_turn_that_says_something_of_its_own_ranks_before_small_talk_near_the_question_by_its_name(
        tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    chatter = ["How was your week?", "The weather was awful", "Did you see the game on Sunday?",
               "Traffic was unbelievable"]
    turns = [{"name": f"D{day}:{i}", "entityType": "turn", "observations": [f"Jonas on {day} October 2023: {text}"]}
             for i, text in enumerate(chatter, start=1) for day in (3, 8, 17)]
    turns.append({"name": "D8:12", "entityType": "turn", "observations": [
        "Jonas on 8 October 2023: I'm halfway through The Remains of the Day and I can't put it down."]})
    with embedded(tmp_path, turns) as memory:
        for question in ("What book was Jonas reading?", "Which novel has Jonas been absorbed in?"):
            similar = call(memory, "semantic_search", query=question, limit=3, threshold=0.0)
            assert "D8:12" not in names(similar)  # by similarity alone, small talk is nearer
            for mode in ("semantic", "hybrid"):
                assert names(call(memory, "search_nodes", query=question, mode=mode, limit=3))[0] == "D8:12"


def test_a_preference_saved_several_times_in_alike_words_still_comes_first(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    saved = ["The user prefers dark mode in the editor", "The user prefers dark mode",
             "User said they prefer dark mode", "The user prefers dark mode in every app",
             "The user prefers dark mode at night"]
    other = ["The user is a backend developer", "The user lives in Berlin", "The user prefers tea over coffee",
             "The user uses Linux on the desktop", "The user has two children", "The user prefers short answers",
             "The user is learning Spanish", "The user works remotely",
             "The user prefers email to phone calls", "The user plays football on Tuesdays",
             "The user prefers metric units", "The user has a dog"]
    notes = [{"name": f"F{i}", "entityType": "memory", "observations": [text]} for i, text in enumerate(saved)]
    notes += [{"name": f"G{i}", "entityType": "memory", "observations": [text]} for i, text in enumerate(other)]
    with embedded(tmp_path, notes) as memory:
        for mode in ("semantic", "hybrid"):  # the copies crowd each other; they are no crowd the question is near
            first = names(call(memory, "search_nodes", query="Which colour theme does the user like?", mode=mode,
                               limit=5))
            assert first[0].startswith("F"), (mode, first)


def test_the_turn_that_answers_is_found_among_the_hundred_nearest_not_only_the_fifty(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    chatter = ["How was your week?", "Pretty hectic, work has been crazy lately.", "Haha, totally.",
               "The weather has been awful, it rained the whole weekend.", "I need a holiday so badly.",
               "Did you see the game on Sunday?", "We should grab coffee soon.", "Ha, I know what you mean.",
               "Traffic this morning was unbelievable.", "That reminds me, I owe you a message.",
               "I read somewhere that walking after dinner helps.", "Oh wow, congratulations!",
               "Not bad, just trying to keep up with everything.", "Same here, it's been a lot.",
               "I watched a documentary about whales last night.", "Talk soon, have a great evening!",
               "My phone keeps running out of battery by lunchtime.", "Let's plan something for next month.",
               "I'm thinking of repainting the living room, maybe green.", "Sounds exhausting, take care of yourself.",
               "The new café near the station is pretty good.", "I finally cleaned out the garage.",
               "My neighbour's dog kept barking all night.", "Wait, really? Since when?", "Ooh, send me pictures!",
               "I keep meaning to call my parents more often.", "Work gave us free pizza on Friday, small wins.",
               "I tried a new running route, got completely lost.", "My team at work is hiring, it's chaos.",
               "Bye for now, say hi to everyone!", "No way! Tell me more.", "That's a big step!",
               "I'm so happy for you.", "Haha, that sounds like you.", "I've been sleeping terribly, too much screen "
               "time probably.", "Anyway, enough about me, what's new with you?", "Hi! Good to hear from you.",
               "Oh no, I'm sorry to hear that.", "That's amazing!", "Hey Maya! Long time no see, how have you been?"]
    turns = [{"name": f"D{day}:{i}", "entityType": "turn", "observations": [f"Jonas on {day} October 2023: {text}"]}
             for i, text in enumerate(chatter, start=1) for day in (3, 8)]
    turns.append({"name": "D8:50", "entityType": "turn", "observations": [
        "Jonas on 8 October 2023: I'm halfway through Middlemarch and I can't put it down."]})
    with embedded(tmp_path, turns) as memory:
        question = "What book was Jonas reading?"
        by_cosine = [e["name"] for e in call(memory, "semantic_search", query=question, limit=100,
                                             threshold=0.0)["entities"]]
        assert "D8:50" not in by_cosine[:50]  # past the fifty nearest, even after their second stage
        # (with the fifty nearest ranked again it came 61st: small talk above it was compared only among itself)
        for mode in ("semantic", "hybrid"):
            assert "D8:50" in names(call(memory, "search_nodes", query=question, mode=mode, limit=20)), mode


def test_hybrid_lets_the_nearest_meaning_beat_matches_of_one_common_word(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    chatter = ["How was your week?", "The weather was awful", "Did you see the game on Sunday?",
               "Traffic was unbelievable", "We should grab coffee soon", "Haha, totally."]
    turns = [{"name": f"D1:{i}", "entityType": "turn", "observations": [f"Priya on 5 May 2023: {text}"]}
             for i, text in enumerate(chatter, start=1)]
    turns.append({"name": "D1:9", "entityType": "turn", "observations": [
        "Priya on 5 May 2023: Big news at home, we brought a little beagle puppy back from the shelter and "
        "named it Biscuit, it already chewed my slippers"]})
    with embedded(tmp_path, turns) as memory:
        meaning = call(memory, "search_nodes", query="What pet did Priya adopt?", mode="semantic")
        hybrid = call(memory, "search_nodes", query="What pet did Priya adopt?", mode="hybrid")
    assert names(meaning)[0] == "D1:9"
    assert names(hybrid)[0] == "D1:9"
