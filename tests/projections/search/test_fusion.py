"""Hybrid ranking: words and meaning weighed, the words as far as their best match covers the query."""

from __future__ import annotations

from chronograph.projections.search.fusion import fuse


def test_a_few_words_of_a_question_do_not_outrank_what_is_nearer_in_meaning() -> None:
    # "What kinds of things did Evan have broken?": turn b says "Evan" (a third of the query's
    # weight), turn a says what broke in other words
    ranked = fuse(words=[("b", 0.3)], meaning=[("a", 0.6), ("b", 0.5)], full=1.0)
    assert [key for key, _ in ranked] == ["a", "b"]


def test_a_match_of_every_word_outranks_a_somewhat_nearer_meaning() -> None:
    ranked = fuse(words=[("b", 1.0)], meaning=[("a", 0.55), ("b", 0.4)], full=1.0)
    assert [key for key, _ in ranked] == ["b", "a"]


def test_scores_stay_between_zero_and_one() -> None:
    ranked = fuse(words=[("a", 5.0), ("b", 0.5)], meaning=[("a", 1.0), ("c", -0.2)], full=2.0)
    assert all(0.0 <= score <= 1.0 for _, score in ranked) and ranked[0][0] == "a"
