"""What a PostgreSQL error means for the unit of work it ended, as this store's errors say it.

Each says what happened to the work and what to do, worded for the work: a read, a write, a
scrub. The database out of reach or gone away: nothing was written, retry later. A commit
whose answer never came: the write may or may not have been stored (`CommitUnconfirmedError`).
The database refusing (read-only, a privilege, a timeout of its own, a full disk): nothing was
written, and the refusal's own words with what would lift it.
"""

from __future__ import annotations

from typing import Any, Literal

import psycopg
from chronograph.eventstore.errors import (
    CommitUnconfirmedError,
    EventStoreError,
    StorageFullError,
    StoreBusyError,
    StoreCorruptError,
    StoreRefusedError,
    StoreUnavailableError,
)
from chronograph.eventstore.postgres.address import without_secrets
from chronograph.eventstore.postgres.answers import Unanswered
from psycopg import errors
from psycopg.pq import TransactionStatus

__all__ = ["AFTER", "Unit", "commit_failure", "failure", "first_line", "said", "unopened", "unreachable"]

Unit = Literal["read", "write", "scrub", "open"]
"""What a unit of work does, for the words of its failure."""

AFTER: dict[str, str] = {
    "open": "the store was not opened",
    "read": "nothing was written",
    "write": "the write was rolled back: nothing was written",
    "scrub": "the scrub did not finish (the erased content is out of every read, but old copies may remain in the "
             "database's files): run `chronograph scrub` once the database takes it",
}
"""What a failure left of each kind of work."""
_GONE = ("08", "57P01", "57P02", "57P03", "53300")
"""SQLSTATE prefixes of a connection the database lost, ended, or would not take (too many)."""
_FULL = ("too many clients", "remaining connection slots are reserved", "too many connections")
"""The database's words (libpq gives no SQLSTATE for a refused connection) when no connection is free."""
_DOWN = ("shutting down", "starting up", "in recovery mode", "not yet accepting connections")
"""Its words when it is going down or coming up."""


def said(error: BaseException) -> str:
    """The error's words on one line (the driver's span several)."""
    return " ".join(str(error).split()) or type(error).__name__


