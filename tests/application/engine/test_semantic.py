"""Embedding in the call: a write that promises an embedded entity (Kuzu's create_entity,
add_observations) stores its vector itself once the model is loaded, ahead of the projector,
which then passes over it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from chronograph.application import Memory
from chronograph.application.engine.semantic import SETTLE, Semantic
from chronograph.application.errors import UnavailableError
from chronograph.application.surfaces.kuzu import KUZU
from chronograph.projections.errors import EmbeddingsUnavailableError, TermWeightsUnavailableError
from chronograph.projections.search.splade import open_weigher
from chronograph.projections.search.vectors import Vectors
from support.embedders import Words


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[tuple[Memory, Words]]:
    with Memory(tmp_path / "store", sync=False) as opened:
        words = Words()
        opened.semantic = Semantic(opened.views, words, opened.lock)
        yield opened, words


def write(memory: Memory, tool: str, **arguments: Any) -> dict[str, Any]:
    return msgspec.to_builtins(memory.write(KUZU[tool], arguments, actor="t").output)["reply"]  # type: ignore[no-any-return]


def stored(memory: Memory) -> tuple[dict[str, int], int]:
    """Each entity's embedded version (by name), and the vectors' checkpoint."""
    assert memory.semantic is not None
    with memory.lock, memory.views.snapshot() as snapshot:
        graph = snapshot.graph
        streams = {e.stream: e.name for e in graph.entities("memory")}
        versions = memory.semantic.vectors.versions(graph.txn, streams)
        return {streams[s]: v for s, v in versions.items()}, memory.semantic.vectors.checkpoint(graph.txn)


def test_a_write_before_the_model_is_loaded_answers_embedded_false(memory: tuple[Memory, Words]) -> None:
    store, words = memory
    created = write(store, "create_entity", database="memory", name="Ada", entity_type="person")
    assert created["embedded"] is False and words.texts == []
    assert stored(store) == ({}, 0)


def test_once_loaded_a_write_embeds_its_entity_ahead_of_the_projector(memory: tuple[Memory, Words]) -> None:
    store, words = memory
    assert store.semantic is not None
    store.read("semantic_search", {"query": "warm up"})  # the model is loaded: queries embed
    created = write(store, "create_entity", database="memory", name="Ada", entity_type="person",
                    observations=["Writes Python every day"])
    assert created["embedded"] is True
    assert stored(store) == ({"Ada": 1}, 0)  # stored in the call; the projector has not run
    added = write(store, "add_observations", database="memory", entity_name="Ada", observations=["Keeps bees"])
    assert added["reembedded"] is True and stored(store)[0] == {"Ada": 2}
    same = write(store, "add_observations", database="memory", entity_name="Ada", observations=["Keeps bees"])
    assert same["status"] == "no_change" and same["reembedded"] is False
    embedded = len(words.texts)
    store.semantic.catch_up()
    assert len(words.texts) == embedded  # the projector found Ada's vector current
    assert stored(store) == ({"Ada": 2}, store.log.head())
    found = msgspec.to_builtins(store.read("semantic_search", {"query": "keeps bees", "workspace": "memory"}))
    assert [e["name"] for e in found["entities"]] == ["Ada"]


def test_an_entity_a_write_embedded_ahead_of_the_projector_is_found_at_once(memory: tuple[Memory, Words]) -> None:
    store, _ = memory
    assert store.semantic is not None
    write(store, "create_entity", database="memory", name="Seed", entity_type="thing")
    store.semantic.catch_up()
    store.read("semantic_search", {"query": "warm up", "workspace": "memory"})  # loaded: model and matrices
    store.write("create_entities", {"workspace": "memory", "entities": [
        {"name": f"filler {i}", "entityType": "thing", "observations": []} for i in range(SETTLE + 10)]}, actor="t")
    created = write(store, "create_entity", database="memory", name="Zebra", entity_type="animal",
                    observations=["a striped horse of africa"])
    assert created["embedded"] is True and stored(store)[1] < store.log.head()  # ahead of the projector
    found = msgspec.to_builtins(store.read("semantic_search", {"query": "striped horse of africa",
                                                              "workspace": "memory", "threshold": 0.5}))
    assert [e["name"] for e in found["entities"]] == ["Zebra"]


def test_a_search_by_meaning_sees_one_write_of_as_many_entities_as_it_settles_and_their_relations(
        memory: tuple[Memory, Words]) -> None:
    store, _ = memory
    store.read("semantic_search", {"query": "warm up"})  # nothing behind; the projector never runs here
    people = [{"name": f"person {i}", "entityType": "person", "observations": [f"note {i}"]} for i in range(SETTLE - 1)]
    store.write("create_entities", {"entities": [*people, {"name": "Owner", "entityType": "person",
                                                           "observations": ["adopted a beagle puppy"]}]}, actor="t")
    store.write("create_relations", {"relations": [{"from": p["name"], "to": "Owner", "relationType": "knows"}
                                                   for p in people]}, actor="t")  # events with nothing to embed
    found = msgspec.to_builtins(store.read("search_nodes", {"query": "beagle puppy", "mode": "semantic", "limit": 3}))
    assert found["entities"][0]["name"] == "Owner" and found["embeddedThrough"] == found["head"]
    store.write("create_entities", {"entities": [{"name": f"more {i}", "entityType": "t", "observations": []}
                                                 for i in range(SETTLE + 1)]}, actor="t")
    behind = msgspec.to_builtins(store.read("search_nodes", {"query": "beagle puppy", "mode": "semantic"}))
    assert behind["embeddedThrough"] < behind["head"]  # more than it settles: left to the projector, and said


def test_a_vector_of_a_later_version_is_never_replaced_by_an_older_one(memory: tuple[Memory, Words]) -> None:
    store, _ = memory
    assert store.semantic is not None
    write(store, "create_entity", database="memory", name="Ada", entity_type="person")  # not loaded: not embedded
    write(store, "add_observations", database="memory", entity_name="Ada", observations=["Keeps bees"])
    with store.lock, store.views.snapshot() as snapshot:
        old = snapshot.graph.entity("memory", "Ada")
    assert old is not None and old.version == 2
    store.semantic.catch_up()  # loads the model and stores version 2
    assert store.semantic.embed_now([msgspec.structs.replace(old, version=1)]) is False  # not the live one
    assert stored(store)[0] == {"Ada": 2}
    assert store.semantic.embed_now([old]) is True and stored(store)[0] == {"Ada": 2}


def watched(store: Memory, embed: Callable[[Any], Any], taken: list[bool]) -> Callable[[Any], Any]:
    """`embed`, which first has another thread try the store's lock, saying in `taken` whether it
    got it (so a call that embeds while holding the store says False)."""

    def probe() -> None:
        got = store.lock.acquire(timeout=5)
        if got:
            store.lock.release()
        taken.append(got)

    def watching(texts: Any) -> Any:
        other = threading.Thread(target=probe)
        other.start()
        other.join()  # another thread tries the store's lock while this one embeds
        return embed(texts)

    return watching


def test_a_write_embeds_without_holding_the_store_so_other_calls_go_on(memory: tuple[Memory, Words]) -> None:
    store, words = memory
    store.read("semantic_search", {"query": "warm up"})
    taken: list[bool] = []
    words.embed = watched(store, words.embed, taken)  # type: ignore[method-assign]
    created = write(store, "create_entity", database="memory", name="Ada", entity_type="person")
    assert created["embedded"] is True and taken == [True]


@pytest.mark.parametrize("tool", ["search_nodes", "semantic_search"])
def test_a_search_by_meaning_embeds_without_holding_the_store_so_other_calls_go_on(
        memory: tuple[Memory, Words], tool: str) -> None:
    """An embedder as slow as an endpoint may be holds up no write: the query and the few
    entities written just before it are embedded before the search takes the store."""
    store, words = memory
    store.read("semantic_search", {"query": "warm up"})
    store.write("create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": [
        "writes programs"]}]}, actor="t")  # a backlog the search settles first
    taken: list[bool] = []
    words.embed = watched(store, words.embed, taken)  # type: ignore[method-assign]
    arguments = {"query": "programs", **({"mode": "semantic"} if tool == "search_nodes" else {})}
    found = store.read(tool, arguments)
    assert [e.name for e in found.entities] == ["Ada"]  # type: ignore[attr-defined]
    assert taken == [True, True]  # the query's embedding and the backlog's


def test_a_team_search_by_meaning_embeds_its_query_without_holding_the_store(memory: tuple[Memory, Words]) -> None:
    store, words = memory
    store.write("memory_knowledge", {"action": "add", "scopeType": "global", "title": "deploys",
                                     "content": "we deploy on fridays"}, actor="t")
    asked = {"action": "search", "search": "deploy fridays", "semanticSearch": True, "semanticThreshold": 0.1}
    store.read("memory_query", asked)  # the entries are embedded (kept by this process)
    taken: list[bool] = []
    words.embed = watched(store, words.embed, taken)  # type: ignore[method-assign]
    found = store.read("memory_query", {**asked, "search": "when do we deploy"}).reply  # type: ignore[attr-defined]
    assert [r["knowledge"]["title"] for r in found["results"]] == ["deploys"] and found["meta"]["semantic"]
    assert taken == [True]  # the query, embedded before the search took the store


def test_an_embedder_that_fails_is_asked_once_a_search_and_never_while_the_store_is_held(
        memory: tuple[Memory, Words]) -> None:
    store, words = memory
    store.read("semantic_search", {"query": "warm up"})
    store.write("create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": [
        "writes programs"]}]}, actor="t")  # a backlog too

    def failing(texts: Any) -> Any:
        raise EmbeddingsUnavailableError("the endpoint timed out")

    taken: list[bool] = []
    words.embed = watched(store, failing, taken)  # type: ignore[method-assign]
    for query in ("programs", "programs"):
        with pytest.raises(UnavailableError, match="the endpoint timed out"):
            store.read("search_nodes", {"query": query, "mode": "semantic"})
    assert taken == [True, True]  # asked once a search, the store free meanwhile


def test_vectors_embedded_the_former_way_are_passed_over_and_the_store_embedded_again(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as opened:
        opened.write("create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["Writes Python", "Lives in London"]}]}, actor="t")
        former = Vectors(opened.views.env, Words.model)  # vectors kept under the bare model id, as before
        with opened.lock, opened.views.snapshot() as snapshot:
            head, stream = snapshot.graph.position, snapshot.graph.entity("default", "Ada").stream  # type: ignore[union-attr]
        opened.views.env.write(lambda txn: former.store(txn, [(stream, "default", 1, np.ones(64))], (), head))
        words = Words()
        opened.semantic = Semantic(opened.views, words, opened.lock)
        progress: list[tuple[int, int]] = []
        opened.semantic.catch_up(lambda through, at: progress.append((through, at)))
        embedded = sorted(words.texts)
        reply = msgspec.to_builtins(opened.read("search_nodes", {"query": "London", "mode": "semantic"}))
    assert embedded == ["Ada (person). Lives in London", "Ada (person). Writes Python"]
    assert progress[-1] == (head, head) and reply["embeddedThrough"] == head
    assert reply["entities"][0]["matchedObservations"][0]["text"] == "Lives in London"


class Gated(Words):
    """Words that counts its loads and holds its `hold`-th embedding call until `gate` opens."""

    def __init__(self, hold: int = 0) -> None:
        super().__init__()
        self.loads = 0
        self.hold = hold
        self.entered = threading.Event()
        self.gate = threading.Event()

    def load(self) -> None:
        self.loads += 1
        super().load()

    def embed(self, texts: Any) -> Any:
        if self.calls + 1 == self.hold:
            self.entered.set()
            self.gate.wait(timeout=30)  # a liveness guard only: the test opens it
        return super().embed(texts)


def fill(path: Path, count: int) -> None:
    with Memory(path, sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": f"thing {i}", "entityType": "thing", "observations": [f"note {i}"]} for i in range(count)]},
            actor="t")


def vectors_and_checkpoint(memory: Memory) -> tuple[int, int, int]:
    """(vectors stored, their checkpoint, the log's head)."""
    assert memory.semantic is not None
    with memory.lock, memory.views.snapshot() as snapshot:
        graph = snapshot.graph
        streams = [e.stream for e in graph.entities("default")]
        stored = len(memory.semantic.vectors.versions(graph.txn, streams))
        return stored, memory.semantic.vectors.checkpoint(graph.txn), graph.position


def test_a_stop_mid_batch_keeps_the_chunks_embedded_and_the_next_start_embeds_only_the_rest(tmp_path: Path) -> None:
    from chronograph.application.engine.semantic import CHUNK

    fill(tmp_path / "store", 100)
    with Memory(tmp_path / "store", sync=False) as memory:
        gated = Gated(hold=3)
        memory.semantic = Semantic(memory.views, gated, memory.lock)
        memory.semantic.start()
        assert gated.entered.wait(timeout=30)  # two chunks committed, the third under way
        thread = memory.semantic._thread
        releaser = threading.Timer(1.0, gated.gate.set)  # the old projector stopped only after its step
        releaser.start()
        memory.semantic.stop(wait=0.0)
        gated.gate.set()
        releaser.cancel()
        assert thread is not None
        thread.join(timeout=30)
        stored, checkpoint, head = vectors_and_checkpoint(memory)
        assert (stored, checkpoint) == (2 * CHUNK, 0)  # committed work kept; the chunk under way was not stored
    with Memory(tmp_path / "store", sync=False) as memory:
        words = Words()
        memory.semantic = Semantic(memory.views, words, memory.lock)
        memory.semantic.catch_up()
        assert len(words.texts) == 100 - 2 * CHUNK  # resumed: only what was not embedded
        assert vectors_and_checkpoint(memory) == (100, head, head)


def test_the_projector_loads_no_model_while_there_is_nothing_to_embed(tmp_path: Path) -> None:
    fill(tmp_path / "store", 3)
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.semantic = Semantic(memory.views, Words(), memory.lock)
        memory.semantic.catch_up()
    with Memory(tmp_path / "store", sync=False) as memory:
        gated = Gated()
        memory.semantic = Semantic(memory.views, gated, memory.lock)
        looked = threading.Event()
        memory.semantic.start(lambda checkpoint, head: looked.set())
        assert looked.wait(timeout=30)  # the projector has looked at the log
        memory.semantic.stop()
        assert (gated.loads, gated.calls) == (0, 0)


class Weighing:
    """The installed term weigher, keeping every text it weighed."""

    def __init__(self) -> None:
        found = open_weigher()
        assert found is not None, "the semantic extra installs the term weighting model"
        self.inner = found
        self.model = found.model
        self.texts: list[str] = []

    def weigh(self, texts: Any) -> Any:
        self.texts.extend(texts)
        return self.inner.weigh(texts)

    def query(self, text: str) -> Any:
        return self.inner.query(text)


def entity(memory: Memory, name: str) -> tuple[Any, Any]:
    """The live record of `name` and the parts its weighted vector is made of."""
    assert memory.semantic is not None
    with memory.lock, memory.views.snapshot() as snapshot:
        record = snapshot.graph.entity("default", name)
        assert record is not None
        return record, memory.semantic.vectors.parts(snapshot.graph.txn, record.stream)


def test_each_observation_keeps_its_term_weights_and_a_new_one_is_the_only_one_weighed(tmp_path: Path) -> None:
    weigher = Weighing()
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": "Evan", "entityType": "person", "observations": ["Writes Python", "Lives in London"]}]}, actor="t")
        memory.semantic = Semantic(memory.views, Words(), memory.lock, weigher)  # type: ignore[arg-type]
        memory.semantic.catch_up()
        memory.write("add_observations", {"observations": [
            {"entityName": "Evan", "contents": ["My car broke down on the motorway"]}]}, actor="t")
        memory.semantic.catch_up()
        record, parts = entity(memory, "Evan")
    assert sorted(weigher.texts) == ["Lives in London", "My car broke down on the motorway", "Writes Python"]
    assert parts.version == record.version and len(parts.term_rows()) == 3  # one row of weights per observation


def test_an_observation_a_question_calls_for_by_its_words_is_nearer_than_its_cosine_says(tmp_path: Path) -> None:
    question = "What kinds of things did Evan have broken?"
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Evan", "entityType": "person", "observations": [
            "I love the beach in June", "My car broke down on the motorway"]}]}, actor="t")
        plain = Semantic(memory.views, Words(), memory.lock)
        plain.catch_up()
        with memory.lock, memory.views.snapshot() as snapshot:
            record = snapshot.graph.entity("default", "Evan")
            assert record is not None
            cosine = plain.nearness.closeness(snapshot, record, question)
        memory.semantic = Semantic(memory.views, Words(), memory.lock, open_weigher())
        memory.semantic.catch_up()
        with memory.lock, memory.views.snapshot() as snapshot:
            weighed = memory.semantic.nearness.closeness(snapshot, record, question)
    assert cosine is not None and weighed is not None
    car, beach = "My car broke down on the motorway", "I love the beach in June"
    gained = {text: weighed[text] - cosine[text] for text in (car, beach)}
    assert gained[car] > 0.03 and gained[car] > 5 * gained[beach] >= 0, gained


