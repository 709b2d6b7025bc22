"""Rewriting a table so that no page of it keeps a dead row version: VACUUM FULL, once no
snapshot can still see one.

VACUUM FULL copies a table's rows into new files and drops the old ones; but a row version
that some open transaction's snapshot may still see ("recently dead") is copied too, whatever
that transaction reads: a REPEATABLE READ query of another table, a long report, autovacuum's
ANALYZE, a replica's feedback. So a scrub first waits until every snapshot taken before it
began has ended (PostgreSQL's view of each backend's oldest snapshot, and the replication
slots'), then rewrites, and counts what the rewrite still had to keep (VACUUM VERBOSE says);
a count above zero is `held`, as a long LMDB reader holds pages, for a later scrub.
"""

from __future__ import annotations

import re
import time
from typing import Any

from chronograph.eventstore.postgres.answers import rewriting
from psycopg import sql
from psycopg.errors import LockNotAvailable

__all__ = ["LOCK_WAIT", "vacuum_full", "wait_for_snapshots"]

LOCK_WAIT = 0.5
"""How long a scrub's rewrite of a table waits for its lock at a time (within the scrub's own
timeout): every reader of the table queues behind the wait (see `vacuum_full`)."""

_HOLDERS = (
    "SELECT (SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_xmin IS NOT NULL "
    "  AND (datname = current_database() OR datname IS NULL) AND age(backend_xmin) >= age(%(bound)s::text::xid)) "
    "+ (SELECT count(*) FROM pg_replication_slots WHERE (database IS NULL OR database = current_database()) "
    "  AND xmin IS NOT NULL AND age(xmin) >= age(%(bound)s::text::xid))"
)
"""How many backends (and replication slots) keep a snapshot as old as transaction `bound`."""
_FIRST_NUMBER = re.compile(r"\d+")


def wait_for_snapshots(connection: Any, deadline: float) -> int:
    """Wait until no other transaction keeps a snapshot taken before now, or `deadline` (a
    `time.monotonic` value) passes; return how many still do (0: none)."""
    row = connection.execute("SELECT pg_current_xact_id()::text").fetchone()
    bound = str(int(row[0]) % (1 << 32))  # the 32-bit id pg_stat_activity shows
    while True:
        held = int(connection.execute(_HOLDERS, {"bound": bound}).fetchone()[0])
        if not held or time.monotonic() >= deadline:
            return held
        time.sleep(0.05)


def vacuum_full(connection: Any, relation: Any, lock_wait: float | None = None) -> int:
    """VACUUM FULL `relation` (a name or a composed identifier); return how many dead row versions
    it had to keep because a snapshot may still see them (0: none is left in any page).

    With `lock_wait` (seconds), the table's lock is waited for no longer: a transaction that read
    the table holds it, and every reader that comes after queues behind the rewrite's wait, so an
    unbounded one stalls the whole log for as long as the longest reader. Not taken in time, the
    rewrite did nothing and all its dead row versions are kept (1 is returned: at least one).

    The rewrite itself is not bounded: a `statement_timeout` of the role, the database or the
    URL's options, meant for queries, is lifted for it (and set back after), else a table that
    takes longer to copy than that could never be scrubbed, however often it was tried. VACUUM
    runs in no transaction block, so the lift is the session's, undone by RESET.
    """
    kept = 0

    def count(notice: Any) -> None:  # the one INFO with a detail: "N dead row versions cannot be removed yet"
        nonlocal kept
        found = _FIRST_NUMBER.search(notice.message_detail or "")
        if notice.severity_nonlocalized == "INFO" and found:
            kept += int(found.group())

    target = sql.SQL(relation) if isinstance(relation, str) else relation
    connection.add_notice_handler(count)
    try:
        connection.execute("SET statement_timeout = 0")
        if lock_wait is not None:
            wait = sql.Literal(f"{max(1, round(lock_wait * 1000))}ms")
            connection.execute(sql.SQL("SET lock_timeout = {}").format(wait))
        with rewriting(connection):  # (the rewrite alone: as long as the table is large)
            connection.execute(sql.SQL("VACUUM (FULL, VERBOSE) {}").format(target))
    except LockNotAvailable:
        return max(kept, 1)
    finally:
        connection.remove_notice_handler(count)
        if not connection.broken:  # (a connection the database dropped has no setting to set back)
            connection.execute("RESET statement_timeout; RESET lock_timeout")
    return kept
