"""A scrub of a log in PostgreSQL: its tables rewritten once no older snapshot sees what an
erasure replaced (`vacuum`), and the planner's statistics kept free of content (`statistics`).

The rewrites run with no `statement_timeout` (`vacuum_full` lifts it); the scrub's other
statements (its waits for the log's lock among them) keep the one this connection has. One
that still ends the scrub is said with the setting that did, where it was set and how to lift
it (`_cancelled`), rather than as a refusal that the advised rerun meets again.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
from chronograph.eventstore.errors import EventStoreError, StoreRefusedError
from chronograph.eventstore.log import Scrubbed
from chronograph.eventstore.postgres.schema import Schema
from chronograph.eventstore.postgres.seeds import drop_stale, has_seeds
from chronograph.eventstore.postgres.statistics import rewrite_catalog, seal
from chronograph.eventstore.postgres.vacuum import LOCK_WAIT, vacuum_full, wait_for_snapshots

__all__ = ["scrub_tables"]


def scrub_tables(connection: Any, schema: Schema, shown: str, erasures: int, deadline: float) -> Scrubbed:
    """Rewrite the log's tables (waiting until `deadline` for older snapshots) and the statistics
    catalog; record `erasures` as scrubbed through if no dead row version was held. Seeds an
    erasure by a version made before seeds left are deleted first (`drop_stale`). Return the
    pages the rewritten tables take, the dead row versions a snapshot still held (a later scrub
    gets them), and what the statistics catalog still needs if this role may not rewrite it.

    Raises:
        StoreRefusedError: If a timeout of the database cancelled a statement (see `_cancelled`).
    """
    try:
        return _scrub(connection, schema, shown, erasures, deadline)
    except psycopg.errors.QueryCanceled as error:
        try:
            said = _cancelled(connection, error, shown)
        except psycopg.Error:  # (the connection went too: the cancellation is said as any failure is)
            raise error from None
        raise said from None


def _scrub(connection: Any, schema: Schema, shown: str, erasures: int, deadline: float) -> Scrubbed:
    try:
        drop_stale(connection, schema)
    except psycopg.errors.InsufficientPrivilege:
        raise EventStoreError(
            f"this database role may not delete the seeds of the log (table {schema.name}.seeds) that an "
            "erasure left, which hold what it erased; nothing was scrubbed: grant it DELETE on that table") from None
    seal(connection, schema)
    while True:
        wait_for_snapshots(connection, deadline)
        tables = ("events", "heads", "idempotency", "meta", *(("seeds",) if has_seeds(connection, schema) else ()))
        held = sum(vacuum_full(connection, schema.sql(f"{{{table}}}"),
                               lock_wait=min(LOCK_WAIT, max(0.05, deadline - time.monotonic())))
                   for table in tables)
        if not held or time.monotonic() >= deadline:
            break
    unreached = rewrite_catalog(connection, schema, shown)
    if not held:  # what a later erasure leaves is its own scrub's, or the next open's
        connection.execute(schema.sql(
            "INSERT INTO {meta} (key, value) VALUES ('scrubbed through', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"), (erasures.to_bytes(8, "big"),))
    row = connection.execute(
        "SELECT coalesce(sum(relpages), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s", (schema.name,)).fetchone()
    return Scrubbed(int(row[0]) if row else 0, held, unreached)


_SOURCES = {
    "client": "by this store's URL (its `options`) or the PGOPTIONS environment variable: take it out of there",
    "user": "for the role {role} (ALTER ROLE): lift it with ALTER ROLE {role} RESET statement_timeout",
    "database": "for the database {database} (ALTER DATABASE): lift it with ALTER DATABASE {database} RESET "
                "statement_timeout",
    "database user": "for the role {role} in the database {database}: lift it with ALTER ROLE {role} IN DATABASE "
                     "{database} RESET statement_timeout",
}
"""Where a `statement_timeout` was set (pg_settings' `source`), and how its owner lifts it."""


def _cancelled(connection: Any, error: psycopg.Error, shown: str) -> StoreRefusedError:
    """What a scrub whose statement the database cancelled says: the `statement_timeout` that did
    it, where it is set and how to lift it (or that it was cancelled by request, with none set)."""
    words = " ".join(str(error).split()) or type(error).__name__
    row = connection.execute(
        "SELECT setting::bigint, source, quote_ident(current_user), quote_ident(current_database()) "
        "FROM pg_settings WHERE name = 'statement_timeout'").fetchone()
    after = ("the scrub did not finish (the erased content is out of every read, but old copies may remain in the "
             "database's files)")
    if row is None or not int(row[0]):
        return StoreRefusedError(f"a statement of the scrub of {shown} was cancelled ({words}), by a request "
                                 f"(pg_cancel_backend) and not by a timeout; {after}: run `chronograph scrub` again")
    milliseconds, source, role, database = int(row[0]), str(row[1]), str(row[2]), str(row[3])
    where = _SOURCES.get(source, "in the server's configuration ({source}): lift it there (ALTER SYSTEM, or "
                                 "postgresql.conf)").format(role=role, database=database, source=source)
    return StoreRefusedError(
        f"a statement of the scrub of {shown} ran longer than the statement_timeout of {milliseconds} ms ({words}); "
        f"{after}. That timeout is set {where}; or lift it for the scrub alone: give the URL "
        "`options=-c%20statement_timeout%3D0` and run `chronograph scrub` with it (the table rewrites lift it "
        "themselves; another statement met it, such as a wait for the log's lock while a writer held it)")