def found(memory: Memory, query: str) -> tuple[list[str], int]:
    reply = msgspec.to_builtins(memory.read("search_nodes", {"query": query, "mode": "semantic"}))
    return [e["name"] for e in reply["entities"]], reply["embeddedThrough"]


def test_a_store_embedded_before_the_weigher_is_searched_meanwhile_and_only_weighed(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["Writes Python", "Lives in London"]}]}, actor="t")
        before = Semantic(memory.views, Words(), memory.lock)
        before.catch_up()
        with memory.lock, memory.views.snapshot() as snapshot:
            head = snapshot.graph.position
        words, weigher = Words(), Weighing()
        memory.semantic = Semantic(memory.views, words, memory.lock, weigher)  # type: ignore[arg-type]
        meanwhile = found(memory, "London")  # nothing weighed yet: the vectors kept before answer
        memory.semantic.catch_up()
        record, parts = entity(memory, "Ada")
        after = found(memory, "London")
        with memory.lock, memory.views.snapshot() as snapshot:
            txn = snapshot.graph.txn
            kept = before.vectors.checkpoint(txn), before.vectors.parts(txn, record.stream) is not None
        dropped = memory.semantic.drop_former()
        with memory.lock, memory.views.snapshot() as snapshot:
            txn = snapshot.graph.txn
            left = before.vectors.checkpoint(txn), before.vectors.parts(txn, record.stream)
    assert meanwhile == (["Ada"], head) and after == (["Ada"], head)
    assert words.texts == ["London"] and sorted(weigher.texts) == ["Lives in London", "Writes Python"]
    assert parts is not None and len(parts.term_rows()) == 2
    assert kept == (head, True)  # a server keeps them: a process without the weigher searches them
    assert dropped and left == (0, None)  # replay --rebuild drops them once all is weighed


