"""Hubs rank lower: a hit near many of the other hits is near the question for what they share.

A question names what it is about ("What book was Jonas reading?") and asks something of it. The
texts about the same thing (every turn Jonas said, every note on one project) share that part, and
the ones that say little else ("Jonas on 8 October 2023: Ha, I know what you mean.") lie close to
each other and close to the question by it alone, while the text that answers says something
specific, which pulls its vector away from the rest. So each of the nearest (those the second stage
scores, with the vector of the observation that made each a hit) is scored down by how near it lies
to its `NEIGHBOURS` nearest fellow hits, `WEIGHT` times its mean similarity to them less the average
of that over the hits: what the hits share counts once for all of them, and what a hit says beyond
it decides. The average is taken back so that a score stays on its scale (the hits past the
second stage and the word scores of a hybrid search are weighed against it), at least 0 and at
most 1. This is hubness reduction as CSLS does it (Conneau et al. 2018, "Word translation without
parallel data"), with the hits themselves as the neighbourhood, computed at query time.

Measured on bench/bench_recall.py (10 generated conversations, ~420 questions a seed; hybrid
recall@5 / @10 of turn entities; the rule applied before `novelty.spread`):

| | seed 28 | seed 29 |
| --- | --- | --- |
| without | 0.733 / 0.806 | 0.660 / 0.756 |
| weight 0.4, 3 neighbours | 0.806 / 0.853 | 0.738 / 0.774 |
| 0.6, 3 | 0.808 / 0.856 | 0.736 / 0.772 |
| 0.8, 3 | 0.811 / 0.858 | 0.735 / 0.773 |
| 0.6, 1 / 0.6, 5 | 0.819 / 0.859, 0.810 / 0.855 | 0.739 / 0.774, 0.736 / 0.773 |
| 0.4, 3, only lowering (hits above the average) | 0.744 / 0.820 | 0.675 / 0.760 |

(sessions: see `WEIGHT`). Only lowering gains little: the rule is as much about the specific hit
rising above the generic ones as about the hub falling.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar

from chronograph.projections.search.vectors import load_numpy

__all__ = ["NEIGHBOURS", "WEIGHT", "unhubbed"]

WEIGHT = 0.4
"""How much of a hit's mean similarity to its nearest fellow hits (less the hits' average) it
loses. Session entities (bench_recall, recall@5 / @10, seeds 28 and 29): 0.80 / 0.91 and 0.76 /
0.91 without, 0.84 / 0.95 and 0.81 / 0.92 at 0.4; at 0.6 and more the sessions' @10 falls
(0.93 / 0.90 at 0.6, 0.91 / 0.86 at 1.0), so 0.4, not the best of the turns."""
NEIGHBOURS = 3
"""The fellow hits a hit's nearness to the others is the mean of (its nearest ones)."""

Key = TypeVar("Key", bound=Hashable)


def unhubbed(hits: Sequence[tuple[Key, float | None]], rows: Mapping[Key, Any]) -> list[tuple[Key, float | None]]:
    """`hits` (best first, each with its score), those with a vector in `rows` (the unit vector of
    the observation each matched by) scored down by `WEIGHT` times their mean similarity to their
    `NEIGHBOURS` nearest fellow hits of `rows`, less the average of it (kept within 0..1), best
    first again (a tie keeps the order it had). A hit without a row (or with one that is not a
    number) keeps its score and is no one's neighbour."""
    np = load_numpy()
    held = [i for i, (key, _) in enumerate(hits)  # a broken endpoint's NaN row tells nothing: as none
            if key in rows and bool(np.isfinite(np.asarray(rows[key], dtype=np.float32)).all())]
    if len(held) < 3:  # two hits are as near each other: nothing to tell them apart by
        return list(hits)
    vectors = np.stack([np.asarray(rows[hits[i][0]], dtype=np.float32) for i in held])
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)  # kept as float16
    nearness = vectors @ vectors.T
    np.fill_diagonal(nearness, -np.inf)
    count = min(NEIGHBOURS, len(held) - 1)
    crowded = np.sort(nearness, axis=1)[:, -count:].mean(axis=1)
    crowded -= crowded.mean()
    scored = list(hits)
    for k, i in enumerate(held):
        key, score = scored[i]
        scored[i] = (key, min(max((score or 0.0) - WEIGHT * float(crowded[k]), 0.0), 1.0))
    order = sorted(range(len(scored)), key=lambda i: (-(scored[i][1] or 0.0), i))
    return [scored[i] for i in order]
