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

from psycopg import sql

__all__ = ["vacuum_full", "wait_for_snapshots"]

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


def vacuum_full(connection: Any, relation: Any) -> int:
    """VACUUM FULL `relation` (a name or a composed identifier); return how many dead row versions
    it had to keep because a snapshot may still see them (0: none is left in any page)."""
    kept = 0

    def count(notice: Any) -> None:  # the one INFO with a detail: "N dead row versions cannot be removed yet"
        nonlocal kept
        found = _FIRST_NUMBER.search(notice.message_detail or "")
        if notice.severity_nonlocalized == "INFO" and found:
            kept += int(found.group())

    target = sql.SQL(relation) if isinstance(relation, str) else relation
    connection.add_notice_handler(count)
    try:
        connection.execute(sql.SQL("VACUUM (FULL, VERBOSE) {}").format(target))
    finally:
        connection.remove_notice_handler(count)
    return kept