def first_line(error: BaseException) -> str:
    """The error's first line (the database's message without its detail)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def failure(error: psycopg.Error, shown: str, unit: Unit, *, stopping: bool = False) -> EventStoreError:
    """The store's error for `error`, which ended a `unit` of work on the log at `shown`
    (`stopping`: this process is stopping, and cut its own statements short)."""
    after, words = AFTER[unit], first_line(error)
    sqlstate = getattr(error, "sqlstate", None) or ""
    if isinstance(error, errors.InvalidSchemaName | errors.UndefinedTable):  # dropped under this process
        return StoreCorruptError(f"the log at {shown} is gone: its tables (or its schema) were dropped while this "
                                 "process had it open; nothing more is read or written here")
    if isinstance(error, errors.QueryCanceled) and stopping:
        return StoreUnavailableError(f"this server is stopping: its {unit} on the database of {shown} was cut short; "
                                     f"{after}")
    if isinstance(error, errors.QueryCanceled):
        return StoreRefusedError(
            f"the database of {shown} cancelled a statement of the {unit} ({words}): a statement_timeout set for this "
            f"role or database is shorter than it takes; {after}. Raise it, or unset it for this role "
            "(ALTER ROLE ... SET statement_timeout = 0)")
    if isinstance(error, errors.LockNotAvailable):
        return StoreBusyError(f"a lock the {unit} needs on the log at {shown} was not free in time ({words}); "
                              f"{after}: retry")
    if isinstance(error, errors.ReadOnlySqlTransaction):
        return StoreUnavailableError(
            f"the database of {shown} takes no writes ({words}): it is a standby, or default_transaction_read_only "
            f"is on; {after}. Point the store at the primary, or retry once a failover has promoted one")
    if isinstance(error, errors.IdleInTransactionSessionTimeout):
        return StoreUnavailableError(
            f"the database of {shown} ended this server's connection, whose transaction had waited too long "
            f"({words}); {after}: retry")
    if isinstance(error, errors.DiskFull):
        return StorageFullError(f"the database of {shown} is out of disk space ({words}); {after}")
    if isinstance(error, errors.InsufficientPrivilege):
        return StoreRefusedError(
            f"the database of {shown} refused this server's role the {unit} ({words}); {after}. Grant the role "
            "what the log's tables need (the role that made them has it), or connect as that role")
    if isinstance(error, Unanswered):
        return StoreUnavailableError(f"the database of {shown} stopped answering during a {unit} "
                                     f"({first_line(error)}): it hangs, or the network holds what it sends; {after}")
    if not sqlstate or sqlstate.startswith(_GONE):
        return StoreUnavailableError(f"the database of {shown} went away during a {unit}: {said(error)}; {after}")
    return StoreRefusedError(f"the database of {shown} refused the {unit}: {words}; {after}")


def commit_failure(error: psycopg.Error, shown: str, connection: Any) -> EventStoreError:
    """The store's error for `error`, raised by the round trip that commits a write: `failure`'s
    where the database refused a statement before the COMMIT (the transaction did not commit),
    else the write's outcome is unknown (the answer to the COMMIT never came)."""
    status = connection.info.transaction_status
    refused = status in (TransactionStatus.INTRANS, TransactionStatus.INERROR) or isinstance(
        error, errors.IdleInTransactionSessionTimeout | errors.ProgramLimitExceeded)  # (ended before the COMMIT)
    if refused:
        return failure(error, shown, "write")
    if status == TransactionStatus.IDLE:  # the COMMIT took; what follows it (the flush's barrier) was refused
        return CommitUnconfirmedError(
            f"the write was committed to {shown}, but its flush could not be confirmed ({first_line(error)}): it is "
            "stored unless the database crashed meanwhile")
    if isinstance(error, Unanswered):  # (silent, not gone: it may be slow, or hung)
        return CommitUnconfirmedError(
            f"the database of {shown} did not answer the commit ({first_line(error)}): it hangs, is slow, or the "
            "network holds what it sends; the write may or may not have been stored")
    return CommitUnconfirmedError(
        f"the database of {shown} went away at the commit: {said(error)}; the write may or may not have been stored")


def unreachable(error: psycopg.Error, shown: str, unit: Unit) -> StoreUnavailableError:
    """The store's error for a connection to the database of `shown` that could not be made for a
    `unit` of work (`error`, the database's reason), saying what to do."""
    words, after = said(error), AFTER[unit]
    if getattr(error, "sqlstate", None) == "53300" or any(sign in words for sign in _FULL):
        return StoreUnavailableError(
            f"the database of {shown} takes no more connections ({words}): its max_connections are all in use; "
            f"{after}. Retry; if it stays so, raise max_connections, or end the sessions that hold them "
            "(pg_stat_activity; each Chronograph server keeps up to 8, and one more if it follows the log)")
    if getattr(error, "sqlstate", None) == "57P03" or any(sign in words for sign in _DOWN):
        return StoreUnavailableError(
            f"the database of {shown} is shutting down or starting up ({words}): {after}; retry once it is up")
    return StoreUnavailableError(f"the database of {shown} cannot be reached: {words}; {after}")


def unopened(error: psycopg.Error, url: str, shown: str) -> StoreUnavailableError:
    """The store's error for a log at `url` (`shown`) that could not be opened for `error` (the
    driver's, or its pool's timeout), without the URL's secrets."""
    refused = str(unreachable(error, shown, "open"))
    if not refused.endswith(AFTER["open"]):  # full, or shutting down: said with what to do
        return StoreUnavailableError(without_secrets(refused, url))
    reason = without_secrets(" ".join(str(error).split()), url) or type(error).__name__
    return StoreUnavailableError(f"cannot reach the database of {shown}: {reason}")