def test_an_entity_a_write_embedded_while_the_former_vectors_are_searched_is_found_at_once(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"workspace": "memory", "entities": [
            {"name": "Ada", "entityType": "person", "observations": ["Writes Python"]},
            *({"name": f"filler {i}", "entityType": "thing", "observations": []} for i in range(SETTLE + 10))]},
            actor="t")  # more to weigh than a search settles: searches read the former vectors meanwhile
        Semantic(memory.views, Words(), memory.lock).catch_up()  # embedded before the weigher
        memory.semantic = Semantic(memory.views, Words(), memory.lock, Weighing())  # type: ignore[arg-type]
        assert [e["name"] for e in msgspec.to_builtins(memory.read("semantic_search", {
            "query": "python", "workspace": "memory"}))["entities"]] == ["Ada"]  # the former vectors, loaded
        created = write(memory, "create_entity", database="memory", name="Zebra", entity_type="animal",
                        observations=["a striped horse of africa"])
        found = msgspec.to_builtins(memory.read("semantic_search", {"query": "striped horse of africa",
                                                                   "workspace": "memory", "threshold": 0.5}))
    assert created["embedded"] is True and [e["name"] for e in found["entities"]] == ["Zebra"]


def test_a_rebuild_keeps_the_vectors_kept_without_weights_for_the_weigher_to_borrow(tmp_path: Path) -> None:
    fill(tmp_path / "store", 5)
    with Memory(tmp_path / "store", sync=False) as memory:
        Semantic(memory.views, Words(), memory.lock).catch_up()
        words = Words()
        memory.semantic = Semantic(memory.views, words, memory.lock, Weighing())  # type: ignore[arg-type]
        memory.semantic.rewind()  # what replay --rebuild does before it embeds
        memory.semantic.catch_up()
    assert words.texts == []


