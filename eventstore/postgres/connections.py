"""How this process connects to the log's database: every connection's options, the pool, and
a connection of its own for when the pool has none to give.

Both ends of a connection are guarded. This side's TCP keepalives and user timeout turn a cut
network into an error within seconds (a peer that acknowledges and never answers, a hung
database, is `answers`'s to give up on). The database's side (sent with the connection's options:
settings any role may make) ends a session whose client is gone: its keepalives find
a peer that no longer answers, and a transaction left idle is ended, so a server cut off from
the database while it holds the log's lock lets it go within `IDLE_IN_TRANSACTION` seconds
(before, the database kept the lock until its own TCP keepalive, about two hours, and every
other server's writes waited).

The pool replaces a lost connection with back-off (1 s, doubling); it gives up after `RECONNECT`
seconds and tries again at the next demand, so a server is back on its feet within a second or
two of the database (psycopg_pool's five minutes kept doubling: a server went on failing for
up to two minutes after a four-minute outage). A unit of work asks the pool again every
`SLICE` seconds while it waits (each ask is a demand), and the pool's failed attempts are kept
(`Attempts`): one that failed while a unit waited sends it to a connection of its own at once,
which is served if the database is back, or refused in the database's own words (too many
clients, shutting down) instead of "couldn't get a connection after 10.00 sec".
"""

from __future__ import annotations

import threading
import time
from contextlib import suppress
from typing import Any

import psycopg
import psycopg_pool
from chronograph.eventstore.errors import StoreOpenError
from chronograph.eventstore.postgres.address import shown, split_url, without_secrets
from psycopg.conninfo import conninfo_to_dict

__all__ = ["CONNECTION", "IDLE_IN_TRANSACTION", "KEEPALIVES", "POOL_WAIT", "RECONNECT", "SLICE", "Attempts", "address",
           "connect", "options", "pool", "roll_back"]

CONNECTION: dict[str, Any] = {
    "autocommit": True,  # transactions are begun and ended explicitly: a write commits when its views allow
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 2,
    "tcp_user_timeout": 10_000,
    "application_name": "chronograph",
}
"""How every connection is opened: nothing waits on a dead peer for more than about ten seconds."""
IDLE_IN_TRANSACTION = 20.0
"""Seconds the database lets a transaction of ours sit idle (no statement running) before it
ends the session: no unit of work pauses that long between two statements, and a server cut
off while it holds the log's lock holds it no longer."""
KEEPALIVES = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"
"""The database's keepalives on our connections: a client that stopped answering is found in about 25 s."""
RECONNECT = 2.0
"""Seconds the pool goes on replacing a lost connection before it waits for the next demand."""
POOL_WAIT = 10.0
"""Seconds a unit of work waits for a connection of the pool (unless told otherwise)."""
SLICE = 1.0
"""Seconds a unit of work waits for the pool before it asks again (a pool that gave up
reconnecting tries again at each ask) or, if the pool failed to connect meanwhile, makes a
connection of its own."""


class Attempts:
    """The pool's last failed attempt to connect: when, and the database's words."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: tuple[float, psycopg.OperationalError] | None = None

    def failed(self, error: psycopg.OperationalError) -> None:
        with self._lock:
            self._last = (time.monotonic(), error)

    def since(self, moment: float) -> psycopg.OperationalError | None:
        """The error of the pool's last failed attempt, if it failed after `moment` (a `time.monotonic()`)."""
        with self._lock:
            last = self._last
        return last[1] if last is not None and last[0] >= moment else None


def options(url: str) -> dict[str, Any]:
    """The keyword arguments every connection to `url` is made with: `CONNECTION`, and the
    database's guards (`KEEPALIVES`, `IDLE_IN_TRANSACTION`) before the options the URL gives
    itself, which win where both set one."""
    guards = f"{KEEPALIVES} -c idle_in_transaction_session_timeout={round(IDLE_IN_TRANSACTION * 1000)}ms"
    given = conninfo_to_dict(url).get("options")
    return {**CONNECTION, "options": f"{guards} {given}" if given else guards}


def pool(url: str, kwargs: dict[str, Any], size: int, name: str, attempts: Attempts | None = None,
         base: type[psycopg.Connection[Any]] = psycopg.Connection) -> psycopg_pool.ConnectionPool[Any]:
    """A pool of at most `size` connections (of class `base`) to `url` (not open yet), whose
    failed attempts to connect are told to `attempts`."""
    kept = attempts or Attempts()

    class Pooled(base):  # type: ignore[valid-type,misc]
        @classmethod
        def connect(cls, *args: Any, **kwargs: Any) -> Pooled:
            try:
                return super().connect(*args, **kwargs)
            except psycopg.OperationalError as error:
                kept.failed(error)
                raise

    return psycopg_pool.ConnectionPool(url, kwargs=kwargs, min_size=1, max_size=size, open=False,
                                       timeout=POOL_WAIT, reconnect_timeout=RECONNECT, name=name,
                                       connection_class=Pooled)


def connect(url: str, kwargs: dict[str, Any], seconds: float | None = None,
            base: type[psycopg.Connection[Any]] = psycopg.Connection) -> psycopg.Connection[Any]:
    """A connection (of class `base`) of its own to `url`, waiting at most about `seconds`
    (default: the connect timeout) for the database to answer.

    Raises:
        psycopg.OperationalError: If it cannot be made (the database's own reason).
    """
    if seconds is not None:
        kwargs = {**kwargs, "connect_timeout": max(2, min(int(kwargs["connect_timeout"]), round(seconds)))}
    return base.connect(url, **kwargs)


def roll_back(connection: psycopg.Connection[Any]) -> None:
    """End what is left of a transaction on `connection`, if it can be: a connection the
    database dropped has nothing left to end (the database rolled it back), and the error that
    ended the work, not the rollback's, is the one to tell."""
    if connection.info.transaction_status in (psycopg.pq.TransactionStatus.INTRANS,
                                              psycopg.pq.TransactionStatus.INERROR):
        with suppress(psycopg.Error):
            connection.execute("ROLLBACK")


def address(url: str) -> tuple[str, str, str]:
    """(libpq's URL, the log's schema, the address as shown) of the log at `url`, its parameters
    checked by libpq before any connection.

    Raises:
        StoreOpenError: If `url` is not a usable address.
    """
    try:
        libpq, name, _ = split_url(url)
    except ValueError as error:
        raise StoreOpenError(f"{shown(url)}: {error}") from None
    said = shown(url)  # (split_url's own shows what its parser made of a password pasted unencoded)
    try:
        conninfo_to_dict(libpq)
    except psycopg.ProgrammingError as error:
        raise StoreOpenError(f"{said}: {without_secrets(str(error), url)} (the URL takes libpq's parameters, "
                             "and schema)") from None
    return libpq, name, said
