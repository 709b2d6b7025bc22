"""Copying a log into another, whatever their backends, and checking the copy event for event.

Events go across as they are (positions, versions, times, actors, calls, and their stored
bytes, whichever codec wrote them) in transactions of `BATCH`, so a copy of a million events
shows progress, holds one batch at a time and, cut off, resumes where it stopped: the target's
events must be the source's first ones, byte for byte, and the copy goes on after them.
Idempotency records (a batch at a time too) and the erasure count follow once the events are
all across. `verify_copy` compares every stored byte, a batch at a time.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import msgspec
from chronograph.eventstore.codec import Codec, Envelope
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
        if start > head or (start and not _same(source.codec, _last(target, start)[0], reader.stored(start, start)[0])):
            raise CopyError(f"{target.location} holds events that are not the first ones of {source.location}; "
                            "copy into an empty store")
        for first in range(start + 1, head + 1, BATCH):
            stored = reader.stored(first, min(first + BATCH - 1, head))
            batch = source.codec.decode_many(stored)
            if len(batch) != len(stored) or batch[0].position != first:
                raise CopyError(f"{source.location} has no event at position {first + len(batch)} (head {head})")

            def put(tx: LogTransaction, batch: list[Envelope] = batch, stored: list[bytes] = stored) -> None:
                tx.restore(batch, stored)

            target.transact(put)
            if progress is not None:
                progress(batch[-1].position, head)
        erasures = reader.erasures()
        records = iter(reader.idempotency_records())
        while chunk := list(itertools.islice(records, BATCH)):

            def remember(tx: LogTransaction, chunk: list[tuple[bytes, bytes]] = chunk) -> None:
                tx.restore_records(chunk, 0)

            target.transact(remember)

    def count(tx: LogTransaction) -> None:
        tx.restore_records([], erasures)

    target.transact(count)
    return head - start


def verify_copy(source: EventLog, target: EventLog, progress: Callable[[int, int], None] | None = None) -> list[str]:
    """The differences between the two logs, event by event and record by record (none: equal)."""
    problems: list[str] = []
    with source.read() as a, target.read() as b:
        if a.head() != b.head():
            problems.append(f"heads differ: {a.head()} and {b.head()}")
        last = min(a.head(), b.head())
        for first in range(1, last + 1, BATCH):
            stop = min(first + BATCH - 1, last)
            for offset, (left, right) in enumerate(zip(a.stored(first, stop), b.stored(first, stop), strict=True)):
                if not _same(source.codec, left, right):
                    problems.append(f"the event at position {first + offset} differs")
            if progress is not None:
                progress(stop, last)
        if any(left != right for left, right in _paired(a.idempotency_records(), b.idempotency_records())):
            problems.append("the idempotency records differ")
        if a.erasures() != b.erasures():
            problems.append(f"the erasure counts differ: {a.erasures()} and {b.erasures()}")
    return problems


def _same(codec: Codec, left: bytes, right: bytes) -> bool:
    """Whether two stored events are the same: the same bytes, or (a copy made by an older version,
    which encoded events again) the same envelope in another codec."""
    if left == right:
        return True
    try:
        return msgspec.structs.astuple(codec.decode(left)) == msgspec.structs.astuple(codec.decode(right))
    except (EventStoreError, msgspec.MsgspecError):
        return False


def _paired(left: Iterator[tuple[bytes, bytes]], right: Iterator[tuple[bytes, bytes]]
            ) -> Iterator[tuple[tuple[bytes, bytes] | None, tuple[bytes, bytes] | None]]:
    """Two logs' idempotency records side by side, both in key order (None where one has fewer)."""
    return itertools.zip_longest(left, right)


def _last(log: EventLog, position: int) -> list[bytes]:
    with log.read() as reader:
        return reader.stored(position, position)