class Broken(Weighing):
    """A term weigher whose model file is damaged."""

    def weigh(self, texts: Any) -> Any:
        raise TermWeightsUnavailableError("the term weighting model's file is damaged")

    def query(self, text: str) -> Any:
        raise TermWeightsUnavailableError("the term weighting model's file is damaged")


def test_a_damaged_term_weigher_leaves_search_by_meaning_to_the_embeddings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fill(tmp_path / "store", 3)
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.semantic = Semantic(memory.views, Words(), memory.lock, Broken())  # type: ignore[arg-type]
        memory.semantic.catch_up()
        first = found(memory, "note 1")
        second = found(memory, "note 2")
        embedded = vectors_and_checkpoint(memory)
    assert first[0][0] == "thing 1" and second[0][0] == "thing 2"
    assert embedded[0] == 3 and embedded[1] == embedded[2]
    assert capsys.readouterr().err.count("term weights are off for this server") == 1


def test_an_entity_without_observations_has_no_term_weights(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Evan Kowalski", "entityType": "person",
                                                       "observations": []}]}, actor="t")
        memory.semantic = Semantic(memory.views, Words(), memory.lock, open_weigher())
        memory.semantic.catch_up()
        _, parts = entity(memory, "Evan Kowalski")
    assert parts.term_rows() is not None and [len(ids) for ids, _ in parts.term_rows()] == [0]


