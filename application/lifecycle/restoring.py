"""Rebuilding a restored store from its log alone, so nothing of a damaged backup survives.

A backup's environment, once extracted beside the store's place (`eventstore.lmdb.staging`),
is read for its log and nothing else: every event's checksum and the head the header
promised are checked, the events are copied one by one into a fresh store and compared back,
and the fresh store folds its own views. Every byte of what is put in place was written by
LMDB from events that verified; the backup's views, indexes and free pages, where damage
could hide, are never used. Reading a damaged file can crash the process that maps it
(SIGBUS), so the command runs this in a process of its own (`tools/restore.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from chronograph.application.engine.service import Memory
from chronograph.eventstore import LmdbLog, StoreCorruptError
from chronograph.eventstore.copying import copy_log, verify_copy
from chronograph.eventstore.lmdb import resident
from chronograph.eventstore.lmdb.staging import make_durable

__all__ = ["rebuild_from_log"]


def _step(progress: Callable[[str, int, int], None] | None, stage: str, done: int, total: int) -> None:
    """A batch is done: say so, and give back the pages of the stores it read (see `resident`)."""
    resident.release()
    if progress is not None:
        progress(stage, done, total)


def rebuild_from_log(extracted: Path, fresh: Path, head: int,
                     progress: Callable[[str, int, int], None] | None = None,
                     then: Callable[[Memory], object] | None = None) -> None:
    """Check the log of the environment in `extracted` and rebuild it, views and all, as a new
    store in `fresh`; `then` does its work on the new store before it is made durable (what
    a server keeps for its start, say).

    Raises:
        StoreCorruptError: If an event fails its checksum, the log does not end at `head`, or
            the copy differs from it.
        EventStoreError, ProjectionError: If either store cannot be read or written.
    """
    with LmdbLog(extracted, readonly=True, create=False) as source:
        with source.read() as reader:
            found = reader.head()
            if found != head:
                raise StoreCorruptError(f"its log ends at position {found:,}, where its header says {head:,}")
            damaged = next(iter(reader.verify()), None)
            if damaged is not None:
                raise StoreCorruptError(f"the event at position {damaged:,} of its log is damaged (it fails its "
                                        "checksum or cannot be read)")
        with LmdbLog(fresh, sync=False) as copy:  # made durable once, whole, below
            copy_log(source, copy, lambda done, total: _step(progress, "copy", done, total))
            problems = verify_copy(source, copy, lambda done, total: _step(progress, "check", done, total))
        if problems:
            raise StoreCorruptError(f"its log did not copy faithfully: {problems[0]}")
    with Memory(fresh, sync=False, progress=progress) as memory:  # folds the views from the copied log
        if then is not None:
            then(memory)
    make_durable(fresh)
