"""Hubs rank lower: a hit near many of the other hits loses to one that says something of its own
(projections/search/hubs.py)."""

from __future__ import annotations

import numpy as np
import pytest
from chronograph.projections.search.hubs import NEIGHBOURS, WEIGHT, crowding, unhubbed
from chronograph.projections.search.novelty import NEAR


def unit(*values: float) -> np.ndarray:
    row = np.array(values, dtype=np.float32)
    return row / np.linalg.norm(row)


def test_a_hit_that_says_something_of_its_own_ranks_before_small_talk_alike_each_other() -> None:
    rows = {"hectic": unit(1, 0.5, 0), "totally": unit(1, 0, 0.5), "weather": unit(1, -0.5, 0),
            "a novel": unit(0.3, 1, -1)}  # small talk alike (cosines 0.6-0.8), none a near-duplicate
    hits = [("hectic", 0.6), ("totally", 0.59), ("weather", 0.58), ("a novel", 0.55)]
    ranked = unhubbed(hits, rows)
    assert ranked[0][0] == "a novel"
    nearness = {a: sorted((float(rows[a] @ rows[b]) for b in rows if b != a), reverse=True)[:NEIGHBOURS]
                for a in rows}
    crowded = {key: float(np.mean(values)) for key, values in nearness.items()}
    average = float(np.mean(list(crowded.values())))
    for key, score in hits:
        assert dict(ranked)[key] == pytest.approx(score - WEIGHT * (crowded[key] - average), abs=1e-5)


def test_what_the_hits_share_counts_once_so_evenly_spread_hits_keep_their_scores() -> None:
    rows = {"a": unit(1, 0, 0), "b": unit(0, 1, 0), "c": unit(0, 0, 1)}
    ranked = unhubbed([("a", 0.9), ("b", 0.8), ("c", 0.7)], rows)
    assert [key for key, _ in ranked] == ["a", "b", "c"]
    assert [score for _, score in ranked] == pytest.approx([0.9, 0.8, 0.7])


def test_scores_stay_between_0_and_1() -> None:
    rows = {"alike 1": unit(1, 0.5, 0), "alike 2": unit(1, 0, 0.5), "alike 3": unit(1, -0.5, 0),
            "apart": unit(-1, 0.2, 0.2)}
    ranked = dict(unhubbed([("apart", 0.99), ("alike 1", 0.1), ("alike 2", 0.05), ("alike 3", 0.01)], rows))
    assert ranked["apart"] == 1.0 and ranked["alike 3"] == 0.0
    assert all(0.0 <= score <= 1.0 for score in ranked.values() if score is not None)


def test_a_hit_without_a_vector_or_with_one_that_is_not_a_number_keeps_its_score_and_is_no_neighbour() -> None:
    rows = {"a": unit(1, 0), "b": unit(0.9, 0.1), "c": unit(0, 1),
            "broken": np.array([np.nan, np.nan], dtype=np.float32)}
    ranked = dict(unhubbed([("a", 0.9), ("none", 0.85), ("broken", 0.8), ("b", 0.75), ("c", 0.7)], rows))
    assert ranked["none"] == 0.85 and ranked["broken"] == 0.8
    assert ranked == dict(unhubbed([("a", 0.9), ("none", 0.85), ("broken", 0.8), ("b", 0.75), ("c", 0.7)],
                                   {key: rows[key] for key in ("a", "b", "c")}))


def test_two_hits_have_nothing_to_tell_them_apart_by() -> None:
    rows = {"a": unit(1, 0), "b": unit(0, 1)}
    assert unhubbed([("a", 0.9), ("b", 0.8), ("c", 0.7)], rows) == [("a", 0.9), ("b", 0.8), ("c", 0.7)]


def test_ties_keep_the_order_they_had() -> None:
    rows = {"a": unit(1, 0, 0), "b": unit(0, 1, 0), "c": unit(0, 0, 1)}
    assert [key for key, _ in unhubbed([("a", 0.5), ("b", 0.5), ("c", 0.5)], rows)] == ["a", "b", "c"]


def test_what_an_observation_loses_among_its_entitys_others_is_nothing_for_fewer_than_three() -> None:
    assert crowding(np.stack([unit(1, 0), unit(0.9, 0.1)])).tolist() == [0.0, 0.0]
    rows = np.stack([unit(1, 0.5, 0), unit(1, 0, 0.5), unit(0, -1, 0), np.array([np.nan, 1, 0], dtype=np.float32)])
    taken = crowding(rows)
    assert taken[3] == 0.0 and taken[2] < 0 < taken[0]  # the odd one out gains, the alike lose


def test_a_fact_saved_several_times_alike_keeps_its_place_before_hits_that_merely_share_the_subject() -> None:
    rng = np.random.default_rng(3)
    subject, fact = np.eye(40, dtype=np.float32)[0], np.eye(40, dtype=np.float32)[1]
    rows = {f"fact {k}": unit(*(0.6 * subject + fact + 0.04 * rng.standard_normal(40))) for k in range(5)}
    rows |= {f"note {k}": unit(*(subject + 0.9 * np.eye(40, dtype=np.float32)[2 + k])) for k in range(8)}
    copies = [float(rows["fact 0"] @ rows[f"fact {k}"]) for k in range(1, 5)]
    notes = [float(rows["note 0"] @ rows[f"note {k}"]) for k in range(1, 8)]
    assert min(copies) >= NEAR > max(notes)  # the copies are near-duplicates; the notes alike, not that near
    hits = [(f"fact {k}", 0.46 - 0.02 * k) for k in range(5)] + [(f"note {k}", 0.43 - 0.01 * k) for k in range(8)]
    hits.sort(key=lambda hit: -hit[1])
    ranked = unhubbed(hits, rows)
    assert ranked[0][0].startswith("fact")  # its copies are `novelty.spread`'s to lower, not a crowd it stands in
    taken = dict(zip(rows, crowding(np.stack(list(rows.values())), copies=False).tolist(), strict=True))
    assert taken["fact 0"] <= max(taken[f"note {k}"] for k in range(8))


def test_small_talk_as_near_each_other_as_copies_still_crowds_when_other_hits_lie_close_around_it() -> None:
    axes = np.eye(40, dtype=np.float32)
    speaker = axes[0]  # who said it and when leads every turn: small talk is near-duplicates of small talk
    rows = {f"chat {k}": unit(*(speaker + 0.35 * axes[2 + k])) for k in range(6)}
    rows |= {f"note {k}": unit(*(speaker + 0.8 * axes[10 + k])) for k in range(4)}
    rows["answer"] = unit(*(speaker + 0.9 * axes[1]))
    chat = [float(rows["chat 0"] @ rows[f"chat {k}"]) for k in range(1, 6)]
    around = float(rows["chat 0"] @ rows["note 0"])
    assert min(chat) >= NEAR and 0.7 < around < 0.8  # copies, with more than copies close around them (the notes)
    hits = [(f"chat {k}", 0.5 - 0.01 * k) for k in range(6)] + [("answer", 0.47)]
    hits += [(f"note {k}", 0.4 - 0.01 * k) for k in range(4)]
    hits.sort(key=lambda hit: -hit[1])
    assert unhubbed(hits, rows)[0][0] == "answer"
