"""What a deletion or a merge took from an entity's relations, given back when revert_entity
restores it: between the entities they joined (never a namesake), with a word for each that
cannot come back, and a merge's copies taken from the target."""

from __future__ import annotations

import json
from itertools import permutations
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.projections import verify
from msgspec import UNSET


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
        f"the entity then called {order[1]!r} was merged into 'C' since (reverting that entity gives this "
        "relation back)"]
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
    assert out.relations_not_restored == [f"'Alice' -[drives]-> 'Jaguar': the entity then called 'Jaguar' {why} "
                                          "(reverting that entity gives this relation back)"]
    assert "could not come back" in out.message and triples(memory) == []


def graph(memory: Memory, **arguments: Any) -> list[str]:
    """The export without the times and versions a revert moves on: what the graph says."""
    exported = json.loads(memory.read("export_graph", {"format": "json", **arguments}).content)
    items = exported["entities"] + exported["relations"]
    return sorted(json.dumps({k: v for k, v in item.items() if k not in ("createdAt", "updatedAt", "version")},
                             sort_keys=True) for item in items)


def works_at(memory: Memory) -> dict[str, Any]:
    """T's works_at X, expired or not, as the export gives it."""
    [relation] = [json.loads(item) for item in graph(memory) if '"relationType": "works_at"' in item and
                  '"from": "T"' in item]
    return relation  # type: ignore[no-any-return]


HELD = {  # the target's works_at X, then the source's: the merge joins them (identity._joined)
    "expired": ({"confidence": 0.3, "validFrom": "2018-01-01", "validUntil": "2019-01-01"},
                {"confidence": 0.95, "metadata": {"source": "HR"}, "validFrom": "2023-01-01"}),
    "covering": ({"confidence": 0.5, "metadata": {"a": 1}, "validFrom": "2010-01-01"},
                 {"confidence": 0.9, "metadata": {"source": "HR"}, "validFrom": "2015-01-01",
                  "validUntil": "2016-01-01"}),
    "overlapping": ({"confidence": 0.5, "metadata": {"a": 1}, "validFrom": "2018-01-01", "validUntil": "2021-01-01"},
                    {"confidence": 0.9, "metadata": {"source": "HR"}, "validFrom": "2020-01-01"}),
}


def held(memory: Memory, case: str, *others: str, loop: bool = True) -> None:
    """T and S both work at X (as `HELD[case]` says), S has relations of its own (`loop`: one to T
    too), and S has an email."""
    create(memory, ["T", "S", "X", "Y", *others])
    write(memory, "update_entities", entities=[{"name": "S", "metadata": {"email": "s@x"}}])
    mine, theirs = HELD[case]
    write(memory, "create_relations", relations=[
        {"from": "T", "to": "X", "relationType": "works_at", **mine},
        {"from": "S", "to": "X", "relationType": "works_at", **theirs},
        {"from": "S", "to": "Y", "relationType": "knows"}, {"from": "Y", "to": "S", "relationType": "admires"},
        *([{"from": "S", "to": "T", "relationType": "same_as"}] if loop else [])])


@pytest.mark.parametrize("case", list(HELD))
@pytest.mark.parametrize("order", [["S", "T"], ["T", "S"]])
def test_a_relation_the_target_held_is_as_before_the_merge_once_both_are_reverted_in_either_order(
        memory: Memory, case: str, order: list[str]) -> None:
    held(memory, case)
    before, at = graph(memory), memory.log.head()
    write(memory, "merge_entities", target="T", sources=["S"])
    assert graph(memory) != before
    for name in order:
        write(memory, "revert_entity", name=name, toVersion=1 if name == "T" else 2)
    assert graph(memory) == before == graph(memory, asOf=at)
    assert verify(memory.views) == []


