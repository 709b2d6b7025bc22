"""Seeds: what a new cache of the log starts from, kept beside the log, instead of folding it all.

A server whose cache is new builds its views by folding every event of the log (a million
events take tens of seconds); its peers have done that work already. So a server keeps,
beside the log, one copy of what its cache derived, as opaque parts its views layer makes
and reads, at a position of the log; a new cache loads the newest and folds only what came
after. A seed is derived data: the table is UNLOGGED (no write-ahead log, no replica, no
archive gets a copy; a database crash empties it, which costs only a slower next start).

A seed holds what the log held when it was made, erased entities included, so:

- every erasure deletes every seed, in its own transaction (`drop_seeds`, under the log's lock);
  one by a version made before seeds deletes none: a seed made at another erasure count than the
  log's is deleted where a cache passes it over, and by a scrub (`drop_stale`);
- a seed is made visible only under the log's lock, and only if the log's erasure count is
  still the one it was made at (an erasure meanwhile would have deleted it);
- a scrub rewrites the table, as it rewrites the log's (`PgLog.scrub`);
- a cache starts from a seed only if the log still has its erasure count and, at its position,
  the event it was made on (its checksum): a log replaced under the table reads as another.

Each seed says what it is (`tag`, its layout: a seed of another layout is ignored). One is
kept per tag: keeping a newer one deletes the older in the same transaction. The table is
made by the first seed of a log made before it; a log that holds one is format 2, which
versions that would not delete it at an erasure refuse to open.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import suppress
from typing import TYPE_CHECKING, Any

import msgspec
import psycopg
from chronograph.eventstore.errors import EventStoreError, StoreBusyError
from chronograph.eventstore.postgres.answers import longer
from chronograph.eventstore.postgres.locking import LOCK_WAIT, bounded
from chronograph.eventstore.postgres.schema import FORMAT_VERSION, SEEDS_DDL, Schema

if TYPE_CHECKING:
    from chronograph.eventstore.postgres.log import PgLog

__all__ = ["Seed", "Seeds", "drop_seeds", "drop_stale", "has_seeds"]


class Seed(msgspec.Struct, frozen=True, array_like=True):
    """What a seed is: its layout's tag, the position and erasure count it stands at, the checksum
    of the log's event at that position, and how many parts it has (numbered from 1)."""

    tag: str
    position: int
    erasures: int
    checksum: int
    parts: int


_decode = msgspec.msgpack.Decoder(Seed).decode
_encode = msgspec.msgpack.encode


class Seeds:
    """The seeds of one PostgreSQL log."""

    def __init__(self, log: PgLog) -> None:
        self._log = log
        self._schema = log.schema
        self._lock = log.schema.lock ^ 0x5EED  # keepers take turns; writers never wait on it

    def newest(self, tag: str) -> Seed | None:
        """The newest seed of layout `tag` a cache may start from now, or None."""
        with self._log._connection() as (connection, _):  # noqa: SLF001
            if not has_seeds(connection, self._schema):
                return None
            try:
                row = connection.execute(self._schema.sql(
                    "SELECT s.data, (SELECT checksum FROM {events} WHERE position = s.position), "
                    "(SELECT value FROM {meta} WHERE key = 'erasures') FROM {seeds} s "
                    "WHERE s.tag = %s AND s.part = 0 ORDER BY s.position DESC LIMIT 1"), (tag,)).fetchone()
            except (psycopg.errors.FeatureNotSupported,  # a standby: unlogged tables are not there
                    psycopg.errors.InsufficientPrivilege):  # a role not granted them: start without
                return None
        if row is None:
            return None
        try:
            seed = _decode(bytes(row[0]))
        except (msgspec.DecodeError, msgspec.ValidationError):  # damaged: the cache folds the log
            return None
        erasures = 0 if row[2] is None else int.from_bytes(row[2], "big")
        if erasures != seed.erasures:  # erased since by a version made before seeds: it holds what went
            with suppress(psycopg.errors.InsufficientPrivilege, psycopg.errors.LockNotAvailable, StoreBusyError), \
                    self._log._connection() as (connection, _):  # noqa: SLF001 (busy: dropped another time)
                drop_stale(connection, self._schema)
            return None
        if seed.tag != tag or row[1] is None or int(row[1]) != seed.checksum:
            return None
        return seed

    def parts(self, seed: Seed) -> Iterator[bytes]:
        """The parts of `seed`, in order, one read each (memory: one part).

        Raises:
            LookupError: If the seed is gone meanwhile (an erasure deleted it, or a newer replaced it).
        """
        statement = self._schema.sql("SELECT data FROM {seeds} WHERE tag = %s AND position = %s AND part = %s")
        for part in range(1, seed.parts + 1):
            with self._log._connection() as (connection, _):  # noqa: SLF001
                row = connection.execute(statement, (seed.tag, seed.position, part)).fetchone()
            if row is None:
                raise LookupError(f"the seed at position {seed.position} is gone")
            yield bytes(row[0])

    def keep(self, tag: str, position: int, erasures: int, parts: Iterable[bytes], spacing: int = 0) -> bool:
        """Keep `parts` as the seed of layout `tag` at `position`, made at erasure count `erasures`;
        return whether it was kept (not if another server is keeping one, one within `spacing`
        events of it or newer is kept already, the log was erased since, or this role may not
        make the table). An exception from `parts` leaves nothing kept."""
        with self._log._connection() as (connection, _):  # noqa: SLF001
            if not has_seeds(connection, self._schema) and not self._make_table(connection):
                return False
            try:
                return self._keep(connection, tag, position, erasures, parts, spacing)
            except _Stale:  # rolled back
                return False

    def _keep(self, connection: Any, tag: str, position: int, erasures: int, parts: Iterable[bytes],
              spacing: int) -> bool:
        with connection.transaction():
            connection.execute("SET LOCAL synchronous_commit TO off")  # derived: a crash loses a start's speed
            if not connection.execute("SELECT pg_try_advisory_xact_lock(%s)", (self._lock,)).fetchone()[0]:
                return False
            newest = connection.execute(self._schema.sql(
                "SELECT max(position) FROM {seeds} WHERE tag = %s"), (tag,)).fetchone()[0]
            if newest is not None and int(newest) + max(spacing, 1) > position:
                return False
            count = 0
            with connection.cursor() as cursor, cursor.copy(self._schema.sql(
                    "COPY {seeds} (tag, position, part, data) FROM STDIN (FORMAT BINARY)")) as copy:
                copy.set_types(["text", "int8", "int4", "bytea"])
                for count, part in enumerate(parts, 1):
                    copy.write_row((tag, position, count, part))
            if not connection.execute("SELECT pg_try_advisory_xact_lock(%s)",  # no erasure now; another writer
                                      (self._schema.lock,)).fetchone()[0]:  # holds the lock: kept another time
                raise _Stale
            row = connection.execute(self._schema.sql(
                "SELECT (SELECT checksum FROM {events} WHERE position = %s), "
                "(SELECT value FROM {meta} WHERE key = 'erasures')"), (position,)).fetchone()
            now = 0 if row[1] is None else int.from_bytes(row[1], "big")
            if row[0] is None or now != erasures:
                raise _Stale
            seed = Seed(tag, position, erasures, int(row[0]), count)
            connection.execute(self._schema.sql(
                "INSERT INTO {seeds} (tag, position, part, data) VALUES (%s, %s, 0, %s)"),
                (tag, position, _encode(seed)))
            connection.execute(self._schema.sql(
                "DELETE FROM {seeds} WHERE tag = %s AND position <> %s"), (tag, position))
        return True

    def _make_table(self, connection: Any) -> bool:
        """Make the seeds table of a log made before seeds (and mark the log format 2), under the
        log's lock; return False if this role may not."""
        try:
            with connection.transaction():
                _lock(connection, self._schema)
                for statement in SEEDS_DDL:
                    connection.execute(self._schema.sql(statement))
                connection.execute(self._schema.sql("UPDATE {meta} SET value = %s WHERE key = 'format'"),
                                   (FORMAT_VERSION.to_bytes(4, "big"),))
        except psycopg.errors.InsufficientPrivilege:
            return False
        return True


