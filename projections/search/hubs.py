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
recall@5 / @10 of turn entities; the rule applied before `novelty.spread`, the constants chosen on
seeds 28 and 29, then checked on 30 and 31), with the 50 nearest ranked again as before:

| | seed 28 | seed 29 |
| --- | --- | --- |
| without | 0.733 / 0.806 | 0.660 / 0.756 |
| weight 0.4, 3 neighbours | 0.806 / 0.853 | 0.738 / 0.774 |
| 0.5, 3 / 0.6, 3 / 0.8, 3 | 0.810 / 0.856, 0.808 / 0.856, 0.811 / 0.858 | 0.738 / 0.773, 0.736 / 0.772, 0.735 / 0.773 |
| 0.6, 1 / 0.6, 5 | 0.819 / 0.859, 0.810 / 0.855 | 0.739 / 0.774, 0.736 / 0.773 |
| 0.4, 3, only lowering (hits above the average) | 0.744 / 0.820 | 0.675 / 0.760 |
| 0.4, 3, entities of one observation only | 0.806 / 0.853 (sessions unchanged) | 0.738 / 0.774 |

Only lowering gains little: the rule is as much about the specific hit rising above the generic
ones as about the hub falling. Seeds 30 and 31 (not looked at while choosing): 0.668 / 0.753 ->
0.737 / 0.773 and 0.689 / 0.769 -> 0.752 / 0.806. Most misses at @10 were then answers the cosine
put 51st to 100th, which the second stage never scored: with the 100 nearest ranked again
(`matched.RERANK`), 0.825 / 0.880 and 0.765 / 0.823 on seeds 28 and 29 (without hubs, 100 gave
0.734 / 0.808 and 0.670 / 0.767), and on seeds 30 and 31 0.773 / 0.844 and 0.773 / 0.848.
bench_retrieval (paraphrases among 2,000 made-up distractors, recall@3 / MRR, hybrid, with the
50 nearest): 0.97 / 0.86 without, 0.93 / 0.85 at 0.4 (two of thirty fell to 4th, one rose from it),
0.97 / 0.87 at 0.6; misspelt 1.00 / 1.00 -> 1.00 / 0.98 (with the 100: docs/performance.md).

The same rule points at the fact within an entity (`Nearness.closeness`): an observation near many
of its entity's other observations (a session's small talk) scores less for matchedObservations.

