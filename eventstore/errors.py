"""Errors raised by the event store: one base class, one line of meaning each."""

from __future__ import annotations

import shlex


class EventStoreError(Exception):
    """Base class of every error the event store raises."""


class ConcurrencyError(EventStoreError):
    """A stream was not at the version the writer expected; nothing was written."""

    def __init__(self, stream: str, expected: int | str, actual: int) -> None:
        self.stream = stream
        self.expected = expected
        self.actual = actual
        shown = "no stream" if actual == 0 else f"version {actual}"
        super().__init__(
            f"stream {stream!r} was expected at {_describe(expected)} but is at {shown}; "
            "re-read it and retry"
        )


class IdempotencyConflictError(EventStoreError):
    """An idempotency key was reused for a different write; nothing was written."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(
            f"idempotency key {key!r} was already used for a different write; "
            "use a new key for a new write"
        )


class StoreOpenError(EventStoreError):
    """The store could not be opened (missing, locked, unreadable or not a store)."""


class StoreCorruptError(StoreOpenError):
    """The store's files are damaged or are not a Chronograph store."""


class StoreFormatError(StoreOpenError):
    """The store was written by a newer, incompatible format version."""


class StorageFullError(EventStoreError):
    """The disk or the configured map ceiling is full; the write was rolled back."""


class StoreWriteError(EventStoreError):
    """The system refused a write to the store's files (a read-only filesystem, permissions, a limit of
    the process); nothing was written."""


class StreamFullError(EventStoreError):
    """A stream's version or the log's position is past what the store's format numbers; nothing was written."""


class StoreUnavailableError(EventStoreError):
    """The database holding the log cannot be reached now, or cannot take writes (a standby);
    a write in flight was rolled back (but see `CommitUnconfirmedError`): retry later."""


class StoreBusyError(StoreUnavailableError):
    """Another connection held the log's lock longer than a write waits for it; nothing was
    written: retry."""


class CommitUnconfirmedError(StoreUnavailableError):
    """A write's commit reached the database but its answer never came back: it may or may not
    have been stored (retry with the same requestId, or read first)."""


class StoreRefusedError(EventStoreError):
    """The database refused the work (a privilege, a timeout of its own); nothing was written."""


class UnknownEventError(EventStoreError):
    """An event type or schema version in the log has no decoder or upcaster."""


def _describe(expected: int | str) -> str:
    if isinstance(expected, int):
        return "no stream" if expected == 0 else f"version {expected}"
    return {"no_stream": "no stream", "exists": "an existing stream"}.get(expected, expected)


def advised(words: str, store: str, cache: str = "") -> str:
    """The command `chronograph <words>` as a message advises it, naming `store` (a path, or a
    database URL without its secrets) so that, run as it is, it reaches the store the message is
    about and not the per-user one; and `cache`, a database store's views on this machine, where
    the advising process keeps them (else the command would fold the whole log into a new one)."""
    if not store:
        return f"`chronograph {words}`"
    return f"`chronograph {words} --store {shlex.quote(store)}" + (f" --cache {shlex.quote(cache)}`" if cache else "`")


def advised_copy(store: str) -> str:
    """`chronograph copy` of `store` into a new store, as a message advises it (see `advised`)."""
    return f"`chronograph copy --from {shlex.quote(store) if store else 'STORE'} --to NEW`"
