"""Hybrid ranking: the word and meaning scores of each candidate, put on 0..1 and weighed.

A meaning score is the cosine similarity itself (at least 0): how near the best candidate
is matters (a misspelt query is near nothing, and its words should then decide). A word
score is the share of a full match (what a document holding every word of the query once
scores, `WorkspaceIndex.full_score`; a misspelt word counts as its nearest spelling), at
most 1, so a match of one common word, such as a person's name on every turn they said,
counts for little. A candidate's score is `WORDS` times its word score plus the rest
times its meaning score (absent from a list: 0 there).

Measured side by side (bench/bench_recall.py turn entities, recall@5 / @10; and
bench_retrieval.py misspelt queries, recall@3): reciprocal-rank fusion 0.26 / 0.30 and
0.97 (it gave the tenth word match as much as the tenth nearest meaning: a question's
words match hundreds of turns in an order that means little); both lists min-max scaled
0.53 / 0.62; words as a share of the full match with min-max meanings 0.60 / 0.70 but
misspelt 0.50; with cosine meanings and misspelt words counted as their nearest spelling
0.60 / 0.68 and misspelt 1.00 (semantic alone 0.60 / 0.68). Word weights from 0.15 to
0.45 moved recall by 0.01.

The word weight is then scaled by the best word match's share (2026-11-28): a natural question
("What kinds of things did Evan have broken?") is matched by no turn in most of its words, and
its few matches (a name, a common word) ranked turns above the nearest in meaning. Same bench,
one store, hybrid recall@5 / @10: a fixed 0.3, 0.601 / 0.683; scaled from 0.4, 0.5, 0.6, 0.7
and 0.8: 0.618-0.620 / 0.693-0.701 (0.5: 0.618 / 0.701, and at @10 at least semantic's in every
question category); a fixed 0.1 or 0.2, 0.608-0.612 / 0.688-0.690; the share squared, 0.620 /
0.697; the word list cut to the 20 or 50 nearest in meaning, 0.56-0.60 / 0.64-0.68.

Measured 2026-12-06 with the second stage and the near-duplicate rule (turns, seed 28: semantic
and hybrid 0.73 / 0.81, hybrid multi-hop @10 0.67 against semantic's 0.69), neither kept: word
matches under half the best's share counting for nothing (hybrid then equals semantic in every
category on seed 28; on seeds 29 and 30 it moves cells by 0.01-0.02 either way, and it would
drop partial word matches where words do find the answer: BM25 finds 0.23 of this generated
data, 0.58 of the public benchmark the issue measured); and the word hits outside the 50 nearest
given their own second-stage meaning score instead of none (multi-hop @10 0.67-0.70, but other
categories 0.01-0.02 lower at @10 with the top 5, 10 or 50 word hits scored: overall 0.80 or 0.79).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

__all__ = ["WORDS", "fuse"]

WORDS = 0.5
"""The weight of the word score when the best word match holds every word of the query (the
meaning score has the rest); less as the best match covers less of it."""

Key = TypeVar("Key", bound=Hashable)


def _scaled(found: Sequence[tuple[Key, float]]) -> dict[Key, float]:
    if not found:
        return {}
    scores = [score for _, score in found]
    high, low = max(scores), min(scores)
    span = high - low
    return {key: 1.0 if span <= 0 else (score - low) / span for key, score in found}


def fuse(words: Sequence[tuple[Key, float]], meaning: Sequence[tuple[Key, float]], full: float | None = None,
         weight: float = WORDS) -> list[tuple[Key, float]]:
    """The keys of both lists, best first, each with its fused score (0..1); ties go to the
    closer meaning, then to the earlier word match.

    `full` is what a word score of a document holding every word of the query is (see
    `WorkspaceIndex.full_score`): word scores are then shares of it (at most 1), so that a
    match of one common word (a name) counts for little even when nothing matches better.
    """
    by_words = _scaled(words) if not full else {key: min(score / full, 1.0) for key, score in words}
    if full:  # words weigh as much as the best match covers the query: a question none matches says little
        weight *= max(by_words.values(), default=0.0)
    by_meaning = {key: max(score, 0.0) for key, score in meaning}
    closeness = dict(meaning)
    order = {key: rank for rank, (key, _) in enumerate(words)}
    fused = {key: weight * by_words.get(key, 0.0) + (1 - weight) * by_meaning.get(key, 0.0)
             for key in (*by_meaning, *by_words)}
    return sorted(fused.items(), key=lambda item: (-item[1], -closeness.get(item[0], -1.0),
                                                   order.get(item[0], len(order))))