def test_a_memory_asked_for_no_term_weights_searches_by_its_embeddings_alone(tmp_path: Path) -> None:
    with Memory(tmp_path / "on", sync=False, embeddings="local") as on, \
            Memory(tmp_path / "off", sync=False, embeddings="local", term_weights=False) as off:
        assert on.semantic is not None and off.semantic is not None
        assert on.semantic.weigher is not None and off.semantic.weigher is None


def test_a_store_weighed_and_opened_without_term_weights_borrows_its_vectors(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["Writes Python", "Lives in London"]}]}, actor="t")
        Semantic(memory.views, Words(), memory.lock, Weighing()).catch_up()  # type: ignore[arg-type]
        words = Words()
        memory.semantic = Semantic(memory.views, words, memory.lock)
        meanwhile = found(memory, "London")
        memory.semantic.catch_up()
        _, parts = entity(memory, "Ada")
    assert meanwhile[0] == ["Ada"] and words.texts == ["London"]  # searched, then embedded from what was kept
    assert parts is not None and parts.term_rows() is None and len(parts.keys()) == 2


def test_a_rebuild_with_the_weights_off_keeps_the_weighted_vectors(tmp_path: Path) -> None:
    fill(tmp_path / "store", 4)
    with Memory(tmp_path / "store", sync=False) as memory:
        weighted = Semantic(memory.views, Words(), memory.lock, Weighing())  # type: ignore[arg-type]
        weighted.catch_up()
        plain = Semantic(memory.views, Words(), memory.lock)
        plain.rewind()
        plain.catch_up()
        dropped = plain.drop_former()
        with memory.lock, memory.views.snapshot() as snapshot:
            kept = weighted.vectors.checkpoint(snapshot.graph.txn), snapshot.graph.position
    assert not dropped and kept[0] == kept[1]


