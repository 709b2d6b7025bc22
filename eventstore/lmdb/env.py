"""One LMDB environment: a directory that processes share, growing itself when it fills.

The log (`LmdbLog`) keeps its databases here, and so do the views folded from it when
they sit beside the log; a log elsewhere (PostgreSQL) keeps its views in an environment
of their own. Write transactions are serialised by LMDB across processes; a full map
grows and the whole transaction is run again, so callers never see half a write.
Threads of a process use it at once: every transaction passes its `Gate`, which lets a
remap of the file (growing, reopening, closing) happen only while none is open.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypedDict, TypeVar

import lmdb
from chronograph.eventstore.errors import (
    EventStoreError,
    StorageFullError,
    StoreCorruptError,
    StoreOpenError,
    StoreWriteError,
    advised,
)
from chronograph.eventstore.files import DATA_FILE, LOCK_FILE
from chronograph.eventstore.lmdb.datafile import Tail, check_data_file
from chronograph.eventstore.lmdb.failures import cause, refused, why
from chronograph.eventstore.lmdb.gate import Gate
from chronograph.eventstore.lmdb.holders import hold, release, sole
from chronograph.eventstore.lmdb.making import check_path
from chronograph.eventstore.lmdb.scrub import Pass, scrub_pass, scrub_rounds
from chronograph.eventstore.log import Scrubbed

__all__ = ["DAMAGE", "DEFAULT_MAP_SIZE", "DATA_FILE", "EnvOptions", "LmdbEnv"]

T = TypeVar("T")

DEFAULT_MAP_SIZE = 64 << 20
"""Initial map size; the map doubles whenever it fills."""
MAX_DATABASES = 64


class EnvOptions(TypedDict, total=False):
    """How to open an environment (`LmdbEnv`'s keywords), as a log passes them on."""

    sync: bool
    map_size: int
    max_map_size: int | None
    readonly: bool
    create: bool


DAMAGE = (lmdb.CorruptedError, lmdb.PageNotFoundError, lmdb.PanicError, lmdb.BadValsizeError, lmdb.BadTxnError,
          lmdb.IncompatibleError, lmdb.BadDbiError, lmdb.InvalidError)
"""LMDB's errors for a file whose pages do not hold what they should (a page of the wrong
kind, a database's flags changed, a transaction left unusable by one of those)."""

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
        self.fresh = check_path(self.path, create=create and not readonly)
        """True when this opening created the environment."""
        if not self.fresh:
            check_data_file(self.path / DATA_FILE)
        self._sync = sync
        self._reopened: list[Callable[[], None]] = []
        self.erasures: Callable[[lmdb.Transaction], int] | None = None
        """Reads the log's erasure count in a transaction (set by the log kept here)."""
        self._erasures_seen: int | None = None
        self.closed = False
        self._lost: int | None = None
        """The map size of an environment a failed reopening left closed (see `_reopen`), else None."""
        self._stale = False
        """Whether a reopening after an erasure failed: this process's page buffers may hold erased
        bytes, so the environment is reopened before the next write (see `refresh`)."""
        self.gate = Gate()
        """Transactions of this process's threads pass it together, a remap of the file alone."""
        self._held = hold(self.path)  # before LMDB opens it: a restore in progress is waited for
        try:
            self.env = self._open(map_size, create=self.fresh)
        except (lmdb.InvalidError, lmdb.CorruptedError, lmdb.VersionMismatchError) as error:
            release(self._held)
            raise StoreCorruptError(f"{self.path} is not a readable LMDB store: {error}") from None
        except lmdb.Error as error:
            release(self._held)
            raise StoreOpenError(f"cannot open the store at {self.path}: {why(error)}") from None
        except BaseException:
            release(self._held)
            raise
        self._page_size: int = self.env.stat()["psize"]
        self._tail = Tail(self.path / DATA_FILE)
        """Zeros past the data file's last page, kept after every commit (see `datafile`)."""
        try:
            self.stale_readers_cleared = self.env.reader_check()
            """Reader slots of dead processes that opening this environment released."""
        except BaseException:
            self.close()
            raise

    # --- lifecycle ------------------------------------------------------------------------

    @contextmanager
    def alone(self) -> Iterator[bool]:
        """For the `with` block, keep every other process out of this environment if none has it
        open now (yields whether that is so); openings that start meanwhile wait for the block."""
        if self.readonly:
            yield False
            return
        with sole(self._held) as alone:
            yield alone

    def close(self) -> None:
        """Close the environment; it cannot be used afterwards."""
        if self.closed:
            return
        self.closed = True
        with self.gate.remapping():  # a reader of another thread finishes first
            self.env.close()
        release(self._held)

    def _open(self, map_size: int, *, create: bool) -> lmdb.Environment:
        return lmdb.open(str(self.path), map_size=map_size, max_dbs=MAX_DATABASES, max_readers=256,
                         max_spare_txns=1, sync=self._sync, metasync=self._sync, readonly=self.readonly,
                         create=create, readahead=False)

    def on_reopen(self, refresh: Callable[[], None]) -> None:
        """Call `refresh` after the environment was reopened: database handles opened before
        are invalid then, and whoever keeps one opens it again."""
        self._reopened.append(refresh)

    def reopen(self) -> None:
        """Close the environment and open it again, with every database handle.

        LMDB keeps the buffers of the pages a process wrote and reuses them for later pages
        without clearing them, so the unused part of a page it writes may carry bytes of an
        earlier one. After an erasure, those bytes may be erased content: a process drops its
        buffers (by reopening) before it writes again (`refresh`). Call it with no transaction
        open in this process.

        Raises:
            StoreOpenError: If the store cannot be opened again (see `_reopen`).
        """
        with self.gate.remapping():
            self._reopen(self._lost or self.env.info()["map_size"])
        if self.erasures is not None:
            with self.read() as txn:
                self._erasures_seen = self.erasures(txn)

    def _reopen(self, map_size: int, *, usable: bool = True) -> None:
        """Open the environment again at `map_size`, alone (in `gate.remapping`). While it is
        `usable`, the files are checked first and it is kept open if this process could not open
        them again (permissions lost, a file made immutable): reads go on. If the opening fails
        after all (the address space, the system's files), the environment is lost until the next
        transaction opens it again (`_transaction`).

        Raises:
            StoreOpenError: If the store cannot be opened again now; each later transaction tries.
        """
        if usable and self._lost is None:
            try:
                os.close(os.open(self.path / DATA_FILE, os.O_RDONLY if self.readonly else os.O_RDWR))
                if not self.readonly and not os.access(self.path / LOCK_FILE, os.R_OK | os.W_OK):
                    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
            except OSError as error:
                raise StoreOpenError(f"cannot open the store at {self.path} again: {why(error)}; it stays open "
                                     "as it was") from None
        self.env.close()  # (nothing, once closed or after a failed remap)
        try:
            self.env = self._open(map_size, create=False)
        except lmdb.Error as error:
            self._lost = map_size
            raise StoreOpenError(f"cannot open the store at {self.path} again: {why(error)}; every call tries "
                                 "again") from None
        self._lost, self._stale = None, False
        for refresh in self._reopened:
            refresh()

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
        """The size of the data file on disk, up to its last page (not the zeros kept past it: see
        `datafile.Tail`)."""
        try:
            size = (self.path / DATA_FILE).stat().st_size
            return min(size, (self.env.info()["last_pgno"] + 1) * self._page_size)
        except OSError:
            return 0
        except lmdb.Error:  # (lost: see `_reopen`)
            return size

    # --- databases ------------------------------------------------------------------------

    def open_db(self, name: str, *, dupsort: bool = False, dupfixed: bool = False,
                create: bool = True) -> lmdb._Database:
        """Open (creating if needed) a named database; call it outside any transaction.

        Raises:
            lmdb.NotFoundError: If the database does not exist and may not be created.
            StoreCorruptError: If the file is damaged where the database's root is kept.
            StorageFullError, StoreWriteError: If creating it was refused (see `write`).
        """
        try:
            return self.env.open_db(name.encode(), dupsort=dupsort, dupfixed=dupfixed,
                                    create=create and not self.readonly)
        except DAMAGE as error:
            raise self.damaged(error) from None
        except lmdb.NotFoundError:
            raise
        except lmdb.Error as error:  # its creation commits
            raise refused(self.path, error) from None

    def database_names(self) -> list[str]:
        """The names of every named database in the environment.

        Raises:
            StoreCorruptError: If a name is not text (the file is damaged where they are kept).
        """
        with self.read() as txn:
            names = [bytes(name) for name, _ in txn.cursor()]
        try:
            return [name.decode() for name in names]
        except UnicodeDecodeError:
            raise self.damaged("a database's name is not text") from None

    # --- transactions ---------------------------------------------------------------------

    def write(self, work: Callable[[lmdb.Transaction], T]) -> T:
        """Run `work` in one write transaction and commit it; abort it if `work` raises.

        A full map is grown and `work` is run again from the start, so it must decide
        everything from what it reads in the transaction it is given.

        Raises:
            StorageFullError: If the disk or `max_map_size` leaves no room; nothing is written.
            StoreWriteError: If the system refuses the write otherwise (a read-only filesystem,
                permissions, a limit of the process: see `failures`); nothing is written.
        """
        if self.readonly:
            raise EventStoreError(f"the store at {self.path} is open read-only")
        if self._stale:  # its page buffers may hold erased bytes: not written into the file
            self.reopen()
        while True:
            try:
                with self._transaction(write=True) as txn:
                    try:
                        outcome = work(txn)
                        txn.commit()
                        self._tail.keep(self.env.info()["last_pgno"], self._page_size)
                        return outcome
                    except lmdb.MapFullError:
                        self.gate.claim()  # first: readers stop coming before this thread lets go of the GIL
                        txn.abort()
                    except DAMAGE as error:
                        txn.abort()
                        raise self.damaged(error) from None
                    except StoreCorruptError as error:
                        txn.abort()
                        raise self.located(error) from None
                    except lmdb.Error as error:  # a full disk, a read-only filesystem, permissions: said, not raw
                        txn.abort()
                        raise refused(self.path, error) from None
            except BaseException:
                self.gate.unclaim()
                raise
            with self.gate.remapping():  # the map is full: grow it, with no transaction of this process open
                self._grow()

    def refresh(self, count: int | None = None) -> bool:
        """Reopen the environment if content was erased since this process last looked (its
        page buffers may hold it: see `reopen`); return whether it did. `count`: the log's erasure
        count if the caller just read it. Call it with no transaction open in this process, before
        work that may write."""
        if self.erasures is None or self.readonly or self.closed:
            return False
        if count is None:
            with self.read() as txn:
                count = self.erasures(txn)
        if self._erasures_seen is None:
            self._erasures_seen = count
        if self._erasures_seen == count and not self._stale:
            return False
        try:
            self.reopen()
        except StoreOpenError:  # reads go on; the next write reopens first, or is refused (see `write`)
            self._stale = True
            return False
        return True

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[lmdb.Transaction]:
        """A transaction, through the gate; aborted at the end unless committed. A map another
        process grew is taken on (a remap: alone) and the transaction begun again."""
        while True:
            if self._lost is not None:
                with self.gate.remapping():
                    if self._lost is not None:
                        self._reopen(self._lost)
            try:
                with self.gate.transaction():
                    try:
                        txn = self._begin_write() if write else self.env.begin()
                    except lmdb.MapResizedError:  # another process grew the map: take it on, alone
                        self.gate.claim()  # before anything lets go of the GIL (see `Gate.claim`)
                        txn = None
                    except DAMAGE as error:
                        raise self.damaged(error) from None
                    except lmdb.Error as error:  # (a write's lock, a reader's slot: the system refused them)
                        raise (refused(self.path, error) if write else
                               EventStoreError(f"the store at {self.path} could not be read: {why(error)}")) from None
                    if txn is not None:
                        try:
                            yield txn
                        finally:
                            txn.abort()
                        return
            except BaseException:
                self.gate.unclaim()
                raise
            with self.gate.remapping():
                self.env.set_mapsize(0)

    @contextmanager
    def read(self) -> Iterator[lmdb.Transaction]:
        """A read-only snapshot of the environment for the duration of the `with` block."""
        with self._transaction(write=False) as txn:
            try:
                yield txn
            except DAMAGE as error:
                raise self.damaged(error) from None
            except StoreCorruptError as error:
                raise self.located(error) from None

    def located(self, error: StoreCorruptError) -> StoreCorruptError:
        """`error`, naming this store if it does not yet."""
        return error if str(self.path) in str(error) else StoreCorruptError(f"the store at {self.path}: {error}")

    def damaged(self, error: lmdb.Error | str) -> StoreCorruptError:
        """What LMDB's own signs of a damaged file mean, and what to do."""
        return StoreCorruptError(
            f"the store's file at {self.path} is damaged (LMDB: {error}); {advised('replay --verify', str(self.path))} "
            f"tells whether its log is whole (then {advised('replay --rebuild', str(self.path))} rebuilds the views); "
            "if it is not, restore from a backup"
        )

    def scrub(self, marker: bytes, needles: Sequence[bytes] = (), timeout: float = 10.0) -> Scrubbed:
        """Zero every byte of the data file that no snapshot can read: free pages, the gaps inside
        pages, and branch pages holding one of `needles` (see `scrub.scrub_rounds`). Call it with
        no transaction open in this process.

        Raises:
            StoreCorruptError: If the file's pages cannot be accounted for (nothing is zeroed).
            StoreOpenError, StoreWriteError: If the store cannot be reopened, or its file read,
                mapped or written (the system's cause named): run it again once that is remedied.
        """
        return scrub_rounds(self, marker, needles, timeout)

    def scrub_pass(self, through: int, needles: Sequence[bytes], deadline: float) -> Pass:
        """Scrub passes holding the writer's lock until nothing freed by transaction `through` or
        before is held by a reader, or `deadline` (`time.monotonic`) passes."""
        while True:
            with self._transaction(write=True) as txn:
                try:
                    done = scrub_pass(self.env, self.path / DATA_FILE, txn, through=through, needles=needles)
                except OSError as error:  # opening, mapping or writing the file: a limit of the process, the disk
                    raise StoreWriteError(f"the free pages of the store at {self.path} could not be overwritten: "
                                          f"{why(error)}") from None
            if not done.held or time.monotonic() >= deadline:
                return done
            time.sleep(0.02)  # a reader still sees them: wait for it to finish

    def _begin_write(self) -> lmdb.Transaction:
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
            with suppress(StoreOpenError):  # (lost then: the next transaction opens it again)
                self._reopen(current, usable=False)  # LMDB's environment is unusable after a failed remap
            if cause(error) == errno.ENOMEM:
                raise StorageFullError(
                    f"the store at {self.path} cannot grow its map from {current:,} to {target:,} bytes: this "
                    "process is out of address space (ulimit -v); nothing was written. Raise the limit, or set a "
                    "ceiling below it (--max-size) to be refused cleanly; reads go on") from None
            raise refused(self.path, error) from None

