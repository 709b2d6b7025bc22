"""Reads of the PostgreSQL log inside one database transaction: a consistent snapshot.

A reader takes its connection (from the log's pool) at its first query, not before, and
starts a REPEATABLE READ transaction there: every query after it sees the same snapshot.
Views kept locally read the log only when they must (history, audit, time travel), so a
read that answers from the views alone never costs a round trip to the database.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
from chronograph.eventstore import checksums
from chronograph.eventstore.codec import Codec, Envelope
from chronograph.eventstore.errors import StoreCorruptError, advised
from chronograph.eventstore.postgres.schema import Schema, stream_key

__all__ = ["PgReader"]

FETCH_ROWS = 16_384
"""Rows a scan of the log fetches per round trip (about 4 MB of envelopes), in binary: text
would spell every envelope in hex, which doubled the time to read the log."""


class PgReader:
    """Read access to the log within one PostgreSQL transaction (read-only or write)."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], codec: Codec, schema: Schema,
                 where: str = "") -> None:
        self._connect = connect
        self._connection: psycopg.Connection[Any] | None = None
        self.codec = codec
        self.schema = schema
        self.where = where
        """The log's URL without secrets, for the commands its errors advise"""

    @property
    def connection(self) -> psycopg.Connection[Any]:
        """The connection of this snapshot, taken (and its transaction begun) at first use."""
        if self._connection is None:
            self._connection = self._connect()
        return self._connection

    def _one(self, query: Any, params: Sequence[Any] = ()) -> Any:
        row = self.connection.execute(query, params).fetchone()
        return None if row is None else row[0]

    def head(self) -> int:
        """The position of the last event in the log (0 when the log is empty)."""
        return int(self._one(self.schema.sql("SELECT coalesce(max(position), 0) FROM {events}")))

    def stream_version(self, stream: str) -> int:
        """The current version of `stream` (0 when it has no events)."""
        version = self._one(self.schema.sql("SELECT version FROM {heads} WHERE stream_key = %s"), (stream_key(stream),))
        return 0 if version is None else int(version)

    def get(self, position: int) -> Envelope | None:
        """The envelope at `position`, or None if there is none."""
        row = self.connection.execute(
            self.schema.sql("SELECT position, envelope, checksum FROM {events} WHERE position = %s"), (position,)
        ).fetchone()
        return None if row is None else self._decode(*row)

    def index_problems(self) -> Iterator[str]:
        """Where the `stream_key`, `stream` and `version` columns (what reads by stream and erasures
        find events by; the database keeps key and version unique) disagree with the event each row
        holds, and a stream head that is not its stream's last version, or not under its key. The
        rows are read a batch at a time."""
        with self.connection.cursor(name=f"chronograph_index_{id(self)}", binary=True) as cursor:
            cursor.itersize = FETCH_ROWS
            cursor.execute(self.schema.sql(
                "SELECT position, stream_key, stream, version, envelope FROM {events} ORDER BY position"))
            while rows := cursor.fetchmany(FETCH_ROWS):
                for position, key, stream, version, stored in rows:
                    try:
                        envelope = self.codec.decode(stored)
                    except Exception:  # noqa: BLE001,S112 (damage: `verify` names it)
                        continue
                    if (stream, version) != (envelope.stream, envelope.version) or bytes(key) != stream_key(stream):
                        yield (f"index: the row at position {position:,} is filed under another stream or version "
                               f"than its event's (version {envelope.version}): reads by stream and erasures miss it")
        for (stream,) in self.connection.execute(self.schema.sql(
                "SELECT coalesce(h.stream, e.stream) FROM {heads} h FULL JOIN (SELECT stream_key, min(stream) AS "
                "stream, max(version) AS version FROM {events} GROUP BY stream_key) e ON e.stream_key = h.stream_key "
                "WHERE h.version IS DISTINCT FROM e.version OR h.stream IS DISTINCT FROM e.stream")):
            yield f"index: a stream's head is not its last version ({len(stream)}-character stream id)"
        for key, stream in self.connection.execute(self.schema.sql("SELECT stream_key, stream FROM {heads}")):
            if bytes(key) != stream_key(stream):
                yield f"index: a stream's head is filed under another stream's key ({len(stream)}-character stream id)"

    def verify(self, from_position: int = 1, to_position: int | None = None) -> Iterator[int]:
        """Positions in the range whose stored bytes do not match their checksum, or that cannot
        be decoded at all (the stored envelope is damaged)."""
        for batch in self._rows(from_position, to_position):
            for position, stored, digest in batch:
                if digest and checksums.digest(stored) != digest:
                    yield position
                    continue
                try:
                    if self.codec.decode(stored).position != position:
                        yield position
                except Exception:  # noqa: BLE001 (any failure to read it back is damage)
                    yield position

    def stream(self, stream: str, from_version: int = 1, to_version: int | None = None) -> Iterator[Envelope]:
        """The events of `stream` from `from_version` to `to_version` (inclusive), in order."""
        rows = self.connection.execute(self.schema.sql(
            "SELECT position, envelope, checksum FROM {events} WHERE stream_key = %s AND version >= %s "
            "AND version <= %s ORDER BY version"), (stream_key(stream), max(from_version, 1), to_version or 2**62)
        ).fetchall()
        for row in rows:
            yield self._decode(*row)

    def positions(self, stream: str) -> list[int]:
        """The log position of each version of `stream`, version 1 first (nothing is decoded)."""
        rows = self.connection.execute(
            self.schema.sql("SELECT position FROM {events} WHERE stream_key = %s ORDER BY version"),
            (stream_key(stream),)
        ).fetchall()
        return [int(row[0]) for row in rows]

    def positions_of(self, streams: Sequence[str]) -> list[int]:
        """The log position of every event of `streams`, lowest first (one query, however many)."""
        rows = self.connection.execute(
            self.schema.sql("SELECT position FROM {events} WHERE stream_key = ANY(%s) ORDER BY position"),
            ([stream_key(stream) for stream in streams],)
        ).fetchall()
        return [int(row[0]) for row in rows]

    def stream_backward(self, stream: str, from_version: int | None = None) -> Iterator[Envelope]:
        """The events of `stream` from `from_version` (default: its newest) down to version 1."""
        rows = self.connection.execute(self.schema.sql(
            "SELECT position, envelope, checksum FROM {events} WHERE stream_key = %s AND version <= %s "
            "ORDER BY version DESC"), (stream_key(stream), from_version or 2**62)).fetchall()
        for row in rows:
            yield self._decode(*row)

    def batches(
        self, from_position: int = 1, to_position: int | None = None, batch_size: int = 1024, *, slim: bool = False
    ) -> Iterator[list[Envelope]]:
        """The log from `from_position` to `to_position` (inclusive), decoded in batches."""
        for rows in self._rows(from_position, to_position, batch_size):
            self._check(rows)
            try:
                yield self.codec.decode_many([row[1] for row in rows], slim=slim)
            except Exception as error:  # noqa: BLE001
                raise StoreCorruptError(f"an event in the log is unreadable: {error}") from None

    def batches_backward(
        self, from_position: int | None = None, to_position: int = 1, batch_size: int = 256
    ) -> Iterator[list[Envelope]]:
        """The log from `from_position` (default: the head) down to `to_position`, newest first."""
        high = self.head() if from_position is None else from_position
        while high >= max(to_position, 1):
            low = max(high - batch_size + 1, to_position, 1)
            rows = self.connection.execute(self.schema.sql(
                "SELECT position, envelope, checksum FROM {events} WHERE position >= %s AND position <= %s "
                "ORDER BY position DESC"), (low, high)).fetchall()
            if not rows:
                return
            yield [self._decode(*row) for row in rows]
            high = low - 1

    def all(self, from_position: int = 1, to_position: int | None = None, batch_size: int = 1024) -> Iterator[Envelope]:
        """Every event from `from_position` to `to_position`, one at a time, never all in memory."""
        for batch in self.batches(from_position, to_position, batch_size):
            yield from batch

    def position_at(self, recorded_at: int) -> int:
        """The last position recorded at or before `recorded_at` (µs), 0 if none."""
        found = self._one(self.schema.sql(
            "SELECT position FROM {events} WHERE recorded_at <= %s ORDER BY recorded_at DESC, position DESC LIMIT 1"),
            (recorded_at,))
        return 0 if found is None else int(found)

    def last_recorded_at(self) -> int:
        """The timestamp of the newest event (0 when the log is empty)."""
        found = self._one(self.schema.sql("SELECT recorded_at FROM {events} ORDER BY position DESC LIMIT 1"))
        return 0 if found is None else int(found)

    def mentions(self, needles: Sequence[bytes], from_position: int = 1) -> Iterator[Envelope]:
        """The events from `from_position` on whose stored bytes contain one of `needles`,
        oldest first (the database scans; only matches travel and are decoded)."""
        if not needles:
            return
        test = " OR ".join(["position(%s::bytea in envelope) > 0"] * len(needles))
        rows = self.connection.execute(self.schema.sql(
            "SELECT position, envelope, checksum FROM {events} WHERE position >= %s AND (" + test + ") "
            "ORDER BY position"), (from_position, *needles)).fetchall()
        for row in rows:
            yield self._decode(*row)

    def stored(self, from_position: int, to_position: int) -> list[bytes]:
        """The stored bytes of the events in the range, oldest first, checked against their
        checksums (a copy never carries damage on under new ones).

        Raises:
            StoreCorruptError: Naming the first event whose bytes fail their checksum.
        """
        out: list[bytes] = []
        for batch in self._rows(from_position, to_position):
            self._check(batch)
            out += [bytes(stored) for _, stored, _ in batch]
        return out

    def idempotency_records(self) -> Iterator[tuple[bytes, bytes]]:
        """Every idempotency key the log remembers (as stored) and its stored record."""
        query = self.schema.sql("SELECT key, record FROM {idempotency} ORDER BY key")  # as LMDB's: a copy compares
        for key, record in self.connection.execute(query):
            yield bytes(key), bytes(record)

    def erasures(self) -> int:
        """How many times content was erased from this log (forgetting); 0 if never."""
        value = self._one(self.schema.sql("SELECT value FROM {meta} WHERE key = 'erasures'"))
        return 0 if value is None else int.from_bytes(value, "big")

    def scrubbed_through(self) -> int:
        """The erasure count the log's tables were last wholly rewritten at (0: never)."""
        value = self._one(self.schema.sql("SELECT value FROM {meta} WHERE key = 'scrubbed through'"))
        return 0 if value is None else int.from_bytes(value, "big")

    # --- rows -----------------------------------------------------------------------------

    def _rows(
        self, from_position: int, to_position: int | None, batch_size: int = 4096
    ) -> Iterator[list[tuple[int, bytes, int]]]:
        """(position, stored bytes, checksum) in position order, a batch at a time, streamed by
        a server-side cursor (a million events never sit in memory at once)."""
        last = self.head() if to_position is None else to_position
        first = max(from_position, 1)
        if first > last:
            return
        if last - first < batch_size:  # one batch: one statement, not a cursor's four round trips
            rows = self.connection.cursor(binary=True).execute(self.schema.sql(
                "SELECT position, envelope, checksum FROM {events} WHERE position >= %s AND position <= %s "
                "ORDER BY position"), (first, last)).fetchall()
            if rows:
                yield rows
            return
        fetch = max(batch_size, FETCH_ROWS)
        with self.connection.cursor(name=f"chronograph_rows_{id(self)}", binary=True) as cursor:
            cursor.itersize = fetch
            cursor.execute(self.schema.sql(
                "SELECT position, envelope, checksum FROM {events} WHERE position >= %s AND position <= %s "
                "ORDER BY position"), (first, last))
            chunks = _read_ahead(lambda: cursor.fetchmany(fetch)) if last - first >= fetch else iter(
                [cursor.fetchmany(fetch)])
            for rows in chunks:  # binary: bigint and bytea arrive as int and bytes
                for start in range(0, len(rows), batch_size):
                    yield rows[start:start + batch_size]

    def _check(self, rows: Sequence[tuple[int, bytes, int]]) -> None:
        for position, stored, digest in rows:
            if digest and checksums.digest(stored) != digest:
                raise StoreCorruptError(
                    f"the event at position {position} does not match its checksum: the log is damaged there; "
                    f"{advised('replay --verify', self.where)} lists every damaged position")

    def _decode(self, position: int, stored: bytes, digest: int) -> Envelope:
        stored = bytes(stored)
        self._check([(position, stored, digest)])
        try:
            return self.codec.decode(stored)
        except Exception as error:  # noqa: BLE001
            raise StoreCorruptError(f"the event at position {position} is unreadable: {error}") from None


def _read_ahead(fetch: Callable[[], list[Any]]) -> Iterator[list[Any]]:
    """The chunks `fetch()` returns until an empty one, each fetched while the one before is
    being used: the database reads and sends the next chunk (on another core, the socket
    waited on without the GIL) while the caller folds this one."""
    box: queue.Queue[list[Any] | BaseException] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def run() -> None:
        try:
            while not stop.is_set():
                rows = fetch()
                box.put(rows)
                if not rows:
                    return
        except BaseException as error:  # noqa: BLE001 (raised again in the caller's thread)
            box.put(error)

    thread = threading.Thread(target=run, name="chronograph-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item = box.get()
            if isinstance(item, BaseException):
                raise item
            if not item:
                return
            yield item
    finally:  # the caller stopped early, or the rows ran out: the thread is done before the cursor closes
        stop.set()
        while thread.is_alive():
            try:
                box.get(timeout=0.01)
            except queue.Empty:
                pass
        thread.join()