def test_a_change_made_with_the_weights_off_is_only_weighed_when_they_are_back(tmp_path: Path) -> None:
    fill(tmp_path / "store", 4)
    with Memory(tmp_path / "store", sync=False) as memory:
        Semantic(memory.views, Words(), memory.lock, Weighing()).catch_up()  # type: ignore[arg-type]
        memory.write("add_observations", {"observations": [
            {"entityName": "thing 1", "contents": ["written while the weights were off"]}]}, actor="t")
        off = Words()
        Semantic(memory.views, off, memory.lock).catch_up()
        words, weigher = Words(), Weighing()
        Semantic(memory.views, words, memory.lock, weigher).catch_up()  # type: ignore[arg-type]
    assert off.texts == ["thing 1 (thing). written while the weights were off"]
    assert words.texts == [] and weigher.texts == ["written while the weights were off"]


def test_beside_a_process_keeping_the_other_id_a_search_keeps_to_its_own_vectors(tmp_path: Path) -> None:
    fill(tmp_path / "store", 4)
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.semantic = Semantic(memory.views, Words(), memory.lock, Weighing())  # type: ignore[arg-type]
        memory.semantic.catch_up()
        memory.write("create_entities", {"entities": [{"name": "late", "entityType": "thing",
                                                       "observations": ["written last"]}]}, actor="t")
        Semantic(memory.views, Words(), memory.lock).catch_up()  # the other process: a step ahead
        with memory.lock, memory.views.snapshot() as snapshot:
            searched = memory.semantic.nearness._searched(snapshot)  # noqa: SLF001
    assert searched is memory.semantic.vectors


