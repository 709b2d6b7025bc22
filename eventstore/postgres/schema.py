"""The log's tables in PostgreSQL (its address: `pgaddress`).

Five tables in the log's own schema: `events` (position, stream, version, recorded_at,
the codec's envelope bytes and their checksum, and the stream's key, unique per stream key
and version), `heads` (each stream's version, by its key), `idempotency` (key -> what it
produced), `meta` (format, identity, erasure count) and `seeds` (what new caches start from,
derived: see `postgres.seeds`).

A stream is found by its key (`stream_key`), never by its text in an index: a relation's
stream spells its workspace, both names and its type, which can pass the 2.7 KB PostgreSQL
caps a b-tree entry at. An entity's stream is keyed by its own 15 bytes (time-ordered, so a
new entity's entries go at the end of the indexes, as with the text they replace), any other
by its SHA-256 (32 bytes: the lengths differ, so the two kinds never meet). A collision of
SHA-256 would file two streams as one; none is known, and finding one takes about 2^128
digests, so the database's uniqueness of (key, version) and of the head per key is that of
the stream (the LMDB log keys the same streams by 16 bytes of BLAKE2b, `keys.stream_key`).
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

from collections.abc import Iterable
from hashlib import sha256
from typing import Any

from chronograph.eventstore.errors import StoreOpenError
from chronograph.eventstore.keys import digest, entity_key
from psycopg import sql

__all__ = ["CONTENT", "DDL", "FORMAT_CHECK", "FORMAT_VERSION", "KEY_SQL", "SEEDS_DDL", "Schema", "stream_key",
           "stream_versions"]

FORMAT_VERSION = 3
"""The table layout this code writes; a log with a higher one is refused. (2: a `seeds` table,
whose seeds an erasure must delete, see `pgseeds`; a log made in format 1 gets it, and
format 2, with its first seed. 3: streams indexed by their key, not their text; a log made
before is upgraded in place when opened, see `pgupgrading`.)"""

CONTENT: dict[str, tuple[tuple[str, str], ...]] = {
    "events": (("stream", "text"), ("envelope", "bytea"), ("stream_key", "bytea")),
    "heads": (("stream", "text"), ("stream_key", "bytea")),
    "idempotency": (("key", "bytea"), ("record", "bytea")),
    "meta": (("key", "text"), ("value", "bytea")),
    "seeds": (("data", "bytea"),),
}
"""The columns that hold what the store says (or name it: a relation's stream spells its names),
with their types, by table. The planner keeps no statistics of them (see `pgstatistics`): nor of
the streams' keys, whose digests would let a guess of a name be checked."""

FORMAT_CHECK = "CONSTRAINT format_at_least_3 CHECK (key <> 'format' OR value >= '\\x00000003'::bytea)"
"""What keeps `meta` from saying a format below 3 (the format is 4 big-endian bytes, which compare as
numbers): a server of an earlier version that was running when the log was upgraded would mark it
format 2 when it keeps its first seed, and earlier versions would open it again."""

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
    "recorded_at bigint NOT NULL, checksum bigint NOT NULL, envelope bytea NOT NULL, stream_key bytea NOT NULL, "
    "UNIQUE (stream_key, version))",
    "CREATE INDEX IF NOT EXISTS events_by_time ON {events} (recorded_at, position)",
    "CREATE TABLE IF NOT EXISTS {heads} (stream text NOT NULL, version bigint NOT NULL, stream_key bytea PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS {idempotency} (key bytea PRIMARY KEY, record bytea NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {{meta}} (key text PRIMARY KEY, value bytea NOT NULL, {FORMAT_CHECK})",
    *SEEDS_DDL,
    *(f"ALTER TABLE {{{table}}} " + ", ".join(f"ALTER COLUMN {column} SET STATISTICS 0" for column, _ in columns)
      for table, columns in CONTENT.items() if table != "seeds"),
)
"""The tables, created if missing (each statement formatted by `Schema.sql`). The key comes last, where
an upgrade adds it to a log made before (`pgupgrading`): the tables are the same whichever made them."""

KEY_SQL = ("CASE WHEN length(stream) = 37 AND stream ~ '^entity-[0123456789abcdef]{{30}}$' "
           "THEN decode(substr(stream, 8), 'hex') ELSE sha256(convert_to(stream, 'UTF8')) END")
"""`stream_key` of the column `stream`, in SQL (what an upgrade fills the keys of a log made before with)."""


def stream_key(stream: str) -> bytes:
    """The key the log's indexes file `stream` under: an entity's stream's own 15 bytes
    (`keys.entity_key`), any other's SHA-256 (32 bytes). `KEY_SQL` says the same in SQL."""
    key = entity_key(stream)
    return sha256(stream.encode()).digest() if key is None else key


def stream_versions(connection: Any, schema: Schema, streams: Iterable[str]) -> list[tuple[str, int]]:
    """(stream, version) of those of `streams` the log holds, read by their keys in one query on `connection`."""
    return connection.execute(schema.sql("SELECT stream, version FROM {heads} WHERE stream_key = ANY(%s)"),
                              ([stream_key(stream) for stream in streams],)).fetchall()


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

    def stored_bytes(self, connection: Any) -> int:
        """What the schema's tables take in the database, indexes included."""
        row = connection.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'", (self.name,)).fetchone()
        return int(row[0]) if row else 0

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
