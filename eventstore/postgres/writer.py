"""Appends inside one PostgreSQL write transaction: the log's lock taken, versions checked,
positions assigned, hooks run; and the erasures forgetting makes.

Expected versions are checked against `heads` under the log's advisory lock, and the
database enforces them again: (stream key, version) is unique, so even a writer that skipped
the lock could not put two events at one version.

The lock is held from the transaction's first round trip to its commit (written, not yet
flushed: `PgLog.commit`), so every round trip in between is paid by every other writer
waiting for it. Two things keep them few:
the events other servers appended since this one's views last looked come back with the
lock (`ahead`), and what an append stores is not sent at once but with the commit, in
one pipeline (`_deferred`): a statement that reads first sends what is pending, so the
transaction always reads its own writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import msgspec
import psycopg
from chronograph.eventstore import checksums
from chronograph.eventstore.codec import Codec, Envelope
from chronograph.eventstore.erasure import forgotten_result, redactions, reenveloped
from chronograph.eventstore.errors import ConcurrencyError, StoreCorruptError
from chronograph.eventstore.events import Event
from chronograph.eventstore.keys import text_key
from chronograph.eventstore.log import EraseHook, InlineHook
from chronograph.eventstore.postgres.reader import PgReader
from chronograph.eventstore.postgres.schema import Schema, stream_key, stream_versions
from chronograph.eventstore.postgres.seeds import drop_seeds
from chronograph.eventstore.writes import NO_STREAM, Appender, Recorded, Row, StreamWrite, recorded_decoder

__all__ = ["PgTransaction"]



class PgTransaction(PgReader, Appender):
    """A write transaction: everything appended in it commits together or not at all."""

    def __init__(
        self,
        connection: psycopg.Connection[Any],
        codec: Codec,
        schema: Schema,
        hooks: Sequence[InlineHook],
        erase_hooks: Sequence[EraseHook],
        *,
        head: int,
        last_recorded_at: int,
        erasures: int = 0,
        peek: Callable[[list[str]], dict[str, int]] | None = None,
        ahead: tuple[int, int, list[tuple[int, bytes, int]]] | None = None,
        at: tuple[int, tuple[int, bytes, int] | None] | None = None,
        early: bool = False,
    ) -> None:
        super().__init__(lambda: connection, codec, schema)
        self._open = connection
        self._deferred: list[tuple[Any, Sequence[Any]]] = []
        """Statements of appends not sent yet (they go with the next read, or the commit)."""
        self._deferring: Sequence[StreamWrite] = ()
        """The writes of the deferred append (to say which stream a refusal was about)."""
        self._ahead = ahead
        """(after, reaches, rows): every stored event after position `after` up to `reaches`,
        read with the lock (as (position, stored bytes, checksum))."""
        self._at = at
        """(after, its row or None): the event at position `after`, read with the lock (what views
        standing there compare with the one they folded; until this transaction erases)."""
        self._hooks = hooks
        self._erase_hooks = erase_hooks
        self._recorded_at: int | None = None
        self._head = head
        self._last_recorded_at = last_recorded_at
        self._erasures = erasures
        self._peek = peek
        """Reads stream versions outside this transaction (after a statement of it failed)."""
        self._versions: dict[str, int] = {}
        """Stream versions read or written in this transaction (the lock keeps them true)."""
        self.early = early
        """Whether its commit lets the lock go before the flush (see `PgLog.commit`)."""
        self.appended = False
        """Whether this transaction appended anything (its commit is then announced)."""
        self.views_txn: Any = None
        """The local views' write transaction that goes with this one (set by the views' binding)."""

    @property
    def connection(self) -> psycopg.Connection[Any]:
        """The transaction's connection, with every deferred statement sent (reads see them).

        Raises:
            ConcurrencyError: If the database refused a deferred append (a stream taken to
                be new exists).
        """
        if self._deferred:
            self.send()
        return self._open

    @property
    def sent_on(self) -> psycopg.Connection[Any]:
        """The transaction's connection as it is (nothing deferred is sent)."""
        return self._open

    def send(self, *then: str) -> None:
        """Send the deferred statements and then the statements `then`, in one round trip.

        Raises:
            ConcurrencyError: If the database refused a deferred append (a stream taken to
                be new exists).
        """
        statements, self._deferred = self._deferred, []
        try:
            with self._open.pipeline():
                for query, params in statements:
                    self._open.execute(query, params)
                for text in then:
                    self._open.execute(text)
        except psycopg.errors.UniqueViolation:
            raise self._taken(self._deferring) from None

    def _rows(
        self, from_position: int, to_position: int | None, batch_size: int = 4096
    ) -> Iterator[list[tuple[int, bytes, int]]]:
        """As `PgReader._rows`, from what came back with the lock when it holds the whole range."""
        last = self.head() if to_position is None else to_position
        first = max(from_position, 1)
        if self._ahead is not None and self._ahead[0] < first and last <= self._ahead[1]:
            wanted = [row for row in self._ahead[2] if first <= row[0] <= last]
            for start in range(0, len(wanted), batch_size):
                yield wanted[start:start + batch_size]
            return
        yield from super()._rows(from_position, to_position, batch_size)

    def get(self, position: int) -> Envelope | None:
        if self._at is not None and self._at[0] == position:
            row = self._at[1]
            return None if row is None else self._decode(*row)
        return super().get(position)

    def head(self) -> int:
        """The position of the last event (known: the lock keeps other writers out)."""
        return self._head

    def last_recorded_at(self) -> int:
        return self._last_recorded_at

    def erasures(self) -> int:
        return self._erasures

    def stream_version(self, stream: str) -> int:
        found = self._versions.get(stream)
        if found is None:
            found = self._versions[stream] = super().stream_version(stream)
        return found

    def _known_versions(self, streams: Sequence[str]) -> None:
        """Read the versions of `streams` not known yet, in one query."""
        unknown = [s for s in dict.fromkeys(streams) if s not in self._versions]
        if unknown:
            self._versions.update(dict.fromkeys(unknown, 0))
            self._versions.update(stream_versions(self.connection, self.schema, unknown))

    def _prepare(self, writes: Sequence[StreamWrite]) -> None:
        # A new stream (NO_STREAM) is taken to be at 0 without asking: if it exists after all,
        # its version 1 breaks the unique (stream key, version) and the append fails as it should.
        self._known_versions([write.stream for write in writes if write.expected != NO_STREAM])
        for write in writes:
            if write.expected == NO_STREAM:
                self._versions.setdefault(write.stream, 0)

    def _store(self, rows: list[Row], versions: dict[str, int], writes: Sequence[StreamWrite]) -> None:
        columns = [list(column) for column in zip(*rows, strict=True)]
        keys = {stream: stream_key(stream) for stream in versions}
        self.connection  # noqa: B018 (an earlier append's statements go first, and say if they were refused)
        self._deferring = writes
        self._deferred.append((self.schema.sql(  # one statement however many events (arrays unnested), sent later
            "WITH appended AS (INSERT INTO {events} (position, stream, version, recorded_at, checksum, "
            "envelope, stream_key) SELECT * FROM unnest(%s::bigint[], %s::text[], %s::bigint[], %s::bigint[], "
            "%s::bigint[], %s::bytea[], %s::bytea[])) "
            "INSERT INTO {heads} (stream, version, stream_key) SELECT * FROM unnest(%s::text[], %s::bigint[], "
            "%s::bytea[]) ON CONFLICT (stream_key) DO UPDATE SET version = EXCLUDED.version"),
            (*columns, [keys[stream] for stream in columns[1]], list(versions), list(versions.values()),
             list(keys.values()))))
        self._versions.update(versions)
        self._head = rows[-1][0]
        self.appended = True

    def _recorded(self, idempotency_key: str) -> Recorded | None:
        value = self._one(self.schema.sql("SELECT record FROM {idempotency} WHERE key = %s"),
                          (_key(idempotency_key),))
        return None if value is None else recorded_decoder.decode(value)

    def _remember(self, idempotency_key: str, record: bytes, *, new: bool) -> None:
        statement = ("INSERT INTO {idempotency} (record, key) VALUES (%s, %s)" if new
                     else "UPDATE {idempotency} SET record = %s WHERE key = %s")
        self._deferred.append((self.schema.sql(statement), (record, _key(idempotency_key))))

    def _versions_of(self, streams: set[str]) -> dict[str, int]:
        versions = dict.fromkeys(streams, 0)
        versions.update(stream_versions(self.connection, self.schema, streams))  # one query: nothing else may
        # run on the connection during COPY
        return versions

    def _store_copy(self, rows: list[Row], versions: dict[str, int]) -> None:
        keys = {stream: stream_key(stream) for stream in versions}
        with self.connection.cursor() as cursor, cursor.copy(self.schema.sql(
                "COPY {events} (position, stream, version, recorded_at, checksum, envelope, stream_key) "
                "FROM STDIN")) as copy:
            for row in rows:
                copy.write_row((*row, keys[row[1]]))
        self._head, self._last_recorded_at = rows[-1][0], rows[-1][3]
        self._versions.update(versions)
        self.connection.cursor().executemany(self.schema.sql(
            "INSERT INTO {heads} (stream, version, stream_key) VALUES (%s, %s, %s) "
            "ON CONFLICT (stream_key) DO UPDATE SET version = EXCLUDED.version"),
            [(stream, version, keys[stream]) for stream, version in versions.items()])
        self.appended = True

    def restore_records(self, records: Sequence[tuple[bytes, bytes]], erasures: int, *, clean: bool = True) -> None:
        """Keep idempotency `records` (key, record, as stored) and the count of erasures (a copy;
        see `LogTransaction.restore_records` for `clean`)."""
        if records:
            self.connection.cursor().executemany(self.schema.sql(
                "INSERT INTO {idempotency} (key, record) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET "
                "record = EXCLUDED.record"), list(records))
        if erasures:
            count = erasures.to_bytes(8, "big")
            self.connection.execute(self.schema.sql(  # nothing of its own to scrub: nor of the copy's
                "INSERT INTO {meta} (key, value) SELECT 'scrubbed through', %s WHERE %s AND "
                "(SELECT value FROM {meta} WHERE key = 'erasures') IS NOT DISTINCT FROM "
                "(SELECT value FROM {meta} WHERE key = 'scrubbed through') "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"), (count, clean))
            self.connection.execute(self.schema.sql(
                "INSERT INTO {meta} (key, value) VALUES ('erasures', %s) ON CONFLICT (key) DO UPDATE SET value = "
                "EXCLUDED.value"), (count,))

    def _taken(self, writes: Sequence[StreamWrite]) -> ConcurrencyError:
        """The error for an append the database refused because a stream taken to be new exists
        (this transaction is spoilt: another connection says at which version it is)."""
        new = [write.stream for write in writes if write.expected == NO_STREAM]
        found = self._peek(new) if self._peek is not None else {}
        stream = next((s for s in new if found.get(s)), new[0] if new else "a stream")
        return ConcurrencyError(stream, NO_STREAM, found.get(stream, 0))

    # --- erasing --------------------------------------------------------------------------

    def _erase(self, streams: Mapping[str, str], redact: Callable[[Envelope], Event | None],
               quoted: Sequence[bytes]) -> list[Envelope]:
        originals: list[Envelope] = []
        self._at = None
        cursor = self.connection.cursor()
        for old, new in streams.items():
            redacted = redactions(list(self.stream(old)), old, new, redact)
            events = [envelope for envelope, _ in redacted]
            rows = []
            for envelope, event in redacted:
                _, stored = reenveloped(self.codec, envelope, new, event)
                rows.append((new, stream_key(new), checksums.digest(stored), stored, envelope.position))
            if rows:
                cursor.executemany(self.schema.sql("UPDATE {events} SET stream = %s, stream_key = %s, checksum = %s, "
                                                   "envelope = %s WHERE position = %s"), rows)
            if new != old and events:
                self._versions.pop(old, None)
                cursor.execute(self.schema.sql("DELETE FROM {heads} WHERE stream_key = %s"), (stream_key(old),))
                cursor.execute(self.schema.sql("INSERT INTO {heads} (stream, version, stream_key) VALUES (%s, %s, %s)"),
                               (new, events[-1].version, stream_key(new)))
            originals.extend(events)
        self._forget_results(streams, sorted(envelope.position for envelope in originals), quoted)
        drop_seeds(cursor, self.schema)  # they hold what was erased
        count = self._erasures = self.erasures() + 1
        cursor.execute(self.schema.sql(
            "INSERT INTO {meta} (key, value) VALUES ('erasures', %s) ON CONFLICT (key) DO UPDATE SET value = "
            "EXCLUDED.value"), (count.to_bytes(8, "big"),))
        return originals

    def rewrite(self, position: int, event: Event) -> Envelope:
        """Replace the event at `position` by `event`, its envelope kept; return the original.

        Raises:
            StoreCorruptError: If there is no event at `position`.
        """
        self._at = None
        original = self.get(position)
        if original is None:
            raise StoreCorruptError(f"the log has no event at position {position} to rewrite")
        _, stored = reenveloped(self.codec, original, original.stream, event)
        self.connection.execute(self.schema.sql(
            "UPDATE {events} SET checksum = %s, envelope = %s WHERE position = %s"),
            (checksums.digest(stored), stored, position))
        drop_seeds(self.connection.cursor(), self.schema)  # they hold what the event said
        return original

    def _forget_results(self, streams: Mapping[str, str], erased: Sequence[int], quoted: Sequence[bytes]) -> None:
        """Drop the results remembered for calls that wrote at the `erased` positions or that
        quote one of `quoted` (the database finds the records that name a stream of `streams`,
        as a record's versions spell each stream it wrote, or hold one of `quoted`)."""
        needles = [msgspec.msgpack.encode(stream) for stream in streams] + list(quoted)
        test = " OR ".join(["position(%s::bytea in record) > 0"] * len(needles))
        rows = self.connection.execute(self.schema.sql(
            "SELECT key, record FROM {idempotency} WHERE " + test), needles).fetchall() if needles else []
        changed = [(kept, key) for key, record in rows
                   if (kept := forgotten_result(bytes(record), streams, erased, quoted))]
        if changed:
            self.connection.cursor().executemany(
                self.schema.sql("UPDATE {idempotency} SET record = %s WHERE key = %s"), changed)


def _key(idempotency_key: str) -> bytes:
    return text_key(idempotency_key)  # as the LMDB log keys it: a copy moves records as they are
