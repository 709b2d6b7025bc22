"""Near-duplicates of a better hit rank lower: an answer's places go to what it does not say yet.

A search by meaning scores each candidate alone, so ten turns that say "Pretty hectic, work has
been crazy lately" on ten dates are ten equally good answers to "What pastimes has Maya taken
up?", and fill the page an agent pays for while the turn that answers comes eleventh. Each hit
is compared with every better one by the observation that made it a hit (its best part's vector:
a session entity by its best turn, not by the mean of all its turns, which is near every other
session's), and a hit whose observation is more similar than `NEAR` to a better one's loses
`PENALTY` times the excess. Nothing is dropped: a near-duplicate ranks after what is new.

Measured (bench/bench_recall.py, 10 generated conversations, 418 questions; recall@5 / @10),
the discount applied to the 50 nearest after their second stage:

| | none | NEAR 0.9, x2 | 0.85, x1 | **0.85, x2** | 0.85, x3 | 0.8, x2 |
| --- | --- | --- | --- | --- | --- | --- |
| turns, semantic | 0.68 / 0.74 | 0.71 / 0.77 | 0.73 / 0.80 | **0.73 / 0.81** | 0.74 / 0.81 | 0.75 / 0.82 |
| turns, hybrid | 0.67 / 0.74 | 0.70 / 0.77 | 0.73 / 0.80 | **0.73 / 0.81** | 0.74 / 0.81 | 0.75 / 0.82 |
| sessions, hybrid | 0.80 / 0.91 | 0.79 / 0.89 | 0.79 / 0.90 | **0.79 / 0.89** | 0.79 / 0.89 | 0.79 / 0.89 |
| sessions, matched observations in the first 10 | 0.70 | 0.71 | 0.72 | **0.72** | 0.72 | 0.72 |

The discount on the entities' mean vectors instead of their best parts gave turns the same
0.73 / 0.81 but cost sessions more (0.78 / 0.88, matched 0.69). Below 0.85 the discount
starts to reach texts that are alike without saying the same thing (two different hobbies in
one sentence frame), which a question about several of them wants together: 0.85 is kept.
Feedback from the best hits (the query moved towards the mean of its three nearest) was
measured too and lowered every figure (turns, semantic: 0.62 / 0.67 with half their mean). bench_retrieval
(paraphrases, misspellings, exact queries among 2,000 distractors) is unchanged by the
discount.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar

from chronograph.projections.search.vectors import load_numpy

__all__ = ["NEAR", "PENALTY", "spread"]

NEAR = 0.85
"""How similar (cosine) the observations two hits matched by must be for the worse one to
count as saying what the better one says."""
PENALTY = 2.0
"""What a near-duplicate loses for each unit of similarity past `NEAR` (at most 0.3)."""

Key = TypeVar("Key", bound=Hashable)


def spread(hits: Sequence[tuple[Key, float | None]], rows: Mapping[Key, Any]) -> list[tuple[Key, float | None]]:
    """`hits` (best first, each with its score) with every hit whose matched observation's
    unit vector (`rows`) is nearer than `NEAR` to a better hit's lowered by `PENALTY` times the
    excess, but not below 0, best first again (a tie keeps the order it had). A hit without a
    row is neither lowered nor compared with."""
    held = [i for i, (key, _) in enumerate(hits) if key in rows]
    if len(held) < 2:
        return list(hits)
    np = load_numpy()
    vectors = np.stack([np.asarray(rows[hits[i][0]], dtype=np.float32) for i in held])
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)  # kept as float16
    nearness = np.nan_to_num(vectors @ vectors.T, nan=-1.0)  # a broken endpoint's NaN is like nothing
    scored = list(hits)
    for k in range(1, len(held)):
        excess = float(nearness[k, :k].max()) - NEAR
        if excess > 0:
            key, score = scored[held[k]]
            score = score or 0.0
            scored[held[k]] = (key, max(score - PENALTY * excess, min(score, 0.0)))  # not below 0 for it
    order = sorted(range(len(scored)), key=lambda i: (-(scored[i][1] or 0.0), i))
    return [scored[i] for i in order]
