"""Valid time beside transaction time: facts true from/until, invalidated without erasing, read
at validAt among what the memory knew at asOf."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import ChronographError, Memory
from freezegun import freeze_time


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
