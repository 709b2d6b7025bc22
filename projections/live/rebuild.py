"""Rebuilding the views from the log: fold in memory, fill the idle slot in key order, swap.

The log is folded in memory between snapshot positions (a read transaction each), and each
snapshot is saved as soon as its span is folded, so no encoded copy of the state waits
in memory. The idle slot is then filled table by table in key order, appended in
transactions of `WRITE_CHUNK` keys (full pages, bounded dirty pages, and the pages the
last swap freed are reused rather than the file grown).

Memory is bounded: once the state holds `FOLD_RECORDS` records, it is written as above and
the rest of the log is folded onto the written views a `Segment` at a time (the records its
events touch, read from what is written, and what they changed), each written as sorted
changes in transactions of `CHANGE_CHUNK` keys. Snapshots past that point are left to the
as-of folds that want them (a state that large is not kept in memory to encode).

Readers keep using the live slot throughout; the final swap transaction folds whatever was
appended meanwhile, moves the pointer and empties the retired slot. A process killed at any
point leaves the pointer where it was: the live views stay whole, and the next rebuild
empties the idle slot first.

An erasure while it runs fails a rebuild of views in the log's own environment (other processes
scrub that file, and know nothing of the idle slot). A cache of a shared log (`forgiving`) goes on:
what it folded before the erasure and what it reads after are the views of a cache that was away
during it, and its `EntityForgotten` is folded at the swap as such a cache folds it; the report
gives the count the fold began at, so the cache's `refresh` then drops what was derived and scrubs
its file, as at any cache's next use after another server's erasure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import lmdb
import msgspec
from chronograph.eventstore import EntityForgotten, Envelope, EventLog, LogReader
from chronograph.eventstore.lmdb import resident
from chronograph.projections.errors import RebuildError
from chronograph.projections.fold import apply_all
from chronograph.projections.live.anchor import mark
from chronograph.projections.live.binding import Binding
from chronograph.projections.live.catchup import Progress, catch_up
from chronograph.projections.live.derived import retire
from chronograph.projections.past.snapshots import Snapshots
from chronograph.projections.past.snapshots import encode as encode_snapshot
from chronograph.projections.states.bulkload import (
    TABLE_ROWS,
    Keys,
    chunks,
    count_rows,
    put_changes,
    put_sorted,
    table_rows,
)
from chronograph.projections.states.dictstate import DictState, paused_gc
from chronograph.projections.states.lmdbstate import LmdbState
from chronograph.projections.states.segment import Segment
from chronograph.projections.tables import Pointer, Tables

__all__ = ["RebuildReport", "rebuild"]

FOLD_BATCH = 4096
"""Events decoded per batch."""
WRITE_CHUNK = 100_000
"""Keys appended per write transaction."""
FOLD_RECORDS = 400_000
"""Records (entities, relations, contexts) a rebuild holds in memory: the state it folds first, and
then each segment it folds onto the views written (see `segment`). About 0.5 KB each at the
benchmarks' graph, more while they are written: a million entities (3M records) rebuild in
~800 MB, where holding them all took 3.2 GB. Stores below it rebuild as they always did."""
CHANGE_CHUNK = 20_000
"""Keys changed per write transaction when a segment is written onto the views: they land all
over the tables, so each may copy a page, which the transaction holds in memory and the file
holds twice until the next (20k: ~80 MB at most of either)."""
MAPPED = 16 << 20
"""The store pages a rebuild keeps resident before it gives them back (see `resident`): the log
it reads and the views it writes are clean pages of the map, which the kernel counts in its RSS.
A rebuild reads each page of the log once and appends the views at their right edges, so pages
given back are seldom read again: at 50k entities its peak went from 274 to 209 MB with 16 MB
here instead of 192 (the import's), in the same time (3.0 s)."""


class RebuildReport(msgspec.Struct, frozen=True):
    """What a rebuild did."""

    generation: int
    events: int
    keys: int
    seconds: float
    phases: dict[str, float] = {}
    """Seconds spent per step: decode (reading and decoding the log), fold, snapshots
    (encoding and saving them), sort (ordering keys), write (encoding the records and
    appending them), swap (the final transaction)."""
    snapshots: int = 0
    """Snapshots saved (those already kept at their positions are left as they are)."""
    others: int = 0
    """Databases other versions of Chronograph derived from the log, emptied (see `rebuild`)."""
    segments: int = 0
    """Segments of the log folded onto the views written, past `FOLD_RECORDS` records in memory."""
    erasures: int = 0
    """The log's erasure count when the fold began: views made at it, or (`forgiving`) an erasure
    since is folded as a cache that was away folds it, and its owner's `refresh` scrubs after."""


class _Clock:
    def __init__(self) -> None:
        self.phases: dict[str, float] = dict.fromkeys(("decode", "fold", "snapshots", "sort", "write", "swap"), 0.0)
        self._last = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.phases[phase] += now - self._last
        self._last = now


def rebuild(
    log: EventLog,
    binding: Binding,
    pointer: Pointer,
    snapshots: Snapshots,
    tables_of: Callable[[int], Tables],
    progress: Progress | None = None,
    foreign: Sequence[lmdb._Database] = (),
    *,
    forgiving: bool = False,
) -> RebuildReport:
    """Rebuild every view from position 1 into the idle slot and make it the live one.

    `tables_of(generation)` opens a generation's tables (outside any transaction). `foreign`
    are what other versions of Chronograph derived from the log (other view formats): when
    no other process has the store open, they are emptied too, so that the pages an upgrade
    left behind hold the new views (a version that opens the store again folds its own anew).
    `forgiving`: an erasure while it runs does not fail it (a cache of a shared log: see above).

    Raises:
        RebuildError: If another rebuild swapped in first, or (unless `forgiving`) an entity was
            forgotten while it ran; the live views stay as they were.
    """
    env = binding.env
    with env.alone() as alone:
        return _rebuild(log, binding, pointer, snapshots, tables_of, progress, foreign if alone else None,
                        forgiving)


def _rebuild(
    log: EventLog,
    binding: Binding,
    pointer: Pointer,
    snapshots: Snapshots,
    tables_of: Callable[[int], Tables],
    progress: Progress | None,
    foreign: Sequence[lmdb._Database] | None,
    forgiving: bool,
) -> RebuildReport:
    alone = foreign is not None
    started = time.perf_counter()
    clock = _Clock()
    env = binding.env
    with env.read() as txn:
        old = live_now = pointer.generation(txn)
    if alone and old:
        # No other process has the store open, and none can open it before this returns: the
        # live views are dropped first, so their pages hold the new ones and the file does not
        # grow. Killed from here on, the store opens without views, which builds them again.
        live = tables_of(old)

        def drop(txn: lmdb.Transaction) -> None:
            if pointer.generation(txn) != old:
                raise RebuildError("another rebuild swapped in its views first; nothing was changed")
            pointer.set(txn, 0)
            for database in live.databases():
                txn.drop(database, delete=False)

        env.write(drop)
        live_now = 0
    if foreign:
        env.write(lambda txn: retire(txn, foreign, pointer))
    with log.read() as reader:
        erasures = reader.erasures()
        head = reader.head()
    refused = None if forgiving else erasures  # the count an erasure must not move while it runs
    state = DictState()
    saved = 0
    encoded = bytearray()  # every snapshot's bytes, one after the other (see `snapshots.encode`)
    with paused_gc():
        # Snapshots on round positions, no more than are kept (later as-of folds add others).
        spacing = snapshots.spacing * max(1, -(-head // (snapshots.spacing * snapshots.keep)))
        start, folded = 1, head
        for stop in [*range(spacing, head, spacing), head]:
            with log.read() as reader:
                _unerased(reader, refused)
                clock.lap("decode")
                for batch in reader.batches(start, stop, batch_size=FOLD_BATCH, slim=True):
                    clock.lap("decode")
                    state.fold(batch)
                    clock.lap("fold")
                    resident.release(MAPPED)  # no buffer into the map is held: values are copied out
                    if progress is not None:
                        progress("fold", state.position, head)
                    if state.size >= FOLD_RECORDS and state.position < stop:
                        folded = state.position
                        break
                clock.lap("decode")
            if folded < head:  # the rest is folded onto the views this state writes, a segment at a time
                break
            if snapshots.writable and stop and stop % spacing == 0 and not snapshots.has(stop):
                data = encode_snapshot(state, encoded)
                if snapshots.worth_keeping(data, stop):
                    snapshots.save_encoded(stop, data, erasures)
                    saved += 1
                else:  # the next ones are larger still: their buffer is not held meanwhile
                    encoded = bytearray()
                del data
                clock.lap("snapshots")
            if state.size >= FOLD_RECORDS and stop < head:
                folded = stop
                break
            start = stop + 1

        del encoded
        generation = old + 1
        tables = tables_of(generation)
        retired = tables_of(old if old else generation + 1)  # the other slot

        def unchanged(txn: lmdb.Transaction) -> None:
            if pointer.generation(txn) != live_now:  # the idle slot may have become the live one
                raise RebuildError("another rebuild swapped in its views first; nothing was changed")
            if refused is not None:
                with binding.log_in(txn) as reader:
                    _unerased(reader, refused)

        def empty(txn: lmdb.Transaction) -> None:
            unchanged(txn)
            for database in tables.databases():  # what a rebuild killed halfway left in the idle slot
                txn.drop(database, delete=False)

        env.write(empty)
        size, total, keys = state.size, count_rows(state), 0
        if progress is not None:
            progress("write", 0, size)
        record_keys = Keys(state)
        for table in TABLE_ROWS:
            rows = table_rows(state, table, record_keys)
            clock.lap("sort")
            db = getattr(tables, table)
            for chunk in chunks(rows, WRITE_CHUNK):

                def fill(txn: lmdb.Transaction, chunk: list[tuple[bytes, bytes]] = chunk,
                         db: lmdb._Database = db) -> int:
                    unchanged(txn)
                    return put_sorted(txn, db, chunk)

                keys += env.write(fill)
                resident.release(MAPPED)
                if progress is not None and len(chunk) == WRITE_CHUNK and keys < total:
                    progress("write", size * keys // max(total, 1), size)
            clock.lap("write")
        del state, record_keys
        if progress is not None:
            progress("write", size, size)
        segments = 0
        if folded < head:
            segments, changed = _fold_onto(binding, tables, folded, head, refused, unchanged, progress, clock)
            keys += changed

    def swap(txn: lmdb.Transaction) -> bool:
        if pointer.generation(txn) != live_now:
            return False
        unchanged(txn)
        with binding.log_in(txn) as reader:
            found = reader.get(head) if head else None
            tables.set_checkpoint(txn, head, 0 if found is None else mark(found))
            catch_up(reader, txn, tables, reader.head())
        pointer.set(txn, generation)
        for database in retired.databases():  # emptied, never deleted: handles stay valid in every process
            txn.drop(database, delete=False)
        return True

    if not env.write(swap):
        raise RebuildError("another rebuild swapped in its views first; nothing was changed")
    clock.lap("swap")
    return RebuildReport(generation, head, keys, time.perf_counter() - started, clock.phases, saved,
                         len(foreign or ()), segments, erasures)


def _fold_onto(
    binding: Binding,
    tables: Tables,
    folded: int,
    head: int,
    refused: int | None,
    unchanged: Callable[[lmdb.Transaction], None],
    progress: Progress | None,
    clock: _Clock,
) -> tuple[int, int]:
    """Fold the log after `folded` up to `head` onto the views written into `tables`, a `Segment`
    of at most `FOLD_RECORDS` records at a time, each written in transactions of `CHANGE_CHUNK`;
    return how many segments and how many keys they changed."""
    env = binding.env
    segments = changed = 0
    while folded < head:
        segments += 1
        with binding.read() as (reader, txn):
            _unerased(reader, refused)
            segment = Segment(LmdbState(txn, tables))
            clock.lap("decode")
            for batch in reader.batches(folded + 1, head, batch_size=FOLD_BATCH, slim=True):
                clock.lap("decode")
                forgetting = _forgetting(batch)
                if forgetting is not None:
                    batch = batch[: forgetting + 1]
                apply_all(segment, batch)
                folded = batch[-1].position
                clock.lap("fold")
                resident.release(MAPPED)
                if progress is not None:
                    progress("fold onto the written views", folded, head)
                if forgetting is not None or segment.size >= FOLD_RECORDS:
                    break
            else:
                folded = head
            clock.lap("decode")
            changes, forgotten = segment.changes(lambda: resident.release(MAPPED))
        del segment
        for table, rows in changes.items():
            db = getattr(tables, table)
            for chunk in chunks(iter(rows), CHANGE_CHUNK):

                def write(txn: lmdb.Transaction, chunk: list[tuple[bytes, bytes | None]] = chunk,
                          db: lmdb._Database = db) -> int:
                    unchanged(txn)
                    return put_changes(txn, db, chunk)

                changed += env.write(write)
                resident.release(MAPPED)
        if forgotten:  # purged from the name index once the segment is written (see `segment`)

            def forget(txn: lmdb.Transaction, forgotten: list[tuple[str, str]] = forgotten) -> None:
                unchanged(txn)
                state = LmdbState(txn, tables)
                for stream, workspace in forgotten:
                    state.forget_entity(stream, workspace)

            env.write(forget)
        del changes
        clock.lap("write")
    return segments, changed


def _forgetting(batch: Sequence[Envelope]) -> int | None:
    """Where in `batch` its first forgetting is, if any: it ends the segment (a segment purges
    what it forgot from the name index last, see `segment`)."""
    for i, envelope in enumerate(batch):
        if type(envelope.event) is EntityForgotten:
            return i
    return None


def _unerased(reader: LogReader, refused: int | None) -> None:
    """Fail the rebuild if the log's erasure count is no longer `refused` (None: any will do)."""
    if refused is not None and reader.erasures() != refused:
        raise RebuildError("an entity was forgotten while the views were folded from the log; nothing was changed")
