"""Folding the events a generation of the views has not seen yet, inside a write transaction.

A forgetting another server wrote (views of a shared log) is folded as it is everywhere, and
first the relations it moved to streams of their own leave the views (`moved_out`): its
`EntityForgotten` says them by their new ids only, and the fold alone takes out those on the
forgotten entity's name, not one another entity made on a stream the forgotten one began under
another name. Where the forgetting was written, its erasure emptied the views already.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import lmdb
from chronograph.eventstore import EntityForgotten, Envelope, LogReader
from chronograph.projections.fold import apply_all
from chronograph.projections.live.anchor import mark
from chronograph.projections.states.lmdbstate import LmdbState
from chronograph.projections.tables import Tables

__all__ = ["Progress", "catch_up", "moved_out"]

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): called as long work advances."""


def catch_up(log: LogReader, txn: lmdb.Transaction, tables: Tables, until: int, *, limit: int | None = None) -> int:
    """Fold log events after the checkpoint of `tables`, up to `until`, into `tables`.

    `txn` is a write transaction of the views' environment. At most `limit` events are
    folded, so that a long catch-up can be split over several transactions. Returns the
    new checkpoint.
    """
    checkpoint = tables.checkpoint(txn)
    last = until if limit is None else min(until, checkpoint + limit)
    if last <= checkpoint:
        return checkpoint
    state = LmdbState(txn, tables)
    folded = 0
    for batch in log.batches(checkpoint + 1, last):
        _fold(state, log, batch)
        if batch[-1].position == last:
            folded = mark(batch[-1])
    tables.set_checkpoint(txn, last, folded)
    return last


def _fold(state: LmdbState, log: LogReader, batch: Sequence[Envelope]) -> None:
    """Fold `batch` into the live views, each forgetting after the relations it moved out."""
    start = 0
    for i, envelope in enumerate(batch):
        if type(envelope.event) is EntityForgotten and envelope.event.relations:
            apply_all(state, batch[start:i])
            moved_out(state, log, envelope.event)
            start = i
    apply_all(state, batch[start:])


def moved_out(state: LmdbState, log: LogReader, forgotten: EntityForgotten) -> None:
    """Take out of the views every relation an event of the streams `forgotten` moved created (found
    by position: the erased events keep theirs, and a relation's record is keyed by its creation's)."""
    for position in log.positions_of(forgotten.relations):
        relation = state.relation_at(forgotten.workspace, position)
        if relation is not None:
            state.remove_relation(relation)
