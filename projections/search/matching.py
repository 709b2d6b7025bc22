"""Which observations of an entity match a query, and how well: answers that point at the fact.

Two signals, each 0..1, weighed `WORDS` to words and the rest to meaning:

- words: the query's content words found in the observation (a word counts when the
  observation has it, a word sharing its stem-like prefix: `broken` finds `broke`,
  `adopt` finds `adopted`, or a near spelling as fuzzy search forgives), each weighted
  by how rare it is among the entity's observations, as a share of all the query's weight;
- meaning: the cosine similarity of the observation's own vector (the entity's stored
  parts, see passages.py) to the query's, moved by its term weights, less what it shares with
  the entity's other observations (hubs.py: a session's small talk lies close together and close
  to any question naming its speaker), when the search embedded the query.

An observation with neither is not a match. The same scores pick which observations an
answer keeps when `observationsLimit` cuts them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from chronograph.projections.search.terms import edits_allowed, query_terms, terms
from rapidfuzz.distance import OSA

__all__ = ["NEAR", "best", "observation_scores", "word_scores"]

WORDS = 0.3
"""The weight of the words in an observation's score. Hybrid ranking weighs its candidates'
words by how much of the query their best match covers (`fusion`); within one entity a fixed
weight was as good: the evidence in a hybrid answer's first 10 matched observations
(bench_recall sessions) was 0.616 at 0.3, 0.610 at 0.5, 0.612 at 0.15, 0.602 with words
ignored, 0.613 and 0.615 with hybrid's scheme at 0.5 and 0.7."""
NEAR = 0.8
"""A matched observation scores at least this share of its entity's best: one further below
points at less than the best does, and an answer's first matches are better spent on the next
entity's best. On bench_recall's sessions (the evidence among a hybrid answer's first 10
matched observations, three seeds of the generated data: 28, 29, 30): 0.683 / 0.620 / 0.636
with every match up to `matchesPerEntity`, 0.701 / 0.637 / 0.644 at 0.8, a plateau from 0.78
(0.697 / 0.635 / 0.648) to 0.88 (0.700 / 0.643 / 0.634); two an entity without a cut gave
0.698 / 0.638 / 0.636."""
STEM = 4
"""Letters two words must share from their start to count as one (and all but two of the shorter)."""


def _same(word: str, allowed: int, other: str) -> bool:
    """Whether `other` (of a text) counts as the query's `word`: the same, the same stem, or
    within the `allowed` edits fuzzy search forgives it."""
    if word == other:
        return True
    shorter = min(len(word), len(other))
    if shorter >= STEM:
        need = max(STEM, shorter - 2)
        if word[:need] == other[:need]:
            return True
    return bool(allowed) and abs(len(word) - len(other)) <= allowed and OSA.distance(
        word, other, score_cutoff=allowed) <= allowed


def word_scores(query: str, texts: Sequence[str]) -> list[float]:
    """How much of the query's content each text holds (0..1), rarer words weighing more."""
    wanted = query_terms(query)
    if not wanted or not texts:
        return [0.0] * len(texts)
    held = [set(terms(text)) for text in texts]
    allowed = [edits_allowed(word) for word in wanted]
    known: dict[str, list[bool]] = {}  # a text's term against each query word, worked out once per call
    for words in held:
        for term in words:
            if term not in known:
                known[term] = [_same(word, edits, term) for word, edits in zip(wanted, allowed, strict=True)]
    found = [[any(known[t][i] for t in words) for i in range(len(wanted))] for words in held]
    weights = [math.log(1 + len(texts) / (1 + sum(row[i] for row in found))) for i in range(len(wanted))]
    total = sum(weights) or 1.0
    return [sum(w for w, hit in zip(weights, row, strict=True) if hit) / total for row in found]


def observation_scores(query: str, observations: Sequence[str],
                       closeness: Mapping[int, float] | None = None) -> list[float]:
    """Each observation's match score (0: none): words, and meaning where `closeness` gives
    the cosine similarity of observation i to the query."""
    words = word_scores(query, observations)
    if closeness is None:
        return words
    return [WORDS * w + (1 - WORDS) * max(closeness.get(i, 0.0), 0.0) for i, w in enumerate(words)]


def best(scores: Sequence[float], count: int, near: float = 0.0) -> list[int]:
    """The indexes of the `count` highest positive scores, best first (ties: the earlier), of
    those at least `near` times the highest (`NEAR` for the matches an answer points at)."""
    floor = near * max(scores, default=0.0)
    order = sorted((i for i, s in enumerate(scores) if s > 0 and s >= floor), key=lambda i: (-scores[i], i))
    return order[:count]
