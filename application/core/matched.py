"""Answers that point at the fact: which observations of each entity matched a search, a cap
on the observations an answer carries, and the second stage of ranking by meaning.

- `matchedObservations`: in the ranked modes each entity of an answer carries its best
  matching observations (`{text, score}`, best first, at most `matchesPerEntity`,
  default 3), scored by projections/search/matching.py: words in every mode, and in
  semantic and hybrid also each observation's own vector against the query's.
- `observationsLimit`: an entity answers at most that many observations: the best
  matching ones, in the entity's own order (in substring mode, the first ones).
- Reranking: an entity's vector is the mean of its observations' (passages.py), which
  finds candidates; the `RERANK` nearest are then scored by their best observation's
  similarity (search_nodes then ranks near-duplicates of a better hit lower, by that
  observation: projections/search/novelty.py), so a session of twenty turns is found by the one turn
  that answers (bench_recall, session entities: recall@5 0.57 with the mean of the two
  scores, 0.63 with the best observation's alone).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chronograph.application.core.validtime import valid_at
from chronograph.application.engine.outputs import MatchedOut, PageEntityOut, keep_observations
from chronograph.application.engine.service import Memory
from chronograph.application.engine.timeline import Moment
from chronograph.projections import EntityRecord
from chronograph.projections.search.matching import NEAR, best, observation_scores
from msgspec import UNSET

__all__ = ["MATCHES", "RERANK", "point_at_facts", "pointed", "reranked", "true_parts"]

MATCHES = 3
"""matchedObservations per entity unless `matchesPerEntity` says otherwise."""
RERANK = 100
"""The nearest entities scored again by their best observation (and compared with each other:
hubs.py, novelty.py). 50 until 2026-12-07: 100 gained 0.004 at recall@5 then; once hubs rank
lower, the answers the cosine put 51st to 100th have a way up (bench_recall's turns, hybrid
recall@10, seeds 28 / 29: 0.853 / 0.774 with 50, 0.880 / 0.823 with 100; see hubs.py)."""

Hit = tuple[EntityRecord, float | None]


def reranked(memory: Memory, moment: Moment, query: str, hits: list[Hit],
             valid: int | None = None) -> tuple[list[Hit], dict[str, Any]]:
    """`hits` (nearest first), the first `RERANK` scored by their best observation (with its term
    weights' bonus), and the vector of that observation for each of them whose parts are stored.

    With `valid` (a moment, µs), an observation not true then is no entity's best: an entity's
    vector is made of all it holds, so the hits further down that hold one are scored by their
    best true observation too (one holding none true scores 0), as the first ones are."""
    semantic = memory.semantic
    if semantic is None:
        return hits, {}
    masks = {} if valid is None else {r.stream: mask for r, _ in hits if (mask := true_parts(r, valid)) is not None}
    tail = [hit for hit in hits[RERANK:] if hit[0].stream in masks]
    best = semantic.nearness.best_parts(moment.snapshot, [r for r, _ in hits[:RERANK] + tail], query, masks)

    def scored(part: list[Hit]) -> list[Hit]:
        return sorted(((r, best[r.stream][0] if r.stream in best else s) for r, s in part),
                      key=lambda hit: -(hit[1] or 0.0))
    rows = {stream: row for stream, (_, row) in best.items() if row is not None}
    return scored(hits[:RERANK]) + (scored(hits[RERANK:]) if tail else hits[RERANK:]), rows


def true_parts(record: EntityRecord, valid: int) -> list[bool] | None:
    """Which of the texts embedded for `record` (`passages.entity_texts`: its observations but
    the blank ones) are true at `valid`; None when all are."""
    if not record.validity:
        return None
    spans = record.validity
    mask = [o not in spans or valid_at(spans[o], valid) for o in record.observations if o.strip()]
    return None if all(mask) or not mask else mask


def point_at_facts(memory: Memory, moment: Moment, query: str, mode: str, page: Sequence[Hit],
                   entities: list[PageEntityOut], matches: Any, limit: Any) -> None:
    """Add matchedObservations to `entities` (the outputs of `page`, in order) in the ranked
    modes, and cut their observations to `limit` (UNSET: no cap)."""
    ranked = mode != "substring"
    for out, (record, _) in zip(entities, page, strict=True):
        if out.observations is UNSET:
            continue  # summaryMode
        kept, matched = pointed(memory, moment, query, mode, record, out.observations,
                                matches if ranked else 0, limit)
        if ranked and matched is not None:
            out.matched_observations = matched
        if len(kept) < len(out.observations):
            keep_observations(out, kept)
            if out.provenance is not UNSET:
                held = set(kept)
                out.provenance = [p for p in out.provenance if p.observation in held]


def pointed(
    memory: Memory, moment: Moment, query: str, mode: str, record: EntityRecord, observations: list[str],
    matches: Any = UNSET, limit: Any = UNSET,
) -> tuple[list[str], list[MatchedOut] | None]:
    """`observations` (those of `record` an answer shows) cut to `limit`, and the best
    `matches` of them (UNSET: `MATCHES`; 0: None, none asked) with their scores."""
    count = MATCHES if matches is UNSET else matches
    cut = limit is not UNSET and len(observations) > limit
    if not count and not cut:
        return observations, None
    scores = [0.0] * len(observations)
    if mode != "substring" and observations:
        meaning = mode in ("semantic", "hybrid") and memory.semantic is not None and not moment.is_past
        semantic = memory.semantic if meaning else None
        closeness = None if semantic is None else semantic.nearness.closeness(moment.snapshot, record, query)
        scores = observation_scores(query, observations, None if closeness is None else
                                    {i: closeness.get(o, 0.0) for i, o in enumerate(observations)})
    matched = None
    if count:
        matched = [MatchedOut(text=observations[i], score=round(scores[i], 4))
                   for i in best(scores, count, NEAR)]
    if not cut:
        return observations, matched
    kept = set(best(scores, limit))
    for i in range(len(observations)):  # then the first of the rest, to fill the cap
        if len(kept) >= limit:
            break
        kept.add(i)
    return [o for i, o in enumerate(observations) if i in kept], matched