class Poisoned(Words):
    """Words that answer NaN for a text holding 'poison' (as a broken endpoint may), until cured."""

    cured = False

    def embed(self, texts: Any) -> Any:
        rows = super().embed(texts)
        if not self.cured:
            rows[[i for i, text in enumerate(texts) if "poison" in text]] = float("nan")
        return rows


def test_a_vector_that_is_not_numbers_is_refused_and_its_entity_embedded_once_the_model_answers_again(
        tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        poisoned = Poisoned()
        memory.semantic = Semantic(memory.views, poisoned, memory.lock)
        memory.write("create_entities", {"entities": [
            {"name": "Bad", "entityType": "x", "observations": ["poison apple"]},
            {"name": "Good", "entityType": "x", "observations": ["pear"]}]}, actor="t")
        with pytest.raises(EmbeddingsUnavailableError, match="not numbers"):
            memory.semantic.catch_up()
        assert vectors_and_checkpoint(memory)[:2] == (0, 0)  # nothing of that batch was kept as embedded
        poisoned.cured = True
        memory.semantic.catch_up()
        found = memory.read("search_nodes", {"query": "poison apple", "mode": "semantic"}).entities  # type: ignore[attr-defined]
        assert found[0].name == "Bad"


def test_a_search_by_meaning_with_nothing_embedded_says_why_the_projector_is_stuck(
        memory: tuple[Memory, Words], monkeypatch: pytest.MonkeyPatch) -> None:
    """A projector stuck on a full disk: the search said only "Nothing is embedded yet" and to wait."""
    from chronograph.eventstore import StorageFullError

    store, _ = memory
    assert store.semantic is not None

    def full(*_: object) -> tuple[int, int]:
        raise StorageFullError("the disk holding the store is full; nothing was written")

    monkeypatch.setattr(store.semantic, "step", full)
    store.write("create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": [
        "writes programs"]}]}, actor="t")
    with pytest.raises(UnavailableError, match="Nothing is embedded yet.*it cannot go on now: the disk holding "
                                               "the store is full"):
        store.read("search_nodes", {"query": "programs", "mode": "semantic"})
