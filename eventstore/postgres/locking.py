"""Waiting for the log's lock in PostgreSQL: for how long, who holds it when the wait runs out,
and the waits in progress (which `/ready` reports, and a stopping server cuts short).

A write waits for the log's advisory lock at most `LOCK_WAIT` seconds (`lock_timeout`, set for
its transaction only), longer than the database lets a transaction sit idle
(`connections.IDLE_IN_TRANSACTION`): a holder cut off from the database costs the writers
queued behind it a wait, and a holder that keeps working (a long erasure, a copy into the log)
an error naming it, never a wait without end.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from chronograph.eventstore.errors import StoreBusyError, StoreUnavailableError

__all__ = ["LOCK_WAIT", "Waits", "bounded", "holder"]

LOCK_WAIT = 30.0
"""Seconds a write waits for the log's lock before it is refused, naming the holder."""
CANCEL_WAIT = 5.0
"""Seconds a stopping server gives the database to hear that a wait is cancelled."""
CANCEL_AGAIN = 0.2
"""Seconds after a cancel before a wait that goes on is cancelled again."""
CANCEL_TRIES = 10
"""How many times a stopping server cancels one wait."""


def bounded(statement: str, *, session: bool = False) -> str:
    """`statement` (which takes the log's lock) waiting at most `LOCK_WAIT` seconds: for the
    transaction it runs in, or with `session`, for itself alone (run on its own, outside a
    transaction: an error undoes the setting with the statement)."""
    wait = f"'{max(1, round(LOCK_WAIT * 1000))}ms'"
    if session:
        return f"SET lock_timeout = {wait}; {statement}; RESET lock_timeout"
    return f"SET LOCAL lock_timeout = {wait}; {statement}"


def holder(connection: psycopg.Connection[Any], lock: int) -> str:
    """Who holds the advisory lock `lock` in the database of `connection`, as the database shows
    them (a role that may not see another's sessions sees their process id only)."""
    row = connection.execute(
        "SELECT l.pid, a.application_name, host(a.client_addr), a.state, "
        "  extract(epoch FROM now() - a.state_change)::bigint "
        "FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
        "  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
        "  AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid LIMIT 1",
        ((lock >> 32) & 0xFFFFFFFF, lock & 0xFFFFFFFF)).fetchone()
    if row is None:
        return "a connection that has let it go since"
    pid, application, address, state, seconds = row
    parts = [f"application {application!r}" if application else "",
             f"from {address}" if address else "",
             f"{state} for {seconds} s" if state and seconds is not None else ""]
    shown = ", ".join(part for part in parts if part)
    return f"the database's process {pid}" + (f" ({shown})" if shown else "")


class Waits:
    """The waits for the log's lock in progress in this process (one per connection)."""

    def __init__(self, shown: str) -> None:
        self._shown = shown
        self._lock = threading.Lock()
        self._since: dict[int, tuple[psycopg.Connection[Any], float]] = {}
        self.stopping = False
        """Set by `interrupt`: no wait begins any more."""

    @contextmanager
    def waiting(self, connection: psycopg.Connection[Any]) -> Iterator[None]:
        """Count the block as `connection`'s wait for the lock.

        Raises:
            StoreUnavailableError: If this process is stopping (nothing was sent).
        """
        with self._lock:
            if self.stopping:
                raise StoreUnavailableError(f"this server is stopping: it takes the lock of the log at {self._shown} "
                                            "no more; nothing was written")
            self._since[id(connection)] = (connection, time.monotonic())
        try:
            yield
        finally:
            with self._lock:
                self._since.pop(id(connection), None)

    def longest(self) -> float:
        """Seconds the longest wait in progress has lasted (0.0: none is)."""
        with self._lock:
            oldest = min((since for _, since in self._since.values()), default=None)
        return 0.0 if oldest is None else time.monotonic() - oldest

    def interrupt(self) -> None:
        """Cut short every wait in progress, and refuse new ones: the process is stopping. Returns
        at once (each wait is cancelled in a thread of its own: the database is asked on a
        connection of its own, which may take seconds)."""
        with self._lock:
            self.stopping = True
            waiting = [connection for connection, _ in self._since.values()]
        for connection in waiting:
            threading.Thread(target=self._cancel, args=(connection,), name="lock-wait-cancel", daemon=True).start()

    def _cancel(self, connection: psycopg.Connection[Any]) -> None:
        """Cancel `connection`'s wait, and again while it lasts: a cancel that reaches the database
        before the statement does (the wait is counted just before it is sent) cancels nothing."""
        for _ in range(CANCEL_TRIES):
            with suppress(psycopg.Error):
                connection.cancel_safe(timeout=CANCEL_WAIT)
            time.sleep(CANCEL_AGAIN)
            with self._lock:
                if id(connection) not in self._since:
                    return

    def refusal(self, connection: psycopg.Connection[Any], lock: int, waited: float) -> StoreBusyError:
        """The error for a write whose wait for the lock ran out, naming the holder (asked on
        `connection`, whose transaction this rolls back)."""
        who = "another connection"
        with suppress(psycopg.Error):
            connection.execute("ROLLBACK")
            who = holder(connection, lock)
        return StoreBusyError(
            f"the log at {self._shown} is locked by {who}: this write waited {waited:.0f} s for it; nothing was "
            "written. Retry; if it stays locked, that process holds a transaction open (the database ends one idle "
            "for idle_in_transaction_session_timeout; `SELECT pg_terminate_backend(pid)` ends it now)")
