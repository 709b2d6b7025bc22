"""Near-duplicates of a better hit rank lower: an answer's places go to what it does not say yet.

A search by meaning scores each candidate alone. Short, generic turns ("Pretty hectic, work has
been crazy lately", "Sounds exhausting, take care of yourself") lie close together and close to
any question that names their speaker, so they filled the page an agent pays for while the turn
that answers came eleventh (most of bench_recall's misses, read one by one). Each hit is now
compared with every better one by the observation that made it a hit (its best part's vector),
and a hit of one observation whose observation is more similar than `NEAR` to a better hit's
loses `PENALTY` times the excess. Nothing is dropped: a near-duplicate ranks after what is new.

Only entities of one observation are lowered: what they hold is what matched, so a near-repeat
says nothing new. An entity of many (a session of twenty turns) holds more than the one that
matched, and lowering it cost session entities recall@10 (0.91 -> 0.89, 0.91 -> 0.84 and 0.90 ->
0.88 on the generator's seeds 28, 29, 30) for 0.02-0.03 more evidence among their matched
observations; it is compared with, never lowered.

With MiniLM the same sentence said on two dates is only ~0.84 similar (median, seed 29: the
entity's name and the date lead the text), while two generic lines of one speaker reach 0.93-0.96:
the discount falls on the generic more than on the repeated. Measured (bench/bench_recall.py, 10
generated conversations, ~420 questions each; turns, hybrid, recall@5 / @10), the discount
applied to the 50 nearest after their second stage:

| seed 28 | none | NEAR 0.9, x2 | 0.85, x1 | **0.85, x2** | 0.85, x3 | 0.8, x2 |
| --- | --- | --- | --- | --- | --- | --- |
| turns, hybrid | 0.67 / 0.74 | 0.70 / 0.77 | 0.73 / 0.80 | **0.73 / 0.81** | 0.74 / 0.81 | 0.75 / 0.82 |

and with 0.85, x2 on two other seeds: 0.59 / 0.67 -> 0.66 / 0.76 (seed 29), 0.63 / 0.68 -> 0.67 /
0.75 (seed 30). A lower bar scored higher on the data it was chosen on (0.8: 0.75 / 0.82), but
the lower the bar, the more texts that are only alike (two hobbies told in one sentence frame,
which a question about several hobbies wants together) it lowers: 0.85 is the cautious choice, not
the best figure here. Comparing the entities' mean vectors instead of their best parts gave turns the same and cost
sessions more. Moving the query towards its three nearest (feedback from the best hits) lowered
every figure (turns, semantic: 0.62 / 0.67 with half their mean). bench_retrieval (paraphrases,
misspellings, exact queries among 2,000 distractors) is unchanged by the discount.
"""

from __future__ import annotations

from collections.abc import Container, Hashable, Mapping, Sequence
from typing import Any, TypeVar

from chronograph.projections.search.vectors import load_numpy

__all__ = ["NEAR", "PENALTY", "spread"]

NEAR = 0.85
"""How similar (cosine) the observations two hits matched by must be for the worse one to
count as saying what the better one says."""
PENALTY = 2.0
"""What a near-duplicate loses for each unit of similarity past `NEAR` (at most 0.3)."""

Key = TypeVar("Key", bound=Hashable)


def spread(hits: Sequence[tuple[Key, float | None]], rows: Mapping[Key, Any],
           lowerable: Container[Key] | None = None) -> list[tuple[Key, float | None]]:
    """`hits` (best first, each with its score) with every hit of `lowerable` (None: every hit)
    whose matched observation's unit vector (`rows`) is nearer than `NEAR` to a better hit's
    lowered by `PENALTY` times the excess, but not below 0, best first again (a tie keeps the
    order it had). A hit without a row is neither lowered nor compared with."""
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
        if excess > 0 and (lowerable is None or hits[held[k]][0] in lowerable):
            key, score = scored[held[k]]
            score = score or 0.0
            scored[held[k]] = (key, max(score - PENALTY * excess, min(score, 0.0)))  # not below 0 for it
    order = sorted(range(len(scored)), key=lambda i: (-(scored[i][1] or 0.0), i))
    return [scored[i] for i in order]
