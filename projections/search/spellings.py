"""Near spellings: the terms of a vocabulary within a few edits of a term, for fuzzy search.

The vocabulary's terms are kept by length (a term within `k` edits of another is at most `k`
letters longer or shorter), taken in as the vocabulary grows (it only grows: a term's id is its
place in it). Terms with a digit are left out: they match exactly (see `terms.edits_allowed`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from chronograph.projections.search.terms import DIGIT

__all__ = ["Spellings"]


class Spellings:
    """The terms of one growing vocabulary by length."""

    def __init__(self) -> None:
        self._by_length: dict[int, tuple[list[str], list[int]]] = {}
        self._taken = 0
        """How many terms of the vocabulary are in `_by_length` already."""

    def near(self, vocabulary: Sequence[str], term: str, allowed: int) -> Iterator[tuple[int, int]]:
        """(term id, edits) of the terms of `vocabulary` within `allowed` edits of `term` (itself
        left out), by optimal string alignment (a swap of two letters is one edit)."""
        from rapidfuzz import process  # noqa: PLC0415 (loaded on the first fuzzy search only)
        from rapidfuzz.distance import OSA  # noqa: PLC0415

        self._take(vocabulary)
        for length in range(max(1, len(term) - allowed), len(term) + allowed + 1):
            bucket = self._by_length.get(length)
            if bucket is None:
                continue
            words, tids = bucket
            for _, edits, at in process.extract(term, words, scorer=OSA.distance, score_cutoff=allowed, limit=None):
                if edits:
                    yield tids[at], int(edits)

    def _take(self, vocabulary: Sequence[str]) -> None:
        for tid in range(self._taken, len(vocabulary)):
            term = vocabulary[tid]
            if DIGIT.search(term):
                continue  # matched exactly only (see edits_allowed)
            bucket = self._by_length.get(len(term))
            if bucket is None:
                bucket = self._by_length[len(term)] = ([], [])
            bucket[0].append(term)
            bucket[1].append(tid)
        self._taken = len(vocabulary)
