"""Opening a log's tables in PostgreSQL: made where there are none (one creator at a time, under
the log's lock), their format checked (a log an earlier version made is upgraded, `pgupgrading`),
and the statistics an earlier version let ANALYZE sample rewritten."""

from __future__ import annotations

import uuid
from typing import Any

from chronograph.eventstore.errors import StoreCorruptError, StoreFormatError, StoreOpenError
from chronograph.eventstore.postgres.schema import DDL, FORMAT_VERSION, Schema
from chronograph.eventstore.postgres.statistics import rewrite_catalog, seal
from chronograph.eventstore.postgres.upgrading import upgrade

__all__ = ["open_tables", "same_tables"]


def open_tables(connection: Any, schema: Schema, shown: str, *, create: bool, readonly: bool) -> tuple[str, int]:
    """The log's id and the object id of its `meta` table (what tells the tables apart from any
    made there again), making the tables first if `create` and there are none.

    Raises:
        StoreOpenError: If there is no log and none may be made, the schema holds tables of its own,
            or an earlier version made the log and it may not be upgraded (`readonly`, or this role may not).
        StoreCorruptError: If the tables are not a Chronograph log's.
        StoreFormatError: If a newer version wrote the log.
    """
    if not schema.holds_log(connection):
        if not create or readonly:
            raise StoreOpenError(f"there is no Chronograph log at {shown}")
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (schema.lock,))
            if not schema.holds_log(connection):  # another server may have made it meanwhile
                schema.check_empty(connection, shown)
                for statement in DDL:
                    connection.execute(schema.sql(statement))
                connection.execute(schema.sql(
                    "INSERT INTO {meta} (key, value) VALUES ('format', %s), ('store_id', %s) "
                    "ON CONFLICT (key) DO NOTHING"),
                    (FORMAT_VERSION.to_bytes(4, "big"), uuid.uuid4().hex.encode()))
    rows = dict(connection.execute(schema.sql("SELECT key, value FROM {meta}")).fetchall())
    if not readonly and "format" in rows and int.from_bytes(rows["format"], "big") <= FORMAT_VERSION \
            and seal(connection, schema):  # a log an earlier version made: statistics may hold content
        rewrite_catalog(connection, schema)  # what cannot be done now, the next scrub says
    if "format" not in rows or "store_id" not in rows:
        raise StoreCorruptError(f"{shown} holds tables that are not a Chronograph log")
    version = int.from_bytes(rows["format"], "big")
    if version > FORMAT_VERSION:
        raise StoreFormatError(f"{shown} was written in log format {version}, newer than this "
                               f"Chronograph reads ({FORMAT_VERSION}); upgrade Chronograph")
    if version < FORMAT_VERSION:
        if readonly:
            raise StoreOpenError(f"{shown} was made by an earlier Chronograph (log format {version}), whose tables "
                                 "this one upgrades in place before it reads them, and earlier versions cannot open "
                                 "it after. First back it up (with the version that made it, or pg_dump) and stop "
                                 "every server of an earlier version on it; then open it once read-write (start a "
                                 "server on it, or run a command that writes), then read-only")
        upgrade(connection, schema, shown)
    made = connection.execute("SELECT %s::regclass::oid", (f'"{schema.name}".meta',)).fetchone()
    return bytes(rows["store_id"]).decode(), int(made[0])


def same_tables(made: Any, expected: int, connection: Any, shown: str) -> None:
    """Refuse to go on where the log's schema now holds other tables than the ones found at open
    (`made`: the object id of its `meta` now; dropped and a copy of another log made there, under a
    running server): their events would be folded onto the views of the first, and writes decided
    against the mixture. Told by the tables' own identity, which costs no read (the log's id in
    `meta` cost each unit of work a lookup: 9-25% of a server's writes).

    Raises:
        StoreCorruptError: If they are other tables (the connection is left idle).
    """
    if made is not None and int(made) != expected:
        connection.execute("ROLLBACK")  # the connection goes back to its pool idle
        raise StoreCorruptError(f"the log at {shown} was replaced by another log while this process had it open; "
                                "nothing more is read or written here. Start the server again: the views it kept "
                                "of the old log are refused, so give it a new --cache (or delete the one named), "
                                "or leave --cache out for a new per-user one")
