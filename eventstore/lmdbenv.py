"""One LMDB environment: a directory that processes share, growing itself when it fills.

The log (`LmdbLog`) keeps its databases here, and so do the views folded from it when
they sit beside the log; a log elsewhere (PostgreSQL) keeps its views in an environment
of their own. Write transactions are serialised by LMDB across processes; a full map
grows and the whole transaction is run again, so callers never see half a write.
"""

from __future__ import annotations

import errno
import os
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import lmdb
from chronograph.eventstore.errors import EventStoreError, StorageFullError, StoreCorruptError, StoreOpenError

__all__ = ["DEFAULT_MAP_SIZE", "DATA_FILE", "LmdbEnv"]

T = TypeVar("T")

DEFAULT_MAP_SIZE = 64 << 20
"""Initial map size; the map doubles whenever it fills."""
MAX_DATABASES = 64
DATA_FILE = "data.mdb"
_FAILING_DISK = ("Input/output error", "No space left", "Disk quota exceeded")
"""What LMDB says when a commit cannot reach the disk (it reports some as plain errors)."""


class LmdbEnv:
    """An LMDB environment at `path` (a directory), opened for this process.

    Raises (on construction):
        StoreOpenError: If `path` cannot be used (missing when not creating, a file, not
            empty and not an environment, unreadable, locked).
        StoreCorruptError: If the files are damaged or are not LMDB.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        sync: bool = True,
        map_size: int = DEFAULT_MAP_SIZE,
        max_map_size: int | None = None,
        readonly: bool = False,
        create: bool = True,
    ) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self.max_map_size = max_map_size
        if max_map_size is not None:
            map_size = min(map_size, max_map_size)
        self.fresh = self._check_path(create=create and not readonly)
        """True when this opening created the environment."""
        if not self.fresh:
            check_data_file(self.path / DATA_FILE)
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
                create=self.fresh,
                readahead=False,
            )
        except (lmdb.InvalidError, lmdb.CorruptedError, lmdb.VersionMismatchError) as error:
            raise StoreCorruptError(f"{self.path} is not a readable LMDB store: {error}") from None
        except lmdb.Error as error:
            raise StoreOpenError(f"cannot open the store at {self.path}: {error}") from None
        try:
            self.stale_readers_cleared = self.env.reader_check()
            """Reader slots of dead processes that opening this environment released."""
        except BaseException:
            self.env.close()
            raise

    # --- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the environment; it cannot be used afterwards."""
        self.env.close()

    def _check_path(self, *, create: bool) -> bool:
        if self.path.exists() and not self.path.is_dir():
            raise StoreOpenError(f"{self.path} is a file; a store is a directory")
        if (self.path / DATA_FILE).exists():
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

    def check_room(self) -> None:
        """Refuse to take more once the data file has reached the size ceiling.

        The map alone cannot hold the ceiling when a store is already larger than it (a
        ceiling lowered after the fact): the file size is checked before every append.

        Raises:
            StorageFullError: If the data file is at or over `max_map_size`.
        """
        if self.max_map_size is not None and (size := self.file_bytes()) >= self.max_map_size:
            raise StorageFullError(
                f"the store at {self.path} takes {size:,} bytes, at or over its size ceiling of "
                f"{self.max_map_size:,}; no write is taken, deletions included (every change is appended). "
                "Raise the ceiling (--max-size) to write again; reads go on"
            )

    def file_bytes(self) -> int:
        """The size of the data file on disk."""
        try:
            return (self.path / DATA_FILE).stat().st_size
        except OSError:
            return 0

    # --- databases ------------------------------------------------------------------------

    def open_db(self, name: str, *, dupsort: bool = False, create: bool = True) -> lmdb._Database:
        """Open (creating if needed) a named database; call it outside any transaction.

        Raises:
            lmdb.NotFoundError: If the database does not exist and may not be created.
        """
        return self.env.open_db(name.encode(), dupsort=dupsort, create=create and not self.readonly)

    def database_names(self) -> list[str]:
        """The names of every named database in the environment."""
        with self.read() as txn:
            return [bytes(name).decode() for name, _ in txn.cursor()]

    # --- transactions ---------------------------------------------------------------------

    def write(self, work: Callable[[lmdb.Transaction], T]) -> T:
        """Run `work` in one write transaction and commit it; abort it if `work` raises.

        A full map is grown and `work` is run again from the start, so it must decide
        everything from what it reads in the transaction it is given.

        Raises:
            StorageFullError: If the disk or `max_map_size` leaves no room; nothing is written.
        """
        if self.readonly:
            raise EventStoreError(f"the store at {self.path} is open read-only")
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
            except lmdb.Error as error:
                txn.abort()
                if any(sign in str(error) for sign in _FAILING_DISK):
                    raise StorageFullError(
                        f"the disk holding {self.path} is full or failing ({error}); nothing was written. "
                        "Free some space (or check the disk) and retry"
                    ) from None
                raise
            except BaseException:
                txn.abort()
                raise

    @contextmanager
    def read(self) -> Iterator[lmdb.Transaction]:
        """A read-only snapshot of the environment for the duration of the `with` block."""
        try:
            txn = self.env.begin()
        except lmdb.MapResizedError:
            self.env.set_mapsize(0)
            txn = self.env.begin()
        try:
            yield txn
        finally:
            txn.abort()

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


_META = struct.Struct("<II8xQI44x48xQQ")
"""An LMDB meta page after its 16-byte page header (64-bit builds): magic, version,
(address), map size, page size (the free database's md_pad), (the rest of both
databases), last page number, transaction id."""
_MAGIC = 0xBEEFC0DE


def check_data_file(path: Path) -> None:
    """Refuse a data file shorter than its own newest meta page says it is.

    LMDB maps the file and would die of SIGBUS reading a page past its end (a file cut
    short by a bad copy or a full disk), so the length is checked before it is mapped.

    Raises:
        StoreCorruptError: If the file is truncated or its meta pages are unreadable.
    """
    try:
        with path.open("rb") as file:
            first = file.read(16 + _META.size)
            magic, _, _, page_size, last_page, txnid = _META.unpack_from(first, 16)
            if magic != _MAGIC or page_size < 512 or page_size & (page_size - 1):
                raise StoreCorruptError(f"{path} is not an LMDB data file (its first page is not a meta page)")
            file.seek(page_size)
            second = file.read(16 + _META.size)
            size = os.fstat(file.fileno()).st_size
    except OSError as error:
        raise StoreOpenError(f"cannot read {path}: {error.strerror}") from None
    except struct.error:
        raise StoreCorruptError(f"{path} is truncated: {len(first)} bytes, shorter than its meta pages") from None
    if len(second) == 16 + _META.size:
        other = _META.unpack_from(second, 16)
        if other[0] == _MAGIC and other[5] > txnid:
            last_page = other[4]
    needed = (last_page + 1) * page_size
    if size < needed:
        raise StoreCorruptError(
            f"{path} is truncated: {size:,} bytes where its last commit needs {needed:,}; "
            "restore the store from a backup"
        )
