"""Folding the events a generation of the views has not seen yet, inside a write transaction."""

from __future__ import annotations

from collections.abc import Callable

import lmdb
from chronograph.eventstore import LogReader
from chronograph.projections.fold import apply_all
from chronograph.projections.states.lmdbstate import LmdbState
from chronograph.projections.tables import Tables

__all__ = ["Progress", "catch_up"]

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
    for batch in log.batches(checkpoint + 1, last):
        apply_all(state, batch)
    tables.set_checkpoint(txn, last)
    return last
