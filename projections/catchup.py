"""Folding the events a generation of the views has not seen yet, inside a write transaction."""

from __future__ import annotations

from collections.abc import Callable

import lmdb

from eventstore import Reader
from projections.fold import apply_all
from projections.lmdbstate import LmdbState
from projections.tables import Tables

__all__ = ["Progress", "catch_up"]

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): called as long work advances."""


def catch_up(reader: Reader, tables: Tables, until: int, *, limit: int | None = None) -> int:
    """Fold log events after the checkpoint of `tables`, up to `until`, into `tables`.

    `reader` must belong to a write transaction. At most `limit` events are folded, so
    that a long catch-up can be split over several transactions. Returns the new
    checkpoint.
    """
    txn: lmdb.Transaction = reader.txn
    checkpoint = tables.checkpoint(txn)
    last = until if limit is None else min(until, checkpoint + limit)
    if last <= checkpoint:
        return checkpoint
    state = LmdbState(txn, tables)
    for batch in reader.batches(checkpoint + 1, last):
        apply_all(state, batch)
    tables.set_checkpoint(txn, last)
    return last
