"""A query as a search by meaning asks it: its vector, its term weights, and how near a stored
part of an entity is to it (the cosine of their vectors, moved towards 1 by their term weights)."""

from __future__ import annotations

from typing import Any

from chronograph.projections.search.splade import VOCABULARY, Weights
from chronograph.projections.search.vectors import Parts, load_numpy

__all__ = ["TERMS", "Asked"]

TERMS = 0.7
"""How far learned term weights move a part's nearness from its cosine similarity towards 1:
TERMS times its term score as a share of the query's own (what a text weighing the query's
words as the query does scores; at most 1), so a nearness stays a similarity of 0 to 1 (a
threshold still means what it says). Measured on bench_recall (semantic recall@5 / @10 of the
turns, 418 questions; evidence in the first 10 matchedObservations of a hybrid answer on the
sessions) and bench_retrieval's paraphrases (recall@3 / MRR); cosine alone: 0.602 / 0.681,
0.62, 1.00 / 0.88. TERMS 0.5: 0.679 / 0.734, 0.672, 0.97 / 0.88; 0.7: 0.678 / 0.744, 0.683,
0.97 / 0.88; 0.9: 0.683 / 0.747, 0.683, 0.93 / 0.86; 1.0: 0.675 / 0.749, 0.677, 0.93 / 0.84.
Added without the saturation (0.5: 0.683 / 0.747, 0.689) a nearness passed 1. A share of the
best term score among the candidates instead of the query's own (0.3: 0.681 / 0.749) gave the
best of a question no candidate answers the whole bonus: paraphrases fell to 0.90 / 0.69."""


class Asked:
    """A query as searched: its vector, and its term weights (None: no weigher)."""

    __slots__ = ("own", "terms", "vector")

    def __init__(self, vector: Any, terms: Weights | None) -> None:
        self.vector = vector
        self.terms = terms
        """Word piece ids and weights (a few dozen: a dense row is made for each scoring)."""
        self.own = 0.0 if terms is None else float(terms[1] @ terms[1])
        """The query's term score against itself: what a text calling for its words as it does scores."""

    def dense(self) -> Any:
        """The term weights as one float32 per word piece of the vocabulary."""
        np = load_numpy()
        row = np.zeros(VOCABULARY, dtype=np.float32)
        if self.terms is not None:
            row[self.terms[0]] = self.terms[1]
        return row

    def nearness(self, cosines: Any, scores: Any) -> Any:
        """Cosine similarities with what term scores add: each closes `TERMS` times its share of
        the query's own score of the way from its cosine to 1 (so a nearness stays at most 1)."""
        np = load_numpy()
        share = np.minimum(scores / max(self.own, 1e-9), 1.0)
        return cosines + TERMS * share * (1.0 - cosines)

    def parts_nearness(self, parts: Parts) -> Any:
        """How near each of an entity's stored parts is (its cosine alone where it keeps no weights)."""
        cosines = parts.rows(len(self.vector)) @ self.vector
        terms = None if self.terms is None else parts.term_scores(self.dense())
        return cosines if terms is None else self.nearness(cosines, terms)
