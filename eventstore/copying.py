"""Copying a log into another, whatever their backends, and checking the copy event for event.

Events go across as they are (positions, versions, times, actors, calls) in transactions of
`BATCH`, so a copy of a million events shows progress and, cut off, resumes where it
stopped: the target's events must be the source's first ones, byte for byte, and the copy
goes on after them. Idempotency records and the erasure count follow once the events are
all across. `verify_copy` compares every stored byte.
"""

from __future__ import annotations

from collections.abc import Callable

from chronograph.eventstore.codec import Envelope
from chronograph.eventstore.errors import EventStoreError
from chronograph.eventstore.log import EventLog, LogTransaction

__all__ = ["BATCH", "CopyError", "copy_log", "verify_copy"]

BATCH = 10_000
"""Events per transaction of the target."""


class CopyError(EventStoreError):
    """The target holds events that are not the source's first ones; nothing was copied."""


def copy_log(source: EventLog, target: EventLog, progress: Callable[[int, int], None] | None = None) -> int:
    """Copy every event of `source` that `target` lacks, then its idempotency records and erasure
    count; return how many events were copied.

    Raises:
        CopyError: If `target` holds events that are not `source`'s first ones.
    """
    with source.read() as reader:
        head, start = reader.head(), target.head()
        if start > head or (start and _last(target, start) != reader.stored(start, start)):
            raise CopyError(f"{target.location} holds events that are not the first ones of {source.location}; "
                            "copy into an empty store")
        for first in range(start + 1, head + 1, BATCH):
            batch = [e for chunk in reader.batches(first, min(first + BATCH - 1, head), BATCH) for e in chunk]

            def put(tx: LogTransaction, batch: list[Envelope] = batch) -> None:
                tx.restore(batch)

            target.transact(put)
            if progress is not None:
                progress(batch[-1].position, head)
        records = list(reader.idempotency_records())
        erasures = reader.erasures()

    def remember(tx: LogTransaction) -> None:
        tx.restore_records(records, erasures)

    target.transact(remember)
    return head - start


def verify_copy(source: EventLog, target: EventLog) -> list[str]:
    """The differences between the two logs, event by event and record by record (none: equal)."""
    problems: list[str] = []
    with source.read() as a, target.read() as b:
        if a.head() != b.head():
            problems.append(f"heads differ: {a.head()} and {b.head()}")
        last = min(a.head(), b.head())
        for first in range(1, last + 1, BATCH):
            stop = min(first + BATCH - 1, last)
            for offset, (left, right) in enumerate(zip(a.stored(first, stop), b.stored(first, stop), strict=True)):
                if left != right:
                    problems.append(f"the event at position {first + offset} differs")
        if dict(a.idempotency_records()) != dict(b.idempotency_records()):
            problems.append("the idempotency records differ")
        if a.erasures() != b.erasures():
            problems.append(f"the erasure counts differ: {a.erasures()} and {b.erasures()}")
    return problems


def _last(log: EventLog, position: int) -> list[bytes]:
    with log.read() as reader:
        return reader.stored(position, position)
