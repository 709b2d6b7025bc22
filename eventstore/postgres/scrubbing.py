"""A scrub of a log in PostgreSQL: its tables rewritten once no older snapshot sees what an
erasure replaced (`vacuum`), and the planner's statistics kept free of content (`statistics`)."""

from __future__ import annotations

import time
from typing import Any

import psycopg
from chronograph.eventstore.errors import EventStoreError
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
    gets them), and what the statistics catalog still needs if this role may not rewrite it."""
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