@pytest.mark.parametrize("case", list(HELD))
def test_reverting_the_source_alone_puts_the_targets_own_relation_back_as_it_was_before_the_merge(
        memory: Memory, case: str) -> None:
    held(memory, case)
    mine = works_at(memory)
    write(memory, "merge_entities", target="T", sources=["S"])
    assert works_at(memory) != mine
    out = write(memory, "revert_entity", name="S", toVersion=2)
    assert works_at(memory) == mine and "put back as before the merge 1 relation the target held" in out.message
    assert (out.relations_restored, out.copies_removed) == (4, 2)
    [target] = memory.read("open_nodes", {"names": ["T"]}).entities
    # the observations and the metadata keys the merge gave the target are versions of its own stream
    assert (target.observations, target.metadata) == (["T fact", "S fact"], {"email": "s@x"})
    assert verify(memory.views) == []


@pytest.mark.parametrize("case", list(HELD))
def test_reverting_the_target_alone_keeps_the_relations_it_holds_and_drops_what_its_stream_took(
        memory: Memory, case: str) -> None:
    held(memory, case)
    write(memory, "merge_entities", target="T", sources=["S"])
    joined = works_at(memory)
    write(memory, "revert_entity", name="T", toVersion=1)
    assert works_at(memory) == joined  # the source's part comes back to it with the source's revert
    [target] = memory.read("open_nodes", {"names": ["T"]}).entities
    assert (target.observations, target.metadata) == (["T fact"], UNSET)


def test_a_relation_the_merge_joined_and_changed_since_stays_and_the_answer_says_so(memory: Memory) -> None:
    held(memory, "expired")
    write(memory, "merge_entities", target="T", sources=["S"])
    write(memory, "update_relations", relations=[{"from": "T", "to": "X", "relationType": "works_at",
                                                  "confidence": 0.7}])
    out = write(memory, "revert_entity", name="S", toVersion=2)
    assert [kept.split(":")[0] for kept in out.copies_kept] == ["'T' -[works_at]-> 'X'"]
    assert works_at(memory)["confidence"] == 0.7
    assert ("T", "works_at", "X") in triples(memory) and ("S", "works_at", "X") in triples(memory)


@pytest.mark.parametrize("case", list(HELD))
@pytest.mark.parametrize("order", list(permutations("STU")))
def test_a_chain_through_a_target_that_held_the_relation_reverted_in_any_order_ends_as_before_it(
        memory: Memory, case: str, order: tuple[str, ...]) -> None:
    # with the loop S same_as T: S reverted while T is merged into U cannot give it back (T is gone);
    # T's revert does
    held(memory, case, "U")
    before, at = graph(memory), memory.log.head()
    write(memory, "merge_entities", target="T", sources=["S"])
    write(memory, "merge_entities", target="U", sources=["T"])
    for name in order:
        write(memory, "revert_entity", name=name, toVersion=2 if name == "S" else 1)
    assert graph(memory) == before == graph(memory, asOf=at)
    assert verify(memory.views) == []


@pytest.mark.parametrize("order", [["S", "R"], ["R", "S"]])
def test_two_sources_of_one_call_joined_to_the_targets_relation_reverted_in_either_order_end_as_before(
        memory: Memory, order: list[str]) -> None:
    held(memory, "overlapping", "R")
    write(memory, "create_relations", relations=[{"from": "R", "to": "X", "relationType": "works_at",
                                                  "validFrom": "2000-01-01", "metadata": {"r": True}}])
    before = graph(memory)
    write(memory, "merge_entities", target="T", sources=["S", "R"])
    for name in [*order, "T"]:
        write(memory, "revert_entity", name=name, toVersion=2 if name == "S" else 1)
    assert graph(memory) == before
    assert verify(memory.views) == []


@pytest.mark.parametrize("order", [["S", "R"], ["R", "S"]])
def test_a_copy_one_source_made_and_the_next_joined_in_one_call_goes_once_both_are_reverted(
        memory: Memory, order: list[str]) -> None:
    create(memory, ["T", "S", "R", "X"])
    write(memory, "create_relations", relations=[
        {"from": "S", "to": "X", "relationType": "works_at", "validFrom": "2018-01-01", "validUntil": "2021-01-01"},
        {"from": "R", "to": "X", "relationType": "works_at", "validFrom": "2020-01-01", "metadata": {"r": True}}])
    before = graph(memory)
    write(memory, "merge_entities", target="T", sources=["S", "R"])
    for name in [*order, "T"]:
        write(memory, "revert_entity", name=name, toVersion=1)
    assert graph(memory) == before
    assert verify(memory.views) == []


