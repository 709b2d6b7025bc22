"""Rebuilding the views from the log: fold in memory, write a new generation, swap atomically.

Readers keep using the live generation throughout; writers are held up only for the
final swap transaction, which also folds whatever was appended while the rebuild ran.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import lmdb
import msgspec

from eventstore import Transaction
from projections.catchup import Progress, catch_up
from projections.errors import RebuildError
from projections.lmdbstate import write_state
from projections.memory import MemoryState, paused_gc
from projections.snapshots import encode as encode_snapshot
from projections.tables import Tables, generations_on_disk, open_tables

if TYPE_CHECKING:
    from projections.views import Views

__all__ = ["RebuildReport", "forget_leftovers", "rebuild"]

FOLD_BATCH = 4096


class RebuildReport(msgspec.Struct, frozen=True):
    """What a rebuild did."""

    generation: int
    events: int
    keys: int
    seconds: float


def rebuild(views: Views, progress: Progress | None = None) -> RebuildReport:
    """Rebuild every view from position 1 into a new generation and swap it in.

    Raises:
        RebuildError: If another rebuild swapped in first; the views stay consistent.
    """
    store = views.store
    started = time.perf_counter()
    pending: list[tuple[int, bytes]] = []
    with store.read() as reader, paused_gc():
        head = reader.head()
        old = views.pointer.generation(reader.txn)
        state = MemoryState()
        snapshots = views.snapshots
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
        views.snapshots.save_encoded(position, data)

    generation = max(generations_on_disk(store) | {old}) + 1
    tables = open_tables(store, generation, create=True)
    if progress is not None:
        progress("write", 0, 1)
    keys = store.transact(lambda tx: _fill(tx, tables, state))
    if progress is not None:
        progress("write", 1, 1)

    leftovers = [open_tables(store, g, create=False) for g in generations_on_disk(store) - {generation}]

    def swap(tx: Transaction) -> bool:
        if views.pointer.generation(tx.txn) != old:
            return False
        catch_up(tx, tables, tx.head())
        views.pointer.set(tx.txn, generation)
        # Emptied, not deleted: a reader in this process may still hold a snapshot of
        # them, and deleting closes their handles. Views() deletes them at next open.
        _drop(tx, leftovers, delete=False)
        return True

    try:
        swapped = store.transact(swap)
    except lmdb.BadDbiError:
        raise RebuildError(
            "another process removed the generation being built (it opened the store "
            "meanwhile); run the rebuild again"
        ) from None
    if not swapped:
        store.transact(lambda tx: _drop(tx, [tables], delete=True))
        raise RebuildError("another rebuild swapped in its views first; nothing was changed")
    views.adopt(generation)
    return RebuildReport(generation, head, keys, time.perf_counter() - started)


def _drop(tx: Transaction, generations: list[Tables], *, delete: bool) -> None:
    for tables in generations:
        for database in tables.databases():
            tx.txn.drop(database, delete=delete)


def forget_leftovers(views: Views) -> None:
    """Delete the databases of every generation but the live one (call before any reads)."""
    store = views.store
    live = f"views.{views.tables.generation}."
    stale = [
        store.open_db(name, create=False)
        for name in store.database_names()
        if name.startswith("views.") and name.count(".") == 2 and not name.startswith(live)
    ]
    if stale:

        def delete(tx: Transaction) -> None:
            for database in stale:
                tx.txn.drop(database, delete=True)

        store.transact(delete)


def _fill(tx: Transaction, tables: Tables, state: MemoryState) -> int:
    for database in tables.databases():  # a retry after the map grew starts from empty
        tx.txn.drop(database, delete=False)
    return write_state(tx.txn, tables, state)
