"""Snapshots: the folded graph saved at a log position, so time travel folds from there.

The log before a position never changes, so a snapshot never goes stale; it is only
ignored when the fold's shape changed (another `SNAPSHOT_FORMAT`). Snapshots are taken
every `SPACING` events by rebuilds and by as-of folds that pass such a position, and at
most `KEEP` are kept, spread over the log. Without them, the graph as of the middle of a
million-event log costs a fold of half a million events.
"""

from __future__ import annotations

import msgspec

from eventstore import EventStore, Reader
from eventstore.keys import pack_u64, unpack_u64
from projections.memory import MemoryState, paused_gc
from projections.working import Context, Entity, Relation

__all__ = ["KEEP", "SPACING", "Snapshots", "encode", "fold_to"]

SNAPSHOT_FORMAT = 1
SPACING = 100_000
"""Events between snapshot positions."""
KEEP = 8
"""Snapshots kept at most; beyond, the one whose loss leaves the smallest gap goes."""


class _Snapshot(msgspec.Struct, array_like=True, gc=False):
    format: int
    position: int
    entities: list[Entity]
    relations: list[Relation]
    contexts: list[Context]
    names: list[tuple[str, str, list[str | None]]]
    seen: list[str]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(_Snapshot)


class Snapshots:
    """The snapshots of one store (its `snapshots` database)."""

    def __init__(self, store: EventStore, spacing: int = SPACING, keep: int = KEEP) -> None:
        self.store = store
        self.spacing = spacing
        self.keep = keep
        absent = store.readonly and "snapshots" not in store.database_names()
        self.db = None if absent else store.open_db("snapshots")

    def positions(self, reader: Reader) -> list[int]:
        """The positions that have a snapshot, ascending."""
        if self.db is None:
            return []
        with reader.txn.cursor(self.db) as cursor:
            return [unpack_u64(key) for key in cursor.iternext(values=False)]

    def nearest(self, reader: Reader, position: int) -> MemoryState:
        """The state of the latest snapshot at or before `position` (empty when there is none)."""
        if self.db is not None:
            with reader.txn.cursor(self.db) as cursor:
                found = cursor.set_range(pack_u64(position + 1))
                found = cursor.prev() if found else cursor.last()
                if found:
                    snapshot = _decoder.decode(cursor.value())
                    if snapshot.format == SNAPSHOT_FORMAT:
                        return _restore(snapshot)
        return MemoryState()

    @property
    def writable(self) -> bool:
        """Whether snapshots can be saved (not on a read-only store)."""
        return self.db is not None and not self.store.readonly

    def save(self, state: MemoryState) -> None:
        """Keep `state` as the snapshot at its position (ignored on a read-only store)."""
        if self.writable and state.position:
            self.save_encoded(state.position, encode(state))

    def save_encoded(self, position: int, data: bytes) -> None:
        """Keep an `encode`d state as the snapshot at `position`; call outside any transaction."""
        db = self.db
        assert db is not None

        def write(tx) -> None:  # type: ignore[no-untyped-def]
            tx.txn.put(pack_u64(position), data, db=db)
            with tx.txn.cursor(db) as cursor:
                kept = [unpack_u64(k) for k in cursor.iternext(values=False)]
            while len(kept) > self.keep:
                gaps = [kept[i + 1] - kept[i - 1] for i in range(1, len(kept) - 1)]
                drop = kept.pop(1 + gaps.index(min(gaps)))
                tx.txn.delete(pack_u64(drop), db=db)

        self.store.transact(write)


def fold_to(store: EventStore, snapshots: Snapshots, position: int) -> MemoryState:
    """The graph after the event at `position`: the nearest snapshot, then the log from it.

    Passing a multiple of SPACING more than SPACING events after the snapshot saves one there.
    """
    pending: list[tuple[int, bytes]] = []
    with store.read() as reader, paused_gc():
        last = min(position, reader.head())
        state = snapshots.nearest(reader, last)
        base = state.position
        start = state.position + 1
        for stop in _stops(base, last, snapshots.spacing):
            for batch in reader.batches(start, stop, batch_size=4096, slim=True):
                state.fold(batch)
            state.position = stop
            if snapshots.writable and stop % snapshots.spacing == 0 and stop - base >= snapshots.spacing:
                pending.append((stop, encode(state)))  # saved once the read snapshot is closed
                base = stop
            start = stop + 1
    for stop, data in pending:
        snapshots.save_encoded(stop, data)
    return state


def _stops(after: int, last: int, spacing: int) -> list[int]:
    """The multiples of `spacing` in (after, last), then last."""
    first = (after // spacing + 1) * spacing
    return [*range(first, last, spacing), last] if last > after else []


def encode(state: MemoryState) -> bytes:
    """The snapshot bytes of `state` as it is now."""
    names = [(ws, name, known) for (ws, name), known in state._names.items()]  # noqa: SLF001
    return _encoder.encode(_Snapshot(
        SNAPSHOT_FORMAT, state.position, list(state.entities.values()), list(state.relations.values()),
        list(state.contexts.values()), names, list(state._seen),  # noqa: SLF001
    ))


def _restore(snapshot: _Snapshot) -> MemoryState:
    state = MemoryState()
    state.entities.update({e.stream: e for e in snapshot.entities})
    state.relations.update({r.stream: r for r in snapshot.relations})
    state.contexts.update({c.workspace: c for c in snapshot.contexts})
    state._names.update({(ws, name): known for ws, name, known in snapshot.names})  # noqa: SLF001
    state._seen.update(dict.fromkeys(snapshot.seen))  # noqa: SLF001
    state.position = snapshot.position
    return state
