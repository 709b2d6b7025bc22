"""PostgreSQL's planner statistics never keep what the log says.

ANALYZE (autovacuum runs it by itself once a table has changed enough) copies sample values
of every column into the catalog `pg_statistic`: most common values and histogram bounds,
which for the log are whole event envelopes and relation stream ids that spell names.
Erasing rows does not touch them; VACUUM FULL of the log's tables does not either; and an
ANALYZE that replaces them leaves the old row versions dead in the catalog's file.

So the columns that hold content (`pgschema.CONTENT`) have no statistics: `SET STATISTICS 0`
when the tables are created, and on the first open of a log an earlier version made. What an earlier version
let ANALYZE collect is removed (altering a column to its own type drops its statistics, as
the table's owner may; no table is rewritten), and `pg_statistic` is rewritten (VACUUM FULL)
so that no dead version of those rows stays in its file. That needs the database's owner
or a superuser; until it is done the log's `meta` says `statistics` = dirty and every scrub
tries again, saying who can finish it. The planner loses nothing it used: the log is read
by position, or by stream through the unique index, which it still chooses without a
histogram of streams.
"""

from __future__ import annotations

from typing import Any

from chronograph.eventstore.errors import advised
from chronograph.eventstore.postgres.answers import longer, rewriting
from chronograph.eventstore.postgres.locking import LOCK_WAIT as WRITE_WAIT
from chronograph.eventstore.postgres.schema import CONTENT, Schema
from chronograph.eventstore.postgres.vacuum import LOCK_WAIT, vacuum_full

__all__ = ["FLAG", "dirty", "rewrite_catalog", "seal"]

FLAG = "statistics"
"""The `meta` key saying whether `pg_statistic` may hold dead samples of content: b"dirty" and
the catalog's file number when they were made dead (a rewrite by anyone gives it a new one),
or b"clean"."""

DIRTY, CLEAN = b"dirty", b"clean"


def seal(connection: Any, schema: Schema) -> bool:
    """Make sure no content column of the log has, or will get, statistics; return whether some
    had been collected (their dead copies stay in `pg_statistic` until `rewrite_catalog`). One
    transaction, holding the log's lock (two servers opening an old log do it once).

    A column whose statistics target was not 0 is counted as collected even if ANALYZE's
    current row is gone: every earlier ANALYZE left its own dead row versions."""
    open_, collected = _findings(connection, schema)
    if not open_ and not collected:
        return False
    with connection.transaction():
        with longer(connection, WRITE_WAIT):  # (waits as long as a writer holds the lock: not a silence)
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (schema.lock,))
        for table, columns in CONTENT.items():
            changes = [f"ALTER COLUMN {column} TYPE {kind}" for column, kind in columns if (table, column) in collected]
            changes += [f"ALTER COLUMN {column} SET STATISTICS 0" for column, _ in columns
                        if (table, column) in open_ or (table, column) in collected]
            if changes:
                with rewriting(connection):  # (a TYPE change rewrites the table)
                    connection.execute(schema.sql(f"ALTER TABLE {{{table}}} " + ", ".join(changes)))
        connection.execute(schema.sql(
            "INSERT INTO {meta} (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"),
            (FLAG, DIRTY + _filenode(connection).to_bytes(8, "big")))
    return True


def dirty(connection: Any, schema: Schema) -> int | None:
    """The file number `pg_statistic` had when samples of the log's content in it were made dead,
    if it may still hold them (None: it holds none)."""
    row = connection.execute(schema.sql("SELECT value FROM {meta} WHERE key = %s"), (FLAG,)).fetchone()
    value = None if row is None else bytes(row[0])
    return int.from_bytes(value[len(DIRTY):], "big") if value is not None and value.startswith(DIRTY) else None


def rewrite_catalog(connection: Any, schema: Schema, where: str = "") -> str:
    """Rewrite `pg_statistic` (VACUUM FULL: a new file of its live rows) if it may hold dead
    samples of the log's content; return what could not be done, and who can (empty: done).
    A rewrite that had to keep some (a snapshot could see them) leaves the log dirty, with
    the new file's number."""
    then = dirty(connection, schema)
    if then is None:
        return ""
    # Rewritten whatever its file number: a rewrite since (ours at an earlier open, or anyone's)
    # may have copied the dead samples along, if a snapshot could still see them then.
    kept = vacuum_full(connection, "pg_catalog.pg_statistic", lock_wait=LOCK_WAIT)  # only a warning if it may not
    if kept:
        connection.execute(schema.sql("UPDATE {meta} SET value = %s WHERE key = %s"),
                           (DIRTY + _filenode(connection).to_bytes(8, "big"), FLAG))  # they are in the new file
        return (f"PostgreSQL's statistics catalog (pg_statistic) kept {kept} dead row version(s) an open transaction "
                f"may still see; run {advised('scrub', where)} again once it has ended")
    if _filenode(connection) == then:
        return ("PostgreSQL's statistics catalog (pg_statistic) may still hold samples of the log that an earlier "
                "version let ANALYZE collect; only the database's owner or a superuser can rewrite it: ask them to run "
                f"VACUUM FULL pg_catalog.pg_statistic, then {advised('scrub', where)}")
    connection.execute(schema.sql("UPDATE {meta} SET value = %s WHERE key = %s"), (CLEAN, FLAG))
    return ""


def _filenode(connection: Any) -> int:
    return int(connection.execute("SELECT pg_relation_filenode('pg_catalog.pg_statistic')").fetchone()[0])


def _findings(connection: Any, schema: Schema) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(the content columns whose statistics target is not 0, those ANALYZE has statistics of
    now), in one round trip."""
    rows = connection.execute(
        "SELECT 'open', c.relname::text, a.attname::text FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %(schema)s AND c.relkind = 'r' "
        "AND coalesce(a.attstattarget, -1) <> 0 AND NOT a.attisdropped AND a.attnum > 0 "
        "UNION ALL SELECT 'collected', tablename::text, attname::text FROM pg_stats WHERE schemaname = %(schema)s",
        {"schema": schema.name}).fetchall()
    found: dict[str, set[tuple[str, str]]] = {"open": set(), "collected": set()}
    for kind, table, column in rows:
        if column in dict(CONTENT.get(table, ())):
            found[kind].add((table, column))
    return found["open"], found["collected"]
