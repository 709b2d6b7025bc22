"""Rebuilding the views from the log: fold in memory, fill the idle slot, swap atomically.

Readers keep using the live slot throughout; writers are held up only for the fill and
the final swap transaction, which also folds whatever was appended while the rebuild ran.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import lmdb
import msgspec
from chronograph.eventstore import EventLog
from chronograph.projections.errors import RebuildError
from chronograph.projections.live.binding import Binding
from chronograph.projections.live.catchup import Progress, catch_up
from chronograph.projections.past.snapshots import Snapshots
from chronograph.projections.past.snapshots import encode as encode_snapshot
from chronograph.projections.states.dictstate import DictState, paused_gc
from chronograph.projections.states.lmdbstate import write_state
from chronograph.projections.tables import Pointer, Tables

__all__ = ["RebuildReport", "rebuild"]

FOLD_BATCH = 4096


class RebuildReport(msgspec.Struct, frozen=True):
    """What a rebuild did."""

    generation: int
    events: int
    keys: int
    seconds: float


def rebuild(
    log: EventLog,
    binding: Binding,
    pointer: Pointer,
    snapshots: Snapshots,
    tables_of: Callable[[int], Tables],
    progress: Progress | None = None,
) -> RebuildReport:
    """Rebuild every view from position 1 into the idle slot and make it the live one.

    `tables_of(generation)` opens a generation's tables (outside any transaction).

    Raises:
        RebuildError: If another rebuild swapped in first; the live views stay as they were.
    """
    started = time.perf_counter()
    env = binding.env
    with env.read() as txn:
        old = pointer.generation(txn)
    pending: list[tuple[int, bytes]] = []
    with log.read() as reader, paused_gc():
        erasures = reader.erasures()
        head = reader.head()
        state = DictState()
        # Snapshots on round positions, no more than are kept (later as-of folds add others).
        spacing = snapshots.spacing * max(1, -(-head // (snapshots.spacing * snapshots.keep)))
        start = 1
        for stop in [*range(spacing, head, spacing), head]:
            for batch in reader.batches(start, stop, batch_size=FOLD_BATCH, slim=True):
                state.fold(batch)
                if progress is not None:
                    progress("fold", state.position, head)
            if snapshots.writable and stop and stop % spacing == 0:
                pending.append((stop, encode_snapshot(state)))
            start = stop + 1
    state.position = head
    for position, data in pending:
        snapshots.save_encoded(position, data, erasures)

    generation = old + 1
    tables = tables_of(generation)
    retired = tables_of(old) if old else None

    def unchanged(txn: lmdb.Transaction) -> None:
        if pointer.generation(txn) != old:  # the idle slot may have become the live one
            raise RebuildError("another rebuild swapped in its views first; nothing was changed")
        with binding.log_in(txn) as reader:
            if reader.erasures() != erasures:
                raise RebuildError("an entity was forgotten while the rebuild folded the log; nothing was "
                                   "changed: run the rebuild again")

    def fill(txn: lmdb.Transaction) -> int:
        unchanged(txn)
        for database in tables.databases():  # the idle slot, and a retry after the map grew
            txn.drop(database, delete=False)
        return write_state(txn, tables, state)

    if progress is not None:
        progress("write", 0, state.size)
    keys = env.write(fill)
    if progress is not None:
        progress("write", state.size, state.size)

    def swap(txn: lmdb.Transaction) -> bool:
        if pointer.generation(txn) != old:
            return False
        unchanged(txn)
        with binding.log_in(txn) as reader:
            catch_up(reader, txn, tables, reader.head())
        pointer.set(txn, generation)
        if retired is not None:  # emptied, never deleted: handles stay valid in every process
            for database in retired.databases():
                txn.drop(database, delete=False)
        return True

    if not env.write(swap):
        raise RebuildError("another rebuild swapped in its views first; nothing was changed")
    return RebuildReport(generation, head, keys, time.perf_counter() - started)
