"""The log's tables in PostgreSQL (its address: `pgaddress`).

Five tables in the log's own schema: `events` (position, stream, version, recorded_at,
the codec's envelope bytes and their checksum, unique per stream version), `heads` (each
stream's version), `idempotency` (key -> what it produced), `meta` (format, identity,
erasure count) and `seeds` (what new caches start from, derived: see `postgres.seeds`).
The envelope bytes are exactly what the LMDB log stores, so a copy between backends can be
checked byte for byte.

Positions never let a reader skip an event that commits late: every write transaction takes
one transaction-scoped advisory lock (`pg_advisory_xact_lock`) before it reads the head,
and holds it until it commits, so positions are assigned in commit order. (A sequence
would hand out position 7 to a transaction that commits after the one holding 8; a reader
following the log would pass 7 by.) It serialises writers, as LMDB does; a write
transaction is a few milliseconds.
"""

from __future__ import annotations

from typing import Any

from chronograph.eventstore.errors import StoreOpenError
from chronograph.eventstore.keys import digest
from psycopg import sql

__all__ = ["CONTENT", "DDL", "FORMAT_VERSION", "SEEDS_DDL", "Schema"]

FORMAT_VERSION = 2
"""The table layout this code writes; a log with a higher one is refused. (2: a `seeds` table,
whose seeds an erasure must delete, see `pgseeds`; a log made in format 1 gets it, and
format 2, with its first seed.)"""

CONTENT: dict[str, tuple[tuple[str, str], ...]] = {
    "events": (("stream", "text"), ("envelope", "bytea")),
    "heads": (("stream", "text"),),
    "idempotency": (("key", "bytea"), ("record", "bytea")),
    "meta": (("key", "text"), ("value", "bytea")),
    "seeds": (("data", "bytea"),),
}
"""The columns that hold what the store says (or name it: a relation's stream spells its names),
with their types, by table. The planner keeps no statistics of them (see `pgstatistics`)."""

SEEDS_DDL = (
    "CREATE UNLOGGED TABLE IF NOT EXISTS {seeds} (tag text NOT NULL, position bigint NOT NULL, part integer NOT NULL, "
    "data bytea NOT NULL, PRIMARY KEY (tag, position, part))",
    "ALTER TABLE {seeds} ALTER COLUMN data SET STORAGE EXTERNAL, ALTER COLUMN data SET STATISTICS 0",
)
"""The seeds table (see `postgres.seeds`): made with the log, or by the first seed of a log made before it.
Its parts are compressed already (no second compression is tried)."""

DDL = (
    "CREATE SCHEMA IF NOT EXISTS {schema}",
    "CREATE TABLE IF NOT EXISTS {events} (position bigint PRIMARY KEY, stream text NOT NULL, version bigint NOT NULL, "
    "recorded_at bigint NOT NULL, checksum bigint NOT NULL, envelope bytea NOT NULL, UNIQUE (stream, version))",
    "CREATE INDEX IF NOT EXISTS events_by_time ON {events} (recorded_at, position)",
    "CREATE TABLE IF NOT EXISTS {heads} (stream text PRIMARY KEY, version bigint NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {idempotency} (key bytea PRIMARY KEY, record bytea NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {meta} (key text PRIMARY KEY, value bytea NOT NULL)",
    *SEEDS_DDL,
    *(f"ALTER TABLE {{{table}}} " + ", ".join(f"ALTER COLUMN {column} SET STATISTICS 0" for column, _ in columns)
      for table, columns in CONTENT.items() if table != "seeds"),
)
"""The tables, created if missing (each statement formatted by `Schema.sql`)."""


class Schema:
    """The identifiers of one log's tables, and statements written against them."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = int.from_bytes(digest(f"chronograph:{name}".encode(), 8), "big", signed=True)
        """The advisory lock key every write transaction of this log takes."""
        self.channel = f"chronograph_{name}"
        """The NOTIFY channel on which appends are announced (the new head as payload)."""
        self._names = {
            "schema": sql.Identifier(name),
            **{table: sql.Identifier(name, table) for table in ("events", "heads", "idempotency", "meta", "seeds")},
        }
        self._cache: dict[str, sql.Composed] = {}

    def sql(self, text: str) -> Any:
        """`text` with {events}, {heads}, {idempotency}, {meta}, {seeds}, {schema} as this log's identifiers."""
        found = self._cache.get(text)
        if found is None:
            found = self._cache[text] = sql.SQL(text).format(**self._names)
        return found

    def holds_log(self, connection: Any) -> bool:
        """Whether the schema holds a log's tables (its `meta`, the last the creation makes).

        Read from pg_class by the statement's own snapshot: `to_regclass` looks the name up in the
        session's catalog caches, which inside a transaction that waited for another creator's lock
        did not yet see the tables that creator committed (its check then took them for a user's)."""
        found = connection.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = 'meta')", (self.name,)).fetchone()
        return bool(found and found[0])

    def check_empty(self, connection: Any, shown: str) -> None:
        """Refuse to make a log in a schema that holds tables of its own (a user's `events` would
        meet ours, and theirs would sit among a memory's).

        Raises:
            StoreOpenError: If it does (`shown`: the log's URL as said); nothing was created.
        """
        held = [row[0] for row in connection.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
            "AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY c.relname LIMIT 6", (self.name,)).fetchall()]
        if held:
            raise StoreOpenError(f"{shown}: schema {self.name!r} already holds tables that are no Chronograph "
                                 f"log's ({', '.join(held[:5])}{', ...' if len(held) > 5 else ''}); a log takes a "
                                 "schema of its own: name another (?schema=NAME)")
