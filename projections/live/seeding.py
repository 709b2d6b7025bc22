"""A cache's views made into a seed, and a new cache's views made from one (see `postgres.seeds`).

A seed is every row of what a cache of a log elsewhere derived from it (the live views, the
snapshots, the search images, the vectors), at the views' checkpoint, in parts: each the
msgpack of `(database, rows)`, compressed with zstd and its checksum, about `PART_BYTES`
before compression. A new cache writes the parts in order, each in a transaction of its own
and appended in key order (the rows come out of LMDB sorted), into the slot of generation 1,
and makes it the live one last: killed halfway, it holds no views, and the next open starts
again. A part that fails its checksum or does not decode stops the load; the views are then
rebuilt from the log, as without a seed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import lmdb
import msgspec
import zstandard
from chronograph.eventstore import EventLog
from chronograph.projections.keys import VECTORS
from chronograph.projections.live.anchor import went_back
from chronograph.projections.live.binding import Binding, Colocated
from chronograph.projections.live.catchup import Progress
from chronograph.projections.past.snapshots import Snapshots
from chronograph.projections.search.indexes import SearchIndex
from chronograph.projections.tables import TABLES, VIEWS_FORMAT, Pointer, Tables

__all__ = ["GENERATION", "PART_BYTES", "SPACING", "TAG", "Abandoned", "CacheSeeds", "SeedError", "databases", "load",
           "parts"]

TAG = f"views.v{VIEWS_FORMAT} {Snapshots.NAME} {SearchIndex.NAME} {VECTORS} parts.1"
"""The layout of this version's seeds: a cache starts only from a seed of its own layout."""
PART_BYTES = 8 << 20
"""Rows per part, in bytes before compression (a larger row makes a part of its own)."""
SPACING = 100_000
"""Events the views move past the newest seed before a server keeps a new one: a new cache
then folds at most about this many after loading it."""
GENERATION = 1
"""The generation a seeded cache's views start at (a new cache's first)."""

_encode = msgspec.msgpack.encode
_decode = msgspec.msgpack.Decoder(tuple[str, list[tuple[bytes, bytes]]]).decode


class SeedError(Exception):
    """A seed could not be loaded (damaged, of another shape, or gone): the views are rebuilt."""


class Abandoned(Exception):
    """A seed being made was abandoned (see `parts`)."""


class CacheSeeds:
    """The seeds a cache of a log elsewhere starts from and keeps (none for an embedded store, or a
    log that keeps none), and the position of the newest this process knows of.

    `others()`: the databases besides the views' slot that a seed holds, by their names (asked each
    time: a reopened environment opens new handles, and a new `pointer`, which the views set)."""

    def __init__(self, log: EventLog, binding: Binding, env: Any, pointer: Pointer,
                 others: Callable[[], Mapping[str, lmdb._Database | None]]) -> None:
        self.seeds = None if isinstance(binding, Colocated) else getattr(log, "seeds", None)
        self.log = log
        self.env, self.pointer, self._others = env, pointer, others
        self.at: int | None = None
        """The newest seed's position this process knows (None: not looked)."""

    def start(self, tables: Tables, progress: Progress | None) -> Any:
        """Load the newest seed a new cache may trust into `tables` (generation `GENERATION`'s,
        made live); return it, or None (no seed, another process has the cache open, or it failed
        to load: the views are to be rebuilt). The caller catches the views up from its position."""
        seeds = self.seeds
        if seeds is None or (seed := seeds.newest(TAG)) is None:
            return None
        held = databases(tables, self._others())
        loaded = None if progress is None else (lambda parts: progress("seed", parts, seed.parts))
        with self.env.alone() as alone:  # openings of this cache that start meanwhile wait
            try:
                load(self.env, self.pointer, held, seeds.parts(seed), seed.position, seed.erasures, loaded,
                     alone=alone)
            except SeedError:
                return None
        self.at = seed.position
        return seed

    def keep(self, tables: Tables, spacing: int, stop: Callable[[], bool] | None) -> bool:
        """Keep a seed of the live views `tables` in the log if they stand `spacing` events or more
        past its newest; return whether one was kept. One read transaction of the cache holds the
        state while it is sent (writers are not held up); `stop` is asked between parts, and a True
        abandons it. The log is asked for its newest at most once per `spacing` events."""
        if self.seeds is None or self.env.readonly:
            return False
        with self.env.read() as txn:
            checkpoint = tables.checkpoint(txn)
        if self.at is not None and checkpoint < self.at + spacing:
            return False
        self.at = 0 if (newest := self.seeds.newest(TAG)) is None else newest.position
        if checkpoint < self.at + spacing:
            return False
        self.at, held = checkpoint, databases(tables, self._others())  # tried: kept or not, not again soon
        with self.env.read() as txn:
            erasures = self.pointer.erasures(txn)
            if self.pointer.generation(txn) != tables.generation or erasures is None:
                return False
            position = tables.checkpoint(txn)
            with self.log.read() as log:  # views of a log that went back under them are not offered to new caches
                if went_back(log, position, tables.anchor(txn)) is not None:
                    return False
            try:
                return bool(self.seeds.keep(TAG, position, erasures, parts(txn, held, stop), spacing))
            except Abandoned:
                return False


