"""When a PostgreSQL commit is durable, and how nothing depends on one before it is.

Where the database allows (`EARLY`), a write lets the log's lock go when its commit is
written, before it is flushed (`PgLog.commit`). Nothing may rely on such a commit before its
flush: the writer's barrier (`DURABLE`, in the same round trip as the COMMIT) returns only
once it is flushed, and every read snapshot asks in its first statement (`SEEN`) how far the
write-ahead log must be flushed for what it sees, and waits for it (`wait_for_flush`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg

__all__ = ["BARRIER", "DURABLE", "EARLY", "POLLS", "SEEN", "wait_for_flush"]

EARLY = ("current_setting('synchronous_standby_names') = '' AND current_setting('synchronous_commit') <> 'off' "
         "AND has_function_privilege('pg_logical_emit_message(boolean,text,text)', 'EXECUTE')")
"""Whether a commit lets the lock go before its flush (see `PgLog.commit`): not where a commit
waits for a synchronous standby (the standby's answer is part of what it waits for, and the
commit stays unseen until then), nor where the database commits without waiting for a flush
anyway (`synchronous_commit = off`), nor where this role may not write the barrier."""
BARRIER = "pg_logical_emit_message(true, 'chronograph', '')"
"""A commit of a statement on its own waits for the flush of the write-ahead log up to itself if
it wrote to it (a transaction id alone does not count); a transactional message, which
nothing but a logical decoder reads, is the smallest such write. The log is one sequence, so
every commit before it is flushed with it."""
DURABLE = f"CASE WHEN pg_current_wal_flush_lsn() >= pg_current_wal_insert_lsn() THEN NULL ELSE {BARRIER} END"
"""The barrier: returns (committed on its own) once every commit made before it is flushed,
writing nothing when all is flushed already (the WAL writer often has, woken by the commit)."""
SEEN = (f"SELECT lsn, pg_current_wal_flush_lsn() >= lsn FROM (SELECT CASE WHEN pg_is_in_recovery() OR NOT ({EARLY}) "
        "THEN NULL ELSE pg_current_wal_insert_lsn() END AS lsn) AS seen")
"""In a snapshot's first statement: the point the write-ahead log must be flushed to before
anything the snapshot sees may be relied on, and whether it is (NULL where commits are not
seen before their flush: a standby, or no early release)."""
POLLS = 20
"""How many times (a millisecond apart) a snapshot looks for the flush it waits for before it
writes a barrier itself (its writer may have gone between its commit and its barrier)."""


def wait_for_flush(connection: psycopg.Connection[Any], lsn: str, barrier: Callable[[], object]) -> None:
    """Return once the write-ahead log is flushed to `lsn`: a snapshot that sees a commit whose
    writer has not passed its barrier yet waits for it on its own `connection`, and calls
    `barrier` (which writes one on another connection) if the flush does not come soon."""
    for _ in range(POLLS):
        time.sleep(0.001)
        row = connection.execute("SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", (lsn,)).fetchone()
        if row and row[0]:
            return
    barrier()
