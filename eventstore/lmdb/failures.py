"""What the system's refusals under a store mean, in words that say what to do.

LMDB reports an error of the operating system as its text after the call that failed
("mdb_txn_commit: Read-only file system"), with no `errno`: the text is what there is to go
by (and a few of its classes: `DiskError`, `ReadonlyError`, `MemoryError`). A commit, an
opening or a scrub that the filesystem or a limit of the process refuses becomes an error of
the event store that names the cause and what to do, never LMDB's own exception: a caller
that knows only the event store's errors (every tool, every command) then says it in a line.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import lmdb
from chronograph.eventstore.errors import EventStoreError, StorageFullError, StoreWriteError

__all__ = ["cause", "refused", "why"]

_CAUSES: dict[int, tuple[str, str]] = {
    errno.EROFS: ("its filesystem is mounted read-only", "Remount it read-write to write; reads go on"),
    errno.EPERM: ("the system forbids this process to write its files (an immutable or append-only file, or a "
                  "security policy)", "Lift that (`chattr -i`) and retry; reads go on"),
    errno.EACCES: ("this process may not write its folder or files (their permissions)",
                   "Give it write permission and retry; reads go on"),
    errno.EFBIG: ("its data file reached the largest file this process or filesystem allows (ulimit -f)",
                  "Raise the limit, or set a ceiling below it (--max-size); reads go on"),
    errno.ENOMEM: ("this process is out of memory or address space (ulimit -v)",
                   "Raise the limit, or set a ceiling below it (--max-size); reads go on"),
    errno.EMFILE: ("this process has too many files open (ulimit -n)", "Raise the limit and retry"),
    errno.ENFILE: ("the system has too many files open", "Retry once fewer are"),
    errno.ESTALE: ("its network filesystem lost track of the files", "Restart the process that has it open"),
}
"""Causes a write cannot get past by itself: what it means, and what to do."""
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EIO)
"""A disk full (or over a quota) or failing: `StorageFullError`, as the map's ceiling is."""
_CLASSES: dict[type[BaseException], int] = {lmdb.DiskError: errno.ENOSPC, lmdb.MemoryError: errno.ENOMEM,
                                                lmdb.ReadonlyError: errno.EACCES}
_WORDS = {os.strerror(number): number for number in (*_CAUSES, *_FULL)}


def cause(error: BaseException) -> int | None:
    """The `errno` of the system's refusal `error` carries (an `OSError`'s own, else the one LMDB's
    text or class names), or None when it carries none known here."""
    if isinstance(error, OSError):
        return error.errno if error.errno in _CAUSES or error.errno in _FULL else None
    text = str(error)
    for words, number in _WORDS.items():
        if words in text:
            return number
    return _CLASSES.get(type(error))


def why(error: BaseException) -> str:
    """What `error` says of the store's files, with the system's (or LMDB's) own words."""
    number = cause(error)
    said = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    if number in _CAUSES:
        return f"{_CAUSES[number][0]} ({said})"
    if number in _FULL:
        return f"the disk holding it is full or failing ({said})"
    return f"LMDB: {said}" if isinstance(error, lmdb.Error) else said


def refused(path: Path, error: BaseException, doing: str = "written") -> EventStoreError:
    """`error`, met as the store at `path` was `doing` (its commit), as the event store's error:
    `StorageFullError` for a full or failing disk, `StoreWriteError` for the rest; nothing was
    written."""
    number = cause(error)
    if number in _FULL:
        return StorageFullError(f"the disk holding {path} is full or failing ({error}); nothing was written. "
                                "Free some space (or check the disk) and retry")
    todo = f" {_CAUSES[number][1]}" if number in _CAUSES else ""
    return StoreWriteError(f"the store at {path} could not be {doing}: {why(error)}; nothing was written.{todo}")