def databases(tables: Tables, others: Mapping[str, lmdb._Database | None]) -> dict[str, lmdb._Database]:
    """The databases a seed holds, by the name it gives them: a slot's tables by their table name
    (a seed fills whichever slot), the others (snapshots, search images, vectors) by their own."""
    found = dict(zip(TABLES, tables.databases(), strict=True))
    found.update((name, db) for name, db in others.items() if db is not None)
    return found


def parts(txn: lmdb.Transaction, held: Mapping[str, lmdb._Database],
          stop: Callable[[], bool] | None = None) -> Iterator[bytes]:
    """The parts of a seed of what `held` holds in `txn` (a read transaction, open while they are
    made: the seed is one consistent state); `stop` is asked before each.

    Raises:
        Abandoned: When `stop` says so.
    """
    for part in _parts(txn, held):
        if stop is not None and stop():
            raise Abandoned
        yield part


def _parts(txn: lmdb.Transaction, held: Mapping[str, lmdb._Database]) -> Iterator[bytes]:
    compress = zstandard.ZstdCompressor(level=1, write_checksum=True).compress
    for name, db in held.items():
        rows: list[tuple[bytes, bytes]] = []
        size = 0
        with txn.cursor(db) as cursor:
            for key, value in cursor.iternext():
                rows.append((bytes(key), bytes(value)))
                size += len(key) + len(value)
                if size >= PART_BYTES:
                    yield compress(_encode((name, rows)))
                    rows, size = [], 0
        if rows:
            yield compress(_encode((name, rows)))


def load(
    env: object,
    pointer: Pointer,
    held: Mapping[str, lmdb._Database],
    seed_parts: Iterable[bytes],
    position: int,
    erasures: int,
    progress: Callable[[int], None] | None = None,
    *,
    alone: bool = True,
) -> int:
    """Write a seed's parts into the empty databases of `held` (those of generation `GENERATION`'s
    slot, and the others; `progress(parts written)` after each) and make that generation live,
    with the seed's erasure count; return how many rows it wrote. `env` is the views' `LmdbEnv`.

    Raises:
        SeedError: If another process has the cache open (`alone` is False: the two would fill
            one slot), or a part is damaged or not of this layout, the seed is gone (`LookupError` from
            `seed_parts`), the views' checkpoint in it is not the seed's position, or views were
            made meanwhile (by another process on this cache); what it wrote is emptied again.
    """
    if not alone:
        raise SeedError("another process has the cache open")
    write = env.write  # type: ignore[attr-defined]

    def still_new(txn: lmdb.Transaction) -> None:
        if pointer.generation(txn) != 0:
            raise SeedError("views were made meanwhile")

    def empty(txn: lmdb.Transaction) -> None:
        if pointer.generation(txn) == 0:
            for db in held.values():
                txn.drop(db, delete=False)

    def live(txn: lmdb.Transaction) -> None:
        still_new(txn)
        checkpoint = Tables(GENERATION, *(held[table] for table in TABLES)).checkpoint(txn)
        if checkpoint != position:
            raise SeedError(f"the seed's views stand at {checkpoint}, not at its position {position}")
        pointer.set(txn, GENERATION)
        pointer.set_erasures(txn, erasures)

    def begin(txn: lmdb.Transaction) -> None:
        still_new(txn)
        empty(txn)

    try:
        write(begin)
        rows = _fill(write, still_new, held, seed_parts, progress)
        write(live)
    except (SeedError, LookupError) as error:
        write(empty)
        raise SeedError(str(error)) from None
    return rows


def _fill(write: Callable[..., int], still_new: Callable[[lmdb.Transaction], None],
          held: Mapping[str, lmdb._Database], seed_parts: Iterable[bytes],
          progress: Callable[[int], None] | None) -> int:
    """Append each part's rows to its database, a write transaction each; return how many."""
    decompress = zstandard.ZstdDecompressor().decompress
    rows = 0
    for done, part in enumerate(seed_parts, 1):
        try:
            name, items = _decode(decompress(part))
        except (zstandard.ZstdError, msgspec.DecodeError, msgspec.ValidationError) as error:
            raise SeedError(f"a part of the seed is damaged: {error}") from None
        db = held.get(name)
        if db is None:
            raise SeedError(f"the seed holds a database this version does not ({name})")

        def put(txn: lmdb.Transaction, db: lmdb._Database = db, items: list[tuple[bytes, bytes]] = items) -> int:
            still_new(txn)
            with txn.cursor(db) as cursor:
                return int(cursor.putmulti(items, append=True)[1])

        added = write(put)
        if added != len(items):
            raise SeedError(f"the seed's rows of {name} are out of order")
        rows += added
        if progress is not None:
            progress(done)
    return rows
