"""The event store: one LMDB environment holding the log, shared safely by many processes.

Writes run in `transact`, one LMDB write transaction that LMDB serialises across
processes; a full map grows and the whole transaction is retried, so callers never see
half a write. Commits are synchronous by default: an acknowledged append survives a
power loss.
"""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import lmdb

from eventstore.codec import Codec, Envelope
from eventstore.errors import (
    EventStoreError,
    StorageFullError,
    StoreCorruptError,
    StoreFormatError,
    StoreOpenError,
)
from eventstore.keys import pack_u32, unpack_u32
from eventstore.reader import Databases, Reader
from eventstore.writer import InlineHook, Transaction
from eventstore.writes import AppendResult, StreamWrite

__all__ = ["DEFAULT_MAP_SIZE", "FORMAT_VERSION", "EventStore"]

T = TypeVar("T")

FORMAT_VERSION = 1
"""On-disk format this code writes; a store with a higher one is refused, never guessed at."""
DEFAULT_MAP_SIZE = 64 << 20
"""Initial map size; the map doubles whenever it fills."""
MAX_DATABASES = 64

_LOG_DATABASES = (b"log", b"streams", b"heads", b"idempotency", b"meta")
_FORMAT = b"format"
_STORE_ID = b"store_id"
_DATA_FILE = "data.mdb"


