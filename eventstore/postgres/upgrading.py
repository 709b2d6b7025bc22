"""Upgrading a log an earlier version made to this version's tables (format 3: streams indexed by
their key, see `pgschema`), in place, when a server that may write opens it.

The upgrade is one transaction under the log's lock: it waits for every writer's transaction
(each holds the lock until it commits), and two servers opening an old log at once upgrade
it once (the second, given the lock, finds the keys there and only reads on). It takes the
tables alone (ACCESS EXCLUSIVE), adds each table's `stream_key`, fills it from the stream's text
(`KEY_SQL`, which `stream_key` says in Python) by an UPDATE, makes the key and not the text
unique, marks the log format 3 and forbids `meta` ever to say less; a failure leaves the log as
it was. About 2 s per 100,000 events here, twice a rewrite's (docs/decisions.md), holding the
tables meanwhile.

No table is rewritten (no ALTER COLUMN ... TYPE, no VACUUM FULL): PostgreSQL's rewrites are not
MVCC-safe, and a reader whose snapshot was taken before one commits (a reader takes it before it
touches a table, then waits for the upgrade's lock) would find the tables empty and fold or seed
nothing. The UPDATE keeps the old row versions that snapshot sees; the next autovacuum frees them.

The waits are bounded and the work is not: the log's lock is waited for as long as a write waits
(`LOCK_WAIT`), the tables `TABLE_WAIT` (a queued exclusive lock stalls every reader after it, so a
long reader, such as a backup, refuses the upgrade: retry once it is done), and a
`statement_timeout` of the role or database is lifted for the transaction (else no new version
could ever open the log).

Servers of an earlier version refuse a format 3 log at open. One already running beside the
upgrade keeps reading by stream (a scan, no index: slower) and its writes are refused by the
database, nothing written: its events would have no key, and `meta` refuses its format 2. Upgrade
every server of a log together.
"""

from __future__ import annotations

from typing import Any

import psycopg
from chronograph.eventstore.errors import StoreBusyError, StoreOpenError
from chronograph.eventstore.postgres.answers import longer, rewriting
from chronograph.eventstore.postgres.failures import first_line
from chronograph.eventstore.postgres.locking import LOCK_WAIT, holder
from chronograph.eventstore.postgres.schema import FORMAT_CHECK, FORMAT_VERSION, KEY_SQL, SEEDS_DDL, Schema

__all__ = ["TABLE_WAIT", "UPGRADE", "upgrade"]

TABLE_WAIT = 5.0
"""Seconds the upgrade waits for each of the log's tables before it refuses (readers queue behind the wait)."""

UPGRADE = (
    "ALTER TABLE {events} ADD COLUMN stream_key bytea",
    f"UPDATE {{events}} SET stream_key = {KEY_SQL}",
    "ALTER TABLE {events} ALTER COLUMN stream_key SET NOT NULL, ALTER COLUMN stream_key SET STATISTICS 0, "
    "DROP CONSTRAINT events_stream_version_key, ADD UNIQUE (stream_key, version)",
    "ALTER TABLE {heads} ADD COLUMN stream_key bytea",
    f"UPDATE {{heads}} SET stream_key = {KEY_SQL}",
    "ALTER TABLE {heads} ALTER COLUMN stream_key SET STATISTICS 0, DROP CONSTRAINT heads_pkey, "
    "ADD PRIMARY KEY (stream_key)",
    *SEEDS_DDL,  # (format 3 promises what 2 did: the table, made now, keeps an earlier version from marking the log 2)
)
"""From format 1 or 2 to 3 (each statement formatted by `Schema.sql`; none rewrites a table)."""


def _ms(seconds: float) -> str:
    return f"SET LOCAL lock_timeout = '{max(1, round(seconds * 1000))}ms'"


def _tables(connection: Any, schema: Schema) -> None:
    """Take the log's tables alone, each waited for at most `TABLE_WAIT` seconds."""
    connection.execute(_ms(TABLE_WAIT))
    seeds = connection.execute(  # (a format 1 log has none yet)
        "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = 'seeds')", (schema.name,)).fetchone()
    connection.execute(schema.sql("LOCK TABLE {events}, {heads}, {meta}" + (", {seeds}" if seeds and seeds[0] else "")
                                  + " IN ACCESS EXCLUSIVE MODE"))


def upgrade(connection: Any, schema: Schema, shown: str) -> None:
    """Bring the log's tables to `FORMAT_VERSION`, once, under the log's lock (see the module).

    Raises:
        StoreOpenError: If this role may not alter the tables, or the upgrade failed (nothing was changed).
        StoreBusyError: If a writer held the log's lock, or a reader its tables, too long (nothing was changed).
    """
    step = "lock"
    try:
        with connection.transaction():
            connection.execute("SET LOCAL statement_timeout = 0")
            connection.execute(_ms(LOCK_WAIT))
            with longer(connection, LOCK_WAIT):
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (schema.lock,))
            found = connection.execute(  # by this statement's snapshot: another server may have upgraded meanwhile
                "SELECT EXISTS (SELECT 1 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = 'heads' AND a.attname = 'stream_key' "
                "AND NOT a.attisdropped)", (schema.name,)).fetchone()
            keyed = bool(found and found[0])
            if not keyed:
                step = "tables"
                _tables(connection, schema)
                step = "upgrade"
                with rewriting(connection):  # (an UPDATE of every row: as long as the log is large)
                    for statement in UPGRADE:
                        connection.execute(schema.sql(statement))
            connection.execute(schema.sql(
                "UPDATE {meta} SET value = %s WHERE key = 'format' AND value < %s"),
                (FORMAT_VERSION.to_bytes(4, "big"), FORMAT_VERSION.to_bytes(4, "big")))
            if not keyed:
                connection.execute(schema.sql(f"ALTER TABLE {{meta}} ADD {FORMAT_CHECK}"))
    except psycopg.errors.InsufficientPrivilege as error:
        raise StoreOpenError(
            f"{shown} was made by an earlier Chronograph, whose tables this one upgrades once, in place, and this "
            f"database role may not ({' '.join(str(error).split())}); nothing was changed. Open it once as the role "
            "that owns its tables (the one that made the log)") from None
    except (psycopg.errors.LockNotAvailable, psycopg.errors.DeadlockDetected) as error:
        if step == "lock":
            raise StoreBusyError(
                f"upgrading the log at {shown} to format 3 waited {LOCK_WAIT:g} s for the log's lock, held by "
                f"{holder(connection, schema.lock)}; nothing was changed: retry") from None
        raise StoreBusyError(
            f"upgrading the log at {shown} to format 3 takes its tables alone for a moment, and another connection "
            f"held them past {TABLE_WAIT:g} s ({first_line(error)}): a long reader, such as a backup, an export, a "
            "rebuild or a server folding the log; nothing was changed: retry once it has finished") from None
    except psycopg.Error as error:
        if connection.broken:
            raise  # (the database was lost: said as any open's)
        raise StoreOpenError(f"upgrading the log at {shown} to format 3 failed ({first_line(error)}); nothing was "
                             "changed") from None