def has_seeds(connection: Any, schema: Schema) -> bool:
    """Whether the log has a seeds table (a log made before seeds has none until its first)."""
    found = connection.execute(
        "SELECT to_regclass(format('%%I.seeds', %s::text)) IS NOT NULL", (schema.name,)).fetchone()
    return bool(found and found[0])


def drop_seeds(cursor: Any, schema: Schema) -> None:
    """Delete every seed, in the erasure transaction of `cursor` (which holds the log's lock)."""
    if has_seeds(cursor.connection, schema):
        try:
            cursor.execute(schema.sql("DELETE FROM {seeds}"))
        except psycopg.errors.InsufficientPrivilege:
            raise EventStoreError(
                f"this database role may not delete the seeds of the log (table {schema.name}.seeds), which hold "
                "what is being erased; nothing was erased: grant it DELETE on that table") from None


def drop_stale(connection: Any, schema: Schema) -> int:
    """Delete every seed made at another erasure count than the log's (an erasure by a version made
    before seeds deleted none of them: they hold what it erased), under the log's lock, whatever
    its layout; return how many. A seed whose header does not read as a `Seed` is left.

    Raises:
        psycopg.errors.InsufficientPrivilege: If this role may not delete from the table.
    """
    if not has_seeds(connection, schema):
        return 0
    with connection.transaction():
        _lock(connection, schema)  # no erasure, no seed kept now
        row = connection.execute(schema.sql("SELECT value FROM {meta} WHERE key = 'erasures'")).fetchone()
        now = 0 if row is None or row[0] is None else int.from_bytes(row[0], "big")
        stale = []
        for tag, position, data in connection.execute(schema.sql(
                "SELECT tag, position, data FROM {seeds} WHERE part = 0")).fetchall():
            try:
                if _decode(bytes(data)).erasures != now:
                    stale.append((tag, position))
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
        if stale:
            connection.cursor().executemany(schema.sql("DELETE FROM {seeds} WHERE tag = %s AND position = %s"), stale)
    return len(stale)


def _lock(connection: Any, schema: Schema) -> None:
    """Take the log's lock for the transaction, waiting as a write does (`LOCK_WAIT`, not counted
    as the database's silence).

    Raises:
        psycopg.errors.LockNotAvailable: If another writer held it all that time.
    """
    with longer(connection, LOCK_WAIT):
        connection.execute(bounded(f"SELECT pg_advisory_xact_lock({int(schema.lock)})"))


class _Stale(Exception):
    """The log was erased while a seed was made: it is not kept."""