**A fact's copies that stand apart are not its crowd** when hits are ranked (`unhubbed`): a fact
saved five times in alike words ("The user prefers dark mode", "User said they prefer dark mode",
...) had its copies as its three nearest, and its best copy fell behind notes that merely shared
the subject (a review's case, the real model: "Which colour theme does the user like?" answered
"The user prefers tea over coffee" first). Leaving every near-duplicate (`novelty.NEAR`) out of
every crowd fixed that but cost the generated conversations (hybrid turns, seeds 28 / 29: 0.825 /
0.880 -> 0.791 / 0.869 and 0.765 / 0.823 -> 0.736 / 0.808): their small-talk turns are as near
each other as the copies are (speaker and date lead each text: distinct lines 0.85-0.93 apart).
What tells them apart is what lies around them: the copies of a fact are far from everything else
(0.50 to the nearest other note in the review's case), small talk sits among more small talk just
below the bar (0.75-0.85). So a hit's near-duplicates leave its crowd only when nothing that is
not `ALIKE` to it comes `APART` near; otherwise they count as any fellow. That gives back all of
it (0.825 / 0.880 and 0.765 / 0.823, the review's fact still first). Copies are `novelty.spread`'s
to lower, the worse of them only. Within an entity copies still count (`crowding(copies=True)`):
there the best copy still leads, and not counting them took the evidence among an answer's first
10 matchedObservations on seed 29 from 0.72 to 0.69.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar

from chronograph.projections.search.novelty import NEAR
from chronograph.projections.search.vectors import load_numpy

__all__ = ["APART", "ALIKE", "NEIGHBOURS", "WEIGHT", "crowding", "unhubbed"]

WEIGHT = 0.4
"""How much of a hit's mean similarity to its nearest fellow hits (less the hits' average) it
loses. Session entities (bench_recall, recall@5 / @10, seeds 28 and 29): 0.80 / 0.91 and 0.76 /
0.91 without, 0.84 / 0.95 and 0.81 / 0.92 at 0.4; at 0.6 and more the sessions' @10 falls
(0.93 / 0.90 at 0.6, 0.91 / 0.86 at 1.0), so 0.4, not the best of the turns. Within a session
(matchedObservations, evidence among a hybrid answer's first 10, seeds 28 / 29, sessions ranked
with the rule): 0.751 / 0.689 without it inside the entity, 0.761 / 0.709 at 0.2, 0.766 / 0.719
at 0.4, 0.775 / 0.727 at 0.6; the one weight serves both."""
NEIGHBOURS = 3
"""The fellow hits a hit's nearness to the others is the mean of (its nearest ones)."""
ALIKE = 0.8
"""Fellows at least this similar (cosine) are the hit's kin, not what its copies stand apart
from: the review's five sayings of one preference lie 0.81-0.87 from each other (MiniLM, name
and type leading each text), some below `novelty.NEAR`."""
APART = 0.6
"""A hit's near-duplicates are no crowd when its nearest fellow that is not `ALIKE` is less similar
than this: a fact saved again lies 0.50 from the other notes on its subject (the review's case),
a small-talk turn 0.75-0.85 from other small talk (bench_recall), whose copies are a crowd as any.
Any bar from 0.5 to 0.65 ranks bench_recall's turns the same on seeds 28-31 (replayed; 0.7 loses
0.014 @5 on seed 28); 0.6 leaves the most room under it for a fact's copies (the review's fact
lies 0.50 from its nearest other note, test_hubs' synthetic one 0.52)."""

Key = TypeVar("Key", bound=Hashable)


def crowding(vectors: Any, *, copies: bool = True) -> Any:
    """What `unhubbed` takes from each of `vectors` (rows; a row that is not a number takes
    nothing and is no one's neighbour): `WEIGHT` times its mean similarity to its `NEIGHBOURS`
    nearest fellow rows, less the average of that over the rows (0 for all with fewer than 3).
    Without `copies`, a row's copies (`COPY`) are not among its neighbours when they stand apart
    (no other row is `APART` near it): a row whose every fellow is one takes what the others take
    on average. Copies with other rows close around them (small talk) are a crowd as any."""
    np = load_numpy()
    vectors = np.asarray(vectors, dtype=np.float32)
    taken = np.zeros(len(vectors), dtype=np.float32)
    finite = np.isfinite(vectors).all(axis=1)  # a broken endpoint's NaN row tells nothing: as none
    if int(finite.sum()) < 3:  # two rows are as near each other: nothing to tell them apart by
        return taken
    held = vectors[finite]
    held = held / np.maximum(np.linalg.norm(held, axis=1, keepdims=True), 1e-12)  # kept as float16
    nearness = held @ held.T
    np.fill_diagonal(nearness, -np.inf)
    if not copies:  # a fact said again: copies that stand apart from every other hit are no crowd
        copy = nearness >= NEAR
        others = np.where(nearness >= ALIKE, -np.inf, nearness).max(axis=1)  # the nearest not alike
        nearness[copy & (others < APART)[:, None]] = -np.inf
    count = min(NEIGHBOURS, len(held) - 1)
    nearest = np.partition(nearness, -count, axis=1)[:, -count:]
    kept = np.isfinite(nearest)
    counted = kept.sum(axis=1)
    crowded = np.where(kept, nearest, 0.0).sum(axis=1) / np.maximum(counted, 1)
    alone = counted == 0  # every other row says what it says: crowded by none but its own kind
    if alone.all():
        return taken
    crowded[alone] = crowded[~alone].mean()
    taken[finite] = WEIGHT * (crowded - crowded.mean())
    return taken


def unhubbed(hits: Sequence[tuple[Key, float | None]], rows: Mapping[Key, Any]) -> list[tuple[Key, float | None]]:
    """`hits` (best first, each with its score), those with a vector in `rows` (the unit vector of
    the observation each matched by) scored down by `WEIGHT` times their mean similarity to their
    `NEIGHBOURS` nearest fellow hits of `rows`, less the average of it (kept within 0..1), best
    first again (a tie keeps the order it had). A hit without a row (or with one that is not a
    number) keeps its score and is no one's neighbour."""
    held = [i for i, (key, _) in enumerate(hits) if key in rows]
    if len(held) < 3:
        return list(hits)
    np = load_numpy()
    taken = crowding(np.stack([rows[hits[i][0]] for i in held]), copies=False).tolist()
    scored = list(hits)
    for i, less in zip(held, taken, strict=True):
        key, score = scored[i]
        scored[i] = (key, min(max((score or 0.0) - less, 0.0), 1.0))
    order = sorted(range(len(scored)), key=lambda i: (-(scored[i][1] or 0.0), i))
    return [scored[i] for i in order]
