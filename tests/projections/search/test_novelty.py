"""Near-duplicates of a better hit rank lower (projections/search/novelty.py)."""

from __future__ import annotations

import numpy as np
import pytest
from chronograph.projections.search.novelty import NEAR, PENALTY, spread


def unit(*values: float) -> np.ndarray:
    row = np.array(values, dtype=np.float32)
    return row / np.linalg.norm(row)


def test_a_near_duplicate_of_a_better_hit_ranks_after_a_hit_that_says_something_new() -> None:
    rows = {"hectic 1": unit(1, 0, 0), "hectic 2": unit(1, 0.01, 0), "climbing": unit(0, 1, 0)}
    ranked = spread([("hectic 1", 0.8), ("hectic 2", 0.79), ("climbing", 0.7)], rows)
    assert [key for key, _ in ranked] == ["hectic 1", "climbing", "hectic 2"]
    similarity = float(rows["hectic 1"] @ rows["hectic 2"])
    assert dict(ranked)["hectic 2"] == pytest.approx(0.79 - PENALTY * (similarity - NEAR))
    assert dict(ranked)["hectic 1"] == 0.8 and dict(ranked)["climbing"] == 0.7


def test_hits_alike_but_below_the_bar_keep_their_scores_and_order() -> None:
    below = np.sqrt(1 - (NEAR - 0.05) ** 2)
    rows = {"a": unit(1, 0), "b": unit(NEAR - 0.05, below)}
    assert spread([("a", 0.9), ("b", 0.8)], rows) == [("a", 0.9), ("b", 0.8)]


def test_a_hit_without_a_vector_is_neither_lowered_nor_compared_with() -> None:
    rows = {"a": unit(1, 0), "c": unit(1, 0)}
    ranked = spread([("a", 0.9), ("b", 0.85), ("c", 0.8)], rows)
    assert ranked[:2] == [("a", 0.9), ("b", 0.85)] and ranked[2][0] == "c" and ranked[2][1] < 0.8
    assert spread([("a", 0.9), ("b", 0.85)], {"a": unit(1, 0)}) == [("a", 0.9), ("b", 0.85)]


def test_a_duplicate_is_compared_with_every_better_hit_not_only_the_one_before_it() -> None:
    rows = {"a": unit(1, 0, 0), "b": unit(0, 1, 0), "a again": unit(1, 0, 0)}
    ranked = dict(spread([("a", 0.9), ("b", 0.85), ("a again", 0.84)], rows))
    assert ranked["a again"] == pytest.approx(0.84 - PENALTY * (1 - NEAR))


def test_ties_keep_the_order_they_had() -> None:
    rows = {"a": unit(1, 0), "b": unit(0, 1), "c": unit(-1, 0)}
    assert [key for key, _ in spread([("a", 0.5), ("b", 0.5), ("c", 0.5)], rows)] == ["a", "b", "c"]


def test_a_vector_that_is_not_a_number_stops_no_other_hit_from_being_lowered() -> None:
    rows = {"a": unit(1, 0), "broken": np.array([np.nan, np.nan], dtype=np.float32), "a again": unit(1, 0)}
    ranked = dict(spread([("a", 0.9), ("broken", 0.8), ("a again", 0.7)], rows))
    assert ranked["broken"] == 0.8 and ranked["a again"] == pytest.approx(0.7 - PENALTY * (1 - NEAR))


def test_a_near_duplicate_scores_no_less_than_nothing() -> None:
    rows = {"a": unit(1, 0), "a again": unit(1, 0)}
    assert spread([("a", 0.9), ("a again", 0.21)], rows) == [("a", 0.9), ("a again", 0.0)]


def test_only_the_hits_that_may_be_lowered_are_but_every_hit_is_compared_with() -> None:
    rows = {"session": unit(1, 0), "turn": unit(1, 0), "turn again": unit(1, 0)}
    ranked = dict(spread([("turn", 0.9), ("session", 0.85), ("turn again", 0.8)], rows, {"turn", "turn again"}))
    assert ranked["session"] == 0.85 and ranked["turn again"] == pytest.approx(0.8 - PENALTY * (1 - NEAR))
