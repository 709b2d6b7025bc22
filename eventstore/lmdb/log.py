"""The log in LMDB: named databases of one environment, shared safely by many processes.

`log` maps big-endian positions to envelopes and is written with `append=True`;
`streams` maps (stream, version) to positions, and a stream's last key there is its version;
`idempotency` remembers what each idempotency key produced. Commits are synchronous by
default: an acknowledged append survives a power loss.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar, Unpack

import lmdb
import msgspec
from chronograph.eventstore.codec import Codec, Envelope
from chronograph.eventstore.errors import StoreCorruptError, StoreFormatError, StoreOpenError
from chronograph.eventstore.files import STORE_FILES
from chronograph.eventstore.keys import pack_u32, pack_u64, text_key, unpack_u32
from chronograph.eventstore.lmdb.env import EnvOptions, LmdbEnv
from chronograph.eventstore.lmdb.failures import cause, why
from chronograph.eventstore.lmdb.holders import StoreBusyError
from chronograph.eventstore.lmdb.reader import SCRUBBED, Databases, LmdbReader
from chronograph.eventstore.lmdb.streamindex import WIDE
from chronograph.eventstore.lmdb.writer import LmdbTransaction
from chronograph.eventstore.log import EraseHook, EventLog, InlineHook, Scrubbed

__all__ = ["FORMAT_VERSION", "LOG_DATABASES", "LmdbLog"]

T = TypeVar("T")

FORMAT_VERSION = 6
"""On-disk format this code creates; a store with a higher one is refused, never guessed at.
2: the log may hold records of codec 2 (`eventstore.compact`); a store of format 1 is raised to
2 when it is opened for writing and no other process has it open, so a version of Chronograph
that cannot read them refuses it by its format instead of failing on a record (while another
process may be one of them, codec 1 is written). 3: `streams` and `heads` are keyed by
`keys.stream_key` (15 or 16 bytes) instead of the stream's text. 4: no `heads`; a stream's
version is its last key in `streams` (a tenth of a store's pages were the heads). A store is
created in the newest format and never raised to 3 or 4: its keys would have to be rewritten
while another process, of a version that reads the heads, may be writing them (`chronograph
copy` writes a store of the newest format). 5: new records are of codec 3 (`eventstore.compact`);
a store of an older format keeps being written in codec 2, since a process of an older version
may have it open and would fail on a record it cannot read. 6: `streams` keeps a version in 4 bytes
and a position in 6 (`streamindex.NARROW`); a store of an older format keeps 8 and 8."""
_KEYED = 3
"""The first format whose stream keys are `keys.stream_key`"""
_HEADLESS = 4
"""The first format without the `heads` database"""
_CODEC_3 = 5
"""The first format whose new records are of codec 3"""
_NARROW = 6
"""The first format whose stream index is `streamindex.NARROW`"""

LOG_DATABASES = (b"log", b"streams", b"idempotency", b"meta")
"""The databases every Chronograph store's log has (what tells its environment from another program's)."""
_HEADS = b"heads"
"""stream key -> version, kept by stores of formats 1 to 3 (and read by the versions that made them)"""
_SUMS = b"sums"
"""Checksums of the stored envelopes: added after the first stores, created when a store is opened
for writing, and absent (nothing to verify) in a read-only store that never had them."""
_FORMAT = b"format"
_STORE_ID = b"store_id"
POLL_INTERVAL = 0.05
"""How often `wait_for_append` looks at the head (LMDB cannot notify other processes)."""


class LmdbLog(EventLog):
    """An append-only log of events in the LMDB environment at `path` (a directory).

    The environment (`self.environment`) is the log's own; views folded from the log
    may keep their databases in it too, and fold inside the log's write transactions.

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
        damaged: bool = False,
        **options: Unpack[EnvOptions],
    ) -> None:
        self.codec = codec or Codec()
        self._damaged = damaged
        """Opened to name its damage (`replay --verify`, read-only): the newest event's bytes are
        not read at open, only the position they claim"""
        self._hooks: list[InlineHook] = []
        self._erase_hooks: list[EraseHook] = []
        self.environment = LmdbEnv(path, **options)
        try:
            self.dbs = self._open_log(self.environment.fresh)
        except BaseException:
            self.environment.close()
            raise
        self.environment.on_reopen(self._reopened)
        if not self.environment.readonly:
            self.environment.erasures = lambda txn: self.reader(txn).erasures()
            self.environment.refresh()  # notes the count: buffers are fresh at open

    def _reopened(self) -> None:
        self.dbs = self._open_log(False)

    @property
    def path(self) -> Path:
        """The store's directory."""
        return self.environment.path

    @property
    def location(self) -> str:
        return str(self.environment.path)

    @property
    def readonly(self) -> bool:
        return self.environment.readonly

    def stored_bytes(self) -> int:
        """What the store takes on disk."""
        return self.environment.file_bytes()

    @property
    def stale_readers_cleared(self) -> int:
        """Reader slots of dead processes that opening this store released."""
        return self.environment.stale_readers_cleared

    # --- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the environment; the log cannot be used afterwards."""
        self.environment.close()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """For the `with` block, hold the store against every other opening (they wait for it).

        Raises:
            StoreBusyError: If another process has it open now.
        """
        with self.environment.alone() as alone:
            if not alone:
                raise StoreBusyError(f"the store at {self.path} is open in another process (a server, a command); "
                                     "stop it, or name a store no process uses; nothing was written")
            yield

    def _open_log(self, fresh: bool) -> Databases:
        env = self.environment
        try:
            if fresh:
                self._writes(FORMAT_VERSION)
                return env.write(self._create_log)
            with env.read() as txn:
                existing = {bytes(name) for name, _ in txn.cursor()}
                committed = txn.id()  # what this read saw: a commit made after it does not count
            if not set(LOG_DATABASES) <= existing:
                if env.readonly or existing or committed or set(os.listdir(self.path)) - set(STORE_FILES):
                    raise StoreCorruptError(f"{self.path} holds an LMDB environment that is not a Chronograph store")
                # Nothing was ever committed: another process is making the store this moment (it
                # made the file, its first commit is to come). The creation waits for its write and
                # makes only what it did not (`_create_log` overwrites nothing). Not beside other
                # files: a folder of the user's is not taken over (as `LmdbEnv` decides).
                self._writes(FORMAT_VERSION)
                return env.write(self._create_log)
            sums = None
            if _SUMS in existing or not env.readonly:
                sums = env.env.open_db(_SUMS, create=not env.readonly)
            log, streams, idempotency, meta = (env.env.open_db(name, create=False) for name in LOG_DATABASES)
            dbs = Databases(log, streams, None, idempotency, meta, sums, where=str(self.path))
            with env.read() as txn:
                version = self._check_format(txn, dbs)
            self._writes(version)
            if version < _HEADLESS:  # every version that wrote such a store created them
                if _HEADS not in existing:
                    raise StoreCorruptError(f"{self.path} is damaged: its stream heads are missing")
                dbs = dbs._replace(heads=env.env.open_db(_HEADS, create=False))
            if version < _KEYED:
                dbs = dbs._replace(key=text_key)
            if version < _NARROW:
                dbs = dbs._replace(layout=WIDE)
            with env.read() as txn:
                self._check_tail(LmdbReader(txn, self.codec, dbs))
            if version < 2 and not env.readonly:
                self._raise_to_2(dbs)
            return dbs
        except lmdb.Error as error:
            if cause(error) is not None:  # the system's refusal (a read-only filesystem, permissions), not damage
                raise StoreOpenError(f"cannot open the store at {self.path}: {why(error)}") from None
            raise StoreCorruptError(f"{self.path} is damaged: {error}") from None

    def _raise_to_2(self, dbs: Databases) -> None:
        """Raise a store of format 1 to 2 if no other process has it open (so that a version that
        cannot read codec 2 refuses it by its format from then on); else write codec 1 in it: a
        running process of such a version would fail each of its writes on a codec-2 record."""
        with self.environment.alone() as alone:
            if alone:
                self.environment.write(lambda txn: txn.put(_FORMAT, pack_u32(2), db=dbs.meta))
            else:
                self.codec = self.codec.writing(1)

    def _writes(self, version: int) -> None:
        """Write no newer a codec than a store of `version` may hold."""
        if version < _CODEC_3 and self.codec.writes > 2:
            self.codec = self.codec.writing(2)

    def _create_log(self, txn: lmdb.Transaction) -> Databases:
        log, streams, idempotency, meta, sums, _ = (
            self.environment.env.open_db(name, txn=txn) for name in (*LOG_DATABASES, _SUMS, _HEADS)
        )  # `heads` stays empty: a version that reads it finds the store's shape and refuses its format
        dbs = Databases(log, streams, None, idempotency, meta, sums, where=str(self.path))
        # Not over what another process creating the store at the same moment committed first
        txn.put(_FORMAT, pack_u32(FORMAT_VERSION), db=dbs.meta, overwrite=False)
        txn.put(_STORE_ID, uuid.uuid4().hex.encode(), db=dbs.meta, overwrite=False)
        return dbs

    def _check_tail(self, reader: LmdbReader) -> None:
        """The newest event must be where it says it is, since appends follow it, and whole (its
        checksum checked): nothing is appended after damage, and no backup or copy is made of it.
        Opened to name damage (`damaged`), only the position it claims is looked at, so that
        `replay --verify` opens a store whose newest event is damaged and lists it."""
        head = reader.head()
        if not head:
            return
        if self._damaged and self.environment.readonly:
            stored = reader.txn.get(pack_u64(head), db=reader.dbs.log)
            try:
                claimed = self.codec.position(stored) if stored is not None else head
            except (msgspec.DecodeError, msgspec.ValidationError):
                return  # unreadable: any read of it says so, and `replay --verify` lists it
        else:
            newest = reader.get(head)
            claimed = head if newest is None else newest.position
        if claimed != head:
            raise StoreCorruptError(
                f"{self.path} is damaged: the event stored at position {head} claims position {claimed}")

    def _check_format(self, txn: lmdb.Transaction, dbs: Databases) -> int:
        value = txn.get(_FORMAT, db=dbs.meta)
        if value is None or len(value) != 4:
            raise StoreCorruptError(f"{self.path} has no readable format version")
        version = unpack_u32(value)
        if version > FORMAT_VERSION:
            raise StoreFormatError(
                f"{self.path} was written in store format {version}, newer than this "
                f"Chronograph reads ({FORMAT_VERSION}); upgrade Chronograph"
            )
        return version

    # --- writing --------------------------------------------------------------------------

    def add_inline_hook(self, hook: InlineHook) -> None:
        """Run `hook(tx, envelopes)` inside the write transaction of every append."""
        self._hooks.append(hook)

    def add_erase_hook(self, hook: EraseHook) -> None:
        """Run `hook(tx, originals)` inside the write transaction of every erasure."""
        self._erase_hooks.append(hook)

    def scrub(self, needles: Sequence[bytes] = (), timeout: float = 10.0) -> Scrubbed:
        """Zero every byte of the store no snapshot can read (see `LmdbEnv.scrub`); databases
        whose branch pages still hold one of `needles` are repacked first.

        Raises:
            StoreCorruptError: If the file's pages cannot be accounted for (nothing is zeroed).
        """
        with self.read() as reader:
            erasures = reader.erasures()
        done = self.environment.scrub(b"meta", needles, timeout)
        if not done.held:  # what a later erasure leaves is its own scrub's, or the next open's
            self.environment.write(lambda txn: txn.put(SCRUBBED, pack_u64(erasures), db=self.dbs.meta))
        return done

    def transact(self, work: Callable[[LmdbTransaction], T]) -> T:
        """Run `work` in one write transaction and commit it; abort it if `work` raises.

        A full map is grown and `work` is run again from the start, so it must decide
        everything from what it reads in the transaction it is given.

        Raises:
            StorageFullError: If the disk or `max_map_size` leaves no room; nothing is written.
        """
        return self.environment.write(lambda txn: work(self.transaction(txn)))

    def transaction(self, txn: lmdb.Transaction) -> LmdbTransaction:
        """The log inside a write transaction of its environment (for views kept beside it)."""
        return LmdbTransaction(txn, self.codec, self.dbs, self._hooks, self.environment.check_room,
                               self._erase_hooks)

    # --- reading --------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[LmdbReader]:
        """A read-only snapshot of the log for the duration of the `with` block."""
        with self.environment.read() as txn:
            yield LmdbReader(txn, self.codec, self.dbs)

    def reader(self, txn: lmdb.Transaction) -> LmdbReader:
        """The log inside a transaction of its environment (for views kept beside it)."""
        return LmdbReader(txn, self.codec, self.dbs)

    def head(self) -> int:
        """The position of the newest event (0 for an empty log)."""
        with self.read() as reader:
            return reader.head()

    def stream_version(self, stream: str) -> int:
        """The current version of `stream` (0 when it has no events)."""
        with self.read() as reader:
            return reader.stream_version(stream)

    def read_stream(self, stream: str, from_version: int = 1, to_version: int | None = None) -> list[Envelope]:
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

    def watch(self, after: int, timeout: float) -> tuple[int, int]:
        """(head, erasure count) once the head passes `after`, or when `timeout` seconds pass."""
        head = self.wait_for_append(after, timeout)
        with self.read() as reader:
            return head, reader.erasures()

    def wait_for_append(self, after: int, timeout: float) -> int:
        """Poll the head until it passes `after` or `timeout` seconds pass; return it."""
        deadline = time.monotonic() + timeout
        while True:
            head = self.head()
            if head > after or time.monotonic() >= deadline:
                return head
            time.sleep(min(POLL_INTERVAL, max(0.0, deadline - time.monotonic())))
