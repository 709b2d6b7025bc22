"""What a deletion or a merge took from an entity's relations, given back when revert_entity
restores it: between the entities they joined (never a namesake), with a word for each that
cannot come back, and a merge's copies taken from the target."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.projections import verify


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as opened:
        yield opened


def write(memory: Memory, tool: str, **arguments: Any) -> Any:
    return memory.write(tool, arguments, actor="test").output


def entities(memory: Memory, **arguments: Any) -> dict[str, list[str]]:
    return {e.name: e.observations for e in memory.read("read_graph", arguments).entities}


def triples(memory: Memory, **arguments: Any) -> list[tuple[str, str, str]]:
    return sorted((r.source, r.relation_type, r.target) for r in memory.read("read_graph", arguments).relations)


def create(memory: Memory, names: str | list[str], *relations: tuple[str, str, str]) -> None:
    write(memory, "create_entities", entities=[{"name": n, "entityType": "t", "observations": [f"{n} fact"]}
                                               for n in names])
    if relations:
        write(memory, "create_relations", relations=[{"from": s, "relationType": t, "to": o} for s, t, o in relations])


def test_reverting_a_merged_source_alone_brings_back_its_relations_and_takes_the_copies_from_the_target(
        memory: Memory) -> None:
    create(memory, ["Ada", "A. Lovelace", "Babbage"], ("A. Lovelace", "knows", "Babbage"),
           ("Babbage", "admires", "A. Lovelace"), ("A. Lovelace", "same_as", "Ada"))
    before = triples(memory)
    write(memory, "merge_entities", target="Ada", sources=["A. Lovelace"])
    merged, at = triples(memory), memory.log.head()
    out = write(memory, "revert_entity", name="A. Lovelace", toVersion=1)
    assert (out.relations_restored, out.copies_removed) == (3, 2)
    assert triples(memory) == before  # the loop the merge dropped is back too
    assert entities(memory)["Ada"] == ["Ada fact", "A. Lovelace fact"]  # the target's own versions: its revert's
    assert triples(memory, asOf=at) == merged
    assert verify(memory.views) == []


def test_a_copy_changed_since_the_merge_stays_on_the_target_and_the_answer_says_so(memory: Memory) -> None:
    create(memory, ["Ada", "Al", "Bob"], ("Al", "knows", "Bob"), ("Bob", "likes", "Al"))
    write(memory, "merge_entities", target="Ada", sources=["Al"])
    write(memory, "update_relations", relations=[{"from": "Ada", "to": "Bob", "relationType": "knows",
                                                  "confidence": 0.9}])
    out = write(memory, "revert_entity", name="Al", toVersion=1)
    assert out.copies_removed == 1 and len(out.copies_kept) == 1 and "'Ada' -[knows]-> 'Bob'" in out.copies_kept[0]
    assert triples(memory) == [("Ada", "knows", "Bob"), ("Al", "knows", "Bob"), ("Bob", "likes", "Al")]


def test_the_copies_are_taken_from_the_target_under_the_name_it_bears_now(memory: Memory) -> None:
    create(memory, ["Ada", "Al", "Bob"], ("Al", "knows", "Bob"))
    write(memory, "merge_entities", target="Ada", sources=["Al"])
    write(memory, "rename_entity", name="Ada", newName="Ada L")
    assert write(memory, "revert_entity", name="Al", toVersion=1).copies_removed == 1
    assert triples(memory) == [("Al", "knows", "Bob")]


@pytest.mark.parametrize("order", [["A", "B"], ["B", "A"]])
def test_merges_in_a_chain_reverted_in_either_order_end_as_before_them(memory: Memory, order: list[str]) -> None:
    create(memory, "ABCX", ("A", "r1", "X"), ("X", "r2", "B"), ("C", "r3", "X"))
    before = triples(memory)
    write(memory, "merge_entities", target="B", sources=["A"])
    write(memory, "merge_entities", target="C", sources=["B"])
    for name in order:
        write(memory, "revert_entity", name=name, toVersion=1)
    assert triples(memory) == before
    assert verify(memory.views) == []


@pytest.mark.parametrize("order", [["A", "B2"], ["B2", "A"]])
def test_a_copy_a_rename_moved_on_before_the_next_merge_is_not_given_back_twice(memory: Memory,
                                                                               order: list[str]) -> None:
    create(memory, "ABCX", ("A", "r1", "X"))
    write(memory, "merge_entities", target="B", sources=["A"])
    write(memory, "rename_entity", name="B", newName="B2")
    write(memory, "merge_entities", target="C", sources=["B2"])
    for name in order:
        write(memory, "revert_entity", name=name, toVersion=1)
    assert triples(memory) == [("A", "r1", "X")]
    assert sorted(entities(memory)) == ["A", "B", "C", "X"]  # B2 reverted to version 1, its first name


@pytest.mark.parametrize("order", [["A", "B"], ["B", "A"]])
def test_sources_merged_in_one_call_reverted_in_either_order_end_as_before_it(memory: Memory,
                                                                               order: list[str]) -> None:
    create(memory, "ABCX", ("A", "ab", "B"), ("A", "ax", "X"), ("X", "xb", "B"), ("B", "bc", "C"))
    before = triples(memory)
    write(memory, "merge_entities", target="C", sources=["A", "B"])
    first = write(memory, "revert_entity", name=order[0], toVersion=1)
    assert [why.split(": ", 1)[1] for why in first.relations_not_restored] == [
        f"the entity then called {order[1]!r} was merged into 'C' since"]
    write(memory, "revert_entity", name=order[1], toVersion=1)
    assert triples(memory) == before


def test_a_restored_relation_joins_the_entity_it_joined_not_one_that_took_its_name(memory: Memory) -> None:
    create(memory, ["Alice", "Jaguar"], ("Alice", "drives", "Jaguar"))
    write(memory, "delete_entities", entityNames=["Alice"])
    write(memory, "rename_entity", name="Jaguar", newName="Jaguar XJ")
    write(memory, "create_entities", entities=[{"name": "Jaguar", "entityType": "animal", "observations": []}])
    assert write(memory, "revert_entity", name="Alice", toVersion=1).relations_restored == 1
    assert triples(memory) == [("Alice", "drives", "Jaguar XJ")]


@pytest.mark.parametrize("end", ["deleted", "merged"])
def test_a_relation_whose_other_end_is_gone_is_named_in_the_answer_with_why(memory: Memory, end: str) -> None:
    create(memory, ["Alice", "Jaguar", "Zed"], ("Alice", "drives", "Jaguar"))
    write(memory, "delete_entities", entityNames=["Alice"])
    if end == "deleted":
        write(memory, "delete_entities", entityNames=["Jaguar"])
    else:
        write(memory, "merge_entities", target="Zed", sources=["Jaguar"])
    write(memory, "create_entities", entities=[{"name": "Jaguar", "entityType": "animal", "observations": []}])
    out = write(memory, "revert_entity", name="Alice", toVersion=1)
    why = "is deleted" if end == "deleted" else "was merged into 'Zed' since"
    assert out.relations_not_restored == [f"'Alice' -[drives]-> 'Jaguar': the entity then called 'Jaguar' {why}"]
    assert "could not come back" in out.message and triples(memory) == []
