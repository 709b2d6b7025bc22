"""The log in PostgreSQL: one database shared by many servers on many hosts.

Connections come from a pool (psycopg_pool), so a server finds its feet again by itself after
the database restarts; both ends of each are guarded, so a network cut becomes an error within
seconds and a server cut off lets go of what it held (`connections`). Writes run in one
transaction holding the log's advisory lock (see `pgschema`), waited for a bounded time
(`locking`), and announce the new head with NOTIFY when they commit; `wait_for_append` LISTENs
for it, polling once a second as well in case a notification is lost. The database's errors
become the store's, worded for the work they ended (`failures`).

Reads take a REPEATABLE READ snapshot at their first query (`PgReader`), which waits until
every commit it sees is flushed: a commit releases the lock before its flush (`commit`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from typing import Any, TypeVar

import psycopg
import psycopg_pool
from chronograph.eventstore.codec import Codec
from chronograph.eventstore.errors import EventStoreError
from chronograph.eventstore.log import EraseHook, EventLog, InlineHook, Scrubbed
from chronograph.eventstore.postgres.announcements import announcement
from chronograph.eventstore.postgres.answers import LOOK_WAIT, Answers, Unanswered
from chronograph.eventstore.postgres.connections import (
    POOL_WAIT,
    SLICE,
    Attempts,
    address,
    connect,
    options,
    pool,
    roll_back,
)
from chronograph.eventstore.postgres.durability import DURABLE, EARLY, SEEN, wait_for_flush
from chronograph.eventstore.postgres.failures import Unit, commit_failure, failure, unopened, unreachable
from chronograph.eventstore.postgres.listening import Listener
from chronograph.eventstore.postgres.locking import LOCK_WAIT, Waits, bounded
from chronograph.eventstore.postgres.opening import open_tables, same_tables
from chronograph.eventstore.postgres.reader import PgReader
from chronograph.eventstore.postgres.schema import Schema, stream_versions
from chronograph.eventstore.postgres.scrubbing import scrub_tables
from chronograph.eventstore.postgres.seeds import Seeds
from chronograph.eventstore.postgres.writer import PgTransaction

__all__ = ["PgLog"]

T = TypeVar("T")

RETRIES = 2
"""How many more connections a statement that starts a unit of work is tried on after the
database dropped the one it was sent on."""
AHEAD = 256
"""How many of the events other servers appended a write transaction takes back with its lock
(more are read after it, in batches)."""


class PgLog(EventLog):
    """An append-only log of events in the PostgreSQL database at `url` (see `pgschema`).

    Raises (on construction):
        StoreOpenError: If `url` is not a usable address, or the log does not exist and may
            not be created.
        StoreUnavailableError: If the database cannot be reached.
        StoreFormatError: If a newer version of Chronograph wrote the log.
    """

    def __init__(self, url: str, *, codec: Codec | None = None, create: bool = True, readonly: bool = False,
                 pool_size: int = 8) -> None:
        self.codec = codec or Codec(writes=1)  # codec 2 is the LMDB log's (see eventstore.compact)
        self._url, name, self._shown = address(url)
        self.schema = Schema(name)
        self._tables = f"'\"{name}\".meta'::regclass::oid"  # (a constant to the planner: no table is read)
        self.seeds = Seeds(self)
        """What new caches of this log start from (see `postgres.seeds`)."""
        self._begin = self.schema.sql(  # the head is read by a statement of its own, after the lock: a
            # statement's snapshot is taken when it starts, before it waits for a lock
            "BEGIN; " + bounded("SELECT pg_advisory_xact_lock(" + str(self.schema.lock) + ")") + "; "
            "SELECT coalesce((SELECT max(position) FROM {events}), 0), "
            "coalesce((SELECT recorded_at FROM {events} ORDER BY position DESC LIMIT 1), 0), "
            "(SELECT value FROM {meta} WHERE key = 'erasures'), " + EARLY + ", " + self._tables)
        self._begin_text = self._begin.as_string()
        self._snapshot_text = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; " + SEEN.replace(
            " FROM (", f", {self._tables} FROM (", 1)
        self.store_id = ""
        self._made: int | None = None
        """Which tables the log was in at open (their `meta`'s object id): every unit of work checks
        they are still the ones (`_same_log`)."""
        self._ahead_text = self.schema.sql(
            "; SELECT position, envelope, checksum FROM {events} WHERE position >= {{after}} ORDER BY position "
            "LIMIT " + str(AHEAD + 1)).as_string()
        self._readonly = readonly
        self._hooks: list[InlineHook] = []
        self._erase_hooks: list[EraseHook] = []
        self._pinned = threading.local()
        """`connection`: where this thread's write transactions run while it holds the lock (`exclusive`)."""
        self._patience = threading.local()
        """`seconds`: how long a unit of work of this thread waits for a connection (unset: the
        pool's timeout)."""
        self._waits = Waits(self._shown)
        self._options = options(self._url)
        self._answers = Answers()  # how long the database has left each round trip unanswered
        self._class = self._answers.connection_class(psycopg.Connection)
        self._answers.side = lambda: connect(self._url, self._options, LOOK_WAIT, self._class)
        self._listener = Listener(lambda: connect(self._url, self._options, base=self._class), self.schema.channel,
                                  self._state, lambda: self._answers.given_up)
        self._attempts = Attempts()
        """The pool's last failed attempt to connect (see `_get`)."""
        self.pool = pool(self._url, self._options, pool_size, f"chronograph-{name}", self._attempts, self._class)
        try:
            connect(self._url, self._options).close()  # the server's own reason, at once
            self.pool.open(wait=True, timeout=10)
            with self._connection() as (connection, _):  # (an upgrade's rewrite lifts its own bound: `rewriting`)
                self.store_id, self._made = open_tables(connection, self.schema, self._shown, create=create,
                                                        readonly=self._readonly)
        except BaseException as error:
            self.pool.close()
            if isinstance(error, psycopg.OperationalError | psycopg_pool.PoolTimeout):
                raise unopened(error, url, self._shown) from None
            raise

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def location(self) -> str:
        return self._shown

    @property
    def readonly(self) -> bool:
        return self._readonly

    def waiting(self) -> float:
        """Seconds the longest wait of this process for the log's lock has lasted so far (0.0: none)."""
        return self._waits.longest()

    def interrupt(self) -> None:
        """Cut short this process's waits for the log's lock, and refuse new ones: it is stopping
        (each write that waited is refused, having written nothing)."""
        self._waits.interrupt()

    def close(self) -> None:
        """Close every connection; the log cannot be used afterwards."""
        self._listener.close()
        self.pool.close()

    @contextmanager
    def _connection(self, first: str | None = None, *, unit: Unit = "read",
                    lock: bool = False) -> Iterator[tuple[psycopg.Connection[Any], Any]]:
        """A connection and the cursor of its `first` statement; the database's errors become the
        store's, worded for the `unit` of work (see `failures`). With `lock`, `first` waits for the
        log's lock: the wait is counted (`waiting`), and one that runs out names the holder.

        A pooled connection is not checked before use (a round trip per call); instead a
        `first` statement that fails on a connection the database dropped (it restarted, say)
        is tried again on a new one: nothing had been done on the dead one.
        """
        try:
            for attempt in range(RETRIES + 1):
                connection, pooled = self._get(unit)
                try:
                    cursor = self._first(connection, first, lock)
                except BaseException as error:
                    dropped = isinstance(error, psycopg.OperationalError) and connection.broken and not isinstance(
                        error, Unanswered)  # (a database that answers nothing is not asked again)
                    self._put(connection, pooled)  # broken: the pool drops it
                    if dropped and attempt < RETRIES:
                        continue
                    raise
                try:
                    yield connection, cursor
                finally:
                    self._put(connection, pooled)
                return
        except psycopg.Error as error:
            raise failure(error, self._shown, unit, stopping=self._waits.stopping) from None

    def _get(self, unit: Unit) -> tuple[psycopg.Connection[Any], bool]:
        """A connection of the pool, else one of its own: when none came in time (every pooled
        one is busy), or at once when the pool failed to connect while this waited (the database
        is back, or it says why not). (connection, whether pooled)

        The pool is asked again every `SLICE` seconds: a pool that gave up reconnecting (see
        `connections.RECONNECT`) tries again at each ask.

        Raises:
            StoreUnavailableError: If the database cannot be reached (in its own words).
        """
        patience = getattr(self._patience, "seconds", None)
        began = time.monotonic()
        deadline = began + (POOL_WAIT if patience is None else patience)
        while True:
            try:
                return self.pool.getconn(timeout=max(0.01, min(SLICE, deadline - time.monotonic()))), True
            except psycopg_pool.PoolTimeout:
                if self._attempts.since(began) is not None or time.monotonic() >= deadline:
                    break
        try:
            return connect(self._url, self._options, max(0.0, deadline - time.monotonic()) or None, self._class), False
        except psycopg.OperationalError as error:
            raise unreachable(error, self._shown, unit) from None

    def _put(self, connection: psycopg.Connection[Any], pooled: bool) -> None:
        if pooled:
            self.pool.putconn(connection)
        else:
            connection.close()

    def _first(self, connection: psycopg.Connection[Any], first: str | None, lock: bool) -> Any:
        if not first:
            return None
        if not lock:
            return connection.execute(first)
        began = time.monotonic()
        try:
            with self._waits.waiting(connection), self._answers.longer(LOCK_WAIT):  # (lock_timeout: LOCK_WAIT)
                return connection.execute(first)
        except psycopg.errors.LockNotAvailable:
            raise self._waits.refusal(connection, self.schema.lock, time.monotonic() - began) from None

    # --- writing --------------------------------------------------------------------------

    def add_inline_hook(self, hook: InlineHook) -> None:
        """Run `hook(tx, envelopes)` inside the write transaction of every append."""
        self._hooks.append(hook)

    def add_erase_hook(self, hook: EraseHook) -> None:
        """Run `hook(tx, originals)` inside the write transaction of every erasure."""
        self._erase_hooks.append(hook)

    @contextmanager
    def transaction(self, after: int | None = None) -> Iterator[PgTransaction]:
        """A write transaction holding the log's lock. It commits only through `commit(tx)`,
        so that whoever keeps views beside it can commit the log first and the views after;
        leaving the block without that rolls it back.

        `after`: the position the caller has read the log up to; the events after it (up to
        AHEAD of them) come back with the lock, in the same round trip, and the transaction
        reads them from there; so does the event at `after` (what the caller read there may
        be compared with it: the log may have gone back, see `projections.live.anchor`).

        Raises:
            StoreUnavailableError: If the database cannot be reached or goes away.
        """
        if self._readonly:
            raise EventStoreError(f"the log at {self._shown} is open read-only")
        begin = self._begin_text
        if after is not None:
            begin += self._ahead_text.replace("{after}", str(int(after)))
        pinned = getattr(self._pinned, "connection", None)  # `exclusive` holds the lock on it
        unit = nullcontext((pinned, pinned.execute(begin))) if pinned else self._connection(begin, unit="write",
                                                                                             lock=True)
        with unit as (connection, cursor):
            # One round trip: begin, bound the wait, take the lock, read where the log stands (and what is new).
            for _ in range(3):  # past BEGIN's result, the bound's and the lock's, to where the log stands
                cursor.nextset()
            head, last, erasures, early, made = cursor.fetchone() or (0, 0, None, False, None)
            self._same_log(made, connection)
            ahead = at = None
            if after is not None:
                cursor.nextset()
                rows = [(int(p), bytes(e), int(c)) for p, e, c in cursor.fetchall()]
                at = (int(after), rows.pop(0) if rows and rows[0][0] == int(after) else None)
                rows = rows[:AHEAD]
                ahead = (int(after), int(head) if len(rows) < AHEAD else rows[-1][0], rows)
            try:
                tx = PgTransaction(connection, self.codec, self.schema, self._hooks, self._erase_hooks,
                                   head=int(head), last_recorded_at=int(last),
                                   erasures=0 if erasures is None else int.from_bytes(erasures, "big"),
                                   peek=self._versions, ahead=ahead, at=at, early=bool(early))
                yield tx
            finally:
                roll_back(connection)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """For the `with` block, hold the log's lock on one connection, on which this thread's
        write transactions run: every other writer (another server's too) waits for the block.

        Raises:
            StoreUnavailableError: If the database cannot be reached or goes away.
        """
        if self._readonly:
            raise EventStoreError(f"the log at {self._shown} is open read-only")
        locked = bounded(f"SELECT pg_advisory_lock({self.schema.lock})", session=True)
        with self._connection(locked, unit="write", lock=True) as (connection, _):
            self._pinned.connection = connection
            try:
                yield
            finally:
                self._pinned.connection = None
                try:
                    connection.execute("SELECT pg_advisory_unlock(%s)", (self.schema.lock,))
                except psycopg.Error:
                    connection.close()  # a session lock must not go back to the pool held

    def commit(self, tx: PgTransaction) -> None:
        """Commit `tx`, announcing its new head if it appended; return once it is on the
        database's disk.

        Where the database allows (`EARLY`), the lock is released when the commit is written,
        before it is flushed: the flush is then off the lock's hold, and shared by the writers
        queued behind it instead of waited for by each in turn. Nothing depends on a commit
        before it is flushed: the barrier that follows it in the same round trip returns only
        once it is, the announcement is made by the barrier (delivered after its flush), the
        views commit after this, and every snapshot waits for what it sees to be flushed
        (`read`). A database crash in between loses only what nobody was told of.

        Raises:
            StoreUnavailableError: If the commit could not be confirmed (see the error).
        """
        try:  # one round trip: what was deferred, COMMIT, the barrier (with the announcement)
            payload = announcement(tx.head(), tx.erasures())
            if not tx.early:  # the commit waits for its flush (and standby) holding the lock
                tx.send(*([f"NOTIFY {self.schema.channel}, {payload}"] if tx.appended else []), "COMMIT")
            elif tx.appended:
                tx.send("SET LOCAL synchronous_commit TO off", "COMMIT",
                        f"SELECT pg_notify('{self.schema.channel.lower()}', {payload}), {DURABLE}")
            else:
                tx.send("SET LOCAL synchronous_commit TO off", "COMMIT", f"SELECT {DURABLE}")
        except psycopg.Error as error:  # (a deferred insert's refusal among them: it is checked at the commit)
            raise commit_failure(error, self._shown, tx.sent_on) from None

    def transact(self, work: Callable[[PgTransaction], T]) -> T:
        """Run `work` in one write transaction and commit it; roll it back if `work` raises.

        Raises:
            StoreUnavailableError: If the database cannot be reached or goes away.
        """
        with self.transaction() as tx:
            outcome = work(tx)
            self.commit(tx)
            return outcome

    # --- reading --------------------------------------------------------------------------

    @contextmanager
    def read(self, *, lazy: bool = False) -> Iterator[PgReader]:
        """A consistent snapshot of the log for the `with` block; with `lazy`, the connection and
        the snapshot are taken at the block's first query (a block that never asks costs none)."""
        with ExitStack() as stack:
            held: list[psycopg.Connection[Any]] = []

            def begin() -> psycopg.Connection[Any]:
                # the snapshot is taken at the first statement after BEGIN, which also says whether
                # every commit it sees is flushed
                connection, cursor = stack.enter_context(self._connection(self._snapshot_text))
                held.append(connection)
                cursor.nextset()
                lsn, flushed, made = cursor.fetchone() or (None, None, None)
                self._same_log(made, connection)
                if lsn is not None and not flushed:
                    self._flushed(connection, str(lsn))
                return connection

            reader = PgReader(begin, self.codec, self.schema, self._shown)
            if not lazy:
                reader.connection  # noqa: B018 (takes the snapshot now)
            try:
                yield reader
            finally:
                if held:
                    roll_back(held[0])

    @contextmanager
    def patience(self, seconds: float) -> Iterator[None]:
        """Within the block, this thread's units of work wait at most `seconds` for a connection,
        so a database out of reach fails in about that time instead of the pool's ten seconds."""
        before = getattr(self._patience, "seconds", None)
        self._patience.seconds = seconds
        try:
            yield
        finally:
            self._patience.seconds = before

    def answering(self, seconds: float) -> AbstractContextManager[None]:
        """Within the block, this thread gives up a connection silent for `seconds` (see `answers`)."""
        return self._answers.within(seconds)

    def unanswered(self) -> float:
        """Seconds the database has left a request unanswered (see `answers.Answers.silence`)."""
        return self._answers.silence()

    def _flushed(self, connection: psycopg.Connection[Any], lsn: str) -> None:
        """Return once the write-ahead log is flushed to `lsn` (see `durability.wait_for_flush`)."""

        def barrier() -> None:
            with self._connection(f"SELECT {DURABLE}"):
                pass

        wait_for_flush(connection, lsn, barrier)

    def _same_log(self, made: Any, connection: psycopg.Connection[Any]) -> None:
        """Refuse to go on where the log's tables are not the ones found at open (see `same_tables`)."""
        if self._made is not None:
            same_tables(made, self._made, connection, self._shown)

    def head(self) -> int:
        """The position of the newest event (0 for an empty log)."""
        with self.read() as reader:
            return reader.head()

    def stored_bytes(self) -> int:
        """What the log's tables take in the database, indexes included."""
        with self._connection() as (connection, _):
            return self.schema.stored_bytes(connection)

    def wait_for_append(self, after: int, timeout: float) -> int:
        """Wait until the head passes `after` or `timeout` seconds pass; return the head.

        Raises:
            StoreUnavailableError: If the database cannot be reached.
        """
        return self.watch(after, timeout)[0]

    def watch(self, after: int, timeout: float) -> tuple[int, int]:
        """(head, erasure count) once the head passes `after`, or when `timeout` seconds pass
        (see `listening`: a follower learns of other servers' writes without a query).

        Raises:
            StoreUnavailableError: If the database cannot be reached.
        """
        return self._listener.watch(after, timeout)

    def _versions(self, streams: list[str]) -> dict[str, int]:
        """The versions of `streams`, read on a connection of their own."""
        with self._connection() as (connection, _):
            rows = stream_versions(connection, self.schema, streams)
        return {stream: int(version) for stream, version in rows}

    def _state(self) -> tuple[int, int]:
        with self.read() as reader:
            return reader.head(), reader.erasures()

    def scrub(self, needles: Sequence[bytes] = (), timeout: float = 10.0) -> Scrubbed:
        """Rewrite the log's tables and their indexes (VACUUM FULL) once no snapshot taken before
        can see what an erasure replaced (waiting up to `timeout` seconds), and keep the planner's
        statistics free of content (see `postgres.scrubbing`; the write-ahead log, replicas and
        base backups are the database operator's: docs/decisions.md)."""
        del needles  # every index is rebuilt whole: no stale key survives
        with self.read() as reader:
            erasures = reader.erasures()
        with self._connection(unit="scrub") as (connection, _):  # (the rewrites lift their own bound: `rewriting`)
            return scrub_tables(connection, self.schema, self._shown, erasures, time.monotonic() + timeout)