class EventStore:
    """An append-only log of events in an LMDB environment at `path` (a directory).

    Raises (on construction):
        StoreOpenError: If `path` cannot be used (missing when not creating, not a
            directory, not empty and not a store, unreadable).
        StoreCorruptError: If the files are damaged or are not a Chronograph store.
        StoreFormatError: If a newer version of Chronograph wrote the store.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        codec: Codec | None = None,
        sync: bool = True,
        map_size: int = DEFAULT_MAP_SIZE,
        max_map_size: int | None = None,
        readonly: bool = False,
        create: bool = True,
    ) -> None:
        self.path = Path(path)
        self.codec = codec or Codec()
        self.readonly = readonly
        self.max_map_size = max_map_size
        if max_map_size is not None:
            map_size = min(map_size, max_map_size)
        self._hooks: list[InlineHook] = []
        fresh = self._check_path(create=create and not readonly)
        try:
            self.env = lmdb.open(
                str(self.path),
                map_size=map_size,
                max_dbs=MAX_DATABASES,
                max_readers=256,
                max_spare_txns=1,
                sync=sync,
                metasync=sync,
                readonly=readonly,
                create=fresh,
                readahead=False,
            )
        except (lmdb.InvalidError, lmdb.CorruptedError, lmdb.VersionMismatchError) as error:
            raise StoreCorruptError(f"{self.path} is not a readable LMDB store: {error}") from None
        except lmdb.Error as error:
            raise StoreOpenError(f"cannot open the store at {self.path}: {error}") from None
        try:
            self.stale_readers_cleared = self.env.reader_check()
            """Reader slots of dead processes that opening this store released."""
            self.dbs = self._open_log(fresh)
        except BaseException:
            self.env.close()
            raise

    # --- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the environment; the store object cannot be used afterwards."""
        self.env.close()

    def __enter__(self) -> EventStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _check_path(self, *, create: bool) -> bool:
        if self.path.exists() and not self.path.is_dir():
            raise StoreOpenError(f"{self.path} is a file; a store is a directory")
        if (self.path / _DATA_FILE).exists():
            return False
        if not create:
            raise StoreOpenError(f"there is no store at {self.path}")
        if self.path.exists() and any(self.path.iterdir()):
            raise StoreOpenError(
                f"{self.path} is not empty and holds no Chronograph store; "
                "choose an empty or new directory"
            )
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreOpenError(f"cannot create the store at {self.path}: {error.strerror}") from None
        return True

    def _open_log(self, fresh: bool) -> Databases:
        names = _LOG_DATABASES
        try:
            if fresh:
                return self._with_growth(self._create_log)
            with self._begin() as txn:
                existing = {name for name, _ in txn.cursor()}
            if not set(names) <= existing:
                raise StoreCorruptError(
                    f"{self.path} holds an LMDB environment that is not a Chronograph store"
                )
            dbs = Databases(*(self.env.open_db(name, create=False) for name in names))
            with self._begin() as txn:
                self._check_format(txn, dbs)
                self._check_tail(Reader(txn, self.codec, dbs))
            return dbs
        except lmdb.Error as error:
            raise StoreCorruptError(f"{self.path} is damaged: {error}") from None

    def _create_log(self, txn: lmdb.Transaction) -> Databases:
        dbs = Databases(*(self.env.open_db(name, txn=txn) for name in _LOG_DATABASES))
        txn.put(_FORMAT, pack_u32(FORMAT_VERSION), db=dbs.meta)
        txn.put(_STORE_ID, uuid.uuid4().hex.encode(), db=dbs.meta)
        return dbs

    def _check_tail(self, reader: Reader) -> None:
        head = reader.head()
        newest = reader.get(head) if head else None
        if newest is not None and newest.position != head:
            raise StoreCorruptError(
                f"{self.path} is damaged: the event stored at position {head} "
                f"claims position {newest.position}"
            )

    def _check_format(self, txn: lmdb.Transaction, dbs: Databases) -> None:
        value = txn.get(_FORMAT, db=dbs.meta)
        if value is None or len(value) != 4:
            raise StoreCorruptError(f"{self.path} has no readable format version")
        version = unpack_u32(value)
        if version > FORMAT_VERSION:
            raise StoreFormatError(
                f"{self.path} was written in store format {version}, newer than this "
                f"Chronograph reads ({FORMAT_VERSION}); upgrade Chronograph"
            )

    # --- extension points for higher layers -----------------------------------------------

    def open_db(self, name: str, *, dupsort: bool = False, create: bool = True) -> lmdb._Database:
        """Open (creating if needed) a named database; call it outside any transaction.

        Raises:
            lmdb.NotFoundError: If the database does not exist and may not be created.
        """
        return self.env.open_db(name.encode(), dupsort=dupsort, create=create and not self.readonly)

    def database_names(self) -> list[str]:
        """The names of every named database in the environment."""
        with self._begin() as txn:
            return [name.decode() for name, _ in txn.cursor()]

    def add_inline_hook(self, hook: InlineHook) -> None:
        """Run `hook(tx, envelopes)` inside the write transaction of every append."""
        self._hooks.append(hook)

    # --- writing --------------------------------------------------------------------------

    def transact(self, work: Callable[[Transaction], T]) -> T:
        """Run `work` in one write transaction and commit it; abort it if `work` raises.

        A full map is grown and `work` is run again from the start, so it must decide
        everything from what it reads in the transaction it is given.

        Raises:
            StorageFullError: If the disk or `max_map_size` leaves no room; nothing is written.
        """
        if self.readonly:
            raise EventStoreError(f"the store at {self.path} is open read-only")
        return self._with_growth(
            lambda txn: work(Transaction(txn, self.codec, self.dbs, self._hooks))
        )

    def _with_growth(self, work: Callable[[lmdb.Transaction], T]) -> T:
        while True:
            txn = self._begin_write()
            try:
                outcome = work(txn)
                txn.commit()
                return outcome
            except lmdb.MapFullError:
                txn.abort()
                self._grow()
            except lmdb.DiskError:
                txn.abort()
                raise StorageFullError(
                    f"the disk holding {self.path} is full; nothing was written. "
                    "Free some space and retry"
                ) from None
            except BaseException:
                txn.abort()
                raise

    def append(
        self,
        writes: Sequence[StreamWrite],
        *,
        actor: str,
        correlation_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> AppendResult:
        """Append to one or more streams in one transaction (see `Transaction.append`).

        Raises:
            ConcurrencyError: If a stream is not at its expected version.
            IdempotencyConflictError: If the key was used for different writes.
            StorageFullError: If there is no room left; nothing is written.
        """
        return self.transact(
            lambda tx: tx.append(
                writes, actor=actor, correlation_id=correlation_id, idempotency_key=idempotency_key
            )
        )

    def _begin_write(self) -> lmdb.Transaction:
        try:
            return self.env.begin(write=True)
        except lmdb.MapResizedError:
            self.env.set_mapsize(0)
            return self.env.begin(write=True)

    def _grow(self) -> None:
        current = self.env.info()["map_size"]
        target = current * 2
        if self.max_map_size is not None:
            if current >= self.max_map_size:
                raise StorageFullError(
                    f"the store at {self.path} reached its size ceiling of {self.max_map_size} "
                    "bytes; nothing was written. Raise the ceiling to write more"
                )
            target = min(target, self.max_map_size)
        try:
            self.env.set_mapsize(target)
        except lmdb.Error as error:
            if getattr(error, "errno", None) == errno.ENOSPC:
                raise StorageFullError(f"no room to grow the store at {self.path}") from None
            raise

    # --- reading --------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[Reader]:
        """A read-only snapshot of the store for the duration of the `with` block."""
        with self._begin() as txn:
            yield Reader(txn, self.codec, self.dbs)

    def head(self) -> int:
        """The position of the newest event (0 for an empty log)."""
        with self.read() as reader:
            return reader.head()

    def stream_version(self, stream: str) -> int:
        """The current version of `stream` (0 when it has no events)."""
        with self.read() as reader:
            return reader.stream_version(stream)

    def read_stream(
        self, stream: str, from_version: int = 1, to_version: int | None = None
    ) -> list[Envelope]:
        """The events of one stream, oldest first."""
        with self.read() as reader:
            return list(reader.stream(stream, from_version, to_version))

    def read_all(
        self, from_position: int = 1, to_position: int | None = None, batch_size: int = 1024
    ) -> Iterator[Envelope]:
        """Every event in a position range from one snapshot, decoded a batch at a time."""
        with self.read() as reader:
            yield from reader.all(from_position, to_position, batch_size)

    def position_at(self, recorded_at: int) -> int:
        """The last position recorded at or before `recorded_at` (µs since epoch), 0 if none."""
        with self.read() as reader:
            return reader.position_at(recorded_at)

    @contextmanager
    def _begin(self) -> Iterator[lmdb.Transaction]:
        try:
            txn = self.env.begin()
        except lmdb.MapResizedError:
            self.env.set_mapsize(0)
            txn = self.env.begin()
        try:
            yield txn
        finally:
            txn.abort()