@pytest.mark.parametrize("order", [["A", "X"], ["X", "A"]])
def test_a_merge_then_a_deletion_of_the_other_end_reverted_in_either_order_give_the_relation_back(
        memory: Memory, order: list[str]) -> None:
    create(memory, ["A", "T", "X"], ("A", "knows", "X"))
    before = triples(memory)
    write(memory, "merge_entities", target="T", sources=["A"])
    write(memory, "delete_entities", entityNames=["X"])  # takes the copy T -> X with it
    answers = [write(memory, "revert_entity", name=name, toVersion=1) for name in order]
    assert triples(memory) == before
    assert answers[-1].relations_not_restored is UNSET  # the last revert gives it back, in either order
    assert verify(memory.views) == []


@pytest.mark.parametrize("order", list(permutations("ABC")))
def test_a_relation_between_two_members_of_a_merge_chain_comes_back_in_every_order_of_reverts(
        memory: Memory, order: tuple[str, ...]) -> None:
    create(memory, "ABCX", ("A", "knows", "B"), ("A", "r", "X"), ("B", "s", "C"))
    before, at = graph(memory), memory.log.head()
    write(memory, "merge_entities", target="B", sources=["A"])  # drops A knows B as a loop
    write(memory, "merge_entities", target="C", sources=["B"])  # drops B s C
    answers = [write(memory, "revert_entity", name=name, toVersion=1) for name in order]
    assert graph(memory) == before == graph(memory, asOf=at)
    if order.index("A") < order.index("B"):  # B was gone at A's revert: the answer says who gives it back
        assert answers[order.index("A")].relations_not_restored == [
            "'A' -[knows]-> 'B': the entity then called 'B' was merged into 'C' since (reverting that entity "
            "gives this relation back)"]
        assert "1 relation of entities restored while it was gone" in answers[order.index("B")].message
    assert verify(memory.views) == []


@pytest.mark.parametrize("order", [["A", "X"], ["X", "A"]])
def test_the_deletions_of_both_ends_of_a_relation_reverted_in_either_order_give_it_back(
        memory: Memory, order: list[str]) -> None:
    create(memory, ["A", "X"], ("A", "knows", "X"), ("X", "likes", "A"))
    before = graph(memory)
    write(memory, "delete_entities", entityNames=["X"])  # takes both relations
    write(memory, "delete_entities", entityNames=["A"])  # takes none: they are gone
    for name in order:
        write(memory, "revert_entity", name=name, toVersion=1)
    assert graph(memory) == before
    assert verify(memory.views) == []


@pytest.mark.parametrize("case", list(HELD))
@pytest.mark.parametrize("order", list(permutations("STX")))
def test_a_joined_relation_then_a_deletion_of_its_other_end_reverted_in_any_order_end_as_before(
        memory: Memory, case: str, order: tuple[str, ...]) -> None:
    held(memory, case, loop=False)
    before, at = graph(memory), memory.log.head()
    write(memory, "merge_entities", target="T", sources=["S"])  # joins S works_at X to T's
    write(memory, "delete_entities", entityNames=["X"])  # takes T's, as the merge left it
    for name in order:
        write(memory, "revert_entity", name=name, toVersion=2 if name == "S" else 1)
    assert graph(memory) == before == graph(memory, asOf=at)
    assert verify(memory.views) == []


def test_a_relation_given_back_to_the_end_restored_last_and_deleted_since_stays_deleted(memory: Memory) -> None:
    create(memory, ["A", "X"], ("A", "knows", "X"))
    write(memory, "delete_entities", entityNames=["X"])
    write(memory, "delete_entities", entityNames=["A"])
    write(memory, "revert_entity", name="X", toVersion=1)
    write(memory, "revert_entity", name="A", toVersion=1)
    write(memory, "delete_relations", relations=[{"from": "A", "relationType": "knows", "to": "X"}])
    write(memory, "delete_entities", entityNames=["A"])
    out = write(memory, "revert_entity", name="A", toVersion=1)
    assert (out.relations_restored, triples(memory)) == (0, [])
