"""The base of a three-way fold of `.mcp/memory.json`: what of a file was edited since the store
wrote it, told by keyed digests of the lines it wrote."""

from __future__ import annotations

import copy
from typing import Any

from chronograph.application.surfaces.projectbase import edited, kept, lines

SECRET = bytes(range(32))
WRITTEN: dict[str, Any] = {
    "entities": [{"name": "Ada", "entityType": "PERSON", "observations": ["counts", "writes"]},
                 {"name": "Bob", "entityType": "PERSON", "observations": []}],
    "relations": [{"from": "Ada", "to": "Bob", "relationType": "knows"}]}


def test_a_file_as_the_store_wrote_it_has_nothing_edited() -> None:
    assert edited(copy.deepcopy(WRITTEN), lines(WRITTEN, SECRET), SECRET) == {"entities": [], "relations": []}


def test_an_entity_as_written_is_kept_for_the_observations_added_since_only() -> None:
    file = copy.deepcopy(WRITTEN)
    file["entities"][0]["observations"].append("sings")
    file["entities"].append({"name": "Cy", "entityType": "PERSON", "observations": ["new"]})
    file["relations"].append({"from": "Cy", "to": "Ada", "relationType": "knows"})
    assert edited(file, lines(WRITTEN, SECRET), SECRET) == {
        "entities": [{"name": "Ada", "entityType": "PERSON", "observations": ["sings"]},
                     {"name": "Cy", "entityType": "PERSON", "observations": ["new"]}],
        "relations": [{"from": "Cy", "to": "Ada", "relationType": "knows"}]}


def test_an_entity_whose_type_changed_is_kept_with_its_observations_not_as_written() -> None:
    file = copy.deepcopy(WRITTEN)
    file["entities"][1]["entityType"] = "ROBOT"
    assert edited(file, lines(WRITTEN, SECRET), SECRET)["entities"] == [
        {"name": "Bob", "entityType": "ROBOT", "observations": []}]


def test_what_is_not_in_n2n_s_shape_is_left_for_the_fold_to_refuse() -> None:
    base = lines(WRITTEN, SECRET)
    assert edited([1, 2], base, SECRET) == [1, 2]
    assert edited({"entities": [7, {"name": 3}], "relations": "x"}, base, SECRET) == {
        "entities": [7, {"name": 3}], "relations": "x"}


def test_lines_keyed_with_another_secret_tell_nothing() -> None:
    assert not lines(WRITTEN, SECRET).held() & lines(WRITTEN, bytes(32)).held()
    assert edited(copy.deepcopy(WRITTEN), lines(WRITTEN, bytes(32)), SECRET) == WRITTEN


def test_kept_takes_out_an_entity_s_lines_and_the_relations_it_is_an_end_of() -> None:
    base = kept(lines(WRITTEN, SECRET), ["Bob"], SECRET)
    only_bob = lines({"entities": [WRITTEN["entities"][1]], "relations": []}, SECRET)
    assert base == only_bob


def test_a_memo_makes_the_same_lines_and_keeps_only_the_last_call_s() -> None:
    memo: dict[tuple[str, ...], list[bytes]] = {}
    assert lines(WRITTEN, SECRET, memo) == lines(WRITTEN, SECRET)
    smaller = {"entities": WRITTEN["entities"][1:], "relations": []}
    assert lines(smaller, SECRET, memo) == lines(smaller, SECRET)
    assert not any("Ada" in key for key in memo)
