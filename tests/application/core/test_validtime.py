"""Valid time beside transaction time: facts true from/until, invalidated without erasing, read
at validAt among what the memory knew at asOf."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import PROFILES, ChronographError, Memory
from chronograph.application.core import validtime
from chronograph.application.core.recall import recall
from chronograph.application.engine.semantic import Semantic
from chronograph.application.surfaces.projectroot import workspace_name
from chronograph.projections import verify
from freezegun import freeze_time
from msgspec import UNSET
from support.embedders import Words


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as opened:
        yield opened


def write(memory: Memory, tool: str, **arguments: Any) -> Any:
    return memory.write(tool, arguments, actor="t").output


def seen(memory: Memory, **arguments: Any) -> tuple[list[str], list[str]]:
    graph = memory.read("read_graph", arguments)
    alice = next(e for e in graph.entities if e.name == "Alice")
    return alice.observations, sorted(r.target for r in graph.relations)


def refused(memory: Memory, tool: str, **arguments: Any) -> str:
    head = memory.log.head()
    with pytest.raises(ChronographError) as caught:
        memory.write(tool, arguments, actor="t")
    assert memory.log.head() == head
    return str(caught.value)


def seed(memory: Memory) -> None:
    write(memory, "create_entities", entities=[{"name": n, "entityType": "t", "observations": []}
                                               for n in ("Alice", "Acme", "Initech")])
    write(memory, "add_observations", observations=[
        {"entityName": "Alice", "contents": ["works at Acme"], "validFrom": "2019-01-01", "validUntil": "2023-06-01"},
        {"entityName": "Alice", "contents": ["likes tea"]}])
    write(memory, "create_relations", relations=[
        {"from": "Alice", "to": "Acme", "relationType": "works_at", "validFrom": "2019-01-01",
         "validUntil": "2023-06-01"},
        {"from": "Alice", "to": "Initech", "relationType": "works_at", "validFrom": "2023-06-01"}])


def test_reads_show_what_is_true_now_and_validat_what_was_true_then(memory: Memory) -> None:
    seed(memory)
    assert seen(memory) == (["likes tea"], ["Initech"])
    assert seen(memory, validAt="2020-03-01T00:00:00Z") == (["works at Acme", "likes tea"], ["Acme"])
    [alice] = memory.read("open_nodes", {"names": ["Alice"], "validAt": "2020-03-01"}).entities
    assert alice.validity == {"works at Acme": {"validFrom": "2019-01-01T00:00:00.000000Z",
                                                "validUntil": "2023-06-01T00:00:00.000000Z"}}
    found = memory.read("search_nodes", {"query": "acme"})
    assert [e.name for e in found.entities] == ["Alice", "Acme"] and found.entities[0].observations == ["likes tea"]


def test_invalidating_ends_a_fact_without_erasing_it_and_asof_with_validat_combine(memory: Memory) -> None:
    with freeze_time("2026-03-01T00:00:00Z"):
        seed(memory)
        known_then = memory.log.head()
    with freeze_time("2026-04-01T00:00:00Z"):
        write(memory, "invalidate_observations", observations=[{"entityName": "Alice", "observations": ["likes tea"],
                                                                "at": "2026-03-15"}])
        write(memory, "invalidate_relations", relations=[
            {"from": "Alice", "to": "Initech", "relationType": "works_at"}])
        assert seen(memory) == ([], [])
        assert seen(memory, validAt="2026-03-10") == (["likes tea"], ["Initech"])
        # what did we believe on March 1 (asOf) about where Alice worked in 2020 (validAt)?
        assert seen(memory, asOf=known_then, validAt="2020-01-01") == (["works at Acme", "likes tea"], ["Acme"])
        history = memory.read("get_entity_history", {"name": "Alice"}).versions
        assert history[-1].event_type == "observations_invalidated"
        memory.views.rebuild()
        assert seen(memory, validAt="2026-03-10") == (["likes tea"], ["Initech"])


def test_bad_valid_times_are_refused_with_nothing_written(memory: Memory) -> None:
    seed(memory)
    assert "validUntil" in refused(memory, "add_observations", observations=[
        {"entityName": "Alice", "contents": ["x"], "validFrom": "2024-01-01", "validUntil": "2023-01-01"}])
    assert "already invalid" in refused(memory, "invalidate_observations", observations=[
        {"entityName": "Alice", "observations": ["works at Acme"]}])
    assert "already invalid" in refused(memory, "invalidate_relations", relations=[
        {"from": "Alice", "to": "Acme", "relationType": "works_at"}])
    assert "before the relation's validFrom" in refused(memory, "invalidate_relations", relations=[
        {"from": "Alice", "to": "Initech", "relationType": "works_at", "at": "2020-01-01"}])
    assert "no observation" in refused(memory, "invalidate_observations", observations=[
        {"entityName": "Alice", "observations": ["never said"]}])
    assert "validAt" in str(pytest.raises(ChronographError, memory.read, "read_graph", {"validAt": "soon"}).value)


def test_an_observation_named_twice_in_one_invalidation_is_counted_once(memory: Memory) -> None:
    seed(memory)
    head = memory.log.head()
    done = write(memory, "invalidate_observations", observations=[
        {"entityName": "Alice", "observations": ["likes tea", "likes tea", "likes tea"]}])
    assert done.message == "Invalidated 1 observation" and memory.log.head() == head + 1
    again = write(memory, "invalidate_observations", observations=[  # the end moved earlier, in two items
        {"entityName": "Alice", "observations": ["works at Acme"], "at": "2022-06-01"},
        {"entityName": "Alice", "observations": ["works at Acme"], "at": "2022-05-01"}])
    assert again.message == "Invalidated 1 observation"


def test_an_invalidated_observation_stated_again_is_added_with_its_new_span_and_its_history_shows_it(
        memory: Memory) -> None:
    with freeze_time("2026-06-01T00:00:00Z"):
        write(memory, "create_entities", entities=[{"name": "Bob", "entityType": "person",
                                                    "observations": ["works at Acme", "likes tea"]}])
        write(memory, "invalidate_observations", observations=[
            {"entityName": "Bob", "observations": ["works at Acme", "likes tea"], "at": "2022-01-01"}])
        again = write(memory, "add_observations", observations=[
            {"entityName": "Bob", "contents": ["works at Acme"], "validFrom": "2024-01-01"},
            {"entityName": "Bob", "contents": ["likes tea", "likes jazz"]}])
        assert [r.added_observations for r in again.results] == [["works at Acme"], ["likes tea", "likes jazz"]]
        [bob] = memory.read("open_nodes", {"names": ["Bob"]}).entities
        assert bob.observations == ["works at Acme", "likes tea", "likes jazz"]  # each where it was
        assert bob.validity == {"works at Acme": {"validFrom": "2024-01-01T00:00:00.000000Z"}}
        [then] = memory.read("open_nodes", {"names": ["Bob"], "validAt": "2023-01-01"}).entities
        assert then.observations == ["likes tea", "likes jazz"]  # stated again without a span: true at every time
        history = memory.read("get_entity_history", {"name": "Bob"}).versions
        assert [v.event_type for v in history[-2:]] == ["observations_added", "observations_added"]
        assert history[-2].changes["observations"] == ("works at Acme",)
        head = memory.log.head()
        same = write(memory, "add_observations", observations=[  # still true: nothing to say again
            {"entityName": "Bob", "contents": ["works at Acme"], "validFrom": "2024-01-01"},
            {"entityName": "Bob", "contents": ["works at Acme", "likes tea"]}])
        assert [r.added_observations for r in same.results] == [[], []] and memory.log.head() == head
        assert verify(memory.views) == []


NOW = 1_000


@pytest.mark.parametrize(("held", "span", "written"), [
    (None, (None, None), None),  # held without a span: true at every time already
    (None, (10, 20), None),
    ((None, 500), (None, None), (None, None)),  # ended: stated true (now) again
    ((2_000, None), (None, None), (None, None)),  # not begun yet
    ((500, 2_000), (None, None), None),  # still true now
    ((100, 200), (100, 200), None),  # the same span: an import read again writes nothing
    ((100, 200), (120, 150), None),  # within it
    ((100, 200), (300, None), (300, None)),  # later, apart: the later stays
    ((500, 2_000), (3_000, 4_000), None),  # later, apart, but the held span holds now: it stays
    ((300, None), (100, 200), None),  # earlier, apart: the later (held) stays
    ((100, 200), (150, None), (100, None)),  # they meet: both
    ((100, 200), (200, 300), (100, 300)),  # they touch
    ((100, 200), (None, 150), (None, 200)),
])
def test_a_fact_held_is_stated_again_only_when_the_statement_says_what_its_span_does_not(
        held: validtime.Span | None, span: validtime.Span, written: validtime.Span | None) -> None:
    assert validtime.restated(held, span, NOW) == written


def test_a_kuzu_or_n2n_add_states_an_invalidated_observation_again(memory: Memory, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    project = {"projectPath": str(root), "confirmNewProjectRoot": str(root)}
    memory.write(PROFILES["n2n"].tools["n2n_add_entities"], {**project, "entities": [
        {"name": "Svc", "entityType": "CLASS", "observations": ["Owns the cache"]}]}, actor="t")
    n2n = workspace_name(Path(os.path.realpath(root)))
    write(memory, "create_entities", workspace="memory", entities=[
        {"name": "Ada", "entityType": "person", "observations": ["likes tea"]}])
    for workspace, name, text in ((n2n, "Svc", "Owns the cache"), ("memory", "Ada", "likes tea")):
        write(memory, "invalidate_observations", workspace=workspace, observations=[
            {"entityName": name, "observations": [text], "at": "2022-01-01"}])
    added = memory.write(PROFILES["n2n"].tools["n2n_add_observations"], {**project, "observations": [
        {"entityName": "Svc", "contents": ["owns the cache."]}]}, actor="t").output  # n2n's near-duplicate
    assert added.reply["addedCount"] == 1  # type: ignore[attr-defined]
    kuzu = memory.write(PROFILES["kuzu"].tools["add_observations"], {
        "database": "memory", "entity_name": "Ada", "observations": ["likes tea"]}, actor="t").output
    assert kuzu.reply["added_observations"] == ["likes tea"]  # type: ignore[attr-defined]
    assert memory.read("open_nodes", {"names": ["Ada"], "workspace": "memory"}).entities[0].observations == [
        "likes tea"]
    assert memory.read("open_nodes", {"names": ["Svc"], "workspace": n2n}).entities[0].observations == [
        "owns the cache."]


def test_an_invalidated_relation_created_again_is_true_again_keeping_what_it_held(memory: Memory) -> None:
    with freeze_time("2026-06-01T00:00:00Z"):
        write(memory, "create_entities", workspace="memory", entities=[
            {"name": n, "entityType": "t", "observations": []} for n in ("Alice", "Acme", "Initech", "Hooli")])
        write(memory, "create_relations", workspace="memory", relations=[
            {"from": "Alice", "to": to, "relationType": "works_at", "confidence": 0.5, "metadata": {"src": "cv"}}
            for to in ("Acme", "Initech", "Hooli")])
        write(memory, "invalidate_relations", workspace="memory", relations=[
            {"from": "Alice", "to": to, "relationType": "works_at", "at": "2022-01-01"}
            for to in ("Acme", "Initech", "Hooli")])
        assert memory.read("read_graph", {"workspace": "memory"}).relations == []
        made = write(memory, "create_relations", workspace="memory", relations=[
            {"from": "Alice", "to": "Acme", "relationType": "works_at"},
            {"from": "Alice", "to": "Initech", "relationType": "works_at", "validFrom": "2021-01-01"}])
        assert [(r.target, r.confidence, r.metadata) for r in made.relations] == [
            ("Acme", 0.5, {"src": "cv"}), ("Initech", 0.5, {"src": "cv"})]
        kuzu = memory.write(PROFILES["kuzu"].tools["create_relationship"], {
            "database": "memory", "from_entity": "Alice", "to_entity": "Hooli", "relationship_type": "works_at",
            "confidence": 0.9}, actor="t").output
        assert kuzu.reply["status"] == "created"  # type: ignore[attr-defined]
        now = memory.read("read_graph", {"workspace": "memory"}).relations
        assert sorted((r.target, r.confidence, r.valid_from, r.valid_until) for r in now) == [
            ("Acme", 0.5, UNSET, UNSET), ("Hooli", 0.9, UNSET, UNSET),
            ("Initech", 0.5, UNSET, UNSET)]  # true until 2022, and from 2021 on: their union, every time
        head = memory.log.head()
        again = write(memory, "create_relations", workspace="memory", relations=[  # true now: nothing to say
            {"from": "Alice", "to": "Acme", "relationType": "works_at"},
            {"from": "Alice", "to": "Initech", "relationType": "works_at", "validFrom": "2021-06-01"}])
        assert again.relations == [] and memory.log.head() == head
        assert memory.read("read_graph", {"workspace": "memory", "validAt": "2021-06-01"}).relations != []
        assert verify(memory.views) == []


def test_a_workspace_upsert_of_an_invalidated_relation_makes_it_true_again(memory: Memory) -> None:
    tools = PROFILES["workspace"].tools
    upsert = {"workspaceName": "demo", "from": "Alice", "to": "Acme", "relationType": "works_at"}
    for name in ("Alice", "Acme"):
        memory.write(tools["upsert_entity"], {"workspaceName": "demo", "name": name, "entityType": "t"}, actor="t")
    memory.write(tools["upsert_relation"], {**upsert, "metadata": {"src": "cv"}}, actor="t")
    write(memory, "invalidate_relations", workspace="demo", relations=[
        {"from": "Alice", "to": "Acme", "relationType": "works_at"}])
    assert memory.read(tools["get_entity_relations"], {"workspaceName": "demo", "entityName": "Alice"}).reply[
        "relations"] == []  # type: ignore[attr-defined]
    out = memory.write(tools["upsert_relation"], upsert, actor="t").output.reply  # type: ignore[attr-defined]
    assert out["created"] is True
    [back] = memory.read(tools["get_entity_relations"], {"workspaceName": "demo", "entityName": "Alice"}).reply[
        "relations"]  # type: ignore[attr-defined]
    assert back["to"] == "Acme" and json.loads(back["metadata"]) == {"src": "cv"}
    assert memory.write(tools["upsert_relation"], upsert, actor="t").output.reply["created"] is False  # type: ignore


def test_every_read_of_the_present_leaves_out_the_facts_whose_valid_time_ended(memory: Memory) -> None:
    write(memory, "create_entities", workspace="memory", entities=[
        {"name": n, "entityType": "t", "observations": ["likes tea"] if n == "Alice" else []}
        for n in ("Alice", "Acme", "Initech")])
    write(memory, "add_observations", workspace="memory", observations=[
        {"entityName": "Alice", "contents": ["works at Acme"], "validFrom": "2019-01-01", "validUntil": "2023-06-01"}])
    write(memory, "create_relations", workspace="memory", relations=[
        {"from": "Alice", "to": "Acme", "relationType": "works_at", "validFrom": "2019-01-01",
         "validUntil": "2023-06-01"},
        {"from": "Alice", "to": "Initech", "relationType": "works_at", "validFrom": "2023-06-01"}])
    kuzu, workspace = PROFILES["kuzu"].tools, PROFILES["workspace"].tools

    related = memory.read("get_related_entities", {"name": "Initech", "workspace": "memory"}).related
    assert [(r.entity.name, r.entity.observations) for r in related] == [("Alice", ["likes tea"])]
    around = memory.read("get_related_entities", {"name": "Alice", "workspace": "memory"}).related
    assert [r.entity.name for r in around] == ["Initech"]
    related = memory.read(kuzu["get_related_entities"], {"database": "memory", "entity_name": "Initech"}).reply
    assert [(e["name"], e["observations"]) for e in related["entities"]] == [("Alice", ["likes tea"])]
    found = memory.read(kuzu["search_entities"], {"database": "memory", "query": "Alice"}).reply
    assert [(e["name"], e["observations"]) for e in found["entities"]] == [("Alice", ["likes tea"])]
    graph = memory.read(workspace["read_graph"], {"workspaceName": "memory"}).reply
    assert next(e for e in graph["entities"] if e["name"] == "Alice")["observations"] == ["likes tea"]
    assert [r["to"] for r in graph["relations"]] == ["Initech"]
    out = memory.read(workspace["get_entity_relations"], {"workspaceName": "memory", "entityName": "Alice"}).reply
    assert [r["to"] for r in out["relations"]] == ["Initech"]
    [alice] = [e for e in recall(memory, "memory", query="Alice").entities if e.name == "Alice"]
    assert alice.observations == ("likes tea",)


def test_a_search_by_meaning_shows_only_the_observations_true_now(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as store:
        store.semantic = Semantic(store.views, Words(), store.lock)
        write(store, "create_entities", entities=[{"name": "Alice", "entityType": "t", "observations": ["keeps bees"]}])
        write(store, "add_observations", observations=[
            {"entityName": "Alice", "contents": ["keeps bees in Paris"], "validUntil": "2023-06-01"}])
        store.semantic.catch_up()
        [alice] = store.read("semantic_search", {"query": "keeps bees"}).entities
        assert alice.observations == ["keeps bees"]


def test_an_entity_is_not_found_by_meaning_through_a_fact_that_ended(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as store:
        store.semantic = Semantic(store.views, Words(), store.lock)
        write(store, "create_entities", entities=[
            {"name": "Alice", "entityType": "t", "observations": ["plays chess", "keeps bees in Paris"]},
            {"name": "Bob", "entityType": "t", "observations": ["keeps goats", "ended bees"]},
            {"name": "Carol", "entityType": "t", "observations": ["keeps bees in Lyon"]}])
        write(store, "invalidate_observations", observations=[
            {"entityName": "Alice", "observations": ["keeps bees in Paris"], "at": "2023-06-01"},
            {"entityName": "Bob", "observations": ["keeps goats", "ended bees"], "at": "2023-06-01"}])
        store.semantic.catch_up()
        names = [e.name for e in store.read("semantic_search", {"query": "keeps bees in Paris",
                                                                "threshold": 0.5}).entities]
        assert names == ["Carol"]  # Alice kept bees in Paris, not now; Bob holds nothing true now
        found = store.read("search_nodes", {"query": "keeps bees in Paris", "mode": "semantic"}).entities
        assert [e.name for e in found][:1] == ["Carol"] and "Bob" not in [e.name for e in found]
        then = store.read("search_nodes", {"query": "keeps bees in Paris", "mode": "semantic",
                                           "validAt": "2022-01-01"}).entities
        assert [e.name for e in then][:1] == ["Alice"]  # when it was true, it is found by it


def test_a_statement_about_a_later_time_never_ends_a_fact_true_now_nor_does_a_merge(memory: Memory) -> None:
    with freeze_time("2026-12-01T00:00:00Z"):
        write(memory, "create_entities", entities=[{"name": n, "entityType": "p", "observations": []}
                                                   for n in ("Alice", "T", "S", "X")])
        now = {"validFrom": "2020-01-01", "validUntil": "2027-06-01"}
        write(memory, "add_observations", observations=[
            {"entityName": "Alice", "contents": ["works at Acme"], **now},
            {"entityName": "T", "contents": ["lives in Paris"], **now},
            {"entityName": "S", "contents": ["lives in Paris"], "validFrom": "2028-01-01"}])
        write(memory, "create_relations", relations=[{"from": "T", "to": "X", "relationType": "works_at", **now},
                                                     {"from": "S", "to": "X", "relationType": "works_at",
                                                      "validFrom": "2028-01-01"}])
        later = write(memory, "add_observations", observations=[
            {"entityName": "Alice", "contents": ["works at Acme"], "validFrom": "2028-01-01",
             "validUntil": "2029-01-01"}])
        assert later.results[0].added_observations == []
        write(memory, "merge_entities", sources=["S"], target="T")
        graph = memory.read("read_graph", {})
        held = {e.name: e.observations for e in graph.entities}
        assert held["Alice"] == ["works at Acme"] and held["T"] == ["lives in Paris"]
        assert [(r.source, r.relation_type, r.target) for r in graph.relations] == [("T", "works_at", "X")]
        assert verify(memory.views) == []


def test_an_answer_s_validity_and_provenance_name_only_the_observations_it_answers(
        memory: Memory, tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    project = {"projectPath": str(root), "confirmNewProjectRoot": str(root)}
    n2n = PROFILES["n2n"].tools
    memory.write(n2n["n2n_add_entities"], {**project, "entities": [
        {"name": "Ada", "entityType": "person", "observations": []},
        {"name": "Bob", "entityType": "person", "observations": []}]}, actor="t")
    ws = workspace_name(root)
    write(memory, "add_observations", workspace=ws, observations=[{"entityName": "Ada", "contents": [
        f"fact number {i} about Ada" for i in range(5)], "validFrom": "2020-01-01T00:00:00Z"}])
    write(memory, "add_observations", workspace=ws, observations=[
        {"entityName": "Ada", "contents": ["lives in Paris", "secret: dates Bob"]}])
    write(memory, "invalidate_observations", workspace=ws, observations=[
        {"entityName": "Ada", "observations": ["secret: dates Bob"]}])
    write(memory, "create_relations", workspace=ws, relations=[{"from": "Bob", "to": "Ada", "relationType": "knows"}])
    ended, cut = "secret: dates Bob", "fact number 0 about Ada"

    def ada(entities: list[Any]) -> dict[str, Any]:
        found: dict[str, Any] = next(e for e in msgspec.to_builtins(entities) if e["name"] == "Ada")
        return found

    answers = {
        "read_graph": ada(memory.read("read_graph", {"workspace": ws}).entities),
        "open_nodes": ada(memory.read("open_nodes", {"workspace": ws, "names": ["Ada"], "includeProvenance": True})
                          .entities),
        "search_nodes": ada(memory.read("search_nodes", {"workspace": ws, "query": "paris", "mode": "ranked",
                                                         "observationsLimit": 1, "includeProvenance": True}).entities),
        "get_related_entities": ada([r.entity for r in memory.read(
            "get_related_entities", {"workspace": ws, "name": "Bob"}).related]),
        "n2n_open_nodes": ada(memory.read(n2n["n2n_open_nodes"], {**project, "names": ["Ada"]}).reply["entities"]),
        "n2n_search": ada(memory.read(n2n["n2n_search"], {**project, "query": "paris", "observationsLimit": 1})
                          .reply["entities"]),
    }
    for tool, entity in answers.items():
        answered = set(entity["observations"])
        assert ended not in answered, tool
        assert set(entity.get("validity", {})) <= answered, tool
        assert {p["observation"] for p in entity.get("provenance", [])} <= answered, tool
    assert cut in answers["read_graph"]["validity"] and cut not in answers["search_nodes"].get("validity", {})
    assert answers["open_nodes"]["provenance"] and answers["search_nodes"]["observations"] == ["lives in Paris"]
