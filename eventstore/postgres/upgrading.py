"""Upgrading a log an earlier version made to this version's tables (format 3: streams indexed by
their key, see `pgschema`), in place, when a server that may write opens it.

The upgrade is one transaction under the log's lock: it waits for every writer's transaction
(each holds the lock until it commits), and two servers opening an old log at once upgrade
it once (the second, given the lock, finds the keys there and only reads on). It adds each
table's `stream_key`, fills it from the stream's text (`KEY_SQL`, which `stream_key` says in
Python), makes the key and not the text unique, and marks the log format 3; a failure leaves
the log as it was. Each table is rewritten once, by the column's own type change (as VACUUM FULL
does: its live rows, indexes built anew, no dead copy left), holding the tables against every
other reader and writer meanwhile: about 1.4 s per 100,000 events here (docs/decisions.md).

Servers of an earlier version refuse a format 3 log at open. One already running beside the
upgrade keeps reading by stream (a scan, no index: slower) and its writes are refused by the
database, nothing written: its events would have no key. Upgrade every server of a log together.
"""

from __future__ import annotations

from typing import Any

import psycopg
from chronograph.eventstore.errors import StoreOpenError
from chronograph.eventstore.postgres.schema import FORMAT_VERSION, KEY_SQL, SEEDS_DDL, Schema

__all__ = ["UPGRADE", "upgrade"]

UPGRADE = (
    "ALTER TABLE {events} ADD COLUMN stream_key bytea",
    f"ALTER TABLE {{events}} ALTER COLUMN stream_key TYPE bytea USING ({KEY_SQL}), "
    "ALTER COLUMN stream_key SET NOT NULL, ALTER COLUMN stream_key SET STATISTICS 0, "
    "DROP CONSTRAINT events_stream_version_key, ADD UNIQUE (stream_key, version)",
    "ALTER TABLE {heads} ADD COLUMN stream_key bytea",
    f"ALTER TABLE {{heads}} ALTER COLUMN stream_key TYPE bytea USING ({KEY_SQL}), "
    "ALTER COLUMN stream_key SET STATISTICS 0, DROP CONSTRAINT heads_pkey, ADD PRIMARY KEY (stream_key)",
    *SEEDS_DDL,  # (format 3 promises what 2 did: the table, made now, keeps an earlier version from marking the log 2)
)
"""From format 1 or 2 to 3 (each statement formatted by `Schema.sql`)."""


def upgrade(connection: Any, schema: Schema, shown: str) -> None:
    """Bring the log's tables to `FORMAT_VERSION`, once, under the log's lock (see the module).

    Raises:
        StoreOpenError: If this role may not alter the tables (nothing was changed).
    """
    try:
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (schema.lock,))
            keyed = connection.execute(  # by this statement's snapshot: another server may have upgraded meanwhile
                "SELECT EXISTS (SELECT 1 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = 'heads' AND a.attname = 'stream_key' "
                "AND NOT a.attisdropped)", (schema.name,)).fetchone()
            if not (keyed and keyed[0]):
                for statement in UPGRADE:
                    connection.execute(schema.sql(statement))
            connection.execute(schema.sql(
                "UPDATE {meta} SET value = %s WHERE key = 'format' AND value < %s"),
                (FORMAT_VERSION.to_bytes(4, "big"), FORMAT_VERSION.to_bytes(4, "big")))
    except psycopg.errors.InsufficientPrivilege as error:
        raise StoreOpenError(
            f"{shown} was made by an earlier Chronograph, whose tables this one upgrades once, in place, and this "
            f"database role may not ({' '.join(str(error).split())}); nothing was changed. Open it once as the role "
            "that owns its tables (the one that made the log)") from None
