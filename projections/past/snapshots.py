"""Snapshots: the folded graph saved at a log position, so time travel folds from there.

The log before a position never changes, so a snapshot never goes stale; it is only
ignored when the fold's shape changed (another `SNAPSHOT_FORMAT`, kept in a database of
its own so that versions with different shapes can share a store). Snapshots are taken
every `SPACING` events by rebuilds and by as-of folds that pass such a position, and at
most `KEEP` are kept, spread over the log. Without them, the graph as of the middle of a
million-event log costs a fold of half a million events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import overload

import lmdb
import msgspec
from chronograph.eventstore import EventLog, EventStoreError, LmdbEnv
from chronograph.eventstore.keys import Stored, pack_u64, unpack_u64
from chronograph.projections.records import ContextRecord, EntityRecord, RelationRecord
from chronograph.projections.sealed import encode_sealed, encode_sealed_into, sound
from chronograph.projections.states.dictstate import DictState, paused_gc

__all__ = ["KEEP", "SPACING", "Snapshots", "encode", "fold_to"]

SNAPSHOT_FORMAT = 3
"""3: sealed with a checksum (see `projections.sealed`); a damaged snapshot is passed over."""
SPACING = 100_000
"""Events between snapshot positions."""
KEEP = 8
"""Snapshots kept at most; beyond, the one whose loss leaves the smallest gap goes."""
SMALL = 4 << 20
"""A snapshot up to this size is always worth keeping."""
BYTES_PER_EVENT = 128
"""Beyond `SMALL`, a snapshot is kept only if it takes at most this many bytes per event it
saves folding. The log takes about 250 bytes an event: a snapshot larger than half of that
costs about as much room as the log it stands for, and a graph of a million entities made
eight such snapshots of up to a gigabyte each (the store doubled at a rebuild). A log that
mostly creates things (an import: 147 bytes of snapshot per event at 50k entities) keeps
none; one that mostly changes them (the benchmarks' mix: about 107) keeps them."""


class _Snapshot(msgspec.Struct, array_like=True, gc=False):
    format: int
    position: int
    entities: list[EntityRecord]
    relations: list[RelationRecord]
    contexts: list[ContextRecord]
    names: list[tuple[str, str, list[str | None]]]
    seen: list[str]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(_Snapshot)


class Snapshots:
    """The snapshots of one log, kept in an LMDB environment (its `snapshots.v<format>` database)."""

    NAME = f"snapshots.v{SNAPSHOT_FORMAT}"

    def __init__(
        self,
        env: LmdbEnv,
        spacing: int = SPACING,
        keep: int = KEEP,
        *,
        erasures_in: Callable[[lmdb.Transaction], int] | None = None,
    ) -> None:
        self.env = env
        self.spacing = spacing
        self.keep = keep
        self.erasures_in = erasures_in
        """The log's erasure count in a transaction: a fold made at another count is not saved."""
        absent = env.readonly and self.NAME not in env.database_names()
        self.db = None if absent else env.open_db(self.NAME)

    def positions(self) -> list[int]:
        """The positions that have a snapshot, ascending."""
        if self.db is None:
            return []
        with self.env.read() as txn, txn.cursor(self.db) as cursor:
            return [unpack_u64(key) for key in cursor.iternext(values=False)]

    def nearest(self, position: int) -> DictState:
        """The state of the latest snapshot at or before `position` (empty when there is none)."""
        if self.db is not None:
            with self.env.read() as txn, txn.cursor(self.db) as cursor:
                found = cursor.set_range(pack_u64(position + 1))
                found = cursor.prev() if found else cursor.last()
                while found:  # the latest one that is whole (a damaged one is as if never taken)
                    value = cursor.value()
                    snapshot = _decoded(value) if sound(value) else None
                    if snapshot is not None and snapshot.format == SNAPSHOT_FORMAT:
                        return _restore(snapshot)
                    found = cursor.prev()
        return DictState()

    @property
    def writable(self) -> bool:
        """Whether snapshots can be saved (not on a read-only store)."""
        return self.db is not None and not self.env.readonly

    def has(self, position: int) -> bool:
        """Whether a whole snapshot of this format is kept at `position` (the log before a
        position never changes, so it never needs taking again)."""
        if self.db is None:
            return False
        with self.env.read() as txn:
            value = txn.get(pack_u64(position), db=self.db)
        return value is not None and sound(value) and _decoded_format(value) == SNAPSHOT_FORMAT

    def worth_keeping(self, data: bytes | bytearray, position: int) -> bool:
        """Whether a snapshot of `len(data)` bytes at `position` saves more than it costs."""
        return len(data) <= max(SMALL, BYTES_PER_EVENT * position)

    def save(self, state: DictState) -> None:
        """Keep `state` as the snapshot at its position (ignored on a read-only store)."""
        if self.writable and state.position:
            self.save_encoded(state.position, encode(state))

    def save_encoded(self, position: int, data: bytes | bytearray, erasures: int | None = None) -> None:
        """Keep an `encode`d state as the snapshot at `position`; call outside any transaction.

        A state folded while the log's erasure count was `erasures` is not kept once it has
        moved: the fold may hold what was erased since.
        """
        def write(txn: lmdb.Transaction) -> None:
            db = self.db
            assert db is not None
            if erasures is not None and self.erasures_in is not None and self.erasures_in(txn) != erasures:
                return
            txn.put(pack_u64(position), data, db=db)
            with txn.cursor(db) as cursor:
                kept = [unpack_u64(k) for k in cursor.iternext(values=False)]
            while len(kept) > self.keep:
                gaps = [kept[i + 1] - kept[i - 1] for i in range(1, len(kept) - 1)]
                drop = kept.pop(1 + gaps.index(min(gaps)))
                txn.delete(pack_u64(drop), db=db)

        self.env.write(write)

    def drop_from(self, txn: lmdb.Transaction, position: int) -> None:
        """Delete the snapshots at `position` and after (they hold what an erasure removed)."""
        if self.db is None:
            return
        with txn.cursor(self.db) as cursor:
            doomed = [bytes(key) for key in cursor.iternext(values=False) if unpack_u64(key) >= position]
        for key in doomed:
            txn.delete(key, db=self.db)


def fold_to(log: EventLog, snapshots: Snapshots, position: int) -> DictState:
    """The graph after the event at `position`: the nearest snapshot, then the log from it.

    Passing a multiple of SPACING more than SPACING events after the snapshot saves one there.
    """
    pending: list[tuple[int, bytes]] = []
    with log.read() as reader, paused_gc():
        erasures = reader.erasures()
        last = min(position, reader.head())
        state = snapshots.nearest(last)
        base = state.position
        start = state.position + 1
        for stop in _stops(base, last, snapshots.spacing):
            for batch in reader.batches(start, stop, batch_size=4096, slim=True):
                state.fold(batch)
            state.position = stop
            if snapshots.writable and stop % snapshots.spacing == 0 and stop - base >= snapshots.spacing:
                data = encode(state)
                if snapshots.worth_keeping(data, stop):
                    pending.append((stop, data))  # saved once the read snapshot is closed
                base = stop
            start = stop + 1
    for stop, data in pending:
        try:
            snapshots.save_encoded(stop, data, erasures)
        except EventStoreError:  # a snapshot only shortens the next fold: the answer stands
            break
    return state


def _stops(after: int, last: int, spacing: int) -> list[int]:
    """The multiples of `spacing` in (after, last), then last."""
    first = (after // spacing + 1) * spacing
    return [*range(first, last, spacing), last] if last > after else []


@overload
def encode(state: DictState) -> bytes: ...
@overload
def encode(state: DictState, into: bytearray) -> bytearray: ...


def encode(state: DictState, into: bytearray | None = None) -> bytes | bytearray:
    """The snapshot bytes of `state` as it is now; with `into`, written over that buffer, which is
    returned (see `sealed.encode_sealed_into`: a rebuild reuses one for all its snapshots)."""
    names = [(ws, name, known) for (ws, name), known in state._names.items()]  # noqa: SLF001
    snapshot = _Snapshot(
        SNAPSHOT_FORMAT, state.position, list(state.entities.values()), list(state.relations.values()),
        list(state.contexts.values()), names, list(state._seen),  # noqa: SLF001
    )
    return encode_sealed(_encoder, snapshot) if into is None else encode_sealed_into(_encoder, snapshot, into)


def _decoded(body: Stored) -> _Snapshot | None:
    try:
        return _decoder.decode(body)
    except msgspec.DecodeError:  # passed its checksum, yet unreadable: another shape
        return None


class _Format(msgspec.Struct, array_like=True):
    format: int


_format_decoder = msgspec.msgpack.Decoder(_Format)


def _decoded_format(body: Stored) -> int | None:
    try:
        return _format_decoder.decode(body).format
    except msgspec.DecodeError:
        return None


def _restore(snapshot: _Snapshot) -> DictState:
    state = DictState()
    state.entities.update({e.stream: e for e in snapshot.entities})
    state.relations.update({r.stream: r for r in snapshot.relations})
    state.contexts.update({c.workspace: c for c in snapshot.contexts})
    state._names.update({(ws, name): known for ws, name, known in snapshot.names})  # noqa: SLF001
    state._seen.update(dict.fromkeys(snapshot.seen))  # noqa: SLF001
    state.position = snapshot.position
    return state
